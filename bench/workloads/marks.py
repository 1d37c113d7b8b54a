"""Step-mark workload: one thread calling libgiltrace's gil_mark_step in a loop.

Usage: marks.py LIB SECONDS
Through ctypes.PyDLL, which keeps the GIL (no GIL event), as gil_trace_record.mark_step() does.
Prints 'ready <pid>', waits for a line, calls for SECONDS, prints 'done <calls> <elapsed_s>',
exits when stdin closes.
"""
import ctypes
import os
import sys
import time

mark = ctypes.PyDLL(sys.argv[1]).gil_mark_step
mark.argtypes = [ctypes.c_longlong]
seconds = float(sys.argv[2])
print("ready %d" % os.getpid(), flush=True)
sys.stdin.readline()
n, t0 = 0, time.perf_counter()
end = t0 + seconds
while time.perf_counter() < end:
    for i in range(100):
        mark(i)
    n += 100
print("done %d %f" % (n, time.perf_counter() - t0), flush=True)
sys.stdin.read()
