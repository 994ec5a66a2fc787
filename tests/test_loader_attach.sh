#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `xlb attach` and `xlb detach` through libxdp, on a veth in a namespace of
# the test's own, maps in a pin dir of the test's own:
#  - with the libxdp dispatcher (kernels that accept freplace, e.g. the
#    vmtest VM), a second XDP program joins xlb on the interface and both
#    are listed by xdp-loader; without it (this project's CI host refuses
#    freplace), xlb is attached alone and `xlb attach` says so plainly;
#  - either way the attached xlb sees the frames arriving on the device;
#  - a second attach, a missing device, a pin dir off bpffs and a missing
#    instance each give one clear error;
#  - a veth at MTU 9000 takes xlb in native mode (multi-buffer XDP);
#  - a first attach gives the instance a random seed;
#  - an attach that fails after the program went on takes it off again;
#  - detach removes the program and keeps the configuration.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

tl_require_root loader_attach || exit 0
loader_setup att || { tl_fail loader_attach_setup "cannot create namespaces or a pin dir"; exit 1; }

if ! x -j attach v0 --mode generic >"$TMP/attach.json" 2>"$TMP/attach.err"; then
	tl_fail attach "$(cat "$TMP/attach.err")"
	exit 1
fi
tl_pass attach
if jq -e '.dispatcher == false' "$TMP/attach.json" >/dev/null; then
	# The kernel refused freplace: libxdp attached xlb alone, and xlb says so.
	echo "  $(cat "$TMP/attach.err")"
	tl_check attach_reports_single_program_fallback \
		grep -q 'without the libxdp dispatcher.*no other XDP program can share v0' "$TMP/attach.err"
else
	# The dispatcher: a second program joins xlb on the interface.
	if tl_in "$NS" xdp-loader load -m skb v0 "$BUILD/pass.bpf.o" >"$TMP/load" 2>&1 &&
	   tl_in "$NS" xdp-loader status v0 >"$TMP/status" 2>&1 &&
	   grep -q xlb_xdp "$TMP/status" && grep -q xdp_pass "$TMP/status"; then
		tl_pass attach_shares_the_interface_under_the_dispatcher
	else
		tl_fail attach_shares_the_interface_under_the_dispatcher \
			"$(cat "$TMP/load" "$TMP/status" 2>/dev/null)"
	fi
	tl_check attach_under_the_dispatcher_is_not_reported_as_fallback \
		sh -c "! grep -q 'without the libxdp dispatcher' $TMP/attach.err"
fi

# A frame arriving on v0 runs through xlb: UDP to an address that is no
# VIP, counted pass_not_vip (the peer's ARP for it passes xlb as well).
ip -n "$PEER" addr add 198.51.100.2/24 dev v1
ip -n "$NS" addr add 198.51.100.1/24 dev v0
tl_in "$PEER" bash -c 'echo probe >/dev/udp/198.51.100.1/9'
for ((try = 0; try < 20; try++)); do
	(($(x -j stats | jq '.counters.pass_not_vip.packets') >= 1)) && break
	sleep 0.1
done
tl_check attached_xlb_sees_the_frames test "$(x -j stats | jq '.counters.pass_not_vip.packets')" -ge 1

expect_error attach_twice_is_refused "already attached to v0" x attach v0 &&
	tl_pass attach_twice_is_refused
expect_error attach_missing_device_is_refused "no device nosuchdev" x attach nosuchdev &&
	tl_pass attach_missing_device_is_refused
ip -n "$NS" link add v2 type veth peer name v3
expect_error attach_off_bpffs_is_refused "is not on a bpf filesystem" \
	tl_in "$NS" "$XLB" --pin-dir "$TMP/pins" attach v2 &&
	tl_check attach_off_bpffs_is_refused test ! -e "$TMP/pins"
# A veth at MTU 9000 takes xlb natively: its program is multi-buffer
# capable (jumbo frames), where a single-buffer one is refused there.
ip -n "$NS" link add v4 mtu 9000 type veth peer name v5 mtu 9000
ip -n "$NS" link set v4 up && ip -n "$NS" link set v5 up
tl_pin_dir JUMBO jumbo
if tl_in "$NS" "$XLB" --pin-dir "$JUMBO" attach v4 --mode native >"$TMP/jumbo" 2>&1; then
	tl_pass attach_at_mtu_9000_in_native_mode
	tl_in "$NS" "$XLB" --pin-dir "$JUMBO" detach v4 >/dev/null 2>&1
else
	tl_fail attach_at_mtu_9000_in_native_mode "$(cat "$TMP/jumbo")"
fi
ip -n "$NS" link del v4
tl_pin_dir EMPTY empty
expect_error missing_instance_is_named "no xlb instance in $EMPTY: attach first" \
	"$XLB" --pin-dir "$EMPTY" show && tl_pass missing_instance_is_named

# A step after the attach fails (here: another command holds the
# instance's lock past the wait): attach takes the program off again, so
# the device is as it was and the next attempt succeeds.
ip -n "$NS" link set v2 up
ip -n "$NS" link set v3 up
flock "$PIN" sleep 13 &
locker=$!
sleep 0.5
if x attach v2 --mode generic >"$TMP/out" 2>"$TMP/err"; then
	tl_fail failed_attach_rolls_back "attach succeeded while the instance was locked"
elif tl_in "$NS" xdp-loader status v2 2>&1 | grep -q xlb_xdp; then
	tl_fail failed_attach_rolls_back "xlb left on v2: $(cat "$TMP/err")"
else
	wait "$locker"
	tl_check failed_attach_rolls_back x attach v2 --mode generic
	x detach v2
fi
wait "$locker" 2>/dev/null

seed=$(x -j config show | jq -r .seed)
tl_check first_attach_sets_a_random_seed \
	test "${#seed}" -eq 32 -a "$seed" != 00000000000000000000000000000000

x vip add 192.0.2.20:80/tcp
x detach v0
tl_check detach_removes_xlb sh -c "! nsenter --net=/run/netns/$NS xdp-loader status v0 2>&1 | grep -q xlb_xdp"
tl_check detach_keeps_the_configuration test "$(x -j show | jq -r '.vips[0].vip')" == 192.0.2.20:80/tcp
expect_error detach_twice_is_refused "xlb is not attached to v0" x detach v0 &&
	tl_pass detach_twice_is_refused
x attach v0 --mode generic >/dev/null 2>&1
tl_check attach_again_finds_the_configuration \
	test "$(x -j show | jq -r '.vips[0].vip') $(x -j config show | jq -r .seed)" == "192.0.2.20:80/tcp $seed"
tl_in "$NS" xdp-loader unload -a v0 >/dev/null 2>&1

exit $TL_FAILED
