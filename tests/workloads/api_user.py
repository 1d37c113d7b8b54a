"""Uses the Python API the way a training script would. Usage:
    api_user.py OUTDIR MODE [SIBLING_PID]
MODE: "self" (record own threads and a sibling until stop), "duration" (1 s, no stop before),
"fail" (a pid that does not exist), "context" (with-statement).
Prints 'ok <json>' or 'error <message>'."""
import ctypes
import json
import os
import sys
import threading
import time

from gil_trace_record import GilTraceError, gil_trace_record, gil_trace_record_start, gil_trace_record_stop

outdir, mode = sys.argv[1], sys.argv[2]
sibling = int(sys.argv[3]) if len(sys.argv) > 3 else None
libc = ctypes.CDLL(None)
N = 300


def work(tids):
    tids.append(libc.syscall(186))
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
        time.sleep(0.3)
        gil_trace_record_stop()
        print("ok " + json.dumps({"tids": tids, "pid": os.getpid()}))
    elif mode == "duration":
        t0 = time.time()
        gil_trace_record_start(pid_list=[os.getpid()], duration=1, output_dir=outdir)
        tids = two_threads()
        time.sleep(2)
        gil_trace_record_stop()
        print("ok " + json.dumps({"tids": tids, "pid": os.getpid()}))
    elif mode == "context":
        with gil_trace_record(pid_list=[os.getpid()], output_dir=outdir):
            tids = two_threads()
        print("ok " + json.dumps({"tids": tids, "pid": os.getpid()}))
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
