#!/usr/bin/env python3
"""Benchmark 3: the highest GIL event rate kept without loss, and honest loss counts.

Usage: lost.py [--quick] [--seconds S] [--python PY]

(a) Default settings: 1, 2 and 4 processes of one os.read(fd, 1) thread each (the densest GIL
    traffic there is: a drop and a take per call) under gil-record for S seconds; the same
    load under perf stat gives the rate the probes themselves allow. Reported: events/s
    received, lost.
(b) Tiny buffers (--mmap-pages 2, 8 KiB per CPU) on 2 such processes, with perf stat counting
    the same probe sites at the same time (its own group): every probe hit is either received
    or reported lost, so hits - received must equal the lost count in the file's footer.
    perf record -m 2 (lost: its LOST_SAMPLES, read with PERF_FORMAT_LOST) and the minimal reader
    (lost: PERF_RECORD_LOST records; PERF_FORMAT_LOST sum shown beside) get the same check.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


class Both:
    """Two tracers at once: the first (a counter) enabled before and disabled after the second."""

    def __init__(self, counter, tracer):
        self.counter, self.tracer = counter, tracer
        self.name = tracer.name

    def start(self, pids):
        self.counter.start(pids)
        try:
            self.tracer.start(pids)
        except Exception:
            B.kill_tracer(self.counter)
            raise

    def stop(self):
        r = self.tracer.stop()
        r["hits"] = self.counter.stop()["events"]
        return r

    @property
    def p(self):
        return self.tracer.p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--python", default=None)
    a = ap.parse_args()
    if a.quick:
        a.seconds = 0.3
    B.require_recording()
    B.install_signal_cleanup()
    python = a.python or B.default_python()
    perf = B.have_perf()
    group = B.ProbeGroup(B.probe_sites(python))
    sustained, tiny = [], []
    try:
        args = (1, a.seconds, "read")
        for nproc in ([2] if a.quick else [1, 2, 4]):
            floor = None
            if perf:
                rate, r = B.run_traced(python, "release.py", args, B.PerfTracer(group, "stat"),
                                       nproc=nproc)
                floor = r["events"] / r["seconds"]
            rate, r = B.run_traced(python, "release.py", args, B.GilRecord(), nproc=nproc)
            B.log("  %d processes: floor %s events/s, gil-record %s events/s, lost %d" % (
                nproc, B.fnum(floor), B.fnum(r["events"] / r["seconds"]), r["lost"]))
            sustained.append([str(nproc), B.fnum(floor), B.fnum(r["events"] / r["seconds"]),
                              B.fnum(r["events"]), str(r["lost"]),
                              "%.1f" % (r["cpu_s"] / r["seconds"] * 100)])
        if perf:
            variants = [B.GilRecord(["--mmap-pages", "2"]),
                        B.PerfTracer(group, "record", mmap_pages=2)]
            variants[1].name = "perf record -m 2"
            if B.minreader_path():
                variants.append(B.MinReader(group, pages=2))
                variants[-1].name = "minimal reader -m 2"
            for t in variants:
                rate, r = B.run_traced(python, "release.py", args,
                                       Both(B.PerfTracer(group, "stat"), t), nproc=2,
                                       exit_first=True)
                got, lost, hits = r["events"] or 0, r["lost"] or 0, r["hits"]
                klost = r.get("kernel_lost")
                B.log("  %s: hits %d received %d lost %d kernel_lost %s" % (
                    t.name, hits, got, lost, klost))
                diff = hits - got - lost
                tiny.append([t.name, B.fnum(hits), B.fnum(got), B.fnum(lost),
                             B.fnum(hits - got), "%+d" % diff,
                             B.fnum(klost) if klost is not None else "-"])
    finally:
        group.remove()
    B.out("### Lost events (%s %s)" % (python, B.python_version(python)))
    B.out("")
    B.out("(a) Default settings, %.1f s per run; N processes of one os.read thread each. "
          "Probe floor = the rate under perf stat (counting only)." % a.seconds)
    B.out("")
    B.out(B.table(["processes", "probe floor events/s", "gil-record events/s", "events",
                   "lost", "gil-record CPU %"], sustained))
    B.out("")
    if tiny:
        B.out("(b) Tiny buffers (2 pages per CPU), 2 processes, perf stat counting every probe "
              "hit at the same time; the workloads exit before the tracers stop. unreported = "
              "hits - received - lost reported: 0 when the lost count is exact (a few events "
              "either way come from the processes' exit, which the counter and the recorder "
              "stop seeing at slightly different moments).")
        B.out("")
        B.out(B.table(["recorder", "probe hits (perf stat)", "received", "lost reported",
                       "hits - received", "unreported", "PERF_FORMAT_LOST sum"], tiny))
        B.out("")


if __name__ == "__main__":
    main()
