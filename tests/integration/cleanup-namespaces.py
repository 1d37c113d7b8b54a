"""gil-record --cleanup and pid namespaces: a group whose recorder lived in another pid namespace
is removed when that recorder is gone for sure, and only then.

- A recorder killed inside a pid namespace of its own (a killed test or container): its
  namespace dies with it. From the host's pid namespace, which sees every process, a group
  whose namespace has no process left is stale: removed. (From any other namespace it cannot be
  told from an ancestor's or a sibling's live one: kept.)
- A namespace that is alive and visible from here: a group of its live process is kept, one
  naming a pid with no process there is removed.
- A group naming a namespace no process is in (no such namespace): removed from the host's pid
  namespace only.
Runs in the host's pid namespace (its own would hide the others), alone: it cleans what it may.
"""
# giltest: exclusive
# giltest: host-pidns
import os
import re
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

INIT_PID_NS = 0xEFFFFFFC  # the kernel's initial pid namespace (PROC_PID_INIT_INO)

require_kernel()
label, exe, ver = pythons(include_system=False)[-1]
host = os.stat("/proc/self/ns/pid").st_ino == INIT_PID_NS


def child_of(pid):
    """The one child of @pid (unshare --fork's), waited for."""
    path = "/proc/%d/task/%d/children" % (pid, pid)
    wait_for(lambda: open(path).read().split(), "a child of %d" % pid)
    return int(open(path).read().split()[0])


def start_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def ns_of(pid):
    try:
        return os.stat("/proc/%s/ns/pid" % pid).st_ino
    except OSError:
        return None


def groups():
    """group -> its lines in uprobe_events."""
    out = {}
    for l in probes_of_ours():
        out.setdefault(l[2:].split("/")[0], []).append(l)
    return out


def cleanup():
    p = subprocess.run([GIL_RECORD, "--cleanup"], capture_output=True, text=True, timeout=HANG_S)
    check(p.returncode == 0, "--cleanup failed: %s" % p.stderr)
    m = re.search(r"removed (\d+) stale probe group", p.stderr)
    return int(m.group(1)) if m else 0, p.stderr


made, holders, ns = [], [], None
try:
    # A recorder in a pid namespace of its own, recording a process there, killed with it.
    code = ("import ctypes, time\nf = ctypes.CDLL(None).getppid\n"
            "while True:\n    f()\n    time.sleep(0.001)\n")
    outdir = tempfile.mkdtemp(prefix="gilrec-ns-")
    killed = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"] +
                              record_command() + ["-q", "-o", outdir, "--", exe, "-c", code],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    holders.append(killed)
    # the namespace of unshare's child, the recorder (unshare's own pid_for_children may not be
    # the new one yet when read at once)
    recorder = child_of(killed.pid)
    ns = os.stat("/proc/%d/ns/pid" % recorder).st_ino
    prefix = "gil_1_%x_" % ns  # the recorder is its namespace's pid 1
    wait_for(lambda: any(g.startswith(prefix) for g in groups()), "the recorder's probes")
    dead_group = [g for g in groups() if g.startswith(prefix)][0]
    # path:offset of a proven entry; the recorder names the descriptor it read
    spec = groups()[dead_group][0].split()[1]
    m = re.match(r"^/proc/self/fd/(\d+):", spec)
    if m:
        spec = os.readlink("/proc/%d/fd/%s" % (recorder, m.group(1))) + spec[m.end() - 1:]
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    # the namespace goes once its last process is reaped: none of its processes is left
    wait_for(lambda: not [p for p in os.listdir("/proc") if p.isdigit() and ns_of(p) == ns],
             "the killed namespace to empty")
    check(dead_group in groups(), "SIGKILL left no group: nothing to test with")

    # A live namespace, visible from here: a sleeper is its pid 1.
    live = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "sleep", "600"])
    holders.append(live)
    sleeper = child_of(live.pid)
    wait_for(lambda: os.readlink("/proc/%d/exe" % sleeper).endswith("sleep"), "sleep's exec")
    live_ns = os.stat("/proc/%d/ns/pid" % sleeper).st_ino
    alive = "gil_1_%x_%s" % (live_ns, start_of(sleeper))
    no_pid = "gil_7_%x_%s" % (live_ns, start_of(sleeper))
    # an inode below proc's dynamic range (0xf0000000 up) names no namespace
    no_ns = "gil_1_%x_%s" % (0xeffffff0, start_of(sleeper))
    for g in (alive, no_pid, no_ns):
        uprobe_write("p:%s/canary %s" % (g, spec))
        made.append(g)

    removed, said = cleanup()
    now = groups()
    want_gone = [no_pid] + ([dead_group, no_ns] if host else [])
    want_kept = [alive] + ([] if host else [dead_group, no_ns])
    for g in want_gone:
        check(g not in now, "--cleanup kept %s, whose recorder is gone for sure (%s)" % (g, said))
    for g in want_kept:
        check(g in now, "--cleanup removed %s, which is not provably stale" % g)
    check(removed == len(want_gone), "--cleanup said %r, want %d removed" % (said, len(want_gone)))
    log("host pid namespace: %s; removed %d: %s; kept %s" % (host, removed, want_gone, want_kept))
finally:
    for h in holders:
        if h.poll() is None:
            h.kill()
            h.wait()
    # what this test made and what its killed recorder left, if --cleanup did not remove them
    left = groups()
    ours = [g for g in left if g in made or (ns and g.startswith("gil_1_%x_" % ns))]
    # one line per probe, several probes per event: each event removed once
    for ev in sorted({l[2:].split(None, 1)[0] for g in ours for l in left[g]}):
        uprobe_write("-:%s" % ev)
check_no_probes()
log("PASS")
