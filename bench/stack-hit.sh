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
# T is the wall time, and the user-mode CPU time of utrace and the target
# (the shell's times: the unwinder's work, less noisy than the ptrace stops
# on a loaded machine; the target's share is the same in every variant).
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
	sh -c "$c >/dev/null 2>&1 || exit 1; times" >"$TMP/times" 2>/dev/null ||
		{ echo "bench: '$c' failed" >&2; exit 1; }
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >>"$TMP/$1.$2"
	# the children's line: "0m0.130000s 0m1.470000s" (user, sys)
	tail -n 1 "$TMP/times" | awk '{ split($1, u, /[ms]/); printf "%d\n", (u[1] * 60 + u[2]) * 1e6 }' \
		>>"$TMP/$1.$2.user"
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

printf '%-12s %14s %14s %12s %14s\n' variant "T(0) us" "T($COUNT) us" "ns/call" "user ns/call"
for v in $variants; do
	a=$(median "$v.0")
	b=$(median "$v.$COUNT")
	ns=$(((b - a) * 1000 / COUNT))
	echo "$ns" >"$TMP/$v.ns"
	ua=$(median "$v.0.user")
	ub=$(median "$v.$COUNT.user")
	uns=$(((ub - ua) * 1000 / COUNT))
	echo "$uns" >"$TMP/$v.uns"
	printf '%-12s %14d %14d %12d %14d\n' "$v" "$a" "$b" "$ns" "$uns"
done
echo
delta() { # delta VARIANT-WITH-K VARIANT-WITHOUT EXT
	echo $(($(cat "$TMP/$1.$3") - $(cat "$TMP/$2.$3")))
}
echo "-k per hit: $(delta stack plain ns) ns wall, $(delta stack plain uns) ns user ($(frames "$BUILD") frames)"
if [ -n "$BASE" ]; then
	echo "-k per hit, base: $(delta base-stack base-plain ns) ns wall," \
		"$(delta base-stack base-plain uns) ns user ($(frames "$BASE") frames)"
	awk -v a="$(cat "$TMP/stack.ns")" -v b="$(cat "$TMP/base-stack.ns")" \
		-v c="$(cat "$TMP/stack.uns")" -v d="$(cat "$TMP/base-stack.uns")" \
		'BEGIN { if (b <= 0) b = 1; if (d <= 0) d = 1
			printf "ratio with -k, this / base: %.3g per call (wall), %.3g (user)\n", a / b, c / d }'
fi
