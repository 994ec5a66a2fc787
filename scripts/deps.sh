#!/usr/bin/env bash
# Install the Debian 12 packages xlb needs to build, test, benchmark and run
# the demo; only the missing ones, and only when something is missing.
set -euo pipefail

packages=(
	# build
	make gcc pkg-config clang llvm libbpf-dev bpftool libxdp-dev libelf-dev
	zlib1g-dev libpcap-dev libjson-c-dev libmicrohttpd-dev
	# run, test and demo
	iproute2 xdp-tools tcpdump tshark socat ethtool gnuplot-nox jq procps bc iputils-ping
	curl
	# /etc/protocols, for `ip route get ... ipproto tcp` (scripts/ecmp.sh);
	# python3 builds test_loader_iplink.sh's frame
	netbase python3
	# libFuzzer and the sanitizers' runtimes (make fuzz, make check-sanitize)
	libclang-rt-14-dev
	# the datapath must also build and load with clang 19
	clang-19
	# vmtest: a 6.1 kernel under qemu
	qemu-system-x86 busybox-static kmod cpio
	# scale-out tests
	bird2
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[[ $status == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
	echo "xlb: missing packages: ${missing[*]}" >&2
	echo "xlb: run as root, or: apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "xlb: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
