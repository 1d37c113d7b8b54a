#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes an assembler file whose object defines N clones each of take_gil and drop_gil
(take_gil.constprop.K), as a hostile process would map to make the recorder probe them all.
Each has its frame description, so that its entry is proven against the file's own code."""
import sys

n = int(sys.argv[1])
out = ["\t.text"]
for fn in ("take_gil", "drop_gil"):
    for k in range(n):
        name = "%s.constprop.%d" % (fn, k)
        out += ["\t.globl %s" % name, "\t.type %s, @function" % name, "%s:" % name,
                "\t.cfi_startproc", "\tret", "\t.fill 15, 1, 0xc3", "\t.cfi_endproc", "\t.size %s, . - %s" % (name, name)]
out.append('\t.section .note.GNU-stack,"",@progbits')
print("\n".join(out))
