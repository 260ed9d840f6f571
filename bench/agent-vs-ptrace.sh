#!/bin/sh
# SPDX-License-Identifier: MIT
# Cost per traced call of `utrace -c -f work` with the in-process agent and
# with the ptrace backend, on the same loop (tests/targets/s-trace: work()
# calls leaf(); `s-trace calls N` makes N calls of work), and of `ltrace -c
# -x work` when ltrace is installed. Per hit = (wall time of N calls - wall
# time of M calls) / (N - M), so the fixed costs (start-up, symbol loading,
# the summary) cancel out; the untraced loop's own slope is subtracted.
# Median of 3 runs each.
#
#   bench/agent-vs-ptrace.sh [BUILD_DIR] [N_AGENT] [N_PTRACE]
set -eu
build=$(cd "${1:-build}" && pwd)
na=${2:-2000000}
np=${3:-20000}
bin="$build/tests/targets/s-trace"
utrace="$build/cli/utrace"

now() { date +%s%N; }

# wall ns of "$@" (output discarded)
wall() {
	t0=$(now)
	"$@" >/dev/null 2>&1 || true
	t1=$(now)
	echo $((t1 - t0))
}

# median of 3 of: per-call ns of CMD... between $small and $big calls
slope() {
	big=$1
	small=$((big / 10))
	shift
	r=""
	for i in 1 2 3; do
		a=$(wall "$@" "$bin" calls "$big")
		b=$(wall "$@" "$bin" calls "$small")
		r="$r $(awk -v a="$a" -v b="$b" -v n="$((big - small))" 'BEGIN { printf "%.1f", (a - b) / n }')"
	done
	echo $r | tr ' ' '\n' | sort -g | sed -n 2p
}

base_a=$(slope "$na")
base_p=$(slope "$np")
agent=$(slope "$na" "$utrace" -b agent -c -f work)
ptrace=$(slope "$np" "$utrace" -b ptrace -c -f work)
awk -v a="$agent" -v p="$ptrace" -v ba="$base_a" -v bp="$base_p" -v na="$na" -v np="$np" 'BEGIN {
	ha = a - ba; hp = p - bp;
	printf "untraced loop        %10.1f ns/call\n", ba
	printf "utrace -b agent -c   %10.1f ns/hit  (%d calls)\n", ha, na
	printf "utrace -b ptrace -c  %10.1f ns/hit  (%d calls)\n", hp, np
	printf "per-hit ratio ptrace/agent = %.0fx\n", (ha > 0 ? hp / ha : 0) }'
if command -v ltrace >/dev/null 2>&1; then
	lt=$(slope "$np" ltrace -c -x work)
	awk -v l="$lt" -v b="$base_p" -v a="$agent" -v ba="$base_a" 'BEGIN {
		printf "ltrace -c -x work    %10.1f ns/hit  ltrace/agent = %.0fx\n", l - b,
			(a - ba > 0 ? (l - b) / (a - ba) : 0) }'
else
	echo "ltrace: not installed (skipped)"
fi
