#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# xlb.service as systemd runs it, its commands read from
# systemd/xlb.service.in (@SBINDIR@ the build, @SYSCONFDIR@ a scratch
# directory, the variables those of xlb.default.in with the test's
# interface, pin dir and mode), run in a test namespace in systemd's
# order: start (ExecStart= in order; on a failure ExecStopPost=), reload
# (ExecReload=), stop (ExecStop=, ExecStopPost=), restart (stop, start);
# a "-" command's failure ignored. A bad state file never takes a running
# balancer down:
#  - start with a good state file: attached, serving the file's VIPs;
#  - restart with a bad file: still attached, the last good VIPs and
#    backends, and the start says which file and what is wrong with it;
#  - reload with a bad file: the reload fails, nothing changes;
#  - reload with a good file: it is applied;
#  - start with a bad file and nothing pinned (after a reboot): fails,
#    and leaves the device without a program;
#  - stop detaches.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/loader_lib.sh"

tl_require_root service_restart || exit 0
loader_setup svc || { tl_fail service_setup "cannot create namespaces or a pin dir"; exit 1; }

ETC=$TMP/etc
UNIT=$TMP/xlb.service
mkdir -p "$ETC/default" "$ETC/xlb"
# What make install does to the templates.
subst() { sed -e "s|@SBINDIR@|$(dirname "$XLB")|g" -e "s|@SYSCONFDIR@|$ETC|g" "$1"; }
subst "$XLB_TOP/systemd/xlb.service.in" >"$UNIT"
# The operator's settings: the shipped ones, another interface and pin dir.
{
	subst "$XLB_TOP/systemd/xlb.default.in" | grep -v '^XLB_\(DEV\|OPTS\|ATTACH_OPTS\)='
	echo "XLB_DEV=v0"
	echo "XLB_OPTS=--pin-dir $PIN"
	echo "XLB_ATTACH_OPTS=--mode generic"
} >"$ETC/default/xlb"

# The EnvironmentFile= as systemd reads it: VAR=value lines, no shell.
declare -A ENV
envfile=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$UNIT")
while IFS='=' read -r k v; do
	[[ $k =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] && ENV[$k]=$v
done <"$envfile"
STATE=${ENV[XLB_STATE]}

# unit_exec KEY: each KEY= command of the unit in order, "$VAR" split
# into words and "${VAR}" kept one, as systemd does; stops at the first
# failure of a command without "-" and returns 1. Their stderr is added
# to $TMP/unit.err, which each svc_* empties first.
unit_exec() {
	local line w v ignore words more cmd
	while IFS= read -r line; do
		line=${line#*=}
		ignore=
		[[ $line == -* ]] && { ignore=1; line=${line#-}; }
		cmd=()
		read -ra words <<<"$line"
		for w in "${words[@]}"; do
			if [[ $w =~ ^\$([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
				read -ra more <<<"${ENV[${BASH_REMATCH[1]}]-}"
				cmd+=("${more[@]}")
			elif [[ $w =~ ^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$ ]]; then
				cmd+=("${ENV[${BASH_REMATCH[1]}]-}")
			else
				cmd+=("$w")
			fi
		done
		tl_in "$NS" "${cmd[@]}" >/dev/null 2>>"$TMP/unit.err" || [[ -n $ignore ]] || return 1
	done < <(grep "^$1=" "$UNIT")
}
start() { unit_exec ExecStart && return 0; unit_exec ExecStopPost; return 1; }
stop() { unit_exec ExecStop; unit_exec ExecStopPost; }
svc_start() { : >"$TMP/unit.err"; start; }
svc_stop() { : >"$TMP/unit.err"; stop; }
svc_restart() { : >"$TMP/unit.err"; stop; start; }
# A unit without ExecReload= cannot be reloaded.
svc_reload() { : >"$TMP/unit.err"; grep -q '^ExecReload=' "$UNIT" && unit_exec ExecReload; }

attached() { [[ $(ip -n "$NS" -j link show v0 | jq -r '.[0].xdp.prog.id // empty') != "" ]]; }
config() { x -j show | jq -S 'del(.pin_dir) | del(.vips[].backends[].flows)'; }
file_config() { jq -S 'del(.pin_dir) | del(.vips[].backends[].flows)' "$1"; }
# serving NAME WANT: attached, and the instance's configuration is WANT's.
serving() {
	if ! attached; then
		tl_fail "$1" "no program on v0: $(cat "$TMP/unit.err")"
	elif [[ $(config) != "$(file_config "$2")" ]]; then
		tl_fail "$1" "configuration differs: $(diff <(config) <(file_config "$2") | head -4 | tr '\n' ' ')"
	else
		tl_pass "$1"
	fi
}

# The good state: saved from a configured instance, as the settings file
# says; then what a reboot leaves, no program and no pins.
x attach v0 --mode generic >/dev/null 2>&1 &&
x config set src4 198.51.100.2 &&
x vip add 192.0.2.10:80/tcp --table-size 251 &&
x backend add 192.0.2.10:80/tcp 198.51.100.11 &&
x backend add 192.0.2.10:80/tcp 198.51.100.12 --weight 3 &&
x -j show >"$STATE" &&
x backend add 192.0.2.10:80/tcp 198.51.100.13 &&
x -j show >"$TMP/good2.json" &&
x detach v0 || { tl_fail service_setup "cannot make the saved state"; exit 1; }
cp "$STATE" "$TMP/good.json"
rm -f "$PIN"/xlb_*
# Strict JSON refuses the trailing comma: a file edited by hand.
sed '$ s/}$/,}/' "$TMP/good.json" >"$TMP/bad.json"

if svc_start; then serving service_start_applies_the_state "$TMP/good.json"
else tl_fail service_start_applies_the_state "$(cat "$TMP/unit.err")"; fi

cp "$TMP/bad.json" "$STATE"
if svc_restart; then
	serving service_restart_with_bad_file_keeps_serving "$TMP/good.json"
else
	tl_fail service_restart_with_bad_file_keeps_serving "start failed: $(cat "$TMP/unit.err")"
fi
tl_check service_restart_with_bad_file_names_file_and_problem \
	grep -q "^xlb: $STATE: syntax error.*trailing comma" "$TMP/unit.err"

if svc_reload; then
	tl_fail service_reload_with_bad_file_fails "the reload succeeded"
else
	tl_pass service_reload_with_bad_file_fails
fi
serving service_reload_with_bad_file_changes_nothing "$TMP/good.json"

cp "$TMP/good2.json" "$STATE"
if svc_reload; then serving service_reload_applies_a_good_file "$TMP/good2.json"
else tl_fail service_reload_applies_a_good_file "$(cat "$TMP/unit.err")"; fi

# After a reboot nothing is pinned: a bad file leaves nothing to serve.
svc_stop
rm -f "$PIN"/xlb_*
cp "$TMP/bad.json" "$STATE"
if svc_start; then
	tl_fail service_start_with_bad_file_and_nothing_pinned_fails "the start succeeded"
else
	tl_pass service_start_with_bad_file_and_nothing_pinned_fails
fi
if attached; then tl_fail service_failed_start_leaves_no_program "v0 still runs a program"
else tl_pass service_failed_start_leaves_no_program; fi

cp "$TMP/good.json" "$STATE"
svc_start || tl_fail service_start_again "$(cat "$TMP/unit.err")"
svc_stop
if attached; then tl_fail service_stop_detaches "v0 still runs a program"
else tl_pass service_stop_detaches; fi
exit "$TL_FAILED"
