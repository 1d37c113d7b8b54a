#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A plain Python converter with the standard json module: the oracle the C converter is checked
against (same events, exactly), and the baseline its speed is measured against.

It loads the whole recording, sorts everything in memory and writes with json.dump: simple and
exact, and exactly what gil-convert avoids doing for tens of millions of intervals.

Usage: refconv.py [--clock realtime|monotonic|monotonic_raw] RECORDING OUT.json
"""
import argparse
import json
import sys

NAMES = {0: "take_gil", 1: "hold_gil", 2: "drop_gil"}
DROP, WAIT_END, WAIT_BEGIN = 0, 1, 2


def us(ns):
    """Exact microseconds with three decimals, from integer ns."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return "%s%d.%03d" % (sign, ns // 1000, ns % 1000)


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or doc.get("format") != "giltrace" or doc.get("version") != 1:
        raise SystemExit("refconv: %s: not a giltrace version 1 recording" % path)
    return doc["records"]


def clock_map(header, footer, clock):
    if clock == "monotonic_raw":
        return lambda t: t
    key = "realtime_ns" if clock == "realtime" else "monotonic_ns"
    off0 = header["clock_offsets"][key]
    off1, t0, t1 = off0, 0, 0
    if footer and key in footer.get("clock_offsets", {}) and footer.get("end_ns", 0) > \
            header.get("start_ns", 0):
        off1, t0, t1 = footer["clock_offsets"][key], header["start_ns"], footer["end_ns"]

    def m(t):
        if off0 == off1 or t <= t0:
            return t + off0
        if t >= t1:
            return t + off1
        return t + off0 + ((t - t0) * (off1 - off0)) // (t1 - t0)  # floor, as the C code
    return m


def convert(records, clock="realtime", flows=True, counter=True):
    header = next((r["header"] for r in records if isinstance(r, dict) and "header" in r), {})
    footer = next((r["footer"] for r in records if isinstance(r, dict) and "footer" in r), None)
    m = clock_map(header, footer, clock)
    pid = header.get("pid", 0)
    events = []
    last_end = {}
    points = []
    for r in records:
        if isinstance(r, dict) and "thread" in r:
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": r["thread"]["tid"],
                           "args": {"name": r["thread"]["name"]}})
            continue
        if not isinstance(r, list):
            continue
        tid, kind, start, dur, fl = r[:5]
        ts = m(start)
        d = m(start + dur) - ts
        if tid in last_end and ts < last_end[tid]:
            end = ts + d
            ts = last_end[tid]
            d = max(end - ts, 0)
        last_end[tid] = ts + d
        ev = {"ph": "X", "cat": "gil", "name": NAMES[kind], "pid": pid, "tid": tid,
              "ts": us(ts), "dur": float(us(d))}
        events.append(ev)
        if kind == 0 and (flows or (counter and d > 0)):
            points.append((ts + d, WAIT_END, len(points), tid, ts, d, counter and d > 0))
            if counter and d > 0:
                points.append((ts, WAIT_BEGIN, len(points), tid, ts, d, True))
        elif kind == 2 and flows:
            points.append((ts, DROP, len(points), tid, ts, d, False))
    points.sort(key=lambda p: p[:3])
    value, emitted, cur = 0, 0, None
    pending = None
    fid = 1
    for t, typ, _, tid, sts, sd, counts in points:
        if counts:
            if cur is not None and t != cur and value != emitted:
                events.append({"ph": "C", "name": "GIL waiters", "pid": pid, "ts": us(cur),
                               "args": {"waiting": max(value, 0)}})
                emitted = value
            cur = t
            value += 1 if typ == WAIT_BEGIN else -1
        if not flows:
            continue
        if typ == DROP:
            pending = (tid, sts, sd)
        elif typ == WAIT_END and pending:
            dtid, dts, dd = pending
            pending = None
            if dtid != tid:
                events.append({"ph": "s", "cat": "gil", "name": "gil_handoff", "id": fid,
                               "pid": pid, "tid": dtid, "ts": us(dts + (1 if dd >= 2 else 0))})
                events.append({"ph": "f", "cat": "gil", "name": "gil_handoff", "id": fid,
                               "pid": pid, "tid": tid, "bp": "e",
                               "ts": us(sts + (sd - 1 if sd >= 2 else 0))})
                fid += 1
    if counter and cur is not None and value != emitted:
        events.append({"ph": "C", "name": "GIL waiters", "pid": pid, "ts": us(cur),
                       "args": {"waiting": max(value, 0)}})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"tool": "refconv", "header": header}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clock", default="realtime",
                    choices=["realtime", "monotonic", "monotonic_raw"])
    ap.add_argument("recording")
    ap.add_argument("out")
    a = ap.parse_args()
    trace = convert(load(a.recording), a.clock)
    with open(a.out, "w") as f:
        json.dump(trace, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
