"""A bystander: ctypes calls in a loop (GIL released and retaken each time) until stdin closes.

Prints 'ready <pid>' and, after a line on stdin, answers each line "count" with 'count <calls
so far>' (other lines are ignored), and prints 'done <calls>' when stdin closes. The calls
between two counts taken while a recorder runs are what it must have recorded.
"""
import ctypes
import os
import sys
import threading

libc = ctypes.CDLL(None)
stop = threading.Event()
count = [0]


def loop():
    f = libc.getppid
    while not stop.is_set():
        f()
        count[0] += 1


sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
t = threading.Thread(target=loop)
t.start()
sys.stdin.readline()
while True:
    line = sys.stdin.readline()
    if not line:
        break
    if line.strip() == "count":
        sys.stdout.write("count %d\n" % count[0])
        sys.stdout.flush()
stop.set()
t.join()
sys.stdout.write("done %d\n" % count[0])
sys.stdout.flush()
