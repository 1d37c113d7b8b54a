# SPDX-License-Identifier: GPL-2.0-or-later
"""A small GIL workload for recordings the converter tests keep: two threads that compute and
one that sleeps, for a fraction of a second. Works on Python 2.7 and 3.x."""
import sys
import threading
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.15


def spin():
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        for i in range(2000):
            x += i


def nap():
    for i in range(10):
        time.sleep(seconds / 10)


threads = [threading.Thread(target=spin, name="spin-%d" % i) for i in range(2)]
threads.append(threading.Thread(target=nap, name="nap"))
for t in threads:
    t.start()
for t in threads:
    t.join()
