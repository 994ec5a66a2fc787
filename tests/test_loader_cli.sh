#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The xlb command as users meet it, on an instance attached with
# `xlb attach --pin-dir` to a veth in a namespace of the test's own:
#  - every kind of bad input gets a one-line error naming the problem, a
#    non-zero exit, and leaves every map byte-identical;
#  - the limits (VIPs, backends, table size) are enforced;
#  - the seed can be set;
#  - apply of the current state changes nothing, `show -j | apply -`
#    round-trips, and apply leaves the tables of unchanged VIPs alone;
#  - concurrent commands are serialised by the pin dir's lock, and a reader
#    whose output blocks holds no lock;
# (Attaching and detaching: test_loader_attach.sh.)
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

tl_require_root loader_cli || exit 0
loader_setup cli || { tl_fail loader_cli_setup "cannot create namespaces or a pin dir"; exit 1; }
if ! x attach v0 --mode generic >/dev/null 2>"$TMP/err"; then
	tl_fail loader_cli_setup "xlb attach: $(cat "$TMP/err")"
	exit 1
fi

# --- settings ---------------------------------------------------------------

x config set seed 00112233445566778899aabbccddeeff src4 198.51.100.1 src6 2001:db8:100::1
tl_check seed_can_be_set test "$(x -j show | jq -r .config.seed)" == 00112233445566778899aabbccddeeff

# --- bad input changes nothing ---------------------------------------------


x vip add 192.0.2.10:80/tcp
x backend add 192.0.2.10:80/tcp 198.51.100.11
x backend add 192.0.2.10:80/tcp 198.51.100.12 --weight 2
x vip add 192.0.2.13:80/tcp --table-size 3
for i in 1 2 3; do x backend add 192.0.2.13:80/tcp 198.51.100.2$i; done

# bad NAME FRAGMENT ARGS...: xlb ARGS fails naming FRAGMENT, maps unchanged.
bad() { fails_unchanged "$1" "$2" x "${@:3}"; }

bad vip_bad_address "bad VIP '192.0.2.300:80/tcp'" vip add 192.0.2.300:80/tcp
bad vip_missing_port "missing :PORT" vip add 192.0.2.10/tcp
bad vip_port_not_a_number "port must be a number 0..65535" vip add 192.0.2.10:8o/tcp
bad vip_port_too_big "port must be a number 0..65535" vip add 192.0.2.10:65536/tcp
bad vip_unknown_protocol "unknown protocol" vip add 192.0.2.10:80/sctp
bad vip_ipv6_without_brackets "in brackets" vip add 2001:db8::10:80/tcp
bad vip_multicast "multicast" vip add 224.0.0.10:80/udp
bad vip_table_size_not_prime "bad --table-size '65536': not prime (the next prime is 65537)" vip add 192.0.2.12:80/tcp --table-size 65536
bad vip_table_size_too_big "bad --table-size '1048583': out of range 3..1048573" vip add 192.0.2.12:80/tcp --table-size 1048583
bad vip_table_size_too_small "bad --table-size '2': out of range 3..1048573" vip add 192.0.2.12:80/tcp --table-size 2
bad vip_table_size_negative "bad --table-size '-7': negative" vip add 192.0.2.12:80/tcp --table-size -7
bad vip_duplicate "VIP 192.0.2.10:80/tcp already exists" vip add 192.0.2.10:80/tcp
bad vip_unknown "no VIP 192.0.2.99:80/tcp" vip del 192.0.2.99:80/tcp
bad vip_unknown_option "unknown option '--tabel-size'" vip add 192.0.2.12:80/tcp --tabel-size 7
bad backend_bad_address "bad address '198.51.100.300'" backend add 192.0.2.10:80/tcp 198.51.100.300
bad backend_unspecified "unspecified address" backend add 192.0.2.10:80/tcp 0.0.0.0
bad backend_multicast "multicast" backend add 192.0.2.10:80/tcp ff02::1
bad backend_duplicate "backend 198.51.100.11 is already in VIP 192.0.2.10:80/tcp" backend add 192.0.2.10:80/tcp 198.51.100.11
bad backend_unknown_vip "no VIP 192.0.2.99:80/tcp" backend add 192.0.2.99:80/tcp 198.51.100.19
bad backend_unknown "no backend 198.51.100.19 in VIP 192.0.2.10:80/tcp" backend del 192.0.2.10:80/tcp 198.51.100.19
bad backend_set_unknown "no backend 198.51.100.19" backend set 192.0.2.10:80/tcp 198.51.100.19 --weight 2
bad backend_set_without_weight "missing --weight" backend set 192.0.2.10:80/tcp 198.51.100.11
bad weight_negative "bad --weight '-1': negative" backend add 192.0.2.10:80/tcp 198.51.100.19 --weight -1
bad weight_too_large "bad --weight '1000001': above the maximum 1000000" backend add 192.0.2.10:80/tcp 198.51.100.19 --weight 1000001
bad weight_huge "above the maximum 1000000" backend add 192.0.2.10:80/tcp 198.51.100.19 --weight 99999999999999999999999
bad weight_not_a_number "not a number" backend add 192.0.2.10:80/tcp 198.51.100.19 --weight 1.5
bad backends_exceed_table_size "4 backends do not fit a table of 3 slots" backend add 192.0.2.13:80/tcp 198.51.100.24
bad extra_argument "unexpected argument '198.51.100.18'" backend add 192.0.2.10:80/tcp 198.51.100.19 198.51.100.18
bad config_src4_family "bad src4 '2001:db8::1': not an IPv4 address" config set src4 2001:db8::1
bad config_src6_family "bad src6 '192.0.2.1': not an IPv6 address" config set src6 192.0.2.1
bad config_seed_short "32 hex digits" config set seed 1234
bad config_seed_not_hex "32 hex digits" config set seed 0011223344556677889900aabbccddzz
bad config_timeout_negative "bad udp-timeout '-1': negative" config set udp-timeout -1
bad config_unknown_setting "unknown setting 'colour'" config set colour blue
bad config_missing_value "setting 'src4' has no value" config set src4
bad unknown_command "unknown command 'vip frob'" vip frob
bad unknown_object "unknown object 'frob'" frob

