#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A VIP's hash fields (client affinity) and ping as an operator sees them, on an
# instance of the test's own:
#  - a VIP hashes the 5-tuple unless told; `xlb vip set --hash src-ip`
#    makes every connection of a client address go to one backend: `xlb
#    lookup` (the datapath's own answer) puts 40 client ports of one
#    address on one slot, where the 5-tuple spreads them;
#  - `--affinity-prefix 24` makes a /24 one client (its addresses share a
#    slot, another /24's do not); `--hash src-ip` again keeps the prefix;
#  - the choice is in `xlb show` (text and -j) and in the fingerprint
#    (balancers that differ in it send flows differently); `xlb -j show |
#    xlb apply -` changes nothing, a file's "hash": "5-tuple" goes back
#    to the default and its fingerprint;
#  - an IPv6 VIP takes a /64;
#  - --ping off is in show (text and -j) and files, and leaves the
#    fingerprint as it was;
#  - bad input is refused with one line and changes nothing: an unknown
#    field set, a prefix of 0, longer than the family's addresses, or
#    without src-ip, a ping neither on nor off, on the command line and in
#    a file.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached vip_hash_cli vhc || exit 1

V=192.0.2.10:80/tcp
V6=[2001:db8::10]:443/tcp

vipj() { x -j show | jq -c --arg v "$1" ".vips[] | select(.vip == \$v)$2"; }
fp() { x show | awk -v v="$1" '$1 == "vip" && $2 == v { for (i = 3; i < NF; i++) if ($i == "fingerprint") print $(i + 1) }'; }
# slots CLIENT-ADDR PORTS...: the distinct slots `xlb lookup` gives the
# client's flows from those ports to $V, one a line; and a line "differs"
# where the backend the datapath took is not the slot's owner in
# userspace's hash (lookup's model).
slots() {
	local addr=$1 p; shift
	for p in "$@"; do echo "$addr:$p $V"; done |
		x -j lookup --batch --dev v0 |
		jq -r 'if .backend.id == .table.slot_owner_id then .table.slot else "differs" end' |
		sort -u
}

x config set src4 198.51.100.1 >/dev/null
x vip add $V >/dev/null
for b in 11 12 13 14; do x backend add $V 198.51.100.$b >/dev/null; done
tl_check default_is_the_5_tuple test "$(vipj $V '| "\(.hash) \(.affinity_prefix)"')" == '"5-tuple null"'
fp0=$(fp $V)
ports=$(seq 1024 1063)
n=$(slots 203.0.113.7 $ports | wc -l)
echo "  5-tuple: 40 client ports of one address on $n slots"
tl_check five_tuple_spreads_a_clients_ports test "$n" -gt 20

x vip set $V --hash src-ip >/dev/null
tl_check src_ip_takes_the_whole_address test "$(vipj $V '| "\(.hash) \(.affinity_prefix)"')" == '"src-ip 32"'
tl_check show_says_src_ip grep -q "vip $V .* hash src-ip affinity-prefix 32" <(x show)
tl_check the_fingerprint_tells_the_hash test "$(fp $V)" != "$fp0"
n=$(slots 203.0.113.7 $ports | wc -l)
tl_check src_ip_puts_a_clients_ports_on_one_slot test "$n" -eq 1
tl_check the_datapath_hashes_as_userspace_does test -z "$(slots 203.0.113.9 $ports | grep differs)"
a=$(slots 203.0.113.7 1024) b=$(slots 203.0.113.8 1024)
tl_check another_address_is_another_client test "$a" != "$b"

x vip set $V --affinity-prefix 24 >/dev/null
tl_check affinity_prefix_24 test "$(vipj $V .affinity_prefix)" == 24
n=$(for h in 7 8 99 200; do slots 203.0.113.$h 1024 2000; done | sort -u | wc -l)
tl_check a_24_is_one_client test "$n" -eq 1
n=$(for net in 1 2 3 4 5 6 7 8; do slots 198.18.$net.7 1024; done | sort -u | wc -l)
echo "  /24: 8 clients' prefixes on $n slots"
tl_check other_24s_are_other_clients test "$n" -gt 1
x vip set $V --hash src-ip >/dev/null
tl_check src_ip_again_keeps_the_prefix test "$(vipj $V .affinity_prefix)" == 24

