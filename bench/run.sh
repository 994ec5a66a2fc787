#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make bench: run every benchmark of the project and print one report,
# ready for BENCHMARKS.md, on stdout and into $BUILD/BENCHMARKS.md.
#
#   bench/run.sh [--quick] [--output FILE] [PATTERN]
#
#   --quick        every benchmark with --quick (tiny counts: the smoke test)
#   --output FILE  write the report there instead of $BUILD/BENCHMARKS.md
#   PATTERN        only the benchmarks whose name contains PATTERN
#
# A benchmark is any program $BUILD/bench/bench_* (from bench/bench_*.c),
# bench/throughput.sh, bench/katran.sh and bench/health.sh. Each takes --quick and prints a markdown section
# (a "## " heading, its figures in tables, each figure beside its baseline
# measured in the same run and the ratio between them); progress goes to
# stderr. A line of a section that speaks of its target is repeated in the
# report's summary. A benchmark that fails is reported as failed, with the
# end of its error output, and the others still run; the exit status is
# then 1.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}

quick= output= pattern=
while [[ $# -gt 0 ]]; do
	case $1 in
	--quick) quick=--quick ;;
	--output) output=${2:-}; [[ -n $output ]] || { echo "run.sh: --output needs a file" >&2; exit 1; }; shift ;;
	-h|--help) sed -n '/^#   bench\/run.sh/,/^#   PATTERN/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 1 ;;
	*) pattern=$1 ;;
	esac
	shift
done
output=${output:-$BUILD/BENCHMARKS.md}

# Each benchmark may take this long: throughput.sh, the longest, runs 14
# configurations five times (and a round to warm up), each with an
# interval of bpf_stats after it, then the stage ladders (about two
# minutes more): about twelve minutes here.
LIMIT=${BENCH_LIMIT:-900}

benches=()
for b in "$BUILD"/bench/bench_* bench/throughput.sh bench/katran.sh bench/health.sh; do
	[[ -x $b && ! -d $b && $b != *.d ]] || continue
	[[ -z $pattern || $(basename "$b") == *"$pattern"* ]] || continue
	benches+=("$b")
done
if [[ ${#benches[@]} -eq 0 ]]; then
	echo "run.sh: no benchmarks${pattern:+ matching '$pattern'} (run make first)" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

machine() {
	local model cores clang
	model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	cores=$(nproc)
	clang=$(clang --version 2>/dev/null | head -n1)
	echo "| | |"
	echo "| --- | --- |"
	echo "| CPU | ${model:-unknown}, $cores cores online$(grep -q hypervisor /proc/cpuinfo && echo ', virtual machine') |"
	echo "| memory | $(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) |"
	echo "| kernel | Linux $(uname -r) ($(uname -m)) |"
	echo "| compilers | ${clang:-clang: none} (BPF); $(cc --version | head -n1) (userspace) |"
	echo "| date | $started |"
	echo "| load average (1, 5, 15 min) | at the start $load_start; at the end $(cut -d' ' -f1-3 /proc/loadavg) |"
}

# Other work on the machine shows in the figures: say how busy it was.
started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
status=0
names=() results=() secs=()
for b in "${benches[@]}"; do
	name=$(basename "$b" .sh)
	echo "run.sh: $name${quick:+ (quick)}" >&2
	start=$SECONDS
	timeout --kill-after=10 "$LIMIT" "$b" $quick > "$tmp/$name.md" 2> "$tmp/$name.err"
	rc=$?
	names+=("$name") secs+=($((SECONDS - start)))
	if [[ $rc -eq 0 && -s $tmp/$name.md ]]; then
		results+=(ok)
	else
		status=1
		if [[ $rc -eq 124 || $rc -eq 137 ]]; then
			results+=("failed: over the ${LIMIT} s limit")
		elif [[ $rc -eq 0 ]]; then
			results+=("failed: printed nothing")
		else
			results+=("failed: exit status $rc")
		fi
		{
			echo
			echo "**$name failed** (exit status $rc). The end of its error output:"
			echo
			echo '```'
			tail -n 15 "$tmp/$name.err"
			echo '```'
		} >> "$tmp/$name.md"
	fi
done

{
	echo "# xlb benchmarks"
	echo
	echo "Produced by \`make bench\` (bench/run.sh${quick:+ --quick: smoke-run counts, not figures to quote})."
	echo "Absolute figures depend on the machine below; compare ratios, which are each"
	echo "taken against a baseline measured in the same run."
	echo
	machine
	echo
	echo "## Summary"
	echo
	echo "| benchmark | result | seconds |"
	echo "| --- | --- | ---: |"
	for i in "${!names[@]}"; do
		echo "| ${names[i]} | ${results[i]} | ${secs[i]} |"
	done
	echo
	targets=$(for n in "${names[@]}"; do
		grep -i 'target' "$tmp/$n.md" | grep -v '^[|#]' | sed "s/^/- $n: /"
	done)
	if [[ -n $targets ]]; then
		echo "Targets:"
		echo
		echo "$targets"
		echo
	fi
	for n in "${names[@]}"; do
		# Where each benchmark's section starts (markdown hides it).
		echo "<!-- bench: $n -->"
		cat "$tmp/$n.md"
		echo
	done
} > "$tmp/report.md"

mkdir -p "$(dirname "$output")"
cp "$tmp/report.md" "$output"
cat "$tmp/report.md"
echo "run.sh: report written to $output" >&2
exit $status
