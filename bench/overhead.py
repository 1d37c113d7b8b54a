#!/usr/bin/env python3
"""Benchmark 1: what tracing costs the traced program, against the kernel's floor.

Usage: overhead.py [--quick] [--reps N] [--seconds S] [--threads T] [--python PY] [--light]
                   [--baseline BUILDDIR]

Two workloads on a real interpreter (default pyenv 3.12.1):
  release     T threads of os.read(fd, 1) on /dev/zero: each call drops and retakes the GIL
  contention  4 threads of pure-Python loops handing the GIL over every switch interval (5 ms)
each run untraced and under
  perf stat       gil-record's uprobes (copied from tracefs: same sites, same attribution
                  fetchargs), counted, no records: the probes' own cost, the kernel floor
  minimal reader  the same probes sampled into per-CPU rings that are only drained
                  (bench/minreader.c): the kernel's cost of one record per probe hit
  gil-record      default settings
  perf stat, no fetchargs / gil-record --no-attribution / perf record (how per4m records)
                  the same sites without the attribution reads
Every rep runs every variant once, in a rotated order; reported are medians over reps of each
run's rate and of its ratio to the untraced run of the same rep (the VM drifts; ratios
measured together do not). Cost per GIL event = added wall time per operation / probe hits per
operation. The probes live in groups of our own, gilbench_<pid>_<pidns>*, removed on exit.

--baseline BUILDDIR adds the gil-record built there (default settings) to both workloads, in the
same reps: a before/after comparison that the VM's drift does not bias.
--light adds a table for a lighter probe set (no drop_gil return probe: no release durations).
--watchpoint adds, to the release workload, perf stat counting a hardware write watchpoint on
the GIL's `locked` word (PERF_TYPE_BREAKPOINT, perf's mem:ADDR/4:w, one per thread): the other
way issue 22 weighed to see every release of a build whose copies of drop_gil no table names.
Its address is read from the code (the store of 0 at a code-inline site, tests/gil_sites), so
only for a non-PIE interpreter whose GIL is a global (Debian's python3.11).
"""
import argparse
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def measure(python, script, args, tracers, reps):
    """{name: [result dict per rep]} with 'rate' and 'ratio' (untraced rate / this rate).

    A tracer's 'floor' attribute names the variant whose rate is its floor (vs_floor).
    """
    res = {t.name: [] for t in tracers}
    for rep in range(reps):
        this = {}
        for t in B.rotated(tracers, rep):
            rate, r = B.run_traced(python, script, args, t)
            r["rate"] = rate
            this[t.name] = r
            B.log("  rep %d %-34s %12.0f ops/s  events %-10s lost %s cpu %.2fs" % (
                rep, t.name, rate, r.get("events"), r.get("lost"), r.get("cpu_s") or 0))
        base = this["untraced"]["rate"]
        for t in tracers:
            r = this[t.name]
            floor = this.get(getattr(t, "floor", None) or "", {}).get("rate")
            r["ratio"] = base / r["rate"] if r["rate"] else None
            r["vs_floor"] = floor / r["rate"] if floor and r["rate"] else None
            bare = this.get(B.BARE_PROBES, {}).get("rate")
            r["vs_bare"] = bare / r["rate"] if bare and r["rate"] else None
            mp = this.get(B.BARE_READER, {}).get("rate")
            r["vs_minplain"] = mp / r["rate"] if mp and r["rate"] else None
            ev = r.get("events")
            if ev and r.get("ops") and t.name != "untraced":
                per_op = ev / r["ops"]
                r["ev_per_op"] = per_op
                r["cost_us"] = (1 / r["rate"] - 1 / base) / per_op * 1e6
                r["ev_rate"] = ev / r["seconds"]
                if r.get("cpu_s") is not None:
                    r["cpu_per_mev"] = r["cpu_s"] / ev * 1e6
            res[t.name].append(r)
    return res


def locked_address(python):
    """The GIL's `locked` word in a non-PIE @python whose GIL is a global (up to 3.11): the
    address its first code-inline site's `movl $0, disp(%rip)` writes. (None, why) otherwise."""
    tool = os.path.join(B.TOP_BUILDDIR, "tests", "gil_sites")
    if not os.access(tool, os.X_OK):
        return None, "tests/gil_sites not built (make check builds it)"
    with open(os.path.realpath(python), "rb") as f:
        head = f.read(18)
    if head[16:18] != b"\x02\x00":
        return None, "%s is position-independent: its GIL has no fixed address" % python
    out = subprocess.run([tool, os.path.realpath(python), "/nonexistent"], capture_output=True,
                         text=True).stdout
    for line in out.splitlines()[:-1]:
        s = json.loads(line)
        if s["method"] != "code-inline" or s["role"] != "entry":
            continue
        with open(os.path.realpath(python), "rb") as f:
            f.seek(s["offset"])
            b = f.read(10)
        if b[:2] == b"\xc7\x05" and b[6:10] == b"\0\0\0\0":
            return s["address"] + 10 + struct.unpack("<i", b[2:6])[0], None
    return None, "no code-inline site of %s stores to a global" % python


class Watchpoint:
    """perf stat's view of a write watchpoint: the group PerfTracer counts."""

    def __init__(self, addr):
        self.name = "mem"
        self.selector = "mem:0x%x/4:w" % addr


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
                     ("%.2fx" % med("vs_bare")) if med("vs_bare") else "-",
                     ("%.2fx" % med("vs_minplain")) if med("vs_minplain") else "-",
                     B.fnum(med("ev_rate")), B.fnum(med("ev_per_op"), 2),
                     B.fnum(med("cost_us"), 2) if dense else "-",
                     B.fnum(cpu_pct, 1),
                     B.fnum(med("cpu_per_mev"), 2) if dense else "-",
                     str(max(lost)) if lost else "-"])
    return rows


