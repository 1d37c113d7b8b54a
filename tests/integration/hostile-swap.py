#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A user swaps the file under the recorder (doc/guarantees.md, "files a target controls").

An unprivileged process maps a crafted ELF whose take_gil/drop_gil sit at offsets inside a
victim's code, waits for root's first open of it, renames a link to the victim (a setuid-root
copy of sleep) over its path and execs the victim. A recorder that resolves the path again
after its check (to read symbols, or in the uprobe it creates) writes int3 bytes into the
victim. The victim's code in memory must stay byte for byte the file's, in --pid and in
all-process mode."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

HERE = os.path.join(TOP_SRCDIR, "tests", "hostile")
NOBODY = NOBODY_UID

require_kernel()
check(shutil.which("cc"), "no C compiler to build the attacker")
work = tempfile.mkdtemp(prefix="swap-")
os.chmod(work, 0o755)
attacker = os.path.join(work, "swap_attacker")
subprocess.run(["cc", "-O1", "-o", attacker, os.path.join(HERE, "swap_attacker.c")], check=True)
crafted_so = os.path.join(work, "crafted.so")
subprocess.run(["cc", "-shared", "-nostdlib", "-o", crafted_so, os.path.join(HERE, "crafted.s")],
               check=True)


def victim_text(pid, exe):
    """(file bytes, memory bytes) of the victim's executable mapping of @exe."""
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[1].startswith("r-x") and parts[5] == exe:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                off = int(parts[2], 16)
                break
        else:
            return None, None
    with open("/proc/%d/mem" % pid, "rb", buffering=0) as m:
        m.seek(lo)
        mem = m.read(hi - lo)
    with open(exe, "rb") as f:
        f.seek(off)
        disk = f.read(hi - lo)
    return disk, mem[:len(disk)]


def attack(mode):
    home = tempfile.mkdtemp(prefix="home-", dir=work)
    os.chown(home, NOBODY, NOBODY)
    os.chmod(home, 0o755)
    victim = os.path.join(home, "victim")
    shutil.copy("/usr/bin/sleep", victim)
    os.chmod(victim, 0o4755)  # setuid root: what a user must not get patched
    crafted = os.path.join(home, "libpython3.99.so")
    shutil.copy(crafted_so, crafted)
    os.chown(crafted, NOBODY, NOBODY)
    link = os.path.join(home, "link")
    os.symlink(victim, link)
    os.lchown(link, NOBODY, NOBODY)
    p = subprocess.Popen(AS_NOBODY + [attacker, crafted, link, victim],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    check(line.startswith("ready "), "attacker did not start: %r" % line)
    pid = int(line.split()[1])
    out = tempfile.mkdtemp(prefix="out-", dir=work)
    # the test ends the recording once it looked (the duration only bounds a hang)
    args = [GIL_RECORD, "--output-dir", out, "--duration", "120"]
    args += ["--pid", str(pid)] if mode == "pid" else []
    errfile = tempfile.NamedTemporaryFile(prefix="rec-err-", dir=work, delete=False)
    rec = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=errfile, text=True)

    def execed():
        try:
            return os.readlink("/proc/%d/exe" % pid) == victim
        except OSError:
            return False
    # The attacker swaps at root's first open and execs the victim. A recorder that probed it
    # has done so when it says "recording" (its probes live, the victim mapped by then or later,
    # when the kernel puts them in at the mapping): look at the victim then, while the recorder
    # runs (its probes are removed when it ends), or once the recorder gave up.
    wait_for(lambda: execed() and (rec.poll() is not None or
                                   "recording" in open(errfile.name).read()),
             lambda: "%s: the attacker running the victim (%s) while gil-record records "
             "(exit %s): %r" % (mode, execed(), rec.poll(), open(errfile.name).read()))
    disk, mem = victim_text(pid, victim)
    if rec.poll() is None:
        rec.send_signal(signal.SIGINT)
    rec.wait(timeout=HANG_S)
    err = open(errfile.name).read()
    p.kill()
    p.wait()
    log("%s: gil-record exited %d: %s" % (mode, rec.returncode, err.strip()[-300:]))
    check(disk is not None, "%s: the attacker never ran the victim (exit %s)" % (mode, p.returncode))
    changed = [i for i in range(len(disk)) if disk[i] != mem[i]]
    check(not changed, "%s: the victim's code was changed at %d bytes, first at file offset "
          "+0x%x: %r -> %r" % (mode, len(changed), changed[0] if changed else 0,
                              disk[changed[0]:changed[0] + 4] if changed else b"",
                              mem[changed[0]:changed[0] + 4] if changed else b""))
    check_no_probes()
    log("%s: the victim's %d bytes of code are unchanged" % (mode, len(disk)))


for m in sys.argv[1:] or ["pid", "all"]:
    attack(m)
log("PASS")
