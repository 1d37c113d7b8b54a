#!/usr/bin/env python3
"""The reference converter any user could write: giltrace recording -> Chrome trace, stdlib only.

Usage: ref_convert.py INPUT OUTPUT

It does what gil-convert does with --no-flows --no-counter, the plain way: json.load the whole
recording (a complete one is valid JSON), turn each [tid, kind, start_ns, dur_ns, flags]
interval into a take_gil / hold_gil / drop_gil "X" event on the realtime clock (the header's
offset), add process and thread names, and write it with json.dumps (the C encoder; json.dump
would use the pure-Python one and be several times slower). A benchmark baseline, not a tool.
"""
import json
import sys

KIND = ("take_gil", "hold_gil", "drop_gil")
FLAGS = ((1, "begin_unknown"), (2, "truncated"), (4, "lost"), (8, "resync"))


def convert(inp, outp):
    with open(inp) as f:
        doc = json.load(f)
    records = doc["records"]
    header = records[0]["header"]
    pid = header["pid"]
    off = header["clock_offsets"]["realtime_ns"]
    events = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
               "args": {"name": "GIL %s (pid %d, rank %d)" % (header.get("cmdline", ""), pid,
                                                             header.get("rank", 0))}}]
    names = {}
    for r in records:
        if type(r) is list:
            tid, kind, start, dur, flags = r[:5]
            t = start + off
            ev = {"ph": "X", "cat": "gil", "name": KIND[kind], "pid": pid, "tid": tid,
                  "ts": "%d.%03d" % (t // 1000, t % 1000), "dur": dur / 1000}
            if flags:
                ev["args"] = {name: True for bit, name in FLAGS if flags & bit}
            events.append(ev)
        elif "thread" in r:
            names[r["thread"]["tid"]] = r["thread"]["name"]
        elif "lost" in r:
            t = r["lost"]["ts"] + off
            events.append({"ph": "i", "s": "p", "name": "lost events", "pid": pid, "tid": 0,
                           "ts": "%d.%03d" % (t // 1000, t % 1000),
                           "args": {"count": r["lost"]["count"]}})
    for tid, name in names.items():
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                       "args": {"name": name}})
    with open(outp, "w") as f:
        f.write(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}))
    return len(events)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: ref_convert.py INPUT OUTPUT")
    n = convert(sys.argv[1], sys.argv[2])
    print("%d events" % n, file=sys.stderr)
