#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Health settings as an operator writes them, on an instance of the
# test's own:
#  - `xlb vip add|set` and `xlb backend add|set` take them as options,
#    `set` changes only what it is given, "default" unsets;
#  - `xlb show` prints them, and each backend's health; `xlb show -j`
#    holds them, and `xlb apply` takes that output back changing nothing;
#    apply makes a VIP's and a backend's settings what the file says;
#  - every bad setting, on the command line or in a file, is refused with
#    one line and changes nothing (a bad one in a file's last VIP stops
#    the whole file);
#  - a backend the checker found down (XLB_BE_F_DOWN in its record) keeps
#    its flag and weight through apply and `backend set`, holds no slots
#    while another backend is up, is back in the table with its weight
#    once the flag is gone, and a backend added again after a del starts
#    with no flag;
#  - `xlb stats` (text, -j, --prometheus) shows health and transitions;
#  - an instance without the health maps (made by an older xlb) reads as
#    having no settings, and its first setting creates them.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached health_config hcf || exit 1

V=192.0.2.10:80/tcp
W=192.0.2.11:53/udp
B1=198.51.100.11
B2=198.51.100.12


# bad NAME FRAGMENT ARGS...: xlb ARGS fails with one line naming FRAGMENT,
# and every map is as it was.
bad() { fails_unchanged "$1" "$2" x "${@:3}"; }

# bad_file NAME FRAGMENT JSON: apply of JSON fails naming FRAGMENT.
bad_file() {
	printf '%s' "$3" >"$TMP/bad.json"
	bad "$1" "$2" apply "$TMP/bad.json"
}

