"""One thread per kind of call the interpreter's own I/O helpers make, N calls each, one thread
after the other: os.stat, os.listdir and os.scandir of an empty directory, FileIO.readall of a
100-byte file, os.read of a pipe, os.write to it, time.sleep(0), select.select. An LTO build
inlines drop_gil into these helpers; each call releases the GIL at least once (listdir and
scandir twice or more, readall in open, fstat, read and close).

Usage: io_calls.py [N]
Protocol: prints 'ready <pid>', waits for a line, runs the threads, prints
'done kind=<tid> ...', waits for stdin to close, exits. Runs on Python 3.6 and later.
"""
import ctypes
import os
import platform
import select
import shutil
import sys
import tempfile
import threading
import time

SYS_gettid = {"x86_64": 186, "aarch64": 178}[platform.machine()]
libc = ctypes.CDLL(None)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
top = tempfile.mkdtemp(prefix="gil-io-")
path = os.path.join(top, "f")
with open(path, "wb") as f:
    f.write(b"x" * 100)
empty = os.path.join(top, "e")
os.mkdir(empty)
r, w = os.pipe()
os.write(w, b"x" * n)  # n bytes to read, one at a time; the writer's go to a second pipe
r2, w2 = os.pipe()
tids = {}


def stat():
    for _ in range(n):
        os.stat(path)


def listdir():
    for _ in range(n):
        os.listdir(empty)


def scandir():
    for _ in range(n):
        for _e in os.scandir(empty):
            pass


def readall():
    for _ in range(n):
        with open(path, "rb", buffering=0) as f:
            f.readall()


def read():
    for _ in range(n):
        os.read(r, 1)


def write():
    for _ in range(n):
        os.write(w2, b"x")
        os.read(r2, 1)


def sleep():
    for _ in range(n):
        time.sleep(0)


def select_():
    for _ in range(n):
        select.select([], [], [], 0)


KINDS = [stat, listdir, scandir, readall, read, write, sleep, select_]


def run(fn):
    tids[fn.__name__.rstrip("_")] = libc.syscall(SYS_gettid)
    fn()


sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
for fn in KINDS:
    t = threading.Thread(target=run, args=(fn,), name=fn.__name__)
    t.start()
    t.join()
shutil.rmtree(top)
sys.stdout.write("done %s\n" % " ".join("%s=%d" % kv for kv in sorted(tids.items())))
sys.stdout.flush()
sys.stdin.read()
