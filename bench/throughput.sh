#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End-to-end throughput: packets per second a balancer forwards between
# veth links, for xlb in several configurations and for the fastest
# possible forwarder (a MAC-swap XDP_TX reflector) in its place. Prints a
# markdown section for BENCHMARKS.md on stdout, progress on stderr.
#
#   bench/throughput.sh [--quick] [--rounds N] [--seconds S] [--rate PPS]
#                       [--flows N] [--conntrack-size N] [--configs LIST]
#
#   --quick      one short round (the smoke test; figures mean little)
#   --rounds N   rounds of every configuration, alternating (default 5)
#   --seconds S  measured interval of each run (default 1.5)
#   --rate PPS   offered load (default: as fast as xlb-gen goes)
#   --flows N    flows of the hit configurations (default 4096, at most
#                262144)
#   --conntrack-size N
#                xlb's connection table size (`xlb attach --conntrack-size`;
#                default: xlb's default)
#   --configs LIST
#                the configurations to run, comma-separated (default: all;
#                the reflector always runs, as every ratio is to it, and
#                its IPv6 run with any IPv6 configuration)
#
# Topology, one network namespace per box:
#
#   gen ── g0r ═══ b0r ── ref      reflector: XDP_TX back to g0r
#      └── g0x ═══ b0x ── lb ── b1x ═══ s0 ── sink
#
# xlb-gen (tools/xlb-gen.c) pushes TCP segments of many flows out of g0r or g0x
# with BPF_PROG_TEST_RUN live frames. The reflector sends every frame back
# out of the link it came in on (XDP_TX). xlb on b0x, like a balancer with
# one interface, encapsulates to backends routed back out of b0x (XDP_TX,
# the next hop being g0x); for a second VIP the backends are routed out of
# b1x instead (XDP_REDIRECT, a balancer with two interfaces). Whatever
# arrives at g0r, g0x or s0 is dropped by bench/bpf/sink.bpf.c and counted by
# veth (ethtool -S: xdp_drops): the forwarded rate is that count's growth
# over the measured interval, after a warm-up. Every xlb configuration runs
# on the same instance; the reflector has a namespace of its own so nothing
# is reattached between runs.
#
# CPUs: the generator runs on CPU 0 (xlb-gen --cpu). A veth delivers to
# its peer by scheduling the peer's NAPI on the sending CPU, so without
# more the balancer would run in the generator's softirq on CPU 0. b0r and
# b0x get threaded NAPI (/sys/class/net/DEV/threaded) and their NAPI
# threads are pinned to CPU 1. The balancer's XDP program runs there, and
# so do the sinks' programs, whose NAPI the balancer's transmit schedules
# on its own CPU (every configuration pays that alike).
#
# Two measurements of each configuration (but the swap and its control):
#
# - saturated: xlb-gen as fast as it goes, the forwarded rate counted. The
#   generator offers more than the balancer takes, so the figure also holds
#   what overload costs on this setup: the frames the balancer's link
#   refuses are recycled into the generator's page pool, whose lock the
#   balancer's CPU takes too for every frame the sinks drop;
# - paced: offered at 1.1 times the saturated figure of the same round,
#   the balancer's CPU busy time counted (/proc/stat, its CPU): the CPU time
#   per forwarded packet, and its inverse, the rate one CPU forwards busy
#   all the time. Its ratio to the reflector's is the ratio of per-packet
#   costs, without what overload adds. (xlb-gen paces by waiting, not by
#   dropping early frames, which would load that same lock.)
#
# The NAPI threads run at real-time priority (SCHED_FIFO 50): NAPI work
# normally runs in softirq context, ahead of every task. The generator
# does not: with a real-time task on both CPUs the kernel's own threads
# starve (RCU grace periods, which every table swap waits for, took a
# second). So other work on the machine can pause the generator, and a
# paused generator lets the balancer idle: run this on a quiet machine
# (the report gives the load average at the start).
#
# Table swaps: `xlb backend set` reweights a backend back and forth, each
# command a table swap, 20 times a second, on the balancer's CPU and at a
# real-time priority above its NAPI thread, so the commands keep their
# cadence and the balancer pays for all they cost (on the generator's CPU
# they would pause the offered load instead, and every pause is lost
# forwarding). A command started at that cadence costs something by itself
# (fork, exec), so a control runs `xlb help`, which touches no map, the
# same way: the swaps' own cost is the difference between the two.
set -uo pipefail

