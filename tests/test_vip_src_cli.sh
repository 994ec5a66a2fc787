#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A VIP's source ranges (--allow and --deny) as an operator sees them, on an
# instance of the test's own, `xlb lookup` giving the datapath's answers:
#  - `xlb vip add|set VIP --allow P,P --deny P` takes comma-separated
#    prefixes of the VIP's family (ADDR/LEN, a bare ADDR is a host,
#    0.0.0.0/0 and ::/0 too, bogons such as 0.0.0.0/8 as well); `xlb
#    show` prints " allow P,P deny P" on the VIP's line, `xlb show -j` has
#    "allow" and "deny" arrays, [] when empty; the client's longest match
#    decides: one in the allow list gets in, one in the deny list or
#    outside an allow list is dropped as drop_src_denied, and an allowed
#    prefix inside a denied one inside an allowed one is an exception to
#    an exception;
#  - `vip set` replaces only the list it is given; --allow any empties the
#    allow list, --deny none the deny list; with both empty the VIP is as
#    it was without them: in show, in its record, in the trie and in its
#    fingerprint;
#  - the fingerprint changes with the lists and comes back with them;
#  - the entries live in the pinned LPM trie xlb_src_ranges under one
#    generation, the one the VIP's record names; a change writes the
#    other generation and deletes the old one; `vip del` deletes the VIP's
#    entries, and a VIP added again under its key has no lists;
#  - a VIP rebuilt under a new id (--mode stateless, a table size changed
#    by `xlb apply`) keeps its lists;
#  - `xlb stats` has drop_src_denied on each VIP's line, in -j and as
#    xlb_vip_drop_src_denied_total in --prometheus;
#  - `xlb apply` takes "allow" and "deny" arrays (absent: empty): `xlb show
#    -j | xlb apply -` changes nothing, a file changes the lists and adds a
#    VIP with its lists; the entries of a VIP it leaves out are gone with
#    it;
#  - bad input is refused with one line and changes nothing (show -j, the
#    trie, the VIP records and filter): a malformed prefix, a length too
#    long, host bits set, the other family, a prefix inside another of its
#    list with nothing of the other list between them, one given twice, one both allowed and denied, an empty item, an
#    empty argument, more than 1024 prefixes on a VIP (more than 8192 in
#    all: test_vip_src_limits.sh); a refused `vip add` adds no VIP;
#  - a `vip set --allow` killed after any of its map writes leaves the
#    VIP's record naming a generation that holds exactly the old lists or
#    exactly the new ones, the datapath applying the old lists or the new;
#    two commands later the trie holds that generation's entries only and
#    the datapath applies the lists show gives;
#  - a `vip add` with lists killed after any of its map writes never lets
#    in a client its lists do not: the VIP is absent, has its lists, or is
#    closed (every client denied: show, -j and the fingerprint say
#    "deny 0.0.0.0/0 (closed", show -j applied back and `--allow any` keep
#    it so) until `vip set` gives it its lists.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached vip_src_cli vsc || exit 1

. "$(dirname "$0")/lib/src_lib.sh"

x config set src4 198.51.100.1 >/dev/null
x vip add $V >/dev/null
x backend add $V 198.51.100.11 >/dev/null

# ---- no lists ----
look $V
fp0=$FP
tl_check json_lists_present_and_empty test "$L" == '[[],[]]'
tl_check no_lists_no_record_flags_no_entries test "$REC $BYGEN $TOTAL" == "00 - 0"
tl_check show_without_lists_says_nothing test -z "$(showline $V | grep -E ' (allow|deny) ')"
tl_check no_lists_everyone_in test "$(verdicts $V 203.0.113.7 10.1.2.3)" == "in in"

# ---- set: show, record, trie, fingerprint, datapath ----
x vip set $V --allow 10.0.0.0/8,192.168.1.5 --deny 10.1.0.0/16 >/dev/null
look $V
fp1=$FP gen1=$GEN
tl_check json_lists test "$L" == '[["10.0.0.0/8","192.168.1.5"],["10.1.0.0/16"]]'
tl_check show_text_lists grep -qF " allow 10.0.0.0/8,192.168.1.5 deny 10.1.0.0/16" <(showline $V)
tl_check record_has_an_allow_list test "$REC" == 11
tl_check entries_in_the_named_generation_only test "$BYGEN $NAMED" == "$gen1:3 3"
tl_check ranged_bit_set test "$(ranged_any)" == true
tl_check fingerprint_changes_with_lists test "$fp1" != "$fp0"
tl_check datapath_applies_lists test \
	"$(verdicts $V 10.2.3.4 192.168.1.5 10.1.2.3 192.168.1.6 203.0.113.7)" == "in in denied denied denied"

