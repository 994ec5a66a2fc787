#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Rates and the Prometheus endpoint, with real traffic: xlb attached (generic
# mode) to v0 in a namespace of the test's own, a UDP VIP of one backend;
# the peer namespace sends datagrams to the VIP through v0.
#  - `xlb stats --watch` gives packets per second per VIP, backend and
#    outcome: over its intervals they add up to what the counters counted;
#    lines with the time when stdout is no terminal, a screen redrawn in
#    place on one; -j a JSON object an interval;
#  - `xlb exporter` serves the counters at /metrics, which curl fetches and
#    promtool (Prometheus's parser) passes, the VIP's counter as `xlb
#    stats` has it; 404 elsewhere, 405 for POST; SIGTERM ends it;
#  - bad options and a port in use: one line of error.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached rates rt || exit 1
VIP=192.0.2.10:53/udp
PORT=9688
for ns in "$NS" "$PEER"; do
	tl_in "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 || exit 1
	tl_in "$ns" ip link set lo up
done
ip -n "$NS" addr add 198.51.100.1/24 dev v0 &&
	ip -n "$NS" neigh add 198.51.100.11 lladdr 02:00:00:00:00:11 dev v0 nud permanent &&
	ip -n "$PEER" addr add 198.51.100.2/24 dev v1 &&
	ip -n "$PEER" route add 192.0.2.0/24 via 198.51.100.1 &&
	tl_in "$NS" sysctl -qw net.ipv4.conf.all.forwarding=1 &&
	x config set src4 198.51.100.1 >/dev/null 2>&1 &&
	x vip add "$VIP" >/dev/null 2>&1 &&
	x backend add "$VIP" 198.51.100.11 >/dev/null 2>&1 ||
	{ tl_fail rates_setup "cannot configure the topology"; exit 1; }

# vip_packets: the VIP's packet counter (`xlb -j stats`).
vip_packets() { x -j stats | jq '.vips[0].packets'; }

# send N: N datagrams from the peer to the VIP.
send() {
	tl_in "$PEER" bash -c "for ((i = 0; i < $1; i++)); do echo x >/dev/udp/192.0.2.10/53; done" 2>/dev/null
}

# ---- stats --watch ----
before=$(vip_packets)
x -j stats --watch --interval 0.5 --count 4 >"$TMP/watch" 2>"$TMP/watch.err" &
watcher=$!
sleep 0.1
send 1500
wait "$watcher"
after=$(vip_packets)
# The intervals' packets add up to the counted ones.
sum=$(jq -s '[.[] | .interval_s * (.vips[] | select(.backend == null) | .packets_per_s)] | add | round' "$TMP/watch")
peak=$(jq -s '[.[] | .vips[] | select(.backend == null) | .packets_per_s] | max' "$TMP/watch")
echo "  $((after - before)) packets counted; the watch's rates add up to $sum (peak ${peak}/s)"
tl_check watch_rates_add_up_to_the_counters test "$((after - before))" -eq 1500 -a "$sum" -eq 1500
tl_check watch_json_an_object_an_interval test "$(wc -l <"$TMP/watch")" -eq 4
tl_check watch_counts_forward_per_second \
	test "$(jq -s '[.[] | .reasons.forward.packets_per_s // 0] | add > 0' "$TMP/watch")" = true

x stats --watch --interval 0.2 --count 2 >"$TMP/plain" 2>&1
tl_check watch_plain_lines_with_the_time \
	grep -qE "^[0-9]{2}:[0-9]{2}:[0-9]{2} vip $VIP pkt/s [0-9]+ bytes/s [0-9]+$" "$TMP/plain"
if command -v script >/dev/null; then
	script -qec "$XLB --pin-dir $PIN stats --watch --interval 0.2 --count 2" /dev/null \
		>"$TMP/tty" 2>&1 </dev/null
	tl_check watch_redraws_a_terminal_in_place grep -q $'\033\[H\033\[2J' "$TMP/tty"
else
	tl_skip watch_redraws_a_terminal_in_place "no script(1) to give it a terminal"
fi

# ---- the exporter ----
promtool=$(command -v promtool || echo "$BUILD/promtool")
if [[ ! -x $promtool && -z ${VMTEST:-} ]]; then
	# Only the parser, out of Debian's prometheus package: nothing is
	# installed, no server started; kept as $BUILD/promtool (which the
	# vmtest VM, without a network, gets with the build).
	(cd "$TMP" && apt-get download -q prometheus >/dev/null 2>&1 &&
	 dpkg-deb -x prometheus_*.deb deb && cp deb/usr/bin/promtool "$promtool")
fi
# nsenter execs xlb: $! is the exporter's pid.
nsenter --net="/run/netns/$NS" "$XLB" --pin-dir "$PIN" exporter --listen "127.0.0.1:$PORT" \
	2>"$TMP/exporter.err" &
exporter=$!
tl_on_exit "kill $exporter 2>/dev/null"
for _ in $(seq 50); do
	grep -q serving "$TMP/exporter.err" && break
	sleep 0.1
done
tl_in "$NS" curl -s -o "$TMP/metrics" -w '%{http_code} %{content_type}\n' \
	"http://127.0.0.1:$PORT/metrics" >"$TMP/code"
read -r code type <"$TMP/code"
want=$(vip_packets)
got=$(sed -n "s|^xlb_vip_packets_total{vip=\"$VIP\"} ||p" "$TMP/metrics")
echo "  /metrics: $code $type, $(wc -l <"$TMP/metrics") lines; the VIP's packets $got (xlb stats: $want)"
tl_check exporter_serves_the_counters test "$code" = 200 -a "$got" = "$want"
if [[ -x $promtool ]]; then
	"$promtool" check metrics <"$TMP/metrics" >"$TMP/promtool" 2>&1
	rc=$?
	tl_check exporter_text_passes_promtool test "$rc" -eq 0 -a -s "$TMP/metrics"
	[[ $rc -eq 0 ]] || cat "$TMP/promtool"
elif [[ -n ${VMTEST:-} ]]; then
	# The text is the same on any kernel: make test checks it on the host.
	tl_skip exporter_text_passes_promtool "no promtool in the VM's copy of the build (kernel-independent: make test checks it)"
else
	tl_skip_env exporter_text_passes_promtool "no promtool, and Debian's prometheus package could not be fetched"
fi
tl_check exporter_404_elsewhere test "$(tl_in "$NS" curl -s -o /dev/null -w '%{http_code}' \
	"http://127.0.0.1:$PORT/")" = 404
tl_check exporter_405_for_post test "$(tl_in "$NS" curl -s -o /dev/null -w '%{http_code}' \
	-X POST "http://127.0.0.1:$PORT/metrics")" = 405
expect_error exporter_port_in_use "cannot listen on 127.0.0.1:$PORT" \
	x exporter --listen "127.0.0.1:$PORT" && tl_pass exporter_port_in_use
kill -TERM "$exporter"
wait "$exporter"
tl_check exporter_ends_on_sigterm test $? -eq 0

expect_error exporter_bad_listen "bad --listen 'localhost:80'" x exporter --listen localhost:80 &&
	tl_pass exporter_bad_listen
expect_error watch_bad_interval "bad --interval '0'" x stats --watch --interval 0 &&
	tl_pass watch_bad_interval
expect_error interval_without_watch "--interval and --count go with --watch" x stats --interval 1 &&
	tl_pass interval_without_watch
exit "$TL_FAILED"
