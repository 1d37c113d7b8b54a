"""Threads that contend for the GIL, then all sit idle until told to exit: their counters stand
still while a scraper reads them (tests/integration/metrics.py).

Usage: idle_after.py SPINNERS SECONDS CALLS
Protocol: prints 'ready <pid>', waits for a line; SPINNERS threads spin SECONDS (forced
switches between them) while one more makes CALLS ctypes calls (voluntary releases); then
every one of them blocks (its GIL released). Prints 'done <CLOCK_MONOTONIC_RAW ns> <tid>...'
once they all are, waits for a line, lets them go, prints 'bye', waits for stdin to close.
Runs on Python 3.7 and later.
"""
import ctypes
import os
import platform
import sys
import threading
import time

SYS_gettid = {"x86_64": 186, "aarch64": 178}[platform.machine()]

libc = ctypes.CDLL(None)
spinners, seconds, calls = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
go, leave = threading.Event(), threading.Event()
tids, parked = [], []


def park():
    parked.append(1)
    leave.wait()


def spin():
    tids.append(libc.syscall(SYS_gettid))
    go.wait()
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    park()


def call():
    tids.append(libc.syscall(SYS_gettid))
    go.wait()
    getppid = libc.getppid
    for _ in range(calls):
        getppid()
    park()


threads = [threading.Thread(target=spin) for _ in range(spinners)] + [threading.Thread(target=call)]
for t in threads:
    t.start()
sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
go.set()
while len(parked) < len(threads):
    time.sleep(0.05)
time.sleep(0.3)  # each has released the GIL inside its wait by now
idle = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
sys.stdout.write("done %d %s\n" % (idle, " ".join(str(t) for t in tids)))
sys.stdout.flush()
sys.stdin.readline()
leave.set()
for t in threads:
    t.join()
sys.stdout.write("bye\n")
sys.stdout.flush()
sys.stdin.read()
