#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The kernel's pktgen against the balancer, run by vmtest/guest.sh inside
# the vmtest VM (the build hosts' kernels have no pktgen). bench/pktgen.sh
# sends UDP to the IPv4 VIP from 100 source addresses for
# VMTEST_PKTGEN_SECONDS (default 5) at a paced rate, out of the router's
# end of the balancer's link, in the topology of scripts/topology.sh:
#  - pktgen sends without errors;
#  - xlb forwards what was sent: its forward counter rises by at least
#    90% of the frames pktgen reports (the rate is one an emulated CPU
#    keeps up with; a datapath that dropped or passed them would not).
set -uo pipefail
. "$(dirname "$0")/../tests/lib/lib.sh"
. "$XLB_TOP/tests/lib/e2e_lib.sh"

SECS=${VMTEST_PKTGEN_SECONDS:-5}
RATE=2000

if [[ ! -x $XLB_TOP/bench/pktgen.sh ]]; then
	tl_skip pktgen_against_balancer "no bench/pktgen.sh"
	exit 0
fi

TOPO_CLIENTS=1
TOPO_BACKENDS=2
e2e_up pktgen_topology || exit 1
e2e_config pktgen_config 1 1 2 || exit 1
mac=$(ip -n "${TOPO_NS_LB[1]}" -br link show dev eth0 | awk '{ print $3 }')
fwd0=$(e2e_stat 1 forward)
if [[ ! $fwd0 =~ ^[0-9]+$ ]]; then
	tl_fail pktgen_config "no forward counter from xlb stats -j"
	exit 1
fi

# lb1 is the router's end of the balancer's eth0: pktgen's frames enter
# the balancer's XDP program directly.
topo_in "$TOPO_NS_RT" "$XLB_TOP/bench/pktgen.sh" -j -i lb1 -m "$mac" \
	-d "${TOPO_VIP4[1]}:$TOPO_UDP_PORT" -s 203.0.113.100-203.0.113.199 \
	-t "$SECS" -r "$RATE" >"$E2E_TMP/pktgen.json" 2>"$E2E_TMP/pktgen.err"
rc=$?
cat "$E2E_TMP/pktgen.json" "$E2E_TMP/pktgen.err"
sent=$(jq -r '.sent // 0' "$E2E_TMP/pktgen.json" 2>/dev/null)
errors=$(jq -r '.errors // 0' "$E2E_TMP/pktgen.json" 2>/dev/null)
sent=${sent:-0} errors=${errors:-0}
tl_check pktgen_sends test "$rc" -eq 0 -a "$sent" -gt 0 -a "$errors" -eq 0

fwd=$(e2e_stat 1 forward)
fwd=$(( ${fwd:-0} - fwd0 ))
echo "  pktgen sent $sent frames in $SECS s; xlb forwarded $fwd"
tl_check balancer_forwards_pktgen_frames test "$sent" -gt 0 -a $((fwd * 10)) -ge $((sent * 9))
exit "$TL_FAILED"
