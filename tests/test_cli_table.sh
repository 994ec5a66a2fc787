#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `xlb table` as users meet it (no root needed): the balance report, the
# dumped table and its independence of argument order, JSON, every
# algorithm, and one clear error line for each kind of bad input.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"

TMP=$(mktemp -d)
tl_on_exit "rm -rf '$TMP'"

# The slot column of the report, one number per backend.
slots() { awk '$1 == "backend" { on = 1; next } /^max\/mean/ { on = 0 } on { print $3 }'; }

test_report() {
	local out
	out=$("$XLB" table 192.0.2.1 192.0.2.2 198.51.100.7) || { tl_fail report "exit $?"; return; }
	# 65537 slots over 3: 21846, 21846, 21845 in some order.
	if [[ $(slots <<< "$out" | sort -n | tr '\n' ' ') == "21845 21846 21846 " ]] &&
	   grep -q '^maglev: 65537 slots, 3 backends$' <<< "$out" &&
	   grep -Eq '^max/mean +1\.0000[0-9]$' <<< "$out" &&
	   grep -q '^spread .*21845\.\.21846 slots$' <<< "$out"; then
		tl_pass report
	else
		tl_fail report; echo "$out"
	fi
}

# Weights 1:2:3:4 in 65537 slots: each within one slot of its exact share.
test_report_weights() {
	local out ok=1 i=0 s
	out=$("$XLB" table a:1 b:2 c:3 d:4)
	for s in $(slots <<< "$out"); do
		i=$((i + 1))
		awk -v s="$s" -v i="$i" \
			'BEGIN { d = s - 65537 * i / 10; exit !(d < 1 && d > -1) }' || ok=0
	done
	[[ $i -eq 4 ]] || ok=0
	[[ $ok -eq 1 ]] || echo "$out"
	tl_check report_weights test "$ok" -eq 1
}

test_dump() {
	local ok=1
	"$XLB" table --dump --table-size 251 a b:2 c:0 >"$TMP/d1" || ok=0
	"$XLB" table --dump --table-size 251 c:0 b:2 a >"$TMP/d2" || ok=0
	[[ $(wc -l < "$TMP/d1") -eq 251 ]] || { echo "  $(wc -l < "$TMP/d1") lines"; ok=0; }
	[[ -z $(grep -vx 'a\|b' "$TMP/d1") ]] || { echo "  an identity that is not a or b:2"; ok=0; }
	cmp -s "$TMP/d1" "$TMP/d2" || { echo "  argument order changed the table"; ok=0; }
	tl_check dump_is_the_table_whatever_the_order test "$ok" -eq 1
}

# The same spelling-independent identity: addresses are canonicalised.
test_dump_canonical() {
	"$XLB" table --dump --table-size 13 2001:db8::1 '[2001:db8::2]:2' >"$TMP/c1"
	"$XLB" table --dump --table-size 13 '[2001:DB8:0::2]:2' 2001:0db8::1 >"$TMP/c2"
	tl_check dump_canonical_addresses cmp -s "$TMP/c1" "$TMP/c2"
}

test_json() {
	local ok=1
	"$XLB" table -j --algo ring --vnodes 10 --table-size 1009 a b:3 >"$TMP/j1" || ok=0
	jq -e '.algo == "ring" and .table_size == 1009 and .vnodes == 10 and
	       .tokens == 40 and (.backends | length) == 2 and
	       ([.backends[].slots] | add) == 1009 and
	       .backends[1].fair_share == 0.75 and .max_mean >= 1 and
	       .min_load <= .max_load and (has("table") | not)' "$TMP/j1" >/dev/null || ok=0
	"$XLB" table --json --dump --table-size 13 a b >"$TMP/j2" || ok=0
	jq -e '(.table | length) == 13 and ([.table[] | select(. == "a")] | length) ==
	       (.backends[0].slots)' "$TMP/j2" >/dev/null || ok=0
	[[ $ok -eq 1 ]] || cat "$TMP/j1" "$TMP/j2"
	tl_check json test "$ok" -eq 1
}

