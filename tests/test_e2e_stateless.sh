#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end, GUE and the stateless mode with the backends' decap.bpf.o
# (TOPO_DECAP=xdp), real TCP over IPv4 and IPv6:
#  - a GUE VIP (tracked) serves new connections, every backend taking some;
#  - made stateless, it serves new connections with nothing in the
#    connection table; stateless UDP VIPs answer every request;
#  - long-lived connections (a message every 100 ms, none may go a second
#    unanswered) live through a backend added and then removed again:
#    the new owner of a slot passes their packets on to the previous one
#    (decap.bpf.o's forward counter rises), and nothing resets, stalls or
#    moves; new connections reach the added backend while it is there.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

HELD=$(e2e_count_for 48 16)
NEW=$(e2e_count_for 300 60)
STALL_MS=$(e2e_count_for 1000 4000)
TOPO_BACKENDS=4
TOPO_DECAP=xdp
HOLD=(-n "$HELD" --interval-ms 100 --stall-ms "$STALL_MS")
TRAFFIC_HOLD_PIDS=()

e2e_up stateless_topology || exit 1
e2e_config stateless_config 1 1 2 3 || exit 1
vip4=${TOPO_VIP4[1]} vip6=${TOPO_VIP6[1]}
tcp4="$vip4:$TOPO_PORT/tcp" tcp6="[$vip6]:$TOPO_PORT/tcp"
tl_on_exit traffic_hold_stop

# The backends' part of the second chance (docs/second-chance.md): each
# backend set up again with the others as its fleet (`xlb host setup
# --fleet`: forwarding on lo, where decap.bpf.o's FIB lookups are made,
# and a managed neighbour entry for every other backend). A backend passes
# a packet on by XDP_TX, which a veth delivers only to a peer that runs an
# XDP program: the bridge ports get the pass program.
second_chance_setup() {
	local k o fleet=()
	for o in 1 2 3 4; do
		fleet+=(--fleet "${TOPO_BE4[o]}/32" --fleet "${TOPO_BE6[o]}/128")
	done
	for k in 1 2 3 4; do
		topo_in "$TOPO_NS_RT" ip link set dev "b$k" xdpdrv \
			obj "$TOPO_BUILD/pass.bpf.o" sec xdp &&
		topo_host_setup "$k" "${fleet[@]}" || return 1
	done
}
second_chance_setup || { tl_fail second_chance_setup "xlb host setup --fleet on the backends"; exit 1; }

settle() { sleep "$(awk -v ms="$STALL_MS" 'BEGIN { print ms / 1000 + 0.3 }')"; }

# new_conns CASE CLIENT VIP: NEW connections, all completed, to backends
# BACKEND... each (counts printed).
new_conns() {
	local name=$1 i=$2 vip=$3 f=$E2E_TMP/new.$1 b ok=1; shift 3
	traffic_client "$i" conns "$vip" "$TOPO_PORT" -n "$NEW" -P 16 -q >"$f"
	echo "  $name: $(traffic_count "$f" | tr '\n' ' ')($(traffic_total "$f" ok) of $NEW)"
	[[ $(traffic_total "$f" ok) -eq $NEW ]] || ok=0
	for b in "$@"; do traffic_count "$f" | grep -q "^$b [1-9]" || ok=0; done
	tl_check "$name" test $ok -eq 1
}

hold_ok() {
	local name=$1 f line ok=1
	for f in "$E2E_TMP"/hold.v4 "$E2E_TMP"/hold.v6; do
		line=$(traffic_hold_status "$f")
		echo "  ${f##*/}: ${line:-no status}"
		[[ $line == *"reset=0 stall=0 moved=0"* ]] || ok=0
	done
	tl_check "$name" test $ok -eq 1
}

