#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Strict Trace Event format validator for the traces gil-convert writes.

Checks what MindStudio Insight, Perfetto and chrome://tracing need:
  - the file is {"traceEvents":[...]} (or, with --allow-array, a bare array);
  - only the phases M X I C s t f (MindStudio Insight ignores B/E and lowercase i);
  - the fields each phase requires, with the right types; ts/dur are numbers or numeric
    strings, read exactly (decimal, never a double);
  - X events on each (pid, tid) nest properly: none overlaps another partially;
  - flows: every s has exactly one f with the same (cat, name, id) and vice versa, not
    before it; with --bound, each s/f lies inside an X slice of its own thread.
Prints one line per problem (at most --max-errors) and exits 1 if there was any.

Usage: validate_trace.py [--allow-array] [--bound] [--allow-phase P] [--max-errors N] TRACE.json
"""
import argparse
import json
import sys
from collections import defaultdict
from decimal import Decimal, InvalidOperation

PHASES = set("MXICstf")
META = {
    "process_name": "name",
    "thread_name": "name",
    "process_labels": "labels",
    "process_sort_index": "sort_index",
    "thread_sort_index": "sort_index",
}


class Problems:
    def __init__(self, limit):
        self.limit = limit
        self.count = 0

    def __call__(self, i, msg):
        self.count += 1
        if self.count <= self.limit:
            print(f"event {i}: {msg}" if i is not None else msg)


def number(v):
    """An exact Decimal from a JSON number or numeric string; None if it is neither."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, Decimal)):
        return Decimal(v)
    if isinstance(v, str):
        try:
            d = Decimal(v)
        except InvalidOperation:
            return None
        return d if d.is_finite() else None
    return None


def ident(v):
    return (isinstance(v, int) and not isinstance(v, bool)) or isinstance(v, str)


