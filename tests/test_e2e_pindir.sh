#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end, two xlb instances side by side: two balancers, each attached
# with `xlb attach` and its maps in a pin directory of its own (--pin-dir),
# each with its own VIPs over its own backends (lb1: b1 b2, lb2: b3 b4).
#  - each instance shows only its own configuration;
#  - each VIP's connections reach only its own balancer's backends;
#  - changing one instance (a backend removed, another added) leaves the
#    other's configuration, counters and connections as they were.
# And the topology with TOPO_PIN=default (as the demo runs it), on a bpffs
# of its own mounted on /sys/fs/bpf in a private mount namespace, both as
# on a fresh machine and where libxdp made /sys/fs/bpf/xdp a directory:
#  - xlb's maps are pinned where `ip link` pins them (tc/globals, or
#    xdp/globals), topo_xlb reaches them there, plain `xlb` finds them too,
#    and connections are balanced;
#  - topo_down leaves no xlb pin behind in either directory;
#  - xlb maps already pinned in either directory: topo_up refuses, naming
#    them, and leaves them alone.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

N=$(e2e_count_for 400 100)

# default_pins LAYOUT: TOPO_PIN=default on a fresh bpffs, where LAYOUT
# (fresh or xdp_dir) says what /sys/fs/bpf/xdp is before the run.
default_pins() {
	local name=default_pins_$1 dir left
	mount -t bpf bpf /sys/fs/bpf || { tl_fail "$name" "cannot mount a bpffs"; return 1; }
	dir=/sys/fs/bpf/tc/globals
	[[ $1 == xdp_dir ]] && mkdir /sys/fs/bpf/xdp && dir=/sys/fs/bpf/xdp/globals
	if ! e2e_up "$name" || ! e2e_config "$name" 1 1 2; then
		tl_fail "${name}_configured" "the topology's xlb was not attached and configured"
		topo_down
		umount /sys/fs/bpf
		return 1
	fi
	tl_check "${name}_pinned_where_ip_link_pins" \
		test "$(topo_pin_dir 1)" == "$dir" -a -e "$dir/xlb_config"
	tl_check "${name}_topo_xlb_reaches_them" \
		test "$(topo_xlb 1 -j show | jq -r .pin_dir)" == "$dir"
	tl_check "${name}_plain_xlb_finds_them" \
		test "$(topo_in "${TOPO_NS_LB[1]}" "$XLB" -j show | jq -r .pin_dir)" == "$dir"
	traffic_client 1 conns "${TOPO_VIP4[1]}" "$TOPO_PORT" -n "$N" -q >"$E2E_TMP/$1"
	tl_check "${name}_connections_balanced" \
		test "$(traffic_total "$E2E_TMP/$1" ok)" -eq "$N" -a \
		     "$(traffic_count "$E2E_TMP/$1" | awk '{ print $1 }' | paste -sd ' ')" == "b1 b2"
	topo_down
	left=$(find /sys/fs/bpf/tc/globals/ /sys/fs/bpf/xdp/globals/ -name 'xlb_*' 2>/dev/null)
	if [[ -z $left ]]; then
		tl_pass "${name}_nothing_left_pinned"
	else
		tl_fail "${name}_nothing_left_pinned" "$(tr '\n' ' ' <<<"$left")"
	fi
	umount /sys/fs/bpf
}

