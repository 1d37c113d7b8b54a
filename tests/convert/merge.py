#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""--merge: one file holding a profiler's trace, byte for byte, and the GIL rows on its time
axis. msprof/torch_npu trace_view.json (epoch microseconds) with --profiling-data; a Kineto
trace (relative ts, baseTimeNanoseconds) where a known instant must land on the expected
microsecond; pid collisions; the non-overlap warning; the profiler's otherData."""
import json
import os
import re

from convlib import (FIXTURES, HANDWRITTEN, check, check_eq, check_invariants, convert, events,
                     load, log, ns, slices, us, validate, workdir)

w = workdir("merge")
PROF = os.path.join(FIXTURES, "msprof", "PROF_example")
VIEW = os.path.join(FIXTURES, "msprof", "trace_view_excerpt.json")
KINETO = os.path.join(FIXTURES, "kineto", "trace_excerpt.json")
MAIN = 3096504
GIL_PID = (MAIN << 10) | 1023


def ours(doc, pid):
    return [e for e in doc["traceEvents"] if e.get("pid") == pid]


def their_events(path):
    with open(path) as f:
        d = json.load(f)
    return d if isinstance(d, list) else d["traceEvents"]


# --- msprof trace_view.json, aligned on the same collection's start_info ----------------------
out = os.path.join(w, "msprof.json")
convert("-q", "-i", HANDWRITTEN, "--profiling-data", PROF, "--merge", VIEW, "-o", out)
validate(out, "--bound")
with open(out) as f:
    text = f.read()
with open(VIEW) as f:
    view = f.read()
inner = view.strip()[1:-1]
check(inner in text, "the profiler's events are copied byte for byte")
doc = load(out)
theirs = their_events(VIEW)
check(doc["traceEvents"][:len(theirs)] == load(VIEW), "their events first, unchanged")
check_eq(len([e for e in doc["traceEvents"] if e.get("pid") in (MAIN, 3170820320, 3170820512)]),
         len(theirs), "no GIL event joins the profiler's rows")
# pid 3096504 is the profiler's Python row: the GIL rows get their own process
names = {e["pid"]: e["args"]["name"] for e in events(doc, "M", "process_name")}
check_eq(names[MAIN], "Python", "the profiler's process keeps its name")
check_eq(names[GIL_PID], "GIL python3 train.py --epochs 1 (pid 3096504, rank 0)", "our row")
take = sorted(x for x in slices(doc, GIL_PID) if x[1] == MAIN and x[2] == "take_gil")[0]
check_eq(us(take[3]), "1736408883694250.000", "the known instant on the msprof axis")
hold = sorted(x for x in slices(doc, GIL_PID) if x[1] == MAIN and x[2] == "hold_gil")[0]
py = [e for e in theirs if e.get("cat") == "python_function"][0]
check(hold[3] <= ns(py["ts"]) <= hold[3] + hold[4],
      "torch_npu's first python_function (%s) runs while the main thread holds the GIL (%s+%s)"
      % (py["ts"], us(hold[3]), us(hold[4])))
check_eq(doc["otherData"]["merge"]["kind"], "array", "otherData.merge")
check_eq(doc["displayTimeUnit"], "ns", "a bare array gets our displayTimeUnit")
check_invariants({"traceEvents": ours(doc, GIL_PID)}, "merged msprof")

# --- Kineto: relative ts and baseTimeNanoseconds ---------------------------------------------
# the main thread's first take_gil, default clock: epoch ns 1736408883694252988. Put Kineto's
# base so that its first event (ts 1212075548353.304) is that very instant.
EPOCH = 1736408883694252988
with open(KINETO) as f:
    k = f.read()
base = EPOCH - 1212075548353304
aligned = os.path.join(w, "kineto_aligned.json")
with open(aligned, "w") as f:
    f.write(k.replace('"baseTimeNanoseconds": 1719853884000000000',
                      '"baseTimeNanoseconds": %d' % base))
out = os.path.join(w, "kineto.json")
o, err = convert("-i", HANDWRITTEN, "--merge", aligned, "-o", out)
check("do not overlap" not in err, "aligned traces overlap: " + err)
validate(out, "--bound", "--allow-phase", "i")
doc = load(out)
take = sorted(x for x in slices(doc, MAIN) if x[1] == MAIN and x[2] == "take_gil")[0]
first = their_events(KINETO)[0]
check_eq(us(take[3]), "1212075548353.304", "the known instant on Kineto's relative axis")
check_eq(ns(first["ts"]), take[3], "... the same instant as Kineto's first event")
check_eq(doc["baseTimeNanoseconds"], base, "baseTimeNanoseconds kept")
check_eq(doc["displayTimeUnit"], "ms", "the profiler's displayTimeUnit kept")
for key in ("schemaVersion", "deviceProperties", "distributedInfo", "username", "INFO",
            "traceName"):
    check(key in doc, "top-level key %s kept" % key)
with open(out) as f:
    text = f.read()
for m in re.finditer(r'"ts": [0-9.]+', k):
    check(m.group(0) in text, "Kineto's %s copied verbatim" % m.group(0))
check_eq(len(their_events(out)) - len(ours(doc, MAIN)), len(their_events(KINETO)),
         "all of Kineto's events are there")
check_eq(doc["otherData"]["merge"]["baseTimeNanoseconds"], base, "otherData.merge")

# the unchanged Kineto excerpt was recorded in 2024: the GIL rows cannot overlap it
o, err = convert("-i", HANDWRITTEN, "--merge", KINETO, "-o", os.path.join(w, "apart.json"))
check("warning: the GIL rows (16554999336419.750..16554999696253.000 us) do not overlap the "
      "profiler's trace (1212075525586.016..1212076832503.044 us): were both recorded at the "
      "same time, on this host?" in err, err)

# the profiler's own otherData gets ours under "giltrace"
with_other = os.path.join(w, "with_other.json")
with open(with_other, "w") as f:
    f.write('{"traceEvents":[{"ph":"X","name":"step","pid":1,"tid":1,"ts":5,"dur":1}],'
            '"otherData":{"version":"PyTorch Profiler (0.1.0)"}}')
out = os.path.join(w, "other.json")
convert("-q", "-i", HANDWRITTEN, "--merge", with_other, "-o", out)
doc = load(out)
check_eq(doc["otherData"]["version"], "PyTorch Profiler (0.1.0)", "their otherData kept")
check_eq(doc["otherData"]["giltrace"]["recordings"][0]["pid"], MAIN, "ours under giltrace")
validate(out, "--bound")
# an empty profiler trace still gives a valid file
empty = os.path.join(w, "empty_profile.json")
with open(empty, "w") as f:
    f.write('{"traceEvents": [ ]}')
out = os.path.join(w, "empty.json")
convert("-q", "-i", HANDWRITTEN, "--merge", empty, "-o", out)
validate(out, "--bound")
check_eq(len(slices(load(out))), 15, "GIL rows after an empty profiler trace")
log("PASS")
