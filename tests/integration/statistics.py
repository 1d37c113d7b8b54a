"""gil-convert's statistics on real recordings: they add up (per thread waiting + holding +
releasing never exceeds its wall time, a process's holds never exceed its wall time), they equal
what an independent reading of the same file computes (totals, counts, forced/voluntary, held
time per function, others' waiting per function, hand-offs, longest holds, percentiles within
their 1/8-octave buckets), and the trace, the text summary and the picture carry them: the
spinners' function holds the GIL longest and makes others wait, its releases are forced.
"""
import bisect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

SECONDS = 1.5
LEAST = 50  # the workload runs on until each thread released this often: >= 50 forced below


def convert(*args):
    p = subprocess.run([GIL_CONVERT] + list(args), capture_output=True, text=True)
    check(p.returncode == 0, "gil-convert %s: %s" % (" ".join(args), p.stderr))
    return p.stdout


def record(exe, extra=()):
    w = Workload(exe, "attribution.py", SECONDS, LEAST)
    rec = Recorder("--pid", w.pid, *extra)
    w.go()
    tids = dict(kv.split("=") for kv in w.wait_done())
    w.finish()
    check(rec.wait() == 0, "gil-record failed: %s" % rec.err)
    files = rec.files()
    check(len(files) == 1, "expected one recording, got %s" % files)
    return rec.outdir, files[0], {k: int(v) for k, v in tids.items()}


def independent(path):
    """What the recording says, computed here from the records alone."""
    header, records, footer = read_recording(path)
    fns, threads, holds, waits, releases = {}, {}, [], [], []
    for r in records:
        if isinstance(r, dict) and "fn" in r:
            f = r["fn"]
            fns[f["id"]] = f["name"] if f["name"] is not None else "<%s>" % f["unreadable"]
        elif isinstance(r, list):
            tid, kind, start, dur, flags = r[:5]
            fn, reason = (r[5], r[6]) if len(r) >= 7 else (0, 0)
            t = threads.setdefault(tid, {"ns": [0, 0, 0], "n": [0, 0, 0], "first": start,
                                         "last": start + dur, "forced": 0, "voluntary": 0,
                                         "holds": [], "waits": [], "fn_ns": {}})
            t["ns"][kind] += dur
            t["n"][kind] += 1
            t["first"] = min(t["first"], start)
            t["last"] = max(t["last"], start + dur)
            if kind != 2 and fn:
                t["fn_ns"][fns.get(fn)] = t["fn_ns"].get(fns.get(fn), 0) + dur
            if kind == 2:
                t["forced"] += reason == 2
                t["voluntary"] += reason == 1
                releases.append((start, tid, reason))
            if kind == 1:
                holds.append((start, start + dur, fns.get(fn), tid))
                t["holds"].append(dur)
            if kind == 0:
                waits.append((start, start + dur, tid, flags))
                t["waits"].append(dur)
    return header, footer, fns, threads, holds, waits, releases


def others_waiting(holds, waits):
    """Per function: the time other threads spent in take_gil while it held the GIL."""
    holds = sorted(holds)
    ends = [h[1] for h in holds]
    out = {}
    for ws, we, wtid, _ in waits:
        i = bisect.bisect_right(ends, ws)
        while i < len(holds) and holds[i][0] < we:
            hs, he, fn, htid = holds[i]
            if htid != wtid and fn:
                out[fn] = out.get(fn, 0) + max(0, min(he, we) - max(hs, ws))
            i += 1
    return out


def quantile_ok(got, values, q):
    """The histogram's quantile is the top of the exact value's 1/8-octave bucket (or the max)."""
    values = sorted(values)
    rank = max(1, int(q * len(values) + 0.999999))  # as stats.c ranks
    exact = values[rank - 1]
    return exact <= got <= max(exact * 1.126 + 16, 16) or got == values[-1]


