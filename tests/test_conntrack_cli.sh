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

# A second device may not resize the table the first one runs on: the two
# would go their own ways. Refused, and the instance is as it was.
ip -n "$NS" link add v2 type veth peer name v3
ip -n "$NS" link set v2 up
ip -n "$NS" link set v3 up
expect_error resize_under_a_running_device_is_refused "is in use by program" \
	x attach v2 --mode generic --conntrack-size 8192 &&
	tl_check resize_under_a_running_device_changes_nothing \
		test "$(ct_map id) $(ct_map max_entries) $(x -j config show | jq .conntrack_size)" == "$id 2048 2048"
tl_check resize_refused_leaves_the_device_bare \
	sh -c "! nsenter --net=/run/netns/$NS xdp-loader status v2 2>&1 | grep -q xlb_xdp"

# A table the kernel cannot give (memory) changes nothing either: made
# before the old one is touched. A memory cgroup of 64 MiB stands for a
# machine under pressure (the kernel charges map memory to it).
# memcg_make: a memory cgroup limited to 64 MiB in $CG (its procs file in
# $CG_PROCS): cgroup v1's memory controller, else a cgroup2 hierarchy of
# the test's own with the memory controller.
memcg_make() {
	local v1=/sys/fs/cgroup/memory
	if [[ -d $v1 ]] && mkdir "$v1/xlbt-$TL_TAG" 2>/dev/null; then
		CG=$v1/xlbt-$TL_TAG
		tl_on_exit "rmdir $CG"
		echo $((64 << 20)) > "$CG/memory.limit_in_bytes" && CG_PROCS=$CG/cgroup.procs
		return
	fi
	mkdir -p "$TMP/cg2" && mount -t cgroup2 none "$TMP/cg2" 2>/dev/null || return 1
	tl_on_exit "umount $TMP/cg2"
	echo +memory > "$TMP/cg2/cgroup.subtree_control" 2>/dev/null &&
		mkdir "$TMP/cg2/xlbt-$TL_TAG" || return 1
	CG=$TMP/cg2/xlbt-$TL_TAG
	tl_on_exit "rmdir $CG"
	echo $((64 << 20)) > "$CG/memory.max" && CG_PROCS=$CG/cgroup.procs
}
CG_PROCS=
if memcg_make && [[ -n $CG_PROCS ]]; then
	x detach v0
	sh -c "echo \$\$ > $CG_PROCS && exec nsenter --net=/run/netns/$NS $XLB --pin-dir $PIN attach v0 --mode generic --conntrack-size 4194304" \
		>"$TMP/out" 2>"$TMP/err"
	rc=$?
	echo "  $(cat "$TMP/err")"
	tl_check attach_without_memory_fails_cleanly \
		test $rc -ne 0 -a "$(ct_map id) $(ct_map max_entries)" == "$id 2048"
	tl_check attach_without_memory_says_so grep -q 'Cannot allocate memory' "$TMP/err"
	tl_check attach_without_memory_leaves_a_working_instance x show
	tl_check attach_after_the_pressure_works x attach v0 --mode generic
else
	tl_skip_env attach_without_memory_fails_cleanly "no memory cgroup (v1 or v2) to limit the attach with"
fi

exit $TL_FAILED
