#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The end-to-end topology: clients, a router, balancers running xlb and
# backends answering by direct server return, each in a network namespace.
#
#   client1..N ──┐                      ┌── lb1..L   (xlb on eth0)
#                brc ── router ── brs ──┤
#               203.0.113.0/24          └── b1..K    (VIP on lo, ipip/ip6tnl)
#               2001:db8:c::/64   198.51.100.0/24, 2001:db8:b::/64 (MTU $TOPO_MTU)
#               (MTU $TOPO_CLIENT_MTU)
#
# A client's packet to a VIP goes to the router, which routes the VIP to its
# balancer; xlb encapsulates it (IPIP or IP6IP6) to a backend on the same
# segment and sends it back out of eth0 (XDP_TX). The backend decapsulates,
# finds the VIP on its loopback, and answers from the VIP straight to the
# router, never through the balancer.
#
# Addresses (j: balancer, k: backend, i: client, all from 1):
#   router      198.51.100.1    2001:db8:b::1     203.0.113.1   2001:db8:c::1
#   lb j        198.51.100.(1+j)   2001:db8:b::(1+j)
#   backend k   198.51.100.(10+k)  2001:db8:b::(10+k)      (named b<k>)
#   client i    203.0.113.(10+i)   2001:db8:c::(10+i)
#   VIPs of lb j  192.0.2.(10*j)   2001:db8:f::(10*j)      (every backend holds all)
#
# TOPO_SHARED_VIP=1: every balancer serves lb1's VIPs, and the router has
# no static route to them; the caller routes them (scripts/ecmp.sh: the
# balancers announce them over BGP and the router spreads them by ECMP).
#
# Encapsulation overhead (20 bytes for IPIP, 40 for IP6IP6): the server
# segment has a larger MTU (TOPO_MTU, default 1600) than the clients' 1500,
# so a full-size client packet still fits once encapsulated. With
# TOPO_MTU=1500, TOPO_ADVMSS=1 makes backends advertise an MSS small enough
# for the overhead instead (what a network that cannot raise its MTU does).
# TOPO_CLIENT_MTU (default 1500) is the clients' side: 9000 with TOPO_MTU
# 9100 carries jumbo frames end to end. A TOPO_MTU above what a veth takes
# for a single-buffer XDP program (3498) gets the multi-buffer builds,
# xlb.frags.bpf.o and pass.frags.bpf.o in section xdp.frags (topo_obj);
# `xlb host setup` loads decap.bpf.o multi-buffer by itself.
#
# Decapsulation (TOPO_DECAP): auto takes the kernel's ipip and ip6tnl
# devices in external mode where the kernel has them (Debian's kernels, the
# vmtest VM), and build/decap.bpf.o on the backends' eth0 where it has not
# (kernels built without CONFIG_NET_IPIP / CONFIG_IPV6_TUNNEL); kernel or
# xdp force one.
#
# Names: namespaces are $TOPO_PREFIX$TOPO_TAG-{rt,c<i>,lb<j>,b<k>}; the tag
# is random unless given, and /run/xlb-topo/TAG, created by topo_up, locks
# it, so two runs never share or remove each other's namespaces.
#
# Maps: `ip link ... xdp obj` pins them by name in $mnt/xdp/globals. On a
# bpffs where iproute2 came first, $mnt/xdp is its symlink to tc/, so the
# maps land in $mnt/tc/globals; where libxdp came first (any libxdp attach,
# `xlb attach` too, makes /sys/fs/bpf/xdp a directory), in a directory of
# their own, $mnt/xdp/globals. topo_globals decides as both do.
#   TOPO_PIN=private (default): each balancer gets a bpffs of its own,
#     mounted under /run/xlb-topo/TAG and named to iproute2 by TC_BPF_MNT,
#     so runs never meet; topo_xlb passes the matching --pin-dir.
#   TOPO_PIN=default: the host's /sys/fs/bpf, where a user's `ip link` pins
#     and where `xlb` looks without --pin-dir (one balancer only). A run
#     refuses to start when xlb maps are already pinned in tc/globals or
#     xdp/globals (plain `xlb` would then take or refuse them), and removes
#     exactly the pins it created.
#
# Sourced by the demo and the tests:
#   . scripts/topology.sh
#   TOPO_BACKENDS=4 topo_up          # namespaces, addresses, routes, servers
#   topo_attach 1                    # xlb on lb1's eth0 with ip link
#   topo_xlb 1 vip add 192.0.2.10:80/tcp
#   topo_in "${TOPO_NS_CLIENT[1]}" build/tools/xlb-echo conns 192.0.2.10 80 -n 100
#   topo_down                        # also run on exit by the caller's trap
# or run by hand:  scripts/topology.sh up | down TAG

