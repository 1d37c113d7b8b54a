#!/usr/bin/env python3
"""Benchmark: always-on metrics (--metrics --no-files) against a file-writing recording.

Usage: always_on.py [--quick] [--procs P] [--threads T] [--compare S] [--soak S] [--python PY]
                    [--modes none,file,metrics,soak]

The scale workload (P processes, default 8, of T threads, default 4, of os.read(/dev/zero, 1):
every call releases and retakes the GIL) in all-process mode, four runs in turn:
  none     no recording, for --compare seconds (default 60): the workload's own pace;
  file     gil-record with its defaults, writing the files, for --compare seconds;
  metrics  gil-record --metrics PORT --no-files, scraped every 5 s, for --compare seconds;
  soak     the same for --soak seconds (default 600), its RSS sampled every 10 s.
Reported per run: the workload's calls per second (what the recording costs the job), events,
lost events, gil-record's CPU per million events, and its RSS at 10% / 50% / the end and its
peak, and the soak's RSS once a minute. Flat memory means the soak's RSS stops growing once
its buffers reached their size.
"""
import argparse
import glob
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scrape(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


def gauge(text, name):
    m = re.search(r"^%s (\S+)$" % name, text, re.M)
    return float(m.group(1)) if m else None


def run(python, procs, threads, seconds, mode, sample_every=1.0):
    ws = [B.Workload(python, "release.py", threads, seconds, "read") for _ in range(procs)]
    d = tempfile.mkdtemp(prefix="gilbench-always-")
    port = free_port()
    p = None
    try:
        if mode != "none":
            args = [B.GIL_RECORD, "-q"]
            args += ["--metrics", str(port), "--no-files"] if mode != "file" else ["-o", d]
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True)
            want = set(w.pid for w in ws)
            deadline = time.time() + 120
            # every workload recorded: its file is there, or the metrics count it
            while time.time() < deadline:
                if mode == "file":
                    have = set(int(os.path.basename(f).split("_")[1])
                               for f in glob.glob(os.path.join(d, "GIL_*_rank_*.json")))
                    if want <= have:
                        break
                else:
                    text = scrape(port)
                    if all('pid="%d"' % pid in text for pid in want):
                        break
                if p.poll() is not None:
                    raise RuntimeError("gil-record exited: %s" % p.stderr.read())
                time.sleep(0.2)
            else:
                raise RuntimeError("gil-record did not pick up every workload in 120 s")
            cpu0 = B.proc_cpu_s(p.pid)
        t0 = time.time()
        for w in ws:
            w.go()
        samples, last_scrape, text = [], 0, ""
        while time.time() - t0 < seconds:
            time.sleep(sample_every)
            if p:
                samples.append((time.time() - t0, B.proc_rss_kb(p.pid),
                                B.proc_cpu_s(p.pid) - cpu0))
            if mode in ("metrics", "soak") and time.time() - last_scrape >= 5:
                text = scrape(port) or text
                last_scrape = time.time()
        done = [w.wait_done() for w in ws]
        ops = sum(n for n, _ in done) / max(s for _, s in done)
        res = {"ops_s": ops, "seconds": max(s for _, s in done), "events": 0, "lost": 0,
               "cpu_s": 0, "rss": [], "hwm_kb": 0}
        if not p:
            return res
        if mode != "file":
            text = scrape(port) or text
            res["events"] = gauge(text, "giltrace_events_total") or 0
            res["lost"] = gauge(text, "giltrace_lost_events_total") or 0
        for w in ws:
            w.finish()
        cpu, hwm = B.stop_recorder(p)
        if mode == "file":
            res["events"], res["lost"] = B.recorded_events(d, [w.pid for w in ws])
        res.update(cpu_s=cpu - cpu0, rss=[s[1] for s in samples if s[1]], hwm_kb=hwm,
                   files=len(os.listdir(d)))
        return res
    finally:
        B.end_process(p)
        for w in ws:
            w.kill()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--compare", type=float, default=60.0)
    ap.add_argument("--soak", type=float, default=600.0)
    ap.add_argument("--python", default=None)
    ap.add_argument("--modes", default="none,file,metrics,soak")
    a = ap.parse_args()
    if a.quick:
        a.procs, a.threads, a.compare, a.soak = 2, 2, 2.0, 4.0
    B.require_recording()
    B.install_signal_cleanup()
    python = a.python or B.default_python()
    rows, base, series = [], None, []
    for mode, secs, every in (("none", a.compare, 1.0), ("file", a.compare, 1.0),
                              ("metrics", a.compare, 1.0), ("soak", a.soak, 10.0)):
        if mode not in a.modes.split(","):
            continue
        B.log("always_on: %s, %d x %d threads for %.0f s" % (mode, a.procs, a.threads, secs))
        r = run(python, a.procs, a.threads, secs, mode, every)
        base = base or r["ops_s"]
        rss = r["rss"]
        if mode == "soak":
            series = rss[5::6]  # every 10 s: once a minute
        rows.append([mode, "%.0f s" % r["seconds"], B.fnum(r["ops_s"]),
                     "%.2f" % (r["ops_s"] / base) if "none" in a.modes else "-",
                     B.fnum(r["events"]) if mode != "none" else "-",
                     "%d" % r["lost"] if mode != "none" else "-",
                     "%.1f%%" % (r["cpu_s"] / r["seconds"] * 100) if mode != "none" else "-",
                     B.fnum(r["cpu_s"] / r["events"] * 1e6, 3) if r["events"] else "-",
                     B.rss_points(rss),
                     "%.1f" % (r["hwm_kb"] / 1024) if mode != "none" else "-",
                     str(r.get("files", "-"))])
    B.out("### Always on: %d processes x %d threads, all-process mode (%s %s)" % (
        a.procs, a.threads, python, B.python_version(python)))
    B.out("")
    B.out(B.table(["recording", "length", "calls/s", "vs none", "GIL events", "lost",
                   "gil-record CPU", "CPU s per M events", "RSS MB at 10% / 50% / end",
                   "peak RSS MB", "files"], rows))
    B.out("")
    if series:
        B.out("Soak RSS MB, once a minute: %s" % " ".join("%.1f" % (k / 1024) for k in series))
        B.out("")


if __name__ == "__main__":
    main()
