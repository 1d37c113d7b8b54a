#!/usr/bin/env python3
"""Benchmark 1: what tracing costs the traced program, against the kernel's floor.

Usage: overhead.py [--quick] [--reps N] [--seconds S] [--threads T] [--python PY] [--no-light]

Two workloads on a real interpreter (default pyenv 3.12.1):
  release     T threads of os.read(fd, 1) on /dev/zero: each call drops and retakes the GIL
  contention  4 threads of pure-Python loops handing the GIL over every switch interval (5 ms)
each run untraced and under
  perf stat     the same uprobes as gil-record's, counted, no records: the probes' own cost
  minimal reader  the same probes sampled into per-CPU rings that are only drained
                (bench/minreader.c): the kernel's cost of one record per probe hit
  gil-record    default settings
  perf record   on the same probes (how per4m records)
Every rep runs every variant once, in a rotated order; reported are medians over reps of each
run's rate and of its ratio to the untraced run of the same rep (the VM drifts; ratios
measured together do not). Cost per GIL event = added wall time per operation / probe hits per
operation. The probes live in our own group gilbench_<pid>, removed on exit.

--light adds a table for a lighter probe set (no drop_gil return probe: no release durations).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def measure(python, script, args, tracers, reps):
    """{name: [result dict per rep]} with 'rate' and 'ratio' (untraced rate / this rate)."""
    res = {t.name: [] for t in tracers}
    for rep in range(reps):
        this = {}
        for t in B.rotated(tracers, rep):
            rate, r = B.run_traced(python, script, args, t)
            r["rate"] = rate
            this[t.name] = r
            B.log("  rep %d %-22s %12.0f ops/s  events %-10s lost %s cpu %.2fs" % (
                rep, t.name, rate, r.get("events"), r.get("lost"), r.get("cpu_s") or 0))
        base = this["untraced"]["rate"]
        floor = this.get("perf stat", {}).get("rate")
        for name, r in this.items():
            r["ratio"] = base / r["rate"] if r["rate"] else None
            r["vs_floor"] = floor / r["rate"] if floor and r["rate"] else None
            ev = r.get("events")
            if ev and r.get("ops") and name != "untraced":
                per_op = ev / r["ops"]
                r["ev_per_op"] = per_op
                r["cost_us"] = (1 / r["rate"] - 1 / base) / per_op * 1e6
                r["ev_rate"] = ev / r["seconds"]
                if r.get("cpu_s") is not None:
                    r["cpu_per_mev"] = r["cpu_s"] / ev * 1e6
            res[name].append(r)
    return res


def rows_of(res, order):
    rows = []
    for name in order:
        rs = res.get(name)
        if not rs:
            continue

        def med(key):
            return B.median([r.get(key) for r in rs])
        lost = [r.get("lost") for r in rs if r.get("lost") is not None]
        dense = (med("ev_per_op") or 0) >= 0.1  # else cost per event is noise / tiny
        cpu_pct = B.median([r["cpu_s"] / r["seconds"] * 100 for r in rs
                            if r.get("cpu_s") is not None])
        rows.append([name, B.fnum(med("rate")), "%.2fx" % med("ratio"),
                     ("%.2fx" % med("vs_floor")) if med("vs_floor") else "-",
                     B.fnum(med("ev_rate")), B.fnum(med("ev_per_op"), 2),
                     B.fnum(med("cost_us"), 2) if dense else "-",
                     B.fnum(cpu_pct, 1),
                     B.fnum(med("cpu_per_mev"), 2) if dense else "-",
                     str(max(lost)) if lost else "-"])
    return rows


HEADS = ["variant", "ops/s", "slowdown", "vs floor", "GIL events/s", "events/op",
         "us per event", "tracer CPU %", "tracer CPU s / M events", "lost"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one short rep (smoke test)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--threads", type=int, default=2, help="threads of the release workload")
    ap.add_argument("--python", default=None)
    ap.add_argument("--light", action="store_true",
                    help="also measure the lighter probe set (no drop_gil return probe)")
    a = ap.parse_args()
    if a.quick:
        a.reps, a.seconds = 1, 0.3
    B.require_recording()
    B.install_signal_cleanup()
    python = a.python or B.default_python()
    perf = B.have_perf()
    if not perf:
        B.log("perf not found: the perf stat and perf record columns are left out "
              "(Debian: apt-get install linux-perf)")
    group = B.ProbeGroup(B.probe_sites(python))
    light = None
    try:
        tracers = [B.NoTracer()]
        if perf:
            tracers.append(B.PerfTracer(group, "stat"))
        if B.minreader_path():
            tracers.append(B.MinReader(group))
        tracers.append(B.GilRecord())
        if perf:
            tracers.append(B.PerfTracer(group, "record"))
        order = [t.name for t in tracers]
        works = [("release", "release.py", (a.threads, a.seconds, "read"),
                  "%d threads of os.read(/dev/zero, 1)" % a.threads),
                 ("contention", "contention.py", (4, a.seconds),
                  "4 threads of pure-Python loops, switch interval 5 ms")]
        B.out("### Tracing overhead (%s %s)" % (python, B.python_version(python)))
        B.out("")
        B.out("%d reps of %.1f s per variant, alternating; medians. slowdown = untraced ops/s / "
              "traced ops/s of the same rep; vs floor = perf stat's ops/s / this one's; us per "
              "event = added wall time per operation / probe hits per operation (left out "
              "where there are too few events for it to be more than noise); tracer CPU = its "
              "user+sys time from enabling the events to exit, per second of workload."
              % (a.reps, a.seconds))
        B.out("")
        for key, script, args, what in works:
            B.log("workload %s: %s" % (key, what))
            res = measure(python, script, args, tracers, a.reps)
            B.out("#### %s: %s" % (key, what))
            B.out("")
            B.out(B.table(HEADS, rows_of(res, order)))
            B.out("")
        if a.light and perf and not a.quick:
            light = B.ProbeGroup(B.probe_sites(python), light=True, suffix="light")
            lt = [B.NoTracer(), B.PerfTracer(group, "stat"), B.PerfTracer(light, "stat"),
                  B.MinReader(group), B.MinReader(light), B.GilRecord()]
            lt[2].name, lt[4].name = "perf stat, light probes", "minimal reader, light probes"
            B.log("light probe set")
            res = measure(python, "release.py", (a.threads, a.seconds, "read"), lt, a.reps)
            B.out("#### release, lighter probe set (take_gil entry+return, drop_gil entry)")
            B.out("")
            B.out(B.table(HEADS, rows_of(res, [t.name for t in lt])))
            B.out("")
    finally:
        group.remove()
        if light:
            light.remove()


if __name__ == "__main__":
    main()
