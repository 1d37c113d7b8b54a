"""Attribution on every CPython here: threads whose functions are known (a sleeper, a pipe
reader, two spinners, a sleeper whose name is not ASCII) must be recorded under exactly those
functions, with their files and first lines, and their releases classed as the functions make
them: spinners forced, sleepers and readers voluntary. Offsets from DWARF (pyenv, Debian's
python3.11 with python3.11-dbg), from the table (pyenv 3.8-3.12 libpython with its DWARF
stripped) and from _Py_DebugOffsets (3.13 stripped). --no-attribution leaves the old format.
"""
import ast
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

SECONDS = 1.5
MIN_CLASS = 0.95  # share of a role's releases in its own function with the expected class
MIN_OWN = 0.90  # share of a role's releases attributed to its own function
MIN_DROPS = {"sleeper": 50, "reader": 20, "spinner1": 20, "spinner2": 20, "schlaefer": 40}
LEAST = max(MIN_DROPS.values())  # the workload runs on until each role released this often
WORKLOAD = os.path.join(WORKLOADS, "attribution.py")
FORCED, VOLUNTARY = 2, 1


def def_lines():
    """First line of each function of the workload, from its source."""
    with open(WORKLOAD, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {n.name: n.lineno for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


LINES = def_lines()


def expected(role, ver):
    """(name, line, class) of the function a role's thread runs; name None: marked non-ASCII."""
    if role.startswith("spinner"):
        name = "Busy.spin" if ver >= (3, 11) else "spin"
        return name, LINES["spin"], FORCED
    if role == "schlaefer":
        return None, LINES["schläfer"], VOLUNTARY
    return role, LINES[role], VOLUNTARY


def run(label, exe, ver, env=None, extra=()):
    w = Workload(exe, "attribution.py", SECONDS, LEAST, env=env)
    rec = Recorder("--pid", w.pid, *extra)
    w.go()
    done = dict(kv.split("=") for kv in w.wait_done())
    w.finish()
    rc = rec.wait()
    check(rc == 0, "%s: gil-record exited %d: %s" % (label, rc, rec.err))
    files = rec.files()
    check(len(files) == 1, "%s: expected one file, got %s" % (label, files))
    header, records, footer = read_recording(files[0])
    shutil.rmtree(rec.outdir, ignore_errors=True)
    check(footer is not None, "%s: recording not complete" % label)
    return header, records, {role: int(tid) for role, tid in done.items()}, rec.err


def run_with_fault(so, spec, label, exe, ver, extra=()):
    """run() with tests/fault.c (built as @so) making GIL_FAULT=@spec fail in gil-record only."""
    clean = dict(os.environ)  # for the workload
    saved = os.environ.get("ASAN_OPTIONS")
    # under ASan (tools/test.sh's second pass) the shim may come before its runtime
    os.environ.update(LD_PRELOAD=so, GIL_FAULT=spec,
                      ASAN_OPTIONS=(saved or "") + ":verify_asan_link_order=0")
    try:
        return run(label, exe, ver, env=clean, extra=extra)
    finally:
        del os.environ["LD_PRELOAD"], os.environ["GIL_FAULT"]
        if saved is None:
            del os.environ["ASAN_OPTIONS"]
        else:
            os.environ["ASAN_OPTIONS"] = saved


def summary_mostly_in(err):
    """tid -> the "mostly in" column of gil-record's closing summary."""
    out, on = {}, False
    for line in err.splitlines():
        cols = line.split()
        if cols[:5] == ["tid", "name", "wait", "hold", "release"]:
            on = cols[5:7] == ["mostly", "in"]
        elif on and len(cols) >= 6 and cols[0].isdigit() and cols[-4].endswith("%"):
            out[int(cols[0])] = cols[-1]
    return out


def mostly_in(records, tid):
    """The names the summary may show for @tid: the functions with the most wait and hold
    time in the file (more than one on a tie), written as the summary writes them."""
    fns = {r["fn"]["id"]: r["fn"] for r in records if isinstance(r, dict) and "fn" in r}
    ns = {}
    for r in records:
        if isinstance(r, list) and r[0] == tid and r[1] != 2 and len(r) > 5 and r[5]:
            ns[r[5]] = ns.get(r[5], 0) + r[3]
    if not ns:
        return set()
    most = max(ns.values())
    return {fns[f]["name"] if fns.get(f, {}).get("name") is not None
            else "<%s>" % fns.get(f, {}).get("unreadable") for f, v in ns.items() if v == most}


def check_attribution(label, ver, header, records, tids, source, failures):
    """Returns the accuracy row for the report."""
    att = header.get("attribution") or {}
    if not att.get("enabled") or att.get("offsets_from") != source:
        failures.append("%s: attribution %s, expected enabled from %s" % (label, att, source))
        return None
    with_reason = True  # 3.6/3.7 read a global, later versions a drop_gil argument
    if att.get("release_reason") != with_reason:
        failures.append("%s: release_reason %s" % (label, att.get("release_reason")))
    fns = {}
    for r in records:
        if isinstance(r, dict) and "fn" in r:
            fns[r["fn"]["id"]] = r["fn"]
    ivs = [r for r in records if isinstance(r, list)]
    if any(len(r) != 7 for r in ivs):
        failures.append("%s: intervals without fn and reason" % label)
        return None
    undefined = {r[5] for r in ivs if r[5] and r[5] not in fns}
    if undefined:
        failures.append("%s: intervals name undefined functions %s" % (label, sorted(undefined)))
    known = {}
    for role in tids:
        name, line, _ = expected(role, ver)
        known[role] = (name, line)
    row = {}
    for role, tid in sorted(tids.items()):
        name, line, cls = expected(role, ver)
        drops = [r for r in ivs if r[0] == tid and r[1] == 2]
        own, right, wrong_fn = 0, 0, []
        for r in drops:
            fn = fns.get(r[5], {})
            same_file = bool(fn.get("file")) and os.path.samefile(fn["file"], WORKLOAD)
            if name is None:
                is_own = same_file and fn.get("line") == line and fn.get("name") is None and \
                    fn.get("unreadable") == "name not compact ASCII"
            else:
                is_own = same_file and fn.get("line") == line and fn.get("name") == name
            if is_own:
                own += 1
                right += (r[6] == cls) if with_reason else (r[6] == 0)
                continue
            # never another known function of the workload: a name must not be guessed
            for other, (oname, oline) in known.items():
                if other != role and oline != line and fn.get("line") == oline:
                    wrong_fn.append((fn, other))
        if wrong_fn:
            failures.append("%s: %s releases recorded in the wrong function: %s"
                            % (label, role, wrong_fn[:3]))
        if own < MIN_DROPS[role]:
            failures.append("%s: %s: only %d of %d releases in its own function"
                            % (label, role, own, len(drops)))
        if drops and own < MIN_OWN * len(drops):
            failures.append("%s: %s: %d of %d releases in its own function (< %d%%)"
                            % (label, role, own, len(drops), MIN_OWN * 100))
        if own and right < MIN_CLASS * own:
            failures.append("%s: %s: %d of %d releases classed %s"
                            % (label, role, right, own,
                               {FORCED: "forced", VOLUNTARY: "voluntary"}[cls]))
        row[role] = (own, len(drops), right)
        # the thread's waits and holds name its function too (not only the releases)
        holds = [r for r in ivs if r[0] == tid and r[1] == 1 and r[5]]
        hold_own = sum(1 for r in holds if fns.get(r[5], {}).get("line") == line)
        if holds and hold_own < MIN_OWN * len(holds):
            failures.append("%s: %s: %d of %d holds in its own function"
                            % (label, role, hold_own, len(holds)))
    non_ascii = [f for f in fns.values() if f.get("unreadable") == "name not compact ASCII"]
    if not non_ascii or any(f.get("name") is not None for f in non_ascii):
        failures.append("%s: the non-ASCII name was not marked: %s" % (label, non_ascii))
    return row


def stripped_lib(exe, ver, tmp, how="--strip-debug"):
    """A copy of the interpreter's libpython without DWARF (symbols kept), or with nothing but
    .dynsym (@how "--strip-all", as Docker's python images ship it); None without one."""
    libdir = os.path.join(os.path.dirname(os.path.dirname(exe)), "lib")
    name = "libpython%d.%d.so.1.0" % ver[:2]
    src = os.path.join(libdir, name)
    if not os.path.exists(src) or not shutil.which("objcopy"):
        return None
    d = os.path.join(tmp, "%d.%d%s" % (ver[0], ver[1], how))
    os.makedirs(d, exist_ok=True)
    subprocess.check_call(["objcopy", how, src, os.path.join(d, name)])
    return d


def env_with(d):
    return dict(os.environ, LD_LIBRARY_PATH=d)


require_kernel()
failures, report = [], []
tmp = tempfile.mkdtemp(prefix="gilattr-")
try:
    interpreters = [p for p in pythons(min_version=(3, 6))]
    for label, exe, ver in interpreters:
        if label.startswith("system-") and not has_debug_symbols(exe):
            log("%s: no debug symbols (apt-get install python%d.%d-dbg): skipped"
                % (label, ver[0], ver[1]))
            continue
        header, records, tids, err = run(label, exe, ver)
        row = check_attribution(label, ver, header, records, tids, "dwarf", failures)
        report.append((label, "dwarf", row))
        # gil-record's own summary names each thread by the function it spent its GIL time in
        # (waits and holds), which the file says too. Which function that is depends on the
        # schedule: on a loaded machine one long first wait, named after the barrier the thread
        # passed, can outweigh all its reads. That the roles' releases are named is checked
        # above, by count.
        shown = summary_mostly_in(err)
        for role, tid in tids.items():
            tops = mostly_in(records, tid)
            if role != "schlaefer" and shown.get(tid) not in tops:
                failures.append("%s: summary shows %s mostly in %r; the file says %s: %s"
                                % (label, role, shown.get(tid), sorted(tops), err[-600:]))
    # Without DWARF: the table (3.8 - 3.12) and _Py_DebugOffsets (3.13).
    for label, exe, ver in interpreters:
        if not label.startswith("pyenv-") or not (3, 8) <= ver[:2] <= (3, 13):
            continue
        d = stripped_lib(exe, ver, tmp)
        if not d:
            continue
        env = env_with(d)
        source = "debug_offsets" if ver[:2] >= (3, 13) else "table"
        header, records, tids, _ = run(label + "-nodwarf", exe, ver, env=env)
        check(header["object"].startswith(d), "%s: the stripped copy was not used: %s"
              % (label, header["object"]))
        row = check_attribution(label + "-nodwarf", ver, header, records, tids, source, failures)
        report.append((label, source, row))
        # No symbol table either: take_gil/drop_gil found from the code (callgraph.c), exact,
        # and their forced switches seen and classed as with symbols.
        d = stripped_lib(exe, ver, tmp, "--strip-all")
        header, records, tids, _ = run(label + "-stripped", exe, ver, env=env_with(d))
        methods = sorted(set(p["method"] for p in header["probes"]))
        if header.get("approximate") or [m for m in methods if m != "code-inline"] != ["callgraph"]:
            failures.append("%s-stripped: sites %s, approximate %s: %s"
                            % (label, methods, header.get("approximate"),
                               header.get("approximate_reason")))
        row = check_attribution(label + "-stripped", ver, header, records, tids, source,
                                failures)
        report.append((label, source + ", no symbols", row))
    # Off: the old five-element format, no function records, and the header says so.
    label, exe, ver = [p for p in interpreters if p[0].startswith("pyenv-")][-1]
    header, records, tids, err = run(label + "-off", exe, ver, extra=("--no-attribution",))
    check("mostly in" not in err, "--no-attribution: the summary names functions: %s" % err)
    check("not recorded" not in err, "--no-attribution: warned about what was asked: %s" % err)
    ivs = [r for r in records if isinstance(r, list)]
    check(ivs and all(len(r) == 5 for r in ivs), "--no-attribution: intervals are not 5 long")
    check(not any(isinstance(r, dict) and "fn" in r for r in records),
          "--no-attribution: function records written")
    att = header.get("attribution", {})
    check(att.get("enabled") is False and "no-attribution" in att.get("why", ""),
          "--no-attribution: header says %s" % att)
    # A kernel that refuses the fetchargs of a probe still gets the probe, without them: the
    # first two uprobe writes (drop_gil's entry with its fetchargs, padded to the union of
    # the file's entry sets, then alone) fail, as an LD_PRELOAD says.
    # With --attribution=full take_gil's entry reads the frame too, and still names waits (by
    # default only drop_gil reads, and that one refusal leaves nothing named: said below).
    so = os.path.join(tmp, "fault.so")
    plain = [p for p in interpreters if p[0].startswith("pyenv-") and p[2][:2] == (3, 12)]
    if not plain:
        log("no pyenv 3.12 (no inlined drop_gil copy): refused fetchargs not tested")
    elif subprocess.call(["cc", "-shared", "-fPIC", "-o", so,
                          os.path.join(TOP_SRCDIR, "tests", "fault.c"), "-ldl"]) == 0:
        label, exe, ver = plain[0]
        header, records, tids, err = run_with_fault(so, "probe_write:1-2", label + "-refused",
                                                    exe, ver, extra=("--attribution=full",))
        check("not recorded" not in err, "one refused site is no reason to warn: %s" % err)
        entries = [p for p in header["probes"] if p["role"] == "entry"]
        refused = [p for p in entries if p["attribution"] is False]
        check(len(refused) == 1 and refused[0]["function"] == "drop_gil" and
              refused[0].get("attribution_why") and
              header["attribution"]["attributed_sites"] == len(entries) - 1,
              "refused fetchargs: probes %s, attribution %s" % (entries, header["attribution"]))
        ivs = [r for r in records if isinstance(r, list)]
        check(all(r[5] == 0 and r[6] == 0 for r in ivs if r[1] == 2) and
              any(r[5] for r in ivs if r[1] == 0),
              "refused fetchargs: releases must name nothing, waits their function")
        # A kernel that refuses every fetcharg: recorded without functions, and said on screen.
        header, records, tids, err = run_with_fault(so, "fetch_write:1+",
                                                    label + "-all-refused", exe, ver)
        pid = header["pid"]
        want = ("gil-record: warning: process %d: Python functions and release reasons are not "
                "recorded: the kernel refused the fetchargs" % pid)
        check(want in err, "all fetchargs refused, not said on screen: %s" % err[-600:])
        check(header["attribution"]["enabled"] is False and
              header["attribution"]["why"] == "the kernel refused the fetchargs" and
              any(isinstance(r, list) for r in records),
              "all fetchargs refused: %s" % header["attribution"])
    else:
        failures.append("cannot build tests/fault.c")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
check_no_probes()

roles = ["sleeper", "reader", "schlaefer", "spinner1", "spinner2"]
log("releases in the role's own function / all its releases, and how many of those have the "
    "expected class (spinners forced; the others voluntary)")
log("%-22s %-14s" % ("interpreter", "offsets") + "".join("%20s" % r for r in roles))
for label, source, row in report:
    if row is None:
        log("%-22s %-14s %s" % (label, source, "(no attribution)"))
        continue
    log("%-22s %-14s" % (label, source) +
        "".join("%20s" % ("%d/%d %d" % (row[r][0], row[r][1], row[r][2]) if r in row else "-")
                for r in roles))
check(report, "no CPython found")
if failures:
    fail("; ".join(failures))
log("PASS: %d recordings" % (len(report) + 1))
