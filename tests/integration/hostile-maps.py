#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A process that maps more executable files than any Python does (issue 23: every read root
makes of what a target controls is bounded). Root opens and reads each distinct executable file
a target maps, looking for the interpreter; a process can map tens of thousands. The recorder
looks at the first 1024 (record/procs.h, GIL_MAPS_MAX_FILES) and says so.

A pyenv Python (its libpython mapped above the files it maps itself) maps 1100 distinct copies
of a small library before it says ready. Recorded with --pid beside a ctypes_calls.py workload:
the first is refused with one line naming the bound, the second is recorded whole (N releases),
and nothing is lost. With 1000 copies the same process is recorded: the bound is what refuses
it, not the copies."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

N = 500
require_kernel()
check(shutil.which("cc"), "cc is needed (build-essential)")
shared = [p for p in pythons(min_version=(3, 8), include_system=False)
          if glob.glob(os.path.join(os.path.dirname(os.path.dirname(p[1])), "lib",
                                    "libpython3*.so*"))]
if not shared:
    skip("no pyenv Python with a shared libpython")
label, py, ver = shared[-1]
work = tempfile.mkdtemp(prefix="maps-")
src = os.path.join(work, "f.c")
with open(src, "w") as f:
    f.write("int f(void) { return 42; }\n")
lib = os.path.join(work, "lib0.so")
subprocess.run(["cc", "-shared", "-fPIC", "-o", lib, src], check=True)
for i in range(1, 1100):
    shutil.copy(lib, os.path.join(work, "lib%d.so" % i))

MAPPER = """
import ctypes, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
for i in range(int(sys.argv[2])):
    fd = os.open(os.path.join(sys.argv[1], "lib%d.so" % i), os.O_RDONLY)
    assert libc.mmap(None, 4096, 5, 2, fd, 0) not in (None, 2**64 - 1), ctypes.get_errno()
    os.close(fd)
print("ready %d" % os.getpid(), flush=True)
sys.stdin.readline()
sys.stdin.read()
"""


def attempt(copies):
    """Record the mapper (@copies files) beside ctypes_calls.py; (rc, stderr, victim's row)."""
    mapper = subprocess.Popen([py, "-c", MAPPER, work, str(copies)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    line = mapper.stdout.readline()
    check(line.startswith("ready"), "the mapper did not start: %r" % line)
    victim = Workload(py, "ctypes_calls.py", N)
    out = tempfile.mkdtemp(prefix="out-", dir=work)
    rec = subprocess.Popen([GIL_RECORD, "--pid", "%d,%d" % (mapper.pid, victim.pid),
                            "--output-dir", out], stderr=subprocess.PIPE, text=True)
    while True:
        line = rec.stderr.readline()
        check(line, "gil-record ended before recording")
        if "recording" in line:
            break
    victim.go()
    tid = int(victim.wait_done()[0])
    victim.finish()
    mapper.stdin.close()
    mapper.wait(HANG_S)
    rc, err = wait_recorder(rec, "%d files" % copies)
    files = files_by_pid(out)
    check(str(victim.pid) in files, "the victim was not recorded: %s %s" % (files, err))
    h, records, footer = read_recording(files[str(victim.pid)])
    drops = len(intervals(records, tid=tid, kind=2))
    check(N <= drops <= N + 12, "the victim's releases: %d of %d" % (drops, N))
    check(not footer.get("lost"), "events were lost: %s" % footer.get("lost"))
    return rc, err, files, mapper.pid


rc, err, files, pid = attempt(1100)
check(rc == 0, "gil-record exited %d: %s" % (rc, err))
check(str(pid) not in files, "the mapper with 1100 files was recorded")
said = [l for l in err.splitlines() if str(pid) in l and "more than 1024 executable files" in l]
check(said, "no line says the mapper maps more than 1024 executable files: %r" % err)
log("1100 files: %s" % said[0])
rc, err, files, pid = attempt(1000)
check(rc == 0, "gil-record exited %d: %s" % (rc, err))
check(str(pid) in files, "the mapper with 1000 files was not recorded: %r" % err)
shutil.rmtree(work, ignore_errors=True)
check_no_probes()
log("PASS")