# apply_bad NAME FRAGMENT JSON: apply of JSON fails naming FRAGMENT.
apply_bad() {
	printf '%s' "$3" >"$TMP/bad.json"
	bad "$1" "$2" apply "$TMP/bad.json"
}
vip10='"vip":"192.0.2.10:80/tcp"'
apply_bad apply_syntax_error "syntax error at line 2" $'{"vips": [\n}'
apply_bad apply_trailing_text "text after the JSON value" '{} {}'
apply_bad apply_empty "unexpected end of input" ''
apply_bad apply_not_an_object "the top level must be an object" '[1]'
apply_bad apply_unknown_key "vipz: unknown key" '{"vipz": []}'
apply_bad apply_unknown_vip_key "vips[0].tablesize: unknown key" "{\"vips\":[{$vip10,\"tablesize\":7}]}"
apply_bad apply_unknown_backend_key "vips[0].backends[0].wieght: unknown key" \
	"{\"vips\":[{$vip10,\"backends\":[{\"addr\":\"198.51.100.11\",\"wieght\":2}]}]}"
apply_bad apply_unknown_setting "config.colour: unknown setting" '{"config":{"colour":"blue"}}'
apply_bad apply_bad_setting "config.src4: not an IPv4 address" '{"config":{"src4":"2001:db8::1"}}'
apply_bad apply_weight_negative "vips[0].backends[0].weight: negative" \
	"{\"vips\":[{$vip10,\"backends\":[{\"addr\":\"198.51.100.11\",\"weight\":-3}]}]}"
apply_bad apply_weight_too_large "vips[0].backends[0].weight: " \
	"{\"vips\":[{$vip10,\"backends\":[{\"addr\":\"198.51.100.11\",\"weight\":5000000},{\"addr\":\"198.51.100.12\",\"weight\":1}]}]}"
apply_bad apply_weight_string "weight must be an integer" \
	"{\"vips\":[{$vip10,\"backends\":[{\"addr\":\"198.51.100.11\",\"weight\":\"2\"}]}]}"
apply_bad apply_missing_addr "vips[0].backends[0]: missing \"addr\"" "{\"vips\":[{$vip10,\"backends\":[{\"weight\":2}]}]}"
apply_bad apply_bad_vip "vips[0].vip: bad VIP '192.0.2.10:80'" '{"vips":[{"vip":"192.0.2.10:80"}]}'
apply_bad apply_vip_twice "listed twice" "{\"vips\":[{$vip10},{$vip10}]}"
apply_bad apply_backend_twice "duplicate backend 198.51.100.11" \
	"{\"vips\":[{$vip10,\"backends\":[{\"addr\":\"198.51.100.11\"},{\"addr\":\"198.51.100.11\"}]}]}"
apply_bad apply_table_size_not_prime "table_size: not prime (the next prime is 101)" "{\"vips\":[{$vip10,\"table_size\":100}]}"
# A bad VIP late in the file: the good ones before it are not applied.
apply_bad apply_checks_the_whole_file_first "vips[1].vip: bad VIP" \
	"{\"vips\":[{$vip10,\"backends\":[{\"addr\":\"198.51.100.15\"}]},{\"vip\":\"192.0.2.11:80/icmp\"}]}"

