"""Every CPython on the machine: pyenv 3.6 - 3.13, Debian's LTO python3.11 with python3.11-dbg,
and the same python3.11 with its debug file hidden in a private mount namespace. Each runs N
ctypes calls; the table says which method found the GIL functions and how many of the N
releases and takes the recording shows. With symbols or DWARF both are at least 0.99 of N and
at most N plus the handshake; Debian's build must use its inlined copies (dwarf-inline). With
the debug file hidden the recorder falls back to PyEval_SaveThread/PyEval_RestoreThread and
marks every probe approximate, and says so on screen, also for a process it launched."""
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
    failures += row.problems(exact=False)
    if row.methods != ["exported-fallback"] or len(row.approximate) != len(row.header["probes"]):
        failures.append("%s: expected only approximate exported-fallback probes: %s"
                        % (row.label, row.header["probes"]))
    # The user is told, on screen and in the file, and what to install.
    want = "releases are approximate: /usr/bin/python3.11 has no symbols for take_gil/drop_gil"
    if row.header.get("approximate") is not True or \
            want not in row.header.get("approximate_reason", "") or \
            "apt-get install python3.11-dbg" not in row.header.get("approximate_reason", ""):
        failures.append("%s: header does not say releases are approximate: %s"
                        % (row.label, {k: row.header.get(k) for k in
                                       ("approximate", "approximate_reason")}))
    if "gil-record: warning: process %d: %s" % (w.pid, want) not in row.err:
        failures.append("%s: no warning on screen: %r" % (row.label, row.err))
    # ... also when the process starts after the recording: launched by gil-record itself
    out = tempfile.mkdtemp()
    p = subprocess.run(["unshare", "-m", "sh", "-c", '%s && exec "$@"' % HIDE_DEBUG, "sh",
                        GIL_RECORD, "--output-dir", out, "--", debian, "-c",
                        "import ctypes; [ctypes.CDLL(None).getppid() for i in range(100)]"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or not re.search(r"gil-record: warning: process \d+: %s" % re.escape(want),
                                          p.stderr):
        failures.append("launched, debug file hidden: exit %d, no warning on screen: %r"
                        % (p.returncode, p.stderr[-600:]))
else:
    log("no Debian python3.11 here: its rows are left out")

log(table(rows))
check(len(rows) > 1, "no CPython 3.6+ found (pyenv root %s)" % pyenv_root())
if failures:
    fail("; ".join(failures))
log("PASS: %d interpreters" % len(rows))
