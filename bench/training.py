#!/usr/bin/env python3
"""Benchmark: what recording costs a real training loop.

Usage: training.py [--quick] [--reps N] [--seconds S] [--python PY]

bench/workloads/training.py on Debian's python3 with python3-torch and python3-numpy: a loader
thread builds batches with numpy, a training thread trains an MLP with PyTorch (forward,
backward, SGD). Each rep runs it untraced, under gil-record (default settings), under
gil-record --attribution=full (the 0.1 probes) and --no-attribution, in a rotated order;
reported are medians of steps/s and of each run's slowdown against the untraced run of the
same rep, and how many GIL events per step the recording saw. Skipped without torch.
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
    tracers = [B.NoTracer(), B.GilRecord(), B.GilRecord(["--attribution=full"]),
               B.GilRecord(["--no-attribution"])]
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
            if r.get("events"):
                r["ev_per_step"] = r["events"] / r["ops"]
                r["ev_rate"] = r["events"] / r["seconds"]
            res[t.name].append(r)
    rows = []
    for t in tracers:
        rs = res[t.name]

        def med(key):
            return B.median([r.get(key) for r in rs])
        lost = [r.get("lost") for r in rs if r.get("lost") is not None]
        rows.append([t.name, B.fnum(med("rate"), 1), "%.3fx" % med("ratio"),
                     B.fnum(med("ev_per_step"), 1) if med("ev_per_step") else "-",
                     B.fnum(med("ev_rate")) if med("ev_rate") else "-",
                     str(max(lost)) if lost else "-"])
    B.out("### A training loop (%s %s, torch %s; %d reps of %.0f s)" % (
        a.python, B.python_version(a.python), subprocess.check_output(
            [a.python, "-c", "import torch; print(torch.__version__)"], text=True).strip(),
        a.reps, a.seconds))
    B.out("")
    B.out("A numpy loader thread and a PyTorch training thread (MLP 256-512-512-10, batch 64, "
          "one intra-op thread); slowdown = untraced steps/s / traced steps/s of the same rep.")
    B.out("")
    B.out(B.table(["variant", "steps/s", "slowdown", "GIL events per step", "GIL events/s",
                   "lost"], rows))
    B.out("")


if __name__ == "__main__":
    main()
