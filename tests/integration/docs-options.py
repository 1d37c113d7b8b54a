"""Every long option that gil-record and gil-convert list in --help is documented in their man
page and in README (a new option that reaches only the code fails here)."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

readme = open(os.path.join(TOP_SRCDIR, "README")).read()
missing = []
for prog, page in ((GIL_RECORD, "gil-record.1"), (GIL_CONVERT, "gil-convert.1")):
    helptext = subprocess.run([prog, "--help"], capture_output=True, text=True).stdout
    opts = sorted(set(re.findall(r"(--[a-z][a-z0-9-]+)", helptext)))
    check(len(opts) >= 8, "%s --help lists only %s" % (prog, opts))
    man = subprocess.run(["man", "-l", os.path.join(TOP_SRCDIR, "doc", page)],
                         capture_output=True, text=True, env=dict(os.environ, MANWIDTH="200"))
    check(man.returncode == 0, "man cannot render %s: %s" % (page, man.stderr))
    text = man.stdout.replace("\u2010", "-")
    for o in opts:
        if o not in text:
            missing.append("%s: %s not in the man page" % (page, o))
        if o not in readme:
            missing.append("%s: %s not in README" % (os.path.basename(prog), o))
if missing:
    fail("\n  ".join([""] + missing))
log("PASS")
