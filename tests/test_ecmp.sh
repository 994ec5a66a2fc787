#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Scale-out: three balancers behind a router that spreads flows over them
# by ECMP, each announcing the VIPs over BGP with BIRD (scripts/ecmp.sh).
#  - one configuration file, `xlb apply`-ed on every balancer, gives every
#    balancer the same fingerprints; a balancer announces nothing before
#    xlb serves a VIP;
#  - 3,000 TCP connections per family from 64 client addresses each all
#    complete; they spread over the three balancers (the router's own
#    choice per connection, within the binomial band of a third each, and
#    every balancer's xlb counters agree with it) and over the backends
#    within the binomial band of the table's shares;
#  - long-lived connections (pinging every 100 ms; no answer within 2 s
#    is a stall) see no reset, stall or change of backend when:
#      a balancer's xlb is detached: its checker withdraws the VIPs, the
#        router reroutes the connections it carried to the others;
#      it is attached again: it announces and takes a share back;
#      a balancer's BIRD stops answering: BFD takes it out of the route;
#      a backend is added to the balancers one after another: while they
#        disagree the connection tables keep every connection on its
#        backend; afterwards the fingerprints agree again and new
#        connections reach the new backend.
# Prints per event the held and new connections attempted, completed,
# reset, and how long the router took to converge.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"

name=ecmp_topology
if ! command -v bird >/dev/null; then
	if [[ -n ${XLB_CI:-} ]]; then
		tl_fail "$name" "bird (Debian bird2) is missing, and CI must not skip"
	else
		tl_skip "$name" "bird (Debian bird2) is not installed; scripts/deps.sh installs it"
	fi
	exit "$TL_FAILED"
fi
tl_require_root "$name" || exit "$TL_FAILED"

TOPO_BALANCERS=3
TOPO_BACKENDS=4
TOPO_CLIENTS=2
. "$(dirname "$0")/lib/e2e_lib.sh"
TOPO_PREFIX=xlbm
. "$XLB_TOP/scripts/ecmp.sh"

CONNS=3000
NEW=600
HELD=96
HOLD=(-n "$HELD" --interval-ms 100 --stall-ms 2000)
SETTLE=2.3	# more than one stall time

tl_on_exit ecmp_down
if ! ecmp_up >"$E2E_TMP/up.log" 2>&1; then
	tl_fail "$name" "$(tail -n 3 "$E2E_TMP/up.log" | tr '\n' ' ')"
	exit 1
fi
vip4=${TOPO_VIP4[1]} vip6=${TOPO_VIP6[1]}

# vip_of FAMILY / client_of FAMILY: IPv4 traffic comes from client 1,
# IPv6 from client 2, each from its ECMP_SRCS addresses.
vip_of() { if [[ $1 == 4 ]]; then echo "$vip4"; else echo "$vip6"; fi; }
client_of() { if [[ $1 == 4 ]]; then echo 1; else echo 2; fi; }

# burst FILE FAMILY N: N new connections; per-connection lines in FILE.
burst() {
	local i
	i=$(client_of "$2")
	traffic_client "$i" conns "$(vip_of "$2")" "$TOPO_PORT" -n "$3" -P 16 \
		--src "$(ecmp_srcs "$i" "$2")" >"$1"
}

# carried FILE FAMILY: "J COUNT" for each balancer the router sends the
# completed connections of FILE through.
carried() {
	awk '$1 == "conn" && $4 == "ok" { print $3 }' "$1" | ecmp_route_of "$(vip_of "$2")" |
		awk '{ n[$2]++ } END { for (j in n) print j, n[j] }' | sort -n
}

# held_on J: how many held connections (both families) the router sends
# through balancer J now.
held_on() {
	local fam
	for fam in 4 6; do
		topo_in "${TOPO_NS_CLIENT[$(client_of $fam)]}" ss -Htn state established \
			dst "$(vip_of $fam | sed 's/.*:.*/[&]/')" | awk '{ print $3 }' |
			ecmp_route_of "$(vip_of $fam)"
	done | awk -v j="$1" '$2 == j' | wc -l
}

forwarded() {
	local j
	for ((j = 1; j <= TOPO_BALANCERS; j++)); do e2e_stat "$j" forward; done
}

