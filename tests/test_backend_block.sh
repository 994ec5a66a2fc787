#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# docs/backend.md, run as written: its command blocks (each marked
# "test_backend_block: ACTION VARIANT") on a bare backend added to the
# test topology, with the doc's VIPs (also as bpftool's hex), object path
# and xlb replaced by the topology's and this build's. The backend starts
# as a distribution might leave it: strict reverse-path filtering, ARP
# answered for any local address, forwarding off.
# For each variant this kernel can run (`xlb host setup`, the command, and
# by hand decap.bpf.o everywhere; the tunnel devices, by the command and by
# hand, where it has the ipip and ip6tnl drivers, as in the vmtest VM),
# each from that strict start:
#  - the setup blocks run, and TCP and UDP connections to both VIPs, from
#    a client through the balancer, are answered by that backend;
#  - eth0 keeps its strict reverse-path filtering, and does not forward;
#  - no neighbour of the backend's segment learns the VIP's address from
#    it (ARP, and IPv6's neighbour discovery);
#  - health probes from the balancer to the backend are up (the probe's
#    answer goes straight to the balancer's address);
#  - the removal blocks run and leave the backend as it was: the VIPs, the
#    program or the devices, the ARP and forwarding settings gone (the
#    command's record and pins too), connections failing.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

DOC=$XLB_TOP/docs/backend.md
N=$(e2e_count_for 60 20)
TIMEOUT_MS=$(e2e_count_for 500 3000)
TOPO_BACKENDS=0
BE4=198.51.100.19 BE6=2001:db8:b::19
NEIGH4=198.51.100.250 NEIGH6=2001:db8:b::250

