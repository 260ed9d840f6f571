#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/syscalls.sh - utrace -s against strace, on a syscall-heavy program
# (tests/targets/s-getppid: COUNT getppid() calls, then COUNT/10 writes to
# /dev/null). Each command runs RUNS times, interleaved with its rival so
# that machine noise hits both alike. The figure of merit is the median CPU
# time (user + system of tracer and tracee, from /usr/bin/time), which a
# loaded machine disturbs much less than wall time; wall medians and
# minimums are shown too.
#
#   (a) every syscall traced, output to /dev/null:
#       utrace -F -s -o /dev/null   vs  strace -f -o /dev/null
#   (b) a filter that selects none of the hot syscalls:
#       utrace -s openat             vs  strace -f --seccomp-bpf -e trace=openat
#
# Usage: bench/syscalls.sh [BUILD_DIR [RUNS [COUNT]]]   (defaults: build 5 200000)
# Prints a table and the ratios utrace/strace (< 1: utrace is faster).
# UTRACE_BEFORE=/path/to/an/older/utrace adds its rows and ratios, run in
# the same rounds, for before/after comparisons.
set -eu

BUILD=${1:-build}
RUNS=${2:-5}
COUNT=${3:-200000}
UTRACE=$BUILD/cli/utrace
BEFORE=${UTRACE_BEFORE:-}
PROG=$BUILD/tests/targets/s-getppid

for f in "$UTRACE" "$PROG"; do
	[ -x "$f" ] || { echo "bench: $f not built (ninja -C $BUILD)" >&2; exit 2; }
done
command -v strace >/dev/null || { echo "bench: strace is not installed" >&2; exit 2; }
[ -x /usr/bin/time ] || echo "bench: /usr/bin/time missing: no CPU times, wall only" >&2
[ -z "$BEFORE" ] || [ -x "$BEFORE" ] || { echo "bench: $BEFORE is not executable" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# run NAME CMD...: one timed run; wall microseconds appended to $TMP/NAME,
# CPU microseconds (user + system, tracer and tracee) to $TMP/NAME.cpu
run() {
	name=$1
	shift
	t0=$(date +%s%N)
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%U %S' -o "$TMP/t" "$@" >/dev/null 2>&1 ||
			{ echo "bench: '$*' failed" >&2; exit 1; }
		awk '{ printf "%d\n", ($1 + $2) * 1e6 }' "$TMP/t" >>"$TMP/$name.cpu"
	else
		"$@" >/dev/null 2>&1 || { echo "bench: '$*' failed" >&2; exit 1; }
		echo 0 >>"$TMP/$name.cpu"
	fi
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >>"$TMP/$name"
}

median() {
	sort -n "$TMP/$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

minimum() {
	sort -n "$TMP/$1" | head -n 1
}

i=0
while [ $i -lt "$RUNS" ]; do
	run base "$PROG" "$COUNT"
	run a_utrace "$UTRACE" -F -s -o /dev/null -- "$PROG" "$COUNT"
	run a_strace strace -f -o /dev/null "$PROG" "$COUNT"
	[ -z "$BEFORE" ] || run a_before "$BEFORE" -F -s -o /dev/null -- "$PROG" "$COUNT"
	run b_utrace "$UTRACE" -s openat -o /dev/null -- "$PROG" "$COUNT"
	run b_strace strace -f --seccomp-bpf -e trace=openat -o /dev/null "$PROG" "$COUNT"
	[ -z "$BEFORE" ] || run b_before "$BEFORE" -s openat -o /dev/null -- "$PROG" "$COUNT"
	i=$((i + 1))
done

base=$(median base)
printf 'workload: %s %s (%s getppid + %s write), %s runs each, interleaved\n\n' \
	"$(basename "$PROG")" "$COUNT" "$COUNT" "$((COUNT / 10))" "$RUNS"
printf '%-46s %11s %10s %9s %12s\n' "command" "cpu med (s)" "wall med" "wall min" "wall/untraced"
printf '%-46s %11s %10s %9s %12s\n' "----------------------------------------------" \
	"-----------" "----------" "---------" "------------"
row() {
	awk -v label="$2" -v m="$(median "$1")" -v n="$(minimum "$1")" \
		-v c="$(median "$1.cpu")" -v b="$base" \
		'BEGIN { printf "%-46s %11.3f %10.3f %9.3f %11.1fx\n", label, c / 1e6, m / 1e6, n / 1e6, m / b }'
}
# ratio LABEL A B: median CPU and wall ratios of runs A and B
ratio() {
	awk -v label="$1" -v ac="$(median "$2.cpu")" -v bc="$(median "$3.cpu")" \
		-v aw="$(median "$2")" -v bw="$(median "$3")" \
		'BEGIN { printf "%-46s %11.2f %10.2f\n", label, (bc ? ac / bc : 0), aw / bw }'
}
row base "untraced"
row a_utrace "(a) utrace -F -s -o /dev/null"
[ -z "$BEFORE" ] || row a_before "(a) utrace BEFORE -F -s -o /dev/null"
row a_strace "(a) strace -f -o /dev/null"
row b_utrace "(b) utrace -s openat"
[ -z "$BEFORE" ] || row b_before "(b) utrace BEFORE -s openat"
row b_strace "(b) strace -f --seccomp-bpf -e trace=openat"
echo
printf '%-46s %11s %10s\n' "ratio (< 1: first is cheaper)" "cpu median" "wall med"
ratio "(a) all syscalls traced: utrace / strace" a_utrace a_strace
[ -z "$BEFORE" ] || ratio "(a) BEFORE utrace / strace" a_before a_strace
ratio "(b) no hot syscall selected: utrace / strace" b_utrace b_strace
[ -z "$BEFORE" ] || ratio "(b) BEFORE utrace / strace" b_before b_strace
printf 'load average at the end: %s\n' "$(cat /proc/loadavg)"
