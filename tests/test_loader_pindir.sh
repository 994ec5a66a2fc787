#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Without --pin-dir, xlb finds the instance wherever `ip link ... xdp obj`
# pinned it. iproute2 pins in /sys/fs/bpf/tc/globals when it made
# /sys/fs/bpf/xdp a symlink to tc/ itself, but in /sys/fs/bpf/xdp/globals
# when libxdp made /sys/fs/bpf/xdp a directory first:
#  - iproute2 first: the instance in tc/globals is found;
#  - libxdp first: the instance in xdp/globals is found by plain `xlb show`,
#    which names it on its first line (and in -j, which `xlb apply` takes
#    back); scripts/bird/xlb-health.sh finds it too; an explicit --pin-dir
#    is taken as given;
#  - a new instance made by `xlb attach` goes where `ip link` finds it
#    afterwards: attached again by iproute2, it keeps its configuration;
#  - instances in both: every instance command refuses with one line
#    naming both, commands that need none and every help still work.
# Each case runs on a bpffs of its own mounted on /sys/fs/bpf in a private
# mount namespace: no real instance is seen or touched, and every pin goes
# with the namespace.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

tl_require_root pindir_default || exit 0
if [[ -z ${XLB_PINDIR_PRIVATE:-} ]]; then
	exec unshare --mount --propagation private \
		env XLB_PINDIR_PRIVATE=1 "$0" "$@"
fi

TC=/sys/fs/bpf/tc/globals
XDP=/sys/fs/bpf/xdp/globals

tl_netns NS pd || { tl_fail pindir_setup "cannot create a namespace"; exit 1; }
TMP=$(mktemp -d)
tl_on_exit "rm -rf $TMP"
tl_in "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$NS" link add v0 type veth peer name v1 &&
ip -n "$NS" link set v0 up && ip -n "$NS" link set v1 up ||
	{ tl_fail pindir_setup "cannot create the veth pair"; exit 1; }

# x ARGS...: xlb in the namespace, without --pin-dir unless given.
x() { tl_in "$NS" "$XLB" "$@"; }
iplink_attach() { tl_in "$NS" ip link set dev "$1" xdpgeneric obj "$BUILD/$2" sec xdp; }
detach_all() { ip -n "$NS" link set dev v0 xdpgeneric off; ip -n "$NS" link set dev v1 xdpgeneric off; }

# fresh_bpffs CASE: detach everything and mount an empty bpffs over
# /sys/fs/bpf (on top of the last one, so that the host's never shows).
fresh_bpffs() {
	detach_all 2>/dev/null
	mount -t bpf bpf /sys/fs/bpf &&
		[[ -z $(ls /sys/fs/bpf | grep -v '\.debug$') ]] && return 0
	tl_fail "$1" "cannot mount a fresh bpffs on /sys/fs/bpf"
	exit 1
}

# uses DEV DIR: the XDP program on DEV has DIR's xlb_config among its maps.
uses() {
	local prog config
	prog=$(ip -n "$NS" -j link show dev "$1" | jq -r '.[0].xdp.prog.id // empty')
	config=$(bpftool -j map show pinned "$2/xlb_config" 2>/dev/null | jq -r .id)
	[[ -n $prog && -n $config ]] &&
		bpftool -j prog show id "$prog" | jq -e --argjson m "$config" '.map_ids | index($m)' >/dev/null
}
no_maps_in() { ! ls "$1" 2>/dev/null | grep -q '^xlb_'; }

# iproute2 first: it makes /sys/fs/bpf/xdp a symlink to tc/.
fresh_bpffs iproute2_first
iplink_attach v0 xlb.bpf.o
tl_check iproute2_first_pins_in_tc_globals \
	test -L /sys/fs/bpf/xdp -a -e "$TC/xlb_config"
x vip add 192.0.2.10:80/tcp
tl_check iproute2_first_found_in_tc_globals \
	test "$(x show | head -n 1)" == "pin-dir $TC" -a "$(x -j show | jq -r .pin_dir)" == "$TC"
tl_check iproute2_first_configured_by_plain_xlb uses v0 "$TC"

# libxdp first: /sys/fs/bpf/xdp is a directory, iproute2 pins under it.
fresh_bpffs libxdp_first
mkdir /sys/fs/bpf/xdp
iplink_attach v0 xlb.bpf.o
tl_check libxdp_first_pins_in_xdp_globals \
	test -e "$XDP/xlb_config" -a ! -e "$TC/xlb_config"