x vip set $V --deny 10.2.0.0/16,10.3.0.0/16 >/dev/null
look $V
tl_check set_deny_keeps_allow test "$L" == '[["10.0.0.0/8","192.168.1.5"],["10.2.0.0/16","10.3.0.0/16"]]'
tl_check change_flips_the_generation test "$GEN $BYGEN" == "$((1 - gen1)) $((1 - gen1)):4"
tl_check fingerprint_changes_again test "$FP" != "$fp1" -a "$FP" != "$fp0"
tl_check datapath_follows test "$(verdicts $V 10.1.2.3 10.2.3.4)" == "in denied"
x vip set $V --deny 10.1.0.0/16 >/dev/null
look $V
tl_check fingerprint_comes_back_with_the_lists test "$FP" == "$fp1"

x vip set $V --allow any >/dev/null
look $V
tl_check allow_any_keeps_deny test "$L $REC $NAMED" == '[[],["10.1.0.0/16"]] 10 1'
tl_check show_deny_only grep -qE " fingerprint [0-9a-f]+ deny 10.1.0.0/16( |$)" <(showline $V)
tl_check deny_only_lets_others_in test "$(verdicts $V 203.0.113.7 10.1.2.3)" == "in denied"
x vip set $V --deny none >/dev/null
look $V
tl_check both_empty_as_before test "$L $REC $BYGEN $TOTAL" == '[[],[]] 00 - 0'
tl_check both_empty_fingerprint_as_before test "$FP" == "$fp0"
tl_check both_empty_ranged_bit_cleared test "$(ranged_any)" == false
tl_check both_empty_show_says_nothing test -z "$(showline $V | grep -E ' (allow|deny) ')"
tl_check both_empty_everyone_in test "$(verdicts $V 203.0.113.7 10.1.2.3)" == "in in"

x vip set $V --allow 0.0.0.0/0 --deny 10.1.0.0/16 >/dev/null
tl_check default_route_accepted test "$(vipj $V '| [.allow, .deny]')" == '[["0.0.0.0/0"],["10.1.0.0/16"]]'
tl_check default_route_with_an_exception test "$(verdicts $V 203.0.113.7 10.1.2.3)" == "in denied"

x vip set $V --allow 10.0.0.0/8,10.1.2.0/24 --deny 10.1.0.0/16,0.0.0.0/8,224.0.0.0/3 >/dev/null
tl_check exception_to_an_exception_and_bogons test "$(vipj $V '| [.allow, .deny]')" == \
	'[["10.0.0.0/8","10.1.2.0/24"],["0.0.0.0/8","10.1.0.0/16","224.0.0.0/3"]]'
tl_check exception_to_an_exception_decides test "$(verdicts $V 10.2.0.1 10.1.3.1 10.1.2.1)" == "in denied in"

x vip add "$V6" --allow ::/0 --deny 2001:db8:bad::/48,2001:db8::5 >/dev/null
tl_check ipv6_lists test "$(vipj "$V6" '| [.allow, .deny]')" == '[["::/0"],["2001:db8::5","2001:db8:bad::/48"]]'
tl_check ipv6_show_text grep -qF " allow ::/0 deny 2001:db8::5,2001:db8:bad::/48" <(showline "$V6")

# ---- refused on the command line, nothing changed ----
x vip set $V --allow 10.0.0.0/8,192.168.1.5 --deny 10.1.0.0/16 >/dev/null
baseline
refused malformed_prefix "'foo': not an IPv4 or IPv6" x vip set $V --allow 10.0.0.0/8,foo
refused length_too_long "prefix length must be 0..32" x vip set $V --deny 10.0.0.0/33
refused ipv6_length_too_long "prefix length must be 0..128" x vip set "$V6" --deny 2001:db8::/129
refused host_bits_set "host bits set" x vip set $V --allow 10.0.0.1/8
refused ipv6_prefix_on_ipv4_vip "not an IPv4 prefix" x vip set $V --allow 2001:db8::/32
refused ipv4_prefix_on_ipv6_vip "not an IPv6 prefix" x vip set "$V6" --deny 10.0.0.0/8
refused overlap_in_allow "10.0.0.0/16 overlaps 10.0.0.0/8 in the allow list" \
	x vip set $V --allow 10.0.0.0/8,10.0.0.0/16
refused overlap_in_deny "10.1.2.0/24 overlaps 10.1.0.0/16 in the deny list" \
	x vip set $V --deny 10.1.0.0/16,10.1.2.0/24
