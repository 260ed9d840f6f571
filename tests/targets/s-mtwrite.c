/* SPDX-License-Identifier: MIT */
/*
 * s-mtwrite - 8 threads (argv[1]) each write numbered lines "T<k> <n>\n" to
 * stdout with write(2) until stdin reaches EOF; the main thread blocks in
 * read(0). Self-checking: every write must be complete (no EINTR, no short
 * write), the read must end with EOF, not an error. At exit it prints
 * "total <k> <n>" per thread, so the tester can check every line arrived
 * in order. Exits 1 on any inconsistency.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile int failed;
static long counts[64];

static void *worker(void *arg)
{
	long k = (long)arg, n = 0;
	char line[64];

	while (!stop) {
		int len = snprintf(line, sizeof(line), "T%ld %ld\n", k, n);
		ssize_t w = write(1, line, (size_t)len);
		struct timespec ts = { 0, 200 * 1000 };

		if (w != len) {
			fprintf(stderr, "T%ld: write returned %zd (%s)\n", k, w, strerror(errno));
			failed = 1;
			break;
		}
		n++;
		nanosleep(&ts, NULL);
	}
	counts[k] = n;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	pthread_t th[64];
	char buf[256];
	ssize_t r;
	long i;

	if (n > 64)
		n = 64;
	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	fprintf(stderr, "ready %d\n", getpid());
	while ((r = read(0, buf, sizeof(buf))) > 0)
		;
	if (r < 0) {
		fprintf(stderr, "read(0) failed: %s\n", strerror(errno));
		failed = 1;
	}
	stop = 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < n; i++) {
		char line[64];
		int len = snprintf(line, sizeof(line), "total %ld %ld\n", i, counts[i]);

		if (write(1, line, (size_t)len) != len)
			failed = 1;
	}
	return failed;
}
