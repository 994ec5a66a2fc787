#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end, next hops that xlb keeps resolved itself, and nothing looped
# (xlb attached with `ip link` to a balancer of scripts/topology.sh, which
# pins no neighbour entry):
#  - before `xlb backend add` the balancer has no neighbour entry for the
#    backend (no ping, no traffic); the first connection after it
#    completes, IPv4 and IPv6, and the backend's next hop has a managed
#    entry;
#  - `xlb backend del` of the last backend using an entry removes it; the
#    entry of a backend still in use stays;
#  - one entry per next hop: backends behind two gateways on one device
#    give each gateway its own, and two backends behind one share it;
#  - a backend on the segment that nobody holds: `xlb backend add` says its
#    next hop is unresolved (a later change of another backend does not
#    say it again), `xlb show` flags it, and its connections are dropped,
#    counted drop_neigh_unresolved;
#  - a datagram to a VIP address on a port no VIP has: dropped, counted
#    drop_vip_port; pings of it (IPv4 and IPv6): answered by xlb;
#  - none of these loops: with a default route on the balancer back to the
#    router, as a real machine has, the router forwards each packet (and
#    each ping's reply) once,
#    where a packet passed to the balancer's kernel would come back until
#    its TTL ran out.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

TOPO_BACKENDS=1
DEAD4=198.51.100.99	# on the backends' segment, held by nobody
GW1=198.51.100.201 GW2=198.51.100.202	# gateways there, held by nobody too

e2e_up nexthop_topology || exit 1
lb=${TOPO_NS_LB[1]} rt=$TOPO_NS_RT cl=${TOPO_NS_CLIENT[1]}
vip4=${TOPO_VIP4[1]} vip6=${TOPO_VIP6[1]} be4=${TOPO_BE4[1]} be6=${TOPO_BE6[1]}
key4="$vip4:$TOPO_PORT/tcp" key6="[$vip6]:$TOPO_PORT/tcp"

if ! topo_attach 1 >"$E2E_TMP/attach.log" 2>&1; then
	tl_fail nexthop_attach "$(tr '\n' ' ' <"$E2E_TMP/attach.log")"
	exit 1
fi
e2e_xlb nexthop_config 1 config set src4 "${TOPO_LB4[1]}" &&
e2e_xlb nexthop_config 1 config set src6 "${TOPO_LB6[1]}" &&
e2e_xlb nexthop_config 1 vip add "$key4" &&
e2e_xlb nexthop_config 1 vip add "$key6" || exit 1

# neigh ADDR: the balancer's entry for ADDR on eth0, with its flags.
neigh() { topo_in "$lb" ip -d neigh show "$1" dev eth0; }

tl_check no_neighbour_entry_before_backend_add test -z "$(neigh "$be4")$(neigh "$be6")"

# first_connection FAMILY VIP KEY BACKEND: backend add, then one connection.
first_connection() {
	local fam=$1 vip=$2 key=$3 be=$4 ok
	e2e_xlb "first_tcp${fam}_backend_add" 1 backend add "$key" "$be" || return
	traffic_client 1 conns "$vip" "$TOPO_PORT" -n 1 >"$E2E_TMP/first$fam"
	ok=$(traffic_total "$E2E_TMP/first$fam" ok)
	[[ $ok -eq 1 ]] || sed 's/^/  /' "$E2E_TMP/first$fam"
	tl_check "first_tcp${fam}_connection_after_backend_add_completes" test "$ok" -eq 1
	neigh "$be" >"$E2E_TMP/neigh$fam"
	echo "  $(cat "$E2E_TMP/neigh$fam")"
	tl_check "backend${fam}_next_hop_has_a_managed_entry" grep -q ' managed ' "$E2E_TMP/neigh$fam"
}
first_connection 4 "$vip4" "$key4" "$be4"
first_connection 6 "$vip6" "$key6" "$be6"

e2e_xlb nexthop_del 1 backend del "$key4" "$be4"
tl_check entry_removed_with_the_last_backend_using_it test -z "$(neigh "$be4")"
neigh "$be6" >"$E2E_TMP/neigh6"
tl_check entry_of_a_backend_in_use_stays grep -q ' managed ' "$E2E_TMP/neigh6"

# One entry per next hop: backends behind two gateways on eth0 give each
# gateway an entry of its own (one per device would leave a gateway
# unresolved), two behind one gateway share its entry, which stays until
# the last of them goes.
topo_in "$lb" ip route add 203.0.113.10/32 via "$GW1"
topo_in "$lb" ip route add 203.0.113.11/32 via "$GW2"
topo_in "$lb" ip route add 203.0.113.12/32 via "$GW2"
for be in 203.0.113.10 203.0.113.11 203.0.113.12; do
	topo_xlb 1 backend add "$key4" "$be" >/dev/null 2>&1
