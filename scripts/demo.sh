#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `make demo`: xlb balancing real TCP connections between network
# namespaces on this machine, narrated. Builds the topology of
# scripts/topology.sh (two clients, a router, one balancer, four backends),
# attaches xlb with `ip link` as a user would, configures it with `xlb`, and
#   1. opens a few thousand short connections and compares the spread with
#      the shares of the Maglev table;
#   2. holds long-lived connections while a backend is added and another
#      drained, and shows which survived, where one of the drained
#      backend's connections goes and why (`xlb lookup`), how many it
#      still holds (`xlb conntrack count`), and where new connections go;
#   3. removes a backend and shows whose connections moved;
#   4. stops a backend's service under the health checker (`xlb health
#      run`), shows it taken out of the tables, new connections avoiding
#      it, and back once the service starts again;
#   5. shows `xlb stats` and plots the spread (gnuplot, when present);
#   6. removes everything, also when interrupted or when a step fails.
# Run as root after `make` (make demo does both).
set -uo pipefail

TOPO_PREFIX=xlbd
TOPO_CLIENTS=2
TOPO_BALANCERS=1
TOPO_BACKENDS=4
TOPO_QUIET=1
. "$(dirname "$0")/topology.sh"
. "$(dirname "$0")/traffic.sh"

SHORT=3000		# step 1: short connections
HELD=60			# step 2 and 3: long-lived connections, per family
NEW=1000		# new connections after each change
NEW_HC=300		# step 4: new connections to each VIP while a backend is down
PNG=$TOPO_BUILD/demo-spread.png
topo_names
VIP4=${TOPO_VIP4[1]}
VIP6=${TOPO_VIP6[1]}
TMP=$(mktemp -d)
START=$SECONDS
CHK_LOG=$TMP/checker.log
CHK_PID=

if [[ -t 1 ]]; then B=$'\e[1m' D=$'\e[2m' N=$'\e[0m'; else B= D= N=; fi
say()  { printf '%s\n' "$*"; }
step() { printf '\n%s== %s ==%s\n' "$B" "$*" "$N"; }
cmd()  { printf '  %s$ %s%s\n' "$D" "$*" "$N"; }
die()  { printf 'demo: %s\n' "$*" >&2; exit 1; }

cleanup() {
	checker_stop
	traffic_hold_stop
	topo_down
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# xlb ARGS...: show the command, run it on the balancer.
xlb() {
	cmd "xlb $*"
	topo_xlb 1 "$@" 2>&1 | sed 's/^/    /'
	return "${PIPESTATUS[0]}"
}

# spread FILE VIP: per backend, the share of the table, the count Maglev
# predicts, the count measured, and the binomial band it should fall in.
spread() {
	local f=$1 vip=$2 n b share got lo hi
	n=$(traffic_total "$f" ok)
	traffic_shares 1 "$vip" >"$TMP/shares"
	traffic_count "$f" >"$TMP/counts"
	printf '    %-8s %7s %10s %10s   %s\n' backend share predicted measured "99.9999% band"
	while read -r b share; do
		got=$(awk -v b="$b" '$1 == b { print $2 }' "$TMP/counts")
		read -r lo hi < <("$TOPO_BUILD/tools/binomial-band" "$n" "$share")
		awk -v b="$b" -v s="$share" -v n="$n" -v g="${got:-0}" -v lo="$lo" -v hi="$hi" 'BEGIN {
			printf "    %-8s %6.2f%% %10.1f %10d   %d..%d%s\n", b, 100 * s, n * s, g, lo, hi,
				(g < lo || g > hi) ? "  <- outside" : "" }'
		echo "$3 $b $share $n ${got:-0}" >>"$TMP/plot.dat"
	done <"$TMP/shares"
	awk '{ print "    " $1 " (not in the table): " $2 }' \
		<(join -v 1 "$TMP/counts" <(sort "$TMP/shares"))
}

# new_conns LABEL: NEW connections from client 2, spread shown.
new_conns() {
	traffic_client 2 conns "$VIP4" "$TOPO_PORT" -n "$NEW" -P 16 -q >"$TMP/new.$1"
	say "  $NEW new connections ($(traffic_total "$TMP/new.$1" ok) completed):"
	spread "$TMP/new.$1" "$VIP4:$TOPO_PORT/tcp" "$1"
}

