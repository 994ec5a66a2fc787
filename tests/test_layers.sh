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

# libxlb keeps no mutable global state: what is an instance's is in
# struct xlb_instance, what is a change's in the change, what is the
# checker's in the checker. Writable data (.data, .bss, thread-local
# .tdata/.tbss, common symbols; not .data.rel.ro, read-only once
# relocated) holds only what is allowed here, each for its reason.
declare -A GLOBAL_OK=(
	[report.o:p_err_hook]="the program's error sink, set once at start-up"
	[report.o:xlb_report_json]="the program's output mode (-j), set once at start-up"
	[report.o:xlb_progname]="the program's name for messages, set once at start-up"
	[instance.o:start_us]="the process's start time, set before main() (-v timings)"
	[numbers.o:why_buf]="thread-local text of the thread's last parse error"
	[hc_store.o:why_buf]="thread-local text of the thread's last health-setting error"
)

# mutable_globals [OBJDUMP-T-OUTPUT]: "file.o:symbol" of each writable
# data object, one a line (static locals' .N suffix dropped).
mutable_globals() {
	awk '/^[^ ]+\.o: +file format/ { sub(/:.*/, ""); f = $0; next }
	     ($0 ~ / \.(data|bss|tdata|tbss)([. ]|\t)/ && $0 !~ /\.data\.rel\.ro/ ||
	      $0 ~ / \*COM\*\t/) &&
	     $NF !~ /^\./ && ($0 ~ / O / || $0 ~ /\.t(data|bss)/) {
		s = $NF; sub(/\.[0-9]+$/, "", s); print f ":" s
	     }'
}

test_libxlb_has_no_mutable_globals() {
	local found bad=() g n members
	members=$(objdump -t "$BUILD/libxlb.a" | grep -c 'file format')
	found=$(objdump -t "$BUILD/libxlb.a" | mutable_globals | sort -u)
	n=$(grep -c . <<<"$found")
	for g in $found; do
		[[ -n ${GLOBAL_OK[$g]:-} ]] || bad+=("$g")
	done
	# The filter sees what it must: a file of these symbols' kind.
	g=$(printf '%s\n' 'x.o:     file format elf64-x86-64' \
		'0000000000000000 l     O .bss	0000000000000004 count.3' \
		'0000000000000000 l       .tbss	0000000000000010 buf' \
		'0000000000000000 l     O .data.rel.ro.local	0000000000000008 names' \
		'0000000000000000 l     O .rodata	0000000000000008 table' \
		'0000000000000004       O *COM*	0000000000000004 counter' |
		mutable_globals | tr '\n' ' ')
	# An archive objdump could not read would pass with nothing found.
	if [[ $members -lt 20 ]]; then
		tl_fail libxlb_has_no_mutable_globals "objdump read $members objects of $BUILD/libxlb.a"
	elif [[ $g != "x.o:count x.o:buf x.o:counter " ]]; then
		tl_fail libxlb_has_no_mutable_globals "the filter reads objdump wrong: '$g'"
	elif [[ ${#bad[@]} -gt 0 ]]; then
		tl_fail libxlb_has_no_mutable_globals "mutable globals: ${bad[*]}"
	else
		echo "  $n writable globals, each allowed for its reason"
		tl_pass libxlb_has_no_mutable_globals
	fi
}

# Inside loader/instance, no two files call each other: each holds one
# step, and a reader follows a change from file to file one way.
test_instance_files_call_one_way() {
	local o f sym n=0 pairs
	declare -A def=()
	for o in "$BUILD"/loader/instance/*.o; do
		f=$(basename "$o")
		while read -r sym; do def[$sym]=$f; done < <(nm --defined-only "$o" | awk '$2 ~ /^[TDBR]$/ { print $3 }')
		n=$((n + 1))
	done
	pairs=$(for o in "$BUILD"/loader/instance/*.o; do
		f=$(basename "$o")
		nm --undefined-only "$o" | awk '{ print $2 }' | while read -r sym; do
			[[ -n ${def[$sym]:-} && ${def[$sym]} != "$f" ]] && echo "$f ${def[$sym]}"
		done
	done | sort -u)
	local mutual
	mutual=$(awk '{ a[$1 " " $2] = 1 } END { for (k in a) { split(k, p, " "); if ((p[2] " " p[1]) in a && p[1] < p[2]) print p[1] " <-> " p[2] } }' <<<"$pairs")
	if [[ $n -lt 10 ]]; then
		tl_fail instance_files_call_one_way "only $n objects in $BUILD/loader/instance"
	elif [[ -n $mutual ]]; then
		tl_fail instance_files_call_one_way "files that call each other: $mutual"
	else
		echo "  $n files, $(wc -l <<<"$pairs") one-way calls between them"
		tl_pass instance_files_call_one_way
	fi
}

test_every_folder_is_a_layer
test_header_names_are_unique
test_layers_include_only_lower_layers
test_shipped_xlb_has_no_test_code
test_libxlb_has_no_mutable_globals
test_instance_files_call_one_way
