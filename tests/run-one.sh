#!/bin/sh
# Runs one test under a timeout, then checks that it left no probe group of a dead recorder in
# tracefs. Tests that touch the kernel serialize on a lock so `make -j check` stays correct.
# Usage: run-one.sh [INTERPRETER] TEST
set -u
: "${GIL_TEST_TIMEOUT:=900}"
lock=${TMPDIR:-/tmp}/giltrace-tests.lock
tracing=/sys/kernel/tracing

if command -v flock >/dev/null 2>&1; then
	exec 9>"$lock"
	flock 9
fi
timeout --kill-after=10 "$GIL_TEST_TIMEOUT" "$@"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "FAIL: timed out after ${GIL_TEST_TIMEOUT}s" >&2
	rc=1
fi
# A group gil_<pid>_<pidns>_<start> whose recorder is gone is a leak: an exit path did not clean up.
# Gone means what gil-record --cleanup means: the group was made in our pid namespace, and its pid
# names no process now, or one that started at another time. Tracefs is shared by every pid
# namespace on the kernel: a recorder running in a container has a pid that says nothing here.
if [ -r "$tracing/uprobe_events" ]; then
	selfns=$(stat -Lc %i /proc/self/ns/pid 2>/dev/null || echo 0)
	leaked=$(sed -n 's/^[pr]:gil_\([0-9][0-9]*\)_\([0-9a-f][0-9a-f]*\)_\([0-9][0-9]*\)\/.*/\1 \2 \3/p' \
		"$tracing/uprobe_events" | sort -u |
		while read -r pid ns start; do
			[ "$(printf '%d' "0x$ns")" = "$selfns" ] || continue
			now=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f20)
			[ "$now" = "$start" ] || echo "gil_${pid}_${ns}_${start}"
		done)
	if [ -n "$leaked" ]; then
		echo "FAIL: probe groups left in $tracing/uprobe_events: $leaked" >&2
		[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] && rc=1
	fi
fi
exit "$rc"
