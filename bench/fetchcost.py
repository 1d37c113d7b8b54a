#!/usr/bin/env python3
"""Benchmark: what each fetcharg and each sampled byte costs the traced thread.

Usage: fetchcost.py [--quick] [--reps N] [--seconds S] [--python PY]

gil-record's own probe sites for the interpreter (copied from tracefs while it records), each
defined in a group of ours with a different set of reads, on the release workload (2 threads of
os.read(/dev/zero, 1): 4 probe hits per call):
  none        no fetchargs at any site (--no-attribution)
  full        name, file and line read at every take_gil and drop_gil entry (--attribution=full)
  pointer     the frame and the code object's address at drop_gil entries, and the drop
              request; nothing at take_gil (--attribution=fast, the default up to 0.1)
  default     gil-record's own default sites as it defines them (0.2: pointer, and at
              take_gil entries which GIL: tstate->interp, its ceval.gil and id, 3.12+; the
              frame and the code object too where a release found from the code reads the
              GIL's holder)
  pointer+1   pointer, and one more read through the code object (what a second check read in
              the probe would cost)
Each set is counted by perf stat (the probes' cost, no record) and drained by the minimal
reader (one sample per hit: what a recorder pays at least). Reported: ops/s, the cost per hit
over the bare probe, and the sample's size. Root; needs perf for the counted rows.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

HEADS = ["fetchargs", "recorded by", "ops/s", "slowdown", "vs none, same recorder",
         "ns per hit over none",
         "reads per call", "raw bytes per call"]


def fields(args):
    """{name: (expr, type)} of one probe's fetchargs."""
    out = {}
    for a in args.split():
        name, _, rest = a.partition("=")
        expr, _, typ = rest.rpartition(":")
        out[name] = (expr, typ)
    return out


def code_expr(f):
    """The expression of the code object's address: what gil_line reads through."""
    m = re.match(r"^[+-]\d+\((.*)\)$", f["gil_line"][0])
    return m.group(1) if m else None


def derefs(expr):
    return expr.count("(")


TYPE_BYTES = {"x64": 8, "u64": 8, "s64": 8, "s32": 4, "u32": 4}


def variant(sites, kind):
    """The sites with the fetchargs of @kind; and (reads, bytes) per GIL round trip."""
    out, reads, size = [], 0, 0
    for k, ev, loc, args in sites:
        f = fields(args) if args else {}
        # take_gil's and drop_gil's entries share an event (entry_N): only a drop_gil entry
        # reads the drop request (a take_gil entry's is an immediate 0)
        is_drop = ev.startswith("drop") or \
            ("gil_req" in f and not f["gil_req"][0].startswith("\\"))
        keep = []
        if kind == "full":
            keep = [(n, e, t) for n, (e, t) in f.items()]
        elif kind == "default":
            keep = [(n, e, t) for n, (e, t) in f.items() if not e.startswith("\\")]
        elif kind.startswith("pointer") and k == "p" and f and is_drop:
            code = code_expr(f)
            for n in ("gil_ts", "gil_htid", "gil_fr"):
                if n in f:
                    keep.append((n, f[n][0], f[n][1]))
            if code:
                keep.append(("gil_code", code, "x64"))
                if kind == "pointer+1":
                    keep.append(("gil_qn", "+%d(%s)" % (8, code), "x64"))
            if "gil_req" in f and is_drop:
                keep.append(("gil_req", f["gil_req"][0], f["gil_req"][1]))
        line_args = " ".join("%s=%s:%s" % x for x in keep)
        for n, e, t in keep:
            reads += derefs(e)
            size += TYPE_BYTES.get(t, 4 if t != "string" else 24)
        # an event per site: the sites of one of gil-record's events now read different sets
        out.append((k, "%s_s%d" % (ev, len(out)), loc, line_args))
    return out, reads, size


def main():
    a = B.rep_args(__doc__, 5, 1.5)
    python = a.python or B.default_python()
    perf = B.have_perf()
    if not B.minreader_path():
        B.skip("no C compiler for bench/minreader.c")
    sites = B.probe_sites(python, ["--attribution=full"])  # every read: the others derive
    default = B.probe_sites(python)
    kinds = ["none", "pointer", "default", "pointer+1", "full"]
    groups, tracers, meta = [], [B.NoTracer()], {}
    tracers[0].name = "untraced"
    try:
        for kind in kinds:
            vs, reads, size = variant(default if kind == "default" else sites, kind)
            g = B.ProbeGroup(vs, suffix=kind.replace("+", "p"))
            groups.append(g)
            meta[kind] = (reads, size)
            if perf:
                t = B.PerfTracer(g, "stat")
                t.name, t.kind, t.by = "%s / perf stat" % kind, kind, "perf stat"
                tracers.append(t)
            t = B.MinReader(g)
            t.name, t.kind, t.by = "%s / minimal reader" % kind, kind, "minimal reader"
            tracers.append(t)
        res = {t.name: [] for t in tracers}
        for rep in range(a.reps):
            this = {}
            for t in B.rotated(tracers, rep):
                rate, r = B.run_traced(python, "release.py", (2, a.seconds, "read"), t)
                r["rate"] = rate
                this[t.name] = r
                B.log("  rep %d %-30s %12.0f ops/s" % (rep, t.name, rate))
            base = this["untraced"]["rate"]
            for t in tracers:
                r = this[t.name]
                r["ratio"] = base / r["rate"]
                bare = this.get("none / " + getattr(t, "by", ""), {}).get("rate")
                if bare:
                    r["vs_bare"] = bare / r["rate"]
                    # 4 hits per call: the time added per hit over the bare probes
                    r["ns_hit"] = (1 / r["rate"] - 1 / bare) / 4 * 1e9
                res[t.name].append(r)
        rows = []
        for t in tracers:
            rs = res[t.name]
            kind = getattr(t, "kind", None)
            reads, size = meta.get(kind, (None, None))

            def med(key):
                return B.median([r.get(key) for r in rs])
            rows.append([kind or "-", getattr(t, "by", "untraced"), B.fnum(med("rate")),
                         "%.2fx" % med("ratio"),
                         ("%.2fx" % med("vs_bare")) if med("vs_bare") else "-",
                         B.fnum(med("ns_hit")) if med("ns_hit") is not None else "-",
                         "-" if reads is None else str(reads),
                         "-" if size is None else str(size)])
        B.out("### What a fetcharg costs (%s %s, release workload, %d reps of %.1f s)"
              % (python, B.python_version(python), a.reps, a.seconds))
        B.out("")
        B.out("reads per call: user-memory dereferences the probes make per os.read call (a "
              "string counts one, plus its copy); raw bytes per call: fetched bytes written "
              "into the samples (a string counted at 24).")
        B.out("")
        B.out(B.table(HEADS, rows))
        B.out("")
    finally:
        for g in groups:
            g.remove()


if __name__ == "__main__":
    main()
