#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `xlb host setup / show / stats / teardown` on a backend in a network
# namespace of the test's own (eth0, a veth; a second device eth1):
#  - setup does what it says: the VIPs on lo, eth0's ARP settings,
#    forwarding on lo only (never on eth0), decap.bpf.o attached with its
#    maps filled, managed neighbour entries for the fleet's members (on
#    the segment, and a gateway for one behind it), all in show -j;
#  - setup again with the same arguments changes nothing: the addresses,
#    links, sysctls, neighbours, program, map contents and the record are
#    byte-identical, and -v names no change;
#  - teardown leaves the namespace byte-identical to before (ip -d addr,
#    ip -d link, the sysctls setup touches, neighbours), the program gone
#    (its id unknown to bpftool), no pin and no record;
#  - setup with other arguments updates (a VIP removed, another added, the
#    second chance turned off) and teardown still restores the start;
#  - a VIP and sysctls the operator had before survive teardown;
#  - every kind of bad input, and a second device, is refused with one
#    line (one JSON object with -j) and changes nothing; so is a setup
#    whose write fails midway (an IPv6 VIP where lo has IPv6 off: what it
#    did before is undone);
#  - two namespaces sharing the host's bpffs each keep their own setup;
#  - at MTU 9000 (jumbo frames) decap.bpf.o is attached natively, loaded
#    multi-buffer, with nothing to say about the MTU;
#  - --decap kernel: where the kernel has no ipip driver, refused with a
#    line that says so and nothing changed; where it has, the same round
#    trip as decap.bpf.o's.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"

tl_require_root host_setup || exit 0
tl_bpffs || { tl_fail host_setup "no bpffs on /sys/fs/bpf"; exit 1; }
TMP=$(mktemp -d)
tl_on_exit "rm -rf '$TMP'"

VIPS=192.0.2.10,2001:db8::10
LBS=(--balancers 198.51.100.0/24 --balancers 2001:db8:b::/64)
FLEET=(--fleet 198.51.100.11,198.51.100.12,2001:db8:b::12,203.0.113.5)

# backend NS: eth0 (198.51.100.11, 2001:db8:b::11) and eth1 (no address),
# veths to PEER, a default route via 198.51.100.1 (which no one answers).
# No duplicate address detection, whose "tentative" would differ between
# snapshots.
backend() {
	local ns=$1 peer=$2
	tl_in "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 &&
	ip -n "$ns" link add eth0 type veth peer name p0 netns "$peer" &&
	ip -n "$ns" link add eth1 type veth peer name p1 netns "$peer" &&
	ip -n "$ns" addr add 198.51.100.11/24 dev eth0 &&
	ip -n "$ns" addr add 2001:db8:b::11/64 dev eth0 nodad &&
	ip -n "$ns" link set eth0 up && ip -n "$ns" link set eth1 up &&
	ip -n "$peer" link set p0 up && ip -n "$peer" link set p1 up &&
	ip -n "$ns" route add default via 198.51.100.1
}
tl_netns NS h && tl_netns PEER p && tl_netns NS2 h2 && tl_netns PEER2 p2 &&
	backend "$NS" "$PEER" && backend "$NS2" "$PEER2" ||
	{ tl_fail host_setup "cannot create the namespaces"; exit 1; }
# Whatever a failed case leaves, the namespace's setup goes before it does.
tl_on_exit "nsenter --net=/run/netns/$NS $XLB host teardown eth0"
tl_on_exit "nsenter --net=/run/netns/$NS2 $XLB host teardown eth0"
INO=$(tl_in "$NS" stat -L -c %i /proc/self/ns/net)
PIN=/sys/fs/bpf/xlb-host/ns$INO
REC=/run/xlb/host-ns$INO.json

h() { tl_in "$NS" "$XLB" "$@"; }

