#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmark: `utrace -l 'libc:*' -p PID` (every function of a live
# process's libc, runtime addresses) against `nm -D` on the same libc.
# Prints the median wall time of RUNS runs of each, in milliseconds.
#
#   bench/list-libc.sh [RUNS]        (default 11; UTRACE=path overrides the binary)
#
# The goal is "well under 100 ms" for utrace.
cd "$(dirname "$0")/.." || exit 1
runs=${1:-11}
utrace=${UTRACE:-build/cli/utrace}
[ -x "$utrace" ] || { echo "list-libc: $utrace not built (meson setup build && ninja -C build)" >&2; exit 1; }

sleep 600 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT INT TERM
sleep 0.2
libc=$(awk '$6 ~ /\/libc[.-][^\/]*$/ { print $6; exit }' /proc/$pid/maps)
[ -n "$libc" ] || { echo "list-libc: no libc in pid $pid" >&2; exit 1; }

# median_ms CMD...: run CMD $runs times, print the median in ms
median_ms() {
	i=0
	while [ $i -lt "$runs" ]; do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		echo $(( (t1 - t0) / 1000 ))
		i=$((i + 1))
	done | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] / 1000 }'
}

n_utrace=$("$utrace" -l 'libc:*' -p $pid | wc -l)
n_nm=$(nm -D --defined-only "$libc" | wc -l)
u=$(median_ms "$utrace" -l 'libc:*' -p $pid)
n=$(median_ms nm -D "$libc")
echo "libc: $libc ($n_utrace functions listed by utrace, $n_nm defined symbols in nm -D)"
echo "utrace -l 'libc:*' -p PID: median $u ms over $runs runs"
echo "nm -D libc:                median $n ms over $runs runs"
