#!/usr/bin/env python3
"""Write a synthetic giltrace recording (doc/format.md, version 1) of N intervals.

Usage: gen_recording.py N OUTPUT [--threads T] [--seed S]

T threads share one GIL: each waits (take_gil), holds (hold_gil), releases (drop_gil), then
works without the GIL for a while and queues again, so waits overlap other threads' holds as in
a real recording. Intervals are written in the order they end, as gil-record writes them; every
thread gets a thread record; one lost record sits in the middle; a footer closes the file.
"""
import argparse
import os
import random
import sys

KINDS = 3


def generate(n, path, threads=8, seed=1):
    rnd = random.Random(seed)
    pid = 4242
    tids = [pid + i for i in range(threads)]
    start = 172163578931250
    off_rt = 1736236719758419200 - 172164263870310
    t = start  # when the GIL is next free
    ready = [start + rnd.randrange(0, 20000) for _ in tids]  # when each thread queued
    header = ('{"header":{"tool":"giltrace 0.1.0","pid":%d,"rank":0,"rank_source":null,'
              '"cmdline":"python3 synthetic.py","comm":"python3","python_version":"3.12.1",'
              '"hostname":"bench","recorder_pid":1,"group":"gil_1","clock":"CLOCK_MONOTONIC_RAW",'
              '"start_ns":%d,"clock_offsets":{"monotonic_ns":256171878,"realtime_ns":%d},'
              '"object":"/usr/lib/libpython3.12.so.1.0","build_id":"00","symbols_from":'
              '"/usr/lib/libpython3.12.so.1.0","probes":[]}}' % (pid, start, off_rt))
    lines = [header]
    lines += ['{"thread":{"tid":%d,"name":"worker-%d","ts":%d}}' % (tid, i, start)
              for i, tid in enumerate(tids)]
    written = 0
    lost_at = n // 2
    rr = rnd.randrange
    with open(path, "w") as f:
        f.write('{"format":"giltrace","version":1,"records":[\n')
        f.write(",\n".join(lines))
        buf = []
        while written < n:
            # The earliest queued thread takes the GIL next (a FIFO-ish hand-off).
            i = min(range(threads), key=ready.__getitem__)
            tid = tids[i]
            w0 = ready[i]
            got = max(t, w0) + rr(200, 3000)       # take_gil returns
            hold = rr(1000, 60000)                  # holding
            drop = rr(300, 2500)                    # inside drop_gil
            buf.append("[%d,0,%d,%d,0]" % (tid, w0, got - w0))
            buf.append("[%d,1,%d,%d,0]" % (tid, got, hold))
            buf.append("[%d,2,%d,%d,0]" % (tid, got + hold, drop))
            t = got + hold + drop
            ready[i] = t + rr(500, 40000)          # work without the GIL, then queue again
            written += 3
            if written >= lost_at and lost_at:
                buf.append('{"lost":{"cpu":1,"count":12,"ts":%d}}' % t)
                lost_at = 0
            if len(buf) >= 30000:
                f.write(",\n")
                f.write(",\n".join(buf))
                buf = []
        if buf:
            f.write(",\n")
            f.write(",\n".join(buf))
        footer = ('{"footer":{"end_ns":%d,"clock_offsets":{"monotonic_ns":256171878,'
                  '"realtime_ns":%d},"reason":"duration","events":%d,"intervals":%d,"lost":12,'
                  '"lost_per_cpu":[0,12],"threads":[%s]}}'
                  % (t, off_rt, written * 4 // 3, written,
                     ",".join('{"tid":%d,"name":"worker-%d"}' % (tid, i)
                              for i, tid in enumerate(tids))))
        f.write(",\n" + footer + "\n]}\n")
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, help="intervals (rounded up to a multiple of 3)")
    ap.add_argument("output")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    tmp = a.output + ".tmp"
    n = generate(a.n, tmp, a.threads, a.seed)
    os.replace(tmp, a.output)
    print("%s: %d intervals, %d bytes" % (a.output, n, os.path.getsize(a.output)), file=sys.stderr)


if __name__ == "__main__":
    main()
