#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The scale-out topology: the end-to-end topology of scripts/topology.sh
# with every balancer serving the same VIPs, which each balancer's BIRD
# announces to the router's BIRD over BGP; the router installs one
# multipath route per VIP and spreads flows over the balancers by their
# 5-tuple hash (ECMP). Nothing here routes or tracks membership itself:
# BGP and the kernel's multipath routes do.
#
#   client1..N ──┐            ┌── lb1..L   xlb on eth0, BIRD, xlb-health.sh
#                brc ─ router ┤ brs
#   + 64 source addresses     └── b1..K    VIP on lo, decapsulation
#     each                    AS 65000 ◄── BGP (dynamic peers) ── AS 65010
#
#   router     BIRD, AS 65000, peers with any balancer of 198.51.100.0/24
#              and 2001:db8:b::/64; kernel protocol with "merge paths";
#              fib_multipath_hash_policy=1 (both families)
#   lb j       BIRD, AS 65010, announces what xlb-health.sh puts in kernel
#              table 100: the VIP addresses xlb serves while it is attached
#              and healthy (scripts/bird/balancer.conf.in)
#   VIPs       192.0.2.10, 2001:db8:f::10 (lb1's in topology.sh)
#   client i   also 203.0.113.(64i .. 64i+63) and 2001:db8:c::i:0 .. :3f
#              (ECMP_SRCS of them; xlb-echo --src): the multipath hash
#              needs varied 5-tuples
#   timers     BGP hold 3 s, keepalive 1 s; BFD 200 ms x 5 (the router
#              drops a balancer whose BIRD died within 1 s)
#
# BIRD's configurations, control sockets, pid files and logs, and the
# health checkers' logs, are in $TOPO_RUN/ecmp (/run/xlb-topo/TAG/ecmp).
#
# Sourced by tests/test_ecmp.sh and tests/test_ecmp_churn.sh:
#   . scripts/ecmp.sh
#   ecmp_up                          # topology, xlb attached, BIRDs, checkers
#   ecmp_fleet_json 1 2 3 >F; ecmp_apply_all F   # one config on every balancer
#   ecmp_wait_paths "1 2 3"          # the router routes the VIPs over all three
#   ecmp_second_chance               # backends pass packets on to each other (GUE)
#   ecmp_down                        # also on exit, by the caller's trap
# or by hand:  scripts/ecmp.sh up | down TAG

TOPO_SHARED_VIP=1
TOPO_BALANCERS=${TOPO_BALANCERS:-3}
# shellcheck source=topology.sh
declare -F topo_up >/dev/null || . "$(dirname "${BASH_SOURCE[0]}")/topology.sh"
# shellcheck source=traffic.sh
declare -F traffic_client >/dev/null || . "$TOPO_TOP/scripts/traffic.sh"
ECMP_BIRD_DIR=$TOPO_TOP/scripts/bird
ECMP_SRCS=${ECMP_SRCS:-64}
ECMP_TABLE=${ECMP_TABLE:-100}
ECMP_HEALTH_INTERVAL=${ECMP_HEALTH_INTERVAL:-0.2}
ECMP_ROUTER_AS=65000
ECMP_BALANCER_AS=65010

