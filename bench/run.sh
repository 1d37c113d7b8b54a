#!/bin/sh
# Runs every benchmark of bench/ and prints their tables (Markdown, as in doc/performance.md).
# Usage: bench/run.sh [--quick]   (root; about 30 minutes, --quick about 30 seconds)
# Environment: PYTHON3 runs the scripts; GILBENCH_PYTHON is the interpreter measured (default
# pyenv 3.12.1); top_builddir locates gil-record, gil-convert and bench/minreader.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON3:-python3}
quick=
light=--light
if [ "${1:-}" = "--quick" ]; then
	quick=--quick
	light=
fi
machine=$("$py" -c "import sys; sys.path.insert(0, sys.argv[1]); import benchlib; print(benchlib.machine())" "$here")
echo "## Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $machine"
echo
rc=0
for b in overhead fetchcost bystander lost recorder_cost convert attach markcost; do
	extra=
	[ "$b" = overhead ] && extra=$light
	start=$(date +%s)
	# shellcheck disable=SC2086
	"$py" "$here/$b.py" $quick $extra || { r=$?; echo "$b.py: exit $r" >&2; [ "$rc" -ne 0 ] || rc=$r; }
	echo "($b.py: $(( $(date +%s) - start )) s)" >&2
done
# a real training loop (skips without python3-torch), the 8 x 4 scale run and its always-on
# metrics soak (13 minutes): minutes each
if [ -z "$quick" ]; then
	for b in training scale always_on; do
		start=$(date +%s)
		"$py" "$here/$b.py" || { r=$?; echo "$b.py: exit $r" >&2; [ "$rc" -ne 0 ] || rc=$r; }
		echo "($b.py: $(( $(date +%s) - start )) s)" >&2
	done
fi
exit "$rc"
