#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Source ranges end to end (xlb vip set --allow/--deny), real TCP through
# the topology of scripts/topology.sh (xlb attached with `ip link`, two
# backends answering by direct server return), on the TCP VIPs of each
# family:
#  - an allow list holding the client's prefix: every connection
#    completes, nothing is counted as denied;
#  - the client's prefix denied, or an allow list without it: every
#    connection fails; no SYN reaches a backend (the VIP's and its
#    backends' packet counters and the backends' own TCP counters stay
#    still) and none reaches the connection table; drop_src_denied rises,
#    globally and for that VIP, by at least the SYNs the client sent, and
#    `xlb stats` prints the VIP's count as `xlb stats -j` does; the VIP of
#    the same address on another port and protocol still answers;
#  - the longest matching prefix decides: with the client's /24 (/64)
#    allowed and its /32 (/128) denied, its connections fail while those
#    of another address of the /24 (/64) complete; with the /24 (/64)
#    denied and the other address's /32 (/128) allowed, the reverse;
#  - --deny none, then --allow any, empty the lists (`xlb show -j`) and
#    every connection completes again;
#  - connections established before their prefix is denied: the next
#    exchange of every one stalls, its packets counted as drop_src_denied
#    and none forwarded; --deny none lets new connections in again;
#  - with 0.0.0.0/0 and ::/0 denied, the health checker (`xlb health
#    run`, whose probes leave through the probe path, not the XDP
#    program) finds every backend up and keeps it up, while the clients'
#    connections fail.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

CONNS=$(e2e_count_for 64 30)
DENIED=$(e2e_count_for 32 12)
HELD=$(e2e_count_for 16 8)
# How long a connection that cannot complete is given: its first SYN (the
# ones that complete take a millisecond or two).
WAIT_MS=$(e2e_count_for 500 3000)
STALL_MS=$(e2e_count_for 500 2000)
INTERVAL_MS=300
TIMEOUT_MS=200
MARGIN_MS=$(e2e_count_for 1500 8000)
TOPO_BACKENDS=2

e2e_up src_ranges_topology || exit 1
e2e_config src_ranges_config 1 1 2 || exit 1
CLIENT_NS=${TOPO_NS_CLIENT[1]}
PIN=$(topo_pin_dir 1)
CHK_PID=
CHK_LOG=$E2E_TMP/checker.log

x() { topo_xlb 1 "$@"; }
ms_now() { echo $(( $(date +%s%N) / 1000000 )); }

# fam F: the names of family F (4 or 6): VIP and KEY (the TCP VIP), ME
# (client 1's address), OTHER (a second address of client 1, in the same
# /24 or /64), NET (that prefix), ME1 and OTHER1 (the two as /32 or
# /128), ELSEWHERE (a prefix without either), ALL (the family's whole
# space), SFX (case names).
fam() {
	if [[ $1 == 4 ]]; then
		VIP=${TOPO_VIP4[1]} KEY="${TOPO_VIP4[1]}:$TOPO_PORT/tcp"
		ME=${TOPO_CLIENT4[1]} OTHER=203.0.113.150 NET=203.0.113.0/24
		ME1=$ME/32 OTHER1=$OTHER/32 ELSEWHERE=198.51.100.0/24 ALL=0.0.0.0/0
	else
		VIP=${TOPO_VIP6[1]} KEY="[${TOPO_VIP6[1]}]:$TOPO_PORT/tcp"
		ME=${TOPO_CLIENT6[1]} OTHER=2001:db8:c::150 NET=2001:db8:c::/64
		ME1=$ME/128 OTHER1=$OTHER/128 ELSEWHERE=2001:db8:b::/64 ALL=::/0
	fi
	SFX=ipv$1
}
if ! ip -n "$CLIENT_NS" addr add 203.0.113.150/24 dev eth0 ||
   ! ip -n "$CLIENT_NS" addr add 2001:db8:c::150/64 dev eth0 nodad; then
	tl_fail src_ranges_addresses "cannot add client 1's second addresses"
	exit 1
fi