# held_report FILE...: per backend, how many long-lived connections it
# held and how many of them broke (from the report of a stopped hold).
held_report() {
	cat "$@" | awk '$1 == "hold" { n[$5]++; if ($4 != "ok") bad[$5]++ }
		END { for (b in n) printf "    %-4s %3d held, %3d broke\n", b, n[b], bad[b] }' | sort
}

# broken FILE [BACKEND]: broken connections in a stopped hold's report, of
# BACKEND only or of all.
broken() {
	awk -v b="${2:-}" '$1 == "hold" && $4 != "ok" && (b == "" || $5 == b)' "$1" | wc -l
}

# checker_stop: SIGTERM to the health checker, which removes its probe
# path and exits; returns its exit status.
checker_stop() {
	local rc
	[[ -n $CHK_PID ]] || return 0
	kill -TERM "$CHK_PID" 2>/dev/null
	wait "$CHK_PID"
	rc=$?
	CHK_PID=
	return $rc
}

# service_stop K: stop backend K's service, its xlb-echo server; the
# backend itself stays up (it answers ping and holds the VIP).
service_stop() {
	local p
	for p in $(ip netns pids "${TOPO_NS_BE[$1]}"); do
		[[ $(cat /proc/"$p"/comm 2>/dev/null) == xlb-echo ]] || continue
		kill "$p"
		while kill -0 "$p" 2>/dev/null; do sleep 0.02; done
	done
}

# service_start K: backend K's xlb-echo server again; returns once it listens.
service_start() {
	local k=$1 out=$TMP/server-b$1 try
	: >"$out"
	topo_in "${TOPO_NS_BE[k]}" "$TOPO_BUILD/tools/xlb-echo" server "${TOPO_BE_NAME[k]}" \
		--port "$TOPO_PORT" --udp-port "$TOPO_UDP_PORT" >"$out" 2>&1 &
	for ((try = 0; try < 200; try++)); do
		grep -q '^listening' "$out" && return 0
		sleep 0.05
	done
	return 1
}

ms_now() { echo $(( $(date +%s%N) / 1000000 )); }

# wait_for MS CMD...: CMD every 50 ms until it succeeds or MS pass; TOOK
# holds the milliseconds it took.
wait_for() {
	local limit=$1 start; shift
	start=$(ms_now)
	while :; do
		TOOK=$(( $(ms_now) - start ))
		"$@" && return 0
		((TOOK > limit)) && return 1
		sleep 0.05
	done
}

# logged FROM TO: the checker has logged backend 1 going from FROM to TO
# on both VIPs.
logged() {
	grep -qF "$VIP4:$TOPO_PORT/tcp ${TOPO_BE4[1]} $1 -> $2" "$CHK_LOG" &&
		grep -qF "[$VIP6]:$TOPO_PORT/tcp ${TOPO_BE6[1]} $1 -> $2" "$CHK_LOG"
}

# all_up: the checker has found every checked backend up, and logged it.
all_up() {
	local n
	n=$(topo_xlb 1 -j health show | jq '[.backends[] | select(.health != "up")] | length')
	[[ $n == 0 ]] && (( $(grep -c ' unknown -> up: ' "$CHK_LOG") == $(checked) ))
}

# fingerprints: the fingerprint of each VIP's table.
fingerprints() { topo_xlb 1 -j show | jq -r '[.vips[].fingerprint] | join(" ")'; }

# checked: how many backends the checker probes.
checked() { topo_xlb 1 -j health show | jq '.backends | length'; }

# checker_log_since N: the checker's lines after its first N.
checker_log_since() { tail -n +$(($1 + 1)) "$CHK_LOG" | sed 's/^/    checker: /'; }

[[ $(id -u) -eq 0 ]] || die "run as root (network namespaces and XDP need it)"
command -v jq >/dev/null || die "jq is missing: run scripts/deps.sh"

step "The topology"
others=$(topo_pins_default)
if [[ -n $others ]]; then
	say "  (another xlb instance's maps are pinned in $(printf '%s\n' $others |
		sed 's|/[^/]*$||' | sort -u | paste -sd ' '):"
	say "   this demo keeps its maps in a bpffs of its own instead.)"
else
	TOPO_PIN=default
