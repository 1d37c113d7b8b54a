#!/usr/bin/env python3
"""Benchmark: many busy processes in all-process mode, short and long.

Usage: scale.py [--quick] [--procs P] [--threads T] [--short S] [--long S] [--python PY]

P processes (default 8) of T threads (default 4) of os.read(/dev/zero, 1) (every call releases
and retakes the GIL), recorded by gil-record with default settings and no --pid (every CPython
on the host), once for --short seconds (10) and once for --long (60). Reported per run: events,
lost events, gil-record's CPU per million events, and its RSS sampled every second (at 10% /
50% / the end of the run, and the peak). Flat means the long run's CPU per million events and
RSS match the short run's. CPU is split in user (gil-record's own work) and system time (the
kernel's, mostly copying the recording into the page cache).
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def run(python, procs, threads, seconds, keep=None):
    ws = [B.Workload(python, "release.py", threads, seconds, "read") for _ in range(procs)]
    d = tempfile.mkdtemp(prefix="gilbench-scale-", dir=keep)
    p = None
    try:
        p = subprocess.Popen([B.GIL_RECORD, "-o", d, "-q"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        want = set(w.pid for w in ws)
        # all-process mode announces nothing per process in -q: wait until every workload
        # has its file (its probes are live then)
        while time.time() < deadline:
            have = set()
            for f in glob.glob(os.path.join(d, "GIL_*_rank_*.json")):
                have.add(int(os.path.basename(f).split("_")[1]))
            if want <= have:
                break
            if p.poll() is not None:
                raise RuntimeError("gil-record exited: %s" % p.stderr.read())
            time.sleep(0.1)
        else:
            raise RuntimeError("gil-record did not pick up every workload in 120 s")
        cpu0 = B.proc_cpu_s(p.pid)
        split0 = B.proc_cpu_split(p.pid)
        t0 = time.time()
        for w in ws:
            w.go()
        samples = []
        while time.time() - t0 < seconds:
            time.sleep(1.0)
            samples.append((time.time() - t0, B.proc_rss_kb(p.pid), B.proc_cpu_s(p.pid) - cpu0))
        done = [w.wait_done() for w in ws]
        split = [b - a for a, b in zip(split0, B.proc_cpu_split(p.pid))]
        for w in ws:
            w.finish()
        cpu, hwm = B.stop_recorder(p)
        events, lost = B.recorded_events(d, [w.pid for w in ws])
        secs = max(s for _, s in done)
        return {"events": events, "lost": lost, "cpu_s": cpu - cpu0, "seconds": secs,
                "rss": [s[1] for s in samples if s[1]], "hwm_kb": hwm,
                "ops": sum(n for n, _ in done), "samples": samples, "user_s": split[0],
                "sys_s": split[1]}
    finally:
        B.end_process(p)
        for w in ws:
            w.kill()
        if not keep:
            shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--short", type=float, default=10.0)
    ap.add_argument("--long", type=float, default=60.0)
    ap.add_argument("--python", default=None)
    ap.add_argument("--keep", metavar="DIR", help="keep the recordings in a new directory in DIR")
    a = ap.parse_args()
    if a.quick:
        a.procs, a.threads, a.short, a.long = 2, 2, 1.0, 2.0
    B.require_recording()
    B.install_signal_cleanup()
    python = a.python or B.default_python()
    rows = []
    for secs in (a.short, a.long):
        B.log("scale: %d x %d threads for %.0f s" % (a.procs, a.threads, secs))
        r = run(python, a.procs, a.threads, secs, a.keep)
        rss = r["rss"]
        rows.append(["%.0f s" % r["seconds"], B.fnum(r["events"]),
                     B.fnum(r["events"] / r["seconds"]), str(r["lost"]),
                     "%.1f%%" % (r["cpu_s"] / r["seconds"] * 100),
                     B.fnum(r["cpu_s"] / r["events"] * 1e6, 3) if r["events"] else "-",
                     "%s / %s" % (B.fnum(r["user_s"] / r["events"] * 1e6, 3),
                                  B.fnum(r["sys_s"] / r["events"] * 1e6, 3))
                     if r["events"] else "-",
                     B.rss_points(rss),
                     "%.1f" % (r["hwm_kb"] / 1024)])
    B.out("### Scale: %d processes x %d threads, all-process mode, defaults (%s %s)" % (
        a.procs, a.threads, python, B.python_version(python)))
    B.out("")
    B.out(B.table(["recording", "GIL events", "events/s", "lost", "gil-record CPU",
                   "CPU s per M events", "of which user / sys", "RSS MB at 10% / 50% / end",
                   "peak RSS MB"], rows))
    B.out("")


if __name__ == "__main__":
    main()
