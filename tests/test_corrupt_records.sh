#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A record that cannot be right (written by hand, or by a bug) wedges
# nothing: a VIP of id 300 (out of range) left DIRTY, or two VIPs of one
# id, are named by `xlb show`, left alone by every other change, refused
# by the commands that would build on them, removed by `xlb vip del` and
# made anew by `xlb apply`.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached corrupt_records bad || exit 1

x config set src4 198.51.100.254
x vip add 192.0.2.10:80/tcp
x backend add 192.0.2.10:80/tcp 198.51.100.1
# quiet CMD...: CMD's notes (about the corrupt record) are not this test's.
quiet() { "$@" >/dev/null 2>&1; }

# write_vip A.B.C.D ID FLAGS: the record of A.B.C.D:80/tcp as a bug would.
write_vip() {
	local key value
	key="$(printf '%02x ' ${1//./ }) 00 00 00 00 00 00 00 00 00 00 00 00 00 50 06 04"
	value="$(printf '%02x %02x 00 00 ' $(($2 & 255)) $(($2 >> 8))) 01 00 01 00 $(printf '%02x' "$3") 00 00 00 00 00 00 00"
	bpftool map update pinned "$PIN/xlb_vips" key hex $key value hex $value
}

# Out of range, and left DIRTY: every change used to try to finish it.
write_vip 192.0.2.11 300 1
out=$(x show)
tl_check show_names_a_corrupt_record \
	grep -q '^vip 192.0.2.11:80/tcp corrupt: id 300 out of range 0..255' <<< "$out"
tl_check show_json_names_it test "$(x -j show | jq -r '.vips[] | select(.vip == "192.0.2.11:80/tcp") | .corrupt')" == "id 300 out of range 0..255"
tl_check other_changes_go_on quiet x vip add 192.0.2.12:80/tcp
tl_check other_backends_change quiet x backend add 192.0.2.10:80/tcp 198.51.100.2
tl_check stats_go_on quiet x stats
expect_error backend_of_a_corrupt_vip_is_refused "VIP 192.0.2.11:80/tcp is corrupt (id 300 out of range" \
	tl_in "$NS" sh -c "$XLB --pin-dir $PIN backend add 192.0.2.11:80/tcp 198.51.100.3 2>&1 >/dev/null | grep -v 'left alone' >&2; exit 1" &&
	tl_pass backend_of_a_corrupt_vip_is_refused
tl_check vip_del_removes_a_corrupt_record quiet x vip del 192.0.2.11:80/tcp
tl_check nothing_corrupt_is_left sh -c "! $XLB --pin-dir $PIN show | grep -q corrupt"

# One id held by two VIPs: neither can be trusted with the table.
id12=$(x -j show | jq '.vips[] | select(.vip == "192.0.2.12:80/tcp") | .id')
write_vip 192.0.2.13 "$id12" 0
tl_check a_shared_id_marks_both test "$(x show | grep -c "corrupt: id $id12 held by another VIP too")" -eq 2
x -j show | jq '.vips |= map(if .corrupt then {vip, backends: [{addr: "198.51.100.9"}]} else . end)' >"$TMP/repair.json"
tl_check apply_makes_corrupt_vips_anew quiet x apply "$TMP/repair.json"
out=$(x -j show)
tl_check repaired_vips_have_ids_of_their_own \
	test "$(jq '[.vips[].id] | unique | length' <<< "$out")" -eq "$(jq '.vips | length' <<< "$out")" -a \
	     "$(jq '[.vips[] | select(.corrupt)] | length' <<< "$out")" -eq 0 -a \
	     "$(jq -r '.vips[] | select(.vip == "192.0.2.13:80/tcp") | .backends[0].addr' <<< "$out")" == 198.51.100.9

exit $TL_FAILED
