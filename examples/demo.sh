#!/bin/sh
# Records the bundled example for a few seconds and converts it for a trace viewer.
# Usage: demo.sh [OUTDIR]   (run as root; uses the installed gil-record and gil-convert)
set -e
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$PWD/giltrace-demo}
bindir=${GIL_BINDIR:-/usr/local/bin}
python=${PYTHON:-python3}
mkdir -p "$out"
chmod 750 "$out"
"$python" "$here/gil_contention.py" 4 &
pid=$!
# Wait until the interpreter is loaded (a pyenv shim execs it a moment later).
i=0
while [ $i -lt 50 ] && ! grep -q 'python' "/proc/$pid/maps" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
"$bindir/gil-record" --pid "$pid" --duration 3 --output-dir "$out"
wait "$pid"
for f in "$out"/GIL_"$pid"_rank_*.json; do
	"$bindir/gil-convert" --input "$f" --output "${f%.json}_trace.json"
	echo "demo: open ${f%.json}_trace.json in https://ui.perfetto.dev, chrome://tracing or MindStudio Insight"
done
