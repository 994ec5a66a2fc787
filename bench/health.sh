#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# What the health checker costs: `xlb health run` checking 1,000 backends
# (IPv6, one TCP VIP) through the probe path of the demo's topology
# (scripts/topology.sh), pinned to one CPU. Prints a markdown section for
# BENCHMARKS.md on stdout, progress on stderr.
#
#   bench/health.sh [--quick] [--backends N] [--seconds S]
#
#   --quick       100 backends, short windows (the smoke test)
#   --backends N  backends checked (default 1000, at most 4000)
#   --seconds S   each measured window (default 10)
#
# The backends' addresses, 2001:db8:b::K:I, are held on the loopback of
# the topology's four backend namespaces (K = 1..4, a quarter each); the
# balancer routes each K's /112 via that backend. Every probe is a real
# TCP connection to the VIP, encapsulated to one address and answered by
# the backend's xlb-echo, as in tests/test_health_e2e.sh.
#
# Figures, each over a window after every backend was found up:
#  - at a 1 s interval (the settings a deployment would use): probes per
#    second and the checker's CPU time (utime + stime of /proc/PID/stat)
#    as a share of one CPU, and per probe;
#  - at a 100 ms interval, the same: the cost per probe when the checker
#    is busy, and the rate one CPU sustains;
#  - a mass outage: 4,095 backends (the most an instance holds; 500 with
#    --quick), every one unreachable (their prefix a blackhole on the
#    balancer, so each TCP probe waits out its timeout), checked by tcp
#    at a 1 s interval, 500 ms timeout, fall 3: the time from the
#    checker's start until every one is down, against its bound, the
#    baseline fall x interval + timeout (a backend's first probe comes
#    within its interval, its fall-th one interval x (fall - 1) later);
#    the CPU time it took and the probes per second meanwhile;
#  - forwarding with and without probing: new TCP connections per second
#    that clients open through the balancer to the VIP (xlb-echo conns),
#    rounds alternating with the checker stopped and running at 1 s. The
#    datapath does nothing more for a probe (probes leave through the
#    kernel's routing, their answers pass the XDP program as traffic of no
#    VIP), so the ratio should be 1 within noise.
set -uo pipefail

# shellcheck source=../tests/lib/lib.sh
. "$(dirname "$0")/../tests/lib/lib.sh"

n=1000 seconds=10 quick= rounds=5 conns=3000 outage=4095
while [[ $# -gt 0 ]]; do
	case $1 in
	--quick) quick=--quick n=100 seconds=2 rounds=1 conns=300 outage=500 ;;
	--backends) n=${2:-}; shift ;;
	--seconds) seconds=${2:-}; shift ;;
	-h|--help) sed -n '/^#   bench\/health.sh/,/^#   --seconds/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "health.sh: unknown option '$1' (see --help)" >&2; exit 1 ;;
	esac
	shift
done
[[ $n =~ ^[0-9]+$ && $n -ge 4 && $n -le 4000 ]] ||
	{ echo "health.sh: --backends must be 4..4000" >&2; exit 1; }
[[ $seconds =~ ^[0-9]+$ && $seconds -ge 1 ]] ||
	{ echo "health.sh: --seconds must be a whole number of seconds, 1 or more" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "health.sh: needs root" >&2; exit 1; }

TOPO_TAG=$TL_TAG
TOPO_PREFIX=xlbh
TOPO_QUIET=1
TOPO_BACKENDS=4
TOPO_CLIENTS=1
# shellcheck source=../scripts/topology.sh
. "$XLB_TOP/scripts/topology.sh"
tl_on_exit topo_down
TMP=$(mktemp -d)
tl_on_exit "rm -rf '$TMP'"
log() { echo "health.sh: $*" >&2; }

topo_up >"$TMP/topo.log" 2>&1 || { cat "$TMP/topo.log" >&2; exit 1; }
topo_attach 1 || exit 1
LB=${TOPO_NS_LB[1]}
PIN=$(topo_pin_dir 1)
VIP6=${TOPO_VIP6[1]}
VIP="[$VIP6]:$TOPO_PORT/tcp"
CPU=$(( $(nproc) > 1 ? 1 : 0 ))
HZ=$(getconf CLK_TCK)

addr_of() { printf '2001:db8:b::%x:%x' $(( $1 % 4 + 1 )) $(( $1 / 4 + 1 )); }

# Addresses on the backends' loopback, routes on the balancer. Where the
# backends decapsulate with decap.bpf.o, the addresses are their tunnel
# addresses too (`xlb host setup --local`).
for ((k = 1; k <= 4; k++)); do
	for ((i = k - 1; i < n; i += 4)); do
		echo "addr add $(addr_of $i)/128 dev lo nodad"
	done | topo_batch "${TOPO_NS_BE[k]}" || exit 1
	if [[ $TOPO_DECAP == xdp ]]; then
		# One --local per 32 addresses: an option's list is bounded.
		local_args=() local_addrs=
		for ((i = k - 1; i < n; i += 4)); do
			local_addrs+=${local_addrs:+,}$(addr_of $i)
			if (( (i / 4) % 32 == 31 )); then
				local_args+=(--local "$local_addrs") local_addrs=
			fi
		done
		[[ -z $local_addrs ]] || local_args+=(--local "$local_addrs")
		topo_host_setup "$k" "${local_args[@]}" || exit 1
	fi
	echo "route add 2001:db8:b::$k:0/112 via ${TOPO_BE6[k]}" | topo_batch "$LB" || exit 1
