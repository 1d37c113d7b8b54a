#!/bin/sh
# Builds giltrace and runs the whole test suite, as CI does (.ci/run). Run as root: most tests
# place real uprobes on real interpreters. Under CI=true a missing capability fails instead of
# skipping, and two more passes run: the recorder tests with gil-record under valgrind, and the
# whole suite built with AddressSanitizer + UndefinedBehaviorSanitizer (GIL_TEST_EXTRA=1 asks
# for them outside CI, GIL_TEST_EXTRA=0 skips them). Ends with "N passed, N failed, N skipped".
set -e
cd "$(dirname "$0")/.."
top=$PWD
sh tools/deps.sh --test
# Debian sid's Pythons for tests/integration/sid-pythons.py: built once, then cached.
sh tools/sid-root.sh >/dev/null ||
	echo "test.sh: no Debian sid root; tests/integration/sid-pythons.py will say why" >&2
if [ ! -e /sys/kernel/tracing/uprobe_events ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi
extra=${GIL_TEST_EXTRA:-}
[ -n "$extra" ] || { [ "${CI:-}" = true ] && extra=1 || extra=0; }
# The arm64 pass (tools/arm64-pass.sh: an emulated AArch64 VM): under CI, or GIL_TEST_ARM64=1.
arm64=${GIL_TEST_ARM64:-}
[ -n "$arm64" ] || { [ "${CI:-}" = true ] && arm64=1 || arm64=0; }

pass=0 fail=0 skip=0
# tally DIR LABEL: add up the results of the .trs files under DIR, show failures' logs.
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
# check DIR LABEL [make args]: run make check in DIR and tally it.
check() {
	dir=$1 label=$2
	shift 2
	find "$dir" -name '*.trs' -delete
	rm -f "$dir/test-suite.log"
	(cd "$dir" && make -j1 check "$@" >tests/check.out 2>&1) || true
	if [ ! -f "$dir/test-suite.log" ]; then
		echo "FAIL: ${label}make check did not run the tests:"
		tail -n 30 "$dir/tests/check.out"
		fail=$((fail + 1))
		return
	fi
	tally "$dir" "$label"
}

autoreconf -fi >/dev/null
./configure -q ${GIL_CONFIGURE_FLAGS:-}
make -j"$(nproc)" >/dev/null
check "$top" ""

if [ "$extra" = 1 ]; then
	# gil-record under valgrind: memory errors and definite leaks fail (exit 97).
	check "$top" "valgrind: " GIL_VALGRIND=1 TESTS="tests/integration/contention.py \
		tests/integration/two-processes.py tests/integration/signals.py"

	# The suite once more, built with ASan + UBSan, in a copy of the tree. Left out: the sweeps
	# that repeat the same code on every interpreter (their parsing runs under ASan in the
	# unit tests test-symbols and test-attrib), the benchmark smoke run, and the fuzz test,
	# which is built with the sanitizers already. That keeps CI within its 30 minutes.
	san=$(mktemp -d /tmp/giltrace-san.XXXXXX)
	cp -a "$top/." "$san/"
	(cd "$san" && make distclean >/dev/null 2>&1 || true)
	(cd "$san" && ./configure -q --enable-sanitizers && make -j"$(nproc)" >/dev/null)
	san_tests=$(cd "$san" && make -s print-tests | tr ' ' '\n' |
		grep -v -e attribution.py -e statistics.py -e bench-smoke -e fuzz-smoke | tr '\n' ' ')
	GIL_SANITIZED=1 ASAN_OPTIONS=detect_leaks=1 check "$san" "asan+ubsan: " TESTS="$san_tests"
	rm -rf "$san"
fi

if [ "$arm64" = 1 ]; then
	start=$(date +%s)
	if CI=${CI:-} sh tools/arm64-pass.sh >tests/arm64-pass.log 2>&1; then
		echo "PASS: arm64: tests/arm64/vm-pass ($(($(date +%s) - start)) s)"
		pass=$((pass + 1))
	else
		echo "FAIL: arm64: tests/arm64/vm-pass ($(($(date +%s) - start)) s):"
		sed 's/^/    /' tests/arm64-pass.log | tail -n 60
		fail=$((fail + 1))
	fi
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
