#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Compound events behind ECMP: the scale-out topology of scripts/ecmp.sh
# (three balancers, four backends, BGP, the router's multipath routes)
# with long-lived TCP connections (a ping every 100 ms; no answer within
# 2 s is a stall) held through, in this order:
#   add     backend b4 added on every balancer (fingerprints agree again);
#   fail    a balancer withdrawn (xlb detached, its checker withdraws the
#           VIPs over BGP): the router moves the connections it carried;
#   remove  b4 removed on every balancer.
# Each mode starts from three backends and three balancers, opens its
# connections, then runs the events:
#  - tracked (connection table, IPIP): a connection that the router moves
#    after its slot changed owner lands on a balancer without its entry,
#    goes to b4, and is reset. Some break; how many must lie in the
#    binomial band of the share the churn lab (`xlb replay --churn`, mode
#    "tracking, flows move") predicts for the same connections, captured,
#    and the same events at the same times; no backend passes anything on;
#  - stateless (no per-flow state on the balancers, GUE, and on the
#    backends decap.bpf.o's second chance): b4 passes the packets of
#    connections it does not have on to the slot's previous backend, which
#    takes every one of them. None break, as the lab predicts.
# Prints per mode and event the held connections (ok, reset, stall, moved),
# the packets the backends passed on, and the lab's figures beside them.
# The stateless half is reported as skipped by an xlb without that mode.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"

name=ecmp_churn
if ! command -v bird >/dev/null; then
	tl_skip_env "$name" "bird (Debian bird2) is not installed; scripts/deps.sh installs it"
	exit "$TL_FAILED"
fi
tl_require_root "$name" || exit "$TL_FAILED"

TOPO_BALANCERS=3
TOPO_BACKENDS=4
TOPO_CLIENTS=2
# The second chance is decap.bpf.o's, on every kernel.
TOPO_DECAP=xdp
. "$(dirname "$0")/lib/e2e_lib.sh"
TOPO_PREFIX=xlbk
. "$XLB_TOP/scripts/ecmp.sh"

HELD=96		# per family
HOLD=(-n "$HELD" --interval-ms 100 --stall-ms 2000)
SETTLE=2.3	# more than one stall time
FAILED_LB=2
# Tables of 4,099 slots: a stateless VIP's history after a change names
# runs of slots, a few thousand at 65,537 slots, more than `xlb apply`
# takes back from `xlb show -j` for two VIPs.
M=4099

tl_on_exit ecmp_down
tl_on_exit traffic_hold_stop
if ! { ecmp_up && ecmp_second_chance; } >"$E2E_TMP/up.log" 2>&1; then
	tl_fail "$name" "$(tail -n 3 "$E2E_TMP/up.log" | tr '\n' ' ')"
	exit 1
fi
vip4=${TOPO_VIP4[1]} vip6=${TOPO_VIP6[1]}
for ((try = 0; try < 150; try++)); do
	(($(ecmp_sessions) == 2 * TOPO_BALANCERS)) && break
	sleep 0.1
done
seed=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# fleet MODE K...: the fleet's file with backends b<K>, its VIPs in MODE
# with tables of M slots.
fleet() {
	local mode=$1; shift
	ecmp_fleet_json "$seed" "$@" |
		jq --arg mode "$mode" --argjson m "$M" '.vips[] += {mode: $mode, table_size: $m}'
}

# apply_fleet CASE MODE K...: the fleet's file with backends b<K> applied
# on the first balancer, then its VIPs as `xlb show -j` gives them on the
# others: a stateless VIP's history says when each slot changed owner,
# which is the first balancer's time of the change, and the others take
# it from there (a file without history would make each balancer date
# the change itself). CASE fails unless every fingerprint agrees.
apply_fleet() {
	local case=$1 mode=$2 j; shift 2
	fleet "$mode" "$@" >"$E2E_TMP/fleet.json"
	if topo_xlb 1 apply "$E2E_TMP/fleet.json" >"$E2E_TMP/apply.log" 2>&1 &&
	   topo_xlb 1 -j show 2>>"$E2E_TMP/apply.log" |
		jq --slurpfile f "$E2E_TMP/fleet.json" '{config: $f[0].config, vips}' >"$E2E_TMP/fleet.lb1.json"; then
		for ((j = 2; j <= TOPO_BALANCERS; j++)); do
			topo_xlb "$j" apply "$E2E_TMP/fleet.lb1.json" >>"$E2E_TMP/apply.log" 2>&1 || break
		done
	fi
	if ((j <= TOPO_BALANCERS)) || [[ ! -s $E2E_TMP/fleet.lb1.json ]]; then
		tl_fail "$case" "$(tr '\n' ' ' <"$E2E_TMP/apply.log")"
		return 1
	fi
	tl_check "$case" ecmp_fingerprints_agree
}

