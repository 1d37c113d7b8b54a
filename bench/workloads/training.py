"""A real training loop: a loader thread feeds batches made with numpy to a training thread that
trains an MLP with PyTorch (both Debian packages: python3-torch, python3-numpy).

Usage: training.py SECONDS [THREADS]
The loader builds each batch as a data pipeline does (decode, normalise, augment: numpy calls
that release the GIL around their loops, plus Python glue) and hands it over a queue.Queue; the
trainer converts it with torch.from_numpy, runs forward, backward and an SGD step (torch
releases the GIL inside its kernels). torch uses THREADS intra-op threads (default 1, so that
the two Python threads are what contends). Prints 'ready <pid>', waits for a line, trains for
SECONDS, prints 'done <steps> <elapsed_s>', exits when stdin closes.
"""
import os
import queue
import sys
import threading
import time

import numpy as np
import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
BATCH, FEATURES, HIDDEN, CLASSES = 64, 256, 512, 10
rng = np.random.default_rng(0)
raw = rng.integers(0, 255, size=(4096, FEATURES), dtype=np.uint8)
labels = rng.integers(0, CLASSES, size=4096)
model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(),
                            torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
                            torch.nn.Linear(HIDDEN, CLASSES))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
batches = queue.Queue(maxsize=8)
stop = threading.Event()


def make_batch(i):
    idx = rng.integers(0, len(raw), size=BATCH)
    x = raw[idx].astype(np.float32)
    x /= 255.0
    x -= x.mean(axis=1, keepdims=True)
    x *= rng.uniform(0.9, 1.1, size=(BATCH, 1)).astype(np.float32)
    x = np.clip(x, -1.0, 1.0)
    return x, labels[idx]


def loader():
    i = 0
    while not stop.is_set():
        b = make_batch(i)
        while not stop.is_set():
            try:
                batches.put(b, timeout=0.1)
                break
            except queue.Full:
                pass
        i += 1


def train_step(x, y):
    opt.zero_grad()
    loss = loss_fn(model(torch.from_numpy(x)), torch.from_numpy(y))
    loss.backward()
    opt.step()
    return loss.item()


for _ in range(5):  # warm up outside the measured time: first calls allocate
    train_step(*make_batch(0))
t = threading.Thread(target=loader, name="loader")
t.start()
sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
steps, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < seconds:
    train_step(*batches.get())
    steps += 1
elapsed = time.perf_counter() - t0
stop.set()
t.join()
sys.stdout.write("done %d %.6f\n" % (steps, elapsed))
sys.stdout.flush()
sys.stdin.read()
