#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `xlb replay` as users meet it, on generated traces:
#  - the terminal table, -j JSON, --csv DIR and --plot DIR (PNG) agree;
#  - pcapng gives what pcap gives; backends listed by address, weights and
#    each kind of change (remove, add, reweight) are taken;
#  - bad input (missing, truncated or non-capture file, a trace without a
#    TCP/UDP flow, more backends than table slots, bad options) gets one
#    error line, a non-zero exit and leaves no file behind;
#  - --hash src-ip: the clients counted (fewer with a prefix), said in
#    JSON and the table; bad --hash and --affinity-prefix refused;
#  - with root, --via bpf gives the per-backend loads --via model gives,
#    with client affinity too;
#    at a path MTU (--mtu 1500) too, with the packets answered too big
#    counted alike in the table and JSON; a bad --mtu is refused.
#  - --churn on a trace of long flows: every mode's count in the table,
#    JSON and CSV alike; tracking without moves breaks what the optimum
#    does, moves add to it, the table alone breaks the most; a sequence
#    from a file is the same sequence; bad sequences and options that do
#    not go with --churn get one error line and leave nothing behind.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"

GENTRACE=$BUILD/tools/gentrace
TMP=$(mktemp -d)
tl_on_exit "rm -rf $TMP"

"$GENTRACE" -n 5000 -s 21 -o "$TMP/t.pcap" || { tl_fail replay_setup gentrace; exit 1; }

# --- outputs ---------------------------------------------------------------

if "$XLB" replay --backends 10 --remove 1 "$TMP/t.pcap" >"$TMP/table" 2>"$TMP/err"; then
	tl_check replay_table grep -q '^disruption: remove 1 of 10 (203.0.113.10)' "$TMP/table"
else
	tl_fail replay_table "$(cat "$TMP/err")"
fi

