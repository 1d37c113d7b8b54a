#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One hostile or unusual process cannot stop or starve everyone's recording
(doc/guarantees.md). Each attacker runs as nobody.

1. A Python whose libpython lies at a path with a space (tracefs cannot take such a path):
   recorded like any other, beside a second --pid.
2. --pid A,B where A's probes cannot be created (the kernel refuses them, injected): A is
   skipped with one line naming it and why, B is recorded.
3. A process that maps a file naming 400 clones each of take_gil and drop_gil: at most 64
   sites are probed, the rest are reported (warning and header); the setup time is logged.
4. A Python run from a directory whose name is not UTF-8 (bytes ff fe): the recording is
   valid JSON, the path written with '?'.
5. A Python with 40,000 distinct functions of 4 KB names, each releasing the GIL: names are cut
   at 256 bytes and functions past 32,768 share one entry, both reported (warning, footer), so
   the recorder's memory and its file stay small (64daf00: 177 MB and 167 MB for 20,000)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

HERE = os.path.join(TOP_SRCDIR, "tests", "hostile")
NOBODY = AS_NOBODY

require_kernel()
work = tempfile.mkdtemp(prefix="targets-")
os.chmod(work, 0o755)
# The attackers are nobody's processes: Debian's python3.11 (its symbols from python3.11-dbg,
# found by build-id) runs for any user; pyenv's live under root's home.
SYSPY = "/usr/bin/python3.11"
check(os.path.exists(SYSPY) and has_debug_symbols(SYSPY),
      "Debian's python3.11 with python3.11-dbg is needed (tools/deps.sh --test installs it)")
script = os.path.join(work, "busy_calls.py")
shutil.copy(os.path.join(WORKLOADS, "busy_calls.py"), script)


def record(*args, env=None):
    out = tempfile.mkdtemp(prefix="out-", dir=work)
    t0 = time.time()
    p = subprocess.run([GIL_RECORD, "--output-dir", out, "--duration", "1"] + list(args),
                       capture_output=True, text=True, timeout=600, env=env)
    return p, out, time.time() - t0


