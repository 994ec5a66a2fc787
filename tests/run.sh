#!/usr/bin/env bash
# Run every test program ($BUILD/tests/test_*) and test script
# (tests/test_*.sh), each of which prints one line per case:
#   PASS name | FAIL name | SKIP name: reason
# A program that exits non-zero without a FAIL line counts as one failure.
# The last line is "N passed, N failed".
#
# tests/run.sh [PATTERN]   only the tests whose file name contains PATTERN
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
pattern=${1:-}

pass=0 fail=0 skip=0
failed_names=() skipped=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT

tests=()
for t in "$BUILD"/tests/test_* tests/test_*.sh; do
	[[ -x $t && ! -d $t && $t != *.d ]] || continue
	[[ -z $pattern || $t == *"$pattern"* ]] || continue
	tests+=("$t")
done

for t in "${tests[@]}"; do
	name=$(basename "$t")
	echo "== $name"
	start=$SECONDS
	"$t" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	p=$(grep -c '^PASS ' "$log")
	f=$(grep -c '^FAIL ' "$log")
	s=$(grep -c '^SKIP ' "$log")
	if [[ $rc -ne 0 && $f -eq 0 ]]; then
		echo "FAIL $name: exited with status $rc"
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	while read -r line; do failed_names+=("$name: ${line#FAIL }"); done < <(grep '^FAIL ' "$log")
	while read -r line; do skipped+=("$name: ${line#SKIP }"); done < <(grep '^SKIP ' "$log")
	echo "   ($((SECONDS - start)) s)"
done

echo
for s in "${skipped[@]}"; do echo "skipped: $s"; done
for f in "${failed_names[@]}"; do echo "failed:  $f"; done
echo "$skip skipped"
echo "$pass passed, $fail failed"
[[ $fail -eq 0 && ${#tests[@]} -gt 0 ]]
