#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Output directories another user prepared (doc/guarantees.md). The attacker (nobody)
prepares each directory; root records a real Python into it. Each must be refused with one line
before anything is written, and no file outside the output directory may appear or change:

1. a symbolic link as a middle component of --output-dir (and of SYSTRACE_DUMP_PATH), pointing
   into a directory of root's: followed, root would create directories and files there;
2. an output directory owned by another user: it could read or pre-empt the recordings;
3. a sticky world-writable directory with 1,000 names pre-created: they stop the recording of
   that pid (GIL_<pid>_rank_0_1.json ... _999.json)."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

NOBODY = NOBODY_UID
require_kernel()
label, exe, ver = pythons(include_system=False)[-1]
w = Workload(exe, "busy_calls.py")
w.go()
work = tempfile.mkdtemp(prefix="outdir-")
os.chmod(work, 0o755)
victim = tempfile.mkdtemp(prefix="victim-", dir=work)  # root's, where nothing may appear
attacker = tempfile.mkdtemp(prefix="attacker-", dir=work)
os.chown(attacker, NOBODY, NOBODY)


def as_nobody(*argv):
    subprocess.run(AS_NOBODY + list(argv), check=True)


def snapshot():
    out = {}
    for top in (victim, attacker):
        for d, dirs, files in os.walk(top):
            for n in dirs + files:
                p = os.path.join(d, n)
                st = os.lstat(p)
                out[p] = (st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns)
    return out


def refused(what, want, outdir=None, env=None):
    before = snapshot()
    args = [GIL_RECORD, "--duration", "1", "--pid", str(w.pid)]
    if outdir:
        args += ["--output-dir", outdir]
    p = subprocess.run(args, capture_output=True, text=True, timeout=HANG_S,
                       env=dict(os.environ, **(env or {})))
    check(p.returncode == 1 and p.stderr.count("\n") == 1 and want in p.stderr,
          "%s: want exit 1 and one line with %r, got %d: %r" % (what, want, p.returncode, p.stderr))
    after = snapshot()
    check(before == after, "%s: files changed: %s" % (what, sorted(
        set(after.items()) ^ set(before.items()))))
    check_no_probes()
    log("%s: %s" % (what, p.stderr.strip()))


# 1. a link in the middle of the path, in the attacker's directory
as_nobody("ln", "-s", victim, os.path.join(attacker, "link"))
refused("link in --output-dir", "%s/link is a symbolic link: refusing it" % attacker,
        outdir=os.path.join(attacker, "link", "GIL"))
refused("link in SYSTRACE_DUMP_PATH", "%s/link is a symbolic link: refusing it" % attacker,
        env={"SYSTRACE_DUMP_PATH": os.path.join(attacker, "link", "dump")})

# 2. a directory of the attacker's
as_nobody("mkdir", os.path.join(attacker, "mine"))
refused("another user's directory", "belongs to user %d: refusing it" % NOBODY,
        outdir=os.path.join(attacker, "mine"))

# 3. sticky and writable by everyone, names pre-created by the attacker
sticky = os.path.join(work, "sticky")
os.mkdir(sticky)
os.chmod(sticky, 0o1777)
as_nobody("sh", "-c", 'cd "$1" && for i in $(seq 1 999); do : > GIL_%d_rank_0_$i.json; done; '
          ': > GIL_%d_rank_0.json' % (w.pid, w.pid), "sh", sticky)
refused("sticky world-writable directory", "is writable by every user: refusing it",
        outdir=sticky)

# 4. writable by a group the attacker is in: refused; the same directory root's and sticky (as
# /tmp's kind) is taken
grouped = os.path.join(work, "grouped")
os.mkdir(grouped)
os.chown(grouped, 0, NOBODY)
os.chmod(grouped, 0o770)
refused("group-writable directory", "is writable by group %d: refusing it" % NOBODY,
        outdir=grouped)
os.chmod(grouped, 0o1770)
p = subprocess.run([GIL_RECORD, "-q", "--duration", "0.2", "--pid", str(w.pid), "--output-dir",
                    grouped], capture_output=True, text=True, timeout=HANG_S)
check(p.returncode == 0 and os.listdir(grouped),
      "root's sticky group-writable directory: %d %r %s" % (p.returncode, p.stderr,
                                                             os.listdir(grouped)))
check_no_probes()
log("root's sticky group-writable directory: recorded %s" % os.listdir(grouped))

w.finish()
log("PASS")
