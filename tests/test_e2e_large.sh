#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end, large transfers: each connection uploads 10 MiB through the
# balancer (the encapsulated direction) and downloads 10 MiB back by direct
# server return, every byte checked, over IPv4 and IPv6 at once. The
# encapsulation adds 20 (IPIP) or 40 (IP6IP6) bytes to full-size client
# packets; two ways to carry them, each tested:
#  - mtu: the balancer-backend segment has an MTU of 1600, above the
#    clients' 1500; encapsulated frames larger than a 1500-byte link allows
#    are seen leaving the balancer;
#  - mss: every link at 1500, backends advertise an MSS that leaves room
#    for the outer header (route advmss); no frame leaving the balancer
#    exceeds 1514 bytes and xlb drops none as too big.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/e2e_lib.sh"

BYTES=10M
PER_FAMILY=$(e2e_count_for 3 1)
TOPO_BACKENDS=3

# largest_frame: the longest frame (Ethernet header included) of the
# capture's IPIP and IP6IP6 packets.
largest_frame() {
	tcpdump -n -e -r "$E2E_TMP/cap.pcap" 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) if ($i == "length") { sub(":", "", $(i + 1)); if ($(i + 1) + 0 > m) m = $(i + 1) + 0; break } }
		     END { print m + 0 }'
}

# transfer MODE: both families at once, PER_FAMILY connections each.
transfer() {
	local mode=$1 p1 p2 ok
	e2e_capture_start "$TOPO_NS_RT" lb1 "ip proto 4 or ip6 proto 41" ||
		tl_fail "${mode}_capture" "tcpdump did not start"
	traffic_client 1 bulk "${TOPO_VIP4[1]}" "$TOPO_PORT" -n $PER_FAMILY --bytes $BYTES >"$E2E_TMP/bulk4.$mode" &
	p1=$!
	traffic_client 2 bulk "${TOPO_VIP6[1]}" "$TOPO_PORT" -n $PER_FAMILY --bytes $BYTES >"$E2E_TMP/bulk6.$mode" &
	p2=$!
	wait $p1 $p2
	e2e_capture_stop "" >/dev/null
	grep -h '^bulk' "$E2E_TMP/bulk4.$mode" "$E2E_TMP/bulk6.$mode" | sed 's/^/  /'
	ok=$(( $(traffic_total "$E2E_TMP/bulk4.$mode" ok) + $(traffic_total "$E2E_TMP/bulk6.$mode" ok) ))
	tl_check "${mode}_10MiB_transfers_complete" test "$ok" -eq $((2 * PER_FAMILY))
	E2E_LARGEST=$(largest_frame)
	echo "  $mode: largest encapsulated frame from the balancer: $E2E_LARGEST bytes"
}

e2e_up large_mtu_topology || exit 1
e2e_config large_mtu_config 1 1 2 3 || exit 1
transfer mtu
tl_check mtu_frames_carry_overhead test "$E2E_LARGEST" -gt 1514
topo_down

TOPO_MTU=1500 TOPO_ADVMSS=1
e2e_up large_mss_topology || exit 1
e2e_config large_mss_config 1 1 2 3 || exit 1
transfer mss
too_big=$(e2e_stat 1 drop_too_big)
echo "  mss: xlb drop_too_big = $too_big"
tl_check mss_frames_fit_1500 test "$E2E_LARGEST" -gt 0 -a "$E2E_LARGEST" -le 1514 -a "$too_big" -eq 0
exit "$TL_FAILED"
