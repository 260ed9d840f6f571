/* SPDX-License-Identifier: MIT */
/*
 * uprobes-hit.c - cost of a probe hit with the ptrace backend.
 *
 *   uprobes-hit TARGET [CALLS] [REPEAT]
 *
 * Runs "TARGET mt CALLS 1" (tests/targets/s-uprobes) REPEAT times each:
 * untraced (launched under a session with no probe), with an entry probe
 * on work(), and with an entry + return probe. Prints the median of
 * (time traced - time untraced) / hits in ns, per hit and per call, for
 * wall time and for CPU time (user + system of the tracer and the target,
 * from getrusage(): less disturbed by a loaded machine).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "utrace/utrace.h"

static long count;

static int on_hit(struct utrace_probe_ctx *ctx, void *data)
{
	(void)ctx;
	(void)data;
	count++;
	return UTRACE_PROBE_OK;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU seconds of this process and its reaped children (the targets). */
static double cpu_now(void)
{
	struct rusage self, kids;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	return self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
	       kids.ru_stime.tv_sec +
	       (self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec +
		kids.ru_stime.tv_usec) /
		       1e6;
}

/*
 * mode 0: no probe; 1: entry; 2: entry + return. Returns wall seconds,
 * CPU seconds in *cpu.
 */
static double run_once(const char *target, const char *calls, int mode, double *cpu)
{
	char *argv[] = { (char *)target, "mt", (char *)calls, "1", NULL };
	struct utrace_session *s = utrace_session__new(NULL);
	UTRACE_OPTS(utrace_uprobes_opts, uo, .backend = UTRACE_BACKEND_PTRACE);
	struct utrace_uprobes *up = utrace_uprobes__new(s, &uo);
	UTRACE_OPTS(utrace_probe_opts, o, .handler = on_hit,
		    .ret_handler = mode == 2 ? on_hit : NULL);
	double t0, c0;

	if (!s || !up) {
		perror("session");
		exit(1);
	}
	if (mode && !utrace_probe__register_spec(up, "work", &o)) {
		perror("register");
		exit(1);
	}
	c0 = cpu_now();
	t0 = now();
	if (utrace_session__launch(s, argv, NULL) < 0) {
		fprintf(stderr, "launch failed\n");
		exit(1);
	}
	while (utrace_session__run(s, -1) == UTRACE_RUN_BREAK)
		;
	t0 = now() - t0;
	utrace_uprobes__free(up);
	utrace_session__close(s); /* the target is reaped by now */
	*cpu = cpu_now() - c0;
	return t0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *target = argc > 1 ? argv[1] : "build/tests/targets/s-uprobes";
	const char *calls = argc > 2 ? argv[2] : "20000";
	int rep = argc > 3 ? atoi(argv[3]) : 5, i, mode;
	double t[3][32], c[3][32], med[3], cmed[3];
	long n = atol(calls);

	if (rep > 32)
		rep = 32;
	if (rep < 1)
		rep = 1;
	for (i = 0; i < rep; i++)
		for (mode = 0; mode < 3; mode++)
			t[mode][i] = run_once(target, calls, mode, &c[mode][i]);
	for (mode = 0; mode < 3; mode++) {
		qsort(t[mode], rep, sizeof(double), cmp);
		qsort(c[mode], rep, sizeof(double), cmp);
		med[mode] = t[mode][rep / 2];
		cmed[mode] = c[mode][rep / 2];
	}
	printf("calls %ld, median of %d runs: untraced %.3f s, entry %.3f s, entry+return %.3f s\n",
	       n, rep, med[0], med[1], med[2]);
	printf("  cpu (tracer + target):   untraced %.3f s, entry %.3f s, entry+return %.3f s\n",
	       cmed[0], cmed[1], cmed[2]);
	printf("entry probe: %.0f ns per hit (cpu %.0f ns)\n", (med[1] - med[0]) / n * 1e9,
	       (cmed[1] - cmed[0]) / n * 1e9);
	printf("entry+return probe: %.0f ns per call (%.0f ns per trap); cpu %.0f ns per call "
	       "(%.0f ns per trap)\n",
	       (med[2] - med[0]) / n * 1e9, (med[2] - med[0]) / (2.0 * n) * 1e9,
	       (cmed[2] - cmed[0]) / n * 1e9, (cmed[2] - cmed[0]) / (2.0 * n) * 1e9);
	return 0;
}
