"""N ctypes calls in the main thread: each releases and retakes the GIL exactly once.

Usage: ctypes_calls.py [N] [--hold PATH] [--mark LIB]
  --hold keeps PATH open (e.g. a stand-in device); --mark calls LIB's gil_mark_step(k) after
  every 100th call (k = 0, 1, ...: libgiltrace's step marks), through ctypes.PyDLL, which keeps
  the GIL: no GIL event of its own.
Protocol: prints 'ready <pid>', waits for a line, makes the calls, prints 'done <tid> <n>',
waits for stdin to close, exits. Runs on Python 3.6 and later.
"""
import ctypes
import platform
import os
import sys

SYS_gettid = {"x86_64": 186, "aarch64": 178}[platform.machine()]

libc = ctypes.CDLL(None, use_errno=True)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
opts = dict(zip(sys.argv[2::2], sys.argv[3::2]))
held = open(opts["--hold"], "rb") if "--hold" in opts else None
mark = ctypes.PyDLL(opts["--mark"]).gil_mark_step if "--mark" in opts else None
if mark:
    mark.argtypes = [ctypes.c_longlong]
tid = libc.syscall(SYS_gettid)
getppid = libc.getppid  # resolved now: attribute lookup is not a call
sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
for i in range(n):
    getppid()
    if mark and i % 100 == 99:
        mark(i // 100)
sys.stdout.write("done %d %d\n" % (tid, n))
sys.stdout.flush()
sys.stdin.read()
