"""Threads whose functions are known, for the attribution tests.

Usage: attribution.py [SECONDS] [LEAST] [progress]. One thread sleeps in sleeper(), one reads a pipe in
reader(), two spin in Busy.spin(), one sleeps in schläfer() (a name that is not ASCII). Prints
'ready <pid>', waits for a line, runs, prints 'done role=tid ...' and 'released role=n ...' (the
sleeps and reads each voluntary thread made in its function), waits for stdin to close.
The main thread feeds the pipe from feed(). It runs SECONDS, and on until each thread released
the GIL in its function at least LEAST times (that it knows of): what a test expects recorded
is then there however slowly it ran. With 'progress' it also prints 'progress role=n ...' every
10 s of that, so that a reader can tell a slow run (an emulated machine beside other work) from
a hung one.
"""
import ctypes
import platform
import os
import sys
import threading
import time

SYS_gettid = {"x86_64": 186, "aarch64": 178}[platform.machine()]

libc = ctypes.CDLL(None)
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
least = int(sys.argv[2]) if len(sys.argv) > 2 else 0
progress = "progress" in sys.argv[3:]
stop = False
tids = {}
started = threading.Barrier(6)
# releases each role made in its function, as far as it can tell: one per sleep or read; a
# spinner counts the times it finds that another thread ran since it last looked (it had let
# go of the GIL in between)
released = dict.fromkeys(["sleeper", "schlaefer", "reader", "spinner1", "spinner2"], 0)
last = [None]  # the thread that last ran here


def register(role):
    """Outside the measured functions: the ctypes call and the barrier release the GIL too."""
    tids[role] = libc.syscall(SYS_gettid)
    started.wait()


def sleeper():
    register("sleeper")
    while not stop:
        time.sleep(0.002)
        released["sleeper"] += 1
        last[0] = "sleeper"


def schläfer():
    register("schlaefer")
    while not stop:
        time.sleep(0.003)
        released["schlaefer"] += 1
        last[0] = "schlaefer"


def reader(fd):
    register("reader")
    while os.read(fd, 1):
        released["reader"] += 1
        last[0] = "reader"


class Busy:
    def __init__(self, role):
        self.role = role

    def spin(self):
        register(self.role)
        last[0] = self.role
        x = 0
        while not stop:
            if last[0] != self.role:
                released[self.role] += 1
                last[0] = self.role
            for i in range(1000):
                x += i


def feed(w, until):
    said = time.time()
    while time.time() < until or min(released.values()) < least:
        os.write(w, b"x")
        last[0] = "feed"
        time.sleep(0.001)
        if progress and time.time() - said >= 10:
            said = time.time()
            sys.stdout.write("progress %s\n" % " ".join("%s=%d" % kv
                                                       for kv in sorted(released.items())))
            sys.stdout.flush()


r, w = os.pipe()
threads = [threading.Thread(target=sleeper, name="sleeper"),
           threading.Thread(target=schläfer, name="schlaefer"),
           threading.Thread(target=reader, args=(r,), name="reader"),
           threading.Thread(target=Busy("spinner1").spin, name="spinner1"),
           threading.Thread(target=Busy("spinner2").spin, name="spinner2")]
sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
for t in threads:
    t.start()
started.wait()
feed(w, time.time() + seconds)
stop = True
os.close(w)
for t in threads:
    t.join()
sys.stdout.write("done %s\n" % " ".join("%s=%d" % kv for kv in sorted(tids.items())))
# each sleep and each read released the GIL once, voluntarily; the reader's last read (the one
# that found the pipe closed) is not counted here
sys.stdout.write("released %s\n" % " ".join("%s=%d" % (k, released[k])
                                             for k in ("reader", "schlaefer", "sleeper")))
sys.stdout.flush()
sys.stdin.read()