test_every_algorithm() {
	local algo ok=1 sum
	for algo in maglev ring rendezvous jump modulo; do
		sum=$("$XLB" table --algo "$algo" --table-size 4099 --seed 7 a b c d:2 2>/dev/null |
		      slots | awk '{ n += $1 } END { print n }')
		[[ $sum == 4099 ]] || { echo "  $algo: slots add up to '$sum'"; ok=0; }
	done
	"$XLB" table --algo=jump a:1 b:2 2>"$TMP/note" >/dev/null
	grep -q 'jump ignores weights' "$TMP/note" || { echo "  no note on ignored weights"; ok=0; }
	tl_check every_algorithm test "$ok" -eq 1
}

test_seed() {
	local a b c
	a=$("$XLB" table --dump --table-size 101 a b c | md5sum)
	b=$("$XLB" table --dump --table-size 101 --seed 0 a b c | md5sum)
	c=$("$XLB" table --dump --table-size 101 --seed 99 a b c | md5sum)
	tl_check seed_zero_is_the_default_and_others_differ \
		test "$a" == "$b" -a "$a" != "$c"
}

test_help() {
	"$XLB" table help >"$TMP/help" 2>&1
	tl_check help grep -q '^Usage: xlb table' "$TMP/help"
}

# Each line: NAME|FRAGMENT of the error|arguments. Each must fail with one
# line on stderr containing FRAGMENT and nothing on stdout; with -j, one
# JSON error object on stdout and nothing on stderr.
BAD=(
	"no_backends|no backends given|"
	"not_prime|not prime (the next prime is 65537)|--table-size 65536 a b"
	"too_small|out of range 3..1048573|--table-size 2 a"
	"too_large|out of range 3..1048573|--table-size 1048583 a"
	"fewer_slots_than_backends|smaller than the number of backends (6)|--table-size 5 a b c d e f"
	"duplicate|'a' is given twice|a b a"
	"duplicate_address|'192.0.2.1' is given twice|192.0.2.1 192.0.2.1:3"
	"negative_weight|bad weight '-1': negative|a:-1"
	"weight_not_a_number|bad weight 'x': not a number|a:x"
	"weight_overflow|above the maximum 1000000|a:99999999999999999999"
	"weight_above_max|above the maximum 1000000|a:1000001"
	"all_weights_zero|every backend has weight 0|a:0 b:0"
	"unknown_algorithm|unknown algorithm 'foo'|--algo foo a"
	"unknown_option|unknown option '--bogus'|--bogus a"
	"missing_value|--table-size needs a value|a --table-size"
	"size_not_a_number|bad --table-size 'abc': not a number|--table-size abc a"
	"no_vnodes|bad --vnodes '0': out of range 1..|--algo ring --vnodes 0 a"
	"too_many_tokens|more than 4194304 tokens|--algo ring --vnodes 4194304 a:1000000 b:1"
	"bad_identity|neither an address nor a name|192.0.2.300"
	"seed_overflow|bad --seed '18446744073709551616': out of range 0..|--seed 18446744073709551616 a"
)

test_errors() {
	local line name fragment args out err rc
	for line in "${BAD[@]}"; do
		IFS='|' read -r name fragment args <<< "$line"
		# shellcheck disable=SC2086
		"$XLB" table $args >"$TMP/out" 2>"$TMP/err"
		rc=$?
		out=$(cat "$TMP/out") err=$(cat "$TMP/err")
		if [[ $rc -ne 0 && -z $out && $(wc -l <<< "$err") -eq 1 &&
		      $err == "xlb: "*"$fragment"* ]]; then
			tl_pass "error_$name"
		else
			tl_fail "error_$name" "exit $rc, stdout '$out', stderr '$err'"
		fi
		# shellcheck disable=SC2086
		"$XLB" -j table $args >"$TMP/out" 2>"$TMP/err"
		rc=$?
		if [[ $rc -ne 0 && ! -s $TMP/err ]] &&
		   jq -e --arg f "$fragment" '.error | contains($f)' "$TMP/out" >/dev/null; then
			tl_pass "error_json_$name"
		else
			tl_fail "error_json_$name" "exit $rc, stdout '$(cat "$TMP/out")', stderr '$(cat "$TMP/err")'"
		fi
	done
}

test_report
test_report_weights
test_dump
test_dump_canonical
test_json
test_every_algorithm
test_seed
test_help
test_errors
exit $TL_FAILED