# health_of VIP [ADDR]: the "health" object show -j prints, or null.
health_of() {
	if [[ $# -eq 1 ]]; then
		x -j show | jq -c --arg v "$1" '.vips[] | select(.vip == $v) | .health'
	else
		x -j show | jq -c --arg v "$1" --arg a "$2" \
			'.vips[] | select(.vip == $v) | .backends[] | select(.addr == $a) | .health'
	fi
}

# backend_field VIP ADDR KEY: a key of the backend in show -j.
backend_field() {
	x -j show | jq -r --arg v "$1" --arg a "$2" --arg k "$3" \
		'.vips[] | select(.vip == $v) | .backends[] | select(.addr == $a) | .[$k]'
}

# --- the command line -------------------------------------------------------

x config set src4 198.51.100.1 >/dev/null
x vip add $V --health http --interval 500ms --http-path /healthz --rise 3
x backend add $V $B1
x backend add $V $B2 --weight 2 --timeout 100ms --health-port 8080
tl_check vip_add_takes_health_settings test \
	"$(health_of $V)" == '{"kind":"http","interval_ms":500,"rise":3,"http_path":"/healthz"}'
tl_check backend_add_takes_overrides test \
	"$(health_of $V $B2)" == '{"port":8080,"timeout_ms":100}'
tl_check backend_without_overrides_has_none test "$(health_of $V $B1)" == null
line=$(x show | grep "^vip $V")
tl_check show_prints_vip_settings grep -q ' health http interval 500ms rise 3 http-path /healthz$' <<<"$line"
tl_check show_prints_backend_health \
	grep -qx "	backend $B2 weight 2 .* health unknown overrides health-port 8080 timeout 100ms" \
	<<<"$(x show | grep "backend $B2")"

x vip set $V --fall 5 --on-down reset
tl_check vip_set_changes_only_what_it_is_given test \
	"$(health_of $V)" == '{"kind":"http","interval_ms":500,"rise":3,"fall":5,"http_path":"/healthz","on_down":"reset"}'
x vip set $V --rise default --http-path default
tl_check default_unsets test \
	"$(health_of $V)" == '{"kind":"http","interval_ms":500,"fall":5,"on_down":"reset"}'
x backend set $V $B2 --health tcp
tl_check backend_set_keeps_weight_and_other_overrides test \
	"$(health_of $V $B2) $(backend_field $V $B2 weight)" == '{"kind":"tcp","port":8080,"timeout_ms":100} 2'
x vip add $W --health udp --udp-send $'ping\n' --udp-expect pong
tl_check udp_data_round_trips_through_show_j test \
	"$(health_of $W)" == '{"kind":"udp","udp_send":"ping\n","udp_expect":"pong"}'

# --- bad settings on the command line ----------------------------------------

bad cli_unknown_kind "bad --health 'icmp': unknown kind" vip set $V --health icmp
bad cli_interval_zero "bad --interval '0ms': out of range" vip set $V --interval 0ms
bad cli_interval_without_unit "bad --interval '2': needs a unit" vip set $V --interval 2
bad cli_interval_too_short "bad --interval '5ms': out of range 10ms..3600s" vip set $V --interval 5ms
bad cli_timeout_zero "bad --timeout '0s': out of range" vip set $V --timeout 0s
bad cli_timeout_not_below_interval "VIP $V: timeout 500ms is not below interval 500ms" \
	vip set $V --timeout 500ms
bad cli_rise_zero "bad --rise '0': out of range 1..100" vip set $V --rise 0
bad cli_fall_too_large "bad --fall '256': out of range 1..100" vip set $V --fall 256
bad cli_status_too_low "bad --http-status '99': out of range 100..599" vip set $V --http-status 99
bad cli_status_too_high "bad --http-status '600': out of range 100..599" vip set $V --http-status 600
bad cli_path_without_slash "HTTP path must begin with '/'" vip set $V --http-path health
bad cli_path_with_space "HTTP path holds a space or a control character" vip set $V --http-path '/a b'
bad cli_path_too_long "bad --http-path" vip set $V --http-path "/$(printf 'a%.0s' {1..63})"
bad cli_udp_send_too_long "bad --udp-send" vip set $W --udp-send "$(printf 'a%.0s' {1..65})"
bad cli_udp_binary "UDP data must be printable ASCII" vip set $W --udp-expect $'\x01'
bad cli_port_too_large "bad --health-port '65536': out of range 1..65535" vip set $V --health-port 65536
bad cli_on_down_unknown "bad --on-down 'drop'" vip set $V --on-down drop
bad cli_vip_set_needs_something "nothing to set" vip set $V
bad cli_vip_add_bad_setting_adds_nothing "timeout 3s is not below interval 2s" \
	vip add 192.0.2.12:80/tcp --timeout 3s
bad cli_backend_add_override_checked_against_vip \
	"backend 198.51.100.13 of VIP $V: timeout 600ms is not below interval 500ms" \
	backend add $V 198.51.100.13 --timeout 600ms
bad cli_backend_set_bad_override "backend $B1 of VIP $V: timeout 2s is not below interval 500ms" \
	backend set $V $B1 --timeout 2s --weight 7
bad cli_vip_set_breaking_a_backend "VIP $V: backend $B2: timeout 100ms is not below interval 50ms" \
	vip set $V --interval 50ms

# --- show -j and apply --------------------------------------------------------

instance_dump >"$TMP/before"
x -j show >"$TMP/show.json"
x apply "$TMP/show.json" 2>/dev/null
instance_dump >"$TMP/after"
tl_check show_j_applied_back_changes_nothing cmp -s "$TMP/before" "$TMP/after"

cat >"$TMP/new.json" <<EOF
{"vips": [
  {"vip": "$V", "health": {"kind": "tcp", "interval_ms": 1000, "timeout_ms": 300},
   "backends": [{"addr": "$B1", "health": {"port": 81, "on_down": "reset"}}, {"addr": "$B2", "weight": 2}]},
  {"vip": "$W", "backends": []}
]}
EOF
x apply "$TMP/new.json" 2>/dev/null
tl_check apply_sets_vip_settings test "$(health_of $V)" == '{"kind":"tcp","interval_ms":1000,"timeout_ms":300}'
tl_check apply_sets_backend_settings test "$(health_of $V $B1)" == '{"port":81,"on_down":"reset"}'
tl_check apply_clears_what_the_file_leaves_out test "$(health_of $V $B2) $(health_of $W)" == "null null"

# --- bad settings in a file --------------------------------------------------

ok_vip='{"vip": "'$V'", "health": {"kind": "http"}, "backends": [{"addr": "'$B1'"}]}'
bad_file file_unknown_kind 'vips[0].health.kind: unknown kind' \
	'{"vips": [{"vip": "'$V'", "health": {"kind": "ping"}}]}'
bad_file file_interval_zero 'vips[0].health.interval_ms: out of range' \
	'{"vips": [{"vip": "'$V'", "health": {"interval_ms": 0}}]}'
bad_file file_timeout_not_below_interval 'vips[0].health: timeout 2s is not below interval 2s' \
	'{"vips": [{"vip": "'$V'", "health": {"timeout_ms": 2000}}]}'
bad_file file_bad_status 'vips[0].health.http_status: out of range 100..599' \
	'{"vips": [{"vip": "'$V'", "health": {"http_status": 600}}]}'
bad_file file_bad_path "vips[0].health: HTTP path must begin with '/'" \
	'{"vips": [{"vip": "'$V'", "health": {"http_path": "x"}}]}'
bad_file file_unknown_setting 'vips[0].health.interval: unknown health setting' \
	'{"vips": [{"vip": "'$V'", "health": {"interval": "2s"}}]}'
bad_file file_health_not_an_object 'vips[0].health: must be an object' \
	'{"vips": [{"vip": "'$V'", "health": "tcp"}]}'
bad_file file_default_is_left_out 'vips[0].health.kind: leave the key out for the default' \
	'{"vips": [{"vip": "'$V'", "health": {"kind": "default"}}]}'
bad_file file_bad_backend_override_in_last_vip_changes_nothing \
	'vips[1].backends[0]: health: timeout 5s is not below interval 2s' \
	'{"vips": ['"$ok_vip"', {"vip": "'$W'", "backends": [{"addr": "198.51.100.21", "health": {"timeout_ms": 5000}}]}]}'

# --- found down: flags kept, out of the table ---------------------------------

# set_flags ID FLAGS: write the flags byte of backend record ID, as the
# checker's xlb_backend_set_health does (without the table swap).
set_flags() {
	local -a v
	v=($(bpftool -j map lookup pinned "$PIN/xlb_backends" key "$1" 0 0 0 | jq -r '.value[]'))
	v[29]=$(printf '0x%02x' "$2")
	bpftool map update pinned "$PIN/xlb_backends" key "$1" 0 0 0 value "${v[@]}"
}
XLB_BE_F_IN_USE=1
XLB_BE_F_DOWN=4
id1=$(backend_field $V $B1 id)
set_flags "$id1" $((XLB_BE_F_IN_USE | XLB_BE_F_DOWN))
x backend set $V $B2 --weight 3
tl_check down_backend_leaves_the_table_at_the_next_rebuild test \
	"$(backend_field $V $B1 slots) $(backend_field $V $B1 weight) $(backend_field $V $B1 out_by_health)" == "0 1 true"
tl_check show_says_out_by_health grep -q "backend $B1 weight 1 slots 0 .* health down out-by-health" <<<"$(x show)"
x -j show >"$TMP/show.json"
instance_dump >"$TMP/before"
x apply "$TMP/show.json" 2>/dev/null
instance_dump >"$TMP/after"
tl_check apply_of_show_j_keeps_down_and_changes_nothing cmp -s "$TMP/before" "$TMP/after"
sed -i 's/"weight":3/"weight":4/' "$TMP/show.json"
x apply "$TMP/show.json" 2>/dev/null
tl_check apply_keeps_down_through_a_rebuild test \
	"$(backend_field $V $B1 slots) $(backend_field $V $B1 out_by_health) $(backend_field $V $B2 weight)" == "0 true 4"
x backend set $V $B1 --weight 5
tl_check backend_set_keeps_down test "$(backend_field $V $B1 slots) $(backend_field $V $B1 weight)" == "0 5"
tl_check stats_text_shows_down grep -q "backend $B1 packets 0 bytes 0 health down downs 0 ups 0 fail-open 0" <<<"$(x stats)"
tl_check stats_json_shows_down test "$(x -j stats | jq -r --arg a $B1 '.vips[].backends[] | select(.addr == $a) | .health_state')" == down
tl_check stats_prometheus_gauge grep -qx "xlb_backend_down{vip=\"$V\",backend=\"$B1\"} 1" <<<"$(x stats --prometheus)"
tl_check stats_prometheus_counters grep -qx "xlb_backend_health_downs_total{vip=\"$V\",backend=\"$B2\"} 0" <<<"$(x stats --prometheus)"

set_flags "$(backend_field $V $B2 id)" $((XLB_BE_F_IN_USE | XLB_BE_F_DOWN))
x backend set $V $B2 --weight 3
s1=$(backend_field $V $B1 slots)
fo=$(x -j show | jq -r --arg v $V '.vips[] | select(.vip == $v) | .fail_open')
tl_check all_down_fails_open test "$((s1 > 0)) $(backend_field $V $B1 out_by_health) $fo" == "1 false true"
tl_check all_down_table_is_not_empty test \
	"$(x -j show | jq -r --arg v $V '.vips[] | select(.vip == $v) | .slots_without_backend')" == 0
tl_check show_says_fail_open grep -q "^vip $V .* fail-open" <<<"$(x show)"

set_flags "$id1" $XLB_BE_F_IN_USE
x backend set $V $B2 --weight 4
s1=$(backend_field $V $B1 slots)
s2=$(backend_field $V $B2 slots)
tl_check up_again_comes_back_with_its_weight test \
	"$(backend_field $V $B1 weight) $((s1 + s2)) $((s1 > s2))" == "5 65537 1"
x backend del $V $B2
x backend add $V $B2
tl_check readded_backend_starts_without_flags test \
	"$(backend_field $V $B2 out_by_health) $(backend_field $V $B2 health_state) $(health_of $V $B2)" == "false unknown null"

# --- an instance without the health maps --------------------------------------

rm -f "$PIN/xlb_hc_config" "$PIN/xlb_hc_state"
tl_check no_health_maps_reads_as_no_settings test "$(health_of $V)" == null
x vip set $V --health tcp
tl_check first_setting_creates_the_maps test \
	"$(health_of $V) $(ls "$PIN" | grep -c '^xlb_hc_')" == '{"kind":"tcp"} 2'

exit $TL_FAILED
