#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/syscalls.sh - utrace -s against strace, on a syscall-heavy program
# (tests/targets/s-getppid: COUNT getppid() calls, then COUNT/10 writes to
# /dev/null). Each command runs RUNS times, interleaved with its rival so
# that machine noise hits both alike; the median wall time is reported.
#
#   (a) every syscall traced, output to /dev/null:
#       utrace -F -s -o /dev/null   vs  strace -f -o /dev/null
#   (b) a filter that selects none of the hot syscalls:
#       utrace -s openat             vs  strace -f --seccomp-bpf -e trace=openat
#
# Usage: bench/syscalls.sh [BUILD_DIR [RUNS [COUNT]]]   (defaults: build 5 200000)
# Prints a table and the ratios utrace/strace (< 1: utrace is faster).
set -eu

BUILD=${1:-build}
RUNS=${2:-5}
COUNT=${3:-200000}
UTRACE=$BUILD/cli/utrace
PROG=$BUILD/tests/targets/s-getppid

for f in "$UTRACE" "$PROG"; do
	[ -x "$f" ] || { echo "bench: $f not built (ninja -C $BUILD)" >&2; exit 2; }
done
command -v strace >/dev/null || { echo "bench: strace is not installed" >&2; exit 2; }

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
	run b_utrace "$UTRACE" -s openat -o /dev/null -- "$PROG" "$COUNT"
	run b_strace strace -f --seccomp-bpf -e trace=openat -o /dev/null "$PROG" "$COUNT"
	i=$((i + 1))
done

base=$(median base)
printf 'workload: %s %s (%s getppid + %s write), %s runs each, median wall time\n\n' \
	"$(basename "$PROG")" "$COUNT" "$COUNT" "$((COUNT / 10))" "$RUNS"
printf '%-44s %10s %9s %10s %11s\n' "command" "median (s)" "min (s)" "cpu med (s)" "vs untraced"
printf '%-44s %10s %9s %10s %11s\n' "--------------------------------------------" "----------" \
	"---------" "----------" "-----------"
row() {
	awk -v label="$2" -v m="$(median "$1")" -v n="$(minimum "$1")" \
		-v c="$(median "$1.cpu")" -v b="$base" \
		'BEGIN { printf "%-44s %10.3f %9.3f %10.3f %10.1fx\n", label, m / 1e6, n / 1e6, c / 1e6, m / b }'
}
row base "untraced"
row a_utrace "(a) utrace -F -s -o /dev/null"
row a_strace "(a) strace -f -o /dev/null"
row b_utrace "(b) utrace -s openat"
row b_strace "(b) strace -f --seccomp-bpf -e trace=openat"
echo
awk -v au="$(median a_utrace)" -v as="$(median a_strace)" \
	-v bu="$(median b_utrace)" -v bs="$(median b_strace)" \
	-v aun="$(minimum a_utrace)" -v asn="$(minimum a_strace)" \
	-v bun="$(minimum b_utrace)" -v bsn="$(minimum b_strace)" \
	-v auc="$(median a_utrace.cpu)" -v asc="$(median a_strace.cpu)" \
	-v buc="$(median b_utrace.cpu)" -v bsc="$(median b_strace.cpu)" 'BEGIN {
	printf "ratio utrace/strace (< 1: utrace faster)      wall median  wall min  cpu median\n"
	printf "(a) all syscalls traced, output /dev/null     %11.2f %9.2f %11.2f\n", au / as, aun / asn, (asc ? auc / asc : 0)
	printf "(b) filter selects none of the hot syscalls   %11.2f %9.2f %11.2f\n", bu / bs, bun / bsn, (bsc ? buc / bsc : 0)
	printf "load average at the end: "
	getline la < "/proc/loadavg"
	print la
}'
