"""The Python module gil_trace_record (ctypes over libgiltrace) on a real interpreter: it records
its own process's threads and a sibling, stops on stop(), stops by itself after duration, works
as a context manager, and raises with a clear message when it cannot start. The drop-in scripts
gil_trace_record.py / gil_trace_convert.py run the C tools and give the same files."""
import json
import os
import select
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

env = dict(os.environ, PYTHONPATH=os.path.join(TOP_BUILDDIR, "tests", "python"))
if os.environ.get("GIL_SANITIZED") == "1":
    # An ASan-built libgiltrace loaded by ctypes needs the runtime first; Python itself leaks.
    libasan = subprocess.check_output(["cc", "-print-file-name=libasan.so"], text=True).strip()
    env.update(LD_PRELOAD=libasan, ASAN_OPTIONS="detect_leaks=0")

# The module's copy of struct gil_options is the header's, field by field (a field added to
# one only would have gil_options_init write past the module's buffer). Read in a child: the
# module loads libgiltrace when imported (for mark_step), which wants @env under ASan.
module_layout = json.loads(subprocess.check_output(
    [sys.executable, "-c", "import ctypes, json, gil_trace_record as g; O = g._Options; "
     "print(json.dumps([ctypes.sizeof(O)] + [[f[0], getattr(O, f[0]).offset] "
     "for f in O._fields_]))"], env=env, text=True))
fields = [f for f, _ in module_layout[1:]]
probe_src = os.path.join(tempfile.mkdtemp(prefix="layout-"), "layout.c")
with open(probe_src, "w") as f:
    f.write('#include <stdio.h>\n#include <stddef.h>\n#include "giltrace.h"\nint main(void)\n'
            '{ printf("%zu", sizeof(struct gil_options));' +
            "".join(' printf(" %%zu", offsetof(struct gil_options, %s));' % n for n in fields) +
            " return 0; }\n")
probe = probe_src[:-2]
subprocess.run(["cc", "-I", os.path.join(TOP_SRCDIR, "include"), "-o", probe, probe_src],
               check=True)
c_layout = [int(x) for x in subprocess.check_output([probe], text=True).split()]
py_layout = [module_layout[0]] + [off for _, off in module_layout[1:]]
check(c_layout == py_layout, "struct gil_options: the header's size and offsets %s, the "
      "module's %s (fields %s)" % (c_layout, py_layout, fields))

require_kernel()
label, exe, ver = pythons(include_system=False)[-1]


def api(mode, *extra):
    outdir = tempfile.mkdtemp(prefix="gilapi-")
    p = subprocess.run([exe, os.path.join(WORKLOADS, "api_user.py"), outdir, mode] +
                       [str(x) for x in extra], env=env, capture_output=True, text=True,
                       timeout=HANG_S)
    check(p.returncode == 0, "%s: exit %d: %s" % (mode, p.returncode, p.stderr))
    out = p.stdout.strip()
    return out, outdir


def own_threads(outdir, result, reason, calls_inside=True):
    """@calls_inside: the threads' calls were all made while recording (else not compared)."""
    path = os.path.join(outdir, "GIL_%d_rank_0.json" % result["pid"])
    check(os.path.exists(path), "no file %s" % path)
    h, records, footer = read_recording(path)
    check(footer and footer["reason"] == reason, "footer %s, want reason %s" % (footer, reason))
    for tid in result["tids"] if calls_inside else []:
        n = len(intervals(records, tid, 2))
        check(n >= 300, "thread %d: %d releases recorded for 300 ctypes calls" % (tid, n))
    return h, records, footer


