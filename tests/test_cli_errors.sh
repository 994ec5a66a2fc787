#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Errors as users meet them: whatever an argument holds (newlines, control
# characters, bytes that are no UTF-8), an error is one line, and under -j
# one valid JSON object; addresses a balancer cannot use are refused with
# the reason; a user without the privileges is told so, not that there is
# no instance.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"

TMP=$(mktemp -d)
tl_on_exit "rm -rf '$TMP'"
NOWHERE=$TMP/no-instance

# one_error NAME FRAGMENT ARGS...: xlb ARGS fails with one line on stderr
# holding FRAGMENT; xlb -j ARGS with one JSON object on stdout.
one_error() {
	local name=$1 fragment=$2 rc ok=1
	shift 2
	"$XLB" --pin-dir "$NOWHERE" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [[ $rc -ne 1 || -s $TMP/out || $(wc -l <"$TMP/err") -ne 1 ]] ||
	   ! grep -qF -- "$fragment" "$TMP/err"; then
		echo "  text: exit $rc, stderr: $(od -c "$TMP/err" | head -5)"
		ok=0
	fi
	"$XLB" -j --pin-dir "$NOWHERE" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [[ $rc -ne 1 || -s $TMP/err || $(wc -l <"$TMP/out") -ne 1 ]] ||
	   ! jq -e --arg f "$fragment" '.error | contains($f)' "$TMP/out" >/dev/null 2>&1; then
		echo "  json: exit $rc, stdout: $(od -c "$TMP/out" | head -5)"
		ok=0
	fi
	tl_check "$name" test "$ok" -eq 1
}

one_error invalid_utf8_is_escaped "not an IPv4 or IPv6 address" vip add $'\xff:80/tcp'
one_error surrogate_is_escaped "not an IPv4 or IPv6 address" vip add $'\xed\xa0\x80:80/tcp'
one_error newline_stays_on_one_line "not an IPv4 or IPv6 address" vip add $'a\nb:80/tcp'
one_error control_characters_are_escaped "unknown protocol" vip add $'192.0.2.1:80/t\x01\x1b[2Jcp'
one_error quotes_and_backslashes_are_escaped "unknown protocol" vip add '192.0.2.1:80/"\'
one_error utf8_is_kept "not an IPv4 or IPv6 address" vip add $'caf\xc3\xa9:80/tcp'
# The escapes themselves: \x0a in text, \u000a and U+FFFD in JSON.
"$XLB" vip add $'a\nb\xff:80/tcp' 2>"$TMP/err"
tl_check text_escapes_are_visible grep -qF "'a\\x0ab\\xff:80/tcp'" "$TMP/err"
"$XLB" -j vip add $'a\nb\xff:80/tcp' >"$TMP/out"
tl_check json_escapes_decode test "$(jq -r .error "$TMP/out")" == "bad VIP 'a
b"$'\xef\xbf\xbd'":80/tcp': not an IPv4 or IPv6 address"

one_error vip_without_port "missing :PORT after the bracketed IPv6 address" vip add '[2001:db8::1]/tcp'
one_error link_local_backend "link-local address" backend add 192.0.2.1:80/tcp fe80::1
one_error ipv4_compatible_backend "IPv4-compatible IPv6 address" backend add '[2001:db8::1]:80/tcp' ::1.2.3.4
one_error ipv4_mapped_backend "IPv4-mapped IPv6 address" backend add 192.0.2.1:80/tcp ::ffff:198.51.100.1

# Without privileges: said so, whatever the instance.
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null; then
	tl_bpffs
	tl_pin_dir PIN err
	# A map where xlb looks first: the instance is there, not for this user.
	bpftool map create "$PIN/xlb_config" type array key 4 value 4 entries 1 name xlb_config
	setpriv --reuid=65534 --regid=65534 --clear-groups "$XLB" --pin-dir "$PIN" show 2>"$TMP/err"
	echo "  $(cat "$TMP/err")"
	tl_check unprivileged_user_is_told_permission_denied grep -q 'permission denied' "$TMP/err"
else
	tl_skip_env unprivileged_user_is_told_permission_denied "needs root and setpriv to become another user"
fi

exit $TL_FAILED