# shellcheck source=../tests/lib/lib.sh
. "$(dirname "$0")/../tests/lib/lib.sh"
GEN=$BUILD/tools/xlb-gen

rounds=5 seconds=1.5 warm=0.5 rate=0 quick=0 hit_flows=4096 ct_size= only=
while [[ $# -gt 0 ]]; do
	case $1 in
	--quick) quick=1 rounds=1 seconds=0.3 warm=0.2 ;;
	--rounds) rounds=${2:-}; shift ;;
	--seconds) seconds=${2:-}; shift ;;
	--rate) rate=${2:-}; shift ;;
	--flows) hit_flows=${2:-}; shift ;;
	--conntrack-size) ct_size=${2:-}; shift ;;
	--configs)
		[[ -n ${2:-} ]] || { echo "throughput.sh: --configs: a list of configurations is missing" >&2; exit 1; }
		only=$2; shift ;;
	-h|--help) sed -n '/^#   bench\/throughput.sh/,/^#                its IPv6 run/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "throughput.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
	esac
	shift
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "throughput.sh: --rounds: '$rounds' is not a positive number" >&2; exit 1; }
[[ $seconds =~ ^[0-9]*\.?[0-9]+$ && ! $seconds =~ ^[0.]+$ ]] ||
	{ echo "throughput.sh: --seconds: '$seconds' is not a positive number" >&2; exit 1; }
[[ $rate =~ ^[0-9]+$ ]] || { echo "throughput.sh: --rate: '$rate' is not a whole number" >&2; exit 1; }
# The hit flows take source ports 1024-2047 of 256 sources (see
# config_args): 262144 at most.
[[ $hit_flows =~ ^[1-9][0-9]*$ ]] && (( hit_flows <= 262144 )) ||
	{ echo "throughput.sh: --flows: '$hit_flows' is not a count from 1 to 262144" >&2; exit 1; }
[[ -z $ct_size || $ct_size =~ ^[1-9][0-9]*$ ]] ||
	{ echo "throughput.sh: --conntrack-size: '$ct_size' is not a positive number" >&2; exit 1; }

# The configurations, and those --configs picks.
ALL_CONFIGS=(reflector reflector6 v4_hit v4_hit_cached v4_miss v6_hit v4_control v4_swap v4_redirect)
declare -A TITLE=(
	[reflector]="MAC-swap XDP_TX reflector (the limit)"
	[reflector6]="MAC-swap XDP_TX reflector, IPv6 frames (the limit for IPv6)"
	[v4_hit]="xlb, IPv4 TCP, connection-table hits"
	[v4_hit_cached]="xlb, IPv4 TCP, hits of 16 flows (entries stay in the CPU's caches)"
	[v4_miss]="xlb, IPv4 TCP, misses (every packet a new flow)"
	[v6_hit]="xlb, IPv6 TCP, connection-table hits"
	[v4_control]="xlb, IPv4 TCP, hits, \`xlb help\` 20 times a second (control)"
	[v4_swap]="xlb, IPv4 TCP, hits, table swapped 20 times a second"
	[v4_redirect]="xlb, IPv4 TCP, hits, out of a second link (XDP_REDIRECT)"
)
CONFIGS=("${ALL_CONFIGS[@]}")
if [[ -n $only ]]; then
	CONFIGS=(reflector)
	IFS=, read -r -a picked <<< "$only"
	for cfg in "${picked[@]}"; do
		[[ -n ${TITLE[$cfg]:-} ]] || { echo "throughput.sh: --configs: no configuration '$cfg' (there are: ${ALL_CONFIGS[*]})" >&2; exit 1; }
		[[ $cfg == reflector || " ${CONFIGS[*]} " == *" $cfg "* ]] || CONFIGS+=("$cfg")
		[[ $cfg != v6_* || " ${CONFIGS[*]} " == *" reflector6 "* ]] || CONFIGS=(reflector reflector6 "${CONFIGS[@]:1}")
	done
