#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Client affinity end to end, real TCP through the topology of
# scripts/topology.sh (xlb attached with `ip link`, three backends
# answering by direct server return), the TCP VIPs set to --hash src-ip:
#  - 200 connections from one client address reach one backend (IPv4),
#    and from seven addresses of one /64 with --affinity-prefix 64 (IPv6);
#  - 200 connections from 50 client addresses: each client's on one
#    backend, the clients per backend within the binomial band of its
#    share of the table;
#  - a backend drained (weight 0): new connections of every client still
#    reach one backend each, none the drained one; a client moves whole.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

CONNS=$(e2e_count_for 200 60)
CLIENTS=50
TOPO_BACKENDS=3

e2e_up affinity_topology || exit 1
e2e_config affinity_config 1 1 2 3 || exit 1
vip4=${TOPO_VIP4[1]} vip6=${TOPO_VIP6[1]}
key4="$vip4:$TOPO_PORT/tcp" key6="[$vip6]:$TOPO_PORT/tcp"
e2e_xlb affinity_set 1 vip set "$key4" --hash src-ip || exit 1
e2e_xlb affinity_set 1 vip set "$key6" --hash src-ip --affinity-prefix 64 || exit 1

# CLIENTS extra addresses of client 1: 203.0.113.150.. (its /24).
srcs=()
for ((n = 0; n < CLIENTS; n++)); do
	srcs+=("203.0.113.$((150 + n))")
	ip -n "${TOPO_NS_CLIENT[1]}" addr add "203.0.113.$((150 + n))/24" dev eth0 ||
		{ tl_fail affinity_addresses "cannot add 203.0.113.$((150 + n))"; exit 1; }
done
src_list=$(IFS=,; echo "${srcs[*]}")
# Six more of client 1's /64: with the prefix ignored, all seven would
# share a backend once in 729.
srcs6=("${TOPO_CLIENT6[1]}")
for n in 0 1 2 3 4 5; do
	srcs6+=("2001:db8:c::1:9$n")
	ip -n "${TOPO_NS_CLIENT[1]}" addr add "2001:db8:c::1:9$n/64" dev eth0 nodad ||
		{ tl_fail affinity_addresses "cannot add 2001:db8:c::1:9$n"; exit 1; }
done
src6_list=$(IFS=,; echo "${srcs6[*]}")

# conns NAME VIP ARGS...: CONNS connections, all completed (NAME_complete).
conns() {
	local name=$1 vip=$2 ok; shift 2
	traffic_client 1 conns "$vip" "$TOPO_PORT" -n "$CONNS" -P 16 "$@" >"$E2E_TMP/$name"
	ok=$(traffic_total "$E2E_TMP/$name" ok)
	tl_check "${name}_complete" test "$ok" -eq "$CONNS"
}
# per_client FILE: "CLIENT-ADDRESS BACKEND" of every completed connection,
# one line per distinct pair.
per_client() {
	awk '$1 == "conn" && $4 == "ok" { a = $3; sub(/:[0-9]+$/, "", a); gsub(/[][]/, "", a); print a, $5 }' "$1" | sort -u
}

conns one4 "$vip4"
tl_check one_ipv4_client_one_backend test "$(traffic_count "$E2E_TMP/one4" | wc -l)" -eq 1
conns one6 "$vip6" --src "$src6_list"
echo "  IPv6, seven addresses of one /64: $(traffic_count "$E2E_TMP/one6" | xargs)"
tl_check one_ipv6_64_one_backend test "$(traffic_count "$E2E_TMP/one6" | wc -l)" -eq 1

conns many4 "$vip4" --src "$src_list"
per_client "$E2E_TMP/many4" >"$E2E_TMP/pairs"
tl_check each_client_on_one_backend test "$(cut -d' ' -f1 "$E2E_TMP/pairs" | sort | uniq -d | wc -l)" -eq 0
tl_check every_client_seen test "$(wc -l <"$E2E_TMP/pairs")" -eq "$CLIENTS"
traffic_shares 1 "$key4" >"$E2E_TMP/shares"
awk '{ n[$2]++ } END { for (b in n) print b, n[b] }' "$E2E_TMP/pairs" | sort >"$E2E_TMP/clients"
echo "  clients per backend:"
e2e_check_spread clients_spread_within_binomial_band "$CLIENTS" "$E2E_TMP/shares" "$E2E_TMP/clients"

# Drain the backend with the most clients.
drained=$(sort -k2,2nr "$E2E_TMP/clients" | head -n 1 | cut -d' ' -f1)
k=${drained#b}
e2e_xlb affinity_drain 1 backend set "$key4" "${TOPO_BE4[k]}" --weight 0 || exit 1
conns drained4 "$vip4" --src "$src_list"
per_client "$E2E_TMP/drained4" >"$E2E_TMP/pairs2"
tl_check after_a_drain_each_client_on_one_backend test "$(cut -d' ' -f1 "$E2E_TMP/pairs2" | sort | uniq -d | wc -l)" -eq 0
tl_check nothing_new_on_the_drained_backend test "$(awk -v b="$drained" '$2 == b' "$E2E_TMP/pairs2" | wc -l)" -eq 0
moved=$(join "$E2E_TMP/pairs" "$E2E_TMP/pairs2" | awk '$2 != $3' | wc -l)
of_drained=$(awk -v b="$drained" '$2 == b' "$E2E_TMP/pairs" | wc -l)
echo "  drained $drained: $moved clients moved, $of_drained of them had been on it"
tl_check the_drained_backends_clients_moved test "$moved" -ge "$of_drained"

exit $TL_FAILED
