#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The datapath on a real NIC driver, virtio-net, run by vmtest/guest.sh
# inside the vmtest VM, whose four virtio-net NICs vmtest/run.sh wires in
# pairs through qemu hubs. The topology of scripts/topology.sh, with the
# balancer's eth0 a virtio NIC whose partner is the router's port
# (TOPO_LB_NIC), and a second virtio NIC, eth1, on the balancer towards
# backend b2, its partner a second port of the router's server bridge.
#  - xlb attaches natively to both: `ip link ... xdpdrv` on eth0, `xlb
#    attach --mode native` on eth1;
#  - TCP and UDP, IPv4 and IPv6, to tracked VIPs (IPIP) and, made
#    stateless, GUE VIPs, all complete and reach both backends: b1 by
#    XDP_TX out of eth0, b2 by XDP_REDIRECT from eth0 to eth1 (the
#    driver's own counters, ethtool -S, say which frames took which);
#  - a datagram too big for the path once encapsulated is answered with
#    ICMP out of the virtio NIC, and the client's kernel learns the MTU;
#  - at MTU 9000, xlb attaches where the driver takes multi-buffer XDP, or
#    names the MTU and the driver in its error where it does not
#    (virtio-net before Linux 6.3).
set -uo pipefail
. "$(dirname "$0")/../tests/lib/lib.sh"
. "$XLB_TOP/tests/lib/e2e_lib.sh"

CONNS=$(e2e_count_for 200 40)
DGRAMS=$(e2e_count_for 100 40)

# nic_named MAC: the device with that MAC address here, or nothing.
nic_named() {
	local d
	for d in /sys/class/net/*; do
		[[ $(cat "$d/address" 2>/dev/null) == "$1" ]] && { echo "${d##*/}"; return; }
	done
}

