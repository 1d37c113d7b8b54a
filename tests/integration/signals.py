"""Every way a recording ends leaves no probe behind and a complete file: --duration, SIGINT,
SIGTERM, SIGHUP. SIGKILL leaves the group, which the next run (and --cleanup) removes, and only
groups whose recorder is gone."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

require_kernel()
label, exe, ver = pythons(include_system=False)[-1]
w = Workload(exe, "busy_calls.py")
w.go()


def releases(records):
    return len(intervals(records, kind=2))



try:
    # The recording is checked against what ran: the calls counted while it went on, and the
    # times around it on the recording clock. Its length has a floor (it must not stop early)
    # and no ceiling but rec.wait()'s: a slow recorder is not a wrong one.
    before = now_ns()
    rec = Recorder("--pid", w.pid, "--duration", "1")
    counts = []
    while rec.p.poll() is None:
        counts.append((w.count(), now_ns()))
        time.sleep(0.05)
    check(rec.wait() == 0, "--duration run failed: %s" % rec.err)
    after = now_ns()
    h, records, footer = read_recording(rec.files()[0])
    check(footer and footer["reason"] == "duration", "duration footer: %s" % footer)
    span = (footer["end_ns"] - h["start_ns"]) / 1e9
    check(span > 0.9, "a 1 s recording spans %.3f s" % span)
    check(before <= h["start_ns"] <= footer["end_ns"] <= after,
          "the recording's %d..%d is not within its recorder's run %d..%d"
          % (h["start_ns"], footer["end_ns"], before, after))
    inside = [c for c, t in counts if t <= footer["end_ns"]]
    if len(inside) >= 2:
        ran = inside[-1] - inside[0] - 1
        # A recorder slowed down (valgrind, a busy machine) may fall behind and the kernel
        # then drops events: they must be counted in the footer, never missing silently.
        check(releases(records) + footer["lost"] >= ran,
              "%d releases recorded (and %d events counted lost) of %d calls made while "
              "recording" % (releases(records), footer["lost"], ran))
    else:
        log("no two counts of the workload's calls within the 1 s: its releases not compared")
    check_no_probes()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        rec = Recorder("--pid", w.pid)
        ran = w.calls_made()
        rec.signal(sig)
        check(rec.wait() == 0, "%s: exit %s: %s" % (sig.name, rec.p.returncode, rec.err))
        h, records, footer = read_recording(rec.files()[0])
        check(footer and footer["reason"] == "signal", "%s footer: %s" % (sig.name, footer))
        check(releases(records) + footer["lost"] >= ran,
              "%s: %d releases recorded (and %d events counted lost) of %d calls made before it"
              % (sig.name, releases(records), footer["lost"], ran))
        check_no_probes()

    # SIGKILL: the group stays; the file is readable up to its last complete line (what was
    # written before the kill: the test waits for more than 10 lines before it kills).
    rec = Recorder("--pid", w.pid)
    rec.tail(w.pid).wait(lambda t: len(t.records) > 10, "gil-record writing 10 records")
    group = group_prefix(rec.p.pid)
    rec.signal(signal.SIGKILL)
    rec.wait()
    left = [l for l in probes_of_ours() if l[2:].startswith(group)]
    check(left, "SIGKILL left no group?! the test cannot see the leak it is meant to clean")
    path = rec.files()[0]
    with open(path) as f:
        lines = f.read().split("\n")
    # the last piece has no newline: a cut record, whatever it ends with
    complete = [l for l in lines[1:-1] if l.endswith(",")]
    check(len(complete) > 10, "killed recording kept only %d complete lines" % len(complete))
    # Groups that are not provably stale must survive the cleanup: a live process's (ours,
    # named as giltrace names them), one of a recorder in another pid namespace (whose pid
    # means nothing here), and one merely named gil_<dead pid> that giltrace did not make.
    with open("/proc/self/stat") as f:
        start = f.read().rsplit(")", 1)[1].split()[19]
    ns = os.stat("/proc/self/ns/pid").st_ino
    # a pid of this run's own: the valgrind and ASan passes run this test at once, and their
    # canaries, named alike, would collide (EEXIST)
    dead = 4000000 + ns % 100000
    while os.path.exists("/proc/%d" % dead):
        dead += 1
    canaries = ["gil_%d_%x_%s" % (os.getpid(), ns, start),
                # an inode below proc's dynamic range (0xf0000000 up) names no namespace: ns + 1
                # could be the namespace of a test running beside this one (tests/run-one.sh)
                "gil_%d_%x_%s" % (dead, 0xeffffff0, start),
                "gil_%d" % dead]
    libpython = [l.split()[-1] for l in open("/proc/%d/maps" % w.pid) if "libpython" in l][0]
    off = h["probes"][0]["offset"]
    for c in canaries:
        uprobe_write("p:%s/canary %s:%s" % (c, libpython, off))
    try:
        out = subprocess.run([GIL_RECORD, "--cleanup"], capture_output=True, text=True)
        check(out.returncode == 0, "--cleanup failed: %s" % out.stderr)
        check("removed 1 stale probe group" in out.stderr, "--cleanup said: %r" % out.stderr)
        now = [l.split()[0] for l in open(os.path.join(TRACING, "uprobe_events"))]
        check(not [l for l in now if l[2:].startswith(group)], "--cleanup left the stale group: %s" % now)
        for c in canaries:
            check("p:%s/canary" % c in now, "--cleanup removed %s, which is not provably stale" % c)
    finally:
        for c in canaries:
            uprobe_write("-:%s/canary" % c)

    # And a new recording cleans a stale group by itself.
    rec = Recorder("--pid", w.pid)
    group = group_prefix(rec.p.pid)
    rec.signal(signal.SIGKILL)
    rec.wait()
    check([l for l in probes_of_ours() if l[2:].startswith(group)], "no stale group to test with")
    rec = Recorder("--pid", w.pid, "--duration", "0.5")
    check(rec.wait() == 0, "run after a kill failed: %s" % rec.err)
    check(not [l for l in probes_of_ours() if l[2:].startswith(group)], "a new run did not remove the stale group")
finally:
    w.finish()
check_no_probes()
log("PASS")
