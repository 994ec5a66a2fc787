#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The way network engineers attach XDP programs: `ip link set dev D xdp obj
# xlb.bpf.o sec xdp` pins the maps under /sys/fs/bpf/tc/globals, where xlb
# finds them without --pin-dir. Configured with xlb, the attached program
# (run with BPF_PROG_TEST_RUN through bpftool, on a frame received on the
# device) encapsulates a VIP's packet to the backend, and xlb stats counts
# it; at MTU 9000 the multi-buffer build xlb.frags.bpf.o attaches where
# xlb.bpf.o cannot. The gateway's neighbour entry is pinned (nud permanent), as an
# operator may pin it: xlb, which gives next hops managed entries, leaves
# it as it is and records none of its own. The test only runs when no xlb
# maps are pinned there already (they would belong to someone else), and
# removes the ones it created.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"

# iproute2 pins under xdp/globals: normally a symlink to tc/globals, but a
# directory of its own when libxdp (xlb attach) made /sys/fs/bpf/xdp first.
GLOBALS=/sys/fs/bpf/tc/globals
[[ -d /sys/fs/bpf/xdp && ! -L /sys/fs/bpf/xdp ]] && GLOBALS=/sys/fs/bpf/xdp/globals

tl_require_root loader_iplink || exit 0
tl_bpffs
if ls "$GLOBALS" 2>/dev/null | grep -q '^xlb_'; then
	tl_skip loader_iplink "xlb maps are already pinned in $GLOBALS (another instance): not touching them"
	exit 0
fi
# None was there before the test: every xlb map pinned there is its own.
tl_on_exit "rm -f $GLOBALS/xlb_*"
tl_netns NS lb || { tl_fail loader_iplink "cannot create a namespace"; exit 1; }
TMP=$(mktemp -d)
tl_on_exit "rm -rf $TMP"

ip -n "$NS" link add v0 address 02:00:00:00:00:01 type veth peer name v1
ip -n "$NS" link set v0 up
ip -n "$NS" link set v1 up
ip -n "$NS" addr add 198.51.100.1/24 dev v0
ip -n "$NS" neigh add 198.51.100.2 lladdr 02:00:00:00:00:02 dev v0 nud permanent
ip -n "$NS" route add 203.0.113.0/24 via 198.51.100.2
tl_in "$NS" sysctl -qw net.ipv4.ip_forward=1

if ! tl_in "$NS" ip link set dev v0 xdpgeneric obj "$BUILD/xlb.bpf.o" sec xdp 2>"$TMP/err"; then
	tl_fail iplink_attach "$(cat "$TMP/err")"
	exit 1
fi
tl_check iplink_pins_maps_in_globals test -e "$GLOBALS/xlb_vips" -a -e "$GLOBALS/xlb_tables"

x() { tl_in "$NS" "$XLB" "$@"; }
# A command that fails writes nothing, not even the seeds of a first use.
zero=00000000000000000000000000000000  # an unset seed reads null
x backend add 192.0.2.1:80/tcp 203.0.113.1 2>/dev/null
x vip del 192.0.2.1:80/tcp 2>/dev/null
filter_ready() {
	bpftool -j map lookup pinned "$GLOBALS/xlb_vip_filter" key 0 0 0 0 | jq -r '.value[0]'
}
tl_check iplink_failed_commands_write_no_seed \
	test "$(x -j config show | jq -r .seed)" == null
tl_check iplink_failed_commands_write_no_filter test "$(filter_ready)" == 0x00
x config set src4 198.51.100.1 &&
x vip add 192.0.2.10:80/tcp &&
x backend add 192.0.2.10:80/tcp 203.0.113.5
tl_check iplink_configured_by_xlb_without_pin_dir \
	test "$(x -j show | jq -r '.vips[0].backends[0].addr')" == 203.0.113.5
tl_check iplink_pinned_neighbour_left_alone sh -c \
	"ip -n $NS -d neigh show 198.51.100.2 dev v0 | grep PERMANENT | grep -vq managed"
tl_check iplink_pinned_neighbour_not_recorded_as_xlbs \
	test "$(bpftool -j map dump pinned "$GLOBALS/xlb_neigh" | jq length)" -eq 0
