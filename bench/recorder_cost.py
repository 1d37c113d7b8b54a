#!/usr/bin/env python3
"""Benchmark 4: gil-record's own cost: CPU seconds per million events, memory over a long run.

Usage: recorder_cost.py [--quick] [--seconds S] [--python PY]

One process of one os.read(fd, 1) thread (the densest GIL traffic) is recorded for S seconds
(default 60) with default settings; gil-record's RSS is sampled every second. An idle target
recorded for a few seconds gives the fixed cost (the 50 ms drain rounds) to subtract.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--python", default=None)
    a = ap.parse_args()
    if a.quick:
        a.seconds = 1.0
    B.require_recording()
    B.install_signal_cleanup()
    python = a.python or B.default_python()

    # Idle: the fixed cost per second of recording.
    idle_s = 0.5 if a.quick else 5.0
    w = B.Workload(python, "release.py", 1, 0.01, "read")
    t = B.GilRecord()
    try:
        t.start([w.pid])
        time.sleep(idle_s)
        idle = t.stop()
    finally:
        B.kill_tracer(t)
        w.finish()
    idle_rate = idle["cpu_s"] / idle_s

    w = B.Workload(python, "release.py", 1, a.seconds, "read")
    t = B.GilRecord()
    samples = []
    try:
        t.start([w.pid])
        t0 = time.time()
        w.go()
        while time.time() - t0 < a.seconds:
            time.sleep(min(1.0, a.seconds / 10))
            samples.append((time.time() - t0, B.proc_rss_kb(t.p.pid), B.proc_cpu_s(t.p.pid)))
        n, secs = w.wait_done()
        r = t.stop()
    finally:
        B.kill_tracer(t)
        w.finish()
    busy_cpu = r["cpu_s"]
    per_m = busy_cpu / r["events"] * 1e6 if r["events"] else None
    net_m = (busy_cpu - idle_rate * secs) / r["events"] * 1e6 if r["events"] else None
    rss = [s[1] for s in samples if s[1]]
    B.out("### Recorder cost (%s %s)" % (python, B.python_version(python)))
    B.out("")
    B.out(B.table(["measure", "value"], [
        ["recording length", "%.1f s" % secs],
        ["GIL events recorded", B.fnum(r["events"])],
        ["event rate", B.fnum(r["events"] / secs) + " /s"],
        ["intervals written", B.fnum(r["intervals"])],
        ["lost", str(r["lost"])],
        ["file size", "%s MB (%.1f bytes per event)" % (B.fnum(r["bytes"] / 1e6), r["bytes"] /
                                                     max(1, r["events"]))],
        ["gil-record CPU (user+sys)", "%.2f s (%.1f%% of one CPU)" % (busy_cpu,
                                                                 busy_cpu / secs * 100)],
        ["CPU s per million events", B.fnum(per_m, 3)],
        ["  minus the idle cost (%.4f s/s)" % idle_rate, B.fnum(net_m, 3)],
        ["peak RSS (VmHWM)", "%.1f MB" % (r["rss_kb"] / 1024)],
        ["RSS at 10% / 50% / end of the run", " / ".join(
            "%.1f MB" % (rss[int(f * (len(rss) - 1))] / 1024) for f in (0.1, 0.5, 1.0))
         if rss else "-"],
    ], ["l", "r"]))
    B.out("")


if __name__ == "__main__":
    main()
