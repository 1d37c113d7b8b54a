#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Debug files fetched by build-id from a real debuginfod server (Debian's debuginfod, started
on 127.0.0.1 by this test and stopped at its end), serving python3.11-dbg's debug file.

Debian's python3.11 runs in a mount namespace where /usr/lib/debug is an empty tmpfs, as in a
stock image. With DEBUGINFOD_URLS naming the server, the recording is exact (the sites come
from the fetched file: method debuginfod, and the inlined copies from its DWARF), N ctypes calls
give N releases and N takes; with the server unreachable, or with --no-debuginfod, it falls
back to the exported functions, and the unreachable case says what the server answered."""
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

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
bid = subprocess.run(["readelf", "-n", debian], capture_output=True, text=True).stdout
bid = [l.split()[-1] for l in bid.splitlines() if "Build ID" in l][0]
dbg = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
check(os.path.exists(dbg), "python3.11-dbg has no %s" % dbg)

work = tempfile.mkdtemp(prefix="debuginfod-")
served = os.path.join(work, "served")
os.mkdir(served)
shutil.copy(dbg, os.path.join(served, "python3.11.debug"))
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
server = subprocess.Popen(["debuginfod", "-p", str(port), "-d", os.path.join(work, "db.sqlite"),
                           "-F", served], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
url = "http://127.0.0.1:%d" % port
rows, failures = [], []
try:
    deadline = time.time() + 120
    while True:
        try:
            with urllib.request.urlopen("%s/buildid/%s/debuginfo" % (url, bid), timeout=5) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        check(time.time() < deadline and server.poll() is None,
              "the local debuginfod did not serve %s within 120 s" % bid)
        time.sleep(0.5)
    log("debuginfod on %s serves %s" % (url, bid))

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
finally:
    server.terminate()
    server.wait(30)
    os.environ.pop("DEBUGINFOD_URLS", None)
log(table(rows))
if failures:
    fail("; ".join(failures))
log("PASS: %d recordings" % len(rows))
