"""Four CPU-bound threads contend for the GIL: every thread is recorded with its name, each waits
some of the time, and the hold_gil intervals of the process never overlap (one holder at a time).
Run on the oldest and the newest pyenv CPython (the GIL changed most between them)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

require_kernel()
found = pythons(include_system=False)
check(found, "no pyenv CPython found")
for label, exe, ver in sorted({found[0], found[-1]}, key=lambda x: x[2]):
    # each thread runs until it handed the GIL over and back 10 times: >= 20 hand-offs
    w = Workload(exe, "contention.py", 4, 1.5, 10)
    rec = Recorder("--pid", w.pid)
    w.go()
    tids = [int(t) for t in w.wait_done()]
    w.finish()
    check(rec.wait() == 0, "%s: gil-record failed: %s" % (label, rec.err))
    header, records, footer = read_recording(rec.files()[0])
    names = {r["thread"]["tid"]: r["thread"]["name"] for r in records
             if isinstance(r, dict) and "thread" in r}
    for tid in tids:
        check(tid in names, "%s: thread %d not recorded (have %s)" % (label, tid, sorted(names)))
        check(names[tid].startswith("python") or names[tid],
              "%s: thread %d has no name" % (label, tid))
        waited = sum(r[3] for r in intervals(records, tid, 0))
        held = sum(r[3] for r in intervals(records, tid, 1))
        check(waited > 0, "%s: thread %d never waited" % (label, tid))
        check(held > 100e6, "%s: thread %d held the GIL only %d ns" % (label, tid, held))
    holds = sorted(intervals(records, kind=1), key=lambda r: r[2])
    for a, b in zip(holds, holds[1:]):
        # Only intervals whose edges were both observed are exact.
        if (a[4] | b[4]) & (F_BEGIN_UNKNOWN | F_TRUNCATED | F_RESYNC):
            continue
        check(a[2] + a[3] <= b[2], "%s: hold_gil of %d %s overlaps %d %s" % (label, a[0], a, b[0], b))
    switches = sum(1 for a, b in zip(holds, holds[1:]) if a[0] != b[0])
    check(switches >= 20, "%s: only %d hand-offs between threads" % (label, switches))
    footer_threads = {t["tid"] for t in footer["threads"]}
    check(set(tids) <= footer_threads, "%s: footer lacks threads" % label)
    log("%s: %d threads, %d holds, %d hand-offs, no overlap" % (label, len(tids), len(holds), switches))
    check_no_probes()
log("PASS")
