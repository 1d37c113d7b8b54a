# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for the gil-convert tests: run the converter, load and check what it wrote.

Automake's protocol: exit 0 pass, 77 skip, 99 hard error, anything else fail.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
TOP_SRCDIR = os.environ.get("top_srcdir", os.path.dirname(os.path.dirname(HERE)))
TOP_BUILDDIR = os.environ.get("top_builddir", TOP_SRCDIR)
GIL_CONVERT = os.path.join(TOP_BUILDDIR, "gil-convert")
GIL_RECORD = os.path.join(TOP_BUILDDIR, "gil-record")
DATA = os.path.join(TOP_SRCDIR, "tests", "data")
FIXTURES = os.path.join(DATA, "fixtures")
VALIDATOR = os.path.join(TOP_SRCDIR, "tests", "validate_trace.py")
HANDWRITTEN = os.path.join(DATA, "handwritten", "GIL_3096504_rank_0.json")
sys.path.insert(0, HERE)

NAMES = {0: "take_gil", 1: "hold_gil", 2: "drop_gil"}


def log(*a):
    print(*a, flush=True)


def fail(why):
    log("FAIL: " + why)
    sys.exit(1)


def skip(why):
    log("SKIP: " + why)
    sys.exit(77)


def check(cond, why):
    if not cond:
        fail(why)


def check_eq(got, want, what):
    if got != want:
        fail("%s:\n  got:  %r\n  want: %r" % (what, got, want))