fi
topo_up >"$TMP/topo.log" 2>&1 || die "topology: $(cat "$TMP/topo.log")"
cat <<EOF
  Network namespaces named ${TOPO_PREFIX}${TOPO_TAG}-*, joined by two bridges in a router:
    clients c1 ${TOPO_CLIENT4[1]}, c2 ${TOPO_CLIENT4[2]}   ->  router  ->  balancer lb1 ${TOPO_LB4[1]}
                                                          backends b1..b4 ${TOPO_BE4[1]}..${TOPO_BE4[4]}
  The router sends the VIP $VIP4 (and ${TOPO_VIP6[1]}) to the balancer. Each
  backend holds the VIP on its loopback and answers clients directly (direct
  server return): answers never cross the balancer.
EOF
if [[ $TOPO_DECAP == xdp ]]; then
	say "  This kernel has no ipip/ip6tnl driver: the backends decapsulate with"
	say "  build/decap.bpf.o (XDP) instead of a tunnel device."
fi

say ""
say "  Attaching xlb to the balancer's eth0:"
cmd "ip link set dev eth0 xdpdrv obj build/xlb.bpf.o sec xdp"
topo_attach 1 >"$TMP/attach.log" 2>&1 || die "attach: $(cat "$TMP/attach.log")"
if [[ $TOPO_PIN == default ]]; then
	say "  Its maps are pinned in $(topo_pin_dir 1), where xlb finds them."
else
	say "  Its maps are pinned in $(topo_pin_dir 1);"
	say "  the xlb commands below are given it with --pin-dir."
fi
xlb config set src4 "${TOPO_LB4[1]}" src6 "${TOPO_LB6[1]}" || die "xlb config failed"
for v in "$VIP4:$TOPO_PORT/tcp" "[$VIP6]:$TOPO_PORT/tcp"; do
	xlb vip add "$v" || die "xlb vip add failed"
	for k in 1 2 3; do
		xlb backend add "$v" "$(traffic_be_addr "$v" $k)" || die "xlb backend add failed"
	done
done
say "  (b4 waits in reserve for step 2.)"

step "1. $SHORT short connections"
say "  Each client opens $((SHORT / 2)) connections to http://$VIP4/ (16 at a time);"
say "  each backend answers with its name."
traffic_client 1 conns "$VIP4" "$TOPO_PORT" -n $((SHORT / 2)) -P 16 -q >"$TMP/short.1" &
p=$!
traffic_client 2 conns "$VIP4" "$TOPO_PORT" -n $((SHORT / 2)) -P 16 -q >"$TMP/short.2"
wait $p
cat "$TMP/short.1" "$TMP/short.2" >"$TMP/short"
say "  $(traffic_total "$TMP/short" ok) of $SHORT completed in about $(traffic_total "$TMP/short.1" elapsed_ms) ms."
say "  How they spread, beside what the table predicts (xlb show -j: each"
say "  backend's share of the table's slots):"
spread "$TMP/short" "$VIP4:$TOPO_PORT/tcp" 1
traffic_client 1 conns "$VIP6" "$TOPO_PORT" -n $((SHORT / 3)) -P 16 -q >"$TMP/short6"
say "  And $((SHORT / 3)) to http://[$VIP6]/ ($(traffic_total "$TMP/short6" ok) completed), a table of its own:"
spread "$TMP/short6" "[$VIP6]:$TOPO_PORT/tcp" v6

step "2. Changes under long-lived connections"
traffic_hold_start "$TMP/hold.2" 1 "$VIP4" -n $HELD --interval-ms 200 --stall-ms 1500 ||
	die "could not open $HELD long-lived connections"
say "  $HELD connections from c1 stay open, each exchanging a message every"
say "  200 ms: $(traffic_count "$TMP/hold.2" | awk '{ printf "%s%s on %s", sep, $2, $1; sep = ", " }')."
xlb backend add "$VIP4:$TOPO_PORT/tcp" "${TOPO_BE4[4]}"
xlb backend set "$VIP4:$TOPO_PORT/tcp" "${TOPO_BE4[2]}" --weight 0
say "  (b4 added; b2 drained: it leaves the table, its connections may finish.)"
sleep 2
xlb show "$VIP4:$TOPO_PORT/tcp"
[[ -e $(topo_pin_dir 1)/xlb_conntrack ]] &&
	say "  (flows: the connection table's entries per backend: the long-lived
  connections, and the short ones of step 1 until their entries age out.)"
# One of b2's connections, found by asking xlb where each held one goes.
b2_conn=$(topo_in "${TOPO_NS_CLIENT[1]}" ss -Htn state established dst "$VIP4" |
	awk -v vip="$VIP4:$TOPO_PORT/tcp" '{ print $3, vip }' |
	topo_xlb 1 -j lookup --batch 2>/dev/null |
	jq -r --arg b "${TOPO_BE4[2]}" 'select(.backend.addr == $b) | .client' | head -n1)