def check_statistics(label, path, tids, failures):
    header, footer, fns, threads, holds, waits, releases = independent(path)
    sj = json.loads(convert("-q", "--clock", "monotonic_raw", "--summary-json", "-", "-i", path))
    check(len(sj["processes"]) == 1, "%s: one process expected" % label)
    p = sj["processes"][0]
    # the recorded span: header start to footer end, on the recording clock here
    check(p["start_ns"] == header["start_ns"] and p["wall_ns"] == footer["end_ns"] -
          header["start_ns"], "%s: process span %s+%s, recording %s..%s"
          % (label, p["start_ns"], p["wall_ns"], header["start_ns"], footer["end_ns"]))
    # they add up
    if p["hold_ns"] > p["wall_ns"]:
        failures.append("%s: holds %d ns > wall %d ns" % (label, p["hold_ns"], p["wall_ns"]))
    for t in p["threads"]:
        total = t["wait_ns"] + t["hold_ns"] + t["release_ns"]
        if total > t["wall_ns"]:
            failures.append("%s: thread %s: wait+hold+release %d > wall %d"
                            % (label, t["tid"], total, t["wall_ns"]))
    # and equal an independent reading
    byt = {t["tid"]: t for t in p["threads"]}
    check(set(byt) == set(threads), "%s: threads %s vs %s" % (label, sorted(byt), sorted(threads)))
    for tid, mine in threads.items():
        t = byt[tid]
        got = ([t["wait_ns"], t["hold_ns"], t["release_ns"]], [t["waits"], t["holds"],
               t["releases"]], t["wall_ns"], t["forced"], t["voluntary"])
        want = (mine["ns"], mine["n"], mine["last"] - mine["first"], mine["forced"],
                mine["voluntary"])
        if got != want:
            failures.append("%s: thread %d: %s, independently %s" % (label, tid, got, want))
        for kind, vals in (("wait", mine["waits"]), ("hold", mine["holds"])):
            if not vals:
                continue
            if t[kind + "_max_ns"] != max(vals):
                failures.append("%s: thread %d %s max %d != %d"
                                % (label, tid, kind, t[kind + "_max_ns"], max(vals)))
            for q in ("p50", "p90", "p99"):
                got_q = t["%s_%s_ns" % (kind, q)]
                if not quantile_ok(got_q, vals, int(q[1:]) / 100):
                    failures.append("%s: thread %d %s %s %d off its bucket"
                                    % (label, tid, kind, q, got_q))
    # "mostly in": the function a thread waited and held the GIL in longest names the thread;
    # exact for threads that ran at most 8 functions (the converter keeps 8 per thread). Which
    # function that is, is the schedule's: on a loaded machine a reader's first wait, named after
    # the barrier in register(), can outlast all its reads. So it is checked against the file;
    # that each role's releases carry its own name is attribution.py's to check, by count.
    for tid, mine in threads.items():
        top = byt[tid].get("mostly_in")
        if not mine["fn_ns"] or len(mine["fn_ns"]) > 8:
            continue
        name, ns = max(mine["fn_ns"].items(), key=lambda kv: kv[1])
        share = ns / sum(mine["fn_ns"].values())
        tie = sum(1 for v in mine["fn_ns"].values() if v == ns) > 1
        if not top or (not tie and top["function"] != name) or abs(top["share"] - share) > 1e-9:
            failures.append("%s: thread %d mostly in %s, independently %s (%.6f)"
                            % (label, tid, top, name, share))
    check(p["hold_ns"] == sum(h[1] - h[0] for h in holds), "%s: process hold total" % label)
    # utilization over time integrates to the holds, waiters to the waits (within a bin's ns)
    tl = p["timeline"]
    util = sum(v * tl["bin_ns"] for v in tl["utilization"])
    waiting = sum(v * tl["bin_ns"] for v in tl["waiters"])
    if abs(util - p["hold_ns"]) > 1e-6 * p["hold_ns"] + len(tl["utilization"]):
        failures.append("%s: utilization bins hold %.0f ns, holds %d" % (label, util, p["hold_ns"]))
    if abs(waiting - p["wait_ns"]) > 1e-6 * p["wait_ns"] + len(tl["waiters"]):
        failures.append("%s: waiter bins %.0f ns, waits %d" % (label, waiting, p["wait_ns"]))
    # functions: held time, others' waiting, releases
    held = {}
    for hs, he, fn, _ in holds:
        if fn:
            held[fn] = held.get(fn, 0) + he - hs
    ow = others_waiting(holds, waits)
    for f in sj["functions"]["by_held_time"]:
        if f["held_ns"] != held.get(f["function"]):
            failures.append("%s: %s held %d, independently %s"
                            % (label, f["function"], f["held_ns"], held.get(f["function"])))
    for f in sj["functions"]["by_others_waiting"]:
        if f["others_wait_ns"] != ow.get(f["function"]):
            failures.append("%s: others waited %d while %s held, independently %s"
                            % (label, f["others_wait_ns"], f["function"], ow.get(f["function"])))
    # The spinners' holds are spin's, and spin lets go when forced. Counted by holds, not by
    # time: which function holds longest is the schedule's call on a loaded machine (one hold
    # whose thread the OS kept off the CPU can outweigh all the others).
    spin = "Busy.spin" if "Busy.spin" in held else "spin"
    spinners = {tids["spinner1"], tids["spinner2"]}
    mine = [h for h in holds if h[3] in spinners]
    named = sum(1 for h in mine if h[2] == spin)
    if named < 0.9 * len(mine):
        failures.append("%s: %d of the spinners' %d holds named %s" % (label, named, len(mine),
                                                                       spin))
    row = [f for f in sj["functions"]["by_held_time"] if f["function"] == spin]
    if not row or row[0]["forced"] < 0.95 * row[0]["releases"]:
        failures.append("%s: %s's releases, forced: %s" % (label, spin, row))
    # hand-offs: every wait with a known start names who held last; counts add up
    handed = sum(h["count"] for h in p["handoffs"])
    known = sum(1 for w in waits if not w[3] & F_BEGIN_UNKNOWN)
    if handed + p["handoffs_unknown_giver"] != len(waits) or handed > known:
        failures.append("%s: %d hand-offs + %d unknown for %d waits (%d with a start)"
                        % (label, handed, p["handoffs_unknown_giver"], len(waits), known))
    # who handed over: the thread whose hold ended last before the wait ended
    hold_ends = sorted((h[1], h[3]) for h in holds)
    ends = [e for e, _ in hold_ends]
    matrix = {}
    for ws, we, wtid, flags in waits:
        i = bisect.bisect_right(ends, we)
        if flags & F_BEGIN_UNKNOWN or i == 0:
            continue
        key = (hold_ends[i - 1][1], wtid)
        matrix[key] = matrix.get(key, 0) + 1
    got = {(h["from"], h["to"]): h["count"] for h in p["handoffs"]}
    if got != matrix:
        diff = {k: (got.get(k), matrix.get(k)) for k in set(got) | set(matrix)
                if got.get(k) != matrix.get(k)}
        failures.append("%s: hand-offs differ from an independent count: %s"
                        % (label, sorted(diff.items())[:4]))
    # a forced release hands the GIL to another thread (FORCE_SWITCHING, CPython 3.2+): the
    # next hold after each of a spinner's forced releases is another thread's
    spinners = {tids["spinner1"], tids["spinner2"]}
    starts = sorted((h[0], h[3]) for h in holds)
    first = [s for s, _ in starts]
    forced = same = 0
    for r in releases:
        rs, rtid, reason = r
        if rtid not in spinners or reason != 2:
            continue
        i = bisect.bisect_left(first, rs)
        if i == len(starts):
            continue
        forced += 1
        same += starts[i][1] == rtid
    if forced < 50 or same:
        failures.append("%s: %d forced releases of the spinners, %d retaken by the same thread"
                        % (label, forced, same))
    # longest holds: the longest of all, longest first
    lh = sj["longest_holds"]
    longest = sorted((h[1] - h[0] for h in holds), reverse=True)[:len(lh)]
    if [h["dur_ns"] for h in lh] != longest:
        failures.append("%s: longest holds %s, independently %s"
                        % (label, [h["dur_ns"] for h in lh][:3], longest[:3]))
    return p


