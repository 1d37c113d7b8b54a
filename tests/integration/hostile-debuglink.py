#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Debug files a target names (doc/guarantees.md). A Python of nobody's loads a stripped
library of its own whose .gnu_debuglink names a file the user replaced: a FIFO (opened, it
blocks root's setup for good: --duration is never reached) and a link to a device node (a name
with '../' is refused by tests/unit/test-debugfile.c). The Python must be recorded and the
recorder must end as a clean recording does (64daf00 waits on the FIFO for good)."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

NOBODY = AS_NOBODY
SYSPY = "/usr/bin/python3.11"
require_kernel()
check(os.path.exists(SYSPY), "Debian's python3.11 is needed (tools/deps.sh --test)")
work, home = nobody_home("debuglink-")


def build(name, link):
    """A stripped library with a build-id and a debuglink to @link (made from a real file)."""
    return debuglinked_library(work, home, name, link)


def mapper(what, lib):
    """nobody's Python mapping @lib below the interpreter (0x400000), so that the recorder reads
    it first, then making ctypes calls until killed."""
    code = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "libc.mmap.restype = ctypes.c_void_p\n"
            "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,"
            " ctypes.c_int, ctypes.c_long]\n"
            "fd = os.open(%r, os.O_RDONLY)\n"
            "a = libc.mmap(0x100000, os.fstat(fd).st_size, 5, 0x100002, fd, 0)\n"
            "assert a == 0x100000, (a, ctypes.get_errno())\n"
            "print('ready', flush=True)\nwhile True: libc.getppid()\n" % lib)
    p = subprocess.Popen(NOBODY + [SYSPY, "-c", code], stdout=subprocess.PIPE, text=True)
    check(p.stdout.readline().startswith("ready"), "%s: the workload did not start" % what)
    return p


def attack(what, lib, duration=1.0):
    p = mapper(what, lib)
    out = tempfile.mkdtemp(prefix="out-", dir=work)
    rec = subprocess.Popen([GIL_RECORD, "--pid", str(p.pid), "--duration", str(duration),
                            "--output-dir", out], stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    try:
        rc = rec.wait(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        rec.kill()
        rec.wait()
        p.kill()
        fail("%s: gil-record did not end within %d s of a %g s recording" % (what, HANG_S,
                                                                            duration))
    took = time.time() - t0
    err = rec.stderr.read()
    p.kill()
    p.wait()
    check(rc == 0, "%s: gil-record exited %d: %s" % (what, rc, err))
    files = os.listdir(out)
    check(len(files) == 1, "%s: files %s" % (what, files))
    h, records, footer = read_recording(os.path.join(out, files[0]))
    check(intervals(records), "%s: the Python was not recorded" % what)
    log("%s: recorded, %.1f s for a %g s recording" % (what, took, duration))
    return took


# a FIFO where the debug file should be
lib, dbg = build("libfifo.so", "libfifo.debug")
os.unlink(dbg)
subprocess.run(NOBODY + ["mkfifo", dbg], check=True)
# a hang is what fails (attack() gives up after HANG_S); the time is reported, not judged: a
# clean recording of this workload takes about as long (attach, 1 s, closing 24 events)
attack("FIFO", lib)

# a link to a device node
lib, dbg = build("libdev.so", "libdev.debug")
os.unlink(dbg)
subprocess.run(NOBODY + ["ln", "-s", "/dev/zero", dbg], check=True)
attack("link to /dev/zero", lib)
# a sparse 1 TiB file (its CRC alone took about 1.5 h, nothing drained meanwhile), beside a
# victim of root's: both recorded, the victim whole and nothing lost, the debug file refused by
# its size at once (issue 23)
lib, dbg = build("libhuge.so", "libhuge.debug")
os.unlink(dbg)
subprocess.run(NOBODY + ["truncate", "-s", "1T", dbg], check=True)
attacker = mapper("1 TiB", lib)
N = 2000
victim = Workload(SYSPY, "ctypes_calls.py", N)
out = tempfile.mkdtemp(prefix="out-", dir=work)
rec = subprocess.Popen([GIL_RECORD, "--pid", "%d,%d" % (attacker.pid, victim.pid),
                        "--output-dir", out], stderr=subprocess.PIPE, text=True)
line = rec.stderr.readline()
while line and "recording" not in line:
    line = rec.stderr.readline()
check(line, "1 TiB: gil-record ended before recording")
victim.go()
tid = int(victim.wait_done()[0])
victim.finish()
attacker.kill()
attacker.wait()
rc, err = wait_recorder(rec, "1 TiB")
check(rc == 0, "1 TiB: gil-record exited %d: %s" % (rc, err))
files = files_by_pid(out)
check(str(victim.pid) in files and str(attacker.pid) in files,
      "1 TiB: both must be recorded: %s %s" % (files, err))
h, records, footer = read_recording(files[str(victim.pid)])
drops = len(intervals(records, tid=tid, kind=2))
check(N <= drops <= N + 12 and not footer.get("lost"),
      "1 TiB: the victim's releases %d of %d, lost %s" % (drops, N, footer.get("lost")))
log("1 TiB sparse debug file: both recorded, the victim's %d of %d releases, none lost" % (drops, N))
check_no_probes()
log("PASS")
