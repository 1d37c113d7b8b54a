"""The public C API (libgiltrace) records a sibling process from a C program; a second stop fails
with a reason; a bad pid fails the start with one; gil_trace_record_name_thread refuses bad
arguments, answers ESRCH without a recording and EAGAIN past 4096 names waiting after the
duration ended the recording (tests/c_api_user.c exits non-zero otherwise)."""
import os
import select
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

require_kernel()
prog = os.path.join(TOP_BUILDDIR, "tests", "c_api_user")
check(os.access(prog, os.X_OK), "tests/c_api_user not built")
label, exe, ver = pythons(include_system=False)[-1]
w = Workload(exe, "busy_calls.py")
w.go()
out = tempfile.mkdtemp()
# it records until a line on stdin, sent once the workload made the calls counted meanwhile
p = subprocess.Popen([prog, str(w.pid), "-", out], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
line = p.stdout.readline() if select.select([p.stdout], [], [], 120)[0] else "(silent)"
check(line == "recording\n", "C API: %r" % line)
ran = w.calls_made(102)
stdout, stderr = p.communicate("stop\n", timeout=HANG_S)
w.finish()
check(p.returncode == 0 and stdout == "ok no recording is running\n", "C API: %d %r %r" % (p.returncode, stdout, stderr))
h, records, footer = read_recording(os.path.join(out, "GIL_%d_rank_0.json" % w.pid))
releases = len(intervals(records, kind=2))
check(footer["reason"] == "stopped" and releases >= ran > 100,
      "C API recording: %d releases of %d calls made while recording: %s" % (releases, ran, footer))
p = subprocess.run([prog, "4000000000", "1", out], capture_output=True, text=True, timeout=HANG_S)
check(p.returncode == 1 and p.stdout.startswith("error no such process"), "bad pid: %r" % p.stdout)
check_no_probes()
log("PASS")
