"""A bystander: ctypes calls in a loop (GIL released and retaken each time) until stdin closes.

Prints 'ready <pid>' and, after a line on stdin, 'done <calls>' when stdin closes.
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
sys.stdin.read()
stop.set()
t.join()
sys.stdout.write("done %d\n" % count[0])
sys.stdout.flush()
