#!/bin/sh
# Smoke test of bench/: every benchmark runs in its tiny mode and prints a table. No timing is
# asserted (absolute times on these machines drift; `make bench` is for numbers). Root needed
# for all but the converter benchmark; perf is optional (its columns are left out).
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${PYTHON3:=python3}"
export top_srcdir top_builddir
out=$(mktemp "${TMPDIR:-/tmp}/bench-smoke.XXXXXX")
trap 'rm -f "$out"' EXIT
fail=0
skipped=0
benches="overhead fetchcost bystander lost recorder_cost convert scale always_on markcost"
# the training loop needs Debian's python3-torch and python3-numpy: run where they are
/usr/bin/python3 -c "import torch, numpy" 2>/dev/null && benches="$benches training"
for b in $benches; do
	"$PYTHON3" "$top_srcdir/bench/$b.py" --quick >"$out" 2>"$out.err"
	rc=$?
	cat "$out"
	if [ "$rc" -eq 77 ]; then
		echo "bench/$b.py: skipped: $(tail -n 1 "$out.err")"
		skipped=$((skipped + 1))
	elif [ "$rc" -ne 0 ]; then
		echo "FAIL: bench/$b.py --quick exited $rc:"
		cat "$out.err"
		fail=1
	elif ! grep -q '^| ' "$out"; then
		echo "FAIL: bench/$b.py --quick printed no table"
		fail=1
	fi
	rm -f "$out.err"
done
# Our probe groups are gilbench_<pid>_<pidns>: none may outlive its benchmark. Those of another
# pid namespace are another run's (a suite beside this one, a container), live or not.
ns=$(printf '%x' "$(stat -Lc %i /proc/self/ns/pid)")
if [ -r /sys/kernel/tracing/uprobe_events ] &&
	grep -q "^[pr]:gilbench_[0-9]*_${ns}[_/]" /sys/kernel/tracing/uprobe_events; then
	echo "FAIL: probe groups left behind:"
	grep "^[pr]:gilbench_[0-9]*_${ns}[_/]" /sys/kernel/tracing/uprobe_events
	fail=1
fi
[ "$fail" -eq 0 ] || exit 1
[ "$skipped" -lt 5 ] || exit 77
exit 0
