"""Threads spinning in subinterpreters of their own GIL, and in the main interpreter.

Usage: subinterp.py SUBS PER MAIN SECONDS [legacy]. Creates SUBS subinterpreters (3.12's
_xxsubinterpreters, 3.13's _interpreters, 3.14's concurrent.interpreters' module), each with a
GIL of its own, or sharing the main one with "legacy". Prints 'ready <pid>', waits for a line,
then runs PER threads spinning SECONDS in each subinterpreter and MAIN in the main interpreter,
prints one line per interpreter, 'interp <id> <tid> <tid>...' (main is 0), one per thread of
the main interpreter that ran a subinterpreter's code, 'enter <id> <tid>', then 'done', waits
for stdin to close and exits at once.
"""
import os
import sys
import threading
import time

try:
    import _interpreters as interpreters  # 3.13+
except ImportError:
    import _xxsubinterpreters as interpreters  # 3.12

subs, per, nmain = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
seconds = float(sys.argv[4])
legacy = len(sys.argv) > 5 and sys.argv[5] == "legacy"


def create():
    if interpreters.__name__ == "_interpreters":
        return interpreters.create("legacy" if legacy else "isolated")
    return interpreters.create(isolated=not legacy)


def run(iid, code):
    if hasattr(interpreters, "run_string"):
        interpreters.run_string(iid, code)
    else:
        interpreters.exec(iid, code)


ids = [create() for _ in range(subs)]
rfd, wfd = os.pipe()
go = threading.Event()

# what each subinterpreter runs: PER threads that say their tid on the pipe, then spin
SUB = """
import os, threading, time
def spin():
    os.write(%d, b"%%d %%d\\n" %% (%d, threading.get_native_id()))
    end = time.time() + %f
    x = 0
    while time.time() < end:
        for i in range(1000):
            x += i
ts = [threading.Thread(target=spin, name="sub%d-%%d" %% i) for i in range(%d)]
for t in ts:
    t.start()
for t in ts:
    t.join()
"""


def in_sub(iid):
    os.write(wfd, b"e %d %d\n" % (int(iid), threading.get_native_id()))
    go.wait()
    run(iid, SUB % (wfd, int(iid), seconds, int(iid), per))


def spin():
    os.write(wfd, b"0 %d\n" % threading.get_native_id())
    go.wait()
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        for i in range(1000):
            x += i


threads = [threading.Thread(target=in_sub, args=(i,), name="enter%d" % int(i)) for i in ids]
threads += [threading.Thread(target=spin, name="main-%d" % i) for i in range(nmain)]
for t in threads:
    t.start()
sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
go.set()
for t in threads:
    t.join()
os.close(wfd)
tids, enters = {}, {}
with os.fdopen(rfd) as f:
    for line in f:
        if line.startswith("e "):
            _, iid, tid = line.split()
            enters[int(iid)] = int(tid)
            continue
        iid, tid = line.split()
        tids.setdefault(int(iid), []).append(int(tid))
for iid in sorted(tids):
    sys.stdout.write("interp %d %s\n" % (iid, " ".join(str(t) for t in tids[iid])))
for iid in sorted(enters):
    sys.stdout.write("enter %d %d\n" % (iid, enters[iid]))
sys.stdout.write("done\n")
sys.stdout.flush()
sys.stdin.read()
# no finalization: 3.12 hangs destroying an interpreter whose threads have ended
os._exit(0)
