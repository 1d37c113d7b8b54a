#!/bin/sh
# Builds giltrace and runs the whole test suite, as CI does (.ci/run). Run as root: most tests
# place real uprobes on real interpreters. Under CI=true a missing capability fails instead of
# skipping, and more passes run (GIL_TEST_EXTRA=1 asks for them outside CI, GIL_TEST_EXTRA=0
# skips them): gil-record under valgrind, the suite built with AddressSanitizer +
# UndefinedBehaviorSanitizer, and the arm64 pass in an emulated VM (GIL_TEST_ARM64=1/0).
# Ends with a table of how long each part took and "N passed, N failed, N skipped".
#
# How it stays short (README, "Tests"): tests run concurrently (GIL_TEST_JOBS, default 4; each in
# a pid namespace of its own, tests/run-one.sh), the cached test roots (Debian sid, the arm64
# image) are built in the background beside the first tests, and the extra passes run beside
# each other, each on the tests that exercise code the others do not.
set -e
cd "$(dirname "$0")/.."
top=$PWD
begin=$(date +%s)
jobs=${GIL_TEST_JOBS:-4}
out=$top/tests/suite # each part's output, kept for a look after a failure
rm -rf "$out"
mkdir -p "$out"

# say WHAT: a progress line, with the minutes and seconds since the start.
say() {
	s=$(($(date +%s) - begin))
	printf 'test.sh: %2d:%02d %s\n' $((s / 60)) $((s % 60)) "$*"
}
times="" # the closing table's rows: "part seconds"
# timed PART START: note that PART, begun at START (date +%s), is done.
timed() {
	times="$times$1 $(($(date +%s) - $2))
"
	say "$1: done in $(($(date +%s) - $2)) s"
}

extra=${GIL_TEST_EXTRA:-}
[ -n "$extra" ] || { [ "${CI:-}" = true ] && extra=1 || extra=0; }
arm64=${GIL_TEST_ARM64:-}
[ -n "$arm64" ] || { [ "${CI:-}" = true ] && arm64=1 || arm64=0; }

t=$(date +%s)
say "installing the build and test dependencies (tools/deps.sh --test$(
	[ "$arm64" = 1 ] && echo " --arm64"))"
sh tools/deps.sh --test $([ "$arm64" = 1 ] && echo --arm64) >"$out/deps.log" 2>&1 || {
	tail -n 30 "$out/deps.log"
	exit 1
}
timed "dependencies" "$t"
if [ ! -e /sys/kernel/tracing/uprobe_events ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

# The cached roots, built once and then reused, in the background: the tests that need one wait
# for its lock (tests/integration/sidroot.py, tests/unit/test-attrib.c, tools/arm64-pass.sh).
roots_begin=$(date +%s)
say "the test roots, in the background: Debian sid (tools/sid-root.sh)$(
	[ "$arm64" = 1 ] && echo ", the arm64 VM image (tools/arm64-vm.sh image)")"
(
	t=$(date +%s)
	sh tools/sid-root.sh >"$out/sid-root.log" 2>&1 ||
		echo "test.sh: no Debian sid root; tests/integration/sid-pythons.py will say why" >&2
	echo "sid root $(($(date +%s) - t))" >"$out/sid-root.time"
) &
sid_job=$!
if [ "$arm64" = 1 ]; then
	(
		t=$(date +%s)
		sh tools/arm64-vm.sh image >"$out/arm64-image.log" 2>&1 || true
		echo "arm64 image $(($(date +%s) - t))" >"$out/arm64-image.time"
	) &
fi

pass=0 fail=0 skip=0
# tally DIR LABEL [TESTS]: add up the results of the .trs files under DIR (of TESTS, if given),
# show failures' logs.
tally() {
	for trs in $(find "$1" -name '*.trs' | sort); do
		log=${trs%.trs}.log
		result=$(sed -n 's/^:test-result: //p' "$trs" | head -n 1)
		echo "$result: $2${log%.log}" | sed "s|$1/||"
		case $result in
		PASS | XFAIL) pass=$((pass + 1)) ;;
		SKIP) skip=$((skip + 1)) ;;
		*)
			fail=$((fail + 1))
			sed 's/^/    /' "$log" | tail -n 40
			;;
		esac
	done
}
# check DIR NAME [make args]: make check in DIR, output to $out/NAME.log; tally it later with
# tallied. Runs beside the others when called with &.
check() {
	dir=$1 name=$2
	shift 2
	find "$dir" -name '*.trs' -delete
	rm -f "$dir/test-suite.log"
	(cd "$dir" && make -j"$jobs" check "$@" >"$out/$name.log" 2>&1) || true
}
# tallied DIR NAME LABEL: tally what check DIR NAME ran, or say that it ran nothing.
tallied() {
	if [ ! -f "$1/test-suite.log" ]; then
		echo "FAIL: $3make check did not run the tests:"
		tail -n 30 "$out/$2.log"
		fail=$((fail + 1))
		return
	fi
	tally "$1" "$3"
	slowest "$1" "$3"
}
# slowest DIR LABEL: the 6 tests of DIR's last check that ran longest (tests/run-one.sh's last
# line), so the pass that makes the run long says which tests make it long.
slowest() {
	rows=$(find "$1" -name '*.trs' -exec sh -c '
		for trs; do
			log=${trs%.trs}.log
			s=$(sed -n "s/^run-one: \([0-9]*\) s$/\1/p" "$log" | tail -n 1)
			[ -n "$s" ] && echo "$s ${trs%.trs}"
		done' sh {} + | sed "s|$1/||" | sort -rn | head -n 6)
	[ -n "$rows" ] && echo "$rows" | sed "s/^/  ${2:-suite: }slowest: /"
	return 0
}

t=$(date +%s)
say "building giltrace (autoreconf, configure, make)"
{
	autoreconf -fi && ./configure -q ${GIL_CONFIGURE_FLAGS:-} && make -j"$(nproc)"
} >"$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log"
	exit 1
}
timed "build" "$t"

