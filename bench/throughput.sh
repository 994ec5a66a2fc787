#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End-to-end throughput: packets per second a balancer forwards between
# veth links, for xlb in several configurations, for the fastest possible
# forwarder (a MAC-swap XDP_TX reflector) and for the least a Maglev
# balancer can do (the floor: bench/bpf/floor.bpf.c) in its place. Prints
# a markdown section for BENCHMARKS.md on stdout, progress on stderr.
#
#   bench/throughput.sh [--quick] [--rounds N] [--seconds S] [--rate PPS]
#                       [--flows N] [--conntrack-size N] [--configs LIST]
#                       [--flood-cap N] [--flood-nice N]
#
#   --quick      one short round (the smoke test; figures mean little)
#   --rounds N   rounds of every configuration, alternating (default 5)
#   --seconds S  measured interval of each run (default 1.5)
#   --rate PPS   offered load (default: as fast as xlb-gen goes)
#   --flows N    flows of the hit configurations and of v4_stateless
#                (default 4096, at most 262144; v4_stateless_many: 65536)
#   --conntrack-size N
#                xlb's connection table size (`xlb attach --conntrack-size`;
#                default: xlb's default)
#   --configs LIST
#                the configurations to run, comma-separated (default: all;
#                the reflector and the floor always run, as every ratio is
#                to them, and the reflector's IPv6 run with any IPv6
#                configuration)
#   --flood-cap N
#                v4_hit_flood (and the yardstick of v4_stateless_flood): xlb's cap on new connection-table entries
#                (`xlb config set ct-rate-limit`, per second per CPU) while
#                it runs (default: xlb's, 100000, or a tenth of it with
#                --quick; the other configurations keep xlb's default)
#   --flood-nice N
#                the floods: the SYN generator's nice level on the
#                generators' CPU, 0 to 19: the higher, the smaller its
#                share of that CPU and the flood (default 7)
#
# Topology, one network namespace per box:
#
#   gen ── g0r ═══ b0r ── ref      reflector: XDP_TX back to g0r
#      ├── g0f ═══ b0f ── floor    the floor: IPIP, XDP_TX back to g0f
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
#
# Under a SYN flood (v4_hit_flood): the hits' traffic (ACKs of --flows
# established flows) and, from a second xlb-gen, SYNs of ever new flows to
# the same VIP from other sources (see FLOOD_SRCS), past the connection
# table's cap on new entries (xlb's, 100,000 a second per CPU, or
# --flood-cap). Each run measures the ACKs alone first, then the ACKs and
# the flood together, the same generator going on: the first interval is
# the baseline of the second. Both generators run on the generators' CPU;
# the scheduler alternates them in slices of a few milliseconds, the SYN
# generator (at a lower priority, --flood-nice) for a small share of them,
# which sets the flood's rate. Each offers more than the balancer forwards
# while it runs: the ACKs' as fast as it goes, the SYNs' paced at 1.25
# times what the balancer forwarded of the ACKs alone. So the balancer takes
# bursts of ACKs and of SYNs in turn and is never idle for want of either
# (a flood paced at its own rate would leave it idle for most of the
# flood's slices), and the flood spends few flows on frames the balancer's
# link refuses. The frames tell the two apart: the SYNs are 54 bytes (no
# payload), the ACKs 64, so the byte counts of xlb's counters (what it
# took) and of the sink (what it forwarded) split either count in two.
# Other work on the generators' CPU leaves the balancer idle while it runs
# (the report gives the generators' run time and the balancer thread's):
# the packets forwarded per second of the balancer's NAPI thread's run
# time do not depend on that. The path check:
# xlb's counters must show the flood past the cap (ct_bypass), no more new
# entries than the cap allows, and every established packet a hit
# (ct_hit); a run that took another path fails the benchmark.
#
# A stateless VIP (v4_stateless, v4_stateless_many, v4_stateless_flood):
# 192.0.2.30, `xlb vip add --mode stateless`, with VIP4's backends, so GUE
# and no connection table. Its established flows are the same ACKs, of
# --flows flows and of 65536 (with no per-flow state, how many take turns
# should not matter), and the same flood, whose rate is held against the
# tracked mode's cap. A stateless VIP's packets are the VIP's counter in
# xlb stats (the SYNs told apart by their length); the path check: the
# flood's SYNs reach xlb and the connection table counts nothing.
#
# Last, where the time goes (v4_hit's and v4_stateless's traffic): the
# datapath ended after each stage, loaded on the instance's maps, each in
# xlb's place in turn for a tenth of a second, round after round, each
# program's own time per run counted (bpf_stats); see stage_ladder. The
# path check: the last stage put in place is the program that runs.
set -uo pipefail

# shellcheck source=../tests/lib/lib.sh
. "$(dirname "$0")/../tests/lib/lib.sh"
GEN=$BUILD/tools/xlb-gen

rounds=5 seconds=1.5 warm=0.5 rate=0 quick=0 hit_flows=4096 ct_size= only=
flood_cap='' flood_nice=7
while [[ $# -gt 0 ]]; do
	case $1 in
	--quick) quick=1 rounds=1 seconds=0.3 warm=0.2 ;;
	--rounds) rounds=${2:-}; shift ;;
	--seconds) seconds=${2:-}; shift ;;
	--rate) rate=${2:-}; shift ;;
	--flows) hit_flows=${2:-}; shift ;;
	--conntrack-size) ct_size=${2:-}; shift ;;
	--flood-cap|--flood-nice)
		[[ -n ${2:-} ]] || { echo "throughput.sh: $1: a number is missing" >&2; exit 1; }
		[[ $1 == --flood-cap ]] && flood_cap=$2 || flood_nice=$2
		shift ;;
	--configs)
		[[ -n ${2:-} ]] || { echo "throughput.sh: --configs: a list of configurations is missing" >&2; exit 1; }
		only=$2; shift ;;
	-h|--help) sed -n '/^#   bench\/throughput.sh/,/^#                share of that CPU and the flood/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
[[ -z $flood_cap ]] || { [[ $flood_cap =~ ^[1-9][0-9]{0,8}$ ]] && (( flood_cap <= 100000000 )); } ||
	{ echo "throughput.sh: --flood-cap: '$flood_cap' is not a count from 1 to 100000000" >&2; exit 1; }
