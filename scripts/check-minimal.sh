#!/usr/bin/env bash
# Run `make test` on a minimal Debian 12: a debootstrap --variant=minbase
# bookworm root with only git and make added, in a chroot of this machine.
# It checks that scripts/deps.sh installs everything the suite needs and
# that nothing assumes a mounted bpffs.
#
# scripts/check-minimal.sh [--root DIR] [--reuse] [--rev REV]
#                          [--patch FILE]... [--pcaps DIR|none] [--mirror URL]
#                          [--lines N] [--verbose]
#
#   --root DIR    where the root lives (default /var/tmp/xlb-minbase)
#   --reuse       keep DIR's base root and package cache from an earlier run
#                 (default: remove DIR, debootstrap again)
#   --rev REV     the commit to test (default HEAD)
#   --patch FILE  apply FILE (git diff output) to the clone before make test,
#                 e.g. to try uncommitted changes: git diff > FILE
#   --pcaps DIR   the captures some tests replay, bound read-only where the
#                 clone looks for them (default $XLB_PCAP_DIR, else
#                 ../shared/pcaps beside this tree when present; none: skip
#                 those tests)
#   --mirror URL  the Debian mirror (default http://deb.debian.org/debian)
#   --lines N     lines of make test's output to print at the end (default 40)
#   --verbose     print make test's output as it runs
#
# Only committed files are tested: the tree is a git clone of REV, not a
# copy of the work tree (plus what --patch gives). Run as root; debootstrap
# is installed with apt-get when missing.
#
# DIR/base is the minbase root with git and make. Each run starts from it
# unchanged: an overlay (DIR/upper, emptied at the start of each run) takes
# the run's writes; the clone is /root/xlb. Inside, /proc, a fresh sysfs
# (without the host's bpffs: /sys/fs/bpf is an empty directory, as on a
# machine that never mounted it) with the host's cgroups, devtmpfs on
# /dev, a new devpts, and tmpfs on /run and /dev/shm are mounted, with the
# host's resolv.conf so that apt-get works. The chroot shares the host's
# kernel and network stack; tests make their own network namespaces.
# Everything is mounted in a private mount namespace (unshare --mount) and
# unmounted on exit, also on failure or interrupt; processes left in the
# chroot are ended. make test's output is kept in DIR/make-test.log; a
# lock (DIR.lock) keeps two checks off the same root. XLB_CI is passed on.
#
# The exit status is make test's (1 when the root could not be built).
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

root=/var/tmp/xlb-minbase
patches=() pcaps=${XLB_PCAP_DIR:-}
reuse=0 rev=HEAD mirror=http://deb.debian.org/debian lines=40 verbose=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--root) root=${2:?--root needs a directory}; shift ;;
	--root=*) root=${1#*=} ;;
	--reuse) reuse=1 ;;
	--rev) rev=${2:?--rev needs a commit}; shift ;;
	--rev=*) rev=${1#*=} ;;
	--patch) patches+=("$(realpath "${2:?--patch needs a file}")"); shift ;;
	--patch=*) patches+=("$(realpath "${1#*=}")") ;;
	--pcaps) pcaps=${2?--pcaps needs a directory}; shift ;;
	--pcaps=*) pcaps=${1#*=} ;;
	--mirror) mirror=${2:?--mirror needs a URL}; shift ;;
	--mirror=*) mirror=${1#*=} ;;
	--lines) lines=${2:?--lines needs a number}; shift ;;
	--lines=*) lines=${1#*=} ;;
	-v | --verbose) verbose=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "check-minimal: unknown argument: $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

say() { printf 'check-minimal: %s\n' "$*"; }
die() { printf 'check-minimal: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root (debootstrap, chroot and mounts need it)"
[[ $lines =~ ^[0-9]+$ ]] || die "--lines needs a number"
for p in "${patches[@]}"; do [[ -f $p ]] || die "no patch $p"; done
src=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$src" rev-parse --verify "$rev^{commit}") || die "no commit $rev in $src"
[[ $root == /* ]] || root=$PWD/$root
[[ $root != / ]] || die "--root / would remove /"
[[ -n $pcaps || ! -d $src/../shared/pcaps ]] || pcaps=$src/../shared/pcaps
[[ $pcaps == none ]] && pcaps=
[[ -z $pcaps ]] || pcaps=$(realpath "$pcaps")
[[ -z $pcaps || -d $pcaps ]] || die "no directory $pcaps"

# Every mount below happens in a private mount namespace: none reaches the
# host, and all go when this script ends, whatever ends it.
if [[ -z ${XLB_CHECK_MINIMAL_NS:-} ]]; then
	export XLB_CHECK_MINIMAL_NS=1
	args=(--root "$root" --rev "$commit" --mirror "$mirror" --lines "$lines"
		--pcaps "${pcaps:-none}")
	[[ $reuse -eq 0 ]] || args+=(--reuse)
	[[ $verbose -eq 0 ]] || args+=(--verbose)
	for p in "${patches[@]}"; do args+=(--patch "$p"); done
	exec unshare --mount --propagation private -- bash "$(realpath "$0")" "${args[@]}"
fi

base=$root/base upper=$root/upper work=$root/work merged=$root/merged
cache=$root/apt-archives log=$root/make-test.log
mounts=()

# One check at a time on a root (before the trap: a refused run must not
# clean up after the one that holds the lock).
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock -n 9 || die "another check is using $root"

# Processes still running in the chroot (daemons a test left behind) would
# keep its mounts busy: end them, by pid, then unmount in reverse order.
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	local d i
	for d in /proc/[0-9]*; do
		case $(readlink "$d/root" 2>/dev/null) in
		"$merged" | "$merged"/*) kill -9 "${d#/proc/}" 2>/dev/null ;;
		esac
	done
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
		umount -l "${mounts[i]}" 2>/dev/null || true
	done
	mounts=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# mnt ARGS... TARGET: mount, and remember TARGET for cleanup.
mnt() { mount "$@"; mounts+=("${!#}"); }

start=$SECONDS
elapsed() { local s=$((SECONDS - start)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# The base root: minbase, git and make, apt sources for bookworm, its
# updates and security. Built in base.new, renamed when complete.
build_base() {
	if ! command -v debootstrap >/dev/null; then
		say "installing debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null
	fi
	local new=$root/base.new
	rm -rf "$new"
	mkdir -p "$new"
	say "debootstrap --variant=minbase bookworm $new ($mirror)"
	debootstrap --variant=minbase bookworm "$new" "$mirror" >"$root/debootstrap.log" 2>&1 ||
		die "debootstrap failed; see $root/debootstrap.log"
	local security=${mirror%/debian}/debian-security
	[[ $mirror == */debian ]] || security=http://deb.debian.org/debian-security
	cat >"$new/etc/apt/sources.list" <<-EOF
		deb $mirror bookworm main
		deb $mirror bookworm-updates main
		deb $security bookworm-security main
	EOF
	cp /etc/resolv.conf "$new/etc/resolv.conf"
	mnt -t proc proc "$new/proc"
	say "adding git and make"
	chroot "$new" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
		sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends git make && apt-get clean' \
		>>"$root/debootstrap.log" 2>&1 || die "installing git and make failed; see $root/debootstrap.log"
	umount "$new/proc"
	mounts=()
	rm -f "$new/etc/resolv.conf"
	mv "$new" "$base"
}

