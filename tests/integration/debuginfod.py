#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Debug files fetched by build-id from a real debuginfod server (Debian's debuginfod, started
on 127.0.0.1 by this test and stopped at its end), serving python3.11-dbg's debug file.

Debian's python3.11 runs in a mount namespace where /usr/lib/debug is an empty tmpfs, as in a
stock image. With DEBUGINFOD_URLS naming the server, the recording is exact (the sites come
from the fetched file: method debuginfod, and the inlined copies from its DWARF), N ctypes calls
give N releases and N takes; with the server unreachable, or with --no-debuginfod, it falls
back to the sites found from the code, and the unreachable case says what the server answered.
A server that lies (the same file with take_gil's symbol moved into an instruction) gets its
site refused with a line naming the file it gave, and the recording stays exact (issue 23); so
does the same file on the disk, where the target's root keeps debug files by build-id."""
import glob
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distrolib import *  # noqa: E402,F401,F403

require_kernel()
require_unshare()
if not shutil.which("debuginfod"):
    skip("debuginfod is not installed (apt-get install debuginfod)")
out = subprocess.run([GIL_RECORD, "--version"], capture_output=True, text=True).stdout
if " debuginfod" not in out:
    skip("gil-record was built without libdebuginfod (apt-get install libdebuginfod-dev)")
debian = debian_python(dbg=True)
if not debian:
    skip("no Debian python3.11 on this machine")
bid = build_id(debian)
dbg = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
check(os.path.exists(dbg), "python3.11-dbg has no %s" % dbg)

work = tempfile.mkdtemp(prefix="debuginfod-")
served = os.path.join(work, "served")
os.mkdir(served)
shutil.copy(dbg, os.path.join(served, "python3.11.debug"))


def patch_symbol(src, dst, name, delta):
    """Copy ELF64 @src to @dst with .symtab's @name moved by @delta bytes; its new value."""
    with open(src, "rb") as f:
        b = bytearray(f.read())
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", b, 0x3a)
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    for sh in shdrs:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        stroff = shdrs[sh[6]][4]
        for off in range(sh[4], sh[4] + sh[5], 24):
            st_name, = struct.unpack_from("<I", b, off)
            end = b.index(b"\0", stroff + st_name)
            if bytes(b[stroff + st_name:end]) == name:
                value, = struct.unpack_from("<Q", b, off + 8)
                struct.pack_into("<Q", b, off + 8, value + delta)
                with open(dst, "wb") as f:
                    f.write(b)
                return value + delta
    fail("%s has no symbol %s" % (src, name))


server, url = serve_debuginfod(served, os.path.join(work, "db.sqlite"), [bid])
rows, failures = [], []
try:

    def run(label, urls, *extra):
        os.environ["DEBUGINFOD_URLS"] = urls
        os.environ["DEBUGINFOD_CACHE_PATH"] = tempfile.mkdtemp(prefix="cache-", dir=work)
        os.environ["GIL_OBJECT_CACHE"] = os.path.join(tempfile.mkdtemp(prefix="objects-"), "o")
        w = NsWorkload(debian, "ctypes_calls.py", N, setup=HIDE_DEBUG)
        row = record(w, label, extra=extra)
        rows.append(row)
        return row

    row = run("debian-3.11, no debug file, served by debuginfod", url)
    failures += debian_dbg_problems(row)
    if "debuginfod" not in row.methods:
        failures.append("%s: the sites did not come from debuginfod: %s" % (row.label, row.methods))
    if not row.header["symbols_from"].startswith(os.environ["DEBUGINFOD_CACHE_PATH"]):
        failures.append("%s: symbols_from %s is not the client's cache" % (
            row.label, row.header["symbols_from"]))
    # nothing a server gave is kept for a recording that would not ask it (--no-debuginfod)
    kept = glob.glob(os.path.join(os.environ["GIL_OBJECT_CACHE"], "*.json"))
    if kept:
        failures.append("%s: the object cache kept what the server gave: %s" % (row.label, kept))

    row = run("debian-3.11, no debug file, debuginfod unreachable", "http://127.0.0.1:1")
    failures += row.problems(not_seen_ok=True)
    if row.methods != ["callgraph", "code-inline"]:
        failures.append("%s: want the sites from the code, got %s" % (row.label, row.methods))
    if "debuginfod:" not in row.err:
        failures.append("%s: no line says what the server answered: %r" % (row.label, row.err))

    row = run("debian-3.11, no debug file, --no-debuginfod", url, "--no-debuginfod")
    if row.methods != ["callgraph", "code-inline"]:
        failures.append("%s: asked the server anyway: %s" % (row.label, row.methods))
    if glob.glob(os.path.join(os.environ["DEBUGINFOD_CACHE_PATH"], "*", "debuginfo")):
        failures.append("%s: a file was fetched" % row.label)

    # A server that lies (plain http can be intercepted): the same debug file with take_gil's
    # symbol moved one byte into its first instruction. The site is refused, named by the file
    # the server gave, never probed; take_gil is then found from the code, and the recording
    # stays exact.
    server.terminate()
    server.wait(30)
    lying = os.path.join(work, "lying")
    os.mkdir(lying)
    moved = patch_symbol(os.path.join(served, "python3.11.debug"),
                         os.path.join(lying, "python3.11.debug"), b"take_gil.lto_priv.0", 1)
    server, url = serve_debuginfod(lying, os.path.join(work, "db2.sqlite"), [bid])
    row = run("debian-3.11, no debug file, a lying debuginfod", url)
    failures += row.problems()
    cache = os.environ["DEBUGINFOD_CACHE_PATH"]
    said = [l for l in row.err.splitlines() if "refused" in l]
    if not said or cache not in said[0] or "take_gil.lto_priv.0 at 0x%x" % moved not in said[0]:
        failures.append("%s: no line names the refused site and the served file: %r"
                        % (row.label, row.err))
    addrs = [int(p["address"], 16) for p in row.header["probes"]]
    if moved in addrs:
        failures.append("%s: the lying address 0x%x was probed" % (row.label, moved))
    if not [p for p in row.header["probes"] if p["function"] == "take_gil" and
            p["method"] == "callgraph"]:
        failures.append("%s: take_gil was not found from the code: %s"
                        % (row.label, row.header["probes"]))

    # The same lying file on the disk, where the target's root keeps debug files by build-id
    # (a tmpfs over /usr/lib/debug in its mount namespace): refused the same way, named by its
    # path there.
    local = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
    os.environ["GIL_OBJECT_CACHE"] = os.path.join(tempfile.mkdtemp(prefix="objects-"), "o")
    w = NsWorkload(debian, "ctypes_calls.py", N, setup="%s && mkdir -p %s && cp %s %s" % (
        HIDE_DEBUG, os.path.dirname(local), os.path.join(lying, "python3.11.debug"), local))
    row = record(w, "debian-3.11, a lying debug file on disk", extra=("--no-debuginfod",))
    rows.append(row)
    failures += row.problems()
    said = [l for l in row.err.splitlines() if "refused" in l]
    if not said or local not in said[0] or "take_gil.lto_priv.0 at 0x%x" % moved not in said[0]:
        failures.append("%s: no line names the refused site and the debug file: %r"
                        % (row.label, row.err))
    if moved in [int(p["address"], 16) for p in row.header["probes"]]:
        failures.append("%s: the lying address 0x%x was probed" % (row.label, moved))
finally:
    server.terminate()
    server.wait(30)
    os.environ.pop("DEBUGINFOD_URLS", None)
log(table(rows))
if failures:
    fail("; ".join(failures))
log("PASS: %d recordings" % len(rows))
