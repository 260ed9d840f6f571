#!/bin/sh
# SPDX-License-Identifier: MIT
# Start-up of the kernel backend to its first armed probe, against
# bpftrace's on the same site: each tracer launches `s-trace calls 1`
# (tests/targets/s-trace: one call of work() right after main starts), and
# the time from the tracer's start to that call's hit is read from the
# tracer's own timestamp of the hit:
#   utrace -b kernel -u work --format json   "ts_ns" (CLOCK_REALTIME)
#   bpftrace 'uprobe:...:work { printf nsecs; exit }'  (CLOCK_MONOTONIC)
# each against the same clock read just before the tracer is started.
# Also the wall time of the whole run (start, arm, the program, teardown).
# Medians of RUNS (default 7) runs each, alternated; bpftrace probes a
# private copy (its uprobe would reach our runs otherwise). Needs root.
#
#   bench/kernel-startup.sh [BUILD_DIR] [RUNS]
set -eu
build=$(cd "${1:-build}" && pwd)
runs=${2:-7}
command -v bpftrace >/dev/null || { echo "bpftrace is not installed (apt-get install bpftrace)"; exit 1; }
exec python3 - "$build" "$runs" <<'PY'
import json, os, shutil, statistics, subprocess, sys, tempfile, time

build, runs = sys.argv[1], int(sys.argv[2])
utrace = os.path.join(build, "cli", "utrace")
target = os.path.join(build, "tests", "targets", "s-trace")
tmp = tempfile.mkdtemp()
copy = os.path.join(tmp, "s-trace")
shutil.copy2(target, copy)

def run_utrace():
    t0r, t0 = time.time_ns(), time.monotonic_ns()
    p = subprocess.run([utrace, "-b", "kernel", "-u", "work", "--format", "json", "--",
                        target, "calls", "1"], capture_output=True, text=True)
    wall = time.monotonic_ns() - t0
    for line in p.stderr.splitlines():
        if line.startswith("{") and '"entry"' in line:
            return (json.loads(line)["ts_ns"] - t0r) / 1e6, wall / 1e6
    raise SystemExit("utrace saw no hit: " + p.stderr)

def run_bpftrace():
    prog = "uprobe:%s:work { printf(\"%%llu\\n\", nsecs); exit(); }" % copy
    t0 = time.monotonic_ns()
    p = subprocess.run(["bpftrace", "-q", "-e", prog, "-c", copy + " calls 1"],
                       capture_output=True, text=True)
    wall = time.monotonic_ns() - t0
    for line in p.stdout.splitlines():
        if line.strip().isdigit():
            return (int(line) - t0) / 1e6, wall / 1e6
    raise SystemExit("bpftrace saw no hit: " + p.stdout + p.stderr)

u, b = [], []
try:
    for i in range(runs):
        u.append(run_utrace())
        b.append(run_bpftrace())
finally:
    shutil.rmtree(tmp)
med = lambda v, k: statistics.median(x[k] for x in v)
print("runs: %d each, alternated; load average %s" % (runs, os.getloadavg()[0]))
print("%-34s %12s %12s %8s" % ("", "utrace", "bpftrace", "ratio"))
for k, what in ((0, "start to the first hit (ms)"), (1, "whole run, wall (ms)")):
    print("%-34s %12.1f %12.1f %7.2fx" % (what, med(u, k), med(b, k), med(u, k) / med(b, k)))
print("utrace first hits (ms):   " + " ".join("%.1f" % x[0] for x in u))
print("bpftrace first hits (ms): " + " ".join("%.1f" % x[0] for x in b))
PY