def workload(python, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.Popen(NOBODY + [python, "-u", script],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=e)


def ready(p):
    line = p.stdout.readline()
    check(line.startswith("ready "), "a workload did not start: %r" % line)
    if p.args[-1].endswith(".py"):
        p.stdin.write("go\n")
        p.stdin.flush()
    return int(line.split()[1])


# 1. an interpreter at a path with a space: a copy of python3.11 (same build-id, so its
# debug file still matches)
spaced = os.path.join(work, "bin with space")
os.mkdir(spaced)
os.chmod(spaced, 0o755)
spy = os.path.join(spaced, "python3.11")
shutil.copy(SYSPY, spy)
a = workload(spy)
b = workload(SYSPY)
pa, pb = ready(a), ready(b)
p, out, _ = record("--pid", "%d,%d" % (pa, pb))
files = sorted(os.listdir(out))
check(p.returncode == 0, "space in path: gil-record exited %d: %s" % (p.returncode, p.stderr))
check(files == sorted("GIL_%d_rank_0.json" % x for x in (pa, pb)),
      "space in path: files %s, want both processes'" % files)
header, records, footer = read_recording(os.path.join(out, "GIL_%d_rank_0.json" % pa))
check(header["object"] == spy and intervals(records),
      "space in path: the spaced libpython's process recorded nothing (%s)" % header["object"])
log("1. an interpreter under '%s': recorded, %d intervals" % (spaced, len(intervals(records))))
check_no_probes()

# 2. --pid A,B, A's probes refused by the kernel: its first probe, and the retries of that probe
# without fetchargs (padded as the others' event, then plain), are refused (A's object is the
# first one probed)
fault = os.path.join(work, "fault.so")
subprocess.run(["cc", "-shared", "-fPIC", "-o", fault, os.path.join(TOP_SRCDIR, "tests", "fault.c"),
                "-ldl"], check=True)
env = dict(os.environ, LD_PRELOAD=fault, GIL_FAULT="probe_write:1-3",
           ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")
p, out, _ = record("--pid", "%d,%d" % (pa, pb), env=env)
lines = [l for l in p.stderr.splitlines() if l.startswith("gil-record: warning: process %d: " % pa)]
check(p.returncode == 0, "refused probes: gil-record exited %d: %s" % (p.returncode, p.stderr))
check(len(lines) == 1 and "cannot create uprobe" in lines[0] and lines[0].endswith("; not recorded"),
      "refused probes: want one line naming process %d and why: %r" % (pa, p.stderr))
files = sorted(os.listdir(out))
check(files == ["GIL_%d_rank_0.json" % pb], "refused probes: files %s, want B's only" % files)
header, records, footer = read_recording(os.path.join(out, files[0]))
check(intervals(records), "refused probes: B recorded nothing")
log("2. %s" % lines[0])
check_no_probes()
a.kill()
b.kill()
a.wait()
b.wait()

# 3. 400 clones of each GIL function in one mapped file
src = os.path.join(work, "clones.s")
with open(src, "w") as f:
    subprocess.run([sys.executable, os.path.join(HERE, "clones.py"), "400"], stdout=f, check=True)
clones = os.path.join(work, "libclones.so")
subprocess.run(["cc", "-shared", "-nostdlib", "-o", clones, src], check=True)
mapper = os.path.join(work, "mapper")
subprocess.run(["cc", "-O1", "-o", mapper, os.path.join(HERE, "mapper.c")], check=True)
m = subprocess.Popen(NOBODY + [mapper, clones], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     text=True)
pm = ready(m)
p, out, took = record("--pid", str(pm))
m.kill()
m.wait()
check(p.returncode == 0, "clones: gil-record exited %d: %s" % (p.returncode, p.stderr))
warn = [l for l in p.stderr.splitlines() if "more take_gil/drop_gil sites than the 64 probed" in l]
check(len(warn) == 1 and "736 more" in warn[0], "clones: want one line saying 736 sites were "
      "not probed: %r" % p.stderr)
header, records, footer = read_recording(os.path.join(out, "GIL_%d_rank_0.json" % pm))
check(header.get("sites_over_cap") == 736, "clones: header sites_over_cap %r, want 736" %
      header.get("sites_over_cap"))
check(len(header["probes"]) <= 2 * 64, "clones: %d probes" % len(header["probes"]))
check_no_probes()
log("3. 800 clones: %d probes, %s over the cap reported; recorded for 1 s in %.1f s" % (
    len(header["probes"]), header["sites_over_cap"], took))

# 4. a path that is not UTF-8
bad = os.path.join(os.fsencode(work), b"bin\xff\xfe")
os.mkdir(bad)
os.chmod(bad, 0o755)
bpy = os.path.join(bad, b"python3.11")
shutil.copy(SYSPY, bpy)
c = workload(os.fsdecode(bpy))
pc = ready(c)
p, out, _ = record("--pid", str(pc))
c.kill()
c.wait()
check(p.returncode == 0, "not UTF-8: gil-record exited %d: %s" % (p.returncode, p.stderr))
path = os.path.join(out, "GIL_%d_rank_0.json" % pc)
with open(path, "rb") as f:
    raw = f.read()
try:
    doc = json.loads(raw.decode("utf-8"))
except (UnicodeDecodeError, ValueError) as e:
    fail("not UTF-8: the recording is not valid JSON: %s" % e)
obj = doc["records"][0]["header"]["object"]
check(obj.endswith("/bin??/python3.11"), "not UTF-8: object %r" % obj)
log("4. a path with bytes ff fe: valid JSON, object %s" % obj)
check_no_probes()

# 5. many long function names
many = os.path.join(work, "many.py")
with open(many, "w") as f:
    f.write("import ctypes, sys\nlibc = ctypes.CDLL(None)\nns = {'libc': libc}\n"
            "for i in range(40000):\n"
            "    exec('def f%d_%s(): libc.getppid()' % (i, 'x' * 4000), ns)\n"
            "fs = [v for k, v in ns.items() if k.startswith('f')]\n"
            "print('ready', flush=True)\nsys.stdin.readline()\n"
            "for f in fs: f()\nprint('done', flush=True)\nsys.stdin.read()\n")
d = subprocess.Popen(NOBODY + [SYSPY, "-u", many], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     text=True)
check(d.stdout.readline().startswith("ready"), "many functions: the workload did not start")
out = tempfile.mkdtemp(prefix="out-", dir=work)
# The recorder reads each function's name from the process's memory after the event, so the
# workload stays until the recorder has stopped: every name is read, however slow this machine.
rec = Recorder("--pid", d.pid, outdir=out)
d.stdin.write("go\n")
d.stdin.flush()
check(d.stdout.readline().startswith("done"), "many functions: the workload did not finish")
rec.signal(signal.SIGINT)
_, status, usage = os.wait4(rec.p.pid, 0)
rec.p.returncode = os.waitstatus_to_exitcode(status)
rerr = open(rec.errfile.name).read()
rc, rss_kb = rec.p.returncode, usage.ru_maxrss
d.stdin.close()
d.wait()
check(rc == 0, "many functions: gil-record exited %d: %s" % (rc, rerr))
path = os.path.join(out, "GIL_%d_rank_0.json" % d.pid)
header, records, footer = read_recording(path)
caps = footer.get("function_caps")
check(caps and caps["names_cut"] > 0 and caps["over_max"] > 0,
      "many functions: footer function_caps %r, want names cut and functions past the cap "
      "(%s events lost)" % (caps, footer.get("lost")))
check("Python function names were cut" in rerr, "many functions: no warning: %r" % rerr)
size = os.path.getsize(path)
if os.environ.get("GIL_SANITIZED") != "1":
    check(rss_kb < 100 * 1024 and size < 40 << 20, "many functions: recorder %d MB, file %d MB" % (
        rss_kb >> 10, size >> 20))
log("5. 40,000 functions of 4 KB names: %s; recorder peak %d MB, file %d MB" % (
    caps, rss_kb >> 10, size >> 20))
check_no_probes()
log("PASS")
