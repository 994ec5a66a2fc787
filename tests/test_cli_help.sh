#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Help wherever a user may ask for it: `xlb help`, then every object and
# every verb that `xlb help` and the objects' usage lines list, each with
# -h, --help and help, print their usage and exit 0 without touching an
# instance. A bad option gets one error line (one JSON object under -j)
# and exit 1. `xlb version` names xlb, libbpf and libxdp.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"

TMP=$(mktemp -d)
tl_on_exit "rm -rf '$TMP'"
# A pin dir that does not exist: help must not need an instance.
NOWHERE=$TMP/no-instance

objects() { "$XLB" help | awk '/^OBJECT:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'; }

# The verbs an object's usage names: "xlb OBJECT VERB ..." lines.
verbs() {
	"$XLB" "$1" help | grep -oE "xlb $1 [a-z][a-z-]*" | awk '{ print $3 }' |
		grep -vx help | sort -u
}

# help_of NAME ARGS...: ARGS ask for help; it must print a usage and exit 0.
help_of() {
	local name=$1 rc
	shift
	"$XLB" --pin-dir "$NOWHERE" "$@" > "$TMP/out" 2> "$TMP/err"
	rc=$?
	if [[ $rc -eq 0 ]] && grep -q '^Usage: xlb' "$TMP/out" && [[ ! -s $TMP/err ]]; then
		return 0
	fi
	echo "  \`xlb $*\`: exit $rc, stdout '$(head -c 200 "$TMP/out")', stderr '$(cat "$TMP/err")'"
	return 1
}

# bad_option NAME ARGS...: ARGS hold an unknown option.
bad_option() {
	local rc lines
	"$XLB" --pin-dir "$NOWHERE" "$@" > "$TMP/out" 2> "$TMP/err"
	rc=$?
	lines=$(wc -l < "$TMP/err")
	if [[ $rc -ne 1 || $lines -ne 1 || -s $TMP/out ]] ||
	   ! grep -q "unknown option '--no-such-option'" "$TMP/err"; then
		echo "  \`xlb $*\`: exit $rc, $lines stderr lines: $(cat "$TMP/err")"
		return 1
	fi
	"$XLB" -j --pin-dir "$NOWHERE" "$@" > "$TMP/out" 2> "$TMP/err"
	rc=$?
	if [[ $rc -ne 1 || -s $TMP/err || $(wc -l < "$TMP/out") -ne 1 ]] ||
	   ! jq -e '.error | test("unknown option")' "$TMP/out" > /dev/null; then
		echo "  \`xlb -j $*\`: exit $rc, stdout '$(cat "$TMP/out")'"
		return 1
	fi
}

test_top_level_help() {
	local ok=1 a
	for a in help -h --help; do
		help_of top "$a" || ok=0
	done
	[[ $(objects | wc -l) -ge 11 ]] || { echo "  objects: $(objects | tr '\n' ' ')"; ok=0; }
	tl_check top_level_help test "$ok" -eq 1
}

test_every_object_help() {
	local ok=1 o a
	for o in $(objects); do
		for a in help -h --help; do
			help_of "$o" "$o" "$a" || ok=0
		done
	done
	tl_check every_object_help test "$ok" -eq 1
}

test_every_verb_help() {
	local ok=1 n=0 o v a
	for o in $(objects); do
		for v in $(verbs "$o"); do
			[[ $v == "$o" ]] && continue
			n=$((n + 1))
			for a in -h --help help; do
				help_of "$o $v" "$o" "$v" "$a" || ok=0
			done
			# -h after other arguments too.
			help_of "$o $v" "$o" "$v" 192.0.2.1:80/tcp -h || ok=0
		done
	done
	# vip: add, del; backend: add, set, del; config: set, show.
	[[ $n -ge 7 ]] || { echo "  only $n verbs found"; ok=0; }
	tl_check every_verb_help test "$ok" -eq 1
}

test_bad_options_one_line() {
	local ok=1 o v
	for o in $(objects); do
		if [[ -n $(verbs "$o" | grep -vx "$o") ]]; then
			for v in $(verbs "$o" | grep -vx "$o"); do
				bad_option "$o" "$v" --no-such-option || ok=0
			done
		else
			bad_option "$o" --no-such-option || ok=0
		fi
	done
	tl_check bad_options_one_line test "$ok" -eq 1
}

test_version() {
	local out ok=1
	out=$("$XLB" version) || ok=0
	grep -Eq '^xlb [^ ]+$' <<< "$out" || ok=0
	grep -Eq '^libbpf [0-9]+\.[0-9]+' <<< "$out" || ok=0
	grep -Eq '^libxdp ([0-9]+\.[0-9]+|static)' <<< "$out" || ok=0
	"$XLB" -j version | jq -e '.xlb and .libbpf and .libxdp' > /dev/null || ok=0
	[[ $ok -eq 1 ]] || echo "  $out"
	tl_check version test "$ok" -eq 1
}

test_top_level_help
test_every_object_help
test_every_verb_help
test_bad_options_one_line
test_version
