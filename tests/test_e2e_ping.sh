#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Ping of a VIP end to end, in the topology of scripts/topology.sh (xlb
# attached with `ip link`):
#  - `ping` of the IPv4 and of the IPv6 VIP from a client gets every reply,
#    and they come from the balancer: icmp_echo_reply counts them, and no
#    backend sees an echo request;
#  - `xlb vip set --ping off` on one VIP of the address leaves it
#    answering (its UDP VIP still does); on every VIP of it, the pings
#    go unanswered, counted drop_vip_port;
#  - an echo flood is held to icmp-rate replies a second on each CPU,
#    the rest counted drop_echo_rate.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

PINGS=$(e2e_count_for 5 3)
TOPO_BACKENDS=2

e2e_up ping_topology || exit 1
e2e_config ping_config 1 1 2 || exit 1
vip4=${TOPO_VIP4[1]} vip6=${TOPO_VIP6[1]}
client=${TOPO_NS_CLIENT[1]}

# received FAMILY VIP ARGS...: how many replies `ping` got.
received() {
	local fam=$1 vip=$2; shift 2
	topo_in "$client" ping "-$fam" -n -q "$@" "$vip" 2>/dev/null |
		awk '/received/ { for (i = 1; i <= NF; i++) if ($(i) ~ /^received/) print $(i - 1) }'
}

for k in 1 2; do
	e2e_capture_start "be$k" "${TOPO_NS_BE[k]}" eth0 "icmp[0] == 8 or icmp6[0] == 128" ||
		tl_fail ping_capture "tcpdump on b$k did not start"
done
r0=$(e2e_stat 1 icmp_echo_reply)
got4=$(received 4 "$vip4" -c "$PINGS" -i 0.2 -W 2)
got6=$(received 6 "$vip6" -c "$PINGS" -i 0.2 -W 2)
r1=$(e2e_stat 1 icmp_echo_reply)
echo "  ping $vip4: ${got4:-0} of $PINGS replies; $vip6: ${got6:-0} of $PINGS; icmp_echo_reply +$((r1 - r0))"
tl_check ping_ipv4_vip_answered test "${got4:-0}" -eq "$PINGS"
tl_check ping_ipv6_vip_answered test "${got6:-0}" -eq "$PINGS"
tl_check the_balancer_answered test $((r1 - r0)) -eq $((2 * PINGS))
seen=$(( $(e2e_capture_stop be1) + $(e2e_capture_stop be2) ))
tl_check no_backend_saw_a_request test "$seen" -eq 0

# One VIP of the address off: its UDP VIP still answers.
e2e_xlb ping_off 1 vip set "$vip4:$TOPO_PORT/tcp" --ping off || exit 1
tl_check show_says_ping_off grep -q "vip $vip4:$TOPO_PORT/tcp .* ping off" <(topo_xlb 1 show)
got=$(received 4 "$vip4" -c 2 -i 0.2 -W 2)
tl_check one_vip_on_still_answers test "${got:-0}" -eq 2
e2e_xlb ping_off 1 vip set "$vip4:$TOPO_UDP_PORT/udp" --ping off || exit 1
d0=$(e2e_stat 1 drop_vip_port)
got=$(received 4 "$vip4" -c 2 -i 0.2 -W 1)
d1=$(e2e_stat 1 drop_vip_port)
echo "  every VIP of $vip4 with ping off: ${got:-0} replies, drop_vip_port +$((d1 - d0))"
tl_check every_vip_off_no_reply test "${got:-0}" -eq 0
tl_check every_vip_off_dropped test $((d1 - d0)) -ge 2

# A flood against 50 replies a second on each CPU.
e2e_xlb ping_rate 1 config set icmp-rate 50 || exit 1
cpus=$(nproc)
r0=$(e2e_stat 1 icmp_echo_reply) x0=$(e2e_stat 1 drop_echo_rate)
t0=$(date +%s%N)
topo_in "$client" ping -6 -n -q -f -c 3000 -w 5 "$vip6" >/dev/null 2>&1
t1=$(date +%s%N)
r1=$(e2e_stat 1 icmp_echo_reply) x1=$(e2e_stat 1 drop_echo_rate)
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
max=$(awk -v s="$secs" -v c="$cpus" 'BEGIN { printf "%d", (6 + 50 * s) * c }')
echo "  flood of ${secs} s: $((r1 - r0)) replies (at most $max), drop_echo_rate +$((x1 - x0))"
tl_check a_flood_is_held_to_the_rate test $((r1 - r0)) -le "$max"
tl_check the_rest_is_counted test $((x1 - x0)) -gt 0

exit $TL_FAILED
