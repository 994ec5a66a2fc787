#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# xlb resolves its backends' next hops and makes their neighbour entries
# in the network namespace it runs in; run from another namespace than
# the device's (same bpffs), it would act on the wrong links. With xlb
# attached to v0 in namespace A and a command run in namespace B, which
# has a link on the backends' subnet:
#  - `xlb backend add` and `xlb apply` are refused with one line naming
#    the device and the namespace to run in, and change nothing;
#  - no neighbour entry appears in B;
#  - `xlb show` works there, with a note that the instance is elsewhere;
#  - in A the same change is taken, and once detached the instance (maps
#    still pinned) takes changes again.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

loader_attached other_netns on || exit 1
tl_netns B onb || { tl_fail other_netns_setup "cannot create namespace B"; exit 1; }
ip -n "$B" link add b0 type veth peer name b1 &&
ip -n "$B" link set b0 up && ip -n "$B" link set b1 up &&
ip -n "$B" addr add 198.51.100.2/24 dev b0 &&
ip -n "$NS" addr add 198.51.100.2/24 dev v0 &&
x config set src4 198.51.100.2 &&
x vip add 192.0.2.10:80/tcp || { tl_fail other_netns_setup "cannot address the links or add a VIP"; exit 1; }
# xb ARGS...: xlb on the same instance, from namespace B.
xb() { tl_in "$B" "$XLB" --pin-dir "$PIN" "$@"; }

WHERE="is attached to v0 in another network namespace: run xlb there (nsenter --net=/run/netns/$NS"
fails_unchanged backend_add_from_another_netns_refused "$WHERE" \
	xb backend add 192.0.2.10:80/tcp 198.51.100.11
echo '{"vips": [{"vip": "192.0.2.10:80/tcp", "backends": [{"addr": "198.51.100.12"}]}]}' >"$TMP/state.json"
fails_unchanged apply_from_another_netns_refused "$WHERE" xb apply "$TMP/state.json"
tl_check no_neighbour_entry_in_the_other_netns test -z "$(ip -n "$B" neigh show)"

if xb show >"$TMP/show" 2>"$TMP/show.err" && grep -q "192.0.2.10:80/tcp" "$TMP/show" &&
   grep -q "note: instance $PIN is attached to v0 in another network namespace" "$TMP/show.err"; then
	tl_pass show_from_another_netns_works_with_a_note
else
	tl_fail show_from_another_netns_works_with_a_note "$(cat "$TMP/show.err")"
fi

tl_check backend_add_in_the_devices_netns_taken x backend add 192.0.2.10:80/tcp 198.51.100.11
x detach v0
tl_check detached_instance_takes_changes x apply "$TMP/state.json"
exit "$TL_FAILED"
