#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# An all-port VIP end to end, real TCP through the topology of
# scripts/topology.sh (xlb attached with `ip link`, backends answering by
# direct server return): the VIPs of port 80 go to b3 alone, the all-port
# VIPs of the same addresses (ADDR:*/tcp) to b1 and b2, which also listen
# on ports 42 and 8080:
#  - connections to ports 42 and 8080 of the IPv4 and the IPv6 address
#    all complete, on b1 and b2 only;
#  - connections to port 80 of the same addresses all reach b3: the
#    port's own VIP wins.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

CONNS=$(e2e_count_for 100 30)
TOPO_BACKENDS=3

e2e_up all_ports_topology || exit 1
e2e_config all_ports_config 1 3 || exit 1
vip4=${TOPO_VIP4[1]} vip6=${TOPO_VIP6[1]}
for key in "$vip4:*/tcp" "[$vip6]:*/tcp"; do
	e2e_xlb all_ports_vip 1 vip add "$key" || exit 1
	for k in 1 2; do
		e2e_xlb all_ports_vip 1 backend add "$key" "$(traffic_be_addr "$key" "$k")" || exit 1
	done
done

# b1 and b2 serve ports 42 and 8080 too.
for k in 1 2; do
	for port in 42 8080; do
		out=$E2E_TMP/server-b$k-$port
		topo_in "${TOPO_NS_BE[k]}" "$TOPO_BUILD/tools/xlb-echo" server "${TOPO_BE_NAME[k]}" \
			--port "$port" --udp-port $((port + 10000)) >"$out" 2>&1 &
		tl_on_exit "kill $! 2>/dev/null"
		for ((try = 0; try < 200; try++)); do
			grep -q '^listening' "$out" && break
			sleep 0.05
		done
		grep -q '^listening' "$out" ||
			{ tl_fail all_ports_servers "b$k on port $port: $(cat "$out")"; exit 1; }
	done
done

# to PORT FAMILY VIP WANT: CONNS connections to VIP:PORT all complete, on
# the backends WANT (a regular expression of names) only.
to() {
	local port=$1 fam=$2 vip=$3 want=$4 name=tcp${2}_port_$1 ok where
	traffic_client 1 conns "$vip" "$port" -n "$CONNS" -P 16 >"$E2E_TMP/$name"
	ok=$(traffic_total "$E2E_TMP/$name" ok)
	where=$(traffic_count "$E2E_TMP/$name" | xargs)
	echo "  $vip port $port: $ok of $CONNS completed: $where"
	tl_check "${name}_complete" test "$ok" -eq "$CONNS"
	tl_check "${name}_on_its_vips_backends" test -z "$(traffic_count "$E2E_TMP/$name" | awk -v w="^($want)\$" '$1 !~ w')"
}

to 42 4 "$vip4" 'b1|b2'
to 8080 4 "$vip4" 'b1|b2'
to 80 4 "$vip4" b3
to 42 6 "$vip6" 'b1|b2'
to 80 6 "$vip6" b3

exit $TL_FAILED
