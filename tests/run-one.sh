#!/bin/sh
# Runs one test under a timeout, in a pid namespace of its own, then checks that it left no probe
# group behind in tracefs. Usage: run-one.sh [INTERPRETER] TEST
#
# Tests run concurrently (make -j check; tools/test.sh). What keeps them apart:
# - A pid namespace (unshare --pid --mount-proc, when root): /proc shows the test its own
#   processes only, so an all-process recording sees its own workloads and not another test's,
#   and probe groups are named with the namespace (gil_<pid>_<pidns>_<start>), so a group left
#   by a recorder of this test is told from every other test's, live or killed on purpose.
# - A timeout that only catches hangs: 900 s (GIL_TEST_TIMEOUT), or the test's own line
#   "# giltest: timeout SECONDS" where it is longer by nature (sid-pythons under ASan).
# - A lock: a test that needs the machine to itself has a line "# giltest: exclusive" (it
#   takes the lock exclusively; every other test takes it shared).
# - A test that must see every process on the host, "# giltest: host-pidns", runs in the host's
#   pid namespace (and should be exclusive too: it sees, and may clean, what the others leave).
# - Nothing in a test depends on speed: a test waits for what it needs, its timeouts only catch
#   hangs, so another test beside it or a sanitizer build changes no result.
set -u
: "${GIL_TEST_TIMEOUT:=900}"
lock=${TMPDIR:-/tmp}/giltrace-tests.lock
tracing=/sys/kernel/tracing
for test; do :; done

mode=-s
grep -q '^# giltest: exclusive' "$test" 2>/dev/null && mode=-x
# a test that is long by nature says so: "# giltest: timeout SECONDS" (a hang guard still)
own=$(sed -n 's/^# giltest: timeout \([0-9][0-9]*\)$/\1/p' "$test" 2>/dev/null | head -n 1)
[ -n "$own" ] && [ "$own" -gt "$GIL_TEST_TIMEOUT" ] && GIL_TEST_TIMEOUT=$own
if command -v flock >/dev/null 2>&1; then
	exec 9>>"$lock"
	flock $mode 9
fi
started=$(date +%s)

# The test's pid namespace inode goes to $nsfile from inside it. sh is its pid 1: it reaps the
# orphans the test leaves (a zombie would still look alive), and when it exits the kernel kills
# whatever of the test is left. --kill-child: a timeout that kills unshare kills the test too.
nsfile=$(mktemp "${TMPDIR:-/tmp}/giltest-ns.XXXXXX")
own_ns=yes
grep -q '^# giltest: host-pidns' "$test" 2>/dev/null && own_ns=no
if [ $own_ns = yes ] && [ "$(id -u)" -eq 0 ] &&
	unshare --pid --fork --mount-proc --kill-child true 2>/dev/null; then
	# shellcheck disable=SC2016
	timeout --kill-after=10 "$GIL_TEST_TIMEOUT" unshare --pid --fork --mount-proc --kill-child \
		sh -c 'stat -Lc %i /proc/self/ns/pid >"$0"; "$@"' "$nsfile" "$@"
	rc=$?
else
	stat -Lc %i /proc/self/ns/pid >"$nsfile" 2>/dev/null
	timeout --kill-after=10 "$GIL_TEST_TIMEOUT" "$@"
	rc=$?
fi
testns=$(cat "$nsfile" 2>/dev/null)
rm -f "$nsfile"
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "FAIL: timed out after ${GIL_TEST_TIMEOUT}s" >&2
	rc=1
fi
# A group gil_<pid>_<pidns>_<start> made in the test's namespace whose recorder is gone is a leak:
# an exit path did not clean up. Gone means what gil-record --cleanup means: its pid names no
# process now, or one that started at another time (with the test's namespace gone, none does).
# Tracefs is shared by every pid namespace on the kernel: other tests' groups are not ours.
if [ -r "$tracing/uprobe_events" ] && [ -n "$testns" ]; then
	selfns=$(stat -Lc %i /proc/self/ns/pid 2>/dev/null || echo 0)
	leaked=$(sed -n 's/^[pr]:gil_\([0-9][0-9]*\)_\([0-9a-f][0-9a-f]*\)_\([0-9][0-9]*\)\/.*/\1 \2 \3/p' \
		"$tracing/uprobe_events" | sort -u |
		while read -r pid ns start; do
			[ "$(printf '%d' "0x$ns")" = "$testns" ] || continue
			if [ "$testns" = "$selfns" ]; then
				now=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f20)
				[ "$now" != "$start" ] || continue
			fi
			echo "gil_${pid}_${ns}_${start}"
		done)
	if [ -n "$leaked" ]; then
		echo "FAIL: probe groups left in $tracing/uprobe_events: $leaked" >&2
		[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] && rc=1
		# and removed: with the test's namespace gone, no gil-record --cleanup would see them
		for g in $leaked; do
			sed -n "s/^[pr]:\($g\/[^ ]*\) .*/-:\1/p" "$tracing/uprobe_events" |
				while read -r line; do echo "$line" >>"$tracing/uprobe_events"; done
		done
	fi
fi
# how long it ran, lock wait left out: tools/test.sh lists each pass's slowest tests from this line
echo "run-one: $(($(date +%s) - started)) s" >&2
exit "$rc"
