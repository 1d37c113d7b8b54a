"""Creates and ends many short threads, each releasing the GIL a few times; also forks a child
that execs /bin/true. Prints 'ready <pid>', waits for a line, runs, prints 'done <threads>'."""
import ctypes
import os
import subprocess
import sys
import threading

libc = ctypes.CDLL(None)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000


def short():
    for _ in range(3):
        libc.getppid()


sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
for i in range(n // 50):
    ts = [threading.Thread(target=short) for _ in range(50)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
subprocess.call(["/bin/true"])
sys.stdout.write("done %d\n" % n)
sys.stdout.flush()
sys.stdin.read()
