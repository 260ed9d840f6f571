/* SPDX-License-Identifier: MIT */
/*
 * s-life - the target of the tracer-killed tests (tests/e2e/test-agent-kill.c).
 *
 *   s-life THREADS BATCHES
 *   s-life serve
 *   s-life busy THREADS
 *
 * Prints "pid=N" at once, then THREADS threads each make BATCHES batches of
 * 200 calls of life_work() (which calls life_leaf()), sleeping 1 ms after
 * each batch, and add up the results. Then "sum=HEX calls=N" (the test
 * computes the same sum from the same formula) and it waits for a line (or
 * EOF) on stdin before exiting 0, so that its code can be read while it
 * lives. Probing must never change a result.
 *
 * serve: prints "pid=N", then obeys lines on stdin: "run T B [P]" runs T
 * new threads of B batches each (a pause of P ms after each batch, none by
 * default) and prints "done sum=HEX"; "quit" (or EOF) exits 0. The exact number of calls is the test's to know.
 *
 * busy: prints "pid=N", then THREADS threads call life_work() for ever,
 * in batches of 200 with a 1 ms pause, each checking every result against
 * the formula; "check" on stdin prints "batches=N bad=M" (M results that
 * differed), "quit" (or EOF) exits 0. For tests that attach and detach
 * many times while the program works (tests/e2e/test-agent-leaks.c).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BATCH 200

static long batches;
static int pause_ms = 1;

__attribute__((noinline, noipa)) uint64_t life_leaf(uint64_t x)
{
	return x * 31 + 7;
}

__attribute__((noinline, noipa)) uint64_t life_work(uint64_t x)
{
	return life_leaf(x * 2654435761ULL) ^ (x >> 3);
}

static void *worker(void *arg)
{
	uint64_t t = (uint64_t)(uintptr_t)arg, sum = 0;
	long b, i;

	for (b = 0; b < batches; b++) {
		struct timespec ts = { 0, pause_ms * 1000000L };

		for (i = 0; i < BATCH; i++)
			sum += life_work(t * 1000003ULL + (uint64_t)(b * BATCH + i));
		if (pause_ms)
			nanosleep(&ts, NULL); /* an EINTR only shortens the pause */
	}
	return (void *)(uintptr_t)sum;
}

static uint64_t run(long n)
{
	pthread_t th[64];
	uint64_t sum = 0;
	long k;

	for (k = 0; k < n; k++)
		if (pthread_create(&th[k], NULL, worker, (void *)(uintptr_t)k))
			exit(3);
	for (k = 0; k < n; k++) {
		void *r;

		pthread_join(th[k], &r);
		sum += (uint64_t)(uintptr_t)r;
	}
	return sum;
}

static long busy_batches, busy_bad;

static void *busy_worker(void *arg)
{
	uint64_t t = (uint64_t)(uintptr_t)arg, x = 0;
	long i;

	for (;;) {
		struct timespec ts = { 0, 1000000 };

		for (i = 0; i < BATCH; i++, x++) {
			uint64_t a = t * 1000003ULL + x;

			if (life_work(a) != (((a * 2654435761ULL) * 31 + 7) ^ (a >> 3)))
				__atomic_fetch_add(&busy_bad, 1, __ATOMIC_RELAXED);
		}
		__atomic_fetch_add(&busy_batches, 1, __ATOMIC_RELAXED);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int busy(long n)
{
	char line[64];
	pthread_t th;
	long k;

	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	for (k = 0; k < n; k++)
		if (pthread_create(&th, NULL, busy_worker, (void *)(uintptr_t)k))
			return 3;
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "check", 5)) {
			printf("batches=%ld bad=%ld\n",
			       __atomic_load_n(&busy_batches, __ATOMIC_RELAXED),
			       __atomic_load_n(&busy_bad, __ATOMIC_RELAXED));
			fflush(stdout);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	return 0;
}

static int serve(void)
{
	char line[64];

	pause_ms = 0;
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		long n = 0, b = 0, p = 0;

		if (sscanf(line, "run %ld %ld %ld", &n, &b, &p) >= 2 && n >= 1 && n <= 64 &&
		    b >= 1) {
			batches = b;
			pause_ms = p > 0 && p < 100 ? (int)p : 0;
			printf("done sum=%llx\n", (unsigned long long)run(n));
			fflush(stdout);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n, k;
	pthread_t th[64];
	uint64_t sum = 0;
	char line[16];

	if (argc > 1 && !strcmp(argv[1], "serve"))
		return serve();
	if (argc > 2 && !strcmp(argv[1], "busy"))
		return busy(atol(argv[2]) < 1 || atol(argv[2]) > 64 ? 1 : atol(argv[2]));
	n = argc > 1 ? atol(argv[1]) : 4;
	batches = argc > 2 ? atol(argv[2]) : 200;
	if (n < 1 || n > 64 || batches < 1)
		return 2;
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	for (k = 0; k < n; k++)
		if (pthread_create(&th[k], NULL, worker, (void *)(uintptr_t)k))
			return 3;
	for (k = 0; k < n; k++) {
		void *r;

		pthread_join(th[k], &r);
		sum += (uint64_t)(uintptr_t)r;
	}
	printf("sum=%llx calls=%ld\n", (unsigned long long)sum, n * batches * BATCH);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	return 0;
}
