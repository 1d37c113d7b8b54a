"""gil-record -- COMMAND: probes are in place before the command runs any Python (the first
interval of the main thread is observed from its start, not flagged as begun earlier), the
command's exit status comes back, Python started through a shell and Python children forked by
the target are recorded too, and a command that is not Python or does not exist is reported."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

N = 1000
require_kernel()
label, exe, ver = pythons(include_system=False)[-1]
CALLS = "import ctypes,sys\nl=ctypes.CDLL(None)\nfor i in range(%d): l.getppid()\nsys.exit(%%d)" % N


def launch(args, outdir=None):
    outdir = outdir or tempfile.mkdtemp(prefix="gillaunch-")
    p = subprocess.run([GIL_RECORD, "--output-dir", outdir] + args, capture_output=True,
                       text=True, timeout=HANG_S)
    return p.returncode, p.stderr, sorted(os.path.join(outdir, f) for f in os.listdir(outdir))


# 1. Directly: exit status, from the first line.
rc, err, files = launch(["--", exe, "-c", CALLS % 3])
check(rc == 3, "exit status %d, want 3: %s" % (rc, err))
check(len(files) == 1, "files: %s" % files)
h, records, footer = read_recording(files[0])
main = h["pid"]
first = [r for r in records if isinstance(r, list) and r[0] == main][0]
check(first[1] == 0 and not first[4] & F_BEGIN_UNKNOWN,
      "first interval of the main thread %s: attached too late" % first)
drops = intervals(records, main, 2)
check(len(drops) >= N, "%d drops for %d calls" % (len(drops), N))
check(footer["reason"] == "exited", "footer %s" % footer)
check_no_probes()

# 2. Through a shell that forks (not execs) the interpreter, and a child forked by Python.
script = ("import os,ctypes\nl=ctypes.CDLL(None)\npid=os.fork()\n"
          "if pid==0:\n    [l.getppid() for i in range(%d)]\n    os._exit(0)\n"
          "os.waitpid(pid,0)\n" % N)
rc, err, files = launch(["--", "/bin/sh", "-c", "%s -c '%s'; exit 5" % (exe, script)])
check(rc == 5, "exit status %d, want 5: %s" % (rc, err))
check(len(files) == 2, "want the Python and its forked child, got %s\n%s" % (files, err))
child = [f for f in files if len(intervals(read_recording(f)[1], kind=2)) >= N]
check(child, "no file holds the child's %d releases: %s" % (N, files))
check_no_probes()

# 3. Not Python, and not there.
rc, err, files = launch(["--", "true"])
check(rc == 0 and "ran no CPython with a GIL: nothing was recorded" in err and not files,
      "true: %d %r %s" % (rc, err, files))
rc, err, files = launch(["--", "/nonexistent/cmd"])
check(rc == 1 and err == "gil-record: cannot run '/nonexistent/cmd': No such file or directory\n" and not files,
      "missing command: %d %r" % (rc, err))
rc, err, files = launch(["--pid", "1", "--", "true"])
check(rc == 2 and "give either --pid or a command to run, not both" in err, "pid+command: %r" % err)

# 4. Under sudo the command runs as the invoking user.
UID = ["/bin/sh", "-c", "exit $(( $(id -u) % 256 ))"]
rc, err, files = launch(["--"] + UID)
check(rc == 0, "as root: uid %d" % rc)
env = dict(os.environ, SUDO_UID="65534", SUDO_GID="65534", SUDO_USER="nobody")
p = subprocess.run([GIL_RECORD, "--output-dir", tempfile.mkdtemp(), "--"] + UID, env=env,
                   capture_output=True, text=True, timeout=HANG_S)
check(p.returncode == 65534 % 256, "under sudo: uid %% 256 = %d, want %d" % (p.returncode, 65534 % 256))
p = subprocess.run([GIL_RECORD, "--as-root", "--output-dir", tempfile.mkdtemp(), "--"] + UID, env=env,
                   capture_output=True, text=True, timeout=HANG_S)
check(p.returncode == 0, "--as-root: uid %% 256 = %d" % p.returncode)
# ... with the invoking user's environment, not root's (sudo keeps HOME=/root, USER=root)
import pwd  # noqa: E402
nobody = pwd.getpwuid(65534)
out = os.path.join(tempfile.mkdtemp(), "env")
os.chmod(os.path.dirname(out), 0o777)
env2 = dict(env, HOME="/root", USER="root", LOGNAME="root")
p = subprocess.run([GIL_RECORD, "--output-dir", tempfile.mkdtemp(), "--", "/bin/sh", "-c",
                    'echo "$HOME $USER $LOGNAME" > %s' % out], env=env2, capture_output=True,
                   text=True, timeout=HANG_S)
with open(out) as f:
    got = f.read().split()
check(got == [nobody.pw_dir, "nobody", "nobody"], "under sudo: HOME USER LOGNAME %s, want %s" % (
    got, [nobody.pw_dir, "nobody", "nobody"]))
# ... with the invoking user's groups only, never root's supplementary ones, even when
# SUDO_USER is empty or names another user (the recorder runs with a supplementary group of its
# own here, which must not reach the command)
for user in ("nobody", "", "root"):
    gout = os.path.join(tempfile.mkdtemp(), "groups")
    os.chmod(os.path.dirname(gout), 0o777)
    p = subprocess.run(["setpriv", "--groups=0,4,27", GIL_RECORD, "--output-dir",
                        tempfile.mkdtemp(), "--", "/bin/sh", "-c", "id -G > %s" % gout],
                       env=dict(env, SUDO_USER=user), capture_output=True, text=True,
                       timeout=HANG_S)
    with open(gout) as f:
        groups = sorted(int(g) for g in f.read().split())
    want = sorted(set([nobody.pw_gid] + os.getgrouplist("nobody", nobody.pw_gid)))
    check(groups == want, "under sudo, SUDO_USER=%r: groups %s, want %s (gil-record: %r)"
          % (user, groups, want, p.stderr))
# 5. The recorder runs at nice -10 to keep up; the launched command keeps the caller's nice
# (whatever the suite runs at).
mine = os.nice(0)
rc, err, files = launch(["--", "/bin/sh", "-c", "exit $(( $(nice) + 100 ))"])
check(rc == 100 + mine, "the launched command runs at nice %d, want %d" % (rc - 100, mine))
check_no_probes()
log("PASS")
