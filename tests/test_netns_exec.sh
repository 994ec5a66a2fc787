#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `ip netns exec NS xlb ...` runs xlb in a mount namespace of its own with
# a fresh /sys, where /sys/fs/bpf is no bpffs: a bpffs xlb mounted there
# would vanish with the command, and the instance with it. xlb notices
# (its mount namespace is not init's) and refuses, saying what to do:
#  - attach refuses with one line naming nsenter, and attaches nothing;
#  - an instance command (show) refuses likewise, instead of "no xlb
#    instance";
#  - where the mount namespace is init's (here: a fresh PID namespace,
#    whose init shares it) and nothing mounted bpffs, xlb mounts it itself
#    as before: attach, then show, work.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

tl_require_root netns_exec || exit 0
loader_setup nx || { tl_fail netns_exec_setup "cannot create namespaces or a pin dir"; exit 1; }
tl_on_exit "ip -n $NS link set dev v0 xdpgeneric off"
has_program() { [[ -n $(ip -n "$NS" -j link show v0 | jq -r '.[0].xdp.prog.id // empty') ]]; }

if [[ $(ip netns exec "$NS" stat -f -c %T /sys/fs/bpf 2>/dev/null) == bpf_fs ]]; then
	tl_skip netns_exec_refuses "this ip netns exec leaves a bpffs on /sys/fs/bpf"
	exit 0
fi

expect_error netns_exec_attach_refused "nsenter --net=/run/netns/NS" \
	ip netns exec "$NS" "$XLB" --pin-dir "$PIN" attach v0 --mode generic &&
	tl_pass netns_exec_attach_refused
if has_program; then tl_fail netns_exec_attach_attaches_nothing "v0 runs a program"
else tl_pass netns_exec_attach_attaches_nothing; fi
expect_error netns_exec_show_refused "nsenter --net=/run/netns/NS" \
	ip netns exec "$NS" "$XLB" --pin-dir "$PIN" show &&
	tl_pass netns_exec_show_refused

# init's mount namespace without bpffs: every bpffs on /sys/fs/bpf taken
# off in a private copy, where PID 1 (the shell) shares the namespace.
cat >"$TMP/bare.sh" <<EOF
while [[ \$(stat -f -c %T /sys/fs/bpf) == bpf_fs ]]; do umount -l /sys/fs/bpf || exit 2; done
nsenter --net=/run/netns/$NS "$XLB" --pin-dir /sys/fs/bpf/xlb attach v0 --mode generic >/dev/null 2>&1 || exit 3
nsenter --net=/run/netns/$NS "$XLB" --pin-dir /sys/fs/bpf/xlb show >/dev/null || exit 4
nsenter --net=/run/netns/$NS "$XLB" --pin-dir /sys/fs/bpf/xlb detach v0 || exit 5
EOF
unshare --mount --propagation private --pid --fork --mount-proc bash "$TMP/bare.sh" 2>"$TMP/err"
rc=$?
if [[ $rc -eq 0 ]]; then tl_pass bare_host_gets_bpffs_mounted
else tl_fail bare_host_gets_bpffs_mounted "step $rc: $(cat "$TMP/err")"; fi
exit "$TL_FAILED"