# held_status MODE EVENT: the held connections of both families now, on
# appended to the figures as "EVENT held ok reset stall moved".
held_status() {
	local fam
	for fam in 4 6; do traffic_hold_status "$E2E_TMP/hold.$1.$fam"; done |
		awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); s[kv[1]] += kv[2] } }
		END { print s["held"] + 0, s["ok"] + 0, s["reset"] + 0, s["stall"] + 0, s["moved"] + 0 }' |
		sed "s/^/$2 /" >>"$E2E_TMP/events.$1"
}

# decap_total NAME: counter NAME of decap.bpf.o summed over the backends.
decap_total() {
	local k n sum=0
	for ((k = 1; k <= TOPO_BACKENDS; k++)); do
		n=$(ecmp_decap_stat "$k" "$1") || return 1
		sum=$((sum + n))
	done
	echo "$sum"
}

# lab MODE: the churn lab's figures for the captured connections of MODE
# and its events (times from the capture's first packet): "connections
# tracking_move stateless", the broken connections it predicts per mode.
lab() {
	local mode=$1 t0 at=() ev event ms
	t0=$(tcpdump -tt -n -c 1 -r "$E2E_TMP/$mode.pcap" 2>/dev/null |
		awk '{ printf "%.0f", $1 * 1000 }')
	while read -r event ms; do
		case $event in
		add) ev="add 1" ;;
		fail) ev="lb-fail $FAILED_LB" ;;
		remove) ev="remove 1" ;;
		esac
		at+=("$((ms - t0))ms:$ev")
	done <"$E2E_TMP/times.$mode"
	local IFS=,
	"$XLB" -j replay --algo maglev --table-size "$M" --backends 3 --balancers "$TOPO_BALANCERS" \
		--seed "$seed" --churn "${at[*]}" "$E2E_TMP/$mode.pcap" >"$E2E_TMP/lab.$mode" 2>&1 &&
	jq -r '.churn | "\(.connections) \(.algorithms[0].broken.tracking_move)" +
		" \(.algorithms[0].broken.stateless)"' "$E2E_TMP/lab.$mode"
}

