#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make install, into a scratch DESTDIR:
#  - every file lands where the Makefile's install target and the README
#    say: xlb, both BPF objects, the man page, the three systemd units,
#    their two settings files and the state file's directory;
#  - the units run the installed xlb, and existing settings files are
#    kept;
#  - the units pass `systemd-analyze verify` (where systemd is installed);
#  - the units' commands work, with the settings file's variables expanded
#    as systemd expands them (the interface and the pin dir replaced by the
#    test's own): xlb.service's start attaches and restores a state that
#    `xlb -j show` saved, as at boot, its stop detaches;
#    xlb-health.service's command runs until SIGTERM and then exits 0;
#    xlb-exporter.service's serves /metrics on loopback until SIGTERM;
#    xlb-host.service's start sets the namespace up as a backend, its
#    reload changes it to other settings, its stop leaves the namespace
#    as it was.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

PREFIX=/usr/local
D=$(mktemp -d)
tl_on_exit "rm -rf $D"

# install ARGS...: make install with this build; its output in $D.log.
install_to() {
	make -C "$XLB_TOP" --no-print-directory -s install BUILD="$BUILD" "$@" >"$D.log" 2>&1
}
tl_on_exit "rm -f $D.log"

if ! install_to DESTDIR="$D/root" PREFIX=$PREFIX; then
	tl_fail install_runs "$(tail -n 3 "$D.log" | tr '\n' ' ')"
	exit 1
fi
R=$D/root
UNITS=$R$PREFIX/lib/systemd/system

missing=
for f in "sbin/xlb 755" "lib/xlb/xlb.bpf.o 644" "lib/xlb/xlb.frags.bpf.o 644" \
	 "lib/xlb/decap.bpf.o 644" "lib/xlb/decap.frags.bpf.o 644" \
	 "share/man/man8/xlb.8 644" "lib/systemd/system/xlb.service 644" \
	 "lib/systemd/system/xlb-health.service 644" \
	 "lib/systemd/system/xlb-exporter.service 644" \
	 "lib/systemd/system/xlb-host.service 644"; do
	set -- $f
	[[ $(stat -c %a "$R$PREFIX/$1" 2>/dev/null) == "$2" ]] || missing+=" $PREFIX/$1"
done
[[ -f $R/etc/default/xlb && -f $R/etc/default/xlb-host && -d $R/etc/xlb ]] ||
	missing+=" /etc/default/xlb, /etc/default/xlb-host or /etc/xlb/"
if [[ -n $missing ]]; then tl_fail install_puts_every_file "missing or wrong mode:$missing"; else tl_pass install_puts_every_file; fi
tl_check install_objects_are_the_build sh -c "cmp -s '$R$PREFIX/lib/xlb/decap.bpf.o' '$BUILD/decap.bpf.o' &&
	cmp -s '$R$PREFIX/lib/xlb/decap.frags.bpf.o' '$BUILD/decap.frags.bpf.o'"

# Every command of the units is the installed xlb, and nothing is left
# to fill in.
execs=$(grep -h '^Exec' "$UNITS"/xlb*.service)
tl_check units_run_the_installed_xlb \
	test -n "$execs" -a -z "$(grep -v "^Exec[A-Za-z]*=-\{0,1\}$PREFIX/sbin/xlb " <<<"$execs")"
tl_check install_leaves_no_placeholder \
	sh -c "! grep -rl '@[A-Z]*@' '$UNITS' '$R/etc/default/xlb' '$R/etc/default/xlb-host'"

cp "$R/etc/default/xlb" "$D/settings"
cp "$R/etc/default/xlb-host" "$D/host-settings"
echo "XLB_DEV=bond0" >"$R/etc/default/xlb"
echo "XLB_HOST_DEV=bond1" >"$R/etc/default/xlb-host"
install_to DESTDIR="$R" PREFIX=$PREFIX
tl_check install_keeps_existing_settings grep -qx XLB_DEV=bond0 "$R/etc/default/xlb"
tl_check install_keeps_existing_host_settings grep -qx XLB_HOST_DEV=bond1 "$R/etc/default/xlb-host"
install_to DESTDIR="$R" PREFIX=$PREFIX UNITDIR=/lib/systemd/system
tl_check install_takes_unitdir test -f "$R/lib/systemd/system/xlb.service"

