#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The benchmarks and their tools still work: every benchmark runs once with
# --quick through bench/run.sh, xlb-gen writes frames an independent decoder
# accepts and sends exactly what it counts, bad options are refused, and
# pktgen.sh either sends or says pktgen is missing. No figure is asserted:
# speed is measured by `make bench`, never here.
. "$(dirname "$0")/lib/lib.sh"

GEN=$BUILD/tools/xlb-gen
TMP=$(mktemp -d)
tl_on_exit "rm -rf '$TMP'"

# Each line: options xlb-gen must refuse, before touching anything.
BAD_OPTIONS=(
	"--dst 192.0.2.10"
	"--dst 192.0.2.10:0 --write F"
	"--dst 192.0.2.10:80 --write F --proto icmp"
	"--dst [2001:db8::10]:80 --write F --src 198.51.100.0/24"
	"--dst 192.0.2.10:80 --write F --src 198.51.100.1/24"
	"--dst 192.0.2.10:80 --write F --size 20"
	"--dst 192.0.2.10:80 --write F --flows 0"
	"--dst 192.0.2.10:80 --write F --flows 99999999999"
	"--dst 192.0.2.10:80 --write F --sport 9-3"
	"--dst 192.0.2.10:80 --write F --count 5 --duration 1"
	"--dst 192.0.2.10:80 --write F --rate 1000"
	"--dst 192.0.2.10:80 --write F --count 1.5"
	"--dst 192.0.2.10:80 --write F --batch 257"
	"--dst 192.0.2.10:80 --write F --tcp-flags SX"
	"--dst 192.0.2.10:80 --write F --proto udp --tcp-flags A"
	"--dst 192.0.2.10:80 --dev lo"
	"--dst 192.0.2.10:80 --dev no-such-dev --dst-mac 02:00:00:00:00:01"
	"--dst 192.0.2.10:80 --write F --pcap $TMP/missing.pcap"
	"--dst 192.0.2.10:80 --write F --pcap /dev/null"
	"--dst 192.0.2.10:80 --write F extra"
)

