"""A thread holds the GIL for MS milliseconds in one C call that does not release it (usleep
through ctypes.PyDLL, which keeps the GIL), in hold_gil(), while another thread waits for it.

Usage: stall.py MS MARKDIR
Protocol: prints 'ready <pid>', waits for a line, runs the stall, prints
'done <staller tid> <spinner tid> <stall ns> <files in MARKDIR when the call returned>', waits
for stdin to close, exits. Runs on Python 3.6 and later.
"""
import ctypes
import os
import platform
import sys
import threading
import time

SYS_gettid = {"x86_64": 186, "aarch64": 178}[platform.machine()]

ms = int(sys.argv[1])
markdir = sys.argv[2]
libc = ctypes.CDLL(None)
held = ctypes.PyDLL(None)  # calls through it keep the GIL
usleep = held.usleep
usleep.argtypes = [ctypes.c_uint]
stop = False
tids = {}
result = {}


def spin():
    tids["spinner"] = libc.syscall(SYS_gettid)
    n = 0
    while not stop:
        n += 1


def hold_gil():
    t0 = time.monotonic()
    usleep(ms * 1000)
    result["ns"] = int((time.monotonic() - t0) * 1e9)
    result["marks"] = len(os.listdir(markdir))
    x = 0
    for i in range(1000):  # the release comes here: the spinner asked for the GIL long ago
        x += i
    return x


def staller():
    tids["staller"] = libc.syscall(SYS_gettid)
    time.sleep(0.3)  # the spinner is spinning: it waits as soon as the stall begins
    hold_gil()


sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
a = threading.Thread(target=spin, name="spinner")
b = threading.Thread(target=staller, name="staller")
a.start()
b.start()
b.join()
time.sleep(0.2)
stop = True
a.join()
sys.stdout.write("done %d %d %d %d\n" % (tids["staller"], tids["spinner"], result["ns"],
                                        result["marks"]))
sys.stdout.flush()
sys.stdin.read()
