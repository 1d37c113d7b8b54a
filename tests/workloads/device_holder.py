"""Holds a file open (a stand-in accelerator device node, or nothing), then behaves like
ctypes_calls.py: 'ready <pid>', a line, N ctypes calls, 'done <tid> <n>', stdin closed, exit.
Usage: device_holder.py DEVICE|- N"""
import ctypes
import os
import sys

dev = sys.argv[1]
f = open(dev, "rb") if dev != "-" else None
libc = ctypes.CDLL(None)
n = int(sys.argv[2])
tid = libc.syscall(186)
call = libc.getppid
sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
for _ in range(n):
    call()
sys.stdout.write("done %d %d\n" % (tid, n))
sys.stdout.flush()
sys.stdin.read()
