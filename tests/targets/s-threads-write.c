/* SPDX-License-Identifier: MIT */
/*
 * s-threads-write - a deterministic multithreaded syscall workload that
 * checks itself. NTHREADS threads (argv[1], default 8) each write ITER
 * records (argv[2], default 1000) of a known pattern to /dev/null and
 * getppid() ITER times, checking every return value; the main thread then
 * prints "ok threads=T writes=W" or "FAIL ..." and exits 1.
 *
 * With argv[3] = SECS > 0, each thread instead loops for SECS seconds,
 * sleeping 1 ms between rounds, and every nanosleep must return 0: a
 * tracer that attaches and detaches must never make a call fail or
 * change its result (the attach/detach e2e test). It prints "ready PID"
 * at start. SECS = "stdin": the same until stdin reaches EOF (the test
 * closes it when done, rather than waiting out a fixed lifetime).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int iterations = 1000;
static double seconds;
static volatile int stop; /* "stdin": set by the main thread at EOF */
static int devnull;
static pid_t parent;

struct worker {
	pthread_t th;
	int id;
	long writes;
	long errors;
	char why[128];
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	char rec[64];
	double end = seconds > 0 ? now() + seconds : 0;
	long i;

	for (i = 0; seconds > 0 ? now() < end && !stop : i < iterations; i++) {
		int len = snprintf(rec, sizeof(rec), "thread %d record %ld\n", w->id, i);
		ssize_t n = write(devnull, rec, len);

		if (n != len) {
			snprintf(w->why, sizeof(w->why), "write returned %zd (%s)", n,
				 strerror(errno));
			w->errors++;
		}
		if (getppid() != parent) {
			snprintf(w->why, sizeof(w->why), "getppid changed");
			w->errors++;
		}
		w->writes++;
		if (seconds > 0) {
			struct timespec ts = { 0, 1000000 };

			if (nanosleep(&ts, NULL)) {
				snprintf(w->why, sizeof(w->why), "nanosleep failed: %s",
					 strerror(errno));
				w->errors++;
			}
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	struct worker w[64];
	long writes = 0, errors = 0;
	bool until_eof;
	char buf[64];
	int i;

	iterations = argc > 2 ? atoi(argv[2]) : 1000;
	until_eof = argc > 3 && !strcmp(argv[3], "stdin");
	seconds = until_eof ? 1e9 : argc > 3 ? atof(argv[3]) : 0;
	if (n < 1 || n > 64)
		n = 8;
	parent = getppid();
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull < 0)
		return 2;
	if (seconds > 0) {
		printf("ready %d\n", getpid());
		fflush(stdout);
	}
	memset(w, 0, sizeof(w));
	for (i = 0; i < n; i++) {
		w[i].id = i;
		if (pthread_create(&w[i].th, NULL, run, &w[i]))
			return 2;
	}
	if (until_eof) {
		while (read(0, buf, sizeof(buf)) > 0)
			;
		stop = 1;
	}
	for (i = 0; i < n; i++) {
		pthread_join(w[i].th, NULL);
		writes += w[i].writes;
		errors += w[i].errors;
		if (w[i].errors)
			printf("FAIL thread %d: %s\n", i, w[i].why);
	}
	if (errors || (seconds == 0 && writes != (long)n * iterations)) {
		printf("FAIL threads=%d writes=%ld errors=%ld\n", n, writes, errors);
		return 1;
	}
	printf("ok threads=%d writes=%ld\n", n, seconds > 0 ? n * 1L : writes);
	return 0;
}
