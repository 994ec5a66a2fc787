#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Helpers of the end-to-end tests (tests/test_e2e_*.sh), sourced after
# tests/lib/e2e_lib.sh: the topology of scripts/topology.sh under this run's tag,
# xlb configured the way a user would, traffic from tools/xlb-echo, and
# the checks every test shares.

TOPO_TAG=$TL_TAG
TOPO_PREFIX=xlbe
TOPO_QUIET=1
# shellcheck source=../../scripts/topology.sh
. "$XLB_TOP/scripts/topology.sh"
# shellcheck source=../../scripts/traffic.sh
. "$XLB_TOP/scripts/traffic.sh"
BAND=$BUILD/tools/binomial-band
E2E_TMP=$(mktemp -d)

# e2e_count_for N SMALL: N, or SMALL inside the vmtest VM (VMTEST=1), where
# every packet is emulated and every process start is slow.
e2e_count_for() { if [[ -n ${VMTEST:-} ]]; then echo "$2"; else echo "$1"; fi; }
tl_on_exit "rm -rf '$E2E_TMP'"

# e2e_up CASE: the topology (TOPO_* settings apply), removed at exit.
# On failure CASE fails and the caller should stop.
e2e_up() {
	local name=$1
	tl_require_root "$name" || return 1
	tl_on_exit topo_down
	if ! topo_up >"$E2E_TMP/topo.log" 2>&1; then
		tl_fail "$name" "topology: $(tail -n 3 "$E2E_TMP/topo.log" | tr '\n' ' ')"
		return 1
	fi
}

# e2e_xlb CASE J ARGS...: xlb on balancer J; on error CASE fails with the
# command and its message.
e2e_xlb() {
	local name=$1 j=$2 out; shift 2
	if ! out=$(topo_xlb "$j" "$@" 2>&1); then
		tl_fail "$name" "xlb $*: $out"
		return 1
	fi
	[[ -z $out ]] || printf '%s\n' "$out"
}

# e2e_config CASE J BACKEND...: attach xlb to balancer J with ip link and
# give it its VIPs (TCP and UDP, IPv4 and IPv6) with the listed backends
# (numbers k of b<k>), all weight 1, in one `xlb apply`.
e2e_config() {
	local name=$1 j=$2 k v conf; shift 2
	if ! topo_attach "$j" >"$E2E_TMP/attach.log" 2>&1; then
		tl_fail "$name" "attach: $(tr '\n' ' ' <"$E2E_TMP/attach.log")"
		return 1
	fi
	conf=$(for v in $(e2e_vips "$j"); do
		for k in "$@"; do echo "$v $(traffic_be_addr "$v" "$k")"; done
	done | jq -R -s --arg src4 "${TOPO_LB4[j]}" --arg src6 "${TOPO_LB6[j]}" '
		[split("\n")[] | select(length > 0) | split(" ")] as $pairs |
		{ config: { src4: $src4, src6: $src6 },
		  vips: [$pairs | group_by(.[0])[] |
			 { vip: .[0][0], backends: [.[] | { addr: .[1], weight: 1 }] }] }')
	# apply's report stays quiet; a failure shows e2e_xlb's FAIL line,
	# which carries xlb's error.
	if ! e2e_xlb "$name" "$j" apply - <<<"$conf" >"$E2E_TMP/apply.out"; then
		cat "$E2E_TMP/apply.out"
		return 1
	fi
}

# The VIPs of balancer J: TCP and UDP, each family.
e2e_vips() {
	local j=$1
	echo "${TOPO_VIP4[j]}:$TOPO_PORT/tcp [${TOPO_VIP6[j]}]:$TOPO_PORT/tcp" \
	     "${TOPO_VIP4[j]}:$TOPO_UDP_PORT/udp [${TOPO_VIP6[j]}]:$TOPO_UDP_PORT/udp"
}

# e2e_check_spread CASE N SHARES COUNTS: every backend's count of N flows
# within the binomial band of its share (probability 1 - 1e-6 each), and
# no flow on a backend without a share. Prints the comparison table.
e2e_check_spread() {
	local name=$1 n=$2 shares=$3 counts=$4 b share got lo hi bad=0
	printf '  %-6s %8s %8s %13s %6s\n' backend share expected band got
	while read -r b share; do
		got=$(awk -v b="$b" '$1 == b { print $2 }' "$counts")
		got=${got:-0}
		read -r lo hi < <("$BAND" "$n" "$share")
		awk -v b="$b" -v s="$share" -v n="$n" -v lo="$lo" -v hi="$hi" -v got="$got" \
			'BEGIN { printf "  %-6s %8.4f %8.1f %6d..%-6d %6d\n", b, s, n * s, lo, hi, got }'
		((got >= lo && got <= hi)) || bad=1
	done <"$shares"
	while read -r b got; do
		grep -q "^$b " "$shares" && continue
		printf '  %-6s %8s %8s %13s %6d  (not in the table)\n' "$b" - - - "$got"
		bad=1
	done <"$counts"
	[[ -s $shares ]] || { echo "  no shares from xlb show"; bad=1; }
	if ((bad)); then tl_fail "$name" "spread outside the binomial band"; else tl_pass "$name"; fi
}

# e2e_capture_start NAME NS DEV FILTER [TCPDUMP-OPTION...]: capture
# (headers only) on DEV in NS into $E2E_TMP/NAME.pcap; returns once
# tcpdump is listening (within 20 s: tcpdump starts slowly when emulated).
declare -A E2E_CAP_PIDS
e2e_capture_start() {
	local name=$1 ns=$2 dev=$3 filter=$4 try; shift 4
	: >"$E2E_TMP/$name.err"
	nsenter --net="/run/netns/$ns" tcpdump -i "$dev" -n -s 128 --immediate-mode \
		-U -w "$E2E_TMP/$name.pcap" "$@" "$filter" 2>"$E2E_TMP/$name.err" &
	E2E_CAP_PIDS[$name]=$!
	for ((try = 0; try < 400; try++)); do
		grep -q 'listening on' "$E2E_TMP/$name.err" && return 0
		sleep 0.05
	done
	return 1
}

# e2e_capture_stop NAME [FILTER]: stop capture NAME (if it has not ended
# by itself); prints how many of its packets match FILTER.
e2e_capture_stop() {
	kill -INT "${E2E_CAP_PIDS[$1]}" 2>/dev/null
	wait "${E2E_CAP_PIDS[$1]}" 2>/dev/null
	tcpdump -n -r "$E2E_TMP/$1.pcap" ${2:+"$2"} 2>/dev/null | wc -l
}

# e2e_stat J NAME: the packet count of counter NAME in `xlb stats -j`.
e2e_stat() {
	topo_xlb "$1" -j stats | jq -r --arg n "$2" '.counters[$n].packets // 0'
}
