#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Helpers of the loader's shell tests, sourced after lib/lib.sh.
#
# loader_setup NAME: a namespace $NS holding the veth v0 (xlb's; its peer
# v1 sits in a second namespace $PEER), a fresh pin dir $PIN and a scratch
# directory $TMP, all removed at exit. IPv6 is off and nothing has an
# address, so no frame crosses the link unless a test sends one.
loader_setup() {
	tl_bpffs
	tl_netns NS "$1" && tl_netns PEER "$1p" && tl_pin_dir PIN "$1" || return 1
	TMP=$(mktemp -d)
	tl_on_exit "rm -rf $TMP"
	local ns
	for ns in "$NS" "$PEER"; do
		tl_in "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1 || return 1
	done
	ip -n "$NS" link add v0 type veth peer name v1 netns "$PEER" &&
	ip -n "$NS" link set v0 up && ip -n "$PEER" link set v1 up
}

# loader_attached TEST NAME: root, loader_setup NAME, and xlb attached to
# v0 (generic mode, taken off at exit); or FAIL TEST_setup and return 1
# (0 and no setup when not root: the caller has nothing to run).
loader_attached() {
	tl_require_root "$1" || exit 0
	if ! loader_setup "$2"; then
		tl_fail "$1_setup" "cannot create namespaces or a pin dir"
		return 1
	fi
	if ! x attach v0 --mode generic >/dev/null 2>"$TMP/err"; then
		tl_fail "$1_setup" "xlb attach: $(cat "$TMP/err")"
		return 1
	fi
	tl_on_exit "tl_in $NS xdp-loader unload -a v0 >/dev/null 2>&1"
}

# x ARGS...: xlb on the test's instance, in its namespace.
x() { tl_in "$NS" "$XLB" --pin-dir "$PIN" "$@"; }

# expect_error NAME FRAGMENT CMD...: CMD fails with one line on stderr
# that contains FRAGMENT, and nothing on stdout. (FAIL printed otherwise.)
expect_error() {
	local name=$1 fragment=$2 rc; shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [[ $rc -eq 0 ]]; then
		tl_fail "$name" "succeeded: $*"
	elif [[ -s $TMP/out || $(wc -l <"$TMP/err") -ne 1 ]]; then
		tl_fail "$name" "not one line of error: $(cat "$TMP/out" "$TMP/err")"
	elif ! grep -qF -- "$fragment" "$TMP/err"; then
		tl_fail "$name" "'$(cat "$TMP/err")' does not say '$fragment'"
	else
		return 0
	fi
	return 1
}

# instance_dump: the instance in $PIN as a text to compare before and
# after a command: every map of it that is pinned, in one bpftool run, then
# the instance as `xlb -j show` reads it back. xlb_tables holds the ids of
# the inner arrays, so a table swapped, even for an identical one, shows;
# the connection table, whose slots bpftool would print one by one, is
# compared by show's census of it.
# With DUMP_COUNTERS=0 the traffic counters are left out: for a test whose
# namespace carries traffic it does not control (neighbour discovery).
instance_dump() {
	local m counters="xlb_vip_stats xlb_backend_stats xlb_stats"
	[[ ${DUMP_COUNTERS:-1} == 0 ]] && counters=
	for m in xlb_config xlb_vips xlb_tables xlb_backends xlb_vip_filter \
		 xlb_vip_addrs xlb_hc_config xlb_hc_state $counters; do
		[[ -e $PIN/$m ]] && echo "map dump pinned $PIN/$m"
	done >"$TMP/dump.batch"
	bpftool batch file "$TMP/dump.batch" 2>&1
	x -j show | jq -S .
}

# fails_unchanged NAME FRAGMENT CMD...: CMD fails with one line naming
# FRAGMENT (expect_error), and the instance is as it was (instance_dump):
# PASS or FAIL NAME.
fails_unchanged() {
	local name=$1 fragment=$2; shift 2
	instance_dump >"$TMP/before"
	expect_error "$name" "$fragment" "$@" || return
	instance_dump >"$TMP/after"
	if cmp -s "$TMP/before" "$TMP/after"; then
		tl_pass "$name"
	else
		tl_fail "$name" "maps changed: $(diff "$TMP/before" "$TMP/after" | head -5)"
	fi
}
