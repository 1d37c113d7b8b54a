#!/usr/bin/env python3
"""Benchmark: what a traced process pays under file-wide probes (all-process mode: the events
are opened once per interpreter file, pid -1 on every CPU) against per-process ones (--pid:
per-task events on each of its threads), side by side in one run.

Usage: filewide.py [--calls N] [--reps R] [--python EXE]

A process makes N ctypes calls (each releases and retakes the GIL once: 4 probe hits) on its
main thread: unrecorded, recorded with `gil-record --pid P`, and recorded with `gil-record`
(every process). The time is from telling it to go to its 'done' line. Reps alternate the
three; medians, and each recorded median over the unrecorded one.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
top = os.environ.get("top_srcdir", os.path.dirname(here))
sys.path.insert(0, os.path.join(top, "tests"))
from giltest import GIL_RECORD, Workload, pythons  # noqa: E402


def timed(exe, calls, mode):
    w = Workload(exe, "ctypes_calls.py", calls)
    rec = None
    if mode != "none":
        # not -q: the "recording" line says the events are live
        args = [GIL_RECORD, "--output-dir", tempfile.mkdtemp(prefix="gilfw-")]
        args += ["--pid", str(w.pid)] if mode == "pid" else ["--duration", "600"]
        rec = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        for line in rec.stderr:
            if "recording" in line:
                break
        if mode == "all":
            time.sleep(1.5)  # the workload is found (or was) by then: its events are live
    t0 = time.monotonic()
    w.go()
    w.wait_done(600)
    took = time.monotonic() - t0
    w.finish()
    if rec:
        rec.send_signal(signal.SIGINT)
        rec.communicate(timeout=600)
    return took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--python", default=None)
    a = ap.parse_args()
    exe = a.python or pythons(include_system=False)[-1][1]
    modes = ("none", "pid", "all")
    t = {m: [] for m in modes}
    for _ in range(a.reps):
        for m in modes:
            t[m].append(timed(exe, a.calls, m))
    base = statistics.median(t["none"])
    print("%d ctypes calls on %s, median of %d reps" % (a.calls, exe, a.reps))
    print("| recording | seconds | x unrecorded |")
    print("|---|---:|---:|")
    for m, name in (("none", "unrecorded"), ("pid", "gil-record --pid (per-task events)"),
                    ("all", "gil-record, every process (file-wide events)")):
        med = statistics.median(t[m])
        print("| %s | %.3f | %.3fx |" % (name, med, med / base))


if __name__ == "__main__":
    main()
