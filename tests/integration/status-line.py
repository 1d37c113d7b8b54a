"""On a terminal gil-record refreshes one status line (elapsed, processes, events/s, lost) at
most twice a second; with -q, or when stderr is not a terminal, there is none."""
import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

require_kernel()
label, exe, ver = pythons(include_system=False)[-1]
w = Workload(exe, "busy_calls.py")
w.go()


def on_pty(*args):
    master, slave = pty.openpty()
    p = subprocess.Popen([GIL_RECORD, "--output-dir", tempfile.mkdtemp()] + list(args),
                         stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], 10)
        if not r:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(30)
    os.close(master)
    return p.returncode, out.decode(errors="replace")


try:
    rc, out = on_pty("--pid", str(w.pid), "--duration", "3")
    check(rc == 0, "gil-record on a pty: %d %r" % (rc, out))
    updates = re.findall(r"\r\x1b\[Kgil-record: ([\d.]+)s of 3s, 1 process\(es\), (\d+) events/s, (\d+) lost", out)
    check(3 <= len(updates) <= 8, "%d status updates in 3 s (want about 6): %r" % (len(updates), out[:500]))
    check(any(int(u[1]) > 0 for u in updates), "the status line never showed events: %s" % updates)
    times = [float(u[0]) for u in updates]
    check(all(b - a >= 0.45 for a, b in zip(times, times[1:])), "refreshed more than twice a second: %s" % times)
    rc, out = on_pty("-q", "--pid", str(w.pid), "--duration", "1")
    check(rc == 0 and "events/s" not in out and out.strip() == "", "-q printed %r" % out)
    p = subprocess.run([GIL_RECORD, "--output-dir", tempfile.mkdtemp(), "--pid", str(w.pid),
                        "--duration", "1"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and "events/s" not in p.stderr and "\r" not in p.stderr,
          "status line on a pipe: %r" % p.stderr)
finally:
    w.finish()
check_no_probes()
log("PASS: %d updates" % len(updates))