if [[ $reuse -eq 0 ]]; then
	rm -rf --one-file-system "$root"
fi
mkdir -p "$root"
if [[ -d $base ]]; then
	say "reusing $base"
else
	build_base
	say "base root ready ($(elapsed), $(du -sh "$base" | cut -f1))"
fi

# A fresh overlay on the base for this run.
rm -rf --one-file-system "$upper" "$work"
mkdir -p "$upper" "$work" "$merged" "$cache"
mnt -t overlay overlay -o "lowerdir=$base,upperdir=$upper,workdir=$work" "$merged"

mnt -t proc proc "$merged/proc"
# A new sysfs mount shows none of the host's mounts below /sys: no bpffs
# on /sys/fs/bpf, no debugfs. The cgroup hierarchies are the host's, as a
# machine's init would mount them (a test limits memory with one).
mnt -t sysfs sysfs "$merged/sys"
if mountpoint -q /sys/fs/cgroup; then
	mnt --rbind /sys/fs/cgroup "$merged/sys/fs/cgroup"
fi
mnt -t devtmpfs devtmpfs "$merged/dev"
mkdir -p "$merged/dev/pts" "$merged/dev/shm"
mnt -t devpts devpts -o newinstance,ptmxmode=0666,mode=0620 "$merged/dev/pts"
mnt --bind "$merged/dev/pts/ptmx" "$merged/dev/ptmx"
mnt -t tmpfs tmpfs -o mode=1777 "$merged/dev/shm"
mnt -t tmpfs tmpfs -o mode=0755 "$merged/run"
# Kept across runs with --reuse: downloads only, the packages are still
# installed by scripts/deps.sh each run.
mnt --bind "$cache" "$merged/var/cache/apt/archives"
if [[ -d /lib/modules/$(uname -r) ]]; then
	mkdir -p "$merged/lib/modules/$(uname -r)"
	mnt --bind -o ro "/lib/modules/$(uname -r)" "$merged/lib/modules/$(uname -r)"
fi
rm -f "$merged/etc/resolv.conf"
cp /etc/resolv.conf "$merged/etc/resolv.conf"
if mountpoint -q "$merged/sys/fs/bpf" || grep -q " $merged/sys/fs/bpf " /proc/self/mounts; then
	die "bpffs is mounted in the chroot; the check would not be real"
fi

say "cloning $commit"
git clone -q --no-local --no-checkout "$src" "$merged/root/xlb"
git -C "$merged/root/xlb" -c advice.detachedHead=false checkout -q --detach "$commit"
for p in "${patches[@]}"; do
	[[ -s $p ]] || { say "$p is empty"; continue; }
	say "applying $p"
	git -C "$merged/root/xlb" apply "$p" || die "$p does not apply to $commit"
done

# Where the tree looks for captures by default: ../shared/pcaps.
if [[ -n $pcaps ]]; then
	mkdir -p "$merged/root/shared/pcaps"
	mnt --bind -o ro "$pcaps" "$merged/root/shared/pcaps"
fi

say "make test in $merged (log: $log)"
in_chroot=(chroot "$merged" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}"
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	${XLB_CI:+XLB_CI=$XLB_CI} sh -c 'cd /root/xlb && make test')
# In the background, so that a signal ends the wait and the cleanup runs.
set +e
if [[ $verbose -eq 1 ]]; then
	"${in_chroot[@]}" > >(tee "$log") 2>&1 &
else
	"${in_chroot[@]}" >"$log" 2>&1 &
fi
wait $!
rc=$?
set -e

echo
[[ $verbose -eq 1 ]] || tail -n "$lines" "$log"
echo
say "commit $commit, make test exited $rc after $(elapsed);" \
	"disk: $(du -sh --one-file-system "$root" 2>/dev/null | cut -f1) in $root"
exit "$rc"
