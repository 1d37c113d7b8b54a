#!/bin/sh
# Installs what giltrace needs to build and test on Debian (run as root). Idempotent.
# Usage: deps.sh [--test]   (--test adds what the test suite uses: cmocka, a debug Python)
set -e
pkgs="build-essential autoconf automake libtool pkg-config libtraceevent-dev libtracefs-dev
libelf-dev libdw-dev liblzma-dev libdebuginfod-dev libjson-c-dev python3 python3-dbg"
# python3-dbg: Debian's python3 is stripped; its debug symbols let gil-record find the GIL.
if [ "${1:-}" = "--test" ]; then
	# python3.11-dbg gives Debian's stripped python3.11 its symbols (and pulls the matching
	# python3.11, so their build-ids agree); xz-utils and binutils serve the symbol tests.
	pkgs="$pkgs libcmocka-dev xz-utils binutils util-linux valgrind clang libclang-rt-14-dev linux-perf man-db debuginfod"
	if apt-cache show python3.11-dbg >/dev/null 2>&1 || [ -x /usr/bin/python3.11 ]; then
		pkgs="$pkgs python3.11-dbg"
	fi
fi
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