# ---- what the balancer, the client and the backends count ----
# counts: "G V F C" from `xlb stats -j`: drop_src_denied globally (G) and
# for the VIP (V), the packets forwarded for the VIP, its own and its
# backends' added up (F), and the connection table's lookups (C).
counts() {
	x -j stats | jq -r --arg k "$KEY" '(.vips[] | select(.vip == $k)) as $v |
		[.counters.drop_src_denied.packets, $v.drop_src_denied.packets,
		 $v.packets + ([$v.backends[].packets] | add),
		 .counters.ct_hit.packets + .counters.ct_miss.packets] | @tsv'
}
# mib NAMES FILE...: the sum of the SNMP counters NAMES ("Tcp:InSegs
# TcpExt:TCPSynRetrans") in FILEs of the form of /proc/net/snmp.
mib() {
	awk -v want="$1" '
		BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) wanted[w[i]] = 1 }
		# Each table is a line of names, then a line of values.
		{ p = $1; if (!(p in head)) { head[p] = $0; next }
		  split(head[p], h, " "); delete head[p]; sub(/:$/, "", p)
		  for (i = 2; i <= NF; i++) if ((p ":" h[i]) in wanted) s += $i }
		END { print s + 0 }' "${@:2}"
}
# syns_sent: the SYNs client 1 has sent, first ones and retransmissions.
syns_sent() {
	topo_in "$CLIENT_NS" cat /proc/net/snmp /proc/net/netstat |
		mib "Tcp:ActiveOpens TcpExt:TCPSynRetrans" -
}
# backend_segments: the TCP segments the backends have received, read
# through a process of each backend's namespace (its server).
BE_SNMP=()
for ((k = 1; k <= TOPO_BACKENDS; k++)); do
	pid=$(ip netns pids "${TOPO_NS_BE[k]}" | head -n 1)
	BE_SNMP+=("/proc/$pid/net/snmp")
done
backend_segments() { mib Tcp:InSegs "${BE_SNMP[@]}"; }

# set_ranges CASE ARGS...: xlb vip set KEY ARGS...; stops the test on error.
set_ranges() {
	local name=$1; shift
	e2e_xlb "$name" 1 vip set "$KEY" "$@" || exit 1
}
# lists: the VIP's allow and deny lists as `xlb show -j` gives them.
lists() {
	x -j show | jq -c --arg k "$KEY" '.vips[] | select(.vip == $k) | { allow, deny }'
}

# conns FILE N ARGS...: N connections from client 1 to VIP, the report in
# $E2E_TMP/FILE; from ME unless ARGS name a --src (the kernel might pick
# OTHER for IPv6). Up to 64 at once, so that those left waiting for an
# answer that never comes wait together.
conns() {
	local f=$1 n=$2 src=(--src "$ME"); shift 2
	[[ " $* " == *" --src "* ]] && src=()
	traffic_client 1 conns "$VIP" "$TOPO_PORT" -n "$n" -P $((n < 64 ? n : 64)) \
		"${src[@]}" "$@" >"$E2E_TMP/$f" 2>&1
}

# allowed CASE [ARGS...]: CONNS connections complete, none counted denied.
allowed() {
	local name=$1 ok v0 v1; shift
	read -r _ v0 _ _ < <(counts)
	conns "$name" "$CONNS" -q "$@"
	read -r _ v1 _ _ < <(counts)
	ok=$(traffic_total "$E2E_TMP/$name" ok)
	echo "  $name: $ok of $CONNS complete; $(traffic_count "$E2E_TMP/$name" | xargs)"
	tl_check "${name}_complete" test "$ok" -eq "$CONNS"
	tl_check "${name}_none_denied" test "$v1" -eq "$v0"
}

# denied CASE [ARGS...]: DENIED connections, every one failing; nothing
# reaches a backend nor the connection table; drop_src_denied rises
# globally and for the VIP by at least the SYNs sent.
denied() {
	local name=$1 ok syn0 syn seg0 seg g0 v0 f0 c0 g1 v1 f1 c1; shift
	read -r g0 v0 f0 c0 < <(counts)
	syn0=$(syns_sent) seg0=$(backend_segments)
	conns "$name" "$DENIED" --timeout-ms "$WAIT_MS" -q "$@"
	syn=$(( $(syns_sent) - syn0 )) seg=$(( $(backend_segments) - seg0 ))
	read -r g1 v1 f1 c1 < <(counts)
	ok=$(traffic_total "$E2E_TMP/$name" ok)
	echo "  $name: $ok of $DENIED complete, $syn SYNs sent; drop_src_denied" \
	     "+$((g1 - g0)), +$((v1 - v0)) for the VIP; forwarded +$((f1 - f0));" \
	     "backends received $seg TCP segments"
	tl_check "${name}_connections_fail" test "$ok" -eq 0
	tl_check "${name}_nothing_reaches_a_backend" test "$f1" -eq "$f0" -a "$seg" -eq 0
	tl_check "${name}_no_connection_table_lookup" test "$c1" -eq "$c0"
	tl_check "${name}_counted_globally" test "$syn" -ge "$DENIED" -a $((g1 - g0)) -ge "$syn"
	tl_check "${name}_counted_for_the_vip" test $((v1 - v0)) -ge "$syn"
}

