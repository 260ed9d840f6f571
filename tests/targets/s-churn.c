/* SPDX-License-Identifier: MIT */
/*
 * s-churn - creates and joins short-lived threads in a loop for argv[1] ms
 * (default 2000) or until its stdin reaches EOF, 4 at a time, each doing a
 * little work and exiting.
 * Prints "ready <pid>" first and "threads <n>" at the end. Exits 1 if any
 * pthread_create/join fails or a thread's result is wrong.
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *work(void *arg)
{
	unsigned long x = (unsigned long)arg, i;

	for (i = 0; i < 1000; i++)
		x = x * 33 + i;
	return (void *)x;
}

static unsigned long expect(unsigned long x)
{
	unsigned long i;

	for (i = 0; i < 1000; i++)
		x = x * 33 + i;
	return x;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 2000;
	double end;
	unsigned long n = 0;

	printf("ready %d\n", getpid());
	fflush(stdout);
	end = now() + ms / 1000.0;
	while (now() < end) {
		struct pollfd in = { 0, POLLIN, 0 };
		pthread_t th[4];
		int i;

		if (poll(&in, 1, 0) == 1)
			break; /* EOF (or data): the tester is done */
		for (i = 0; i < 4; i++) {
			if (pthread_create(&th[i], NULL, work, (void *)(n + i))) {
				fprintf(stderr, "pthread_create failed\n");
				return 1;
			}
		}
		for (i = 0; i < 4; i++) {
			void *r;

			if (pthread_join(th[i], &r) || (unsigned long)r != expect(n + i)) {
				fprintf(stderr, "thread %lu: bad result\n", n + i);
				return 1;
			}
		}
		n += 4;
	}
	printf("threads %lu\n", n);
	return 0;
}
