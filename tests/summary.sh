#!/bin/sh
# Prints the closing line CI reads, "N passed, N failed, N skipped", from automake's .trs files.
pass=0 fail=0 skip=0
for trs in "$@"; do
	[ -f "$trs" ] || continue
	case $(sed -n 's/^:test-result: //p' "$trs" | head -n 1) in
	PASS | XFAIL) pass=$((pass + 1)) ;;
	SKIP) skip=$((skip + 1)) ;;
	*) fail=$((fail + 1)) ;;
	esac
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
