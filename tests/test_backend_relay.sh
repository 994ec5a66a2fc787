#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A backend is no relay: an attacker on the backends' segment sends
# crafted tunnelled frames to backends set up by `xlb host setup`, and
# nothing reaches the victim on the segment or the network behind one
# backend's second interface; each frame is counted by the backend under
# the reason it was refused for (include/decap.h).
#
#   attacker 198.51.100.66     victim 198.51.100.99      (the segment: a bridge
#   b1 198.51.100.11 -- eth1 -- inner 203.0.113.50        with an XDP program
#   b2 198.51.100.12                                       on every port)
#
# The balancer, 198.51.100.1, is not there: the attacker spoofs it where a
# case needs a balancer's source. Both backends hold the VIPs, trust the
# balancer's /32 and each other as the fleet; b1's fleet also holds the
# inner network (203.0.113.0/24), reachable only by eth1, which is not an
# allowed way out.
#
# The positive control: a GUE packet from the balancer for a connection b1
# lacks, naming b2, is forwarded and passed up by b2. So the topology
# delivers, and each case's silence means the frame was refused.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"

tl_require_root backend_relay || exit 0
CRAFT=$XLB_TOP/tests/lib/craft_frame.py
LB4=198.51.100.1 LB6=2001:db8:b::1
B1_4=198.51.100.11 B1_6=2001:db8:b::11 B2_4=198.51.100.12 B2_6=2001:db8:b::12
ATT4=198.51.100.66 ATT6=2001:db8:b::66 VIC4=198.51.100.99 VIC6=2001:db8:b::99
IN4=203.0.113.50 IN6=2001:db8:c::50
VIP4=192.0.2.10 VIP6=2001:db8::10
CLIENT4=198.18.0.5 CLIENT6=2001:db8:ff::5	# routed nowhere: no answer leaves
MAC_B1=02:58:4c:42:0b:01 MAC_B2=02:58:4c:42:0b:02
BCAST=ff:ff:ff:ff:ff:ff

tl_netns SEG seg && tl_netns ATT att && tl_netns VIC vic && tl_netns B1 b1 &&
	tl_netns B2 b2 && tl_netns INNER in ||
	{ tl_fail relay_topology "cannot create namespaces"; exit 1; }

