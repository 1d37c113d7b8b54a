"""Shared helpers for giltrace's benchmarks: workloads, tracers, probe groups, medians, tables.

Every benchmark measures its variants side by side in one run: rep after rep, each rep running
every variant once in a rotated order, and reports medians (this VM drifts; absolute numbers do
not carry from one run to the next, ratios measured together do).

Probes for the kernel floor and `perf record` live in a tracefs group of our own,
gilbench_<pid>_<pidns>, created from the sites gil-record itself chose (read from a recording's
header), and removed on every exit path. No other group is ever touched.
"""
import argparse
import atexit
import glob
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
TOP_SRCDIR = os.environ.get("top_srcdir") or os.path.dirname(BENCH_DIR)
TOP_BUILDDIR = os.environ.get("top_builddir") or TOP_SRCDIR
GIL_RECORD = os.environ.get("GIL_RECORD") or os.path.join(TOP_BUILDDIR, "gil-record")
GIL_CONVERT = os.environ.get("GIL_CONVERT") or os.path.join(TOP_BUILDDIR, "gil-convert")
WORKLOADS = os.path.join(BENCH_DIR, "workloads")
TRACING = "/sys/kernel/tracing"
PERF = os.environ.get("PERF") or shutil.which("perf") or "perf"
SKIP = 77


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def out(*a):
    print(*a, flush=True)


def skip(why):
    """Automake's skip; under CI=true a missing capability is a failure."""
    if os.environ.get("CI") == "true":
        log("FAIL (CI=true, so no skipping): " + why)
        sys.exit(1)
    log("SKIP: " + why)
    sys.exit(SKIP)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def default_python():
    """The interpreter the workloads run on: $GILBENCH_PYTHON, pyenv 3.12.1, the newest pyenv."""
    env = os.environ.get("GILBENCH_PYTHON")
    if env:
        return env
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    pref = os.path.join(root, "versions", "3.12.1", "bin", "python3")
    if os.access(pref, os.X_OK):
        return pref
    found = []
    for d in glob.glob(os.path.join(root, "versions", "3.*")):
        m = re.match(r"^3\.(\d+)\.(\d+)$", os.path.basename(d))
        exe = os.path.join(d, "bin", "python3")
        if m and int(m.group(1)) >= 8 and os.access(exe, os.X_OK):
            found.append(((int(m.group(1)), int(m.group(2))), exe))
    return max(found)[1] if found else sys.executable


