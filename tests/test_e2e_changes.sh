#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end, backend changes under live connections. Long-lived TCP
# connections (IPv4 from one client, IPv6 from the other) exchange a
# message every 100 ms; one without an answer for a second (four in the
# emulated vmtest VM) has stalled.
#  - adding a backend, draining one (weight 0) and an `xlb apply` that
#    reweights every backend: no connection resets, stalls or moves (the
#    connection table keeps each on its backend); new connections follow
#    the new table: the added backend takes some, the drained one none;
#  - removing a backend: exactly its connections break (it is gone), no
#    other connection moves, new connections avoid it;
#  - detaching xlb (`ip link set dev eth0 xdp off`) stops the service;
#    attaching again finds the configuration in the pinned maps and
#    traffic resumes.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

HELD=$(e2e_count_for 48 16)
NEW=$(e2e_count_for 600 150)
STALL_MS=$(e2e_count_for 1000 4000)
TOPO_BACKENDS=4
HOLD=(-n "$HELD" --interval-ms 100 --stall-ms "$STALL_MS")
TRAFFIC_HOLD_PIDS=()

e2e_up changes_topology || exit 1
e2e_config changes_config 1 1 2 3 || exit 1
vip4=${TOPO_VIP4[1]} vip6=${TOPO_VIP6[1]}
tcp4="$vip4:$TOPO_PORT/tcp" tcp6="[$vip6]:$TOPO_PORT/tcp"
tl_on_exit traffic_hold_stop

# hold_ok CASE: passes when every held connection still answers.
hold_ok() {
	local name=$1 f line ok=1
	for f in "$E2E_TMP"/hold.*[0-9a-z]; do
		[[ $f == *.pid ]] && continue
		line=$(traffic_hold_status "$f")
		echo "  ${f##*/}: ${line:-no status}"
		[[ $line == *"reset=0 stall=0 moved=0"* ]] || ok=0
	done
	tl_check "$name" test $ok -eq 1
}

# new_conns CASE CLIENT VIP: NEW fresh connections; prints per-backend
# counts into $E2E_TMP/new.CASE and fails CASE unless all complete.
new_conns() {
	local name=$1 i=$2 vip=$3 f=$E2E_TMP/new.$1
	traffic_client "$i" conns "$vip" "$TOPO_PORT" -n "$NEW" -P 16 -q >"$f"
	echo "  new connections: $(traffic_count "$f" | tr '\n' ' ')($(traffic_total "$f" ok) of $NEW)"
	[[ $(traffic_total "$f" ok) -eq $NEW ]] || tl_fail "$name" "not every new connection completed"
}

count_of() { traffic_count "$E2E_TMP/new.$1" | awk -v b="$2" '$1 == b { print $2 }' | grep . || echo 0; }

# start_holds TAG: HELD connections per family, in hold.TAG-v4 and -v6.
start_holds() {
	traffic_hold_start "$E2E_TMP/hold.$1-v4" 1 "$vip4" "${HOLD[@]}" &&
	traffic_hold_start "$E2E_TMP/hold.$1-v6" 2 "$vip6" "${HOLD[@]}"
}

settle() { sleep "$(awk -v ms="$STALL_MS" 'BEGIN { print ms / 1000 + 0.3 }')"; }

# --- add, drain, reweight ---
if ! start_holds a; then
	tl_fail long_lived_open "could not open $HELD connections per family"
	exit 1
fi
echo "  held: $(cat "$E2E_TMP"/hold.a-v4 "$E2E_TMP"/hold.a-v6 | traffic_count /dev/stdin | tr '\n' ' ')"

for v in "$tcp4" "$tcp6"; do e2e_xlb add_backend 1 backend add "$v" "$(traffic_be_addr "$v" 4)"; done
settle
hold_ok long_lived_survive_add_backend
new_conns new_conns_reach_added_backend 1 "$vip4"
tl_check new_conns_reach_added_backend test "$(count_of new_conns_reach_added_backend b4)" -gt 0

