#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Run the fuzz targets built by `make fuzz-build` (make fuzz runs this).
#
#   fuzz/run.sh [TARGET...]     default: every $BUILD/fuzz/fuzz_* target
#
#   FUZZ_SECONDS=60   how long each target runs
#   FUZZ_JOBS=1       how many targets run at once (one core each)
#   FUZZ_ARGS=...     more libFuzzer options, e.g. -only_ascii=1
#
# TARGET is a name (apply, parsers, pcap). Each runs on its seeds,
# fuzz/corpus/TARGET/ (read only), and on what earlier runs found,
# $BUILD/fuzz/corpus/TARGET/ (where new inputs are written), with
# fuzz/TARGET.dict when there is one. The output is in
# $BUILD/fuzz/logs/TARGET.log; an input that crashes is kept as
# $BUILD/fuzz/artifacts/TARGET/crash-* (or leak-, timeout-, oom-), to be
# given back to the target: $BUILD/fuzz/fuzz_TARGET FILE.
#
# Prints one line per target: runs, exec/s, coverage (cov: edges reached,
# ft: features), the corpus, and what crashed. Exits 1 when a target
# crashed or did not run.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
SECONDS_EACH=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-1}
DIR=$BUILD/fuzz

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
	for f in fuzz/fuzz_*.c; do
		f=${f#fuzz/fuzz_}
		targets+=("${f%.c}")
	done
fi

# One target, in the foreground: its log and artifacts, then its line.
run_one() {
	local t=$1 bin=$DIR/fuzz_$1 log=$DIR/logs/$1.log art=$DIR/artifacts/$1
	local work=$DIR/corpus/$1 seeds=fuzz/corpus/$1 opts=() rc last stats crashes

	if [[ ! -x $bin ]]; then
		echo "$t: $bin missing (make fuzz-build)"
		return 1
	fi
	mkdir -p "$work" "$art" "$DIR/logs"
	[[ -f fuzz/$t.dict ]] && opts+=("-dict=fuzz/$t.dict")
	[[ -d $seeds ]] || seeds=
	# shellcheck disable=SC2086
	"$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$art/" "${opts[@]}" ${FUZZ_ARGS:-} \
		"$work" $seeds >"$log" 2>&1
	rc=$?

	last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
	stats=$(awk '/^stat::number_of_executed_units/ { runs = $NF }
		/^stat::average_exec_per_sec/ { eps = $NF }
		/^stat::new_units_added/ { added = $NF }
		/^stat::peak_rss_mb/ { rss = $NF }
		END { if (runs != "") printf "%s runs, %s exec/s, %s new inputs, %s MB peak", runs, eps, added, rss }' "$log")
	crashes=$(find "$art" -maxdepth 1 -type f -newer "$log.start" 2>/dev/null | sort)
	printf '%s: %s; %s; corpus %s\n' "$t" "${stats:-no statistics}" \
		"$(grep -oE 'cov: [0-9]+ ft: [0-9]+' <<<"$last" | tail -1)" \
		"$(grep -oE 'corp: [0-9]+/[0-9a-zA-Z]+' <<<"$last" | tail -1 | sed 's/corp: //')"
	if [[ $rc -ne 0 || -n $crashes ]]; then
		echo "$t: FAILED (exit $rc), see $log"
		grep -E '^(SUMMARY|==[0-9]+==ERROR|fuzz_[a-z]+: )' "$log" | head -5 | sed 's/^/  /'
		for c in $crashes; do echo "  reproduce: $bin $c"; done
		return 1
	fi
	return 0
}

mkdir -p "$DIR/logs"
failed=0
running=0
for t in "${targets[@]}"; do
	touch "$DIR/logs/$t.log.start"
	if [[ $JOBS -le 1 ]]; then
		run_one "$t" || failed=1
		continue
	fi
	if [[ $running -ge $JOBS ]]; then
		wait -n || failed=1
		running=$((running - 1))
	fi
	run_one "$t" &
	running=$((running + 1))
done
while [[ $running -gt 0 ]]; do
	wait -n || failed=1
	running=$((running - 1))
done
exit $failed