# JSON mode: the error is a JSON object on stdout, nothing on stderr.
instance_dump >"$TMP/before"
x -j vip add 192.0.2.10:80/sctp >"$TMP/out" 2>"$TMP/err"
rc=$?
instance_dump >"$TMP/after"
if [[ $rc -ne 0 && ! -s $TMP/err ]] && cmp -s "$TMP/before" "$TMP/after" &&
   [[ $(jq -r .error "$TMP/out") == *"unknown protocol"* ]]; then
	tl_pass json_error_object
else
	tl_fail json_error_object "rc $rc: $(cat "$TMP/out" "$TMP/err")"
fi

# --- limits -----------------------------------------------------------------

# VIPs: 256, checked in a file before anything is written...
{
	printf '{"vips":['
	for i in $(seq 0 256); do
		printf '%s{"vip":"192.0.2.%d:%d/udp","table_size":3}' "$([[ $i -gt 0 ]] && echo ,)" $((i % 250 + 1)) $((1000 + i))
	done
	printf ']}'
} >"$TMP/vips257.json"
bad limit_vips_in_a_file "257 VIPs: the limit is 256" apply "$TMP/vips257.json"
# ...and when the maps are full.
jq '.vips |= .[0:254]' "$TMP/vips257.json" | jq --argjson keep "$(x -j show | jq '[.vips[] | {vip, table_size, backends: [.backends[] | {addr, weight}]}]')" \
	'.vips += $keep' >"$TMP/vips256.json"
if x apply "$TMP/vips256.json" && [[ $(x -j show | jq '.vips | length') -eq 256 ]]; then
	bad limit_vips "too many VIPs (limit 256)" vip add 192.0.2.12:80/tcp
else
	tl_fail limit_vips "could not configure 256 VIPs"
fi
x apply <(x -j show | jq --argjson keep "$(jq '.vips[-2:]' "$TMP/vips256.json")" '.vips = $keep') ||
	tl_fail limit_vips "could not go back to 2 VIPs"

# Backends: 4095 records over all VIPs (id 0 names no backend).
{
	printf '{"vips":[{"vip":"[2001:db8:f::1]:80/tcp","backends":['
	for i in $(seq 1 4091); do
		printf '%s{"addr":"2001:db8:b::%x"}' "$([[ $i -gt 1 ]] && echo ,)" "$i"
	done
	printf ']}]}'
} >"$TMP/be4091.json"
# The other VIPs hold 5: 4091 more do not fit, 4090 do.
jq --argjson keep "$(x -j show | jq '[.vips[] | {vip, table_size, backends: [.backends[] | {addr, weight}]}]')" \
	'.vips += $keep' "$TMP/be4091.json" >"$TMP/be4096.json"
bad limit_backends_in_a_file "too many backends: 4091 more needed, 4090 free (limit 4095 over all VIPs)" \
	apply "$TMP/be4096.json"
jq '.vips[0].backends |= .[0:4090]' "$TMP/be4096.json" >"$TMP/be4095.json"
if x apply "$TMP/be4095.json" && [[ $(x -j show | jq '[.vips[].backends | length] | add') -eq 4095 ]]; then
	bad limit_backends "too many backends: 1 more needed, 0 free (limit 4095 over all VIPs)" \
		backend add 192.0.2.10:80/tcp 198.51.100.19
	# With 4095 backends `xlb show` prints far more than a pipe holds: a
	# reader whose output blocks (xlb show | a pager left open) must not
	# hold the lock that every change needs.
	x show | sleep 6 &
	sleep 1
	timeout 4 nsenter --net="/run/netns/$NS" "$XLB" --pin-dir "$PIN" vip add 192.0.2.21:80/tcp
	tl_check a_blocked_reader_holds_no_lock test $? -eq 0
	x vip del 192.0.2.21:80/tcp
	wait
	# Every record in use: the big VIP's 4090 backends replaced by 4090
	# others fits, as the records of those removed are freed first; one
	# more does not. The same with a new table size (built anew).
	others() { # FIRST COUNT [TABLE_SIZE]: the big VIP with other backends
		jq --argjson first "$1" --argjson n "$2" --argjson m "${3:-null}" \
			'.vips[0].backends = [range($first; $first + $n) |
				{addr: ("2001:db8:c::" + (. | tostring))}] |
			 if $m then .vips[0].table_size = $m else . end' "$TMP/be4095.json"
	}
	big() { x -j show | jq -r '.vips[] | select(.vip == "[2001:db8:f::1]:80/tcp") |
		"\(.table_size) \(.backends | length) \([.backends[].addr | select(startswith("2001:db8:c:"))] | length)"'; }
	others 1 4091 >"$TMP/be-others4091.json"
	bad full_set_replacement_that_does_not_fit "too many backends: 1 more needed, 0 free (limit 4095 over all VIPs)" \
		apply "$TMP/be-others4091.json"
	others 1 4090 >"$TMP/be-others.json"
	m=$(big | cut -d' ' -f1)
	x apply "$TMP/be-others.json" 2>/dev/null
	tl_check full_set_replaced_by_another test "$(big)" = "$m 4090 4090"
	others 5001 4090 65537 >"$TMP/be-others-m.json"
	x apply "$TMP/be-others-m.json" 2>/dev/null
	tl_check full_set_replaced_with_a_new_table_size test "$(big)" = "65537 4090 4090"
	# A new table size keeping 1000 of them and adding 1000: those it
	# drops are freed first, those it keeps held (with their health)
	# until the new table's records are written.
	jq '.vips[0].backends = (.vips[0].backends[0:1000] +
		[range(1; 1001) | {addr: ("2001:db8:c:1::" + (. | tostring))}]) |
	    .vips[0].table_size = 32771' "$TMP/be-others-m.json" >"$TMP/be-kept.json"
	x apply "$TMP/be-kept.json" 2>/dev/null
	tl_check new_table_size_keeping_some_when_every_record_is_in_use \
		test "$(big)" = "32771 2000 2000"
