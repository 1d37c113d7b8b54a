"""Processes in another mount namespace, as in a container: the recorder must read and probe the
files the process maps, through /proc/PID/root, not whatever the host has at that path.

1. A copy of pyenv's python3.12 and libpython, on a tmpfs mounted only inside the namespace:
   the host cannot even see the path the process maps.
2. The same path on both sides, different files: inside, a copy of libpython is bind-mounted
   over pyenv's. Probes on the host's file would never fire for this process.
3. Debian's python3.11 where /usr/lib/debug is empty inside: the debug file is looked up under
   the process's root, so the recorder falls back although the host has python3.11-dbg.
4. Debian's python3.11 chrooted into a directory (/usr bind-mounted there): its maps show the
   host's paths, which mean nothing inside its root; the file is opened through
   /proc/PID/map_files, and the debug file still found inside its root.
Each records N ctypes calls and must see N releases and N takes."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distrolib import *  # noqa: E402,F401,F403

require_kernel()
require_unshare()
failures = []
rows = []

py312 = [(l, e, v) for l, e, v in pythons(include_system=False) if v[:2] == (3, 12)]
if not py312:
    skip("no pyenv CPython 3.12 under %s" % pyenv_root())
label, exe, ver = py312[0]
prefix = os.path.dirname(os.path.dirname(exe))
lib = os.path.join(prefix, "lib", "libpython3.12.so.1.0")
check(os.path.exists(lib), "%s: no %s" % (label, lib))

# 1. Visible only inside.
mnt = tempfile.mkdtemp(prefix="gilctr-")
inside_exe = os.path.join(mnt, "bin", "python3.12")
inside_lib = os.path.join(mnt, "lib", "libpython3.12.so.1.0")
setup = "\n".join([
    "mount -t tmpfs giltrace-ctr %s" % mnt,
    "mkdir %s/bin %s/lib" % (mnt, mnt),
    "cp %s %s/bin/" % (exe, mnt),
    "cp %s %s/lib/" % (lib, mnt),
])
env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(mnt, "lib"), PYTHONHOME=prefix)
w = NsWorkload(inside_exe, "ctypes_calls.py", N, setup=setup, env=env)
check(mapped(w.pid, r"libpython3\.12") == [inside_lib],
      "the namespaced process maps %s, not the copy" % mapped(w.pid, r"libpython3\.12"))
check(not os.path.exists(inside_lib), "%s is visible from the host" % inside_lib)
row = record(w, "%s, only inside" % label)
rows.append(row)
failures += row.problems()
if row.header["object"] != inside_lib:
    failures.append("%s: header object %s, expected the path the process maps (%s)"
                    % (row.label, row.header["object"], inside_lib))
os.rmdir(mnt)

# 2. Same path, another file.
mnt = tempfile.mkdtemp(prefix="gilctr-")
setup = "\n".join([
    "mount -t tmpfs giltrace-ctr %s" % mnt,
    "cp %s %s/" % (lib, mnt),
    "mount --bind %s/libpython3.12.so.1.0 %s" % (mnt, lib),
])
w = NsWorkload(exe, "ctypes_calls.py", N, setup=setup)
host_ino = os.stat(lib).st_ino
inside_ino = os.stat("/proc/%d/root%s" % (w.pid, lib)).st_ino
check(host_ino != inside_ino, "the bind mount did not give the process another libpython")
row = record(w, "%s, shadowed by a copy" % label)
rows.append(row)
failures += row.problems()
if row.header["object"] != lib:
    failures.append("%s: header object %s, expected %s" % (row.label, row.header["object"], lib))
os.rmdir(mnt)

# 3. Debug files under the process's root, not the host's.
debian = debian_python(dbg=True)
if debian:
    w = NsWorkload(debian, "ctypes_calls.py", N, setup=HIDE_DEBUG)
    row = record(w, "debian-%s, no debug file inside" % version_of(debian))
    rows.append(row)
    failures += row.problems(not_seen_ok=True)
    if row.methods != ["callgraph", "code-inline"]:
        failures.append("%s: the host's debug file was used: %s" % (row.label, row.methods))
    w = NsWorkload(debian, "ctypes_calls.py", N)
    row = record(w, "debian-%s, python3.11-dbg inside" % version_of(debian))
    rows.append(row)
    failures += debian_dbg_problems(row)
    if "build-id" not in row.methods:
        failures.append("%s: debug file not found through /proc/PID/root: %s"
                        % (row.label, row.methods))

# 4. A chrooted process.
if debian:
    croot = tempfile.mkdtemp(prefix="gilchroot-")
    os.chmod(croot, 0o755)
    binds = [d for d in ("/usr", "/lib", "/lib64", "/bin", "/etc") if os.path.isdir(d) and
             not os.path.islink(d)]
    setup = "\n".join(["mkdir -p %s%s && mount --bind %s %s%s" % (croot, d, d, croot, d)
                       for d in binds] + [
        "mkdir -p %s/w && mount --bind %s %s/w" % (croot, WORKLOADS, croot),
        "for d in lib lib64 bin; do [ -e %s/$d ] || ln -s usr/$d %s/$d; done" % (croot, croot)])
    w = NsWorkload("chroot", croot, debian, "-u", "/w/ctypes_calls.py", N, setup=setup,
                   script_path=False)
    shown = mapped(w.pid, r"python3\.11$")
    check(shown and shown[0].startswith(croot), "the chrooted process maps %s" % shown)
    row = record(w, "debian-%s, chrooted" % version_of(debian))
    rows.append(row)
    failures += debian_dbg_problems(row)
    os.system("rm -rf %s" % croot)

log(table(rows))
if failures:
    fail("; ".join(failures))
log("PASS: %d namespaced processes" % len(rows))
