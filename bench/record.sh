#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/record.sh - recording every call: utrace record (agent backend,
# lossless by default) against uftrace record of the same loop built with
# -pg (bench/hit-loop.c: COUNT calls of bench_work), for COUNT = 1M and
# 10M, RUNS runs each, interleaved, in one run. Prints per tool and COUNT
# the medians of: wall time of the recording, events lost, events/s,
# bytes of the recording per event (and utrace's own CPU per event and
# peak RSS, from record -v); then the ratios utrace / uftrace.
#
# Events: utrace records an entry and a return per call (2 x COUNT);
# uftrace records the entry and exit of every -pg function (main and
# bench_work: 2 x COUNT + 2). uftrace.data's size is the whole directory.
#
# Usage: bench/record.sh [BUILD_DIR [RUNS]]    (defaults: build 3)
set -eu

BUILD=${1:-build}
RUNS=${2:-3}
UTRACE=$(realpath "$BUILD/cli/utrace")
SRC=$(dirname "$0")/hit-loop.c

[ -x "$UTRACE" ] || { echo "bench: build first (ninja -C $BUILD)" >&2; exit 2; }
command -v uftrace >/dev/null || { echo "bench: uftrace is not installed (apt-get install uftrace)" >&2; exit 2; }
export UTRACE_BUILD_DIR=$(realpath "$BUILD")

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -o "$TMP/hot" "$SRC"
cc -O2 -pg -o "$TMP/hot-pg" "$SRC"

now() { date +%s%N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for n in 1000000 10000000; do
	: > "$TMP/u.$n"; : > "$TMP/f.$n"
	i=0
	while [ $i -lt "$RUNS" ]; do
		i=$((i + 1))
		rm -f "$TMP/rec"
		t0=$(now)
		"$UTRACE" record -v -b agent -o "$TMP/rec" -f bench_work -- "$TMP/hot" $n 2>"$TMP/err"
		t1=$(now)
		lost=$(sed -n 's/.*(\([0-9]*\) lost).*/\1/p' "$TMP/err")
		ev=$(sed -n 's/.*recorded \([0-9]*\) events.*/\1/p' "$TMP/err")
		# -v: the tracer's own CPU per event and its peak RSS
		cpu=$(sed -n 's/.*tracer: .*(\([0-9.]*\) ns per event).*/\1/p' "$TMP/err")
		rss=$(sed -n 's/.*tracer: .*, \([0-9]*\) KiB maximum RSS.*/\1/p' "$TMP/err")
		echo "$((t1 - t0)) ${lost:-?} ${ev:-0} $(stat -c %s "$TMP/rec") ${cpu:-0} ${rss:-0}" >> "$TMP/u.$n"
		rm -rf "$TMP/uftrace.data"
		t0=$(now)
		(cd "$TMP" && uftrace record -d "$TMP/uftrace.data" "$TMP/hot-pg" $n >/dev/null 2>"$TMP/ferr")
		t1=$(now)
		flost=$(grep -c -i 'lost' "$TMP/ferr" || true)
		echo "$((t1 - t0)) $flost $((2 * n + 2)) $(du -sb "$TMP/uftrace.data" | cut -f1)" >> "$TMP/f.$n"
	done
	for tool in u f; do
		f=$TMP/$tool.$n
		wall=$(cut -d' ' -f1 "$f" | median)
		lost=$(cut -d' ' -f2 "$f" | median)
		ev=$(cut -d' ' -f3 "$f" | median)
		bytes=$(cut -d' ' -f4 "$f" | median)
		eps=$(awk -v e="$ev" -v w="$wall" 'BEGIN { printf "%.0f", e / (w / 1e9) }')
		bpe=$(awk -v b="$bytes" -v e="$ev" 'BEGIN { printf "%.2f", b / e }')
		name=$([ $tool = u ] && echo "utrace record -b agent" || echo "uftrace record (-pg)")
		printf '%-24s %9d calls: %8.3f s  lost %s  %10s events/s  %6s bytes/event' \
			"$name" $n "$(awk -v w="$wall" 'BEGIN { print w / 1e9 }')" "$lost" "$eps" "$bpe"
		if [ $tool = u ]; then
			printf '  tracer %s ns CPU/event, %s KiB max RSS' \
				"$(cut -d' ' -f5 "$f" | median)" "$(cut -d' ' -f6 "$f" | median)"
		fi
		echo
		eval "${tool}_wall=$wall ${tool}_eps=$eps ${tool}_bpe=$bpe"
	done
	awk -v uw="$u_wall" -v fw="$f_wall" -v ue="$u_eps" -v fe="$f_eps" -v ub="$u_bpe" -v fb="$f_bpe" -v n=$n \
		'BEGIN { printf "ratio utrace/uftrace  %9d calls: wall %.2fx  events/s %.2fx  bytes/event %.2fx\n", n, uw / fw, ue / fe, ub / fb }'
done