# hex ADDR: the address as bpftool's hex bytes (4 for IPv4, 16 for IPv6).
hex() {
	local a=$1 l r g x out= i n
	if [[ $a != *:* ]]; then
		printf -v out '%02x ' ${a//./ }
		echo "${out% }"
		return
	fi
	l=${a%%::*} r=
	[[ $a == *::* ]] && r=${a#*::} || l=$a
	IFS=: read -ra L <<<"$l"
	IFS=: read -ra R <<<"$r"
	n=$((8 - ${#L[@]} - ${#R[@]}))
	for g in "${L[@]}"; do printf -v x '%04x' "0x$g"; out+="${x:0:2} ${x:2:2} "; done
	for ((i = 0; i < n; i++)); do out+="00 00 "; done
	for g in "${R[@]}"; do printf -v x '%04x' "0x$g"; out+="${x:0:2} ${x:2:2} "; done
	echo "${out% }"
}

# doc_block ACTION VARIANT: the command block marked so in the doc, with
# the topology's VIPs, this build's decap.bpf.o and xlb.
doc_block() {
	awk -v mark="<!-- test_backend_block: $1 $2 -->" '
		$0 == mark { found = 1; next }
		found && /^```/ { if (inside) exit; inside = 1; next }
		inside { print }' "$DOC" |
	sed -e "s|/usr/local/lib/xlb/decap.bpf.o|$BUILD/decap.bpf.o|g" -e "s|^xlb |$XLB |" \
	    -e "s|$(hex 2001:db8::10)|$(hex "${TOPO_VIP6[1]}")|g" \
	    -e "s|$(hex 192.0.2.10)|$(hex "${TOPO_VIP4[1]}")|g" \
	    -e "s|2001:db8::10|${TOPO_VIP6[1]}|g" -e "s|192\.0\.2\.10|${TOPO_VIP4[1]}|g"
}

# run_blocks CASE ACTION BLOCK...: the blocks, in the backend's namespace,
# as one shell script (a reader's shell: what one block defines, the next
# may use) that stops at the first failing command.
run_blocks() {
	local name=$1 action=$2 b text= one
	shift 2
	for b in "$@"; do
		one=$(doc_block "$action" "$b")
		if [[ -z $one ]]; then
			tl_fail "$name" "no block '$action $b' in docs/backend.md"
			return 1
		fi
		text+=$one$'\n'
	done
	if tl_in "$BE" bash -e -o pipefail <<<"$text" >"$E2E_TMP/block" 2>&1; then
		tl_pass "$name"
	else
		tl_fail "$name" "$(tail -n 2 "$E2E_TMP/block" | tr '\n' ' ')"
		return 1
	fi
}

e2e_up backend_topology || exit 1
RT=$TOPO_NS_RT

# plug NS NAME ADDR4 ADDR6: a bare host on the backends' segment, its eth0
# a port of the router's bridge.
plug() {
	ip -n "$RT" link add "$2" mtu "$TOPO_MTU" type veth peer name eth0 netns "$1" mtu "$TOPO_MTU" &&
	ip -n "$RT" link set "$2" master brs up &&
	tl_in "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.eth0.accept_dad=0 &&
	ip -n "$1" link set lo up &&
	ip -n "$1" addr add "$3/24" dev eth0 &&
	ip -n "$1" addr add "$4/64" dev eth0 nodad &&
	ip -n "$1" link set eth0 up
}
# strict: the backend's starting filter, before any interface is added (a
# new one takes "default"'s value) and again before each variant (the
# kernel's setup lowers "all").
strict() {
	tl_in "$BE" sysctl -qw net.ipv4.conf.all.rp_filter=1 net.ipv4.conf.default.rp_filter=1
}
tl_netns BE bk && tl_netns NB nb &&
	strict &&
	plug "$BE" bk "$BE4" "$BE6" && plug "$NB" nb "$NEIGH4" "$NEIGH6" &&
	ip -n "$BE" route add default via 198.51.100.1 &&
	ip -n "$BE" -6 route add default via 2001:db8:b::1 ||
	{ tl_fail backend_setup "cannot add the bare backend"; exit 1; }
# Whatever a failed case leaves of the command's setup goes with the test.
tl_on_exit "tl_in $BE $XLB host teardown eth0"
INO=$(tl_in "$BE" stat -L -c %i /proc/self/ns/net)
tl_in "$BE" "$BUILD/tools/xlb-echo" server bk --port "$TOPO_PORT" \
	--udp-port "$TOPO_UDP_PORT" >"$E2E_TMP/server" 2>&1 &
for ((try = 0; try < 200; try++)); do
	grep -q '^listening' "$E2E_TMP/server" && break
	sleep 0.05
done

if ! topo_attach 1 >"$E2E_TMP/attach.log" 2>&1; then
	tl_fail backend_attach "$(tr '\n' ' ' <"$E2E_TMP/attach.log")"
	exit 1
fi
VIPS=("${TOPO_VIP4[1]}:$TOPO_PORT/tcp" "[${TOPO_VIP6[1]}]:$TOPO_PORT/tcp"
      "${TOPO_VIP4[1]}:$TOPO_UDP_PORT/udp" "[${TOPO_VIP6[1]}]:$TOPO_UDP_PORT/udp")
conf=$(for v in "${VIPS[@]}"; do
	if [[ $v == \[* ]]; then echo "$v $BE6"; else echo "$v $BE4"; fi
done | jq -R -s --arg src4 "${TOPO_LB4[1]}" --arg src6 "${TOPO_LB6[1]}" '
	[split("\n")[] | select(length > 0) | split(" ")] |
	{ config: { src4: $src4, src6: $src6 },
	  vips: [.[] | { vip: .[0], backends: [{ addr: .[1], weight: 1 }] }] }')
e2e_xlb backend_config 1 apply - <<<"$conf" >/dev/null 2>&1 || exit 1

# served CASE: TCP and UDP to both VIPs, every one answered by bk.
served() {
	local name=$1 vip kind port bad=
	for vip in "${TOPO_VIP4[1]}" "${TOPO_VIP6[1]}"; do
		for kind in conns udp; do
			port=$TOPO_PORT
			[[ $kind == udp ]] && port=$TOPO_UDP_PORT
			traffic_client 1 "$kind" "$vip" "$port" -n "$N" \
				--timeout-ms "$TIMEOUT_MS" -q >"$E2E_TMP/t" 2>&1
			[[ $(traffic_total "$E2E_TMP/t" ok) -eq $N &&
			   $(traffic_count "$E2E_TMP/t") == "bk $N" ]] ||
				bad+=" $kind $vip: $(tr '\n' ' ' <"$E2E_TMP/t")"
		done
	done
	if [[ -z $bad ]]; then tl_pass "$name"; else tl_fail "$name" "$bad"; fi
}

# refused CASE: no connection to either VIP completes.
refused() {
	local name=$1 vip ok=0
	for vip in "${TOPO_VIP4[1]}" "${TOPO_VIP6[1]}"; do
		traffic_client 1 conns "$vip" "$TOPO_PORT" -n 3 --timeout-ms "$TIMEOUT_MS" \
			-q >"$E2E_TMP/t" 2>&1
		ok=$((ok + $(traffic_total "$E2E_TMP/t" ok)))
	done
	tl_check "$name" test "$ok" -eq 0
}

# silent_about_vips CASE: a neighbour on the segment that sends to the VIPs
# as if they were on the link hears no answer from the backend.
silent_about_vips() {
	local name=$1 v4=${TOPO_VIP4[1]} v6=${TOPO_VIP6[1]} heard
	ip -n "$NB" route replace "$v4/32" dev eth0
	ip -n "$NB" -6 route replace "$v6/128" dev eth0
	tl_in "$NB" ping -c 1 -W 1 "$v4" >/dev/null 2>&1
	tl_in "$NB" ping -6 -c 1 -W 1 "$v6" >/dev/null 2>&1
	heard=$(ip -n "$NB" -j neigh show | jq -r --arg a "$v4" --arg b "$v6" \
		'.[] | select((.dst == $a or .dst == $b) and .lladdr != null) | .dst')
	ip -n "$NB" neigh flush dev eth0
	tl_check "$name" test -z "$heard"
}

# probes_up CASE: the balancer's health probes (TCP and UDP, both VIPs).
probes_up() {
	local name=$1 v id probes=()
	for v in "${VIPS[@]}"; do
		id=$(topo_xlb 1 -j show | jq -r --arg v "$v" '.vips[] | select(.vip == $v) | .backends[0].id')
		local addr=${v%:*} port=${v##*:}
		port=${port%/*}
		addr=${addr#[}; addr=${addr%]}
		probes+=("${v##*/},$id,$addr,$port")
	done
	topo_in "${TOPO_NS_LB[1]}" "$BUILD/tools/xlb-probe" --pin-dir "$(topo_pin_dir 1)" \
		--timeout-ms "$TIMEOUT_MS" "${probes[@]}" >"$E2E_TMP/probe" 2>&1
	if [[ $(awk -F'\t' '$2 == "up"' "$E2E_TMP/probe" | wc -l) -eq 4 ]]; then
		tl_pass "$name"
	else
		tl_fail "$name" "$(tr '\t\n' '  ' <"$E2E_TMP/probe")"
	fi
}

# as_before CASE VARIANT: nothing of the setup is left.
as_before() {
	local name=$1 left=
	[[ -z $(ip -n "$BE" -j addr show dev lo | jq -r '.[].addr_info[] |
		select(.prefixlen == 32 or .prefixlen == 128) | select(.local != "127.0.0.1" and .local != "::1") | .local') ]] ||
		left+=" VIPs on lo;"
	[[ $(tl_in "$BE" sysctl -n net.ipv4.conf.eth0.arp_ignore net.ipv4.conf.eth0.arp_announce | tr '\n' ' ') == "0 0 " ]] ||
		left+=" ARP settings;"
	[[ $(tl_in "$BE" sysctl -n net.ipv4.conf.lo.forwarding net.ipv6.conf.lo.forwarding | tr '\n' ' ') == "0 0 " ]] ||
		left+=" forwarding on lo;"
	[[ ! -e /run/xlb/host-ns$INO.json && ! -e /sys/fs/bpf/xlb-host/ns$INO ]] ||
		left+=" xlb host's record or pins;"
	[[ -z $(ip -n "$BE" -j link show dev eth0 | jq -r '.[0].xdp // empty') ]] || left+=" XDP program;"
	[[ -z $(ip -n "$BE" -j link show | jq -r '.[] | select(.ifname | startswith("xlb-")) | .ifname') ]] ||
		left+=" tunnel devices;"
	if [[ -z $left ]]; then tl_pass "$name"; else tl_fail "$name" "left:$left"; fi
}

# The kernel's tunnel devices, where it has the drivers.
probe=xlbt$TL_TAG-tun
variants="command xdp"
if ip netns add "$probe" 2>/dev/null; then
	ip -n "$probe" link add t4 type ipip external 2>/dev/null &&
		ip -n "$probe" link add t6 type ip6tnl external 2>/dev/null &&
		variants="command command-kernel kernel xdp"
	ip netns del "$probe"
fi
echo "  variants this kernel runs: $variants"

# blocks VARIANT ACTION: the blocks of a variant, in order: the command's
# is one (with --decap kernel too, whose removal is the same teardown); by
# hand, the decapsulation's (decap.bpf.o's with the second chance's), then
# the VIPs'.
blocks() {
	case $1 in
	command) echo command ;;
	command-kernel) [[ $2 == setup ]] && echo command-kernel || echo command ;;
	xdp) echo xdp xdp-fleet common ;;
	*) echo "$1" common ;;
	esac
}

refused backend_bare_serves_nothing
for v in $variants; do
	strict || { tl_fail "${v}_strict_start" "cannot set rp_filter"; continue; }
	run_blocks "${v}_setup_runs" setup $(blocks "$v" setup) || continue
	served "${v}_backend_serves_both_vips"
	tl_check "${v}_eth0_filter_kept" test "$(tl_in "$BE" sysctl -n net.ipv4.conf.eth0.rp_filter)" = 1
	tl_check "${v}_eth0_does_not_forward" test \
		"$(tl_in "$BE" sysctl -n net.ipv4.conf.eth0.forwarding net.ipv6.conf.eth0.forwarding | tr '\n' ' ')" = "0 0 "
	silent_about_vips "${v}_backend_silent_about_the_vips"
	probes_up "${v}_health_probes_up"
	run_blocks "${v}_removal_runs" remove $(blocks "$v" remove | sed 's/ xdp-fleet//')	# gone with the program
	as_before "${v}_removal_leaves_nothing"
	refused "${v}_removed_backend_serves_nothing"
done
exit "$TL_FAILED"
