#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The fuzz targets (fuzz/fuzz_*.c) still build and run: each is built (make
# fuzz-build, when out of date), replays its whole seed corpus, then runs a
# few thousand mutated inputs, and must find nothing. One case per target.
# Nothing is learnt here: the inputs found go to a scratch directory, not
# to the corpus (make fuzz fuzzes for real, docs/fuzzing.md).
# Without clang's libFuzzer runtime (libclang-rt-dev) the cases skip; under
# XLB_CI=1 they fail instead.
. "$(dirname "$0")/lib/lib.sh"
cd "$XLB_TOP" || exit 1

RUNS=${FUZZ_SMOKE_RUNS:-2000}
CLANG=${CLANG:-clang}
TMP=$(mktemp -d)
tl_on_exit "rm -rf '$TMP'"

mapfile -t targets < <(for f in fuzz/fuzz_*.c; do f=${f#fuzz/fuzz_}; echo "${f%.c}"; done)
if [[ ${#targets[@]} -eq 0 ]]; then
	tl_fail fuzz_targets "no fuzz/fuzz_*.c"
	exit 1
fi

# skip_all REASON: every target skips (fails under CI).
skip_all() {
	local t
	for t in "${targets[@]}"; do
		if [[ -n ${XLB_CI:-} ]]; then
			tl_fail "fuzz_$t" "$1, and CI must not skip"
		else
			tl_skip "fuzz_$t" "$1"
		fi
	done
	exit $TL_FAILED
}

# libFuzzer links only when clang has its runtime.
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' >"$TMP/probe.c"
if ! command -v "$CLANG" >/dev/null; then
	skip_all "$CLANG not found"
elif ! "$CLANG" -fsanitize=fuzzer,address,undefined "$TMP/probe.c" -o "$TMP/probe" 2>"$TMP/probe.err"; then
	skip_all "$CLANG has no libFuzzer runtime (libclang-rt-dev): $(head -1 "$TMP/probe.err")"
fi

# The build, from this tree's Makefile (with fuzz/fuzz.mk, also before the
# Makefile includes it: fuzz.mk reads once).
build=${BUILD#"$XLB_TOP"/}
if ! make --no-print-directory -f Makefile -f fuzz/fuzz.mk BUILD="$build" CLANG="$CLANG" \
	fuzz-build >"$TMP/build.log" 2>&1; then
	for t in "${targets[@]}"; do
		tl_fail "fuzz_$t" "make fuzz-build: $(grep -m1 -E 'error|Error' "$TMP/build.log")"
	done
	sed 's/^/  /' "$TMP/build.log" | tail -20
	exit 1
fi

for t in "${targets[@]}"; do
	bin=$BUILD/fuzz/fuzz_$t seeds=fuzz/corpus/$t dict=()
	if [[ ! -d $seeds || -z $(ls -A "$seeds") ]]; then
		tl_fail "fuzz_$t" "no seed corpus in $seeds"
		continue
	fi
	[[ -f fuzz/$t.dict ]] && dict=("-dict=fuzz/$t.dict")
	mkdir -p "$TMP/$t"
	if "$bin" -runs="$RUNS" -max_total_time=60 -timeout=10 -seed=1 \
		-artifact_prefix="$TMP/$t/" "${dict[@]}" "$TMP/$t" "$seeds" \
		>"$TMP/$t.log" 2>&1; then
		tl_pass "fuzz_$t"
	else
		tl_fail "fuzz_$t" "$(grep -m1 -E 'SUMMARY|ERROR|fuzz_[a-z_]+: ' "$TMP/$t.log")"
		# The report: from its first line, the stack and the input.
		awk '/ERROR: |runtime error|^fuzz_[a-z_]+: |deadly signal/ { on = 1 }
		     on && n++ < 25 { print "  " $0 }' "$TMP/$t.log"
		for c in "$TMP/$t"/crash-* "$TMP/$t"/leak-* "$TMP/$t"/timeout-* "$TMP/$t"/oom-*; do
			[[ -e $c ]] && echo "  input: $(od -An -c "$c" | head -5 | tr -s ' ')"
		done
	fi
done
exit $TL_FAILED
