#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Cut recordings (recorder killed, disk full, crash): cut at every byte of the hand-written
recording, each converts to a valid trace holding exactly the complete intervals, with a warning
that says how much was recovered; a real recording cut mid-way with a zero-filled tail too."""
import glob
import os

from convlib import (DATA, HANDWRITTEN, check, check_eq, convert, load, log, slices, validate,
                     workdir)

w = workdir("truncated")
with open(HANDWRITTEN, "rb") as f:
    data = f.read()
lines = data.split(b"\n")
# where each record line ends (without its comma), and whether it is an interval
ends = []
pos = len(lines[0]) + 1
for line in lines[1:]:
    if line and line[:1] != b"]":
        body = line[:-1] if line.endswith(b",") else line
        ends.append((pos + len(body), body[:1] == b"["))
    pos += len(line) + 1
closed = len(data) - 1  # after "]}"
path = os.path.join(w, "GIL_3096504_rank_0.json")
out = os.path.join(w, "trace.json")
checked = 0
for k in range(len(data) + 1):
    with open(path, "wb") as f:
        f.write(data[:k])
    o, err = convert("-i", path, "-o", out, "--clock", "monotonic_raw")
    records = sum(1 for e, iv in ends if e <= k)
    intervals = sum(1 for e, iv in ends if e <= k and iv)
    doc = load(out)
    check_eq(len(slices(doc)), intervals, "cut at %d: slices" % k)
    rec = doc["otherData"]["recordings"][0]
    check_eq((rec["records"], rec["complete"]), (records, k >= closed), "cut at %d" % k)
    if k < closed:
        nbytes = max([e for e, iv in ends if e <= k] or [0])
        check("warning: %s: the recording was cut (no end): converted its %d complete records, "
              "%d bytes" % (path, records, nbytes) in err, "cut at %d: %s" % (k, err))
    else:
        check("cut" not in err, "complete at %d: %s" % (k, err))
    if k % 97 == 0 or k in (len(data), closed - 1):
        validate(out, "--bound")
        checked += 1

# a real recording cut mid-line, and one with the zero-filled tail a crash can leave
real = sorted(glob.glob(os.path.join(DATA, "real", "GIL_*_rank_*.json")))[0]
with open(real, "rb") as f:
    data = f.read()
cut = int(len(data) * 0.6)
for name, tail in (("GIL_1_rank_0.json", b""), ("GIL_2_rank_0.json", b"\0" * 8192)):
    p = os.path.join(w, name)
    with open(p, "wb") as f:
        f.write(data[:cut] + tail)
    o, err = convert("-i", p, "-o", out)
    check("the recording was cut (no end)" in err, err)
    validate(out, "--bound")
    complete = data[:cut].rsplit(b"\n", 1)[0]
    n_iv = sum(1 for line in complete.split(b"\n")[1:] if line.startswith(b"["))
    check_eq(len(slices(load(out))), n_iv, name + ": every complete interval")
log("PASS (%d validated)" % checked)
