#!/usr/bin/env bash
# Helpers for shell tests (tests/test_*.sh), sourced. Each case prints
#   PASS name | FAIL name | SKIP name: reason
# Every namespace, link and pin directory made through these helpers is
# removed on exit, also when the test fails or is interrupted.

XLB_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
[[ $BUILD == /* ]] || BUILD=$XLB_TOP/$BUILD
XLB=$BUILD/xlb

# A short tag unique to this run: namespace and link names stay within 15
# characters and two runs never collide.
TL_TAG=$(printf '%x' $(( ($$ ^ RANDOM) & 0xffff )))
TL_FAILED=0
_tl_netns=()
_tl_pins=()
_tl_cleanups=()

tl_cleanup() {
	local i
	for ((i = ${#_tl_cleanups[@]} - 1; i >= 0; i--)); do
		eval "${_tl_cleanups[i]}" >/dev/null 2>&1
	done
	for ns in "${_tl_netns[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	for d in "${_tl_pins[@]}"; do
		rm -rf "$d" 2>/dev/null
	done
}
trap tl_cleanup EXIT
trap 'exit 130' INT TERM

# tl_on_exit CMD: run CMD at cleanup (in reverse order of registration).
tl_on_exit() { _tl_cleanups+=("$*"); }

tl_pass() { echo "PASS $1"; }
tl_fail() { echo "FAIL $1${2:+: $2}"; TL_FAILED=1; }
tl_skip() { echo "SKIP $1: $2"; }
# tl_skip_env NAME REASON: a kernel feature is missing; under CI (root, a
# BPF kernel with every module the suite needs) that is a failure.
tl_skip_env() {
	if [[ -n ${XLB_CI:-} ]]; then
		tl_fail "$1" "$2, and CI must not skip"
	else
		tl_skip "$1" "$2"
	fi
}

# tl_check NAME CMD...: PASS when CMD succeeds, FAIL otherwise.
tl_check() {
	local name=$1; shift
	if "$@"; then tl_pass "$name"; else tl_fail "$name"; fi
}

# tl_require_root NAME: skip (fail under CI) when not root. Returns 1 when
# the caller should stop.
tl_require_root() {
	[[ $(id -u) -eq 0 ]] && return 0
	if [[ -n ${XLB_CI:-} ]]; then
		tl_fail "$1" "needs root, and CI must not skip"
	else
		tl_skip "$1" "needs root"
	fi
	return 1
}

# tl_netns VAR NAME: create namespace xlbt<tag>-NAME, set VAR to its name.
# (Not called in $(...): the cleanup list must be the test shell's own.)
tl_netns() {
	local ns="xlbt$TL_TAG-$2"
	ip netns add "$ns" || return 1
	_tl_netns+=("$ns")
	ip -n "$ns" link set lo up
	printf -v "$1" '%s' "$ns"
}

# tl_in NS CMD...: run CMD in the network namespace only, keeping the
# host's mount namespace (and so its bpffs); `ip netns exec` would not.
tl_in() {
	local ns=$1; shift
	nsenter --net="/run/netns/$ns" "$@"
}

# tl_pin_dir VAR NAME: a fresh pin directory on bpffs for one xlb
# instance, removed at exit; VAR is set to its path.
tl_pin_dir() {
	local d="/sys/fs/bpf/xlbt-$TL_TAG-$2"
	mkdir -p "$d" || return 1
	_tl_pins+=("$d")
	printf -v "$1" '%s' "$d"
}

tl_bpffs() {
	mount | grep -q ' /sys/fs/bpf type bpf' || mount -t bpf bpf /sys/fs/bpf
}
