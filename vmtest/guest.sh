#!/usr/bin/env bash
# Runs inside the vmtest VM as root, chrooted into the host's tree (see
# vmtest/init.sh): loads the modules the suite needs, checks that the kernel
# runs BPF, runs the suite (tests/run.sh), then the VM's own tests
# (vmtest/test_*.sh). The closing line "N passed, N failed" goes to
# /vmtest-out/result, a reason the suite could not run to
# /vmtest-out/error; vmtest/run.sh on the host reads them.
set -uo pipefail
cd "$XLB_TOP" || exit 1
out=/vmtest-out
rel=$(uname -r)

error() {
	echo "vmtest: error: $*"
	echo "$*" >"$out/error"
	exit 1
}

read -r uptime _ </proc/uptime
echo "vmtest: Linux $rel up after ${uptime} s, $(nproc) CPUs, $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) MiB"

if [[ -d /lib/modules/$rel ]]; then
	for m in $(sed 's/#.*//' vmtest/modules); do
		modprobe "$m" || error "cannot load module $m"
	done
else
	echo "vmtest: no modules for $rel: the suite relies on what is built in"
fi

# bpftool lists programs through the bpf() syscall: ENOSYS without BPF.
bpftool prog list >/dev/null 2>&1 ||
	error "kernel $rel has no usable bpf() syscall (CONFIG_BPF_SYSCALL): xlb cannot run on it"
[[ -e /sys/kernel/btf/vmlinux ]] ||
	echo "vmtest: note: kernel $rel has no BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF)"

# The tests vmtest/host-only names are not run here. The root is an
# overlay whose writes stay in the VM: removing them from this view of the
# tree leaves tests/run.sh to run everything else, new tests included.
while read -r name reason; do
	[[ -n $name && $name != \#* ]] || continue
	rm -f "$BUILD/tests/$name" "tests/$name"
	echo "vmtest: not run in the VM: $name ($reason)"
done <vmtest/host-only

# VMTEST=1 lets expensive tests use smaller counts under emulation.
export VMTEST=1
start=$SECONDS
tests/run.sh ${VMTEST_PATTERN:+"$VMTEST_PATTERN"} 2>&1 | tee "$out/suite.log"
rc=${PIPESTATUS[0]}
closing=$(tail -n 1 "$out/suite.log")
if [[ $closing =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
	pass=${BASH_REMATCH[1]} fail=${BASH_REMATCH[2]}
	# With a pattern, no matching suite test is no failure (tests/run.sh
	# still exits non-zero); the check below sees that something ran.
	if [[ $rc -ne 0 && $fail -eq 0 && ! ( -n ${VMTEST_PATTERN:-} && $pass -eq 0 ) ]]; then
		echo "FAIL tests/run.sh: exited with status $rc"
		fail=1
	fi
else
	echo "FAIL tests/run.sh: ended without its closing line (status $rc)"
	pass=0 fail=1
fi
echo "vmtest: suite took $((SECONDS - start)) s"

# Then what only this VM can check (vmtest/test_*.sh: pktgen), each
# counted the way tests/run.sh counts the suite.
log=$(mktemp)
for t in vmtest/test_*.sh; do
	[[ -x $t ]] || continue
	[[ -z ${VMTEST_PATTERN:-} || $t == *"$VMTEST_PATTERN"* ]] || continue
	echo "== $t"
	start=$SECONDS
	"$t" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	p=$(grep -c '^PASS ' "$log") f=$(grep -c '^FAIL ' "$log")
	if [[ $rc -ne 0 && $f -eq 0 ]]; then
		echo "FAIL $t: exited with status $rc"
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f))
	echo "   ($((SECONDS - start)) s)"
done
rm -f "$log"

if [[ $((pass + fail)) -eq 0 ]]; then
	echo "FAIL vmtest: no test ran${VMTEST_PATTERN:+ (VMTEST_PATTERN=$VMTEST_PATTERN)}"
	fail=1
fi
echo "$pass passed, $fail failed" | tee "$out/result"
