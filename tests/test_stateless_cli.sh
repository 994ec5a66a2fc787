#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Stateless VIPs and their history as an operator sees them, on an
# instance of the test's own:
#  - `xlb vip add --mode stateless` makes a GUE VIP without per-flow
#    state; `--mode stateless --encap ipip`, and `--encap ipip` on a
#    stateless VIP, are refused with one line and change nothing, and so
#    is a file's stateless VIP with "encap": "ipip", before "mode" or after;
#  - after a backend is added, every slot that changed owner names its
#    previous owner, as of the change, and no other slot names any (the
#    model: `xlb table --dump` of the backends before and after); one
#    entry per previous owner and time, its slots one string of ranges;
#  - `xlb show -j` holds "mode" and "history", `xlb apply` of it changes
#    nothing, and the same file applied after the VIP is gone (a balancer
#    that joins later) gives the same history and fingerprint; a history
#    edited in the file is written as it says and changes the fingerprint;
#  - a previous owner that is deleted leaves the history, one drained
#    (weight 0) stays; an entry older than the history setting is cleared
#    by the next command;
#  - back to tracked and to stateless again, the VIP keeps its backends;
#  - bad histories in a file are refused with one line naming the entry,
#    and change nothing: a previous backend that is not one of the VIP's
#    (one outside the fleet, the VIP itself, the subnet's broadcast), a
#    time beyond the clock skew allowed (60 s), no slots, a slot beyond the
#    table or named twice (in one entry or two), an owner and time twice;
#    a drained (weight 0) previous backend and a time within the skew are
#    taken;
#  - two VIPs of 65,537 slots, a backend added to each: `xlb -j show |
#    xlb apply -` takes the thousands of runs of their histories and
#    changes nothing.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached stateless_cli slc || exit 1

V=192.0.2.10:80/tcp
A=198.51.100.11
B=198.51.100.12
C=198.51.100.13
D=198.51.100.14
M=31

vipj() { x -j show | jq -c ".vips[0]$1"; }
# The owner of every slot for the backends given, one per line.
model() { "$XLB" table --table-size $M --dump "$@"; }
# "slot prev" of every slot the history names, sorted.
named() {
	x -j show | jq -r '.vips[0].history[] | .prev as $p |
		.slots | split(",")[] | split("-") | map(tonumber) |
		range(.[0]; .[-1] + 1) | "\(.) \($p)"' | sort -n
}

x config set src4 198.51.100.1 >/dev/null
x vip add $V --mode stateless --table-size $M >/dev/null
tl_check stateless_implies_gue test "$(vipj .mode) $(vipj .encap)" == '"stateless" "gue"'
tl_check show_says_stateless grep -q "vip $V .* encap gue mode stateless" <(x show)
# The first backends in one change: no slot had an owner.
x -j show | jq ".vips[0].backends = [{\"addr\": \"$A\"}, {\"addr\": \"$B\"}, {\"addr\": \"$C\"}] | del(.vips[0].history)" >"$TMP/abc.json"
x apply "$TMP/abc.json" >/dev/null
tl_check no_history_before_a_change test "$(vipj .history)" == '[]'
tl_check the_table_is_the_model test "$(x -j show | jq -r '.vips[0].backends[] | "\(.addr) \(.slots)"' | sort | xargs)" == \
	"$(model $A $B $C | sort | uniq -c | awk '{print $2, $1}' | xargs)"

before=$(date +%s)
x backend add $V $D >/dev/null
after=$(date +%s)
paste -d' ' <(model $A $B $C) <(model $A $B $C $D) | awk '$1 != $2 { print NR - 1, $1 }' >"$TMP/want"
named >"$TMP/got"
tl_check changed_slots_name_their_previous_owner cmp -s "$TMP/want" "$TMP/got"
tl_check some_slots_changed test "$(wc -l <"$TMP/want")" -gt 3
tl_check one_entry_per_previous_owner test "$(vipj '.history | length')" -eq "$(cut -d' ' -f2 "$TMP/want" | sort -u | wc -l)"
since=$(vipj '.history[0].since')
tl_check entries_carry_the_change_time test "$since" -ge "$before" -a "$since" -le "$after"
tl_check show_prints_the_history test "$(x show | grep -c "^	previous .* since $since slots ")" -eq "$(vipj '.history | length')"