# new_conns CASE EVENT: NEW fresh connections per family; CASE fails
# unless all complete. Records the event's figures, and in
# $E2E_TMP/new.EVENT.lb "J COUNT" per balancer that carried some.
new_conns() {
	local name=$1 event=$2 fam f ok=0 reset=0
	for fam in 4 6; do
		f=$E2E_TMP/new.$event.$fam
		burst "$f" "$fam" "$NEW"
		ok=$((ok + $(traffic_total "$f" ok)))
		reset=$((reset + $(grep -c '^conn .* reset' "$f")))
		carried "$f" "$fam" >"$f.lb"
	done
	cat "$E2E_TMP/new.$event".?.lb | awk '{ n[$1] += $2 } END { for (j in n) print j, n[j] }' |
		sort -n >"$E2E_TMP/new.$event.lb"
	echo "$event new $((2 * NEW)) $ok $reset" >>"$E2E_TMP/figures"
	echo "  new connections: $ok of $((2 * NEW)) completed, $reset reset;" \
	     "through $(awk '{ printf "lb%d %d ", $1, $2 }' "$E2E_TMP/new.$event.lb")"
	tl_check "$name" test "$ok" -eq $((2 * NEW))
}

# new_on EVENT J: how many of EVENT's new connections went through lb J.
new_on() { awk -v j="$2" '$1 == j { n = $2 } END { print n + 0 }' "$E2E_TMP/new.$1.lb"; }

# holds_ok CASE EVENT: every held connection still answers, from the
# backend it started on. Records the event's figures.
holds_ok() {
	local name=$1 event=$2 fam line ok=1 sum
	sum=$(for fam in 4 6; do
		line=$(traffic_hold_status "$E2E_TMP/hold.$fam")
		echo "  held IPv$fam: ${line:-no status}" >&2
		[[ $line == *"reset=0 stall=0 moved=0"* ]] || echo bad
		echo "$line"
	done)
	[[ $sum == *bad* ]] && ok=0
	echo "$event held $(awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); s[kv[1]] += kv[2] } }
		END { print s["held"], s["ok"], s["reset"], s["stall"], s["moved"] }' <<<"$sum")" \
		>>"$E2E_TMP/figures"
	tl_check "$name" test $ok -eq 1
}

# converged CASE EVENT WANT SINCE: the router routes both VIPs through
# exactly balancers WANT; records the time since SINCE (ms).
converged() {
	local name=$1 event=$2 want=$3 since=$4 ms
	if ms=$(ecmp_wait_paths "$want" "$since" 15000); then
		echo "  router: VIPs over balancers $want after $ms ms"
		echo "$event converge $ms" >>"$E2E_TMP/figures"
		tl_pass "$name"
	else
		tl_fail "$name" "no route over balancers $want after 15 s (IPv4: $(ecmp_gateways 4), IPv6: $(ecmp_gateways 6))"
	fi
}

fingerprints_agree() {
	local j first
	first=$(ecmp_fingerprints 1)
	for ((j = 2; j <= TOPO_BALANCERS; j++)); do
		[[ $(ecmp_fingerprints "$j") == "$first" ]] || return 1
	done
	[[ -n $first && $first != *null* ]]
}

# --- the fleet ---
for ((try = 0; try < 150; try++)); do
	(($(ecmp_sessions) == 2 * TOPO_BALANCERS)) && break
	sleep 0.1
done
echo "  router: $(ecmp_sessions) BGP sessions established"
sleep 0.5
tl_check no_announcement_before_config test -z "$(ecmp_gateways 4)$(ecmp_gateways 6)"

seed=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
ecmp_fleet_json "$seed" 1 2 3 >"$E2E_TMP/fleet.json"
t0=$(ecmp_now_ms)
if ! ecmp_apply_all "$E2E_TMP/fleet.json" >"$E2E_TMP/apply.log" 2>&1; then
	tl_fail fleet_apply "$(tr '\n' ' ' <"$E2E_TMP/apply.log")"
	exit 1
fi
for ((j = 1; j <= TOPO_BALANCERS; j++)); do
	echo "  lb$j: $(ecmp_fingerprints "$j" | tr '\n' ' ')"
done
tl_check fleet_same_config_same_fingerprints fingerprints_agree
converged router_routes_vips_over_3_balancers start "1 2 3" "$t0"

