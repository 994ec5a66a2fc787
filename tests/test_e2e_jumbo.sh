#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end, jumbo frames: clients at MTU 9000, the balancer-backend
# segment at 9100 (room for the encapsulation), xlb attached natively in
# its multi-buffer build (xlb.frags.bpf.o, as the topology attaches it at
# such an MTU), the backends decapsulating with decap.bpf.o, which `xlb
# host setup` loads multi-buffer and attaches natively. Uploads and
# downloads of 1 MiB over IPv4 and IPv6 VIPs complete, every byte; the
# backend's stack receives the clients' segments at their full size (IPv4
# packets of 9000 bytes, IPv6 payloads of 8960), decapsulated whole from
# frames of several buffers and counted with all their bytes, none dropped
# as truncated; and xlb neither drops nor answers any packet as too big.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

TOPO_CLIENT_MTU=9000
TOPO_MTU=9100
TOPO_BACKENDS=1
TOPO_DECAP=xdp

tl_require_root jumbo_topology || exit 0

# A veth takes a program at MTU 9100 natively only when the kernel has
# multi-buffer XDP for it (Linux 5.18 and later).
tl_netns PROBE probe || { tl_fail jumbo_topology "cannot create a namespace"; exit 1; }
ip -n "$PROBE" link add v0 mtu "$TOPO_MTU" type veth peer name v1 mtu "$TOPO_MTU"
if ! tl_in "$PROBE" ip link set dev v0 xdpdrv obj "$BUILD/pass.frags.bpf.o" \
	sec xdp.frags 2>"$E2E_TMP/probe.err"; then
	tl_skip_env jumbo_topology "veth without multi-buffer XDP: $(tr '\n' ' ' <"$E2E_TMP/probe.err")"
	exit 0
fi
ip netns del "$PROBE"

e2e_up jumbo_topology || exit 1
e2e_config jumbo_config 1 1 || exit 1

BE=${TOPO_NS_BE[1]}
mode=$(topo_in "$BE" "$XLB" -j host show | jq -r '.attach_mode')
echo "  b1: decap.bpf.o attached in $mode mode at MTU $TOPO_MTU"
tl_check backend_program_is_native test "$mode" = native
# The stack would merge segments (GRO) before a capture sees them.
topo_in "$BE" ethtool -K eth0 gro off >/dev/null

# host_stat REASON FIELD: decap.bpf.o's counter on b1 (`xlb host stats`).
host_stat() {
	topo_in "$BE" "$XLB" -j host stats | jq --arg r "$1" --arg f "$2" '.[$r][$f] // 0'
}

ipip_before=$(host_stat pass_ipip bytes)
icmp_before=$(e2e_stat 1 icmp_too_big)
drop_before=$(e2e_stat 1 drop_too_big)
if ! e2e_capture_start jumbo "$BE" eth0 "tcp dst port $TOPO_PORT"; then
	tl_fail backend_capture "tcpdump: $(cat "$E2E_TMP/jumbo.err")"
	exit 1
fi

topo_in "${TOPO_NS_CLIENT[1]}" timeout 120 "$TRAFFIC_ECHO" bulk "${TOPO_VIP4[1]}" \
	"$TOPO_PORT" -n 1 --bytes 1M >"$E2E_TMP/bulk4" 2>&1 &
p4=$!
topo_in "${TOPO_NS_CLIENT[2]}" timeout 120 "$TRAFFIC_ECHO" bulk "${TOPO_VIP6[1]}" \
	"$TOPO_PORT" -n 1 --bytes 1M >"$E2E_TMP/bulk6" 2>&1 &
p6=$!
wait $p4 $p6
grep -h '^bulk' "$E2E_TMP/bulk4" "$E2E_TMP/bulk6" | sed 's/^/  /'
tl_check ipv4_transfer_of_1MiB_completes test "$(traffic_total "$E2E_TMP/bulk4" ok)" -eq 1
tl_check ipv6_transfer_of_1MiB_completes test "$(traffic_total "$E2E_TMP/bulk6" ok)" -eq 1

full4=$(e2e_capture_stop jumbo "ip and ip[2:2] == 9000")
full6=$(e2e_capture_stop jumbo "ip6 and ip6[4:2] == 8960")
all=$(e2e_capture_stop jumbo)
echo "  b1's stack received $all client segments: $full4 IPv4 packets of 9000 bytes," \
     "$full6 IPv6 packets of 9000 bytes (payload 8960)"
# At least half of each upload in full-size segments (1 MiB is 118 of
# them); the rest may go in smaller ones as the sender's writes fall.
half=$(((1 << 20) / 2 / 8960))
tl_check ipv4_segments_of_9000_bytes_arrive test "$full4" -ge "$half"
tl_check ipv6_segments_of_9000_bytes_arrive test "$full6" -ge "$half"

# Each full-size one came in a frame of 9034 bytes (IPIP) or 9054
# (IP6IP6), counted whole.
ipip=$(($(host_stat pass_ipip bytes) - ipip_before))
cut=$(($(host_stat drop_inner_truncated packets) + $(host_stat drop_truncated packets)))
echo "  b1's decap.bpf.o: pass_ipip $ipip bytes more; $cut dropped as truncated"
tl_check backend_counts_jumbo_frames_whole test "$ipip" -ge $((full4 * 9034 + full6 * 9054))
tl_check backend_drops_nothing_as_truncated test "$cut" -eq 0

icmp_after=$(e2e_stat 1 icmp_too_big)
drop_after=$(e2e_stat 1 drop_too_big)
echo "  xlb: icmp_too_big $icmp_before -> $icmp_after, drop_too_big $drop_before -> $drop_after"
tl_check nothing_too_big_for_xlb test "$icmp_after" -eq "$icmp_before" -a "$drop_after" -eq "$drop_before"
exit "$TL_FAILED"