# systemd-analyze checks the commands' paths too: install where the test
# can run them, with no DESTDIR.
if ! command -v systemd-analyze >/dev/null; then
	tl_skip units_pass_systemd_analyze_verify "no systemd-analyze (systemd is not installed)"
else
	V=$D/verify
	if install_to PREFIX="$V/usr" SYSCONFDIR="$V/etc" &&
	   out=$(MANPATH=$V/usr/share/man systemd-analyze verify \
		 "$V/usr/lib/systemd/system/xlb.service" \
		 "$V/usr/lib/systemd/system/xlb-health.service" \
		 "$V/usr/lib/systemd/system/xlb-exporter.service" \
		 "$V/usr/lib/systemd/system/xlb-host.service" 2>&1) && [[ -z $out ]]; then
		tl_pass units_pass_systemd_analyze_verify
	else
		tl_fail units_pass_systemd_analyze_verify "$(tail -n 3 "$D.log") $out"
	fi
fi

tl_require_root unit_commands || exit "$TL_FAILED"
loader_setup inst || { tl_fail unit_commands_setup "cannot create namespaces or a pin dir"; exit 1; }

# The settings as installed, then the test's interface and instance.
declare -A ENV
while IFS='=' read -r k v; do
	[[ $k =~ ^[A-Z_]+$ ]] && ENV[$k]=$v
done < <(cat "$D/settings" "$D/host-settings")
ENV[XLB_DEV]=v0
ENV[XLB_OPTS]="--pin-dir $PIN"
ENV[XLB_ATTACH_OPTS]="--mode generic"
ENV[XLB_STATE]=$TMP/state.json

