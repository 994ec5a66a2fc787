#!/usr/bin/env bash
# Run the suite inside a qemu VM on another kernel (make vmtest).
#
#   vmtest/run.sh [BZIMAGE]
#
# Without BZIMAGE: Debian 12's own 6.1 kernel, the newest
# linux-image-6.1.0-*-amd64 the package lists know, fetched with
# `apt-get download` and extracted (never installed), kept with the modules
# the VM needs under $BUILD/vmtest/ for the next run.
#
# With BZIMAGE: that kernel. Its modules come from MODULES=DIR, a tree as
# `make modules_install INSTALL_MOD_PATH=DIR` leaves it (DIR/lib/modules/
# <release>); without MODULES the kernel must have built in what the VM
# needs: virtio-pci, 9p over virtio, overlayfs, and what vmtest/modules
# lists.
#
# The VM sees the host's / read-only over virtio-9p under a tmpfs overlay
# (vmtest/init.sh) and runs vmtest/guest.sh on a copy of the tree and build
# taken at start: the suite less vmtest/host-only, then vmtest/test_*.sh.
# Its console is shown as it runs; the last line is "N passed, N failed".
# Exit status 0 only when the suite ran and nothing failed.
#
# Environment:
#   VMTEST_TIMEOUT=S         kill the VM after S seconds (default 3600)
#   VMTEST_PATTERN=P         only the tests whose file name contains P
#   VMTEST_KVM=auto|0|1      KVM when it answers a quick probe (default),
#                            never, or always
#   VMTEST_PKTGEN_SECONDS=S  how long bench/pktgen.sh runs (default 5)
#   MODULES=DIR              modules of a given BZIMAGE (see above)
# XLB_* variables (XLB_CI, XLB_PCAP_DIR...) are passed on to the suite.
set -euo pipefail

die() {
	echo "vmtest: $*" >&2
	exit 1
}

