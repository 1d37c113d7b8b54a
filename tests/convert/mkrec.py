#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write giltrace recordings exactly as doc/format.md lays them out, for tests and benchmarks.

As a module: Recording(...).header(...).thread(...).interval(...)...write(path, cut=None).
As a program: mkrec.py synth --intervals N [--threads T] [--seed S] OUT
  a synthetic recording of T threads handing the GIL round, in the order a recorder writes
  (the order intervals end), streamed so that any N fits.
"""
import argparse
import json
import random
import sys

MAGIC = '{"format":"giltrace","version":1,"records":['
TAKE, HOLD, DROP = 0, 1, 2


def dumps(o):
    return json.dumps(o, separators=(",", ":"), ensure_ascii=False)


class Recording:
    def __init__(self):
        self.lines = []

    def header(self, **h):
        self.lines.append(dumps({"header": h}))
        return self

    def thread(self, tid, name, ts):
        self.lines.append(dumps({"thread": {"tid": tid, "name": name, "ts": ts}}))
        return self

    def interval(self, tid, kind, start, dur, flags=0):
        self.lines.append("[%d,%d,%d,%d,%d]" % (tid, kind, start, dur, flags))
        return self

    def lost(self, cpu, count, ts):
        self.lines.append(dumps({"lost": {"cpu": cpu, "count": count, "ts": ts}}))
        return self

    def exit(self, tid, ts):
        self.lines.append(dumps({"exit": {"tid": tid, "ts": ts}}))
        return self

    def raw(self, line):
        self.lines.append(line)
        return self

    def footer(self, **f):
        self.lines.append(dumps({"footer": f}))
        return self

    def text(self, complete=True):
        body = MAGIC + "\n" + ",\n".join(self.lines)
        return body + ("\n]}\n" if complete else "")

    def write(self, path, complete=True):
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.text(complete))


def header_for(pid, rank, start_ns, realtime_off, mono_off=1000, cmdline="python3 synth.py"):
    return dict(tool="giltrace 0.1.0", pid=pid, rank=rank, rank_source="RANK" if rank else None,
                cmdline=cmdline, comm="python3", python_version="3.12.1", hostname="node0",
                recorder_pid=1, clock="CLOCK_MONOTONIC_RAW", start_ns=start_ns,
                clock_offsets={"monotonic_ns": mono_off, "realtime_ns": realtime_off})


def synth(out, n, threads, seed, pid=40000, rank=0):
    """T threads taking turns: hold h, drop d; the next holder wakes inside the drop."""
    rnd = random.Random(seed)
    t0 = 1_000_000_000_000
    off = 1_700_000_000_000_000_000 - t0
    tids = [pid + i for i in range(threads)]
    wait_start = {tid: t0 for tid in tids}
    w = out.write
    w(MAGIC + "\n" + dumps({"header": header_for(pid, rank, t0, off)}))
    for tid in tids:
        w(",\n" + dumps({"thread": {"tid": tid, "name": "worker-%d" % (tid - pid), "ts": t0}}))
    t = t0 + 1000
    written = 0
    buf = []
    tid = tids[0]
    while written < n:
        hold = rnd.randint(2_000, 50_000)
        drop = rnd.randint(300, 3_000)
        take_start = wait_start[tid]
        # the take ended at t; the hold ends at the drop; the next holder wakes mid-drop
        buf.append("[%d,0,%d,%d,0]" % (tid, take_start, t - take_start))
        buf.append("[%d,1,%d,%d,0]" % (tid, t, hold))
        buf.append("[%d,2,%d,%d,0]" % (tid, t + hold, drop))
        written += 3
        # after its drop the thread works without the GIL, then waits again
        wait_start[tid] = t + hold + drop + rnd.randint(0, 20_000)
        # the longest waiter gets it next, inside the drop or as soon as it asks
        nxt = min(tids, key=lambda x: wait_start[x])
        t = max(t + hold + drop // 2, wait_start[nxt] + rnd.randint(200, 2_000))
        tid = nxt
        if len(buf) >= 3000:
            w(",\n" + ",\n".join(buf))
            buf = []
    if buf:
        w(",\n" + ",\n".join(buf))
    w(",\n" + dumps({"footer": {"end_ns": t + 1_000_000,
                                "clock_offsets": {"monotonic_ns": 1000, "realtime_ns": off + 777},
                                "reason": "duration", "events": written * 2 // 3,
                                "intervals": written, "lost": 0, "lost_per_cpu": [0, 0],
                                "threads": [{"tid": x, "name": "worker-%d" % (x - pid)}
                                            for x in tids]}}))
    w("\n]}\n")
    return written


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("synth")
    s.add_argument("--intervals", type=int, required=True)
    s.add_argument("--threads", type=int, default=4)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("out")
    a = ap.parse_args()
    with open(a.out, "w", buffering=1 << 20) as f:
        n = synth(f, a.intervals, a.threads, a.seed)
    print("%s: %d intervals" % (a.out, n), file=sys.stderr)


if __name__ == "__main__":
    main()
