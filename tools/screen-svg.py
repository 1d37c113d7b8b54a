#!/usr/bin/env python3
"""Draw a terminal screen as SVG: README's picture of gil-record --live.

Usage: tmux capture-pane -p -e -t PANE | tools/screen-svg.py > doc/images/gil-live.svg

Reads the pane's text with its SGR escapes (bold, dim, reverse; the rest are ignored) and
writes each line as SVG text in a monospace font, reverse video as light text on a dark bar.
"""
import re
import sys
from xml.sax.saxutils import escape

CW, LH, PAD = 7.8, 17, 10  # character width, line height, margin (px)
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def spans(line):
    """(text, bold, dim, reverse) runs of one line."""
    out, bold, dim, rev, pos = [], False, False, False, 0
    for m in SGR.finditer(line):
        if m.start() > pos:
            out.append((line[pos:m.start()], bold, dim, rev))
        for code in (m.group(1) or "0").split(";"):
            c = int(code or 0)
            if c == 0:
                bold = dim = rev = False
            elif c == 1:
                bold = True
            elif c == 2:
                dim = True
            elif c == 7:
                rev = True
            elif c == 22:
                bold = dim = False
            elif c == 27:
                rev = False
        pos = m.end()
    if pos < len(line):
        out.append((line[pos:], bold, dim, rev))
    return out


def main():
    lines = sys.stdin.read().rstrip("\n").split("\n")
    while lines and not SGR.sub("", lines[-1]).strip():
        lines.pop()
    cols = max((len(SGR.sub("", l)) for l in lines), default=80)
    w, h = int(cols * CW + 2 * PAD), len(lines) * LH + 2 * PAD
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="13">' % (w, h),
           '<rect width="100%" height="100%" fill="#1e1e1e"/>']
    for i, line in enumerate(lines):
        y = PAD + i * LH
        x = 0
        for text, bold, dim, rev in spans(line):
            if rev:
                out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#d0d0d0"/>'
                           % (PAD + x * CW, y + 2, len(text) * CW, LH))
            fill = "#1e1e1e" if rev else ("#808080" if dim else "#e0e0e0")
            if text.strip():
                out.append('<text x="%.1f" y="%d" fill="%s"%s xml:space="preserve">%s</text>'
                           % (PAD + x * CW, y + LH - 3, fill,
                              ' font-weight="bold"' if bold else "", escape(text)))
            x += len(text)
    out.append("</svg>")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
