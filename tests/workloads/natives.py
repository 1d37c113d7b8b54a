# SPDX-License-Identifier: GPL-2.0-or-later
"""tests/integration/natives.py's workload: native_ext (tests/workloads/native_ext.c, built by
the test into the directory given) with two CPU-bound threads that always want the GIL. On "go":
5 calls of sleeper(5) (releases around a sleep), then a C thread that holds the GIL 50 ms
through PyGILState_Ensure; prints "done <main tid> <spinner tids>" at the end."""
import os
import sys
import threading
import time

sys.path.insert(0, sys.argv[1])
import native_ext  # noqa: E402

stop = False


def spin():
    while not stop:
        sum(range(200))


spinners = [threading.Thread(target=spin, name="spinner%d" % i) for i in range(2)]
for t in spinners:
    t.start()
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
for _ in range(5):
    native_ext.sleeper(5)
native_ext.start_holder(50)
native_ext.join_holder()
stop = True
for t in spinners:
    t.join()
print("done", threading.get_native_id(), " ".join(str(t.native_id) for t in spinners),
      flush=True)
# alive a little longer: the recorder's worker names the last callers from its maps
time.sleep(0.5)
