"""gil-record --live in a real terminal (tmux: send-keys, capture-pane), on two threads that
contend for the GIL (tests/workloads/contention.py). The screen must show both threads, each
one's hold share of the second on screen equal to what the file's intervals give for that
second (within 2 percentage points: the screen rounds to 0.1), and the process's GIL held share
too. The sort keys and pause work, a resize to a tiny window and back does not end it, q ends
it with exit 0 and the terminal as it was (echo and canonical mode back); so does Ctrl+C, whose
file is complete. Without a terminal, --live is a usage error before any probe."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

require_kernel()
tmux = shutil.which("tmux")
if not tmux:
    if os.environ.get("CI") == "true":
        fail("tmux is missing: tools/deps.sh --test installs it")
    skip("no tmux (Debian: tmux)")

# no terminal: one line, exit 2, nothing placed
p = subprocess.run(record_command() + ["--live", "--pid", "1"], stdin=subprocess.DEVNULL,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(p.returncode == 2, "--live without a terminal exited %d: %s" % (p.returncode, p.stderr))
check(p.stderr.splitlines()[0] == "gil-record: --live needs a terminal on stdin and stdout: "
      "run it in one (for programs, use --metrics)", "the error: %r" % p.stderr)
check_no_probes()

py = [exe for _, exe, ver in pythons(include_system=False) if ver >= (3, 8)][-1]
work = tempfile.mkdtemp(prefix="live-")
os.chmod(work, 0o755)
sock = "giltest-live-%d" % os.getpid()
env = dict(os.environ, TERM="xterm-256color")
if os.environ.get("GIL_VALGRIND") == "1":
    env["LD_LIBRARY_PATH"] = os.path.join(TOP_BUILDDIR, ".libs")


def tm(*args, check_rc=True):
    r = subprocess.run([tmux, "-L", sock, "-f", "/dev/null"] + list(args), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(not check_rc or r.returncode == 0, "tmux %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


def screen():
    """The pane's text once two captures in a row agree (not caught mid-redraw)."""
    last = None
    while True:
        now = tm("capture-pane", "-p", "-t", "live")
        if now == last:
            return now
        last = now
        time.sleep(0.2)


def second_on(text):
    m = re.search(r"^gil-record --live +second (\d+) of the recording", text, re.M)
    return int(m.group(1)) if m else None


def rows(text, pid):
    """The thread rows under process @pid: tid -> (wait%, hold%, release%) of the second."""
    out, inside = {}, False
    for line in text.splitlines():
        if line.startswith("PID "):
            inside = line.startswith("PID %d " % pid)
            continue
        m = re.match(r"^ *(\d+) +\S+ +([\d.]+) +([\d.]+) +([\d.]+) ", line)
        if inside and m:
            out[int(m.group(1))] = tuple(float(x) for x in m.group(2, 3, 4))
    return out


def held_on(text, pid):
    m = re.search(r"^PID %d .*GIL held +([\d.]+)%%" % pid, text, re.M)
    return float(m.group(1)) if m else None


pending = []  # the done directory of the gil-record running in the pane


def run_live(outdir, done):
    pending[:] = [done]
    cmd = " ".join(record_command() + ["--live", "--pid", str(w.pid), "--output-dir", outdir])
    tm("send-keys", "-t", "live", "%s; echo RC=$? > %s/rc; stty -a > %s/stty" % (cmd, done, done),
       "Enter")


def sane(done):
    """The terminal as a shell wants it, after gil-record ended: its rc."""
    wait_for(lambda: os.path.exists(done + "/stty") and os.path.getsize(done + "/stty"),
             "the shell running stty after gil-record")
    stty = open(done + "/stty").read()
    check(re.search(r"(^|\s)icanon\b", stty) and re.search(r"(^|\s)echo\b", stty),
          "the terminal was not given back (no icanon/echo): %s" % stty)
    return open(done + "/rc").read().strip()