ecmp_now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# ecmp_render TEMPLATE KEY=VALUE...: the template with every @KEY@ replaced.
ecmp_render() {
	local text kv
	text=$(<"$1") || return 1
	shift
	for kv in "$@"; do text=${text//@${kv%%=*}@/${kv#*=}}; done
	if [[ $text =~ @[A-Z0-9_]+@ ]]; then
		topo_err "${BASH_REMATCH[0]} left unfilled in the BIRD configuration"
		return 1
	fi
	printf '%s\n' "$text"
}

# ecmp_bird_start NAME NS CONF: BIRD in namespace NS; returns once its
# control socket answers.
ecmp_bird_start() {
	local name=$1 ns=$2 conf=$3 try
	bird -p -c "$conf" || return 1
	topo_in "$ns" bird -f -c "$conf" -s "$ECMP_RUN/$name.ctl" \
		-P "$ECMP_RUN/$name.pid" >"$ECMP_RUN/$name.out" 2>&1 &
	for ((try = 0; try < 100; try++)); do
		ecmp_birdc "$name" show status >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	topo_err "BIRD $name did not start: $(tail -n 2 "$ECMP_RUN/$name.out")"
}

ecmp_birdc() {
	local name=$1; shift
	birdc -s "$ECMP_RUN/$name.ctl" "$@"
}

# ecmp_kill FILE SIGNAL: send SIGNAL to the process whose id FILE holds,
# when it is still one of this run's (its command line names the run
# directory), and wait for it to end.
ecmp_kill() {
	local file=$1 sig=$2 pid try
	[[ -f $file ]] || return 0
	pid=$(<"$file")
	[[ $pid =~ ^[0-9]+$ ]] && grep -qF "$TOPO_RUN" "/proc/$pid/cmdline" 2>/dev/null || return 0
	kill "-$sig" "$pid" 2>/dev/null
	kill -CONT "$pid" 2>/dev/null	# a stopped process acts on it
	for ((try = 0; try < 100; try++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	rm -f "$file"
}

# ecmp_bird_stop NAME [SIGNAL]: TERM (the default) ends BGP sessions with
# a notification, so the router withdraws at once; KILL leaves them to
# BFD and the hold timer.
ecmp_bird_stop() { ecmp_kill "$ECMP_RUN/$1.pid" "${2:-TERM}"; }

ecmp_router_up() {
	ecmp_render "$ECMP_BIRD_DIR/router.conf.in" LOG="$ECMP_RUN/router.log" \
		ROUTER_ID=198.51.100.1 IFACE=brs LOCAL_AS=$ECMP_ROUTER_AS \
		BALANCER_AS=$ECMP_BALANCER_AS BALANCERS4=198.51.100.0/24 \
		BALANCERS6=2001:db8:b::/64 VIPS4="192.0.2.0/24{32,32}" \
		VIPS6="2001:db8:f::/48{128,128}" >"$ECMP_RUN/router.conf" || return 1
	topo_sysctl "$TOPO_NS_RT" net.ipv4.fib_multipath_hash_policy=1 \
		net.ipv6.fib_multipath_hash_policy=1 || return 1
	# Packets from the clients' sockets carry their socket's hash, which
	# the multipath choice would take instead of the 5-tuple's (see
	# bpf/wire.bpf.c): drop it where they enter the router.
	topo_in "$TOPO_NS_RT" tc qdisc add dev brc clsact &&
	topo_in "$TOPO_NS_RT" tc filter add dev brc ingress bpf direct-action \
		obj "$TOPO_BUILD/wire.bpf.o" sec tc || return 1
	ecmp_bird_start router "$TOPO_NS_RT" "$ECMP_RUN/router.conf"
}

# ecmp_srcs I FAMILY: client I's extra source addresses, comma-separated.
ecmp_srcs() {
	local i=$1 fam=$2 n out=()
	for ((n = 0; n < ECMP_SRCS; n++)); do
		if [[ $fam == 4 ]]; then
			out+=("203.0.113.$((64 * i + n))")
		else
			out+=("2001:db8:c::$i:$(printf '%x' "$n")")
		fi
	done
	local IFS=,
	echo "${out[*]}"
}

ecmp_client_addrs() {
	local i=$1 a
	for a in $(ecmp_srcs "$i" 4 | tr , ' '); do
		ip -n "${TOPO_NS_CLIENT[i]}" addr add "$a/24" dev eth0 || return 1
	done
	for a in $(ecmp_srcs "$i" 6 | tr , ' '); do
		ip -n "${TOPO_NS_CLIENT[i]}" addr add "$a/64" dev eth0 nodad || return 1
	done
}

# ecmp_bird_up J: lb J's BIRD.
ecmp_bird_up() {
	local j=$1
	ecmp_render "$ECMP_BIRD_DIR/balancer.conf.in" LOG="$ECMP_RUN/lb$j.log" \
		ROUTER_ID="${TOPO_LB4[j]}" IFACE=eth0 TABLE="$ECMP_TABLE" \
		LOCAL_AS=$ECMP_BALANCER_AS ROUTER_AS=$ECMP_ROUTER_AS \
		ROUTER4=198.51.100.1 ROUTER6=2001:db8:b::1 >"$ECMP_RUN/lb$j.conf" &&
	ecmp_bird_start "lb$j" "${TOPO_NS_LB[j]}" "$ECMP_RUN/lb$j.conf"
}

# ecmp_health_start J: lb J's checker (scripts/bird/xlb-health.sh), its
# log in $ECMP_RUN/health-lbJ.log.
ecmp_health_start() {
	local j=$1
	topo_in "${TOPO_NS_LB[j]}" "$ECMP_BIRD_DIR/xlb-health.sh" --xlb "$TOPO_BUILD/xlb" \
		--pin-dir "$(topo_pin_dir "$j")" --table "$ECMP_TABLE" \
		--interval "$ECMP_HEALTH_INTERVAL" eth0 >>"$ECMP_RUN/health-lb$j.log" 2>&1 &
	echo $! >"$ECMP_RUN/health-lb$j.pid"
}

# ecmp_health_stop J: the checker withdraws everything as it stops.
ecmp_health_stop() { ecmp_kill "$ECMP_RUN/health-lb$1.pid" TERM; }

# ecmp_balancer_up J: xlb attached to lb J's eth0 with its own outer
# source addresses, BIRD and the checker. The VIPs come with the fleet's
# configuration (ecmp_apply_all); until then lb J announces nothing.
ecmp_balancer_up() {
	local j=$1
	topo_attach "$j" &&
	topo_xlb "$j" config set src4 "${TOPO_LB4[j]}" src6 "${TOPO_LB6[j]}" &&
	ecmp_bird_up "$j" &&
	ecmp_health_start "$j"
}

ecmp_up() {
	local i j
	((TOPO_CLIENTS <= 2)) || topo_err "at most 2 clients (their extra addresses)" || return 1
	command -v bird >/dev/null && command -v birdc >/dev/null ||
		topo_err "BIRD 2 is missing (Debian: bird2; scripts/deps.sh installs it)" || return 1
	[[ -e $TOPO_BUILD/wire.bpf.o ]] || topo_err "$TOPO_BUILD/wire.bpf.o is missing: run make first" || return 1
	topo_up || return 1
	ECMP_RUN=$TOPO_RUN/ecmp
	mkdir "$ECMP_RUN" || return 1
	for ((i = 1; i <= TOPO_CLIENTS; i++)); do ecmp_client_addrs "$i" || return 1; done
	ecmp_router_up || return 1
	for ((j = 1; j <= TOPO_BALANCERS; j++)); do ecmp_balancer_up "$j" || return 1; done
}

# ecmp_fleet_json SEED K...: the fleet's configuration for `xlb apply`:
# the shared seed and the VIPs (TCP, both families) with backends b<K>.
ecmp_fleet_json() {
	local seed=$1 k; shift
	jq -n --arg seed "$seed" \
		--arg v4 "${TOPO_VIP4[1]}:$TOPO_PORT/tcp" --arg v6 "[${TOPO_VIP6[1]}]:$TOPO_PORT/tcp" \
		--argjson be4 "$(for k in "$@"; do echo "\"${TOPO_BE4[k]}\""; done | jq -s .)" \
		--argjson be6 "$(for k in "$@"; do echo "\"${TOPO_BE6[k]}\""; done | jq -s .)" '
		{config: {seed: $seed},
		 vips: [{vip: $v4, backends: [$be4[] | {addr: .}]},
			{vip: $v6, backends: [$be6[] | {addr: .}]}]}'
}

# ecmp_second_chance: what the backends' second chance (decap.bpf.o
# passing a packet it does not own to the slot's previous backend, GUE)
# needs of the topology, as a real server segment would have it: each
# backend set up again with the fleet (`xlb host setup --fleet`: forwarding
# on lo, managed neighbour entries for the others, since the program
# takes MAC addresses from the FIB and resolves none itself), and the
# router's ports towards them running an XDP program, without which a
# frame a backend sends by XDP_TX never reaches the bridge (veth). Needs
# TOPO_DECAP=xdp: the kernel's tunnel devices have no second chance.
ecmp_second_chance() {
	local k l fleet=()
	[[ $TOPO_DECAP == xdp ]] ||
		topo_err "the second chance needs decap.bpf.o on the backends (TOPO_DECAP=xdp)" || return 1
	for ((l = 1; l <= TOPO_BACKENDS; l++)); do
		fleet+=(--fleet "${TOPO_BE4[l]}/32" --fleet "${TOPO_BE6[l]}/128")
	done
	for ((k = 1; k <= TOPO_BACKENDS; k++)); do
		topo_host_setup "$k" "${fleet[@]}" ||
			topo_err "xlb host setup --fleet failed on b$k" || return 1
	done
	for ((k = 1; k <= TOPO_BACKENDS; k++)); do
		echo "link set dev b$k xdpdrv obj $TOPO_BUILD/pass.bpf.o sec xdp"
	done | topo_batch "$TOPO_NS_RT"
}

# ecmp_decap_stat K NAME: the packets that counter NAME (include/decap.h) of
# decap.bpf.o on backend K's eth0 has counted, as `xlb host stats` gives
# them.
ecmp_decap_stat() {
	local k=$1 name=$2
	topo_in "${TOPO_NS_BE[k]}" "$TOPO_BUILD/xlb" -j host stats |
		jq -e --arg n "$name" '.[$n].packets' ||
		topo_err "b$k: no decap counter $name"
}

# ecmp_apply_all FILE: the same file applied on every balancer, in turn.
ecmp_apply_all() {
	local j
	for ((j = 1; j <= TOPO_BALANCERS; j++)); do topo_xlb "$j" apply "$1" || return 1; done
}

# ecmp_fingerprints J: "VIP FINGERPRINT" per VIP of lb J.
ecmp_fingerprints() {
	topo_xlb "$1" -j show | jq -r '.vips[] | "\(.vip) \(.fingerprint)"' | sort
}

# ecmp_fingerprints_agree: every balancer has the same VIPs with the same
# fingerprints (so sends every flow to the same backend).
ecmp_fingerprints_agree() {
	local j first
	first=$(ecmp_fingerprints 1)
	for ((j = 2; j <= TOPO_BALANCERS; j++)); do
		[[ $(ecmp_fingerprints "$j") == "$first" ]] || return 1
	done
	[[ -n $first && $first != *null* ]]
}

# ecmp_gateways FAMILY: the balancers (numbers j) the router's route to
# the VIP of FAMILY (4 or 6) goes through, sorted, on one line.
ecmp_gateways() {
	local vip=${TOPO_VIP4[1]} gws=("${TOPO_LB4[@]}")
	[[ $1 == 4 ]] || vip=${TOPO_VIP6[1]} gws=("${TOPO_LB6[@]}")
	ip -n "$TOPO_NS_RT" -"$1" route show "$vip" | awk -v gws="${gws[*]}" '
		BEGIN { n = split(gws, g, " "); for (j = 1; j <= n; j++) lb[g[j]] = j }
		{ for (i = 1; i < NF; i++) if ($i == "via" && $(i + 1) in lb) print lb[$(i + 1)] }' |
		sort -n | paste -sd ' '
}

# ecmp_sessions: how many BGP sessions the router has established.
ecmp_sessions() { ecmp_birdc router show protocols | grep -c Established; }

# ecmp_wait_paths "J..." [SINCE_MS] [TIMEOUT_MS]: wait until the router
# routes both VIPs through exactly balancers J...; prints the milliseconds
# from SINCE_MS (default: now) until it did. Fails on timeout.
ecmp_wait_paths() {
	local want=$1 since=${2:-$(ecmp_now_ms)} timeout=${3:-10000} now
	while :; do
		if [[ $(ecmp_gateways 4) == "$want" && $(ecmp_gateways 6) == "$want" ]]; then
			echo $(( $(ecmp_now_ms) - since ))
			return 0
		fi
		now=$(ecmp_now_ms)
		((now - since < timeout)) || return 1
		sleep 0.01
	done
}

# ecmp_route_of VIP: for each client socket "ADDR:PORT" or "[ADDR]:PORT"
# read on stdin, "ADDR:PORT J": the balancer J the router sends that TCP
# flow to (the kernel's own multipath choice, asked with `ip route get`).
ecmp_route_of() {
	local vip=$1 batch
	batch=$(mktemp) || return 1
	tee "$batch.socks" | awk -v vip="$vip" -v port="$TOPO_PORT" '{
		addr = $1; sub(/:[0-9]+$/, "", addr); gsub(/[][]/, "", addr)
		sport = $1; sub(/.*:/, "", sport)
		print "route get " vip " from " addr " iif brc ipproto tcp sport " sport " dport " port
	}' >"$batch"
	ip -n "$TOPO_NS_RT" -batch "$batch" |
		awk -v gws="${TOPO_LB4[*]} ${TOPO_LB6[*]}" -v n="$TOPO_BALANCERS" '
		BEGIN { split(gws, g, " "); for (j = 1; j <= 2 * n; j++) lb[g[j]] = (j - 1) % n + 1 }
		$1 != "cache" { for (i = 1; i < NF; i++) if ($i == "via") print lb[$(i + 1)] }' |
		paste -d ' ' "$batch.socks" -
	rm -f "$batch" "$batch.socks"
}

# ecmp_down: stop the checkers and BIRDs, then remove the topology. Safe
# to call twice and after a partial ecmp_up.
ecmp_down() {
	local f
	[[ -n ${TOPO_RUN:-} && ${TOPO_OWNED:-0} == 1 ]] || return 0
	ECMP_RUN=$TOPO_RUN/ecmp
	if [[ -d $ECMP_RUN ]]; then
		for f in "$ECMP_RUN"/health-*.pid "$ECMP_RUN"/*.pid; do
			[[ -e $f ]] && ecmp_kill "$f" TERM
		done
		rm -rf "$ECMP_RUN"
	fi
	topo_down
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -uo pipefail
	case ${1:-} in
	up)
		trap 'ecmp_down; exit 1' INT TERM
		ecmp_up || { ecmp_down; exit 1; }
		seed=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
		ecmp_fleet_json "$seed" $(seq 1 "$TOPO_BACKENDS") >"$ECMP_RUN/fleet.json" &&
		ecmp_apply_all "$ECMP_RUN/fleet.json" || { ecmp_down; exit 1; }
		ecmp_wait_paths "$(seq -s ' ' 1 "$TOPO_BALANCERS")" >/dev/null ||
			echo "the router has not learned every balancer yet" >&2
		trap - INT TERM
		echo "tag $TOPO_TAG: $TOPO_BALANCERS balancers announce ${TOPO_VIP4[1]} and ${TOPO_VIP6[1]}"
		echo "fleet config: $ECMP_RUN/fleet.json (xlb apply on each balancer)"
		echo "router:       ip -n $TOPO_NS_RT route show ${TOPO_VIP4[1]}; birdc -s $ECMP_RUN/router.ctl show route"
		echo "a client:     nsenter --net=/run/netns/${TOPO_NS_CLIENT[1]} $TOPO_BUILD/tools/xlb-echo conns ${TOPO_VIP4[1]} $TOPO_PORT -n 300 --src $(ecmp_srcs 1 4 | cut -d, -f1-4)"
		prefix=
		[[ $TOPO_PREFIX == xlbd ]] || prefix="TOPO_PREFIX=$TOPO_PREFIX "
		echo "remove with:  $prefix$0 down $TOPO_TAG" ;;
	down)
		[[ -n ${2:-} ]] || { echo "usage: $0 down TAG" >&2; exit 2; }
		TOPO_TAG=$2 TOPO_OWNED=1
		topo_names
		ecmp_down ;;
	*)
		echo "usage: $0 up | down TAG   (TOPO_* and ECMP_* variables: see the header)" >&2
		exit 2 ;;
	esac
fi
