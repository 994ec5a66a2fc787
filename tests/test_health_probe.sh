#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Health probes travel the traffic's path (loader/health/probe.h,
# hc_path.h, bpf/hc.bpf.c), on the demo's topology with xlb attached, run
# by build/tools/xlb-probe from the balancer. Each VIP (IPv4 and IPv6, TCP
# and UDP) has three backends of mixed families (b1, b2, b3), so probes
# go out in every pairing of inner and outer family.
#  - a probe of each kind (tcp, http, udp) to each backend is up, and the
#    backend that answers is the one probed (xlb-echo answers its name);
#  - the backends of GUE VIPs (`--encap gue`) are probed in GUE, which
#    their decap.bpf.o takes (its pass_gue counter rises): up; a backend
#    whose decap.bpf.o listens on another GUE port: down;
#  - a backend that answers ping but lacks the VIP on its loopback: down
#    (tcp and udp), with "timeout" after the probe's own timeout, while
#    the others stay up;
#  - a backend whose decapsulation is removed: down;
#  - a stopped service: down, "connection refused" (tcp by the backend's
#    reset, udp by its ICMP port unreachable);
#  - the rule and route are gone after a run, and a run killed with
#    kill -9 leaves them for the next run to replace (one rule, not two);
#  - xlb stats shows the probe path's counters (text, -j, --prometheus)
#    once a run pinned them, and nothing of them before;
#  - a bad probe: one error line, nothing installed.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/e2e_lib.sh"

TOPO_BACKENDS=3
# The probes go to backends of the other family too (an IPv6 VIP on an
# IPv4 backend): decap.bpf.o takes every combination, where the kernel's
# ipip and ip6tnl devices take no IPv6 in IPv4 (that is sit's).
TOPO_DECAP=xdp
PROBE=$BUILD/tools/xlb-probe
TIMEOUT_MS=$(e2e_count_for 500 3000)
HC_MARK=0x584c0000/0xffff0000
HC_TABLE=22604

e2e_up probe_topology || exit 1
if ! topo_attach 1 >"$E2E_TMP/attach.log" 2>&1; then
	tl_fail probe_attach "$(tr '\n' ' ' <"$E2E_TMP/attach.log")"
	exit 1
fi
LB=${TOPO_NS_LB[1]}
PIN=$(topo_pin_dir 1)
vip4=${TOPO_VIP4[1]} vip6=${TOPO_VIP6[1]}
port=$TOPO_PORT uport=$TOPO_UDP_PORT