fi
# base_of CONFIG: the reflector its ratio is to. IPv6 frames are longer
# than IPv4 ones (74 bytes against 64): an IPv6 configuration is held
# against the reflector of the same frames, so that what the frames cost
# any forwarder counts on both sides.
base_of() { [[ $1 == v6_* || $1 == reflector6 ]] && echo reflector6 || echo reflector; }

log() { echo "throughput: $*" >&2; }
die() { echo "throughput.sh: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, XDP)"
for f in "$GEN" "$XLB" "$BUILD/reflector.bpf.o" "$BUILD/sink.bpf.o"; do
	[[ -e $f ]] || die "$f is missing: run make first"
done
(( $(nproc) >= 2 )) || die "needs two CPUs (generator and balancer apart)"
tl_bpffs

# Unique names: namespaces through tests/lib/lib.sh; devices carry the tag so
# the NAPI threads ("napi/DEV-ID") can be told apart host-wide.
T=$TL_TAG
G0R=xg${T}r B0R=xb${T}r G0X=xg${T}x B0X=xb${T}x B1X=xo${T} S0=xs${T}
VIP4=192.0.2.10:80/tcp VIP6=[2001:db8::10]:80/tcp VIP4B=192.0.2.20:80/tcp
# Eight backends per VIP: 192.0.2.192/26 and 2001:db8:2::/64 out of b0x,
# 192.0.2.128/26 out of b1x.
BACKENDS4=() BACKENDS6=() BACKENDS4B=()
for i in {1..8}; do
	BACKENDS4+=("192.0.2.$((200 + i))") BACKENDS6+=("2001:db8:2::$i")
	BACKENDS4B+=("192.0.2.$((136 + i))")
done
GEN_CPU=0 LB_CPU=1
TMP=$(mktemp -d)
tl_on_exit "rm -rf '$TMP'"

mac_of() { ip -n "$1" -br link show dev "$2" | awk '{print $3}'; }
xlb() { tl_in "$NS_LB" "$XLB" --pin-dir "$PIN" "$@"; }

# threaded_napi NS DEV: give DEV's receive queue a NAPI thread of its own,
# pinned to the balancer's CPU, at real-time priority: NAPI normally runs
# in softirq context, ahead of every task, and other work on the machine
# must not take the balancer's CPU in the middle of a measurement. Returns
# 1 when the kernel cannot.
threaded_napi() {
	local ns=$1 dev=$2 pid comm f
	ip netns exec "$ns" sh -c "echo 1 > /sys/class/net/$dev/threaded" 2>/dev/null || return 1
	for f in /proc/[0-9]*/comm; do
		read -r comm < "$f" 2>/dev/null || continue
		if [[ $comm == "napi/$dev-"* ]]; then
			pid=${f#/proc/}
			pid=${pid%/comm}
			taskset -p -c "$LB_CPU" "$pid" >/dev/null &&
				chrt -f -p 50 "$pid" || return 1
			return 0
		fi
	done
	return 1
}

topology() {
	# Every command into the setup log, so a failure names its command.
	local - ns
	set -x
	tl_netns NS_GEN gen && tl_netns NS_REF ref && tl_netns NS_LB lb && tl_netns NS_SINK sink || return 1
	# Nothing but the generator's frames: no IPv6 neighbour discovery from
	# the ends that count.
	for ns in "$NS_GEN" "$NS_SINK"; do
		tl_in "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1 >/dev/null || return 1
	done
	ip link add "$G0R" netns "$NS_GEN" type veth peer name "$B0R" netns "$NS_REF" &&
	ip link add "$G0X" netns "$NS_GEN" type veth peer name "$B0X" netns "$NS_LB" &&
	ip link add "$B1X" netns "$NS_LB" type veth peer name "$S0" netns "$NS_SINK" || return 1
	for ns in "$NS_GEN $G0R" "$NS_GEN $G0X" "$NS_REF $B0R" "$NS_LB $B0X" "$NS_LB $B1X" "$NS_SINK $S0"; do
		set -- $ns
		ip -n "$1" link set dev "$2" up || return 1
	done
	# The far ends count what arrives.
	tl_in "$NS_GEN" ip link set dev "$G0R" xdpdrv obj "$BUILD/sink.bpf.o" sec xdp &&
	tl_in "$NS_GEN" ip link set dev "$G0X" xdpdrv obj "$BUILD/sink.bpf.o" sec xdp &&
	tl_in "$NS_SINK" ip link set dev "$S0" xdpdrv obj "$BUILD/sink.bpf.o" sec xdp &&
	tl_in "$NS_REF" ip link set dev "$B0R" xdpdrv obj "$BUILD/reflector.bpf.o" sec xdp || return 1

	# The balancer routes the backends to a next hop on b0x (g0x) or on
	# b1x (s0); static neighbours, as the sinks answer nothing.
	local gx=$(mac_of "$NS_GEN" "$G0X") sx=$(mac_of "$NS_SINK" "$S0")
	tl_in "$NS_LB" sysctl -q -w net.ipv4.conf.all.forwarding=1 net.ipv6.conf.all.forwarding=1 \
		net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 >/dev/null &&
	ip -n "$NS_LB" addr add 203.0.113.1/25 dev "$B0X" &&
	ip -n "$NS_LB" addr add 2001:db8:1::1/64 dev "$B0X" nodad &&
	ip -n "$NS_LB" addr add 203.0.113.129/25 dev "$B1X" &&
	ip -n "$NS_LB" neigh add 203.0.113.2 lladdr "$gx" dev "$B0X" nud permanent &&
	ip -n "$NS_LB" neigh add 2001:db8:1::2 lladdr "$gx" dev "$B0X" nud permanent &&
	ip -n "$NS_LB" neigh add 203.0.113.130 lladdr "$sx" dev "$B1X" nud permanent &&
	ip -n "$NS_LB" route add 192.0.2.192/26 via 203.0.113.2 dev "$B0X" &&
	ip -n "$NS_LB" route add 2001:db8:2::/64 via 2001:db8:1::2 dev "$B0X" &&
	ip -n "$NS_LB" route add 192.0.2.128/26 via 203.0.113.130 dev "$B1X" || return 1

	tl_pin_dir PIN lb || return 1
	xlb attach "$B0X" ${ct_size:+--conntrack-size "$ct_size"} || return 1
	xlb config set src4 203.0.113.1 src6 2001:db8:1::1 || return 1
	local b
	xlb vip add "$VIP4" && xlb vip add "$VIP6" && xlb vip add "$VIP4B" || return 1
	for b in "${BACKENDS4[@]}"; do xlb backend add "$VIP4" "$b" || return 1; done
	for b in "${BACKENDS6[@]}"; do xlb backend add "$VIP6" "$b" || return 1; done
	for b in "${BACKENDS4B[@]}"; do xlb backend add "$VIP4B" "$b" || return 1; done

	NAPI_PINNED=1
	threaded_napi "$NS_REF" "$B0R" && threaded_napi "$NS_LB" "$B0X" || NAPI_PINNED=0
	MAC_B0R=$(mac_of "$NS_REF" "$B0R") MAC_B0X=$(mac_of "$NS_LB" "$B0X")
}

# cpu_time CPU: "busy available" jiffies of CPU so far (/proc/stat): busy is
# user, nice, system, irq and softirq time, available adds idle and iowait
# (time the hypervisor stole counts as neither).
cpu_time() {
	awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat
}

# received NS DEV: frames the sink program on DEV has dropped so far.
received() {
	tl_in "$1" ethtool -S "$2" | awk '/xdp_drops/ { n += $2 } END { print n + 0 }'
}

# ct_stats: "hits misses bypassed inserted" of xlb's connection table so far
# (xlb stats): a miss over the rate cap is forwarded without an entry.
ct_stats() {
	xlb -j stats | jq -r '.counters | [.ct_hit, .ct_miss, .ct_bypass, .ct_insert] |
		map(.packets) | join(" ")'
}

# config_args CONFIG: its generator device, the MAC the frames go to, the
# sink's namespace and device, and xlb-gen's options.
config_args() {
	# Hits: ACKs of --flows flows (4096), each established by its first
	# packet and found in the connection table after that; each flow's
	# entry is read again only after every other flow's, as on a busy
	# balancer. The cached hits take 16 of those flows: their entries stay
	# in the CPU's caches (and TLB), which shows what the table's memory
	# costs. Misses: SYNs, every one opening a new connection of a flow not
	# seen for 16 million packets. The hits take source ports 1024-2047 and
	# the misses the others, or the misses' SYNs would open the hit flows'
	# connections anew and the next hit run would find them without
	# entries. (xlb-gen numbers flows over its source addresses first,
	# 256 for IPv4, then ports.)
	local hits="--flows $hit_flows --sport 1024-2047 --tcp-flags A"
	case $1 in
	reflector) echo "$G0R $MAC_B0R $NS_GEN $G0R --dst ${VIP4%/tcp} $hits" ;;
	reflector6) echo "$G0R $MAC_B0R $NS_GEN $G0R --dst ${VIP6%/tcp} $hits" ;;
	v4_hit|v4_swap|v4_control) echo "$G0X $MAC_B0X $NS_GEN $G0X --dst ${VIP4%/tcp} $hits" ;;
	v4_hit_cached) echo "$G0X $MAC_B0X $NS_GEN $G0X --dst ${VIP4%/tcp} --flows 16 --sport 1024-2047 --tcp-flags A" ;;
	v4_miss) echo "$G0X $MAC_B0X $NS_GEN $G0X --dst ${VIP4%/tcp} --flows max --sport 2048-65535 --tcp-flags S" ;;
	v6_hit) echo "$G0X $MAC_B0X $NS_GEN $G0X --dst ${VIP6%/tcp} $hits" ;;
	v4_redirect) echo "$G0X $MAC_B0X $NS_SINK $S0 --dst ${VIP4B%/tcp} $hits" ;;
	esac
}

