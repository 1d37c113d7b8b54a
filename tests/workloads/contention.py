"""Threads that only compute, contending for the GIL for a given time.

Usage: contention.py [THREADS] [SECONDS]. Prints 'ready <pid>', waits for a line, runs,
prints 'done <tid> <tid>...', waits for stdin to close, exits.
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
tids = []
start = threading.Event()


def spin():
    tids.append(libc.syscall(SYS_gettid))
    start.wait()
    end = time.time() + seconds
    x = 0
    while time.time() < end:
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