# b1 and b3 in the VIP's family, b2 in the other one.
be_of() {
	local vip=$1 k=$2 v6=0
	[[ $vip == *:* ]] && v6=1
	((k == 2)) && v6=$((1 - v6))
	if ((v6)); then echo "${TOPO_BE6[k]}"; else echo "${TOPO_BE4[k]}"; fi
}
conf=$(for vip in "$vip4:$port/tcp" "$vip4:$uport/udp" "[$vip6]:$port/tcp" "[$vip6]:$uport/udp"; do
	for k in 1 2 3; do echo "$vip $(be_of "$vip" $k)"; done
done | jq -R -s --arg src4 "${TOPO_LB4[1]}" --arg src6 "${TOPO_LB6[1]}" '
	[split("\n")[] | select(length > 0) | split(" ")] as $pairs |
	{ config: { src4: $src4, src6: $src6 },
	  vips: [$pairs | group_by(.[0])[] |
		 { vip: .[0][0], backends: [.[] | { addr: .[1], weight: 1 }] }] }')
e2e_xlb probe_config 1 apply - <<<"$conf" >/dev/null || exit 1
topo_xlb 1 -j show >"$E2E_TMP/show.json"

# id VIP K: the backend id of b<K> under VIP (as `xlb show` names it).
id() {
	jq -r --arg vip "$1" --arg addr "$(be_of "$1" "$2")" '
		.vips[] | select(.vip == $vip) | .backends[] |
		select(.addr == $addr) | .id' "$E2E_TMP/show.json"
}

# probe OUT PROBE...: xlb-probe on the balancer; its lines in OUT.
probe() {
	local out=$1; shift
	topo_in "$LB" "$PROBE" --pin-dir "$PIN" --timeout-ms "$TIMEOUT_MS" "$@" \
		>"$out" 2>"$out.err"
}

# field OUT N F: field F (2 state, 3 rtt, 4 error, 5 answer) of probe N.
field() { awk -F'\t' -v n="$2" -v f="$3" '$1 == n { print $f }' "$1"; }

# expect CASE OUT N STATE [ERROR [ANSWER_PREFIX]]: probe N of OUT.
expect() {
	local name=$1 out=$2 n=$3 state=$4 error=${5:-} answer=${6:-}
	local got
	got=$(field "$out" "$n" 2)
	if [[ $got != "$state" ]]; then
		tl_fail "$name" "probe $n: $got, expected $state ($(awk -F'\t' -v n="$n" '$1 == n' "$out" | tr '\t' ' '))"
		return 1
	fi
	if [[ -n $error && $(field "$out" "$n" 4) != "$error" ]]; then
		tl_fail "$name" "probe $n: error '$(field "$out" "$n" 4)', expected '$error'"
		return 1
	fi
	if [[ -n $answer && $(field "$out" "$n" 5) != "$answer"* ]]; then
		tl_fail "$name" "probe $n: answer '$(field "$out" "$n" 5)', expected '$answer...'"
		return 1
	fi
}

# down_down_up CASE PROBE1 PROBE2 PROBE3: probes 1 and 2 time out, probe 3
# (a backend left as it was) is up; their lines in $E2E_TMP/CASE. Fails
# CASE when not; passing it is the caller's.
down_down_up() {
	local name=$1 out=$E2E_TMP/$1; shift
	if ! probe "$out" "$@"; then
		tl_fail "$name" "xlb-probe: $(cat "$out.err")"
		return 1
	fi
	sed 's/^/  /' "$out"
	expect "$name" "$out" 1 down timeout &&
	expect "$name" "$out" 2 down timeout &&
	expect "$name" "$out" 3 up
}

# probe_path_stats OUT: the probe path's counters as each format of xlb
# stats gives them, "encap PACKETS" lines (text, json, prometheus) in OUT;
# an empty line for a format without them.
probe_path_stats() {
	{
		topo_xlb 1 stats | awk '$1 == "probe-path" { on = 1; next }
			on && $1 == "encap" { print "encap " $2; f = 1 }
			END { if (!f) print "" }'
		topo_xlb 1 -j stats | jq -r '.probe_path.encap.packets // "" |
			if . == "" then "" else "encap \(.)" end'
		topo_xlb 1 stats --prometheus | awk '
			/^xlb_hc_packets_total\{reason="encap"\}/ { print "encap " $2; f = 1 }
			END { if (!f) print "" }'
	} >"$1"
}
probe_path_stats "$E2E_TMP/stats_before"
if [[ $(tr -d '\n' <"$E2E_TMP/stats_before") == "" ]] &&
   ! topo_xlb 1 stats | grep -q probe-path &&
   ! topo_xlb 1 stats --prometheus | grep -q '^xlb_hc_'; then
	tl_pass stats_without_probe_path_counters_before_a_run
else
	tl_fail stats_without_probe_path_counters_before_a_run "$(tr '\n' ' ' <"$E2E_TMP/stats_before")"
fi

# ---- every kind, every backend, both VIP families ----
for fam in 4 6; do
	name=every_kind_reaches_the_backend_probed_ipv$fam
	if ((fam == 4)); then v=$vip4 tv="$vip4:$port/tcp" uv="$vip4:$uport/udp"
	else v=$vip6 tv="[$vip6]:$port/tcp" uv="[$vip6]:$uport/udp"; fi
	args=() want=()
	for k in 1 2 3; do
		args+=("tcp,$(id "$tv" $k),$v,$port" "http,$(id "$tv" $k),$v,$port,/,200"
		       "udp,$(id "$uv" $k),$v,$uport,hello,b$k")
		want+=("" "b$k" "b$k hello")
	done
	out=$E2E_TMP/$name
	if ! probe "$out" "${args[@]}"; then
		tl_fail "$name" "xlb-probe: $(cat "$out.err")"
		continue
	fi
	sed 's/^/  /' "$out"
	ok=1
	for i in "${!args[@]}"; do
		expect "$name" "$out" $((i + 1)) up "" "${want[i]}" || { ok=0; break; }
	done
	((ok)) && tl_pass "$name"
done

# The probe path leaves nothing behind.
if [[ -z $(topo_in "$LB" ip rule | grep -i "fwmark $HC_MARK") &&
      -z $(topo_in "$LB" ip -4 route show table $HC_TABLE 2>/dev/null) &&
      -z $(topo_in "$LB" ip -6 route show table $HC_TABLE 2>/dev/null) ]]; then
	tl_pass path_removed_after_a_run
else
	tl_fail path_removed_after_a_run "$(topo_in "$LB" ip rule | grep -i fwmark)"
fi

# And it counted what it encapsulated, as the pinned per-CPU counters
# give it (key 0 is "encap", include/hc.h) and as xlb stats shows it in
# each format.
encap=$(bpftool -j map dump pinned "$PIN/xlb_hc_stats" 2>/dev/null |
	jq '[.[] | select(.formatted.key == 0) | .formatted.values[].value.packets] | add // 0')
echo "  encapsulated: ${encap:-?} packets"
if [[ ${encap:-0} -gt 0 ]]; then
	tl_pass program_counts_what_it_encapsulates
else
	tl_fail program_counts_what_it_encapsulates "encap counter: '${encap:-}'"
fi
probe_path_stats "$E2E_TMP/stats_after"
if [[ ${encap:-0} -gt 0 &&
      $(cat "$E2E_TMP/stats_after") == "$(printf 'encap %s\n' "$encap" "$encap" "$encap")" ]]; then
	tl_pass stats_shows_probe_path_counters
else
	tl_fail stats_shows_probe_path_counters "$(tr '\n' ' ' <"$E2E_TMP/stats_after")(bpftool: ${encap:-?})"
fi

# ---- GUE VIPs: their probes travel in GUE ----
# decap_map K NAME: the id of map NAME of the decap.bpf.o on b<K>'s eth0.
decap_map() {
	local prog map
	prog=$(topo_in "${TOPO_NS_BE[$1]}" ip -j link show dev eth0 | jq '.[0].xdp.prog.id // empty')
	[[ -n $prog ]] || return 1
	for map in $(bpftool -j prog show id "$prog" | jq -r '.map_ids[]'); do
		if [[ $(bpftool -j map show id "$map" | jq -r .name) == "$2" ]]; then
			echo "$map"
			return 0
		fi
	done
	return 1
}

# pass_gue K: GUE packets b<K>'s decap.bpf.o gave its stack (counter 1,
# pass_gue, of include/decap.h).
pass_gue() {
	bpftool -j map dump id "$(decap_map "$1" xlb_decap_stats)" | jq '[.[] |
		.formatted // . | select(.key == 1) | .values[].value.packets] | add // 0'
}

# decap_port K PORT: decap.bpf.o's GUE port on b<K> (docs/backend.md).
decap_port() {
	topo_host_setup "$1" --gue-port "$2"
}

name=gue_vip_backends_are_probed_up_in_gue
tv4="$vip4:$port/tcp" tv6="[$vip6]:$port/tcp"
if e2e_xlb "$name" 1 vip set "$tv4" --encap gue &&
     e2e_xlb "$name" 1 vip set "$tv6" --encap gue; then
	before=() args=()
	for k in 1 2 3; do
		before[k]=$(pass_gue $k)
		args+=("tcp,$(id "$tv4" $k),$vip4,$port" "http,$(id "$tv6" $k),$vip6,$port,/,200")
	done
	out=$E2E_TMP/$name
	if probe "$out" "${args[@]}"; then
		sed 's/^/  /' "$out"
		ok=1
		for i in "${!args[@]}"; do
			expect "$name" "$out" $((i + 1)) up "" || { ok=0; break; }
		done
		for k in 1 2 3; do
			n=$(pass_gue $k)
			echo "  b$k: decap.bpf.o passed $((n - ${before[k]})) GUE packets"
			if ((ok && n - ${before[k]} < 2)); then
				tl_fail "$name" "b$k's decap.bpf.o saw no GUE probe"
				ok=0
			fi
		done
		((ok)) && tl_pass "$name"
	else
		tl_fail "$name" "xlb-probe: $(cat "$out.err")"
	fi

	# b1 expects GUE on port 6081: its probes, still sent to 6080 (the
	# instance's setting), are not decapsulated.
	name=backend_taking_gue_on_another_port_is_down
	if ! decap_port 1 6081; then
		tl_fail "$name" "cannot set b1's GUE port"
	elif down_down_up "$name" "tcp,$(id "$tv4" 1),$vip4,$port" \
			"tcp,$(id "$tv6" 1),$vip6,$port" \
			"tcp,$(id "$tv4" 2),$vip4,$port"; then
		tl_pass "$name"
	fi
	decap_port 1 6080
fi
topo_xlb 1 vip set "$tv4" --encap ipip >/dev/null
topo_xlb 1 vip set "$tv6" --encap ipip >/dev/null

# ---- a backend without the VIP on its loopback: down, the others up ----
name=backend_without_vip_on_loopback_is_down
topo_in "${TOPO_NS_BE[1]}" ip addr del "$vip4/32" dev lo
if down_down_up "$name" "tcp,$(id "$vip4:$port/tcp" 1),$vip4,$port" \
		"udp,$(id "$vip4:$uport/udp" 1),$vip4,$uport,hello,b1" \
		"tcp,$(id "$vip4:$port/tcp" 2),$vip4,$port"; then
	rtt=$(field "$E2E_TMP/$name" 1 3)
	if ((rtt >= TIMEOUT_MS * 1000)); then tl_pass "$name"
	else tl_fail "$name" "timed out after $rtt us, before the timeout"; fi
fi
topo_in "${TOPO_NS_BE[1]}" ip addr add "$vip4/32" dev lo

# ---- a backend without decapsulation: down ----
name=backend_without_decapsulation_is_down
topo_in "${TOPO_NS_BE[3]}" ip link set dev eth0 xdp off
down_down_up "$name" "tcp,$(id "$vip4:$port/tcp" 3),$vip4,$port" \
	"tcp,$(id "[$vip6]:$port/tcp" 3),$vip6,$port" \
	"tcp,$(id "$vip4:$port/tcp" 1),$vip4,$port" && tl_pass "$name"

# ---- a stopped service: refused ----
name=stopped_service_is_refused
# The namespace's only process is its xlb-echo.
server=$(ip netns pids "${TOPO_NS_BE[2]}")
if [[ -z $server ]]; then
	tl_fail "$name" "no server found on b2"
else
	kill "$server"
	out=$E2E_TMP/$name
	if probe "$out" "tcp,$(id "$vip4:$port/tcp" 2),$vip4,$port" \
			"udp,$(id "[$vip6]:$uport/udp" 2),$vip6,$uport,hello" \
			"http,$(id "[$vip6]:$port/tcp" 2),$vip6,$port,/,200"; then
		sed 's/^/  /' "$out"
		expect "$name" "$out" 1 down "connection refused" &&
		expect "$name" "$out" 2 down "connection refused" &&
		expect "$name" "$out" 3 down "connection refused" && tl_pass "$name"
	else
		tl_fail "$name" "xlb-probe: $(cat "$out.err")"
	fi
fi

# ---- a run killed with kill -9 leaves the path; the next replaces it ----
# (The probe is b3's, which has had no decapsulation since the case above:
# it waits for its minute until the kill.)
name=killed_run_is_replaced
topo_in "$LB" "$PROBE" --pin-dir "$PIN" --timeout-ms 60000 \
	"tcp,$(id "$vip4:$port/tcp" 3),$vip4,$port" >/dev/null 2>&1 &
killed=$!
for ((try = 0; try < 100; try++)); do
	topo_in "$LB" ip rule | grep -qi "fwmark $HC_MARK" && break
	sleep 0.05
done
kill -9 $killed
wait $killed 2>/dev/null
left=$(topo_in "$LB" ip rule | grep -ci "fwmark $HC_MARK")
out=$E2E_TMP/$name
if ((left != 1)); then
	tl_fail "$name" "$left rules after the kill, expected 1 (the killed run's)"
elif ! probe "$out" "http,$(id "$vip4:$port/tcp" 1),$vip4,$port,/,200"; then
	tl_fail "$name" "xlb-probe: $(cat "$out.err")"
else
	expect "$name" "$out" 1 up "" b1 &&
	if [[ -z $(topo_in "$LB" ip rule | grep -i "fwmark $HC_MARK") ]]; then
		tl_pass "$name"
	else
		tl_fail "$name" "a rule is left: $(topo_in "$LB" ip rule | grep -i fwmark)"
	fi
fi

# ---- bad input ----
name=bad_probe_is_one_error_line
topo_in "$LB" "$PROBE" --pin-dir "$PIN" "ping,1,$vip4,80" >"$E2E_TMP/bad" 2>"$E2E_TMP/bad.err"
rc=$?
if [[ $rc -eq 1 && ! -s $E2E_TMP/bad && $(wc -l <"$E2E_TMP/bad.err") -eq 1 ]] &&
   grep -q "bad probe kind" "$E2E_TMP/bad.err" &&
   [[ -z $(topo_in "$LB" ip rule | grep -i "fwmark $HC_MARK") ]]; then
	tl_pass "$name"
else
	tl_fail "$name" "exit $rc: $(cat "$E2E_TMP/bad.err")"
fi

exit $TL_FAILED
