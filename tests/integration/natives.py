#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Native callers (issue 26): a C extension this test builds (tests/workloads/native_ext.c) makes
GIL transitions whose native code is known, beside two Python threads that always want the GIL:

  sleeper(5), 5 times      releases the GIL around a sleep (Py_BEGIN_ALLOW_THREADS): 5 releases
                           and 5 takes named sleeper
  a C thread               takes the GIL through PyGILState_Ensure, holds it 50 ms, gives it
                           back with PyGILState_Release: its wait, hold and release named
                           holder_thread (the release through a tail call: no frame of
                           PyGILState_Release is left on the stack)
  the spinners             switch on the eval loop's drop requests: the interpreter's own, all

Built as C and as C++ (namespace gilns: the names must come demangled), and run under pyenv's
3.12 (shared libpython with symbols), the newest pyenv CPython (3.13+: _PyThreadState_Attach
between the API and take_gil) and Debian's python3.11 (static, LTO, stripped: its symbols from
python3.11-dbg). gil-convert then puts the name on each slice (args.native), ranks the C thread
first by the time others waited while it held the GIL, counts sleeper's 5 releases, and names
the C thread, which never ran Python, by its native entry."""
import json
import os
import subprocess
import sys
import sysconfig  # noqa: F401
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)) + "/..")
from giltest import *  # noqa: E402,F401,F403

require_kernel()
SRC = os.path.join(WORKLOADS, "native_ext.c")


def headers(exe):
    """The interpreter's include directory and extension suffix, or None."""
    p = subprocess.run([exe, "-c", "import sysconfig as s; print(s.get_paths()['include']); "
                        "print(s.get_config_var('EXT_SUFFIX'))"], capture_output=True, text=True)
    if p.returncode:
        return None
    inc, suffix = p.stdout.split()
    return (inc, suffix) if os.path.exists(os.path.join(inc, "Python.h")) else None


def build(exe, lang, out):
    inc, suffix = headers(exe)
    d = os.path.join(out, lang)
    os.makedirs(d, exist_ok=True)
    cc = ["g++", "-x", "c++", "-DNATIVE_CXX"] if lang == "c++" else ["cc", "-x", "c"]
    p = subprocess.run(cc + ["-shared", "-fPIC", "-O2", "-g", "-I" + inc, SRC, "-o",
                             os.path.join(d, "native_ext" + suffix), "-lpthread"],
                       capture_output=True, text=True)
    check(p.returncode == 0, "building native_ext (%s) for %s: %s" % (lang, exe, p.stderr))
    return d


def names_of(records):
    return {r["native"]["id"]: r["native"]["name"] for r in records
            if isinstance(r, dict) and "native" in r}


def native(iv, names):
    """An interval's native caller: its name, "interpreter", or None (not read)."""
    if len(iv) < 10:
        return None
    return "interpreter" if iv[9] == 0 else names.get(iv[9], "#%d" % iv[9])


