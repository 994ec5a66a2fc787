#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# xlb-health.sh: what a balancer may announce. Keeps one route per VIP
# address in a kernel routing table of its own (TABLE, no rule points at
# it, so it routes nothing): present while xlb serves that VIP, absent
# otherwise. BIRD learns the table (protocol kernel ... learn) and
# announces exactly those routes over BGP (scripts/bird/balancer.conf.in).
#
#   xlb-health.sh [--xlb PATH] [--pin-dir DIR] [--table N] [--interval S] [--once] DEV
#
# Without --pin-dir, the instance is the one plain `xlb show` finds (in
# /sys/fs/bpf/tc/globals or xdp/globals, wherever `ip link` pinned it), asked
# again at every check.
#
# A VIP address is announced while all of these hold:
#  - `xlb show` reads the instance;
#  - an XDP program is attached to DEV and it uses the maps of the pin dir
#    (the pinned xlb_config is one of its maps): xlb, with this config;
#  - a VIP on that address has a live table with at least one slot that
#    names a backend.
# Anything else (xlb detached, another program, maps gone, every backend
# drained or removed) withdraws it at the next check. On exit (TERM, INT)
# every route goes: a balancer whose checker stopped announces nothing.
# Each change is logged on stdout: TIME announce|withdraw ADDR (reason).
set -uo pipefail

XLB=xlb
PIN_DIR=
TABLE=100
INTERVAL=0.2
ONCE=0
ATTACHED_OK=

usage() {
	echo "usage: $0 [--xlb PATH] [--pin-dir DIR] [--table N] [--interval S] [--once] DEV" >&2
	exit 2
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--xlb) XLB=${2:?}; shift 2 ;;
	--pin-dir) PIN_DIR=${2:?}; shift 2 ;;
	--table) TABLE=${2:?}; shift 2 ;;
	--interval) INTERVAL=${2:?}; shift 2 ;;
	--once) ONCE=1; shift ;;
	-*) usage ;;
	*) [[ -z ${DEV:-} ]] || usage; DEV=$1; shift ;;
	esac
done
[[ -n ${DEV:-} ]] || usage
[[ $TABLE =~ ^[0-9]+$ ]] && ((TABLE > 0 && TABLE < 253)) ||
	{ echo "$0: --table must be a table number from 1 to 252" >&2; exit 2; }

log() { echo "$(date +%T.%3N) $*"; }

# served: SHOW = `xlb show -j` of the instance, DIR = its pin dir, WANT =
# the VIP addresses with a live table naming a backend, one per line.
served() {
	SHOW=$("$XLB" ${PIN_DIR:+--pin-dir "$PIN_DIR"} -j show 2>&1) ||
		{ REASON="xlb show: $SHOW"; return 1; }
	DIR=$(jq -r .pin_dir <<<"$SHOW")
	WANT=$(jq -r '.vips[] | select(.fingerprint != null and .slots_without_backend < .table_size) |
		.vip | sub(":([0-9]+|[*])/[a-z]+$"; "") | ltrimstr("[") | rtrimstr("]")' <<<"$SHOW" | sort -u)
}

# attached: the program on DEV holds DIR's pinned xlb_config among its maps.
# The answer is kept while the program and the pinned file stay the same
# (bpftool is the costly part of a check).
attached() {
	local prog pin config ids
	prog=$(ip link show dev "$DEV" 2>/dev/null | awk '$1 == "prog/xdp" { print $3 }')
	[[ -n $prog ]] || { REASON="no XDP program on $DEV"; return 1; }
	pin=$(stat -c %i "$DIR/xlb_config" 2>/dev/null) ||
		{ REASON="no xlb maps in $DIR"; return 1; }
	[[ $ATTACHED_OK == "$prog $DIR $pin" ]] && return 0
	config=$(bpftool map show pinned "$DIR/xlb_config" 2>/dev/null | awk -F: 'NR == 1 { print $1 }')
	ids=$(bpftool prog show id "$prog" 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "map_ids") print $(i + 1) }')
	if [[ -z $config || ,$ids, != *,$config,* ]]; then
		REASON="the program on $DEV is not xlb with the maps of $DIR"
		return 1
	fi
	ATTACHED_OK="$prog $DIR $pin"
}

# announced: the addresses routed in TABLE, one per line (none while the
# table does not exist).
announced() {
	{ ip -4 route show table "$TABLE"; ip -6 route show table "$TABLE"; } 2>/dev/null |
		awk '$1 == "blackhole" { sub("/(32|128)$", "", $2); print $2 }' | sort -u
}

check() {
	local have a
	REASON="no VIP has a backend"
	WANT=
	served && attached || WANT=
	have=$(announced)
	for a in $(comm -13 <(echo "$have") <(echo "$WANT")); do
		ip route replace blackhole "$a" table "$TABLE" proto static && log "announce $a"
	done
	for a in $(comm -23 <(echo "$have") <(echo "$WANT")); do
		ip route del "$a" table "$TABLE" && log "withdraw $a ($REASON)"
	done
}

withdraw_all() {
	local a
	for a in $(announced); do
		ip route del "$a" table "$TABLE" && log "withdraw $a (checker stopped)"
	done
}

if ((ONCE)); then
	check
	exit 0
fi
trap 'withdraw_all; exit 0' TERM INT
while :; do
	check
	sleep "$INTERVAL" &
	wait $!
done
