#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A VIP is never one of the balancer's own addresses (the host would
# answer it itself, and the probes of its backends would reach the
# balancer and find it up). Asked of the routes of the instance's
# namespace (RTN_LOCAL):
#  - `xlb vip add` refuses an address of the balancer's device, one of lo,
#    and an IPv6 one, with one line giving the reason, and nothing changes;
#  - `xlb apply` refuses a whole file that lists one among other VIPs;
#  - an address of another host on the same subnet is taken, and so are
#    VIPs whose prefix is routed to a blackhole, prohibited or unreachable
#    (as a balancer routes its VIPs to keep the kernel from forwarding
#    them), which the kernel's route lookup answers with an error.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached vip_local vl || exit 1
tl_in "$NS" sysctl -qw net.ipv6.conf.v0.disable_ipv6=0 &&
ip -n "$NS" addr add 198.51.100.2/24 dev v0 &&
ip -n "$NS" addr add 2001:db8::2/64 dev v0 nodad &&
ip -n "$NS" addr add 192.0.2.77/32 dev lo &&
x config set src4 198.51.100.2 &&
x vip add 192.0.2.10:80/tcp || { tl_fail vip_local_setup "cannot address v0 or add a VIP"; exit 1; }

WHY="the host answers packets to it itself"
fails_unchanged vip_add_refuses_an_address_of_the_device "198.51.100.2 is an address of this host" \
	x vip add 198.51.100.2:80/tcp
fails_unchanged vip_add_refuses_an_address_of_lo "$WHY" x vip add 192.0.2.77:443/tcp
fails_unchanged vip_add_refuses_an_ipv6_address_of_the_device "2001:db8::2 is an address of this host" \
	x vip add '[2001:db8::2]:80/udp'

cat >"$TMP/state.json" <<EOF
{"vips": [{"vip": "192.0.2.10:80/tcp", "backends": [{"addr": "198.51.100.11"}]},
          {"vip": "192.0.2.11:80/tcp"},
          {"vip": "198.51.100.2:53/udp"}]}
EOF
fails_unchanged apply_refuses_a_file_with_a_local_vip "vips[2]: 198.51.100.2 is an address of this host" \
	x apply "$TMP/state.json"

tl_check vip_add_takes_another_hosts_address x vip add 198.51.100.9:80/tcp
ip -n "$NS" route add blackhole 203.0.113.0/26 &&
ip -n "$NS" route add prohibit 203.0.113.64/26 &&
ip -n "$NS" route add unreachable 203.0.113.128/26 &&
ip -n "$NS" -6 route add blackhole 2001:db8:f::/64 ||
	tl_fail vip_local_routes "cannot add the routes"
tl_check vip_add_takes_a_blackholed_vip x vip add 203.0.113.1:80/tcp
tl_check vip_add_takes_a_prohibited_vip x vip add 203.0.113.65:80/tcp
tl_check vip_add_takes_an_unreachable_vip x vip add 203.0.113.129:80/tcp
tl_check vip_add_takes_a_blackholed_ipv6_vip x vip add '[2001:db8:f::1]:80/tcp'
exit "$TL_FAILED"
