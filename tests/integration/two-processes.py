"""Two traced processes give two files; a bystander running the same libpython, not named with
--pid, yields no events and no file (per-task events: the kernel never probes it)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

N = 500
require_kernel()
label, exe, ver = pythons(include_system=False)[-1]
a = Workload(exe, "ctypes_calls.py", N)
b = Workload(exe, "ctypes_calls.py", N)
bystander = Workload(exe, "busy_calls.py")
bystander.go()
try:
    rec = Recorder("--pid", "%d,%d" % (a.pid, b.pid))
    a.go()
    b.go()
    tids = {a.pid: int(a.wait_done()[0]), b.pid: int(b.wait_done()[0])}
    # the recorder runs until a and b exit: the bystander's calls counted meanwhile would be
    # in the files if it were probed (more than the footers' bound below)
    calls = bystander.calls_made(1002)
    a.finish()
    b.finish()
    check(rec.wait() == 0, "gil-record failed: %s" % rec.err)
finally:
    bystander.finish()
check(bystander.readline(30).startswith("done "), "the bystander did not finish")
check(calls > 1000, "bystander made only %d calls" % calls)
files = rec.files()
names = sorted(os.path.basename(f) for f in files)
want = sorted("GIL_%d_rank_0.json" % p for p in (a.pid, b.pid))
check(names == want, "files %s, expected %s" % (names, want))
for f in files:
    header, records, footer = read_recording(f)
    pids = {header["pid"]}
    tid = tids[header["pid"]]
    drops = len(intervals(records, tid, 2))
    check(N <= drops <= N + 12, "%s: %d drops for %d calls" % (f, drops, N))
    others = {r[0] for r in intervals(records)} - set(tids.values())
    check(not others, "%s holds threads of other processes: %s" % (f, others))
    check(footer["events"] < 3 * (N + 20) * 2, "%s counts the bystander's events: %d" % (f, footer["events"]))
log("PASS: 2 files; bystander made %d GIL round trips unrecorded while recording" % calls)
check_no_probes()
