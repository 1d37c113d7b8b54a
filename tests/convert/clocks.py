#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Time bases: a known instant of the hand-written recording (the fixture's first take_gil, on
the raw clock 172163935831250) lands at the expected nanosecond under each clock, and under
--profiling-data exactly at msprof's epoch microsecond, clipped to its window."""
import json
import os
import shutil

from convlib import (FIXTURES, HANDWRITTEN, check, check_eq, convert, load, log, ns, slices, us,
                     validate, workdir)

w = workdir("clocks")
B = 172163935831250              # raw ns of the main thread's first take_gil
T0, T1 = 172163578000000, B + 2000000   # header start_ns, footer end_ns
OFF = 1736408883337350 * 1000 - 172163578931250   # start_info: epoch ns - raw ns
MAIN, T3, T4 = 3096504, 3105076, 3105077
PROF = os.path.join(FIXTURES, "msprof", "PROF_example")


def first_take(doc, tid=MAIN):
    return sorted(x for x in slices(doc) if x[1] == tid and x[2] == "take_gil")[0]


def run(name, *args, stderr=None):
    out = os.path.join(w, name + ".json")
    o, err = convert("-i", HANDWRITTEN, "-o", out, *args)
    if stderr is not None:
        check_eq(err, stderr, name + ": stderr")
    validate(out, "--bound")
    return load(out), err


def interp(off0, off1, t):
    return t + off0 + (t - T0) * (off1 - off0) // (T1 - T0)


# realtime (default): the recorder's offsets, interpolated between header and footer
doc, _ = run("realtime", "-q")
check_eq(us(first_take(doc)[3]), "1736408883694252.988", "realtime")
check_eq(first_take(doc)[3], interp(OFF + 1000, OFF + 3000, B), "realtime, computed")
# monotonic: the same with the monotonic offsets
doc, _ = run("monotonic", "-q", "--clock", "monotonic")
check_eq(us(first_take(doc)[3]), "172164192003.131", "monotonic")
check_eq(first_take(doc)[3], interp(256171878, 256171882, B), "monotonic, computed")
# monotonic_raw: the recording clock itself
doc, _ = run("raw", "-q", "--clock", "monotonic_raw")
check_eq((us(first_take(doc)[3]), us(first_take(doc)[4])), ("172163935831.250", "3.120"), "raw")
check_eq(doc["otherData"]["options"]["clock"], "monotonic_raw", "otherData.options.clock")

# a cut recording has no footer: the header's offset alone
cut = os.path.join(w, "GIL_3096504_rank_0.json")
with open(HANDWRITTEN) as f:
    text = f.read()
with open(cut, "w") as f:
    f.write(text[:text.index('{"footer"')])
out = os.path.join(w, "cut.json")
convert("-q", "-i", cut, "-o", out)
check_eq(us(first_take(load(out))[3]), us(B + OFF + 1000), "a cut recording: header offset")

# --profiling-data: msprof's formula, exactly, and its window
want_lost = "gil-convert: warning: the kernel lost 3 GIL events during the recording: " \
            "intervals open then carry args.lost_events\n"
doc, _ = run("prof", "--profiling-data", PROF, stderr=want_lost)
take = first_take(doc)
check_eq((us(take[3]), us(take[4])), ("1736408883694250.000", "3.120"),
         "--profiling-data: the fixture's take_gil at msprof's microsecond")
check_eq(take[3], B + OFF, "epoch_us = raw/1000 + (collectionTimeBegin - clockMonotonicRaw/1000)")
tids = {x[1] for x in slices(doc)}
check(T4 not in tids, "intervals before start_info are clipped out")
t3 = sorted((x for x in slices(doc) if x[1] == T3), key=lambda x: x[3])
check_eq((t3[0][2], us(t3[0][3]), t3[0][5]), ("take_gil", "1736408883337350.000", {"clipped": True}),
         "an interval straddling the window start is cut there")
check_eq(t3[0][3] + t3[0][4], T0 + 1501000 + OFF, "... and keeps its end")
hi = 172164263870310 + OFF
check(all(x[3] + x[4] <= hi for x in slices(doc)), "nothing after end_info")
pd = doc["otherData"]["profiling_data"]
check_eq((pd["offset_ns"], pd["raw_from"], pd["window_begin_ns"], pd["window_end_ns"]),
         (OFF, "start_info", 1736408883337350000, hi), "otherData.profiling_data")
