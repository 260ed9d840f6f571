#!/bin/sh
# SPDX-License-Identifier: MIT
# Cost per hit of the kernel backend (`utrace -b kernel -c`) against
# bpftrace's count() on the same site and the same kernel mechanism (a
# uprobe, plus a uretprobe for -f), on the same loop (tests/targets/s-trace:
# `s-trace calls N` makes N calls of work()). Per hit = (wall time of N
# calls - wall time of N/10 calls) / (9N/10): start-up, loading and the
# summary cancel out. Median of 3 runs each; bpftrace probes a private copy
# (its uprobe would reach our runs otherwise). Needs root.
#
#   bench/kernel-hit.sh [BUILD_DIR] [N]
set -eu
build=$(cd "${1:-build}" && pwd)
n=${2:-200000}
bin="$build/tests/targets/s-trace"
utrace="$build/cli/utrace"
copy=$(mktemp -d)/s-trace
cp "$bin" "$copy"
trap 'rm -rf "$(dirname "$copy")"' EXIT

now() { date +%s%N; }

wall() {
	t0=$(now)
	"$@" >/dev/null 2>&1 || true
	t1=$(now)
	echo $((t1 - t0))
}

# median of 3: per-call ns of "$1" (a command line, %N replaced by the calls)
slope() {
	r=""
	for i in 1 2 3; do
		a=$(wall sh -c "$(echo "$1" | sed "s/%N/$n/g")")
		b=$(wall sh -c "$(echo "$1" | sed "s/%N/$((n / 10))/g")")
		r="$r $(awk -v a="$a" -v b="$b" -v k="$((n - n / 10))" 'BEGIN { printf "%.0f", (a - b) / k }')"
	done
	echo $r | tr ' ' '\n' | sort -g | sed -n 2p
}

base=$(slope "$bin calls %N")
ku=$(slope "$utrace -b kernel -c -u work -- $bin calls %N")
bu=$(slope "bpftrace -q -e 'uprobe:$copy:work { @ = count(); }' -c '$copy calls %N'")
kf=$(slope "$utrace -b kernel -c -f work -- $bin calls %N")
bf=$(slope "bpftrace -q -e 'uprobe:$copy:work { @s[tid] = nsecs; } uretprobe:$copy:work /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }' -c '$copy calls %N'")
echo "untraced loop: $base ns/call"
awk -v k="$ku" -v b="$bu" -v z="$base" 'BEGIN { printf "entry count:        utrace -b kernel %d ns, bpftrace %d ns per hit: %.2fx\n", k - z, b - z, (k - z) / (b - z) }'
awk -v k="$kf" -v b="$bf" -v z="$base" 'BEGIN { printf "entry+return+hist:  utrace -b kernel %d ns, bpftrace %d ns per call: %.2fx\n", k - z, b - z, (k - z) / (b - z) }'
