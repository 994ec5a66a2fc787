#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end, path MTU discovery: every link at 1500 bytes and no MSS
# clamp on the backends, as most networks are. A full-size client segment
# does not fit the balancer-backend segment once encapsulated (20 bytes of
# IPIP, 40 of IP6IP6); xlb answers it with ICMP "fragmentation needed" /
# "packet too big" (bpf/icmp.h), the client's kernel lowers its path MTU to
# the VIP, and uploads of 1 MiB over IPv4 and IPv6 complete instead of
# stalling for good. Checked: the transfers, every byte; icmp_too_big
# counted; the client's route cache holding the MTU xlb gave (1480, 1460).
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

TOPO_MTU=1500
TOPO_BACKENDS=2

# cached_mtu I ADDR: the MTU client I's kernel holds for ADDR (0: none).
cached_mtu() {
	ip -n "${TOPO_NS_CLIENT[$1]}" route get "$2" 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) if ($i == "mtu") { m = $(i + 1); exit } }
		     END { print m + 0 }' 
}

e2e_up pmtu_topology || exit 1
e2e_config pmtu_config 1 1 2 || exit 1
tl_check no_mtu_cached_before test "$(cached_mtu 1 "${TOPO_VIP4[1]}")" -eq 0

# udp_datagram I ADDR SIZE: one datagram of SIZE bytes from client I to
# ADDR's UDP VIP, unfragmented (IPv4: with DF, which the client's kernel
# sets on a socket's datagrams that fit the path MTU it knows).
udp_datagram() {
	topo_in "${TOPO_NS_CLIENT[$1]}" bash -c \
		"printf '%$3s' x >/dev/udp/$2/$TOPO_UDP_PORT"
}

# A UDP datagram too big is answered as a TCP segment is: counted once,
# and the client's kernel holds the MTU for the VIP at once.
before=$(e2e_stat 1 icmp_too_big)
udp_datagram 1 "${TOPO_VIP4[1]}" 1472	# 1500 bytes of IPv4
udp_datagram 2 "${TOPO_VIP6[1]}" 1452	# 1500 bytes of IPv6
sleep 0.5
after=$(e2e_stat 1 icmp_too_big)
echo "  two UDP datagrams too big: icmp_too_big $before -> $after;" \
     "route cache mtu $(cached_mtu 1 "${TOPO_VIP4[1]}"), $(cached_mtu 2 "${TOPO_VIP6[1]}")"
tl_check udp_datagrams_too_big_answered test $((after - before)) -eq 2 -a \
	"$(cached_mtu 1 "${TOPO_VIP4[1]}")" = 1480 -a "$(cached_mtu 2 "${TOPO_VIP6[1]}")" = 1460
# Then TCP, the clients' caches emptied: learned again from its segments.
for i in 1 2; do
	topo_in "${TOPO_NS_CLIENT[i]}" ip route flush cache >/dev/null 2>&1
	topo_in "${TOPO_NS_CLIENT[i]}" ip -6 route flush cache >/dev/null 2>&1
done

# The upload goes through the balancer (the encapsulated direction); a
# stalled one would wait for good: 120 s is far beyond a working one.
topo_in "${TOPO_NS_CLIENT[1]}" timeout 120 "$TRAFFIC_ECHO" bulk "${TOPO_VIP4[1]}" \
	"$TOPO_PORT" -n 1 --bytes 1M >"$E2E_TMP/bulk4" 2>&1 &
p4=$!
topo_in "${TOPO_NS_CLIENT[2]}" timeout 120 "$TRAFFIC_ECHO" bulk "${TOPO_VIP6[1]}" \
	"$TOPO_PORT" -n 1 --bytes 1M >"$E2E_TMP/bulk6" 2>&1 &
p6=$!
wait $p4 $p6
grep -h '^bulk' "$E2E_TMP/bulk4" "$E2E_TMP/bulk6" | sed 's/^/  /'
tl_check ipv4_upload_of_1MiB_completes test "$(traffic_total "$E2E_TMP/bulk4" ok)" -eq 1
tl_check ipv6_upload_of_1MiB_completes test "$(traffic_total "$E2E_TMP/bulk6" ok)" -eq 1

answered=$(e2e_stat 1 icmp_too_big)
dropped=$(e2e_stat 1 drop_too_big)
echo "  xlb: icmp_too_big $answered, drop_too_big $dropped"
tl_check too_big_packets_answered test "$answered" -gt 0

mtu4=$(cached_mtu 1 "${TOPO_VIP4[1]}")
mtu6=$(cached_mtu 2 "${TOPO_VIP6[1]}")
echo "  clients' route cache: ${TOPO_VIP4[1]} mtu $mtu4, ${TOPO_VIP6[1]} mtu $mtu6"
tl_check ipv4_client_learned_1480 test "$mtu4" = 1480
tl_check ipv6_client_learned_1460 test "$mtu6" = 1460
exit "$TL_FAILED"
