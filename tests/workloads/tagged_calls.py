"""N ctypes calls from calls(), whose code object is made immortal first where that tags the
frame's reference to it (3.14+: f_executable is a _PyStackRef, bit 0 set for immortal code).

Usage: tagged_calls.py [N]. Protocol as ctypes_calls.py: prints 'ready <pid>', waits for a
line, makes the calls, prints 'done <tid> <n> tag=<f_executable & 3 of calls()'s frame>',
waits for stdin to close, exits.
"""
import ctypes
import platform
import os
import sys

SYS_gettid = {"x86_64": 186, "aarch64": 178}[platform.machine()]

libc = ctypes.CDLL(None, use_errno=True)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
getppid = libc.getppid


def calls(k):
    for _ in range(k):
        getppid()
    # PyFrameObject.f_frame (+24) -> _PyInterpreterFrame.f_executable (+0), 3.11 - 3.15
    frame = ctypes.c_void_p.from_address(id(sys._getframe()) + 24).value
    return ctypes.c_uint64.from_address(frame).value & 3


if hasattr(sys, "_is_immortal"):
    # 3.14+ (64-bit): a negative 32-bit refcount is immortal; the object is never freed
    ctypes.c_int64.from_address(id(calls.__code__)).value = 3 << 30
    assert sys._is_immortal(calls.__code__)
tid = libc.syscall(SYS_gettid)
sys.stdout.write("ready %d\n" % os.getpid())
sys.stdout.flush()
sys.stdin.readline()
tag = calls(n)
sys.stdout.write("done %d %d tag=%d\n" % (tid, n, tag))
sys.stdout.flush()
sys.stdin.read()
