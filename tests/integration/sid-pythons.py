"""Debian sid's CPython 3.13, 3.14 and 3.15, as people install them, each run in a container
(tests/integration/sidroot.py) twice: with the -dbg packages' debug files, and in "stock image"
mode with /usr/lib/debug hidden. The recorder runs on the host with --pid.

- ctypes_calls.py makes N ctypes calls on the main thread: N to N+50 releases and takes there.
  With debug files the sites are exact (take_gil, drop_gil and its inlined copies); without,
  take_gil and drop_gil are found from the code (callgraph.c), with PyEval_SaveThread and
  _Py_HandlePending standing for the copies inlined into them, and attribution comes from
  _Py_DebugOffsets: either way >= 90% of the releases name <module> of the workload.
- tagged_calls.py makes the calls from a function whose code object it made immortal: from 3.14
  the frame's f_executable then carries tag bit 1 (the workload reads it and says so), and the
  releases must still name that function, not "frame not readable".
- attribution.py's threads (sleeper, pipe reader, two spinners): with debug files each role's
  releases name its function and are classed as it makes them (spinners forced, the others
  voluntary), with the debug files and without: the spinners' forced switches go through
  drop_gil or _Py_HandlePending, both found from the code, and the reader's through the copy of
  drop_gil that LTO inlined into os.read's helper (3.15), found from the code as well.
Ends with the tables doc/compatibility.md shows.
"""
# giltest: timeout 1500
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sidroot import *  # noqa: E402,F401,F403

SID_N = 2000
SID_SLACK = 50
MIN_NAMED = 0.90


def attributed(header, records, tid, name, script):
    """(releases of @tid, of them naming @name in @script, the other functions seen)."""
    fns = {r["fn"]["id"]: r["fn"] for r in records if isinstance(r, dict) and "fn" in r}
    drops = [r for r in records if isinstance(r, list) and r[0] == tid and r[1] == 2]
    named, other = 0, {}
    for r in drops:
        fn = fns.get(r[5] if len(r) > 5 else 0, {})
        if fn.get("name") == name and fn.get("file") == "%s/%s" % (INSIDE_WORKLOADS, script):
            named += 1
        else:
            key = fn.get("name") or fn.get("unreadable") or "none"
            other[key] = other.get(key, 0) + 1
    return len(drops), named, other


def run(root, ver, hide_debug, script, name, failures, rows):
    label = "sid python%s, %s%s" % (ver, "stock (no -dbg)" if hide_debug else "with -dbg",
                                    ", tagged frame" if script == "tagged_calls.py" else "")
    w = SidWorkload(root, "/usr/bin/python%s" % ver, script, SID_N, hide_debug=hide_debug)
    check(in_container(w.pid), "%s: the workload is not in its own root" % label)
    rec = FileRecorder("--pid", w.pid)
    w.go()
    done = w.wait_done()
    w.finish()
    rc = rec.wait()
    check(rc == 0, "%s: gil-record exited %d: %s" % (label, rc, rec.err))
    files = rec.files()
    check(len(files) == 1, "%s: expected one file, got %s" % (label, files))
    header, records, footer = read_recording(files[0])
    check_no_probes()
    tid = int(done[0])
    row = Row(label, header, records, footer, tid, rec.err, SID_N)
    att = header.get("attribution") or {}
    ndrops, named, other = attributed(header, records, tid, name, script)
    row.attr = "%s, %d/%d named" % (att.get("offsets_from"), named, ndrops)
    rows.append(row)
    for what, got in (("releases", row.drops), ("takes", row.takes)):
        if not SID_N <= got <= SID_N + SID_SLACK:
            failures.append("%s: %s on the main thread %d, expected %d..%d"
                            % (label, what, got, SID_N, SID_N + SID_SLACK))
    if footer is None or footer.get("lost"):
        failures.append("%s: footer %s" % (label, footer))
    if row.approximate:
        failures.append("%s: approximate sites: %s" % (label, row.approximate))
    if hide_debug and "callgraph" not in row.methods:
        failures.append("%s: take_gil/drop_gil not found from the code: %s"
                        % (label, row.methods))
    if hide_debug:
        if "build-id" in row.methods:
            failures.append("%s: a debug file was used though hidden: %s" % (label, row.methods))
        log("%s: sites %s%s" % (label, row.method(),
                                ", approximate" if row.approximate else ""))
    want = "dwarf" if not hide_debug else "debug_offsets"
    if not att.get("enabled") or att.get("offsets_from") != want:
        failures.append("%s: attribution %s, expected from %s" % (label, att, want))
    if named < MIN_NAMED * max(ndrops, 1):
        failures.append("%s: %d of %d releases name %s (others: %s)"
                        % (label, named, ndrops, name, other))
    if script == "tagged_calls.py":
        tag = done[2]
        expect = "tag=1" if ver >= "3.14" else "tag=0"
        check(tag == expect, "%s: the workload's frame has %s, expected %s" % (label, tag, expect))
    shutil.rmtree(rec.outdir, ignore_errors=True)