else
	tl_fail limit_backends "could not configure 4095 backends"
fi
x vip del '[2001:db8:f::1]:80/tcp' || tl_fail limit_backends "could not delete the big VIP"

# --- apply ------------------------------------------------------------------

cat >"$TMP/state.json" <<'EOF'
{"config": {"seed": "00112233445566778899aabbccddeeff", "src4": "198.51.100.1"},
 "vips": [
  {"vip": "192.0.2.10:80/tcp", "backends": [{"addr": "198.51.100.11"}, {"addr": "198.51.100.12", "weight": 2}]},
  {"vip": "[2001:db8::10]:443/udp", "table_size": 1009,
   "backends": [{"addr": "2001:db8::1:1"}, {"addr": "198.51.100.31", "weight": 0}]}
 ]}
EOF
x apply "$TMP/state.json" || tl_fail apply "$TMP/state.json"
instance_dump >"$TMP/before"
x apply "$TMP/state.json"
instance_dump >"$TMP/after"
tl_check apply_of_the_current_state_changes_nothing cmp -s "$TMP/before" "$TMP/after"
x -j show | x apply -
instance_dump >"$TMP/after"
tl_check show_json_round_trips_through_apply cmp -s "$TMP/before" "$TMP/after"

inner() { bpftool map lookup pinned "$PIN/xlb_tables" key $(printf '%d 0 0 0' "$1") -j | jq .value; }
id10=$(x -j show | jq '.vips[] | select(.vip == "192.0.2.10:80/tcp") | .id')
id6=$(x -j show | jq '.vips[] | select(.vip == "[2001:db8::10]:443/udp") | .id')
t10=$(inner "$id10") t6=$(inner "$id6")
sed 's/"weight": 2/"weight": 3/' "$TMP/state.json" >"$TMP/state2.json"
x apply "$TMP/state2.json"
if [[ $(inner "$id6") == "$t6" && $(inner "$id10") != "$t10" ]] &&
   [[ $(x -j show | jq '.vips[0].backends[1].weight') -eq 3 ]]; then
	tl_pass apply_swaps_only_the_tables_that_change
else
	tl_fail apply_swaps_only_the_tables_that_change "tables $t10 $t6 -> $(inner "$id10") $(inner "$id6")"
fi
x apply <(printf '{"vips":[]}')
tl_check apply_deletes_vips_not_listed test "$(x -j show | jq '.vips | length')" -eq 0

# Port 0: the VIP that receives the fragments sent to its address.
tl_check vip_port_zero_is_the_fragments_vip x vip add 192.0.2.10:0/udp

# --- the lock ---------------------------------------------------------------

# Another command holds the instance's lock for a second: xlb waits for it.
flock "$PIN" sleep 1 &
sleep 0.2
start=$(date +%s%N)
x vip add 192.0.2.20:80/tcp
rc=$?
waited=$((($(date +%s%N) - start) / 1000000))
wait
echo "  vip add waited $waited ms for the lock"
tl_check concurrent_commands_are_serialised test $rc -eq 0 -a $waited -ge 500

# --- help -------------------------------------------------------------------

ok=1
for obj in "" vip backend config show stats apply attach detach; do
	x $obj help >"$TMP/help" 2>&1 && grep -q Usage "$TMP/help" || { ok=0; echo "  xlb $obj help: $(head -1 "$TMP/help")"; }
done
tl_check help_for_every_object test $ok -eq 1

exit $TL_FAILED
