#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""gil-convert's statistics on a hand-built recording whose every number is worked out below:
totals, shares, percentiles, forced/voluntary, held time and others' waiting per function, the
hand-off matrix, the longest holds; the same recording without attribution, and cut; the
trace's slice args and otherData; the options' exact error messages."""
import json
import os
import re
import xml.etree.ElementTree as ET

from convlib import GIL_CONVERT, check, check_eq, convert, log, workdir
from mkrec import Recording, dumps, header_for

w = workdir("summary")
TRY = "Try 'gil-convert --help' for more information.\n"
S = 1_000_000  # recording start, ns on the recording clock
A, B = 101, 102
F_BEGIN_UNKNOWN, F_TRUNCATED = 1, 2
VOL, FORCED = 1, 2


def build(attributed=True, complete=True, pid=4242, rank=0):
    """A (main) holds from before the start in spin(), is forced off; B waited in io(), holds,
    releases voluntarily; A waits and holds to the end in a frame it could not read."""
    r = Recording().header(**header_for(pid, rank, S, 0))
    if attributed:
        r.raw(dumps({"fn": {"id": 1, "name": "spin", "file": "w.py", "line": 10}}))
        r.raw(dumps({"fn": {"id": 2, "name": "io", "file": "w.py", "line": 20}}))
        r.raw(dumps({"fn": {"id": 3, "name": None, "file": None, "line": None,
                            "unreadable": "no Python frame"}}))
    r.thread(A, "main", S).thread(B, "worker", S)

    def iv(tid, kind, start, dur, flags=0, fn=0, reason=0):
        if attributed:
            r.raw("[%d,%d,%d,%d,%d,%d,%d]" % (tid, kind, start, dur, flags, fn, reason))
        else:
            r.interval(tid, kind, start, dur, flags)

    # in the order the intervals end, as the recorder writes them
    iv(A, 1, S, 4000, F_BEGIN_UNKNOWN, 1, FORCED)
    iv(B, 0, S + 1000, 3200, 0, 2, VOL)
    iv(A, 2, S + 4000, 500, 0, 1, FORCED)
    iv(B, 1, S + 4200, 2800, 0, 2, VOL)
    iv(B, 2, S + 7000, 100, 0, 2, VOL)
    iv(A, 0, S + 4500, 2800, 0, 3, FORCED)
    iv(A, 1, S + 7300, 2700, F_TRUNCATED, 3, 0)
    if complete:
        r.footer(end_ns=S + 10000, clock_offsets={"monotonic_ns": 1000, "realtime_ns": 0},
                 reason="stopped", events=14, intervals=7, lost=0, lost_per_cpu=[0],
                 threads=[{"tid": A, "name": "main"}, {"tid": B, "name": "worker"}])
    return r


def stats(path, *extra):
    out, err = convert("-q", "--clock", "monotonic_raw", "--summary-json", "-", "-i", path,
                       *extra)
    return json.loads(out)


def thread(p, tid):
    return [t for t in p["threads"] if t["tid"] == tid][0]


rec = os.path.join(w, "GIL_4242_rank_0.json")
build().write(rec)
sj = stats(rec)
p = sj["processes"][0]
check_eq((p["start_ns"], p["wall_ns"]), (S, 10000), "recorded span")
check_eq((p["hold_ns"], p["wait_ns"], p["release_ns"]), (9500, 6000, 600), "process totals")
check_eq((p["utilization"], p["average_waiters"]), (0.95, 0.6), "utilization, waiters")
check_eq((p["waits"], p["holds"], p["releases"]), (2, 3, 2), "process counts")
a, b = thread(p, A), thread(p, B)
check_eq((a["name"], a["wall_ns"], a["wait_ns"], a["hold_ns"], a["release_ns"]),
         ("main", 10000, 2800, 6700, 500), "thread A")
check_eq((b["name"], b["wall_ns"], b["wait_ns"], b["hold_ns"], b["release_ns"]),
         ("worker", 6100, 3200, 2800, 100), "thread B")
check_eq((a["hold_share"], b["wait_share"]), (0.67, 3200 / 6100), "shares")
check_eq((a["forced"], a["voluntary"], b["forced"], b["voluntary"]), (1, 0, 0, 1), "classes")
check_eq((a["held_before_forced_ns"], b["held_before_voluntary_ns"]), (4000, 2800), "held by")
# A's holds: 2700 and 4000. p50 is 2700's bucket [2560, 2815]; p90 4000's, capped at the max
check_eq((a["hold_p50_ns"], a["hold_p90_ns"], a["hold_p99_ns"], a["hold_max_ns"]),
         (2815, 4000, 4000, 4000), "A's hold percentiles")
check_eq((b["wait_p50_ns"], b["wait_max_ns"]), (3200, 3200), "B's wait percentiles")
# "mostly in": A waited 2800 and held 2700 in the unreadable frame, held 4000 in spin; B spent
# all its 3200 + 2800 in io (releases do not count)
check_eq(a["mostly_in"], {"function": "<no Python frame>", "file": None, "line": None,
                          "share": 5500 / 9500}, "A mostly in")
check_eq(b["mostly_in"], {"function": "io", "file": "w.py", "line": 20, "share": 1.0},
         "B mostly in")

fns = sj["functions"]
check_eq([(f["function"], f["held_ns"], f["holds"]) for f in fns["by_held_time"]],
         [("spin", 4000, 1), ("io", 2800, 1), ("<no Python frame>", 2700, 1)], "by held time")
# B waited [1000, 4200) while A held in spin [0, 4000): 3000; A waited [4500, 7300) while B
# held in io [4200, 7000): 2500
check_eq([(f["function"], f["others_wait_ns"]) for f in fns["by_others_waiting"]],
         [("spin", 3000), ("io", 2500)], "by others' waiting")
check_eq([(f["function"], f["releases"], f["forced"], f["voluntary"])
          for f in fns["by_releases"]], [("io", 1, 0, 1), ("spin", 1, 1, 0)], "by releases")
spin = fns["by_held_time"][0]
check_eq((spin["file"], spin["line"], spin["name"]), ("w.py", 10, "spin"), "spin's place")
unread = fns["by_held_time"][2]
check_eq((unread["name"], unread["file"], unread["line"], unread["unreadable"]),
         (None, None, None, "no Python frame"), "an unreadable frame stays unreadable")

check_eq(sorted((h["from"], h["to"], h["count"], h["wait_ns"]) for h in p["handoffs"]),
         [(A, B, 1, 3200), (B, A, 1, 2800)], "hand-off matrix")
check_eq((p["handoffs_total"], p["handoffs_unknown_giver"]), (2, 0), "hand-off totals")
check_eq([(h["tid"], h["dur_ns"], h["offset_ns"], h["function"], h["release"],
           h.get("edges_unknown", False)) for h in sj["longest_holds"]],
         [(A, 4000, 0, "spin", "forced", True), (B, 2800, 4200, "io", "voluntary", False),
          (A, 2700, 7300, "<no Python frame>", None, True)], "longest holds")
check_eq(sj["longest_holds"][1]["ts_us"], "%d.200" % ((S + 4000) // 1000), "ts on the trace axis")
tl = p["timeline"]
check_eq(round(sum(tl["utilization"]) * tl["bin_ns"]), 9500, "utilization integrates to holds")
check_eq(round(sum(tl["waiters"]) * tl["bin_ns"]), 6000, "waiters integrate to waits")

# the trace: slices carry the function and the reason; otherData the same statistics
trace = os.path.join(w, "t.json")
convert("-q", "--clock", "monotonic_raw", "-i", rec, "-o", trace)
with open(trace) as f:
    doc = json.load(f)
check_eq(doc["otherData"]["statistics"], sj, "otherData.statistics")
xs = [(e["tid"], e["name"], e.get("args", {})) for e in doc["traceEvents"] if e["ph"] == "X"]
check_eq(xs[0], (A, "hold_gil", {"begin_unknown": True, "function": "spin", "file": "w.py",
                                 "line": 10, "release": "forced"}), "first slice's args")
check_eq(xs[1], (B, "take_gil", {"function": "io", "file": "w.py", "line": 20,
                                 "previous_release": "voluntary"}), "a wait's args")
check_eq(xs[6][2], {"truncated": True, "function": "<no Python frame>"}, "unreadable in args")

# text and picture
out, err = convert("-q", "--summary", "--svg", os.path.join(w, "g.svg"), "-i", rec)
for needle in ("GIL statistics: 1 process, 2 threads", "recorded 10.0us, GIL held 95.0% of it",
               "  most waiting: 102 worker (io) waited for the GIL 52.5% of its time "
               "(p99 wait 3.2us)\n",
               "  most holding: 101 main (<no Python frame>) held the GIL 67.0% of its time\n",
               "mostly in", "main             <no Python frame>",
               "spin  w.py:10", "<no Python frame>", "Hand-offs", "Longest holds",
               "     4.0us"):
    check(needle in out, "--summary lacks %r:\n%s" % (needle, out))
# thread rows come longest waiting first: B waited 3200 ns, A 2800
rows = [l.split()[0] for l in out.splitlines()
        if re.match(r"^\s+10[12] (main|worker) ", l) and "->" not in l]
check_eq(rows, ["102", "101", "102", "101"], "both thread tables, longest waiting first")
wide = [l for l in out.splitlines() if re.match(r"^\s+(tid|\d+) ", l) and len(l) > 120]
check(not wide, "thread tables wider than 120 columns: %s" % wide)
check(not os.path.exists(os.path.join(w, "GIL_4242_rank_0_trace.json")),
      "--summary without --output wrote a trace")
svg = ET.parse(os.path.join(w, "g.svg")).getroot()
check(svg.tag.endswith("svg") and sum(1 for e in svg.iter() if e.tag.endswith("rect")) > 5,
      "the picture")

# several processes (ranks): one overview line each before the per-process sections
ranks = os.path.join(w, "ranks")
os.makedirs(ranks, exist_ok=True)
build().write(os.path.join(ranks, "GIL_4242_rank_0.json"))
build(pid=4250, rank=1).write(os.path.join(ranks, "GIL_4250_rank_1.json"))
out, err = convert("-q", "--summary", "-i", ranks)
want = ("GIL statistics: 2 processes, 4 threads\n\n"
        "    rank      pid   recorded   held  waiters  most waiting thread (share of its time)\n"
        "       0     4242     10.0us  95.0%     0.60  102 worker (io) 52.5%\n"
        "       1     4250     10.0us  95.0%     0.60  102 worker (io) 52.5%\n\nProcess ")
check(out.startswith(want), "overview of two ranks:\n%s" % out[:600])
out, err = convert("-q", "--summary", "-i", rec)
check("most waiting thread (share" not in out, "an overview for one process")

# without attribution: the same times, no functions
old = os.path.join(w, "GIL_4243_rank_0.json")
build(attributed=False).write(old)
so = stats(old)
check_eq({k: so["processes"][0][k] for k in ("hold_ns", "wait_ns", "release_ns", "wall_ns")},
         {k: p[k] for k in ("hold_ns", "wait_ns", "release_ns", "wall_ns")}, "5-element totals")
check_eq((so["functions"]["by_held_time"], so["processes"][0]["attribution"]), ([], False),
         "no functions without attribution")
out, err = convert("-q", "--summary", "-i", old)
check("Python functions: none recorded" in out, "no-attribution text: " + out)
check_eq(so["processes"][0]["threads"][0]["mostly_in"], None, "no mostly_in without attribution")
check("mostly in" not in out and "  most waiting: 102 worker waited for the GIL 52.5%" in out,
      "no-attribution text names no function: " + out)

# cut: no footer; the span ends with the last interval
cut = os.path.join(w, "GIL_4244_rank_0.json")
build(complete=False).write(cut, complete=False)
sc = stats(cut)
check_eq((sc["processes"][0]["wall_ns"], sc["processes"][0]["hold_ns"]), (10000, 9500), "cut")

# a release not seen: the hold around it is flagged resync; the summary says how much of the
# thread's time such intervals cover, and the JSON gives it (issue 22, "never pretend")
F_LOST, F_RESYNC = 4, 8
flagged = os.path.join(w, "GIL_4245_rank_0.json")
r = Recording().header(**header_for(4245, 0, S, 0))
r.thread(A, "main", S).thread(B, "worker", S)
r.interval(A, 1, S, 3000, F_TRUNCATED | F_RESYNC)  # held [0, 3000): the release was not seen
r.interval(A, 0, S + 3000, 1000)
r.interval(A, 1, S + 4000, 6000, F_LOST)  # the kernel lost events meanwhile
r.interval(B, 1, S, 2000)
r.footer(end_ns=S + 10000, clock_offsets={"monotonic_ns": 1000, "realtime_ns": 0},
         reason="stopped", events=8, intervals=4, lost=1, lost_per_cpu=[1],
         threads=[{"tid": A, "name": "main"}, {"tid": B, "name": "worker"}])
r.write(flagged)
sf = stats(flagged)
ta = [t for t in sf["processes"][0]["threads"] if t["tid"] == A][0]
tb = [t for t in sf["processes"][0]["threads"] if t["tid"] == B][0]
check_eq((ta["uncertain_ns"], round(ta["uncertain_share"], 3)), (9000, 0.9), "A's flagged time")
check_eq(tb["uncertain_ns"], 0, "B's flagged time")
out, err = convert("-q", "--summary", "-i", flagged)
check(re.search(r"^ +101 main +90\.0% of its time \(9\.0us\) not exact: flagged resync or lost",
                out, re.M) and not re.search(r"102 worker .*not exact", out),
      "summary says A's flagged share: " + out)

# options: exact messages
for args, msg in (
        (["--svg", "-", rec], "invalid --svg value '-': give a file"),
        (["--summary-json", "", rec], "invalid --summary-json value ''"),
        (["--summary", "--summary-json", "-", rec],
         "--summary and --summary-json - both write to standard output: give --summary-json a file"),
        (["--summary", "-o", "-", rec],
         "the trace and the summary would both go to standard output: give --output a file")):
    out, err = convert(*args, rc=2)
    check_eq(err, "gil-convert: " + msg + "\n" + TRY, "stderr of %s" % args)
out, err = convert("--svg", "/nonexistent/dir/g.svg", "-q", rec, rc=1)
check_eq(err, "gil-convert: cannot write the picture to /nonexistent/dir/g.svg: No such file or "
         "directory\n", "unwritable picture")
out, err = convert("--help")
for opt in ("--summary", "--summary-json", "--svg"):
    check(opt in out, "--help lacks " + opt)
    with open(os.path.join(os.environ.get("top_srcdir", "."), "doc", "gil-convert.1")) as f:
        check(opt.replace("-", "\\-") in f.read(), "gil-convert(1) lacks " + opt)
log("PASS")
