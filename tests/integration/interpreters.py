"""Different interpreters in one recording, and the ones giltrace cannot record.

1. pyenv's 3.12 (libpython, symbols) and Debian's LTO python3.11 (a static executable, debug
   file, inlined copies) with one `--pid a,b`: each gets its own probes, on its own file, and
   its own recording with N releases and N takes.
2. Python 2.7 and a process that is no Python: gil-record says why in one line, exits 1, and
   leaves no probe and no file behind.
(Free-threaded builds and PyPy are not installed here; tests/unit/test-sites checks how
their files are told apart.)"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distrolib import *  # noqa: E402,F401,F403

require_kernel()
failures = []

# 1. Two interpreters, one recorder.
py312 = [(l, e, v) for l, e, v in pythons(include_system=False) if v[:2] == (3, 12)]
debian = debian_python(dbg=True)
if not py312 or not debian:
    skip("needs pyenv's 3.12 and Debian's python3.11")
a = Workload(py312[0][1], "ctypes_calls.py", N)
b = Workload(debian, "ctypes_calls.py", N)
rec = Recorder("--pid", "%d,%d" % (a.pid, b.pid))
a.go()
b.go()
tids = {a.pid: int(a.wait_done()[0]), b.pid: int(b.wait_done()[0])}
a.finish()
b.finish()
rc = rec.wait()
check(rc == 0, "gil-record exited %d: %s" % (rc, rec.err))
files = rec.files()
check(len(files) == 2, "expected one file per process, got %s" % files)
rows, objects, offsets = {}, {}, {}
for path in files:
    header, records, footer = read_recording(path)
    pid = header["pid"]
    check(pid in tids, "a file for an unknown pid %s" % pid)
    rows[pid] = Row("pid %d" % pid, header, records, footer, tids[pid], rec.err, N)
    objects[pid] = header["object"]
    offsets[pid] = set(p["offset"] for p in header["probes"])
check(set(rows) == set(tids), "files for %s, processes %s" % (sorted(rows), sorted(tids)))
rows[a.pid].label = "%s (pid %d)" % (py312[0][0], a.pid)
rows[b.pid].label = "debian-%s (pid %d)" % (version_of(debian), b.pid)
failures += rows[a.pid].problems() + debian_dbg_problems(rows[b.pid])
if not objects[a.pid].endswith("/libpython3.12.so.1.0"):
    failures.append("3.12's probes are on %s" % objects[a.pid])
if objects[b.pid] != debian:
    failures.append("3.11's probes are on %s" % objects[b.pid])
if rows[a.pid].methods != ["symtab"]:
    failures.append("3.12 used %s" % rows[a.pid].methods)
if "build-id" not in rows[b.pid].methods:
    failures.append("3.11's debug file was not used: %s" % rows[b.pid].methods)
log(table([rows[a.pid], rows[b.pid]]))

# 2. What cannot be recorded.
py27 = os.path.join(pyenv_root(), "versions", "2.7.18", "bin", "python2.7")
cases = [(["sleep", "60"], ["not a CPython process"])]
if os.access(py27, os.X_OK):
    cases.append(([py27, "-c", "import sys; sys.stdin.read()"],
                  ["Python 2", "no take_gil/drop_gil to probe", "CPython 3.6 or later"]))
else:
    log("no pyenv Python 2.7: its case is left out")
for argv, wants in cases:
    p = subprocess.Popen(argv, stdin=subprocess.PIPE)
    out = tempfile.mkdtemp(prefix="gilrec-")
    try:
        r = subprocess.run([GIL_RECORD, "--output-dir", out, "--pid", str(p.pid)],
                           capture_output=True, text=True, timeout=HANG_S)
    finally:
        p.kill()
        p.wait()
    lines = r.stderr.strip().splitlines()
    log("%s: rc %d: %s" % (os.path.basename(argv[0]), r.returncode, r.stderr.strip()))
    if r.returncode != 1 or len(lines) != 1 or not lines[0].startswith("gil-record: ") or \
            any(want not in lines[0] for want in wants):
        failures.append("%s: expected one line with %s and exit 1, got %d: %r"
                        % (argv[0], wants, r.returncode, r.stderr))
    if os.listdir(out):
        failures.append("%s: files left in %s: %s" % (argv[0], out, os.listdir(out)))
    check_no_probes()

if failures:
    fail("; ".join(failures))
log("PASS")