# --- 3,000 connections per family ---
for fam in 4 6; do
	f=$E2E_TMP/spread.$fam
	mapfile -t fwd0 < <(forwarded)
	burst "$f" "$fam" "$CONNS"
	mapfile -t fwd1 < <(forwarded)
	ok=$(traffic_total "$f" ok)
	reset=$(grep -c '^conn .* reset' "$f")
	echo "spread$fam new $CONNS $ok $reset" >>"$E2E_TMP/figures"
	echo "  tcp$fam: $ok of $CONNS connections completed, $reset reset" \
	     "($(traffic_total "$f" elapsed_ms) ms, from $ECMP_SRCS client addresses)"
	tl_check "tcp${fam}_${CONNS}_connections_complete" test "$ok" -eq "$CONNS"

	# Over the balancers: the router's choice for each connection, and
	# what each balancer's xlb forwarded.
	carried "$f" "$fam" >"$E2E_TMP/carried.$fam"
	read -r lo hi < <("$BAND" "$ok" 0.3333333333)
	fwd_total=0
	for ((j = 0; j < TOPO_BALANCERS; j++)); do
		fwd_total=$((fwd_total + fwd1[j] - fwd0[j]))
	done
	bad=0
	printf '  %-8s %12s %13s %16s\n' balancer connections band "forwarded pkts"
	for ((j = 1; j <= TOPO_BALANCERS; j++)); do
		n=$(awk -v j="$j" '$1 == j { print $2 }' "$E2E_TMP/carried.$fam")
		n=${n:-0}
		fwd=$((fwd1[j - 1] - fwd0[j - 1]))
		printf '  lb%-6d %6d %5.1f%% %6d..%-6d %8d %5.1f%%\n' "$j" "$n" \
			"$(awk -v a="$n" -v b="$ok" 'BEGIN { print 100 * a / b }')" "$lo" "$hi" \
			"$fwd" "$(awk -v a="$fwd" -v b="$fwd_total" 'BEGIN { print b ? 100 * a / b : 0 }')"
		echo "spread$fam share lb$j $n $ok $fwd $fwd_total" >>"$E2E_TMP/figures"
		((n >= lo && n <= hi && fwd > 0)) || bad=1
		# Every connection is about the same number of packets from
		# the client: a balancer's share of them is its share of the
		# connections.
		awk -v n="$n" -v ok="$ok" -v f="$fwd" -v t="$fwd_total" \
			'BEGIN { d = n / ok - f / t; exit !(d < 0.03 && d > -0.03) }' || bad=1
	done
	tl_check "tcp${fam}_spread_over_3_balancers" test $bad -eq 0

	key="$(vip_of "$fam"):$TOPO_PORT/tcp"
	[[ $fam == 6 ]] && key="[$vip6]:$TOPO_PORT/tcp"
	traffic_shares 1 "$key" >"$E2E_TMP/shares.$fam"
	traffic_count "$f" >"$E2E_TMP/counts.$fam"
	e2e_check_spread "tcp${fam}_spread_over_backends_within_binomial_band" "$ok" \
		"$E2E_TMP/shares.$fam" "$E2E_TMP/counts.$fam"
done

# --- long-lived connections ---
tl_on_exit traffic_hold_stop
for fam in 4 6; do
	i=$(client_of $fam)
	if ! traffic_hold_start "$E2E_TMP/hold.$fam" "$i" "$(vip_of $fam)" "${HOLD[@]}" \
		--src "$(ecmp_srcs "$i" $fam)"; then
		tl_fail long_lived_open "could not open $HELD IPv$fam connections: $(tail -n 1 "$E2E_TMP/hold.$fam")"
		exit 1
	fi
done
for ((j = 1; j <= TOPO_BALANCERS; j++)); do on[j]=$(held_on "$j"); done
echo "  held: $((2 * HELD)) connections, through lb1 ${on[1]}, lb2 ${on[2]}, lb3 ${on[3]}"

# --- withdraw: xlb detached from lb2 ---
carried_lb2=$(held_on 2)
echo "withdraw: xlb detached from lb2 ($carried_lb2 held connections through it)"
t0=$(ecmp_now_ms)
topo_detach 2
converged withdraw_router_drops_balancer withdraw "1 3" "$t0"
sed -n '$p' "$ECMP_RUN/health-lb2.log" | sed 's/^/  lb2 checker: /'
sleep "$SETTLE"
tl_check withdraw_balancer_carried_connections test "$carried_lb2" -gt 0
holds_ok withdraw_long_lived_survive withdraw
new_conns withdraw_new_connections_complete withdraw
tl_check withdraw_new_connections_avoid_balancer test "$(new_on withdraw 2)" -eq 0

