#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the SPEC parser fuzzer with clang (libFuzzer + ASan + UBSan) straight
# from lib/spec.c and run it for SECONDS (default 20). Exit 0 if it found
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
if ! clang -g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -Iinclude -Icommon -Ilib \
	fuzz/spec-fuzzer.c lib/spec.c -o "$out/spec-fuzzer" 2>"$out/build.log"; then
	if grep -q -i 'fuzzer' "$out/build.log"; then
		echo "fuzz: cannot build with -fsanitize=fuzzer (libFuzzer missing?), skipped"
		exit 77
	fi
	cat "$out/build.log"
	exit 1
fi
"$out/spec-fuzzer" -max_total_time="$secs" -max_len=256 -print_final_stats=1 \
	-artifact_prefix="$out/" "$out/corpus" >"$out/run.log" 2>&1
rc=$?
tail -n 12 "$out/run.log" | grep -E 'stat::number_of_executed_units|ERROR|SUMMARY' || true
if [ $rc -eq 0 ]; then
	echo "fuzz: spec-fuzzer ran ${secs}s without findings"
else
	echo "fuzz: spec-fuzzer FAILED (see $out/run.log)"
	rc=1
fi
exit $rc