if ! [[ $flood_nice =~ ^[0-9]{1,2}$ ]] || (( 10#$flood_nice > 19 )); then
	echo "throughput.sh: --flood-nice: '$flood_nice' is not a nice level from 0 to 19" >&2
	exit 1
fi
flood_nice=$((10#$flood_nice))
# xlb's own cap, for the report and the path check when --flood-cap leaves it.
CT_RATE_DEFAULT=$(awk '$1 == "#define" && $2 == "XLB_CT_RATE_LIMIT" { print $3 }' \
	"$XLB_TOP/include/xlb.h" 2>/dev/null)
[[ $CT_RATE_DEFAULT =~ ^[1-9][0-9]*$ ]] || CT_RATE_DEFAULT=100000
# --quick (the smoke test) checks the flood's path, not its figures: a cap
# of a tenth of xlb's, which the flood passes also on a busy machine.
((quick)) && [[ -z $flood_cap ]] && flood_cap=$((CT_RATE_DEFAULT / 10))
flood_cap_set=$flood_cap
flood_cap=${flood_cap:-$CT_RATE_DEFAULT}

# The configurations, and those --configs picks. A stateless VIP's
# established flows are also run at MANY_FLOWS, whatever --flows says: with
# no per-flow state the rate should not depend on how many flows take turns.
MANY_FLOWS=65536
ALL_CONFIGS=(reflector floor reflector6 v4_hit v4_hit_flood v4_stateless v4_stateless_many v4_stateless_flood
	v4_hit_cached v4_miss v6_hit v4_control v4_swap v4_redirect)
declare -A TITLE=(
	[reflector]="MAC-swap XDP_TX reflector (the limit)"
	[floor]="minimal Maglev forwarder (the floor)"
	[reflector6]="MAC-swap XDP_TX reflector, IPv6 frames (the limit for IPv6)"
	[v4_hit]="xlb, IPv4 TCP, connection-table hits"
	[v4_hit_flood]="xlb, IPv4 TCP, hits during a SYN flood (the hits' packets only)"
	[v4_stateless]="xlb, IPv4 TCP, established flows of a stateless VIP (GUE, no connection table)"
	[v4_stateless_many]="xlb, IPv4 TCP, established flows of a stateless VIP, $MANY_FLOWS flows"
	[v4_stateless_flood]="xlb, IPv4 TCP, a stateless VIP's established flows during a SYN flood (their packets only)"
	[v4_hit_cached]="xlb, IPv4 TCP, hits of 16 flows (entries stay in the CPU's caches)"
	[v4_miss]="xlb, IPv4 TCP, misses (every packet a new flow)"
	[v6_hit]="xlb, IPv6 TCP, connection-table hits"
	[v4_control]="xlb, IPv4 TCP, hits, \`xlb help\` 20 times a second (control)"
	[v4_swap]="xlb, IPv4 TCP, hits, table swapped 20 times a second"
	[v4_redirect]="xlb, IPv4 TCP, hits, out of a second link (XDP_REDIRECT)"
)
CONFIGS=("${ALL_CONFIGS[@]}")
if [[ -n $only ]]; then
	CONFIGS=(reflector floor)
	IFS=, read -r -a picked <<< "$only"
	for cfg in "${picked[@]}"; do
		[[ -n ${TITLE[$cfg]:-} ]] || { echo "throughput.sh: --configs: no configuration '$cfg' (there are: ${ALL_CONFIGS[*]})" >&2; exit 1; }
		[[ " ${CONFIGS[*]} " == *" $cfg "* ]] || CONFIGS+=("$cfg")
		[[ $cfg != v6_* || " ${CONFIGS[*]} " == *" reflector6 "* ]] || CONFIGS=(reflector floor reflector6 "${CONFIGS[@]:2}")
	done
fi
# base_of CONFIG: the reflector its ratio is to. IPv6 frames are longer
# than IPv4 ones (74 bytes against 64): an IPv6 configuration is held
# against the reflector of the same frames, so that what the frames cost
# any forwarder counts on both sides.
base_of() { [[ $1 == v6_* || $1 == reflector6 ]] && echo reflector6 || echo reflector; }
# is_base CONFIG: a forwarder to compare with, not xlb.
is_base() { [[ $1 == reflector* || $1 == floor ]]; }

log() { echo "throughput: $*" >&2; }
die() { echo "throughput.sh: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, XDP)"
for f in "$GEN" "$XLB" "$BUILD/reflector.bpf.o" "$BUILD/sink.bpf.o" "$BUILD/floor.bpf.o" "$BUILD/bench/floor_attach" "$BUILD/bench/stage_load"; do
	[[ -e $f ]] || die "$f is missing: run make first"
done
(( $(nproc) >= 2 )) || die "needs two CPUs (generator and balancer apart)"
tl_bpffs

# Unique names: namespaces through tests/lib/lib.sh; devices carry the tag so
# the NAPI threads ("napi/DEV-ID") can be told apart host-wide.
T=$TL_TAG
G0R=xg${T}r B0R=xb${T}r G0F=xg${T}f B0F=xb${T}f G0X=xg${T}x B0X=xb${T}x B1X=xo${T} S0=xs${T}
VIP4=192.0.2.10:80/tcp VIP6=[2001:db8::10]:80/tcp VIP4B=192.0.2.20:80/tcp
VIP4S=192.0.2.30:80/tcp	# stateless, with VIP4's backends
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
# 1 when the kernel cannot. The thread's PID goes to NAPI_PID[DEV].
declare -A NAPI_PID
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
			NAPI_PID[$dev]=$pid
			return 0
		fi
	done
	return 1
}

topology() {
	# Every command into the setup log, so a failure names its command.
	local - ns
	set -x
	tl_netns NS_GEN gen && tl_netns NS_REF ref && tl_netns NS_FLOOR floor && tl_netns NS_LB lb &&
		tl_netns NS_SINK sink || return 1
	# Nothing but the generator's frames: no IPv6 neighbour discovery from
	# the ends that count.
	for ns in "$NS_GEN" "$NS_SINK"; do
		tl_in "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1 >/dev/null || return 1
	done
	ip link add "$G0R" netns "$NS_GEN" type veth peer name "$B0R" netns "$NS_REF" &&
	ip link add "$G0F" netns "$NS_GEN" type veth peer name "$B0F" netns "$NS_FLOOR" &&
	ip link add "$G0X" netns "$NS_GEN" type veth peer name "$B0X" netns "$NS_LB" &&
	ip link add "$B1X" netns "$NS_LB" type veth peer name "$S0" netns "$NS_SINK" || return 1
	for ns in "$NS_GEN $G0R" "$NS_GEN $G0F" "$NS_GEN $G0X" "$NS_REF $B0R" "$NS_FLOOR $B0F" \
		"$NS_LB $B0X" "$NS_LB $B1X" "$NS_SINK $S0"; do
		set -- $ns
		ip -n "$1" link set dev "$2" up || return 1
	done
	# The far ends count what arrives.
	tl_in "$NS_GEN" ip link set dev "$G0R" xdpdrv obj "$BUILD/sink.bpf.o" sec xdp &&
	tl_in "$NS_GEN" ip link set dev "$G0F" xdpdrv obj "$BUILD/sink.bpf.o" sec xdp &&
	tl_in "$NS_GEN" ip link set dev "$G0X" xdpdrv obj "$BUILD/sink.bpf.o" sec xdp &&
	tl_in "$NS_SINK" ip link set dev "$S0" xdpdrv obj "$BUILD/sink.bpf.o" sec xdp &&
	tl_in "$NS_REF" ip link set dev "$B0R" xdpdrv obj "$BUILD/reflector.bpf.o" sec xdp || return 1
	# The floor encapsulates to its backends' next hop, g0f.
	tl_pin_dir FLOOR_PIN floor &&
	nsenter --net="/run/netns/$NS_FLOOR" "$BUILD/bench/floor_attach" "$BUILD/floor.bpf.o" \
		"$B0F" "$(mac_of "$NS_GEN" "$G0F")" "$FLOOR_PIN/floor_stats" "${#BACKENDS4[@]}" || return 1

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
	xlb vip add "$VIP4S" --mode stateless || return 1
	for b in "${BACKENDS4[@]}"; do
		xlb backend add "$VIP4" "$b" && xlb backend add "$VIP4S" "$b" || return 1
	done
	for b in "${BACKENDS6[@]}"; do xlb backend add "$VIP6" "$b" || return 1; done
	for b in "${BACKENDS4B[@]}"; do xlb backend add "$VIP4B" "$b" || return 1; done

	NAPI_PINNED=1
	threaded_napi "$NS_REF" "$B0R" && threaded_napi "$NS_FLOOR" "$B0F" &&
		threaded_napi "$NS_LB" "$B0X" || NAPI_PINNED=0
	MAC_B0R=$(mac_of "$NS_REF" "$B0R") MAC_B0F=$(mac_of "$NS_FLOOR" "$B0F") MAC_B0X=$(mac_of "$NS_LB" "$B0X")
}

# cpu_time CPU: "busy available" jiffies of CPU so far (/proc/stat): busy is
# user, nice, system, irq and softirq time, available adds idle and iowait
# (time the hypervisor stole counts as neither).
cpu_time() {
	awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat
}

# received NS DEV: frames the sink program on DEV has dropped so far.
received() {
	tl_in "$1" ethtool -S "$2" | awk '/xdp_drops/ { n += $2 } END { printf "%.0f\n", n }'
}

# balancer_of CONFIG: the namespace and device of the program that
# forwards CONFIG's frames.
balancer_of() {
	case $1 in
	reflector*) echo "$NS_REF $B0R" ;;
	floor) echo "$NS_FLOOR $B0F" ;;
	*) echo "$NS_LB $B0X" ;;
	esac
}

# prog_time CONFIG: "run_time_ns run_cnt" so far of the XDP program that
# forwards CONFIG (kernel.bpf_stats_enabled is on while this runs): the
# mean time of one run in this traffic, cold caches and all, which
# BPF_PROG_TEST_RUN's warm loop does not show.
prog_time() {
	local id ns dev
	read -r ns dev <<< "$(balancer_of "$1")"
	id=$(ip -j -n "$ns" link show dev "$dev" | jq '.[0].xdp.prog.id // 0')
	bpftool -j prog show id "$id" 2>/dev/null |
		jq -r '"\(.run_time_ns // 0) \(.run_cnt // 0)"' 2>/dev/null || echo "0 0"
}

# floor_forwarded CONFIG: the frames the floor has encapsulated so far
# (0 for any other configuration).
floor_forwarded() {
	[[ $1 == floor ]] || { echo 0; return; }
	bpftool -j map lookup pinned "$FLOOR_PIN/floor_stats" key 0 0 0 0 |
		jq '[.formatted.values[].value] | add // 0'
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
	floor) echo "$G0F $MAC_B0F $NS_GEN $G0F --dst ${VIP4%/tcp} $hits" ;;
	v4_hit|v4_swap|v4_control) echo "$G0X $MAC_B0X $NS_GEN $G0X --dst ${VIP4%/tcp} $hits" ;;
	v4_hit_cached) echo "$G0X $MAC_B0X $NS_GEN $G0X --dst ${VIP4%/tcp} --flows 16 --sport 1024-2047 --tcp-flags A" ;;
	v4_stateless) echo "$G0X $MAC_B0X $NS_GEN $G0X --dst ${VIP4S%/tcp} $hits" ;;
	v4_stateless_many) echo "$G0X $MAC_B0X $NS_GEN $G0X --dst ${VIP4S%/tcp} --flows $MANY_FLOWS --sport 1024-2047 --tcp-flags A" ;;
	v4_miss) echo "$G0X $MAC_B0X $NS_GEN $G0X --dst ${VIP4%/tcp} --flows max --sport 2048-65535 --tcp-flags S" ;;
	v6_hit) echo "$G0X $MAC_B0X $NS_GEN $G0X --dst ${VIP6%/tcp} $hits" ;;
	v4_redirect) echo "$G0X $MAC_B0X $NS_SINK $S0 --dst ${VIP4B%/tcp} $hits" ;;
	esac
}

