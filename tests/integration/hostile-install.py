#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Install and environment (doc/guarantees.md):

1. `make install DESTDIR=D` writes only below D/PREFIX: no giltrace.pth in the system's or
   pyenv's site-packages outside the prefix (a build installed under /tmp made root's
   `import gil_trace_record` load from /tmp).
2. The installed Python module takes no path from the environment: a library a user names in
   GILTRACE_TEST_LIBDIR (or the programs in GILTRACE_TEST_BINDIR) is never loaded or run by
   root, under sudo or not. The user's library here writes a marker from its constructor."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

check(os.geteuid() == 0, "run as root")
# A make of our own, not part of the make check running this test (make -j check passes its
# jobserver and directory messages down through MAKEFLAGS).
MAKE_ENV = {k: v for k, v in os.environ.items()
            if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
prefix = subprocess.run(["make", "-s", "--no-print-directory", "-C", TOP_BUILDDIR, "print-prefix"],
                        capture_output=True, text=True, env=MAKE_ENV).stdout.strip()
check(prefix.startswith("/"), "no prefix from make print-prefix: %r" % prefix)
dest = tempfile.mkdtemp(prefix="install-")
p = subprocess.run(["make", "-s", "-C", TOP_BUILDDIR, "install", "DESTDIR=" + dest],
                   capture_output=True, text=True, timeout=600, env=MAKE_ENV)
check(p.returncode == 0, "make install failed: %s" % p.stderr[-2000:])
outside = []
for d, dirs, files in os.walk(dest):
    for n in files:
        path = os.path.join(d, n)[len(dest):]
        if not path.startswith(prefix.rstrip("/") + "/"):
            outside.append(path)
check(not outside, "make install wrote outside the prefix %s: %s" % (prefix, outside))
pth = [os.path.join(d, n)[len(dest):] for d, _, fs in os.walk(dest) for n in fs if n.endswith(".pth")]
log("1. make install: every file under %s (%d .pth: %s)" % (prefix, len(pth), pth))

# 2. a user's library named in the environment
evil = tempfile.mkdtemp(prefix="evil-")
os.chmod(evil, 0o755)
marker = os.path.join(evil, "ran-as-root")
src = os.path.join(evil, "evil.c")
with open(src, "w") as f:
    f.write('#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void '
            'evil(void) { close(open("%s", O_CREAT | O_WRONLY, 0644)); }\n' % marker)
for name in ("libgiltrace.so.0", "libgiltrace.so"):
    subprocess.run(["cc", "-shared", "-fPIC", "-o", os.path.join(evil, name), src], check=True)
with open(os.path.join(evil, "gil-record"), "w") as f:
    f.write("#!/bin/sh\n: > %s\n" % marker)
os.chmod(os.path.join(evil, "gil-record"), 0o755)
pydir = os.path.join(dest + prefix.rstrip("/"), "share", "giltrace", "python")
check(os.path.exists(os.path.join(pydir, "gil_trace_record.py")), "no module in " + pydir)
# a pid that names no process: the module loads its library and starts, and the recording
# is refused at once (no probe is made, whether or not giltrace is installed on the machine)
dead = 4000000
while os.path.exists("/proc/%d" % dead):
    dead += 1
code = ("import gil_trace_record as g\n"
        "try:\n    g.gil_trace_record_start(pid_list=[%d], output_dir=%r)\n"
        "    g.gil_trace_record_stop()\nexcept Exception as e:\n"
        "    print('refused:', e)\n" % (dead, tempfile.mkdtemp(prefix="out-")))
env = dict(os.environ, PYTHONPATH=pydir, GILTRACE_TEST_LIBDIR=evil, GILTRACE_TEST_BINDIR=evil,
           SUDO_UID="65534", SUDO_USER="nobody")
p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                   timeout=60)
check(not os.path.exists(marker), "root loaded the library named in GILTRACE_TEST_LIBDIR "
      "(output %r %r)" % (p.stdout, p.stderr))
rec_py = os.path.join(pydir, "gil_trace_record.py")
subprocess.run([sys.executable, rec_py, "--help"], env=env, capture_output=True, timeout=60)
check(not os.path.exists(marker), "root ran the gil-record named in GILTRACE_TEST_BINDIR")
log("2. the installed module ignored GILTRACE_TEST_LIBDIR/BINDIR (%s)" %
    (p.stdout.strip() or p.stderr.strip().splitlines()[-1:] or "started"))
log("PASS")