# One table swap: the first backend's weight goes to 2 and back to 1. The
# loop calls xlb directly (the maps need no network namespace): a command
# is one fork and one exec, the same for the swap and the control.
SWAP_WEIGHT=1
swap_once() {
	SWAP_WEIGHT=$((3 - SWAP_WEIGHT))
	"$XLB" --pin-dir "$PIN" backend set "$VIP4" "${BACKENDS4[0]}" --weight "$SWAP_WEIGHT"
}
help_once() { "$XLB" --pin-dir "$PIN" help; }

# cmd_loop FILE CMD: run CMD 20 times a second on the balancer's CPU,
# ahead of its NAPI thread, until killed, adding a byte to FILE per
# command. It waits with bash's own read timeout, so that the commands are
# its only processes.
cmd_loop() {
	local file=$1 cmd=$2 next now fd
	taskset -p -c "$LB_CPU" "$BASHPID" >/dev/null || exit 1
	if ((NAPI_PINNED)); then chrt -f -p 60 "$BASHPID" >/dev/null || exit 1; fi
	exec {fd}<> <(:)
	next=${EPOCHREALTIME/./}
	while :; do
		"$cmd" >/dev/null 2>"$file.err" || exit 1
		printf . >> "$file"
		next=$((next + 50000)) now=${EPOCHREALTIME/./}
		if ((next > now)); then
			read -r -t "$(printf '%d.%06d' $(((next - now) / 1000000)) $(((next - now) % 1000000)))" -u "$fd"
		fi
	done
}

