#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Root converts in a directory another user can write (doc/guarantees.md): the user (nobody)
plants links where gil-convert will write, to files of root's outside the directory. The trace
(the default name beside the input, and -o), --svg and --summary-json must never write through
such a link nor through a link in the output's directory path; each is refused with one line,
and no file outside the directory is created or changed. A link root made in its own directory
is still written through (tests/convert/cli-errors.py)."""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

from convlib import DATA, GIL_CONVERT, check, fail, log, skip, workdir

if os.geteuid() != 0:
    if os.environ.get("CI") == "true":
        fail("needs root (to act as root against another user's links)")
    skip("needs root")
NOBODY = 65534
w = workdir("hostile-links")
os.chmod(w, 0o755)
victims = tempfile.mkdtemp(prefix="victims-", dir=w)  # root's, outside the user's directory
user = os.path.join(w, "user")
os.mkdir(user)
os.chown(user, NOBODY, NOBODY)
rec = os.path.join(user, "GIL_3096504_rank_0.json")
shutil.copy(os.path.join(DATA, "real", "GIL_20459_rank_0.json"), rec)


def as_nobody(*argv):
    subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"] +
                   list(argv), check=True)


def state():
    out = {}
    for d, dirs, files in os.walk(victims):
        for n in files:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                out[p] = hashlib.sha256(f.read()).hexdigest()
    return out


for n in ("trace", "svg", "json", "out"):
    with open(os.path.join(victims, n), "w") as f:
        f.write("root's %s\n" % n)
as_nobody("ln", "-s", os.path.join(victims, "trace"), rec[:-5] + "_trace.json")
as_nobody("ln", "-s", os.path.join(victims, "svg"), os.path.join(user, "g.svg"))
as_nobody("ln", "-s", os.path.join(victims, "json"), os.path.join(user, "s.json"))
as_nobody("ln", "-s", os.path.join(victims, "new"), os.path.join(user, "dangling.json"))
as_nobody("ln", "-s", victims, os.path.join(user, "sub"))

cases = [
    ("the default trace beside the input", ["-i", rec], rec[:-5] + "_trace.json"),
    ("-o onto a link", ["-i", rec, "-o", os.path.join(user, "dangling.json")], "dangling.json"),
    ("--svg onto a link", ["-i", rec, "--svg", os.path.join(user, "g.svg")], "g.svg"),
    ("--summary-json onto a link", ["-i", rec, "--summary-json", os.path.join(user, "s.json")],
     "s.json"),
    ("-o through a linked directory", ["-i", rec, "-o", os.path.join(user, "sub", "t.json")],
     os.path.join(user, "sub")),
]
for what, args, named in cases:
    before = state()
    p = subprocess.run([GIL_CONVERT, "-q"] + args, capture_output=True, text=True, timeout=60)
    after = state()
    check(before == after, "%s: root's files changed or appeared: %s" % (
        what, sorted(set(after.items()) ^ set(before.items()))))
    check(p.returncode != 0 and p.stderr.count("\n") == 1 and "symbolic link" in p.stderr and
          named in p.stderr, "%s: want one line refusing the link %s, got %d: %r" % (
              what, named, p.returncode, p.stderr))
    log("%s: %s" % (what, p.stderr.strip()))

# A named pipe of nobody's at the default trace name, with nobody reading it: root's trace is
# not handed to that reader, and the conversion says so at once (the timeout catches a hang).
os.unlink(rec[:-5] + "_trace.json")
as_nobody("mkfifo", rec[:-5] + "_trace.json")
reader = subprocess.Popen(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                           "--clear-groups", "sh", "-c", 'exec cat "$0" >/dev/null',
                           rec[:-5] + "_trace.json"])
try:
    # a writer sees the reader once cat waits in its open of the pipe (the kernel's
    # wait_for_partner), or has it open
    def reading():
        try:
            with open("/proc/%d/wchan" % reader.pid) as f:
                if f.read() == "wait_for_partner":
                    return True
            return any(os.readlink("/proc/%d/fd/%s" % (reader.pid, fd)) ==
                       rec[:-5] + "_trace.json" for fd in os.listdir("/proc/%d/fd" % reader.pid))
        except OSError:
            return False
    for _ in range(6000):
        if reading() or reader.poll() is not None:
            break
        time.sleep(0.01)
    p = subprocess.run([GIL_CONVERT, "-q", "-i", rec], capture_output=True, text=True, timeout=60)
    check(p.returncode == 1 and p.stderr.count("\n") == 1 and "another user made" in p.stderr,
          "a pipe of nobody's at the output: want one line refusing it, got %d: %r"
          % (p.returncode, p.stderr))
    log("a named pipe of nobody's, read by nobody: %s" % p.stderr.strip())
finally:
    reader.kill()
    reader.wait()
log("PASS")
