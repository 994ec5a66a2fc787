#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# xlb apply reads strict JSON, within bounds, and changes all or nothing:
#  - what RFC 8259 does not allow (comments, single quotes, trailing
#    commas, leading zeros, NaN, control characters, bad UTF-8 or escapes,
#    text after the value), a key twice in one object and a NUL in a
#    string are refused, naming the line and column (and for a key twice,
#    the object's path), and every map is left as it was;
#  - reading stops at the first count past its limit (VIPs, backends of a
#    VIP, values), so a 10 MB file of empty objects costs megabytes, not
#    gigabytes; running out of memory reads "out of memory", never a
#    syntax error;
#  - a file whose tables do not all fit in memory (a memory cgroup, an
#    address-space limit) or descriptors changes nothing.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached apply_strict aps || exit 1

# apply_bad NAME FRAGMENT JSON: apply of JSON fails naming FRAGMENT.
apply_bad() {
	printf '%s' "$3" >"$TMP/bad.json"
	fails_unchanged "$1" "$2" x apply "$TMP/bad.json"
}

cat >"$TMP/start.json" <<'EOF'
{"config": {"seed": "00112233445566778899aabbccddeeff", "src4": "198.51.100.1", "src6": "2001:db8:100::1"},
 "vips": [
  {"vip": "192.0.2.10:80/tcp", "backends": [{"addr": "198.51.100.11"}, {"addr": "198.51.100.12", "weight": 2}]},
  {"vip": "192.0.2.11:80/tcp", "table_size": 251, "backends": [{"addr": "198.51.100.21"}]}
 ]}
EOF
if ! x apply "$TMP/start.json"; then
	tl_fail apply_strict_setup "cannot apply the start state"
	exit 1
fi
every=$(jq -c .vips "$TMP/start.json")
v10='"vip":"192.0.2.10:80/tcp","backends":[{"addr":"198.51.100.11"},{"addr":"198.51.100.12","weight":2}]'
v11='"table_size":251,"backends":[{"addr":"198.51.100.21"}]'

# --- strict JSON ------------------------------------------------------------

# json-c kept the last of two keys: this deleted every VIP.
apply_bad apply_duplicate_key_vips "duplicate key \"vips\" at line 1, column $((10 + ${#every}))" \
	"{\"vips\":$every,\"vips\":[]}"
# ...and this renamed 192.0.2.11 to .12.
apply_bad apply_duplicate_key_vip "vips[1]: duplicate key \"vip\" at line 1, column" \
	"{\"vips\":[{$v10},{\"vip\":\"192.0.2.11:80/tcp\",\"vip\":\"192.0.2.12:80/tcp\",$v11}]}"
apply_bad apply_duplicate_key_spelt_otherwise "vips[1]: duplicate key \"v\\u0069p\"" \
	"{\"vips\":[{$v10},{\"vip\":\"192.0.2.11:80/tcp\",\"v\\u0069p\":\"192.0.2.12:80/tcp\",$v11}]}"
apply_bad apply_duplicate_key_addr "vips[1].backends[0]: duplicate key \"addr\"" \
	"{\"vips\":[{$v10},{\"vip\":\"192.0.2.11:80/tcp\",\"backends\":[{\"addr\":\"198.51.100.21\",\"addr\":\"198.51.100.22\"}]}]}"
apply_bad apply_duplicate_key_config "config: duplicate key \"udp_timeout\"" \
	'{"config":{"udp_timeout":30,"udp_timeout":60}}'
apply_bad apply_comment "syntax error at line 2, column 1: comments are not JSON" \
	$'{"config": {"udp_timeout": 30},\n/* every VIP */ "vips": []}'
apply_bad apply_single_quotes "line 1, column 2: single quotes are not JSON" \
	"{'config': {'udp_timeout': 30}}"
apply_bad apply_trailing_comma_object "syntax error at line 1, column 30, in config: trailing comma before '}'" \
	'{"config": {"udp_timeout": 30,}}'
apply_bad apply_trailing_comma_array "in vips: trailing comma before ']'" \
	"{\"vips\": [{$v10}, {\"vip\":\"192.0.2.11:80/tcp\",$v11},]}"
apply_bad apply_leading_zero "line 1, column 28, in config.udp_timeout: a number may not have a leading zero" \
	'{"config": {"udp_timeout": 030}}'
apply_bad apply_nan "in config.udp_timeout: NaN and Infinity are not JSON" \
	'{"config": {"udp_timeout": NaN}}'
