#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""All-process mode records short-lived processes from their first GIL event (issue 21): 40
CPython processes, started 4 at a time, each sleeping 0.3 s and then making 2000 ctypes calls
(one release each), every one with its own file, its 2000 releases and those of its start-up
(the same in each, within 2%), and no loss. The probes'
events are opened for the interpreter's file (pid -1 on every CPU), so a process that starts
while recording needs no attach; letting one go closes nothing. Per process, attaching took
0.4 s and letting go 0.7 s, and 18 to 20 of the 40 were recorded."""
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

CALLS, AT_ONCE = 2000, 4
# under the sanitizers and valgrind the recorder is 10-50x slower: fewer waves, same check
WAVES = 3 if os.environ.get("GIL_SANITIZED") or os.environ.get("GIL_VALGRIND") else 10
SCRIPT = ("import ctypes, os, time\nl = ctypes.CDLL(None)\ntime.sleep(0.3)\n"
          "for _ in range(%d):\n    l.getppid()\nprint(os.getpid())\n" % CALLS)
require_kernel()
label, exe, ver = pythons(include_system=False)[-1]

# the recorder is live once a process of this interpreter is recorded: start one and wait
first = Workload(exe, "ctypes_calls.py", 10)
rec = Recorder("--duration", HANG_S)
rec.tail(first.pid).wait(lambda t: t.header, "the first process attached (its file's header)")
first.go()
first.wait_done()
first.finish()
pids = []
for wave in range(WAVES):
    ps = [subprocess.Popen([exe, "-c", SCRIPT], stdout=subprocess.PIPE, text=True)
          for _ in range(AT_ONCE)]
    for p in ps:
        out, _ = p.communicate(timeout=HANG_S)
        check(p.returncode == 0, "a short-lived process failed: %d" % p.returncode)
        pids.append(int(out.split()[0]))
# stopping drains every ring: a process whose events were recorded has its file then
rec.signal(signal.SIGINT)
check(rec.wait() == 0, "gil-record failed: %s" % rec.err)
counts = {}
for pid in pids:
    path = [f for f in rec.files() if os.path.basename(f).startswith("GIL_%d_rank_" % pid)]
    if not path:
        counts[pid] = 0
        continue
    header, records, footer = read_recording(path[0])
    check(footer["lost"] == 0, "process %d: %d events lost" % (pid, footer["lost"]))
    counts[pid] = len(intervals(records, pid, 2))
# each is recorded from its start: its imports' releases come before the calls, the same in each
short = {p: c for p, c in counts.items() if c < CALLS or c < 0.98 * max(counts.values())}
log("%d of %d processes have a file" % (sum(1 for c in counts.values() if c), len(pids)))
check(not short, "processes without their %d releases (or 2%% fewer than the others): %s"
      % (CALLS, short))
log("%s: %d of %d short-lived processes recorded, releases %d..%d"
    % (label, len(counts) - len(short), len(pids), min(counts.values()), max(counts.values())))
check_no_probes()
log("PASS")