# snapshot FILE: what setup may change in NS, as the kernel prints it
# (neighbours without their state, which changes by itself). Programs:
# those attached show in ip -d link; the one setup loaded is checked by id
# (gone_prog), not in bpftool's list, which other programs of the machine
# change meanwhile.
snapshot() {
	{
		ip -n "$NS" -d addr
		ip -n "$NS" -d link
		tl_in "$NS" sysctl -a 2>/dev/null | grep -E '^net\.ipv[46]\.conf\.(all|default|lo|eth0|eth1)\.(arp_ignore|arp_announce|forwarding|rp_filter) '
		ip -n "$NS" neigh show | awk '{ print $1, $2, $3, ($4 == "managed" || $5 == "managed" || $6 == "managed") ? "managed" : "" }'
		ip -n "$NS" -j link show | jq -r '.[] | select(.ifname | startswith("xlb-")) | .ifname'
	} >"$1"
}

# maps FILE: the contents of the maps setup pinned.
maps() {
	local m
	for m in xlb_decap_addrs xlb_decap_fleet xlb_decap_lbs xlb_decap_out xlb_decap_cfg; do
		echo "$m"
		bpftool map dump pinned "$PIN/$m" | sort
	done >"$1"
}

same() { cmp -s "$1" "$2" || { diff "$1" "$2" | head -n 20 | sed 's/^/  /'; return 1; }; }

# gone_prog ID: the program is freed (RCU may take a moment).
gone_prog() {
	local try
	for ((try = 0; try < 40; try++)); do
		bpftool prog show id "$1" >/dev/null 2>&1 || return 0
		sleep 0.05
	done
	return 1
}

nothing_left() { [[ ! -e $PIN && ! -e $REC ]]; }

snapshot "$TMP/before"

# ---- setup, setup again, teardown ----
if h host setup eth0 --vip "$VIPS" "${LBS[@]}" "${FLEET[@]}" 2>"$TMP/err"; then
	tl_pass setup_runs
else
	tl_fail setup_runs "$(cat "$TMP/err")"
fi
h -j host show >"$TMP/show" 2>&1
prog=$(jq -r '.prog_id // empty' "$TMP/show")
ok=1
[[ $(ip -n "$NS" -j addr show dev lo | jq -r '[.[].addr_info[] | select(.prefixlen == 32 or .prefixlen == 128) | .local] | sort | join(" ")') == "192.0.2.10 2001:db8::10 ::1" ]] ||
	{ echo "  VIPs on lo: $(ip -n "$NS" -br addr show dev lo)"; ok=0; }
[[ $(tl_in "$NS" sysctl -n net.ipv4.conf.eth0.arp_ignore net.ipv4.conf.eth0.arp_announce \
	net.ipv4.conf.lo.forwarding net.ipv6.conf.lo.forwarding \
	net.ipv4.conf.eth0.forwarding net.ipv6.conf.eth0.forwarding | tr '\n' ' ') == "1 2 1 1 0 0 " ]] ||
	{ echo "  sysctls: arp_ignore arp_announce, lo and eth0 forwarding not 1 2 1 1 0 0"; ok=0; }
[[ -n $prog && $(ip -n "$NS" -j link show dev eth0 | jq -r '.[0].xdp.prog.id') == "$prog" ]] ||
	{ echo "  program: $(head -c 300 "$TMP/show")"; ok=0; }
jq -e '.decap == "xdp" and .attached and .check_source and .gue_port == 6080 and
	(.vips | sort) == ["192.0.2.10", "2001:db8::10"] and
	(.tunnel_addrs | sort) == ["198.51.100.11", "2001:db8:b::11"] and
	(.balancers | sort) == ["198.51.100.0/24", "2001:db8:b::/64"] and
	(.fleet | length) == 4 and .egress == []' "$TMP/show" >/dev/null ||
	{ echo "  show -j: $(cat "$TMP/show")"; ok=0; }
# The members on the segment, and the gateway of the one behind it; not
# this host itself.
managed=$(ip -n "$NS" neigh show | awk '/managed/ { print $1 }' | sort | tr '\n' ' ')
[[ $managed == "198.51.100.1 198.51.100.12 2001:db8:b::12 " ]] || { echo "  managed: $managed"; ok=0; }
tl_check setup_does_what_it_says test $ok -eq 1

