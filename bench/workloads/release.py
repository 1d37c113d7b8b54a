"""GIL-release-heavy workload: threads making tiny calls that release and retake the GIL.

Usage: release.py THREADS SECONDS [read|ctypes]
Every thread is created before 'ready <pid>' is printed (so `perf -p` and gil-record see them
all), waits for a line on stdin, then loops: os.read(fd, 1) on /dev/zero, or a ctypes call to
getppid(); each call drops and retakes the GIL once. After SECONDS prints
'done <calls> <elapsed_s>' and exits when stdin closes. Runs on CPython 3.6 and later.
"""
import os
import sys
import threading
import time

nthreads = int(sys.argv[1]) if len(sys.argv) > 1 else 4
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
kind = sys.argv[3] if len(sys.argv) > 3 else "read"
counts = [0] * nthreads
go = threading.Event()
stop = threading.Event()

if kind == "ctypes":
    import ctypes
    call = ctypes.CDLL(None).getppid
    arg = ()
else:
    fd = os.open("/dev/zero", os.O_RDONLY)
    call = os.read
    arg = (fd, 1)


def work(i):
    go.wait()
    n = 0
    f, a, is_set = call, arg, stop.is_set
    while not is_set():
        for _ in range(100):
            f(*a)
        n += 100
    counts[i] = n


threads = [threading.Thread(target=work, args=(i,), name="release-%d" % i)
           for i in range(nthreads)]
for t in threads:
    t.start()
sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
t0 = time.perf_counter()
go.set()
time.sleep(seconds)
stop.set()
for t in threads:
    t.join()
elapsed = time.perf_counter() - t0
sys.stdout.write("done %d %.6f\n" % (sum(counts), elapsed))
sys.stdout.flush()
sys.stdin.read()