fp24=$(fp $V)
x -j show >"$TMP/show.json"
x apply "$TMP/show.json" >/dev/null
tl_check apply_of_show_changes_nothing test "$(fp $V) $(vipj $V .affinity_prefix)" == "$fp24 24"
jq '(.vips[] | select(.vip == "'$V'")) |= (.hash = "5-tuple" | del(.affinity_prefix))' \
	"$TMP/show.json" >"$TMP/default.json"
x apply "$TMP/default.json" >/dev/null
tl_check apply_back_to_the_5_tuple test "$(vipj $V .hash) $(fp $V)" == "\"5-tuple\" $fp0"
x apply "$TMP/show.json" >/dev/null
tl_check apply_sets_the_hash test "$(vipj $V '| "\(.hash) \(.affinity_prefix)"')" == '"src-ip 24"'

x vip add "$V6" --hash src-ip --affinity-prefix 64 >/dev/null
tl_check ipv6_takes_a_64 test "$(vipj "$V6" '| "\(.hash) \(.affinity_prefix)"')" == '"src-ip 64"'

# Ping: on by default; off is in show and files, not in the fingerprint
# (it sends no flow elsewhere).
tl_check ping_on_by_default test "$(vipj $V .ping)" == true
fp_before=$(fp $V)
x vip set $V --ping off >/dev/null
tl_check ping_off_shown test "$(vipj $V .ping)" == false
tl_check show_says_ping_off grep -q "vip $V .* ping off" <(x show)
tl_check ping_is_not_in_the_fingerprint test "$(fp $V)" == "$fp_before"
x -j show | jq '(.vips[] | select(.vip == "'$V'")) |= (.ping = true)' >"$TMP/ping.json"
x apply "$TMP/ping.json" >/dev/null
tl_check apply_sets_ping test "$(vipj $V .ping)" == true

# Refused, and nothing changed (fails_unchanged: every map and show).
x -j show >"$TMP/before.json"
fails_unchanged hash_unknown_fields "not 5-tuple or src-ip" x vip set $V --hash ports
fails_unchanged affinity_prefix_zero "1..128" x vip set $V --affinity-prefix 0
fails_unchanged affinity_prefix_not_a_number "1..128" x vip set $V --affinity-prefix 24x
fails_unchanged affinity_prefix_too_long_for_ipv4 "IPv4 VIP is 1..32" x vip set $V --affinity-prefix 33
fails_unchanged affinity_prefix_too_long_for_ipv6 "1..128" x vip set "$V6" --affinity-prefix 129
fails_unchanged affinity_prefix_without_src_ip "needs --hash src-ip" x vip set $V --hash 5-tuple --affinity-prefix 24
fails_unchanged vip_add_prefix_without_src_ip "needs --hash src-ip" x vip add 192.0.2.11:80/tcp --affinity-prefix 24
bad_file() {
	local name=$1 fragment=$2 edit=$3
	jq "(.vips[] | select(.vip == \"$V\")) |= ($edit)" "$TMP/before.json" >"$TMP/$name.json"
	fails_unchanged "$name" "$fragment" x apply "$TMP/$name.json"
}
fails_unchanged ping_neither_on_nor_off "not on or off" x vip set $V --ping maybe
bad_file file_ping_not_a_boolean "must be true or false" '.ping = "no"'
bad_file file_hash_unknown "bad hash 'ports'" '.hash = "ports"'
bad_file file_hash_not_a_string "must be a string" '.hash = 5'
bad_file file_prefix_too_long "IPv4 VIP is 1..32" '.affinity_prefix = 40'
bad_file file_prefix_not_an_integer "integer 1..128" '.affinity_prefix = "24"'
bad_file file_prefix_without_src_ip "needs \"hash\": \"src-ip\"" '.hash = "5-tuple"'

exit $TL_FAILED