if [[ -n $b2_conn ]]; then
	say "  Where does one of b2's connections go now, and why? The datapath's own"
	say "  answer: its entry keeps it on b2, whatever the table's slot says now."
	xlb lookup "$b2_conn" "$VIP4:$TOPO_PORT/tcp"
fi
say "  How many connections each backend still holds (b2's drain is done when"
say "  its count reaches 0: xlb backend wait-drained waits for that):"
xlb conntrack count --vip "$VIP4:$TOPO_PORT/tcp"
traffic_hold_stop
say "  Two seconds after the change, each connection exchanges one last message:"
held_report "$TMP/hold.2"
lost=$(broken "$TMP/hold.2")
if ((lost == 0)); then
	say "  None broke: the connection table keeps each connection on its backend,"
	say "  b2's included."
elif [[ ! -e $(topo_pin_dir 1)/xlb_conntrack ]]; then
	say "  $lost broke: this build of xlb has no connection table (map"
	say "  xlb_conntrack), so the flows Maglev now gives to another backend move,"
	say "  and their new backend, which has never seen them, resets them."
else
	say "  $lost broke, although a connection table is loaded: see xlb stats below."
fi
new_conns 2
say "  New connections follow the new table: b4 takes its share, b2 none."

step "3. Removing a backend"
traffic_hold_start "$TMP/hold.3" 1 "$VIP4" -n $HELD --interval-ms 200 --stall-ms 1500 ||
	die "could not open $HELD long-lived connections"
say "  $HELD fresh long-lived connections: $(traffic_count "$TMP/hold.3" |
	awk '{ printf "%s%s on %s", sep, $2, $1; sep = ", " }')."
xlb backend del "$VIP4:$TOPO_PORT/tcp" "${TOPO_BE4[3]}"
sleep 2
traffic_hold_stop
say "  Two seconds after removing b3:"
held_report "$TMP/hold.3"
moved=$(( $(broken "$TMP/hold.3") - $(broken "$TMP/hold.3" b3) ))
say "  b3's connections broke ($(broken "$TMP/hold.3" b3) of $(traffic_count "$TMP/hold.3" |
	awk '$1 == "b3" { print $2 }')): b3 is gone, and the backends that now"
say "  get their packets reset them. $( ((moved)) && echo "$moved other connections broke." ||
	echo "No other connection moved.")"
new_conns 3

step "4. A backend's service stopped, under the health checker"
say "  xlb health run probes every backend of a checked VIP the way clients'"
say "  packets reach it (encapsulated by the balancer, answered from the VIP),"
say "  and takes a backend whose probes fail out of its VIP's table."
for v in "$VIP4:$TOPO_PORT/tcp" "[$VIP6]:$TOPO_PORT/tcp"; do
	xlb vip set "$v" --health http --interval 500ms --rise 2 --fall 2 ||
		die "xlb vip set failed"
done
say "  The checker runs in lb1's namespace, whose routing holds its probe path;"
say "  its log lines are shown below as checker: ..."
cmd "xlb health run &"
nsenter --net="/run/netns/${TOPO_NS_LB[1]}" "$TOPO_BUILD/xlb" --pin-dir "$(topo_pin_dir 1)" \
	health run >"$CHK_LOG" 2>&1 &
