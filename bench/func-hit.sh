#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/func-hit.sh - cost per probe hit of function tracing, utrace against
# the tools users would otherwise pick, on one program (bench/hit-loop:
# COUNT calls of bench_work) in one run:
#
#   utrace -b ptrace -c -f bench_work       (entry + return, handlers in the tracer)
#   utrace -b agent  -c -f bench_work       (in-process agent; when available)
#   ltrace -c -x bench_work                 (entry + return, ptrace breakpoints)
#   bpftrace uprobe + uretprobe count       (kernel uprobes; root only)
#
# Each tool runs with COUNT calls and with 0 calls, RUNS times each,
# interleaved; ns per call = (median T(COUNT) - median T(0)) / COUNT, which
# removes each tool's start-up cost. One call = one entry + one return hit.
#
# Usage: bench/func-hit.sh [BUILD_DIR [RUNS [COUNT]]]   (defaults: build 3 20000)
set -eu

BUILD=${1:-build}
RUNS=${2:-3}
COUNT=${3:-20000}
UTRACE=$BUILD/cli/utrace
PROG=$(realpath "$BUILD/bench/hit-loop")

[ -x "$UTRACE" ] && [ -x "$PROG" ] || { echo "bench: build first (ninja -C $BUILD)" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# tool NAME: can it run here? (tries it once on a tiny loop)
tools="utrace-ptrace"
"$UTRACE" -b agent -c -f bench_work -- "$PROG" 10 >/dev/null 2>&1 && tools="$tools utrace-agent"
command -v ltrace >/dev/null && tools="$tools ltrace"
command -v bpftrace >/dev/null && [ "$(id -u)" -eq 0 ] &&
	bpftrace -e "uprobe:$PROG:bench_work { @ = count(); }" -c "$PROG 10" >/dev/null 2>&1 &&
	tools="$tools bpftrace"

cmd() { # cmd TOOL N
	case $1 in
	none) echo "$PROG $2" ;;
	utrace-ptrace) echo "$UTRACE -b ptrace -c -o /dev/null -f bench_work -- $PROG $2" ;;
	utrace-agent) echo "$UTRACE -b agent -c -o /dev/null -f bench_work -- $PROG $2" ;;
	ltrace) echo "ltrace -c -o /dev/null -x bench_work $PROG $2" ;;
	bpftrace) echo "bpftrace -e 'uprobe:$PROG:bench_work { @e = count(); } uretprobe:$PROG:bench_work { @r = count(); }' -c '$PROG $2'" ;;
	esac
}

run() { # run TOOL N
	c=$(cmd "$1" "$2")
	t0=$(date +%s%N)
	sh -c "$c" >/dev/null 2>&1 || { echo "bench: '$c' failed" >&2; exit 1; }
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >>"$TMP/$1.$2"
}

median() {
	sort -n "$TMP/$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

i=0
while [ $i -lt "$RUNS" ]; do
	for t in none $tools; do
		run "$t" 0
		run "$t" "$COUNT"
	done
	i=$((i + 1))
done

printf '%-15s %14s %14s %12s\n' tool "T(0) us" "T($COUNT) us" "ns/call"
for t in none $tools; do
	a=$(median "$t.0")
	b=$(median "$t.$COUNT")
	ns=$(( (b - a) * 1000 / COUNT ))
	echo "$ns" >"$TMP/$t.ns"
	printf '%-15s %14d %14d %12d\n' "$t" "$a" "$b" "$ns"
done
base=$(cat "$TMP/none.ns")
echo
echo "ratios (per call, untraced loop cost removed; < 1: the first is cheaper):"
ratio() { # ratio A B
	[ -f "$TMP/$1.ns" ] && [ -f "$TMP/$2.ns" ] || return 0
	awk -v a="$(cat "$TMP/$1.ns")" -v b="$(cat "$TMP/$2.ns")" -v z="$base" -v n1="$1" -v n2="$2" \
		'BEGIN { a -= z; b -= z; if (b <= 0) b = 1; printf "  %-14s / %-14s = %.4g\n", n1, n2, a / b }'
}
ratio utrace-ptrace ltrace
ratio utrace-ptrace bpftrace
ratio utrace-agent ltrace
ratio utrace-agent bpftrace
ratio utrace-agent utrace-ptrace