# Round trip, and a balancer that joins later.
x -j show >"$TMP/state.json"
fp=$(vipj .fingerprint)
instance_dump >"$TMP/before"
x apply "$TMP/state.json" >/dev/null
instance_dump >"$TMP/after"
tl_check apply_of_show_changes_nothing cmp -s "$TMP/before" "$TMP/after"
x vip del $V
x apply "$TMP/state.json" >/dev/null
tl_check a_later_balancer_gets_the_same_history test "$(named | md5sum)" == "$(md5sum <"$TMP/got")"
tl_check a_later_balancer_gets_the_same_fingerprint test "$(vipj .fingerprint)" == "$fp"
jq '.vips[0].history[0].since -= 1' "$TMP/state.json" >"$TMP/older.json"
x apply "$TMP/older.json" >/dev/null
tl_check apply_writes_the_history_given test "$(vipj '.history[0].since')" -eq $((since - 1))
tl_check the_fingerprint_covers_the_history test "$(vipj .fingerprint)" != "$fp"
x apply "$TMP/state.json" >/dev/null

# Drained stays, deleted goes.
prev=$(vipj '.history[0].prev' | tr -d '"')
x backend set $V $prev --weight 0 >/dev/null
tl_check a_drained_previous_owner_stays test "$(x -j show | jq --arg p "$prev" '[.vips[0].history[] | select(.prev == $p)] | length')" -ge 1
x backend del $V $prev >/dev/null
tl_check a_deleted_previous_owner_goes test "$(x -j show | jq --arg p "$prev" '[.vips[0].history[] | select(.prev == $p)] | length')" -eq 0

# Tracked and back: the backends stay, the history starts again.
x vip set $V --mode tracked >/dev/null
tl_check set_tracked test "$(vipj .mode) $(vipj .encap) $(vipj .history) $(vipj '.backends | length')" == '"tracked" "gue" null 3'
x vip set $V --mode stateless >/dev/null
tl_check set_stateless_again test "$(vipj .mode) $(vipj .history) $(vipj '.backends | length')" == '"stateless" [] 3'

# Expiry: an entry older than the setting goes with the next command.
x config set history 2 >/dev/null
x backend add $V $A >/dev/null
tl_check history_after_an_add test "$(vipj '.history | length')" -ge 1
sleep 3
tl_check show_does_not_write test "$(vipj '.history | length')" -ge 1
x config set udp-timeout 0 >/dev/null
tl_check expired_history_cleared_by_the_next_command test "$(vipj .history)" == '[]'
x config set history 0 >/dev/null
tl_check history_setting test "$(x -j config show | jq .history)" -eq 0

fails_unchanged stateless_ipip "stateless needs encap gue" x vip add 192.0.2.11:80/tcp --mode stateless --encap ipip
fails_unchanged set_ipip_on_stateless "stateless needs encap gue" x vip set $V --encap ipip
fails_unchanged bad_mode "not tracked or stateless" x vip add 192.0.2.11:80/tcp --mode stateful
fails_unchanged bad_history_setting "history" x config set history 604801
x backend add $V 198.51.100.15 >/dev/null
x -j show >"$TMP/state.json"
bad_file() {
	local name=$1 fragment=$2 filter=$3
	jq "$filter" "$TMP/state.json" >"$TMP/bad.json"
	fails_unchanged "$name" "$fragment" x apply "$TMP/bad.json"
}
bad_file file_history_on_tracked "only a stateless VIP" '.vips[0].mode = "tracked"'
# Refused whichever key comes first: "encap" before "mode" (as show
# writes them) and after.
bad_file_order() {
	local name=$1 order=$2 filter=$3
	jq "$filter" "$TMP/state.json" >"$TMP/bad.json"
	if [[ $(jq -c '[.vips[0] | keys_unsorted[] | select(. == "encap" or . == "mode")]' "$TMP/bad.json") != "$order" ]]; then
		tl_fail "$name" "the file's keys are not in the order $order"
		return
	fi
	fails_unchanged "$name" "stateless needs encap gue" x apply "$TMP/bad.json"
}
bad_file_order file_stateless_ipip_encap_first '["encap","mode"]' \
	'.vips[0] |= ({vip, encap: "ipip", mode: "stateless"} + del(.vip, .encap, .mode))'