# by_src FILE I: "OK FAILED", FILE's connections from the I-th (0, 1)
# address of a --src list of two (the tool binds connection IDX to
# address IDX mod 2; a connection that failed shows no local address).
by_src() {
	awk -v i="$2" '$1 == "conn" && $2 % 2 == i { if ($4 == "ok") ok++; else bad++ }
		END { print ok + 0, bad + 0 }' "$1"
}

# longest CASE: with the lists set, DENIED connections from each of ME
# and OTHER alternately; those from OTHER complete, those from ME fail,
# and the VIP counts at least one SYN a connection from ME.
longest() {
	local name=$1 v0 v1 ok_in bad_in ok_out bad_out
	read -r _ v0 _ _ < <(counts)
	conns "$name" $((2 * DENIED)) --timeout-ms "$WAIT_MS" --src "$ME,$OTHER"
	read -r _ v1 _ _ < <(counts)
	read -r ok_in bad_in < <(by_src "$E2E_TMP/$name" 1)
	read -r ok_out bad_out < <(by_src "$E2E_TMP/$name" 0)
	echo "  $name: from $OTHER $ok_in ok $bad_in failed; from $ME $ok_out ok" \
	     "$bad_out failed; drop_src_denied +$((v1 - v0)) for the VIP"
	tl_check "${name}_denied_address_fails" test "$ok_out" -eq 0 -a "$bad_out" -eq "$DENIED" \
		-a $((v1 - v0)) -ge "$DENIED"
	tl_check "${name}_allowed_address_completes" test "$ok_in" -eq "$DENIED" -a "$bad_in" -eq 0
}

for f in 4 6; do
	fam $f
	echo "  IPv$f: $KEY, client $ME and $OTHER"

	# ---- an allow list with the client's prefix ----
	set_ranges "allow_set_$SFX" --allow "$NET"
	tl_check "allow_listed_$SFX" test "$(lists)" == "{\"allow\":[\"$NET\"],\"deny\":[]}"
	allowed "allowed_by_prefix_$SFX"

	# ---- the client's prefix denied; an allow list without it ----
	set_ranges "deny_set_$SFX" --allow any --deny "$NET"
	denied "denied_prefix_$SFX"
	# The text form says what -j says (nothing moves between the two).
	text=$(x stats | grep -F "vip $KEY ")
	json=$(x -j stats | jq -r --arg k "$KEY" \
		'.vips[] | select(.vip == $k) | .drop_src_denied.packets')
	tl_check "denied_text_stats_agree_$SFX" grep -q " drop_src_denied $json\$" <<<"$text"
	traffic_client 1 udp "$VIP" "$TOPO_UDP_PORT" -n 8 -q >"$E2E_TMP/udp.$SFX" 2>&1
	tl_check "denied_other_vip_of_the_address_answers_$SFX" \
		test "$(traffic_total "$E2E_TMP/udp.$SFX" ok)" -eq 8
	set_ranges "deny_set_$SFX" --deny none --allow "$ELSEWHERE"
	denied "not_in_allow_list_$SFX"

	# ---- the longest match decides ----
	set_ranges "longest_set_$SFX" --allow "$NET" --deny "$ME1"
	longest "longest_host_denied_in_allowed_net_$SFX"
	set_ranges "longest_set_$SFX" --allow "$OTHER1" --deny "$NET"
	longest "longest_host_allowed_in_denied_net_$SFX"

	# ---- --deny none, --allow any ----
	set_ranges "restore_set_$SFX" --allow "$NET" --deny "$ME1"
	set_ranges "restore_set_$SFX" --deny none
	tl_check "deny_none_empties_deny_$SFX" test "$(lists)" == "{\"allow\":[\"$NET\"],\"deny\":[]}"
	allowed "deny_none_restores_$SFX"
	set_ranges "restore_set_$SFX" --allow "$ELSEWHERE"
	set_ranges "restore_set_$SFX" --allow any
	tl_check "allow_any_empties_allow_$SFX" test "$(lists)" == '{"allow":[],"deny":[]}'
	allowed "allow_any_restores_$SFX" --src "$ME,$OTHER"
done

