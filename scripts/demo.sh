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
#      drained, and shows which survived and where new connections go;
#   3. removes a backend and shows whose connections moved;
#   4. shows `xlb stats` and plots the spread (gnuplot, when present);
#   5. removes everything, also when interrupted or when a step fails.
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
PNG=$TOPO_BUILD/demo-spread.png
topo_names
VIP4=${TOPO_VIP4[1]}
VIP6=${TOPO_VIP6[1]}
TMP=$(mktemp -d)
START=$SECONDS

if [[ -t 1 ]]; then B=$'\e[1m' D=$'\e[2m' N=$'\e[0m'; else B= D= N=; fi
say()  { printf '%s\n' "$*"; }
step() { printf '\n%s== %s ==%s\n' "$B" "$*" "$N"; }
cmd()  { printf '  %s$ %s%s\n' "$D" "$*" "$N"; }
die()  { printf 'demo: %s\n' "$*" >&2; exit 1; }

cleanup() {
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

step "4. Counters"
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
set xlabel "1: three backends   v6: the IPv6 VIP   2: b4 added, b2 drained   3: b3 removed"
set yrange [0:*]
set key top right
plot "$TMP/plot.dat" using (100*\$3):xtic(sprintf("%s: %s", strcol(1), strcol(2))) title "predicted (share of the table)", \
     "" using (100*\$5/\$4) title "measured"
EOF
	[[ -s $TMP/gnuplot.err ]] && sed 's/^/  gnuplot: /' "$TMP/gnuplot.err"
else
	say "  (gnuplot is not installed: no plot.)"
fi

step "5. Cleaning up"
traffic_hold_stop
topo_down
say "  Namespaces, pinned maps and processes removed ($((SECONDS - START)) s in all)."
cat <<EOF

Where next:
  README.md, "Running on a real NIC": attach xlb to a real interface and set
    up backends (decapsulation, the VIP on loopback, ARP settings).
  xlb replay FILE.pcap: how Maglev and the other algorithms balance and
    disrupt your own traffic.
  make bench: the datapath's cost per packet and throughput.
  make test: the whole suite, with these scenarios as integration tests.
EOF
