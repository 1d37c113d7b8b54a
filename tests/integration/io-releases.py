"""Every release of a stock LTO build is seen (issue 22): the copies of drop_gil that LTO inlined
into the interpreter's own I/O helpers, found from the code where no DWARF names them
(src/elf/copies.c).

tests/workloads/io_calls.py runs one thread per kind of call (os.stat, os.listdir, os.scandir,
FileIO.readall, os.read, os.write, time.sleep, select.select), N calls each. Each interpreter is
recorded twice, with its debug file (DWARF names every inlined copy) and with it hidden, as a
container without the -dbg package runs it. For each kind the releases seen on its thread must
be equal within 1%, the stock recording must not warn of releases not seen, and >= 90% of the
stock recording's releases on each thread must be named by the kind's own Python function:
Debian's python3.11 (static, LTO) and Debian sid's python3.13, 3.14 and 3.15.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distrolib import *  # noqa: E402,F401,F403
from sidroot import SID_PYTHONS, SidWorkload, require_sid_root, INSIDE_WORKLOADS  # noqa: E402

N = 400


require_kernel()
require_unshare()
failures, lines = [], ["| interpreter | kind: releases stock/with -dbg | stock sites |",
                       "|---|---|---|"]
py = debian_python()
if py:
    runs = []
    for hide in (False, True):
        w = NsWorkload(py, "io_calls.py", N, setup=HIDE_DEBUG if hide else "")
        runs.append(record_io(w, "python3.11%s" % (" stock" if hide else "")))
    compare_io("Debian python3.11", runs[0], runs[1], failures, lines)
else:
    log("not Debian, or no python3.11: its rows are left out")
root = require_sid_root()
for ver in sweep(SID_PYTHONS):
    runs = []
    for hide in (False, True):
        w = SidWorkload(root, "/usr/bin/python%s" % ver, "io_calls.py", N, hide_debug=hide)
        runs.append(record_io(w, "sid python%s%s" % (ver, " stock" if hide else "")))
    compare_io("sid python%s" % ver, runs[0], runs[1], failures, lines)
log("\n".join(lines))
if failures:
    fail("; ".join(failures))
log("PASS: every kind of I/O release seen on stock builds as with their debug files")