bad_file_order file_stateless_ipip_encap_last '["mode","encap"]' \
	'.vips[0] |= ({vip, mode: "stateless", encap: "ipip"} + del(.vip, .encap, .mode))'
bad_file file_slot_beyond "within the table" ".vips[0].history[0].slots = \"0-$M\""
bad_file file_slot_twice "names a slot an earlier entry names" '.vips[0].history[1].slots = .vips[0].history[0].slots'
bad_file file_slot_twice_in_an_entry "names a slot twice" '.vips[0].history[0].slots = "1,1"'
bad_file file_slots_empty "names no slot" '.vips[0].history[0].slots = ""'
bad_file file_prev_not_a_backend "vips[0].history[0]: \"prev\" is not one of the VIP's backends (VIP $V)" \
	'.vips[0].history[0].prev = "198.51.100.99"'
bad_file file_prev_the_vip "vips[0].history[1]: \"prev\" is not one of the VIP's backends" \
	".vips[0].history[1].prev = \"${V%%:*}\""
bad_file file_prev_broadcast "\"prev\" is not one of the VIP's backends" '.vips[0].history[0].prev = "198.51.100.255"'
bad_file file_since_future "vips[0].history[0]: \"since\" is more than 60 s in the future" \
	".vips[0].history[0].since = $(($(date +%s) + 3600))"
bad_file file_owner_and_time_twice "vips[0].history[1]: the same previous backend and time twice" \
	'.vips[0].history[1] += (.vips[0].history[0] | {prev, since})'
# What a balancer could have written is taken, and written as it is.
good_file() {
	local name=$1 filter=$2
	jq "$filter" "$TMP/state.json" >"$TMP/good.json"
	if ! x apply "$TMP/good.json" >"$TMP/out" 2>&1; then
		tl_fail "$name" "refused: $(cat "$TMP/out")"
	else
		tl_check "$name" test "$(vipj '.history | sort')" == "$(jq -c '.vips[0].history | sort' "$TMP/good.json")"
	fi
	x apply "$TMP/state.json" >/dev/null
}
good_file file_prev_drained_listed_last '.vips[0].history[0].prev as $p | .vips[0].backends |=
	(map(select(.addr != $p)) + map(select(.addr == $p) | .weight = 0))'
good_file file_since_within_skew ".vips[0].history[0].since = $(($(date +%s) + 30))"
bad_file file_slots_descending "ascending" '.vips[0].history[0].slots = "5,2"'
bad_file file_slots_runs "must be a string" '.vips[0].history[0].slots = [[0, 0]]'
bad_file file_slots_spaces "ranges FIRST-LAST" '.vips[0].history[0].slots = "1, 2"'
bad_file file_bad_prev "must be an address" '.vips[0].history[0].prev = "nowhere"'
bad_file file_bad_since "Unix seconds" '.vips[0].history[0].since = -5'
bad_file file_extra_key "must be an object" '.vips[0].history[0].x = 1'
bad_file file_history_not_array "must be an array" '.vips[0].history = {}'

# Full-size tables: adding a backend scatters the moved slots over
# thousands of runs, each entry's slots still one JSON value.
x vip del $V
for v in 192.0.2.20:80/udp 192.0.2.21:80/udp; do
	x vip add $v --mode stateless >/dev/null
	for b in 11 12 13 14 15; do
		x backend add $v 198.51.100.$b >/dev/null
	done
	x backend add $v 198.51.100.16 >/dev/null
done
x -j show >"$TMP/big.json"
tl_check full_tables_scatter_their_history test "$(jq '[.vips[].history[].slots | split(",") | length] | add' "$TMP/big.json")" -gt 5000
instance_dump >"$TMP/before"
tl_check apply_of_show_takes_full_tables x apply - <"$TMP/big.json"
instance_dump >"$TMP/after"
tl_check apply_of_full_tables_changes_nothing cmp -s "$TMP/before" "$TMP/after"
tl_check fingerprints_equal test "$(x -j show | jq -c '[.vips[].fingerprint]')" == "$(jq -c '[.vips[].fingerprint]' "$TMP/big.json")"

exit $TL_FAILED
