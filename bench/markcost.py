#!/usr/bin/env python3
"""Benchmark: what a step mark costs (gil_trace_record.mark_step(), libgiltrace's gil_mark_step).

Usage: markcost.py [--quick] [--reps N] [--seconds S] [--python PY]

bench/workloads/marks.py calls gil_mark_step through ctypes.PyDLL in a loop, untraced and under
gil-record --pid, which probes it in the process (one uprobe hit, one sample and one step
record per call), in alternating order. Reported: medians of marks/s, the slowdown, and the
time each mark adds (1/traced - 1/untraced): what a training loop pays once per step.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def main():
    a = B.rep_args(__doc__, 5, 2.0, quick=(1, 0.3))
    a.python = a.python or B.default_python()
    lib = os.path.join(B.TOP_BUILDDIR, ".libs", "libgiltrace.so.0")
    if not os.path.exists(lib):
        B.skip("%s is not built (make)" % lib)
    tracers = [B.NoTracer(), B.GilRecord()]
    res = {t.name: [] for t in tracers}
    for rep in range(a.reps):
        this = {}
        for t in B.rotated(tracers, rep):
            rate, r = B.run_traced(a.python, "marks.py", [lib, a.seconds], t)
            this[t.name] = rate
            B.log("  rep %d %-12s %12.0f marks/s" % (rep, t.name, rate))
        for t in tracers:
            res[t.name].append(this[t.name])
    base = B.median(res["untraced"])
    rows = []
    for t in tracers:
        rate = B.median(res[t.name])
        add = (1 / rate - 1 / base) * 1e9
        rows.append([t.name, B.fnum(rate), "%.2fx" % (base / rate),
                     "-" if t.name == "untraced" else B.fnum(add, 0, " ns")])
    B.out("Step marks (%s, %d reps of %.1f s; %s)" % (B.python_version(a.python), a.reps,
                                                      a.seconds, B.machine()))
    B.out(B.table(["recorded by", "marks/s", "slowdown", "added per mark"], rows))


if __name__ == "__main__":
    main()
