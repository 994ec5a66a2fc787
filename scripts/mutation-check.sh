#!/usr/bin/env bash
# Check that the tests catch known mistakes: each mutation below is applied
# to a copy of the tree, the copy is built, the tests that must catch it
# are run, and each run must fail. A mutation whose tests still pass is
# MISSED: the suite would let that mistake through.
#
# scripts/mutation-check.sh [--rev REV] [--keep] [--list] [NAME]...
#
#   NAME        only these mutations (default: all; --list names them)
#   --rev REV   test commit REV (git archive) instead of the work tree
#   --keep      keep the scratch copy (its path is printed)
#   --list      print the mutations and exit
#
# The copy, in a scratch directory under /tmp, holds the work tree's files
# (tracked and untracked, not ignored: uncommitted changes are in it) or,
# with --rev, the commit's. The work tree itself is never touched. First
# the copy is built and every test the mutations use must pass on it
# unmutated (else the check means nothing: exit 2). Then, for each
# mutation: its lines are replaced (each must match exactly one line of its
# file; a line that no longer matches, because the code moved, stops the
# check: exit 2), the copy is rebuilt, its tests run, and the files are
# restored. Whole test programs run, not the suite: a few minutes in all.
#
# One line per mutation on stdout: "caught NAME (FAIL cases)" or
# "MISSED NAME". A mutation whose test does not exist yet is reported
# "MISSED NAME (expected: ...)" and does not fail the check. Run as root
# (the tests need it; without it they skip, and nothing would be caught).
#
# Exit status: 0 all caught (but the expected misses), 1 a mutation missed
# or not built, 2 the check could not run.
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

rev='' keep=0 list=0 only=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--rev) rev=${2:?--rev needs a commit}; shift ;;
	--rev=*) rev=${1#*=} ;;
	--keep) keep=1 ;;
	--list) list=1 ;;
	-h | --help) usage; exit 0 ;;
	-*) echo "mutation-check: unknown argument: $1 (see --help)" >&2; exit 2 ;;
	*) only+=("$1") ;;
	esac
	shift
done

say() { printf 'mutation-check: %s\n' "$*" >&2; }
die() { printf 'mutation-check: %s\n' "$*" >&2; exit 2; }

# ---------------------------------------------------------------------------
# The mutations. Each is a function that calls `edit FILE LINE NEW` for each
# line it changes (LINE: the whole line, exactly, tabs included), and a
# description, the tests that must catch it (programs of build/tests/ or
# scripts of tests/, run whole), and optionally FILE:CASE, a case that must
# exist for the mutation to be expected caught.

MUTATIONS=(ct-gen ct-cap-3x ct-cap-2x fib-gen apply-weight hc-id)

declare -A DESC TESTS NEEDS
DESC[ct-gen]="connection table: the backend's generation ignored (include/ct_entry.h)"
TESTS[ct-gen]="build/tests/test_conntrack"
mutate_ct_gen() {
	edit include/ct_entry.h \
		$'\t       XLB_BE_F_IN_USE && be->gen == e->gen;' \
		$'\t       XLB_BE_F_IN_USE && (be->gen == e->gen || be->gen != e->gen);'
}

DESC[ct-cap-3x]="connection table: new entries capped at 3x ct-rate-limit (bpf/conntrack.h)"
TESTS[ct-cap-3x]="build/tests/test_conntrack"
mutate_ct_cap_3x() {
	edit bpf/conntrack.h $'\tif (r->count >= limit)' $'\tif (r->count >= 3 * limit)'
}

DESC[ct-cap-2x]="connection table: new entries capped at 2x ct-rate-limit (bpf/conntrack.h)"
TESTS[ct-cap-2x]="build/tests/test_conntrack"
mutate_ct_cap_2x() {
	edit bpf/conntrack.h $'\tif (r->count >= limit)' $'\tif (r->count >= 2 * limit)'
}

DESC[fib-gen]="next-hop cache: the backend's generation ignored (bpf/fib.h)"
TESTS[fib-gen]="build/tests/test_dp_nexthop"
mutate_fib_gen() {
	edit bpf/fib.h \
		$'\tif (c->expires_ns > now && c->gen == be->gen &&' \
		$'\tif (c->expires_ns > now &&'
}

DESC[apply-weight]="apply: weights above 1,000,000 accepted (loader/cli/cmd_apply.c, loader/instance/wants.c)"
TESTS[apply-weight]="tests/test_loader_cli.sh"
NEEDS[apply-weight]="tests/test_loader_cli.sh:apply_weight_too_large"
mutate_apply_weight() {
	edit loader/cli/cmd_apply.c \
		$'\t\t\terr = get_u32(d, val, at, "weight", 0, XLB_MAX_WEIGHT,' \
		$'\t\t\terr = get_u32(d, val, at, "weight", 0, 0xffffffffU,'
	edit loader/instance/wants.c \
		$'\t\tif (want[i].weight > XLB_MAX_WEIGHT) {' \
		$'\t\tif (0) {'
}

DESC[hc-id]="probe path: every probe encapsulated to backend id 1, whatever its mark names (bpf/hc.bpf.c)"
TESTS[hc-id]="tests/test_health_probe.sh"
mutate_hc_id() {
	edit bpf/hc.bpf.c $'\tid = skb->mark & ~XLB_HC_MARK_MASK;' $'\tid = 1;'
}

if ((list)); then
	for m in "${MUTATIONS[@]}"; do printf '%-13s %s\n' "$m" "${DESC[$m]}"; done
	exit 0