def check_outputs(label, path, failures):
    """The trace carries the same statistics and per-slice args; text and picture render."""
    tmp = tempfile.mkdtemp(prefix="gilstats-")
    try:
        trace, svg = os.path.join(tmp, "t.json"), os.path.join(tmp, "g.svg")
        text = convert("-q", "--summary", "--svg", svg, "-o", trace, "-i", path)
        sj = json.loads(convert("-q", "--summary-json", "-", "-i", path))
        with open(trace) as f:
            t = json.load(f)
        if t["otherData"]["statistics"] != sj:
            failures.append("%s: otherData.statistics differs from --summary-json" % label)
        # rows of threads the OS names like the process read "python3.12 (Busy.spin)"
        header = read_recording(path)[0]
        shown = {}
        for e in t["traceEvents"]:
            if e.get("ph") == "M" and e["name"] == "thread_name":
                shown[e["tid"]] = e["args"]["name"]
        for th in sj["processes"][0]["threads"]:
            top = (th.get("mostly_in") or {}).get("function")
            want = th["name"]
            if top and not top.startswith("<") and th["name"] == header["comm"]:
                want = "%s (%s)" % (th["name"], top)
            if shown.get(th["tid"]) != want:
                failures.append("%s: thread %s's row is %r, not %r"
                                % (label, th["tid"], shown.get(th["tid"]), want))
        if not any(n.endswith("spin)") for n in shown.values()):
            failures.append("%s: no row names the spinners' function: %s" % (label, shown))
        xs = [e for e in t["traceEvents"] if e.get("ph") == "X"]
        with_fn = [e for e in xs if "function" in e.get("args", {})]
        if len(with_fn) < 0.9 * len(xs):
            failures.append("%s: %d of %d slices name a function" % (label, len(with_fn), len(xs)))
        forced = [e for e in xs if e["name"] == "drop_gil" and
                  e.get("args", {}).get("release") == "forced"]
        # a thread starting up runs Python in threading.py too, where a drop request can
        # reach it (seen on a loaded machine): forced there is right, anywhere else not
        if not forced or any("spin" not in e["args"].get("function", "") and
                             not e["args"].get("file", "").endswith("/threading.py")
                             for e in forced):
            failures.append("%s: forced releases outside the spinners: %s" % (label, forced[:2]))
        for needle in ("GIL statistics:", "Python functions by GIL held time:",
                       "Hand-offs", "Longest holds", "spin"):
            if needle not in text:
                failures.append("%s: --summary lacks %r" % (label, needle))
        root = ET.parse(svg).getroot()
        rects = [e for e in root.iter() if e.tag.endswith("rect")]
        if len(rects) < 50:
            failures.append("%s: the picture has %d rectangles" % (label, len(rects)))
        # statistics only: no trace written beside the recording
        before = set(os.listdir(os.path.dirname(path)))
        convert("-q", "--summary", "-i", path)
        if set(os.listdir(os.path.dirname(path))) != before:
            failures.append("%s: --summary alone wrote a file" % label)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


