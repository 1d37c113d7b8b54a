#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Damaged inputs never crash the converter: recordings and profiler traces with random bytes
changed, cut out or spliced in (seeded, so reproducible) either convert to valid JSON or fail
with one line and exit 1. Built with --enable-sanitizers this also catches memory errors and
undefined behaviour."""
import json
import os
import random
import subprocess

from convlib import DATA, FIXTURES, GIL_CONVERT, HANDWRITTEN, check, fail, log, workdir

w = workdir("robust")
rnd = random.Random(20261202)
SPLICE = [b'[1,2,3,4,5],', b'{"thread":{"tid":-1,"name":"\xff\xfe"}},', b'99999999999999999999',
          b'"', b'{"lost":{"count":18446744073709551615,"ts":-1}},', b'[2147483648,0,1,2,3],',
          b'{"footer":{"clock_offsets":{"realtime_ns":9223372036854775807},"end_ns":1}},',
          b'\x00' * 64]


def mutate(data):
    d = bytearray(data)
    for _ in range(rnd.randint(1, 8)):
        pos = rnd.randrange(len(d))
        op = rnd.random()
        if op < 0.4:
            d[pos] = rnd.choice(b'[]{},:"0123456789-.\n\x00ax')
        elif op < 0.7:
            del d[pos:pos + rnd.randint(1, 50)]
        else:
            d[pos:pos] = rnd.choice(SPLICE)
    return bytes(d)


def run(args, what, data):
    p = subprocess.run([GIL_CONVERT, "-q"] + args, capture_output=True, text=True, timeout=60)
    bad = os.path.join(w, "failing-input.json")
    if p.returncode not in (0, 1) or "Sanitizer" in p.stderr or "runtime error" in p.stderr:
        with open(bad, "wb") as f:
            f.write(data)
        fail("%s: exit %d, kept as %s: %s" % (what, p.returncode, bad, p.stderr[-500:]))
    if p.returncode == 1:
        check(p.stderr.count("\n") == 1 and p.stderr.startswith("gil-convert: "),
              "%s: not one line: %r" % (what, p.stderr))
    return p.returncode


recordings = [HANDWRITTEN, os.path.join(FIXTURES, "gil", "GIL_3096504_rank_0.json"),
              os.path.join(DATA, "real", "GIL_20523_rank_0.json")]
profiles = [os.path.join(FIXTURES, "kineto", "trace_excerpt.json"),
            os.path.join(FIXTURES, "msprof", "trace_view_excerpt.json")]
rec_in, out = os.path.join(w, "GIL_1_rank_0.json"), os.path.join(w, "out.json")
counts = [0, 0]
for i in range(300):
    data = mutate(open(rnd.choice(recordings), "rb").read())
    with open(rec_in, "wb") as f:
        f.write(data)
    rc = run(["-i", rec_in, "-o", out], "recording %d" % i, data)
    counts[rc] += 1
    if rc == 0:
        with open(out) as f:
            json.load(f)
prof_in = os.path.join(w, "profile.json")
for i in range(100):
    data = mutate(open(rnd.choice(profiles), "rb").read())
    with open(prof_in, "wb") as f:
        f.write(data)
    rc = run(["-i", HANDWRITTEN, "--merge", prof_in, "-o", out], "profile %d" % i, data)
    try:
        json.loads(data)
        valid_in = True
    except ValueError:
        valid_in = False
    if rc == 0 and valid_in:
        with open(out) as f:
            json.load(f)
log("PASS (recordings: %d converted, %d refused)" % tuple(counts))
