"""Without --pid every CPython process is recorded, including one that starts while recording;
with --accelerator-only only those holding an accelerator device open (a stand-in node
/dev/davinci_giltrace_test here), which is what 'the Python processes on the NPU' means."""
import os
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

N = 500
require_kernel()
label, exe, ver = pythons(include_system=False)[-1]

# 1. A process that starts mid-recording gets its own file.
rec = Recorder("--duration", "120")
time.sleep(1.5)
late = Workload(exe, "ctypes_calls.py", N)
# All-process mode looks for new processes every second. Its file is created before its events
# are enabled, its header written after: the header says the probes are live.
tail = rec.tail(late.pid)
tail.wait(lambda t: t.header, "the late process attached (its file's header)")
path = tail.path
late.go()
tid = int(late.wait_done()[0])
late.finish()
# the recorder closes the file with a footer when it notices the exit
tail.wait(lambda t: t.footer, "gil-record closing the late process's file after it exited")
rec.signal(signal.SIGINT)
check(rec.wait() == 0, "gil-record failed: %s" % rec.err)
check(os.path.exists(path), "no file for the late process; files: %s\n%s" % (rec.files(), rec.err))
h, records, footer = read_recording(path)
drops = len(intervals(records, tid, 2))
check(N <= drops <= N + 12, "late process: %d releases for %d calls" % (drops, N))
check(footer["reason"] == "exited", "late process footer %s" % footer)
check_no_probes()

# 2. --accelerator-only: the one with the device open, not its twin without.
node = "/dev/davinci_giltrace_test"
if os.path.exists(node):
    os.unlink(node)
os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers: harmless
try:
    npu = Workload(exe, "ctypes_calls.py", N, "--hold", node)
    cpu = Workload(exe, "ctypes_calls.py", N)
    rec = Recorder("--accelerator-only", "--duration", "4")
    npu.go()
    cpu.go()
    npu.wait_done()
    cpu.wait_done()
    time.sleep(0.5)
    npu.finish()
    cpu.finish()
    check(rec.wait() == 0, "gil-record -a failed: %s" % rec.err)
    names = [os.path.basename(f) for f in rec.files()]
    check("GIL_%d_rank_0.json" % npu.pid in names, "the device holder was not recorded: %s" % names)
    check("GIL_%d_rank_0.json" % cpu.pid not in names, "a process without device was recorded")
finally:
    os.unlink(node)
check_no_probes()
log("PASS")
