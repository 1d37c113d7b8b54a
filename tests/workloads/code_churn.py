"""Code objects that die and whose addresses are reused, for the attribution-modes test.

Usage: code_churn.py N PAUSE_S [step]. Prints 'ready <pid>', waits for a line, then N times:
compiles a new function f_<i> (exec of fresh source), calls it once (it sleeps PAUSE_S: one
release of the GIL inside f_<i>), and lets it die, so the next code object is likely allocated
where the last one was. With "step", before f_<i> dies: prints 'called <i> <ns>' (the
CLOCK_MONOTONIC_RAW time just before the call) and waits for a byte on stdin, so that a test
can let the recorder read f_<i> first however slow it is. Prints 'done reused=<how many f_<i>
got the address of an earlier one>' and waits for stdin to close. Runs on CPython 3.6 and later.
"""
import sys
import threading
import time

n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
pause = float(sys.argv[2]) if len(sys.argv) > 2 else 0.015
step = sys.argv[3:4] == ["step"]
SRC = "def f_%d(sleep, pause):\n    sleep(pause)\n"
# 3.6 creates its GIL with the first thread: before, nothing releases it
t = threading.Thread(target=int)
t.start()
t.join()
sys.stdout.write("ready %d\n" % __import__("os").getpid())
sys.stdout.flush()
sys.stdin.readline()
seen, reused = set(), 0
for i in range(n):
    ns = {}
    exec(compile(SRC % i, "<churn>", "exec"), ns)
    f = ns["f_%d" % i]
    addr = id(f.__code__)
    reused += addr in seen
    seen.add(addr)
    t = int(time.clock_gettime(time.CLOCK_MONOTONIC_RAW) * 1e9)
    f(time.sleep, pause)
    if step:
        sys.stdout.write("called %d %d\n" % (i, t))
        sys.stdout.flush()
        sys.stdin.buffer.raw.read(1)
    ns.clear()  # f.__globals__ is ns: a cycle the collector would free late
    del f, ns
sys.stdout.write("done reused=%d\n" % reused)
sys.stdout.flush()
sys.stdin.read()
