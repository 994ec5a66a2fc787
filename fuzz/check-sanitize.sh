#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Run shell tests against the sanitizer build of xlb (make check-sanitize
# builds it into $BUILD, build/san by default, and runs this).
#
#   BUILD=build/san fuzz/check-sanitize.sh TEST...
#
# The tests run as usual (tests/run.sh's rules: PASS, FAIL, SKIP lines; a
# test that exits non-zero without a FAIL line fails), with xlb built with
# ASan and UBSan: UBSan stops at its first finding, and every report of
# either goes to a file of its own, so a finding is seen even where a test
# expects xlb to fail or throws its stderr away. Leak reports are off
# (ASAN_DETECT_LEAKS=1 turns them on): xlb exits right after its command.
# Exits 1 when a test failed or a sanitizer reported anything; the reports
# are printed and kept in $BUILD/sanitizer/.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build/san}
REPORTS=$BUILD/sanitizer

if [[ $# -eq 0 ]]; then
	echo "usage: BUILD=DIR $0 TEST..." >&2
	exit 2
fi
if [[ ! -x $BUILD/xlb ]]; then
	echo "check-sanitize: $BUILD/xlb missing (make check-sanitize builds it)" >&2
	exit 1
fi
if ! nm "$BUILD/xlb" 2>/dev/null | grep __asan_init >/dev/null; then
	echo "check-sanitize: $BUILD/xlb is not built with ASan" >&2
	exit 1
fi

rm -rf "$REPORTS"
mkdir -p "$REPORTS"
REPORTS=$(cd "$REPORTS" && pwd)
export BUILD
export ASAN_OPTIONS="detect_leaks=${ASAN_DETECT_LEAKS:-1}:abort_on_error=1:log_path=$REPORTS/asan:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$REPORTS/ubsan:${UBSAN_OPTIONS:-}"

pass=0 fail=0 skip=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "$@"; do
	echo "== $(basename "$t") (ASan, UBSan)"
	"$t" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	p=$(grep -c '^PASS ' "$log")
	f=$(grep -c '^FAIL ' "$log")
	s=$(grep -c '^SKIP ' "$log")
	if [[ $rc -ne 0 && $f -eq 0 ]]; then
		echo "FAIL $(basename "$t"): exited with status $rc"
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
done

# The reports, each kind once (the same finding is often hit by many runs
# of xlb): its first line and first frame of ours name it.
reports=$(find "$REPORTS" -type f | sort)
declare -A seen=()
for r in $reports; do
	key="$(grep -m1 -E 'runtime error|ERROR: [A-Za-z]+Sanitizer' "$r") in $(grep -m1 -E '#[0-9]+ .* in ' "$r" | sed 's/.* in //')"
	[[ -n ${seen[$key]:-} ]] && { seen[$key]=$((seen[$key] + 1)); continue; }
	seen[$key]=1
	echo
	echo "== sanitizer report $r"
	cat "$r"
done
for key in "${!seen[@]}"; do
	[[ ${seen[$key]} -gt 1 ]] && echo "(${seen[$key]} reports of: $key)"
done
echo
echo "$skip skipped"
echo "$pass passed, $fail failed, $(wc -w <<<"$reports") sanitizer reports"
[[ $fail -eq 0 && -z $reports ]]