HEADS = ["variant", "ops/s", "slowdown", "vs floor", "vs bare probes", "vs bare reader",
         "GIL events/s", "events/op",
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
    ap.add_argument("--watchpoint", action="store_true",
                    help="also count a hardware write watchpoint on the GIL's locked word")
    ap.add_argument("--baseline", metavar="BUILDDIR",
                    help="also measure the gil-record built there, in the same reps")
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
    sites = B.probe_sites(python)
    groups = [B.ProbeGroup(sites)]  # gil-record's probes, with its attribution fetchargs
    groups.append(B.ProbeGroup(sites, suffix="plain", fetchargs=False))
    attr, plain = groups
    try:
        def named(t, name, floor=None):
            t.name, t.floor = name, floor
            return t
        FLOOR, PFLOOR = "perf stat", B.BARE_PROBES
        MINPLAIN = B.BARE_READER
        rel = [named(B.NoTracer(), "untraced")]
        if perf:
            rel.append(named(B.PerfTracer(attr, "stat"), FLOOR, FLOOR))
        if B.minreader_path():
            rel.append(named(B.MinReader(attr), "minimal reader", FLOOR))
        rel.append(named(B.GilRecord(), "gil-record", FLOOR))
        # issue 26: what reading the native caller (the stack window at each entry) costs
        rel.append(named(B.GilRecord(["--native"]), "gil-record --native", FLOOR))
        base = "gil-record (%s)" % a.baseline
        if a.baseline:
            rel.append(named(B.GilRecord(exe=os.path.join(a.baseline, "gil-record")), base,
                             FLOOR))
        rel.append(named(B.GilRecord(["--attribution=full"]), "gil-record --attribution=full",
                         FLOOR))
        if perf:
            rel.append(named(B.PerfTracer(plain, "stat"), PFLOOR, PFLOOR))
        if B.minreader_path():
            rel.append(named(B.MinReader(plain), MINPLAIN, PFLOOR))
        rel.append(named(B.GilRecord(["--no-attribution"]), "gil-record --no-attribution",
                         PFLOOR))
        if a.watchpoint and perf:
            addr, why = locked_address(python)
            if addr:
                rel.append(named(B.PerfTracer(Watchpoint(addr), "stat"),
                                 "perf stat, write watchpoint on locked", PFLOOR))
            else:
                B.log("--watchpoint: " + why)
        if perf:
            rel.append(named(B.PerfTracer(plain, "record"), "perf record, no fetchargs",
                             PFLOOR))
        con = [t for t in rel if t.name in ("untraced", FLOOR, "gil-record", base, PFLOOR,
                                            "gil-record --native",
                                            "gil-record --no-attribution",
                                            "perf record, no fetchargs")]
        if a.quick:  # the smoke run: the contention workload runs, not every tracer again
            con = [t for t in con if t.name in ("untraced", "gil-record", base)]
        works = [("release", "release.py", (a.threads, a.seconds, "read"),
                  "%d threads of os.read(/dev/zero, 1)" % a.threads, rel, a.reps),
                 ("contention", "contention.py", (4, a.seconds),
                  "4 threads of pure-Python loops, switch interval 5 ms", con,
                  max(1, a.reps - 2))]
        B.out("### Tracing overhead (%s %s)" % (python, B.python_version(python)))
        B.out("")
        B.out("Reps of %.1f s per variant, alternating; medians. slowdown = untraced ops/s / "
              "traced ops/s of the same rep; vs floor = the floor's ops/s / this one's, the "
              "floor being perf stat counting the same probes (with gil-record's attribution "
              "fetchargs, or without them for --no-attribution and perf record); vs bare probes / "
              "vs bare reader = perf stat / the minimal reader on the same sites without any "
              "fetchargs, over this one's ops/s; us per event "
              "= added wall time per operation / probe hits per operation (left out where "
              "there are too few events for it to be more than noise); tracer CPU = its "
              "user+sys time from enabling the events to exit, per second of workload."
              % a.seconds)
        B.out("")
        for key, script, args, what, tracers, reps in works:
            B.log("workload %s: %s" % (key, what))
            res = measure(python, script, args, tracers, reps)
            B.out("#### %s: %s, %d reps" % (key, what, reps))
            B.out("")
            B.out(B.table(HEADS, rows_of(res, [t.name for t in tracers])))
            B.out("")
        if a.light and perf and not a.quick and B.minreader_path():
            light = B.ProbeGroup(sites, light=True, suffix="light", fetchargs=False)
            groups.append(light)
            lt = [named(B.NoTracer(), "untraced"),
                  named(B.PerfTracer(plain, "stat"), PFLOOR, PFLOOR),
                  named(B.PerfTracer(light, "stat"), "perf stat, light", PFLOOR),
                  named(B.MinReader(plain), "minimal reader", PFLOOR),
                  named(B.MinReader(light), "minimal reader, light", PFLOOR)]
            reps = max(1, a.reps - 2)
            B.log("light probe set")
            res = measure(python, "release.py", (a.threads, a.seconds, "read"), lt, reps)
            B.out("#### release, a lighter probe set: no drop_gil return probe (no release "
                  "durations), no fetchargs; %d reps" % reps)
            B.out("")
            B.out(B.table(HEADS, rows_of(res, [t.name for t in lt])))
            B.out("")
    finally:
        for g in groups:
            g.remove()


if __name__ == "__main__":
    main()
