#!/bin/sh
# SPDX-License-Identifier: MIT
# ns per probe hit of the in-process agent (bench/agent-bench.c: median of 5
# runs of s-agent's timed loop, untraced / entry+count / entry+return+hist /
# int3), and, when bpftrace can attach uprobes here (root), the same loop
# under `bpftrace -e 'uprobe:BIN:probed_nop { @ = count(); }'` for the ratio.
#
#   bench/agent-hit.sh [BUILD_DIR] [N]
set -eu
build=$(cd "${1:-build}" && pwd)
n=${2:-10000000}
bin="$build/tests/agent/s-agent"
export UTRACE_BUILD_DIR="$build"

out=$("$build/bench/agent-bench" "$n" 5)
echo "$out"
base=$(echo "$out" | awk '/^untraced/ {print $2}')
cnt=$(echo "$out" | awk '/^entry\+count \(jmp\)/ {print $3}')

if command -v bpftrace >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	nb=$((n / 20))
	runs=""
	for i in 1 2 3 4 5; do
		v=$(bpftrace -q -e "uprobe:$bin:probed_nop { @ = count(); }" -c "$bin bench $nb" 2>/dev/null |
			awk 'NR == 1 && /^[0-9.]+$/ {print; exit}') || v=""
		[ -n "$v" ] || { echo "bpftrace: no result (uprobes unavailable?)"; exit 0; }
		runs="$runs $v"
	done
	med=$(echo $runs | tr ' ' '\n' | sort -g | sed -n 3p)
	echo "bpftrace uprobe+count   $med ns/call  (runs:$runs; $nb calls)"
	awk -v b="$base" -v c="$cnt" -v k="$med" 'BEGIN {
		a = c - b; u = k - b;
		printf "per hit: agent %.2f ns, bpftrace uprobe %.2f ns: bpftrace/agent = %.1fx\n", a, u, (a > 0 ? u / a : 0) }'
else
	echo "bpftrace: skipped (needs bpftrace and root)"
fi
