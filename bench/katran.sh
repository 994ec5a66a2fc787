#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# xlb beside Katran, for `make bench`: the side-by-side harness of the
# workplace (../shared/sbs/run.sh, or $SBS_DIR/run.sh), which builds Katran
# from a git mirror of its sources in a scratch directory and measures both
# balancers' added cost per packet over one MAC-swap baseline, behind the
# same restore wrapper, at both balancers' default new-connection caps.
# Nothing of Katran enters this repository.
#
#   bench/katran.sh [--quick]
#
# Needs KATRAN_MIRROR (a git mirror of Katran's sources) and the harness;
# without them it prints a section that says so and exits 0. The harness
# clones this repository's committed HEAD: uncommitted changes are not
# measured (its report says so).
set -uo pipefail
cd "$(dirname "$0")/.."

quick=
case ${1:-} in
--quick) quick=--quick ;;
"") ;;
-h|--help) sed -n '/^#   bench\/katran.sh/,/^# clones/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) echo "katran.sh: unknown option '$1' (see --help)" >&2; exit 1 ;;
esac

SBS=${SBS_DIR:-../shared/sbs}
echo "## Side by side with Katran (BPF_PROG_TEST_RUN)"
echo
if [[ -z ${KATRAN_MIRROR:-} || ! -x $SBS/run.sh ]]; then
	echo "Not measured: set KATRAN_MIRROR to a git mirror of Katran's sources"
	echo "(and SBS_DIR to the side-by-side harness, default ../shared/sbs)."
	exit 0
fi
work=$(mktemp -d /tmp/xlb-sbs.XXXXXX)
trap 'rm -rf "$work"' EXIT
if ! "$SBS/run.sh" $quick --conn-rate default --xlb-src "$PWD" --work "$work" \
	> "$work/report.txt" 2> "$work/err.txt"; then
	echo "The harness failed (a build, or a path check):"
	echo
	echo '```'
	tail -n 15 "$work/err.txt" "$work/report.txt"
	echo '```'
	exit 1
fi
r=$work/report.txt
echo "$(grep -m1 '^| xlb |' "$r" | cut -d'|' -f3 | sed 's/; built by.*//;s/^ *//')."
echo "Both balancers at their default new-connection caps (Katran 125,000/s,"
echo "xlb 100,000/s per CPU); ns added over a MAC-swap baseline behind the same"
echo "restore wrapper, medians of paired rounds$([[ -n $quick ]] && echo ' (--quick: smoke counts)')."
echo
sed -n '/^| packet | Katran added ns/,/^$/p' "$r"
echo "Targets, xlb added / Katran added: established flow <= 0.5, SYN on the table path <= 0.8, SYN flood past the cap <= 1.0, non-VIP pass <= 1.0."
echo
sed -n '/^| M | N | weights/,/^$/p' "$r"