require_kernel()
failures, rows = [], []
interpreters = [p for p in pythons(min_version=(3, 6))
                if p[0].startswith("pyenv-") or has_debug_symbols(p[1])]
check(interpreters, "no CPython 3.6+ found")
for label, exe, ver in interpreters:
    outdir, path, tids = record(exe)
    p = check_statistics(label, path, tids, failures)
    if label == interpreters[-1][0]:
        check_outputs(label, path, failures)
    rows.append((label, p))
    shutil.rmtree(outdir, ignore_errors=True)
# Recordings without attribution: the same numbers, and the text says there are no functions.
label, exe, ver = interpreters[-1]
outdir, path, tids = record(exe, ("--no-attribution",))
text = convert("-q", "--summary", "-i", path)
check("Python functions: none recorded" in text, "no-attribution summary: %s" % text[-400:])
sj = json.loads(convert("-q", "--summary-json", "-", "-i", path))
check(sj["functions"]["by_held_time"] == [] and sj["processes"][0]["hold_ns"] > 0,
      "no-attribution statistics: %s" % sj["functions"])
shutil.rmtree(outdir, ignore_errors=True)
check_no_probes()

log("%-16s %9s %7s %8s %7s %7s %8s" % ("interpreter", "wall", "held", "waiters", "holds",
                                       "forced", "handoffs"))
for label, p in rows:
    forced = sum(t["forced"] for t in p["threads"])
    log("%-16s %8.3fs %6.1f%% %8.2f %7d %7d %8d" % (label, p["wall_ns"] / 1e9,
                                                  100 * p["utilization"], p["average_waiters"],
                                                  p["holds"], forced, p["handoffs_total"]))
if failures:
    fail("; ".join(failures))
log("PASS: %d recordings" % (len(rows) + 1))
