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

V=192.0.2.10:80/tcp
V6=[2001:db8::10]:443/tcp

vipj() { x -j show | jq -c --arg v "$1" ".vips[] | select(.vip == \$v)$2"; }
showline() { x show | awk -v v="$1" '$1 == "vip" && $2 == v'; }
trie() { bpftool -j map dump pinned "$PIN/xlb_src_ranges"; }
# vkey VIP: the key of an IPv4 VIP as bpftool prints its bytes.
vkey() {
	local addr=${1%%:*} rest=${1#*:} port proto out
	port=${rest%%/*} proto=${rest#*/}
	local -a b
	IFS=. read -ra b <<<"$addr"
	b+=(0 0 0 0 0 0 0 0 0 0 0 0 $((port >> 8)) $((port & 255))
	    $([[ $proto == tcp ]] && echo 6 || echo 17) 4)
	printf -v out '"0x%02x",' "${b[@]}"
	echo "[${out%,}]"
}
# look VIP (IPv4): one read of the instance, setting
#   L      the VIP's [allow, deny] as show -j has them
#   FP     its fingerprint
#   REC    its record's source-range flags: list and deny bits ("11":
#          an allow list, "10": a deny list only, "00": none, "-": no VIP)
#   GEN    the generation the record names (-1: none)
#   NAMED  the trie's entries of the VIP in that generation
#   BYGEN  the trie's entries of the VIP, GEN:COUNT,... (-: none)
#   TOTAL  the trie's entries of every VIP
# (bpftool's raw bytes: a trie key has the VIP key at 4-23 and the
# generation at 24; a VIP record its flags at 8.)
look() {
	x -j show >"$TMP/show.now"
	trie >"$TMP/trie.now"
	bpftool -j map dump pinned "$PIN/xlb_vips" >"$TMP/vips.now"
	read -r L FP REC GEN NAMED BYGEN TOTAL < <(jq -rn --arg v "$1" --argjson k "$(vkey "$1")" \
		--slurpfile s "$TMP/show.now" --slurpfile t "$TMP/trie.now" --slurpfile r "$TMP/vips.now" '
		def hex: ascii_downcase | ltrimstr("0x") | explode |
			reduce .[] as $c (0; . * 16 + (if $c >= 97 then $c - 87 else $c - 48 end));
		def bit($f; $n): ($f / $n | floor) % 2;
		(first($s[0].vips[] | select(.vip == $v)) // {allow: null, deny: null, fingerprint: "-"}) as $o |
		(first($r[0][] | select(.key == $k) | .value[8] | hex) // null) as $f |
		[$t[0][] | select(.key[4:24] == $k) | .key[24] | hex] as $g |
		(if $f == null or bit($f; 32) == 0 then -1 else bit($f; 128) end) as $gen |
		[([$o.allow, $o.deny] | tojson), $o.fingerprint,
		 (if $f == null then "-" else "\(bit($f; 32))\(bit($f; 64))" end), $gen,
		 ([$g[] | select(. == $gen)] | length),
		 ($g | group_by(.) | map("\(.[0]):\(length)") | join(",") | if . == "" then "-" else . end),
		 ($t[0] | length)] | join(" ")')
}
# verdicts VIP CLIENT...: per client "in" or "denied", the datapath's
# answer (`xlb lookup`); "none" when the address is no VIP's.
verdicts() {
	local vip=$1 c; shift
	for c in "$@"; do echo "$c:1000 $vip"; done |
		x -j lookup --batch --dev v0 |
		jq -r 'if .is_vip | not then "none" elif .reason == "drop_src_denied" then "denied" else "in" end' |
		paste -sd ' '
}
ranged_any() {
	bpftool -j map dump pinned "$PIN/xlb_vip_ranged" | jq '[.[0].value[] | select(. != "0x00")] | length > 0'
}
# snap: what a refused command must leave as it was: the trie (its count
# and entries, one a line), the VIP records, the VIP filter and its ranged
# bits, and show -j.
snap() {
	local m
	trie | jq -rc '"trie entries \(length)", (.[] | .formatted // {key, value})'
	for m in xlb_config xlb_vips xlb_tables xlb_vip_filter xlb_vip_addrs xlb_vip_ranged; do
		[[ -e $PIN/$m ]] && echo "map dump pinned $PIN/$m"
	done >"$TMP/snap.batch"
	bpftool batch file "$TMP/snap.batch" 2>&1
	x -j show
}
# baseline: snap, for the refusals that follow (refused) to compare with.
baseline() { snap >"$TMP/base"; }
# refused NAME FRAGMENT CMD...: CMD fails with one line naming FRAGMENT
# (expect_error) and snap is the baseline still. (A failure takes a new
# baseline, for the refusals after it.)
refused() {
	local name=$1 fragment=$2; shift 2
	if ! expect_error "$name" "$fragment" "$@"; then
		baseline
		return
	fi
	snap >"$TMP/after"
	if cmp -s "$TMP/base" "$TMP/after"; then
		tl_pass "$name"
	else
		tl_fail "$name" "changed: $(diff "$TMP/base" "$TMP/after" | head -5 | cut -c1-200)"
		baseline
	fi
}
# plist N FMT: N prefixes, FMT's two %d fields i/256 and i%256, i = 0..N-1.
plist() { seq 0 $(($1 - 1)) | awk -v f="$2" '{ printf("%s" f, (NR > 1 ? "," : ""), int($1 / 256), $1 % 256) }'; }

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
