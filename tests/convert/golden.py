#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Golden tests on real recordings (tests/data/real): the normalized projection of each
conversion (phase, name, pid, tid, order; hand-offs; counter values) equals the committed one;
every recorded interval appears exactly once; holds of one process never overlap; hand-offs go
from a drop to the next take of another thread; the counter counts the open takes.

A live part records a fresh workload with gil-record when it can (root, tracefs) and checks the
same properties on it. --update rewrites the golden files."""
import glob
import json
import os
import subprocess
import sys

from convlib import (DATA, GIL_RECORD, HERE, NAMES, check, check_eq, check_invariants, convert,
                     fail, load, log, projection, recording_intervals, slices, validate, workdir)

UPDATE = "--update" in sys.argv
w = workdir("golden")
REAL = os.path.join(DATA, "real")


def once(doc, recs, what):
    """Each recorded interval is one slice: same thread, kind, and duration to the ns
    (realtime interpolation may shift a duration by the drift, a few ns at most)."""
    got = sorted((x[1], x[2]) for x in slices(doc))
    want = sorted((i[0], NAMES[i[1]]) for rec in recs for i in recording_intervals(rec))
    check_eq(len(got), len(want), "%s: slices vs recorded intervals" % what)
    check(got == want, "%s: the (tid, kind) multiset differs from the recording" % what)


def golden(inputs, name):
    out = os.path.join(w, name + ".json")
    convert("-q", *sum((["-i", i] for i in inputs), []), "-o", out)
    validate(out, "--bound")
    doc = load(out)
    recs = []
    for i in inputs:
        recs += sorted(glob.glob(os.path.join(i, "GIL_*.json"))) if os.path.isdir(i) else [i]
    once(doc, recs, name)
    check_invariants(doc, name)
    proj = json.loads(json.dumps(projection(doc)))
    gpath = os.path.join(REAL, "golden", name + ".json")
    if UPDATE:
        with open(gpath, "w") as f:
            json.dump(proj, f, separators=(",", ":"))
            f.write("\n")
        log("updated " + gpath)
        return doc
    with open(gpath) as f:
        want = json.load(f)
    for part in ("threads", "flows", "counters"):
        if proj[part] != want[part]:
            got_p, want_p = proj[part], want[part]
            if isinstance(got_p, dict):
                keys = sorted(set(got_p) | set(want_p))
                k = next(k for k in keys if got_p.get(k) != want_p.get(k))
                fail("%s: %s of %s differ from %s:\n  got:  %.300s\n  want: %.300s" %
                     (name, part, k, gpath, got_p.get(k), want_p.get(k)))
            i = next(i for i in range(max(len(got_p), len(want_p)))
                     if i >= len(got_p) or i >= len(want_p) or got_p[i] != want_p[i])
            fail("%s: %s differ from %s at %d: got %s, want %s" % (
                name, part, gpath, i, got_p[i:i + 3], want_p[i:i + 3]))
    return doc


for rec in sorted(glob.glob(os.path.join(REAL, "GIL_*_rank_*.json"))):
    doc = golden([rec], os.path.basename(rec)[:-5])
    check(slices(doc) and doc["otherData"]["recordings"][0]["flows"] > 0,
          rec + ": a contended workload shows hand-offs")
doc = golden([os.path.join(REAL, "ranks")], "ranks")
sorts = {e["pid"]: e["args"]["sort_index"] for e in doc["traceEvents"]
         if e["name"] == "process_sort_index"}
ranks = {r["trace_pid"]: r["rank"] for r in doc["otherData"]["recordings"]}
check_eq(sorted(sorts, key=sorts.get), sorted(ranks, key=ranks.get), "rows sorted by rank")

# --- live: a fresh recording of the same workload ---------------------------------------------
if UPDATE:
    sys.exit(0)
if os.geteuid() != 0 or not os.access(GIL_RECORD, os.X_OK) or \
        not os.path.exists("/sys/kernel/tracing/uprobe_events"):
    log("live part skipped: needs root, tracefs and a built gil-record")
    log("PASS")
    sys.exit(0)
pythons = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")),
                 key=lambda p: [int(x) for x in p.split("/")[-3].split(".") if x.isdigit()])
python = pythons[-1] if pythons else "/usr/bin/python3"
live = os.path.join(w, "live")
os.makedirs(live)
p = subprocess.run([GIL_RECORD, "-q", "--output-dir", live, "--", python,
                    os.path.join(HERE, "handoff_workload.py"), "0.1"], capture_output=True,
                   text=True, timeout=120)
if p.returncode != 0:
    log("live part skipped: gil-record failed (%d): %s" % (p.returncode, p.stderr.strip()[-300:]))
    log("PASS")
    sys.exit(0)
recs = glob.glob(os.path.join(live, "GIL_*.json"))
check(len(recs) == 1, "one recording: %s" % recs)
out = os.path.join(w, "live.json")
convert("-q", "-i", recs[0], "-o", out)
validate(out, "--bound")
doc = load(out)
once(doc, recs, "live")
check_invariants(doc, "live " + python)
kinds = {x[2] for x in slices(doc)}
check_eq(kinds, {"take_gil", "hold_gil", "drop_gil"}, "live: all three kinds")
check(len({x[1] for x in slices(doc)}) >= 3, "live: the workload's threads have rows")
log("PASS (live: %s, %d slices)" % (python, len(slices(doc))))