CHK_PID=$!
wait_for 5000 all_up || die "the checker did not find every backend up: $(cat "$CHK_LOG")"
say "  In $TOOK ms its first probes find the $(checked) backends of the two VIPs up"
say "  (each logged as unknown -> up). Now b1's service stops; b1 itself stays up"
say "  (it answers ping and holds the VIP), so only a check of the service sees it:"
cmd "kill <b1's xlb-echo server>"
seen=$(wc -l <"$CHK_LOG")
before=$(fingerprints)
service_stop 1
wait_for 10000 logged up down || die "b1 was not taken out within 10 s: $(cat "$CHK_LOG")"
checker_log_since "$seen"
say "  Out of both tables $TOOK ms after the stop (fall 2 failed probes 500 ms"
say "  apart, the last within its 250 ms timeout: 1250 ms at most)."
xlb show "$VIP4:$TOPO_PORT/tcp"
xlb show "[$VIP6]:$TOPO_PORT/tcp"
say "  b1 keeps its weight; the table leaves it out (out-by-health) as a drain does."
traffic_client 2 conns "$VIP4" "$TOPO_PORT" -n $NEW_HC -P 16 -q >"$TMP/new.4"
traffic_client 2 conns "$VIP6" "$TOPO_PORT" -n $NEW_HC -P 16 -q >"$TMP/new.4v6"
ok4=$(traffic_total "$TMP/new.4" ok) ok6=$(traffic_total "$TMP/new.4v6" ok)
say "  $NEW_HC new connections to each VIP ($ok4 and $ok6 completed):"
spread "$TMP/new.4" "$VIP4:$TOPO_PORT/tcp" 4
spread "$TMP/new.4v6" "[$VIP6]:$TOPO_PORT/tcp" 4v6
on_b1=$(traffic_count "$TMP/new.4" "$TMP/new.4v6" | awk '$1 == "b1" { print $2 }')
((ok4 == NEW_HC && ok6 == NEW_HC)) ||
	die "$((2 * NEW_HC - ok4 - ok6)) new connections failed while b1 was down"
((${on_b1:-0} == 0)) || die "$on_b1 new connections reached b1 while it was down"
say "  Every one completed, none on b1 (b4 alone takes the IPv4 VIP: b2 is"
say "  drained and b3 removed since steps 2 and 3)."
cmd "xlb-echo server b1 &      (in b1's namespace)"
seen=$(wc -l <"$CHK_LOG")
service_start 1 || die "b1's service did not start again: $(cat "$TMP/server-b1")"
wait_for 10000 logged down up || die "b1 was not back within 10 s: $(cat "$CHK_LOG")"
checker_log_since "$seen"
say "  Back in both tables $TOOK ms after the start (rise 2 good probes 500 ms"
say "  apart), with its weight and so its share again:"
xlb show "$VIP4:$TOPO_PORT/tcp"
xlb show "[$VIP6]:$TOPO_PORT/tcp"
[[ $(fingerprints) == "$before" ]] ||
	die "the tables differ from those before the stop: $before, now $(fingerprints)"
say "  The same tables as before the stop, fingerprint for fingerprint"
say "  ($before)."
cmd "kill -TERM <xlb health run>"
checker_stop
rc=$?
left=$(for f in -4 -6; do
	topo_in "${TOPO_NS_LB[1]}" ip $f rule list | grep 'lookup 22604'
	topo_in "${TOPO_NS_LB[1]}" ip $f route list table 22604 2>/dev/null
done | wc -l)
((rc == 0 && left == 0)) ||
	die "the checker exited with $rc and left $left rules and routes of its table 22604"
say "  The checker exits 0 and takes its probe path (the rules and routes of"
say "  table 22604 in lb1's namespace) with it; the VIPs keep their settings."

step "5. Counters"
xlb stats
if command -v gnuplot >/dev/null; then
	gnuplot <<EOF 2>"$TMP/gnuplot.err" && say "  The spread, plotted: $PNG"
set terminal pngcairo size 1000,480 noenhanced
set output "$PNG"
set title "xlb: share of connections per backend, measured and as the Maglev table predicts"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "% of the connections"
set xlabel "1: three backends   v6: the IPv6 VIP   2: b4 added, b2 drained   3: b3 removed   4, 4v6: b1's service stopped"
set yrange [0:*]
set key outside top center horizontal
set xtics rotate by 45 right
plot "$TMP/plot.dat" using (100*\$3):xtic(sprintf("%s: %s", strcol(1), strcol(2))) title "predicted (share of the table)", \
     "" using (100*\$5/\$4) title "measured"
EOF
	[[ -s $TMP/gnuplot.err ]] && sed 's/^/  gnuplot: /' "$TMP/gnuplot.err"
else
	say "  (gnuplot is not installed: no plot.)"
fi

step "6. Cleaning up"
traffic_hold_stop
topo_down
say "  Namespaces, pinned maps and processes removed ($((SECONDS - START)) s in all)."
cat <<EOF

Where next:
  README.md, "Running on a real NIC": attach xlb to a real interface and set
    up backends (decapsulation, the VIP on loopback, ARP settings).
  xlb replay FILE.pcap: how Maglev and the other algorithms balance and
    disrupt your own traffic.
  docs/health.md: the health checker, its probes, settings and states.
  make bench: the datapath's cost per packet and throughput.
  make test: the whole suite, with these scenarios as integration tests.
EOF
