#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The trace validator itself: it accepts what viewers accept and rejects, with its message,
each thing they do not (so a green converter test means something)."""
import json
import os
import subprocess
import sys

from convlib import VALIDATOR, check, log, workdir

w = workdir("validator")
M = {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}}


def X(ts, dur, tid=1, **kw):
    return dict({"ph": "X", "name": "hold_gil", "cat": "gil", "pid": 1, "tid": tid, "ts": ts,
                 "dur": dur}, **kw)


def verdict(events, *flags, top="object"):
    path = os.path.join(w, "t.json")
    with open(path, "w") as f:
        json.dump({"traceEvents": events} if top == "object" else events, f)
    p = subprocess.run([sys.executable, VALIDATOR] + list(flags) + [path], capture_output=True,
                       text=True)
    return p.returncode, p.stdout


def accepts(events, *flags, **kw):
    rc, out = verdict(events, *flags, **kw)
    check(rc == 0, "rejected a valid trace: %s\n%s" % (events, out))


def rejects(events, message, *flags, **kw):
    rc, out = verdict(events, *flags, **kw)
    check(rc == 1 and message in out, "expected %r for %s, got:\n%s" % (message, events, out))


good = [M, X("10.000", 5.0), X("11.000", 1.0), X("15.000", 2.5),
        {"ph": "C", "name": "GIL waiters", "pid": 1, "tid": 0, "ts": "1.5", "args": {"waiting": 2}},
        {"ph": "s", "name": "h", "cat": "gil", "id": 1, "pid": 1, "tid": 1, "ts": "10.5"},
        {"ph": "f", "name": "h", "cat": "gil", "id": 1, "pid": 1, "tid": 1, "ts": "16", "bp": "e"},
        {"ph": "I", "name": "lost", "s": "p", "pid": 1, "ts": 3}]
accepts(good)
accepts(good, "--bound")
rejects(good, "top level is a bare array", top="array")
accepts(good, "--allow-array", top="array")
rejects([X(0, 1, ph="B")], "phase 'B' is not one of M X I C s t f")
rejects([X(0, 1, ph="i")], "phase 'i' is not one of M X I C s t f")
accepts([X(0, 1, ph="i")], "--allow-phase", "i")
rejects([X("abc", 1)], "ts 'abc' is not a number or numeric string")
rejects([X(0, -1)], "X with dur -1: not a number >= 0")
rejects([X(0, 1, tid=None)], "tid missing or neither a number nor a string")
rejects([X(0, 10), X(5, 10)], "overlaps event 0")
accepts([X(0, 10), X(10, 10), X(2, 3), X(2, 3)])
rejects([{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {}}],
        "thread_name without args.name")
rejects([{"ph": "M", "name": "colour", "pid": 1, "tid": 1, "args": {}}], "unknown metadata 'colour'")
rejects([{"ph": "C", "name": "c", "pid": 1, "ts": 1, "args": {"v": "x"}}], "C args are not all numbers")
rejects([good[5]], "1 s and 0 f events")
rejects([X(0, 10), dict(good[5], ts="5"), dict(good[6], ts="4")], "before its s")
rejects([X(0, 10), dict(good[5], ts="5"), dict(good[6], ts="20")], "f at 20 is inside no slice",
        "--bound")
log("PASS")
