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


def closing_rows(err):
    """The thread rows of the closing summary (tid, wait %), and the '... and N more' count."""
    rows, more = [], 0
    for line in err.splitlines():
        m = re.match(r"^\s+(\d+) \S.*?\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+)%", line)
        if m:
            rows.append((int(m.group(1)), float(m.group(2))))
        m = re.match(r"^  \.\.\. and (\d+) more threads, waiting less", line)
        if m:
            more = int(m.group(1))
    return rows, more


# The closing summary puts the longest waiting thread first and shows 10 rows (all with -v):
# 14 spinners and the main thread.
for extra in ((), ("-v",)):
    cw = Workload(exe, "contention.py", 14, 1.0)
    rec = Recorder("--pid", cw.pid, *extra)
    cw.go()
    cw.wait_done()
    cw.finish()
    check(rec.wait() == 0, "gil-record %s: %s" % (extra, rec.err))
    rows, more = closing_rows(rec.err)
    footer = read_recording(rec.files()[0])[2]
    seen = len(footer["threads"])
    check(seen >= 14, "only %d threads recorded" % seen)
    if extra:
        check(len(rows) == seen and more == 0, "-v: %d rows of %d threads, %d more: %s"
              % (len(rows), seen, more, rec.err))
    else:
        check(len(rows) == 10 and more == seen - 10, "%d rows and %d more of %d threads: %s"
              % (len(rows), more, seen, rec.err))
    waits = [r[1] for r in rows]
    check(waits == sorted(waits, reverse=True), "rows not longest waiting first: %s" % rows)
check_no_probes()
log("PASS: %d updates" % len(updates))