ROLES = {"sleeper": ("sleeper", 1), "reader": ("reader", 1), "spinner1": ("Busy.spin", 2),
         "spinner2": ("Busy.spin", 2), "schlaefer": (None, 1)}
MIN_CLASS = 0.95


def run_roles(root, ver, hide_debug, failures, lines):
    """attribution.py in the container: each role's releases, named and classed."""
    label = "sid python%s, %s" % (ver, "stock (no -dbg)" if hide_debug else "with -dbg")
    # on until each role released 20 times (as far as it can tell), whatever the speed
    w = SidWorkload(root, "/usr/bin/python%s" % ver, "attribution.py", 1.5, 20,
                    hide_debug=hide_debug)
    rec = FileRecorder("--pid", w.pid)
    w.go()
    tids = {role: int(tid) for role, tid in (kv.split("=") for kv in w.wait_done())}
    w.finish()
    rc = rec.wait()
    check(rc == 0, "%s: gil-record exited %d: %s" % (label, rc, rec.err))
    header, records, footer = read_recording(rec.files()[0])
    shutil.rmtree(rec.outdir, ignore_errors=True)
    fns = {r["fn"]["id"]: r["fn"] for r in records if isinstance(r, dict) and "fn" in r}
    cells = []
    for role, (name, cls) in sorted(ROLES.items()):
        drops = [r for r in records if isinstance(r, list) and r[0] == tids[role] and r[1] == 2]
        own = [r for r in drops if fns.get(r[5], {}).get("file") ==
               "%s/attribution.py" % INSIDE_WORKLOADS and
               (fns[r[5]].get("name") == name if name else
                fns[r[5]].get("unreadable") == "name not compact ASCII")]
        right = sum(1 for r in own if r[6] == cls)
        cells.append("%s %d/%d/%d" % (role, right, len(own), len(drops)))
        # a thread's own start and end release the GIL outside its function (3 here)
        if len(own) < 20 or len(own) < MIN_NAMED * (len(drops) - 3):
            failures.append("%s: %s: %d of %d releases in its own function"
                            % (label, role, len(own), len(drops)))
        elif right < MIN_CLASS * len(own):
            failures.append("%s: %s: %d of %d releases classed %s"
                            % (label, role, right, len(own), "forced" if cls == 2 else
                               "voluntary"))
    lines.append("| %s | %s |" % (label, ", ".join(cells)))


require_kernel()
root = require_sid_root()
failures, rows = [], []
# Under ASan each cold DWARF read takes a minute: 3.13 (frames untagged) and the newest, the
# tagged frame on the newest only, and the roles on the newest only (the suite runs them all).
SANITIZED = bool(os.environ.get("GIL_SANITIZED"))
versions = sweep(SID_PYTHONS)
for ver in versions:
    check(os.access("%s/usr/bin/python%s" % (root, ver), os.X_OK),
          "no python%s in %s: sh tools/sid-root.sh rebuilds it" % (ver, root))
    for hide in (False, True):
        run(root, ver, hide, "ctypes_calls.py", "<module>", failures, rows)
        if not SANITIZED or ver == versions[-1]:
            run(root, ver, hide, "tagged_calls.py", "calls", failures, rows)

lines = ["| interpreter | sites | releases / N | takes / N | attribution |",
         "|---|---|---|---|---|"]
for r in rows:
    lines.append("| %s | %s%s | %d / %d | %d / %d | %s |"
                 % (r.label, r.method(), " (approximate)" if r.approximate else "", r.drops,
                    r.n, r.takes, r.n, r.attr))
log("\n".join(lines))
lines = ["| interpreter | role: right class / own function / releases |", "|---|---|"]
for ver in versions[-1:] if SANITIZED else versions:
    for hide in (False, True):
        run_roles(root, ver, hide, failures, lines)
log("\n".join(lines))
if failures:
    fail("; ".join(failures))
log("PASS: %d recordings of Debian sid's Pythons" % (len(rows) + len(lines) - 2))