# plug NS MAC ADDR4 ADDR6: NS's eth0 a port of the segment's bridge.
plug() {
	local port=p-${1##*-}
	ip -n "$SEG" link add "$port" type veth peer name eth0 netns "$1" || return 1
	[[ -n $2 ]] && ip -n "$1" link set eth0 address "$2"
	ip -n "$SEG" link set "$port" master segbr up &&
	tl_in "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.eth0.accept_dad=0 &&
	ip -n "$1" addr add "$3/24" dev eth0 &&
	ip -n "$1" addr add "$4/64" dev eth0 nodad &&
	ip -n "$1" link set eth0 up &&
	ethtool -K -q "$port" tx off 2>/dev/null
	ip -n "$SEG" link set "$port" xdpdrv obj "$BUILD/pass.bpf.o" sec xdp
}
setup_topology() {
	ip -n "$SEG" link add name segbr type bridge &&
	ip -n "$SEG" link set segbr up &&
	plug "$ATT" "" "$ATT4" "$ATT6" && plug "$VIC" "" "$VIC4" "$VIC6" &&
	plug "$B1" "$MAC_B1" "$B1_4" "$B1_6" && plug "$B2" "$MAC_B2" "$B2_4" "$B2_6" &&
	ip -n "$B1" link add eth1 type veth peer name eth0 netns "$INNER" &&
	ip -n "$B1" addr add 203.0.113.1/24 dev eth1 &&
	ip -n "$B1" addr add 2001:db8:c::1/64 dev eth1 nodad &&
	ip -n "$B1" link set eth1 up &&
	tl_in "$INNER" sysctl -qw net.ipv6.conf.all.accept_dad=0 &&
	ip -n "$INNER" addr add "$IN4/24" dev eth0 &&
	ip -n "$INNER" addr add "$IN6/64" dev eth0 nodad &&
	ip -n "$INNER" link set eth0 up &&
	ip -n "$B1" link set eth1 xdpdrv obj "$BUILD/pass.bpf.o" sec xdp &&
	# b1 reaches b2 and the inner network without asking: the program
	# resolves no neighbour itself.
	ip -n "$B1" neigh replace "$B2_4" dev eth0 lladdr "$MAC_B2" nud permanent &&
	ip -n "$B1" -6 neigh replace "$B2_6" dev eth0 lladdr "$MAC_B2" nud permanent &&
	ip -n "$B1" neigh replace "$IN4" dev eth1 \
		lladdr "$(ip -n "$INNER" -j link show eth0 | jq -r '.[0].address')" nud permanent &&
	ip -n "$B2" neigh replace "$B1_4" dev eth0 lladdr "$MAC_B1" nud permanent
}
setup_topology || { tl_fail relay_topology "cannot build the segment"; exit 1; }

host_setup() {
	local ns=$1; shift
	tl_in "$ns" "$XLB" host setup eth0 --vip "$VIP4" --vip "$VIP6" \
		--balancers "$LB4/32" --balancers "$LB6/128" \
		--fleet "$B1_4/32" --fleet "$B2_4/32" --fleet "$B1_6/128" --fleet "$B2_6/128" "$@"
}
tl_on_exit "tl_in $B1 $XLB host teardown eth0"
tl_on_exit "tl_in $B2 $XLB host teardown eth0"
if ! host_setup "$B1" --fleet 203.0.113.0/24 --fleet 2001:db8:c::/64 >"$BUILD/relay.$TL_TAG.log" 2>&1 ||
   ! host_setup "$B2" >>"$BUILD/relay.$TL_TAG.log" 2>&1; then
	tl_fail relay_host_setup "$(tr '\n' ' ' <"$BUILD/relay.$TL_TAG.log")"
	rm -f "$BUILD/relay.$TL_TAG.log"
	exit 1
fi
rm -f "$BUILD/relay.$TL_TAG.log"

# Captures of every IP packet a backend sends the victim, and of every
# one that reaches the inner network (neighbour discovery, IGMP and MLD,
# behind its hop-by-hop header, aside: the kernels' own chatter). The
# bridge floods the attacker's frames to a MAC it has not learnt yet to
# the victim too: those are the attacker's, not a backend's.
CAP=$(mktemp -d)
tl_on_exit "rm -rf $CAP"
FILTER='((ip and not igmp) or (ip6 and not icmp6 and ip6[6] != 0))'
tl_in "$VIC" tcpdump -i eth0 -U -n -w "$CAP/vic.pcap" \
	"$FILTER and (ether src $MAC_B1 or ether src $MAC_B2)" 2>/dev/null &
tl_on_exit "kill $! 2>/dev/null"
tl_in "$INNER" tcpdump -i eth0 -U -n -w "$CAP/inner.pcap" "$FILTER" 2>/dev/null &
tl_on_exit "kill $! 2>/dev/null"
sleep 1

# count NS REASON: the backend's counter of that reason.
count() {
	tl_in "$1" "$XLB" -j host stats | jq --arg r "$2" '.[$r].packets // 0'
}

# arrived NAME: IP packets captured at the victim or the inner network.
arrived() {
	local n=0 f
	for f in "$CAP"/*.pcap; do
		n=$((n + $(tcpdump -r "$f" -n 2>/dev/null | wc -l)))
	done
	echo "$n"
}

# refused NAME NS REASON DMAC ARGS...: the crafted frame (craft_frame.py
# ARGS after the destination MAC) counted once under REASON by the
# backend NS, and nothing reached the victim or the inner network.
refused() {
	local name=$1 ns=$2 reason=$3 dmac=$4 before after seen
	shift 4
	before=$(count "$ns" "$reason")
	if ! tl_in "$ATT" python3 "$CRAFT" eth0 "$dmac" "$@" 2>"$CAP/err"; then
		tl_fail "$name" "cannot send: $(cat "$CAP/err")"
		return
	fi
	sleep 0.3
	after=$(count "$ns" "$reason")
	seen=$(arrived)
	if [[ $after -eq $((before + 1)) && $seen -eq 0 ]]; then
		tl_pass "$name"
	else
		tl_fail "$name" "$reason $before -> $after, $seen packets reached the victim or the inner network"
	fi
}

# The control first: a balancer's packet for a connection b1 lacks goes
# on to b2, the previous backend, which passes it up.
before=$(count "$B2" pass_forwarded)
tl_in "$ATT" python3 "$CRAFT" eth0 "$MAC_B1" gue "$LB4" "$B1_4" "$CLIENT4" "$VIP4" --prev "$B2_4"
sleep 0.3
tl_check relay_control_second_chance_reaches_b2 test "$(count "$B2" pass_forwarded)" -eq $((before + 1))
tl_check relay_control_nothing_else_seen test "$(arrived)" -eq 0

# 1. Not addressed to the host.
refused spoofed_outer_destination_passes "$B1" pass_not_local "$MAC_B1" \
	gue "$LB4" 203.0.113.77 "$CLIENT4" "$VIP4" --prev "$VIC4"
refused subnet_broadcast_destination_passes "$B1" pass_not_local "$MAC_B1" \
	gue "$LB4" 198.51.100.255 "$CLIENT4" "$VIC4"
refused broadcast_frame_b1 "$B1" pass_not_unicast "$BCAST" \
	gue "$LB4" 255.255.255.255 "$CLIENT4" "$VIC4"
refused broadcast_frame_b2 "$B2" pass_not_unicast "$BCAST" \
	gue "$LB4" 198.51.100.255 "$CLIENT4" "$VIC4"
refused broadcast_frame_to_own_address "$B2" pass_not_unicast "$BCAST" \
	ipip "$LB4" "$B2_4" "$CLIENT4" "$VIC4"
refused transit_ipip "$B1" pass_not_local "$MAC_B1" ipip "$ATT4" "$IN4" "$CLIENT4" "$IN4"
refused transit_6in4 "$B1" pass_not_local "$MAC_B1" ipip "$ATT4" "$IN4" "$CLIENT6" "$IN6"
refused transit_gue "$B1" pass_not_local "$MAC_B1" gue "$ATT4" "$IN4" "$CLIENT4" "$IN4"
refused transit_ip6ip6 "$B1" pass_not_local "$MAC_B1" ipip "$ATT6" "$IN6" "$CLIENT6" "$IN6"

# 2. A stranger's source; with the balancers' source spoofed, every
# martian previous backend, one outside the fleet, one by another way out.
refused strangers_gue "$B1" drop_source "$MAC_B1" gue "$ATT4" "$B1_4" "$CLIENT4" "$VIP4" --prev "$B2_4"
refused strangers_ipip "$B1" drop_source "$MAC_B1" ipip "$ATT4" "$B1_4" "$CLIENT4" "$VIP4"
refused strangers_forwarded "$B1" drop_source "$MAC_B1" \
	gue "$ATT4" "$B1_4" "$CLIENT4" "$VIP4" --prev "$B2_4" --hops 1
for prev in 0.0.0.0 255.255.255.255 224.0.0.1 240.0.0.1 127.0.0.1; do
	refused "martian_prev_$prev" "$B1" drop_prev_martian "$MAC_B1" \
		gue "$LB4" "$B1_4" "$CLIENT4" "$VIP4" --prev "$prev"
done
for prev in :: ::1 ::ffff:198.51.100.99 ff02::1; do
	refused "martian_prev_$prev" "$B1" drop_prev_martian "$MAC_B1" \
		gue "$LB6" "$B1_6" "$CLIENT6" "$VIP6" --prev "$prev"
done
refused prev_outside_the_fleet "$B1" drop_prev_not_fleet "$MAC_B1" \
	gue "$LB4" "$B1_4" "$CLIENT4" "$VIP4" --prev "$VIC4"
refused prev_the_subnet_broadcast "$B1" drop_prev_not_fleet "$MAC_B1" \
	gue "$LB4" "$B1_4" "$CLIENT4" "$VIP4" --prev 198.51.100.255
refused prev_the_vip "$B1" drop_prev_not_fleet "$MAC_B1" \
	gue "$LB4" "$B1_4" "$CLIENT4" "$VIP4" --prev "$VIP4"
refused prev_outside_the_fleet_ipv6 "$B1" drop_prev_not_fleet "$MAC_B1" \
	gue "$LB6" "$B1_6" "$CLIENT6" "$VIP6" --prev "$VIC6"
refused prev_by_another_interface "$B1" drop_egress "$MAC_B1" \
	gue "$LB4" "$B1_4" "$CLIENT4" "$VIP4" --prev "$IN4"

# 3. Inner packets not for the host: never routed on.
refused inner_not_for_a_vip_no_prev "$B1" drop_inner_not_local "$MAC_B1" \
	gue "$LB4" "$B1_4" "$CLIENT4" "$VIC4"
refused inner_not_for_a_vip_hops_1 "$B1" drop_inner_not_local "$MAC_B1" \
	gue "$B2_4" "$B1_4" "$CLIENT4" "$VIC4" --prev "$B2_4" --hops 1
refused inner_not_for_a_vip_ipip "$B1" drop_inner_not_local "$MAC_B1" \
	ipip "$LB4" "$B1_4" 203.0.113.5 "$VIC4"
refused inner_to_the_inner_network "$B1" drop_inner_not_local "$MAC_B1" \
	ipip "$LB4" "$B1_4" "$CLIENT4" "$IN4" --proto udp
refused inner_not_for_a_vip_6in6 "$B1" drop_inner_not_local "$MAC_B1" \
	ipip "$LB6" "$B1_6" "$CLIENT6" "$VIC6"

# The backend's interface does not forward: the kernel routes nothing.
tl_check backend_interface_not_forwarding test \
	"$(tl_in "$B1" sysctl -n net.ipv4.conf.eth0.forwarding net.ipv6.conf.eth0.forwarding | tr -d '\n')" = 00
exit "$TL_FAILED"
