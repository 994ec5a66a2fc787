# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The source-range tests' helpers (test_vip_src_cli.sh,
# test_vip_src_limits.sh), over loader_lib.sh's instance: sourced after
# loader_attached.
# shellcheck shell=bash

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