def run(label, exe, lang, out):
    d = build(exe, lang, out)
    w = Workload(exe, "natives.py", d)
    rec = Recorder("-p", w.pid, "-m", 256, "--native")
    w.go()
    main, *spinners = (int(x) for x in w.wait_done())
    rec.signal()
    rec.wait()
    w.finish()
    path = os.path.join(rec.outdir, "GIL_%d_rank_0.json" % w.pid)
    header, records, footer = read_recording(path)
    what = "%s %s" % (label, lang)
    check(not footer.get("lost"), "%s: %s events lost" % (what, footer.get("lost")))
    names = names_of(records)
    nat = footer.get("natives", {})
    check(nat.get("named") == len(names) and nat.get("cut") == 0 and nat.get("read", 0) > 0,
          "%s: footer natives %s, %d name records" % (what, nat, len(names)))
    sleeper = "gilns::sleeper(_object*, _object*)+" if lang == "c++" else "!sleeper+"
    holder = "gilns::holder_thread(void*)+" if lang == "c++" else "!holder_thread+"
    ivs = intervals(records)
    # the main thread: 5 releases and 5 takes in sleeper, each named
    rel = [native(iv, names) for iv in ivs if iv[0] == main and iv[1] == 2]
    takes = [native(iv, names) for iv in ivs if iv[0] == main and iv[1] == 0]
    n_rel = sum(1 for n in rel if n and sleeper in n)
    n_take = sum(1 for n in takes if n and sleeper in n)
    check(n_rel == 5 and n_take == 5, "%s: releases named sleeper %d, takes %d (want 5, 5); "
          "main's natives: %s" % (what, n_rel, n_take, sorted(set(map(str, rel + takes)))))
    check(all(n and n.startswith("native_ext") for n in names.values() if "native_ext" in n),
          "%s: names %s" % (what, names))
    # the C thread: wait, hold and release named holder_thread, the hold ~50 ms
    c_tids = {iv[0] for iv in ivs if iv[0] not in spinners and iv[0] != main}
    check(len(c_tids) == 1, "%s: threads other than main and the spinners: %s" % (what, c_tids))
    ct = c_tids.pop()
    mine = [(iv[1], iv[3], native(iv, names)) for iv in ivs if iv[0] == ct]
    check(any(k == 1 and dur >= 45e6 and n and holder in n for k, dur, n in mine) and
          all(n and holder in n for k, dur, n in mine),
          "%s: the C thread's intervals (kind, dur, native): %s" % (what, mine))
    # the spinners' switches are the eval loop's: the interpreter's own, every one but a
    # release the recording began in (its drop_gil entry was before) and the last, at the
    # thread's end: an LTO build's bootstrap tail-calls _PyThreadState_DeleteCurrent, and
    # leaves libc's start_thread as the caller (doc/format.md)
    sp = []
    for t in spinners:
        rel = [iv for iv in ivs if iv[0] == t and iv[1] == 2]
        sp += [native(iv, names) for iv in rel[:-1] if not iv[4] & 1]
    check(len(sp) >= 3 and all(n == "interpreter" for n in sp),
          "%s: spinners' releases: %d, natives %s" % (what, len(sp), sorted(set(map(str, sp)))))
    # gil-convert: args.native on the slices, the C thread first by others' wait, its name
    sj, tr = path + ".summary.json", path + ".trace.json"
    p = subprocess.run([GIL_CONVERT, "-i", path, "--summary-json", sj, "--summary", "-o", tr],
                       capture_output=True, text=True)
    check(p.returncode == 0, "%s: gil-convert: %s" % (what, p.stderr))
    with open(sj) as f:
        st = json.load(f)
    stats = st.get("statistics", st)
    top = stats["natives"]["others_wait"][0]
    check(holder in top["native"] + "+", "%s: first by others' wait: %s" % (what, top))
    relt = {r["native"]: r for r in stats["natives"]["releases"]}
    srel = [r for k, r in relt.items() if sleeper.rstrip("+") in k + "+"]
    check(len(srel) == 1 and srel[0]["releases"] == 5, "%s: releases table %s" % (what, relt))
    with open(tr) as f:
        doc = json.load(f)
    sl = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("tid") == ct]
    check(sl and all(holder in e["args"].get("native", "") for e in sl),
          "%s: the C thread's slices' args: %s" % (what, [e.get("args") for e in sl]))
    tn = [e["args"]["name"] for e in doc["traceEvents"]
          if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("tid") == ct]
    check(tn and "holder_thread" in tn[-1], "%s: the C thread is named %s" % (what, tn))
    check("holder_thread" in p.stdout, "%s: --summary does not name holder_thread" % what)
    log("%s: %d natives %s; C thread %d held %.1f ms" % (
        what, len(names), sorted(n.split("!")[-1] for n in names.values()), ct,
        max(d for k, d, n in mine if k == 1) / 1e6))


out = tempfile.mkdtemp()
cands = []
root = pyenv_root()
for label, exe, ver in pythons(min_version=(3, 8), include_system=False):
    if ver[:2] == (3, 12) or ver == max(v for _, _, v in pythons(min_version=(3, 8),
                                                                 include_system=False)):
        cands.append((label, exe))
if os.path.exists("/usr/bin/python3.11") and headers("/usr/bin/python3.11") and \
        has_debug_symbols("/usr/bin/python3.11"):
    cands.append(("debian python3.11", "/usr/bin/python3.11"))
elif os.environ.get("CI") == "true":
    fail("Debian's python3.11 with its headers and debug symbols is missing "
         "(apt-get install python3.11-dev python3.11-dbg)")
check(cands, "no interpreter to build the extension for")
for label, exe in cands:
    if not headers(exe):
        log("%s: no headers, left out" % label)
        continue
    for lang in ("c", "c++"):
        run(label, exe, lang, out)
check_no_probes()
log("PASS")
