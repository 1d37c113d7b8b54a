#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Forked workers lose nothing (issue 21): a DataLoader forks its workers every epoch. 2 epochs
of 4 workers, each making N ctypes calls (one release each), in --pid, launch and all-process
mode: every worker has its own file with its N releases and no loss, said on screen too. The
same with workers started by exec (multiprocessing's spawn and forkserver, as Processes and as a
Pool of 4) in --pid and launch mode.

What lost them: the workers' perf contexts were clones of their parent's, and the kernel swaps
clones between tasks at a context switch; a worker that exited then closed events whose target
was a sibling still running, and the uprobe filter took the breakpoints out of that sibling's
memory (gil_rings_guard in src/record/ring.c). A worker's own threads did the same: a torch
DataLoader worker starts a thread that ends at once (here --thread), and 2 to 4 of 8 workers
kept only their first 7 releases. Linux 6.12 lets the guard keep every descendant's context
from being swapped; older kernels can still lose a threaded worker, and then each such exit is
counted (footer unguarded_exits) and said on screen. Workers started by a shell that runs no
Python (--start shell) are followed too. With a real torch DataLoader where python3-torch is
installed."""
import os
import re
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

N, EPOCHS, WORKERS = 1000, 2, 4
require_kernel()
label, exe, ver = pythons(include_system=False)[-1]


def workers_of(done):
    """'done 12:1000 13:1000 ...' -> {pid: calls}"""
    return {int(p): int(c) for p, c in (w.split(":") for w in done)}


EXITED = "process exited before its code object was read"


def in_calls(records, pid, err=""):
    """The releases of @pid's main thread made in the workload's calls(). A worker lives 40 ms:
    when it exited before gil-record read its code objects (the first worker of an epoch, now
    and then, on a fast machine; the same before this test's last change), its releases carry
    that reason instead of a name, and gil-record said so on screen: those count, as calls()
    is where it spends its life (its count is still checked, within the slack)."""
    fns = {r["fn"]["id"]: r["fn"] for r in records if isinstance(r, dict) and "fn" in r}
    said = "their process exited before its code objects were read" in err

    def mine(fn):
        return fn.get("name") == "calls" or (said and fn.get("unreadable") == EXITED)
    return [iv for iv in intervals(records, pid, 2) if len(iv) > 5 and mine(fns.get(iv[5], {}))]


def no_swap_guard():
    """Linux 6.12+: an inherited event sampling PERF_SAMPLE_READ keeps contexts unswapped."""
    major, minor = (int(x) for x in re.match(r"(\d+)\.(\d+)", os.uname().release).groups())
    return (major, minor) >= (6, 12)


def check_workers(mode, workers, outdir, err, execd=False, threaded=False, only_calls=False,
                  pool=False):
    """Every worker recorded with its N calls' releases: all its releases when it was forked,
    those made in calls() when it was exec'd (a new interpreter's start releases too, the same
    number in each). @threaded: each worker's thread exited; before Linux 6.12 a worker may then
    be short, but never silently. @only_calls: count those made in calls() (a torch worker
    releases the GIL in torch's own code too, as often in each). @pool: a Pool's workers, each
    with the calls of the tasks it took."""
    if pool:
        check(sum(workers.values()) == EPOCHS * WORKERS * N and len(workers) <= EPOCHS * WORKERS,
              "%s: workers reported %s" % (mode, workers))
    else:
        check(len(workers) == EPOCHS * WORKERS, "%s: %d workers reported" % (mode, len(workers)))
    counts = {}
    for pid, calls in sorted(workers.items()):
        files = [f for f in os.listdir(outdir) if f.startswith("GIL_%d_rank_" % pid)]
        check(files, "%s: worker %d has no file; files %s\n%s"
              % (mode, pid, sorted(os.listdir(outdir)), err[-600:]))
        header, records, footer = read_recording(os.path.join(outdir, files[0]))
        check(footer is not None, "%s: worker %d's file has no footer" % (mode, pid))
        check(footer["lost"] == 0, "%s: worker %d lost %d events" % (mode, pid, footer["lost"]))
        counts[pid] = len(in_calls(records, pid, err) if execd or only_calls
                          else intervals(records, pid, 2))
        if (execd or only_calls) and len(in_calls(records, pid)) != counts[pid]:
            log("%s: worker %d exited before its code objects were read: %d releases without "
                "a name, counted as its calls'" % (mode, pid, counts[pid] - len(in_calls(records,
                                                                                     pid))))
        if threaded and no_swap_guard():
            check("unguarded_exits" not in footer, "%s: worker %d: unguarded_exits %s on Linux "
                  "6.12+" % (mode, pid, footer.get("unguarded_exits")))
        elif threaded and counts[pid] < workers[pid]:
            check(footer.get("unguarded_exits", 0) > 0 and "unguarded_exits" in err,
                  "%s: worker %d short (%d of %d) and nothing says why: footer %s, screen %s"
                  % (mode, pid, counts[pid], workers[pid], footer, err[-600:]))
            counts[pid] = workers[pid]  # said: counted as whole
        if execd:
            check(len(intervals(records, pid, 2)) > counts[pid], "%s: worker %d: no releases "
                  "of its interpreter's start: not recorded from its start" % (mode, pid))
    # a forked worker's own releases besides its calls: its start, and with @threaded the
    # thread's start and join, which may wait more than once
    slack = 24 if threaded else 12
    short = {p: c for p, c in counts.items() if not workers[p] <= c <= workers[p] + slack}
    check(not short, "%s: workers with releases not N=%d..N+%d: %s (all: %s)"
          % (mode, N, slack, short, sorted(counts.values())))
    check(not re.search(r"lost [1-9]|[1-9][0-9]* lost", err), "%s: the screen says events were "
          "lost: %s" % (mode, err[-600:]))
    log("%s: %d workers, releases on their main threads %s" % (mode, len(counts),
                                                               sorted(set(counts.values()))))


def by_pid(python, *extra):
    w = Workload(python, "forked_workers.py", N, EPOCHS, WORKERS, *extra)
    rec = Recorder("--pid", w.pid)
    w.go()
    workers = workers_of(w.wait_done(HANG_S))
    w.finish()
    check(rec.wait() == 0, "--pid: gil-record failed: %s" % rec.err)
    return workers, rec.outdir, rec.err


def launched(python, *extra):
    outdir = tempfile.mkdtemp(prefix="gilforks-")
    report = os.path.join(outdir, "report.txt")
    p = subprocess.run([GIL_RECORD, "--output-dir", outdir, "--", python,
                        os.path.join(WORKLOADS, "forked_workers.py"), str(N), str(EPOCHS),
                        str(WORKERS), "--now", "--report", report] + list(extra),
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       timeout=HANG_S)
    check(p.returncode == 0, "launch: gil-record exited %d: %s" % (p.returncode, p.stderr))
    workers = workers_of(open(report).read().split()[1:])
    os.unlink(report)
    return workers, outdir, p.stderr


def all_processes(python, *extra):
    rec = Recorder("--duration", HANG_S)
    w = Workload(python, "forked_workers.py", N, EPOCHS, WORKERS, *extra)
    # all-process mode finds the parent within a second; its header says its probes are live
    rec.tail(w.pid).wait(lambda t: t.header, "the workload attached (its file's header)")
    w.go()
    workers = workers_of(w.wait_done(HANG_S))
    w.finish()
    for pid in workers:
        rec.tail(pid).wait(lambda t: t.footer, "worker %d's file closed" % pid)
    rec.signal(signal.SIGINT)
    check(rec.wait() == 0, "all: gil-record failed: %s" % rec.err)
    return workers, rec.outdir, rec.err


# Each worker starts a thread that ends at once, as a torch DataLoader worker does: before the
# guard reached a fork's threads, 9 of 32 workers ended with 8 to 57 of their 1009 releases.
for mode, run in (("--pid", by_pid), ("launch", launched), ("all-process", all_processes)):
    workers, outdir, err = run(exe, "--thread")
    check_workers("%s %s" % (label, mode), workers, outdir, err, threaded=True)
    check_no_probes()

# Workers started by exec (multiprocessing's spawn and forkserver): new interpreters of the same
# file, children (forkserver: grandchildren) of the recorded process. --pid and launch mode
# follow them (README, "Which processes are recorded"). And by a shell that runs no Python
# (--start shell): the shell is no target, its children are adopted by the recorded process.
# Before the guard reached every descendant, 3 of 8 of those ended with none of their calls.
for start in ("spawn", "forkserver", "shell"):
    for mode, run in (("--pid", by_pid), ("launch", launched)):
        if quick() and start == "shell" and mode == "launch":
            continue  # under ASan, each kind of path once: 900 s are not enough for all
        workers, outdir, err = run(exe, "--start", start)
        check_workers("%s %s %s" % (label, start, mode), workers, outdir, err, execd=True)
        check_no_probes()

# A Pool of 4 per epoch (spawn and forkserver) mapping 4 tasks of N calls: every worker that
# took tasks has their calls.
for start in ("spawn", "forkserver"):
    for mode, run in (("--pid", by_pid), ("launch", launched)):
        if quick() and (start, mode) != ("spawn", "--pid"):
            continue
        workers, outdir, err = run(exe, "--start", start, "--pool")
        check_workers("%s %s Pool %s" % (label, start, mode), workers, outdir, err, execd=True,
                      pool=True)
        check_no_probes()

torch_python = "/usr/bin/python3"
if subprocess.run([torch_python, "-c", "import torch.utils.data"],
                  capture_output=True).returncode == 0:
    for mode, run in (("--pid", by_pid), ("launch", launched), ("all-process", all_processes)):
        if quick() and mode != "--pid":
            continue
        workers, outdir, err = run(torch_python, "--torch")
        check_workers("torch DataLoader %s" % mode, workers, outdir, err, threaded=True,
                      only_calls=True)
        check_no_probes()
else:
    log("python3-torch is not installed: the DataLoader itself not run (its workers are "
        "forked the same way)")
log("PASS")
