#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end, real traffic: xlb attached with `ip link` to a balancer in
# the topology of scripts/topology.sh, three backends answering by direct
# server return.
#  - 2,000 TCP connections to the IPv4 VIP and 2,000 to the IPv6 VIP, from
#    two clients, all complete; a TCP socket connected to VIP:port accepts
#    nothing but the VIP's answers, so each one came from the VIP;
#  - per backend, the count lies within the binomial band of the share of
#    the table `xlb show -j` gives it;
#  - UDP requests get their answer, sent from the VIP (checked per reply);
#  - no packet from a VIP is seen on the balancer (a capture there, with a
#    packet sent to the balancer itself as the capture's positive control):
#    answers go from the backends to the router and the client directly;
#  - xlb's forward counter accounts for the clients' packets.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

CONNS=$(e2e_count_for 2000 400)
DGRAMS=$(e2e_count_for 300 100)
TOPO_BACKENDS=3

e2e_up traffic_topology || exit 1
e2e_config traffic_config 1 1 2 3 || exit 1
vip4=${TOPO_VIP4[1]} vip6=${TOPO_VIP6[1]}

e2e_capture_start dsr "${TOPO_NS_LB[1]}" eth0 "src host $vip4 or src host $vip6 or udp port 9" ||
	tl_fail capture_started "tcpdump on the balancer did not start"
fwd0=$(e2e_stat 1 forward)

# tcp_spread FAMILY VIP VIPKEY: CONNS connections, half from each client.
tcp_spread() {
	local fam=$1 vip=$2 key=$3 p1 p2 ok
	traffic_client 1 conns "$vip" "$TOPO_PORT" -n $((CONNS / 2)) -P 16 >"$E2E_TMP/c1.$fam" &
	p1=$!
	traffic_client 2 conns "$vip" "$TOPO_PORT" -n $((CONNS - CONNS / 2)) -P 16 >"$E2E_TMP/c2.$fam" &
	p2=$!
	wait $p1 $p2
	ok=$(( $(traffic_total "$E2E_TMP/c1.$fam" ok) + $(traffic_total "$E2E_TMP/c2.$fam" ok) ))
	echo "  tcp$fam: $ok of $CONNS connections completed" \
	     "($(traffic_total "$E2E_TMP/c1.$fam" elapsed_ms) ms, $(traffic_total "$E2E_TMP/c2.$fam" elapsed_ms) ms)"
	grep -h -m 5 '^conn .* \(timeout\|reset\|refused\|closed\|error\|bad-reply\|unreachable\)' \
		"$E2E_TMP/c1.$fam" "$E2E_TMP/c2.$fam" | sed 's/^/  /'
	tl_check "tcp${fam}_connections_complete" test "$ok" -eq "$CONNS"
	traffic_shares 1 "$key" >"$E2E_TMP/shares.$fam"
	traffic_count "$E2E_TMP/c1.$fam" "$E2E_TMP/c2.$fam" >"$E2E_TMP/counts.$fam"
	e2e_check_spread "tcp${fam}_spread_within_binomial_band" "$ok" \
		"$E2E_TMP/shares.$fam" "$E2E_TMP/counts.$fam"
}

tcp_spread 4 "$vip4" "$vip4:$TOPO_PORT/tcp"
tcp_spread 6 "$vip6" "[$vip6]:$TOPO_PORT/tcp"

# udp_request_response FAMILY VIP VIPKEY
udp_request_response() {
	local fam=$1 vip=$2 key=$3 ok wrong
	traffic_client 1 udp "$vip" "$TOPO_UDP_PORT" -n $DGRAMS -P 8 >"$E2E_TMP/u.$fam"
	ok=$(traffic_total "$E2E_TMP/u.$fam" ok)
	wrong=$(grep -c '^dgram .* wrong-source' "$E2E_TMP/u.$fam")
	echo "  udp$fam: $ok of $DGRAMS answered from the VIP, $wrong from elsewhere"
	grep -m 5 '^dgram .* \(timeout\|wrong-source\|bad-reply\|error\)' "$E2E_TMP/u.$fam" | sed 's/^/  /'
	tl_check "udp${fam}_request_response_from_vip" test "$ok" -eq "$DGRAMS"
	traffic_shares 1 "$key" >"$E2E_TMP/ushares.$fam"
	traffic_count "$E2E_TMP/u.$fam" >"$E2E_TMP/ucounts.$fam"
	e2e_check_spread "udp${fam}_spread_within_binomial_band" "$ok" \
		"$E2E_TMP/ushares.$fam" "$E2E_TMP/ucounts.$fam"
}

udp_request_response 4 "$vip4" "$vip4:$TOPO_UDP_PORT/udp"
udp_request_response 6 "$vip6" "[$vip6]:$TOPO_UDP_PORT/udp"

# The capture's positive control: a datagram to the balancer's own
# address, which xlb passes to the stack where the capture sees it.
topo_in "${TOPO_NS_CLIENT[1]}" bash -c "echo control >/dev/udp/${TOPO_LB4[1]}/9"
sleep 0.2
from_vip=$(e2e_capture_stop dsr "src host $vip4 or src host $vip6")
control=$(tcpdump -n -r "$E2E_TMP/dsr.pcap" "udp port 9" 2>/dev/null | wc -l)
echo "  capture on the balancer: $from_vip packets from a VIP, $control control packet(s)"
tl_check replies_bypass_balancer test "$from_vip" -eq 0 -a "$control" -ge 1

# Each connection is at least SYN, request, FIN and its ACKs from the
# client; each datagram one packet.
fwd=$(( $(e2e_stat 1 forward) - fwd0 ))
echo "  xlb forward counter: $fwd packets for $((2 * CONNS)) connections and $((2 * DGRAMS)) datagrams"
tl_check forward_counter_counts_client_packets \
	test "$fwd" -ge $((2 * CONNS * 4 + 2 * DGRAMS))
exit "$TL_FAILED"
