"""The watchdog (--alert-hold, --alert-cmd): a thread holds the GIL for 2 s in one C call that
does not release it (tests/workloads/stall.py) while another waits. gil-record must say so
while the hold lasts (the command has run before the call returns), once more at its end with
the function and the duration (within 5% of what the workload measured around the call), run
--alert-cmd once, as the user who ran sudo, with the details in its environment, and list the
hold in the file's footer as the one interval that long."""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

STALL_MS = 2000
THRESHOLD_MS = 500

require_kernel()
py = [exe for _, exe, ver in pythons(include_system=False) if ver >= (3, 8)][-1]
work = tempfile.mkdtemp(prefix="alerts-")
os.chmod(work, 0o755)
marks = os.path.join(work, "marks")
os.mkdir(marks)
os.chmod(marks, 0o1777)
script = os.path.join(work, "on-alert")
with open(script, "w") as f:
    f.write('#!/bin/sh\n{ id -u; env | grep "^GIL_ALERT_" | sort; } > "$1/alert.$$"\n')
os.chmod(script, 0o755)

# as if run with sudo by nobody: the command must run as nobody
os.environ["SUDO_UID"] = os.environ["SUDO_GID"] = str(NOBODY_UID)
w = Workload(py, "stall.py", STALL_MS, marks)
rec = Recorder("--pid", w.pid, "--alert-hold", THRESHOLD_MS, "--alert-cmd",
               "%s %s" % (script, marks))
w.go()
staller, spinner, stall_ns, marks_then = (int(x) for x in w.wait_done())
w.finish()
rc = rec.wait()
log(rec.err)
check(rc == 0, "gil-record exited %d: %s" % (rc, rec.err))

lines = [l for l in rec.err.splitlines() if "alert:" in l]
mine = [l for l in lines if " tid %d " % staller in l]
check(lines == mine, "alerts for other threads than the staller (%d): %s" % (staller, lines))
holding = [l for l in mine if " holding the GIL for " in l]
held = [l for l in mine if " held the GIL for " in l]
check(holding, "no alert while the hold lasted: %s" % lines)
check(len(held) == 1, "want one alert at the hold's end, got %s" % held)
m = re.search(r" in (\S+) held the GIL for ([0-9.]+) s, since [0-9:.]+, (\d+) threads? waiting",
              held[0])
check(m, "the end's alert does not say function, duration and waiters: %s" % held[0])
check(m.group(1) == "hold_gil", "the hold's function: want hold_gil, got %s" % m.group(1))
said = float(m.group(2)) * 1e9
check(abs(said - stall_ns) <= 0.05 * stall_ns,
      "the hold's duration: gil-record said %.3f s, the call took %.3f s" % (said / 1e9,
                                                                            stall_ns / 1e9))
check(int(m.group(3)) >= 1, "the spinner waited all along, the alert says %s" % m.group(3))
check(re.search(r"1 hold\(s\) of the GIL longer than %d ms" % THRESHOLD_MS, rec.err),
      "no closing count of the long holds")

# --alert-cmd: once for the one long hold, while it lasted, as nobody, with the details
ran = sorted(os.listdir(marks))
check(len(ran) == 1, "want --alert-cmd run once, got %d: %s" % (len(ran), ran))
check(marks_then == 1, "--alert-cmd had not run when the call returned (%d marks then)"
      % marks_then)
with open(os.path.join(marks, ran[0])) as f:
    out = f.read().splitlines()
check(out[0] == str(NOBODY_UID), "--alert-cmd ran as uid %s, not as the sudo user" % out[0])
env = dict(l.split("=", 1) for l in out[1:])
check(env.get("GIL_ALERT_PID") == str(w.pid) and env.get("GIL_ALERT_TID") == str(staller),
      "the command's environment names another process or thread: %s" % env)
check(env.get("GIL_ALERT_STATE") == "holding" and
      int(env.get("GIL_ALERT_HELD_MS", "0")) >= THRESHOLD_MS,
      "the command ran for the open hold: %s" % env)

# the footer lists it, as the file's only hold that long
files = rec.files()
check(len(files) == 1, "want one recording, got %s" % files)
header, records, footer = read_recording(files[0])
long_holds = [r for r in intervals(records, kind=1) if r[3] >= THRESHOLD_MS * 1000000]
check(len(long_holds) == 1 and long_holds[0][0] == staller,
      "the file's holds over %d ms: %s" % (THRESHOLD_MS, long_holds))
alerts = footer.get("alerts")
check(alerts and alerts["hold_ns"] == THRESHOLD_MS * 1000000 and alerts["count"] == 1,
      "the footer's alerts: %s" % alerts)
h = alerts["holds"][0]
check(h["tid"] == staller and h["start"] == long_holds[0][2] and h["dur"] == long_holds[0][3]
      and h["waiters"] >= 1, "the footer's hold %s is not the file's %s" % (h, long_holds[0]))

# gil-convert reads them: --summary lists the hold, --summary-json has it with its function
cv = subprocess.run([GIL_CONVERT, "--summary", files[0]], capture_output=True, text=True)
check(cv.returncode == 0, "gil-convert --summary: %s" % cv.stderr)
lines = cv.stdout.splitlines()
at = [k for k, l in enumerate(lines) if "Holds of the GIL longer than" in l]
check(at and lines[at[0]].strip() == "Holds of the GIL longer than 500.00ms (the recorder's "
      "--alert-hold): 1", "the summary's long holds: %s" % (at and lines[at[0]]))
row = lines[at[0] + 2].split()
check(len(row) == 6 and int(row[0]) == staller and row[2] == "hold_gil" and
      abs(float(row[3].rstrip("s")) * 1e9 - h["dur"]) < 1e6,
      "the summary's long hold: %s" % lines[at[0]:at[0] + 3])
js = os.path.join(tempfile.mkdtemp(prefix="alerts-json-"), "s.json")
cv = subprocess.run([GIL_CONVERT, "--summary-json", js, files[0]], capture_output=True,
                     text=True)
check(cv.returncode == 0, "gil-convert --summary-json: %s" % cv.stderr)
with open(js) as f:
    lh = json.load(f)["processes"][0].get("long_holds")
check(lh and lh["count"] == 1 and lh["hold_ns"] == THRESHOLD_MS * 1000000 and
      len(lh["holds"]) == 1 and lh["holds"][0]["tid"] == staller and
      lh["holds"][0]["dur_ns"] == h["dur"] and lh["holds"][0]["function"] == "hold_gil",
      "the JSON summary's long holds: %s" % lh)
log("PASS: held %.3f s by the workload's clock, %.3f s by gil-record's; %d alert(s) while "
    "it lasted, --alert-cmd ran once as uid %s" % (stall_ns / 1e9, said / 1e9, len(holding),
                                                   out[0]))