refused given_twice "10.0.0.0/8 is given twice" x vip set $V --allow 10.0.0.0/8,10.0.0.0/8
refused host_given_twice "192.168.1.5 is given twice" x vip set $V --allow 192.168.1.5,192.168.1.5/32
refused allowed_and_denied "10.1.0.0/16 is both allowed and denied" x vip set $V --allow 10.1.0.0/16
refused allowed_and_denied_with_the_kept_list "10.0.0.0/8 is both allowed and denied" \
	x vip set $V --deny 10.0.0.0/8
refused empty_item "an empty prefix between commas" x vip set $V --allow 10.0.0.0/8,,10.3.0.0/16
refused trailing_comma "an empty prefix between commas" x vip set $V --deny 10.1.0.0/16,
refused empty_allow "no prefix (to empty the list: any)" x vip set $V --allow ''
refused empty_deny "no prefix (to empty the list: none)" x vip set $V --deny ''
refused over_1024_on_a_vip "more than 1024 prefixes" x vip set $V --allow "$(plist 1025 '11.%d.%d.0/24')"
refused vip_add_overlap_adds_nothing "overlaps 10.0.0.0/8" \
	x vip add 192.0.2.11:80/tcp --allow 10.0.0.0/8,10.1.0.0/16
refused vip_add_wrong_family_adds_nothing "not an IPv4 prefix" x vip add 192.0.2.11:80/tcp --deny ::/0
x vip set $V --deny none >/dev/null
x vip set $V --allow "$(plist 1024 '11.%d.%d.0/24')" >/dev/null
look $V
tl_check a_vip_takes_1024 test "$NAMED" -eq 1024
baseline
refused over_1024_counts_both_lists "more than 1024 prefixes" x vip set $V --deny 12.0.0.0/8
# One command that replaces a list and empties the other counts what it
# leaves: 1024 deny prefixes for 1024 allow ones.
x vip set $V --deny "$(plist 1024 '12.%d.%d.0/24')" --allow any >/dev/null
look $V
tl_check a_list_replaced_for_the_other_in_one_command test "$NAMED" -eq 1024
x vip set $V --deny none --allow "$(plist 1024 '11.%d.%d.0/24')" >/dev/null
look $V
tl_check the_other_list_replaced_back_in_one_command test "$NAMED" -eq 1024

# ---- stats ----
tl_check stats_text_drop_src_denied grep -qE "^vip $V .*drop_src_denied [0-9]+" <(x stats)
tl_check stats_json_drop_src_denied test "$(x -j stats |
	jq --arg v $V '.vips[] | select(.vip == $v) | .drop_src_denied.packets')" -ge 0
tl_check stats_prometheus_drop_src_denied \
	grep -qE "^xlb_vip_drop_src_denied_total\{vip=\"$V\"\} [0-9]+$" <(x stats --prometheus)
tl_check stats_prometheus_ipv6_vip grep -qF "xlb_vip_drop_src_denied_total{vip=\"$V6\"} " <(x stats --prometheus)

# ---- apply ----
x vip set $V --allow 10.0.0.0/8,192.168.1.5 --deny 10.1.0.0/16 >/dev/null
look $V
fpa=$FP
x -j show >"$TMP/show.json"
baseline
x apply "$TMP/show.json" >/dev/null
snap >"$TMP/after"
tl_check apply_of_show_changes_nothing cmp -s "$TMP/base" "$TMP/after"
# edit EDIT NAME: $TMP/NAME.json, the show with EDIT made to V's object.
edit() { jq "(.vips[] | select(.vip == \"$V\")) |= ($1)" "$TMP/show.json" >"$TMP/$2.json"; }
edit '.allow = ["172.16.0.0/12"] | .deny = ["172.16.1.0/24"]' changed
x apply "$TMP/changed.json" >/dev/null
look $V
tl_check apply_changes_lists test "$L $NAMED $BYGEN" == "[[\"172.16.0.0/12\"],[\"172.16.1.0/24\"]] 2 $GEN:2"
tl_check apply_changes_fingerprint test "$FP" != "$fpa"
x apply "$TMP/show.json" >/dev/null
look $V
tl_check apply_back_fingerprint_back test "$FP" == "$fpa"
edit 'del(.allow, .deny)' absent
x apply "$TMP/absent.json" >/dev/null
look $V
tl_check apply_absent_is_empty test "$L $REC $BYGEN" == '[[],[]] 00 -'
tl_check apply_absent_fingerprint_as_without test "$FP" == "$fp0"
x apply "$TMP/show.json" >/dev/null
look $V
t0=$TOTAL
VA=192.0.2.12:80/tcp
jq ".vips += [{vip: \"$VA\", allow: [\"198.18.0.0/15\"]}]" "$TMP/show.json" >"$TMP/new.json"
x apply "$TMP/new.json" >/dev/null
look $VA
tl_check apply_adds_a_vip_with_lists test "$L $REC $NAMED $BYGEN" == "[[\"198.18.0.0/15\"],[]] 11 1 $GEN:1"
tl_check apply_new_vip_open_to_its_lists test "$(verdicts $VA 198.19.0.1 203.0.113.7)" == "in denied"
x apply "$TMP/show.json" >/dev/null
look $VA
tl_check apply_leaving_a_vip_out_deletes_it test "$L $REC $BYGEN $TOTAL" == "[null,null] - - $t0"