w = Workload(py, "contention.py", 2, 600)
w.go()
tids = set()
try:
    tm("new-session", "-d", "-s", "live", "-x", "200", "-y", "50", "sh")
    out1, done1 = os.path.join(work, "out1"), os.path.join(work, "done1")
    os.mkdir(done1)
    run_live(out1, done1)
    # two complete seconds on screen, with both spinners
    text = wait_for(lambda: (lambda t: (second_on(t) or 0) >= 2 and
                             len(rows(t, w.pid)) >= 2 and t)(screen()),
                    "the live view showing the spinners")
    log(text)
    second, shown, held = second_on(text), rows(text, w.pid), held_on(text, w.pid)
    tids = {tid for tid, (wait, hold, rel) in shown.items() if hold > 20}
    check(len(tids) == 2, "want two threads holding the GIL a good part of second %d: %s"
          % (second, shown))
    # sort by tid, then pause: the second on screen stays
    tm("send-keys", "-t", "live", "n")
    wait_for(lambda: "(by tid)" in screen(), "the view sorting by tid")
    tm("send-keys", "-t", "live", " ")
    paused = wait_for(lambda: (lambda t: "PAUSED" in t and t)(screen()), "the view pausing")
    time.sleep(2.5)
    check(second_on(screen()) == second_on(paused), "the second changed while paused")
    tm("send-keys", "-t", "live", " ")
    wait_for(lambda: (second_on(screen()) or 0) > second_on(paused), "the view going on")
    # a tiny window and back: it goes on
    tm("resize-window", "-t", "live", "-x", "40", "-y", "6")
    time.sleep(1.5)
    check(screen().startswith("gil-record --live"), "the view after a resize: %r" % screen())
    tm("resize-window", "-t", "live", "-x", "200", "-y", "50")
    now = second_on(screen())
    wait_for(lambda: (second_on(screen()) or 0) > now and len(rows(screen(), w.pid)) >= 2,
             "the view after the window grew again")
    tm("send-keys", "-t", "live", "q")
    rc = sane(done1)
    check(rc == "RC=0", "gil-record --live after q: %s" % rc)

    # a terminal ncurses does not know: a usage error, before any probe
    done3 = os.path.join(work, "done3")
    os.mkdir(done3)
    pending[:] = [done3]
    tm("send-keys", "-t", "live", "TERM=nosuchterm %s --live --pid %d 2> %s/err; echo RC=$? > "
       "%s/rc; stty -a > %s/stty" % (" ".join(record_command()), w.pid, done3, done3, done3),
       "Enter")
    rc = sane(done3)
    err = open(done3 + "/err").read()
    check(rc == "RC=2" and err.startswith("gil-record: --live cannot drive this terminal "
                                          "(TERM=nosuchterm): set TERM"),
          "--live with an unknown TERM: %s, %r" % (rc, err))
    check_no_probes()

    # Ctrl+C: the same way out, and a complete file
    out2, done2 = os.path.join(work, "out2"), os.path.join(work, "done2")
    os.mkdir(done2)
    run_live(out2, done2)
    wait_for(lambda: (second_on(screen()) or 0) >= 1, "the second live view")
    tm("send-keys", "-t", "live", "C-c")
    rc = sane(done2)
    check(rc == "RC=0", "gil-record --live after Ctrl+C: %s" % rc)
    h2, r2, f2 = read_recording(files_by_pid(out2)[str(w.pid)])
    check(f2 and f2["reason"] == "signal", "the Ctrl+C file's footer: %s" % f2)
finally:
    # a failure above leaves gil-record running: q, and its probes are gone before we look
    if pending and not os.path.exists(pending[0] + "/rc"):
        tm("send-keys", "-t", "live", "q", check_rc=False)
        try:
            wait_for(lambda: os.path.exists(pending[0] + "/rc"), "gil-record ending on q", 60)
        finally:
            tm("kill-server", check_rc=False)
    tm("kill-server", check_rc=False)
    w.kill()

# the screen's second against the file's intervals clipped to it
header, records, footer = read_recording(files_by_pid(out1)[str(w.pid)])
lo = header["start_ns"] + second * 1000000000
hi = lo + 1000000000
total = 0
for tid in sorted(tids):
    ns = sum(max(0, min(r[2] + r[3], hi) - max(r[2], lo)) for r in intervals(records, tid, 1))
    total += ns
    log("thread %d second %d: hold %.1f%% on screen, %.3f%% in the file"
        % (tid, second, shown[tid][1], ns / 1e7))
    check(abs(ns / 1e7 - shown[tid][1]) <= 2.0,
          "thread %d's hold share of second %d: %.1f%% on screen, %.3f%% in the file"
          % (tid, second, shown[tid][1], ns / 1e7))
ns = sum(max(0, min(r[2] + r[3], hi) - max(r[2], lo)) for r in intervals(records, None, 1))
check(abs(ns / 1e7 - held) <= 2.0, "the process's GIL held share of second %d: %.1f%% on screen, "
      "%.3f%% in the file" % (second, held, ns / 1e7))
check_no_probes()