fi
if ((${#only[@]})); then
	for m in "${only[@]}"; do
		[[ -n ${DESC[$m]:-} ]] || die "no mutation $m (see --list)"
	done
	MUTATIONS=("${only[@]}")
fi

# ---------------------------------------------------------------------------

[[ $(id -u) -eq 0 ]] || die "run as root: without it the tests skip and catch nothing"
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/xlb-mutation.XXXXXX)
edited=()	# FILE of the mutation applied, saved as FILE.orig
cleanup() {
	local f
	for f in "${edited[@]}"; do
		[[ -f $work/$f.orig ]] && cp "$work/$f.orig" "$work/$f"
	done
	if ((keep)); then say "scratch copy kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# edit FILE LINE NEW: replace the one line of FILE (in the copy) that is
# exactly LINE by NEW; fail when LINE matches no line or more than one.
edit() {
	local file=$1 n
	[[ -f $work/$file ]] || die "$mutation: no file $file"
	n=$(grep -cFx -- "$2" "$work/$file" || true)
	if [[ $n -ne 1 ]]; then
		die "$mutation: $file has $n lines that are exactly
  '$2'
(the code moved or changed: update scripts/mutation-check.sh)"
	fi
	[[ -f $work/$file.orig ]] || cp "$work/$file" "$work/$file.orig"
	edited+=("$file")
	OLD=$2 NEW=$3 awk '$0 == ENVIRON["OLD"] { print ENVIRON["NEW"]; next } { print }' \
		"$work/$file.orig" >"$work/$file.new"
	# Keep the file's mode; a fresh mtime makes make rebuild what uses it.
	cat "$work/$file.new" >"$work/$file"
	rm -f "$work/$file.new"
	cmp -s "$work/$file" "$work/$file.orig" && die "$mutation: $file unchanged"
	return 0
}

# Undo the mutation: every edited file back as it was.
restore() {
	local f
	for f in "${edited[@]}"; do
		if [[ -f $work/$f.orig ]]; then
			cat "$work/$f.orig" >"$work/$f"
			rm -f "$work/$f.orig"
		fi
	done
	edited=()
}

# build LOG: make the copy, output in LOG.
build() {
	make -C "$work" -j"$(nproc)" all >"$1" 2>&1
}

# run_tests LOG TEST...: run each test whole in the copy; false when any
# fails. Output appended to LOG.
run_tests() {
	local log=$1 t rc=0
	shift
	: >"$log"
	for t in "$@"; do
		echo "== $t" >>"$log"
		(cd "$work" && BUILD=build "$t") >>"$log" 2>&1 || rc=1
	done
	return $rc
}

failed_cases() { grep '^FAIL ' "$1" | sed 's/^FAIL //; s/:.*//' | head -5 | paste -sd, - | sed 's/,/, /g'; }

if [[ -n $rev ]]; then
	commit=$(git -C "$src" rev-parse --verify "$rev^{commit}") || die "no commit $rev in $src"
	say "copying commit $commit into $work"
	git -C "$src" archive --format=tar "$commit" | tar -x -C "$work"
else
	say "copying the work tree of $src into $work"
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done |
		xargs -0 cp -a --parents -t "$work")
fi

# The captures test_conntrack replays, where the tree would find them.
if [[ -z ${XLB_PCAP_DIR:-} && -d $src/../shared/pcaps ]]; then
	export XLB_PCAP_DIR=$src/../shared/pcaps
fi

say "building the copy"
build "$work/build.log" || { keep=1; die "the unmutated copy does not build: see $work/build.log"; }

tests=()
for m in "${MUTATIONS[@]}"; do
	for t in ${TESTS[$m]}; do
		[[ " ${tests[*]} " == *" $t "* ]] || tests+=("$t")
	done
done
say "running ${tests[*]} on the unmutated copy"
if ! run_tests "$work/baseline.log" "${tests[@]}"; then
	cat "$work/baseline.log" >&2
	die "the tests fail without any mutation (FAIL $(failed_cases "$work/baseline.log")): nothing to check"
fi
# A skip would pass under any mutation: every case must run.
if grep -q '^SKIP ' "$work/baseline.log"; then
	say "note: skipped on the unmutated copy: $(grep '^SKIP ' "$work/baseline.log" | sed 's/^SKIP //' | paste -sd';' -)"
fi

missed=0
for mutation in "${MUTATIONS[@]}"; do
	expected=''
	need=${NEEDS[$mutation]:-}
	if [[ -n $need ]] && ! grep -qw -- "${need#*:}" "$work/${need%%:*}" 2>/dev/null; then
		expected="expected: ${need%%:*} has no case ${need#*:} yet"
	fi
	say "$mutation: ${DESC[$mutation]}"
	"mutate_${mutation//-/_}"
	if ! build "$work/$mutation.build.log"; then
		printf 'MISSED %s (the mutated copy does not build: %s)\n' "$mutation" \
			"$work/$mutation.build.log"
		missed=$((missed + 1))
		keep=1
	elif run_tests "$work/$mutation.log" ${TESTS[$mutation]}; then
		if [[ -n $expected ]]; then
			printf 'MISSED %s (%s)\n' "$mutation" "$expected"
		else
			printf 'MISSED %s\n' "$mutation"
			missed=$((missed + 1))
		fi
	else
		printf 'caught %s (FAIL %s)\n' "$mutation" "$(failed_cases "$work/$mutation.log")"
	fi
	restore
done

say "rebuilding the unmutated copy"
build "$work/build.log" || { keep=1; die "the restored copy does not build: see $work/build.log"; }
((missed == 0)) || exit 1