apply_bad apply_control_character "line 1, column 31, in vips[0].vip: control character U+0009 in a string" \
	$'{"vips": [{"vip": "192.0.2.10:\t80/tcp"}]}'
apply_bad apply_invalid_utf8 "line 1, column 22, in config.src4: invalid UTF-8" \
	$'{"config": {"src4": "\xff198.51.100.1"}}'
apply_bad apply_bad_escape "line 1, column 22, in config.src4: bad escape '\\q'" \
	'{"config": {"src4": "\q"}}'
apply_bad apply_text_after_the_value "syntax error at line 2, column 1: text after the JSON value" \
	$'{"config": {"udp_timeout": 30}}\n{"vips": []}'
# json-c ended the string at the NUL: this read "192.0.2.10:80/tcp".
apply_bad apply_nul_in_a_string "line 1, column 35, in vips[0].vip: a string may not contain NUL (\\u0000)" \
	"{\"vips\":[{\"vip\":\"192.0.2.10:80/tcp\\u0000junk\",${v10#*tcp\",}},{\"vip\":\"192.0.2.11:80/tcp\",$v11}]}"

# --- bounded reading ----------------------------------------------------------

# xl LIMIT ARGS...: xlb ARGS in an address space of LIMIT bytes.
xl() { local as=$1; shift; tl_in "$NS" prlimit --as="$as" "$XLB" --pin-dir "$PIN" "$@"; }

# 10 MB of empty backend objects: json-c took 2.7 GB for them. Reading
# stops at the 4096th, in 512 MiB with room to spare.
{
	printf '{"vips":[{"vip":"192.0.2.10:80/tcp","backends":[{}'
	yes ',{}' | head -n 3333333 | tr -d '\n'
	printf ']}]}'
} >"$TMP/empty10m.json"
fails_unchanged apply_backends_past_the_limit_stop_reading \
	"vips[0].backends: at least 4096 backends: the limit is 4095 over all VIPs (line 1, column 12334)" \
	xl $((512 << 20)) apply "$TMP/empty10m.json"
# 256 VIPs of 4000 each: every array within its limit, a million values.
{
	printf '{"vips":['
	for i in $(seq 0 255); do
		printf '%s{"vip":"192.0.2.%d:%d/udp","backends":[{}' "$([[ $i -gt 0 ]] && echo ,)" $((i % 250 + 1)) $((1000 + i))
		yes ',{}' | head -n 3999 | tr -d '\n'
		printf ']}'
	done
	printf ']}'
} >"$TMP/values.json"
fails_unchanged apply_values_past_the_limit_stop_reading "more than 140256 values, more than a file within the limits holds" \
	xl $((512 << 20)) apply "$TMP/values.json"

# Within the limits but more than 40 MB of address space to parse (an
# unknown key is found after parsing): out of memory, not a syntax error.
{
	printf '{"vipz":[{}'
	yes ',{}' | head -n 69999 | tr -d '\n'
	printf ']}'
} >"$TMP/parse_oom.json"
fails_unchanged apply_out_of_memory_parsing_says_so "out of memory parsing" \
	xl $((40 << 20)) apply "$TMP/parse_oom.json"

# --- all or nothing -----------------------------------------------------------

# vips_file FILE N WEIGHT M M_LAST: N VIPs of one backend of WEIGHT, with
# tables of M slots but the last, of M_LAST.
vips_file() {
	local i m
	{
		printf '{"vips":['
		for i in $(seq 0 $(($2 - 1))); do
			m=$4
			[[ $i -eq $(($2 - 1)) ]] && m=$5
			printf '%s{"vip":"192.0.2.%d:%d/udp","table_size":%d,"backends":[{"addr":"198.51.100.%d","weight":%d}]}' \
				"$([[ $i -gt 0 ]] && echo ,)" $((i % 250 + 1)) $((1000 + i)) "$m" $((i % 250 + 1)) "$3"
		done
		printf ']}'
	} >"$1"
}
vips_file "$TMP/small.json" 255 1 3 3

# A memory cgroup of $1 bytes: its directory on stdout, removed at exit.
# Fails where none can be made (no memory controller, read-only).
memcg_make() {
	local cg limit
	if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		cg=/sys/fs/cgroup/xlbt$TL_TAG-aps limit=memory.max
		grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null ||
			echo +memory 2>/dev/null >/sys/fs/cgroup/cgroup.subtree_control ||
			return 1
	elif [[ -d /sys/fs/cgroup/memory ]]; then
		cg=/sys/fs/cgroup/memory/xlbt$TL_TAG-aps limit=memory.limit_in_bytes
	else
		return 1
	fi
	mkdir "$cg" 2>/dev/null || return 1
	if ! echo "$1" 2>/dev/null >"$cg/$limit"; then
		rmdir "$cg"
		return 1
	fi
	echo "$cg"
}

