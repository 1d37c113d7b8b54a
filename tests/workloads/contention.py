"""Threads that only compute, contending for the GIL for a given time.

Usage: contention.py [THREADS] [SECONDS] [LEAST]. Prints 'ready <pid>', waits for a line,
runs, prints 'done <tid> <tid>...', waits for stdin to close, exits. Each thread spins SECONDS,
and all go on until each found LEAST times that another had run since it last looked: it had
handed the GIL over and got it back, two hand-offs a recording must show, however slowly
it ran.
"""
import ctypes
import platform
import os
import sys
import threading
import time

SYS_gettid = {"x86_64": 186, "aarch64": 178}[platform.machine()]

libc = ctypes.CDLL(None)
nthreads = int(sys.argv[1]) if len(sys.argv) > 1 else 4
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
least = int(sys.argv[3]) if len(sys.argv) > 3 else 0
tids = []
start = threading.Event()
last = [None]  # the thread that last ran here
short = [nthreads if least else 0]  # threads that saw fewer than least others run


def spin():
    me = libc.syscall(SYS_gettid)
    tids.append(me)
    start.wait()
    end = time.time() + seconds
    last[0] = me
    seen = 0
    x = 0
    while time.time() < end or short[0]:
        if last[0] != me:
            last[0] = me
            seen += 1
            if seen == least:
                short[0] -= 1
        for i in range(1000):
            x += i


threads = [threading.Thread(target=spin, name="spinner-%d" % i) for i in range(nthreads)]
for t in threads:
    t.start()
while len(tids) < nthreads:
    time.sleep(0.01)
sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
start.set()
for t in threads:
    t.join()
sys.stdout.write("done %s\n" % " ".join(str(t) for t in tids))
sys.stdout.flush()
sys.stdin.read()
