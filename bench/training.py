#!/usr/bin/env python3
"""Benchmark: what recording costs a real training loop.

Usage: training.py [--quick] [--reps N] [--seconds S] [--python PY]

bench/workloads/training.py on Debian's python3 with python3-torch and python3-numpy: a loader
thread builds batches with numpy, a training thread trains an MLP with PyTorch (forward,
backward, SGD). Each rep runs it untraced, under gil-record (default settings), under
gil-record --attribution=full (the 0.1 probes) and --no-attribution, and under the two floors
of the same sites without any fetch: perf stat counting them (the trap itself) and
bench/minreader.c draining them (one record per hit, read and dropped), in a rotated order;
reported are medians of steps/s, of each run's slowdown against the untraced run of the same
rep, of gil-record's against each floor of the same rep, and how many GIL events per step
the recording saw. Skipped without torch.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def main():
    a = B.rep_args(__doc__, 5, 4.0, python="/usr/bin/python3", quick=(1, 1.0))
    if subprocess.call([a.python, "-c", "import torch, numpy"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL) != 0:
        B.skip("%s has no torch and numpy (Debian: apt-get install python3-torch "
               "python3-numpy)" % a.python)

    def named(t, name):
        t.name = name
        return t
    tracers = [B.NoTracer(), B.GilRecord(), B.GilRecord(["--attribution=full"]),
               B.GilRecord(["--no-attribution"])]
    # the floors: gil-record's own sites for this interpreter, without fetchargs
    sites = B.probe_sites(a.python)
    plain = B.ProbeGroup(sites, suffix="plain", fetchargs=False)
    floors = []
    if B.have_perf():
        floors.append(named(B.PerfTracer(plain, "stat"), BARE))
    else:
        B.log("perf not found: the perf stat floor is left out (Debian: apt-get install "
              "linux-perf)")
    if B.minreader_path():
        floors.append(named(B.MinReader(plain), READER))
    tracers += floors
    try:
        res = measure(a, tracers)
    finally:
        plain.remove()
    rows = []
    for t in tracers:
        rs = res[t.name]

        def med(key):
            return B.median([r.get(key) for r in rs])

        def vs(key):
            return "%.3fx" % med(key) if med(key) else "-"
        lost = [r.get("lost") for r in rs if r.get("lost") is not None]
        rows.append([t.name, B.fnum(med("rate"), 1), "%.3fx" % med("ratio"), vs("vs_bare"),
                     vs("vs_reader"),
                     B.fnum(med("ev_per_step"), 1) if med("ev_per_step") else "-",
                     B.fnum(med("ev_rate")) if med("ev_rate") else "-",
                     str(max(lost)) if lost else "-"])
    B.out("### A training loop (%s %s, torch %s; %d reps of %.0f s)" % (
        a.python, B.python_version(a.python), subprocess.check_output(
            [a.python, "-c", "import torch; print(torch.__version__)"], text=True).strip(),
        a.reps, a.seconds))
    B.out("")
    B.out("A numpy loader thread and a PyTorch training thread (MLP 256-512-512-10, batch 64, "
          "one intra-op thread); slowdown = untraced steps/s / traced steps/s of the same rep; "
          "vs bare probes / vs bare reader = the same against %s / %s (gil-record's %d sites, "
          "no fetch)." % (BARE, READER, len(sites)))
    B.out("")
    B.out(B.table(["variant", "steps/s", "slowdown", "vs bare probes", "vs bare reader",
                   "GIL events per step", "GIL events/s", "lost"], rows))
    B.out("")


BARE, READER = B.BARE_PROBES, B.BARE_READER


def measure(a, tracers):
    res = {t.name: [] for t in tracers}
    for rep in range(a.reps):
        this = {}
        for t in B.rotated(tracers, rep):
            rate, r = B.run_traced(a.python, "training.py", (a.seconds,), t)
            r["rate"] = rate
            this[t.name] = r
            B.log("  rep %d %-30s %8.1f steps/s  events %s lost %s" % (
                rep, t.name, rate, r.get("events"), r.get("lost")))
        base = this["untraced"]["rate"]
        for t in tracers:
            r = this[t.name]
            r["ratio"] = base / r["rate"]
            for key, floor in (("vs_bare", BARE), ("vs_reader", READER)):
                if floor in this and t.name != "untraced":
                    r[key] = this[floor]["rate"] / r["rate"]
            if r.get("events"):
                r["ev_per_step"] = r["events"] / r["ops"]
                r["ev_rate"] = r["events"] / r["seconds"]
            res[t.name].append(r)
    return res


if __name__ == "__main__":
    main()
