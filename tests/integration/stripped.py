"""Interpreters with nothing but .dynsym, as Docker's python images and python-build-standalone
ship them: every pyenv libpython (3.6 - 3.13) copied through `strip --strip-all` and run with
LD_LIBRARY_PATH pointing at the copy (the binary's RUNPATH names the original).

- The sites found from the code (src/elf/callgraph.c) must be exactly the whole functions the
  original's symbol table names take_gil/drop_gil (address and size), none approximate: a wrong
  entry would crash the job, a missing one would hide its releases. The copies of drop_gil
  inlined elsewhere (src/elf/copies.c) must be as many as the original's DWARF shows.
- ctypes_calls.py's N calls on the main thread: N to N+50 releases and takes there, not
  approximate, on the copy.
- io_calls.py's threads, one per kind of the interpreter's own I/O calls: as many releases of
  each kind on the copy as on the original, within 1% (issue 22), named by their functions.
(attribution.py checks functions and forced/voluntary classes on the same copies; sid-pythons.py
the LTO builds of Debian sid with their debug files hidden.)
"""
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distrolib import *  # noqa: E402,F401,F403

GIL_SITES = os.path.join(TOP_BUILDDIR, "tests", "gil_sites")
N = 2000
IO_N = 400


def sites(path):
    out = subprocess.run([GIL_SITES, path], capture_output=True, text=True, check=True).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    return lines[:-1], lines[-1]


def whole(site):
    """A site as (function, start of the function, size)."""
    return (site["fn"], site["address"] - site["skipped"], site["size"])


require_kernel()
check(os.access(GIL_SITES, os.X_OK), "%s not built (make check builds it)" % GIL_SITES)
if not shutil.which("strip"):
    skip("strip(1) missing (binutils)")
failures, rows, io_lines = [], [], list(IO_TABLE)
tmp = tempfile.mkdtemp(prefix="gilstrip-")
try:
    swept = sweep(pythons(min_version=(3, 6), include_system=False))
    sweep_versions = [ver for _, _, ver in swept]
    for label, exe, ver in swept:
        name = "libpython%d.%d%s.so.1.0" % (ver[0], ver[1], "m" if ver < (3, 8) else "")
        lib = os.path.join(os.path.dirname(os.path.dirname(exe)), "lib", name)
        if not os.path.exists(lib):
            log("%s: no %s: skipped" % (label, lib))
            continue
        d = os.path.join(tmp, label)
        os.makedirs(d)
        copy = os.path.join(d, name)
        subprocess.check_call(["strip", "--strip-all", "-o", copy, lib])
        original, _ = sites(lib)
        truth = sorted(whole(s) for s in original if s["method"] == "symtab")
        found, summary = sites(copy)
        got = sorted(whole(s) for s in found if s["method"] != "code-inline")
        methods = sorted(set(s["method"] for s in found) - {"code-inline"})
        if got != truth or methods != ["callgraph"] or summary["approximate"]:
            failures.append("%s: from the code %s (%s, approximate %s), the symbol table says %s"
                            % (label, got, methods, summary["approximate"], truth))
        # the copies of drop_gil the original's DWARF shows (3.13's PyEval_SaveThread), each
        # found from the code (src/elf/copies.c): as many entries and exits
        for role in ("entry", "exit"):
            want = sum(1 for s in original if s["method"] == "dwarf-inline" and s["role"] == role)
            have = sum(1 for s in found if s["method"] == "code-inline" and s["role"] == role)
            if want != have:
                failures.append("%s: %d inlined copies' %s sites from the code, DWARF shows %d"
                                % (label, have, role, want))
        w = Workload(exe, "ctypes_calls.py", N, env=dict(os.environ, LD_LIBRARY_PATH=d))
        check(mapped(w.pid, re.escape(copy)), "%s: the stripped copy is not mapped" % label)
        row = record(w, label + " stripped", n=N)
        rows.append(row)
        for what, n in (("releases", row.drops), ("takes", row.takes)):
            if not N <= n <= N + 50:
                failures.append("%s: %s on the main thread %d, expected %d..%d"
                                % (label, what, n, N, N + 50))
        if row.approximate or [m for m in row.methods if m != "code-inline"] != ["callgraph"] \
                or row.header.get("approximate"):
            failures.append("%s: recorded with %s, approximate %s" % (label, row.methods,
                                                                     row.approximate))
        # the interpreter's own I/O releases, on the original and on the copy: equal per kind;
        # under quick() (ASan: this test was its pass's longest, 732 s) on the newest only
        if quick() and ver != sweep_versions[-1]:
            io_lines.append("| %s | (quick: left out) |" % label)
            continue
        runs = [record_io(Workload(exe, "io_calls.py", IO_N, env=env), "%s %s" % (label, what))
                for what, env in (("", None), ("stripped", dict(os.environ, LD_LIBRARY_PATH=d)))]
        compare_io(label, runs[0], runs[1], failures, io_lines, copies=False)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
log(table(rows))
log("\n".join(io_lines))
if failures:
    fail("; ".join(failures))
if not rows:
    skip("no pyenv libpython to strip")
log("PASS: %d stripped interpreters, sites equal to their symbol tables" % len(rows))
