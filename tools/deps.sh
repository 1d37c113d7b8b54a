#!/bin/sh
# Installs what giltrace needs to build and test on Debian (run as root). Idempotent.
# Usage: deps.sh [--test] [--arm64]
#   --test   adds what the test suite uses: cmocka, a debug Python, debootstrap for the sid root
#   --arm64  adds what the arm64 pass uses: qemu, binfmt, a cross compiler
# tools/test.sh installs everything here, before its background jobs build the test roots: two
# apt-gets at once would fail on apt's lock.
set -e
pkgs="build-essential autoconf automake libtool pkg-config libtraceevent-dev libtracefs-dev
libelf-dev libdw-dev liblzma-dev libdebuginfod-dev libjson-c-dev libmicrohttpd-dev libncurses-dev python3 python3-dbg"
# python3-dbg: Debian's python3 is stripped; its debug symbols let gil-record find the GIL.
test=no arm64=no
for a in "$@"; do
	case $a in
	--test) test=yes ;;
	--arm64) arm64=yes ;;
	*) echo "usage: deps.sh [--test] [--arm64]" >&2 && exit 2 ;;
	esac
done
if [ $test = yes ]; then
	# python3.11-dbg gives Debian's stripped python3.11 its symbols (and pulls the matching
	# python3.11, so their build-ids agree); its headers build natives.py's extension for it;
	# xz-utils and binutils serve the symbol tests.
	pkgs="$pkgs libcmocka-dev xz-utils binutils util-linux valgrind clang libclang-rt-14-dev linux-perf man-db debuginfod
debootstrap prometheus tmux"
	if apt-cache show python3.11-dbg >/dev/null 2>&1 || [ -x /usr/bin/python3.11 ]; then
		pkgs="$pkgs python3.11-dbg libpython3.11-dev"
	fi
	# a real torch DataLoader forks its workers (tests/integration/forked-workers.py)
	if apt-cache show python3-torch >/dev/null 2>&1; then
		pkgs="$pkgs python3-torch"
	fi
fi
if [ $arm64 = yes ]; then
	# tools/arm64-vm.sh and tools/arm64-pass.sh
	pkgs="$pkgs qemu-user-static binfmt-support qemu-system-arm debootstrap cpio xz-utils kmod
coreutils gcc-aarch64-linux-gnu"
fi
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
export DEBIAN_FRONTEND=noninteractive
# another apt-get (an unattended upgrade) may hold the lock: wait for it
apt-get -o DPkg::Lock::Timeout=600 update -q
# shellcheck disable=SC2086
apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends $missing
