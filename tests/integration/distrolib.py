"""Helpers for the tests of distribution builds (issue 4): workloads in private mount namespaces,
Debian's debug symbols, and the N-ctypes-call measurement that compat-matrix, containers and
interpreters share. The workload makes N ctypes calls on its main thread; each releases and
retakes the GIL exactly once, so a correct recording shows N drop_gil and N take_gil intervals
on that thread, plus a few from the handshake and interpreter exit.
"""
import glob
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

N = 2000
SLACK = 12  # the handshake's reads and writes, and interpreter exit
MIN_RATIO = 0.99
DEBIAN_PY = "/usr/bin/python3.11"
# A tmpfs over /usr/lib/debug hides every debug file from the process and from anyone who
# looks through /proc/PID/root, as a container without the -dbg package would.
HIDE_DEBUG = "mount -t tmpfs giltrace-nodebug /usr/lib/debug"


def have_libdw():
    """Was gil-record built with libdw (can it find inlined copies at all)?"""
    out = subprocess.run([GIL_RECORD, "--version"], capture_output=True, text=True).stdout
    return bool(re.search(r"^features:.*\blibdw\b", out, re.M))


def require_unshare():
    if not shutil.which("unshare"):
        skip("unshare(1) not installed (util-linux)")
    if subprocess.call(["unshare", "-m", "true"], stderr=subprocess.DEVNULL) != 0:
        skip("cannot create a mount namespace (unshare -m)")


def debian_python(dbg=True):
    """Debian's python3.11, with python3.11-dbg when @dbg (installed when missing: it pulls the
    matching python3.11). None when this is not such a system."""
    if not os.path.exists("/etc/debian_version") or not os.access(DEBIAN_PY, os.X_OK):
        return None
    if dbg and not has_debug_symbols(DEBIAN_PY) and shutil.which("apt-get"):
        log("installing python3.11-dbg")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.call(["apt-get", "install", "-y", "-q", "python3.11-dbg"], env=env,
                        stdout=subprocess.DEVNULL)
    if dbg and not has_debug_symbols(DEBIAN_PY):
        skip("python3.11-dbg is not installed and could not be: apt-get install python3.11-dbg")
    return DEBIAN_PY


class NsWorkload(Workload):
    """A workload started inside a private mount namespace (`unshare -m`), after the shell
    commands @setup ran there; @python is a path as seen inside."""

    def __init__(self, python, script, *args, setup="", env=None, script_path=True):
        inner = "set -e\n%s\nexec \"$@\"" % setup
        # script_path False: @python, @script and @args are the command line as they are
        head = [python, "-u", os.path.join(WORKLOADS, script)] if script_path else [python, script]
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", inner, "sh"] + head + \
            [str(a) for a in args]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env)
        line = self.readline(60)
        check(line.startswith("ready "), "workload %s did not start in its namespace: %r"
              % (script, line))
        self.pid = int(line.split()[1])


def mapped(pid, pattern):
    """Paths in /proc/PID/maps that match @pattern."""
    with open("/proc/%d/maps" % pid) as f:
        return sorted(set(l.split()[-1] for l in f if re.search(pattern, l)))


class Row:
    """One recorded interpreter: what the header says and what the main thread shows."""

    def __init__(self, label, header, records, footer, tid, err, n):
        self.label, self.header, self.footer, self.err, self.n = label, header, footer, err, n
        self.drops = len(intervals(records, tid, 2))
        self.takes = len(intervals(records, tid, 0))
        self.flagged = [r for r in records
                        if isinstance(r, list) and r[0] == tid and r[4] & (F_RESYNC | F_LOST)]
        self.methods = sorted(set(p["method"] for p in header["probes"]))
        self.approximate = [p for p in header["probes"] if p.get("approximate")]

    def method(self):
        return ",".join(self.methods)

    def problems(self, exact=True, not_seen_ok=False):
        """What is wrong with this row; [] when it is right. @not_seen_ok: holds flagged around a
        release no probe saw are right when the footer counts each (releases_not_seen): an
        interpreter without symbols whose LTO inlined PyEval_SaveThread into os.read/write (the
        handshake's I/O)."""
        out = []
        for name, got in (("releases", self.drops), ("takes", self.takes)):
            if got < MIN_RATIO * self.n:
                out.append("%s: %s seen %d/%d < %.2f" % (self.label, name, got, self.n,
                                                         MIN_RATIO))
            if got > self.n + SLACK:
                out.append("%s: %s seen %d/%d: counted twice" % (self.label, name, got, self.n))
        counted = (self.footer or {}).get("releases_not_seen", 0)
        if self.flagged and not (not_seen_ok and 0 < len(self.flagged) <= counted):
            out.append("%s: %d intervals flagged resync/lost, first %s"
                       % (self.label, len(self.flagged), self.flagged[:3]))
        if self.footer is None or self.footer.get("lost"):
            out.append("%s: footer %s" % (self.label, self.footer))
        if exact and self.approximate:
            out.append("%s: approximate probes where exact ones were expected: %s"
                       % (self.label, self.approximate))
        return out


