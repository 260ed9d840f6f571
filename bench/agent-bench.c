/* SPDX-License-Identifier: MIT */
/*
 * agent-bench.c - ns per probe hit of the in-process agent: s-agent's
 * "bench" loop (N calls of probed_nop(), timed by the target itself) run
 * untraced, with an entry probe whose handler counts, with entry + return
 * and a latency histogram, in int3 mode, with entry records with and
 * without -k's stack walk (the ring fills: later records are drops, the
 * walk still runs) and with --inject's per-call decision (no call
 * injected); median of RUNS runs each.
 *
 *   agent-bench [N] [RUNS]      (UTRACE_BUILD_DIR must point at the build)
 *
 * AGENT_BENCH_ONLY=PREFIX runs only the configurations whose name starts
 * with PREFIX (to profile one: perf record -- agent-bench).
 *
 * Output: one line per configuration, "name median_ns_per_call runs...".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "agent-host.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One run; @flags 0 = no probe. Returns ns/call from the target, or < 0. */
static double run(const char *n, uint32_t flags, bool int3, int threads)
{
	char path[4096], buf[256], nt[16];
	char *argv[] = { path, "bench", (char *)n, nt, NULL };
	struct ahost_opts o = { .pipe_stdout = true };
	struct ahost h;
	ssize_t len = 0, r;
	double ns;
	int id = -1;

	snprintf(nt, sizeof(nt), "%d", threads);
	snprintf(path, sizeof(path), "%s/tests/agent/s-agent",
		 getenv("UTRACE_BUILD_DIR") ?: "build");
	/*
	 * -k's copy of the stack (ABI 12): AGENT_BENCH_STACK_DUMP bytes (0,
	 * the default: the frame-pointer walk only); with a ring of
	 * AGENT_BENCH_RING records (a power of 2) that holds every hit's
	 * group, nothing is drained during the run and nothing dropped
	 */
	if (getenv("AGENT_BENCH_STACK_DUMP"))
		o.stack_dump = (uint32_t)atoi(getenv("AGENT_BENCH_STACK_DUMP"));
	if (getenv("AGENT_BENCH_RING")) {
		o.ring_records = (uint32_t)atoi(getenv("AGENT_BENCH_RING"));
		o.max_threads = 4;
	}
	if (ahost_launch(&h, &o, argv)) {
		fprintf(stderr, "launch: %s\n", h.why);
		ahost_close(&h);
		return -1;
	}
	if (flags) {
		id = ahost_probe(&h, "probed_nop", flags, int3);
		if (id < 0) {
			fprintf(stderr, "probe: %s\n", h.why);
			ahost_close(&h);
			return -1;
		}
		/* --inject's decision only: an atomic add per call, no call injected */
		ahost_abi(&h, id)->inject_every = UINT64_MAX;
		ahost_set_want(&h, id, int3 ? UTRACE_PS_INT3 : UTRACE_PS_JMP);
		if (ahost_sync(&h) < 0 ||
		    ahost_abi(&h, id)->state != (int3 ? UTRACE_PS_INT3 : UTRACE_PS_JMP)) {
			fprintf(stderr, "arm: state %u err %d\n", ahost_abi(&h, id)->state,
				ahost_abi(&h, id)->err);
			ahost_close(&h);
			return -1;
		}
	}
	ahost_start(&h);
	/*
	 * AGENT_BENCH_DRAIN: the host drains the rings as it reads (the
	 * records are thrown away), so a big group per hit (-k's copy) runs
	 * on a ring in use, as under utrace, not on fresh pages
	 */
	if (getenv("AGENT_BENCH_DRAIN")) {
		fcntl(h.stdout_fd, F_SETFL, O_NONBLOCK);
		for (;;) {
			ahost_drain(&h, NULL, NULL);
			r = read(h.stdout_fd, buf + len, sizeof(buf) - 1 - (size_t)len);
			if (r > 0)
				len += r;
			else if (r == 0 || errno != EAGAIN)
				break;
		}
	}
	while ((r = read(h.stdout_fd, buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += r;
	buf[len] = 0;
	if (ahost_wait(&h) != 0 || sscanf(buf, "%lf", &ns) != 1) {
		ahost_close(&h);
		return -1;
	}
	if (id >= 0 && ahost_hits(&h, id) < (uint64_t)atol(n) * (uint64_t)threads) {
		fprintf(stderr, "only %llu hits\n", (unsigned long long)ahost_hits(&h, id));
		ns = -1;
	}
	if (getenv("AGENT_BENCH_RING") && ahost_drops(&h))
		fprintf(stderr, "%llu records dropped: a bigger AGENT_BENCH_RING\n",
			(unsigned long long)ahost_drops(&h));
	ahost_close(&h);
	return ns;
}

static double config_mt(const char *name, const char *n, int runs, uint32_t flags, bool int3,
			int threads)
{
	const char *only = getenv("AGENT_BENCH_ONLY");
	double v[16], med;
	int i;

	if (only && strncmp(name, only, strlen(only)))
		return -1; /* profiling one configuration (perf record) */
	for (i = 0; i < runs; i++) {
		v[i] = run(n, flags, int3, threads);
		if (v[i] < 0) {
			printf("%-24s failed\n", name);
			return -1;
		}
	}
	qsort(v, (size_t)runs, sizeof(v[0]), cmp);
	med = v[runs / 2];
	printf("%-24s %8.2f ns/call  (runs:", name, med);
	for (i = 0; i < runs; i++)
		printf(" %.2f", v[i]);
	printf(")\n");
	fflush(stdout);
	return med;
}

/*
 * ns per rdtsc on this machine (median of 5 loops of 1M): a timed call
 * reads the TSC twice (agent/ring.c ring_now_ns()), the floor under the
 * entry+return+hist figure whatever the rest of the path costs.
 */
static double rdtsc_ns(void)
{
	double v[5];
	int i, k;

	for (k = 0; k < 5; k++) {
		struct timespec t0, t1;
		volatile uint64_t sink = 0;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (i = 0; i < 1000000; i++)
			sink += __rdtsc();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		v[k] = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		       1e6;
	}
	qsort(v, 5, sizeof(v[0]), cmp);
	return v[2];
}

static double config(const char *name, const char *n, int runs, uint32_t flags, bool int3)
{
	return config_mt(name, n, runs, flags, int3, 1);
}

int main(int argc, char **argv)
{
	const char *n = argc > 1 ? argv[1] : "10000000";
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	char nsmall[32];
	double base, cnt, ret, trap, rec, stk, inj, base2, ret2;

	if (runs < 1 || runs > 16)
		runs = 5;
	snprintf(nsmall, sizeof(nsmall), "%ld", atol(n) / 50 ?: 1);
	base = config("untraced", n, runs, 0, false);
	cnt = config("entry+count (jmp)", n, runs, UTRACE_PF_COUNT, false);
	ret = config("entry+return+hist (jmp)", n, runs,
		     UTRACE_PF_COUNT | UTRACE_PF_ENTRY | UTRACE_PF_RETPROBE | UTRACE_PF_HIST,
		     false);
	trap = config("entry+count (int3)", nsmall, runs, UTRACE_PF_COUNT, true);
	rec = config("entry+record (jmp)", n, runs,
		     UTRACE_PF_COUNT | UTRACE_PF_ENTRY | UTRACE_PF_RECORD_ENTRY, false);
	stk = config("entry+record+stack (jmp)", n, runs,
		     UTRACE_PF_COUNT | UTRACE_PF_ENTRY | UTRACE_PF_RECORD_ENTRY | UTRACE_PF_STACK,
		     false);
	inj = config("entry+count+inject (jmp)", n, runs,
		     UTRACE_PF_COUNT | UTRACE_PF_ENTRY | UTRACE_PF_INJECT, false);
	/* two threads calling the same probe at once (2 cores here) */
	base2 = config_mt("2 threads untraced", n, runs, 0, false, 2);
	ret2 = config_mt("2 threads entry+return+hist", n, runs,
			 UTRACE_PF_COUNT | UTRACE_PF_ENTRY | UTRACE_PF_RETPROBE | UTRACE_PF_HIST,
			 false, 2);
	if (base >= 0 && cnt >= 0 && ret >= 0 && trap >= 0) {
		printf("per hit: entry+count %.2f ns, entry+return+hist %.2f ns, int3 entry+count %.2f ns\n",
		       cnt - base, ret - base, trap - base);
	}
	if (base >= 0 && rec >= 0 && stk >= 0 && inj >= 0)
		printf("per hit: -k stack walk %.2f ns more than an entry record, --inject "
		       "decision %.2f ns\n",
		       stk - rec, inj - base);
	printf("rdtsc on this machine: %.2f ns (entry+return+hist reads it twice)\n", rdtsc_ns());
	if (base2 >= 0 && ret2 >= 0)
		printf("per hit, 2 threads on one probe: entry+return+hist %.2f ns\n",
		       ret2 - base2);
	return 0;
}