# run MODE: the held connections through the three events in MODE.
run() {
	local mode=$1 fam i vip f broke fwd0 passed0 fwd passed lab_conns lab_move lab_stateless predicted lo hi
	echo "$mode: $((2 * HELD)) held connections, backends b1..b3, balancers 1..3"
	apply_fleet "${mode}_fleet_fingerprints_agree" "$mode" 1 2 3 || return 1
	if ! ecmp_wait_paths "1 2 3" "" 15000 >/dev/null; then
		tl_fail "${mode}_router_routes_3_balancers" "IPv4: $(ecmp_gateways 4), IPv6: $(ecmp_gateways 6)"
		return 1
	fi
	: >"$E2E_TMP/times.$mode"
	fwd0=$(decap_total forward) passed0=$(decap_total pass_forwarded)
	if ! e2e_capture_start "$mode" "$TOPO_NS_RT" brc \
		"tcp and dst port $TOPO_PORT and (dst host $vip4 or dst host $vip6)"; then
		tl_fail "${mode}_capture" "tcpdump: $(cat "$E2E_TMP/$mode.err")"
		return 1
	fi
	for fam in 4 6; do
		# IPv4 from client 1, IPv6 from client 2.
		if [[ $fam == 4 ]]; then i=1 vip=$vip4; else i=2 vip=$vip6; fi
		f=$E2E_TMP/hold.$mode.$fam
		if ! traffic_hold_start "$f" "$i" "$vip" "${HOLD[@]}" --src "$(ecmp_srcs "$i" $fam)"; then
			tl_fail "${mode}_long_lived_open" "IPv$fam: $(tail -n 1 "$f")"
			return 1
		fi
	done
	sleep 1
	held_status "$mode" open

	echo "  add: b4 on every balancer"
	echo "add $(ecmp_now_ms)" >>"$E2E_TMP/times.$mode"
	apply_fleet "${mode}_add_fingerprints_agree" "$mode" 1 2 3 4 || return 1
	sleep "$SETTLE"
	held_status "$mode" add

	echo "  fail: xlb detached from lb$FAILED_LB"
	echo "fail $(ecmp_now_ms)" >>"$E2E_TMP/times.$mode"
	topo_detach "$FAILED_LB"
	if ! ecmp_wait_paths "1 3" "" 15000 >/dev/null; then
		tl_fail "${mode}_fail_router_drops_balancer" "IPv4: $(ecmp_gateways 4), IPv6: $(ecmp_gateways 6)"
		return 1
	fi
	sleep "$SETTLE"
	held_status "$mode" fail

	echo "  remove: b4 from every balancer"
	echo "remove $(ecmp_now_ms)" >>"$E2E_TMP/times.$mode"
	apply_fleet "${mode}_remove_fingerprints_agree" "$mode" 1 2 3 || return 1
	sleep "$SETTLE"
	held_status "$mode" remove

	traffic_hold_stop
	e2e_capture_stop "$mode" >/dev/null
	fwd=$(( $(decap_total forward) - fwd0 )) passed=$(( $(decap_total pass_forwarded) - passed0 ))
	echo "  backends: $fwd packets passed on to the previous backend, $passed taken there"
	broke=$(cat "$E2E_TMP/hold.$mode".? | grep -c '^hold .* \(reset\|stall\|moved\) ')
	grep -h '^hold .* \(reset\|stall\|moved\) ' "$E2E_TMP/hold.$mode".? | head -n 3 | sed 's/^/  /'

	read -r lab_conns lab_move lab_stateless < <(lab "$mode")
	if [[ ! $lab_conns =~ ^[0-9]+$ ]]; then
		tl_fail "${mode}_churn_lab" "xlb replay --churn: $(head -c 300 "$E2E_TMP/lab.$mode")"
		return 1
	fi
	tl_check "${mode}_lab_sees_every_connection" test "$lab_conns" -eq $((2 * HELD))
	predicted=$lab_move
	[[ $mode == stateless ]] && predicted=$lab_stateless
	read -r lo hi < <("$BAND" $((2 * HELD)) "$(awk -v a="$predicted" -v n="$lab_conns" \
		'BEGIN { printf "%.6f", n ? a / n : 0 }')")
	echo "  $broke of $((2 * HELD)) held connections broke; the churn lab predicts" \
	     "$predicted of $lab_conns (band $lo..$hi; tracking with moves $lab_move, stateless $lab_stateless)"
	echo "$mode $broke $lab_move $lab_stateless $lo $hi $fwd" >>"$E2E_TMP/summary"
	tl_check "${mode}_breaks_within_lab_prediction" test "$broke" -ge "$lo" -a "$broke" -le "$hi"
	if [[ $mode == tracked ]]; then
		tl_check tracked_moved_connections_break test "$broke" -gt 0
		tl_check tracked_no_second_chance test "$fwd" -eq 0
	else
		tl_check stateless_no_connection_breaks test "$broke" -eq 0
		tl_check stateless_second_chance_carries_them test "$fwd" -gt 0 -a "$passed" -eq "$fwd"
	fi

	# Back to the start for the next mode: every balancer serving.
	topo_attach "$FAILED_LB" >"$E2E_TMP/attach.log" 2>&1 ||
		tl_fail "${mode}_reattach" "$(tr '\n' ' ' <"$E2E_TMP/attach.log")"
}

run tracked
if ! "$XLB" vip help 2>&1 | grep -q 'or stateless'; then
	tl_skip stateless_second_chance "this xlb has no stateless mode (xlb vip add --mode stateless)"
else
	run stateless
fi

echo "figures (held connections: held ok reset stall moved, cumulative):"
for mode in tracked stateless; do
	[[ -f $E2E_TMP/events.$mode ]] || continue
	sed "s/^/  $mode /" "$E2E_TMP/events.$mode"
done
echo "  mode, broke, the lab's tracking with moves and stateless, band, packets passed on:"
sed 's/^/  /' "$E2E_TMP/summary" 2>/dev/null
exit "$TL_FAILED"
