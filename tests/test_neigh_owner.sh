#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The neighbour entries of backends' next hops (loader/instance/neigh.h):
# xlb never harms the host's neighbour tables, which every namespace of the
# host shares, and never touches an entry it did not make:
#  - 1,100 on-link IPv6 backends get 1,100 entries of xlb's (managed,
#    extern_learn, protocol 88), outside gc_thresh3's count: another
#    namespace can still add a neighbour and resolve one (ping6), and the
#    kernel logs no overflow;
#  - where xlb's entries count against gc_thresh3 (a kernel that drops
#    extern_learn, as its records say), an apply and a `backend add` that
#    need more than 3/4 of it are refused before any write, naming the
#    sysctl to raise, and the instance is unchanged; a smaller one is made;
#  - an entry the kernel learned, an operator's static `nud reachable` one,
#    an operator's managed one made before xlb's change, and one of xlb's
#    that the operator replaced: each stays as it was (state, flags,
#    address) once its backend is gone, and only xlb's own go;
#  - a backend behind an entry xlb left alone that then goes (aged out,
#    deleted) is not left unresolved: the checker (`xlb health run`) gives
#    its next hop an entry of xlb's within its next neighbour pass (10 s).
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

tl_require_root neigh_owner || exit 0
tl_bpffs
tl_netns NS own && tl_netns PEER ownp && tl_pin_dir PIN own || exit 1
TMP=$(mktemp -d)
tl_on_exit "rm -rf $TMP"
# The link 2001:db8:1::/64 and 198.51.100.0/24 between xlb's v0 and the
# peer's v1; no duplicate address detection, so the addresses are up now.
for ns in "$NS" "$PEER"; do
	tl_in "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
		net.ipv6.conf.default.accept_dad=0
done
ip -n "$NS" link add v0 type veth peer name v1 netns "$PEER" &&
ip -n "$NS" link set v0 up && ip -n "$PEER" link set v1 up &&
ip -n "$NS" addr add 2001:db8:1::1/64 dev v0 nodad &&
ip -n "$PEER" addr add 2001:db8:1::2/64 dev v1 nodad &&
# The peer also answers for M and R below: the kernel's periodic GC (at
# work once the host's table holds gc_thresh1 entries, xlb's 1,100
# included) deletes an entry that failed to resolve, whoever made it.
ip -n "$PEER" addr add 2001:db8:1::6/64 dev v1 nodad &&
ip -n "$PEER" addr add 2001:db8:1::7/64 dev v1 nodad &&
ip -n "$NS" addr add 198.51.100.1/24 dev v0 &&
ip -n "$PEER" addr add 198.51.100.2/24 dev v1 || exit 1
if ! x attach v0 --mode generic >/dev/null 2>"$TMP/err"; then
	tl_fail neigh_owner_setup "xlb attach: $(cat "$TMP/err")"
	exit 1
fi
tl_on_exit "tl_in $NS xdp-loader unload -a v0 >/dev/null 2>&1"
x config set src6 2001:db8:1::1 && x config set src4 198.51.100.1 || exit 1

VIP='[2001:db8:f::1]:80/tcp'
# backends FIRST COUNT: a state of VIP with backends 2001:db8:1::FIRST..,
# in hex (nobody holds them: their entries do not resolve, which is no
# matter here).
backends() {
	jq -n --argjson first "$1" --argjson n "$2" --arg vip "$VIP" \
		'{vips: [{vip: $vip, backends: [range($first; $first + $n) |
			{addr: ("2001:db8:1::" + (. | tostring))}]}]}'
}
# entries: xlb's entries on v0 (extern_learn, protocol 88).
entries() { tl_in "$NS" ip -6 neigh show dev v0 proto 88 | grep -c extern_learn; }
overflows() { dmesg 2>/dev/null | grep -c 'neighbor table overflow'; }

# ---- 1,100 backends, and another namespace still resolves ----------------
backends 1000 1100 >"$TMP/many.json"
over0=$(overflows)
start=$SECONDS
x apply "$TMP/many.json" >/dev/null 2>"$TMP/many.err"
rc=$?
echo "  apply of 1,100 backends: exit $rc in $((SECONDS - start)) s, $(entries) entries of xlb's"
tl_check apply_of_1100_backends_succeeds test "$rc" -eq 0
tl_check each_next_hop_gets_an_entry_of_xlbs test "$(entries)" -eq 1100
tl_check no_note_of_a_failure sh -c "! grep -q 'cannot keep\|no neighbour entry' '$TMP/many.err'"
tl_netns A othera && tl_netns B otherb || exit 1
ip -n "$A" link add va type veth peer name vb netns "$B" &&
ip -n "$A" link set va up && ip -n "$B" link set vb up &&
ip -n "$A" addr add 2001:db8:2::1/64 dev va nodad &&
ip -n "$B" addr add 2001:db8:2::2/64 dev vb nodad || exit 1
tl_check another_namespace_adds_a_neighbour \
	ip -n "$A" neigh add 2001:db8:2::99 dev va lladdr 02:00:00:00:00:99 nud reachable
tl_check another_namespace_resolves_a_neighbour \
	tl_in "$A" ping -6 -q -c 1 -W 2 2001:db8:2::2 >/dev/null
tl_check kernel_logs_no_overflow test "$(overflows)" -eq "$over0"


