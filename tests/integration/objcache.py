"""The object cache (src/record/objcache.c): what Debian python3.11's -dbg DWARF gave is kept by
build-id and used on the next attach, never in place of a proof.

1. A first recording writes the entry; the second gives the same probes and attribution, and
   reads the entry: a site's name changed in it (nothing a proof rests on) shows in the header.
2. An entry whose site moved by a byte (the bytes there differ) is not used: the sites are
   read again, and the entry rewritten.
3. Hidden debug file (a private mount namespace, as a stock image): the entry depends on it,
   so it is not used; the sites come from the code.
4. A cache directory others can write, or an entry not root's, is never read.
5. Nor one reached through a directory another user owns (GIL_OBJECT_CACHE names any path).
6. The cache is bounded: past its size or its count, the oldest entries go.
"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distrolib import *  # noqa: E402,F401,F403

MARK = "take_gil.from_the_cache"


def attach(w, label):
    return record(w, label), None


def entry_path(cache):
    names = [n for n in os.listdir(cache) if n.endswith(".json")]
    check(len(names) == 1, "cache holds %s, expected one entry" % names)
    return os.path.join(cache, names[0])


def edit(path, fn):
    with open(path) as f:
        e = json.load(f)
    fn(e)
    with open(path, "w") as f:
        json.dump(e, f)


def mark_first_take(e):
    for s in e["symbols"]["sites"]:
        if s["fn"] == 0 and s["role"] == 0:
            s["symbol"] = MARK
            return
    fail("no take_gil entry site in the cache entry")


def move_first_take(e):
    for s in e["symbols"]["sites"]:
        if s["fn"] == 0 and s["role"] == 0:
            s["symbol"] = MARK
            s["addr"] += 1
            s["offset"] += 1
            return


def probes(row):
    keep = ("function", "symbol", "address", "offset", "method", "role", "return_probe")
    return [{k: p.get(k) for k in keep} for p in row.header["probes"]]


require_kernel()
debian = debian_python(dbg=True)
if not debian:
    skip("no Debian python3.11 with python3.11-dbg here")
failures = []
tmp = tempfile.mkdtemp(prefix="gilcache-")
cache = os.path.join(tmp, "objects")
os.environ["GIL_OBJECT_CACHE"] = cache
try:
    first, t1 = attach(Workload(debian, "ctypes_calls.py", N), "first attach")
    failures += debian_dbg_problems(first)
    path = entry_path(cache)
    check(os.stat(cache).st_mode & 0o777 == 0o700, "cache directory mode %o" % os.stat(cache).st_mode)
    second, t2 = attach(Workload(debian, "ctypes_calls.py", N), "second attach")
    failures += debian_dbg_problems(second)
    def same(k):  # paths name /proc/PID/root of each attach's process
        return re.sub(r"/proc/\d+/", "/proc/PID/", json.dumps(second.header.get(k))) == \
            re.sub(r"/proc/\d+/", "/proc/PID/", json.dumps(first.header.get(k)))
    if probes(second) != probes(first) or not same("attribution") or not same("symbols_from"):
        failures.append("the cached attach differs: %s" % [
            (k, second.header.get(k), first.header.get(k))
            for k in ("attribution", "symbols_from") if not same(k)])

    edit(path, mark_first_take)
    used, _ = attach(Workload(debian, "ctypes_calls.py", N), "marked entry")
    if MARK not in [p["symbol"] for p in used.header["probes"]]:
        failures.append("the cache entry was not used: %s" % probes(used))

    edit(path, move_first_take)
    moved, _ = attach(Workload(debian, "ctypes_calls.py", N), "moved site")
    failures += debian_dbg_problems(moved)
    if probes(moved) != probes(first):
        failures.append("an entry whose site moved was used: %s" % probes(moved))
    with open(path) as f:
        if MARK in f.read():
            failures.append("the moved entry was not rewritten")

    edit(path, mark_first_take)
    hidden, _ = attach(NsWorkload(debian, "ctypes_calls.py", N, setup=HIDE_DEBUG),
                       "debug file hidden")
    failures += hidden.problems(not_seen_ok=True)
    if hidden.methods != ["callgraph", "code-inline"]:
        failures.append("debug file hidden, the entry that needs it was used: %s"
                        % hidden.methods)

    edit(path, mark_first_take)
    os.chmod(cache, 0o777)
    loose, _ = attach(Workload(debian, "ctypes_calls.py", N), "directory others can write")
    os.chmod(cache, 0o700)
    if MARK in [p["symbol"] for p in loose.header["probes"]]:
        failures.append("an entry in a world-writable directory was used")
    os.chown(path, 65534, 65534)
    foreign, _ = attach(Workload(debian, "ctypes_calls.py", N), "entry not root's")
    if MARK in [p["symbol"] for p in foreign.header["probes"]]:
        failures.append("an entry owned by nobody was used")

    # 5. the cache directory root's 0700, but reached through a directory of nobody's, who
    # could swap it: not read. The same directory moved back under root's path is read.
    os.chown(path, 0, 0)
    edit(path, mark_first_take)
    users = os.path.join(tmp, "nobodys")
    os.mkdir(users, 0o755)
    os.chown(users, 65534, 65534)
    os.rename(cache, os.path.join(users, "objects"))
    os.environ["GIL_OBJECT_CACHE"] = os.path.join(users, "objects")
    through, _ = attach(Workload(debian, "ctypes_calls.py", N), "through nobody's directory")
    if MARK in [p["symbol"] for p in through.header["probes"]]:
        failures.append("an entry reached through a directory of nobody's was used")
    os.rename(os.path.join(users, "objects"), cache)
    os.environ["GIL_OBJECT_CACHE"] = cache
    back, _ = attach(Workload(debian, "ctypes_calls.py", N), "back under root's path")
    if MARK not in [p["symbol"] for p in back.header["probes"]]:
        failures.append("the same entry under root's path was not used: %s" % probes(back))

    # 6. bounded: 600 older entries of 20 KiB each (12 MiB, past both bounds) and a file that
    # is not an entry; a new entry written evicts the oldest, keeps itself and the other file.
    real = os.path.basename(path)
    os.unlink(path)
    old = ["%040x.json" % k for k in range(600)]
    for k, n in enumerate(old):
        with open(os.path.join(cache, n), "w") as f:
            f.write(" " * 20480)
        os.utime(os.path.join(cache, n), (1e9 + k, 1e9 + k))
    with open(os.path.join(cache, "notes.txt"), "w") as f:
        f.write("not an entry\n")
    bounded, _ = attach(Workload(debian, "ctypes_calls.py", N), "a full cache")
    failures += debian_dbg_problems(bounded)
    names = [n for n in os.listdir(cache) if n.endswith(".json")]
    total = sum(os.path.getsize(os.path.join(cache, n)) for n in names)
    kept_old = sorted(n for n in names if n in old)
    if real not in names:
        failures.append("the new entry was not kept in a full cache")
    if len(names) > 512 or total > 8 << 20:
        failures.append("the cache holds %d entries, %d bytes: past its bounds" % (len(names), total))
    if kept_old and kept_old[0] != old[len(old) - len(kept_old)]:
        failures.append("not the oldest were evicted: kept from %s" % kept_old[0])
    if not os.path.exists(os.path.join(cache, "notes.txt")):
        failures.append("eviction removed a file that is not an entry")
    log("a full cache of 600 entries (12 MiB): %d entries, %d bytes left, the new one kept"
        % (len(names), total))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
if failures:
    fail("; ".join(failures))
log("PASS: the cache serves the second attach, and nothing it should not")
