#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/module-hit.sh - cost per hit of a C probe module's handler
# (bench/m-count.c: two counter adds and an argument read at each call of
# bench_work in bench/hit-loop), with the handler inside the target
# (-b agent) and in the tracer (-b ptrace), against the built-in counting
# probe (-u bench_work -c) and no tracing at all.
#
# ns per hit = (median T(COUNT) - median T(0)) / COUNT over RUNS runs each.
#
# Usage: bench/module-hit.sh [BUILD_DIR [RUNS [COUNT]]]   (defaults: build 5 2000000)
set -eu

BUILD=${1:-build}
RUNS=${2:-5}
COUNT=${3:-2000000}
UTRACE=$BUILD/cli/utrace
PROG=$(realpath "$BUILD/bench/hit-loop")
MOD=$(realpath "$BUILD/bench/m-count.so")

[ -x "$UTRACE" ] && [ -x "$PROG" ] && [ -f "$MOD" ] ||
	{ echo "bench: build first (ninja -C $BUILD)" >&2; exit 2; }

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { # run N CMD...: median ns of RUNS runs
	n=$1; shift
	i=0
	while [ $i -lt "$RUNS" ]; do
		t0=$(now); "$@" >/dev/null 2>&1 || true; t1=$(now)
		echo $((t1 - t0)); i=$((i + 1))
	done | median
}
per_hit() { # per_hit NAME CMD... (PROG N appended)
	name=$1; shift
	a=$(run 0 "$@" "$PROG" 0)
	b=$(run "$COUNT" "$@" "$PROG" "$COUNT")
	awk -v n="$name" -v a="$a" -v b="$b" -v c="$COUNT" \
		'BEGIN { printf "%-28s %8.1f ns/hit\n", n, (b - a) / c }'
}

per_hit "untraced" env
per_hit "agent -u bench_work -c" "$UTRACE" -b agent -c -u bench_work --
per_hit "agent -m m-count.so" "$UTRACE" -b agent -m "$MOD" --
COUNT=$((COUNT / 100)) # traps: 100 times fewer calls
per_hit "ptrace -m m-count.so" "$UTRACE" -b ptrace -m "$MOD" --