done
for ((i = 0; i < n; i++)); do echo "{\"addr\": \"$(addr_of $i)\", \"weight\": 1}"; done |
	jq -s --arg vip "$VIP" --arg src6 "${TOPO_LB6[1]}" \
		'{ config: { src6: $src6 }, vips: [{ vip: $vip, backends: . }] }' >"$TMP/state.json"
topo_xlb 1 apply "$TMP/state.json" >/dev/null || exit 1

CHK=
# checker_start INTERVAL TIMEOUT
checker_start() {
	topo_xlb 1 vip set "$VIP" --health tcp --interval "$1" --timeout "$2" >/dev/null || exit 1
	taskset -c $CPU nsenter --net="/run/netns/$LB" "$BUILD/xlb" --pin-dir "$PIN" \
		health run --obj "$BUILD/hc.bpf.o" >"$TMP/checker.log" 2>&1 &
	CHK=$!
}
checker_stop() {
	[[ -n $CHK ]] || return 0
	kill -TERM "$CHK" 2>/dev/null
	wait "$CHK" 2>/dev/null
	CHK=
}
tl_on_exit checker_stop

# ups: backends found up. tcp_mib NAME: a TCP counter of the balancer's
# namespace, where only the checker opens connections: ActiveOpens counts
# the probes started, AttemptFails those refused or timed out.
ups() { topo_xlb 1 -j health show | jq '[.backends[] | select(.health == "up")] | length'; }
tcp_mib() {
	topo_in "$LB" cat /proc/net/snmp | awk -v k="$1" '$1 == "Tcp:" {
		if (!n) { for (i = 2; i <= NF; i++) col[$i] = i; n = 1 } else print $col[k] }'
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$CHK/stat"; }

# measure INTERVAL TIMEOUT: "probes/s failed/s cpu% us/probe" over the
# window.
measure() {
	local p0 p1 f0 f1 c0 c1 t0 t1 try
	checker_start "$1" "$2"
	for ((try = 0; try < 300; try++)); do
		[[ $(ups) -eq $n ]] && break
		sleep 0.1
	done
	[[ $(ups) -eq $n ]] || { log "not every backend found up: $(ups) of $n"; cat "$TMP/checker.log" >&2; exit 1; }
	p0=$(tcp_mib ActiveOpens) f0=$(tcp_mib AttemptFails) c0=$(cpu_ticks) t0=$(date +%s%N)
	sleep "$seconds"
	p1=$(tcp_mib ActiveOpens) f1=$(tcp_mib AttemptFails) c1=$(cpu_ticks) t1=$(date +%s%N)
	checker_stop
	awk -v p=$((p1 - p0)) -v f=$((f1 - f0)) -v c=$((c1 - c0)) -v hz="$HZ" \
		-v ns=$((t1 - t0)) 'BEGIN { s = ns / 1e9; cpu = c / hz
		printf "%.0f %.0f %.1f %.1f\n", p / s, f / s, 100 * cpu / s, p ? 1e6 * cpu / p : 0 }'
}

# conns_rate: new connections per second through the balancer.
conns_rate() {
	topo_in "${TOPO_NS_CLIENT[1]}" "$BUILD/tools/xlb-echo" conns "$VIP6" "$TOPO_PORT" \
		-n "$conns" -P 32 -q >"$TMP/conns" 2>&1
	awk '$1 == "summary" { for (i = 2; i <= NF; i++) { split($i, kv, "=")
		v[kv[1]] = kv[2] } } END { if (v["ok"] + 0 == 0 || v["elapsed_ms"] + 0 == 0) exit 1
		printf "%.0f\n", v["ok"] * 1000 / v["elapsed_ms"] }' "$TMP/conns"
}

log "1 s interval, $n backends"
measure 1s 500ms >"$TMP/m1" || exit 1
log "100 ms interval"
measure 100ms 50ms >"$TMP/m2" || exit 1
read -r rate1 fail1 cpu1 per1 <"$TMP/m1"
read -r rate2 fail2 cpu2 per2 <"$TMP/m2"

log "forwarding with and without probing, $rounds rounds"
without=() with=()
for ((r = 0; r < rounds; r++)); do
	without+=("$(conns_rate)") || exit 1
	checker_start 1s 500ms
	sleep 1
	with+=("$(conns_rate)") || exit 1
	checker_stop
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
m_without=$(median "${without[@]}") m_with=$(median "${with[@]}")
[[ -n $m_without && -n $m_with && $m_without -gt 0 ]] || { log "no connection rate measured"; cat "$TMP/conns" >&2; exit 1; }

