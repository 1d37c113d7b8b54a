"""Every pyenv CPython 3.6+: N ctypes calls release and retake the GIL N times; the recording of
that thread must show between N and N + SLACK drop_gil and take_gil intervals, well formed."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

N = 2000
SLACK = 12  # the handshake's reads and writes, and interpreter exit

require_kernel()
rows = []
failures = []
for label, exe, ver in sweep(pythons(include_system=False)):
    w = Workload(exe, "ctypes_calls.py", N)
    rec = Recorder("--pid", w.pid)
    # The sites share two events, entries and returns, each site naming itself (gil_site=\N):
    # the counts below hold only if the decoder turns that number back into the right probe.
    mine = [l for l in probes_of_ours() if l[2:].startswith(group_prefix(rec.p.pid))]
    events = sorted(set(l.split()[0] for l in mine))
    check(mine and all(" gil_site=\\" in l for l in mine) and len(events) <= 2,
          "%s: want the sites in at most 2 events, each with gil_site: %s" % (label, mine))
    w.go()
    tid = int(w.wait_done()[0])
    w.finish()
    rc = rec.wait()
    check(rc == 0, "%s: gil-record exited %d: %s" % (label, rc, rec.err))
    files = rec.files()
    check(len(files) == 1, "%s: expected one file, got %s" % (label, files))
    header, records, footer = read_recording(files[0])
    check(footer is not None and footer["reason"] == "exited",
          "%s: footer missing or wrong reason: %s" % (label, footer))
    check(header["pid"] == w.pid and os.path.basename(files[0]) == "GIL_%d_rank_0.json" % w.pid,
          "%s: wrong pid/file name" % label)
    drops = intervals(records, tid, 2)
    takes = intervals(records, tid, 0)
    holds = intervals(records, tid, 1)
    methods = sorted(set(p["method"] for p in header["probes"]))
    rows.append((label, ",".join(methods), len(drops), len(takes)))
    for name, got in (("drop_gil", drops), ("take_gil", takes)):
        if not N <= len(got) <= N + SLACK:
            failures.append("%s: %d %s intervals for %d ctypes calls" % (label, len(got), name, N))
    # Well formed: non-negative, in order, alternating take -> hold -> drop on this thread.
    seq = [r for r in records if isinstance(r, list) and r[0] == tid]
    last_end = 0
    for r in seq:
        if r[3] < 0 or r[2] < last_end:
            failures.append("%s: overlapping or negative interval %s" % (label, r))
            break
        last_end = r[2] + r[3]
    clean = [r for r in seq if r[4] & (F_RESYNC | F_LOST)]
    if clean:
        failures.append("%s: %d intervals flagged resync/lost: %s" % (label, len(clean), clean[:3]))
    check(footer["lost"] == 0, "%s: lost events: %s" % (label, footer["lost"]))
    check(footer["throttled"] == 0 and footer["foreign_events"] == 0,
          "%s: throttled %d, foreign %d" % (label, footer["throttled"], footer["foreign_events"]))
    check_no_probes()

log("%-18s %-10s %16s %16s" % ("interpreter", "method", "releases seen/N", "takes seen/N"))
for label, method, d, t in rows:
    log("%-18s %-10s %10d/%d %10d/%d" % (label, method, d, N, t, N))
check(rows, "no pyenv CPython 3.6+ found under " + pyenv_root())
if failures:
    fail("; ".join(failures))
log("PASS: %d interpreters" % len(rows))