check_eq(doc["otherData"]["recordings"][0]["clipped_out"], 3, "clipped_out")
check_eq(doc["otherData"]["options"]["clock"], "profiling-data", "options.clock")
# the same from the host directory, and from a directory holding the PROF_ directory
for variant in (os.path.join(PROF, "host"), os.path.join(FIXTURES, "msprof")):
    d2, _ = run("prof-variant", "-q", "--profiling-data", variant)
    check_eq(slices(d2), slices(doc), "--profiling-data " + variant)


def prof_dir(name, start=None, end=None, log_text=None):
    host = os.path.join(w, name, "PROF_000001_20250109154803337_XYZ", "host")
    os.makedirs(host)
    for fname, content in (("start_info", start), ("end_info", end), ("host_start.log", log_text)):
        if content is not None:
            with open(os.path.join(host, fname), "w") as f:
                f.write(content if isinstance(content, str) else json.dumps(content))
    return os.path.join(w, name)


END = {"collectionDateEnd": "2025-01-09 15:48:04.022289", "collectionTimeEnd": "1736408884022289",
       "clockMonotonicRaw": "172164263870310"}
# any key order, numbers or strings, the unused pair present but empty
p = prof_dir("reordered", start={"clockMonotonicRaw": 172163578931250, "collectionTimeEnd": "",
                                 "collectionDateEnd": "", "collectionTimeBegin": "1736408883337350",
                                 "collectionDateBegin": "2025-01-09 15:48:03.337350"},
             end=dict(END, collectionTimeBegin="", collectionDateBegin=""))
d2, _ = run("reordered", "-q", "--profiling-data", p)
check_eq(slices(d2), slices(doc), "start_info keys reordered, numbers, empty strings")
# no clockMonotonicRaw in start_info: host_start.log's, sampled 604713 ns later
p = prof_dir("fromlog", start={"collectionTimeBegin": "1736408883337350", "clockMonotonicRaw": ""},
             end=END, log_text=open(os.path.join(PROF, "host", "host_start.log")).read())
d2, _ = run("fromlog", "-q", "--profiling-data", p)
check_eq(us(first_take(d2)[3]), us(B + 1736408883337350000 - 172163579535963), "host_start.log")
check_eq(d2["otherData"]["profiling_data"]["raw_from"], "host_start.log", "raw_from")
# no end_info: clipped at the start only, with a warning
p = prof_dir("noend", start=json.load(open(os.path.join(PROF, "host", "start_info"))))
d2, err = run("noend", "--profiling-data", p)
check("warning: %s: no usable end_info: clipping only at the start" % os.path.dirname(
    os.path.join(p, os.listdir(p)[0], "host", "x")) in err, err)
# two PROF_ directories: which one?
two = os.path.join(w, "two")
for n in ("PROF_1", "PROF_2"):
    shutil.copytree(os.path.join(PROF, "host"), os.path.join(two, n, "host"))
o, err = convert("-i", HANDWRITTEN, "-o", os.path.join(w, "x.json"), "--profiling-data", two, rc=1)
check_eq(err, "gil-convert: --profiling-data: %s holds several PROF_ directories (%s/PROF_1/host, "
         "%s/PROF_2/host...): name one\n" % (two, two, two), "two PROF_ directories")

# one start_info cannot align recordings from several hosts: said so
hosts = os.path.join(w, "hosts")
os.makedirs(hosts)
from mkrec import Recording, header_for  # noqa: E402
for pid, host in ((1, "node0"), (2, "node1")):
    Recording().header(**dict(header_for(pid, pid, B, OFF), hostname=host)) \
        .interval(pid, 0, B + 100, 5).footer().write(os.path.join(hosts, "GIL_%d_rank_%d.json"
                                                                   % (pid, pid)))
o, err = convert("-i", hosts, "-o", os.path.join(w, "hosts.json"), "--profiling-data", PROF)
check_eq(err, "gil-convert: warning: the recordings come from several hosts (node0, node1): "
         "--profiling-data aligns them all on one host's start_info\n", "several hosts")

# a sysTrace file: wall-clock times kept, only clipped
sysf = os.path.join(w, "sys", "GIL_3096504_rank_0.json")
os.makedirs(os.path.dirname(sysf))
shutil.copy(os.path.join(FIXTURES, "gil", "GIL_3096504_rank_0.json"), sysf)
out = os.path.join(w, "sys.json")
o, err = convert("-i", sysf, "-o", out, "--profiling-data", PROF)
check("sysTrace times are CLOCK_MONOTONIC plus one realtime offset: kept as they are, only "
      "clipped to the --profiling-data window" in err, err)
check_eq(us(first_take(load(out))[3]), "1736408883694250.000", "sysTrace times kept")
log("PASS")
