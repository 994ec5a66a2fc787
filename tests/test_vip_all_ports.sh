#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# All-port VIPs (ADDR:*/PROTO) as an operator sees them, on an instance of
# the test's own, `xlb lookup` giving the datapath's own answers:
#  - 192.0.2.10:*/tcp takes TCP to any port of its address: 42, 8080;
#  - a VIP of a port of the same address (192.0.2.10:80/tcp) takes its
#    port, the all-port VIP the others; UDP to the address is no VIP's;
#  - it is spelled with * in `xlb show` (text and -j), `xlb apply` of
#    the show changes nothing, and deleting it leaves the port's VIP;
#  - its health checks, and its backends', need --health-port (it has no
#    port to probe);
#  - bad ports (**, *5, a lookup of port *) are refused with one line
#    and change nothing.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached vip_all_ports vap || exit 1

ALL=192.0.2.10:*/tcp
P80=192.0.2.10:80/tcp

# vip_of PORT [PROTO]: the VIP `xlb lookup` says a flow to that port of
# 192.0.2.10 belongs to (its table id as `xlb show -j` names it), when
# the datapath took it as a VIP's too (it found a backend, which this
# namespace has no route to); else none.
vip_of() {
	x -j lookup 203.0.113.7:1000 "192.0.2.10:$1/${2:-tcp}" --dev v0 |
		jq -r 'if .is_vip and .reason == "drop_fib_failed" then .table.id else "none" end'
}
id_of() { x -j show | jq -r --arg v "$1" '.vips[] | select(.vip == $v) | .id'; }

x config set src4 198.51.100.1 >/dev/null
x vip add "$ALL" >/dev/null
x backend add "$ALL" 198.51.100.11 >/dev/null
x backend add "$ALL" 198.51.100.12 >/dev/null
tl_check show_spells_it_with_a_star grep -q "^vip 192.0.2.10:\*/tcp " <(x show)
all=$(id_of "$ALL")
tl_check show_json_spells_it_with_a_star test -n "$all"
tl_check port_42_is_the_all_port_vips test "$(vip_of 42)" == "$all"
tl_check port_8080_is_the_all_port_vips test "$(vip_of 8080)" == "$all"
tl_check udp_is_no_vips test "$(vip_of 42 udp)" == none

x vip add "$P80" >/dev/null
x backend add "$P80" 198.51.100.13 >/dev/null
p80=$(id_of "$P80")
tl_check the_ports_own_vip_wins test "$(vip_of 80)" == "$p80"
tl_check other_ports_stay_with_the_all_port_vip test "$(vip_of 81)" == "$all"

x -j show >"$TMP/show.json"
instance_dump >"$TMP/before"
x apply "$TMP/show.json" >/dev/null
instance_dump >"$TMP/after"
tl_check apply_of_show_changes_nothing cmp -s "$TMP/before" "$TMP/after"

fails_unchanged health_needs_a_port "need --health-port" x vip set "$ALL" --health tcp
fails_unchanged backend_health_needs_a_port "need --health-port" x backend add "$ALL" 198.51.100.14 --health tcp
x vip set "$ALL" --health tcp --health-port 22 >/dev/null
tl_check health_with_a_port test "$(x -j show | jq -r '.vips[] | select(.vip == "'"$ALL"'") | .health.port')" == 22
jq '(.vips[] | select(.vip == "'"$ALL"'") | .health) |= del(.port)' <(x -j show) >"$TMP/noport.json"
fails_unchanged file_health_needs_a_port "need --health-port" x apply "$TMP/noport.json"
x backend set "$ALL" 198.51.100.12 --health http >/dev/null
tl_check a_backend_takes_the_vips_health_port test "$(x -j show | jq -r '.vips[] | select(.vip == "'"$ALL"'") | .backends[] | select(.addr == "198.51.100.12") | .health.kind')" == http
fails_unchanged two_stars "port must be a number 0..65535 or *" x vip add '192.0.2.10:**/tcp'
fails_unchanged star_and_digit "port must be a number 0..65535 or *" x vip add '192.0.2.10:*5/tcp'
fails_unchanged lookup_of_port_star "give the port the flow goes to" x lookup 203.0.113.7:1000 "$ALL"

x vip del "$ALL" >/dev/null
tl_check deleted_the_port_stays test "$(vip_of 80) $(vip_of 42)" == "$p80 none"

exit $TL_FAILED
