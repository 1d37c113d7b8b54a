"""One GIL per interpreter (3.12+). subinterp.py runs two spinning threads in each of two
subinterpreters with a GIL of their own, and two in the main interpreter, on pyenv's 3.12
(_xxsubinterpreters) and 3.13 (_interpreters), and on Debian sid's 3.14 with its -dbg files and
without (stock, and stock with --attribution=full); then a subinterpreter that shares the main
GIL (legacy config).

- every interval of a spinner says the interpreter the workload says it ran in, and its GIL;
- the holds of one GIL never overlap, and holds of different GILs do (they run in parallel);
- the spinners are named (spin) on >= 90% of their releases: in the stock build the releases
  found from the code read the GIL's holder through _PyRuntime.interpreters.head, the newest
  interpreter, and the others' are named by the thread's next wait (record/sink-file.c);
- gil-convert: every slice carries args.interp, a "GIL waiters" counter per GIL, and no
  hand-off arrow joins slices of different GILs;
- legacy: the subinterpreter's intervals say its id, and the main GIL (0).
"""
# giltest: timeout 900
import json
from decimal import Decimal as D
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sidroot import *  # noqa: E402,F401,F403

SECONDS = 1.0
MIN_NAMED = 0.90


def spinners(w):
    """({interp id: [spinner tids]}, {interp id: the tid that entered it}) from the workload's
    'interp' and 'enter' lines, up to 'done'."""
    out, enters = {}, {}
    while True:
        line = w.readline(120).strip()
        if line == "done":
            return out, enters
        word, iid, *tids = line.split()
        check(word in ("interp", "enter"), "workload said %r" % line)
        if word == "enter":
            enters[int(iid)] = int(tids[0])
        else:
            out[int(iid)] = [int(t) for t in tids]


def check_recording(label, path, interps, legacy=False):
    header, records, footer = read_recording(path)
    check(footer is not None and not footer.get("lost"), "%s: footer %s" % (label, footer))
    check((header.get("attribution") or {}).get("interpreters") is True,
          "%s: the header does not say interpreters were read: %s"
          % (label, header.get("attribution")))
    fns = {r["fn"]["id"]: r["fn"] for r in records if isinstance(r, dict) and "fn" in r}
    ivs = [r for r in records if isinstance(r, list)]
    holds, unnamed = {}, []
    for iid, tids in interps.items():
        gil = 0 if legacy else iid
        for tid in tids:
            mine = [r for r in ivs if r[0] == tid]
            check(mine, "%s: spinner %d of interpreter %d has no intervals" % (label, tid, iid))
            wrong = [r for r in mine if (r[7] if len(r) > 8 else 0, r[8] if len(r) > 8 else 0)
                     != (iid, gil)]
            # a thread's first take at a site that reads no thread state may be counted in
            # the main GIL (doc/format.md); nothing more
            check(len(wrong) <= 1, "%s: %d of %d intervals of spinner %d not in interpreter "
                  "%d, GIL %d: %s" % (label, len(wrong), len(mine), tid, iid, gil, wrong[:4]))
            drops = [r for r in mine if r[1] == 2]
            named = sum(1 for r in drops if len(r) > 5 and fns.get(r[5], {}).get("name") == "spin")
            # its start and its end release outside spin: 3 at most
            log("%s: spinner %d (interpreter %d): %d of %d releases name spin%s"
                % (label, tid, iid, named, len(drops), "" if named >= MIN_NAMED * (len(drops) - 3)
                   else " (others: %s)" % sorted({str((fns.get(r[5]) or {}).get("unreadable"))
                                                  for r in drops if len(r) > 5})))
            if named < MIN_NAMED * (len(drops) - 3):
                unnamed.append((iid, tid))
            holds.setdefault(gil, []).extend(r for r in mine if r[1] == 1)
    exact = lambda r: not r[4] & (F_BEGIN_UNKNOWN | F_TRUNCATED | F_RESYNC)
    for gil, hs in holds.items():
        hs = sorted(filter(exact, hs), key=lambda r: r[2])
        for a, b in zip(hs, hs[1:]):
            check(a[2] + a[3] <= b[2], "%s: holds of GIL %d overlap: %s %s" % (label, gil, a, b))
    if not legacy:
        # different GILs' spinners hold at the same time: parallel
        overlap = 0
        a = sorted(filter(exact, holds[1]), key=lambda r: r[2])
        b = sorted(filter(exact, holds[2]), key=lambda r: r[2])
        j = 0
        for x in a:
            while j < len(b) and b[j][2] + b[j][3] <= x[2]:
                j += 1
            k = j
            while k < len(b) and b[k][2] < x[2] + x[3]:
                overlap += min(x[2] + x[3], b[k][2] + b[k][3]) - max(x[2], b[k][2])
                k += 1
        check(overlap > 0.05e9, "%s: GILs 1 and 2 held together only %d ns" % (label, overlap))
        log("%s: GILs 1 and 2 held at the same time for %.3f s" % (label, overlap / 1e9))
    return unnamed


