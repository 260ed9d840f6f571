#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmark: the latency of injecting the agent into a running process,
# a user-visible cost of `utrace -p PID` with the agent backend: seize,
# dlopen + init through remote calls, detach. Fresh targets each round,
# blocked in read() (default) or with 8 busy threads (mt).
#
#   bench/inject.sh [RUNS] [read|mt]     (default 21 read; BUILD=build dir)
#
# Prints median / p90 / min / max per phase in microseconds.
cd "$(dirname "$0")/.." || exit 1
runs=${1:-21}
mode=${2:-read}
build=${BUILD:-build}
bench=$build/bench/inject-bench
[ -x "$bench" ] || { echo "inject: $bench not built (meson setup build && ninja -C build)" >&2; exit 1; }
[ -e "$build/tests/targets/libinject-test.so" ] || { echo "inject: test targets not built" >&2; exit 1; }
exec "$bench" "$build" "$runs" "$mode"