snapshot "$TMP/once"
maps "$TMP/maps1"
cp "$REC" "$TMP/rec1" 2>/dev/null
h -v host setup eth0 --vip "$VIPS" "${LBS[@]}" "${FLEET[@]}" >"$TMP/again" 2>&1
rc=$?
snapshot "$TMP/twice"
maps "$TMP/maps2"
if [[ $rc -eq 0 && ! -s $TMP/again ]] && same "$TMP/once" "$TMP/twice" &&
   same "$TMP/maps1" "$TMP/maps2" && cmp -s "$TMP/rec1" "$REC" &&
   [[ $(ip -n "$NS" -j link show dev eth0 | jq -r '.[0].xdp.prog.id') == "$prog" ]]; then
	tl_pass setup_again_changes_nothing
else
	tl_fail setup_again_changes_nothing "exit $rc, said: $(head -c 300 "$TMP/again")"
fi

# The counters: every name of include/decap.h, in each form.
names=$(sed -n '/define XLB_DECAP_STAT_LIST/,/^$/s/.*X([A-Z_0-9]*,[[:space:]]*"\([a-z_]*\)").*/\1/p' \
	"$XLB_TOP/include/decap.h" | sort | tr '\n' ' ')
ok=1
[[ $(h -j host stats | jq -r 'keys[]' | sort | tr '\n' ' ') == "$names" ]] || ok=0
[[ $(h -j host stats | jq '[.[] | .packets, .bytes] | add') == 0 ]] || ok=0
[[ $(h host stats --prometheus | sed -n 's/^xlb_decap_packets_total{reason="\([a-z_]*\)"} 0$/\1/p' | sort | tr '\n' ' ') == "$names" ]] || ok=0
[[ $(h host stats --prometheus | grep -c '^xlb_decap_bytes_total{reason=') -eq $(wc -w <<<"$names") ]] || ok=0
[[ $(h host stats | awk 'NR > 1 { print $1 }' | sort | tr '\n' ' ') == "$names" ]] || ok=0
tl_check stats_by_name_in_every_form test $ok -eq 1

if h host teardown eth0 2>"$TMP/err"; then tl_pass teardown_runs; else tl_fail teardown_runs "$(cat "$TMP/err")"; fi
snapshot "$TMP/after"
if same "$TMP/before" "$TMP/after" && nothing_left && gone_prog "$prog"; then
	tl_pass teardown_restores_everything
else
	tl_fail teardown_restores_everything "pins: $(ls "$PIN" 2>&1 | tr '\n' ' '), record: $(ls "$REC" 2>&1), program $prog: $(bpftool prog show id "$prog" 2>&1 | head -1)"
fi

# ---- other settings: an update against the first record ----
h host setup eth0 --vip "$VIPS" "${LBS[@]}" "${FLEET[@]}" 2>"$TMP/err" &&
h host setup eth0 --vip 192.0.2.10,192.0.2.20 --gue-port 6081 --egress eth1 2>>"$TMP/err"
rc=$?
h -j host show >"$TMP/show" 2>&1
ok=1
[[ $rc -eq 0 ]] || ok=0
[[ $(ip -n "$NS" -j addr show dev lo | jq -r '[.[].addr_info[] | select(.prefixlen == 32 or .prefixlen == 128) | .local] | sort | join(" ")') == "192.0.2.10 192.0.2.20 ::1" ]] || ok=0
[[ $(tl_in "$NS" sysctl -n net.ipv4.conf.lo.forwarding net.ipv6.conf.lo.forwarding | tr '\n' ' ') == "0 0 " ]] || ok=0
[[ -z $(ip -n "$NS" neigh show | grep managed) ]] || ok=0
jq -e '(.vips | sort) == ["192.0.2.10", "192.0.2.20"] and .fleet == [] and .balancers == [] and
	(.check_source | not) and .gue_port == 6081 and .egress == ["eth1"] and .attached' "$TMP/show" >/dev/null || ok=0
((ok)) || echo "  $(cat "$TMP/err") $(cat "$TMP/show")"
tl_check setup_with_other_settings_updates test $ok -eq 1
h host teardown eth0
snapshot "$TMP/after"
tl_check teardown_after_update_restores_everything sh -c "cmp -s '$TMP/before' '$TMP/after' && [ ! -e '$PIN' ] && [ ! -e '$REC' ]"

