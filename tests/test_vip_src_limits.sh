#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Source ranges at their limit in all, on an instance of the test's own
# (the lists themselves are test_vip_src_cli.sh's):
#  - eight VIPs of 1024 prefixes hold the trie's 8192; one more prefix is
#    refused with one line, changing nothing, from `vip add`, `vip set`
#    and a file;
#  - at 8192, a VIP's 1024 can still be replaced whole on the command
#    line, and every VIP's at once by `xlb apply`, each VIP keeping one
#    generation of entries;
#  - `xlb apply` moves 1024 prefixes from a VIP to one listed before it:
#    it shrinks lists before it grows others, so a file that fits is
#    taken.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached vip_src_limits vsl || exit 1

. "$(dirname "$0")/lib/src_lib.sh"

# ---- 8192 prefixes in all: 8 VIPs of 1024 ----
for v in $(x -j show | jq -r '.vips[].vip'); do x vip del "$v" >/dev/null; done
# full A: a file of 8 VIPs 192.0.2.20-27, VIP i's prefixes A.(4i..4i+3).*.0/24.
full() {
	jq -n --arg a "$1" '{vips: [range(0; 8) as $i | {vip: "192.0.2.\(20 + $i):80/tcp", table_size: 251,
		allow: [range(0; 1024) as $j | "\($a).\($i * 4 + ($j / 256 | floor)).\($j % 256).0/24"]}]}'
}
full 10 >"$TMP/full.json"
full 11 >"$TMP/full2.json"
x apply "$TMP/full.json" >/dev/null
x vip add 192.0.2.30:80/tcp >/dev/null
baseline
tl_check eight_vips_of_1024 test "$(head -n 1 "$TMP/base") $(x -j show | jq '[.vips[] | .allow | length] | add')" == \
	"trie entries 8192 8192"
refused over_8192_vip_add_adds_nothing "more than 8192 (the limit in all)" \
	x vip add 192.0.2.31:80/tcp --allow 172.16.0.0/12
refused over_8192_vip_set "more than 8192 (the limit in all)" x vip set 192.0.2.30:80/tcp --deny 172.16.0.0/12
jq '.vips += [{vip: "192.0.2.30:80/tcp", allow: ["172.16.0.0/12"]}]' "$TMP/full.json" >"$TMP/over.json"
refused over_8192_in_a_file "more than 8192 source prefixes in all" x apply "$TMP/over.json"
x vip set 192.0.2.20:80/tcp --allow "$(plist 1024 '172.%d.%d.0/24')" >/dev/null
look 192.0.2.20:80/tcp
tl_check at_the_limit_a_vip_is_replaced_whole test "$TOTAL $NAMED $BYGEN $L" == \
	"8192 1024 $GEN:1024 $(x -j show | jq -c '.vips[0] | [.allow, .deny]')"
tl_check at_the_limit_a_replaced_vip_has_its_new_list test "$(jq -r '.[0][0]' <<<"$L")" == 172.0.0.0/24
x apply "$TMP/full2.json" >/dev/null
tl_check at_the_limit_apply_replaces_every_vip test \
	"$(x -j show | jq -r '[.vips[] | "\(.allow[0])+\(.allow | length)"] | join(" ")')" == \
	"11.0.0.0/24+1024 11.4.0.0/24+1024 11.8.0.0/24+1024 11.12.0.0/24+1024 11.16.0.0/24+1024 11.20.0.0/24+1024 11.24.0.0/24+1024 11.28.0.0/24+1024"
tl_check at_the_limit_one_generation_each test \
	"$(trie | jq -c '[length, ([group_by(.key[4:24])[] | [.[].key[24]] | unique | length] | unique)]')" == '[8192,[1]]'
# 1024 prefixes move from 192.0.2.20 to 192.0.2.30, listed first.
jq --arg l "$(plist 1024 '172.%d.%d.0/24')" \
	'.vips = [{vip: "192.0.2.30:80/tcp", allow: ($l | split(","))}] + (.vips | .[0].allow = [])' \
	"$TMP/full2.json" >"$TMP/move.json"
x apply "$TMP/move.json" >/dev/null
tl_check at_the_limit_apply_shrinks_before_it_grows test \
	"$(x -j show | jq -r '[.vips[] | .allow | length] | join(" ")') $(trie | jq length)" == \
	"0 1024 1024 1024 1024 1024 1024 1024 1024 8192"

exit $TL_FAILED
