"""The two attribution modes agree, and the fast one names reused code addresses right.

1. One workload (tests/workloads/attribution.py: threads whose functions are known) recorded by
   two gil-records at once: --attribution=full (the probes read name, file and line at every
   take_gil and drop_gil entry) and the default, fast (the probe reads the code object's address
   at drop_gil only; a wait is named after the thread's last release). Both see the same
   events; each wait, hold and release of one is matched with the other's (same thread,
   nearest start), and their functions must agree on >= 99% of those full names.
2. Code objects that die and whose addresses are reused by new functions
   (tests/workloads/code_churn.py: f_0, f_1, ... each released in once, 15 ms apart, each dying
   once the recorder drained its release): the fast mode names each release after its own
   f_<i>, never after the function that had the address before.
3. A process that exits right after its calls (gil-record -- python -c): a release the
   recorder could not name before the exit says so (its why, and a closing warning), and none
   is named wrong.
4. The converter's output: both modes' recordings convert, and their Chrome traces name the
   same functions on >= 99% of the holds; the recordings of 0.1.0 in tests/data/real still
   convert (trace and --summary).
Every pyenv CPython 3.6+ and the system's are tried (a few of them under GIL_TEST_QUICK, and
2 and 3 on the oldest and newest of those only).
"""
import bisect
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

SECONDS = 1.2
LEAST = 50  # the workload runs on until each thread released this often: >= 50 named below
CHURN = 40


def names(records):
    out = {}
    for r in records:
        if isinstance(r, dict) and "fn" in r:
            f = r["fn"]
            out[f["id"]] = (f["name"], f.get("file"), f.get("line")) if f["name"] is not None \
                else None
    return out


def by_thread(records, kind):
    """tid -> sorted [(start, fn id)] of the intervals of @kind."""
    out = {}
    for r in records:
        if isinstance(r, list) and r[1] == kind and len(r) >= 7:
            out.setdefault(r[0], []).append((r[2], r[5]))
    for v in out.values():
        v.sort()
    return out


def compare(full, fast, kind):
    """(full's intervals, matched in fast's, named by full, of those named alike by fast)."""
    fn_full, fn_fast = names(full), names(fast)
    a, b = by_thread(full, kind), by_thread(fast, kind)
    total = matched = named = same = 0
    examples = []
    for tid, ivs in a.items():
        other = b.get(tid, [])
        starts = [s for s, _ in other]
        for start, fn in ivs:
            total += 1
            i = bisect.bisect_left(starts, start)
            near = [j for j in (i - 1, i) if 0 <= j < len(other)]
            if not near:
                continue
            j = min(near, key=lambda j: abs(starts[j] - start))
            if abs(starts[j] - start) > 200000:  # 200 us: not the same event
                continue
            matched += 1
            want = fn_full.get(fn)
            if want is None:
                continue
            named += 1
            got = fn_fast.get(other[j][1])
            if got == want:
                same += 1
            elif len(examples) < 5:
                examples.append((tid, start, want, got))
    return total, matched, named, same, examples


def record_both(exe, paths):
    w = Workload(exe, "attribution.py", SECONDS, LEAST)
    full = Recorder("--pid", w.pid, "--attribution=full")
    fast = Recorder("--pid", w.pid)
    w.go()
    w.wait_done()
    w.finish()
    out = []
    for rec, mode in ((full, "full"), (fast, "fast")):
        check(rec.wait() == 0, "gil-record --attribution=%s failed: %s" % (mode, rec.err))
        files = rec.files()
        check(len(files) == 1, "%s: expected one recording, got %s" % (mode, files))
        header, records, footer = read_recording(files[0])
        att = header.get("attribution", {})
        check(att.get("enabled") is True and att.get("mode") == mode,
              "%s: header's attribution says %s" % (mode, att))
        check(footer and footer.get("lost") == 0, "%s: events lost: %s" % (mode, footer))
        out.append(records)
        paths.append(files[0])
    return out


def converted_holds(path):
    """gil-convert's Chrome trace of @path: tid -> Counter of the functions its holds name."""
    out = path + ".trace.json"
    p = subprocess.run([GIL_CONVERT, "-q", "-o", out, path], capture_output=True, text=True)
    check(p.returncode == 0, "gil-convert %s: %s" % (path, p.stderr))
    with open(out) as f:
        doc = json.load(f)
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    holds = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("name") == "hold_gil":
            fn = e.get("args", {}).get("function")
            holds.setdefault(e["tid"], collections.Counter())[fn] += 1
    return holds


def converted_alike(full_path, fast_path):
    """(full's named holds, of those named alike in fast's trace), thread by thread: each
    file's realtime mapping is its own, so the traces' timestamps are not compared (the
    records' were, above); the functions and how often each is held must agree."""
    a, b = converted_holds(full_path), converted_holds(fast_path)
    named = same = 0
    for tid, fns in a.items():
        other = b.get(tid, collections.Counter())
        for fn, n in fns.items():
            if fn is None:
                continue
            named += n
            same += min(n, other.get(fn, 0))
    return named, same