bad_file() {
	local name=$1 fragment=$2
	edit "$3" "$name"
	refused "$name" "$fragment" x apply "$TMP/$name.json"
}
baseline
bad_file file_host_bits_set "vips[0].allow: '10.0.0.1/8': host bits set" '.allow = ["10.0.0.1/8"]'
bad_file file_malformed_prefix "'10.0.0/8': not an IPv4 or IPv6" '.deny = ["10.0.0/8"]'
bad_file file_wrong_family "not an IPv4 prefix" '.deny = ["2001:db8::/32"]'
bad_file file_overlap "10.0.1.0/24 overlaps 10.0.0.0/8 in the allow list" '.allow += ["10.0.1.0/24"]'
bad_file file_given_twice "10.0.0.0/8 is given twice" '.allow += ["10.0.0.0/8"]'
bad_file file_allowed_and_denied "192.168.1.5 is both allowed and denied" '.deny += ["192.168.1.5"]'
bad_file file_not_an_array "must be an array of prefixes" '.allow = "10.0.0.0/8"'
bad_file file_not_a_string "[0] must be a string" '.deny = [5]'
bad_file file_empty_string "vips[0].deny: ''" '.deny = [""]'
bad_file file_over_1024_on_a_vip "more than 1024 prefixes" \
	"(.allow = [range(0; 1025) | \"11.\(. / 256 | floor).\(. % 256).0/24\"]) | .deny = []"

# ---- a VIP rebuilt under a new id keeps its lists ----
LISTS='[["10.0.0.0/8","192.168.1.5"],["10.1.0.0/16"]]'
id0=$(vipj $V .id)
x vip set $V --mode stateless >/dev/null
look $V
tl_check stateless_rebuilds test "$(vipj $V .id)" != "$id0"
tl_check stateless_keeps_lists test "$L $REC $NAMED $BYGEN" == "$LISTS 11 3 $GEN:3"
tl_check stateless_keeps_denying test "$(verdicts $V 10.2.3.4 10.1.2.3 203.0.113.7)" == "in denied denied"
x vip set $V --mode tracked >/dev/null
id1=$(vipj $V .id)
x -j show | jq "(.vips[] | select(.vip == \"$V\")) |= (.table_size = 251)" >"$TMP/size.json"
x apply "$TMP/size.json" >/dev/null
look $V
tl_check table_size_change_rebuilds test "$(vipj $V '| "\(.table_size) \(.id != '"$id1"')"')" == '"251 true"'
tl_check table_size_change_keeps_lists test "$L $REC $NAMED $BYGEN" == "$LISTS 11 3 $GEN:3"
tl_check table_size_change_keeps_denying test "$(verdicts $V 10.2.3.4 10.1.2.3)" == "in denied"

# ---- vip del ----
n=$TOTAL
x vip del $V >/dev/null
look $V
tl_check vip_del_deletes_its_entries test "$REC $BYGEN $TOTAL" == "- - $((n - 3))"
x vip add $V >/dev/null
x backend add $V 198.51.100.11 >/dev/null
look $V
tl_check added_again_without_lists test "$L $REC $(verdicts $V 10.1.2.3)" == '[[],[]] 00 in'

