#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the fuzzers with clang (libFuzzer + ASan + UBSan) straight from their
# sources and run each for SECONDS (default 20): the SPEC parser (lib/spec.c)
# and the host's arena readers (lib/agent-arena.c). Exit 0 if they found
# nothing; 77 if clang/libFuzzer is not available; 1 on a finding.
#
#   fuzz/run.sh [SECONDS]
cd "$(dirname "$0")/.." || exit 1
secs=${1:-20}
out=${FUZZ_OUT:-build-fuzz}
command -v clang >/dev/null 2>&1 || { echo "fuzz: clang not found, skipped"; exit 77; }
mkdir -p "$out/corpus"
# seeds: the documented shapes
i=0
for s in 'malloc' 'libc:mem*' '*:*_alloc*' 'main+0x10' '0x1139' 'puts@plt' \
	'./prog:main' 'libc:' '::' '0xZZ' 'foo+zz' 'str[a-c]*' 'lib*:foo@plt'; do
	printf '%s' "$s" >"$out/corpus/seed$i"
	i=$((i + 1))
done
rc=0
# NAME SOURCES...: build with libFuzzer + ASan + UBSan, run for $secs.
fuzz() {
	name=$1
	shift
	if ! clang -g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -Iinclude -Icommon -Ilib \
		"$@" -o "$out/$name" 2>"$out/$name.build.log"; then
		if grep -q -i 'fuzzer' "$out/$name.build.log"; then
			echo "fuzz: cannot build with -fsanitize=fuzzer (libFuzzer missing?), skipped"
			exit 77
		fi
		cat "$out/$name.build.log"
		rc=1
		return
	fi
	mkdir -p "$out/corpus-$name"
	"$out/$name" -max_total_time="$secs" -max_len="$maxlen" -print_final_stats=1 \
		-artifact_prefix="$out/$name-" "$out/corpus-$name" $seeds >"$out/$name.log" 2>&1
	r=$?
	tail -n 12 "$out/$name.log" | grep -E 'stat::number_of_executed_units|ERROR|SUMMARY' || true
	if [ $r -eq 0 ]; then
		echo "fuzz: $name ran ${secs}s without findings"
	else
		echo "fuzz: $name FAILED (see $out/$name.log)"
		rc=1
	fi
}
maxlen=256 seeds="$out/corpus"
fuzz spec-fuzzer fuzz/spec-fuzzer.c lib/spec.c
# the host's readers of the agent's arena, on arenas a hostile target wrote
maxlen=8192 seeds=
fuzz arena-fuzzer fuzz/arena-fuzzer.c lib/agent-arena.c
exit $rc
