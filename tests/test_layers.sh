#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The layout is the architecture: each folder of loader/ includes only its
# own headers, the shared ones (include/, generated skeletons) and those of
# the folders below it, in the order of the Makefile's LAYERS; and the
# shipped xlb holds nothing of the tests.
set -uo pipefail
. "$(dirname "$0")/lib/lib.sh"
cd "$XLB_TOP" || exit 1

mapfile -t LAYERS < <(sed -n 's/^LAYERS *:= *//p' Makefile | tr ' ' '\n' | grep .)

rank() {
	local i
	for i in "${!LAYERS[@]}"; do
		[[ ${LAYERS[i]} == "$1" ]] && { echo "$i"; return; }
	done
	echo -1
}

test_every_folder_is_a_layer() {
	local ok=1 d
	for d in loader/*/; do
		d=${d%/}
		[[ $(rank "${d#loader/}") -ge 0 ]] || { echo "  $d is in no layer"; ok=0; }
	done
	[[ -z $(find loader -maxdepth 1 -type f) ]] || { echo "  files outside the layers: $(find loader -maxdepth 1 -type f)"; ok=0; }
	tl_check every_folder_is_a_layer test "$ok" -eq 1
}

test_layers_include_only_lower_layers() {
	local ok=1 n=0 f layer mine h where theirs
	for f in loader/*/*.[ch]; do
		layer=${f#loader/}
		layer=${layer%%/*}
		mine=$(rank "$layer")
		while read -r h; do
			n=$((n + 1))
			[[ -e $(dirname "$f")/$h || -e include/$h || $h == *.skel.h ]] && continue
			where=$(find loader -name "$h" -printf '%h\n' | head -1)
			if [[ -z $where ]]; then
				echo "  $f includes $h, found nowhere"
				ok=0
				continue
			fi
			theirs=$(rank "${where#loader/}")
			if [[ $theirs -ge $mine ]]; then
				echo "  $f ($layer) includes $where/$h, a layer at or above its own"
				ok=0
			fi
		done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
	done
	[[ $n -gt 100 ]] || { echo "  only $n includes read"; ok=0; }
	tl_check layers_include_only_lower_layers test "$ok" -eq 1
}

# Nothing of the tests in the shipped binary: no fault injection, no
# fixture (libbpf's own bpf_prog_test_run_opts is an import, not ours).
test_shipped_xlb_has_no_test_code() {
	local found
	found=$(nm --defined-only "$XLB" | awk '{ print $3 }' | grep -iE 'fault|test|fixture' )
	if [[ -n $found ]]; then
		tl_fail shipped_xlb_has_no_test_code "$found"
	# grep -c, not -q: -q would stop reading and nm, killed by SIGPIPE,
	# fail the pipeline under pipefail.
	elif [[ $(nm --defined-only "$BUILD/tests/xlb-test" | grep -c xlb_test_write_done) -eq 0 ]]; then
		tl_fail shipped_xlb_has_no_test_code "the test build lacks its fault injection"
	else
		tl_pass shipped_xlb_has_no_test_code
	fi
}

# Every header name once in the tree: headers are included by name, and
# a program that puts every folder on its include path (the side-by-side
# harness does) must find the one it means.
test_header_names_are_unique() {
	local dups
	dups=$(git ls-files '*.h' | xargs -n1 basename | sort | uniq -d)
	tl_check header_names_are_unique test -z "$dups"
	[[ -z $dups ]] || echo "  more than one: $dups"
}

test_every_folder_is_a_layer
test_header_names_are_unique
test_layers_include_only_lower_layers
test_shipped_xlb_has_no_test_code
