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
#    for the outer header (route advmss); full-size frames (above 1500
#    bytes) leave the balancer, none above 1514, and xlb drops none as too
#    big.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

BYTES=10M
PER_FAMILY=$(e2e_count_for 3 1)
TOPO_BACKENDS=3

TUNNELLED="(ip proto 4 or ip6 proto 41)"

# frame_len NAME: the length of the first frame of capture NAME (0: none).
frame_len() {
	tcpdump -n -e -r "$E2E_TMP/$1.pcap" 2>/dev/null | head -n 1 |
		awk '{ for (i = 1; i < NF; i++) if ($i == "length") { sub(":", "", $(i + 1)); print $(i + 1) + 0; exit } }
		     END { if (!NR) print 0 }'
}

# transfer MODE: both families at once, PER_FAMILY connections each, while
# two captures on the router's port from the balancer each keep the first
# tunnelled frame above 1500 bytes and above 1514 bytes (a 1500-byte link's
# largest frame), if any.
transfer() {
	local mode=$1 p1 p2 ok
	e2e_capture_start over1514 "$TOPO_NS_RT" lb1 "$TUNNELLED and greater 1515" -c 1 &&
	e2e_capture_start over1500 "$TOPO_NS_RT" lb1 "$TUNNELLED and greater 1501" -c 1 ||
		tl_fail "${mode}_capture" "tcpdump did not start"
	traffic_client 1 bulk "${TOPO_VIP4[1]}" "$TOPO_PORT" -n $PER_FAMILY --bytes $BYTES >"$E2E_TMP/bulk4.$mode" &
	p1=$!
	traffic_client 2 bulk "${TOPO_VIP6[1]}" "$TOPO_PORT" -n $PER_FAMILY --bytes $BYTES >"$E2E_TMP/bulk6.$mode" &
	p2=$!
	wait $p1 $p2
	e2e_capture_stop over1500 >/dev/null
	e2e_capture_stop over1514 >/dev/null
	grep -h '^bulk' "$E2E_TMP/bulk4.$mode" "$E2E_TMP/bulk6.$mode" | sed 's/^/  /'
	ok=$(( $(traffic_total "$E2E_TMP/bulk4.$mode" ok) + $(traffic_total "$E2E_TMP/bulk6.$mode" ok) ))
	tl_check "${mode}_10MiB_transfers_complete" test "$ok" -eq $((2 * PER_FAMILY))
	E2E_OVER1514=$(frame_len over1514) E2E_OVER1500=$(frame_len over1500)
	echo "  $mode: a tunnelled frame above 1514 bytes: ${E2E_OVER1514/#0/none};" \
	     "above 1500 bytes: ${E2E_OVER1500/#0/none}"
}

e2e_up large_mtu_topology || exit 1
e2e_config large_mtu_config 1 1 2 3 || exit 1
transfer mtu
tl_check mtu_frames_carry_overhead test "$E2E_OVER1514" -gt 1514
topo_down

TOPO_MTU=1500 TOPO_ADVMSS=1
e2e_up large_mss_topology || exit 1
e2e_config large_mss_config 1 1 2 3 || exit 1
transfer mss
too_big=$(e2e_stat 1 drop_too_big)
echo "  mss: xlb drop_too_big = $too_big"
tl_check mss_frames_fit_1500 test "$E2E_OVER1514" -eq 0 -a "$E2E_OVER1500" -gt 1500 -a "$too_big" -eq 0
exit "$TL_FAILED"