[[ $# -le 1 ]] || die "usage: vmtest/run.sh [BZIMAGE]"
kernel_arg=
if [[ $# -eq 1 ]]; then
	[[ -f $1 ]] || die "no kernel image at $1"
	kernel_arg=$(realpath "$1")
fi
[[ -z ${MODULES:-} || -n $kernel_arg ]] ||
	die "MODULES=$MODULES is for a kernel given as BZIMAGE; the default kernel brings its own"
modules_arg=${MODULES:+$(realpath "$MODULES")}

cd "$(dirname "$0")/.."
top=$(pwd)
build=${BUILD:-build}
[[ $build == /* ]] || build=$top/$build
cache=$build/vmtest
timeout=${VMTEST_TIMEOUT:-3600}
[[ $timeout =~ ^[1-9][0-9]*$ ]] || die "VMTEST_TIMEOUT=$timeout is not a number of seconds"

# The modules init.sh loads to reach the host's /; vmtest/modules lists
# the ones guest.sh loads before the suite.
boot_modules=(virtio_pci 9pnet_virtio 9p overlay)
mapfile -t suite_modules < <(sed 's/#.*//; /^[[:space:]]*$/d' vmtest/modules)

# Four virtio-net NICs, wired in pairs through two of qemu's hubs (each a
# repeater: what one NIC of a pair sends, the other receives), so that the
# datapath runs on a real driver (vmtest/test_virtio_nic.sh) with no host
# network in reach. The test finds them by these MAC addresses.
nic_macs=(52:54:00:78:6c:01 52:54:00:78:6c:02 52:54:00:78:6c:03 52:54:00:78:6c:04)
nics=()
for i in 0 1 2 3; do
	nics+=(-netdev "hubport,id=xn$i,hubid=$((i / 2))"
	       -device "virtio-net-pci,netdev=xn$i,mac=${nic_macs[i]}")
done

command -v qemu-system-x86_64 >/dev/null ||
	die "qemu-system-x86_64 not found: apt-get install qemu-system-x86 (make deps does)"
for tool in busybox cpio gzip depmod modprobe dpkg-deb flock readelf timeout; do
	command -v "$tool" >/dev/null || die "$tool not found: make deps installs what vmtest needs"
done
busybox=$(command -v busybox)
# The initramfs has no C library: only a static busybox runs there.
if readelf -l "$busybox" | grep -q INTERP; then
	die "$busybox is dynamically linked: apt-get install busybox-static"
fi
[[ -x $build/xlb ]] || die "nothing built in $build: run make vmtest (it builds first)"

work=
qemu_pid=
tail_pid=
cleanup() {
	if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
		echo "vmtest: stopping the VM" >&2
		kill "$qemu_pid" 2>/dev/null
		wait "$qemu_pid" 2>/dev/null
	fi
	[[ -z $tail_pid ]] || kill "$tail_pid" 2>/dev/null
	[[ -z $work ]] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# kernel_release BZIMAGE: the release string of an x86 boot image, read
# from its setup header ("HdrS" at 0x202; at 0x20e the offset of the
# version string, less 0x200).
kernel_release() {
	local magic off
	magic=$(dd if="$1" bs=1 skip=$((0x202)) count=4 2>/dev/null)
	[[ $magic == HdrS ]] || return 1
	off=$(od -An -tu2 -j $((0x20e)) -N 2 "$1" | tr -d ' ')
	dd if="$1" bs=1 skip=$((off + 0x200)) count=256 2>/dev/null | tr '\0' '\n' | head -n 1 | cut -d ' ' -f 1
}

# collect_modules SRC DST RELEASE NAME...: copy the modules NAME and their
# dependencies from the tree SRC/lib/modules/RELEASE to DST/lib/modules/
# RELEASE and index the copy with depmod. modprobe --show-depends walks
# SRC's modules.dep; built-in ones need no file.
collect_modules() {
	local src=$1 dst=$2 rel=$3 name deps kind path
	shift 3
	local from=$src/lib/modules/$rel to=$dst/lib/modules/$rel
	mkdir -p "$to"
	for name; do
		deps=$(modprobe -C /dev/null -d "$src" -S "$rel" --show-depends "$name" 2>&1) ||
			die "module $name is neither built into $rel nor in $from: $deps"
		while read -r kind path _; do
			[[ $kind == insmod ]] || continue
			mkdir -p "$to/$(dirname "${path#"$from"/}")"
			cp "$path" "$to/${path#"$from"/}"
		done <<<"$deps"
	done
	cp "$from"/modules.order "$from"/modules.builtin* "$to"/ 2>/dev/null || true
	depmod -b "$dst" "$rel"
}

# newest_61: the name of the newest Debian 12 6.1 kernel package (the
# generic flavour: the cloud one has no 9p) the package lists know.
newest_61() {
	apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' 2>/dev/null |
		cut -d ' ' -f 1 | sort -V | tail -n 1
}

# fetch PKG: PKG's .deb into $work/fetch. A stale package list may name a
# version the archive has dropped: then once more after apt-get update.
fetch() {
	local get=(apt-get download -q -o APT::Sandbox::User=root "$1")
	mkdir -p "$work/fetch"
	(cd "$work/fetch" && "${get[@]}" >/dev/null) && return 0
	[[ $(id -u) -eq 0 ]] && apt-get update -q >/dev/null &&
		(cd "$work/fetch" && "${get[@]}" >/dev/null)
}

# debian_kernel: set kernel and moddir to Debian 12's newest 6.1 kernel
# and its modules, from the cache or fetched into it.
debian_kernel() {
	local pkg dir rel stamp t0=$SECONDS
	pkg=$(newest_61)
	if [[ -z $pkg && $(id -u) -eq 0 ]]; then
		apt-get update -q >/dev/null || true
		pkg=$(newest_61)
	fi
	if [[ -z $pkg ]]; then
		pkg=$(find "$cache" -mindepth 2 -maxdepth 2 -name .complete -printf '%h\n' 2>/dev/null |
			xargs -r -n 1 basename | sort -V | tail -n 1)
		[[ -n $pkg ]] || die "no linux-image-6.1.0-*-amd64 in the package lists (apt-get update?)"
		echo "vmtest: the package lists name no 6.1 kernel; using the cached $pkg"
	fi
	dir=$cache/$pkg
	# The cached copy holds the modules listed when it was made.
	stamp=$(printf '%s\n' "${boot_modules[@]}" "${suite_modules[@]}" | md5sum | cut -d ' ' -f 1)
	exec 9>"$cache/.lock"
	flock 9
	if [[ $(cat "$dir/.complete" 2>/dev/null) != "$stamp" ]]; then
		echo "vmtest: fetching $pkg"
		fetch "$pkg" || die "apt-get download $pkg failed"
		dpkg-deb -x "$work"/fetch/*.deb "$work/fetch/root"
		rel=${pkg#linux-image-}
		[[ -f $work/fetch/root/boot/vmlinuz-$rel ]] || die "$pkg holds no boot/vmlinuz-$rel"
		depmod -b "$work/fetch/root" "$rel"
		mkdir "$work/kernel"
		cp "$work/fetch/root/boot/vmlinuz-$rel" "$work/kernel/vmlinuz"
		cp "$work/fetch/root/boot/config-$rel" "$work/kernel/config"
		collect_modules "$work/fetch/root" "$work/kernel" "$rel" \
			"${boot_modules[@]}" "${suite_modules[@]}"
		echo "$stamp" >"$work/kernel/.complete"
		rm -rf "$dir" "$work/fetch"
		mv "$work/kernel" "$dir"
		echo "vmtest: $pkg ready in $((SECONDS - t0)) s (kept in ${dir#"$top"/})"
	fi
	flock -u 9
	kernel=$dir/vmlinuz
	moddir=$dir
}

mkdir -p "$cache"
work=$(mktemp -d "$cache/run.XXXXXX")
kernel= moddir=
if [[ -z $kernel_arg ]]; then
	debian_kernel
else
	kernel=$kernel_arg
fi
release=$(kernel_release "$kernel") || die "$kernel is not an x86 bzImage"

if [[ -n $kernel_arg && -n $modules_arg ]]; then
	[[ -f $modules_arg/lib/modules/$release/modules.dep ]] ||
		die "MODULES=$MODULES has no lib/modules/$release/modules.dep (release of $kernel)"
	moddir=$work/modules
	collect_modules "$modules_arg" "$moddir" "$release" "${boot_modules[@]}" "${suite_modules[@]}"
elif [[ -n $kernel_arg ]]; then
	echo "vmtest: no MODULES=DIR: $release must have built in virtio-pci, 9p, overlayfs" \
		"and what vmtest/modules lists"
fi

# The VM runs a copy of the tree and its build taken now: a rebuild on the
# host while the VM runs would change binaries under running tests (a
# half-written one dies of SIGILL there).
tree=$work/tree
mkdir "$tree"
tar -C "$top" --exclude=./.git --exclude="./${cache#"$top"/}" -cf - . | tar -C "$tree" -xf -
# Tests find the shared captures beside the tree (../shared/pcaps).
[[ ! -d $top/../shared ]] || ln -s "$(realpath "$top/../shared")" "$work/shared"
if [[ $build == "$top"/* ]]; then
	vm_build=$tree/${build#"$top"/}
else
	vm_build=$work/build
	mkdir "$vm_build"
	tar -C "$build" --exclude=./vmtest -cf - . | tar -C "$vm_build" -xf -
fi

# The initramfs: busybox, init.sh, the modules, and the settings init.sh
# and guest.sh read.
sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
initrd=$work/initrd
mkdir -p "$initrd/bin" "$work/out"
cp "$busybox" "$initrd/bin/busybox"
ln -s busybox "$initrd/bin/sh"
cp vmtest/init.sh "$initrd/init"
chmod 0755 "$initrd/init"
[[ -z $moddir ]] || cp -a "$moddir/lib" "$initrd/lib"
{
	echo "export XLB_TOP=$(sq "$tree") BUILD=$(sq "$vm_build")"
	echo "export VMTEST_BOOT_MODULES=$(sq "${boot_modules[*]}")"
	echo "export VMTEST_NICS=$(sq "${nic_macs[*]}")"
	echo "export HOME=/root TERM=dumb LANG=C.UTF-8"
	for v in VMTEST_PATTERN VMTEST_PKTGEN_SECONDS ${!XLB_@}; do
		[[ -z ${!v:-} ]] || echo "export $v=$(sq "${!v}")"
	done
} >"$initrd/vmtest.env"
(cd "$initrd" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

qemu_base=(qemu-system-x86_64 -nodefaults -display none -no-reboot -kernel "$kernel")

# KVM when it boots the kernel quickly; on hosts where nested KVM hangs,
# the probe gives up after a few seconds and the VM runs under TCG.
kvm_works() {
	[[ -r /dev/kvm && -w /dev/kvm ]] || return 1
	timeout -k 1 5 "${qemu_base[@]}" -accel kvm -cpu host -m 256M \
		-serial "file:$work/kvm-probe.log" -append "console=ttyS0 panic=-1" \
		</dev/null >/dev/null 2>&1 || true
	grep -q 'Linux version' "$work/kvm-probe.log" 2>/dev/null
}
case ${VMTEST_KVM:-auto} in
1) accel=(-accel kvm -cpu host) ;;
0) accel=(-accel tcg -cpu max) ;;
auto)
	if kvm_works; then
		accel=(-accel kvm -cpu host)
	else
		echo "vmtest: KVM is unusable here (no /dev/kvm access, or no boot within 5 s): emulating with TCG"
		accel=(-accel tcg -cpu max)
	fi
	;;
*) die "VMTEST_KVM=$VMTEST_KVM: use auto, 0 or 1" ;;
esac

# mitigations=off: under TCG every kernel entry's speculation barriers and
# page-table switches are emulated; syscalls ran 4 times slower with them.
# rcu_expedited: 6.1 waits for an RCU grace period on every user-space
# lookup in a map-in-map (xlb_tables), about 18 ms each here; expedited
# grace periods make xlb's commands 5 times faster in the VM.
cmdline="console=ttyS0 panic=-1 quiet mitigations=off rcupdate.rcu_expedited=1"

echo "vmtest: kernel $release ($kernel), ${accel[1]}, timeout ${timeout} s"
console=$work/console.log
: >"$console"
start=$SECONDS
timeout -k 10 "$timeout" "${qemu_base[@]}" "${accel[@]}" -smp 2 -m 2G \
	-initrd "$work/initrd.gz" \
	-append "$cmdline" \
	-serial "file:$console" \
	-fsdev "local,id=hostroot,path=/,security_model=passthrough,readonly=on,multidevs=remap" \
	-device "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot" \
	-fsdev "local,id=vmtestout,path=$work/out,security_model=passthrough" \
	-device "virtio-9p-pci,fsdev=vmtestout,mount_tag=vmtestout" \
	"${nics[@]}" \
	</dev/null >"$work/qemu.log" 2>&1 &
qemu_pid=$!
# Line by line (sed -u): a log reader sees the tests as they run.
tail -n +1 -f --pid="$qemu_pid" "$console" | sed -u 's/\r$//' &
tail_pid=$!
rc=0
wait "$qemu_pid" || rc=$?
qemu_pid=
wait "$tail_pid" 2>/dev/null || true
tail_pid=
elapsed=$((SECONDS - start))
cp "$console" "$cache/console.log"
[[ ! -f $work/out/suite.log ]] || cp "$work/out/suite.log" "$cache/suite.log"

if [[ $rc -eq 124 || $rc -eq 137 ]]; then
	die "the VM did not finish within ${timeout} s (VMTEST_TIMEOUT): killed it;" \
		"console in ${cache#"$top"/}/console.log"
fi
if [[ -s $work/out/error ]]; then
	die "$(cat "$work/out/error")"
fi
if [[ ! -s $work/out/result ]]; then
	reason=$(tr -d '\r' <"$console" | grep -E '^vmtest: error: |Kernel panic' | tail -n 1 || true)
	reason=${reason#vmtest: error: }
	reason=${reason#\[*\] }
	[[ $rc -eq 0 ]] || reason="${reason:+$reason; }qemu exited with status $rc: $(tail -n 3 "$work/qemu.log")"
	die "the VM stopped without a result after ${elapsed} s${reason:+ ($reason)};" \
		"console in ${cache#"$top"/}/console.log"
fi
echo "vmtest: the VM ran for ${elapsed} s"
result=$(cat "$work/out/result")
echo "$result"
[[ $result =~ ^[0-9]+\ passed,\ 0\ failed$ ]]
