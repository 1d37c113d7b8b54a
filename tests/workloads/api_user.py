"""Uses the Python API the way a training script would. Usage:
    api_user.py OUTDIR MODE [SIBLING_PID]
MODE: "self" (record own threads and a sibling until stop: prints 'recording' and stops at a
line on stdin), "duration" (1 s, no stop before it ended), "fail" (a pid that does not exist),
"context" (with-statement), "names" (threads with threading names: one that ends while
recording, one alive until after stop, one started while recording and alive at stop, one
started and ended while recording).
Prints 'ok <json>' or 'error <message>'."""
import ctypes
import platform
import json
import os
import sys
import threading
import time

from gil_trace_record import GilTraceError, gil_trace_record, gil_trace_record_start, gil_trace_record_stop

SYS_gettid = {"x86_64": 186, "aarch64": 178}[platform.machine()]

outdir, mode = sys.argv[1], sys.argv[2]
sibling = int(sys.argv[3]) if len(sys.argv) > 3 else None
libc = ctypes.CDLL(None)
N = 300


def work(tids):
    tids.append(libc.syscall(SYS_gettid))
    for _ in range(N):
        libc.getppid()


def two_threads():
    tids = []
    ts = [threading.Thread(target=work, args=(tids,)) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return tids


try:
    if mode == "self":
        pids = [os.getpid()] + ([sibling] if sibling else [])
        r = gil_trace_record_start(pid_list=pids, duration=-1, output_dir=outdir)
        assert r
        tids = two_threads()
        # the test stops it once the sibling made the calls it counts
        sys.stdout.write("recording\n")
        sys.stdout.flush()
        sys.stdin.readline()
        gil_trace_record_stop()
        print("ok " + json.dumps({"tids": tids, "pid": os.getpid()}))
    elif mode == "duration":
        # times on the recording clock, to set the recording against
        now = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)  # noqa: E731
        t_start = now()
        gil_trace_record_start(pid_list=[os.getpid()], duration=1, output_dir=outdir)
        tids = two_threads()
        t_threads = now()
        # stop() comes after the recording ended by itself: its file is complete then
        path = os.path.join(outdir, "GIL_%d_rank_0.json" % os.getpid())
        deadline = time.time() + 120
        while time.time() < deadline:
            with open(path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 3))
                if f.read() == b"]}\n":
                    break
            time.sleep(0.05)
        t_stop = now()
        gil_trace_record_stop()
        print("ok " + json.dumps({"tids": tids, "pid": os.getpid(), "start": t_start,
                                  "threads_done": t_threads, "stop": t_stop}))
    elif mode == "context":
        with gil_trace_record(pid_list=[os.getpid()], output_dir=outdir):
            tids = two_threads()
        print("ok " + json.dumps({"tids": tids, "pid": os.getpid()}))
    elif mode == "names":
        ids = {}
        release, started = threading.Event(), threading.Event()

        def named(key, wait):
            ids[key] = libc.syscall(SYS_gettid)
            started.wait()
            for _ in range(N):
                libc.getppid()
            if wait:
                release.wait()
        early = threading.Thread(target=named, args=("early", False), name="early-io")
        lasting = threading.Thread(target=named, args=("lasting", True), name="tr\u00e4ger-1")
        early.start()
        lasting.start()
        time.sleep(0.2)
        gil_trace_record_start(pid_list=[os.getpid()], duration=-1, output_dir=outdir)
        started.set()
        early.join()
        late = threading.Thread(target=named, args=("late", True), name="loader")
        late.start()
        brief = threading.Thread(target=named, args=("brief", False), name="brief")
        brief.start()
        brief.join()
        time.sleep(0.3)
        ids["main"] = libc.syscall(SYS_gettid)
        gil_trace_record_stop()
        release.set()
        lasting.join()
        late.join()
        print("ok " + json.dumps({"ids": ids, "pid": os.getpid(),
                                  "hook_left": getattr(threading, "_profile_hook", None)
                                  is not None}))
    elif mode == "fail":
        gil_trace_record_start(pid_list=[int(sys.argv[3])], output_dir=outdir)
        print("ok no error?!")
    elif mode == "twice":
        gil_trace_record_start(pid_list=[os.getpid()], output_dir=outdir)
        try:
            gil_trace_record_start(pid_list=[os.getpid()], output_dir=outdir)
        finally:
            gil_trace_record_stop()
except GilTraceError as e:
    print("error " + str(e))
sys.stdout.flush()
