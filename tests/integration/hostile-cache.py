#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A user poisons what root learns about a file (issue 23, H1; doc/guarantees.md).

1. nobody copies a system libpython (same build-id, size and code) and rewrites its .symtab so
   that take_gil and drop_gil start one byte into their first instruction, then maps the copy
   executable. Root records nobody's process: the forged sites are refused (said on screen)
   and never written to uprobe_events (read all through the recording), and nothing the copy
   said is kept in the object cache.
2. A victim of root's then maps the real file: its recording probes the real take_gil and
   drop_gil (checked against the file's own symbols), never the forged offsets.
3. The cache entry that recording kept is poisoned by hand (the sites moved into an
   instruction, with the bytes there): the next recording re-proves it against the code,
   does not use it, and probes the real sites.
"""
import glob
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

require_kernel()
check(shutil.which("cc"), "no C compiler to build the attacker")


def elf_funcs(path, names):
    """{name: (st_value, symtab entry's file offset)} for @names in @path's .symtab, and
    [(p_vaddr, p_offset, p_filesz, p_flags)] of its PT_LOADs."""
    with open(path, "rb") as f:
        data = f.read()
    check(data[:5] == b"\x7fELF\x02", "%s: not a 64-bit ELF" % path)
    e_phoff, e_shoff = struct.unpack_from("<QQ", data, 0x20)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", data, 0x36)
    loads = []
    for i in range(e_phnum):
        p_type, p_flags, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz, p_flags))
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize)
             for i in range(e_shnum)]
    found = {}
    for sh in shdrs:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = shdrs[sh[6]]
        for k in range(sh[5] // sh[9]):
            at = sh[4] + k * sh[9]
            st_name, st_info, _, st_shndx, st_value, st_size = struct.unpack_from(
                "<IBBHQQ", data, at)
            end = data.index(b"\0", strtab[4] + st_name)
            name = data[strtab[4] + st_name:end].decode()
            if name in names and st_info & 0xf == 2 and st_shndx:
                found[name] = (st_value, at)
    return found, loads


def file_offset(loads, addr):
    for vaddr, off, filesz, flags in loads:
        if vaddr <= addr < vaddr + filesz:
            return addr - vaddr + off
    return None


class Watch:
    """Every line uprobe_events held while recorder @rpid ran (read every few milliseconds),
    with the file each names: the recorder names the descriptor it read (/proc/self/fd/N), so
    the file is /proc/<rpid>/fd/N, looked at while the line is there."""

    def __init__(self, rpid):
        self.rpid, self.seen, self.stop = rpid, {}, False
        # its group, gil_<pid>_<pid namespace>_<start>: other tests' lines are not its
        self.group = "gil_%d_%x_" % (rpid, os.stat("/proc/self/ns/pid").st_ino)
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop:
            with open(os.path.join(TRACING, "uprobe_events")) as f:
                for l in f:
                    l = l.strip()
                    if l[2:].startswith(self.group) and l not in self.seen:
                        self.seen[l] = self.file_of(l)
            time.sleep(0.003)

    def file_of(self, line):
        """(device, inode) of the file @line probes, or None."""
        m = re.match(r"^[pr]:\S+ (\S+):0x[0-9a-f]+", line)
        if not m:
            return None
        path = m.group(1)
        fd = re.match(r"^/proc/self/fd/(\d+)$", path)
        if fd:
            path = "/proc/%d/fd/%s" % (self.rpid, fd.group(1))
        try:
            st = os.stat(path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def done(self):
        self.stop = True
        self.t.join()
        return self.seen


def probed(lines, path):
    """The file offsets of @path that probe lines name."""
    st = os.stat(path)
    out = set()
    for l, f in lines.items():
        m = re.match(r"^[pr]:\S+ \S+:0x([0-9a-f]+)", l)
        if m and f == (st.st_dev, st.st_ino):
            out.add(int(m.group(1), 16))
    return out


def record(pid, what):
    """Record @pid for a moment, watching tracefs: (lines seen and their files, stderr)."""
    out = tempfile.mkdtemp(prefix="gilrec-cache-")
    p = subprocess.Popen(record_command() + ["--pid", str(pid), "--duration", "1", "-o", out],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    w = Watch(p.pid)
    try:
        _, err = p.communicate(timeout=HANG_S)
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
            p.wait()
    seen = w.done()
    check(p.returncode == 0, "%s: gil-record failed: %s" % (what, err))
    unknown = [l for l, f in seen.items() if f is None]
    check(not unknown, "%s: probe lines whose file was not seen: %s" % (what, unknown))
    return seen, err


label, exe, ver = pythons(include_system=False)[-1]
libdir = subprocess.run([exe, "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"],
                        capture_output=True, text=True, check=True).stdout.strip()
real = sorted(glob.glob(os.path.join(libdir, "libpython3*.so.1.0")))
if not real:
    skip("%s has no shared libpython to copy" % label)
real = real[0]
syms, loads = elf_funcs(real, ("take_gil", "drop_gil"))
check(set(syms) == {"take_gil", "drop_gil"}, "%s: .symtab names %s" % (real, sorted(syms)))
with open(real, "rb") as f:
    code = f.read()


def entry_offset(addr):
    """Where a probe of the function at @addr goes: past an endbr64."""
    off = file_offset(loads, addr)
    return off + 4 if code[off:off + 4] == b"\xf3\x0f\x1e\xfa" else off


real_sites = {n: entry_offset(a) for n, (a, _) in syms.items()}
forged_sites = {n: file_offset(loads, a) + 1 for n, (a, _) in syms.items()}

# 1. nobody's copy, its take_gil and drop_gil moved one byte into their first instruction
work = tempfile.mkdtemp(prefix="hostile-cache-")
os.chmod(work, 0o755)
home = os.path.join(work, "home")
os.mkdir(home)
os.chown(home, NOBODY_UID, NOBODY_UID)
crafted = os.path.join(home, os.path.basename(real))
forged = bytearray(code)
for n, (addr, at) in syms.items():
    value, size = struct.unpack_from("<QQ", forged, at + 8)
    struct.pack_into("<QQ", forged, at + 8, value + 1, size - 1)
with open(crafted, "wb") as f:
    f.write(forged)
os.chown(crafted, NOBODY_UID, NOBODY_UID)
mapper = os.path.join(work, "mapper")
subprocess.run(["cc", "-O1", "-o", mapper, os.path.join(TOP_SRCDIR, "tests", "hostile", "mapper.c")],
               check=True)
os.chmod(mapper, 0o755)
cache = os.environ["GIL_OBJECT_CACHE"]
victim = None
attacker = subprocess.Popen(AS_NOBODY + [mapper, crafted], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
try:
    line = attacker.stdout.readline()
    check(line.startswith("ready "), "the attacker did not start: %r" % line)
    seen, err = record(attacker.pid, "nobody's copy")
    hit = probed(seen, crafted) & set(forged_sites.values())
    check(not hit, "forged offsets written to uprobe_events: %s" % sorted(hex(h) for h in hit))
    check("refused" in err and crafted in err,
          "the refusal is not said on screen, naming the copy: %r" % err)
    kept = [f for f in os.listdir(cache)] if os.path.isdir(cache) else []
    check(not kept, "the cache kept what nobody's copy said: %s" % kept)
    log("nobody's copy: %d probe lines seen, none at the forged offsets; said: %s"
        % (len(seen), [l for l in err.splitlines() if "refused" in l][0][:200]))

    # 2. a victim of root's maps the real file
    victim = Workload(exe, "busy_calls.py")
    victim.go()
    seen, err = record(victim.pid, "the victim")
    got = probed(seen, real)
    check(not got & set(forged_sites.values()), "the victim probed at forged offsets: %s" % got)
    for n, off in real_sites.items():
        check(off in got, "the victim's %s (offset 0x%x) was not probed: %s"
              % (n, off, sorted(hex(g) for g in got)))
    entries = [x for x in glob.glob(os.path.join(cache, "*.json")) if "take_gil" in open(x).read()]
    check(len(entries) == 1, "the victim's recording kept %s, want one entry of %s"
          % (entries, real))

    # 3. that entry poisoned: its sites moved into the instruction, the bytes there recorded
    with open(entries[0]) as f:
        e = json.load(f)
    moved = 0
    for s in e["symbols"]["sites"]:
        if s["symbol"] in forged_sites and s["offset"] == real_sites[s["symbol"]]:
            off = forged_sites[s["symbol"]]
            s["addr"] += off - s["offset"]
            s["offset"] = off
            s["skipped"] = 0
            s["bytes"] = code[off:off + 16].hex()
            moved += 1
    check(moved == 2, "the entry has %d of the two sites to poison: %s" % (moved, e["symbols"]))
    with open(entries[0], "w") as f:
        json.dump(e, f)
    seen, err = record(victim.pid, "the victim, with a poisoned cache entry")
    got = probed(seen, real)
    check(not got & set(forged_sites.values()),
          "the poisoned entry was used: probes at %s" % sorted(hex(g) for g in got))
    for n, off in real_sites.items():
        check(off in got, "with the poisoned entry, %s (0x%x) was not probed" % (n, off))
    log("victim: take_gil 0x%x and drop_gil 0x%x probed, before and after the entry was "
        "poisoned" % (real_sites["take_gil"], real_sites["drop_gil"]))
finally:
    attacker.send_signal(signal.SIGKILL)
    attacker.wait()
    if victim:
        victim.finish()
check_no_probes()
log("PASS")