for v in "$tcp4" "$tcp6"; do e2e_xlb drain_backend 1 backend set "$v" "$(traffic_be_addr "$v" 2)" --weight 0; done
settle
echo "  drained b2: $(topo_xlb 1 -j show | jq -r --arg a "${TOPO_BE4[2]}" --arg v "$tcp4" \
	'.vips[] | select(.vip == $v) | .backends[] | select(.addr == $a) | "\(.flows // "no") flows in the connection table"')"
hold_ok long_lived_survive_drain
new_conns new_conns_avoid_drained_backend 2 "$vip4"
tl_check new_conns_avoid_drained_backend test "$(count_of new_conns_avoid_drained_backend b2)" -eq 0

# Every backend of every VIP gets a new weight (b2 stays drained): the
# live configuration from `xlb show -j`, reweighted, given to `xlb apply`.
weights=$(for k in 1 2 3 4; do
	w=$(( (k == 1) * 3 + (k == 3) * 2 + (k == 4) * 5 ))
	echo "{\"${TOPO_BE4[k]}\": $w, \"${TOPO_BE6[k]}\": $w}"
done | jq -s 'add')
topo_xlb 1 -j show | jq --argjson w "$weights" \
	'.vips[].backends[] |= (.weight = $w[.addr])' >"$E2E_TMP/reweight.json"
e2e_xlb apply_reweight 1 apply "$E2E_TMP/reweight.json" >/dev/null
settle
hold_ok long_lived_survive_apply_reweight
traffic_hold_stop
bad=$(cat "$E2E_TMP"/hold.a-v4 "$E2E_TMP"/hold.a-v6 | grep -c '^hold .* \(reset\|stall\|moved\) ')
echo "  $bad of $((2 * HELD)) long-lived connections broke; $(grep -h '^summary' "$E2E_TMP"/hold.a-v* | tr '\n' ' ')"
tl_check long_lived_none_broke test "$bad" -eq 0

# --- remove ---
rm -f "$E2E_TMP"/hold.*
if ! start_holds r; then
	tl_fail remove_open "could not open $HELD connections per family"
	exit 1
fi
for v in "$tcp4" "$tcp6"; do e2e_xlb remove_backend 1 backend del "$v" "$(traffic_be_addr "$v" 1)"; done
settle
traffic_hold_stop
on_b1=$(cat "$E2E_TMP"/hold.r-v4 "$E2E_TMP"/hold.r-v6 | awk '$1 == "hold" && $5 == "b1"' | wc -l)
b1_broke=$(cat "$E2E_TMP"/hold.r-v4 "$E2E_TMP"/hold.r-v6 |
	awk '$1 == "hold" && $5 == "b1" && ($4 == "reset" || $4 == "stall")' | wc -l)
others_broke=$(cat "$E2E_TMP"/hold.r-v4 "$E2E_TMP"/hold.r-v6 |
	awk '$1 == "hold" && $5 != "b1" && $4 != "ok"' | wc -l)
echo "  removed b1: $b1_broke of its $on_b1 connections broke, $others_broke of the others"
tl_check remove_breaks_its_connections test "$on_b1" -gt 0 -a "$b1_broke" -eq "$on_b1"
tl_check remove_moves_no_other_connection test "$others_broke" -eq 0
new_conns new_conns_avoid_removed_backend 1 "$vip4"
tl_check new_conns_avoid_removed_backend test "$(count_of new_conns_avoid_removed_backend b1)" -eq 0

# --- detach and attach again ---
# config: what `xlb show -j` reports, less the connection table's census,
# which traffic changes.
config() { topo_xlb 1 -j show | jq -S 'del(.vips[].backends[].flows)'; }
show_before=$(config)
topo_detach 1
traffic_client 1 conns "$vip4" "$TOPO_PORT" -n 8 -P 8 --timeout-ms 1000 -q >"$E2E_TMP/detached"
echo "  detached: $(traffic_total "$E2E_TMP/detached" ok) of 8 connections completed"
tl_check detach_stops_service test "$(traffic_total "$E2E_TMP/detached" ok)" -eq 0
show_after=$(config)
tl_check detach_keeps_config_in_pinned_maps test -n "$show_before" -a "$show_before" == "$show_after"
if ! topo_attach 1 >"$E2E_TMP/attach.log" 2>&1; then
	tl_fail reattach "$(tr '\n' ' ' <"$E2E_TMP/attach.log")"
	exit 1
fi
new_conns reattach_traffic_resumes 2 "$vip6"
tl_check reattach_traffic_resumes test "$(traffic_total "$E2E_TMP/new.reattach_traffic_resumes" ok)" -eq "$NEW"
tl_check reattach_same_config test "$(config)" == "$show_before"
exit "$TL_FAILED"
