#!/bin/sh
# The suite's arm64 pass: giltrace built for AArch64 and tests/arm64/vm-pass.py run in the
# emulated arm64 VM of tools/arm64-vm.sh (Debian bookworm arm64, python3.11 + python3.11-dbg).
# tools/test.sh runs it under CI=true; elsewhere run it on request (root):
#
#   sh tools/arm64-pass.sh
#
# The build is a cross build on the host (gcc-aarch64-linux-gnu, installed when missing, with
# the VM's root as the sysroot: its -dev packages are the arm64 libraries): compiling under
# emulation would take most of the pass. It is made in the VM root's copy of the tree
# ($GIL_ARM64_DIR/root/build/giltrace-pass), kept between runs so only what changed is rebuilt. In
# the VM the host's path of that copy is made to resolve (a symlink on a tmpfs), so libtool's
# wrappers find their libraries. Exit status: the pass's (tools/arm64-vm.sh's, 124 on timeout).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${GIL_ARM64_DIR:-/var/cache/giltrace/arm64}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
root=$dir/root
# not the tree tools/arm64-vm.sh run copies to (/build/giltrace): a run of its own may use that
tree=$root/build/giltrace-pass

say() { echo "arm64-pass: $*" >&2; }

GIL_ARM64_DIR=$dir sh "$top/tools/arm64-vm.sh" image >/dev/null
if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
	say "installing gcc-aarch64-linux-gnu"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q gcc-aarch64-linux-gnu >/dev/null
fi

# The tree as it is (tracked and untracked files, not ignored ones). A file whose content
# changed is copied dated now: its own time may be older than the objects an earlier pass
# built from another checkout, and make would then not rebuild what depends on it.
mkdir -p "$tree"
stage=$(mktemp -d)
# shellcheck disable=SC2016
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 sh -c 'for f; do [ ! -e "$f" ] && [ ! -L "$f" ] || printf "%s\n" "$f"; done' sh |
	tar -cf - --no-recursion -T -) | tar -xpf - -C "$stage"
(cd "$stage" && find . ! -type d) | while IFS= read -r f; do
	cmp -s "$stage/$f" "$tree/$f" 2>/dev/null && continue
	mkdir -p "$(dirname "$tree/$f")"
	rm -f "$tree/$f"
	cp -P "$stage/$f" "$tree/$f"
	touch -h "$tree/$f"
done
rm -rf "$stage"

start=$(date +%s)
cd "$tree"
export PKG_CONFIG_SYSROOT_DIR="$root"
export PKG_CONFIG_LIBDIR="$root/usr/lib/aarch64-linux-gnu/pkgconfig:$root/usr/share/pkgconfig"
if ! grep -q "host_alias='aarch64-linux-gnu'" config.status 2>/dev/null; then
	say "configuring for aarch64-linux-gnu (sysroot $root)"
	autoreconf -fi >/dev/null 2>&1
	./configure -q --host=aarch64-linux-gnu CC="aarch64-linux-gnu-gcc --sysroot=$root" \
		>/dev/null
fi
say "building"
make -j"$(nproc)" -s >/dev/null
# the programs the tests use (tests/c_api_user, tests/gil_sites), without running any test
make -j"$(nproc)" -s check TESTS= >/dev/null
file .libs/gil-record | grep -q "ARM aarch64" || {
	say "the build is not for AArch64: $(file .libs/gil-record)"
	exit 125
}
say "built in $(($(date +%s) - start)) s"

# In the VM: $root is "/", so the host's paths in libtool's wrappers resolve there too.
setup="mkdir -p /var/cache/giltrace && mount -t tmpfs giltrace /var/cache/giltrace &&
mkdir -p $(dirname "$root") && ln -sfn / $root && cd $tree"
GIL_ARM64_DIR=$dir GIL_ARM64_SYNC=no GIL_ARM64_TIMEOUT=${GIL_ARM64_TIMEOUT:-1500} \
	sh "$top/tools/arm64-vm.sh" run sh -c "$setup && CI=${CI:-} python3 tests/arm64/vm-pass.py"