# ---- what the operator had stays his ----
ip -n "$NS" addr add 192.0.2.10/32 dev lo &&
tl_in "$NS" sysctl -qw net.ipv4.conf.lo.forwarding=1 net.ipv4.conf.eth0.arp_ignore=1
snapshot "$TMP/operator"
h host setup eth0 --vip "$VIPS" "${FLEET[@]}" 2>"$TMP/err"
recorded=$(h -j host show | jq -c '[.changed.vips_added, [.changed.sysctls[].key]]')
h host teardown eth0 2>>"$TMP/err"
snapshot "$TMP/after"
if [[ $recorded == '[["2001:db8::10"],["net.ipv4.conf.eth0.arp_announce","net.ipv6.conf.lo.forwarding"]]' ]] &&
   same "$TMP/operator" "$TMP/after"; then
	tl_pass operator_vip_and_sysctls_survive_teardown
else
	tl_fail operator_vip_and_sysctls_survive_teardown "recorded $recorded $(cat "$TMP/err")"
fi
ip -n "$NS" addr del 192.0.2.10/32 dev lo
tl_in "$NS" sysctl -qw net.ipv4.conf.lo.forwarding=0 net.ipv4.conf.eth0.arp_ignore=0

# ---- bad input ----
# refused NAME FRAGMENT ARGS...: `xlb host ARGS` fails with one line naming
# FRAGMENT, and with -j one JSON object; nothing changes.
refused() {
	local name=$1 frag=$2 rc ok=1
	shift 2
	snapshot "$TMP/b.before"
	h host "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[[ $rc -eq 1 && ! -s $TMP/out && $(wc -l <"$TMP/err") -eq 1 ]] && grep -qF -- "$frag" "$TMP/err" || ok=0
	h -j host "$@" >"$TMP/out" 2>"$TMP/err.j"
	[[ $? -eq 1 && $(wc -l <"$TMP/out") -eq 1 ]] && jq -e --arg f "$frag" '.error | contains($f)' "$TMP/out" >/dev/null || ok=0
	snapshot "$TMP/b.after"
	cmp -s "$TMP/b.before" "$TMP/b.after" || ok=0
	# Refused before any setup: no record, no pins.
	[[ ${KEEP:-} == 1 ]] || nothing_left || ok=0
	if ((ok)); then tl_pass "$name"; else tl_fail "$name" "exit $rc: $(cat "$TMP/err") / $(cat "$TMP/out")"; fi
}
refused unknown_device "no device eth9" setup eth9 --vip "$VIPS"
refused bad_address "bad --vip '192.0.2.300'" setup eth0 --vip 192.0.2.300
refused bad_local "bad --local 'nowhere'" setup eth0 --vip "$VIPS" --local nowhere
refused local_link_local "bad --local '169.254.1.1': link-local" setup eth0 --vip "$VIPS" --local 169.254.1.1
refused local_in_zero_net "bad --local '0.1.2.3': address in 0.0.0.0/8" setup eth0 --vip "$VIPS" --local 0.1.2.3
refused local_not_this_hosts "--local 203.0.113.77 is not an address of this host" setup eth0 --vip "$VIPS" --local 203.0.113.77
refused bad_prefix_length "bad --fleet '198.51.100.0/33'" setup eth0 --vip "$VIPS" --fleet 198.51.100.0/33
refused prefix_with_host_bits "host bits set" setup eth0 --vip "$VIPS" --balancers 198.51.100.1/24
refused ipv6_prefix_with_host_bits "host bits set" setup eth0 --vip "$VIPS" --fleet 2001:db8:b::1/64
refused vip_multicast "bad --vip '224.0.0.5': multicast" setup eth0 --vip 224.0.0.5
refused vip_ipv6_multicast "bad --vip 'ff02::1': multicast" setup eth0 --vip ff02::1
refused vip_unspecified "unspecified" setup eth0 --vip 0.0.0.0
refused vip_loopback "loopback" setup eth0 --vip 127.0.0.2
refused vip_is_a_tunnel_address "VIP 198.51.100.11 is a tunnel address" setup eth0 --vip 198.51.100.11
refused no_vip "no --vip" setup eth0 "${FLEET[@]}"
refused gue_port_zero "bad --gue-port '0'" setup eth0 --vip "$VIPS" --gue-port 0
refused gue_port_too_big "bad --gue-port '65536'" setup eth0 --vip "$VIPS" --gue-port 65536
refused unknown_decap "bad --decap 'tc'" setup eth0 --vip "$VIPS" --decap tc
refused unknown_egress "bad --egress 'eth7': no such device" setup eth0 --vip "$VIPS" --egress eth7
refused fleet_with_kernel_decap "--fleet needs --decap xdp" setup eth0 --vip "$VIPS" --decap kernel "${FLEET[@]}"
refused balancers_with_kernel_decap "--balancers needs --decap xdp" setup eth0 --vip "$VIPS" --decap kernel "${LBS[@]}"
refused gue_port_with_kernel_decap "--gue-port needs --decap xdp" setup eth0 --vip "$VIPS" --decap kernel --gue-port 6081
refused lo_is_no_device_to_set_up "not lo" setup lo --vip "$VIPS"
refused teardown_without_setup "no xlb host setup" teardown eth0
refused show_without_setup "no xlb host setup" show
refused stats_without_setup "no xlb host setup" stats

