#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Drive the kernel's packet generator (/proc/net/pktgen) against a VIP with
# many flows: UDP from a range of source addresses and ports, one pktgen
# thread per CPU given. For real NICs (or a veth in a test VM) on kernels
# built with CONFIG_NET_PKTGEN; xlb-gen does the same through XDP where
# pktgen is missing.
#
#   bench/pktgen.sh -i DEV -m DST_MAC -d VIP:PORT [options]
#
#   -i DEV        device to send out of (in the caller's network namespace)
#   -m MAC        destination MAC: the balancer's interface, or the next hop
#   -d VIP:PORT   destination, 192.0.2.10:53 or [2001:db8::10]:53
#   -p udp|tcp    protocol (default udp; tcp needs a pktgen with "flag TCP")
#   -s LO-HI      source addresses, IPv4 only (default 198.51.100.1-198.51.100.254);
#                 IPv6 sends from one address, -S, and varies the port
#   -S ADDR6      IPv6 source address (default 2001:db8:ffff::1)
#   -P LO-HI      source ports (default 1024-65535)
#   -n COUNT      packets per thread (default 0: until -t ends the run)
#   -t SECONDS    run time when COUNT is 0 (default 5)
#   -T THREADS    pktgen threads, on CPUs 0..THREADS-1 (default 1)
#   -l BYTES      frame size without FCS (default 60)
#   -r PPS        rate per thread (default 0: as fast as possible)
#   -R            draw source address and port at random for every packet
#   -c CLONES     clone_skb: times each skb is re-sent (default 0; veth
#                 refuses anything else)
#   -j            print the result as JSON
#
# pktgen's own "flows" pin only destination addresses, so the flows a
# balancer sees come from the source ranges: by default the source address
# and port both advance one step per packet, so the tuples repeat every
# lcm(addresses, ports) packets; pktgen uses ports LO..HI-1 and addresses
# LO..HI, so -P 1024-1279 with the default 254 addresses gives a working set
# of 64,770 flows. With -R nearly every packet starts a new flow (a
# SYN-flood-like load for the connection table). pktgen's TCP frames carry
# no flags (not SYNs): a balancer sees them as mid-connection packets.
#
# Exit status: 0 sent; 1 bad arguments or a failed run; 77 pktgen is not
# available on this kernel (the automake convention for "skipped").
set -euo pipefail

PKTGEN=/proc/net/pktgen
EXIT_UNAVAILABLE=77

usage() { sed -n '/^#   bench\/pktgen.sh/,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "pktgen.sh: $*" >&2; exit 1; }

dev= mac= vip= src=198.51.100.1-198.51.100.254 src6=2001:db8:ffff::1
sports=1024-65535 count=0 duration=5 threads=1 size=60 rate=0 random=0
clones=0 json=0 proto=udp
while getopts "i:m:d:p:s:S:P:n:t:T:l:r:Rc:jh" opt; do
	case $opt in
	i) dev=$OPTARG ;;
	m) mac=$OPTARG ;;
	d) vip=$OPTARG ;;
	p) proto=$OPTARG ;;
	s) src=$OPTARG ;;
	S) src6=$OPTARG ;;
	P) sports=$OPTARG ;;
	n) count=$OPTARG ;;
	t) duration=$OPTARG ;;
	T) threads=$OPTARG ;;
	l) size=$OPTARG ;;
	r) rate=$OPTARG ;;
	R) random=1 ;;
	c) clones=$OPTARG ;;
	j) json=1 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 1 ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -eq 0 ]] || die "unexpected argument '$1' (see -h)"