class FileRecorder:
    """gil-record in the background with stderr in a file, so that no line is lost: giltest's
    Recorder reads its first lines through a buffered stream, and communicate() does not see
    what that buffer already holds (the warning printed right after "recording")."""

    def __init__(self, *args):
        self.outdir = tempfile.mkdtemp(prefix="gilrec-")
        self.errfile = tempfile.NamedTemporaryFile(prefix="gilrec-", suffix=".err", mode="w+")
        self.p = subprocess.Popen([GIL_RECORD, "--output-dir", self.outdir] +
                                  [str(a) for a in args], stdout=subprocess.DEVNULL,
                                  stderr=self.errfile)
        deadline = time.time() + 120
        while time.time() < deadline and self.p.poll() is None:
            if "recording" in self.read():
                RECORDERS.add(self)  # a workload's finish() lets it catch up
                return
            time.sleep(0.05)
        fail("gil-record did not start (rc %s): %s" % (self.p.poll(), self.read()))

    def read(self):
        with open(self.errfile.name) as f:
            return f.read()

    def wait(self, timeout=120):
        self.p.wait(timeout)
        self.err = self.read()
        return self.p.returncode

    def files(self):
        return sorted(glob.glob(os.path.join(self.outdir, "GIL_*_rank_*.json")))


def serve_debuginfod(directory, db, bids):
    """A local debuginfod serving @directory on a free port (its database at @db), once it serves
    each build-id of @bids: (the server's Popen, its URL)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = subprocess.Popen(["debuginfod", "-p", str(port), "-d", db, "-F", directory],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    where = "http://127.0.0.1:%d" % port
    deadline = time.time() + 120
    for bid in bids:
        while True:
            try:
                with urllib.request.urlopen("%s/buildid/%s/debuginfo" % (where, bid),
                                            timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() >= deadline or srv.poll() is not None:
                srv.terminate()
                fail("the local debuginfod did not serve %s within 120 s" % bid)
            time.sleep(0.5)
    log("debuginfod on %s serves %s from %s" % (where, " ".join(bids), directory))
    return srv, where


def build_id(path):
    """The GNU build-id of the ELF file at @path, in hex."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    ids = [l.split()[-1] for l in out.splitlines() if "Build ID" in l]
    check(ids, "%s has no build-id" % path)
    return ids[0]


def record_one(w, label, extra=()):
    """Record the started workload @w with gil-record --pid until it is done: its 'done' words,
    and the one file's header, records and footer, and what gil-record said."""
    rec = FileRecorder("--pid", w.pid, *extra)
    w.go()
    done = w.wait_done()
    w.finish()
    rc = rec.wait()
    check(rc == 0, "%s: gil-record exited %d: %s" % (label, rc, rec.err))
    files = rec.files()
    check(len(files) == 1, "%s: expected one file, got %s" % (label, files))
    header, records, footer = read_recording(files[0])
    check(header["pid"] == w.pid, "%s: header pid %s, workload %d" % (label, header["pid"], w.pid))
    shutil.rmtree(rec.outdir, ignore_errors=True)
    check_no_probes()
    return done, header, records, footer, rec.err


def record(w, label, n=N, extra=()):
    """Record the started ctypes_calls.py workload @w with gil-record --pid; a Row."""
    done, header, records, footer, err = record_one(w, label, extra)
    return Row(label, header, records, footer, int(done[0]), err, n)


