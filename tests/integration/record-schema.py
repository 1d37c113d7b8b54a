#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The shape of what gil-record writes is unchanged: on one interpreter and workload, the
header's and footer's keys (in order, with the type of each value, nested), the kinds of record
and the length of each interval record equal tests/data/identical/record-schema.json, written by
64daf00 before the source tree was reorganised (0.2 added attribution.mode, the unnamed
function record's shape and, from 3.12, attribution.interpreters). Values differ from run to
run; the schema must
not, unless a change means it to (then --update, and doc/format.md says what changed)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

UPDATE = "--update" in sys.argv
WANT = os.path.join(TOP_SRCDIR, "tests", "data", "identical", "record-schema.json")


def shape(v):
    """Keys in order and value types, nested; a list by the union of its elements' shapes."""
    if isinstance(v, dict):
        return [[k, shape(x)] for k, x in v.items()]
    if isinstance(v, list):
        seen = []
        for x in v:
            s = shape(x)
            if s not in seen:
                seen.append(s)
        return ["list", seen]
    return type(v).__name__


require_kernel()
want_py = [p for p in pythons(include_system=False) if p[2][:2] == (3, 12)]
check(want_py, "no pyenv CPython 3.12 to record")
label, exe, ver = want_py[0]
w = Workload(exe, "ctypes_calls.py", 300)
rec = Recorder("--pid", w.pid)
w.go()
w.wait_done()
w.finish()
check(rec.wait() == 0, "gil-record failed: %s" % rec.err)
rec.errfile.close()
files = rec.files()
check(len(files) == 1, "one recording: %s" % files)
with open(files[0]) as f:
    doc = json.load(f)
kinds = {}
for r in doc["records"]:
    if isinstance(r, list):
        kinds.setdefault("interval[%d]" % len(r), "list")
    else:
        for k, v in r.items():
            if k in ("header", "footer"):
                kinds[k] = shape(v)
            elif k == "fn":
                # a named function's shape, and an unnamed one's: which comes first is timing
                kinds.setdefault("fn" if v.get("name") is not None else "fn, unnamed", shape(v))
            else:
                kinds.setdefault(k, shape(v))
got = {"top": [k for k in doc if k != "records"], "records": dict(sorted(kinds.items()))}
check_no_probes()
if UPDATE:
    with open(WANT, "w") as f:
        json.dump(got, f, indent=1)
        f.write("\n")
    log("updated " + WANT)
    sys.exit(0)
with open(WANT) as f:
    want = json.load(f)
if "fn, unnamed" not in got["records"] and "fn, unnamed" in want["records"]:
    log("no unnamed function in this recording: that shape is not compared")
    got["records"]["fn, unnamed"] = want["records"]["fn, unnamed"]
if got != want:
    for k in sorted(set(got["records"]) | set(want["records"])):
        if got["records"].get(k) != want["records"].get(k):
            fail("%s: the %s records' shape changed:\n  got:  %s\n  want: %s" % (
                label, k, json.dumps(got["records"].get(k))[:1500],
                json.dumps(want["records"].get(k))[:1500]))
    fail("%s: top-level keys changed: %s vs %s" % (label, got["top"], want["top"]))
log("PASS: %s: %d record kinds, header and footer as before" % (label, len(got["records"])))
