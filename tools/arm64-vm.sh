#!/bin/sh
# Runs commands on aarch64: an emulated arm64 VM (qemu-system-aarch64 -M virt -cpu max, no KVM
# needed) that boots Debian bookworm's arm64 kernel on a Debian bookworm arm64 root with
# python3.11, python3.11-dbg and giltrace's build dependencies. Run as root; works unattended
# (CI=true, no stdin).
#
#   sh tools/arm64-vm.sh image          build the image once (cached); prints its directory
#   sh tools/arm64-vm.sh run CMD [ARG]...
#                                       run CMD as root in the VM, in a copy of this source tree
#                                       (/build/giltrace); its stdout and stderr come back on
#                                       ours, and we exit with its status
#
# The image is cached in $GIL_ARM64_DIR (default /var/cache/giltrace/arm64):
#   root/         the arm64 root (debootstrap --variant=minbase, two stages through
#                 qemu-user-static and binfmt_misc), the VM's root file system over virtio-9p,
#                 shared read-write, so the host reads what the VM wrote
#   vmlinuz, config-*, initrd.gz
#                 the kernel of Debian's linux-image-arm64 (unpacked with dpkg-deb -x; its
#                 modules go to root/lib/modules), and a small initramfs: a static busybox and
#                 the virtio/9p modules, which mounts the 9p root and switches to it
#   stamp         written only when the image is complete: an image without it (an interrupted
#                 build) is thrown away and built again; "run" builds it when it is missing
#   image.log, console.log
#                 the last build's log, the last run's serial console (kernel messages)
# A lock ($GIL_ARM64_DIR/lock, flock) keeps two builds or runs from using the root at once.
#
# "run": the source tree's files (git ls-files: tracked and untracked, not ignored, as they are
# in the work tree) are copied over root/build/giltrace first, keeping their times, so a build
# made there before is only redone where sources changed (GIL_ARM64_SYNC=no skips the copy;
# GIL_ARM64_SRC names another tree). In the VM: /proc, /sys, /dev, /run and /tmp (tmpfs),
# tracefs on /sys/kernel/tracing and debugfs on /sys/kernel/debug are mounted; CMD runs with no
# stdin, PATH, HOME=/root, LC_ALL=C.UTF-8 and GIL_ARM64_VM=1 set; then the VM powers off. The
# VM always ends: the kernel reboots on a panic or an oops (panic=-1 oops=panic) and qemu exits
# then (-no-reboot), and timeout(1) kills qemu after $GIL_ARM64_TIMEOUT seconds (default 1200).
# Exit status: CMD's; 124 if the VM timed out; 125 if the VM ended without CMD's status (the
# console's last lines are shown) or the harness failed.
#
# Other settings: GIL_ARM64_MIRROR (default http://deb.debian.org/debian), GIL_ARM64_CPU
# (default max,pauth-impdef=on: all of -cpu max, BTI and pointer authentication included, with
# QEMU's cheaper PAC hash; "max" for the architected one), GIL_ARM64_SMP (2), GIL_ARM64_MEM
# (2048), GIL_ARM64_APPEND (more kernel command line).
#
# Measured here (2 vCPUs, x86-64, software emulation): see doc/compatibility.md, "aarch64".
set -eu

dir=${GIL_ARM64_DIR:-/var/cache/giltrace/arm64}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
mirror=${GIL_ARM64_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
root=$dir/root
stamp=$dir/stamp
format=1 # of the image: bump when what "image" makes changes, so old images are rebuilt
# In the root: python3.11 with its debug file, and what configure.ac, tools/deps.sh and the test
# suite use (cmocka for the unit tests); busybox-static gives the initramfs its shell and the
# VM its poweroff; kmod its modprobe. libdebuginfod-dev is dropped if the suite has none.
pkgs="python3.11 python3.11-dbg python3 gcc libc6-dev make autoconf automake libtool pkg-config
libtraceevent-dev libtracefs-dev libelf-dev libdw-dev libjson-c-dev liblzma-dev libdebuginfod-dev
libcmocka-dev binutils xz-utils procps kmod busybox-static"
# Modules the initramfs loads (with what they depend on) unless the kernel has them built in.
modules="virtio_mmio virtio_pci 9pnet_virtio 9p"
job_in_root=/var/lib/giltrace-vm

step() { echo "arm64-vm: $*" >&2; }
die() {
	echo "arm64-vm: $*" >&2
	exit 125
}
usage() {
	echo "usage: $0 image | run CMD [ARG]..." >&2
	exit 2
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
image) [ $# -eq 0 ] || usage ;;
run) [ $# -ge 1 ] || usage ;;
*) usage ;;
esac
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot, a 9p root shared with passthrough)"
command -v flock >/dev/null || die "flock missing: apt-get install util-linux"
export DEBIAN_FRONTEND=noninteractive