def workdir(name):
    """A fresh directory for one test, kept after a failure for a look."""
    base = os.path.join(TOP_BUILDDIR, "tests", "work")
    os.makedirs(base, exist_ok=True)
    d = os.path.join(base, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def convert(*args, rc=0, timeout=600):
    """Run gil-convert; fail unless it exits with @rc. Returns (stdout, stderr)."""
    if not os.access(GIL_CONVERT, os.X_OK):
        fail("gil-convert not built at " + GIL_CONVERT)
    p = subprocess.run([GIL_CONVERT] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode != rc:
        fail("gil-convert %s: exit %d, expected %d\nstdout: %s\nstderr: %s" %
             (" ".join(map(str, args)), p.returncode, rc, p.stdout[-2000:], p.stderr[-2000:]))
    return p.stdout, p.stderr


def load(path):
    with open(path, "rb") as f:
        return json.load(f, parse_float=Decimal)


def validate(path, *flags):
    p = subprocess.run([sys.executable, VALIDATOR] + list(flags) + [path], capture_output=True,
                       text=True)
    if p.returncode != 0:
        fail("validator on %s:\n%s" % (path, p.stdout[-3000:]))


def ns(ts):
    """A ts/dur (microseconds as a string or number) as exact integer nanoseconds."""
    d = Decimal(str(ts)) * 1000
    check(d == d.to_integral_value(), "time %r has more than three decimals" % (ts,))
    return int(d)


def us(n):
    sign = "-" if n < 0 else ""
    n = abs(n)
    return "%s%d.%03d" % (sign, n // 1000, n % 1000)


def events(doc, ph=None, name=None, pid=None):
    return [e for e in doc["traceEvents"] if (ph is None or e.get("ph") == ph) and
            (name is None or e.get("name") == name) and (pid is None or e.get("pid") == pid)]


def slices(doc, pid=None):
    """X events as (pid, tid, name, ts_ns, dur_ns, args)."""
    return [(e["pid"], e["tid"], e["name"], ns(e["ts"]), ns(e["dur"]), e.get("args", {}))
            for e in events(doc, "X", pid=pid)]


def projection(doc):
    """The normalized projection the golden files hold, times left out: per (pid, tid) its
    slices in time order as one letter each (t take_gil, h hold_gil, d drop_gil: phase, name,
    pid, tid and order); the hand-offs as [pid, from tid, to tid] in time order; per process
    the waiter counter's values in time order."""
    per = defaultdict(list)
    for pid, tid, name, ts, dur, args in slices(doc):
        per[(pid, tid)].append((ts, name[0]))
    threads = {"%s/%s" % k: "".join(c for ts, c in sorted(v)) for k, v in sorted(per.items())}
    s = {e["id"]: e for e in events(doc, "s")}
    flows = [[pid, a, b] for ts, pid, a, b in
             sorted((ns(e["ts"]), e["pid"], e["tid"], f["tid"]) for f in events(doc, "f")
                    for e in [s[f["id"]]])]
    cs = defaultdict(list)
    for e in events(doc, "C"):
        cs[e["pid"]].append((ns(e["ts"]), int(e["args"]["waiting"])))
    counters = {str(pid): [v for ts, v in sorted(cs[pid])] for pid in sorted(cs)}
    return {"threads": threads, "flows": flows, "counters": counters}


def recording_intervals(path):
    """(tid, kind, start, dur, flags) of every interval line of a giltrace recording."""
    with open(path) as f:
        doc = json.load(f)
    return [tuple(r[:5]) for r in doc["records"] if isinstance(r, list)]


def check_invariants(doc, what):
    """What every converted trace must satisfy, whatever the recording:
    holds of one process never overlap; each thread's slices do not overlap; each hand-off
    goes from a drop of one thread to the first take (by return time) of another thread
    after it, with no re-take by the dropper in between; the waiter counter equals the number
    of take_gil slices open at each of its samples."""
    by_pid = defaultdict(list)
    by_thread = defaultdict(list)
    for pid, tid, name, ts, dur, args in slices(doc):
        by_pid[pid].append((ts, dur, tid, name))
        by_thread[(pid, tid)].append((ts, dur, name))
    for pid, evs in by_pid.items():
        holds = sorted((ts, ts + dur, tid) for ts, dur, tid, name in evs if name == "hold_gil")
        for a, b in zip(holds, holds[1:]):
            check(b[0] >= a[1], "%s: pid %d: hold_gil of %d [%d,%d] overlaps hold_gil of %d "
                  "[%d,%d]" % (what, pid, a[2], a[0], a[1], b[2], b[0], b[1]))
    for key, evs in by_thread.items():
        evs.sort()
        for a, b in zip(evs, evs[1:]):
            check(b[0] >= a[0] + a[1], "%s: %s: %s overlaps %s" % (what, key, a, b))
    s = {e["id"]: e for e in events(doc, "s")}
    for f in events(doc, "f"):
        st = s.get(f["id"])
        check(st is not None, "%s: flow %s has no s" % (what, f["id"]))
        pid, a, b = st["pid"], st["tid"], f["tid"]
        check(a != b, "%s: flow %s goes from thread %d to itself" % (what, f["id"], a))
        sts, fts = ns(st["ts"]), ns(f["ts"])
        drop = [x for x in by_thread[(pid, a)] if x[2] == "drop_gil" and x[0] <= sts <= x[0] + x[1]]
        take = [x for x in by_thread[(pid, b)] if x[2] == "take_gil" and x[0] <= fts <= x[0] + x[1]]
        check(drop, "%s: flow %s: s is on no drop_gil of thread %d" % (what, f["id"], a))
        check(take, "%s: flow %s: f is on no take_gil of thread %d" % (what, f["id"], b))
        d0, t_end = drop[0][0], take[0][0] + take[0][1]
        check(t_end >= d0, "%s: flow %s: the take ends before the drop" % (what, f["id"]))
        for tid2 in {k[1] for k in by_thread if k[0] == pid}:
            for ts, dur, name in by_thread[(pid, tid2)]:
                if name == "take_gil" and d0 <= ts + dur < t_end:
                    fail("%s: flow %s: thread %d took the GIL at %d, between the drop at %d and "
                         "the take it points to at %d" % (what, f["id"], tid2, ts + dur, d0,
                                                           t_end))
    for e in events(doc, "C"):
        t = ns(e["ts"])
        n = sum(1 for ts, dur, tid, name in by_pid[e["pid"]]
                if name == "take_gil" and dur > 0 and ts <= t < ts + dur)
        check(n == int(e["args"]["waiting"]), "%s: waiters at %d: counter says %s, slices say %d"
              % (what, t, e["args"]["waiting"], n))
