"""A training loop that marks its steps: gil_trace_record.mark_step() at the end of each.

train_steps.py MODULE_DIR STEPS STALL [--torch]: a loader thread makes batches in numpy and
preprocesses them in Python without pause (it always wants the GIL); the main thread trains
(torch's matmul and a tensor copy with --torch, else numpy) on 4 batches per step. In step STALL
the main thread makes a 200 ms C call that keeps the GIL (through ctypes.PyDLL), so the loader
waits for it. Prints 'ready <pid>', waits for a line, runs the steps, prints 'done <main> <loader>'
with the threads' native ids."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, sys.argv[1])
from gil_trace_record import mark_step  # noqa: E402  (loads libgiltrace now)
import numpy as np  # noqa: E402

STEPS, STALL = int(sys.argv[2]), int(sys.argv[3])
TORCH = "--torch" in sys.argv
if TORCH:
    import torch  # noqa: E402
    torch.set_num_threads(1)

batches = []
lock = threading.Lock()


loader_tid = []


def loader():
    loader_tid.append(threading.get_native_id())
    rng = np.random.default_rng(0)
    while True:
        x = rng.standard_normal((64, 128)).astype(np.float32)
        # Python preprocessing: this thread wants the GIL all the time
        scale = sum(float(v) for v in x[0]) / 128.0
        x = x * (1.0 + scale * 0.0)
        with lock:
            if len(batches) < 8:
                batches.append(x)


def next_batch():
    while True:
        with lock:
            if batches:
                return batches.pop(0)


threading.Thread(target=loader, name="loader", daemon=True).start()
hold = ctypes.PyDLL(None).usleep  # PyDLL: the call keeps the GIL
hold.argtypes = [ctypes.c_uint]
w = np.random.default_rng(1).standard_normal((128, 128)).astype(np.float32)
if TORCH:
    w = torch.from_numpy(w)
print("ready %d" % os.getpid(), flush=True)
sys.stdin.readline()


def train():
    for step in range(STEPS):
        for _ in range(4):
            x = next_batch()
            if TORCH:
                y = torch.tanh(torch.from_numpy(x) @ w)  # torch releases the GIL in the op
                y = y.clone()  # a tensor copy
            else:
                y = np.tanh(x @ w)
        if step == STALL:
            hold(200000)
        mark_step()


train()
print("done %d %d" % (threading.get_native_id(), loader_tid[0]), flush=True)
