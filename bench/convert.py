#!/usr/bin/env python3
"""Benchmark 5: gil-convert's throughput and peak memory against a stdlib-json Python converter.

Usage: convert.py [--quick] [--reps N] [--sizes 1000000,10000000] [--python PY]

Synthetic recordings (gen_recording.py, following doc/format.md) of each size are converted by
  gil-convert (defaults: slices, "GIL waiters" counter, hand-off flows),
  gil-convert --no-flows --no-counter (the same output as the reference),
  ref_convert.py (json.load, per-interval dicts, json.dumps) on the given interpreter,
alternating, REPS times each (the reference once at sizes above 2M: it needs minutes and GBs).
Reported: medians of wall time, intervals per second, peak RSS (wait4), output size; the
ratio to the reference; peak RSS against the input size. Inputs are cached in $GILBENCH_CACHE
(default /var/tmp/giltrace-bench).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def run(cmd, outdir):
    """Run @cmd with the output path appended: (wall s, cpu s, peak RSS KiB, output bytes) of one conversion."""
    out = os.path.join(outdir, "out.json")
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd + [out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    rc, cpu, rss = B.wait_rusage(p, 3600)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    if rc != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), rc, err))
    size = os.path.getsize(out)
    os.unlink(out)
    return wall, cpu, rss, size


def input_for(n, cache, python):
    path = os.path.join(cache, "synthetic_%d.json" % n)
    if not os.path.exists(path):
        B.log("generating %s ..." % path)
        subprocess.check_call([python, os.path.join(B.BENCH_DIR, "gen_recording.py"), str(n),
                               path])
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one rep (smoke test)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--python", default=None, help="interpreter for the reference converter")
    ap.add_argument("--ref-max", type=int, default=10000000,
                    help="largest size the reference converter runs on")
    a = ap.parse_args()
    if not os.access(B.GIL_CONVERT, os.X_OK):
        B.skip("gil-convert not built at " + B.GIL_CONVERT)
    python = a.python or B.default_python()
    sizes = [int(x) for x in a.sizes.split(",")]
    reps = a.reps
    cache = os.environ.get("GILBENCH_CACHE") or "/var/tmp/giltrace-bench"
    if a.quick:
        sizes, reps = [30000], 1
        cache = tempfile.mkdtemp(prefix="gilbench-conv-")
    os.makedirs(cache, exist_ok=True)
    outdir = tempfile.mkdtemp(prefix="gilbench-convout-")
    variants = [
        ("gil-convert", lambda i: [B.GIL_CONVERT, "-q", "-i", i, "-o"]),
        ("gil-convert --no-flows --no-counter",
         lambda i: [B.GIL_CONVERT, "-q", "--no-flows", "--no-counter", "-i", i, "-o"]),
        ("Python reference (%s)" % os.path.basename(python),
         lambda i: [python, os.path.join(B.BENCH_DIR, "ref_convert.py"), i]),
    ]
    rows = []
    heads = ["input", "converter", "wall s", "intervals/s", "CPU s", "peak RSS MB",
             "RSS / input", "output MB", "speed vs reference"]
    try:
        for n in sizes:
            path = input_for(n, cache, python)
            insize = os.path.getsize(path)
            res = {}
            for rep in range(reps):
                for k, (name, mk) in enumerate(B.rotated(variants, rep)):
                    if name.startswith("Python") and (n > a.ref_max or
                                                      (n > 2000000 and rep > 0)):
                        continue
                    res.setdefault(name, []).append(run(mk(path), outdir))
            ref = res.get(variants[2][0])
            ref_wall = B.median([r[0] for r in ref]) if ref else None
            for name, _ in variants:
                if name not in res:
                    continue
                rs = res[name]
                wall = B.median([r[0] for r in rs])
                rss = max(r[2] for r in rs) / 1024
                rows.append(["%s intervals, %.0f MB" % (B.fnum(n), insize / 1e6), name,
                             B.fnum(wall, 2), B.fnum(n / wall),
                             B.fnum(B.median([r[1] for r in rs]), 2), B.fnum(rss, 1),
                             B.fnum(rss * 1024 * 1024 / insize, 3),
                             B.fnum(B.median([r[3] for r in rs]) / 1e6),
                             ("%.1fx" % (ref_wall / wall)) if ref_wall else "-"])
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
        if a.quick:
            shutil.rmtree(cache, ignore_errors=True)
    B.out("### gil-convert against a stdlib-json Python converter")
    B.out("")
    B.out("Runs per variant: %d (median wall; the reference once above 2M intervals). "
          "Reference interpreter: %s %s." % (reps, python, B.python_version(python)))
    B.out("")
    B.out(B.table(heads, rows, ["l", "l"] + ["r"] * 7))
    B.out("")


if __name__ == "__main__":
    main()
