"""Forked workers, as PyTorch's DataLoader starts them every epoch (without persistent_workers):
EPOCHS times, WORKERS processes forked at once, each making N ctypes calls in its main thread
(each releases and retakes the GIL exactly once), then joined.

Usage: forked_workers.py N EPOCHS WORKERS [--report PATH] [--now] [--torch] [--start METHOD]
                         [--thread] [--pool]
  --report PATH  also writes the 'done' line to PATH (launch mode, where stdout is not ours)
  --now          starts at once instead of waiting for a line, and exits when done
  --torch        the workers are a real torch.utils.data.DataLoader's (python3-torch)
  --start METHOD multiprocessing's start method: fork (default), spawn or forkserver (the
                 workers are then new interpreters, exec'd, that import this file); or shell:
                 each worker is this file run by `sh -c '...; :'` (a shell that forks it and
                 runs no Python itself), as --worker
  --worker       makes the N calls, prints its pid and exits (--start shell's workers)
  --thread       each worker first starts a thread that ends at once and joins it, as a torch
                 DataLoader's worker does (multiprocessing's start methods)
  --pool         a multiprocessing Pool of WORKERS per epoch maps WORKERS tasks of N calls
                 (a worker may take several: 'done' gives each worker's total)
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


def option(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


report, start = option("--report"), option("--start", "fork")
args = [a for a in sys.argv[1:] if not a.startswith("--") and a not in (report, start)]
n, epochs, workers = (int(a) for a in args[:3])
now = "--now" in sys.argv


def calls(_=None):
    for _ in range(n):
        getppid()
    return os.getpid()


def put_calls(q):
    if "--thread" in sys.argv:
        import threading
        t = threading.Thread(target=int)
        t.start()
        t.join()
    q.put(calls())


def with_multiprocessing():
    ctx = multiprocessing.get_context(start)
    done = []
    for _ in range(epochs):
        q = ctx.SimpleQueue()
        ps = [ctx.Process(target=put_calls, args=(q,)) for _ in range(workers)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
        done += [q.get() for _ in ps]
    return done


def with_pool():
    ctx = multiprocessing.get_context(start)
    totals = {}
    for _ in range(epochs):
        with ctx.Pool(workers) as pool:
            for pid in pool.map(calls, range(workers), chunksize=1):
                totals[pid] = totals.get(pid, 0) + n
    return totals


def with_shell():
    import subprocess
    done = []
    for _ in range(epochs):
        ps = [subprocess.Popen(["/bin/sh", "-c", '"$0" "$1" "$2" 1 1 --worker; :',
                                sys.executable, os.path.abspath(__file__), str(n)],
                               stdout=subprocess.PIPE, text=True) for _ in range(workers)]
        done += [int(p.communicate()[0]) for p in ps]
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


if __name__ == "__main__" and "--worker" in sys.argv:
    print(calls())
elif __name__ == "__main__":  # a spawned worker imports this file
    sys.stdout.write("ready %d\n" % os.getpid())
    sys.stdout.flush()
    if not now:
        sys.stdin.readline()
    if "--pool" in sys.argv:
        counts = with_pool()
    else:
        pids = (with_torch() if "--torch" in sys.argv else
                with_shell() if start == "shell" else with_multiprocessing())
        counts = {p: n for p in pids}
    line = "done " + " ".join("%d:%d" % pc for pc in sorted(counts.items())) + "\n"
    if report:
        with open(report, "w") as f:
            f.write(line)
    sys.stdout.write(line)
    sys.stdout.flush()
    if not now:
        sys.stdin.read()