# Whether the memory cgroup $1 has killed a task (v2 memory.events,
# v1 memory.oom_control).
memcg_oom_kills() {
	local f
	for f in "$1/memory.events" "$1/memory.oom_control"; do
		[[ -r $f ]] && awk '$1 == "oom_kill" && $2 > 0 { found = 1 } END { exit !found }' "$f" &&
			return 0
	done
	return 1
}

# 256 tables of 1048573 slots, 8 MiB each, in a cgroup of 100 MB: the
# tables ran out after a dozen, and those were applied.
vips_file "$TMP/big.json" 256 1 1048573 1048573
if cg=$(memcg_make 100000000); then
	tl_on_exit "rmdir $cg"
	instance_dump >"$TMP/before"
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" \
		nsenter --net="/run/netns/$NS" "$XLB" --pin-dir "$PIN" apply "$TMP/big.json" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	instance_dump >"$TMP/after"
	if [[ $rc -eq 0 ]]; then
		tl_skip apply_out_of_memory_in_a_cgroup_changes_nothing "this kernel does not charge BPF maps to the memory cgroup"
	elif [[ $(wc -l <"$TMP/err") -eq 1 ]] && grep -q "out of memory for the table of .* nothing was changed" "$TMP/err" &&
	     cmp -s "$TMP/before" "$TMP/after"; then
		tl_pass apply_out_of_memory_in_a_cgroup_changes_nothing
	elif [[ $rc -eq 137 ]] && memcg_oom_kills "$cg" && cmp -s "$TMP/before" "$TMP/after"; then
		# A map that does not fit fails with ENOMEM, but when the
		# limit is reached by one of xlb's own page faults (its
		# scratch for the next table) the kernel kills it instead.
		# Which comes first depends on how the last table falls
		# against the limit; either way the change is all or nothing.
		echo "  the OOM killer ended xlb at a page fault of its own; nothing was changed"
		tl_pass apply_out_of_memory_in_a_cgroup_changes_nothing
	else
		tl_fail apply_out_of_memory_in_a_cgroup_changes_nothing \
			"rc $rc, '$(cat "$TMP/err")', VIPs now $(x -j show | jq '.vips | length')"
	fi
	x apply "$TMP/start.json"
else
	tl_skip apply_out_of_memory_in_a_cgroup_changes_nothing "cannot make a memory cgroup"
fi

# One descriptor per table until the first swap: a hard limit too low for
# them refuses the file whole, a low soft limit is raised.
fails_unchanged apply_out_of_descriptors_changes_nothing "Too many open files; nothing was changed" \
	tl_in "$NS" bash -c 'ulimit -n 64 && exec "$@"' sh "$XLB" --pin-dir "$PIN" apply "$TMP/small.json"
tl_in "$NS" bash -c 'ulimit -Sn 64 && exec "$@"' sh "$XLB" --pin-dir "$PIN" apply "$TMP/small.json"
tl_check apply_raises_a_low_soft_limit_of_descriptors \
	test "$(x -j show | jq '.vips | length')" -eq 255

# An address space that holds tables of 3 slots, but not one of 1048573
# (4 MiB to compute, 8 MiB mapped to fill): 255 VIPs reweighted and a new
# one, the last of the file, which ran out, with the 255 applied. The space needed is
# measured first, to 1 MiB, by applying the current state again (which
# reads and checks the same file but writes nothing).
lo=$((4 << 20)) hi=$((128 << 20))
while ((hi - lo > (1 << 20))); do
	mid=$(((lo + hi) / 2))
	if xl "$mid" apply "$TMP/small.json" >/dev/null 2>&1; then hi=$mid; else lo=$mid; fi
done
echo "  xlb apply of 255 VIPs needs $((hi >> 20)) MiB of address space"
vips_file "$TMP/last_big.json" 256 2 3 1048573
fails_unchanged apply_out_of_address_space_changes_nothing "out of memory for the table of 192.0.2.6:1255/udp (1048573 slots) after 255 of this change; nothing was changed" \
	xl $((hi + (4 << 20))) apply "$TMP/last_big.json"

exit $TL_FAILED
