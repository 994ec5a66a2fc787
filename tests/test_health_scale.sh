#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The health checker in a mass outage, and one checker per instance, on an
# instance of the test's own whose backends are all unreachable (their
# prefix is a blackhole in the balancer's namespace: no neighbour is made,
# nothing leaves; every TCP probe times out):
#  - 1,100 backends under the usual soft limit of 1,024 descriptors: one
#    round (--once, fall 1) takes every one of them down, none is left
#    unknown (the checker raises its soft limit to what they need);
#  - 300 backends under a hard limit of 128: the same, and the probes
#    that could not start are counted as failed, said in one line for
#    their cause; the checker's own work (opening the instance) never
#    runs out of descriptors;
#  - a checker running: a second one is refused with one line naming the
#    first's pid, from another network namespace as from the same one,
#    and nothing of its own is installed; once the first stops, a new one
#    starts.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"

tl_require_root health_scale || exit 0
tl_bpffs
tl_netns NS hs && tl_netns NS2 hs2 && tl_pin_dir PIN hs ||
	{ tl_fail health_scale_setup "cannot create namespaces or a pin dir"; exit 1; }
TMP=$(mktemp -d)
tl_on_exit "rm -rf $TMP"
x() { tl_in "$NS" "$XLB" --pin-dir "$PIN" "$@"; }

# The balancer's v0 holds the outer source; v1 (in NS2) is a peer that
# answers nothing. The backends' prefix goes nowhere.
ip -n "$NS" link add v0 type veth peer name v1 netns "$NS2" &&
	ip -n "$NS" link set v0 up && ip -n "$NS2" link set v1 up &&
	ip -n "$NS" addr add 2001:db8:1::1/64 dev v0 nodad &&
	ip -n "$NS2" addr add 2001:db8:1::2/64 dev v1 nodad &&
	ip -n "$NS" route add blackhole 2001:db8:dead::/96 ||
	{ tl_fail health_scale_setup "cannot build the topology"; exit 1; }
if ! x attach v0 --mode generic >/dev/null 2>"$TMP/err"; then
	tl_fail health_scale_setup "xlb attach: $(cat "$TMP/err")"
	exit 1
fi
tl_on_exit "tl_in $NS xdp-loader unload -a v0 >/dev/null 2>&1"
VIP="[2001:db8:f::10]:80/tcp"

# backends N: the instance holds N unreachable backends of the VIP, each
# checked by tcp with fall 1, so that one round decides.
backends() {
	local i
	for ((i = 1; i <= $1; i++)); do printf '2001:db8:dead::%x\n' "$i"; done |
		jq -R '{ addr: ., weight: 1 }' | jq -s --arg vip "$VIP" '{
			config: { src6: "2001:db8:1::1" },
			vips: [{ vip: $vip, health: { kind: "tcp", interval_ms: 2000,
				timeout_ms: 300, fall: 1 }, backends: . }] }' >"$TMP/state.json"
	x apply "$TMP/state.json" >/dev/null 2>"$TMP/apply.err"
}
# health_count STATE: backends in STATE, as `xlb health show -j` says.
health_count() {
	x -j health show | jq --arg h "$1" '[.backends[] | select(.health == $h)] | length'
}
# once [ULIMIT-ARGS]: one round of the checker, its stderr in $TMP/once.err;
# its exit status.
once() {
	(
		[[ $# -eq 0 ]] || ulimit "$@" || exit 99
		exec nsenter --net="/run/netns/$NS" "$XLB" --pin-dir "$PIN" \
			health run --once --obj "$BUILD/hc.bpf.o"
	) >"$TMP/once.out" 2>"$TMP/once.err"
}

# ---- a mass outage ----
backends 1100 || { tl_fail health_scale_setup "apply of 1,100 backends"; exit 1; }
once -Sn 1024
rc=$?
tl_check soft_limit_run_exits_0 test $rc -eq 0
down=$(health_count down) unknown=$(health_count unknown)
echo "  1,100 backends, soft limit 1,024: $down down, $unknown unknown"
tl_check soft_limit_every_backend_down test "$down" -eq 1100
tl_check soft_limit_none_left_unknown test "$unknown" -eq 0

backends 300 || { tl_fail health_scale_setup "apply of 300 backends"; exit 1; }
once -n 128
rc=$?
down=$(health_count down) unknown=$(health_count unknown)
echo "  300 backends, limit 128: exit $rc, $down down, $unknown unknown; stderr:"
sed 's/^/    /' "$TMP/once.err"
tl_check low_limit_run_exits_0 test $rc -eq 0
tl_check low_limit_every_backend_down test "$down" -eq 300
tl_check low_limit_one_line_per_cause \
	test "$(grep -c 'could not start (Too many open files' "$TMP/once.err")" -eq 1
tl_check low_limit_says_the_limit grep -q 'raise it (LimitNOFILE=, ulimit -n)' "$TMP/once.err"
x -j health show | jq -r '.backends[].last_error' | sort | uniq -c >"$TMP/errors"
tl_check low_limit_failures_say_why grep -q 'cannot start a probe: Too many open files' "$TMP/errors"

# ---- one checker per instance ----
nsenter --net="/run/netns/$NS" "$XLB" --pin-dir "$PIN" health run \
	--obj "$BUILD/hc.bpf.o" >"$TMP/first.log" 2>&1 &
first=$!
tl_on_exit "kill -9 $first 2>/dev/null"
for ((i = 0; i < 100; i++)); do
	grep -q "FLOCK.* $first " /proc/locks && break
	sleep 0.05
done
rules_before=$(ip -n "$NS2" rule list | wc -l)
# second NS CASE: a second checker in NS is refused, naming the first.
second() {
	nsenter --net="/run/netns/$1" "$XLB" --pin-dir "$PIN" health run --once \
		--obj "$BUILD/hc.bpf.o" >"$TMP/second.out" 2>"$TMP/second.err"
	local rc=$?
	# From another namespace, a note that the instance is attached
	# elsewhere may come first: reading it is allowed, checking it not.
	if [[ $rc -eq 1 && ! -s $TMP/second.out &&
	      $(grep -vc '^xlb: note: instance .* is attached to .* in another network namespace' \
		"$TMP/second.err") -eq 1 ]] &&
	   grep -qF "another \`xlb health run\` (pid $first) checks the instance in $PIN" \
		"$TMP/second.err"; then
		tl_pass "$2"
	else
		tl_fail "$2" "exit $rc: $(cat "$TMP/second.out" "$TMP/second.err")"
	fi
}
second "$NS2" second_checker_refused_from_another_namespace
tl_check refused_checker_installs_nothing test "$(ip -n "$NS2" rule list | wc -l)" -eq "$rules_before"
second "$NS" second_checker_refused_in_the_same_namespace
tl_check first_checker_still_runs kill -0 "$first"
kill -TERM "$first"
wait "$first"
tl_check first_checker_stops_cleanly test $? -eq 0
once
tl_check next_checker_starts test $? -eq 0

exit "$TL_FAILED"
