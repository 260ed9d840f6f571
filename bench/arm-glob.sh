#!/bin/sh
# SPDX-License-Identifier: MIT
# Arming a broad glob: `utrace -c -f 'libc:*' -- true` (every function of
# the C library, ~2,200 probe points, on a program that does nearly
# nothing) with the in-process agent and with the ptrace backend, and
# `ltrace -c -e '*@libc.so.6' true` when ltrace is installed, side by side
# in one run. A run of `true` makes a handful of libc calls, so its wall
# time is the arming (resolve, plan, relocate, patch) and the summary;
# the untraced `true` is subtracted. Median of RUNS runs each; the ratios
# are other/agent. Also says how many warning lines the agent printed (the
# goal: none) and how many probe points it armed (-v).
#
#   bench/arm-glob.sh [BUILD_DIR] [RUNS] [SPEC]    (defaults: build 7 'libc:*')
set -eu
build=$(cd "${1:-build}" && pwd)
runs=${2:-7}
spec=${3:-libc:*}
utrace="$build/cli/utrace"
prog=$(command -v true)
export UTRACE_BUILD_DIR="$build"
[ -x "$utrace" ] || { echo "arm-glob: $utrace not built" >&2; exit 1; }

now() { date +%s%N; }
med() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "") }'; }

# median wall ms of "$@" over $runs runs (output discarded)
wall_med() {
	r=""
	for i in $(seq "$runs"); do
		t0=$(now)
		"$@" >/dev/null 2>&1 || true
		t1=$(now)
		r="$r $(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.1f", d / 1e6 }')"
	done
	echo "$r" | med
}

base=$(wall_med "$prog")
agent=$(wall_med "$utrace" -b agent -c -o /dev/null -f "$spec" -- "$prog")
ptrace=$(wall_med "$utrace" -b ptrace -c -o /dev/null -f "$spec" -- "$prog")
err=$("$utrace" -v -b agent -c -o /dev/null -f "$spec" -- "$prog" 2>&1 >/dev/null || true)
warn=$(echo "$err" | grep -c warning || true)
points=$(echo "$err" | sed -n 's/.* \([0-9][0-9]*\) probe points$/\1/p' | tail -1)
lt=""
if command -v ltrace >/dev/null 2>&1; then
	lt=$(wall_med ltrace -c -e '*@libc.so.6' "$prog")
fi
awk -v b="$base" -v a="$agent" -v p="$ptrace" -v l="$lt" -v s="$spec" -v w="$warn" \
	-v n="${points:-?}" -v r="$runs" 'BEGIN {
	ha = a - b; hp = p - b; hl = l - b;
	printf "arming -c -f '\''%s'\'' on true, median of %d runs (untraced true %.1f ms subtracted)\n", s, r, b
	printf "utrace -b agent    %8.1f ms  (%s probe points, %d warning lines)\n", ha, n, w
	printf "utrace -b ptrace   %8.1f ms  ptrace/agent = %.2fx\n", hp, (ha > 0 ? hp / ha : 0)
	if (l != "")
		printf "ltrace -c -e '\''*@libc.so.6'\'' %6.1f ms  ltrace/agent = %.2fx\n", hl,
			(ha > 0 ? hl / ha : 0)
	else
		print "ltrace: not installed (skipped)"
}'
