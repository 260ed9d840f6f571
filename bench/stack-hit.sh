#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/stack-hit.sh - what -k adds to a probe hit on the ptrace backend
# (the stack unwound in the tracer while the thread is stopped), on
# bench/hit-loop (COUNT calls of bench_work, -O2: no frame pointers), in
# one run:
#
#   utrace -b ptrace -f bench_work         (entry and return lines)
#   utrace -b ptrace -k -f bench_work      (the same, and the entry's stack)
#   BASE's utrace, both ways               (when a second build is given:
#                                           e.g. main's, before a change)
#
# Each runs with COUNT calls and with 0 calls, RUNS times each, interleaved;
# ns per call = (median T(COUNT) - median T(0)) / COUNT, which removes the
# start-up cost; -k's cost per hit = ns/call with -k - ns/call without.
#
# Usage: bench/stack-hit.sh [BUILD_DIR [RUNS [COUNT [BASE_BUILD_DIR]]]]
#        (defaults: build 3 5000, no base)
set -eu

BUILD=${1:-build}
RUNS=${2:-3}
COUNT=${3:-5000}
BASE=${4:-}
PROG=$(realpath "$BUILD/bench/hit-loop")

[ -x "$BUILD/cli/utrace" ] && [ -x "$PROG" ] || { echo "bench: build first (ninja -C $BUILD)" >&2; exit 2; }
[ -z "$BASE" ] || [ -x "$BASE/cli/utrace" ] || { echo "bench: no $BASE/cli/utrace" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

variants="plain stack"
[ -z "$BASE" ] || variants="$variants base-plain base-stack"

cmd() { # cmd VARIANT N
	case $1 in
	plain) echo "$BUILD/cli/utrace -b ptrace -o /dev/null -f bench_work -- $PROG $2" ;;
	stack) echo "$BUILD/cli/utrace -b ptrace -k -o /dev/null -f bench_work -- $PROG $2" ;;
	base-plain) echo "$BASE/cli/utrace -b ptrace -o /dev/null -f bench_work -- $PROG $2" ;;
	base-stack) echo "$BASE/cli/utrace -b ptrace -k -o /dev/null -f bench_work -- $PROG $2" ;;
	esac
}

run() { # run VARIANT N
	c=$(cmd "$1" "$2")
	t0=$(date +%s%N)
	sh -c "$c" >/dev/null 2>&1 || { echo "bench: '$c' failed" >&2; exit 1; }
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >>"$TMP/$1.$2"
}

median() {
	sort -n "$TMP/$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# the frames one hit's -k shows, for the record
frames() { # frames BUILD_DIR
	"$1/cli/utrace" -b ptrace -k -f bench_work -- "$PROG" 1 2>&1 | grep -c '^ > ' || true
}

i=0
while [ $i -lt "$RUNS" ]; do
	for v in $variants; do
		run "$v" 0
		run "$v" "$COUNT"
	done
	i=$((i + 1))
done

printf '%-12s %14s %14s %12s\n' variant "T(0) us" "T($COUNT) us" "ns/call"
for v in $variants; do
	a=$(median "$v.0")
	b=$(median "$v.$COUNT")
	ns=$(((b - a) * 1000 / COUNT))
	echo "$ns" >"$TMP/$v.ns"
	printf '%-12s %14d %14d %12d\n' "$v" "$a" "$b" "$ns"
done
echo
k=$(($(cat "$TMP/stack.ns") - $(cat "$TMP/plain.ns")))
echo "-k per hit: $k ns ($(frames "$BUILD") frames)"
if [ -n "$BASE" ]; then
	kb=$(($(cat "$TMP/base-stack.ns") - $(cat "$TMP/base-plain.ns")))
	echo "-k per hit, base: $kb ns ($(frames "$BASE") frames)"
	awk -v a="$(cat "$TMP/stack.ns")" -v b="$(cat "$TMP/base-stack.ns")" \
		'BEGIN { if (b <= 0) b = 1; printf "ratio, ns/call with -k: this / base = %.3g\n", a / b }'
fi