# Own threads and a sibling, until stop(): it comes once the sibling made the calls counted
# while recording, each a release (one may have begun before the first count).
sib = Workload(exe, "busy_calls.py")
sib.go()
outdir = tempfile.mkdtemp(prefix="gilapi-")
p = subprocess.Popen([exe, os.path.join(WORKLOADS, "api_user.py"), outdir, "self", str(sib.pid)],
                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
line = p.stdout.readline() if select.select([p.stdout], [], [], 120)[0] else "(silent)"
check(line == "recording\n", "self: %r" % line)
ran = sib.calls_made(102)
out = p.communicate("stop\n", timeout=HANG_S)[0].strip()
sib.finish()
check(p.returncode == 0 and out.startswith("ok "), "self: exit %d: %s" % (p.returncode, out))
res = json.loads(out[3:])
own_threads(outdir, res, "stopped")
h, records, footer = read_recording(os.path.join(outdir, "GIL_%d_rank_0.json" % sib.pid))
check(len(intervals(records, kind=2)) >= ran > 100, "sibling: %d releases recorded of %d calls"
      % (len(intervals(records, kind=2)), ran))
check_no_probes()

# duration=1 ends by itself although stop() comes later: it comes when the file is complete.
out, outdir = api("duration")
check(out.startswith("ok "), out)
res = json.loads(out[3:])
h, records, footer = read_recording(os.path.join(outdir, "GIL_%d_rank_0.json" % res["pid"]))
# the threads' calls are compared if they ended within the second (they take milliseconds)
own_threads(outdir, res, "duration", calls_inside=res["threads_done"] <= footer["end_ns"])
span = (footer["end_ns"] - h["start_ns"]) / 1e9
# no ceiling on the span but the workload's wait for the end: a slow recorder is not wrong
check(span > 0.9, "duration=1 recorded %.2f s" % span)
check(res["start"] <= h["start_ns"] and footer["end_ns"] <= res["stop"],
      "the recording's %d..%d is not within start() %d .. stop() %d"
      % (h["start_ns"], footer["end_ns"], res["start"], res["stop"]))

out, outdir = api("context")
check(out.startswith("ok "), out)
own_threads(outdir, json.loads(out[3:]), "stopped")

# Threading names: a thread alive at start (it ends while recording), one alive at stop, one
# started while recording and alive at stop, one that starts and ends while recording, the main
# thread. Before 3.8 threading has no native_id: threads alive at start keep their OS name.
def last_names(records):
    names = {}
    for r in records:
        if isinstance(r, dict) and "thread" in r:
            names[r["thread"]["tid"]] = r["thread"]["name"]
    return names


def check_names(python, ver):
    p = subprocess.run([python, os.path.join(WORKLOADS, "api_user.py"), tempfile.mkdtemp(
        prefix="gilapi-"), "names"], env=env, capture_output=True, text=True, timeout=HANG_S)
    check(p.returncode == 0 and p.stdout.startswith("ok "), "names on %s: %r %r"
          % (python, p.stdout, p.stderr))
    outdir = p.args[2]
    res = json.loads(p.stdout[3:])
    check(not res["hook_left"], "%s: threading's profile hook left set after stop" % python)
    path = os.path.join(outdir, "GIL_%d_rank_0.json" % res["pid"])
    h, records, footer = read_recording(path)
    names = last_names(records)
    want = {"main": "MainThread", "early": "early-io", "lasting": "tr\u00e4ger-1",
            "late": "loader", "brief": "brief"}
    if ver < (3, 8):  # no native_id: threads name themselves when they start, or the caller
        want = {"main": "MainThread", "late": "loader", "brief": "brief"}
    for key, name in want.items():
        check(names.get(res["ids"][key]) == name, "%s: thread %s (%d) named %r, not %r: %s"
              % (python, key, res["ids"][key], names.get(res["ids"][key]), name, names))
    # the trace's rows carry them (its last thread_name per tid)
    trace = os.path.join(outdir, "t.json")
    check(subprocess.call([GIL_CONVERT, "-q", "-i", path, "-o", trace]) == 0, "convert")
    shown = {}
    for e in json.load(open(trace, encoding="utf-8"))["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            shown[e["tid"]] = e["args"]["name"]
    for key, name in want.items():
        check(shown.get(res["ids"][key]) == name, "%s: trace row of %s is %r"
              % (python, key, shown.get(res["ids"][key])))
    return len(want)


named = check_names(exe, ver)
old_py = [p for p in pythons(include_system=False) if p[2][:2] == (3, 7)]
if old_py:
    named += check_names(old_py[0][1], old_py[0][2])
check_no_probes()

free = 4000000
while os.path.exists("/proc/%d" % free):
    free += 1
out, outdir = api("fail", free)
check(out == "error no such process: %d" % free, "failure: %r" % out)
out, outdir = api("twice")
check(out == "error a recording is already running in this process: call gil_trace_record_stop() first",
      "twice: %r" % out)
check_no_probes()

# The drop-in scripts run the C tools: same command line as the reference, same files.
w = Workload(exe, "ctypes_calls.py", 200)
d1, d2 = tempfile.mkdtemp(), tempfile.mkdtemp()
rec_py = os.path.join(TOP_BUILDDIR, "tests", "python", "gil_trace_record.py")
e1, e2 = (tempfile.NamedTemporaryFile() for _ in range(2))
# Both end when the workload exits (the duration only bounds a hang): each sees all its calls
# however long the other took to start.
p1 = subprocess.Popen([exe, rec_py, "--pid", str(w.pid), "--duration", "300", "--output-dir", d1],
                      env=env, stderr=e1)
p2 = subprocess.Popen([GIL_RECORD, "--pid", str(w.pid), "--duration", "300", "--output-dir", d2],
                      stderr=e2)
wait_for(lambda: all("recording" in open(e.name).read() for e in (e1, e2)),
         lambda: "recorders starting: %r %r" % (open(e1.name).read(), open(e2.name).read()))
w.go()
w.wait_done()
w.finish()
check(p1.wait(120) == 0 and p2.wait(120) == 0, "drop-in or C tool failed")
f1, f2 = sorted(os.listdir(d1)), sorted(os.listdir(d2))
check(f1 == f2 == ["GIL_%d_rank_0.json" % w.pid], "files %s vs %s" % (f1, f2))
n1 = len(intervals(read_recording(os.path.join(d1, f1[0]))[1], kind=2))
n2 = len(intervals(read_recording(os.path.join(d2, f2[0]))[1], kind=2))
check(n1 == n2 and n1 >= 200, "drop-in recorded %d releases, the C tool %d" % (n1, n2))
conv_py = os.path.join(TOP_BUILDDIR, "tests", "python", "gil_trace_convert.py")
if os.access(GIL_CONVERT, os.X_OK):
    t1, t2 = os.path.join(d1, "t.json"), os.path.join(d2, "t.json")
    check(subprocess.call([exe, conv_py, "--input", os.path.join(d1, f1[0]), "--output", t1], env=env) == 0,
          "gil_trace_convert.py failed")
    check(subprocess.call([GIL_CONVERT, "--input", os.path.join(d2, f2[0]), "--output", t2]) == 0,
          "gil-convert failed")
    e1 = [(e["ph"], e["name"]) for e in json.load(open(t1))["traceEvents"] if e["ph"] == "X"]
    e2 = [(e["ph"], e["name"]) for e in json.load(open(t2))["traceEvents"] if e["ph"] == "X"]
    check(len(e1) == len(e2), "converted %d vs %d slices" % (len(e1), len(e2)))
check_no_probes()
log("PASS: %d threads named" % named)