# A device busy with another XDP program.
ip -n "$NS" link set dev eth0 xdpgeneric obj "$BUILD/pass.bpf.o" sec xdp
refused device_with_another_program "eth0 already runs an XDP program" setup eth0 --vip "$VIPS"
ip -n "$NS" link set dev eth0 xdpgeneric off

# A second device, and another decapsulation, while one is set up.
h host setup eth0 --vip "$VIPS" "${FLEET[@]}"
KEEP=1 refused second_device "already set up on eth0: \`xlb host teardown eth0\` first" setup eth1 --vip "$VIPS"
KEEP=1 refused other_decap "already set up on eth0 with --decap xdp" setup eth0 --vip "$VIPS" --decap kernel
KEEP=1 refused teardown_of_another_device "on eth0, not eth1" teardown eth1
h host teardown eth0

# A write that fails midway: lo takes no IPv6 address, after the sysctls
# and the IPv4 VIP are made; they are undone, and no record stays.
tl_in "$NS" sysctl -qw net.ipv6.conf.lo.disable_ipv6=1
snapshot "$TMP/b.before"
h host setup eth0 --vip "$VIPS" "${FLEET[@]}" 2>"$TMP/err"
rc=$?
snapshot "$TMP/b.after"
if [[ $rc -eq 1 && $(wc -l <"$TMP/err") -eq 1 ]] && grep -q "cannot add 2001:db8::10 to lo" "$TMP/err" &&
   same "$TMP/b.before" "$TMP/b.after" && nothing_left; then
	tl_pass failed_write_is_rolled_back
else
	tl_fail failed_write_is_rolled_back "exit $rc: $(cat "$TMP/err")"
fi
tl_in "$NS" sysctl -qw net.ipv6.conf.lo.disable_ipv6=0

# A fleet member behind an IPv6 router: its next hop, and so the managed
# neighbour entry, is the router's link-local address, which the record
# holds and reads back; teardown removes the entry and leaves the rest.
tl_in "$NS" ip -6 route add 2001:db8:99::/64 via fe80::1 dev eth0
snapshot "$TMP/c.before"
h host setup eth0 --vip 192.0.2.10 --fleet 2001:db8:99::5/128 2>"$TMP/err" &&
hop=$(h -j host show 2>>"$TMP/err" | jq -r '[.changed.neighbours[]?.addr] | join(",")') &&
h host teardown eth0 2>>"$TMP/err"
rc=$?
snapshot "$TMP/c.after"
if [[ $rc -eq 0 && $(tl_in "$NS" ip -6 neigh show fe80::1 dev eth0) == "" ]] &&
   same "$TMP/c.before" "$TMP/c.after" && nothing_left; then
	tl_pass link_local_next_hop_recorded_and_removed
else
	tl_fail link_local_next_hop_recorded_and_removed "exit $rc, hops '${hop:-}': $(cat "$TMP/err")"
