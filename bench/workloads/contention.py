"""CPU-bound contention: threads that only compute, handing the GIL over at each switch interval.

Usage: contention.py THREADS SECONDS [SWITCH_INTERVAL_S]
Threads are created before 'ready <pid>'; after a line on stdin they run for SECONDS, counting
chunks of 1000 loop iterations; prints 'done <chunks> <elapsed_s>', exits when stdin closes.
"""
import os
import sys
import threading
import time

nthreads = int(sys.argv[1]) if len(sys.argv) > 1 else 4
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
if len(sys.argv) > 3:
    sys.setswitchinterval(float(sys.argv[3]))
counts = [0] * nthreads
go = threading.Event()
stop = threading.Event()


def spin(i):
    go.wait()
    n = 0
    x = 0
    is_set = stop.is_set
    while not is_set():
        for j in range(1000):
            x += j
        n += 1
    counts[i] = n


threads = [threading.Thread(target=spin, args=(i,), name="spin-%d" % i) for i in range(nthreads)]
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