# need_host CMD PACKAGE: install PACKAGE on the host when CMD is missing.
need_host() {
	command -v "$1" >/dev/null 2>&1 && return 0
	step "installing $2 on the host"
	if [ -z "${apt_updated:-}" ]; then
		apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null || die "apt-get update failed"
		apt_updated=1
	fi
	apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "$2" </dev/null >/dev/null ||
		die "apt-get install $2 failed"
	command -v "$1" >/dev/null 2>&1 || die "$2 installed, but still no $1"
}

native=no
[ "$(uname -m)" = aarch64 ] && native=yes

have_image() {
	[ -f "$stamp" ] && grep -qx "format=$format" "$stamp" && [ -f "$dir/vmlinuz" ] &&
		[ -f "$dir/initrd.gz" ] && [ -x "$root/usr/bin/python3.11" ]
}

# mounted_under DIR: is anything mounted at or below DIR?
mounted_under() {
	awk -v d="$1" '$2 == d || index($2, d "/") == 1 { found = 1 } END { exit !found }' /proc/mounts
}

# umount_root: what the chroot steps mounted, deepest first; run on every exit.
umount_root() {
	for m in dev/pts dev proc sys; do
		if mountpoint -q "$root/$m" 2>/dev/null; then umount -l "$root/$m" || true; fi
	done
	return 0
}

# in_root CMD...: run CMD in the root (chroot), without the host's locale or a terminal.
in_root() {
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 \
		HOME=/root chroot "$root" "$@" </dev/null
}

# timed NAME: say how long the step begun at $t0 took, note it in image.times, restart the clock.
timed() {
	t1=$(date +%s)
	echo "$1 $((t1 - t0)) s" >>"$dir/image.times"
	step "$1: $((t1 - t0)) s"
	t0=$t1
}

# binfmt: arm64 programs run on this host through qemu-user-static (binfmt_misc).
binfmt() {
	need_host qemu-aarch64-static qemu-user-static
	need_host update-binfmts binfmt-support
	b=/proc/sys/fs/binfmt_misc
	if [ ! -e "$b/status" ]; then
		mount -t binfmt_misc binfmt_misc "$b" || die "cannot mount binfmt_misc on $b"
	fi
	if ! head -n 1 "$b/qemu-aarch64" 2>/dev/null | grep -qx enabled; then
		update-binfmts --enable qemu-aarch64 || die "update-binfmts --enable qemu-aarch64 failed"
	fi
	head -n 1 "$b/qemu-aarch64" 2>/dev/null | grep -qx enabled ||
		die "binfmt_misc has no enabled qemu-aarch64 entry ($b/qemu-aarch64)"
	# F: the interpreter was opened when registered, so it also runs in a chroot.
	if grep -q '^flags:.*F' "$b/qemu-aarch64"; then binfmt_fixed=yes; else binfmt_fixed=no; fi
}

# initramfs KVER: $dir/initrd.gz, a busybox /init that loads $modules and switches to the 9p root.
initramfs() {
	kver=$1
	mdir=$root/lib/modules/$kver
	ird=$dir/initrd.tmp
	rm -rf "$ird"
	mkdir -p "$ird/bin" "$ird/proc" "$ird/sys" "$ird/dev" "$ird/newroot" "$ird/lib/modules"
	cp "$root/bin/busybox" "$ird/bin/busybox"
	# The load order: for each module its dependencies (modules.dep lists them, last first),
	# then the module; a module the kernel has built in is skipped.
	order=$(awk -v want="$modules" '
		function base(p, b) { b = p; sub(/.*\//, "", b); sub(/\.ko(\.[a-z]+)?$/, "", b)
			gsub(/-/, "_", b); return b }
		function emit(p) { if (!(p in seen)) { seen[p] = 1; print p } }
		{ p = $1; sub(/:$/, "", p); line[base(p)] = $0; file[base(p)] = p }
		END { n = split(want, w, " ")
			for (i = 1; i <= n; i++) {
				m = w[i]
				if (!(m in file)) { print "missing:" m; continue }
				k = split(line[m], d, " ")
				for (j = k; j >= 2; j--) emit(d[j])
				emit(file[m]) } }' "$mdir/modules.dep")
	: >"$ird/modules"
	for p in $order; do
		case $p in
		missing:*)
			m=${p#missing:}
			sed 's/-/_/g' "$mdir/modules.builtin" | grep -q "/$m\.ko\$" ||
				die "kernel $kver has no module $m, built in or not"
			continue
			;;
		esac
		f=$(basename "$p")
		case $f in
		*.ko.xz) xz -dc "$mdir/$p" >"$ird/lib/modules/${f%.xz}" && f=${f%.xz} ;;
		*.ko.zst) zstd -qdc "$mdir/$p" >"$ird/lib/modules/${f%.zst}" && f=${f%.zst} ;;
		*.ko.gz) gzip -dc "$mdir/$p" >"$ird/lib/modules/${f%.gz}" && f=${f%.gz} ;;
		*) cp "$mdir/$p" "$ird/lib/modules/$f" ;;
		esac
		echo "$f" >>"$ird/modules"
	done
	cat >"$ird/init" <<'EOF'
