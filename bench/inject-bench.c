/* SPDX-License-Identifier: MIT */
/*
 * inject-bench - how long utrace_session__inject() keeps a target in our
 * hands: start N fresh targets (tests/targets/s-blocked in read(), or
 * s-inject-mt with 8 threads), inject libinject-test.so with an arena into
 * each, and report the median, 90th percentile and extremes of each
 * phase in microseconds:
 *
 *   attach   utrace_session__attach(): seize every thread
 *   inject   utrace_session__inject(): checks, symbol lookup, thread
 *            choice, remote mmap/memfd, dlopen, dlsym, init, munmap
 *   detach   utrace_session__detach()
 *   total    all three: what `utrace -p PID` with the agent adds
 *
 *   inject-bench BUILD_DIR [N] [read|mt]
 *
 * Run through bench/inject.sh.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utrace/utrace.h"

/* The test object's init wants this cookie (tests/targets/inject-test.h). */
static int prepare(void *arena, size_t size, void *ctx)
{
	((uint64_t *)arena)[1] = 0xc00c1eULL;
	return 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *name, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("%-7s median %8.0f  p90 %8.0f  min %8.0f  max %8.0f\n", name, v[n / 2],
	       v[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1], v[0], v[n - 1]);
}

static pid_t start(const char *exe, const char *arg, int *in, int *out)
{
	int pin[2], pout[2];
	pid_t pid;

	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC))
		exit(1);
	pid = fork();
	if (pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execl(exe, exe, arg, (char *)NULL);
		_exit(99);
	}
	close(pin[0]);
	close(pout[1]);
	*in = pin[1];
	*out = pout[0];
	return pid;
}

static int wait_ready(int fd)
{
	char buf[64];
	struct pollfd p = { fd, POLLIN, 0 };
	ssize_t n;

	if (poll(&p, 1, 10000) <= 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	return n > 5 && !strncmp(buf, "ready", 5) ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";
	int n = argc > 2 ? atoi(argv[2]) : 21, i, status;
	bool mt = argc > 3 && !strcmp(argv[3], "mt");
	char exe[PATH_MAX], so[PATH_MAX], tmp[PATH_MAX];
	double *ta, *ti, *td, *tt;

	if (n < 1)
		return 2;
	snprintf(tmp, sizeof(tmp), "%s/tests/targets/%s", build, mt ? "s-inject-mt" : "s-blocked");
	if (!realpath(tmp, exe))
		return perror(tmp), 1;
	snprintf(tmp, sizeof(tmp), "%s/tests/targets/libinject-test.so", build);
	if (!realpath(tmp, so))
		return perror(tmp), 1;
	ta = calloc((size_t)n, sizeof(double));
	ti = calloc((size_t)n, sizeof(double));
	td = calloc((size_t)n, sizeof(double));
	tt = calloc((size_t)n, sizeof(double));
	for (i = 0; i < n; i++) {
		struct utrace_session *s = utrace_session__new(NULL);
		struct utrace_injection inj;
		char err[512] = "";
		UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare,
			    .init_symbol = "inject_test_init", .init_arg = (uint64_t)i,
			    .arena_size = 1 << 20, .errbuf = err, .errlen = sizeof(err));
		int in, out, r;
		pid_t pid = start(exe, mt ? "8" : "read", &in, &out);
		double t0, t1, t2, t3;

		if (!s || wait_ready(out) < 0)
			return fprintf(stderr, "target did not start\n"), 1;
		usleep(20000); /* let it block */
		t0 = now_us();
		r = utrace_session__attach(s, pid);
		t1 = now_us();
		if (r == 0)
			r = utrace_session__inject(s, pid, so, &o, &inj);
		t2 = now_us();
		if (r == 0)
			r = utrace_session__detach(s);
		t3 = now_us();
		utrace_session__close(s);
		if (r < 0)
			return fprintf(stderr, "round %d: %d %s\n", i, r, err), 1;
		utrace_injection__clear(&inj);
		ta[i] = t1 - t0;
		ti[i] = t2 - t1;
		td[i] = t3 - t2;
		tt[i] = t3 - t0;
		if (write(in, mt ? "quit\n" : "hello\n", mt ? 5 : 6) < 0)
			return 1;
		waitpid(pid, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			return fprintf(stderr, "round %d: target failed (%#x)\n", i, status), 1;
		close(in);
		close(out);
	}
	printf("%d injections of %s into %s (1 MiB arena), microseconds:\n", n, so, exe);
	report("attach", ta, n);
	report("inject", ti, n);
	report("detach", td, n);
	report("total", tt, n);
	return 0;
}
