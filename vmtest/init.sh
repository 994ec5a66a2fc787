#!/bin/sh
# /init of the vmtest VM: busybox, in the initramfs vmtest/run.sh builds.
#
# It loads the boot modules, mounts the host's / (virtio-9p, read-only) as
# the lower layer of an overlay whose upper layer is a tmpfs, so that the
# suite may write anywhere while the host's files stay untouched, enters it
# with chroot and runs vmtest/guest.sh there. Then it powers the VM off.
# A line "vmtest: error: ..." is what the host reports when no result comes.
/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin /proc /sys /dev
/bin/busybox --install -s
export PATH=/sbin:/bin:/usr/sbin:/usr/bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

stop() {
	sync
	poweroff -f
	# Not reached; if it were, PID 1 exiting panics the kernel, and
	# panic=-1 with qemu's -no-reboot ends the VM as well.
	exit 1
}
error() {
	echo "vmtest: error: $*"
	stop
}

# Written by vmtest/run.sh: XLB_TOP, BUILD, VMTEST_BOOT_MODULES, and the
# variables passed through to the suite.
. /vmtest.env

rel=$(uname -r)
if [ -d "/lib/modules/$rel" ]; then
	for m in $VMTEST_BOOT_MODULES; do
		modprobe "$m" || error "cannot load module $m"
	done
fi

mkdir -p /host /rw /newroot
# msize: 9p's default 8 KiB messages make every binary load crawl under TCG.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /host ||
	error "cannot mount the host's / over virtio-9p: kernel $rel needs" \
		"virtio-pci, 9pnet_virtio and 9p (built in, or modules from MODULES=dir)"
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir /rw/upper /rw/work
mount -t overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	error "cannot mount an overlay on the host's /: kernel $rel needs overlayfs"

# The host's mounts below / show through 9p as the host's own; hide them.
cd /newroot || error "no /newroot"
mount -t proc proc proc
mount -t sysfs sysfs sys
mount -t devtmpfs devtmpfs dev
mkdir -p dev/pts dev/shm
# devtmpfs has no fd links; bash's <(...) needs /dev/fd.
ln -s /proc/self/fd dev/fd
ln -s /proc/self/fd/0 dev/stdin
ln -s /proc/self/fd/1 dev/stdout
ln -s /proc/self/fd/2 dev/stderr
mount -t devpts devpts dev/pts
mount -t tmpfs tmpfs dev/shm
# /tmp and /run start empty, as on a booted machine; the tree under test
# or its build may live below one of them, so keep those visible.
kept=
for d in "$XLB_TOP" "$BUILD"; do
	case $d in
	/tmp/* | /run/*)
		mkdir -p "/kept$d"
		mount --bind "/newroot$d" "/kept$d"
		kept="$kept $d"
		;;
	esac
done
mount -t tmpfs tmpfs tmp
mount -t tmpfs -o mode=0755 tmpfs run
for d in $kept; do
	mkdir -p "/newroot$d"
	mount --bind "/kept$d" "/newroot$d"
done
mount -t bpf bpf sys/fs/bpf || error "cannot mount bpffs: kernel $rel lacks BPF"
mount -t cgroup2 cgroup2 sys/fs/cgroup
mount -t debugfs debugfs sys/kernel/debug
mount -t tracefs tracefs sys/kernel/tracing
if [ -d "/lib/modules/$rel" ]; then
	mkdir -p lib/modules
	mount --bind /lib/modules lib/modules
fi
mkdir -p vmtest-out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 vmtestout vmtest-out ||
	error "cannot mount the result share"

chroot /newroot /bin/bash "$XLB_TOP/vmtest/guest.sh" ||
	echo "vmtest: vmtest/guest.sh exited with status $?"
umount vmtest-out
stop