# One table swap: the first backend's weight goes to 2 and back to 1. The
# loop calls xlb directly (the maps need no network namespace): a command
# is one fork and one exec, the same for the swap and the control.
SWAP_WEIGHT=1
# In the balancer's namespace, as every xlb command (its next hops are
# there); nsenter execs xlb, so each command is still one process.
swap_once() {
	SWAP_WEIGHT=$((3 - SWAP_WEIGHT))
	nsenter --net="/run/netns/$NS_LB" "$XLB" --pin-dir "$PIN" \
		backend set "$VIP4" "${BACKENDS4[0]}" --weight "$SWAP_WEIGHT"
}
help_once() { nsenter --net="/run/netns/$NS_LB" "$XLB" --pin-dir "$PIN" help; }

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

# gen_start CONFIG RATE: CONFIG's generator, at RATE packets a second (0:
# as fast as it goes), until stopped, its pid in GEN_PID; returns once its
# frames reach CONFIG's sink (loading its program may take a while).
# (nsenter execs xlb-gen: $! is the generator itself.)
gen_start() {
	local gdev mac sns sdev rest c0 i
	read -r gdev mac sns sdev rest <<< "$(config_args "$1")"
	c0=$(received "$sns" "$sdev")
	# shellcheck disable=SC2086
	nsenter --net="/run/netns/$NS_GEN" "$GEN" --dev "$gdev" --dst-mac "$mac" --duration 600 --cpu "$GEN_CPU" \
		$( (($2)) && echo "--rate $2") -j $rest > "$TMP/gen.out" 2> "$TMP/gen.err" &
	GEN_PID=$!
	for ((i = 0; i < 300; i++)); do
		[[ $(received "$sns" "$sdev") == "$c0" ]] || break
		kill -0 "$GEN_PID" 2>/dev/null || break
		sleep 0.05
	done
}

# run CONFIG [RATE]: one measurement, offered at RATE frames per second
# (default --rate, else as fast as xlb-gen goes); appends "pps offered hits
# misses commands/s bypassed busy-fraction" to $TMP/CONFIG, or with a RATE
# to $TMP/CONFIG.paced.
run() {
	local cfg=$1 rate=${2:-$rate} file=$TMP/$1${2:+.paced} gdev mac sns sdev rest c0 c1 t0 t1 ct0 ct1 out pps swaps=- swap_pid= gen_pid i cpu0 cpu1 busy p0 p1 f0 f1 run_ns
	read -r gdev mac sns sdev rest <<< "$(config_args "$cfg")"
	if [[ $cfg == v4_swap || $cfg == v4_control ]]; then
		: > "$TMP/swaps"
		cmd_loop "$TMP/swaps" "$([[ $cfg == v4_swap ]] && echo swap_once || echo help_once)" &
		swap_pid=$!
	fi
	is_base "$cfg" || ct0=$(ct_stats)
	gen_start "$cfg" "$rate"
	gen_pid=$GEN_PID
	sleep "$warm"
	f0=$(floor_forwarded "$cfg")
	c0=$(received "$sns" "$sdev") t0=$(date +%s%N) cpu0=$(cpu_time "$LB_CPU")
	[[ -z $swap_pid ]] || swaps=$(stat -c %s "$TMP/swaps")
	sleep "$seconds"
	c1=$(received "$sns" "$sdev") t1=$(date +%s%N) cpu1=$(cpu_time "$LB_CPU")
	f1=$(floor_forwarded "$cfg")
	[[ -z $swap_pid ]] || swaps=$(( $(stat -c %s "$TMP/swaps") - swaps ))
	# Then the program's own time per run, over an interval of its own:
	# the statistics read the clock twice a run, which costs every
	# program alike (here, in a VM, tens of ns) and would narrow the
	# ratios measured above.
	sysctl -q -w kernel.bpf_stats_enabled=1 2>/dev/null
	p0=$(prog_time "$cfg")
	sleep "$STATS_SECONDS"
	p1=$(prog_time "$cfg")
	sysctl -q -w kernel.bpf_stats_enabled=0 2>/dev/null
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
	if ! is_base "$cfg"; then
		ct1=$(ct_stats)
		read -r ct_hits ct_misses ct_bypassed _ <<< "$ct1"
		read -r h0 m0 b0 _ <<< "$ct0"
		ct_hits=$((ct_hits - h0)) ct_misses=$((ct_misses - m0)) ct_bypassed=$((ct_bypassed - b0))
	fi
	out=$(jq -r .pps "$TMP/gen.out")
	pps=$(( (c1 - c0) * 1000000000 / (t1 - t0) ))
	busy=$(echo "$cpu0 $cpu1" | awk '{ a = $4 - $2; printf "%.4f", (a > 0 ? ($3 - $1) / a : 0) }')
	# The program's own mean time per run (bpf_stats), ns, to a tenth.
	run_ns=$(echo "$p0 $p1" | awk '{ n = $4 - $2; printf "%.0f", (n > 0 ? 10 * ($3 - $1) / n : 0) }')
	# The floor's path check: it encapsulated at least every frame that
	# arrived (its counter also holds frames the link refused on the way
	# back).
	if [[ $cfg == floor ]] && (( f1 - f0 < c1 - c0 )); then
		log "floor: $((c1 - c0)) frames arrived, but the floor encapsulated $((f1 - f0))"
		echo "$cfg" >> "$TMP/path_failed"
	fi
	echo "$pps $out $ct_hits $ct_misses $swaps $ct_bypassed $busy $run_ns" >> "$file"
	log "$cfg: $pps pps forwarded (offered $out pps${2:+, paced}; CPU $LB_CPU busy $busy)"
}

# The SYN flood of v4_hit_flood (see the top): its sources, blocks of
# the documentation ranges that the topology leaves unused; its frames'
# length (Ethernet, IPv4 and TCP headers, no payload). xlb-gen numbers
# flows over a block's addresses first, then the ports (1024-65535): each
# run takes the block with the most flows left, from the first port no run
# took (FLOOD_PORT), and never more flows than the block has left (xlb-gen
# --count), so no flow comes twice until all of them (21.7 million) are
# used; then every block starts again (flagged in the report).
FLOOD_SRCS=(192.0.2.64/26 203.0.113.64/26 203.0.113.192/26 192.0.2.32/27 192.0.2.160/27
	192.0.2.224/27 203.0.113.32/27 203.0.113.160/27)
FLOOD_SIZE=54
FLOOD_PORT=()
flood_blk=0 flood_need=0 flood_repeats=0 FLOOD_FAILS=()
for i in "${!FLOOD_SRCS[@]}"; do FLOOD_PORT[i]=1024; done