#!/bin/busybox sh
# giltrace arm64 VM, stage 1 (tools/arm64-vm.sh): load the virtio and 9p modules, mount the 9p
# root and switch to the stage 2 that "run" wrote there. Any failure powers the VM off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() {
	echo "giltrace-vm init: $*" >/dev/console
	poweroff -f
	exit 1
}
for m in $(cat /modules); do
	insmod "/lib/modules/$m" || fail "insmod $m failed"
done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=mmap,rw giltrace-root /newroot ||
	fail "cannot mount the 9p root (mount tag giltrace-root)"
stage2=/var/lib/giltrace-vm/stage2
[ -f "/newroot$stage2" ] || fail "no $stage2 in the root"
mkdir -p /newroot/dev /newroot/proc /newroot/sys
mount --move /dev /newroot/dev
umount /proc /sys
exec switch_root /newroot /bin/sh "$stage2"
EOF
	chmod 755 "$ird/init"
	(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -9) >"$dir/initrd.gz.tmp"
	mv "$dir/initrd.gz.tmp" "$dir/initrd.gz"
	step "initramfs: $(wc -c <"$dir/initrd.gz") bytes; modules loaded: $(tr '\n' ' ' <"$ird/modules")"
	rm -rf "$ird"
}

# build_image: make the whole image; the lock is held.
build_image() {
	start=$(date +%s)
	t0=$start
	need_host debootstrap debootstrap
	need_host cpio cpio
	need_host xz xz-utils
	need_host depmod kmod
	[ $native = yes ] || binfmt
	trap 'umount_root' EXIT
	trap 'exit 1' INT TERM HUP
	umount_root
	if mounted_under "$root"; then die "something is still mounted under $root; not removing it"; fi
	rm -rf --one-file-system "$root" "$stamp" "$dir/vmlinuz" "$dir/initrd.gz" "$dir"/config-*
	mkdir -p "$dir"
	: >"$dir/image.times"
	log=$dir/image.log
	: >"$log"
	timed "host packages"

	step "debootstrap --arch=arm64 --variant=minbase $suite (first stage)"
	if [ $native = yes ]; then
		debootstrap --arch=arm64 --variant=minbase "$suite" "$root" "$mirror" </dev/null >>"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; die "debootstrap failed (whole log: $log)"; }
	else
		debootstrap --arch=arm64 --variant=minbase --foreign "$suite" "$root" "$mirror" \
			</dev/null >>"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; die "debootstrap --foreign failed (whole log: $log)"; }
		timed "debootstrap first stage"
		[ "$binfmt_fixed" = yes ] || cp /usr/bin/qemu-aarch64-static "$root/usr/bin/"
		step "debootstrap second stage (arm64 binaries through qemu-user)"
		in_root /debootstrap/debootstrap --second-stage >>"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; die "debootstrap --second-stage failed (whole log: $log)"; }
	fi
	timed "debootstrap second stage"

	step "apt-get install in the root (emulated)"
	mount -t proc proc "$root/proc"
	mount -t sysfs sysfs "$root/sys"
	mount --bind /dev "$root/dev"
	mount --bind /dev/pts "$root/dev/pts"
	cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	# The archive reached may be a frozen snapshot whose Release has expired.
	echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99giltrace"
	in_root apt-get update -q >>"$log" 2>&1 || die "apt-get update in the root failed (log: $log)"
	want=
	for p in $pkgs; do
		if in_root apt-cache show "$p" >/dev/null 2>&1; then
			want="$want $p"
		elif [ "$p" = libdebuginfod-dev ]; then
			step "$suite arm64 has no $p; building without debuginfod"
		else
			die "$suite arm64 has no package $p"
		fi
	done
	# shellcheck disable=SC2086
	if ! in_root apt-get install -y -q --no-install-recommends $want >>"$log" 2>&1; then
		tail -n 20 "$log" >&2
		die "apt-get install in the root failed (whole log: $log)"
	fi
	timed "apt-get install"

	# The kernel: the package linux-image-arm64 depends on, unpacked on the host; its postinst
	# (mkinitramfs, about 25 min under emulation) never runs.
	kpkg=$(in_root apt-cache depends linux-image-arm64 |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	[ -n "$kpkg" ] || die "linux-image-arm64 depends on no linux-image-<version> package"
	step "kernel: $kpkg"
	rm -rf "$root/var/tmp/giltrace-kernel"
	mkdir -p "$root/var/tmp/giltrace-kernel"
	in_root sh -c "cd /var/tmp/giltrace-kernel && apt-get download -q $kpkg" >>"$log" 2>&1 ||
		die "apt-get download $kpkg failed (log: $log)"
	in_root apt-get clean >>"$log" 2>&1 || true
	umount_root
	if mounted_under "$root"; then die "$root still has mounts"; fi
	deb=$(ls "$root"/var/tmp/giltrace-kernel/*.deb)
	kx=$dir/kernel.tmp
	rm -rf "$kx"
	dpkg-deb -x "$deb" "$kx"
	rm -rf "$root/var/tmp/giltrace-kernel"
	kver=
	for f in "$kx"/boot/vmlinuz-*; do [ -f "$f" ] && kver=${f##*/vmlinuz-}; done
	if [ -z "$kver" ] || [ ! -d "$kx/lib/modules/$kver" ]; then die "no vmlinuz or modules in $deb"; fi
	mkdir -p "$root/lib/modules" "$root/boot"
	rm -rf "$root/lib/modules/$kver"
	cp -a "$kx/lib/modules/$kver" "$root/lib/modules/"
	cp "$kx/boot/config-$kver" "$kx/boot/System.map-$kver" "$root/boot/"
	cp "$kx/boot/config-$kver" "$dir/"
	cp "$kx/boot/vmlinuz-$kver" "$dir/vmlinuz.tmp"
	rm -rf "$kx"
	depmod -b "$root" "$kver" || die "depmod -b $root $kver failed"
	for c in CONFIG_UPROBES CONFIG_UPROBE_EVENTS CONFIG_PERF_EVENTS CONFIG_TRACING; do
		grep -q "^$c=y" "$dir/config-$kver" || die "kernel $kver lacks $c"
	done
	timed "kernel"

	initramfs "$kver"
	mkdir -p "$root$job_in_root" "$root/build"
	mv "$dir/vmlinuz.tmp" "$dir/vmlinuz"
	timed "initramfs"

	# shellcheck disable=SC2016
	ver=$(in_root dpkg-query -W -f='${Version}' python3.11)
	# shellcheck disable=SC2016
	dbg=$(in_root dpkg-query -W -f='${Version}' python3.11-dbg)
	[ "$ver" = "$dbg" ] || die "python3.11 $ver and python3.11-dbg $dbg differ"
	step "python3.11 $ver (with -dbg), kernel $kver"
	{
		echo "format=$format"
		echo "kernel=$kver"
		echo "python3.11=$ver"
		echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	} >"$stamp.tmp"
	mv "$stamp.tmp" "$stamp"
	step "image done in $(($(date +%s) - start)) s ($dir)"
	trap - EXIT INT TERM HUP
}

# quote ARG: ARG as one sh word.
quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# sync_tree: the source tree's files over $root/build/giltrace, with their times.
sync_tree() {
	src=${GIL_ARM64_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
	dst=$root/build/giltrace
	mkdir -p "$dst"
	if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		# Only the files that exist (a deleted one is still listed until committed).
		# shellcheck disable=SC2016
		(cd "$src" && git ls-files -z --cached --others --exclude-standard |
			xargs -0 sh -c 'for f; do [ ! -e "$f" ] && [ ! -L "$f" ] || printf "%s\n" "$f"; done' sh |
			tar -cf - --no-recursion -T -) | tar -xpf - -C "$dst" ||
			die "copying $src to $dst failed"
	else
		(cd "$src" && tar -cf - .) | tar -xpf - -C "$dst" || die "copying $src to $dst failed"
	fi
}

# stage2: PID 1 of the VM once the 9p root is mounted; runs the job and powers off.
write_stage2() {
	cat >"$root$job_in_root/stage2" <<'EOF'
#!/bin/sh
# giltrace arm64 VM, stage 2 (written by tools/arm64-vm.sh run): PID 1 in the 9p root.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
HOME=/root LC_ALL=C.UTF-8 TERM=dumb GIL_ARM64_VM=1
export PATH HOME LC_ALL TERM GIL_ARM64_VM
job=/var/lib/giltrace-vm/job
off() {
	sync
	busybox poweroff -f
	echo o >/proc/sysrq-trigger
	exit 1 # PID 1 exiting panics, and panic=-1 with -no-reboot ends qemu too
}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
[ -e /dev/null ] || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t tracefs nodev /sys/kernel/tracing
mount -t debugfs nodev /sys/kernel/debug
busybox hostname giltrace-arm64
busybox ip link set lo up 2>/dev/null
read -r up _ </proc/uptime
echo "$up" >$job/started
echo "giltrace-vm: command starts at ${up} s" >/dev/console
cd /build/giltrace 2>/dev/null || cd /
# In the background, so that PID 1 waits and reaps the orphans the command leaves.
sh $job/cmd </dev/null >$job/stdout 2>$job/stderr &
wait $!
rc=$?
read -r up _ </proc/uptime
echo "$up" >$job/ended
echo "$rc" >$job/status
echo "giltrace-vm: command exited $rc at ${up} s" >/dev/console
off
EOF
}

# run_vm CMD...: boot the VM, run CMD, power off; exit with CMD's status.
run_vm() {
	need_host qemu-system-aarch64 qemu-system-arm
	need_host timeout coreutils
	[ "${GIL_ARM64_SYNC:-yes}" = no ] || sync_tree
	job=$root$job_in_root/job
	rm -rf "$job"
	mkdir -p "$job"
	write_stage2
	{
		echo "# tools/arm64-vm.sh run"
		printf 'exec'
		for a; do printf ' %s' "$(quote "$a")"; done
		echo
	} >"$job/cmd"
	tmo=${GIL_ARM64_TIMEOUT:-1200}
	accel=tcg
	cpu=${GIL_ARM64_CPU:-max,pauth-impdef=on}
	if [ $native = yes ] && [ -w /dev/kvm ]; then
		accel=kvm
		cpu=${GIL_ARM64_CPU:-host}
	fi
	console=$dir/console.log
	start=$(date +%s)
	step "booting (accel $accel, -cpu $cpu, timeout $tmo s); console: $console"
	timeout -k 10 "$tmo" qemu-system-aarch64 -M virt -accel "$accel" -cpu "$cpu" \
		-smp "${GIL_ARM64_SMP:-2}" -m "${GIL_ARM64_MEM:-2048}" -nographic -no-reboot -nic none \
		-kernel "$dir/vmlinuz" -initrd "$dir/initrd.gz" \
		-append "console=ttyAMA0 panic=-1 oops=panic quiet ${GIL_ARM64_APPEND:-}" \
		-virtfs "local,path=$root,mount_tag=giltrace-root,security_model=passthrough,id=giltrace-root" \
		</dev/null >"$console" 2>&1 &
	qpid=$!
	# A signal to us stops the VM (timeout forwards it to qemu), then we exit.
	trap 'kill -TERM $qpid 2>/dev/null; wait $qpid; exit 125' INT TERM HUP
	qrc=0
	wait $qpid || qrc=$?
	trap - INT TERM HUP
	wall=$(($(date +%s) - start))
	[ -f "$job/stdout" ] && cat "$job/stdout"
	[ -f "$job/stderr" ] && cat "$job/stderr" >&2
	if [ ! -f "$job/status" ]; then
		tail -n 30 "$console" | sed 's/^/    /' >&2
		if [ $qrc -eq 124 ] || [ $qrc -eq 137 ]; then
			step "the VM timed out after $tmo s (GIL_ARM64_TIMEOUT) and was killed; console: $console"
			exit 124
		fi
		die "the VM ended without the command's status (qemu exited $qrc); console: $console"
	fi
	rc=$(cat "$job/status")
	t_start=$(cat "$job/started" 2>/dev/null || echo "?")
	t_end=$(cat "$job/ended" 2>/dev/null || echo "?")
	step "command exited $rc; booted to it in $t_start s, it ended at $t_end s (guest uptime); $wall s in all"
	exit "$rc"
}

mkdir -p "$dir"
# Holds the lock on fd 9 for the rest of the script; the kernel drops it when we exit.
exec 9>"$dir/lock"
if ! flock -n 9; then
	step "another build or run holds $dir/lock; waiting"
	flock 9
fi
if ! have_image; then
	step "building the arm64 image in $dir (takes a while; cached after)"
	build_image
fi
case $cmd in
image) echo "$dir" ;;
run) run_vm "$@" ;;
esac