TOPO_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOPO_BUILD=${BUILD:-build}
[[ $TOPO_BUILD == /* ]] || TOPO_BUILD=$TOPO_TOP/$TOPO_BUILD

TOPO_TAG=${TOPO_TAG:-$(printf '%04x' $(( (RANDOM << 8 ^ RANDOM ^ $$) & 0xffff )))}
TOPO_PREFIX=${TOPO_PREFIX:-xlbd}
TOPO_CLIENTS=${TOPO_CLIENTS:-2}
TOPO_BALANCERS=${TOPO_BALANCERS:-1}
TOPO_BACKENDS=${TOPO_BACKENDS:-4}
TOPO_MTU=${TOPO_MTU:-1600}
TOPO_CLIENT_MTU=${TOPO_CLIENT_MTU:-1500}
TOPO_ADVMSS=${TOPO_ADVMSS:-0}
TOPO_PIN=${TOPO_PIN:-private}
TOPO_SHARED_VIP=${TOPO_SHARED_VIP:-0}
TOPO_DECAP=${TOPO_DECAP:-auto}
TOPO_LB_NIC=${TOPO_LB_NIC:-}
TOPO_PORT=${TOPO_PORT:-80}
TOPO_UDP_PORT=${TOPO_UDP_PORT:-5000}
TOPO_DEFAULT_ROOT=/sys/fs/bpf

topo_log() { [[ -n ${TOPO_QUIET:-} ]] || echo "topology: $*" >&2; }
topo_err() { echo "topology: $*" >&2; return 1; }

# topo_in NS CMD...: run CMD in network namespace NS only. The mount
# namespace stays the host's, so bpffs pins made here are the host's
# (`ip netns exec` would remount /sys and hide them).
topo_in() {
	local ns=$1; shift
	nsenter --net="/run/netns/$ns" "$@"
}

topo_names() {
	local p="$TOPO_PREFIX$TOPO_TAG" i
	TOPO_NS_RT=$p-rt
	TOPO_NS_CLIENT=() TOPO_CLIENT4=() TOPO_CLIENT6=()
	TOPO_NS_LB=() TOPO_LB4=() TOPO_LB6=() TOPO_VIP4=() TOPO_VIP6=()
	TOPO_NS_BE=() TOPO_BE4=() TOPO_BE6=() TOPO_BE_NAME=()
	for ((i = 1; i <= TOPO_CLIENTS; i++)); do
		TOPO_NS_CLIENT[i]=$p-c$i
		TOPO_CLIENT4[i]=203.0.113.$((10 + i))
		TOPO_CLIENT6[i]=2001:db8:c::$((10 + i))
	done
	for ((i = 1; i <= TOPO_BALANCERS; i++)); do
		TOPO_NS_LB[i]=$p-lb$i
		TOPO_LB4[i]=198.51.100.$((1 + i))
		TOPO_LB6[i]=2001:db8:b::$((1 + i))
		TOPO_VIP4[i]=192.0.2.$((10 * (TOPO_SHARED_VIP ? 1 : i)))
		TOPO_VIP6[i]=2001:db8:f::$((10 * (TOPO_SHARED_VIP ? 1 : i)))
	done
	for ((i = 1; i <= TOPO_BACKENDS; i++)); do
		TOPO_NS_BE[i]=$p-b$i
		TOPO_BE_NAME[i]=b$i
		TOPO_BE4[i]=198.51.100.$((10 + i))
		TOPO_BE6[i]=2001:db8:b::$((10 + i))
	done
	TOPO_RUN=/run/xlb-topo/$TOPO_TAG
}

topo_sysctl() {
	local ns=$1; shift
	topo_in "$ns" sysctl -q -w "$@" >/dev/null
}

# topo_batch NS: the ip commands on stdin, run in NS by one process (the
# topology is built with a few dozen processes rather than hundreds: under
# emulation, as in the vmtest VM, every process start counts). ip stops at
# the first failing line and names it.
topo_batch() { topo_in "$1" ip -batch -; }

# Fixed MAC addresses for eth0 of client i, balancer j and backend k, so
# that a frame in a capture names its sender.
topo_mac() { printf '02:00:00:%s:00:%02x' "$1" "$2"; }

# topo_obj NAME: the object of program NAME for `ip link ... xdp obj`, in
# section $(topo_sec): the multi-buffer build where TOPO_MTU is above what
# a veth takes for a single-buffer program ("Peer MTU is too large to set
# XDP").
topo_obj() {
	if ((TOPO_MTU > 3498)); then
		echo "$TOPO_BUILD/$1.frags.bpf.o"
	else
		echo "$TOPO_BUILD/$1.bpf.o"
	fi
}
topo_sec() { if ((TOPO_MTU > 3498)); then echo xdp.frags; else echo xdp; fi; }

# The router: a bridge per side, the peer of every host's eth0 as a port.
topo_router_batch() {
	local i
	echo "link set lo up"
	echo "link add brc mtu $TOPO_CLIENT_MTU type bridge"
	echo "link add brs mtu $TOPO_MTU type bridge"
	echo "addr add 203.0.113.1/24 dev brc"
	echo "addr add 2001:db8:c::1/64 dev brc nodad"
	echo "addr add 198.51.100.1/24 dev brs"
	echo "addr add 2001:db8:b::1/64 dev brs nodad"
	echo "link set brc up"
	echo "link set brs up"
	for ((i = 1; i <= TOPO_CLIENTS; i++)); do
		echo "link add c$i mtu $TOPO_CLIENT_MTU type veth peer name eth0" \
		     "netns ${TOPO_NS_CLIENT[i]} address $(topo_mac 0c $i) mtu $TOPO_CLIENT_MTU"
		echo "link set c$i master brc up"
	done
	for ((i = 1; i <= TOPO_BALANCERS; i++)); do
		if ((i == 1)) && [[ -n $TOPO_LB_NIC ]]; then
			# The NIC's far end, moved here by topo_up.
			echo "link set lb1 master brs up"
		else
			echo "link add lb$i mtu $TOPO_MTU type veth peer name eth0" \
			     "netns ${TOPO_NS_LB[i]} address $(topo_mac 1b $i) mtu $TOPO_MTU"
			echo "link set lb$i master brs up"
			# The balancer's frames leave eth0 by XDP_TX; on veth
			# they reach the peer only when it runs an XDP program
			# too.
			echo "link set dev lb$i xdpdrv obj $(topo_obj pass) sec $(topo_sec)"
		fi
		((TOPO_SHARED_VIP)) && continue
		echo "route add ${TOPO_VIP4[i]}/32 via ${TOPO_LB4[i]}"
		echo "route add ${TOPO_VIP6[i]}/128 via ${TOPO_LB6[i]}"
	done
	for ((i = 1; i <= TOPO_BACKENDS; i++)); do
		echo "link add b$i mtu $TOPO_MTU type veth peer name eth0" \
		     "netns ${TOPO_NS_BE[i]} address $(topo_mac be $i) mtu $TOPO_MTU"
		echo "link set b$i master brs up"
	done
}

# topo_host_batch ADDR4/LEN ADDR6/LEN: what every host does with its eth0.
topo_host_batch() {
	echo "link set lo up"
	echo "addr add $1 dev eth0"
	echo "addr add $2 dev eth0 nodad"
	echo "link set eth0 up"
}

topo_client_batch() {
	topo_host_batch "${TOPO_CLIENT4[$1]}/24" "${TOPO_CLIENT6[$1]}/64"
	echo "route add default via 203.0.113.1"
	echo "route add default via 2001:db8:c::1"
}

# The balancer has no default route, so that packets for a VIP reaching
# its kernel while xlb is detached are refused at once (ICMP unreachable)
# rather than routed back and forth with the router. It holds no
# neighbour entries for the backends: xlb gives their next hops managed
# entries, which the kernel resolves itself (loader/instance/neigh.h).
topo_balancer_batch() {
	topo_host_batch "${TOPO_LB4[$1]}/24" "${TOPO_LB6[$1]}/64"
}

# The decapsulating backend, as one would set up a real server: the VIPs
# on lo, an ipip and an ip6tnl device in external (collect_md) mode that
# take tunnelled packets from any balancer (reverse-path filtering and ARP
# are set by topo_sysctls). A kernel built without those drivers gets
# decap.bpf.o on eth0 instead (TOPO_DECAP=xdp), set up by topo_host_setup
# after this batch, which hands the stack the inner packet as if it had
# arrived bare.
topo_backend_batch() {
	local j mss4= mss6=
	topo_host_batch "${TOPO_BE4[$1]}/24" "${TOPO_BE6[$1]}/64"
	if [[ $TOPO_DECAP == kernel ]]; then
		for ((j = 1; j <= (TOPO_SHARED_VIP ? 1 : TOPO_BALANCERS); j++)); do
			echo "addr add ${TOPO_VIP4[j]}/32 dev lo"
			echo "addr add ${TOPO_VIP6[j]}/128 dev lo nodad"
		done
		echo "link add xlbip4 type ipip external"
		echo "link add xlbip6 type ip6tnl external"
		echo "link set xlbip4 up"
		echo "link set xlbip6 up"
	fi
	if [[ $TOPO_ADVMSS == 1 ]]; then
		# MSS = MTU - outer header - inner IP header - TCP header.
		mss4=" advmss $((TOPO_MTU - 20 - 20 - 20))"
		mss6=" advmss $((TOPO_MTU - 40 - 40 - 20))"
	fi
	echo "route add default via 198.51.100.1$mss4"
	echo "route add default via 2001:db8:b::1$mss6"
}

# topo_host_setup K [ARGS...]: `xlb host setup` on backend K's eth0, as
# docs/backend.md sets a backend up (TOPO_DECAP=xdp): the VIPs, the
# balancers' addresses as the only senders, and ARGS (ecmp_second_chance
# adds the fleet). Run again, it changes only what differs.
topo_host_setup() {
	local k=$1 j args=()
	shift
	for ((j = 1; j <= (TOPO_SHARED_VIP ? 1 : TOPO_BALANCERS); j++)); do
		args+=(--vip "${TOPO_VIP4[j]}" --vip "${TOPO_VIP6[j]}")
	done
	for ((j = 1; j <= TOPO_BALANCERS; j++)); do
		args+=(--balancers "${TOPO_LB4[j]}/32" --balancers "${TOPO_LB6[j]}/128")
	done
	topo_in "${TOPO_NS_BE[k]}" "$TOPO_BUILD/xlb" host setup eth0 "${args[@]}" "$@" >/dev/null
}

# Settings made before any interface exists in the namespaces, since new
# interfaces copy the "default" values. Everywhere: no duplicate address
# detection (addresses are unique by construction; DAD would hold IPv6
# addresses, link-local ones too, tentative for a second and lose the
# first packets). The router forwards. The balancers forward too:
# bpf_fib_lookup refuses to answer on an interface that does not. The
# backends: no reverse-path filtering (a decapsulated packet comes from a
# client that is not routed via the tunnel device), and no ARP answers for
# the VIPs held on lo (arp_ignore, arp_announce).
topo_sysctls() {
	local nodad=(net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0)
	local norp=(net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0)
	local fwd=(net.ipv4.conf.all.forwarding=1 net.ipv6.conf.all.forwarding=1) i
	topo_sysctl "$TOPO_NS_RT" "${nodad[@]}" "${norp[@]}" "${fwd[@]}" || return 1
	for ((i = 1; i <= TOPO_CLIENTS; i++)); do
		topo_sysctl "${TOPO_NS_CLIENT[i]}" "${nodad[@]}" || return 1
	done
	for ((i = 1; i <= TOPO_BALANCERS; i++)); do
		topo_sysctl "${TOPO_NS_LB[i]}" "${nodad[@]}" "${fwd[@]}" || return 1
	done
	for ((i = 1; i <= TOPO_BACKENDS; i++)); do
		topo_sysctl "${TOPO_NS_BE[i]}" "${nodad[@]}" "${norp[@]}" \
			net.ipv4.conf.all.arp_ignore=1 \
			net.ipv4.conf.all.arp_announce=2 || return 1
	done
}

# TOPO_DECAP=auto: the kernel's tunnel devices when it has them.
topo_pick_decap() {
	local probe=$TOPO_PREFIX$TOPO_TAG-probe ok=1
	case $TOPO_DECAP in
	kernel|xdp) return 0 ;;
	auto) ;;
	*) topo_err "TOPO_DECAP must be auto, kernel or xdp"; return 1 ;;
	esac
	ip netns add "$probe" || return 1
	printf 'link add xlbip4 type ipip external\nlink add xlbip6 type ip6tnl external\n' |
		topo_batch "$probe" 2>/dev/null || ok=0
	ip netns del "$probe"
	if ((ok)); then
		TOPO_DECAP=kernel
	else
		TOPO_DECAP=xdp
		topo_log "this kernel has no ipip/ip6tnl devices: backends decapsulate with decap.bpf.o (XDP)"
	fi
}

# Each backend runs xlb-echo, which says "listening" once it is.
topo_start_servers() {
	local k try line out
	for ((k = 1; k <= TOPO_BACKENDS; k++)); do
		topo_in "${TOPO_NS_BE[k]}" "$TOPO_BUILD/tools/xlb-echo" server \
			"${TOPO_BE_NAME[k]}" --port "$TOPO_PORT" \
			--udp-port "$TOPO_UDP_PORT" >"$TOPO_RUN/server-b$k" 2>&1 &
	done
	for ((k = 1; k <= TOPO_BACKENDS; k++)); do
		out=$TOPO_RUN/server-b$k
		for ((try = 0; try < 200; try++)); do
			line=
			read -r line <"$out"
			[[ $line == listening* ]] && break
			sleep 0.05
		done
		[[ $line == listening* ]] ||
			topo_err "server on ${TOPO_BE_NAME[k]} did not start: $line" || return 1
	done
}

# topo_globals ROOT: where `ip link ... xdp obj` pins maps on the bpffs
# ROOT, and so where xlb finds them without --pin-dir: xdp/globals when
# ROOT/xdp is a directory, tc/globals when it is iproute2's symlink to tc/
# or not there yet (iproute2 then makes the symlink).
topo_globals() {
	if [[ -d $1/xdp && ! -L $1/xdp ]]; then
		echo "$1/xdp/globals"
	else
		echo "$1/tc/globals"
	fi
}

# topo_pins_in DIR: the xlb pins in DIR, one path a line.
topo_pins_in() {
	local p
	for p in "$1"/xlb_*; do
		[[ ! -e $p ]] || echo "$p"
	done
}

# topo_pins_default: the xlb pins where plain `xlb` looks, tc/globals and
# xdp/globals of the host's bpffs (once when xdp/ is the symlink to tc/).
topo_pins_default() {
	topo_pins_in "$TOPO_DEFAULT_ROOT/tc/globals"
	[[ -L $TOPO_DEFAULT_ROOT/xdp ]] || topo_pins_in "$TOPO_DEFAULT_ROOT/xdp/globals"
}

topo_check() {
	local f
	[[ $(id -u) -eq 0 ]] || topo_err "must run as root" || return 1
	for f in "$(topo_obj xlb)" "$(topo_obj pass)" "$TOPO_BUILD/decap.bpf.o" \
		 "$TOPO_BUILD/tools/xlb-echo" "$TOPO_BUILD/xlb"; do
		[[ -e $f ]] || topo_err "$f is missing: run make first" || return 1
	done
	mount | grep -q ' /sys/fs/bpf type bpf' || mount -t bpf bpf /sys/fs/bpf || return 1
	case $TOPO_PIN in
	private) ;;
	default)
		((TOPO_BALANCERS == 1)) ||
			topo_err "TOPO_PIN=default serves one balancer (the pins are shared)" || return 1
		[[ -z $(topo_pins_default) ]] ||
			topo_err "xlb maps are already pinned (another xlb instance?);" \
				 "refusing to share them:" $(topo_pins_default) || return 1 ;;
	*)	topo_err "TOPO_PIN must be private or default" ;;
	esac
}

# TOPO_LB_NIC="DEV PEER": lb1's eth0 is DEV, a device of this namespace
# (a NIC), and the router's port towards it PEER, the device at the other
# end of DEV's wire (vmtest/run.sh wires virtio-net NICs in pairs), in
# place of a veth pair. Both are moved into the namespaces, renamed eth0
# and lb1; deleting the namespaces gives them back.
topo_take_nic() {
	local dev peer
	[[ -n $TOPO_LB_NIC ]] || return 0
	read -r dev peer <<<"$TOPO_LB_NIC"
	[[ -e /sys/class/net/$dev && -e /sys/class/net/$peer ]] ||
		topo_err "TOPO_LB_NIC: no devices $dev and $peer here" || return 1
	ip link set dev "$dev" netns "${TOPO_NS_LB[1]}" || return 1
	ip link set dev "$peer" netns "$TOPO_NS_RT" || return 1
	ip -n "${TOPO_NS_LB[1]}" link set dev "$dev" name eth0 \
		address "$(topo_mac 1b 1)" mtu "$TOPO_MTU" || return 1
	ip -n "$TOPO_NS_RT" link set dev "$peer" name lb1 mtu "$TOPO_MTU"
}

topo_up() {
	local i ns
	topo_names
	topo_check || return 1
	# The run directory is the tag's lock: a second run with the same tag
	# stops here, before it could touch the first one's namespaces.
	mkdir -p "${TOPO_RUN%/*}" || return 1
	if ! mkdir "$TOPO_RUN" 2>/dev/null; then
		topo_err "tag $TOPO_TAG is in use ($TOPO_RUN exists)"
		return 1
	fi
	TOPO_OWNED=1
	topo_pick_decap || return 1
	topo_log "building $TOPO_PREFIX$TOPO_TAG-*: $TOPO_CLIENTS clients," \
		 "$TOPO_BALANCERS balancer(s), $TOPO_BACKENDS backends"
	for ns in "$TOPO_NS_RT" "${TOPO_NS_CLIENT[@]}" "${TOPO_NS_LB[@]}" "${TOPO_NS_BE[@]}"; do
		echo "netns add $ns"
	done | ip -batch - || return 1
	topo_sysctls || return 1
	topo_take_nic || return 1
	topo_router_batch | topo_batch "$TOPO_NS_RT" || return 1
	# A NIC puts complete checksums on the wire; a veth hands over a
	# locally made packet with its TCP/UDP checksum still to be filled in
	# (CHECKSUM_PARTIAL), which XDP_TX would send on unfinished. The
	# router's port towards each balancer finishes it in software.
	for ((i = 1; i <= TOPO_BALANCERS; i++)); do
		((i == 1)) && [[ -n $TOPO_LB_NIC ]] && continue
		topo_in "$TOPO_NS_RT" ethtool -K lb$i tx off >/dev/null || return 1
	done
	for ((i = 1; i <= TOPO_CLIENTS; i++)); do
		topo_client_batch $i | topo_batch "${TOPO_NS_CLIENT[i]}" || return 1
	done
	for ((i = 1; i <= TOPO_BALANCERS; i++)); do
		topo_balancer_batch $i | topo_batch "${TOPO_NS_LB[i]}" || return 1
	done
	for ((i = 1; i <= TOPO_BACKENDS; i++)); do
		topo_backend_batch $i | topo_batch "${TOPO_NS_BE[i]}" || return 1
		if [[ $TOPO_DECAP == xdp ]]; then
			topo_host_setup $i || topo_err "xlb host setup failed on b$i" || return 1
		fi
	done
	topo_start_servers
}

# topo_pin_root J: the bpffs mount under which lb J's maps are pinned.
topo_pin_root() {
	if [[ $TOPO_PIN == default ]]; then
		echo /sys/fs/bpf
	else
		echo "$TOPO_RUN/bpffs-lb$1"
	fi
}

# topo_pin_dir J: the --pin-dir of lb J's xlb: where `ip link` pins its
# maps, or pinned them (TOPO_PIN=default: as recorded by topo_attach).
topo_pin_dir() {
	if [[ $TOPO_PIN == default && -s $TOPO_RUN/pin-dir ]]; then
		cat "$TOPO_RUN/pin-dir"
	else
		topo_globals "$(topo_pin_root "$1")"
	fi
}

# topo_attach J: attach xlb to lb J's eth0 the way a user would.
topo_attach() {
	local j=$1 root dir
	root=$(topo_pin_root "$j")
	dir=$(topo_pin_dir "$j")
	if [[ $TOPO_PIN == private ]]; then
		mkdir -p "$root" || return 1
		mount | grep -q " $root type bpf" || mount -t bpf bpf "$root" || return 1
	elif [[ ! -e $TOPO_RUN/pin-dir ]]; then
		# Remember where the maps go and what was there before, so
		# that topo_down removes exactly the pins of this run: the
		# maps of ip link and those xlb pins beside them later.
		topo_pins_in "$dir" >"$TOPO_RUN/pins-before" &&
			echo "$dir" >"$TOPO_RUN/pin-dir" || return 1
	fi
	TC_BPF_MNT=$root topo_in "${TOPO_NS_LB[j]}" ip link set dev eth0 xdpdrv \
		obj "$(topo_obj xlb)" sec "$(topo_sec)" || return 1
	[[ -e $dir/xlb_config ]] ||
		topo_err "ip link pinned xlb's maps elsewhere than $dir" || return 1
}

topo_detach() { topo_in "${TOPO_NS_LB[$1]}" ip link set dev eth0 xdp off; }

# topo_xlb J ARGS...: xlb in lb J's namespace, on lb J's maps.
topo_xlb() {
	local j=$1; shift
	topo_in "${TOPO_NS_LB[j]}" "$TOPO_BUILD/xlb" --pin-dir "$(topo_pin_dir "$j")" "$@"
}

# topo_down: remove everything this run made (namespaces with its tag,
# private bpffs mounts, the default-location pins it created). Safe to
# call twice, after a partial topo_up, and after a topo_up that found its
# tag in use (it then touches nothing).
topo_down() {
	local ns pin m dir run=/run/xlb-topo/$TOPO_TAG
	[[ -n ${TOPO_TAG:-} && ${TOPO_OWNED:-0} == 1 ]] || return 0
	for ns in $(ip netns list | awk '{print $1}' | grep "^$TOPO_PREFIX$TOPO_TAG-"); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		# What `xlb host setup` pinned and recorded lives outside the
		# namespace: gone with it only when torn down.
		[[ $ns == *-b[0-9]* && -x $TOPO_BUILD/xlb ]] &&
			topo_in "$ns" "$TOPO_BUILD/xlb" host teardown eth0 >/dev/null 2>&1
	done
	for ns in $(ip netns list | awk '{print $1}' | grep "^$TOPO_PREFIX$TOPO_TAG-"); do
		ip netns del "$ns"
	done
	dir=$(cat "$run/pin-dir" 2>/dev/null)
	if [[ $dir == "$TOPO_DEFAULT_ROOT"/*/globals ]]; then
		for pin in $(comm -13 <(sort "$run/pins-before") <(topo_pins_in "$dir" | sort)); do
			rm -f "$pin"
		done
	fi
	for m in /run/xlb-topo/"$TOPO_TAG"/bpffs-*; do
		[[ -d $m ]] || continue
		mount | grep -q " $m type bpf" && umount "$m"
		rmdir "$m"
	done
	rm -f "$run/pin-dir" "$run/pins-before" "$run"/server-b*
	rmdir "$run" 2>/dev/null
	TOPO_OWNED=0
	return 0
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -uo pipefail
	case ${1:-} in
	up)
		topo_up || { topo_down; exit 1; }
		for ((j = 1; j <= TOPO_BALANCERS; j++)); do topo_attach $j || exit 1; done
		echo "tag $TOPO_TAG: namespaces $(ip netns list | awk '{print $1}' | grep "^$TOPO_PREFIX$TOPO_TAG-" | tr '\n' ' ')"
		echo "xlb of lb1:   nsenter --net=/run/netns/${TOPO_NS_LB[1]} $TOPO_BUILD/xlb --pin-dir $(topo_pin_dir 1) show"
		echo "remove with:  $0 down $TOPO_TAG" ;;
	down)
		[[ -n ${2:-} ]] || { echo "usage: $0 down TAG" >&2; exit 2; }
		TOPO_TAG=$2 TOPO_OWNED=1 topo_down ;;
	*)
		echo "usage: $0 up | down TAG   (TOPO_* variables: see the header)" >&2
		exit 2 ;;
	esac
fi