# flood_left [BLOCK]: flows left in a block (default: the current one);
# xlb-gen leaves out a prefix's own address and its broadcast.
flood_left() {
	local b=${1:-$flood_blk}
	echo $(( (65536 - FLOOD_PORT[b]) * ((1 << (32 - ${FLOOD_SRCS[b]#*/})) - 2) ))
}

# flood_pick NEED: the block with the most flows left into flood_blk; when
# none has NEED left, every block starts again.
flood_pick() {
	local b
	flood_blk=0
	for b in "${!FLOOD_SRCS[@]}"; do
		(( $(flood_left "$b") <= $(flood_left) )) || flood_blk=$b
	done
	if (( $(flood_left) < $1 )); then
		for b in "${!FLOOD_SRCS[@]}"; do FLOOD_PORT[b]=1024; done
		flood_blk=0 flood_repeats=1
	fi
}

# link_counts NS DEV: "frames bytes offered" of a veth: the frames and
# bytes its XDP program received, and the frames xlb-gen pushed out of it,
# whether its peer took them or refused them (ring full). (printf: mawk
# prints numbers past 2^31 with six digits.)
link_counts() {
	tl_in "$1" ethtool -S "$2" | awk '
		/^ *rx_queue_[0-9]+_xdp_packets:/ { p += $2 }
		/^ *rx_queue_[0-9]+_xdp_bytes:/ { b += $2 }
		/^ *tx_queue_[0-9]+_xdp_xmit(_errors)?:/ { o += $2 }
		END { printf "%.0f %.0f %.0f\n", p, b, o }'
}

# flood_ct CONFIG: "packets bytes" of what xlb took of the established
# flows, and of its connection table's misses, then the packets bypassed
# and inserted, and the table's hits (xlb stats). What it took is, with a
# tracked VIP (v4_hit_flood), the connection table's hits; with a stateless
# VIP (v4_stateless_flood), which the table never sees, the VIP's counter,
# the flood's SYNs included. The bytes tell the flood's SYNs from the ACKs
# in one reading of the counters.
flood_ct() {
	xlb -j stats | jq -r --arg vip "$([[ $1 == v4_stateless_flood ]] && echo "$VIP4S")" '
		.counters as $c | (if $vip == "" then $c.ct_hit
			else .vips[] | select(.vip == $vip) end) as $t |
		[$t.packets, $t.bytes, $c.ct_miss.packets, $c.ct_miss.bytes,
		 $c.ct_bypass.packets, $c.ct_insert.packets, $c.ct_hit.packets] | join(" ")'
}

# run_ns PID: nanoseconds process PID has run so far (0 once it is gone).
run_ns() {
	local ns
	{ read -r ns _ < "/proc/$1/schedstat"; } 2>/dev/null || ns=0
	echo "${ns:-0}"
}

# flood_snap CONFIG ACK_PID [FLOOD_PID]: the counters a flood reads at
# either end of an interval, each group after its own clock reading (in
# microseconds: bash's, no fork), as a slow read (xlb stats) must not
# stretch the next group's interval. In this order: the time, CPU 1's busy
# and available time, the run time of the two generators and of the
# balancer's NAPI thread (with the softirq work it starts, the sink's,
# unless the kernel counts softirq time apart: CONFIG_IRQ_TIME_ACCOUNTING);
# the time, g0x's frames and bytes (what the sink got: the balancer's
# output) and the frames both generators offered; the time, what xlb took
# (packets, bytes), its misses (packets, bytes), bypassed and inserted
# packets, and its hits (flood_ct).
flood_snap() {
	local t1 cpu r t2 link t3
	t1=${EPOCHREALTIME/./}
	r="$(run_ns "$2") $(run_ns "${3:-0}") $(run_ns "${NAPI_PID[$B0X]:-0}")"
	cpu=$(cpu_time "$LB_CPU")
	t2=${EPOCHREALTIME/./}
	link=$(link_counts "$NS_GEN" "$G0X")
	t3=${EPOCHREALTIME/./}
	echo "$t1 $cpu $r $t2 $link $t3 $(flood_ct "$1")"
}

# flood_seen CONFIG S0 S1: whether the flood's SYNs reach xlb since
# flood_snap S1, S0 to S1 having been the ACKs alone: counted as misses
# (tracked), or, where nothing counts misses (stateless), packets shorter
# than the ACKs among what the VIP took.
flood_seen() {
	awk -v a="$2" -v b="$3" -v c="$(flood_ct "$1")" -v st="$([[ $1 == v4_stateless_flood ]] && echo 1)" '
	BEGIN {
		split(a, x); split(b, y); split(c, z)
		if (!st) exit !(z[3] != y[14])
		dp = z[1] - y[12]; ack = y[12] > x[12] ? (y[13] - x[13]) / (y[12] - x[12]) : 0
		exit !(dp > 0 && z[2] - y[13] < dp * ack)
	}'
}

# run_flood CONFIG: one run of v4_hit_flood or v4_stateless_flood: the
# established flows' ACKs alone (those of v4_hit or v4_stateless), then
# with the flood to the same VIP. Appends to $TMP/CONFIG, for the main
# table, "established pps forwarded, established pps offered, hits,
# misses, -, bypassed, CPU 1 busy" with the flood, then what the flood
# table shows (see its columns below); a run whose path check fails adds
# its reasons to FLOOD_FAILS[CONFIG].
run_flood() {
	local cfg=$1 file=$TMP/$1 base=v4_hit vip=$VIP4 stateless=0
	local rest c0 ack_pid flood_pid i m m0 s0 s1 s2 s3 frate sent fpps addrs ports line why f short
	if [[ $cfg == v4_stateless_flood ]]; then
		base=v4_stateless vip=$VIP4S stateless=1
	fi
	read -r _ _ _ _ rest <<< "$(config_args "$base")"
	if [[ -n $flood_cap_set && $cfg == v4_hit_flood ]]; then
		xlb config set ct-rate-limit "$flood_cap" > /dev/null ||
			die "v4_hit_flood: xlb config set ct-rate-limit $flood_cap failed"
	fi
	c0=$(received "$NS_GEN" "$G0X")
	# shellcheck disable=SC2086,SC2046
	nsenter --net="/run/netns/$NS_GEN" "$GEN" --dev "$G0X" --dst-mac "$MAC_B0X" --duration 600 --cpu "$GEN_CPU" \
		$( ((rate)) && echo "--rate $rate") -j $rest > "$TMP/gen.out" 2> "$TMP/gen.err" &
	ack_pid=$!
	for ((i = 0; i < 300; i++)); do
		[[ $(received "$NS_GEN" "$G0X") == "$c0" ]] || break
		kill -0 "$ack_pid" 2>/dev/null || break
		sleep 0.05
	done
	# Every hit flow's entry first: the misses stop once all have one (a
	# cap the configuration before used up may hold them off for up to a
	# second).
	read -r _ m0 _ <<< "$(ct_stats)"
	for ((i = 0; i < 40; i++)); do
		sleep 0.05
		read -r _ m _ <<< "$(ct_stats)"
		(( m == m0 )) && break
		m0=$m
	done
	sleep "$warm"
	s0=$(flood_snap "$cfg" "$ack_pid")
	sleep "$seconds"
	s1=$(flood_snap "$cfg" "$ack_pid")
	# The flood, from the next unused source port; the measurement starts
	# once its SYNs reach xlb, after a warm-up.
	flood_pick "${flood_need:-0}"
	frate=$(awk -v a="$s0" -v b="$s1" 'BEGIN { split(a, x); split(b, y)
		r = y[7] > x[7] ? 1.25 * (y[8] - x[8]) * 1e6 / (y[7] - x[7]) : 0
		printf "%d", (r > 1000 ? r : 1000) }')
	# --quick checks the path, not the figures: there a slow reading of
	# the counters (xlb stats, ethtool -S, slow on a loaded machine) must not
	# let a fast flood spend its block of sources before the interval
	# ends. At this rate a /26 block lasts 13 s, a /27 half as long.
	((quick && frate > 300000)) && frate=300000
	nsenter --net="/run/netns/$NS_GEN" nice -n "$flood_nice" "$GEN" --dev "$G0X" --dst-mac "$MAC_B0X" \
		--count "$(flood_left)" --cpu "$GEN_CPU" --rate "$frate" -j \
		--dst "${vip%/tcp}" --src "${FLOOD_SRCS[flood_blk]}" \
		--sport "${FLOOD_PORT[flood_blk]}-65535" --flows max --tcp-flags S --size "$FLOOD_SIZE" \
		> "$TMP/flood.out" 2> "$TMP/flood.err" &
	flood_pid=$!
	for ((i = 0; i < 300; i++)); do
		flood_seen "$cfg" "$s0" "$s1" && break
		kill -0 "$flood_pid" 2>/dev/null || break
		sleep 0.05
	done
	# A shorter warm-up: the ACKs are warm already, and every second of
	# the flood spends flows.
	sleep "$(awk -v w="$warm" 'BEGIN { print w / 5 }')"
	s2=$(flood_snap "$cfg" "$ack_pid" "$flood_pid")
	sleep "$seconds"
	s3=$(flood_snap "$cfg" "$ack_pid" "$flood_pid")
	short=
	kill -0 "$flood_pid" 2>/dev/null || short="the flood's flows ran out before the interval ended"
	kill -TERM "$flood_pid" "$ack_pid" 2>/dev/null
	if ! wait "$flood_pid"; then
		wait "$ack_pid"
		die "xlb-gen (the flood) failed: $(cat "$TMP/flood.err")"
	fi
	wait "$ack_pid" || die "xlb-gen failed: $(cat "$TMP/gen.err")"
	if [[ -n $flood_cap_set && $cfg == v4_hit_flood ]]; then
		xlb config set ct-rate-limit 0 > /dev/null ||
			die "v4_hit_flood: xlb config set ct-rate-limit 0 (xlb's default again) failed"
	fi
	sent=$(jq -r .sent "$TMP/flood.out") fpps=$(jq -r .pps "$TMP/flood.out")
	addrs=$(( (1 << (32 - ${FLOOD_SRCS[flood_blk]#*/})) - 2 ))
	ports=$(( (sent + addrs - 1) / addrs ))
	log "$cfg: the flood's $sent SYNs came from ${FLOOD_SRCS[flood_blk]}," \
		"ports ${FLOOD_PORT[flood_blk]}-$((FLOOD_PORT[flood_blk] + ports - 1))"
	FLOOD_PORT[flood_blk]=$((FLOOD_PORT[flood_blk] + ports)) flood_need=$sent

	# Either interval's counts. xlb's counters tell the flood's SYNs from
	# the ACKs by their length (FLOOD_SIZE against an ACK's, measured in
	# the first interval); so do the sink's, whose ACK length is measured
	# there too (the same headers added to both).
	# With a stateless VIP, what xlb took in the flood's interval is both
	# kinds, split by length as the sink's count is; the connection table
	# must see nothing (its hits column carries the table's events).
	line=$(awk -v s0="$s0" -v s1="$s1" -v s2="$s2" -v s3="$s3" -v fpps="$fpps" \
		-v cap="$flood_cap" -v syn="$FLOOD_SIZE" -v stateless="$stateless" '
	function d(a, b, i) { return b[i] - a[i] }
	function whole(x) { return x - int(x + 0.5) < 0.01 && int(x + 0.5) - x < 0.01 }
	BEGIN {
		split(s0, x0); split(s1, x1); split(s2, x2); split(s3, x3)
		# fields of flood_snap
		TR = 1; CB = 2; CA = 3; RA = 4; RF = 5; RN = 6
		TL = 7; SP = 8; SB = 9; OF = 10
		TC = 11; HP = 12; HB = 13; MP = 14; MB = 15; BY = 16; IN = 17; CH = 18
		# each interval, seconds, by the clock of each group
		tra = d(x0, x1, TR) / 1e6; trb = d(x2, x3, TR) / 1e6
		tla = d(x0, x1, TL) / 1e6; tlb = d(x2, x3, TL) / 1e6
		tca = d(x0, x1, TC) / 1e6; tcb = d(x2, x3, TC) / 1e6
		pa = d(x0, x1, SP); ba = d(x0, x1, SB)
		ha = d(x0, x1, HP); hba = d(x0, x1, HB); ma = d(x0, x1, MP)
		bya = d(x0, x1, BY); ia = d(x0, x1, IN)
		if (pa <= 0 || ha <= 0) { print "|the ACKs alone were not forwarded"; exit }
		if (!whole(ba / pa) || !whole(hba / ha)) {
			printf "|frames other than the ACKs went through before the flood (%.2f bytes a frame at the sink, %.2f a hit)\n", ba / pa, hba / ha
			exit
		}
		aout = int(ba / pa + 0.5); ain = int(hba / ha + 0.5); dl = ain - syn
		if (dl <= 0) { print "|the ACKs are not longer than the SYNs"; exit }
		pb = d(x2, x3, SP); bb = d(x2, x3, SB)
		hb = d(x2, x3, HP); hbb = d(x2, x3, HB); mb = d(x2, x3, MP); mbb = d(x2, x3, MB)
		byb = d(x2, x3, BY); ib = d(x2, x3, IN)
		ffwd = (pb * aout - bb) / dl; efwd = pb - ffwd
		amb = (mbb - syn * mb) / dl; fmb = mb - amb	# misses: ACKs, SYNs
		if (stateless) {
			# taken: ACKs and SYNs; the table: hits, misses,
			# entries and bypasses, before and during the flood
			fmb = (hb * ain - hbb) / dl; hb -= fmb; amb = 0
			eva = d(x0, x1, CH) + ma + ia + bya
			evb = d(x2, x3, CH) + mb + ib + byb
		}
		busya = d(x0, x1, CA) > 0 ? d(x0, x1, CB) / d(x0, x1, CA) : 0
		busyb = d(x2, x3, CA) > 0 ? d(x2, x3, CB) / d(x2, x3, CA) : 0
		offa = d(x0, x1, OF) / tla; offall = d(x2, x3, OF) / tlb; offb = offall - fpps
		roff = offa > 0 ? offall / offa : 0
		cova = ha / (ha + ma); covb = hb + amb > 0 ? hb / (hb + amb) : 0
		why = ""
		if (fmb <= 0)
			why = why "; no SYN of the flood reached the balancer"
		if (stateless) {
			cova = eva / tca; covb = evb / tcb
			if (eva + evb > 0)
				why = why sprintf("; the connection table counted %.0f events (hits, misses, entries, bypasses) for a stateless VIP", eva + evb)
			if (efwd < 0 || ffwd < 0 || hb < 0)
				why = why "; the counts do not split into ACKs and SYNs"
		} else {
			if (ma > ha / 1000)
				why = why sprintf("; %.0f of the %.0f packets of established flows missed before the flood", ma, ha + ma)
			if (byb <= 0)
				why = why "; no SYN went past the cap (ct_bypass 0)"
			if (ib > cap * (int(tcb) + 2))
				why = why sprintf("; %.0f new entries in %.2f s, more than a cap of %d a second allows", ib, tcb, cap)
			if (hbb != hb * ain)
				why = why sprintf("; packets other than the ACKs counted as hits during the flood (%.2f bytes a hit)", hb ? hbb / hb : 0)
			if (amb > hb / 1000)
				why = why sprintf("; %.0f of the %.0f packets of established flows missed during the flood", amb, hb + amb)
			if (efwd < 0 || ffwd < 0)
				why = why "; the sink'"'"'s counts do not split into ACKs and SYNs"
		}
		re = (efwd / tlb) / (pa / tla); rall = (pb / tlb) / (pa / tla)
		# rates per second the balancer thread ran: the rate over the
		# share of the interval it ran
		na = d(x0, x1, RN) / 1e9 / tra; nb = d(x2, x3, RN) / 1e9 / trb
		ena = na > 0 ? pa / tla / na : 0; enb = nb > 0 ? efwd / tlb / nb : 0
		anb = nb > 0 ? pb / tlb / nb : 0
		rcap = ena > 0 ? enb / ena : 0; racap = ena > 0 ? anb / ena : 0
		printf "%.0f %.0f %.0f %.0f - %.0f %.4f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.0f %.4f %.4f %.4f %.0f %.0f %.0f %.4f %.4f|%s\n",
			efwd / tlb, offb, hb, mb, byb, busyb,
			pa / tla, offa, pb / tlb, fpps, fmb / tcb, ffwd / tlb,
			ib / tcb, byb / tcb, ia / tca, bya / tca, covb, cova, busya, re, rall,
			d(x2, x3, RF) / 1e9 / trb, d(x2, x3, RA) / 1e9 / trb, d(x0, x1, RA) / 1e9 / tra,
			offall, roff, nb, na, enb, anb, ena, rcap, racap, substr(why, 3)
	}')
	[[ $line == *"|"* ]] || line="|no figures: $line"
	why=${line#*|} line=${line%%|*}
	[[ -z $short ]] || why=${why:+$why; }$short
	[[ -z $line ]] || echo "$line" >> "$file"
	if [[ -n $why ]]; then
		FLOOD_FAILS+=("$cfg: $why")
		log "$cfg: path check failed: $why"
	fi
	[[ -n $line ]] || return 0
	read -r -a f <<< "$line"
	log "$cfg: ${f[0]} pps of the established flows forwarded with the flood, ${f[7]} before it" \
		"($(awk -v r="${f[20]}" 'BEGIN { printf "%.2f", r }')); flood offered ${f[10]}, taken ${f[11]} SYNs/s" \
		"($( ((stateless)) && echo "the tracked mode's cap" || echo cap) $flood_cap/s: ${f[13]} new entries/s, ${f[14]} bypassed/s)"
}

# stats FILE COLUMN: "median min max" of a column.
stats() {
	cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%d %d %d\n", m, v[1], v[NR] }'
}

mpps() { echo "$1" | awk '{ printf "%.3f", $1 / 1e6 }'; }

# round_ratio X BASE EXPR: "median min max" of X's EXPR (an awk expression
# of a run's columns) over BASE's, each round against the same round of
# BASE, so that drift in the machine's load between rounds cancels.
round_ratio() {
	[[ -s $1 && -s $2 ]] || { echo "0 0 0"; return; }
	paste -d' ' <(awk "{ print ($3) }" "$1") <(awk "{ print ($3) }" "$2") |
		awk 'NF == 2 && $2 > 0 { print $1 / $2 }' | sort -g | awk '{ v[NR] = $1 } END {
		if (!NR) { print "0 0 0"; exit }
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.2f %.2f %.2f\n", m, v[1], v[NR] }'
}

# floor_ratio CONFIG [.paced]: the median per-round ratio to the floor,
# saturated or per busy CPU; "-" for IPv6, which the floor does not take.
floor_ratio() {
	local r
	[[ $1 != v6_* && $1 != reflector6 ]] || { echo -; return; }
	if [[ ${2:-} == .paced ]]; then
		read -r r _ <<< "$(round_ratio "$TMP/$1.paced" "$TMP/floor.paced" '($7 > 0 ? $1 / $7 : 0)')"
	else
		read -r r _ <<< "$(round_ratio "$TMP/$1" "$TMP/floor" '$1')"
	fi
	echo "$r"
}

# run_ns CONFIG [.paced]: the median mean time of one run of its program,
# ns (bpf_stats).
run_ns() {
	[[ -s $TMP/$1${2:-} ]] || { echo -; return; }
	cut -d' ' -f8 "$TMP/$1${2:-}" | sort -n | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		if (m > 0) printf "%.1f\n", m / 10; else print "-" }'
}

# The stage ladders: per path, the stages (enum xlb_stage) after which
# bench/bpf/xlb_stage_end.bpf.c ends it, in order; ENCAP is the whole path.
declare -A STAGE_NUM=([parse]=0 [conntrack]=1 [vip]=2 [hash]=3 [table]=4 [nexthop]=5 [encap]=6)
declare -A STAGE_TITLE=(
	[parse]="parse, count (the exit's counters)"
	[conntrack]="config, clock, connection table lookup (a hit: the backend)"
	[vip]="config, clock, VIP lookup"
	[hash]="flow hash (SipHash-1-3)"
	[table]="table index and previous owner, backend record"
	[nexthop]="next hop (per-CPU FIB cache)"
	[encap]="encapsulation, verdict: the whole path"
)
declare -A STAGES=([v4_hit]="parse conntrack nexthop encap" [v4_stateless]="parse vip hash table nexthop encap")

# stage_ladder CONFIG: under CONFIG's traffic, saturated, every stage of
# its ladder in xlb's place in turn, each for a tenth of a second at a
# time, over and over for as long as $rounds measured intervals, with the
# statistics on: the drift of this machine's speed (by half, minutes apart)
# then falls on every stage alike. Writes "STAGE run_time_ns run_cnt" of
# each stage's program, over all its turns, to $TMP/stage.CONFIG. What
# ends early goes back out of b0x unencapsulated, to g0x's sink.
stage_ladder() {
	local cfg=$1 gen_pid i st turns dir
	local -A ids=()
	tl_pin_dir dir "stages-$cfg" || die "$cfg: no pin directory for the stages"
	for st in ${STAGES[$cfg]}; do
		ids[$st]=$(nsenter --net="/run/netns/$NS_LB" "$BUILD/bench/stage_load" "$PIN" \
			"${STAGE_NUM[$st]}" "$dir/$st" 2> "$TMP/stage.err") || die "$cfg: $(cat "$TMP/stage.err")"
	done
	gen_start "$cfg" 0
	gen_pid=$GEN_PID
	sleep "$warm"
	turns=$(awk -v r="$rounds" -v s="$seconds" 'BEGIN { n = int(r * s * 10 + 0.5); print (n < 2 ? 2 : n) }')
	sysctl -q -w kernel.bpf_stats_enabled=1 2>/dev/null
	for ((i = 0; i < turns; i++)); do
		for st in ${STAGES[$cfg]}; do
			tl_in "$NS_LB" ip -force link set dev "$B0X" xdpdrv pinned "$dir/$st" ||
				die "$cfg: the datapath ended after $st cannot take xlb's place"
			sleep 0.1
		done
	done
	sysctl -q -w kernel.bpf_stats_enabled=0 2>/dev/null
	kill -TERM "$gen_pid" 2>/dev/null
	wait "$gen_pid" || die "xlb-gen failed: $(cat "$TMP/gen.err")"
	# The path check: the last stage attached is what runs on b0x.
	[[ $(ip -j -n "$NS_LB" link show dev "$B0X" | jq '.[0].xdp.prog.id // 0') == "${ids[$st]}" ]] ||
		die "$cfg: the stages did not take xlb's place on $B0X"
	for st in ${STAGES[$cfg]}; do
		bpftool -j prog show id "${ids[$st]}" |
			jq -r --arg st "$st" '"\($st) \(.run_time_ns // 0) \(.run_cnt // 0)"'
	done > "$TMP/stage.$cfg"
}

# stages_report: each path's ladder (stage_ladder), then per path the mean
# time per run after each stage (ns) and what each stage added. Run last:
# the ladder takes xlb's place on b0x, and its last stage (the whole
# path, the same code as xlb's) is what stays.
stages_report() {
	local cfg st t n prev paths=()
	for cfg in v4_hit v4_stateless; do
		[[ " ${CONFIGS[*]} " == *" $cfg "* ]] && paths+=("$cfg")
	done
	[[ ${#paths[@]} -gt 0 ]] || return 0
	if ((!BPF_STATS_OK)); then
		echo "(No stage ladder: kernel.bpf_stats_enabled cannot be set here.)"
		echo
		return 0
	fi
	log "the stages, end to end"
	for cfg in "${paths[@]}"; do stage_ladder "$cfg"; done
	echo "### Where the time goes, end to end"
	echo
	echo "The datapath ended after each stage (bench/bpf/xlb_stage_end.bpf.c, loaded on the"
	echo "instance's maps by bench/stage_load), each put in xlb's place in turn for a tenth"
	echo "of a second, round after round, under each configuration's traffic, saturated: its"
	echo "mean time per run over all its turns (bpf_stats), so that the machine's drift falls"
	echo "on every stage alike, and what the stage added. A packet that ends early goes back"
	echo "unencapsulated. The statistics' own clock reads are in every row alike, as in the"
	echo "floor's time per run above."
	echo
	for cfg in "${paths[@]}"; do
		echo "${TITLE[$cfg]}:"
		echo
		echo "| after stage | ns per run | stage | runs |"
		echo "| --- | ---: | ---: | ---: |"
		prev=
		while read -r st t n; do
			(( n > 0 )) || die "$cfg: the datapath ended after $st ran no packet"
			t=$(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.1f", t / n }')
			echo "| ${STAGE_TITLE[$st]} | $t |" \
				"$( [[ -z $prev ]] || awk -v a="$t" -v b="$prev" 'BEGIN { printf "%+.1f", a - b }') | $n |"
			prev=$t
		done < "$TMP/stage.$cfg"
		echo
	done
}

# Every program's run time and runs (bpftool prog show) are counted after
# each measured interval (run()); the setting is back as it was when this
# ends.
BPF_STATS=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
tl_on_exit "sysctl -q -w kernel.bpf_stats_enabled=$BPF_STATS"
BPF_STATS_OK=1
sysctl -q -w kernel.bpf_stats_enabled=0 || { BPF_STATS_OK=0; log "kernel.bpf_stats_enabled cannot be set: no time per run"; }
STATS_SECONDS=$(awk -v s="$seconds" 'BEGIN { print (s / 3 < 0.2 ? 0.2 : s / 3) }')

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
		if [[ $cfg == *_flood ]]; then run_flood "$cfg" 2>/dev/null; else run "$cfg" 2>/dev/null; fi
		rm -f "$TMP/$cfg"
	done
	FLOOD_FAILS=()
fi

# Rounds alternate the configurations, each round in a rotated order, so
# drift in the machine's load spreads over all of them.
# Each saturated run is followed by the paced run of its configuration, at
# 1.1 times what it just forwarded.
for ((r = 0; r < rounds; r++)); do
	for ((i = 0; i < ${#CONFIGS[@]}; i++)); do
		cfg=${CONFIGS[(i + r) % ${#CONFIGS[@]}]}
		# The flood's runs are saturated only: the SYNs run on the
		# balancer's CPU too, so its busy time is not the ACKs' alone.
		if [[ $cfg == *_flood ]]; then run_flood "$cfg"; continue; fi
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
echo "and min–max; the ratio to the MAC-swap reflector in the balancer's place"
echo "(IPv6 configurations to the reflector of IPv6 frames) is of the medians, the ratio"
echo "to the floor the median of each round's (IPv4 only: the floor takes nothing else)."
echo "The floor (bench/bpf/floor.bpf.c) is the least a Maglev balancer does: parse"
echo "Ethernet, IPv4 and TCP, hash the 5-tuple by multiply and xor, read one slot of"
echo "65,537 and that backend's prebuilt Ethernet and outer IPv4 header, push and write"
echo "them, fix length and checksum, count, XDP_TX. \"ns per run\" is the program's own"
echo "mean time per run in this traffic (kernel.bpf_stats_enabled: run_time_ns / run_cnt"
echo "of \`bpftool prog show\`), counted for $STATS_SECONDS s after each measured interval, the"
echo "load going on (the statistics cost every program two clock reads a run, so they are"
echo "off while the rates are measured); the rest of a packet's cost is the links' and the sinks'."
[[ -z $ct_size ]] || echo "Connection table of $ct_size entries (\`xlb attach --conntrack-size\`)."
[[ " ${CONFIGS[*]} " != *"_flood "* ]] ||
	echo "During a SYN flood only the established flows' packets count (the flood's, below)."
[[ " ${CONFIGS[*]} " != *" v4_stateless"* ]] ||
	echo "A stateless VIP has VIP 192.0.2.10's backends; its traffic is the same ACKs, of $hit_flows flows and of $MANY_FLOWS."
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
echo "| configuration | Mpps (median) | min–max | offered Mpps | ratio to reflector | ratio to floor | ns per run |" \
	"conntrack: hit / new entry / over the rate cap | xlb commands/s |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for cfg in "${CONFIGS[@]}"; do
	if [[ ! -s $TMP/$cfg ]]; then
		# Only a flood records nothing of a run that went wrong.
		echo "| ${TITLE[$cfg]} | - | - | - | - | - | - | no run recorded | - |"
		status=1
		continue
	fi
	read -r med lo hi <<< "$(stats "$TMP/$cfg" 1)"
	read -r off _ <<< "$(stats "$TMP/$cfg" 2)"
	ratio=$(echo "$med ${REF_MED[$(base_of "$cfg")]}" | awk '{ printf "%.2f", $1 / $2 }')
	ct=- sw=-
	if [[ $cfg == v4_stateless_flood ]]; then
		# Its path check counts the table's events.
		ct="not used"
	elif [[ $cfg == v4_stateless* ]]; then
		ct=$(awk '{ n += $3 + $4 + $6 } END { print n ? "**used: " n " packets**" : "not used" }' "$TMP/$cfg")
		[[ $ct == "not used" ]] || { log "$cfg: the connection table saw a stateless VIP's packets"; status=1; }
	elif ! is_base "$cfg"; then
		ct=$(awk '{ h += $3; m += $4; b += $6 } END {
			if (h + m == 0) print "none counted"
			else printf "%.0f%% / %.0f%% / %.0f%%", 100 * h / (h + m),
				100 * (m - b) / (h + m), 100 * b / (h + m) }' "$TMP/$cfg")
	fi
	is_base "$cfg" || (( med > 0 )) || { log "$cfg: xlb forwarded nothing"; status=1; }
	[[ $cfg != v4_swap && $cfg != v4_control ]] || read -r sw _ <<< "$(stats "$TMP/$cfg" 5)"
	(( med * 10 < off * 9 )) || limited+=("${TITLE[$cfg]}")
	fr=-
	[[ $cfg == *_flood ]] || fr=$(floor_ratio "$cfg")
	echo "| ${TITLE[$cfg]} | $(mpps "$med") | $(mpps "$lo")–$(mpps "$hi") | $(mpps "$off") | $ratio | $fr |" \
		"$( [[ $cfg == *_flood ]] && echo - || run_ns "$cfg") | $ct | $sw |"
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

# fstats FILE COLUMN: "median min max" of a column, fractions kept.
fstats() {
	cut -d' ' -f"$2" "$1" | sort -g | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.4f %.4f %.4f\n", m, v[1], v[NR] }'
}
# cell FILE COLUMN FORMAT: "median (min–max)", each in FORMAT: mpps, rate
# (a whole number), pct or ratio.
cell() {
	fstats "$1" "$2" | awk -v f="$3" '
		function fmt(x) {
			if (f == "mpps") return sprintf("%.3f", x / 1e6)
			if (f == "pct") return sprintf("%.1f%%", 100 * x)
			if (f == "ratio") return sprintf("%.2f", x)
			return sprintf("%.0f", x)
		}
		{ printf "%s (%s–%s)", fmt($1), fmt($2), fmt($3) }'
}
# per_cap FILE COLUMN: the column's median as a multiple of the cap.
per_cap() { fstats "$1" "$2" | awk -v c="$flood_cap" '{ printf "%.2f", $1 / c }'; }

# flood_report CONFIG: the section of v4_hit_flood or v4_stateless_flood.
flood_report() {
	local cfg=$1 F=$TMP/$1 stateless=0 fails=() f shares sh_flood sh_ack sh_alone
	[[ $cfg == v4_stateless_flood ]] && stateless=1
	for f in "${FLOOD_FAILS[@]}"; do [[ $f != "$cfg: "* ]] || fails+=("${f#"$cfg: "}"); done
	if ((stateless)); then
		echo "### Under a SYN flood, stateless"
		echo
		echo "xlb, IPv4 TCP, a stateless VIP (192.0.2.30, GUE): the ACKs of $hit_flows established flows and,"
		echo "from a second generator, SYNs of ever new flows to the same VIP, as above. A stateless VIP"
		echo "has no connection table to fill: the tracked mode's cap on new entries ($flood_cap a second"
		echo "per CPU) is the yardstick the flood is measured against, not a limit it meets."
	else
		echo "### Under a SYN flood"
		echo
		echo "xlb, IPv4 TCP: the ACKs of the hits' $hit_flows established flows and, from a second generator,"
		echo "SYNs of ever new flows to the same VIP ($FLOOD_SIZE-byte frames, no payload; sources from"
		echo "blocks of 192.0.2.0/24 and 203.0.113.0/24 the topology leaves unused, no flow twice),"
		if [[ -n $flood_cap_set ]]; then
			echo "past the connection table's cap on new entries: \`xlb config set ct-rate-limit $flood_cap\`"
			echo "a second per CPU for these runs (xlb's default: $CT_RATE_DEFAULT; the balancer runs on one CPU)."
		else
			echo "past the connection table's cap on new entries, xlb's default of $flood_cap a second"
			echo "per CPU (\`ct-rate-limit\`; the balancer runs on one CPU)."
		fi
	fi
	echo "Each run measures the ACKs alone for $seconds s, then the ACKs and the flood for $seconds s,"
	echo "the ACKs' generator going on: the baseline is the same run's. The flood's SYNs are told"
	echo "from the ACKs by their length, in xlb's counters (taken) and at the sink (forwarded)."
	echo "Medians of the runs, min–max in brackets; the ratios are each run's own."
	if [[ -s $F ]]; then
		read -r sh_flood _ <<< "$(fstats "$F" 23)"
		read -r sh_ack _ <<< "$(fstats "$F" 24)"
		read -r sh_alone _ <<< "$(fstats "$F" 25)"
		shares=$(awk -v a="$sh_ack" -v f="$sh_flood" -v o="$sh_alone" -v c="$GEN_CPU" 'BEGIN {
			printf "the ACKs\047 generator ran %.0f%% of CPU %s and the SYNs\047 %.0f%%; before the flood, the ACKs\047 %.0f%%", 100 * a, c, 100 * f, 100 * o }')
	else
		shares="no run was recorded"
	fi
	if ((NAPI_PINNED)); then
		echo "What ran where: both generators on CPU $GEN_CPU, the ACKs' xlb-gen at nice 0, as fast as"
		echo "it goes, and the SYNs' at nice $flood_nice, paced at 1.25 times what the balancer forwarded of"
		echo "the ACKs alone (during the flood, $shares)."
		echo "The scheduler alternates them in slices of a few milliseconds, each offering more"
		echo "than the balancer forwards, so the balancer takes bursts of ACKs and of SYNs in"
		echo "turn and is never idle for want of either. The balancer (its NAPI thread, at"
		echo "real-time priority) and the sinks on CPU $LB_CPU."
	else
		echo "What ran where: threaded NAPI was not available, so both generators (the SYNs' at"
		echo "nice $flood_nice: during the flood, $shares) and the balancer shared CPU $GEN_CPU."
	fi
	echo
	if [[ -s $F ]]; then
		echo "| established flows | with the flood | without (same run, just before) | ratio |"
		echo "| --- | ---: | ---: | ---: |"
		echo "| ACKs forwarded, Mpps | $(cell "$F" 1 mpps) | $(cell "$F" 8 mpps) | $(cell "$F" 21 ratio) |"
		echo "| all packets forwarded (ACKs and SYNs), Mpps | $(cell "$F" 10 mpps) | $(cell "$F" 8 mpps) | $(cell "$F" 22 ratio) |"
		echo "| all packets offered (both generators; the link refused what the balancer did not take), Mpps | $(cell "$F" 26 mpps) | $(cell "$F" 9 mpps) | $(cell "$F" 27 ratio) |"
		if ((stateless)); then
			echo "| connection-table events (hits, misses, entries, bypasses) a second | $(cell "$F" 18 rate) | $(cell "$F" 19 rate) | - |"
		else
			echo "| ACKs counted as connection-table hits (ct_hit) | $(cell "$F" 18 pct) | $(cell "$F" 19 pct) | - |"
		fi
		if ((NAPI_PINNED)); then
			echo "| the balancer's NAPI thread busy, share of the interval | $(cell "$F" 28 pct) | $(cell "$F" 29 pct) | - |"
			echo "| ACKs forwarded per second of that thread's run time, Mpps | $(cell "$F" 30 mpps) | $(cell "$F" 32 mpps) | $(cell "$F" 33 ratio) |"
			echo "| all packets forwarded per second of its run time, Mpps | $(cell "$F" 31 mpps) | $(cell "$F" 32 mpps) | $(cell "$F" 34 ratio) |"
		else
			echo "| CPU $LB_CPU busy | $(cell "$F" 7 pct) | $(cell "$F" 20 pct) | - |"
		fi
		echo
		if ((NAPI_PINNED)); then
			echo "The forwarded rates are saturated ones: they hold while the generators have CPU $GEN_CPU."
			echo "When other work takes it, nothing is offered and the balancer idles (its NAPI thread's"
			echo "busy share says how long). The rates per second of that thread's run time do not"
			echo "depend on it: what the balancer forwards for each second it works, the ACKs' share"
			echo "of its work being what the flood leaves them."
			echo
		fi
		if ((stateless)); then
			echo "| the flood, per second | SYNs | the tracked mode's cap | ratio to the cap |"
			echo "| --- | ---: | ---: | ---: |"
			echo "| SYNs offered (their generator, over its whole run) | $(cell "$F" 11 rate) | $flood_cap | $(per_cap "$F" 11) |"
			echo "| SYNs the balancer took (the VIP's counter) | $(cell "$F" 12 rate) | $flood_cap | $(per_cap "$F" 12) |"
			echo "| SYNs forwarded | $(cell "$F" 13 rate) | $flood_cap | $(per_cap "$F" 13) |"
			echo
		else
			echo "| the flood, per second | SYNs or entries | the cap | ratio to the cap |"
			echo "| --- | ---: | ---: | ---: |"
			echo "| SYNs offered (their generator, over its whole run) | $(cell "$F" 11 rate) | $flood_cap | $(per_cap "$F" 11) |"
			echo "| SYNs the balancer took (ct_miss) | $(cell "$F" 12 rate) | $flood_cap | $(per_cap "$F" 12) |"
			echo "| SYNs forwarded | $(cell "$F" 13 rate) | $flood_cap | $(per_cap "$F" 13) |"
			echo "| new entries (ct_insert) | $(cell "$F" 14 rate) | $flood_cap | $(per_cap "$F" 14) |"
			echo "| SYNs past the cap, forwarded without an entry (ct_bypass) | $(cell "$F" 15 rate) | $flood_cap | $(per_cap "$F" 15) |"
			echo
			awk -v s="$seconds" -v c="$flood_cap" 'BEGIN {
				n = int(s) + 2
				print "The cap counts in one-second windows, each from the first new flow after the last one"
				print "ended, and a flood past it takes a window\047s entries in its first moments: an interval"
				printf "of %s s holds those of %d or %d windows (%.0f or %.0f new entries a second at the\n", s, n - 2, n - 1, (n - 2) * c / s, (n - 1) * c / s
				printf "cap), and parts of %d at most (%.0f a second: the path check\047s bound).\n", n, n * c / s }'
			echo
		fi
	fi
	if [[ ${#fails[@]} -gt 0 ]]; then
		echo "**Path check failed** in ${#fails[@]} of $rounds runs, which did not take the path"
		echo "the figures name:"
		printf -- '- %s\n' "${fails[@]}" | sort -u
		status=1
	elif ((stateless)); then
		echo "Path check, every run: the flood's SYNs reached the balancer and were forwarded, and the"
		echo "connection table counted nothing (no hit, miss, entry or bypass)."
	else
		echo "Path check, every run: the flood went past the cap (ct_bypass > 0), new entries"
		echo "stayed within it (ct_insert), and the established flows' packets were"
		echo "connection-table hits (ct_hit)."
	fi
	if ((stateless)) && [[ -s $F ]]; then
		# The target: nothing to exhaust, so the flood's packets cost
		# the balancer what established flows' do (per second of its
		# run time; without threaded NAPI, per second).
		awk -v r="$(fstats "$F" "$( ((NAPI_PINNED)) && echo 34 || echo 22)" | cut -d' ' -f1)" \
			-v m="$(per_cap "$F" 12)" 'BEGIN {
			printf "Target: a SYN flood changes nothing for a stateless VIP'"'"'s established flows: with SYNs at %.1f times the tracked mode'"'"'s cap, the packets it forwards per second of the balancer'"'"'s run time are %.2f of the ACKs'"'"' alone (at least 0.90: %s).\n", m, r, (r >= 0.9 ? "met" : "not met") }'
	fi
	echo
}

for cfg in v4_hit_flood v4_stateless_flood; do
	[[ " ${CONFIGS[*]} " != *" $cfg "* ]] || flood_report "$cfg"
done
((!flood_repeats)) || { echo "**The flood's sources ran out: some of its flows came twice.**"; echo; }

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
if [[ " ${CONFIGS[*]} " == *"_flood "* ]]; then
	echo "commands run on that CPU too; so is the SYN flood, whose SYNs it handles too.)"
else
	echo "commands run on that CPU too.)"
fi
echo
echo "| configuration | offered Mpps | forwarded Mpps | CPU $LB_CPU busy | ns per packet | Mpps per busy CPU (median) | min–max | ratio to reflector | ratio to floor | ns per run |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for cfg in reflector reflector6; do
	[[ -s $TMP/$cfg.paced ]] || continue
	read -r REF_CAP[$cfg] _ <<< "$(capacity "$cfg")"
done
ref_cap=${REF_CAP[reflector]}
for cfg in "${CONFIGS[@]}"; do
	[[ $cfg != v4_swap && $cfg != v4_control && $cfg != *_flood ]] || continue
	read -r cap lo hi <<< "$(capacity "$cfg")"
	read -r off _ <<< "$(stats "$TMP/$cfg.paced" 2)"
	read -r fwd _ <<< "$(stats "$TMP/$cfg.paced" 1)"
	read -r busy _ <<< "$(stats_of "$TMP/$cfg.paced" '100 * $7')"
	echo "| ${TITLE[$cfg]} | $(mpps "$off") | $(mpps "$fwd") | $busy% |" \
		"$(awk -v c="$cap" 'BEGIN { printf "%.0f", (c > 0 ? 1e9 / c : 0) }') |" \
		"$(mpps "$cap") | $(mpps "$lo")–$(mpps "$hi") |" \
		"$(awk -v c="$cap" -v r="${REF_CAP[$(base_of "$cfg")]}" 'BEGIN { printf "%.2f", (r > 0 ? c / r : 0) }') |" \
		"$(floor_ratio "$cfg" .paced) | $(run_ns "$cfg" .paced) |"
done
echo
# The targets: xlb's established flows, tracked (connection-table hits)
# and stateless, each at least 0.90 of the floor's rate, saturated and per
# busy CPU, at --flows flows (the stateless VIP also at MANY_FLOWS); and
# the stateless VIP at least as fast as the tracked one, each round
# against the same round's. Every figure a median of per-round ratios.
floor_targets() {
	local cfg sat cap out=() ok=met
	for cfg in v4_hit v4_stateless v4_stateless_many; do
		[[ -s $TMP/$cfg && -s $TMP/$cfg.paced ]] || continue
		sat=$(floor_ratio "$cfg") cap=$(floor_ratio "$cfg" .paced)
		awk -v q="$sat" -v c="$cap" 'BEGIN { exit !(q >= 0.9 && c >= 0.9) }' || ok="not met"
		case $cfg in
		v4_hit) out+=("tracked, $hit_flows flows: $sat saturated, $cap per busy CPU") ;;
		v4_stateless) out+=("stateless, $hit_flows flows: $sat, $cap") ;;
		*) out+=("stateless, $MANY_FLOWS flows: $sat, $cap") ;;
		esac
	done
	[[ ${#out[@]} -gt 0 ]] || return 0
	local vs=()
	if [[ -s $TMP/v4_hit && -s $TMP/v4_stateless ]]; then
		read -r sat _ <<< "$(round_ratio "$TMP/v4_stateless" "$TMP/v4_hit" '$1')"
		read -r cap _ <<< "$(round_ratio "$TMP/v4_stateless.paced" "$TMP/v4_hit.paced" '($7 > 0 ? $1 / $7 : 0)')"
		awk -v q="$sat" -v c="$cap" 'BEGIN { exit !(q >= 1 && c >= 1) }' || ok="not met"
		vs=("stateless over tracked: $sat saturated, $cap per busy CPU")
	fi
	out+=("${vs[@]}")
	echo "Target: xlb forwards at least 0.90 of the floor's rate, saturated and per busy CPU, and a stateless VIP at least a tracked one's: $(printf '%s; ' "${out[@]}" | sed 's/; $//') ($ok)."
	echo
}
floor_targets
stages_report
if [[ -s $TMP/path_failed ]]; then
	log "the floor did not take its path: $(sort -u "$TMP/path_failed" | tr '\n' ' ')"
	status=1
fi
exit $status