def check_convert(label, path, interps, legacy=False, enters=None):
    out = path + ".trace.json"
    r = subprocess.run([GIL_CONVERT, "-o", out, path], capture_output=True, text=True)
    check(r.returncode == 0, "%s: gil-convert: %s" % (label, r.stderr))
    with open(out) as f:
        ev = json.load(f)["traceEvents"]
    slices = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "gil"]
    missing = [e for e in slices if "interp" not in e.get("args", {})]
    check(not missing, "%s: %d slices without args.interp: %s" % (label, len(missing), missing[:2]))
    counters = {e["name"] for e in ev if e.get("ph") == "C"}
    want = {"GIL waiters"} | set() if legacy else \
        {"GIL waiters"} | {"GIL waiters (interp %d)" % i for i in interps if i}
    check(want <= counters, "%s: counters %s, expected %s" % (label, counters, want))
    by_tid = {}
    for e in slices:
        by_tid.setdefault(e["tid"], []).append(e)

    def gil_at(tid, ts):
        for e in by_tid.get(tid, []):
            if D(e["ts"]) <= D(ts) <= D(e["ts"]) + D(e["dur"]):
                a = e["args"]
                return a.get("gil", a["interp"])
        return None
    starts = {e["id"]: e for e in ev if e.get("ph") == "s"}
    flows = 0
    for e in ev:
        if e.get("ph") != "f" or e["id"] not in starts:
            continue
        s = starts[e["id"]]
        a, b = gil_at(s["tid"], s["ts"]), gil_at(e["tid"], e["ts"])
        check(a is not None and a == b, "%s: a hand-off joins GIL %s and GIL %s: %s -> %s"
              % (label, a, b, s, e))
        flows += 1
    check(flows > 20, "%s: only %d hand-offs" % (label, flows))
    # --summary-json: one entry per GIL, each held about as long as its spinners ran
    js = path + ".summary.json"
    r = subprocess.run([GIL_CONVERT, "--summary-json", js, path], capture_output=True, text=True)
    check(r.returncode == 0, "%s: gil-convert --summary-json: %s" % (label, r.stderr))
    with open(js) as f:
        procs = json.load(f)["processes"]
    gils = {p.get("gil", 0): p for p in procs}
    check(sorted(gils) == ([0] if legacy else [0, 1, 2]) and len(procs) == len(gils),
          "%s: summary entries by GIL %s" % (label, [p.get("gil") for p in procs]))
    for gil, p in sorted(gils.items()):
        check(p["hold_ns"] >= 0.8e9 * SECONDS, "%s: GIL %d held %d ns, its spinners ran %s s"
              % (label, gil, p["hold_ns"], SECONDS))
        spin = set(interps[gil]) if not legacy else {t for ts in interps.values() for t in ts}
        rows = {t["tid"] for t in p["threads"]}
        check(spin <= rows, "%s: GIL %d's threads %s lack spinners %s" % (label, gil, rows, spin))
    # a main-interpreter thread ran each subinterpreter's code: its time is split by them
    for iid, tid in sorted(enters.items()):
        if legacy:
            row = [t for t in gils[0]["threads"] if t["tid"] == tid]
            split = row[0].get("interpreters", []) if row else []
            check({i["interp"] for i in split} == {0, iid},
                  "%s: thread %d's time is not split by interpreter (0, %d): %s"
                  % (label, tid, iid, row))
            check(sum(i["hold_ns"] for i in split) == row[0]["hold_ns"],
                  "%s: thread %d's holds by interpreter do not add up: %s" % (label, tid, row))
            log("%s: thread %d by interpreter: %s" % (label, tid, ", ".join(
                "%d held %.3f ms" % (i["interp"], i["hold_ns"] / 1e6) for i in split)))
        else:
            for gil in (0, iid):
                check(tid in {t["tid"] for t in gils[gil]["threads"]},
                      "%s: thread %d, which entered interpreter %d, has no row under GIL %d"
                      % (label, tid, iid, gil))
    log("%s: summary per GIL: %s" % (label, ", ".join("GIL %d held %.3f s, %.2f waiting"
        % (g, p["hold_ns"] / 1e9, p["average_waiters"]) for g, p in sorted(gils.items()))))
    log("%s: %d slices with interp, counters %s, %d hand-offs within their GIL"
        % (label, len(slices), sorted(counters), flows))


def record(label, start, legacy=False, extra=()):
    """@start() -> a started workload; its recording (gil-record @extra) checked, converted."""
    w = start()
    rec = FileRecorder("--pid", w.pid, *extra)
    w.go()
    interps, enters = spinners(w)
    w.finish()
    rc = rec.wait()
    check(rc == 0, "%s: gil-record exited %d: %s" % (label, rc, rec.err))
    files = rec.files()
    check(len(files) == 1, "%s: expected one file, got %s" % (label, files))
    check(sorted(interps) == [0, 1, 2], "%s: interpreters %s" % (label, sorted(interps)))
    unnamed = check_recording(label, files[0], interps, legacy)
    check(not unnamed, "%s: spinners (interpreter, tid) named spin on < %d%% of their releases: %s"
          % (label, MIN_NAMED * 100, unnamed))
    check_convert(label, files[0], interps, legacy, enters)
    check_no_probes()
    shutil.rmtree(rec.outdir, ignore_errors=True)


require_kernel()
found = [p for p in pythons(include_system=False) if p[2] >= (3, 12)]
check(found, "no pyenv CPython 3.12+ found")
for label, exe, ver in found:
    record("pyenv %s" % label, lambda: Workload(exe, "subinterp.py", 2, 2, 2, SECONDS))
label, exe = found[-1][0], found[-1][1]
record("pyenv %s, legacy (shared GIL)" % label,
       lambda: Workload(exe, "subinterp.py", 2, 2, 2, SECONDS, "legacy"), legacy=True)
root = require_sid_root()
for hide in (False, True):
    record("sid python3.14, %s" % ("stock" if hide else "with -dbg"),
           lambda: SidWorkload(root, "/usr/bin/python3.14", "subinterp.py", 2, 2, 2, SECONDS,
                               hide_debug=hide))
# the stock build again, the probes reading the names themselves
record("sid python3.14, stock, --attribution=full",
       lambda: SidWorkload(root, "/usr/bin/python3.14", "subinterp.py", 2, 2, 2, SECONDS,
                           hide_debug=True), extra=("--attribution=full",))
log("PASS")