def python_version(python):
    return subprocess.check_output(
        [python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"], text=True).strip()


def require_recording():
    """Root, tracefs with uprobe events, perf and a built gil-record; else skip."""
    if os.geteuid() != 0:
        skip("needs root (uprobes and perf events)")
    if not os.path.exists(os.path.join(TRACING, "uprobe_events")):
        subprocess.call(["mount", "-t", "tracefs", "nodev", TRACING], stderr=subprocess.DEVNULL)
    if not os.path.exists(os.path.join(TRACING, "uprobe_events")):
        skip("tracefs with uprobe_events not available at " + TRACING)
    if not os.access(GIL_RECORD, os.X_OK):
        skip("gil-record not built at " + GIL_RECORD)


def have_perf():
    try:
        return subprocess.run([PERF, "--version"], capture_output=True).returncode == 0
    except OSError:
        return False


def machine():
    """One line describing where the numbers come from."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return "%s, %d CPUs, %.0f GiB, Linux %s" % (model, os.cpu_count(), mem, os.uname().release)


def table(headers, rows, aligns=None):
    """A Markdown table; numbers are formatted by the caller."""
    rows = [[str(c) for c in r] for r in rows]
    w = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
         for i, h in enumerate(headers)]
    aligns = aligns or ["l"] + ["r"] * (len(headers) - 1)

    def fmt(cells):
        return "| " + " | ".join(c.ljust(w[i]) if aligns[i] == "l" else c.rjust(w[i])
                                 for i, c in enumerate(cells)) + " |"
    lines = [fmt(headers),
             "|" + "|".join(("-" * (w[i] + 1) + ":") if aligns[i] == "r" else "-" * (w[i] + 2)
                            for i in range(len(headers))) + "|"]
    lines += [fmt(r) for r in rows]
    return "\n".join(lines)


def fnum(x, digits=0, suffix=""):
    if x is None:
        return "-"
    if digits == 0:
        return "{:,.0f}{}".format(x, suffix)
    return "{:,.{}f}{}".format(x, digits, suffix)


def rep_args(doc, reps, seconds, python=None, quick=(1, 0.3)):
    """The options every side-by-side benchmark takes (--quick, --reps, --seconds, --python),
    parsed; then the checks they all make (root, tracefs) and the signal cleanup."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one short rep (smoke test)")
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--seconds", type=float, default=seconds)
    ap.add_argument("--python", default=python)
    a = ap.parse_args()
    if a.quick:
        a.reps, a.seconds = quick
    require_recording()
    install_signal_cleanup()
    return a


def rotated(items, k):
    k %= len(items)
    return items[k:] + items[:k]


# ---- processes ------------------------------------------------------------------------------

def proc_hwm_kb(pid):
    """Peak RSS (VmHWM) of a live process, in KiB; None once it has exited."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def interrupt(p):
    """SIGINT to @p (a Popen) without reaping it: Popen.send_signal() polls first (Python 3.9+),
    which reaps a tracer that already ended by itself (perf -p and gil-record --pid end when
    their targets exit) and leaves wait_rusage() nothing to wait for. A zombie keeps its pid,
    so the signal cannot reach another process."""
    if p.returncode is None:
        try:
            os.kill(p.pid, signal.SIGINT)
        except ProcessLookupError:
            pass


def wait_rusage(p, timeout, hwm=0):
    """Reap @p (a Popen) with wait4: (returncode, cpu seconds, peak RSS in KiB).

    The peak RSS is VmHWM polled every 5 ms until exit (@hwm: a peak seen before), not
    wait4's ru_maxrss: that one keeps the high-water mark of the image before exec, i.e. of
    this Python harness the child was forked from.
    """
    deadline = time.time() + timeout
    while True:
        h = proc_hwm_kb(p.pid)
        if h and h > hwm:
            hwm = h
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.time() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.005)
    p.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") \
        else (os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status))
    return p.returncode, ru.ru_utime + ru.ru_stime, hwm


def proc_cpu_split(pid):
    """(utime, stime) of a live process from /proc/<pid>/stat, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / os.sysconf("SC_CLK_TCK"), int(fields[12]) / os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    """utime + stime of a live process from /proc/<pid>/stat."""
    return sum(proc_cpu_split(pid))


def proc_rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Workload:
    """A bench workload: prints 'ready <pid>', waits for a line, works, prints 'done N SECONDS'."""

    def __init__(self, python, script, *args):
        self.p = subprocess.Popen([python, "-u", os.path.join(WORKLOADS, script)] +
                                  [str(a) for a in args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        line = self._readline(60)
        if not line.startswith("ready "):
            self.kill()
            raise RuntimeError("workload %s did not start: %r" % (script, line))
        self.pid = int(line.split()[1])

    def _readline(self, timeout):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not r:
            self.kill()
            raise RuntimeError("workload silent for %ss" % timeout)
        return self.p.stdout.readline()

    def go(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()

    def wait_done(self, timeout=300):
        """(operations, seconds) as the workload measured them."""
        line = self._readline(timeout)
        if not line.startswith("done "):
            raise RuntimeError("workload did not finish: %r" % line)
        _, n, s = line.split()
        return int(n), float(s)

    def finish(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


# ---- probe sites and our own probe group ------------------------------------------------------

def read_recording(path):
    """(header, intervals, other records, footer) of a giltrace recording (doc/format.md)."""
    header = footer = None
    ivs, other = [], []
    with open(path) as f:
        f.readline()
        for line in f:
            line = line.rstrip("\n")
            if line == "]}":
                break
            if line.endswith(","):
                line = line[:-1]
            try:
                rec = json.loads(line)
            except ValueError:
                break  # a cut recording: stop at the first incomplete line
            if isinstance(rec, list):
                ivs.append(rec)
            elif "header" in rec:
                header = rec["header"]
            elif "footer" in rec:
                footer = rec["footer"]
            else:
                other.append(rec)
    return header, ivs, other, footer


def stop_recorder(p, timeout=600):
    """Ctrl+C to gil-record @p (a Popen) and reap it: (cpu seconds, peak RSS in KiB), or a
    RuntimeError with its stderr when it failed."""
    interrupt(p)
    rc, cpu, hwm = wait_rusage(p, timeout)
    err = p.stderr.read() if p.stderr else ""
    if rc != 0:
        raise RuntimeError("gil-record failed (%d): %s" % (rc, err))
    return cpu, hwm


def recorded_events(outdir, pids):
    """(events, lost) of the recordings of @pids in @outdir, from their footers: the events
    summed, the largest loss (a loss is the recorder's, counted in each file)."""
    events = lost = 0
    for pid in pids:
        for f in glob.glob(os.path.join(outdir, "GIL_%d_rank_*.json" % pid)):
            ft = footer_of(f) or {}
            events += ft.get("events", 0)
            lost = max(lost, ft.get("lost", 0))
    return events, lost


def rss_points(rss, sep=" / "):
    """RSS samples (KiB) at 10%, 50% and the end of a run, in MB: "33.6 / 35.7 / 35.8"."""
    return sep.join("%.1f" % (rss[int(f * (len(rss) - 1))] / 1024)
                    for f in (0.1, 0.5, 1.0)) if rss else "-"


def footer_of(path):
    """The footer of a complete recording, read from its end (files can be large)."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - 65536))
        tail = f.read().decode(errors="replace")
    for line in reversed(tail.splitlines()):
        if line.startswith('{"footer":'):
            return json.loads(line.rstrip(","))["footer"]
    return None


def probe_sites(python, extra=()):
    """The uprobes gil-record (with options @extra) defines for @python, copied from tracefs
    while it records.

    Returns [(kind "p"/"r", event name, "PATH:OFFSET", fetchargs)]: the same sites and the
    same fetchargs (attribution reads), so that perf measures exactly what gil-record pays.
    """
    d = tempfile.mkdtemp(prefix="gilbench-sites-")
    p = subprocess.Popen([python, "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    rec = None
    try:
        p.stdout.readline()  # it runs Python: its interpreter is mapped, however slow the start
        rec = subprocess.Popen([GIL_RECORD, "-p", str(p.pid), "-o", d] + list(extra),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        err, lines, deadline = "", [], time.time() + 60
        while time.time() < deadline and rec.poll() is None:
            r, _, _ = select.select([rec.stderr], [], [], 1)
            if r:
                line = rec.stderr.readline()
                err += line
                if "recording" in line:
                    with open(os.path.join(TRACING, "uprobe_events")) as f:
                        lines = [l.strip() for l in f
                                 if re.match(r"^[pr]:gil_%d_[0-9a-f]+_\d+/" % rec.pid, l)]
                    # its probes name the file it read by descriptor: the path behind it
                    fds = {m: os.readlink("/proc/%d/fd/%s" % (rec.pid, m))
                           for m in set(re.findall(r" /proc/self/fd/(\d+):", " ".join(lines)))}
                    lines = [re.sub(r" /proc/self/fd/(\d+):", lambda m: " %s:" % fds[m.group(1)], l)
                             for l in lines]
                    break
        if not lines:
            raise RuntimeError("gil-record could not probe %s: %s" % (python, err))
    finally:
        if rec and rec.poll() is None:
            rec.send_signal(signal.SIGINT)
            rec.wait(60)
        p.stdin.close()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)
    sites = []
    for l in lines:
        head, _, rest = l.partition(" ")
        kind, name = head[0], head.split("/", 1)[1]
        loc, _, args = rest.partition(" ")
        # the process's view of the file (/proc/PID/root/...) is the host's for our workloads
        loc = re.sub(r"^/proc/\d+/root", "", loc)
        sites.append((kind, name, loc, args.strip()))
    return sites


class ProbeGroup:
    """Our own uprobe group gilbench_<pid>_<pidns>[_suffix] with gil-record's probes; removed on
    exit.

    @fetchargs False: the sites without their attribution reads (gil-record --no-attribution,
    or perf probe as per4m defines them). @light: without the drop_gil return probe.
    """

    def __init__(self, sites, light=False, suffix=None, fetchargs=True):
        # with our pid namespace, as gil-record names its groups: a benchmark in another
        # namespace (a test beside this one, a container) may have our pid
        self.name = "gilbench_%d_%x" % (os.getpid(), os.stat("/proc/self/ns/pid").st_ino) + \
            ("_" + suffix if suffix else "")
        self.events = []
        atexit.register(self.remove)
        try:
            for kind, ev, loc, args in sites:
                if light and kind == "r" and ev.startswith("drop"):
                    continue
                line = "%s:%s/%s %s" % (kind, self.name, ev, loc)
                if fetchargs and args:
                    line += " " + args
                self._add(line, ev)
        except OSError:
            self.remove()
            raise

    @staticmethod
    def _write(line):
        # O_APPEND, never O_TRUNC: truncating uprobe_events would delete every uprobe on the host.
        fd = os.open(os.path.join(TRACING, "uprobe_events"), os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)

    def _add(self, line, ev):
        self._write(line)
        self.events.append(ev)

    @property
    def selector(self):
        return self.name + ":*"

    def remove(self):
        """Remove our events, newest first; retried while a perf event still holds one."""
        for ev in reversed(list(self.events)):
            for _ in range(50):
                try:
                    self._write("-:%s/%s" % (self.name, ev))
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if "No such file" in str(e):
                        break
                    time.sleep(0.1)
            self.events.remove(ev)


def install_signal_cleanup():
    """SIGTERM/SIGHUP unwind like Ctrl+C, so finally blocks and atexit remove our probes."""
    def raise_exit(sig, frame):
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, raise_exit)
    signal.signal(signal.SIGHUP, raise_exit)


# ---- tracers ----------------------------------------------------------------------------------
# start(pids) returns once events are enabled; stop() after the workload finished returns a dict:
# cpu_s (the tracer's CPU from enabling to exit: its setup before is cpu_startup_s), rss_kb
# (peak), events it saw (or counted), lost as it reported them.

# The two floors' names in every table: gil-record's sites without any fetch, counted by perf
# stat (the trap itself) and drained by bench/minreader.c (one record per hit, dropped).
BARE_PROBES, BARE_READER = "perf stat, no fetchargs", "minimal reader, no fetchargs"


class NoTracer:
    name = "untraced"

    def start(self, pids):
        pass

    def stop(self):
        return {}


class PerfTracer:
    """perf stat (counting: the kernel floor) or perf record (per-event samples, as per4m)."""

    def __init__(self, group, mode="stat", mmap_pages=None, system_wide=False):
        self.group, self.mode, self.mmap_pages, self.system_wide = group, mode, mmap_pages, \
            system_wide
        self.name = "perf " + mode + (" -a" if system_wide else "")

    def start(self, pids):
        self.dir = tempfile.mkdtemp(prefix="gilbench-perf-")
        ctl, ack = os.path.join(self.dir, "ctl"), os.path.join(self.dir, "ack")
        os.mkfifo(ctl)
        os.mkfifo(ack)
        self.out = os.path.join(self.dir, "perf.out" if self.mode == "stat" else "perf.data")
        cmd = [PERF, self.mode, "-e", self.group.selector]
        cmd += ["-a"] if self.system_wide else ["-p", ",".join(str(p) for p in pids)]
        if self.mode == "stat":
            cmd += ["-x", ",", "-o", self.out]
        else:
            cmd += ["-k", "CLOCK_MONOTONIC", "-o", self.out]
            if self.mmap_pages:
                cmd += ["-m", str(self.mmap_pages)]
        cmd += ["-D", "-1", "--control", "fifo:%s,%s" % (ctl, ack)]
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        # Opening a fifo blocks until perf opens the other end: use O_RDWR on both.
        self.ctl = os.open(ctl, os.O_RDWR)
        self.ack = os.open(ack, os.O_RDWR)
        os.write(self.ctl, b"enable\n")
        r, _, _ = select.select([self.ack], [], [], 60)
        if not r:
            self.p.kill()
            raise RuntimeError("perf did not enable its events: %s" % self.p.stderr.read())
        os.read(self.ack, 64)
        self.cpu0 = proc_cpu_s(self.p.pid)

    def stop(self):
        interrupt(self.p)
        err = ""
        rc, cpu, rss = wait_rusage(self.p, 600)
        err = self.p.stderr.read()
        os.close(self.ctl)
        os.close(self.ack)
        res = {"cpu_s": cpu - self.cpu0, "cpu_startup_s": self.cpu0, "rss_kb": rss}
        if self.mode == "stat":
            counts = {}
            with open(self.out) as f:
                for line in f:
                    parts = line.strip().split(",")
                    if len(parts) > 2 and parts[2].startswith(self.group.name + ":"):
                        try:
                            counts[parts[2].split(":", 1)[1]] = int(parts[0])
                        except ValueError:
                            counts[parts[2].split(":", 1)[1]] = 0
            res["counts"] = counts
            res["events"] = sum(counts.values())
        else:
            m = re.search(r"\((\d+) samples\)", err)
            res["events"] = int(m.group(1)) if m else None
            res["lost"] = perf_lost(self.out)
            res["bytes"] = os.path.getsize(self.out) if os.path.exists(self.out) else 0
        shutil.rmtree(self.dir, ignore_errors=True)
        return res


def perf_lost(data):
    """Samples perf record says were lost: its per-event LOST_SAMPLES totals (perf reads them
    with PERF_FORMAT_LOST at the end, so they include losses no PERF_RECORD_LOST reported)."""
    r = subprocess.run([PERF, "report", "-i", data, "--stats"], capture_output=True, text=True)
    total, section = 0, None
    for line in r.stdout.splitlines():
        if line.rstrip().endswith("stats:"):
            section = line.strip()
            continue
        m = re.match(r"^\s*LOST_SAMPLES events:\s+(\d+)", line)
        if m and section and not section.startswith("Aggregated"):
            total += int(m.group(1))
    return total


def minreader_path():
    """bench/minreader, built by `make bench`; else compiled here with cc; None without cc."""
    built = os.path.join(TOP_BUILDDIR, "bench", "minreader")
    if os.access(built, os.X_OK):
        return built
    cache = os.path.join(tempfile.gettempdir(), "gilbench-minreader-%d" % os.getuid())
    src = os.path.join(BENCH_DIR, "minreader.c")
    if os.access(cache, os.X_OK) and os.path.getmtime(cache) >= os.path.getmtime(src):
        return cache
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc or subprocess.call([cc, "-O2", "-o", cache, src]) != 0:
        return None
    return cache


class MinReader:
    """bench/minreader.c: drains the same events as gil-record and does nothing else."""

    def __init__(self, group, pages=None):
        self.group, self.pages = group, pages
        self.name = "minimal reader"
        self.exe = minreader_path()

    def start(self, pids):
        cmd = [self.exe, "-g", self.group.name, "-p", ",".join(str(p) for p in pids)]
        if self.pages:
            cmd += ["-m", str(self.pages)]
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stderr.readline()
        if not line.startswith("recording"):
            raise RuntimeError("minreader did not start: %s%s" % (line, self.p.stderr.read()))
        self.cpu0 = proc_cpu_s(self.p.pid)

    def stop(self):
        interrupt(self.p)
        rc, cpu, rss = wait_rusage(self.p, 60)
        o = self.p.stdout.read().split()
        if rc != 0 or len(o) < 4:
            raise RuntimeError("minreader failed (%d): %s" % (rc, self.p.stderr.read()))
        return {"cpu_s": cpu - self.cpu0, "rss_kb": rss, "events": int(o[1]), "lost": int(o[3]),
                "kernel_lost": int(o[5]) if len(o) > 5 else None}


class GilRecord:
    """gil-record -p PIDS into a scratch directory; stopped with SIGINT like a user's Ctrl+C."""

    def __init__(self, extra=None, keep=False, sample_rss=False, exe=None, prefix=None):
        self.extra = extra or []
        self.exe = exe or GIL_RECORD
        self.prefix = prefix or []
        self.keep = keep
        self.sample_rss = sample_rss
        self.name = "gil-record" + ("" if not self.extra else " " + " ".join(self.extra))

    def start(self, pids):
        self.dir = tempfile.mkdtemp(prefix="gilbench-rec-")
        cmd = self.prefix + [self.exe, "-p", ",".join(str(p) for p in pids), "-o", self.dir] + \
            self.extra
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err, deadline = "", time.time() + 120
        while time.time() < deadline:
            r, _, _ = select.select([self.p.stderr], [], [], 1)
            if r:
                line = self.p.stderr.readline()
                if not line:
                    break
                err += line
                if "recording" in line:
                    self.rss = [proc_rss_kb(self.p.pid)]
                    self.cpu0 = proc_cpu_s(self.p.pid)
                    return
            if self.p.poll() is not None:
                break
        raise RuntimeError("gil-record did not start: %s%s" % (err, self.p.stderr.read()))

    def poll_rss(self):
        self.rss.append(proc_rss_kb(self.p.pid))

    def stop(self):
        interrupt(self.p)
        rc, cpu, rss = wait_rusage(self.p, 600)
        err = self.p.stderr.read()
        if rc != 0:
            raise RuntimeError("gil-record failed (%d): %s" % (rc, err))
        events = lost = intervals = size = 0
        self.files = sorted(glob.glob(os.path.join(self.dir, "GIL_*.json")))
        lost_seen = set()
        for path in self.files:
            ft = footer_of(path) or {}
            events += ft.get("events", 0)
            intervals += ft.get("intervals", 0)
            lost = max(lost, ft.get("lost", 0))  # every file reports the recording's losses
            size += os.path.getsize(path)
        res = {"cpu_s": cpu - self.cpu0, "cpu_startup_s": self.cpu0, "rss_kb": rss,
               "events": events, "lost": lost,
               "intervals": intervals, "bytes": size, "rss_samples": self.rss}
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        return res


def kill_tracer(tracer):
    """After a failure: end the tracer's process so that our probe group can be removed."""
    end_process(getattr(tracer, "p", None))


def end_process(p):
    """End process @p (a Popen, or None) like Ctrl+C, killing it if it does not go in 30 s."""
    if p is not None and p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def trapped(pid):
    """Whether a uprobe ever fired in @pid: the kernel maps its [uprobes] page on the first hit."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            return any(line.rstrip().endswith("[uprobes]") for line in f)
    except OSError:
        return None


def run_traced(python, script, args, tracer, nproc=1, bystander=None, pin=False,
               exit_first=False):
    """Start @nproc workloads (and a @bystander), attach @tracer, run them.

    Returns (ops/s summed, result): the tracer's result dict plus ops, seconds, by_rate (the
    bystander's ops/s) and by_trapped. @pin: workloads and tracer on CPU 0, bystander on CPU 1.
    @exit_first: let the workloads exit before the tracer is stopped, so that a tracer sees
    every event of their lives after it started (exact counts; with --pid, gil-record and perf
    end by themselves then).
    """
    saved = os.sched_getaffinity(0)
    if pin:
        os.sched_setaffinity(0, {0})
    try:
        ws = [Workload(python, script, *args) for _ in range(nproc)]
        by = Workload(python, *bystander) if bystander else None
    finally:
        if pin:
            os.sched_setaffinity(0, saved)
    if pin and by:
        for tid in os.listdir("/proc/%d/task" % by.pid):
            os.sched_setaffinity(int(tid), {1})
    started = False
    try:
        if pin:
            os.sched_setaffinity(0, {0})
        try:
            tracer.start([w.pid for w in ws])
        finally:
            if pin:
                os.sched_setaffinity(0, saved)
        started = True
        for w in ws:
            w.go()
        if by:
            by.go()
        done = [w.wait_done() for w in ws]
        by_done = by.wait_done() if by else None
        by_trapped = trapped(by.pid) if by else None
        if exit_first:
            for w in ws + ([by] if by else []):
                w.finish()
        started = False
        res = tracer.stop()
    finally:
        if started:
            kill_tracer(tracer)
        for w in ws + ([by] if by else []):
            w.finish()
    rate = sum(n / s for n, s in done)
    res["ops"] = sum(n for n, s in done)
    res["seconds"] = max(s for n, s in done)
    res["by_rate"] = by_done[0] / by_done[1] if by_done else None
    res["by_trapped"] = by_trapped
    return rate, res
