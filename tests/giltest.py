"""Helpers for giltrace's integration tests: real interpreters, real probes, real files.

Automake's protocol: exit 0 pass, 77 skip, 99 hard error, anything else fail. Under CI=true a
missing capability (root, tracefs, uprobes) is a failure, not a skip.
"""
import atexit
import glob
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref

TOP_SRCDIR = os.environ.get("top_srcdir", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOP_BUILDDIR = os.environ.get("top_builddir", TOP_SRCDIR)
GIL_RECORD = os.path.join(TOP_BUILDDIR, "gil-record")
GIL_CONVERT = os.path.join(TOP_BUILDDIR, "gil-convert")
WORKLOADS = os.path.join(TOP_SRCDIR, "tests", "workloads")
TRACING = "/sys/kernel/tracing"
KIND = {0: "take_gil", 1: "hold_gil", 2: "drop_gil"}
F_BEGIN_UNKNOWN, F_TRUNCATED, F_LOST, F_RESYNC = 1, 2, 4, 8


def _scratch():
    """Every temporary file and directory of this test goes under one directory, removed when
    the test ends however it ends (short of SIGKILL), so that runs leave nothing in /tmp."""
    name = re.sub(r"[^\w-]", "", os.path.splitext(os.path.basename(sys.argv[0]))[0]) or "test"
    d = tempfile.mkdtemp(prefix="giltest-%s-" % name)
    os.chmod(d, 0o755)  # commands launched as another user reach their files below
    tempfile.tempdir = d
    atexit.register(shutil.rmtree, d, True)
    return d


SCRATCH = _scratch()
# gil-record's object cache (objcache.c): one per test, so that no test sees another's entries
os.environ.setdefault("GIL_OBJECT_CACHE", os.path.join(SCRATCH, "objects"))


def log(*a):
    print(*a, flush=True)


def skip(why):
    if os.environ.get("CI") == "true":
        log("FAIL (CI=true, so no skipping): " + why)
        sys.exit(1)
    log("SKIP: " + why)
    sys.exit(77)


def fail(why):
    log("FAIL: " + why)
    sys.exit(1)


def check(cond, why):
    if not cond:
        fail(why)


def now_ns():
    """The recording clock (a header's "clock": CLOCK_MONOTONIC_RAW), to set what ran against
    what was recorded."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)


# How long a gil-record run (or a wait on its output) may take before a test calls it hung. Not
# a speed check: under ASan, beside the valgrind and arm64 passes on 2 cores, a 1 s recording of
# a cold interpreter (its DWARF read) went past 60 s and 120 s.
HANG_S = 600


def wait_for(cond, what, timeout=HANG_S, every=0.05):
    """Poll cond() until it gives a true value, and return that. A test waits for the event it
    needs, never for a fixed time: the deadline only catches a hang (a sanitizer build or a busy
    machine is slower, not wrong), and says what did not happen (@what, or what() then)."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            fail("%s: not within %d s" % (what() if callable(what) else what, timeout))
        time.sleep(every)


def require_kernel():
    """Root, tracefs and uprobe events, or skip (fail under CI)."""
    if os.geteuid() != 0:
        skip("needs root")
    if not os.path.exists(os.path.join(TRACING, "uprobe_events")):
        subprocess.call(["mount", "-t", "tracefs", "nodev", TRACING],
                        stderr=subprocess.DEVNULL)
    if not os.path.exists(os.path.join(TRACING, "uprobe_events")):
        skip("tracefs with uprobe_events not available at " + TRACING)
    if not os.access(GIL_RECORD, os.X_OK):
        fail("gil-record not built at " + GIL_RECORD)


def pyenv_root():
    return os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def version_of(python):
    out = subprocess.check_output([python, "-c",
                                   "import sys; print('%d.%d.%d' % sys.version_info[:3])"])
    return out.decode().strip()


def pythons(min_version=(3, 6), include_system=True):
    """Every CPython on the machine: pyenv builds and the distribution's, as (label, path)."""
    found = []
    for d in sorted(glob.glob(os.path.join(pyenv_root(), "versions", "*"))):
        name = os.path.basename(d)
        m = re.match(r"^(\d+)\.(\d+)\.(\d+)$", name)
        if not m:
            continue
        ver = tuple(int(x) for x in m.groups())
        exe = os.path.join(d, "bin", "python%d.%d" % ver[:2])
        if ver[:2] >= min_version and os.access(exe, os.X_OK):
            found.append(("pyenv-" + name, exe, ver))
    if include_system:
        for exe in sorted(glob.glob("/usr/bin/python3.[0-9]*")):
            if not re.match(r".*/python3\.\d+$", exe):
                continue
            ver = tuple(int(x) for x in version_of(exe).split("."))
            if ver[:2] >= min_version:
                found.append(("system-" + ".".join(map(str, ver)), exe, ver))
    found.sort(key=lambda x: (x[2], x[0]))
    return found


def quick():
    """Under ASan (GIL_SANITIZED) or GIL_TEST_QUICK: a test that runs the same code in many
    variants keeps one of each kind of code path."""
    return bool(os.environ.get("GIL_SANITIZED") or os.environ.get("GIL_TEST_QUICK"))


def sweep(interpreters):
    """The interpreters a test that repeats the same recording on each of them goes through:
    all of them, but every third and the last under ASan (GIL_SANITIZED, tools/test.sh's pass;
    each cold DWARF read takes a minute there) or GIL_TEST_QUICK. The oldest, the newest and
    some between still run the version-dependent code under the sanitizers."""
    if not quick():
        return interpreters
    few = interpreters[::3]
    return few + interpreters[-1:] if interpreters and interpreters[-1] not in few else few


def has_debug_symbols(exe):
    """Debian: the binary is stripped; python3.X-dbg installs /usr/lib/debug/.build-id/..."""
    out = subprocess.run(["readelf", "-n", exe], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m:
        return False
    bid = m.group(1)
    if os.path.exists("/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])):
        return True
    syms = subprocess.run(["readelf", "-sW", exe], capture_output=True, text=True).stdout
    return " take_gil" in syms


class Workload:
    """A Python program that prints 'ready <pid>', waits for a line, works, prints 'done'."""

    def __init__(self, python, script, *args, env=None):
        self.p = subprocess.Popen([python, "-u", os.path.join(WORKLOADS, script)] + [str(a) for a in args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env)
        line = self.readline(60)
        check(line.startswith("ready "), "workload %s did not start: %r" % (script, line))
        self.pid = int(line.split()[1])

    def threads_state(self):
        """Each thread's name, state, kernel wait channel and kernel stack: what a hung workload
        waits for."""
        out = []
        base = "/proc/%d/task" % self.p.pid
        for tid in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            def read(name):
                try:
                    with open(os.path.join(base, tid, name)) as f:
                        return f.read().strip()
                except OSError as e:
                    return "(%s)" % e.strerror
            stat = read("stat")
            state = stat[stat.rfind(")") + 2:].split()[0] if ")" in stat else "?"
            out.append("thread %s %s: state %s, wchan %s, stack: %s"
                       % (tid, read("comm"), state, read("wchan"),
                          " <- ".join(l.split()[-1] for l in read("stack").splitlines()[:8])))
        return "\n".join(out)

    pending = b""  # what was read of its output past the last line returned

    def readline(self, timeout):
        """Its next line, waiting at most @timeout seconds of silence. The pipe is read here,
        not through Python's buffered reader: two lines that come in one read (a 'done' and
        the line after it) must not leave the second in a buffer that select() cannot see."""
        fd = self.p.stdout.fileno()
        while b"\n" not in self.pending:
            r, _, _ = select.select([fd], [], [], timeout)
            if not r:
                log("workload %d silent; its threads:\n%s" % (self.p.pid,
                                                             self.threads_state()))
                self.kill()
                fail("workload silent for %ss" % timeout)
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self.pending += chunk
        raw, nl, self.pending = self.pending.partition(b"\n")
        line = (raw + nl).decode("utf-8", "replace")
        if not line:
            # it ended: say how (a signal is what a wrong probe address would give)
            try:
                rc = self.p.wait(10)
            except subprocess.TimeoutExpired:
                rc = None
            how = ("killed by %s" % signal.Signals(-rc).name) if rc is not None and rc < 0 \
                else "exit status %s" % rc
            fail("workload %s ended before its next line: %s" % (" ".join(self.p.args[:3]),
                                                                   how))
        return line

    went = False  # told to go: its main thread ends up reading stdin until it closes

    def go(self, line="go"):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        self.went = True

    def count(self):
        """busy_calls.py after go: the calls its loop has made so far. The calls between two
        counts taken while a recorder runs are all in its recording."""
        self.p.stdin.write("count\n")
        self.p.stdin.flush()
        line = self.readline(120)
        check(line.startswith("count "), "busy_calls.py answered %r" % line)
        return int(line.split()[1])

    def calls_made(self, more=101):
        """busy_calls.py after go: count its calls from now until @more more were made, and
        return how many releases that makes for certain (one call may have begun before the
        first count). With a recorder running all the while, all are in its recording."""
        c0 = self.count()

        def made():
            c = self.count()
            return c >= c0 + more and c
        return wait_for(made, "busy_calls.py making %d calls" % more) - c0 - 1

    def poke(self):
        """An empty line: the main thread, reading stdin after go, wakes and reads again (it
        takes and releases the GIL), and every workload ignores the line."""
        try:
            self.p.stdin.write("\n")
            self.p.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def wait_done(self, timeout=120):
        """The 'done' line's words. A workload that says how far it got ('progress ...' lines)
        may take as long as it needs: @timeout is then the longest silence, which only a hang
        exceeds."""
        line = self.readline(timeout)
        while line.startswith("progress "):
            line = self.readline(timeout)
        check(line.startswith("done"), "workload did not finish: %r" % line)
        return line.split()[1:]

    def finish(self, timeout=60):
        if self.p.poll() is None and self.went:
            linger(self.pid, self.poke)
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        return self.p.wait(timeout)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


LINGER_TIMEOUT_S = HANG_S  # the arm64 pass sets its own
# the gil-records a test started and holds (Recorder, distrolib's FileRecorder); weak, so that
# each goes (its files closed) when the test lets go of it, before the scratch directory does
RECORDERS = weakref.WeakSet()


def linger(pid, poke):
    """Before a workload exits: by default gil-record names a function from the process's
    memory, read when it drains its rings, so a process that exits before that leaves it
    unnamed (said so: tested in attribution-modes.py). Workload.finish() lets every running
    recorder of @pid read first: @poke() makes the main thread (tid @pid) take and release the
    GIL, and its intervals after now in a recorder's file mean that recorder has drained
    everything before them (it writes in time order, once all events up to then are in)."""
    tails = [Tail(f) for r in RECORDERS if r.p.poll() is None
             for f in glob.glob(os.path.join(r.outdir, "GIL_%d_rank_*.json" % pid))]
    if not tails:
        return
    since = now_ns()
    poke()

    def read_past():
        for t in list(tails):
            t.poll()
            if t.footer is not None or any(isinstance(r, list) and r[0] == pid and r[2] >= since
                                           for r in t.new):
                tails.remove(t)
        return not tails
    wait_for(read_past, lambda: "gil-record recording process %d's main thread after it was "
             "poked (%s)" % (pid, ", ".join(t.path for t in tails)), LINGER_TIMEOUT_S)


class Tail:
    """A recording as far as gil-record has written it, read on from where the last poll()
    stopped. Each record is one line; gil-record writes the ",\n" that ends a line before the
    next record, so the last record written has none yet: it is taken once it parses (a cut
    array or object does not)."""

    def __init__(self, path):
        self.path, self.pos = path, 0
        self.header, self.footer, self.records, self.new = None, None, [], []

    def poll(self):
        self.new = []
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return self
        pieces = data.split(b"\n")
        for i, raw in enumerate(pieces):
            last = i == len(pieces) - 1
            line = raw.decode("utf-8", "replace").strip(",")
            if last and line.startswith('{"format"'):
                break  # the first line, being written
            if line and not line.startswith('{"format"') and line != "]}":
                try:
                    rec = json.loads(line)
                except ValueError:
                    if last:
                        break  # the rest is being written
                    raise
                if isinstance(rec, dict) and "header" in rec:
                    self.header = rec["header"]
                elif isinstance(rec, dict) and "footer" in rec:
                    self.footer = rec["footer"]
                else:
                    self.new.append(rec)
            self.pos += len(raw) + (not last)
        self.records += self.new
        return self

    def wait(self, cond, what, timeout=HANG_S):
        """Poll until cond(self) holds (a hang-catching deadline)."""
        return wait_for(lambda: cond(self.poll()), what, timeout)


def record_command():
    """gil-record, or under GIL_VALGRIND=1 the real binary under valgrind (errors exit 97)."""
    if os.environ.get("GIL_VALGRIND") == "1":
        real = os.path.join(TOP_BUILDDIR, ".libs", "gil-record")
        return ["valgrind", "-q", "--vgdb=no", "--error-exitcode=97", "--leak-check=full",
                "--errors-for-leak-kinds=definite", "--show-leak-kinds=definite", real]
    return [GIL_RECORD]


class Recorder:
    """gil-record in the background; waits until its probes are live."""

    def __init__(self, *args, outdir=None):
        self.outdir = outdir or tempfile.mkdtemp(prefix="gilrec-")
        self.args = record_command() + ["--output-dir", self.outdir] + [str(a) for a in args]
        env = dict(os.environ)
        if os.environ.get("GIL_VALGRIND") == "1":
            env["LD_LIBRARY_PATH"] = os.path.join(TOP_BUILDDIR, ".libs")
        # stderr goes to a file: nothing is lost between "recording" and the end. It lives in
        # the scratch directory, which goes when the test ends.
        self.errfile = tempfile.NamedTemporaryFile(prefix="gilrec-err-", suffix=".txt",
                                                   delete=False)
        self.p = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=self.errfile,
                                  text=True, env=env)
        self.err = ""
        if not self.wait_for_text(r"recording", fatal=False):
            fail("gil-record did not start (rc %s): %s" % (self.p.poll(), self.err))
        RECORDERS.add(self)

    def wait_for_text(self, regex, timeout=HANG_S, fatal=True):
        """Wait until gil-record's stderr has a line matching @regex (its match), or it ended
        (None, or a failure if @fatal)."""
        def seen():
            done = self.p.poll() is not None
            self.err = open(self.errfile.name).read()
            return re.search(regex, self.err, re.M) or (done and "ended")
        got = wait_for(seen, lambda: "gil-record printing /%s/: %r" % (regex, self.err[-400:]),
                       timeout)
        if got == "ended":
            check(not fatal, "gil-record ended (rc %s) without printing /%s/: %s"
                  % (self.p.returncode, regex, self.err))
            return None
        return got

    def tail(self, pid, timeout=HANG_S):
        """A Tail of the recording of process @pid, once its file is there."""
        files = wait_for(lambda: glob.glob(os.path.join(self.outdir, "GIL_%d_rank_*.json" % pid)),
                         "gil-record creating the file of process %d" % pid, timeout)
        return Tail(files[0])

    def signal(self, sig=signal.SIGINT):
        self.p.send_signal(sig)

    def wait(self, timeout=HANG_S):
        self.p.wait(timeout=timeout)
        self.err = open(self.errfile.name).read()
        return self.p.returncode

    def files(self):
        return sorted(glob.glob(os.path.join(self.outdir, "GIL_*_rank_*.json")))


def files_by_pid(outdir):
    """The recordings in @outdir by pid (as a string): GIL_<pid>_rank_<r>.json."""
    return {f.split("_")[1]: os.path.join(outdir, f) for f in os.listdir(outdir)
            if f.startswith("GIL_") and f.endswith(".json")}


def wait_recorder(p, what):
    """gil-record @p's exit status and its stderr, or the test fails after HANG_S (a hang)."""
    try:
        rc = p.wait(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        fail("%s: gil-record did not end within %d s" % (what, HANG_S))
    return rc, p.stderr.read() if p.stderr else ""


def read_recording(path):
    """An independent reader of doc/format.md: returns (header, records, footer)."""
    with open(path) as f:
        first = f.readline()
        check(first == '{"format":"giltrace","version":1,"records":[\n',
              "bad first line in %s: %r" % (path, first))
        header, footer, records = None, None, []
        for line in f:
            line = line.rstrip("\n")
            if line == "]}":
                break
            rec = json.loads(line[:-1] if line.endswith(",") else line)
            if isinstance(rec, dict) and "header" in rec:
                header = rec["header"]
            elif isinstance(rec, dict) and "footer" in rec:
                footer = rec["footer"]
            else:
                records.append(rec)
    # A complete file is also plain JSON.
    if footer is not None:
        with open(path) as f:
            json.load(f)
    return header, records, footer


def intervals(records, tid=None, kind=None):
    out = []
    for r in records:
        if isinstance(r, list) and (tid is None or r[0] == tid) and (kind is None or r[1] == kind):
            out.append(r)
    return out


def probes_of_ours():
    """Lines in uprobe_events that belong to a giltrace group (gil_<pid>_<pidns>_<start>)."""
    try:
        with open(os.path.join(TRACING, "uprobe_events")) as f:
            return [l for l in f.read().splitlines() if re.match(r"^[pr]:gil_\d+_[0-9a-f]+_\d+/", l)]
    except OSError:
        return []


def group_owner_gone(group):
    """Is the recorder that made group gil_<pid>_<pidns>_<start> gone for sure? As --cleanup
    decides: only a group of our pid namespace whose pid names no process now, or one that
    started at another time. Tracefs is shared by all pid namespaces on the kernel, and a
    recorder in a container has a pid that says nothing here."""
    m = re.match(r"^gil_(\d+)_([0-9a-f]+)_(\d+)$", group)
    if not m or int(m.group(2), 16) != os.stat("/proc/self/ns/pid").st_ino:
        return False
    try:
        with open("/proc/%s/stat" % m.group(1)) as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return True
    return start != m.group(3)


def group_prefix(pid):
    """The start of the probe group name a recorder of ours with this pid makes: with our pid
    namespace, since a recorder in a container may have the same pid in its own."""
    return "gil_%d_%x_" % (pid, os.stat("/proc/self/ns/pid").st_ino)


def check_no_probes():
    """No group of a recorder that is gone: a leak (live recorders' groups are theirs)."""
    left = [l for l in probes_of_ours() if group_owner_gone(l[2:].split("/")[0])]
    check(not left, "probe groups left behind: %s" % left)


# The unprivileged user the hostile-* tests attack as, and the command prefix that becomes it.
NOBODY_UID = 65534
AS_NOBODY = ["setpriv", "--reuid=%d" % NOBODY_UID, "--regid=%d" % NOBODY_UID, "--clear-groups"]


def uprobe_write(line):
    """Append one command to uprobe_events (never opened for truncation: that clears them all)."""
    fd = os.open(os.path.join(TRACING, "uprobe_events"), os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def nobody_home(prefix):
    """A directory for a test that attacks as nobody: (the work directory, root's and readable
    by all, and nobody's home inside it)."""
    work = tempfile.mkdtemp(prefix=prefix)
    os.chmod(work, 0o755)
    home = os.path.join(work, "home")
    os.mkdir(home)
    os.chown(home, NOBODY_UID, NOBODY_UID)
    return work, home


def debuglinked_library(work, home, name, link):
    """nobody's stripped library @name in @home, with a build-id and a .gnu_debuglink naming
    @link beside it, the unstripped original (root's until the caller changes it): (its path,
    the debug file's path)."""
    for tool in ("cc", "objcopy", "strip"):
        check(shutil.which(tool), "%s is needed (binutils)" % tool)
    src = os.path.join(work, name + ".c")
    with open(src, "w") as f:
        f.write("int f(void) { return 42; }\n")
    lib = os.path.join(home, name)
    subprocess.run(["cc", "-shared", "-fPIC", "-g", "-Wl,--build-id", "-o", lib, src], check=True)
    dbg = os.path.join(home, link)
    shutil.copy(lib, dbg)
    subprocess.run(["strip", "--strip-all", lib], check=True)
    subprocess.run(["objcopy", "--add-gnu-debuglink=" + dbg, lib], check=True)
    os.chown(lib, NOBODY_UID, NOBODY_UID)
    return lib, dbg