test_gen_rejects_bad_options() {
	local opts out rc ok=1
	for opts in "${BAD_OPTIONS[@]}"; do
		# shellcheck disable=SC2086
		out=$("$GEN" ${opts//F/$TMP/never.pcap} 2>&1 >/dev/null)
		rc=$?
		if [[ $rc -eq 0 || $(wc -l <<< "$out") -ne 1 || $out != "xlb-gen: "* ]]; then
			echo "  xlb-gen $opts: exit $rc, said: $out"
			ok=0
		fi
	done
	[[ ! -e $TMP/never.pcap ]] || { echo "  a refused run wrote its output"; ok=0; }
	tl_check gen_rejects_bad_options test "$ok" -eq 1
}

# check_frames NAME PCAP FAMILY PROTO SIZE FLOWS: every frame has valid IP
# and TCP/UDP checksums (tshark's own verdict), goes to the VIP, has the
# size asked for, and the frames hold exactly FLOWS distinct sources.
check_frames() {
	local name=$1 pcap=$2 family=$3 proto=$4 size=$5 flows=$6 ip=ip
	[[ $family == 6 ]] && ip=ipv6
	tshark -r "$pcap" -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE \
		-o udp.check_checksum:TRUE -T fields -E separator=, -e frame.len \
		-e "$ip.src" -e "$ip.dst" -e "$proto.srcport" -e "$proto.dstport" \
		-e "$proto.checksum.status" -e ip.checksum.status -e tcp.flags.syn \
		2>/dev/null > "$TMP/$name.txt" || { tl_fail "$name" "tshark cannot read the frames"; return; }
	local bad distinct
	# frame.len, src, dst, sport, dport, L4 checksum, IPv4 checksum, SYN
	bad=$(awk -F, -v size="$size" -v dst="$VIP_ADDR" -v proto="$proto" -v family="$family" '
		$1 != size || $3 != dst || $5 != 80 || $6 != 1 ||
		(family == 4 && $7 != 1) || (proto == "tcp" && $8 != 1) { n++ }
		END { print n + 0 }' "$TMP/$name.txt")
	distinct=$(cut -d, -f2,4 "$TMP/$name.txt" | sort -u | wc -l)
	if [[ $(wc -l < "$TMP/$name.txt") -ne $FRAMES ]]; then
		tl_fail "$name" "$(wc -l < "$TMP/$name.txt") frames, not $FRAMES"
	elif [[ $bad -ne 0 ]]; then
		tl_fail "$name" "$bad frames with a wrong size, destination or checksum"
	elif [[ $distinct -ne $flows ]]; then
		tl_fail "$name" "$distinct distinct sources, not $flows"
	else
		tl_pass "$name"
	fi
}

# 300 flows: more than the 254 source addresses of 198.51.100.0/24, so the
# source port varies too.
FRAMES=600
test_gen_writes_valid_frames() {
	local family proto size dst
	for family in 4 6; do
		for proto in tcp udp; do
			if [[ $family == 4 ]]; then VIP_ADDR=192.0.2.10 dst=192.0.2.10:80
			else VIP_ADDR=2001:db8::10 dst=[2001:db8::10]:80; fi
			size=$([[ $proto == tcp ]] && echo 128 || echo 99)
			if ! "$GEN" --write "$TMP/v$family$proto.pcap" --dst "$dst" --proto "$proto" \
				--size "$size" --count "$FRAMES" --flows 300 > /dev/null; then
				tl_fail "gen_writes_ipv${family}_$proto" "xlb-gen failed"
				continue
			fi
			check_frames "gen_writes_ipv${family}_$proto" "$TMP/v$family$proto.pcap" \
				"$family" "$proto" "$size" 300
		done
	done
}

# --tcp-flags gives every frame exactly those flags (and an ACK number
# with A), checksums still valid.
test_gen_tcp_flags() {
	local name=gen_sets_tcp_flags
	"$GEN" --write "$TMP/ack.pcap" --dst 192.0.2.10:80 --count 50 --tcp-flags PA > /dev/null ||
		{ tl_fail "$name" "xlb-gen failed"; return; }
	tl_check "$name" test "$(tshark -r "$TMP/ack.pcap" -o tcp.check_checksum:TRUE -T fields \
		-e tcp.flags -e tcp.ack_raw -e tcp.checksum.status 2>/dev/null | sort -u)" = "0x0018	1	1"
}

# A capture's flows come back as the same partition of frames: frames i
# and j belong to one flow in the output exactly when they did in the input.
test_gen_follows_capture() {
	local name=gen_follows_capture_flows
	"$GEN" --write "$TMP/in.pcap" --dst 192.0.2.10:80 --count 70 --flows 7 > /dev/null &&
	"$GEN" --write "$TMP/out.pcap" --dst 192.0.2.10:80 --count 140 \
		--src 198.51.100.128/25 --pcap "$TMP/in.pcap" > /dev/null ||
		{ tl_fail "$name" "xlb-gen failed"; return; }
	local flows_in flows_out
	flows_in=$(tshark -r "$TMP/in.pcap" -T fields -e ip.src -e tcp.srcport 2>/dev/null |
		awk '{ if (!($0 in id)) id[$0] = n++; printf "%d ", id[$0] }')
	flows_out=$(tshark -r "$TMP/out.pcap" -T fields -e ip.src -e tcp.srcport 2>/dev/null |
		awk '{ if (!($0 in id)) id[$0] = n++; printf "%d ", id[$0] }')
	tl_check "$name" test "$flows_out" = "$flows_in$flows_in" -a -n "$flows_in"
}

# sink_count NS DEV: frames the sink program on DEV has received.
sink_count() {
	tl_in "$1" ethtool -S "$2" | awk '/xdp_drops/ { n += $2 } END { print n + 0 }'
}

# A veth pair between two namespaces, bpf/sink.bpf.o on the far end. No
# IPv6 on the sending side: its router solicitations would be counted too.
veth_pair() {
	tl_netns NS_A a && tl_netns NS_B b &&
	tl_in "$NS_A" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 >/dev/null &&
	ip link add "xa$TL_TAG" netns "$NS_A" type veth peer name "xb$TL_TAG" netns "$NS_B" &&
	ip -n "$NS_A" link set "xa$TL_TAG" up && ip -n "$NS_B" link set "xb$TL_TAG" up &&
	tl_in "$NS_B" ip link set dev "xb$TL_TAG" xdpdrv obj "$BUILD/sink.bpf.o" sec xdp &&
	PEER_MAC=$(ip -n "$NS_B" -br link show dev "xb$TL_TAG" | awk '{ print $3 }')
}

# Paced well below what the receiver takes (even under emulation in the
# vmtest VM), every frame sent arrives, and the count xlb-gen reports is
# the count asked for.
test_gen_sends() {
	local name=gen_sends_what_it_counts sent got
	if ! tl_in "$NS_A" "$GEN" --dev "xa$TL_TAG" --dst-mac "$PEER_MAC" --dst 192.0.2.10:80 \
		--count 5000 --rate 20k -j > "$TMP/send.json" 2> "$TMP/send.err"; then
		tl_fail "$name" "xlb-gen: $(cat "$TMP/send.err")"
		return
	fi
	sent=$(jq -r .sent "$TMP/send.json")
	got=$(sink_count "$NS_B" "xb$TL_TAG")
	if [[ $sent -eq 5000 && $got -eq 5000 ]]; then
		tl_pass "$name"
	else
		tl_fail "$name" "asked for 5000, xlb-gen sent $sent, the peer received $got"
	fi
}

# pktgen.sh sends through the kernel's pktgen where there is one, and
# otherwise says so with its own exit status (77).
test_pktgen() {
	local rc got got_before
	got_before=$(sink_count "$NS_B" "xb$TL_TAG")
	tl_in "$NS_A" "$XLB_TOP/bench/pktgen.sh" -i "xa$TL_TAG" -m "$PEER_MAC" -d 192.0.2.10:80 \
		-n 1000 -r 100000 > "$TMP/pktgen.out" 2> "$TMP/pktgen.err"
	rc=$?
	if [[ $rc -eq 77 ]]; then
		# Not a pass: nothing was sent. vmtest/test_pktgen.sh sends
		# through pktgen in the VM, whose kernel has it.
		if grep -q "pktgen is not available on this kernel" "$TMP/pktgen.err"; then
			tl_skip pktgen_sends "this kernel has no pktgen (vmtest/test_pktgen.sh covers it)"
		else
			tl_fail pktgen_sends "exit 77 without saying why: $(head -c 300 "$TMP/pktgen.err")"
		fi
		return
	fi
	got=$(( $(sink_count "$NS_B" "xb$TL_TAG") - got_before ))
	if [[ $rc -eq 0 && $got -ge 1000 ]]; then
		tl_pass pktgen_sends
	else
		tl_fail pktgen_sends "exit $rc, the peer received $got of 1000: $(head -c 300 "$TMP/pktgen.err")"
	fi
}

test_pktgen_rejects_bad_options() {
	local opts ok=1
	for opts in "-m 02:00:00:00:00:01 -d 192.0.2.10:80" "-i lo -m zz -d 192.0.2.10:80" \
		"-i lo -m 02:00:00:00:00:01 -d 192.0.2.10:99999" "-i lo -m 02:00:00:00:00:01 -d 192.0.2.10:80 -p icmp" \
		"-i lo -m 02:00:00:00:00:01 -d 192.0.2.10:80 -T 999" "-i lo -m 02:00:00:00:00:01 -d 192.0.2.10:80 -n x"; do
		# shellcheck disable=SC2086
		if "$XLB_TOP/bench/pktgen.sh" $opts > /dev/null 2>&1; then
			echo "  pktgen.sh $opts: accepted"
			ok=0
		elif [[ $? -eq 77 ]]; then
			echo "  pktgen.sh $opts: checked pktgen before its arguments"
			ok=0
		fi
	done
	tl_check pktgen_rejects_bad_options test "$ok" -eq 1
}

# throughput.sh refuses bad options with one line, before it sets anything
# up (the checks come before its root check, so they hold for any user).
test_throughput_rejects_bad_options() {
	local opts out rc ok=1
	for opts in "--rounds 0" "--seconds 0" "--rate fast" "--flows 0" "--flows 262145" \
		"--conntrack-size -1" "--configs" "--configs v4_hit,no_such" "--no-such-option"; do
		# shellcheck disable=SC2086
		out=$("$XLB_TOP/bench/throughput.sh" $opts 2>&1 >/dev/null)
		rc=$?
		if [[ $rc -eq 0 || $(wc -l <<< "$out") -ne 1 || $out != "throughput.sh: "* ||
		      $out == *"needs root"* ]]; then
			echo "  throughput.sh $opts: exit $rc, said: $out"
			ok=0
		fi
	done
	tl_check throughput_rejects_bad_options test "$ok" -eq 1
}

# figures_of NAME: NAME's section of the report (from bench/run.sh's
# marker to the next) holds a table row with a measured figure (a decimal
# number), or says plainly why it measured nothing (bench/katran.sh without
# Katran's sources).
figures_of() {
	awk -v name="$1" '
		/^<!-- bench: / { on = ($3 == name) }
		on && /^\| .*[0-9]+\.[0-9]/ { found = 1 }
		on && /^Not measured: / { found = 1 }
		END { exit !found }' "$TMP/report.md"
}

# Every benchmark through the report, with tiny counts.
test_bench_report() {
	local name line pins
	# What the benchmarks pin goes in directories of their own: bpffs'
	# root gains no map of xlb's (libbpf pins a map declared pinned by
	# name there unless told otherwise; iproute2 may add its own dirs).
	tl_bpffs
	pins=$(ls /sys/fs/bpf | grep '^xlb_')
	if ! "$XLB_TOP/bench/run.sh" --quick --output "$TMP/report.md" > /dev/null 2> "$TMP/run.err"; then
		echo "  $(tail -n 5 "$TMP/run.err" | tr '\n' ' ')"
	fi
	grep -q '^| kernel | Linux ' "$TMP/report.md" 2>/dev/null ||
		{ tl_fail bench_report "no report, or no machine description in it"; return; }
	while read -r line; do
		[[ $line =~ ^\|\ ([a-z_]+)\ \|\ ([^|]+)\ \|\ [0-9]+\ \|$ ]] || continue
		name=${BASH_REMATCH[1]}
		if [[ ${BASH_REMATCH[2]} == ok ]] && figures_of "$name"; then
			tl_pass "bench_$name"
		elif [[ ${BASH_REMATCH[2]} == ok ]]; then
			tl_fail "bench_$name" "its section holds no table of figures"
		else
			tl_fail "bench_$name" "${BASH_REMATCH[2]}"
			# the end of its error output, from the report
			awk -v h="**$name failed**" 'index($0, h) == 1 { on = 1; next }
				on && /^```/ { if (++fence == 2) exit; next }
				fence == 1 { print "  " $0 }' "$TMP/report.md"
		fi
	done < <(awk '/^## / { on = ($0 == "## Summary") } on' "$TMP/report.md")
	tl_check bench_report_has_throughput grep -q '^| MAC-swap XDP_TX reflector' "$TMP/report.md"
	# The floor forwarded (its path check: it encapsulated every frame
	# that arrived, or the benchmark failed above), and every xlb row is
	# held against it.
	tl_check bench_report_has_the_floor grep -q '^| minimal Maglev forwarder (the floor) | [0-9]' "$TMP/report.md"
	tl_check bench_report_targets_the_floor grep -q "^Target: xlb forwards at least 0.90 of the floor's rate" "$TMP/report.md"
	# Both stage ladders ran to the whole path, each stage timed (a stage
	# that ran no packet, or did not take xlb's place, fails the benchmark).
	tl_check bench_leaves_no_pin_at_bpffs_root test "$(ls /sys/fs/bpf | grep '^xlb_')" = "$pins"
	tl_check bench_report_has_stage_ladders test "$(grep -c '^| encapsulation, verdict: the whole path | [0-9]' "$TMP/report.md")" = 2
}

test_gen_rejects_bad_options
test_pktgen_rejects_bad_options
test_throughput_rejects_bad_options
tl_require_root gen_writes_valid_frames || exit 0
test_gen_writes_valid_frames
test_gen_tcp_flags
test_gen_follows_capture
if veth_pair; then
	test_gen_sends
	test_pktgen
else
	tl_fail gen_sends_what_it_counts "cannot set up a veth pair"
fi
test_bench_report
exit $TL_FAILED