def debian_dbg_problems(row):
    """What is wrong with a row of Debian's LTO python3.11 recorded with python3.11-dbg."""
    if have_libdw():
        out = row.problems()
        # LTO inlined drop_gil into PyEval_SaveThread: without its copies releases are 0 of N.
        if "dwarf-inline" not in row.methods:
            out.append("%s: no inlined copies probed: %s" % (row.label, row.methods))
        return out
    # Built --without-libdw: PyEval_SaveThread stands in for the inlined copies, and releases
    # inlined elsewhere (the handshake's reads) leave flagged holds.
    row.label += ", giltrace without libdw"
    out = [f for f in row.problems(exact=False) if "flagged" not in f]
    if [p["symbol"] for p in row.approximate] != ["PyEval_SaveThread"]:
        out.append("%s: expected PyEval_SaveThread as the only approximate probe: %s"
                   % (row.label, row.header["probes"]))
    return out


def table(rows):
    """The compatibility table, as Markdown (doc/compatibility.md takes it as is)."""
    lines = ["| interpreter | method | releases seen / N | takes seen / N |",
             "|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %d / %d (%.3f) | %d / %d (%.3f) |"
                     % (r.label, r.method(), r.drops, r.n, r.drops / r.n, r.takes, r.n,
                        r.takes / r.n))
    return "\n".join(lines)


# io_calls.py, one thread per kind of call (issue 22): recorded with a debug file or the whole
# symbol table, and without, the releases of each kind must be equal within IO_TOLERANCE.
IO_TOLERANCE = 0.01
IO_MIN_NAMED = 0.90
IO_KINDS = ["stat", "listdir", "scandir", "readall", "read", "write", "sleep", "select"]
IO_TABLE = ["| interpreter | kind: releases stock/with symbols | stock sites |", "|---|---|---|"]


def record_io(w, label):
    """Record the started io_calls.py workload: per kind, (releases, named by its function),
    the sites' methods, the footer and what gil-record said."""
    done, header, records, footer, err = record_one(w, label)
    tids = {k: int(v) for k, v in (kv.split("=") for kv in done)}
    fns = {r["fn"]["id"]: r["fn"] for r in records if isinstance(r, dict) and "fn" in r}
    out = {}
    for kind in IO_KINDS:
        drops = [r for r in records if isinstance(r, list) and r[0] == tids[kind] and r[1] == 2]
        named = sum(1 for r in drops if len(r) > 5 and
                    fns.get(r[5], {}).get("name") in (kind, kind + "_"))
        out[kind] = (len(drops), named)
    methods = sorted(set(p["method"] for p in header.get("probes", [])))
    return out, methods, footer or {}, err


def compare_io(label, full, stock, failures, lines, copies=True):
    """record_io's @full (symbols) and @stock (without) recordings of one interpreter: each
    kind's releases equal within IO_TOLERANCE; with @copies (an LTO build), named by its
    function (IO_MIN_NAMED of them, in both), and some stock sites inlined copies found from
    the code."""
    (d, _, _, _), (s, sm, sfoot, serr) = full, stock
    cells = []
    for kind in IO_KINDS:
        dn, sn = d[kind][0], s[kind][0]
        cells.append("%s %d/%d" % (kind, sn, dn))
        if abs(sn - dn) > IO_TOLERANCE * dn:
            failures.append("%s: %s: %d releases stock, %d with its symbols"
                            % (label, kind, sn, dn))
        # an LTO build's named as its debug file names them (a stripped pyenv copy's are named
        # where the version table has its layout: not 3.6's; attribution.py checks them)
        if copies and s[kind][1] < IO_MIN_NAMED * d[kind][1]:
            failures.append("%s: %s: %d stock releases in its own function, %d with symbols"
                            % (label, kind, s[kind][1], d[kind][1]))
        if dn and d[kind][1] < IO_MIN_NAMED * dn and copies:
            failures.append("%s: %s: %d of %d releases with symbols in its own function"
                            % (label, kind, d[kind][1], dn))
    if copies and "code-inline" not in sm:
        failures.append("%s: stock: no copies found from the code (methods %s)" % (label, sm))
    if sfoot.get("releases_not_seen", 0) or "not seen" in serr:
        failures.append("%s: stock: %s releases not seen: %s"
                        % (label, sfoot.get("releases_not_seen"), serr[-300:]))
    lines.append("| %s | %s | %s |" % (label, ", ".join(cells), ", ".join(sm)))
