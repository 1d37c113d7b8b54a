#!/usr/bin/env python3
"""Benchmark 2: an untraced process using the same libpython runs at its untraced speed.

Usage: bystander.py [--quick] [--reps N] [--seconds S] [--python PY]

Two processes of the same interpreter run the same loop (one thread of os.read(fd, 1), a GIL
drop and take per call). Only the first (the target) is named to the tracer:
  nothing       neither is traced
  gil-record    gil-record --pid TARGET (per-task events: only the target's memory is patched)
  perf stat -p  the same probes counted for the target only
  perf stat -a  the same probes counted system-wide: every process mapping the library traps,
                which is what per-task events avoid
Reported: the bystander's calls/s and its ratio to the untraced rep (medians over alternating
reps), whether a probe ever fired in it, and the target's rate for reference. With 2 CPUs or
more, the target and the tracer share CPU 0 and the bystander has CPU 1 to itself, so that the
recorder's own CPU time (which any program competes with) does not pass for probe cost.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def main():
    a = B.rep_args(__doc__, 7, 1.0)
    python = a.python or B.default_python()
    group = B.ProbeGroup(B.probe_sites(python))
    try:
        tracers = [B.NoTracer(), B.GilRecord()]
        if B.have_perf():
            tracers += [B.PerfTracer(group, "stat"), B.PerfTracer(group, "stat", system_wide=True)]
            tracers[2].name = "perf stat -p TARGET"
        tracers[0].name = "nothing traced"
        tracers[1].name = "gil-record --pid TARGET"
        args = (1, a.seconds, "read")
        res = {t.name: [] for t in tracers}
        trapped = {}
        pin = len(os.sched_getaffinity(0)) >= 2
        for rep in range(a.reps):
            this = {}
            for t in B.rotated(tracers, rep):
                rate, r = B.run_traced(python, "release.py", args, t,
                                       bystander=("release.py",) + args, pin=pin)
                this[t.name] = (rate, r["by_rate"])
                trapped[t.name] = trapped.get(t.name, False) or bool(r["by_trapped"])
                B.log("  rep %d %-26s target %10.0f/s  bystander %10.0f/s" % (
                    rep, t.name, rate, r["by_rate"]))
            base_t, base_b = this[tracers[0].name]
            for name, (rt, rb) in this.items():
                res[name].append((rt, rb, base_b / rb, base_t / rt))
        rows = []
        for t in tracers:
            rs = res[t.name]
            rows.append([t.name, B.fnum(B.median([r[1] for r in rs])),
                         "%.2fx (%.2f-%.2f)" % (B.median([r[2] for r in rs]),
                                                min(r[2] for r in rs), max(r[2] for r in rs)),
                         "yes" if trapped.get(t.name) else "no",
                         B.fnum(B.median([r[0] for r in rs])),
                         "%.2fx" % B.median([r[3] for r in rs])])
    finally:
        group.remove()
    B.out("### Bystander: an untraced process on the same libpython (%s %s)"
          % (python, B.python_version(python)))
    B.out("")
    B.out("%d alternating reps of %.1f s; medians. Slowdown = untraced rate of the same rep / "
          "this rate. %s Trapped: the kernel mapped its [uprobes] page into the bystander "
          "(a probe fired there)." % (a.reps, a.seconds,
                                      "Target and tracer on CPU 0, bystander on CPU 1." if pin
                                      else ""))
    B.out("")
    B.out(B.table(["tracer", "bystander calls/s", "bystander slowdown (range)", "bystander trapped",
                   "target calls/s", "target slowdown"], rows))
    B.out("")


if __name__ == "__main__":
    main()
