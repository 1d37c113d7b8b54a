#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What a conversion writes, from both input formats: every interval exactly once with the exact
times, the metadata rows, args for flagged intervals, the counter and hand-offs (equal, event
for event, to the Python reference converter), several inputs in rank order."""
import json
import os
import shutil

import refconv
from convlib import (FIXTURES, HANDWRITTEN, NAMES, check, check_eq, check_invariants, convert,
                     events, fail, load, log, ns, recording_intervals, slices, us, validate,
                     workdir)
from mkrec import Recording, header_for, synth

w = workdir("formats")


def exact_set(doc):
    """Every non-metadata event, exactly, for comparing with the reference converter."""
    out = set()
    for e in doc["traceEvents"]:
        if e["ph"] in "MI":  # lost events: checked apart, the reference has none
            continue
        out.add((e["ph"], e["name"], e["pid"], e.get("tid") if e["ph"] != "C" else None,
                 ns(e["ts"]), ns(e["dur"]) if "dur" in e else None,
                 json.dumps(e.get("args"), default=str) if e["ph"] == "C" else None,
                 e.get("id")))
    return out


def against_reference(rec, what, *opts):
    out = os.path.join(w, what + ".json")
    convert("-q", "-i", rec, "-o", out, *opts)
    validate(out, "--bound")
    doc = load(out)
    ref = refconv.convert(refconv.load(rec))
    a, b = exact_set(doc), exact_set(json.loads(json.dumps(ref)))
    if a != b:
        fail("%s: gil-convert and the reference differ: %d only in gil-convert (%s...), %d only "
             "in the reference (%s...)" % (what, len(a - b), sorted(a - b)[:2], len(b - a),
                                          sorted(b - a)[:2]))
    check_invariants(doc, what)
    return doc


# --- the hand-written recording, field by field --------------------------------------------
doc = against_reference(HANDWRITTEN, "handwritten")
OFF = 1736408883337350 * 1000 - 172163578931250
B = 172163935831250
xs = slices(doc)
ivs = recording_intervals(HANDWRITTEN)
check_eq(len(xs), len(ivs), "one slice per recorded interval")
# the fixture's first take_gil, on the recording's own clock offsets (interpolated)
first = [x for x in xs if x[1] == 3096504][0]
check_eq((first[2], us(first[3]), us(first[4])), ("take_gil", "1736408883694252.988", "3.120"),
         "the main thread's first take_gil")
# exactly once: the multiset of (tid, name) matches the recording
check_eq(sorted((x[1], x[2]) for x in xs), sorted((i[0], NAMES[i[1]]) for i in ivs),
         "(tid, kind) of every interval")
args = {(x[1], x[2], x[3]): x[5] for x in xs}
flagged = {k: v for k, v in args.items() if v}
check_eq(sorted(flagged.values(), key=str),
         sorted([{"begin_unknown": True}, {"truncated": True, "lost_events": True},
                 {"truncated": True, "resync": True}], key=str), "args of flagged intervals")
meta = events(doc, "M")
pname = [e for e in meta if e["name"] == "process_name"]
check_eq(pname[0]["args"]["name"], "GIL python3 train.py --epochs 1 (pid 3096504, rank 0)",
         "process_name")
check_eq([e["args"]["sort_index"] for e in meta if e["name"] == "process_sort_index"], [0],
         "process_sort_index")
tnames = [(e["tid"], e["args"]["name"]) for e in meta if e["name"] == "thread_name"]
check_eq(tnames[-1], (3105075, "ACL_thread2"), "a renamed thread gets its new name last")
check({(3096504, "python3"), (3105076, "pt_data_worker")} <= set(tnames), "thread names")
tsort = {e["tid"]: e["args"]["sort_index"] for e in meta if e["name"] == "thread_sort_index"}
check_eq(tsort[3096504], 0, "the main thread sorts first")
lost = events(doc, "I")
check_eq([(e["name"], e["args"]) for e in lost], [("lost events", {"cpu": 1, "count": 3})],
         "lost events")
other = doc["otherData"]
rec = other["recordings"][0]
check_eq((rec["complete"], rec["records"], rec["intervals"], rec["lost_events"],
          rec["unknown_records"], rec["threads"], rec["flows"], rec["late_points"]),
         (True, 25, 15, 3, 1, 4, 4, 0), "otherData.recordings[0]")
check_eq(rec["header"]["cmdline"], "python3 train.py --epochs 1", "otherData keeps the header")
check_eq(rec["footer"]["reason"], "duration", "otherData keeps the footer")
check_eq(other["lost_events"], 3, "otherData.lost_events")
check_eq(other["options"]["clock"], "realtime", "otherData.options")
check_eq(doc["displayTimeUnit"], "ns", "displayTimeUnit")
# the hand-offs of the fixture: main -> ACL thread at its take, and back
flows = [(e["tid"], f["tid"]) for e in events(doc, "s") for f in events(doc, "f")
         if f["id"] == e["id"]]
check((3096504, 3105075) in flows and (3105075, 3096504) in flows, "hand-offs: %s" % flows)
# --no-flows / --no-counter
out = os.path.join(w, "bare.json")
convert("-q", "--no-flows", "--no-counter", HANDWRITTEN, "-o", out)
check_eq({e["ph"] for e in load(out)["traceEvents"]}, {"M", "X", "I"}, "phases without extras")

# --ts-format number: the same digits, unquoted
out = os.path.join(w, "number.json")
convert("-q", "--ts-format", "number", HANDWRITTEN, "-o", out)
validate(out, "--bound")
with open(out) as f:
    text = f.read()
check('"ts":1736408883694252.988,"dur":3.120' in text, "numeric ts keeps its digits")
check('"ts":"' not in text, "no string ts left")
check_eq(load(out)["otherData"]["options"]["ts_format"], "number", "options.ts_format")

# --- a real recording and a synthetic one: same events as the reference ----------------------
real = sorted(os.listdir(os.path.join(os.path.dirname(HANDWRITTEN), "..", "real")))
for name in real:
    if name.endswith(".json") and name.startswith("GIL_"):
        against_reference(os.path.join(os.path.dirname(HANDWRITTEN), "..", "real", name),
                          "real-" + name[:-5])
syn = os.path.join(w, "GIL_40000_rank_0.json")
with open(syn, "w") as f:
    synth(f, 20000, 5, 7)
against_reference(syn, "synthetic")

# --- the reference tool's files --------------------------------------------------------------
sys_in = os.path.join(w, "GIL_3096504_rank_0.json")
shutil.copy(os.path.join(FIXTURES, "gil", "GIL_3096504_rank_0.json"), sys_in)
out = os.path.join(w, "systrace.json")
convert("-i", sys_in, "-o", out)
validate(out, "--bound")
doc = load(out)
check_invariants(doc, "systrace")
got = sorted((x[1], x[2], us(x[3]), us(x[4])) for x in slices(doc))
with open(sys_in) as f:
    raw = json.load(f)
want = sorted((int(e["tid"][4:]), e["name"], us(e["ts"] * 1000), us(int(round(e["dur"] * 1000))))
              for e in raw)
holds = sorted(x for x in got if x[1] == "hold_gil")
check_eq(sorted(x for x in got if x[1] != "hold_gil"), want, "sysTrace X events")
check_eq(len(holds), 5, "one hold per take/drop pair")
check_eq(holds[0], (3096504, "hold_gil", "1736408883694253.120", "599.880"), "first hold")
check_eq({e["pid"] for e in doc["traceEvents"]}, {3096504}, "pid from the file name")
check_eq(doc["otherData"]["recordings"][0]["format"], "systrace", "format in otherData")
# the older B/E form of the same events converts to the same slices
be = os.path.join(w, "be", "GIL_3096504_rank_0.json")
os.makedirs(os.path.dirname(be))
with open(be, "w") as f:
    evs = []
    for e in raw:
        evs.append({"name": e["name"], "ph": "B", "ts": e["ts"], "pid": e["pid"], "tid": e["tid"]})
        evs.append({"ph": "E", "ts": "%d.%03d" % divmod(e["ts"] * 1000 + int(round(e["dur"] * 1000)),
                                                        1000),
                    "pid": e["pid"], "tid": e["tid"]})
    json.dump(evs, f)
out_be = os.path.join(w, "systrace-be.json")
convert("-i", be, "-o", out_be)
check_eq(sorted((x[1], x[2], us(x[3]), us(x[4])) for x in slices(load(out_be))), got,
         "B/E events convert like X events")
for bad in (["--clock", "monotonic"], ["--clock", "monotonic_raw"]):
    o, err = convert("-i", sys_in, "-o", out, *bad, rc=1)
    check("a sysTrace recording holds only wall-clock times: --clock %s is not possible"
          % bad[1] in err, err)

# --- several inputs: one timeline sorted by rank ---------------------------------------------
multi = os.path.join(w, "multi")
os.makedirs(multi)
for pid, rank in ((5000, 2), (5001, 0), (5002, 1)):
    with open(os.path.join(multi, "GIL_%d_rank_%d.json" % (pid, rank)), "w") as f:
        synth(f, 30, 2, pid, pid=pid, rank=rank)
# not recordings: ignored in a directory
open(os.path.join(multi, "GIL_5001_rank_0_trace.json"), "w").close()
open(os.path.join(multi, "notes.txt"), "w").close()
# the same pid again, recorded on another host, given as an extra input
other_host = os.path.join(w, "GIL_5001_rank_3.json")
r = Recording().header(**dict(header_for(5001, 3, 1000, 5), hostname="node1"))
r.thread(5001, "python3", 1000).interval(5001, 0, 2000, 10).interval(5001, 1, 2010, 100)
r.footer(end_ns=10000, clock_offsets={"realtime_ns": 5}).write(other_host)
out = os.path.join(w, "multi.json")
convert("-q", "-i", multi, "-i", other_host, "-o", out)
validate(out, "--bound")
doc = load(out)
order = sorted((e["args"]["sort_index"], e["pid"]) for e in events(doc, "M", "process_sort_index"))
check_eq([p for i, p in order], [5001, 5002, 5000, 5001 + 4194304], "processes in rank order")
names = {e["pid"]: e["args"]["name"] for e in events(doc, "M", "process_name")}
check_eq(names[5001 + 4194304], "GIL python3 synth.py (pid 5001, rank 3, node1)",
         "a second pid 5001 moves up and names its host")
check_eq([r["path"].rsplit("/", 1)[1] for r in doc["otherData"]["recordings"]],
         ["GIL_5001_rank_0.json", "GIL_5002_rank_1.json", "GIL_5000_rank_2.json",
          "GIL_5001_rank_3.json"], "otherData recordings in rank order")
for pid in (5000, 5001, 5002):
    check(events(doc, "X", pid=pid) and events(doc, "C", pid=pid), "rows of pid %d" % pid)
check_invariants(doc, "multi")
log("PASS")
