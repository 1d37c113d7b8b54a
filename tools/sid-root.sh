#!/bin/sh
# Builds, once, a Debian sid root with CPython 3.13, 3.14 and 3.15 and their -dbg packages, for
# the tests that run those interpreters in a container (tests/integration/sid-pythons.py).
# Prints the root's path on success. Run as root; works unattended (CI=true, no stdin).
#
# The root is cached at $GIL_SID_ROOT (default /var/cache/giltrace/sid-root); the stamp file
# $GIL_SID_ROOT.stamp is written only when the root is complete, so a root without it (an
# interrupted build) is thrown away and built again. A lock ($GIL_SID_ROOT.lock, flock) keeps two
# runs from building at once; the second waits and then uses the first one's root.
# Building took 43 s here (debootstrap 25 s, apt-get 18 s; 66 s with another build running),
# 2 vCPUs, a near mirror; allow a few minutes on a slow one. With the stamp present the script returns at once.
set -e
root=${GIL_SID_ROOT:-/var/cache/giltrace/sid-root}
mirror=${GIL_SID_MIRROR:-http://deb.debian.org/debian}
pkgs="python3.13 python3.13-dbg python3.14 python3.14-dbg python3.15 python3.15-dbg"
stamp=$root.stamp
lock=$root.lock

step() { echo "sid-root: $*" >&2; }
die() {
	echo "sid-root: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap and chroot)"
if [ -f "$stamp" ] && [ -x "$root/usr/bin/python3.15" ]; then
	echo "$root"
	exit 0
fi
mkdir -p "$(dirname "$root")"
command -v flock >/dev/null || die "flock missing: apt-get install util-linux"

# Holds the lock on fd 9 for the rest of the script; the kernel drops it when we exit.
exec 9>"$lock"
if ! flock -n 9; then
	step "another run is building $root; waiting"
	flock 9
fi
if [ -f "$stamp" ] && [ -x "$root/usr/bin/python3.15" ]; then
	echo "$root"
	exit 0
fi

# umount_all: what the chroot step mounted, deepest first; run on every exit.
umount_all() {
	for m in dev/pts dev proc sys; do
		mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m"
	done
	return 0
}
trap 'umount_all' EXIT
trap 'exit 1' INT TERM HUP

export DEBIAN_FRONTEND=noninteractive
start=$(date +%s)
if ! command -v debootstrap >/dev/null; then
	step "installing debootstrap"
	apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
	apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends debootstrap </dev/null >/dev/null
fi

umount_all
rm -rf "$root" "$stamp"
step "debootstrap --variant=minbase sid $root"
log=$root.log
if ! debootstrap --variant=minbase sid "$root" "$mirror" </dev/null >"$log" 2>&1; then
	tail -n 20 "$log" >&2
	die "debootstrap failed (whole log: $log)"
fi

step "apt-get install $pkgs"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# The archive reached may be a frozen snapshot whose Release has expired: a test root may use it.
echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99giltrace"
# in_root CMD...: run CMD inside the root, without the host's locale or a terminal.
in_root() {
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 \
		chroot "$root" "$@" </dev/null
}
in_root apt-get update -q >>"$log" 2>&1 || die "apt-get update in the root failed (log: $log)"
for p in $pkgs; do
	in_root apt-cache show "$p" >/dev/null 2>&1 || die "sid has no package $p"
done
# shellcheck disable=SC2086
if ! in_root apt-get install -y -q --no-install-recommends $pkgs >>"$log" 2>&1; then
	tail -n 20 "$log" >&2
	die "apt-get install in the root failed (whole log: $log)"
fi
in_root apt-get clean >>"$log" 2>&1 || true
umount_all
for m in proc sys dev/pts dev; do
	! mountpoint -q "$root/$m" || die "$root/$m still mounted"
done

for v in 3.13 3.14 3.15; do
	[ -x "$root/usr/bin/python$v" ] || die "no /usr/bin/python$v in the root"
	# shellcheck disable=SC2016
	ver=$(in_root dpkg-query -W -f='${Version}' "python$v")
	# shellcheck disable=SC2016
	dbg=$(in_root dpkg-query -W -f='${Version}' "python$v-dbg")
	[ "$ver" = "$dbg" ] || die "python$v $ver and python$v-dbg $dbg differ"
	step "python$v $ver (with -dbg)"
done
date -u +%Y-%m-%dT%H:%M:%SZ >"$stamp"
step "done in $(($(date +%s) - start)) s"
echo "$root"