# ---- where xlb's entries count: refused before any write -----------------
# What a kernel that drops extern_learn leaves: the entry of
# 2001:db8:1::1000 managed with protocol 88 only, and its record saying
# that those were the marks read back (managed, protocol, read: 0x0d).
tl_in "$NS" ip -6 neigh replace 2001:db8:1::1000 dev v0 managed protocol 88
key=$(bpftool -j map dump pinned "$PIN/xlb_neigh" | jq -r '.[] |
	select(.key[0:16] == ["0x20","0x01","0x0d","0xb8","0x00","0x01",
		"0x00","0x00","0x00","0x00","0x00","0x00","0x00","0x00","0x10","0x00"]) |
	.key | join(" ")')
bpftool map update pinned "$PIN/xlb_neigh" key $key value 0x0d 0 0 0 ||
	tl_fail counted_setup "cannot rewrite the record of 2001:db8:1::1000"
# 800 more need 800 entries that count: past 3/4 of gc_thresh3 (1024).
jq '.vips[0].backends += [range(0; 800) | {addr: ("2001:db8:1::3" + (. | tostring))}]' \
	"$TMP/many.json" >"$TMP/more800.json"
# The link carries neighbour discovery meanwhile, which the counters see.
DUMP_COUNTERS=0 fails_unchanged apply_refused_when_its_entries_would_count \
	"raise net.ipv6.neigh.default.gc_thresh3" x apply "$TMP/more800.json"
tl_check refused_apply_made_no_entry test "$(tl_in "$NS" ip -6 neigh show dev v0 | grep -c '^2001:db8:1::3')" -eq 0
jq '.vips[0].backends += [range(0; 10) | {addr: ("2001:db8:1::3" + (. | tostring))}]' \
	"$TMP/many.json" >"$TMP/more10.json"
x apply "$TMP/more10.json" >/dev/null 2>"$TMP/more10.err"
rc=$?
grep -v "is INCOMPLETE" "$TMP/more10.err" | head -3 | sed "s/^/  /"
# The entry of ::1000 counts for the kernel's gc (no extern_learn), in a
# table past gc_thresh2: on a slow machine it is reclaimed before this
# apply, which then makes it again, as an entry of xlb's like any other.
n=$(entries)
want=$((1099 + 10))
remade=$(tl_in "$NS" ip -6 neigh show dev v0 proto 88 | grep -c '^2001:db8:1::1000 .*extern_learn')
want=$((want + remade))
echo "  apply of 10 more: exit $rc, $n entries of xlb's ($want wanted; ::1000 made again: $remade)"
tl_check apply_within_the_share_is_made test $rc -eq 0 -a "$n" -eq "$want"

# ---- entries xlb did not make stay as they were --------------------------
K=2001:db8:1::2		# the peer's: learned by the kernel from a ping
S=2001:db8:1::5		# the operator's, static: nud reachable
M=2001:db8:1::6		# the operator's, managed before xlb's change
R=2001:db8:1::7		# xlb's, then replaced by the operator
X=2001:db8:1::8		# xlb's
tl_in "$NS" ping -6 -c 1 -W 2 "$K" >/dev/null
tl_in "$NS" ip -6 neigh replace "$S" dev v0 lladdr 02:00:00:00:00:05 nud reachable
tl_in "$NS" ip -6 neigh replace "$M" dev v0 managed
# entry ADDR: its entry on v0 in detail, but for its state, which ages
# (REACHABLE, STALE, ...) whoever owns it.
entry() {
	tl_in "$NS" ip -d -6 neigh show "$1" dev v0 |
		sed -E 's/ (INCOMPLETE|REACHABLE|STALE|DELAY|PROBE|FAILED|NONE)//'
}
for a in K S M; do entry "${!a}" >"$TMP/$a.before"; done
jq -n --arg vip "$VIP" --arg k "$K" --arg s "$S" --arg m "$M" --arg r "$R" --arg x "$X" \
	'{vips: [{vip: $vip, backends: [$k, $s, $m, $r, $x] | map({addr: .})}]}' >"$TMP/five.json"
x apply "$TMP/five.json" 2>/dev/null
tl_check only_next_hops_without_an_entry_get_one test "$(entries)" -eq 2
tl_in "$NS" ip -6 neigh replace "$R" dev v0 managed
entry "$R" >"$TMP/R.before"
x apply <(jq -n --arg vip "$VIP" '{vips: [{vip: $vip}]}') 2>/dev/null
for a in K S M R; do
	entry "${!a}" >"$TMP/$a.after"
	echo "  $a: $(cat "$TMP/$a.after")"
	tl_check "${a}_entry_stays_as_it_was" sh -c "test -s '$TMP/$a.after' && cmp -s '$TMP/$a.before' '$TMP/$a.after'"
done
tl_check xlbs_own_entry_goes_with_its_backend test -z "$(entry "$X")"
tl_check no_entry_of_xlbs_is_left test "$(entries)" -eq 0

# ---- the checker makes an entry where the kernel's went ------------------
tl_in "$NS" ping -6 -c 1 -W 2 "$K" >/dev/null
x apply <(jq -n --arg vip "$VIP" --arg k "$K" '{vips: [{vip: $vip, backends: [{addr: $k}]}]}') 2>/dev/null
tl_check a_learned_entry_is_left_to_the_kernel test "$(entries)" -eq 0
tl_in "$NS" "$XLB" --pin-dir "$PIN" health run --obj "$BUILD/hc.bpf.o" \
	>"$TMP/checker.out" 2>&1 &
checker=$!
tl_on_exit "kill -9 $checker 2>/dev/null"
sleep 1
# As the kernel ages it out once unused.
tl_in "$NS" ip -6 neigh del "$K" dev v0
for ((i = 0; i < 130; i++)); do
	[[ $(entries) -eq 1 ]] && break
	sleep 0.1
done
tl_check checker_makes_an_entry_where_the_kernels_went test "$(entries)" -eq 1
kill -TERM "$checker" 2>/dev/null
wait "$checker" 2>/dev/null
exit $TL_FAILED