read -r -a macs <<<"${VMTEST_NICS:-}"
nic=()
for m in "${macs[@]}"; do nic+=("$(nic_named "$m")"); done
if [[ ${#nic[@]} -ne 4 || -z ${nic[0]} || -z ${nic[1]} || -z ${nic[2]} || -z ${nic[3]} ]]; then
	tl_skip_env virtio_nics "no four virtio-net NICs (VMTEST_NICS=${VMTEST_NICS:-}; vmtest/run.sh gives them)"
	exit "$TL_FAILED"
fi
echo "  virtio-net NICs: ${nic[*]} (driver $(basename "$(readlink /sys/class/net/${nic[0]}/device/driver)"))"

TOPO_CLIENTS=2
TOPO_BACKENDS=2
TOPO_MTU=1500 TOPO_ADVMSS=1	# a datagram of 1500 bytes does not fit once encapsulated
TOPO_DECAP=xdp			# decap.bpf.o takes IPIP and GUE alike
TOPO_LB_NIC="${nic[0]} ${nic[1]}"
e2e_up virtio_topology || exit 1
lb=${TOPO_NS_LB[1]}

# eth1: the balancer's second NIC, b2's way. Its partner is a port of the
# router's server bridge, so b2 answers its neighbour queries there. The
# balancer answers ARP only for addresses of the asking interface: the
# router must keep reaching eth0 for the VIPs.
ip link set dev "${nic[2]}" netns "$lb" &&
	ip link set dev "${nic[3]}" netns "$TOPO_NS_RT" &&
	ip -n "$lb" link set dev "${nic[2]}" name eth1 mtu 1500 up &&
	ip -n "$TOPO_NS_RT" link set dev "${nic[3]}" name lb1r mtu 1500 master brs up &&
	topo_sysctl "$lb" net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 &&
	ip -n "$lb" addr add 198.51.100.9/32 dev eth1 &&
	ip -n "$lb" route add "${TOPO_BE4[2]}/32" dev eth1 &&
	ip -n "$lb" -6 route add "${TOPO_BE6[2]}/128" dev eth1
tl_check second_nic_routes_b2 test $? -eq 0

e2e_config virtio_config 1 1 2 || exit 1
out=$(topo_xlb 1 attach eth1 --mode native 2>&1)
rc=$?
echo "  xlb attach eth1: ${out:-ok}"
tl_check xlb_attach_native_on_virtio test "$rc" -eq 0
# ip link says "xdp" for a driver's own hook, "xdpgeneric" for the stack's.
for dev in eth0 eth1; do
	tl_check "native_xdp_on_$dev" bash -c \
		"ip -n '$lb' link show dev $dev | grep -qw 'xdp'"
done

# nic_stat DEV NAME: the driver's counter NAME (ethtool -S), summed over
# its queues: rx_queue_*_NAME or tx_queue_*_NAME.
nic_stat() {
	topo_in "$lb" ethtool -S "$1" | awk -v n="$2" '
		{ sub(":", "", $1) } $1 ~ "^" n "$" { s += $2 } END { print s + 0 }'
}

vip4=${TOPO_VIP4[1]} vip6=${TOPO_VIP6[1]}
tx0=$(nic_stat eth0 'rx_queue_[0-9]+_xdp_tx') redir0=$(nic_stat eth0 'rx_queue_[0-9]+_xdp_redirects')
sent1=$(nic_stat eth1 'tx_queue_[0-9]+_xdp_tx')

# tcp_conns CASE I VIP: CONNS connections from client I, all complete,
# each backend serving some.
tcp_conns() {
	local name=$1 i=$2 vip=$3 ok
	traffic_client "$i" conns "$vip" "$TOPO_PORT" -n "$CONNS" -P 8 >"$E2E_TMP/$name" 2>&1
	ok=$(traffic_total "$E2E_TMP/$name" ok)
	echo "  $name: $ok of $CONNS connections; per backend: $(traffic_count "$E2E_TMP/$name" | tr '\n' ' ')"
	tl_check "$name" test "$ok" -eq "$CONNS" -a "$(traffic_count "$E2E_TMP/$name" | wc -l)" -eq 2
}

# udp_requests CASE I VIP: DGRAMS requests from client I, all answered.
udp_requests() {
	local name=$1 i=$2 vip=$3 ok
	traffic_client "$i" udp "$vip" "$TOPO_UDP_PORT" -n "$DGRAMS" -P 8 >"$E2E_TMP/$name" 2>&1
	ok=$(traffic_total "$E2E_TMP/$name" ok)
	echo "  $name: $ok of $DGRAMS requests answered"
	tl_check "$name" test "$ok" -eq "$DGRAMS" -a "$(traffic_count "$E2E_TMP/$name" | wc -l)" -eq 2
}

tcp_conns tracked_tcp4_over_virtio 1 "$vip4"
tcp_conns tracked_tcp6_over_virtio 2 "$vip6"
udp_requests tracked_udp4_over_virtio 1 "$vip4"
udp_requests tracked_udp6_over_virtio 2 "$vip6"

for v in "$vip4:$TOPO_PORT/tcp" "[$vip6]:$TOPO_PORT/tcp"; do
	e2e_xlb stateless_set 1 vip set "$v" --mode stateless || exit 1
done
tcp_conns stateless_tcp4_over_virtio 1 "$vip4"
tcp_conns stateless_tcp6_over_virtio 2 "$vip6"

# What the driver counted: frames its XDP program sent back out (b1),
# frames it redirected (b2), and eth1 transmitting the redirected ones.
tx=$(( $(nic_stat eth0 'rx_queue_[0-9]+_xdp_tx') - tx0 ))
redir=$(( $(nic_stat eth0 'rx_queue_[0-9]+_xdp_redirects') - redir0 ))
sent=$(( $(nic_stat eth1 'tx_queue_[0-9]+_xdp_tx') - sent1 ))
echo "  virtio-net counters: eth0 xdp_tx $tx, xdp_redirects $redir; eth1 sent $sent XDP frames"
tl_check driver_counts_xdp_tx_and_redirect test "$tx" -gt 0 -a "$redir" -gt 0 -a "$sent" -ge "$redir"

# cached_mtu I ADDR: the MTU client I's kernel holds for ADDR (0: none).
cached_mtu() {
	ip -n "${TOPO_NS_CLIENT[$1]}" route get "$2" 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) if ($i == "mtu") { m = $(i + 1); exit } }
		     END { print m + 0 }'
}
# big_datagram I VIP SIZE: one datagram of SIZE bytes from client I, its
# socket kept open a second: the kernel learns a UDP path's MTU from the
# answer through the socket it quotes (IPv6 only then), which a slow path
# lets close first.
big_datagram() {
	topo_in "${TOPO_NS_CLIENT[$1]}" bash -c \
		"exec 3>/dev/udp/$2/$TOPO_UDP_PORT && printf '%$3s' x >&3 && sleep 1"
}
before=$(e2e_stat 1 icmp_too_big)
big_datagram 1 "$vip4" 1472 &	# 1500 bytes of IPv4
pid=$!
big_datagram 2 "$vip6" 1452	# 1500 bytes of IPv6
wait "$pid"
after=$(e2e_stat 1 icmp_too_big)
echo "  datagrams too big: icmp_too_big $before -> $after; client route cache mtu" \
     "$(cached_mtu 1 "$vip4"), $(cached_mtu 2 "$vip6")"
tl_check icmp_too_big_over_virtio test $((after - before)) -eq 2 -a \
	"$(cached_mtu 1 "$vip4")" = 1480 -a "$(cached_mtu 2 "$vip6")" = 1460

# MTU 9000: virtio-net takes multi-buffer XDP from Linux 6.3; before, it
# refuses any XDP program above about a page, and xlb must say why.
topo_xlb 1 detach eth1 >/dev/null 2>&1
if ! ip -n "$lb" link set dev eth1 mtu 9000; then
	tl_fail virtio_mtu_9000 "the driver refuses MTU 9000 even without XDP"
else
	out=$(topo_xlb 1 attach eth1 --mode native 2>&1)
	rc=$?
	echo "  xlb attach eth1 at MTU 9000 (Linux $(uname -r)): ${out:-attached}"
	if ((rc == 0)); then
		tl_check virtio_attach_at_mtu_9000 bash -c \
			"ip -n '$lb' link show dev eth1 | grep -qw 'xdp'"
		topo_xlb 1 detach eth1 >/dev/null 2>&1
	else
		echo "  this kernel's virtio-net has no multi-buffer XDP: checked the error instead"
		tl_check virtio_mtu_9000_refusal_names_mtu_and_driver \
			grep -q 'MTU 9000 is above what its driver (virtio_net) takes' <<<"$out"
	fi
fi
# What the driver said of XDP (its queues for XDP_TX, its MTU limit).
dmesg | grep -i 'xdp' | tail -n 5 | sed 's/^/  kernel: /'
exit "$TL_FAILED"