san=""
if [ "$extra" = 1 ]; then
	# The sanitizer build, in a copy of the tree, beside the first tests.
	san=$(mktemp -d /tmp/giltrace-san.XXXXXX)
	trap 'rm -rf "$san"' EXIT
	cp -a "$top/." "$san/"
	(
		t=$(date +%s)
		cd "$san"
		{
			make distclean || true
			./configure -q --enable-sanitizers && make -j"$(nproc)"
		} >"$out/asan-build.log" 2>&1 && touch "$out/asan-build.ok"
		echo "asan+ubsan build $(($(date +%s) - t))" >"$out/asan-build.time"
	) &
	san_job=$!
fi

t=$(date +%s)
say "the suite: $(make -s print-tests | wc -w) tests, $jobs at a time (make -j$jobs check)"
check "$top" main
tallied "$top" main ""
timed "suite" "$t"

if [ "$extra" = 1 ]; then
	t=$(date +%s)
	say "the extra passes, beside each other: valgrind, asan+ubsan$(
		[ "$arm64" = 1 ] && echo ", arm64")"
	# gil-record under valgrind, on the recorder's paths: threads contending, two processes,
	# every signal. Memory errors and definite leaks fail (exit 97). One at a time: valgrind is
	# slow enough on its own.
	(
		t=$(date +%s)
		jobs=1 check "$top" valgrind GIL_VALGRIND=1 TESTS="tests/integration/contention.py \
			tests/integration/two-processes.py tests/integration/signals.py"
		echo "valgrind $(($(date +%s) - t))" >"$out/valgrind.time"
	) &
	vg_job=$!

	# The suite built with ASan + UBSan, on the tests whose code the others do not reach twice:
	# left out are the sweeps that run the same recorder over every interpreter (their parsing
	# runs under ASan in the unit tests test-symbols, test-sites and test-attrib; the sweeps
	# that stay go through a third of the interpreters, giltest.sweep), the benchmark smoke run,
	# the fuzz test, which is built with the sanitizers already, the two converter runs
	# that repeat one parse many times: truncated.py (a file cut at every byte: the reader's
	# cuts, which the sanitized fuzz-smoke drives) and scale.py (golden's code on a large input),
	# and same-run.py, two recorders on each of four interpreters (129 s alone under ASan): its
	# debuginfod download, DWARF sites and copies found from the code run under ASan in
	# debuginfod.py, sid-pythons.py and io-releases.py.
	wait "$san_job" || true
	if [ -f "$out/asan-build.ok" ]; then
		san_tests=$(cd "$san" && make -s print-tests | tr ' ' '\n' | grep -v \
			-e attribution.py -e statistics.py -e bench-smoke -e fuzz-smoke \
			-e compat-matrix.py -e interpreters.py -e truncated.py -e scale.py \
			-e same-run.py |
			tr '\n' ' ')
		# the longest first (make starts them in this order), so none of them is the tail
		# that runs alone at the end: attribution-modes.py alone took the last 7 minutes
		long="-e attribution-modes.py -e objcache.py -e sid-pythons.py -e stripped.py
			-e ctypes-count.py -e all-processes.py"
		# shellcheck disable=SC2086
		san_tests=$(echo $(echo "$san_tests" | tr ' ' '\n' | grep $long) \
			$(echo "$san_tests" | tr ' ' '\n' | grep -v $long))
		(
			t=$(date +%s)
			GIL_SANITIZED=1 ASAN_OPTIONS=detect_leaks=1 check "$san" asan TESTS="$san_tests"
			echo "asan+ubsan $(($(date +%s) - t))" >"$out/asan.time"
		) &
		asan_job=$!
	else
		echo "FAIL: asan+ubsan: the build failed:"
		tail -n 30 "$out/asan-build.log"
		fail=$((fail + 1))
		asan_job=""
	fi

	if [ "$arm64" = 1 ]; then
		(
			t=$(date +%s)
			if CI=${CI:-} sh tools/arm64-pass.sh >"$out/arm64.log" 2>&1; then
				echo "PASS: arm64: tests/arm64/vm-pass" >"$out/arm64.result"
			else
				echo "FAIL: arm64: tests/arm64/vm-pass" >"$out/arm64.result"
			fi
			echo "arm64 pass $(($(date +%s) - t))" >"$out/arm64.time"
		) &
		arm_job=$!
	fi

	wait "$vg_job" || true
	tallied "$top" valgrind "valgrind: "
	if [ -n "$asan_job" ]; then
		wait "$asan_job" || true
		tallied "$san" asan "asan+ubsan: "
	fi
	if [ "$arm64" = 1 ]; then
		wait "$arm_job" || true
		cat "$out/arm64.result"
		case $(cat "$out/arm64.result") in
		PASS*) pass=$((pass + 1)) ;;
		*)
			fail=$((fail + 1))
			sed 's/^/    /' "$out/arm64.log" | tail -n 60
			;;
		esac
	fi
	timed "extra passes" "$t"
fi
wait "$sid_job" || true
wait

# How long each part took (the background ones overlap the others).
echo "test.sh: times, in seconds (the whole run $(($(date +%s) - begin)) s):"
{
	printf '%s' "$times"
	cat "$out"/*.time 2>/dev/null
} | while read -r line; do
	printf '  %-24s %6s\n' "${line% *}" "${line##* }"
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
