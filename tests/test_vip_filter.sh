#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The VIP filter (include/vip_filter.h) lets a packet of no VIP leave the
# datapath before any lookup. xlb keeps it the image of the VIPs: a bit
# per VIP and one per VIP address, set when a VIP is added, cleared when
# it is deleted, whatever the command (vip, apply), and rebuilt by the
# next command when it is stale; xlb_vip_addrs, the VIP addresses with
# their number of VIPs, likewise. The datapath honours both: a VIP whose
# bit is clear is no VIP, and a packet to a VIP address that no VIP takes
# (another port or protocol) is dropped, drop_vip_port, where the kernel
# would route it back to the router; a ping of it is answered.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached vip_filter flt || exit 1

# The filter's value as bytes: ready (8), then the bits.
filter_bytes() {
	bpftool -j map lookup pinned "$PIN/xlb_vip_filter" key 0 0 0 0 |
		jq -r '.value[]' | sed 's/^0x//'
}
ready() { filter_bytes | head -8 | tr -d '\n'; }
bits_set() {
	local n=0 b
	for b in $(filter_bytes | tail -n +9 | grep -v '^00$'); do
		b=$((16#$b))
		while ((b)); do n=$((n + (b & 1))); b=$((b >> 1)); done
	done
	echo "$n"
}

# The VIP addresses, one line each: address bytes, family, VIPs.
addrs() {
	bpftool -j map dump pinned "$PIN/xlb_vip_addrs" |
		jq -r '.[] | "\(.key[0:16] | map(ltrimstr("0x")) | join("")) \(.key[19] | ltrimstr("0x")) \(.value[0] | ltrimstr("0x"))"' |
		sed 's/000000000000000000000000 / /' | sort | tr '\n' ';'
}

tl_check attach_writes_a_ready_filter test "$(ready)" == 0100000000000000 -a "$(bits_set)" -eq 0
x vip add 192.0.2.10:80/tcp
x vip add 192.0.2.10:0/udp
x vip add '[2001:db8::10]:443/tcp'
tl_check a_bit_per_vip_and_vip_address test "$(bits_set)" -eq 5
tl_check vip_addresses_counted test "$(addrs)" == \
	"20010db8000000000000000000000010 06 01;c000020a 04 02;"
x vip del 192.0.2.10:0/udp
tl_check vip_del_clears_its_bit test "$(bits_set)" -eq 4
tl_check vip_del_counts_its_address_down test "$(addrs)" == \
	"20010db8000000000000000000000010 06 01;c000020a 04 01;"
echo '{"vips":[{"vip":"192.0.2.20:53/udp"},{"vip":"192.0.2.21:53/udp"}]}' > "$TMP/two.json"
x apply "$TMP/two.json"
tl_check apply_leaves_the_bits_of_its_vips test "$(bits_set)" -eq 4
tl_check apply_leaves_the_addresses_of_its_vips test "$(addrs)" == "c0000214 04 01;c0000215 04 01;"

# A stale filter (what an older xlb or a fresh `ip link` load leaves):
# ready, and empty. The datapath takes the VIP's packets for no VIP's...
printf '01 00 00 00 00 00 00 00 %s' "$(printf '00 %.0s' $(seq 16384))" > "$TMP/stale.hex"
bpftool map update pinned "$PIN/xlb_vip_filter" key 0 0 0 0 value hex $(cat "$TMP/stale.hex")
ip -n "$PEER" addr add 198.51.100.2/24 dev v1
ip -n "$NS" addr add 198.51.100.1/24 dev v0
ip -n "$PEER" route add 192.0.2.0/24 via 198.51.100.1
not_vip() { x -j stats | jq '.counters.pass_not_vip.packets'; }
no_backend() { x -j stats | jq '.counters.drop_no_backend.packets'; }
before=$(not_vip)
tl_in "$PEER" bash -c 'echo probe >/dev/udp/192.0.2.20/53'
sleep 0.2
tl_check datapath_honours_the_filter test "$(not_vip)" -eq $((before + 1))
# ...until the next command of any kind rebuilds it.
x config set udp-timeout 30
tl_check next_command_rebuilds_a_stale_filter test "$(bits_set)" -eq 4
before=$(no_backend)
tl_in "$PEER" bash -c 'echo probe >/dev/udp/192.0.2.20/53'
sleep 0.2
tl_check rebuilt_filter_lets_the_vip_through test "$(no_backend)" -eq $((before + 1))

# A VIP address on a port and a protocol no VIP has: dropped; a ping of
# it answered by xlb.
vip_port() { x -j stats | jq '.counters.drop_vip_port.packets'; }
echo_reply() { x -j stats | jq '.counters.icmp_echo_reply.packets'; }
before=$(vip_port) before_pass=$(not_vip) before_echo=$(echo_reply)
tl_in "$PEER" bash -c 'echo probe >/dev/udp/192.0.2.20/54'
tl_in "$PEER" timeout 1 bash -c 'echo probe >/dev/tcp/192.0.2.21/53' 2>/dev/null
tl_in "$PEER" ping -c 1 -W 1 192.0.2.20 >/dev/null
tl_check vip_address_unconfigured_port_dropped test "$(vip_port)" -ge $((before + 2))
tl_check vip_address_ping_answered test "$(echo_reply)" -eq $((before_echo + 1))
tl_in "$PEER" bash -c 'echo probe >/dev/udp/192.0.2.22/53'
sleep 0.2
tl_check other_address_still_passed test "$(not_vip)" -eq $((before_pass + 1))

# A stale address (a kill between two writes, or written by hand) is
# removed by the next command; until then it only drops, never passes
# a VIP's packet.
bpftool map update pinned "$PIN/xlb_vip_addrs" \
	key 192 0 2 99 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 4 value 1 0 0 0
x config set udp-timeout 31
tl_check next_command_drops_a_stale_address test "$(addrs)" == "c0000214 04 01;c0000215 04 01;"

# The VIP slots (include/xlb.h): at each VIP's filter bit a copy of its key
# and record, which the datapath reads instead of hashing the key into
# xlb_vips, and trusts when the key is the packet's. xlb writes a slot
# with its record, empties it (or gives it to another VIP of the bit)
# when the VIP goes, and the next command repairs a slot that lies.

# vip_bit ADDR PORT PROTO: an IPv4 VIP's filter bit (include/vip_filter.h:
# the address and port in network order read as host words).
vip_bit() {
	local a b c d x port
	IFS=. read -r a b c d <<< "$1"
	port=$(( ($2 >> 8) | ($2 & 255) << 8 ))
	x=$(( (a | b << 8 | c << 16 | d << 24) ^ (port << 16 | $3 << 8 | 4) ))
	echo $(( ((x * 0x9e3779b1) & 0xffffffff) >> 16 ))
}
le32() { printf '%d %d %d %d' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24)); }
# slot ADDR PORT PROTO: the slot's 40 bytes, as hex.
slot() {
	bpftool -j map lookup pinned "$PIN/xlb_vip_slots" key $(le32 "$(vip_bit "$@")") |
		jq -r '.value | map(ltrimstr("0x")) | join("")'
}
# record ADDR PORT PROTO: the VIP's key and record as a slot holds them
# (4 bytes between them), from xlb_vips; zeros when there is none.
record() {
	local key
	key="$(printf '%d %d %d %d ' ${1//./ }) $(printf '0 %.0s' {1..12}) $(($2 >> 8)) $(($2 & 255)) $3 4"
	bpftool -j map lookup pinned "$PIN/xlb_vips" key $key 2>/dev/null |
		jq -r '(.key + ["0x00","0x00","0x00","0x00"] + .value) | map(ltrimstr("0x")) | join("")' |
		grep . || printf '0%.0s' {1..80}
}
same_slot() { test "$(slot "$@")" == "$(record "$@")"; }

