#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Traffic through the topology of scripts/topology.sh (sourced after it):
# tools/xlb-echo on the clients, its reports read back, and the shares of
# the table that `xlb show -j` gives each backend. Used by the demo and the
# end-to-end tests.

TRAFFIC_ECHO=$TOPO_BUILD/tools/xlb-echo
TRAFFIC_HOLD_PIDS=()

# traffic_be_addr VIP K: backend K's address in the VIP's family.
traffic_be_addr() {
	if [[ $1 == \[* ]]; then echo "${TOPO_BE6[$2]}"; else echo "${TOPO_BE4[$2]}"; fi
}

# traffic_client I ARGS...: xlb-echo on client I.
traffic_client() {
	local i=$1; shift
	topo_in "${TOPO_NS_CLIENT[i]}" "$TRAFFIC_ECHO" "$@"
}

# traffic_count FILE: "NAME COUNT" per backend from xlb-echo's report(s).
traffic_count() {
	awk '$1 == "backend" { n[$2] += $3 } END { for (b in n) print b, n[b] }' "$@" | sort
}

# traffic_total FILE KEY: sum of KEY=N over the summary lines.
traffic_total() {
	awk -v key="$2" '$1 == "summary" {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == key) s += kv[2] }
	} END { print s + 0 }' "$1"
}

# traffic_shares J VIP: "NAME SHARE" for each backend of VIP on balancer J,
# the share of the table's slots as `xlb show -j` reports it; NAME is the
# topology's name (b<k>) of the backend's address.
traffic_shares() {
	local j=$1 vip=$2 k addr share
	topo_xlb "$j" -j show | jq -r --arg vip "$vip" '
		.vips[] | select(.vip == $vip) | .backends[] |
		"\(.addr) \(.share)"' |
	while read -r addr share; do
		for ((k = 1; k <= TOPO_BACKENDS; k++)); do
			[[ $addr == "${TOPO_BE4[k]}" || $addr == "${TOPO_BE6[k]}" ]] &&
				echo "${TOPO_BE_NAME[k]} $share"
		done
	done
}

# traffic_hold_start FILE I VIP ARGS...: long-lived connections from client I
# (xlb-echo hold), their report in FILE and the process id in FILE.pid;
# returns once all are open.
traffic_hold_start() {
	local file=$1 i=$2 vip=$3 try pid; shift 3
	: >"$file"
	nsenter --net="/run/netns/${TOPO_NS_CLIENT[i]}" "$TRAFFIC_ECHO" hold "$vip" \
		"$TOPO_PORT" "$@" >"$file" 2>&1 &
	pid=$!
	TRAFFIC_HOLD_PIDS+=("$pid")
	echo "$pid" >"$file.pid"
	for ((try = 0; try < 200; try++)); do
		grep -q '^ready' "$file" && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	return 1
}

# traffic_hold_status FILE: the hold's status line after its next round.
traffic_hold_status() {
	local file=$1 before try
	before=$(grep -c '^status' "$file")
	kill -USR1 "$(cat "$file.pid")" 2>/dev/null
	for ((try = 0; try < 100; try++)); do
		(( $(grep -c '^status' "$file") > before )) && break
		sleep 0.05
	done
	grep '^status' "$file" | tail -n 1
}

# traffic_hold_stop: end every hold, each after one last exchange.
traffic_hold_stop() {
	local p
	for p in "${TRAFFIC_HOLD_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${TRAFFIC_HOLD_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	TRAFFIC_HOLD_PIDS=()
}

