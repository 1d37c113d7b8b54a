#!/usr/bin/env python3
"""Benchmark: how long gil-record takes to attach, reading DWARF, and from the object cache.

Usage: attach.py [--quick] [--reps N] [--baseline BUILDDIR]

For each interpreter with DWARF here (Debian's python3.11 with python3.11-dbg; Debian sid's
3.13 - 3.15 with their -dbg files in the root tools/sid-root.sh builds, run in a container),
a process waiting on stdin is recorded with `gil-record --pid P --duration 0.2`; the time is
from starting gil-record to its "recording" line, which it prints once every probe is on.
"cold" empties the object cache first (DWARF is read), "cached" attaches again. Medians over
the reps, cold and cached alternating; the ratio is cold / cached of the same rep. "stop" is
from the end of the 0.2 s (0.2 s after the "recording" line) to gil-record's exit: its events
closed, its probes removed, its file written (the cached attaches' median). With --baseline, the gil-record built in BUILDDIR is measured in the same
reps, alternating with this one, each with its own object cache.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
top = os.environ.get("top_srcdir", os.path.dirname(here))
sys.path.insert(0, os.path.join(top, "tests", "integration"))
from sidroot import SID_PYTHONS, SID_ROOT, SidWorkload  # noqa: E402
from distrolib import debian_python  # noqa: E402
from giltest import GIL_RECORD, Workload  # noqa: E402


def real_binary(wrapper):
    """The program libtool's wrapper script execs, and the library path it sets: what an
    installed gil-record costs, without the wrapper's shell, sed and exec (about 0.1 s here)."""
    d = os.path.dirname(wrapper)
    real = os.path.join(d, ".libs", os.path.basename(wrapper))
    if not os.path.exists(real):
        return wrapper, {}
    return real, {"LD_LIBRARY_PATH": os.path.join(d, ".libs")}


def attach_seconds(pid, cache, binary):
    binary, extra = real_binary(binary)
    env = dict(os.environ, GIL_OBJECT_CACHE=cache, **extra)
    t0 = time.monotonic()
    p = subprocess.Popen([binary, "--pid", str(pid), "--duration", "0.2", "--output-dir",
                          tempfile.mkdtemp(prefix="gilattach-")], stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True, env=env)
    took = None
    for line in p.stderr:
        if "recording" in line and took is None:
            took = time.monotonic() - t0
    p.wait()
    ended = time.monotonic() - t0
    if p.returncode != 0 or took is None:
        raise SystemExit("gil-record --pid %d failed (%d)" % (pid, p.returncode))
    return took, ended - took - 0.2


def measure(label, start, reps, rows, builds):
    caches = [tempfile.mkdtemp(prefix="gilcache-") for _ in builds]
    res = [([], [], [], []) for _ in builds]
    w = start()
    try:
        for _ in range(reps):
            for (name, binary), cache, (cold, warm, ratio, stop) in zip(builds, caches, res):
                os.chmod(cache, 0o700)
                shutil.rmtree(os.path.join(cache, "objects"), ignore_errors=True)
                c, _ = attach_seconds(w.pid, os.path.join(cache, "objects"), binary)
                h, st = attach_seconds(w.pid, os.path.join(cache, "objects"), binary)
                cold.append(c)
                warm.append(h)
                ratio.append(c / h)
                stop.append(st)
    finally:
        w.kill()
        for cache in caches:
            shutil.rmtree(cache, ignore_errors=True)
    for (name, _), (cold, warm, ratio, stop) in zip(builds, res):
        rows.append("| %s%s | %.2f s | %.2f s | %.1fx | %.2f s |"
                    % (label, name, statistics.median(cold), statistics.median(warm),
                       statistics.median(ratio), statistics.median(stop)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--baseline", metavar="BUILDDIR",
                    help="also measure the gil-record built there, alternating")
    a = ap.parse_args()
    builds = [("", GIL_RECORD)]
    if a.baseline:
        builds = [(" (this build)", GIL_RECORD),
                  (" (%s)" % a.baseline, os.path.join(a.baseline, "gil-record"))]
    reps = 1 if a.quick else a.reps
    rows = ["| interpreter | cold (reads DWARF) | cached | cold / cached | stop |",
            "|---|---|---|---|---|"]
    debian = debian_python(dbg=True)
    if debian:
        measure("Debian %s + python3.11-dbg" % os.path.basename(debian),
                lambda: Workload(debian, "ctypes_calls.py", 1), reps, rows, builds)
    if not a.quick and os.path.exists(SID_ROOT + ".stamp"):
        for ver in SID_PYTHONS:
            measure("sid python%s + -dbg" % ver,
                    lambda: SidWorkload(SID_ROOT, "/usr/bin/python%s" % ver, "ctypes_calls.py", 1),
                    reps, rows, builds)
    print("### Attach and stop time\n")
    print("\n".join(rows))
    print()


if __name__ == "__main__":
    main()