# The outage replaces the instance's backends: an instance holds 4,095.
log "outage: $outage unreachable backends"
OUT_FALL=3 OUT_INTERVAL_MS=1000 OUT_TIMEOUT_MS=500
topo_in "$LB" ip -6 route add blackhole 2001:db8:dead::/96 || exit 1
for ((i = 1; i <= outage; i++)); do printf '2001:db8:dead::%x\n' "$i"; done |
	jq -R '{ addr: ., weight: 1 }' | jq -s --arg vip "$VIP" --arg src6 "${TOPO_LB6[1]}" \
		--argjson fall $OUT_FALL --argjson iv $OUT_INTERVAL_MS --argjson to $OUT_TIMEOUT_MS \
		'{ config: { src6: $src6 }, vips: [{ vip: $vip, health: { kind: "tcp",
			interval_ms: $iv, timeout_ms: $to, fall: $fall }, backends: . }] }' >"$TMP/outage.json"
topo_xlb 1 apply "$TMP/outage.json" >/dev/null 2>"$TMP/apply.err" || { cat "$TMP/apply.err" >&2; exit 1; }
# downs: backends found down; 0 while the checker's commit holds the
# instance's lock past show's wait.
downs() {
	local d
	d=$(topo_xlb 1 -j health show 2>/dev/null | jq '[.backends[]? | select(.health == "down")] | length' 2>/dev/null)
	[[ $d =~ ^[0-9]+$ ]] && echo "$d" || echo 0
}
p0=$(tcp_mib ActiveOpens) t0=$(date +%s%N)
taskset -c $CPU nsenter --net="/run/netns/$LB" "$BUILD/xlb" --pin-dir "$PIN" \
	health run --obj "$BUILD/hc.bpf.o" >"$TMP/checker.log" 2>&1 &
CHK=$!
bound_ms=$(( OUT_FALL * OUT_INTERVAL_MS + OUT_TIMEOUT_MS ))
all_down_ms=
while :; do
	d=$(downs)
	t1=$(date +%s%N)
	if [[ $d -eq $outage ]]; then
		all_down_ms=$(( (t1 - t0) / 1000000 ))
		break
	fi
	(( (t1 - t0) / 1000000 > 40 * bound_ms )) && break
	sleep 0.05
done
c1=$(cpu_ticks) p1=$(tcp_mib ActiveOpens)
checker_stop
unknown_left=$(topo_xlb 1 -j health show | jq '[.backends[] | select(.health == "unknown")] | length')
[[ -n $all_down_ms ]] || { log "not every backend down after $(( 40 * bound_ms )) ms: $d of $outage"; cat "$TMP/checker.log" >&2; exit 1; }
out_cpu=$(awk -v c="$c1" -v hz="$HZ" 'BEGIN { printf "%.2f", c / hz }')
out_rate=$(awk -v p=$((p1 - p0)) -v ms="$all_down_ms" 'BEGIN { printf "%.0f", p * 1000 / ms }')
out_ratio=$(awk -v a="$all_down_ms" -v b="$bound_ms" 'BEGIN { printf "%.2f", a / b }')
start_lines=$(grep -c 'could not start' "$TMP/checker.log")

cat <<EOF
## Health checker

\`bench/health.sh${quick:+ --quick}\`: \`xlb health run\` checking $n IPv6 backends of one TCP VIP
(tcp checks) through the probe path, each probe a TCP connection
to the VIP encapsulated to one backend address, answered by xlb-echo on one of
four backend namespaces. The checker runs on CPU $CPU; its CPU time is utime +
stime from /proc/PID/stat over ${seconds} s after every backend was found up;
probes are the TCP connections opened in the balancer's namespace (its
ActiveOpens), failed ones those refused or timed out (AttemptFails).

| interval | backends | probes/s | of which failed | CPU, % of one core | CPU per probe |
| --- | ---: | ---: | ---: | ---: | ---: |
| 1 s (timeout 500 ms) | $n | $rate1 | $fail1 | $cpu1 % | $per1 µs |
| 100 ms (timeout 50 ms) | $n | $rate2 | $fail2 | $cpu2 % | $per2 µs |

Forwarding while probing: new TCP connections per second that a client opens
through the balancer to the VIP (xlb-echo conns, $conns connections, 32 in
parallel; median of $rounds rounds each, alternating), with no checker and with
the checker probing every backend each second.

| | connections/s | ratio |
| --- | ---: | ---: |
| no checker | $m_without (rounds: ${without[*]}) | 1.00 |
| checker at 1 s | $m_with (rounds: ${with[*]}) | $(awk -v a="$m_with" -v b="$m_without" 'BEGIN { printf "%.2f", a / b }') |

A mass outage: $outage backends of one VIP, every one unreachable (a blackhole
route on the balancer: each TCP probe times out), tcp checks at a
${OUT_INTERVAL_MS} ms interval, ${OUT_TIMEOUT_MS} ms timeout, fall $OUT_FALL; from the checker's start until
\`xlb health show\` says every one is down (then the VIP fails open, as designed).
The baseline is the bound fall × interval + timeout.

| backends | all down after | baseline (bound) | ratio | CPU time until then | probes/s | left unknown | "could not start" lines |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| $outage | $all_down_ms ms | $bound_ms ms | $out_ratio | $out_cpu s | $out_rate | $unknown_left | $start_lines |
EOF