# run CONFIG [RATE]: one measurement, offered at RATE frames per second
# (default --rate, else as fast as xlb-gen goes); appends "pps offered hits
# misses commands/s bypassed busy-fraction" to $TMP/CONFIG, or with a RATE
# to $TMP/CONFIG.paced.
run() {
	local cfg=$1 rate=${2:-$rate} file=$TMP/$1${2:+.paced} gdev mac sns sdev rest c0 c1 t0 t1 ct0 ct1 out pps swaps=- swap_pid= gen_pid i cpu0 cpu1 busy
	read -r gdev mac sns sdev rest <<< "$(config_args "$cfg")"
	if [[ $cfg == v4_swap || $cfg == v4_control ]]; then
		: > "$TMP/swaps"
		cmd_loop "$TMP/swaps" "$([[ $cfg == v4_swap ]] && echo swap_once || echo help_once)" &
		swap_pid=$!
	fi
	[[ $cfg == reflector* ]] || ct0=$(ct_stats)
	c0=$(received "$sns" "$sdev")
	# The generator runs until stopped: the measurement starts once frames
	# arrive (loading its program may take a while), after a warm-up.
	# (nsenter execs xlb-gen: $! is the generator itself.)
	# shellcheck disable=SC2086
	nsenter --net="/run/netns/$NS_GEN" "$GEN" --dev "$gdev" --dst-mac "$mac" --duration 600 --cpu "$GEN_CPU" \
		$( ((rate)) && echo "--rate $rate") -j $rest > "$TMP/gen.out" 2> "$TMP/gen.err" &
	gen_pid=$!
	for ((i = 0; i < 300; i++)); do
		[[ $(received "$sns" "$sdev") == "$c0" ]] || break
		kill -0 "$gen_pid" 2>/dev/null || break
		sleep 0.05
	done
	sleep "$warm"
	c0=$(received "$sns" "$sdev") t0=$(date +%s%N) cpu0=$(cpu_time "$LB_CPU")
	[[ -z $swap_pid ]] || swaps=$(stat -c %s "$TMP/swaps")
	sleep "$seconds"
	c1=$(received "$sns" "$sdev") t1=$(date +%s%N) cpu1=$(cpu_time "$LB_CPU")
	[[ -z $swap_pid ]] || swaps=$(( $(stat -c %s "$TMP/swaps") - swaps ))
	kill -TERM "$gen_pid" 2>/dev/null
	if ! wait "$gen_pid"; then
		[[ -z $swap_pid ]] || kill "$swap_pid" 2>/dev/null
		die "xlb-gen failed: $(cat "$TMP/gen.err")"
	fi
	if [[ -n $swap_pid ]]; then
		kill -0 "$swap_pid" 2>/dev/null ||
			die "$cfg: an xlb command of the loop failed: $(cat "$TMP/swaps.err")"
		kill "$swap_pid" 2>/dev/null
		wait "$swap_pid" 2>/dev/null
		swaps=$((swaps * 1000000000 / (t1 - t0)))
	fi
	local ct_hits=- ct_misses=- ct_bypassed=- h0 m0 b0
	if [[ $cfg != reflector* ]]; then
		ct1=$(ct_stats)
		read -r ct_hits ct_misses ct_bypassed _ <<< "$ct1"
		read -r h0 m0 b0 _ <<< "$ct0"
		ct_hits=$((ct_hits - h0)) ct_misses=$((ct_misses - m0)) ct_bypassed=$((ct_bypassed - b0))
	fi
	out=$(jq -r .pps "$TMP/gen.out")
	pps=$(( (c1 - c0) * 1000000000 / (t1 - t0) ))
	busy=$(echo "$cpu0 $cpu1" | awk '{ a = $4 - $2; printf "%.4f", (a > 0 ? ($3 - $1) / a : 0) }')
	echo "$pps $out $ct_hits $ct_misses $swaps $ct_bypassed $busy" >> "$file"
	log "$cfg: $pps pps forwarded (offered $out pps${2:+, paced}; CPU $LB_CPU busy $busy)"
}