# Packets the backends' decap.bpf.o passed on to a previous backend
# (its forward counter, include/decap.h), summed over this topology's
# backends, as `xlb host stats` gives them.
forwarded() {
	local k sum=0 n
	for ((k = 1; k <= TOPO_BACKENDS; k++)); do
		n=$(topo_in "${TOPO_NS_BE[k]}" "$TOPO_BUILD/xlb" -j host stats | jq '.forward.packets // 0')
		sum=$((sum + n))
	done
	echo "$sum"
}

for v in "$tcp4" "$tcp6"; do e2e_xlb gue_set 1 vip set "$v" --encap gue; done
new_conns gue_tracked_serves_v4 1 "$vip4" b1 b2 b3
new_conns gue_tracked_serves_v6 2 "$vip6" b1 b2 b3

for v in "$tcp4" "$tcp6"; do e2e_xlb stateless_set 1 vip set "$v" --mode stateless; done
tl_check stateless_mode_set test "$(topo_xlb 1 -j show | jq -r --arg v "$tcp4" '.vips[] | select(.vip == $v) | "\(.mode) \(.encap)"')" == "stateless gue"
new_conns stateless_serves_v4 1 "$vip4" b1 b2 b3
new_conns stateless_serves_v6 2 "$vip6" b1 b2 b3
tl_check stateless_keeps_no_flows test "$(topo_xlb 1 -j show | jq --arg a "$tcp4" --arg b "$tcp6" \
	'[.vips[] | select(.vip == $a or .vip == $b) | .backends[].flows] | add')" -eq 0

# UDP: a datagram of a new flow goes to its slot's backend, whose
# unconnected server socket takes it (no second chance to take).
for v in "$vip4:$TOPO_UDP_PORT/udp" "[$vip6]:$TOPO_UDP_PORT/udp"; do
	e2e_xlb udp_stateless_set 1 vip set "$v" --mode stateless
done
for fam in 4 6; do
	[[ $fam == 4 ]] && vip=$vip4 || vip=$vip6
	traffic_client 1 udp "$vip" "$TOPO_UDP_PORT" -n "$NEW" -P 8 >"$E2E_TMP/u.$fam"
	echo "  udp$fam: $(traffic_total "$E2E_TMP/u.$fam" ok) of $NEW answered: $(traffic_count "$E2E_TMP/u.$fam" | tr '\n' ' ')"
	tl_check "stateless_udp${fam}_answered" test "$(traffic_total "$E2E_TMP/u.$fam" ok)" -eq "$NEW"
done

traffic_hold_start "$E2E_TMP/hold.v4" 1 "$vip4" "${HOLD[@]}" &&
traffic_hold_start "$E2E_TMP/hold.v6" 2 "$vip6" "${HOLD[@]}" ||
	{ tl_fail long_lived_open "could not open $HELD connections per family"; exit 1; }
echo "  held: $(cat "$E2E_TMP"/hold.v4 "$E2E_TMP"/hold.v6 | traffic_count /dev/stdin | tr '\n' ' ')"

before=$(forwarded)
for v in "$tcp4" "$tcp6"; do e2e_xlb add_b4 1 backend add "$v" "$(traffic_be_addr "$v" 4)"; done
settle
hold_ok long_lived_survive_add
after=$(forwarded)
echo "  forwarded by decap.bpf.o: $((after - before)) packets; history entries $(topo_xlb 1 -j show | jq --arg v "$tcp4" '.vips[] | select(.vip == $v) | .history | length')"
tl_check previous_backends_take_their_packets test "$after" -gt "$before"
new_conns new_conns_reach_added_backend 1 "$vip4" b4

for v in "$tcp4" "$tcp6"; do e2e_xlb del_b4 1 backend del "$v" "$(traffic_be_addr "$v" 4)"; done
settle
hold_ok long_lived_survive_remove
traffic_hold_stop
bad=$(cat "$E2E_TMP"/hold.v4 "$E2E_TMP"/hold.v6 | grep -c '^hold .* \(reset\|stall\|moved\) ')
echo "  $bad of $((2 * HELD)) long-lived connections broke"
tl_check long_lived_none_broke test "$bad" -eq 0
exit "$TL_FAILED"