def validate(doc, allow_array, bound, problem, phases=PHASES):
    if isinstance(doc, list):
        if not allow_array:
            problem(None, "top level is a bare array, expected {\"traceEvents\":[...]}")
        events = doc
    elif isinstance(doc, dict):
        events = doc.get("traceEvents")
        if not isinstance(events, list):
            problem(None, "no traceEvents array")
            return
        unit = doc.get("displayTimeUnit")
        if unit is not None and unit not in ("ns", "ms"):
            problem(None, f"displayTimeUnit {unit!r} is neither 'ns' nor 'ms'")
        if "otherData" in doc and not isinstance(doc["otherData"], dict):
            problem(None, "otherData is not an object")
    else:
        problem(None, "top level is neither an object nor an array")
        return

    slices = defaultdict(list)  # (pid, tid) -> [(ts, end, i)]
    flows = defaultdict(lambda: {"s": [], "f": [], "t": []})
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            problem(i, "not an object")
            continue
        ph = e.get("ph")
        if ph not in phases:
            problem(i, f"phase {ph!r} is not one of M X I C s t f")
            continue
        if ph not in PHASES:
            continue  # allowed by --allow-phase (a profiler's own events), not checked
        name = e.get("name")
        if not isinstance(name, str):
            problem(i, "no name string")
        if "pid" not in e or not ident(e["pid"]):
            problem(i, "pid missing or neither a number nor a string")
        if ph in "XstfM" or (ph == "I" and e.get("s", "t") == "t"):
            if "tid" not in e or not ident(e["tid"]):
                problem(i, "tid missing or neither a number nor a string")
        elif "tid" in e and not ident(e["tid"]):
            problem(i, "tid neither a number nor a string")
        if "args" in e and not isinstance(e["args"], dict):
            problem(i, "args is not an object")
        if ph == "M":
            key = META.get(name)
            args = e.get("args")
            if key is None:
                problem(i, f"unknown metadata {name!r}")
            elif not isinstance(args, dict) or key not in args:
                problem(i, f"{name} without args.{key}")
            elif key == "sort_index" and (not isinstance(args[key], int) or
                                          isinstance(args[key], bool)):
                problem(i, f"{name}: sort_index is not an integer")
            elif key != "sort_index" and not isinstance(args[key], str):
                problem(i, f"{name}: args.{key} is not a string")
            continue
        ts = number(e.get("ts"))
        if ts is None:
            problem(i, f"ts {e.get('ts')!r} is not a number or numeric string")
            continue
        if ph == "X":
            dur = number(e.get("dur"))
            if dur is None or dur < 0:
                problem(i, f"X with dur {e.get('dur')!r}: not a number >= 0")
                continue
            slices[(e.get("pid"), e.get("tid"))].append((ts, ts + dur, i))
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args:
                problem(i, "C without args")
            elif any(number(v) is None for v in args.values()):
                problem(i, "C args are not all numbers")
        elif ph == "I":
            if e.get("s", "t") not in ("g", "p", "t"):
                problem(i, f"I with scope {e.get('s')!r}")
        else:  # s t f
            if "id" not in e or not ident(e["id"]):
                problem(i, "flow without an id")
                continue
            if ph == "f" and e.get("bp", "e") != "e":
                problem(i, f"f with bp {e.get('bp')!r}")
            flows[(e.get("cat"), name, e["id"])][ph].append((ts, i, e.get("pid"), e.get("tid")))

    for key, evs in slices.items():
        evs.sort(key=lambda x: (x[0], -(x[1] - x[0]), x[2]))
        stack = []
        for ts, end, i in evs:
            while stack and ts >= stack[-1][1]:
                stack.pop()
            if stack and end > stack[-1][1]:
                problem(i, f"X on pid {key[0]} tid {key[1]} [{ts}, {end}] overlaps event "
                           f"{stack[-1][2]} [{stack[-1][0]}, {stack[-1][1]}] partially")
                continue
            stack.append((ts, end, i))

    def inside(pid, tid, ts):
        evs = slices.get((pid, tid), ())
        # the lists are sorted by start: find any slice with start <= ts <= end
        lo, hi = 0, len(evs)
        while lo < hi:
            mid = (lo + hi) // 2
            if evs[mid][0] <= ts:
                lo = mid + 1
            else:
                hi = mid
        j = lo - 1
        while j >= 0 and j >= lo - 64:
            if evs[j][0] <= ts <= evs[j][1]:
                return True
            j -= 1
        return False

    for key, d in flows.items():
        if len(d["s"]) != 1 or len(d["f"]) != 1:
            first = (d["s"] + d["f"] + d["t"])[0][1]
            problem(first, f"flow {key}: {len(d['s'])} s and {len(d['f'])} f events, "
                           f"expected one of each")
            continue
        (sts, si, spid, stid), (fts, fi, fpid, ftid) = d["s"][0], d["f"][0]
        if fts < sts:
            problem(fi, f"flow {key}: f at {fts} before its s at {sts}")
        if bound:
            if not inside(spid, stid, sts):
                problem(si, f"flow {key}: s at {sts} is inside no slice of its thread")
            if not inside(fpid, ftid, fts):
                problem(fi, f"flow {key}: f at {fts} is inside no slice of its thread")
    return events


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--allow-array", action="store_true")
    ap.add_argument("--bound", action="store_true",
                    help="each s/f must lie inside an X slice of its thread")
    ap.add_argument("--allow-phase", action="append", default=[],
                    help="also accept (without checking) this phase, e.g. a profiler's 'i'")
    ap.add_argument("--max-errors", type=int, default=20)
    a = ap.parse_args()
    problem = Problems(a.max_errors)
    try:
        with open(a.trace, "rb") as f:
            doc = json.load(f, parse_float=Decimal)
    except (OSError, ValueError) as e:
        print(f"{a.trace}: cannot load: {e}")
        return 1
    events = validate(doc, a.allow_array, a.bound, problem, PHASES | set(a.allow_phase))
    if problem.count:
        print(f"{a.trace}: {problem.count} problems")
        return 1
    print(f"{a.trace}: valid ({len(events or [])} events)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