# stats FILE COLUMN: "median min max" of a column.
stats() {
	cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%d %d %d\n", m, v[1], v[NR] }'
}

mpps() { echo "$1" | awk '{ printf "%.3f", $1 / 1e6 }'; }

log "setting up the topology (tag $T)"
topology > "$TMP/setup.log" 2>&1 ||
	die "setting up the topology failed:$(printf '\n  %s' "$(tail -n 8 "$TMP/setup.log")")"
((NAPI_PINNED)) || log "threaded NAPI is not available: the balancer shares the generator's CPU"

# A first round is not recorded: it leaves the connection table as the
# rounds after it find it, full of other flows, as on a balancer in
# service; the hit flows that came after the misses' flood sit in full
# sets (ahead of their one-packet entries once established: see
# bpf/conntrack.h). Without the warm-up the first round's hit figures
# stood apart.
if ((!quick)); then
	log "warm-up round (not recorded)"
	for cfg in "${CONFIGS[@]}"; do
		run "$cfg" 2>/dev/null
		rm -f "$TMP/$cfg"
	done
fi

# Rounds alternate the configurations, each round in a rotated order, so
# drift in the machine's load spreads over all of them.
# Each saturated run is followed by the paced run of its configuration, at
# 1.1 times what it just forwarded.
for ((r = 0; r < rounds; r++)); do
	for ((i = 0; i < ${#CONFIGS[@]}; i++)); do
		cfg=${CONFIGS[(i + r) % ${#CONFIGS[@]}]}
		run "$cfg"
		[[ $cfg != v4_swap && $cfg != v4_control ]] || continue
		run "$cfg" "$(tail -n 1 "$TMP/$cfg" | awk '{ r = int($1 * 1.1); print (r > 1000 ? r : 1000) }')"
	done
done

declare -A REF_MED REF_CAP
for cfg in reflector reflector6; do
	[[ -s $TMP/$cfg ]] || continue
	read -r REF_MED[$cfg] _ <<< "$(stats "$TMP/$cfg" 1)"
	(( REF_MED[$cfg] > 0 )) || die "the reflector forwarded nothing: the topology does not carry traffic"
done
ref_med=${REF_MED[reflector]}
status=0 limited=()
echo "## End-to-end throughput"
echo
echo "Packets per second forwarded between veth links: 64-byte TCP segments from"
echo "tools/xlb-gen (ACKs of $hit_flows established flows for hits, SYNs of ever new flows"
echo "for misses), $rounds rounds of $seconds s per configuration, alternating; median"
echo "and min–max, each as a ratio to the MAC-swap reflector in the balancer's place"
echo "(IPv6 configurations to the reflector of IPv6 frames)."
[[ -z $ct_size ]] || echo "Connection table of $ct_size entries (\`xlb attach --conntrack-size\`)."
if ((!quick)) && [[ " ${CONFIGS[*]} " == *" v4_miss "* ]]; then
	echo "A first round, not recorded, leaves the connection table full of other flows, as on"
	echo "a balancer in service."
fi
if ((NAPI_PINNED)); then
	echo "Generator on CPU $GEN_CPU; balancer (its NAPI thread, at real-time priority) and"
	echo "sinks on CPU $LB_CPU."
else
	echo "Threaded NAPI was not available: generator and balancer shared CPU $GEN_CPU."
fi
echo
echo "| configuration | Mpps (median) | min–max | offered Mpps | ratio to reflector |" \
	"conntrack: hit / new entry / over the rate cap | xlb commands/s |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for cfg in "${CONFIGS[@]}"; do
	read -r med lo hi <<< "$(stats "$TMP/$cfg" 1)"
	read -r off _ <<< "$(stats "$TMP/$cfg" 2)"
	ratio=$(echo "$med ${REF_MED[$(base_of "$cfg")]}" | awk '{ printf "%.2f", $1 / $2 }')
	ct=- sw=-
	if [[ $cfg != reflector* ]]; then
		ct=$(awk '{ h += $3; m += $4; b += $6 } END {
			if (h + m == 0) print "none counted"
			else printf "%.0f%% / %.0f%% / %.0f%%", 100 * h / (h + m),
				100 * (m - b) / (h + m), 100 * b / (h + m) }' "$TMP/$cfg")
		(( med > 0 )) || { log "$cfg: xlb forwarded nothing"; status=1; }
	fi
	[[ $cfg != v4_swap && $cfg != v4_control ]] || read -r sw _ <<< "$(stats "$TMP/$cfg" 5)"
	(( med * 10 < off * 9 )) || limited+=("${TITLE[$cfg]}")
	echo "| ${TITLE[$cfg]} | $(mpps "$med") | $(mpps "$lo")–$(mpps "$hi") | $(mpps "$off") | $ratio | $ct | $sw |"
done
echo
if [[ ${#limited[@]} -gt 0 ]]; then
	echo "Forwarded within 10% of the offered load, so the generator may have been the limit:"
	printf -- '- %s\n' "${limited[@]}"
	echo
fi
if [[ -s $TMP/v4_swap && -s $TMP/v4_control ]]; then
	read -r swap_med _ <<< "$(stats "$TMP/v4_swap" 1)"
	read -r control_med _ <<< "$(stats "$TMP/v4_control" 1)"
	awk -v s="$swap_med" -v c="$control_med" 'BEGIN { if (c > 0)
		printf "Table swaps against the control: %.2f of its rate.\n\n", s / c }'
fi

# stats_of FILE EXPR: stats of an awk expression of each line's columns,
# rounded to a whole number.
stats_of() {
	awk "{ print int($2 + 0.5) }" "$1" > "$1.expr"
	stats "$1.expr" 1
}

# capacity CONFIG: "median min max" of the paced runs' forwarded rate per
# unit of the balancer's CPU busy.
capacity() { stats_of "$TMP/$1.paced" '($7 > 0 ? $1 / $7 : 0)'; }

echo "### Paced: CPU time per packet"
echo
echo "The same configurations offered at 1.1 times what each forwarded saturated in"
echo "the same round, with the time CPU $LB_CPU was busy over the interval"
echo "(/proc/stat): the rate one CPU forwards busy all the time is the forwarded rate"
echo "divided by the busy fraction. (The swap and its control are left out: their"
echo "commands run on that CPU too.)"
echo
echo "| configuration | offered Mpps | forwarded Mpps | CPU $LB_CPU busy | ns per packet | Mpps per busy CPU (median) | min–max | ratio to reflector |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for cfg in reflector reflector6; do
	[[ -s $TMP/$cfg.paced ]] || continue
	read -r REF_CAP[$cfg] _ <<< "$(capacity "$cfg")"
done
ref_cap=${REF_CAP[reflector]}
for cfg in "${CONFIGS[@]}"; do
	[[ $cfg != v4_swap && $cfg != v4_control ]] || continue
	read -r cap lo hi <<< "$(capacity "$cfg")"
	read -r off _ <<< "$(stats "$TMP/$cfg.paced" 2)"
	read -r fwd _ <<< "$(stats "$TMP/$cfg.paced" 1)"
	read -r busy _ <<< "$(stats_of "$TMP/$cfg.paced" '100 * $7')"
	echo "| ${TITLE[$cfg]} | $(mpps "$off") | $(mpps "$fwd") | $busy% |" \
		"$(awk -v c="$cap" 'BEGIN { printf "%.0f", (c > 0 ? 1e9 / c : 0) }') |" \
		"$(mpps "$cap") | $(mpps "$lo")–$(mpps "$hi") |" \
		"$(awk -v c="$cap" -v r="${REF_CAP[$(base_of "$cfg")]}" 'BEGIN { printf "%.2f", (r > 0 ? c / r : 0) }') |"
done
echo
[[ -s $TMP/v4_hit ]] || exit $status
read -r hit_med _ <<< "$(stats "$TMP/v4_hit" 1)"
read -r hit_cap _ <<< "$(capacity v4_hit)"
awk -v x="$hit_med" -v r="$ref_med" -v xc="$hit_cap" -v rc="$ref_cap" 'BEGIN {
	q = x / r; qc = rc > 0 ? xc / rc : 0
	printf "Target: xlb with connection-table hits forwards at least 80%% of the "
	printf "reflector\047s rate: saturated %.0f%%, %s; per busy CPU %.0f%%, %s.\n",
		100 * q, (q >= 0.8 ? "met" : "not met"), 100 * qc, (qc >= 0.8 ? "met" : "not met") }'
exit $status
