"""A fatal error at each setup step (injected with an LD_PRELOAD library) gives one clear line,
exit status 1, no probe group left in tracefs and no file left in the output directory."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

require_kernel()
so = os.path.join(tempfile.mkdtemp(), "fault.so")
check(subprocess.call(["cc", "-shared", "-fPIC", "-o", so, os.path.join(TOP_SRCDIR, "tests", "fault.c"),
                       "-ldl"]) == 0, "cannot build the fault library")
label, exe, ver = pythons(include_system=False)[-1]
w = Workload(exe, "busy_calls.py")
w.go()
cases = [
    # Every probe definition refused (a probe with attribution is retried without it).
    ("probe_write:1+", "cannot create uprobe "),
    ("probe_write:3+", "cannot create uprobe "),
    ("perf_event_open:1", "too many open files opening perf events for thread %d: raise ulimit -n" % w.pid),
    ("perf_event_open:5", "too many open files opening perf events for thread "),
    ("ring_mmap:1", "cannot map the ring buffer of CPU 0 (1024 pages): Cannot allocate memory (try a smaller --mmap-pages)"),
    ("set_output:1", "cannot share the ring buffer of CPU 0 between events: Invalid argument"),
    ("output_create:1", "/GIL_%d_rank_0.json: Permission denied" % w.pid),
]
failures = []
try:
    for spec, want in cases:
        out = tempfile.mkdtemp()
        env = dict(os.environ, LD_PRELOAD=so, GIL_FAULT=spec,
                   ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")
        p = subprocess.run([GIL_RECORD, "--pid", str(w.pid), "--duration", "1", "--output-dir", out],
                           env=env, capture_output=True, text=True, timeout=600)
        lines = p.stderr.splitlines()
        if p.returncode != 1 or len(lines) != 1 or not lines[0].startswith("gil-record: ") or want not in lines[0]:
            failures.append("%s: exit %d, stderr %r (want one line with %r)" % (spec, p.returncode, p.stderr, want))
        if os.listdir(out):
            failures.append("%s: left files %s" % (spec, os.listdir(out)))
        try:
            check_no_probes()
        except SystemExit:
            failures.append("%s: left probes" % spec)
        log("%-20s -> %s" % (spec, lines[0] if lines else ""))
    # The traced job never noticed.
    check(w.p.poll() is None, "the traced job died")

    # All-process mode: a process that exits while it is being attached is forgotten (no file,
    # no error), the recording goes on.
    victim = Workload(exe, "busy_calls.py")
    out = tempfile.mkdtemp()
    env = dict(os.environ, LD_PRELOAD=so, GIL_FAULT="vanish:1", GIL_FAULT_PID=str(victim.pid),
               ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")
    p = subprocess.run([GIL_RECORD, "--duration", "2", "--output-dir", out], env=env,
                       capture_output=True, text=True, timeout=600)
    victim.p.wait(10)
    check(victim.p.returncode == -9, "the fault library did not kill the victim (%s)" % victim.p.returncode)
    if p.returncode != 0:
        failures.append("vanish: exit %d: %r" % (p.returncode, p.stderr))
    if "GIL_%d_rank_0.json" % victim.pid in os.listdir(out):
        failures.append("vanish: a file was left for the process that vanished")
    check_no_probes()
    log("%-20s -> exit %d, files %s" % ("vanish:1", p.returncode, sorted(os.listdir(out))))
finally:
    w.finish()
if failures:
    fail("\n  ".join([""] + failures))
log("PASS")
