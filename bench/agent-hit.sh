#!/bin/sh
# SPDX-License-Identifier: MIT
# ns per probe hit of the in-process agent against the tools users would
# otherwise pick, all on the same loop and in one run: s-agent's "bench"
# mode makes N calls of probed_nop() and prints its own ns/call (the target
# times itself, so start-up, symbol loading and summaries never count).
#
#   entry probe, counting handler:
#     utrace agent      bench/agent-bench.c (lib/agent-host.c, jmp site)
#     utrace agent API  bench/api-hit.c (include/utrace/: the uprobes layer's
#                       agent backend, UTRACE_ACT_COUNT, under a ptrace session)
#     bpftrace          uprobe:BIN:probed_nop { @ = count(); }
#     utrace -b ptrace  utrace -b ptrace -c -u probed_nop (int3 + XOL, entry only)
#   entry + return with latency:
#     utrace agent      entry+return, log2 histogram of the duration in the target
#     bpftrace          uprobe + uretprobe, hist(nsecs - @start[tid])
#     utrace -b ptrace  utrace -b ptrace -H -f probed_nop
#     ltrace            ltrace -c -x probed_nop (ltrace always times the return)
#
# Each figure is the median of RUNS runs minus the untraced loop's median;
# the ratios are other/agent. The slow tools run fewer calls (N/500, at least
# 2000): their per-hit cost dwarfs any loop effect.
#
#   bench/agent-hit.sh [BUILD_DIR] [N] [RUNS]
set -eu
build=$(cd "${1:-build}" && pwd)
n=${2:-10000000}
runs=${3:-5}
bin="$build/tests/agent/s-agent"
utrace="$build/cli/utrace"
export UTRACE_BUILD_DIR="$build"
ns=$((n / 500))
[ "$ns" -ge 2000 ] || ns=2000
nb=$((n / 20))

med() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "") }'; }

# median ns/call of "$@" (the target's first output line), over $runs runs
target_med() {
	r=""
	for i in $(seq "$runs"); do
		v=$("$@" 2>/dev/null | awk 'NR == 1 && /^[0-9.]+$/ { print; exit }') || v=""
		[ -n "$v" ] || { echo ""; return; }
		r="$r $v"
	done
	echo "$r" | med
}

out=$("$build/bench/agent-bench" "$n" "$runs")
echo "$out"
api=$("$build/bench/api-hit" "$n" "$runs" 2>/dev/null) || api=""
echo "$api"
api_base=$(echo "$api" | awk '/^untraced/ {print $2}')
api_cnt=$(echo "$api" | awk '/^api entry\+count/ {print $4}')
api_ret=$(echo "$api" | awk '/^api entry\+return\+hist/ {print $4}')
base=$(echo "$out" | awk '/^untraced/ {print $2}')
a_cnt=$(echo "$out" | awk '/^entry\+count \(jmp\)/ {print $3}')
a_ret=$(echo "$out" | awk '/^entry\+return\+hist \(jmp\)/ {print $3}')

root=0
[ "$(id -u)" = 0 ] && root=1
b_cnt="" b_ret=""
if command -v bpftrace >/dev/null 2>&1 && [ $root = 1 ]; then
	b_cnt=$(target_med bpftrace -q -e "uprobe:$bin:probed_nop { @ = count(); }" -c "$bin bench $nb")
	b_ret=$(target_med bpftrace -q -e "uprobe:$bin:probed_nop { @s[tid] = nsecs; }
		uretprobe:$bin:probed_nop /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }" \
		-c "$bin bench $nb")
fi
p_cnt=$(target_med "$utrace" -b ptrace -c -u probed_nop -- "$bin" bench "$ns")
p_ret=$(target_med "$utrace" -b ptrace -H -f probed_nop -- "$bin" bench "$ns")
l_ret=""
command -v ltrace >/dev/null 2>&1 && l_ret=$(target_med ltrace -c -x probed_nop "$bin" bench "$ns")

echo
echo "per hit (median of $runs, untraced loop $base ns/call subtracted)"
awk -v base="$base" -v a="$a_cnt" -v b="$b_cnt" -v p="$p_cnt" -v ar="$a_ret" -v br="$b_ret" \
	-v pr="$p_ret" -v lr="$l_ret" -v abase="$api_base" -v ac="$api_cnt" -v arr="$api_ret" \
	'function row(name, v, ref, isref) {
		if (v == "") { printf "  %-28s %14s\n", name, "(not run)"; return }
		h = v - base
		if (isref) printf "  %-28s %12.2f ns\n", name, h
		else printf "  %-28s %12.2f ns  %10.1fx the agent\n", name, h, (ref > 0 ? h / ref : 0)
	}
	BEGIN {
		ra = a - base; rr = ar - base
		print "entry probe, counting handler:"
		row("utrace agent", a, ra, 1)
		if (ac != "") row("utrace agent, public API", ac - abase + base, ra, 0)
		row("bpftrace (kernel uprobe)", b, ra, 0)
		row("utrace -b ptrace -c -u", p, ra, 0)
		print "entry + return with latency:"
		row("utrace agent", ar, rr, 1)
		if (arr != "") row("utrace agent, public API", arr - abase + base, rr, 0)
		row("bpftrace uprobe+uretprobe", br, rr, 0)
		row("utrace -b ptrace -H", pr, rr, 0)
		row("ltrace -c", lr, rr, 0)
		printf "goal: agent entry < 25 ns: %s; >= 100x below a kernel uprobe: %s\n",
			(ra < 25 ? "met" : "NOT met"),
			(b == "" ? "not measured" : ((b - base) / ra >= 100 ? "met" : "NOT met"))
	}'
