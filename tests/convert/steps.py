#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Statistics per training step, from the profiler's ProfilerStep#N spans.

1. A training loop written as a recording (two threads, eight steps, one with a 200 ms stall of
   the main thread holding the GIL in `stall`) and a Kineto trace of its steps: every step's
   wait / hold / release equals a direct sum of the recording's intervals clipped to it, the
   stalled step alone is flagged, naming the loader as the thread that waited and MainThread in
   `stall` as the holder, in --summary, --summary-json and as an instant on the merged timeline.
2. The fixtures (tests/data/fixtures): the Kineto and torch_npu trace_view samples with
   ProfilerStep spans, lined up with the handwritten recording: one row per step of the trace,
   totals within 1% of the direct sums (exactly, here).
"""
import json
import os
import shutil

from convlib import (FIXTURES, HANDWRITTEN, check, check_eq, convert, load, log, ns,
                     validate, workdir)
from mkrec import DROP, HOLD, TAKE, Recording, dumps

w = workdir("steps")
MS = 1000000
OFF = 1736236719758419750  # epoch ns = recording ns + OFF (both clock samples agree)
S0 = 172163578000000  # the recording's start, raw ns


def clipped(ivs, lo, hi, kind, tids=None):
    """ns of @kind intervals [(tid, kind, start, dur)] inside [lo, hi)."""
    t = 0
    for tid, k, s, d in ivs:
        if k == kind and (tids is None or tid in tids):
            t += max(0, min(s + d, hi) - max(s, lo))
    return t


def ns_of(us_text):
    """'123.456' (microseconds, three decimals) as integer ns."""
    a, _, b = us_text.partition(".")
    return int(a) * 1000 + int((b + "000")[:3])


def near(got, want, what):
    check(abs(got - want) <= max(want // 100, 0), "%s: %d, direct sum %d" % (what, got, want))


# --- 1. a loop of 8 steps, one stalled -------------------------------------------------------
MAIN, LOADER = 4100, 4101
rec = Recording()
rec.header(tool="giltrace test", pid=4100, rank=0, cmdline="python3 train.py", comm="python3",
           python_version="3.12.1", hostname="node0", clock="CLOCK_MONOTONIC_RAW",
           start_ns=S0, clock_offsets={"monotonic_ns": 1000, "realtime_ns": OFF},
           attribution={"enabled": True})
rec.thread(MAIN, "MainThread", S0).thread(LOADER, "loader", S0)
rec.raw(dumps({"fn": {"id": 1, "name": "train_step", "file": "train.py", "line": 10}}))
rec.raw(dumps({"fn": {"id": 2, "name": "stall", "file": "train.py", "line": 20}}))
rec.raw(dumps({"fn": {"id": 3, "name": "load", "file": "loader.py", "line": 5}}))
ivs = []
steps = []  # (number, start, end) raw ns
t = S0 + 10 * MS


def iv(tid, kind, start, dur, fn, reason=0):
    ivs.append((tid, kind, start, dur))
    rec.raw("[%d,%d,%d,%d,0,%d,%d]" % (tid, kind, start, dur, fn, reason))


for n in range(8):
    stall = n == 5
    length = 300 * MS if stall else 100 * MS
    held = 250 * MS if stall else 40 * MS
    fn = 2 if stall else 1
    # main holds, releases (forced: the loader asked), the loader takes after waiting
    iv(MAIN, HOLD, t, held, fn, 2)
    iv(MAIN, DROP, t + held, 10000, fn, 2)
    iv(LOADER, TAKE, t + held - (220 * MS if stall else 10 * MS),
       (220 * MS if stall else 10 * MS) + 10000, 3)
    iv(LOADER, HOLD, t + held + 10000, 10 * MS, 3, 1)
    iv(LOADER, DROP, t + held + 10 * MS + 10000, 5000, 3, 1)
    iv(MAIN, TAKE, t + held + 10000, 10 * MS + 15000, fn)
    steps.append((100 + n, t, t + length))
    t += length
rec.footer(end_ns=t + 10 * MS, clock_offsets={"monotonic_ns": 1000, "realtime_ns": OFF},
           reason="duration", events=len(ivs) * 2, intervals=len(ivs), lost=0,
           lost_per_cpu=[0, 0], threads=[{"tid": MAIN, "name": "MainThread"},
                                         {"tid": LOADER, "name": "loader"}])
path = os.path.join(w, "GIL_4100_rank_0.json")
rec.write(path)

# Kineto: relative microseconds on baseTimeNanoseconds, three decimals, as torch.profiler
BASE = S0 + OFF - 5 * MS
lines = ['{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": %d, '
         '"tid": %d, "ts": %d.%03d, "dur": %d.%03d}'
         % (n, MAIN, MAIN, (s + OFF - BASE) // 1000, (s + OFF - BASE) % 1000,
            (e - s) // 1000, (e - s) % 1000) for n, s, e in steps]
lines.append('{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": %d, "tid": %d, '
             '"ts": %d.000, "dur": 3.500}' % (MAIN, MAIN, (steps[0][1] + OFF - BASE) // 1000 + 5))
kineto = os.path.join(w, "kineto.json")
with open(kineto, "w") as f:
    f.write('{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join(lines)
            + '\n], "baseTimeNanoseconds": %d}\n' % BASE)
out = os.path.join(w, "merged.json")
sj = os.path.join(w, "summary.json")
o, err = convert("-i", path, "--merge", kineto, "-o", out, "--summary", "--summary-json", sj)
validate(out, "--bound", "--allow-phase", "i")
st = json.load(open(sj))["steps"]
check_eq(st["count"], 8, "one row per ProfilerStep span")
check_eq([s["name"] for s in st["steps"]], ["ProfilerStep#%d" % n for n, _, _ in steps],
         "the steps, in order")
for (n, lo, hi), s in zip(steps, st["steps"]):
    near(s["wait_ns"], clipped(ivs, lo, hi, TAKE), "%s wait" % s["name"])
    near(s["hold_ns"], clipped(ivs, lo, hi, HOLD), "%s hold" % s["name"])
    near(s["release_ns"], clipped(ivs, lo, hi, DROP), "%s release" % s["name"])
    th = {x["tid"]: x for x in s["threads"]}
    for tid in (MAIN, LOADER):
        for kind, key in ((TAKE, "wait_ns"), (HOLD, "hold_ns"), (DROP, "release_ns")):
            near(th[tid][key], clipped(ivs, lo, hi, kind, (tid,)),
                 "%s tid %d %s" % (s["name"], tid, key))
    check_eq(th[MAIN]["forced_releases"], 1, "%s: the main thread's forced release" % s["name"])
    check_eq(th[LOADER]["voluntary_releases"], 1, "%s: the loader's voluntary one" % s["name"])
    check(th[LOADER]["p99_wait_ns"] >= th[LOADER]["wait_ns"] * 0.9,
          "%s: the loader's p99 wait %s covers its one wait"
          % (s["name"], th[LOADER]["p99_wait_ns"]))
flagged = [s for s in st["steps"] if s["flagged"]]
check_eq([s["name"] for s in flagged], ["ProfilerStep#105"], "only the stalled step is flagged")
why = flagged[0]["outlier"]
check_eq(why["waiting"]["thread"], "loader", "the thread that waited")
check_eq(why["held_by"]["thread"], "MainThread", "the thread that held the GIL meanwhile")
check_eq(why["held_by"]["function"], "stall", "... in stall")
check(why["held_by"]["ns"] >= 219 * MS, "... for the loader's 220 ms: %d" % why["held_by"]["ns"])
check(st["median_wait_ns"] < 30 * MS and st["threshold_ns"] < 200 * MS, str(st))
check("! ProfilerStep#105" in o and "loader (4101) waited" in o and "MainThread (4100) held "
      "the GIL in stall" in o, "--summary flags the step:\n" + o)
doc = load(out)
inst = [e for e in doc["traceEvents"] if e.get("ph") == "i" and e.get("cat") == "gil"]
check_eq(len(inst), 8, "one instant per step on the GIL row")
out_inst = [e for e in inst if e["name"] == "GIL wait outlier"]
check_eq([e["args"]["step"] for e in out_inst], ["ProfilerStep#105"], "the outlier's instant")
check_eq(ns(out_inst[0]["ts"]), steps[5][1] + OFF - BASE, "at the step's start on Kineto's axis")
check("loader (4101) waited" in out_inst[0]["args"]["outlier"], str(out_inst[0]))
log("synthetic loop: %d steps, %s flagged: %s" % (st["count"], len(flagged), why["text"]))

# torch 1.13 without Kineto (Debian's) writes a bare list, ts in microseconds from its start and
# pid "CPU functions": its steps cannot be placed, and gil-convert says so
legacy = os.path.join(w, "legacy.json")
with open(legacy, "w") as f:
    json.dump([{"name": "ProfilerStep#%d" % i, "ph": "X", "ts": 216 + 60000 * i, "dur": 59000,
                "tid": 1, "pid": "CPU functions", "args": {}} for i in range(5)], f)
o, err = convert("-i", path, "--merge", legacy, "-o", os.path.join(w, "legacy-out.json"))
check("no GIL interval falls in any of the 5 steps (the trace's times are relative "
      "to its start" in err, err)

# --- step marks ({"step"} records, gil_mark_step): two ranks, each its own steps -----------
def marked(pid, marks, hold_at):
    """A recording of @pid: its main thread holds 5 ms at each of @hold_at (raw ns) while a
    second thread waits for it, and marks the end of a step at each of @marks."""
    r = Recording()
    r.header(tool="giltrace test", pid=pid, rank=pid % 10, cmdline="python3 train.py",
             comm="python3", python_version="3.12.1", hostname="node0",
             clock="CLOCK_MONOTONIC_RAW", start_ns=S0,
             clock_offsets={"monotonic_ns": 1000, "realtime_ns": OFF})
    r.thread(pid, "MainThread", S0).thread(pid + 1, "loader", S0)
    out = []
    for t in hold_at:
        r.interval(pid, HOLD, t, 5 * MS).interval(pid + 1, TAKE, t + MS, 4 * MS)
        out += [(pid, HOLD, t, 5 * MS), (pid + 1, TAKE, t + MS, 4 * MS)]
    for k, t in enumerate(marks):
        # the second rank numbers its steps itself, from 100
        r.raw(dumps({"step": {"tid": pid, "ts": t, "n": 100 + k} if pid % 2 else
                     {"tid": pid, "ts": t}}))
    r.footer(end_ns=S0 + 100 * MS, clock_offsets={"monotonic_ns": 1000, "realtime_ns": OFF},
             reason="duration", events=4 * len(hold_at), intervals=2 * len(hold_at), lost=0,
             lost_per_cpu=[0, 0], step=len(marks),
             threads=[{"tid": pid, "name": "MainThread"}, {"tid": pid + 1, "name": "loader"}])
    path = os.path.join(w, "GIL_%d_rank_%d.json" % (pid, pid % 10))
    r.write(path)
    return path, out


a, ivs_a = marked(5000, [S0 + 20 * MS, S0 + 40 * MS, S0 + 60 * MS],
                  [S0 + 10 * MS, S0 + 30 * MS, S0 + 50 * MS])
b, ivs_b = marked(6001, [S0 + 30 * MS, S0 + 70 * MS], [S0 + 10 * MS, S0 + 50 * MS])
sj = os.path.join(w, "marks.json")
o, err = convert("-i", a, "-i", b, "-o", os.path.join(w, "marks-trace.json"), "--summary",
                 "--summary-json", sj)
st = json.load(open(sj))["steps"]
got = [(s["trace_pid"], s["name"], ns_of(s["start_us"]) - OFF, s["dur_ns"], s["wait_ns"],
        s["hold_ns"]) for s in st["steps"]]
want = [(5000, "step 0", S0, 20 * MS, 4 * MS, 5 * MS),  # from the recording's start
        (5000, "step 1", S0 + 20 * MS, 20 * MS, 4 * MS, 5 * MS),
        (5000, "step 2", S0 + 40 * MS, 20 * MS, 4 * MS, 5 * MS),
        (6001, "step 100", S0, 30 * MS, 4 * MS, 5 * MS),
        (6001, "step 101", S0 + 30 * MS, 40 * MS, 4 * MS, 5 * MS)]
check_eq(got, want, "each rank's steps from its own marks, only its own intervals in them")
check("step 0 pid 5000" in o and "step 101 pid 6001" in o, "--summary says whose:\n" + o)
log("marks of two ranks: %d steps" % len(got))

# --- 2. the fixtures: Kineto and torch_npu trace_view, lined up with the handwritten recording
KINDS = {"take_gil": TAKE, "hold_gil": HOLD, "drop_gil": DROP}
PROF = os.path.join(FIXTURES, "msprof", "PROF_example")
for name, args, trace in (
        ("kineto", [], os.path.join(FIXTURES, "kineto", "steps_trace.json")),
        ("msprof", ["--profiling-data", PROF],
         os.path.join(FIXTURES, "msprof", "trace_view_steps.json")),
        ("msprof, found beside --profiling-data", ["--profiling-data", None], None)):
    if trace is None:
        # torch_npu writes ASCEND_PROFILER_OUTPUT/trace_view.json beside its PROF_ directory
        top = os.path.join(w, "rank0_ascend_pt")
        os.makedirs(os.path.join(top, "ASCEND_PROFILER_OUTPUT"), exist_ok=True)
        if not os.path.exists(os.path.join(top, "PROF_example")):
            shutil.copytree(PROF, os.path.join(top, "PROF_example"))
        trace = os.path.join(FIXTURES, "msprof", "trace_view_steps.json")
        shutil.copy(trace, os.path.join(top, "ASCEND_PROFILER_OUTPUT", "trace_view.json"))
        args = ["--profiling-data", os.path.join(top, "PROF_example")]
        out = os.path.join(w, "fixture-found.json")
        extra = []
    else:
        out = os.path.join(w, "fixture-%s.json" % name)
        extra = ["--merge", trace]
    sj = os.path.join(w, "fixture-%s-summary.json" % name.split(",")[0])
    convert("-q", "-i", HANDWRITTEN, *args, *extra, "-o", out, "--summary-json", sj)
    with open(trace) as f:
        their = json.load(f)
    their = their if isinstance(their, list) else their["traceEvents"]
    want = [(e["name"], ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in their
            if e.get("name", "").startswith("ProfilerStep#")]
    doc = load(out)
    ivs = [(e["tid"], KINDS[e["name"]], ns(e["ts"]), ns(e["dur"])) for e in doc["traceEvents"]
           if e.get("ph") == "X" and e.get("cat") == "gil"]
    with open(sj) as f:
        st = json.load(f)["steps"]
    check_eq(len(st["steps"]), len(want), "%s: one row per step of the trace" % name)
    for (sn, lo, hi), row in zip(want, st["steps"]):
        check_eq(row["name"], sn, "%s: step name" % name)
        for kind, key in ((TAKE, "wait_ns"), (HOLD, "hold_ns"), (DROP, "release_ns")):
            near(row[key], clipped(ivs, lo, hi, kind), "%s %s %s" % (name, sn, key))
    busy = [r for r in st["steps"] if r["wait_ns"] + r["hold_ns"]]
    check(len(busy) >= 4, "%s: the recording's intervals fall in %d steps" % (name, len(busy)))
    inst = [e for e in doc["traceEvents"]
            if e.get("ph") == "i" and e.get("name") == "GIL in step"]
    check_eq(len(inst), len(busy), "%s: an instant per step on the GIL row" % name)
    log("%s: %d steps, wait per step %s us"
        % (name, len(want), [r["wait_ns"] // 1000 for r in st["steps"]]))

log("PASS")
