#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The native callers of GIL transitions made through the C API (issue 26): an interval's tenth
element, named by {"native"} records that the recorder writes after the intervals that carry
their ids (tests/data/handwritten/GIL_7000_rank_0.json, every number worked out below):

- a C thread (7001, named like its process, no Python frame) waits in ext.so!holder_thread
  (PyGILState_Ensure at +0x20), holds the GIL 50 ms while 7000 and 7003 wait through all of it,
  and releases at +0x58;
- 7002 releases around a sleep in ext.so!sleeper+0x10 three times and takes the GIL back at
  +0x30; its last release is in libfoo.so+0x1234 (no symbol), its first hold read no caller;
- 7000 and 7003 make the interpreter's own transitions; 7003's release names id 9, which no
  record names.

Checked: every slice's args.native; the C thread's row named "python3 [C: ext.so!holder_thread]";
--summary and --summary-json's native tables (holder_thread first by others' waiting with exactly
100 ms, sleeper's call sites adding up to 3 releases); the same recording cut before its footer;
two processes with the same native function kept apart; a recording without natives prints
nothing of them."""
import json
import os

from convlib import (DATA, HANDWRITTEN, check, check_eq, convert, load, log, ns, validate,
                     workdir)

w = workdir("natives")
FIX = os.path.join(DATA, "handwritten", "GIL_7000_rank_0.json")
MS, US = 1000000, 1000
C_THREAD = 7001
C_LABEL = "python3 [C: ext.so!holder_thread]"

with open(FIX) as f:
    records = json.load(f)["records"]
names = {r["native"]["id"]: r["native"]["name"] for r in records
         if isinstance(r, dict) and "native" in r}

# the fixture keeps its point: every name comes after the first interval that carries its id
for i, r in enumerate(records):
    if isinstance(r, dict) and "native" in r:
        first = min(k for k, x in enumerate(records) if isinstance(x, list) and len(x) >= 10
                    and x[9] == r["native"]["id"])
        check(first < i, "fixture: native %d is named before its intervals" % r["native"]["id"])


def want_native(iv):
    """What args.native says of interval @iv: None when it read no caller."""
    if len(iv) < 10:
        return None
    if iv[9] == 0:
        return "interpreter"
    return names.get(iv[9], "unnamed native #%d" % iv[9])


KIND = {0: "take_gil", 1: "hold_gil", 2: "drop_gil"}
RAW0 = records[0]["header"]["start_ns"]
OFF = records[0]["header"]["clock_offsets"]["realtime_ns"]


def check_slices(doc, what):
    """Each slice's args.native is its interval's, slice by slice (tid, kind, start)."""
    want = sorted((iv[0], KIND[iv[1]], iv[2] + OFF, want_native(iv)) for iv in records
                  if isinstance(iv, list))
    got = sorted((e["tid"], e["name"], ns(e["ts"]), e.get("args", {}).get("native"))
                 for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "gil")
    check_eq(got, want, "%s: args.native of every slice" % what)


def thread_names(doc):
    """The last thread_name of each tid, as viewers keep it."""
    return {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == "thread_name"}


# --- the recording --------------------------------------------------------------------------
out = os.path.join(w, "trace.json")
sj = os.path.join(w, "summary.json")
o, err = convert("-i", FIX, "-o", out, "--summary", "--summary-json", sj)
check_eq(err, "", "no warnings")
validate(out, "--bound")
doc = load(out)
check_slices(doc, "complete")
hold = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e["tid"] == C_THREAD and
        e["name"] == "hold_gil"]
check_eq(hold[0]["args"]["native"], "ext.so!holder_thread+0x20",
         "the C thread's hold: the native code that took the GIL")
check_eq(thread_names(doc), {7000: "python3 (main_loop)", C_THREAD: C_LABEL, 7002: "sleeper",
                             7003: "worker"}, "the rows' names")

st = json.load(open(sj))
nat = st["natives"]
check_eq(nat["intervals"], {"native": 14, "interpreter": 7, "not_read": 1},
         "intervals by their native caller")


def row(native, held, holds, others, releases, release, pid=7000):
    return {"native": native, "pid": pid, "trace_pid": pid, "held_ns": held, "holds": holds,
            "others_wait_ns": others, "releases": releases, "release_ns": release}


HOLDER = row("ext.so!holder_thread", 50 * MS, 1, 100 * MS, 1, 10 * US)
# sleeper's holds end in Python (<module> released next): Python held the GIL, not sleeper
SLEEPER = row("ext.so!sleeper", 0, 0, 0, 3, 30 * US)
check_eq(nat["held"], [HOLDER], "natives.held")
check_eq(nat["others_wait"], [HOLDER], "natives.others_wait: the two waiters' 50 ms each")
check_eq(nat["releases"], [SLEEPER, HOLDER, row("libfoo.so+0x1234", 0, 0, 0, 1, 10 * US),
                           row("unnamed native #9", 0, 0, 0, 1, 10 * US)], "natives.releases")
check_eq(nat["distinct"], 4, "natives.distinct")
threads = {t["tid"]: t for t in st["processes"][0]["threads"]}
check_eq({t: x.get("native_entry") for t, x in threads.items()},
         {7000: None, C_THREAD: "ext.so!holder_thread", 7002: None, 7003: None},
         "native_entry: the C thread only")

lines = o.splitlines()


def table(title):
    """The rows of the --summary table under @title (its header line skipped)."""
    check(title in lines, "--summary has %r:\n%s" % (title, o))
    rows = []
    for ln in lines[lines.index(title) + 2:]:
        if not ln.strip():
            break
        rows.append(ln.split())
    return rows


check("Native callers of the GIL's C API: 14 intervals from native code, 7 the interpreter's "
      "own, 1 not read" in lines, "the count line:\n" + o)
check_eq(table("Native functions by GIL held time (the native code that took the GIL and let "
               "go of it outside Python):"),
         [["50.00ms", "56.8%", "1", "7000", "ext.so!holder_thread"]], "--summary: held")
check_eq(table("Native functions by the time other threads waited while they held the GIL:"),
         [["100.00ms", "50.00ms", "7000", "ext.so!holder_thread"]], "--summary: others waited")
check_eq(table("Native functions by GIL releases (the native code that released it):"),
         [["3", "30.0us", "7000", "ext.so!sleeper"], ["1", "10.0us", "7000", "ext.so!holder_thread"],
          ["1", "10.0us", "7000", "libfoo.so+0x1234"], ["1", "10.0us", "7000", "unnamed",
                                                         "native", "#9"]],
         "--summary: releases")
check(any(ln.split()[:4] == ["7001", "python3", "[C:", "ext.so!holder_thread]"] for ln in lines),
      "--summary's thread table names the C thread:\n" + o)
check("most holding: 7001 %s held the GIL" % C_LABEL in o, "the verdict names it:\n" + o)
log("complete: %d slices, others waited %d ns under holder_thread"
    % (sum(isinstance(r, list) for r in records), nat["others_wait"][0]["others_wait_ns"]))

# --- cut before its footer: the names are read ahead all the same ---------------------------
with open(FIX) as f:
    text = f.read()
cut = os.path.join(w, "GIL_7000_rank_0.json")
with open(cut, "w") as f:
    f.write(text[:text.index('{"footer"')])
o, err = convert("-i", cut, "-o", os.path.join(w, "cut.json"), "--summary-json",
                 os.path.join(w, "cut-summary.json"))
check("was cut" in err, err)
check_slices(load(os.path.join(w, "cut.json")), "cut")
check_eq(thread_names(load(os.path.join(w, "cut.json")))[C_THREAD], C_LABEL, "cut: the C row")
check_eq(json.load(open(os.path.join(w, "cut-summary.json")))["natives"], nat,
         "cut: the same native tables")
log("cut: the same names and tables")

# --- two processes with the same native function: a row each --------------------------------
second = []
for r in records:
    if isinstance(r, list):
        r = [r[0] + 100] + r[1:]
    elif "header" in r:
        r = {"header": dict(r["header"], pid=7100, rank=1)}
    elif "thread" in r:
        r = {"thread": dict(r["thread"], tid=r["thread"]["tid"] + 100)}
    elif "footer" in r:
        r = {"footer": dict(r["footer"], threads=[dict(t, tid=t["tid"] + 100)
                                                  for t in r["footer"]["threads"]])}
    second.append(json.dumps(r, separators=(",", ":")))
two = os.path.join(w, "GIL_7100_rank_1.json")
with open(two, "w") as f:
    f.write('{"format":"giltrace","version":1,"records":[\n' + ",\n".join(second) + "\n]}\n")
sj2 = os.path.join(w, "two.json")
convert("-q", "-i", FIX, "-i", two, "--summary-json", sj2)
nat2 = json.load(open(sj2))["natives"]
check_eq(nat2["others_wait"], [HOLDER, row("ext.so!holder_thread", 50 * MS, 1, 100 * MS, 1,
                                           10 * US, pid=7100)],
         "two processes: holder_thread once per process")
check_eq(nat2["intervals"], {"native": 28, "interpreter": 14, "not_read": 2}, "two: intervals")

# --- a recording without natives says nothing of them ---------------------------------------
o, err = convert("-q", "-i", HANDWRITTEN, "--summary", "--summary-json",
                 os.path.join(w, "old.json"))
check("Native" not in o and "natives" not in json.load(open(os.path.join(w, "old.json"))),
      "no native tables for a recording without natives:\n" + o)
log("PASS")
