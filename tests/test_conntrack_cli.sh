#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The connection table's settings on the command line: `xlb attach
# --conntrack-size` sizes the table and keeps the setting, `xlb config set
# conntrack-size` applies from the next attach (the table is made anew
# only when its size changes), bad sizes and timeouts are refused and
# change nothing, and `xlb show` reports the table.
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

tl_require_root conntrack_cli || exit 0
loader_setup ctc || { tl_fail conntrack_cli_setup "cannot create namespaces or a pin dir"; exit 1; }
tl_on_exit "tl_in $NS xdp-loader unload -a v0"

# ct_map FIELD: a field of the pinned connection table (bpftool's JSON).
ct_map() { bpftool -j map show pinned "$PIN/xlb_conntrack" | jq -r ".$1"; }

if ! x attach v0 --mode generic --conntrack-size 4096 >/dev/null 2>"$TMP/attach.err"; then
	tl_fail attach_with_conntrack_size "$(cat "$TMP/attach.err")"
	exit 1
fi
tl_check attach_sizes_the_table test "$(ct_map max_entries)" -eq 4096
tl_check attach_keeps_the_size_setting test "$(x -j config show | jq .conntrack_size)" -eq 4096
tl_check show_reports_the_table grep -qx 'conntrack size 4096 entries 0 live 0' <(x show)

x -j config show >"$TMP/config.before"
expect_error size_below_minimum_is_refused "bad conntrack-size '100': too small" \
	x config set conntrack-size 100 && tl_pass size_below_minimum_is_refused
expect_error size_above_maximum_is_refused "bad conntrack-size '67108865'" \
	x config set conntrack-size 67108865 && tl_pass size_above_maximum_is_refused
expect_error negative_closing_timeout_is_refused "bad tcp-closing-timeout '-1': negative" \
	x config set tcp-closing-timeout -1 && tl_pass negative_closing_timeout_is_refused
expect_error bad_attach_size_is_refused "bad --conntrack-size 'lots'" \
	x attach v0 --conntrack-size lots && tl_pass bad_attach_size_is_refused
x -j config show >"$TMP/config.after"
tl_check refused_settings_change_nothing cmp -s "$TMP/config.before" "$TMP/config.after"

x config set tcp-closing-timeout 5 conntrack-size 2048 2>"$TMP/set.err"
tl_check set_size_says_when_it_applies grep -q 'conntrack-size applies from the next `xlb attach`' "$TMP/set.err"
tl_check closing_timeout_is_set test "$(x -j config show | jq .tcp_closing_timeout)" -eq 5
tl_check set_size_leaves_the_live_table test "$(ct_map max_entries)" -eq 4096

x detach v0
x attach v0 --mode generic >/dev/null 2>"$TMP/reattach.err"
tl_check attach_resizes_the_table test "$(ct_map max_entries)" -eq 2048
tl_check attach_says_the_table_was_made_anew \
	grep -q 'connection table resized from 4096 to 2048 entries' "$TMP/reattach.err"

id=$(ct_map id)
x detach v0
x attach v0 --mode generic >/dev/null 2>"$TMP/again.err"
tl_check attach_keeps_a_table_of_the_right_size test "$(ct_map id)" -eq "$id"
tl_check attach_keeping_the_table_says_nothing_of_it \
	sh -c "! grep -q resized $TMP/again.err"

exit $TL_FAILED