"$XLB" -j replay --backends 10 --remove 1 "$TMP/t.pcap" >"$TMP/j" 2>"$TMP/err"
tl_check replay_json_flows [ "$(jq '.trace.flows' "$TMP/j")" = 5000 ]
tl_check replay_json_algorithms [ "$(jq '.algorithms | length' "$TMP/j")" = 5 ]
# The ring moves exactly the leaving backend's flows, the optimum is 1/N.
tl_check replay_json_ring [ "$(jq '.algorithms[] | select(.name == "ring").disruption |
	(.moved == .on_leaving_backends and .moved_between_kept == 0)' "$TMP/j")" = true ]
tl_check replay_json_optimum [ "$(jq '.algorithms[0].disruption.optimum * 1000 | round' "$TMP/j")" = 100 ]
tl_check replay_json_loads_sum [ "$(jq '[.algorithms[] | [.before.backends[].flows] | add] | unique' -c "$TMP/j")" = "[5000]" ]
# The table prints what JSON holds.
maglev=$(jq -r '.algorithms[] | select(.name == "maglev").before.balance.flows.max_mean * 1000 | round / 1000' "$TMP/j")
tl_check replay_table_matches_json grep -qE "^maglev/65537 +$(printf '%.3f' "$maglev") " "$TMP/table"

if "$XLB" replay --backends 10 --remove 1 --csv "$TMP/csv" --plot "$TMP/png" "$TMP/t.pcap" >/dev/null 2>"$TMP/err"; then
	tl_check replay_csv_files [ "$(ls "$TMP/csv" | tr '\n' ' ')" = "backends.csv balance.csv disruption.csv " ]
	# Five algorithms, 10 backends before and 9 after, and the header.
	tl_check replay_csv_backends [ "$(wc -l <"$TMP/csv/backends.csv")" = 96 ]
	tl_check replay_csv_disruption [ "$(wc -l <"$TMP/csv/disruption.csv")" = 6 ]
	pngs=$(ls -A "$TMP/png" | tr '\n' ' ')
	tl_check replay_plot_files [ "$pngs" = "disruption.png load.png overview.png " ]
	magic=$(for f in "$TMP"/png/*.png; do head -c 4 "$f" | od -An -tx1 | tr -d ' \n'; echo; done | sort -u)
	tl_check replay_plot_png [ "$magic" = 89504e47 ]
else
	tl_fail replay_csv_plot "$(cat "$TMP/err")"
fi

# --- inputs ----------------------------------------------------------------

if command -v editcap >/dev/null; then
	editcap -F pcapng "$TMP/t.pcap" "$TMP/t.pcapng"
	"$XLB" -j replay --backends 10 --remove 1 "$TMP/t.pcapng" >"$TMP/jng"
	tl_check replay_pcapng_like_pcap [ "$(jq -c 'del(.trace.files)' "$TMP/j")" = "$(jq -c 'del(.trace.files)' "$TMP/jng")" ]
else
	tl_skip replay_pcapng_like_pcap "editcap is not installed"
fi

"$XLB" -j replay 203.0.113.7:2 '[2001:db8::9]:1' 203.0.113.8 --reweight 203.0.113.8=3 "$TMP/t.pcap" >"$TMP/jw" 2>"$TMP/err"
tl_check replay_listed_backends [ "$(jq -c '[.backends[] | [.id, .weight]]' "$TMP/jw")" = '[["203.0.113.7",2],["2001:db8::9",1],["203.0.113.8",1]]' ]
# 2/4 1/4 1/4 -> 2/6 1/6 3/6: a quarter of the hash space must move at
# least (half the sum of the share changes: 1/6 + 1/12 + 1/4).
tl_check replay_reweight_optimum [ "$(jq '.algorithms[0].disruption.optimum * 4 | round' "$TMP/jw")" = 1 ]
"$XLB" -j replay --backends 10 --add 2:3 "$TMP/t.pcap" >"$TMP/ja"
tl_check replay_add [ "$(jq -c '[.after.backends[10,11] | [.id, .weight]]' "$TMP/ja")" = '[["203.0.113.11",3],["203.0.113.12",3]]' ]

# --- bad input -------------------------------------------------------------

# A capture holding one ARP frame: no TCP or UDP flow.
{
	printf '\xd4\xc3\xb2\xa1\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x00\x00\x01\x00\x00\x00'
	printf '\x00\x00\x00\x00\x00\x00\x00\x00\x2a\x00\x00\x00\x2a\x00\x00\x00'
	printf '\xff\xff\xff\xff\xff\xff\x02\x00\x00\x00\x00\x01\x08\x06'
	head -c 28 /dev/zero
} >"$TMP/arp.pcap"
head -c 3001 "$TMP/t.pcap" >"$TMP/cut.pcap"
echo "not a capture at all, just words in a file" >"$TMP/text.pcap"

# bad NAME EXPECTED-MESSAGE ARGS...: one error line, non-zero exit, no
# file in the output directories.
bad() {
	local name=$1 want=$2 out
	shift 2
	rm -rf "$TMP/bad_csv" "$TMP/bad_png"
	if "$XLB" replay --csv "$TMP/bad_csv" --plot "$TMP/bad_png" "$@" >"$TMP/out" 2>"$TMP/err"; then
		tl_fail "$name" "exited 0"
		return
	fi
	out=$(ls -A "$TMP/bad_csv" "$TMP/bad_png" 2>/dev/null | grep -v ':$' | grep -v '^$')
	if [[ $(wc -l <"$TMP/err") -ne 1 ]] || ! grep -q -- "$want" "$TMP/err"; then
		tl_fail "$name" "error was: $(cat "$TMP/err")"
	elif [[ -s $TMP/out || -n $out ]]; then
		tl_fail "$name" "left output behind: $(cat "$TMP/out") $out"
	else
		tl_pass "$name"
	fi
}

bad replay_missing_file "$TMP/none.pcap: No such file" "$TMP/none.pcap"
bad replay_truncated "cut.pcap: truncated dump file" "$TMP/cut.pcap"
bad replay_not_a_capture "text.pcap: not a pcap or pcapng capture" "$TMP/text.pcap"
bad replay_no_flow "no TCP or UDP flow in $TMP/arp.pcap" "$TMP/arp.pcap"
bad replay_one_bad_of_two "cut.pcap: truncated" "$TMP/t.pcap" "$TMP/cut.pcap"
bad replay_more_backends_than_slots "smaller than the number of backends" --table-size 7 --backends 10 "$TMP/t.pcap"
bad replay_table_size_not_prime "table-size '100'" --table-size 100 "$TMP/t.pcap"
bad replay_unknown_algo "unknown algorithm 'magic'" --algo maglev,magic "$TMP/t.pcap"
bad replay_remove_all "at least one must stay" --backends 3 --remove 3 "$TMP/t.pcap"
bad replay_two_changes "one change at a time" --remove 1 --add 1 "$TMP/t.pcap"
bad replay_reweight_unknown "203.0.113.99 is not one of the backends" --reweight 203.0.113.99=2 "$TMP/t.pcap"
bad replay_bad_via "expected model or bpf" --via xdp "$TMP/t.pcap"
bad replay_hash_unknown "bad --hash 'ports': not 5-tuple or src-ip" --hash ports "$TMP/t.pcap"
bad replay_prefix_without_src_ip "--affinity-prefix needs --hash src-ip" --affinity-prefix 24 "$TMP/t.pcap"
bad replay_prefix_ipv4_too_long "the IPv4 prefix is 1..32" --hash src-ip --affinity-prefix 64 "$TMP/t.pcap"
bad replay_prefix_ipv6_too_long "not a prefix length 1..128" --hash src-ip --affinity-prefix 24,129 "$TMP/t.pcap"
bad replay_bpf_not_maglev "use --algo maglev" --via bpf --algo ring "$TMP/t.pcap"
bad replay_unknown_option "unknown option '--frobnicate'" --frobnicate "$TMP/t.pcap"
bad replay_no_capture "no capture file given" --backends 3
bad replay_mtu_below_ipv6 "bad --mtu '1279': out of range 1280..10226" --via bpf --mtu 1279 "$TMP/t.pcap"
bad replay_mtu_above_frames "bad --mtu '10227': out of range 1280..10226" --via bpf --mtu 10227 "$TMP/t.pcap"
bad replay_mtu_not_a_number "bad --mtu 'jumbo': not a number" --via bpf --mtu jumbo "$TMP/t.pcap"
bad replay_mtu_without_bpf "--mtu is the path MTU of the XDP program's run: it needs --via bpf" --mtu 1500 "$TMP/t.pcap"

"$XLB" -j replay "$TMP/cut.pcap" >"$TMP/out" 2>/dev/null
tl_check replay_json_error [ "$(jq -r '.error' "$TMP/out")" != null ]

# --- client affinity ---------------------------------------------------------

# Every flow of a client on one backend: with as many clients as flows
# per backend, the loads are sums over clients.
"$XLB" -j replay --algo maglev --hash src-ip --backends 10 "$TMP/t.pcap" >"$TMP/jh" 2>"$TMP/err"
tl_check replay_hash_params [ "$(jq -c '.params | [.hash, .affinity_prefix]' "$TMP/jh")" = '["src-ip",[32,128]]' ]
tl_check replay_hash_default [ "$(jq -r '.params.hash' "$TMP/j")" = 5-tuple ]
"$XLB" -j replay --algo maglev --hash src-ip --affinity-prefix 24 --backends 10 "$TMP/t.pcap" >"$TMP/jh24"
tl_check replay_hash_prefix_fewer_clients [ "$(jq '.params.clients' "$TMP/jh24")" -lt "$(jq '.params.clients' "$TMP/jh")" ]
tl_check replay_hash_clients_at_most_flows [ "$(jq '.params.clients <= .trace.flows' "$TMP/jh")" = true ]
"$XLB" replay --algo maglev --hash src-ip --affinity-prefix 24,64 "$TMP/t.pcap" >"$TMP/th" 2>&1
tl_check replay_hash_table_says_so grep -qE '^hash +src-ip \(client affinity\): [0-9]+ clients, each its /24 \(IPv4\) or /64 \(IPv6\)' "$TMP/th"

# --- churn: changes over time ------------------------------------------------

# 1000 flows of up to 1000 packets, 10 ms apart on average: flows live for
# seconds, long enough to see several changes 2 s apart.
"$GENTRACE" -n 1000 -s 23 --zipf 0 --max-packets 1000 -o "$TMP/long.pcap"
CHURN="10s:add 1,12s:lb-join,14s:remove 203.0.113.2,16s:lb-fail 1,18s:reweight 203.0.113.5=0,20s:add 1,22s:remove 203.0.113.5"
if "$XLB" -j replay --balancers 3 --churn "$CHURN" "$TMP/long.pcap" >"$TMP/jc" 2>"$TMP/err"; then
	tl_check replay_churn_connections [ "$(jq '[.churn.connections, .trace.flows] | unique | length' "$TMP/jc")" = 1 ]
	tl_check replay_churn_algorithms [ "$(jq '.churn.algorithms | length' "$TMP/jc")" = 5 ]
	tl_check replay_churn_tracking_stay_is_optimum [ "$(jq '[.churn.algorithms[].broken | .tracking_stay == .optimum] | all' "$TMP/jc")" = true ]
	tl_check replay_churn_modes_ordered [ "$(jq '[.churn.algorithms[].broken | .optimum <= .stateless and .stateless <= .table and .tracking_stay <= .tracking_move and .tracking_move <= .table] | all' "$TMP/jc")" = true ]
	tl_check replay_churn_something_breaks [ "$(jq '.churn.algorithms[] | select(.name == "maglev").broken | .optimum > 0 and .table > .stateless and .tracking_move > .tracking_stay' "$TMP/jc")" = true ]
	tl_check replay_churn_stateless_reasons [ "$(jq '[.churn.algorithms[] | .broken.stateless == (.stateless | .broken_changed_twice + .broken_kept_too_short + .broken_backend_removed)] | all' "$TMP/jc")" = true ]
	# The candidates for stateless VIPs: each keeps what the one before it
	# keeps (a chain of previous owners, then backends that remember).
	tl_check replay_churn_chain_modes_ordered [ "$(jq '[.churn.algorithms[].broken | .optimum <= .chain_memory and .chain_memory <= .chain and .chain <= .stateless] | all' "$TMP/jc")" = true ]
	tl_check replay_churn_ecmp_moved [ "$(jq '.churn.ecmp_moved > 0' "$TMP/jc")" = true ]
	# A history of 0 keeps no previous backend: stateless is the table.
	"$XLB" -j replay --history 0s --algo maglev --balancers 3 --churn "$CHURN" "$TMP/long.pcap" >"$TMP/jc0"
	tl_check replay_churn_history_0 [ "$(jq '.churn.algorithms[0].broken | .stateless == .table and .chain == .table and .chain_memory == .table' "$TMP/jc0")" = true ]
	"$XLB" replay --balancers 3 --churn "$CHURN" "$TMP/long.pcap" >"$TMP/churn_table"
	ms=$(jq '.churn.algorithms[0].broken.stateless' "$TMP/jc")
	tl_check replay_churn_table_matches_json grep -qE "^ +stateless, second chance +$ms " "$TMP/churn_table"
	tr , '\n' <<<"$CHURN" | sed 's/^/  /; 3a # a comment, and a blank line\n' >"$TMP/churn.txt"
	"$XLB" -j replay --balancers 3 --churn "@$TMP/churn.txt" "$TMP/long.pcap" >"$TMP/jcf"
	tl_check replay_churn_file_form [ "$(jq -c .churn "$TMP/jcf")" = "$(jq -c .churn "$TMP/jc")" ]
	if "$XLB" replay --balancers 3 --churn "$CHURN" --csv "$TMP/ccsv" "$TMP/long.pcap" >/dev/null 2>"$TMP/err"; then
		tl_check replay_churn_csv_files [ "$(ls "$TMP/ccsv" | tr '\n' ' ')" = "churn.csv churn_stateless.csv " ]
		tl_check replay_churn_csv_rows [ "$(wc -l <"$TMP/ccsv/churn.csv") $(wc -l <"$TMP/ccsv/churn_stateless.csv")" = "36 6" ]
		tl_check replay_churn_csv_matches_json grep -qx "maglev/65537,stateless,1000,$ms,.*" "$TMP/ccsv/churn.csv"
	else
		tl_fail replay_churn_csv "$(cat "$TMP/err")"
	fi
else
	tl_fail replay_churn "$(cat "$TMP/err")"
fi

# bad_churn NAME EXPECTED-MESSAGE ARGS...: as bad, with --csv only.
bad_churn() {
	local name=$1 want=$2
	shift 2
	rm -rf "$TMP/bad_csv"
	if "$XLB" replay --csv "$TMP/bad_csv" "$@" >"$TMP/out" 2>"$TMP/err"; then
		tl_fail "$name" "exited 0"
	elif [[ $(wc -l <"$TMP/err") -ne 1 ]] || ! grep -q -- "$want" "$TMP/err"; then
		tl_fail "$name" "error was: $(cat "$TMP/err")"
	elif [[ -s $TMP/out || -n $(ls -A "$TMP/bad_csv" 2>/dev/null) ]]; then
		tl_fail "$name" "left output behind"
	else
		tl_pass "$name"
	fi
}

bad_churn replay_churn_bad_event "bad event '10s:explode': unknown action" --churn "10s:add 1,10s:explode" "$TMP/t.pcap"
bad_churn replay_churn_bad_time "time '10': needs a unit" --churn "10:add 1" "$TMP/t.pcap"
bad_churn replay_churn_not_a_backend "203.0.113.77 is not one of the backends" --churn "10s:remove 203.0.113.77" "$TMP/t.pcap"
bad_churn replay_churn_last_balancer "the last balancer cannot fail" --churn "10s:lb-fail" "$TMP/t.pcap"
bad_churn replay_churn_not_running "balancer 3 is not running" --balancers 2 --churn "10s:lb-fail 3" "$TMP/t.pcap"
bad_churn replay_churn_missing_file "$TMP/none.txt: No such file" --churn "@$TMP/none.txt" "$TMP/t.pcap"
bad_churn replay_churn_and_remove "give one or the other" --churn "10s:add 1" --remove 1 "$TMP/t.pcap"
bad_churn replay_churn_and_plot "leave out --plot" --churn "10s:add 1" --plot "$TMP/bad_png" "$TMP/t.pcap"
bad_churn replay_churn_and_bpf "leave out --via bpf" --churn "10s:add 1" --via bpf "$TMP/t.pcap"
bad_churn replay_balancers_without_churn "--balancers needs --churn" --balancers 3 "$TMP/t.pcap"
bad_churn replay_churn_bad_ecmp "expected threshold, modulo or consistent" --churn "10s:add 1" --ecmp random "$TMP/t.pcap"
bad_churn replay_churn_bad_history "bad --history '5'" --churn "10s:add 1" --history 5 "$TMP/t.pcap"
bad_churn replay_churn_balancers_range "bad --balancers '65'" --churn "10s:add 1" --balancers 65 "$TMP/t.pcap"

# --- through the XDP program -------------------------------------------------

if tl_require_root replay_via_bpf; then
	loads() { jq -c '[.algorithms[] | .name, [.before.backends[].flows], [.after.backends[].flows], .disruption.moved]' "$1"; }
	"$GENTRACE" -n 2000 -s 22 --ports 300 -o "$TMP/b.pcap"
	"$XLB" -j replay --via bpf --backends 10 --remove 1 "$TMP/b.pcap" >"$TMP/jb" 2>"$TMP/err"
	"$XLB" -j replay --algo maglev --backends 10 --remove 1 "$TMP/b.pcap" >"$TMP/jm"
	if [[ -s $TMP/jb ]] && [[ $(loads "$TMP/jb") == "$(loads "$TMP/jm")" ]]; then
		tl_pass replay_via_bpf
	else
		tl_fail replay_via_bpf "bpf $(loads "$TMP/jb") model $(loads "$TMP/jm") $(cat "$TMP/err")"
	fi
	tl_check replay_via_bpf_no_mtu_no_too_big [ "$(jq -c '[.too_big, .params.mtu]' "$TMP/jb")" = "[null,null]" ]
	"$XLB" -j replay --via bpf --mtu 1500 --backends 10 --remove 1 "$TMP/b.pcap" >"$TMP/jt" 2>"$TMP/err"
	if [[ -s $TMP/jt ]] && [[ $(loads "$TMP/jt") == "$(loads "$TMP/jm")" ]]; then
		tl_pass replay_mtu_same_backends
	else
		tl_fail replay_mtu_same_backends "$(cat "$TMP/err")"
	fi
	tl_check replay_mtu_json [ "$(jq -c '.too_big | [.path_mtu, .encap_bytes, .packets > 0, .flows > 0, .flows <= .packets, .next_hop_mtu_ipv4, .next_hop_mtu_ipv6]' "$TMP/jt")" = "[1500,40,true,true,true,1460,1460]" ]
	"$XLB" replay --via bpf --mtu 1500 --backends 10 --remove 1 "$TMP/b.pcap" >"$TMP/tt" 2>"$TMP/err"
	want=$(jq -r '.too_big | "ICMP too big: \(.packets) packets of \(.flows) flows (path MTU 1500, 40 bytes of encapsulation)"' "$TMP/jt")
	tl_check replay_mtu_table_matches_json grep -qF "mtu        $want" "$TMP/tt"
	# Client affinity: the XDP program with its VIPs so set puts each
	# flow where the model does, and that is not where the 5-tuple does.
	"$XLB" -j replay --via bpf --hash src-ip --affinity-prefix 24,64 --backends 10 --remove 1 "$TMP/b.pcap" >"$TMP/jab" 2>"$TMP/err"
	"$XLB" -j replay --algo maglev --hash src-ip --affinity-prefix 24,64 --backends 10 --remove 1 "$TMP/b.pcap" >"$TMP/jam"
	if [[ -s $TMP/jab ]] && [[ $(loads "$TMP/jab") == "$(loads "$TMP/jam")" ]]; then
		tl_pass replay_via_bpf_affinity
	else
		tl_fail replay_via_bpf_affinity "bpf $(loads "$TMP/jab") model $(loads "$TMP/jam") $(cat "$TMP/err")"
	fi
	tl_check replay_affinity_moves_flows [ "$(loads "$TMP/jam")" != "$(loads "$TMP/jm")" ]
fi
exit $TL_FAILED