# default_pins_refused WHERE: an xlb map pinned in /sys/fs/bpf/WHERE
# (tc/globals or xdp/globals, xdp/ being a directory) stops topo_up.
default_pins_refused() {
	local name=default_pins_refused_in_${1%%/*}
	if ! mount -t bpf bpf /sys/fs/bpf ||
	   ! mkdir -p /sys/fs/bpf/xdp/globals /sys/fs/bpf/tc/globals ||
	   ! bpftool map create "/sys/fs/bpf/$1/xlb_config" type array key 4 value 4 \
		entries 1 name xlb_config; then
		tl_fail "$name" "cannot pin a map"
		return 1
	fi
	if topo_up >"$E2E_TMP/refused" 2>&1; then
		tl_fail "$name" "topo_up started"
	elif ! grep -qF "/sys/fs/bpf/$1/xlb_config" "$E2E_TMP/refused"; then
		tl_fail "$name" "the error does not name the pin: $(cat "$E2E_TMP/refused")"
	elif ip netns list | grep -q "^$TOPO_PREFIX$TOPO_TAG-"; then
		tl_fail "$name" "namespaces made"
	else
		tl_check "$name" test -e "/sys/fs/bpf/$1/xlb_config"
	fi
	topo_down
	umount /sys/fs/bpf
}

if [[ -n ${XLB_E2E_DEFAULT_PINS:-} ]]; then
	TOPO_PIN=default TOPO_BALANCERS=1 TOPO_BACKENDS=2
	default_pins fresh
	default_pins xdp_dir
	if command -v bpftool >/dev/null; then
		default_pins_refused tc/globals
		default_pins_refused xdp/globals
	else
		tl_skip_env default_pins_refused "no bpftool"
	fi
	exit "$TL_FAILED"
fi
tl_require_root pindir_topology || exit 0
unshare --mount --propagation private env XLB_E2E_DEFAULT_PINS=1 "$0" || TL_FAILED=1
TOPO_BALANCERS=2
TOPO_BACKENDS=4

e2e_up pindir_topology || exit 1
tl_bpffs
tl_pin_dir pin1 lb1 && tl_pin_dir pin2 lb2 || { tl_fail pindir_dirs "no pin directories"; exit 1; }
pins=("" "$pin1" "$pin2")

# xlbp CASE J ARGS...: xlb on balancer J with its own --pin-dir.
xlbp() {
	local name=$1 j=$2 out; shift 2
	if ! out=$(topo_in "${TOPO_NS_LB[j]}" "$XLB" --pin-dir "${pins[j]}" "$@" 2>&1); then
		tl_fail "$name" "lb$j: xlb $*: $out"
		return 1
	fi
	[[ -z $out ]] || printf '%s\n' "$out"
}

for j in 1 2; do
	xlbp pindir_attach $j attach eth0 >/dev/null || exit 1
	xlbp pindir_config $j config set src4 "${TOPO_LB4[j]}" src6 "${TOPO_LB6[j]}" || exit 1
	for v in "${TOPO_VIP4[j]}:$TOPO_PORT/tcp" "[${TOPO_VIP6[j]}]:$TOPO_PORT/tcp"; do
		xlbp pindir_config $j vip add "$v" || exit 1
		for k in $((2 * j - 1)) $((2 * j)); do
			xlbp pindir_config $j backend add "$v" "$(traffic_be_addr "$v" $k)" || exit 1
		done
	done
done

# vips_of J: the VIPs instance J shows.
vips_of() { xlbp "pindir_show_lb$1" "$1" -j show | jq -r '[.vips[].vip] | sort | join(" ")'; }
v1=$(vips_of 1) v2=$(vips_of 2)
echo "  lb1 shows: $v1"
echo "  lb2 shows: $v2"
tl_check pindir_each_shows_own_config test \
	"$v1" == "${TOPO_VIP4[1]}:$TOPO_PORT/tcp [${TOPO_VIP6[1]}]:$TOPO_PORT/tcp" -a \
	"$v2" == "${TOPO_VIP4[2]}:$TOPO_PORT/tcp [${TOPO_VIP6[2]}]:$TOPO_PORT/tcp"

# only_on CASE FILE B...: every connection completed, on the backends B
# alone, each of which took some.
only_on() {
	local name=$1 f=$2 b; shift 2
	echo "  $name: $(traffic_count "$f" | tr '\n' ' ')($(traffic_total "$f" ok) of $N)"
	[[ $(traffic_total "$f" ok) -eq $N ]] || { tl_fail "$name" "not all completed"; return; }
	[[ $(traffic_count "$f" | wc -l) -eq $# ]] || { tl_fail "$name" "other backends took connections"; return; }
	for b in "$@"; do
		traffic_count "$f" | grep -q "^$b " || { tl_fail "$name" "$b took none"; return; }
	done
	tl_pass "$name"
}

traffic_client 1 conns "${TOPO_VIP4[1]}" "$TOPO_PORT" -n $N -q >"$E2E_TMP/a4"
traffic_client 2 conns "${TOPO_VIP6[1]}" "$TOPO_PORT" -n $N -q >"$E2E_TMP/a6"
traffic_client 1 conns "${TOPO_VIP4[2]}" "$TOPO_PORT" -n $N -q >"$E2E_TMP/b4"
traffic_client 2 conns "${TOPO_VIP6[2]}" "$TOPO_PORT" -n $N -q >"$E2E_TMP/b6"
only_on pindir_lb1_ipv4_on_its_backends "$E2E_TMP/a4" b1 b2
only_on pindir_lb1_ipv6_on_its_backends "$E2E_TMP/a6" b1 b2
only_on pindir_lb2_ipv4_on_its_backends "$E2E_TMP/b4" b3 b4
only_on pindir_lb2_ipv6_on_its_backends "$E2E_TMP/b6" b3 b4

# Change lb2 alone: b3 out, b1 in.
# The configuration less the connection table's census.
config1() { xlbp pindir_show 1 -j show | jq -S 'del(.vips[].backends[].flows)'; }
show1=$(config1)
stats1=$(xlbp pindir_stats 1 -j stats | jq -c '.counters.forward')
for v in "${TOPO_VIP4[2]}:$TOPO_PORT/tcp" "[${TOPO_VIP6[2]}]:$TOPO_PORT/tcp"; do
	xlbp pindir_change 2 backend del "$v" "$(traffic_be_addr "$v" 3)" &&
	xlbp pindir_change 2 backend add "$v" "$(traffic_be_addr "$v" 1)" || exit 1
done
traffic_client 1 conns "${TOPO_VIP4[2]}" "$TOPO_PORT" -n $N -q >"$E2E_TMP/c4"
only_on pindir_lb2_changed "$E2E_TMP/c4" b1 b4
tl_check pindir_lb1_config_untouched test "$(config1)" == "$show1"
tl_check pindir_lb1_counters_untouched \
	test "$(xlbp pindir_stats 1 -j stats | jq -c '.counters.forward')" == "$stats1"
traffic_client 2 conns "${TOPO_VIP4[1]}" "$TOPO_PORT" -n $N -q >"$E2E_TMP/d4"
only_on pindir_lb1_still_on_its_backends "$E2E_TMP/d4" b1 b2

for j in 1 2; do xlbp pindir_detach $j detach eth0; done
exit "$TL_FAILED"
