#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""gil-convert's outputs on the committed recordings are byte-identical to those of the build
they were made with (tests/data/identical/, written by 64daf00, before the source tree was
reorganised): the trace in both ts formats and clocks, the text and JSON summaries, the SVG, a
merge with a Kineto and an msprof trace, and the sysTrace reference's files. A change that
means to alter an output updates the files with --update and says why in its commit.

Runs in a work directory holding a copy of the recordings, with relative paths, so the paths
that the outputs carry are the same wherever the tree is."""
import hashlib
import os
import shutil
import subprocess
import sys

from convlib import DATA, GIL_CONVERT, check, fail, log, workdir

UPDATE = "--update" in sys.argv
WANT = os.path.join(DATA, "identical")
w = workdir("identical")
for part in ("real", "handwritten", "fixtures"):
    shutil.copytree(os.path.join(DATA, part), os.path.join(w, part))

R1 = "real/GIL_20459_rank_0.json"
R2 = "real/GIL_20495_rank_0.json"
R3 = "real/GIL_20523_rank_0.json"
HW = "handwritten/GIL_3096504_rank_0.json"
SYS = "fixtures/gil/GIL_3096504_rank_0.json"
KINETO = "fixtures/kineto/trace_excerpt.json"
MSPROF = "fixtures/msprof/trace_view_excerpt.json"

# name -> (arguments; OUT stands for the output file, and ".txt" cases capture stdout)
CASES = {
    "r1.json": ["-q", "-i", R1, "-o", "OUT"],
    "r2.json": ["-q", "-i", R2, "-o", "OUT"],
    "r3-number.json": ["-q", "-i", R3, "--ts-format=number", "-o", "OUT"],
    "r1-monotonic.json": ["-q", "-i", R1, "--clock=monotonic", "-o", "OUT"],
    "r2-bare.json": ["-q", "-i", R2, "--no-flows", "--no-counter", "-o", "OUT"],
    "ranks.json": ["-q", "-i", "real/ranks", "-o", "OUT"],
    "hw.json": ["-q", "-i", HW, "-o", "OUT"],
    "systrace.json": ["-q", "-i", SYS, "-o", "OUT"],
    "merge-kineto.json": ["-q", "-i", R1, "--merge", KINETO, "-o", "OUT"],
    "merge-msprof.json": ["-q", "-i", SYS, "--merge", MSPROF, "-o", "OUT"],
    "r1-summary.txt": ["-q", "-i", R1, "--summary"],
    "r3-summary.txt": ["-q", "-i", R3, "--summary"],
    "ranks-summary.txt": ["-q", "-i", "real/ranks", "--summary"],
    "hw-summary.txt": ["-q", "-i", HW, "--summary"],
    "r2-summary.json": ["-q", "-i", R2, "--summary-json", "OUT"],
    "ranks-summary.json": ["-q", "-i", "real/ranks", "--summary-json", "OUT"],
    "r1.svg": ["-q", "-i", R1, "--svg", "OUT"],
    "ranks.svg": ["-q", "-i", "real/ranks", "--svg", "OUT"],
}

bad = []
for name, args in sorted(CASES.items()):
    out = os.path.join(w, name)
    argv = [GIL_CONVERT] + [name if a == "OUT" else a for a in args]
    p = subprocess.run(argv, cwd=w, capture_output=True, timeout=120)
    if p.returncode != 0:
        fail("%s: gil-convert exited %d: %s" % (name, p.returncode, p.stderr.decode()[-300:]))
    if name.endswith(".txt"):
        got = p.stdout
    else:
        with open(out, "rb") as f:
            got = f.read()
    want_path = os.path.join(WANT, name)
    if UPDATE:
        with open(want_path, "wb") as f:
            f.write(got)
        log("updated " + want_path)
        continue
    with open(want_path, "rb") as f:
        want = f.read()
    if got != want:
        bad.append("%s: %d bytes (sha256 %s), want %d (%s); got is %s" % (
            name, len(got), hashlib.sha256(got).hexdigest()[:12], len(want),
            hashlib.sha256(want).hexdigest()[:12], out if not name.endswith(".txt") else
            "stdout"))
check(not bad, "outputs differ from tests/data/identical/:\n  " + "\n  ".join(bad))
log("PASS: %d outputs byte-identical" % len(CASES))
