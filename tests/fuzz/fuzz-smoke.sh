#!/bin/sh
# gil-convert's input parser under libFuzzer: the committed corpus (seeds from real recordings
# and what earlier fuzzing found) must all pass, then 20 seconds of new fuzzing find nothing.
# Longer runs: tests/fuzz/build.sh /tmp/f && /tmp/f -max_len=8192 tests/fuzz/corpus
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
if ! command -v clang >/dev/null 2>&1; then
	[ "${CI:-}" = true ] && { echo "FAIL: clang (libFuzzer) missing under CI"; exit 1; }
	echo "SKIP: clang not installed"
	exit 77
fi
work=$(mktemp -d /tmp/gilfuzz-smoke.XXXXXX)
trap 'rm -rf "$work"' EXIT
export TMPDIR="$work" # the harness keeps its files below
cd "$work" || exit 99
sh "$top/tests/fuzz/build.sh" "$work/fuzz-convert" || { echo "FAIL: cannot build the harness"; exit 1; }
mkdir corpus
cp "$top"/tests/fuzz/corpus/* corpus/
# Every committed input, once (crashes found earlier stay fixed).
./fuzz-convert -runs=0 "$top"/tests/fuzz/corpus/* >replay.log 2>&1 || { tail -30 replay.log; exit 1; }
./fuzz-convert -max_len=8192 -timeout=10 -max_total_time=20 -print_final_stats=1 corpus \
	>fuzz.log 2>&1 || { tail -40 fuzz.log; exit 1; }
grep -E "stat::number_of_executed_units|cov:" fuzz.log | tail -2
echo "PASS"