# --- join: xlb attached to lb2 again ---
echo "join: xlb attached to lb2 again"
t0=$(ecmp_now_ms)
if ! topo_attach 2 >"$E2E_TMP/attach.log" 2>&1; then
	tl_fail join_attach "$(tr '\n' ' ' <"$E2E_TMP/attach.log")"
	exit 1
fi
converged join_router_adds_balancer join "1 2 3" "$t0"
sleep "$SETTLE"
holds_ok join_long_lived_survive join
lb2_before=$(e2e_stat 2 forward)
new_conns join_new_connections_complete join
joined_held=$(held_on 2)
joined_new=$(( $(e2e_stat 2 forward) - lb2_before ))
echo "  lb2 now carries $joined_held held connections and forwarded $joined_new packets of new ones"
tl_check join_balancer_takes_share test "$joined_held" -gt 0 -a "$joined_new" -gt 0

# --- failure: lb3's BIRD stops answering (frozen) ---
echo "failure: lb3's BIRD frozen (xlb keeps running; BFD notices)"
t0=$(ecmp_now_ms)
kill -STOP "$(cat "$ECMP_RUN/lb3.pid")"
converged failure_bfd_drops_balancer failure "1 2" "$t0"
sleep "$SETTLE"
holds_ok failure_long_lived_survive failure
new_conns failure_new_connections_complete failure
tl_check failure_new_connections_avoid_balancer test "$(new_on failure 3)" -eq 0
t0=$(ecmp_now_ms)
kill -CONT "$(cat "$ECMP_RUN/lb3.pid")"
converged failure_balancer_rejoins rejoin "1 2 3" "$t0"
sleep "$SETTLE"
holds_ok rejoin_long_lived_survive rejoin

# --- a backend added to the balancers one after another ---
echo "rollout: backend b4 added with xlb apply, one balancer at a time"
ecmp_fleet_json "$seed" 1 2 3 4 >"$E2E_TMP/fleet2.json"
window_differs=1
for ((j = 1; j <= TOPO_BALANCERS; j++)); do
	if ! topo_xlb "$j" apply "$E2E_TMP/fleet2.json" >"$E2E_TMP/apply.log" 2>&1; then
		tl_fail rollout_apply "lb$j: $(tr '\n' ' ' <"$E2E_TMP/apply.log")"
		exit 1
	fi
	echo "  lb$j updated: $(ecmp_fingerprints "$j" | tr '\n' ' ')"
	if ((j < TOPO_BALANCERS)); then
		[[ $(ecmp_fingerprints "$j") != "$(ecmp_fingerprints $((j + 1)))" ]] || window_differs=0
		sleep 1
	fi
done
tl_check rollout_window_tables_differ test $window_differs -eq 1
tl_check rollout_fingerprints_agree fingerprints_agree
sleep "$SETTLE"
holds_ok rollout_long_lived_survive rollout
new_conns rollout_new_connections_complete rollout
on_b4=$(cat "$E2E_TMP"/new.rollout.? | traffic_count /dev/stdin | awk '$1 == "b4" { print $2 }')
echo "  new connections on b4: ${on_b4:-0}"
tl_check rollout_new_connections_reach_added_backend test "${on_b4:-0}" -gt 0

# --- every long-lived connection, at the end ---
traffic_hold_stop
broke=$(cat "$E2E_TMP"/hold.4 "$E2E_TMP"/hold.6 | grep -c '^hold .* \(reset\|stall\|moved\) ')
echo "  $broke of $((2 * HELD)) long-lived connections broke over all events"
grep -h '^hold .* \(reset\|stall\|moved\) ' "$E2E_TMP"/hold.4 "$E2E_TMP"/hold.6 | head -n 5 | sed 's/^/  /'
tl_check long_lived_none_broke test "$broke" -eq 0

echo "figures (held: connections ok reset stall moved, cumulative; new: attempted completed reset):"
awk '
	$2 == "converge" { conv[$1] = $3 " ms" }
	$2 == "held" { held[$1] = $3 " " $4 " " $5 " " $6 " " $7 }
	$2 == "new" { nw[$1] = $3 " " $4 " " $5 }
	$2 != "share" && !seen[$1]++ { order[++n] = $1 }
	END {
		printf "  %-9s %-22s %-16s %s\n", "event", "held", "new", "router converged"
		for (i = 1; i <= n; i++) { e = order[i]
			printf "  %-9s %-22s %-16s %s\n", e, held[e] ? held[e] : "-",
				nw[e] ? nw[e] : "-", conv[e] ? conv[e] : "-" }
	}' "$E2E_TMP/figures"
exit "$TL_FAILED"
