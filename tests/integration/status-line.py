"""On a terminal gil-record refreshes one status line (elapsed, processes, events/s, lost) at
most twice a second; with -q, or when stderr is not a terminal, there is none. How many lines
come is the recorder's speed: the test waits for them, and bounds them by the recording's span."""
import glob
import os
import pty
import re
import select
import signal
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


STATUS = re.compile(r"\r\x1b\[Kgil-record: ([\d.]+)s(?: of (\d+)s)?, 1 process\(es\), (\d+) events/s, "
                    r"(\d+) lost( \(Ctrl\+C to stop\))?")


def on_pty(*args, until=None):
    """gil-record on a pty: (exit status, all it printed, its output directory). With @until
    (a function of what was printed so far), it is sent SIGINT once that returns true. Waits
    for output with a timeout that only catches a hang."""
    master, slave = pty.openpty()
    outdir = tempfile.mkdtemp()
    p = subprocess.Popen([GIL_RECORD, "--output-dir", outdir] + list(args),
                         stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    out, stopped = b"", False
    while True:
        r, _, _ = select.select([master], [], [], 120)
        if not r:
            p.kill()
            fail("gil-record %s printed nothing for 120 s: %r" % (args, out[-500:]))
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if until and not stopped and until(out.decode(errors="replace")):
            p.send_signal(signal.SIGINT)
            stopped = True
    p.wait(120)
    os.close(master)
    return p.returncode, out.decode(errors="replace"), outdir


def spaced(updates, what):
    """At most twice a second: each refresh at least 0.45 s (by its own clock) after the last."""
    times = [float(u[0]) for u in updates]
    check(all(b - a >= 0.45 for a, b in zip(times, times[1:])),
          "%s: refreshed more than twice a second: %s" % (what, times))


try:
    # Until Ctrl+C: the line refreshes while recording. Stopped once it has shown four updates
    # and events, however long that takes on this machine.
    def enough(text):
        u = STATUS.findall(text)
        return len(u) >= 4 and any(int(x[2]) > 0 for x in u)
    rc, out, _ = on_pty("--pid", str(w.pid), until=enough)
    check(rc == 0, "gil-record on a pty: %d %r" % (rc, out[-500:]))
    updates = STATUS.findall(out)
    check(len(updates) >= 4 and all(u[1] == "" and u[4] for u in updates),
          "status lines until Ctrl+C: %r" % out[:500])
    check(any(int(u[2]) > 0 for u in updates), "the status line never showed events: %s" % updates)
    spaced(updates, "until Ctrl+C")

    # --duration 2: the line says "of 2s", and refreshes at most twice a second of the
    # recording's own span (from the file), with at least one refresh in those two seconds.
    rc, out, outdir = on_pty("--pid", str(w.pid), "--duration", "2")
    check(rc == 0, "gil-record --duration 2 on a pty: %d %r" % (rc, out[-500:]))
    d_updates = STATUS.findall(out)
    h, records, footer = read_recording(glob.glob(os.path.join(outdir, "GIL_*.json"))[0])
    span = (footer["end_ns"] - h["start_ns"]) / 1e9
    check(all(u[1] == "2" and not u[4] for u in d_updates), "--duration 2: %r" % out[:500])
    check(1 <= len(d_updates) <= 2 * span + 1, "--duration 2: %d status updates in a %.2f s "
          "recording (want 1 to %d)" % (len(d_updates), span, 2 * span + 1))
    spaced(d_updates, "--duration 2")

    rc, out, _ = on_pty("-q", "--pid", str(w.pid), "--duration", "1")
    check(rc == 0 and "events/s" not in out and out.strip() == "", "-q printed %r" % out)
    p = subprocess.run([GIL_RECORD, "--output-dir", tempfile.mkdtemp(), "--pid", str(w.pid),
                        "--duration", "1"], capture_output=True, text=True, timeout=HANG_S)
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
log("PASS: %d updates until Ctrl+C, %d in a %.2f s recording" % (len(updates), len(d_updates), span))
