"""Forked workers, as PyTorch's DataLoader starts them every epoch (without persistent_workers):
EPOCHS times, WORKERS processes forked at once, each making N ctypes calls in its main thread
(each releases and retakes the GIL exactly once), then joined.

Usage: forked_workers.py N EPOCHS WORKERS [--report PATH] [--now] [--torch]
  --report PATH  also writes the 'done' line to PATH (launch mode, where stdout is not ours)
  --now          starts at once instead of waiting for a line, and exits when done
  --torch        the workers are a real torch.utils.data.DataLoader's (python3-torch)
Protocol: prints 'ready <pid>', waits for a line, runs the epochs, prints
'done <pid>:<calls> ...' (one per worker; a worker's main thread is its pid), waits for stdin
to close, exits. Runs on Python 3.6 and later.
"""
import ctypes
import multiprocessing
import os
import sys

libc = ctypes.CDLL(None)
getppid = libc.getppid
args = [a for a in sys.argv[1:] if not a.startswith("--")]
n, epochs, workers = (int(a) for a in args[:3])
report = sys.argv[sys.argv.index("--report") + 1] if "--report" in sys.argv else None
if report in args:
    args.remove(report)
now = "--now" in sys.argv


def calls(_=None):
    for _ in range(n):
        getppid()
    return os.getpid()


def with_multiprocessing():
    ctx = multiprocessing.get_context("fork")
    done = []
    for _ in range(epochs):
        q = ctx.SimpleQueue()
        ps = [ctx.Process(target=lambda: q.put(calls())) for _ in range(workers)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
        done += [q.get() for _ in ps]
    return done


def with_torch():
    import torch.utils.data as tud

    class Items(tud.Dataset):
        def __len__(self):
            return workers

        def __getitem__(self, i):
            return calls()

    done = []
    for _ in range(epochs):
        # one item per worker, one worker per item: each worker's main thread makes N calls
        loader = tud.DataLoader(Items(), batch_size=None, num_workers=workers,
                                multiprocessing_context="fork", prefetch_factor=1)
        done += [int(pid) for pid in loader]
    return done


sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
if not now:
    sys.stdin.readline()
pids = with_torch() if "--torch" in sys.argv else with_multiprocessing()
line = "done " + " ".join("%d:%d" % (p, n) for p in pids) + "\n"
if report:
    with open(report, "w") as f:
        f.write(line)
sys.stdout.write(line)
sys.stdout.flush()
if not now:
    sys.stdin.read()