# unit_cmd UNIT KEY [N]: CMD = the Nth KEY= command of UNIT, its $VAR
# words split as systemd splits them, run by the installed xlb.
unit_cmd() {
	local line w v more=()
	line=$(grep "^$2=" "$UNITS/$1" | sed -n "${3:-1}p")
	line=${line#*=}
	CMD=()
	read -ra words <<<"$line"
	for w in "${words[@]}"; do
		if [[ $w =~ ^\$([A-Z_]+)$ ]]; then
			v=${ENV[${BASH_REMATCH[1]}]-}
			read -ra more <<<"$v"
			CMD+=("${more[@]}")
		else
			CMD+=("$w")
		fi
	done
	CMD[0]=$R${CMD[0]#-}	# "-": systemd ignores the command's failure
}
run_unit_cmd() { unit_cmd "$@" && tl_in "$NS" "${CMD[@]}"; }

# A state saved from a configured instance, as the settings file says;
# the balancer's address on v0 (probes leave from it), IPv6 on.
tl_in "$NS" sysctl -qw net.ipv6.conf.v0.disable_ipv6=0 &&
ip -n "$NS" addr add 198.51.100.2/24 dev v0 &&
x attach v0 --mode generic >/dev/null 2>&1 &&
x config set src4 198.51.100.2 &&
x vip add 192.0.2.10:80/tcp --table-size 251 &&
x backend add 192.0.2.10:80/tcp 198.51.100.11 2>/dev/null &&
x backend add 192.0.2.10:80/tcp 198.51.100.12 --weight 3 2>/dev/null &&
x -j show >"${ENV[XLB_STATE]}" &&
x detach v0 || { tl_fail unit_commands_setup "cannot configure the saved instance"; exit 1; }
# What a reboot leaves: no program, no pins.
rm -f "$PIN"/xlb_*
config() { jq -S 'del(.pin_dir) | del(.vips[].backends[].flows)' "$@"; }

if run_unit_cmd xlb.service ExecStart 1 >/dev/null 2>&1 && run_unit_cmd xlb.service ExecStart 2 2>/dev/null; then
	tl_pass xlb_service_starts
else
	tl_fail xlb_service_starts "${CMD[*]}"
fi
# xlb_xdp itself, or libxdp's dispatcher in front of it where the kernel
# takes freplace programs (the vmtest VM's).
attached=$(ip -n "$NS" -j link show v0 | jq -r '.[0].xdp.prog.name // empty')
tl_check xlb_service_attaches test "$attached" == xlb_xdp -o "$attached" == xdp_dispatcher
tl_check xlb_service_restores_the_saved_state \
	test "$(x -j show | config)" == "$(config "${ENV[XLB_STATE]}")"

# The checker runs until told to stop, then exits 0.
wait_s=$(e2e_s=2; [[ -n ${VMTEST:-} ]] && e2e_s=10; echo $e2e_s)
unit_cmd xlb-health.service ExecStart
start=$SECONDS
tl_in "$NS" timeout --preserve-status -s TERM "$wait_s" "${CMD[@]}" >"$TMP/health" 2>&1
rc=$?
if [[ $rc -eq 0 && $((SECONDS - start)) -ge $((wait_s - 1)) ]]; then
	tl_pass xlb_health_service_runs_until_sigterm
else
	tl_fail xlb_health_service_runs_until_sigterm \
		"exit status $rc after $((SECONDS - start)) s: $(head -c 300 "$TMP/health")"
fi

# The exporter serves the counters until told to stop, then exits 0.
unit_cmd xlb-exporter.service ExecStart
tl_in "$NS" ip link set lo up
tl_in "$NS" timeout --preserve-status -s TERM "$wait_s" "${CMD[@]}" >"$TMP/exporter" 2>&1 &
exporter=$!
for _ in $(seq 30); do
	tl_in "$NS" curl -s -o "$TMP/metrics" http://127.0.0.1:9688/metrics && break
	sleep 0.2
done
wait "$exporter"
rc=$?
if [[ $rc -eq 0 ]] && grep -q '^xlb_packets_total{reason="forward"}' "$TMP/metrics"; then
	tl_pass xlb_exporter_service_serves_until_sigterm
else
	tl_fail xlb_exporter_service_serves_until_sigterm \
		"exit status $rc: $(head -c 300 "$TMP/exporter") $(head -c 200 "$TMP/metrics")"
fi

tl_check xlb_service_stop_detaches run_unit_cmd xlb.service ExecStopPost
tl_check xlb_service_stopped_leaves_no_program \
	test "$(ip -n "$NS" -j link show v0 | jq -r '.[0].xdp // empty')" == ""

# xlb-host.service on v0 (which has 198.51.100.2): what a backend would
# have, set up, reloaded with other settings, and stopped.
host_state() {
	ip -n "$NS" -d addr
	ip -n "$NS" -d link
	tl_in "$NS" sysctl -a 2>/dev/null | grep -E '^net\.ipv[46]\.conf\.(lo|v0)\.(arp_ignore|arp_announce|forwarding) '
}
host_state >"$TMP/host.before"
ENV[XLB_HOST_DEV]=v0
ENV[XLB_HOST_ARGS]="--vip 192.0.2.20"
if run_unit_cmd xlb-host.service ExecStart 2>"$TMP/host.err" &&
   [[ $(tl_in "$NS" "$R$PREFIX/sbin/xlb" -j host show | jq -c '[.vips, .attached]') == '[["192.0.2.20"],true]' ]]; then
	tl_pass xlb_host_service_sets_up
else
	tl_fail xlb_host_service_sets_up "${CMD[*]}: $(cat "$TMP/host.err")"
fi
ENV[XLB_HOST_ARGS]="--vip 192.0.2.21 --balancers 198.51.100.0/24"
if run_unit_cmd xlb-host.service ExecReload 2>"$TMP/host.err" &&
   [[ $(tl_in "$NS" "$R$PREFIX/sbin/xlb" -j host show | jq -c '[.vips, .check_source]') == '[["192.0.2.21"],true]' ]]; then
	tl_pass xlb_host_service_reload_changes_it
else
	tl_fail xlb_host_service_reload_changes_it "${CMD[*]}: $(cat "$TMP/host.err")"
fi
run_unit_cmd xlb-host.service ExecStopPost 2>"$TMP/host.err"
host_state >"$TMP/host.after"
if cmp -s "$TMP/host.before" "$TMP/host.after" && [[ ! -s $TMP/host.err ]]; then
	tl_pass xlb_host_service_stop_leaves_it_as_before
else
	tl_fail xlb_host_service_stop_leaves_it_as_before "$(cat "$TMP/host.err") $(diff "$TMP/host.before" "$TMP/host.after" | head -5)"
fi
exit "$TL_FAILED"