fi
tl_in "$NS" ip -6 route del 2001:db8:99::/64 via fe80::1 dev eth0

# ---- two namespaces, one bpffs ----
h2() { tl_in "$NS2" "$XLB" "$@"; }
h host setup eth0 --vip 192.0.2.10 2>"$TMP/err" &&
h2 host setup eth0 --vip 192.0.2.20 2>>"$TMP/err" &&
p1=$(h -j host show | jq -r .prog_id) && p2=$(h2 -j host show | jq -r .prog_id) &&
h host teardown eth0 2>>"$TMP/err"
v2=$(h2 -j host show 2>>"$TMP/err" | jq -c '[.vips, .attached]')
h2 host teardown eth0 2>>"$TMP/err"
if [[ -n ${p1:-} && -n ${p2:-} && $p1 != "$p2" && $v2 == '[["192.0.2.20"],true]' && ! -s $TMP/err ]]; then
	tl_pass two_namespaces_keep_their_own
else
	tl_fail two_namespaces_keep_their_own "programs ${p1:-?} ${p2:-?}, second: $v2 $(cat "$TMP/err")"
fi

# ---- jumbo frames ----
# A veth takes a single-buffer program natively only up to MTU 3498: at
# 9000, native mode is the multi-buffer program's.
if tl_netns NS3 h3 && tl_netns PEER3 p3 && backend "$NS3" "$PEER3" &&
	ip -n "$NS3" link set eth0 mtu 9000 && ip -n "$PEER3" link set p0 mtu 9000; then
	tl_on_exit "nsenter --net=/run/netns/$NS3 $XLB host teardown eth0"
	tl_in "$NS3" "$XLB" host setup eth0 --vip "$VIPS" "${LBS[@]}" 2>"$TMP/err"
	rc=$?
	mode=$(tl_in "$NS3" "$XLB" -j host show | jq -r '.attach_mode')
	echo "  at MTU 9000: setup exit $rc, attached $mode, said '$(cat "$TMP/err")'"
	tl_check jumbo_mtu_attaches_natively test "$rc" -eq 0 -a "$mode" = native -a ! -s "$TMP/err"
	tl_in "$NS3" "$XLB" host teardown eth0 >/dev/null 2>&1
else
	tl_fail jumbo_mtu_attaches_natively "cannot create the namespaces"
fi

# ---- the kernel's tunnel devices ----
probe=xlbt$TL_TAG-tun
kernel=0
if ip netns add "$probe" 2>/dev/null; then
	ip -n "$probe" link add t4 type ipip external 2>/dev/null &&
		ip -n "$probe" link add t6 type ip6tnl external 2>/dev/null && kernel=1
	ip netns del "$probe"
fi
if ((kernel)); then
	tl_in "$NS" sysctl -qw net.ipv4.conf.all.rp_filter=1
	snapshot "$TMP/b.before"
	h host setup eth0 --vip "$VIPS" --decap kernel 2>"$TMP/err" &&
	h host setup eth0 --vip "$VIPS" --decap kernel 2>>"$TMP/err"
	ok=$?
	[[ $(tl_in "$NS" sysctl -n net.ipv4.conf.all.rp_filter net.ipv4.conf.xlb-ipip.rp_filter | tr '\n' ' ') == "0 0 " ]] || ok=1
	[[ $(ip -n "$NS" -j -d link show dev xlb-ip6tnl | jq -r '.[0].linkinfo.info_data.external') == true ]] || ok=1
	h host teardown eth0 2>>"$TMP/err" || ok=1
	snapshot "$TMP/b.after"
	if ((ok == 0)) && same "$TMP/b.before" "$TMP/b.after" && nothing_left; then
		tl_pass kernel_decap_round_trip
	else
		tl_fail kernel_decap_round_trip "$(cat "$TMP/err")"
	fi
	tl_in "$NS" sysctl -qw net.ipv4.conf.all.rp_filter=0
else
	refused kernel_without_ipip_driver "this kernel has no ipip driver" setup eth0 --vip "$VIPS" --decap kernel
fi
exit "$TL_FAILED"
