"""A small multi-threaded program with real GIL contention, for trying giltrace.

Two threads compute (they contend for the GIL and are switched every 5 ms), one thread does
small blocking reads (it releases the GIL around each), and the main thread calls into C through
ctypes (each call releases and retakes the GIL). Runs for SECONDS (default 3).

    python3 examples/gil_contention.py [SECONDS]
"""
import ctypes
import os
import sys
import threading
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
stop = time.time() + seconds


def compute():
    x = 0
    while time.time() < stop:
        for i in range(10000):
            x += i * i


def reader():
    r, w = os.pipe()
    while time.time() < stop:
        os.write(w, b"x")
        os.read(r, 1)
        time.sleep(0.001)


def main():
    threads = [threading.Thread(target=compute, name="compute-%d" % i) for i in range(2)]
    threads.append(threading.Thread(target=reader, name="reader"))
    for t in threads:
        t.start()
    libc = ctypes.CDLL(None)
    calls = 0
    while time.time() < stop:
        libc.getpid()
        calls += 1
        time.sleep(0.0005)
    for t in threads:
        t.join()
    print("gil_contention: %d ctypes calls in %.1fs" % (calls, seconds))


if __name__ == "__main__":
    main()