x vip add 192.0.2.30:80/tcp
tl_check vip_slot_holds_key_and_record same_slot 192.0.2.30 80 6
x vip set 192.0.2.30:80/tcp --mode stateless
tl_check vip_slot_follows_a_mode_change same_slot 192.0.2.30 80 6
[[ $(record 192.0.2.30 80 6) != "$(printf '0%.0s' {1..80})" ]] ||
	tl_fail vip_slot_record_read "xlb_vips has no 192.0.2.30:80/tcp"

# Two VIPs with one bit share its slot. The bit is a bijection of the
# port for one address and protocol, so the second VIP takes another
# address: the port of 192.0.2.32 whose bit is 192.0.2.31:1000's.
want=$(vip_bit 192.0.2.31 1000 17) p2=
for ((p = 1; p < 65536; p++)); do
	[[ $(vip_bit 192.0.2.32 "$p" 17) == "$want" ]] && { p2=$p; break; }
done
x vip add 192.0.2.31:1000/udp
x vip add "192.0.2.32:$p2/udp"
tl_check vip_slot_shared_holds_the_last_written same_slot 192.0.2.32 "$p2" 17
x vip del "192.0.2.32:$p2/udp"
tl_check vip_slot_passes_to_the_other_vip_of_its_bit same_slot 192.0.2.31 1000 17
x vip del 192.0.2.31:1000/udp
tl_check vip_slot_emptied_with_the_last_vip_of_its_bit \
	test "$(slot 192.0.2.31 1000 17)" == "$(printf '0%.0s' {1..80})"

# A slot that lies (another table size: by hand, or an older xlb's
# command) is repaired by the next command of any kind.
bad=$(slot 192.0.2.30 80 6 | sed 's/^\(.\{56\}\)..../\100ff/')
bpftool map update pinned "$PIN/xlb_vip_slots" key $(le32 "$(vip_bit 192.0.2.30 80 6)") \
	value hex $(echo "$bad" | sed 's/../& /g')
lies() { ! same_slot "$@"; }
tl_check vip_slot_written_by_hand_lies lies 192.0.2.30 80 6
x config set udp-timeout 32
tl_check next_command_repairs_a_lying_slot same_slot 192.0.2.30 80 6

exit $TL_FAILED
