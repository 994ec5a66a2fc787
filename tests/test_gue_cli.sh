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
#    refused with one line and changes nothing.
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

exit $TL_FAILED
