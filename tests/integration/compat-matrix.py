"""Every CPython on the machine: pyenv 3.6 - 3.13, Debian's LTO python3.11 with python3.11-dbg,
and the same python3.11 with its debug file hidden in a private mount namespace. Each runs N
ctypes calls; the table says which method found the GIL functions and how many of the N
releases and takes the recording shows. With symbols or DWARF both are at least 0.99 of N and
at most N plus the handshake; Debian's build must use its inlined copies (dwarf-inline). With
the debug file hidden take_gil and drop_gil are found from the code (callgraph.c), and so are
the copies of drop_gil LTO inlined into PyEval_SaveThread and the I/O helpers (copies.c): exact,
nothing approximate, no release left unseen, also for a process gil-record launched."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distrolib import *  # noqa: E402,F401,F403

require_kernel()
rows, failures = [], []

for label, exe, ver in pythons(include_system=False):
    row = record(Workload(exe, "ctypes_calls.py", N), label)
    rows.append(row)
    failures += row.problems()
    if "exported-fallback" in row.methods:
        failures.append("%s: fell back to exported functions: %s" % (label, row.methods))

debian = debian_python(dbg=True)
if debian:
    ver = version_of(debian)
    row = record(Workload(debian, "ctypes_calls.py", N), "debian-%s (python3.11-dbg)" % ver)
    rows.append(row)
    failures += debian_dbg_problems(row)

    require_unshare()
    w = NsWorkload(debian, "ctypes_calls.py", N, setup=HIDE_DEBUG)
    row = record(w, "debian-%s (debug file hidden)" % ver)
    rows.append(row)
    failures += row.problems()
    if row.methods != ["callgraph", "code-inline"] or row.approximate or row.header.get("approximate"):
        failures.append("%s: expected exact sites from the code: %s"
                        % (row.label, row.header["probes"]))
    if "approximate" in row.err:
        failures.append("%s: warned of approximate releases: %r" % (row.label, row.err))
    # ... also when the process starts after the recording: launched by gil-record itself
    out = tempfile.mkdtemp()
    p = subprocess.run(["unshare", "-m", "sh", "-c", '%s && exec "$@"' % HIDE_DEBUG, "sh",
                        GIL_RECORD, "--output-dir", out, "--", debian, "-c",
                        "import ctypes; [ctypes.CDLL(None).getppid() for i in range(100)]"],
                       capture_output=True, text=True, timeout=HANG_S)
    files = [os.path.join(out, f) for f in os.listdir(out) if f.startswith("GIL_")]
    header = read_recording(files[0])[0] if len(files) == 1 else {}
    if p.returncode != 0 or "approximate" in p.stderr or header.get("approximate") is not False \
            or "callgraph" not in [x["method"] for x in header.get("probes", [])]:
        failures.append("launched, debug file hidden: exit %d, files %s, header %s: %r"
                        % (p.returncode, files, header.get("probes"), p.stderr[-600:]))
else:
    log("no Debian python3.11 here: its rows are left out")

log(table(rows))
check(len(rows) > 1, "no CPython 3.6+ found (pyenv root %s)" % pyenv_root())
if failures:
    fail("; ".join(failures))
log("PASS: %d interpreters" % len(rows))
