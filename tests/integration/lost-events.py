"""With deliberately tiny ring buffers the kernel drops events: gil-record counts every drop per
CPU, writes lost records and flags into the file, sums them in the footer, and warns on screen."""
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

require_kernel()
label, exe, ver = pythons(include_system=False)[-1]
w = [Workload(exe, "busy_calls.py") for _ in range(2)]
for x in w:
    x.go()
try:
    # Two pages per CPU hold ~100 events. The recorder is stopped while each workload makes
    # 1,000 calls (4,000 events): the rings overflow whatever the speed of either side.
    rec = Recorder("--pid", "%d,%d" % (w[0].pid, w[1].pid), "--mmap-pages", "2")
    rec.signal(signal.SIGSTOP)
    try:
        for x in w:
            x.calls_made(1000)
    finally:
        rec.signal(signal.SIGCONT)
    # The kernel writes its lost record once the drain makes room, ahead of the next events:
    # intervals after it are what carry the LOST flag, so let each workload make more calls
    # while the recorder runs (stopped at once, it could end before any came).
    for x in w:
        x.calls_made(100)
    rec.signal(signal.SIGINT)
    check(rec.wait() == 0, "gil-record failed: %s" % rec.err)
finally:
    for x in w:
        x.finish()
total = None
for path in rec.files():
    h, records, footer = read_recording(path)
    lost = [r["lost"] for r in records if isinstance(r, dict) and "lost" in r]
    check(lost, "%s: no lost records although the buffers were tiny" % path)
    check(sum(l["count"] for l in lost) == footer["lost"],
          "%s: lost records sum %d, footer says %d" % (path, sum(l["count"] for l in lost), footer["lost"]))
    check(sum(footer["lost_per_cpu"]) == footer["lost"], "per-CPU counts do not add up")
    flagged = [r for r in intervals(records) if r[4] & F_LOST]
    check(flagged, "%s: no interval flagged LOST" % path)
    total = footer["lost"] if total is None else total
    check(footer["lost"] == total, "files disagree on the total lost")
m = re.search(r"warning: the kernel lost (\d+) events", rec.err)
check(m and int(m.group(1)) == total, "no or wrong warning on screen: %r" % rec.err)
log("PASS: %d events lost, all accounted" % total)
check_no_probes()
