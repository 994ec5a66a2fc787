#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A VIP's encapsulation and the GUE port as an operator sets them, on an
# instance of the test's own:
#  - `xlb vip add --encap gue` and `xlb vip set --encap ipip|gue` make it
#    so, and every backend record of the VIP carries XLB_BE_F_GUE (what
#    the datapath reads) when it is gue, also records added later;
#  - `xlb show` says "encap gue" (ipip, the default, goes unsaid), `xlb
#    show -j` holds "encap", and `xlb apply` of that output changes
#    nothing; a file without "encap" makes the VIP ipip again;
#  - `xlb config set gue-port P` (and gue_port in a file) sets the port,
#    0 is the default;
#  - a bad encapsulation or port, on the command line or in a file, is
#    refused with one line and changes nothing;
#  - a VIP's fingerprint (`xlb -j show`) changes with its encapsulation,
#    and with the GUE port when the VIP is GUE or stateless (balancers
#    that differ there send differently), not with the port when it is
#    tracked IPIP; back as it was, it is as it was.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached gue_cli gcl || exit 1

V=192.0.2.10:80/tcp
B1=198.51.100.11
B2=2001:db8::12
B3=198.51.100.13

# The flags byte (offset 29) of every in-use backend record, as
# "GUE-bit" words: 1 for each record with XLB_BE_F_GUE, 0 without.
gue_bits() {
	local f
	for f in $(bpftool -j map dump pinned "$PIN/xlb_backends" | jq -r '.[].value[29]'); do
		(( f & 1 )) && echo $(( f >> 4 & 1 ))
	done | sort | xargs
}

x config set src4 198.51.100.1 src6 2001:db8::1 >/dev/null
x vip add $V --encap gue --table-size 31 >/dev/null
x backend add $V $B1 >/dev/null
x backend add $V $B2 >/dev/null
tl_check add_gue_records_carry_the_flag test "$(gue_bits)" == "1 1"
tl_check show_says_gue grep -q "vip $V .* encap gue" <(x show)
tl_check show_json_says_gue test "$(x -j show | jq -r '.vips[0].encap')" == gue

x vip set $V --encap ipip >/dev/null
tl_check set_ipip_clears_every_record test "$(gue_bits)" == "0 0"
tl_check show_omits_ipip test "$(x show | grep -c 'encap')" == 0
tl_check show_json_says_ipip test "$(x -j show | jq -r '.vips[0].encap')" == ipip
x vip set $V --encap gue >/dev/null
x backend add $V $B3 >/dev/null
tl_check set_gue_and_a_later_backend test "$(gue_bits)" == "1 1 1"

# show -j applied back changes nothing; without "encap" the VIP is ipip.
x -j show >"$TMP/state.json"
instance_dump >"$TMP/before"
x apply "$TMP/state.json" >/dev/null 2>&1
instance_dump >"$TMP/after"
tl_check apply_show_output_changes_nothing cmp -s "$TMP/before" "$TMP/after"
jq 'del(.vips[0].encap)' "$TMP/state.json" >"$TMP/ipip.json"
x apply "$TMP/ipip.json" >/dev/null
tl_check apply_without_encap_is_ipip test "$(gue_bits) $(x -j show | jq -r '.vips[0].encap')" == "0 0 0 ipip"
x apply "$TMP/state.json" >/dev/null
tl_check apply_gue test "$(gue_bits) $(x -j show | jq -r '.vips[0].encap')" == "1 1 1 gue"

# The port.
tl_check gue_port_default test "$(x -j config show | jq .gue_port)" == 0
x config set gue-port 7000 >/dev/null
tl_check gue_port_set test "$(x -j config show | jq .gue_port) $(x config show | grep -c '^gue-port  *7000$')" == "7000 1"
# In the map in network order: 7000 = 0x1b58 at offset 64.
tl_check gue_port_in_the_map test "$(bpftool -j map dump pinned "$PIN/xlb_config" | jq -r '.[0].value[64:66] | join(" ")')" == "0x1b 0x58"
jq '.config.gue_port = 6081' "$TMP/state.json" >"$TMP/port.json"
x apply "$TMP/port.json" >/dev/null
tl_check gue_port_from_a_file test "$(x -j config show | jq .gue_port)" == 6081

fails_unchanged bad_encap_add "not ipip or gue" x vip add 192.0.2.11:80/tcp --encap vxlan
fails_unchanged bad_encap_set "not ipip or gue" x vip set $V --encap GUE
fails_unchanged set_of_no_vip "no VIP" x vip set 192.0.2.99:80/tcp --encap gue
fails_unchanged bad_port "gue-port" x config set gue-port 65536
fails_unchanged bad_port_text "gue-port" x config set gue-port udp
jq '.vips[0].encap = "ipip6"' "$TMP/state.json" >"$TMP/bad.json"
fails_unchanged bad_encap_file "vips[0].encap" x apply "$TMP/bad.json"
jq '.vips[0].encap = 4' "$TMP/state.json" >"$TMP/bad.json"
fails_unchanged bad_encap_type "vips[0].encap" x apply "$TMP/bad.json"
jq '.config.gue_port = -1' "$TMP/state.json" >"$TMP/bad.json"
fails_unchanged bad_port_file "gue_port" x apply "$TMP/bad.json"

# The fingerprint: balancers that differ in a VIP's encapsulation, or in
# the GUE port of a GUE or stateless VIP, send its packets differently,
# so their fingerprints differ; back as it was, a VIP has the fingerprint
# it had. A tracked IPIP VIP sends no UDP: the port leaves it as it was.
G=192.0.2.30:80/tcp S=192.0.2.31:80/udp I=192.0.2.32:80/tcp
fp() { x -j show | jq -r --arg v "$1" '.vips[] | select(.vip == $v) | .fingerprint // empty'; }
x config set gue-port 0 >/dev/null
x vip add $G --encap gue --table-size 31 >/dev/null
x vip add $S --mode stateless --table-size 31 >/dev/null
x vip add $I --table-size 31 >/dev/null
for v in $G $S $I; do x backend add $v $B1 >/dev/null; done
g0=$(fp $G) s0=$(fp $S) i0=$(fp $I)
tl_check fingerprints_shown test -n "$g0" -a -n "$s0" -a -n "$i0"
x config set gue-port 7000 >/dev/null
tl_check fingerprint_covers_the_port_of_gue test "$(fp $G)" != "$g0"
tl_check fingerprint_covers_the_port_of_stateless test "$(fp $S)" != "$s0"
tl_check fingerprint_of_ipip_ignores_the_port test "$(fp $I)" == "$i0"
x config set gue-port 0 >/dev/null
tl_check fingerprint_back_with_the_port test "$(fp $G) $(fp $S)" == "$g0 $s0"
x vip set $G --encap ipip >/dev/null
tl_check fingerprint_covers_gue_to_ipip test "$(fp $G)" != "$g0"
x vip set $I --encap gue >/dev/null
tl_check fingerprint_covers_ipip_to_gue test "$(fp $I)" != "$i0"
x vip set $G --encap gue >/dev/null
x vip set $I --encap ipip >/dev/null
tl_check fingerprint_back_with_the_encap test "$(fp $G) $(fp $I)" == "$g0 $i0"

exit $TL_FAILED
