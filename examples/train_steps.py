"""Record only the training steps of a loop, as one would around a profiler's start/stop.

A toy "training loop": a data-loader thread prepares batches (it releases the GIL while it
reads), the main thread computes on them. Steps 3 to 5 are recorded; the rest is not.
Run as root, with giltrace installed:

    sudo python3 examples/train_steps.py [OUTPUT_DIR]

then convert: gil-convert --input OUTPUT_DIR/GIL_<pid>_rank_0.json --output steps.json
"""
import os
import queue
import sys
import threading
import time

from gil_trace_record import gil_trace_record_start, gil_trace_record_stop

out = sys.argv[1] if len(sys.argv) > 1 else None
batches = queue.Queue(maxsize=4)
stop = threading.Event()


def loader():
    r, w = os.pipe()
    while not stop.is_set():
        os.write(w, b"x" * 64)
        data = os.read(r, 64)  # I/O: the GIL is released around it
        batches.put([b for b in data])


def step():
    batch = batches.get()
    total = 0
    for _ in range(2000):  # compute: holds the GIL, switched out every 5 ms
        total += sum(batch)
    return total


threading.Thread(target=loader, name="loader", daemon=True).start()
for i in range(8):
    if i == 3:
        gil_trace_record_start(pid_list=[os.getpid()], output_dir=out)
    step()
    if i == 5:
        gil_trace_record_stop()
stop.set()
print("recorded steps 3-5 of pid %d into %s" % (os.getpid(), out or "$SYSTRACE_DUMP_PATH/GIL"))
