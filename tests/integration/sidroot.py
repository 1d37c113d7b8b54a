"""Workloads inside the Debian sid root that tools/sid-root.sh builds, run as in a container:
their own mount namespace (unshare -m), the root made theirs with pivot_root, /proc mounted,
and in "stock image" mode /usr/lib/debug hidden under an empty tmpfs, as an image without the
-dbg packages. The recorder stays on the host and is given the process's pid: it reads the
mapped files through /proc/PID/map_files and the debug files inside /proc/PID/root.
"""
import fcntl
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distrolib import *  # noqa: E402,F401,F403

SID_ROOT = os.environ.get("GIL_SID_ROOT") or "/var/cache/giltrace/sid-root"
SID_PYTHONS = ("3.13", "3.14", "3.15")
INSIDE_WORKLOADS = "/run/giltrace"  # on a tmpfs inside the namespace: the cache is not written


def wait_for_build(lock):
    """tools/test.sh builds the root beside the first tests, holding its lock while it does:
    wait for that build to end (a shared lock waits for the exclusive one to go)."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # no build was ever started here
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    finally:
        os.close(fd)


def require_sid_root():
    """The root's path, or skip (fail under CI=true, where tools/test.sh builds it)."""
    wait_for_build(SID_ROOT + ".lock")
    if not os.path.exists(SID_ROOT + ".stamp"):
        skip("no Debian sid root at %s: sh tools/sid-root.sh builds it" % SID_ROOT)
    if not shutil.which("pivot_root") or not shutil.which("unshare"):
        skip("pivot_root(8) or unshare(1) missing (util-linux)")
    require_unshare()
    return SID_ROOT


def container_setup(root, hide_debug=False):
    """Shell commands, run in a fresh private mount namespace, that make @root the root: the
    host's tests/workloads copied onto a tmpfs inside it, then pivot_root, /proc, /dev."""
    cmds = [
        "mount --bind %s %s" % (root, root),  # pivot_root wants a mount point
        "mount -t tmpfs giltrace-run %s/run" % root,
        "mkdir %s%s" % (root, INSIDE_WORKLOADS),
        "cp %s/*.py %s%s/" % (WORKLOADS, root, INSIDE_WORKLOADS),
        "mkdir %s/run/oldroot" % root,
        "mount --rbind /dev %s/dev" % root,
        "cd %s" % root,
        # the old root moved aside and detached: nothing of the host is left inside
        "pivot_root . run/oldroot",
        "cd /",
        "mount -t proc proc /proc",
        "umount -l /run/oldroot",
        "rmdir /run/oldroot",
    ]
    if hide_debug:
        cmds.append(HIDE_DEBUG)
    return "\n".join(cmds)


class SidWorkload(Workload):
    """@script of tests/workloads run by @python (a path inside the root) in a container."""

    def __init__(self, root, python, script, *args, hide_debug=False):
        inner = "set -e\n%s\nexec \"$@\"" % container_setup(root, hide_debug)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8"}
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", inner, "sh", python,
               "-u", "%s/%s" % (INSIDE_WORKLOADS, script)] + [str(a) for a in args]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env)
        line = self.readline(60)
        check(line.startswith("ready "), "workload %s did not start in the sid container: %r"
              % (script, line))
        self.pid = int(line.split()[1])
        self.script = script


def in_container(pid):
    """Is the process's root another one than ours (a check that the container is one)?"""
    return os.stat("/proc/%d/root/" % pid).st_ino != os.stat("/").st_ino or \
        os.stat("/proc/%d/root/" % pid).st_dev != os.stat("/").st_dev