def churn(exe, label, failures):
    w = Workload(exe, "code_churn.py", CHURN, 0.015, "step")
    rec = Recorder("--pid", w.pid)
    tail = rec.tail(w.pid)
    w.go()
    # f_<i> lives until the recorder has read its code object: an interval of the main thread
    # from its call on in the file says the events up to it were drained, and their code
    # objects read (a slower recorder is not one that names wrong)
    for i in range(CHURN):
        t = int(w.readline(120).split()[2])
        tail.wait(lambda tl: any(isinstance(r, list) and r[0] == w.pid and r[2] >= t
                                 for r in tl.records),
                  "gil-record reading f_%d's code object" % i)
        w.p.stdin.write("x")
        w.p.stdin.flush()
    done = dict(kv.split("=") for kv in w.wait_done())
    w.finish()
    check(rec.wait() == 0, "gil-record failed: %s" % rec.err)
    header, records, footer = read_recording(rec.files()[0])
    fns = names(records)
    got = []
    for r in records:
        if isinstance(r, list) and r[1] == 1 and len(r) >= 7:
            f = fns.get(r[5])
            if f and re.match(r"^f_\d+$", f[0]):
                got.append((r[2], f[0]))
    got = [n for _, n in sorted(got)]
    want = ["f_%d" % i for i in range(CHURN)]
    reused = int(done["reused"])
    if reused < CHURN // 2:
        failures.append("%s: only %d of %d code objects reused an address: nothing tested"
                        % (label, reused, CHURN))
    elif got != want:
        failures.append("%s: releases in the churned functions name %s, want f_0 .. f_%d in order"
                        " (%d addresses reused)" % (label, got, CHURN - 1, reused))
    return reused, len(got)


EXITED = "process exited before its code object was read"


def short_lived(exe, label, failures):
    """A process that exits right after its calls: what the recorder could not read before the
    exit is said, in the file (the why) and on screen, never named wrong."""
    outdir = tempfile.mkdtemp(prefix="gilrec-short-")
    code = ("import ctypes\nf = ctypes.CDLL(None).getppid\n"
            "def short():\n    for _ in range(300):\n        f()\nshort()\n")
    p = subprocess.run(record_command() + ["-o", outdir, "--", exe, "-c", code],
                       capture_output=True, text=True, timeout=HANG_S)
    check(p.returncode == 0, "%s: gil-record -- python -c: %s" % (label, p.stderr))
    files = glob.glob(os.path.join(outdir, "GIL_*.json"))
    check(len(files) == 1, "%s: short-lived: files %s" % (label, files))
    header, records, footer = read_recording(files[0])
    fns = {}
    for r in records:
        if isinstance(r, dict) and "fn" in r:
            fns[r["fn"]["id"]] = r["fn"]
    named = exited = wrong = 0
    for r in records:
        if isinstance(r, list) and r[1] == 2 and r[0] == header["pid"] and len(r) >= 7:
            f = fns.get(r[5], {})
            if f.get("unreadable") == EXITED:
                exited += 1
            elif f.get("name") == "short":
                named += 1
            elif f.get("file") == "<string>" and f.get("name") != "<module>":
                wrong += 1  # the script's own code named after another of its functions
    said = "their process exited before its code objects were read" in p.stderr
    if named + exited < 300 or wrong:
        failures.append("%s: short-lived: %d releases in short() named, %d said exited, %d named "
                        "otherwise in <string>" % (label, named, exited, wrong))
    if bool(exited) != said:
        failures.append("%s: short-lived: %d releases unnamed for the exit, warned: %s"
                        % (label, exited, said))
    shutil.rmtree(outdir, ignore_errors=True)
    return named, exited


require_kernel()
interpreters = sweep(pythons((3, 6)))
if not interpreters:
    skip("no CPython 3.6+ on this machine")
failures, report = [], []
# Recordings made before the fast mode (tests/data/real, by 0.1.0) still convert.
for old in sorted(glob.glob(os.path.join(TOP_SRCDIR, "tests", "data", "real", "GIL_*.json"))):
    for args in (["-o", os.path.join(tempfile.mkdtemp(prefix="gilconv-"), "t.json")],
                 ["--summary"]):
        p = subprocess.run([GIL_CONVERT, "-q"] + args + [old], capture_output=True, text=True)
        check(p.returncode == 0, "gil-convert %s %s: %s" % (" ".join(args), old, p.stderr))
for label, exe, ver in interpreters:
    paths = []
    full, fast = record_both(exe, paths)
    named, same = converted_alike(*paths)
    if named < 50 or same < 0.99 * named:
        failures.append("%s: converted traces: fast names %d of full's %d holds alike"
                        % (label, same, named))
    row = [label]
    for kind, what in ((0, "waits"), (1, "holds"), (2, "releases")):
        total, matched, named, same, ex = compare(full, fast, kind)
        row.append("%d/%d %d/%d" % (matched, total, same, named))
        if total and matched < 0.99 * total:
            failures.append("%s: %s: only %d of %d matched between the modes"
                            % (label, what, matched, total))
        if named < 50:
            failures.append("%s: %s: only %d named by --attribution=full" % (label, what, named))
        elif same < 0.99 * named:
            failures.append("%s: %s: fast names %d of %d as full does; e.g. %s"
                            % (label, what, same, named, ex))
    # under quick() (ASan: one churn alone took minutes beside a busy core) the churn and the
    # short-lived process run on the oldest and the newest interpreter: the code-object reading
    # they drive differs by version only in the offsets, which the comparison above covers
    if not quick() or label in (interpreters[0][0], interpreters[-1][0]):
        reused, seen = churn(exe, label, failures)
        row.append("%d/%d, %d reused" % (seen, CHURN, reused))
        named, exited = short_lived(exe, label, failures)
        row.append("%d named, %d exited" % (named, exited))
    else:
        row += ["(quick: left out)", "(quick: left out)"]
    report.append(row)
log("matched/all and same/named, full vs fast, per kind; churned functions named / released")
log("%-16s %-22s %-22s %-22s %-18s %s" % ("interpreter", "waits", "holds", "releases", "churn",
                                          "short-lived"))
for r in report:
    log("%-16s %-22s %-22s %-22s %-18s %s" % tuple(r))
for f in failures:
    log("FAIL: " + f)
check(not failures, "%d failure(s)" % len(failures))
check_no_probes()
log("PASS: %d interpreters" % len(report))
