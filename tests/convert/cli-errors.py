#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""gil-convert's command line and failure paths, with their exact messages: usage errors exit 2
with a 'Try' line; conversion failures exit 1 with one line; nothing is left behind."""
import os
import shutil
import stat
import subprocess
import sys
import threading

from convlib import (DATA, GIL_CONVERT, HANDWRITTEN, check, check_eq, convert, fail, load, log,
                     validate, workdir)
from mkrec import MAGIC, Recording, header_for

w = workdir("cli-errors")
TRY = "Try 'gil-convert --help' for more information.\n"


def usage_error(args, msg):
    out, err = convert(*args, rc=2)
    check_eq(err, "gil-convert: " + msg + "\n" + TRY, "stderr of %s" % (args,))
    check_eq(out, "", "stdout of %s" % (args,))


def failure(args, msg):
    out, err = convert(*args, rc=1)
    check_eq(err, "gil-convert: " + msg + "\n", "stderr of %s" % (args,))


# --help and --version: standard output, exit 0; every option is documented
out, err = convert("--help")
check(out.startswith("Usage: gil-convert [OPTION]... --input RECORDING"), "--help: " + out[:80])
for opt in ["--input", "--output", "--format", "--clock", "--profiling-data", "--merge", "--no-flows",
            "--no-counter", "--ts-format", "--reorder-window", "--quiet", "--verbose", "--help", "--version"]:
    check(opt in out, "--help does not mention " + opt)
    with open(os.path.join(os.environ.get("top_srcdir", "."), "doc", "gil-convert.1")) as f:
        check(opt.replace("-", "\\-") in f.read(), "gil-convert(1) does not mention " + opt)
out, err = convert("-V")
check(out.startswith("gil-convert (giltrace) "), "--version: " + out)

# usage errors
usage_error([], "no input: give a recording with --input")
usage_error(["--clock", "tai", HANDWRITTEN],
            "invalid --clock value 'tai' (realtime, monotonic or monotonic_raw)")
usage_error(["--reorder-window", "-5", HANDWRITTEN],
            "invalid --reorder-window value '-5' (milliseconds, 0 to 3600000)")
usage_error(["--reorder-window", "1x", HANDWRITTEN],
            "invalid --reorder-window value '1x' (milliseconds, 0 to 3600000)")
usage_error(["-o", "", HANDWRITTEN], "invalid --output value ''")
usage_error(["--ts-format", "hex", HANDWRITTEN], "invalid --ts-format value 'hex' (string or number)")
usage_error(["--format", "perfetto", HANDWRITTEN], "invalid --format value 'perfetto' (chrome)")
check("\n  chrome " in convert("--help")[0], "--help lists no format chrome")
# --format chrome is the default: byte for byte the same trace
check_eq(convert("-q", "--format", "chrome", "-i", HANDWRITTEN, "-o", "-")[0],
         convert("-q", "-i", HANDWRITTEN, "-o", "-")[0], "--format chrome and the default")
usage_error([HANDWRITTEN, HANDWRITTEN], "several inputs: name the trace to write with --output")
usage_error(["--clock", "monotonic", "--profiling-data", "x", HANDWRITTEN],
            "--clock and --profiling-data both choose the time base: give one")
usage_error(["--clock", "monotonic_raw", "--merge", "x", HANDWRITTEN],
            "--merge puts the GIL rows on the profiler's wall-clock axis: it does not go with "
            "--clock monotonic_raw")
out, err = convert("--frobnicate", rc=2)
check_eq(err, "gil-convert: unrecognized option '--frobnicate'\n" + TRY, "unknown option")

# conversion failures: one line, exit 1
missing = os.path.join(w, "missing.json")
failure(["-i", missing, "-o", os.path.join(w, "t.json")],
        "cannot open %s: No such file or directory" % missing)
notjson = os.path.join(w, "notes.json")
with open(notjson, "w") as f:
    f.write("hello, world\n")
failure(["-i", notjson, "-o", os.path.join(w, "t.json")], "%s: not JSON (it starts with 'h')" % notjson)
unknown = os.path.join(w, "unknown.json")
with open(unknown, "w") as f:
    f.write('{"schemaVersion":1,"records":[]}\n')
failure(["-i", unknown, "-o", os.path.join(w, "t.json")],
        "%s: unknown format: a JSON object without \"format\":\"giltrace\"" % unknown)
v2 = os.path.join(w, "v2.json")
with open(v2, "w") as f:
    f.write('{"format":"giltrace","version":2,"records":[\n{"header":{}}\n]}\n')
failure(["-i", v2, "-o", os.path.join(w, "t.json")],
        "%s: unsupported recording version 2 (this gil-convert reads version 1)" % v2)
chrome = os.path.join(w, "chrome.json")
with open(chrome, "w") as f:
    f.write('{"traceEvents":[]}')
failure(["-i", chrome, "-o", os.path.join(w, "t.json")],
        "%s: a Chrome trace, not a recording (already converted?)" % chrome)
conv = os.path.join(w, "converted.json")
with open(conv, "w") as f:
    f.write('[{"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"GIL Trace"}}]')
failure(["-i", conv, "-o", os.path.join(w, "t.json")],
        "%s: unknown format: a JSON array, but not of take_gil/drop_gil events (a converted "
        "trace?)" % conv)

# the output: never one of the inputs, always writable, a file
copy = os.path.join(w, "GIL_3096504_rank_0.json")
shutil.copy(HANDWRITTEN, copy)
failure(["-i", copy, "-o", copy], "the output %s is the input %s: choose another --output"
        % (copy, copy))
os.symlink(copy, os.path.join(w, "alias.json"))
failure(["-i", copy, "-o", os.path.join(w, "alias.json")],
        "the output %s is the input %s: choose another --output"
        % (os.path.join(w, "alias.json"), copy))
nodir = os.path.join(w, "no", "such", "dir", "t.json")
failure(["-i", copy, "-o", nodir], "cannot write %s: No such file or directory" % nodir)
failure(["-i", copy, "-o", w], "cannot write %s: Is a directory" % w)
empty_dir = os.path.join(w, "nothing-here")
os.mkdir(empty_dir)
failure(["-i", empty_dir, "-o", os.path.join(w, "t.json")],
        "%s: no GIL_<pid>_rank_<rank>.json recordings in this directory" % empty_dir)
failure(["-i", copy, "--profiling-data", empty_dir, "-o", os.path.join(w, "t.json")],
        "--profiling-data: %s: no start_info (looked in host/, PROF_*/host/ and */PROF_*/host/)"
        % empty_dir)
failure(["-i", copy, "--merge", notjson, "-o", os.path.join(w, "t.json")],
        "--merge: %s: not JSON (a profiler trace starts with '{' or '[')" % notjson)
failure(["-i", copy, "--merge", copy, "-o", os.path.join(w, "t.json")],
        "--merge: %s: a JSON object without \"traceEvents\": not a Chrome trace (byte %d)"
        % (copy, os.path.getsize(copy) - 1))

# a failure half-way leaves nothing: the second input is damaged after a valid start
bad = os.path.join(w, "GIL_7_rank_1.json")
with open(bad, "w") as f:
    f.write(MAGIC + '\n{"header":{"pid":7,"rank":1,"clock_offsets":{"realtime_ns":5}}},\n'
            '[7,0,1,2,0],\n[7,1,3,4,0] oops\n')
out_path = os.path.join(w, "partial.json")
failure(["-i", copy, "-i", bad, "-o", out_path],
        "%s: invalid JSON: expected ',' or ']' between records" % bad)
check(not os.path.exists(out_path), "a failed conversion left " + out_path)
leftovers = [n for n in os.listdir(w) if n.startswith(".partial.json.")]
check(not leftovers, "temporary files left: %s" % leftovers)

# a header without the clock offsets the chosen clock needs
nooff = os.path.join(w, "GIL_8_rank_0.json")
Recording().header(pid=8, rank=0, start_ns=5).interval(8, 0, 10, 5).footer().write(nooff)
failure(["-i", nooff, "-o", os.path.join(w, "t.json")],
        "%s: the header has no clock_offsets.realtime_ns: use --clock monotonic_raw" % nooff)
convert("-i", nooff, "--clock", "monotonic_raw", "-o", os.path.join(w, "raw.json"))
check_eq([e["ts"] for e in load(os.path.join(w, "raw.json"))["traceEvents"] if e["ph"] == "X"],
         ["0.010"], "monotonic_raw needs no offsets")

# an empty recording: a valid trace and a warning, never a silent nothing
empty = os.path.join(w, "GIL_9_rank_0.json")
Recording().header(**header_for(9, 0, 1000, 5)).footer(end_ns=2000, intervals=0).write(empty)
out, err = convert("-i", empty, "-o", os.path.join(w, "empty_trace.json"))
check_eq(err, "gil-convert: warning: %s: empty recording: no GIL intervals in it\n" % empty,
         "empty recording warning")
validate(os.path.join(w, "empty_trace.json"))
doc = load(os.path.join(w, "empty_trace.json"))
check([e["name"] for e in doc["traceEvents"]] ==
      ["process_name", "process_labels", "process_sort_index"], "empty trace events")
# -q silences warnings, not errors; the default output goes beside the input
out, err = convert("-q", "-i", empty)
check_eq(err, "", "-q stderr")
check(os.path.exists(os.path.join(w, "GIL_9_rank_0_trace.json")), "default output name")
# an empty file (recorder killed before its first write) is a cut, empty recording
zero = os.path.join(w, "GIL_10_rank_0.json")
open(zero, "w").close()
out, err = convert("-i", zero, "-o", os.path.join(w, "zero_trace.json"))
check("the recording was cut (no end): converted its 0 complete records, 0 bytes" in err, err)
validate(os.path.join(w, "zero_trace.json"))
# outputs that are not regular files are written through, never replaced by one: a named pipe,
# a link (it stays a link, its target gets the trace), a device (like /dev/null, as root)
convert("-q", "-i", copy, "-o", os.path.join(w, "ref.json"))
want = load(os.path.join(w, "ref.json"))["traceEvents"]  # otherData names the output
fifo = os.path.join(w, "pipe")
os.mkfifo(fifo)
# a named pipe nobody reads: refused at once, never waited on (the timeout only catches a hang)
failure(["-i", copy, "-o", fifo], "cannot write %s: a named pipe that nobody reads; start its "
        "reader first, or remove it or choose another --output" % fifo)
# with its reader there first: the trace goes through it
rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
os.set_blocking(rfd, True)
got, written = [], threading.Event()


def read_pipe():
    """Until the writer has come and gone (end of file before it came is no end)."""
    data = []
    while True:
        b = os.read(rfd, 65536)
        if b:
            data.append(b)
        elif written.is_set():
            break
        else:
            written.wait(0.01)
    os.close(rfd)
    got.append(b"".join(data))


reader = threading.Thread(target=read_pipe, daemon=True)
reader.start()
convert("-q", "-i", copy, "-o", fifo)
written.set()
reader.join(60)
check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the named pipe was replaced")
check(got, "nothing read from the named pipe")
with open(os.path.join(w, "from-pipe.json"), "wb") as f:
    f.write(got[0])
check(load(os.path.join(w, "from-pipe.json"))["traceEvents"] == want,
      "the trace read from the named pipe differs")
target = os.path.join(w, "target.json")
with open(target, "w") as f:
    f.write("old contents, longer than nothing")
link = os.path.join(w, "link.json")
os.symlink("target.json", link)
convert("-q", "-i", copy, "-o", link)
check(os.path.islink(link) and os.readlink(link) == "target.json", "the link was replaced")
check(load(target)["traceEvents"] == want, "the link's target does not hold the trace")
dangling = os.path.join(w, "dangling.json")
os.symlink("nowhere.json", dangling)
failure(["-i", copy, "-o", dangling], "cannot write %s: a symbolic link to a file that does not "
        "exist; remove the link or choose another --output" % dangling)
check(not os.path.exists(os.path.join(w, "nowhere.json")), "a dangling link was followed")
if os.geteuid() == 0:
    null = os.path.join(w, "null")
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    convert("-q", "-i", copy, "-o", null)
    check(stat.S_ISCHR(os.lstat(null).st_mode), "a device node was replaced by a regular file")
leftovers = [n for n in os.listdir(w) if n.startswith(".")]
check(not leftovers, "temporary files left: %s" % leftovers)

# a named pipe as an input, named or in an input directory: one line, never a hang
pipes = os.path.join(w, "pipes")
os.mkdir(pipes)
shutil.copy(copy, os.path.join(pipes, "GIL_10_rank_0.json"))
os.mkfifo(os.path.join(pipes, "GIL_11_rank_1.json"))
failure(["-i", os.path.join(pipes, "GIL_11_rank_1.json")],
        "%s: not a regular file" % os.path.join(pipes, "GIL_11_rank_1.json"))
failure(["-i", pipes, "-o", os.path.join(w, "pipes.json")],
        "%s: not a regular file" % os.path.join(pipes, "GIL_11_rank_1.json"))
check(not os.path.exists(os.path.join(w, "pipes.json")), "an output was left after the failure")

# standard output
out, err = convert("-q", "-i", copy, "-o", "-")
check(out.startswith('{"traceEvents":[') and out.endswith("}\n"), "-o - writes the trace")
# A recording whose every interval lies beyond the time axis: the warning says so, and does not
# speak of a --profiling-data window that was not given.
far = os.path.join(w, "far.json")
Recording().header(**header_for(40001, 0, 1000, 1_700_000_000_000_000_000)) \
    .thread(40001, "python3", 1000).interval(40001, 0, 2**63 + 5, 10) \
    .interval(40001, 1, 2**63 + 20, 10).footer(end_ns=2**63 + 40).write(far)
p = subprocess.run([GIL_CONVERT, "-i", far, "-o", os.path.join(w, "far_trace.json")],
                   capture_output=True, text=True, timeout=60)
check("--profiling-data" not in p.stderr, "a warning names --profiling-data, not given: %r" %
      p.stderr)
# One huge record (a thread name of 64 MiB, which no recorder writes): refused in one line with
# little memory (64daf00 took 2.4 GB for it). Measured in a child of its own.
big = os.path.join(w, "big.json")
Recording().header(**header_for(40002, 0, 1000, 1_700_000_000_000_000_000)) \
    .thread(40002, "x" * (64 << 20), 1000).interval(40002, 0, 2000, 10).footer(end_ns=5000) \
    .write(big)
probe = ("import resource, subprocess, sys\n"
         "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
         "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
         "sys.stderr.write(p.stderr)\n")
p = subprocess.run([sys.executable, "-c", probe, GIL_CONVERT, "-i", big, "-o",
                    os.path.join(w, "big_trace.json")], capture_output=True, text=True,
                   timeout=120)
rc, rss_kb = (int(x) for x in p.stdout.split())
os.unlink(big)
check(rc == 1 and p.stderr.count("\n") == 1 and "a record larger than 4 MiB" in p.stderr,
      "a 64 MiB record: exit %d, %r" % (rc, p.stderr))
if os.environ.get("GIL_SANITIZED") != "1":
    check(rss_kb < 64 * 1024, "a 64 MiB record took %d MB" % (rss_kb // 1024))
log("PASS")
