"""N ctypes calls in the main thread: each releases and retakes the GIL exactly once.

Usage: ctypes_calls.py [N] [--hold PATH]   (--hold keeps PATH open, e.g. a stand-in device)
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
held = open(sys.argv[3], "rb") if sys.argv[2:3] == ["--hold"] else None
tid = libc.syscall(SYS_gettid)
getppid = libc.getppid  # resolved now: attribute lookup is not a call
sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
for _ in range(n):
    getppid()
sys.stdout.write("done %d %d\n" % (tid, n))
sys.stdout.flush()
sys.stdin.read()