# ---- kill -9 after each map write of a list change (xlb-test) ----
OLD='[["10.0.0.0/24","10.0.1.0/24"],["10.0.0.7"]]'
NEW='[["172.16.0.0/12"],["10.0.0.7"]]'
xt() {
	tl_in "$NS" env XLB_FAULT_AFTER_WRITES="$1" "$BUILD/tests/xlb-test" --pin-dir "$PIN" \
		"${@:2}" >/dev/null 2>&1
}
kill_ok=1 kills=0 seen_old=0 seen_new=0
for ((k = 1; k <= 40; k++)); do
	x vip set $V --allow 10.0.0.0/24,10.0.1.0/24 --deny 10.0.0.7 >/dev/null
	xt "$k" vip set $V --allow 172.16.0.0/12
	rc=$?
	look $V
	l=$L gen=$GEN named=$NAMED
	case $l in
	"$OLD") n=3 seen_old=1
		[[ $seen_new == 1 ]] && { echo "  write $k: the old lists after the new"; kill_ok=0; } ;;
	"$NEW") n=2 seen_new=1 ;;
	*) echo "  write $k: lists $l, neither the old nor the new"; kill_ok=0; n=x ;;
	esac
	[[ $named == "$n" ]] ||
		{ echo "  write $k: generation $gen holds $named entries, not $n"; kill_ok=0; }
	# Clients of the old allow list only, of the new only, of neither.
	v=$(verdicts $V 10.0.1.1 172.16.5.5 203.0.113.9)
	[[ $v == "in denied denied" || $v == "denied in denied" ]] ||
		{ echo "  write $k: the datapath says '$v', neither the old lists nor the new"; kill_ok=0; }
	# Two more commands: the datapath applies the lists show gives, and
	# the trie holds their generation's entries only.
	x vip set $V --ping off >/dev/null
	x vip set $V --ping on >/dev/null
	look $V
	v=$(verdicts $V 10.0.1.1 172.16.5.5 203.0.113.9)
	if [[ "$L $GEN $BYGEN" != "$l $gen $gen:$n" ||
	      $v != "$([[ $l == "$OLD" ]] && echo in denied denied || echo denied in denied)" ]]; then
		echo "  write $k: two commands later: $L, generation $GEN, entries $BYGEN, the datapath says '$v'"
		kill_ok=0
	fi
	[[ $rc -eq 137 ]] || break
	kills=$((kills + 1))
done
echo "  vip set --allow killed after each of its first $kills map writes"
tl_check kill9_vip_set_old_or_new_then_repaired test $kill_ok -eq 1 -a $rc -eq 0 -a \
	$kills -ge 5 -a $seen_old -eq 1 -a $seen_new -eq 1

# A new VIP with lists, killed: absent, closed, or open to its lists only.
VN=192.0.2.13:80/tcp
NL=(--allow 10.0.0.0/24,10.0.1.0/24 --deny 10.0.0.7)
kill_ok=1 kills=0 closed=0
for ((k = 1; k <= 40; k++)); do
	xt "$k" vip add $VN --table-size 251 "${NL[@]}"
	rc=$?
	line=$(showline $VN)
	if [[ -n $line ]]; then
		v=$(verdicts $VN 203.0.113.9 10.0.0.7 10.0.1.1)
		case $line in
		# (Or still closed: the datapath may read the record as it was.)
		*" allow 10.0.0.0/24,10.0.1.0/24 deny 10.0.0.7"*)
			want="denied denied in"
			[[ $v == "denied denied denied" ]] && want=$v ;;
		*" deny 0.0.0.0/0 (closed: its lists"*)
			want="denied denied denied" closed=$((closed + 1))
			# Applied back, show -j keeps it closed.
			x show -j >"$TMP/closed.json" && x apply "$TMP/closed.json" >/dev/null &&
				[[ $(verdicts $VN 203.0.113.9 10.0.0.7 10.0.1.1) == "denied denied denied" ]] ||
				{ echo "  write $k: show -j applied back opens the closed VIP"; kill_ok=0; }
			# --allow any leaves the deny of every client show gives.
			x vip set $VN --allow any >/dev/null &&
				[[ $(verdicts $VN 203.0.113.9 10.0.1.1) == "denied denied" ]] ||
				{ echo "  write $k: --allow any opens the closed VIP"; kill_ok=0; } ;;
		*) want=x ;;
		esac
		[[ $v == "$want" ]] ||
			{ echo "  write $k: '$line', the datapath says '$v'"; kill_ok=0; }
		if [[ $want == "denied denied denied" ]]; then
			x vip set $VN "${NL[@]}" >/dev/null
			[[ $(verdicts $VN 10.0.1.1) == in ]] ||
				{ echo "  write $k: vip set does not open the closed VIP"; kill_ok=0; }
		fi
	fi
	[[ $rc -eq 137 ]] || break
	kills=$((kills + 1))
	x vip del $VN >/dev/null 2>&1
done
echo "  vip add --allow killed after each of its first $kills map writes, $closed times closed"
tl_check kill9_vip_add_never_open test $kill_ok -eq 1 -a $rc -eq 0 -a $kills -ge 5 -a $closed -ge 1
tl_check vip_add_has_its_lists test "$(vipj $VN '| [.allow, .deny]') $(verdicts $VN 10.0.1.1)" == \
	'[["10.0.0.0/24","10.0.1.0/24"],["10.0.0.7"]] in'

exit $TL_FAILED
