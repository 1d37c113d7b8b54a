#!/bin/sh
# Builds giltrace and runs the whole test suite, as CI does (.ci/run). Run as root: most tests
# place real uprobes on real interpreters. Under CI=true a missing capability fails instead of
# skipping. Ends with the line "N passed, N failed, N skipped".
set -e
cd "$(dirname "$0")/.."
sh tools/deps.sh --test
if [ ! -e /sys/kernel/tracing/uprobe_events ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi
autoreconf -fi >/dev/null
./configure -q ${GIL_CONFIGURE_FLAGS:-}
make -j"$(nproc)" >/dev/null
status=0
make -j1 check >tests/check.out 2>&1 || status=$?
if [ ! -f test-suite.log ]; then
	echo "make check did not run the tests:"
	tail -n 30 tests/check.out
	exit 1
fi
for log in $(find tests -name '*.log' ! -name test-suite.log | sort); do
	trs=${log%.log}.trs
	result=$(sed -n 's/^:test-result: //p' "$trs" 2>/dev/null | head -n 1)
	echo "$result: ${log%.log}"
	case $result in
	PASS | SKIP) ;;
	*) sed 's/^/    /' "$log" | tail -n 40 ;;
	esac
done
make -s check-summary || status=1
exit "$status"
