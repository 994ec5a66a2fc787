#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Write the seed captures of fuzz/corpus/pcap/ (make fuzz-seeds): a few
# flows of gentrace on each link type it writes, mkseeds' frame of each
# kind, and copies of those as pcapng, with nanosecond timestamps, on
# link types the reader takes as raw IPv4 / IPv6 or skips, and cut short.
# A few hundred bytes each but one. (editcap's pcapng files name the
# program and OS that wrote them; the rest is the same on every run.)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=fuzz/corpus/pcap
GENTRACE=$BUILD/tools/gentrace
MKSEEDS=$BUILD/fuzz/mkseeds

mkdir -p "$OUT"
rm -f "$OUT"/*
for link in ether vlan qinq sll sll2 raw null loop; do
	"$GENTRACE" -n 3 --max-packets 3 -s 7 --ipv6 0.5 --udp 0.3 --link "$link" \
		-o "$OUT/$link.pcap" >/dev/null
done
"$MKSEEDS" "$OUT/edge.pcap"
# Enough flows (520, one header-only UDP packet each) for the reader's flow
# table to grow past its first 1024 slots: 23 KB, the one large seed.
"$GENTRACE" -n 520 --max-packets 1 -s 7 --ipv6 0 --udp 1 --link raw \
	-o "$OUT/many-flows.pcap" >/dev/null

if command -v editcap >/dev/null; then
	editcap -F pcapng "$OUT/ether.pcap" "$OUT/ether.pcapng"
	editcap -F pcapng "$OUT/edge.pcap" "$OUT/edge.pcapng"
	editcap -F nsecpcap "$OUT/sll.pcap" "$OUT/sll-nsec.pcap"
	editcap -F pcap -T rawip4 "$OUT/raw.pcap" "$OUT/ipv4.pcap"
	editcap -F pcap -T rawip6 "$OUT/raw.pcap" "$OUT/ipv6.pcap"
	editcap -F pcap -T user0 "$OUT/ether.pcap" "$OUT/unsupported-link.pcap"
else
	echo "seeds.sh: editcap (tshark's wireshark-common) missing: no pcapng seeds" >&2
fi
head -c 100 "$OUT/ether.pcap" >"$OUT/truncated.pcap"
head -c 24 "$OUT/ether.pcap" >"$OUT/header-only.pcap"
ls -l "$OUT"