uint() { [[ $2 =~ ^[0-9]+$ && ${#2} -le 10 ]] || die "$1: '$2' is not a whole number"; }
[[ -n $dev ]] || die "-i DEV is required"
[[ $mac =~ ^([0-9a-fA-F]{1,2}:){5}[0-9a-fA-F]{1,2}$ ]] || die "-m: '$mac' is not a MAC address"
if [[ $vip =~ ^\[([0-9a-fA-F:.]+)\]:([0-9]+)$ ]]; then
	family=6
elif [[ $vip =~ ^([0-9.]+):([0-9]+)$ ]]; then
	family=4
else
	die "-d: '$vip' is not ADDR:PORT or [ADDR6]:PORT"
fi
dst=${BASH_REMATCH[1]} dport=${BASH_REMATCH[2]}
(( ${#dport} <= 5 && dport >= 1 && dport <= 65535 )) || die "-d: port $dport is out of range"
[[ $sports =~ ^([0-9]{1,5})-([0-9]{1,5})$ ]] && ((BASH_REMATCH[1] >= 1 &&
	BASH_REMATCH[1] <= BASH_REMATCH[2] && BASH_REMATCH[2] <= 65535)) ||
	die "-P: '$sports' is not LO-HI within 1-65535"
sport_lo=${BASH_REMATCH[1]} sport_hi=${BASH_REMATCH[2]}
if [[ $family == 4 ]]; then
	[[ $src =~ ^([0-9.]+)-([0-9.]+)$ ]] || die "-s: '$src' is not ADDR-ADDR"
	src_lo=${BASH_REMATCH[1]} src_hi=${BASH_REMATCH[2]}
fi
[[ $proto == udp || $proto == tcp ]] || die "-p: '$proto' is not udp or tcp"
uint -n "$count"; uint -T "$threads"; uint -l "$size"; uint -r "$rate"; uint -c "$clones"
[[ $duration =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "-t: '$duration' is not a number of seconds"
(( threads >= 1 && threads <= $(nproc) )) || die "-T: $threads threads, but this machine has $(nproc) CPUs"
(( size >= 60 && size <= 9000 )) || die "-l: frame size $size is not within 60-9000"
(( count > 0 )) || [[ $duration != 0 ]] || die "-n 0 needs a run time (-t)"

if [[ ! -d $PKTGEN ]]; then
	modprobe pktgen 2>/dev/null || true
fi
if [[ ! -w $PKTGEN/pgctrl ]]; then
	echo "pktgen.sh: pktgen is not available on this kernel ($(uname -r):" \
		"no $PKTGEN; it needs CONFIG_NET_PKTGEN and root)" >&2
	exit $EXIT_UNAVAILABLE
fi
[[ -e /sys/class/net/$dev || -n $(ip -o link show dev "$dev" 2>/dev/null) ]] ||
	die "-i: no device '$dev' in this network namespace"

# pgset FILE CMD: one pktgen command; pktgen reports its verdict in the
# file's "Result:" line.
pgset() {
	local file=$1 cmd=$2
	echo "$cmd" > "$file" 2>/dev/null || true
	if [[ $file != */pgctrl ]] && ! grep -q "^Result: OK" "$file"; then
		die "pktgen refused '$cmd' on $(basename "$file"): $(grep '^Result:' "$file")"
	fi
}

devs=()
stop_all() { echo stop > "$PKTGEN/pgctrl" 2>/dev/null || true; }
cleanup() {
	local t d
	stop_all
	for ((t = 0; t < threads; t++)); do
		echo rem_device_all > "$PKTGEN/kpktgend_$t" 2>/dev/null || true
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Rates: pktgen paces with a per-packet delay in ns.
delay=0
(( rate == 0 )) || delay=$(( 1000000000 / rate ))
for ((t = 0; t < threads; t++)); do
	[[ -w $PKTGEN/kpktgend_$t ]] || die "no pktgen thread for CPU $t"
	pgset "$PKTGEN/kpktgend_$t" rem_device_all
	pgset "$PKTGEN/kpktgend_$t" "add_device $dev@$t"
	d=$PKTGEN/$dev@$t
	devs+=("$d")
	pgset "$d" "count $count"
	pgset "$d" "clone_skb $clones"
	pgset "$d" "pkt_size $size"	# the device adds the FCS
	pgset "$d" "delay $delay"
	pgset "$d" "dst_mac $mac"
	pgset "$d" "udp_dst_min $dport"
	pgset "$d" "udp_dst_max $dport"
	pgset "$d" "udp_src_min $sport_lo"
	pgset "$d" "udp_src_max $sport_hi"
	if [[ $proto == tcp ]]; then
		pgset "$d" "flag TCP"
	fi
	if (( random )); then
		pgset "$d" "flag UDPSRC_RND"
	fi
	if [[ $family == 4 ]]; then
		pgset "$d" "dst_min $dst"
		pgset "$d" "dst_max $dst"
		pgset "$d" "src_min $src_lo"
		pgset "$d" "src_max $src_hi"
		if (( random )); then
			pgset "$d" "flag IPSRC_RND"
		fi
	else
		pgset "$d" "dst6 $dst"
		pgset "$d" "src6 $src6"
		# A zero UDP checksum is invalid over IPv6.
		pgset "$d" "flag UDPCSUM"
	fi
done

# "start" blocks until every thread has sent its count; a run time stops
# it from the outside.
start=$(date +%s.%N)
if (( count > 0 )); then
	pgset "$PKTGEN/pgctrl" start
else
	pgset "$PKTGEN/pgctrl" start &
	pid=$!
	sleep "$duration"
	stop_all
	wait "$pid" || true
fi
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')

# Each device file ends with e.g.
#   Result: OK: 1000311(c999827+d484) usec, 812345 (64byte,0frags)
#     812088pps 415Mb/sec (415789056bps) errors: 0
# (pktgen enlarges frames too small for its own header: the size reported
# is what was sent).
sent=0 pps=0 errors=0
for d in "${devs[@]}"; do
	line=$(grep -A1 '^Result: OK' "$d" | tr '\n' ' ')
	[[ $line =~ usec,\ ([0-9]+)\ \(([0-9]+)byte.*\ ([0-9]+)pps.*errors:\ ([0-9]+) ]] ||
		die "$(basename "$d"): no result ($(grep '^Result' "$d"))"
	sent=$((sent + BASH_REMATCH[1]))
	size=${BASH_REMATCH[2]}
	pps=$((pps + BASH_REMATCH[3]))
	errors=$((errors + BASH_REMATCH[4]))
done
if (( json )); then
	printf '{"sent":%d,"pps":%d,"errors":%d,"threads":%d,"seconds":%.3f,"size":%d,"family":%d,"proto":"%s"}\n' \
		"$sent" "$pps" "$errors" "$threads" "$secs" "$size" "$family" "$proto"
else
	printf 'pktgen sent %d frames (%d bytes, IPv%d %s, %d threads) in %.3f s: %d pps, %d errors\n' \
		"$sent" "$size" "$family" "${proto^^}" "$threads" "$secs" "$pps" "$errors"
fi
