"""gil-record's command line and its refusals: each bad input gets its exact one-line message,
the documented exit code, no probe left behind and no file written."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

TRY = "Try 'gil-record --help' for more information."


def run(args, **kw):
    p = subprocess.run([GIL_RECORD] + args, capture_output=True, text=True, timeout=HANG_S, **kw)
    return p.returncode, p.stdout, p.stderr


usage_errors = [
    (["--duration", "x"], "invalid --duration value 'x': give seconds > 0 (at most a year), or -1 to record until Ctrl+C"),
    (["--duration", "0"], "invalid --duration value '0': give seconds > 0 (at most a year), or -1 to record until Ctrl+C"),
    (["--duration", "-5"], "invalid --duration value '-5': give seconds > 0 (at most a year), or -1 to record until Ctrl+C"),
    (["--duration", "inf"], "invalid --duration value 'inf': give seconds > 0 (at most a year), or -1 to record until Ctrl+C"),
    (["--duration", "nan"], "invalid --duration value 'nan': give seconds > 0 (at most a year), or -1 to record until Ctrl+C"),
    (["--duration", "1e99"], "invalid --duration value '1e99': give seconds > 0 (at most a year), or -1 to record until Ctrl+C"),
    (["--duration", ""], "invalid --duration value '': give seconds > 0 (at most a year), or -1 to record until Ctrl+C"),
    (["--pid", ""], "invalid --pid value '': give process ids separated by commas, e.g. --pid 1234,5678"),
    (["--pid", "abc"], "invalid --pid value 'abc': give process ids separated by commas, e.g. --pid 1234,5678"),
    (["--pid", "0"], "invalid --pid value '0': give process ids separated by commas, e.g. --pid 1234,5678"),
    (["--pid", "-3"], "invalid --pid value '-3': give process ids separated by commas, e.g. --pid 1234,5678"),
    (["--pid", "1,,2"], "invalid --pid value '1,,2': give process ids separated by commas, e.g. --pid 1234,5678"),
    (["--pid", ",1"], "invalid --pid value ',1': give process ids separated by commas, e.g. --pid 1234,5678"),
    (["--pid", "1,"], "invalid --pid value '1,': give process ids separated by commas, e.g. --pid 1234,5678"),
    (["--pid", "99999999999"], "invalid --pid value '99999999999': give process ids separated by commas, e.g. --pid 1234,5678"),
    (["--mmap-pages", "3"], "invalid --mmap-pages value '3': give a power of two from 2 to 1048576"),
    (["--mmap-pages", "0"], "invalid --mmap-pages value '0': give a power of two from 2 to 1048576"),
    (["--output-dir", ""], "invalid --output-dir value '': give a directory"),
    (["--bogus"], "unrecognized option '--bogus'"),
    (["-x"], "unrecognized option '-x'"),
    (["--pid"], "option '--pid' needs a value"),
    (["-d"], "option '-d' needs a value"),
    (["--pid", "1", "true"], "give either --pid or a command to run, not both (got 'true')"),
    (["--alert-hold", "0"], "invalid --alert-hold value '0': give milliseconds from 1 to 86400000 (a day)"),
    (["--alert-hold", "1.5"], "invalid --alert-hold value '1.5': give milliseconds from 1 to 86400000 (a day)"),
    (["--alert-cmd", "/bin/true"], "--alert-cmd runs on the watchdog's alerts: give --alert-hold MS too"),
    (["--alert-hold", "100", "--alert-cmd", "/nonexistent/dump $PID"],
     "invalid --alert-cmd value '/nonexistent/dump $PID': cannot run '/nonexistent/dump': No such file or directory (give an executable, with its path or on PATH)"),
    (["--alert-hold", "100", "--alert-cmd", "/etc/passwd"],
     "invalid --alert-cmd value '/etc/passwd': cannot run '/etc/passwd': Permission denied (give an executable, with its path or on PATH)"),
    (["--alert-hold", "100", "--alert-cmd", "   "],
     "invalid --alert-cmd value '   ': give a program to run"),
    (["--metrics", "http"], "invalid --metrics value 'http': give [ADDR:]PORT, e.g. 9464, 127.0.0.1:9464 or [::1]:9464 (port 1 to 65535, address numeric)"),
    (["--metrics", "localhost:9464"], "invalid --metrics value 'localhost:9464': give [ADDR:]PORT, e.g. 9464, 127.0.0.1:9464 or [::1]:9464 (port 1 to 65535, address numeric)"),
    (["--metrics", "70000"], "invalid --metrics value '70000': give [ADDR:]PORT, e.g. 9464, 127.0.0.1:9464 or [::1]:9464 (port 1 to 65535, address numeric)"),
    (["--metrics", "192.0.2.1:9464"], "cannot serve --metrics on 192.0.2.1:9464: Cannot assign requested address (give an address of this machine)"),
    (["--no-files"], "--no-files leaves nothing to show: give --metrics, --alert-hold or --live too"),
    (["--no-files", "--alert-hold", "100", "--output-dir", "/tmp"], "--no-files writes no file: not with --output-dir"),
    (["--live", "--pid", "1"], "--live needs a terminal on stdin and stdout: run it in one (for programs, use --metrics)"),
]

failures = []
for args, msg in usage_errors:
    rc, out, err = run(args)
    want = "gil-record: %s\n%s\n" % (msg, TRY)
    if rc != 2 or err != want or out:
        failures.append("%s: rc %d, stderr %r (want %r)" % (args, rc, err, want))

rc, out, err = run(["--help"])
check(rc == 0 and out.startswith("Usage: gil-record") and not err, "--help: %d %r" % (rc, err))
for opt in ("--pid", "--duration", "--output-dir", "--mmap-pages", "--cleanup", "--quiet",
            "--verbose", "--help", "--version"):
    check(opt in out, "--help does not mention %s" % opt)
rc, out, err = run(["--version"])
check(rc == 0 and out.startswith("gil-record (giltrace) ") and "features:" in out, "--version: %r" % out)

require_kernel()
outdir = tempfile.mkdtemp(prefix="gilcli-")


def refused(args, msg, **kw):
    before = set(os.listdir(outdir))
    rc, out, err = run(["--output-dir", outdir] + args, **kw)
    want = "gil-record: %s\n" % msg
    if rc != 1 or err != want:
        failures.append("%s: rc %d, stderr %r (want %r)" % (args, rc, err, want))
    if set(os.listdir(outdir)) != before:
        failures.append("%s: wrote %s" % (args, set(os.listdir(outdir)) - before))
    try:
        check_no_probes()
    except SystemExit:
        failures.append("%s: probes left" % args)


free = 4000000
while os.path.exists("/proc/%d" % free):
    free += 1
refused(["--pid", str(free)], "no such process: %d" % free)
refused(["no-such-command-here"], "cannot run 'no-such-command-here': No such file or directory")

sleeper = subprocess.Popen(["sleep", "60"])
refused(["--pid", str(sleeper.pid)],
        "process %d: not a CPython process (no mapped file defines take_gil/drop_gil)" % sleeper.pid)

py2 = os.path.join(pyenv_root(), "versions", "2.7.18", "bin", "python2.7")
if os.path.exists(py2):
    w2 = Workload(py2, "ctypes_calls.py", 1)
    libpy2 = os.path.join(pyenv_root(), "versions", "2.7.18", "lib", "libpython2.7.so.1.0")
    refused(["--pid", str(w2.pid)],
            "process %d: %s is Python 2: it has no take_gil/drop_gil to probe (giltrace needs CPython 3.6 or later)" % (w2.pid, libpy2))
    # One pid of a list that cannot be recorded is skipped with one line; the others are
    # recorded (a hostile or unusual process must not stop everyone's recording).
    label, exe, ver = pythons(include_system=False)[-1]
    w3 = Workload(exe, "ctypes_calls.py", 1)
    listdir = tempfile.mkdtemp(prefix="gilcli-list-")
    rc, out, err = run(["--output-dir", listdir, "--duration", "1", "--pid",
                        "%d,%d" % (w3.pid, w2.pid)])
    skipped = ("gil-record: warning: process %d: %s is Python 2: it has no take_gil/drop_gil to probe (giltrace needs CPython 3.6 or later); not recorded\n" % (w2.pid, libpy2))
    if rc != 0 or skipped not in err:
        failures.append("--pid good,py2: rc %d, stderr %r (want the line %r)" % (rc, err, skipped))
    got = sorted(os.listdir(listdir))
    if got != ["GIL_%d_rank_0.json" % w3.pid]:
        failures.append("--pid good,py2: files %s, want the good one's only" % got)
    # All of a list refused: the first one's reason, and nothing written.
    w4 = Workload(py2, "ctypes_calls.py", 1)
    refused(["--pid", "%d,%d" % (w2.pid, w4.pid)],
            "process %d: %s is Python 2: it has no take_gil/drop_gil to probe (giltrace needs CPython 3.6 or later); not recorded" % (w2.pid, libpy2))
    w2.kill()
    w3.kill()
    w4.kill()

# Not root: the message says what to do.
refused(["--pid", str(sleeper.pid)], "recording needs root (uprobes and perf events): run it with sudo",
        preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
sleeper.kill()

# Output directories that must be refused.
label, exe, ver = pythons(include_system=False)[-1]
w = Workload(exe, "ctypes_calls.py", 1)
base = tempfile.mkdtemp(prefix="gilout-")
os.symlink(base, base + "/link")
os.mkdir(base + "/open")
os.chmod(base + "/open", 0o777)
open(base + "/file", "w").close()
cases = [
    (base + "/link", "output directory %s/link is a symbolic link: refusing it (give the real path with --output-dir)" % base),
    (base + "/open", "output directory %s/open is writable by every user: refusing it (chmod o-w it or choose another with --output-dir)" % base),
    (base + "/file/sub", "cannot create output directory %s/file/sub: Not a directory (choose another with --output-dir)" % base),
]
for d, msg in cases:
    rc, out, err = run(["--pid", str(w.pid), "--output-dir", d])
    if rc != 1 or err != "gil-record: %s\n" % msg:
        failures.append("output dir %s: rc %d %r" % (d, rc, err))
    try:
        check_no_probes()
    except SystemExit:
        failures.append("output dir %s: probes left" % d)
w.kill()

if failures:
    fail("\n  ".join([""] + failures))
log("PASS: %d usage errors and the refusals" % len(usage_errors))