# ---- established connections, their prefix denied ----
# Last of the TCP cases: the connections cut here leave their sockets
# retransmitting for a while, packets that must not meet the counts above.
tl_on_exit traffic_hold_stop
for f in 4 6; do
	fam $f
	name=established_then_denied_$SFX
	if ! traffic_hold_start "$E2E_TMP/$name" 1 "$VIP" -n "$HELD" --src "$ME" \
		--interval-ms 100 --stall-ms "$STALL_MS"; then
		tl_fail "${name}_open" "$(tail -n 2 "$E2E_TMP/$name" | xargs)"
		continue
	fi
	st=$(traffic_hold_status "$E2E_TMP/$name")
	tl_check "${name}_open" grep -q " ok=$HELD " <<<"$st"
	set_ranges "$name" --deny "$ME1"
	read -r _ v0 f0 _ < <(counts)
	# The status of a round that began after the deny: every connection
	# stalls in it (a round under way at the deny may still end well).
	for _ in 1 2 3; do
		st=$(traffic_hold_status "$E2E_TMP/$name")
		grep -q " stall=$HELD " <<<"$st" && break
	done
	read -r _ v1 f1 _ < <(counts)
	echo "  $name: $st; drop_src_denied +$((v1 - v0)) for the VIP, forwarded +$((f1 - f0))"
	tl_check "${name}_every_connection_stalls" grep -q " stall=$HELD " <<<"$st"
	tl_check "${name}_nothing_forwarded" test "$f1" -eq "$f0"
	tl_check "${name}_counted_for_the_vip" test $((v1 - v0)) -ge "$HELD"
	traffic_hold_stop
	set_ranges "$name" --deny none
	allowed "after_established_deny_none_restores_$SFX"
done

# ---- health probes under a VIP that denies every client ----
checker_stop() {
	[[ -n $CHK_PID ]] || return 0
	kill -TERM "$CHK_PID" 2>/dev/null
	wait "$CHK_PID" 2>/dev/null
	CHK_PID=
}
tl_on_exit checker_stop
# health_of KEY: "HEALTH DOWNS" of every backend of VIP KEY, one a line.
health_of() {
	x -j health show | jq -r --arg k "$1" \
		'.backends[] | select(.vip == $k) | "\(.health) \(.downs)"'
}
# all_up: every backend of both TCP VIPs up, never down.
all_up() {
	local f
	for f in 4 6; do
		fam $f
		[[ $(health_of "$KEY" | grep -c '^up 0$') -eq $TOPO_BACKENDS ]] || return 1
	done
}
for f in 4 6; do
	fam $f
	set_ranges "health_set_$SFX" --deny "$ALL" --health tcp --interval ${INTERVAL_MS}ms \
		--timeout ${TIMEOUT_MS}ms --rise 2 --fall 2
done
nsenter --net="/run/netns/${TOPO_NS_LB[1]}" "$XLB" --pin-dir "$PIN" health run \
	--obj "$BUILD/hc.bpf.o" >"$CHK_LOG" 2>&1 &
CHK_PID=$!
limit=$(( 2 * INTERVAL_MS + TIMEOUT_MS + MARGIN_MS )) start=$(ms_now)
until all_up || (( $(ms_now) - start > limit )); do sleep 0.05; done
waited=$(( $(ms_now) - start ))
if all_up; then
	echo "  every backend of the deny-everything VIPs up by health in $waited ms (bound $limit ms)"
	tl_pass health_probes_pass_a_deny_everything_vip
else
	for f in 4 6; do
		fam $f
		echo "  $KEY: $(health_of "$KEY" | xargs)"
	done
	sed 's/^/  checker: /' "$CHK_LOG"
	tl_fail health_probes_pass_a_deny_everything_vip "not within $limit ms"
fi
# Two more falls' worth of probes, while clients are turned away.
pids=()
for f in 4 6; do
	fam $f
	conns "health_denied_$SFX" "$DENIED" --timeout-ms "$WAIT_MS" -q &
	pids+=($!)
done
sleep "$(awk -v ms=$(( 2 * 2 * INTERVAL_MS )) 'BEGIN { print ms / 1000 }')"
wait "${pids[@]}"
for f in 4 6; do
	fam $f
	out=$E2E_TMP/health_denied_$SFX
	tl_check "health_clients_denied_$SFX" test "$(traffic_total "$out" ok)" -eq 0 \
		-a "$(traffic_total "$out" failed)" -eq "$DENIED"
done
tl_check health_backends_stay_up all_up
out_of_table=$(x -j show | jq '[.vips[] | select(.vip | endswith("/tcp")) | .backends[] |
	select(.out_by_health or .slots == 0)] | length')
tl_check health_backends_in_table test "$out_of_table" -eq 0
checker_stop

exit "$TL_FAILED"