tl_check iplink_show_finds_the_next_hop_resolved \
	test "$(x -j show | jq -c '.vips[0].backends[0].next_hop')" == \
	'{"addr":"198.51.100.2","dev":"v0","resolved":true}'
seed=$(x -j config show | jq -r .seed)
tl_check iplink_first_write_sets_a_random_seed \
	test "${#seed}" -eq 32 -a "$seed" != "$zero"
tl_check iplink_first_write_makes_the_filter test "$(filter_ready)" == 0x01

# A TCP SYN from 203.0.113.77:40000 to the VIP, as received on v0.
python3 - "$TMP" <<'EOF'
import struct, sys
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
src, dst = bytes([203, 0, 113, 77]), bytes([192, 0, 2, 10])
tcp = struct.pack('!HHIIBBHHH', 40000, 80, 1, 0, 5 << 4, 0x02, 65535, 0, 0)
tcp = tcp[:16] + struct.pack('!H', csum(src + dst + struct.pack('!BBH', 0, 6, len(tcp)) + tcp)) + tcp[18:]
ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), 1, 0x4000, 64, 6, 0, src, dst)
ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
eth = bytes([2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2]) + struct.pack('!H', 0x0800)
open(sys.argv[1] + '/in', 'wb').write(eth + ip + tcp)
EOF
ifindex=$(ip -n "$NS" -j link show v0 | jq ".[0].ifindex")
# struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex
python3 -c "import struct,sys; open(sys.argv[1],'wb').write(struct.pack('<6I',0,54,0,$ifindex,0,0))" "$TMP/ctx"
prog=$(ip -n "$NS" -j link show v0 | jq '.[0].xdp.prog.id')
tl_in "$NS" bpftool -j prog run id "$prog" data_in "$TMP/in" data_out "$TMP/out" ctx_in "$TMP/ctx" >"$TMP/run" 2>&1
retval=$(jq .retval "$TMP/run" 2>/dev/null)
outer_dst=$(od -An -tu1 -j30 -N4 "$TMP/out" 2>/dev/null | awk '{ print $1 "." $2 "." $3 "." $4 }')
outer_proto=$(od -An -tu1 -j23 -N1 "$TMP/out" 2>/dev/null | tr -d ' ')
echo "  attached program: retval $retval, outer protocol $outer_proto, outer destination $outer_dst"
# XDP_TX (3): out of v0 again, towards the backend's next hop.
tl_check iplink_vip_is_encapsulated_to_the_backend \
	test "$retval" == 3 -a "$outer_proto" == 4 -a "$outer_dst" == 203.0.113.5
tl_check iplink_stats_count_the_packet \
	test "$(x -j stats | jq '.vips[0].backends[0].packets')" -eq 1 -a \
	     "$(x -j stats | jq '.counters.forward.packets')" -eq 1

x detach v0 >/dev/null
tl_check iplink_xlb_detach_removes_it sh -c "! ip -n $NS link show v0 | grep -q xdp"

# At MTU 9000 a veth takes only a multi-buffer program natively: the
# single-buffer xlb.bpf.o is refused there, xlb.frags.bpf.o (section
# xdp.frags) is attached, on the same pinned maps.
ip -n "$NS" link add v2 mtu 9000 type veth peer name v3 mtu 9000
ip -n "$NS" link set v2 up && ip -n "$NS" link set v3 up
tl_check iplink_single_buffer_refused_at_mtu_9000 sh -c \
	"! nsenter --net=/run/netns/$NS ip link set dev v2 xdpdrv obj $BUILD/xlb.bpf.o sec xdp 2>/dev/null"
if tl_in "$NS" ip link set dev v2 xdpdrv obj "$BUILD/xlb.frags.bpf.o" sec xdp.frags 2>"$TMP/err"; then
	tl_check iplink_frags_attached_at_mtu_9000 sh -c "ip -n $NS link show v2 | grep -q 'prog/xdp.*name xlb_xdp'"
else
	tl_fail iplink_frags_attached_at_mtu_9000 "$(cat "$TMP/err")"
fi
ip -n "$NS" link del v2

exit $TL_FAILED