x config set src4 198.51.100.2 &&
x vip add 192.0.2.10:80/tcp &&
x backend add 192.0.2.10:80/tcp 198.51.100.11
tl_check libxdp_first_show_names_xdp_globals \
	test "$(x show | head -n 1)" == "pin-dir $XDP" -a "$(x -j show | jq -r .pin_dir)" == "$XDP"
tl_check libxdp_first_configured_by_plain_xlb uses v0 "$XDP"
x -j show >"$TMP/before"
tl_check show_json_is_applied_back sh -c "$XLB -j show | nsenter --net=/run/netns/$NS $XLB apply -"
x -j show >"$TMP/after"
tl_check show_json_applied_back_changes_nothing cmp -s "$TMP/before" "$TMP/after"
expect_error explicit_pin_dir_is_taken_as_given "no xlb instance in $TC" \
	x --pin-dir "$TC" show && tl_pass explicit_pin_dir_is_taken_as_given
if ! command -v bpftool >/dev/null; then
	tl_skip_env bird_health_finds_xdp_globals "no bpftool"
else
	table=$((100 + RANDOM % 100))
	tl_in "$NS" "$XLB_TOP/scripts/bird/xlb-health.sh" --xlb "$XLB" --table "$table" --once v0 >"$TMP/health" 2>&1
	tl_check bird_health_finds_xdp_globals \
		test "$(ip -n "$NS" -j route show table "$table" | jq -r '.[] | .type + " " + .dst')" == "blackhole 192.0.2.10"
fi

# xlb attach on a fresh bpffs: libxdp makes /sys/fs/bpf/xdp a directory, so
# the new instance goes to xdp/globals, where `ip link` pins afterwards.
fresh_bpffs xlb_attach_first
x attach v0 --mode generic >/dev/null
tl_check xlb_attach_first_pins_in_xdp_globals \
	test -d /sys/fs/bpf/xdp -a ! -L /sys/fs/bpf/xdp -a -e "$XDP/xlb_config"
x vip add 192.0.2.10:80/tcp
x detach v0
iplink_attach v0 xlb.bpf.o
tl_check iproute2_reattach_keeps_the_configuration \
	test "$(x -j show | jq -r '.vips[0].vip')" == 192.0.2.10:80/tcp
tl_check iproute2_reattach_uses_the_same_maps uses v0 "$XDP"
tl_check iproute2_reattach_makes_no_second_instance no_maps_in "$TC"

# xlb attach where iproute2 made the symlink (for another program): the
# instance goes to tc/globals, one directory with xdp/globals.
fresh_bpffs xlb_attach_after_iproute2
iplink_attach v1 pass.bpf.o
x attach v0 --mode generic >/dev/null
tl_check xlb_attach_after_iproute2_pins_in_tc_globals \
	test -L /sys/fs/bpf/xdp -a -e "$TC/xlb_config"
tl_check xlb_attach_after_iproute2_found test "$(x -j show | jq -r .pin_dir)" == "$TC"

# Two instances, one in each: xlb cannot choose.
fresh_bpffs both
mkdir /sys/fs/bpf/xdp
iplink_attach v0 xlb.bpf.o
x --pin-dir "$TC" attach v1 --mode generic >/dev/null
expect_error both_refused_naming_both "both $TC and $XDP" x show &&
	expect_error both_refused_naming_both "both $TC and $XDP" x vip add 192.0.2.20:80/tcp &&
	tl_pass both_refused_naming_both
tl_check both_each_reached_with_pin_dir \
	test "$(x --pin-dir "$XDP" -j show | jq -r .pin_dir)" == "$XDP" -a \
	     "$(x --pin-dir "$TC" -j show | jq -r .pin_dir)" == "$TC"
tl_check both_offline_commands_still_work \
	sh -c "$XLB version >/dev/null && $XLB table a b c --table-size 7 >/dev/null"
# help_works WORDS...: a usage printed, nothing refused.
help_works() {
	x "$@" >"$TMP/help" 2>&1 && grep -qi '^usage' "$TMP/help" ||
		{ echo "xlb $*: $(head -n 1 "$TMP/help")"; return 1; }
}
every_help_works() {
	local o
	for o in show stats attach detach apply vip backend config health; do
		help_works "$o" help && help_works "$o" -h || return 1
	done
	help_works vip add -h && help_works vip add help && help_works show --help
}
tl_check both_help_still_works every_help_works

detach_all
exit "$TL_FAILED"
