/* SPDX-License-Identifier: MIT */
/*
 * s-record.c - the target of test-record: THREADS threads (argv[1], default
 * 8) each make a known number of probed calls (argv[2] loops, default
 * 100000), with nesting, recursion and longjmp, so that a recording can be
 * checked call for call. Per thread and loop i:
 *   rec_outer(i)            1 call, which calls
 *     rec_work(i), twice    2 calls (nested, depth 2)
 * and every 1000th loop:
 *   rec_fact(10)            11 calls (recursion, depth 11)
 *   rec_jumper()            1 call, which calls
 *     rec_deep()            1 call, which longjmp()s out of both
 *                           (neither returns)
 * With argv[3] = SECONDS, each thread stops at the first 1000th loop
 * after SECONDS (for tests that kill the tracer mid-run).
 * The program checks its own results and exits 0.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static __thread jmp_buf env;
static int loops = 100000;
static double seconds; /* > 0: run for this long rather than @loops */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) long rec_work(long i)
{
	__asm__ volatile("" ::: "memory");
	return i + 1;
}

__attribute__((noinline)) long rec_outer(long i)
{
	return rec_work(i) + rec_work(i + 1);
}

__attribute__((noinline)) long rec_fact(long n)
{
	if (n <= 0)
		return 1;
	return n * rec_fact(n - 1);
}

__attribute__((noinline)) void rec_deep(int v)
{
	longjmp(env, v);
}

__attribute__((noinline)) void rec_jumper(int v)
{
	rec_deep(v);
	__asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg)
{
	volatile long i, sum = 0; /* kept across the longjmp */
	double end = seconds > 0 ? now_s() + seconds : 0;

	(void)arg;
	for (i = 0; end || i < loops; i++) {
		if (end && i % 1000 == 0 && now_s() >= end)
			break;
		sum += rec_outer(i);
		if (i % 1000 == 0) {
			if (rec_fact(10) != 3628800)
				abort();
			if (!setjmp(env))
				rec_jumper(1);
		}
	}
	if (sum != (long)i * (i + 2)) /* the sum of 2i + 3 */
		abort();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8, i;
	pthread_t th[64];

	if (argc > 2)
		loops = atoi(argv[2]);
	if (argc > 3)
		seconds = atof(argv[3]);
	if (n < 1 || n > 64 || loops < 1)
		return 2;
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, thread_main, NULL))
			return 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}