done
# xlbs4: xlb's IPv4 entries on eth0.
xlbs4() { topo_in "$lb" ip -4 neigh show dev eth0 proto 88 | awk '{ print $1 }' | sort | tr '\n' ' '; }
echo "  xlb's IPv4 entries: $(xlbs4)"
tl_check each_gateway_has_an_entry_of_its_own test "$(xlbs4)" = "$GW1 $GW2 "
topo_xlb 1 backend del "$key4" 203.0.113.10 && topo_xlb 1 backend del "$key4" 203.0.113.11
tl_check a_shared_entry_stays_until_its_last_backend_goes test "$(xlbs4)" = "$GW2 "
topo_xlb 1 backend del "$key4" 203.0.113.12
tl_check no_entry_left_with_no_backend_behind_it test -z "$(xlbs4)"

# A backend nobody holds: said at once, flagged by show.
topo_xlb 1 backend add "$key4" "$DEAD4" >"$E2E_TMP/dead.out" 2>&1
echo "  $(cat "$E2E_TMP/dead.out")"
tl_check backend_add_says_its_next_hop_is_unresolved \
	grep -q "backend $DEAD4: next hop $DEAD4 dev eth0 is [A-Z]*:" "$E2E_TMP/dead.out"
topo_xlb 1 show | grep "backend $DEAD4 " >"$E2E_TMP/show"
echo "  $(cat "$E2E_TMP/show")"
tl_check show_flags_the_unresolved_next_hop grep -q next-hop-unresolved "$E2E_TMP/show"
# Said by the command that adds it (or makes its entry), not by every
# change after it.
topo_xlb 1 backend set "$key6" "$be6" --weight 2 >"$E2E_TMP/set.out" 2>&1
tl_check later_changes_do_not_repeat_it sh -c "! grep -q '$DEAD4' '$E2E_TMP/set.out'"
tl_check show_json_says_resolved_false test "$(topo_xlb 1 -j show |
	jq --arg a "$DEAD4" '.vips[].backends[] | select(.addr == $a) | .next_hop.resolved')" == false

# A real machine's balancer has a default route: a packet its kernel got
# for a VIP would go back to the router, which sends it here again.
topo_in "$lb" ip route add default via 198.51.100.1
topo_in "$lb" ip -6 route add default via 2001:db8:b::1

# forwarded NS: the datagrams NS forwarded, IPv4 and IPv6 together.
forwarded() {
	topo_in "$1" cat /proc/net/snmp /proc/net/snmp6 | awk '
		/^Ip: / && !h { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
		/^Ip: / { n += $col["ForwDatagrams"] }
		$1 == "Ip6OutForwDatagrams" { n += $2 }
		END { print n + 0 }'
}
fwd0=$(forwarded "$rt") unres0=$(e2e_stat 1 drop_neigh_unresolved) port0=$(e2e_stat 1 drop_vip_port)
echo0=$(e2e_stat 1 icmp_echo_reply)

# One SYN (and perhaps its retransmission) to the unresolved backend.
topo_in "$cl" timeout 1.5 bash -c "echo >/dev/tcp/$vip4/$TOPO_PORT" 2>/dev/null
sleep 0.3
unres=$(($(e2e_stat 1 drop_neigh_unresolved) - unres0))
tl_check unresolved_next_hop_counted test "$unres" -ge 1

# A datagram to the VIP address on a port no VIP has: dropped; pings:
# answered by the balancer.
topo_in "$cl" bash -c "echo probe >/dev/udp/$vip4/9"
topo_in "$cl" ping -c 1 -W 1 "$vip4" >/dev/null
topo_in "$cl" ping -6 -c 1 -W 1 "$vip6" >/dev/null
sleep 0.3
port=$(($(e2e_stat 1 drop_vip_port) - port0))
echoes=$(($(e2e_stat 1 icmp_echo_reply) - echo0))
tl_check vip_port_dropped test "$port" -eq 1
tl_check pings_answered test "$echoes" -eq 2

# Each reached the balancer through the router once, and never again (a
# ping's reply went back through it once).
fwd=$(($(forwarded "$rt") - fwd0))
echo "  router forwarded $fwd datagrams for $unres unresolved, $port drop_vip_port packets and $echoes pings answered"
tl_check router_forwarded_each_packet_once test "$fwd" -eq $((unres + port + 2 * echoes))

exit $TL_FAILED
