/* SPDX-License-Identifier: MIT */
/*
 * s-inject-mt [N] - N threads (default 8) that keep state in registers and
 * on their stacks while they alternate between computing and sleeping,
 * and a main thread blocked in read(0). Prints "ready <pid>" once all
 * threads run. On the line "quit" it stops the threads, checks that each
 * one's running checksum equals a recomputation from its iteration count
 * (a clobbered register or stack slot breaks it) and that each made
 * progress after the "ready" line, after a setuid() that needs every
 * thread of the process to answer glibc's SIGSETXID; exit 0 when all is
 * well.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

struct worker {
	pthread_t th;
	volatile unsigned long iters;
	volatile unsigned long sum;
	volatile int bad;
};

static struct worker workers[MAX_THREADS];
static volatile int stop, started;

static unsigned long step(unsigned long x, unsigned long i)
{
	return x * 6364136223846793005UL + i;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	unsigned long x = 1, i = 0;
	double d = 0;

	__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	while (!stop) {
		struct timespec ts = { 0, 200 * 1000 };

		x = step(x, i);
		d += 0.5;
		i++;
		if (d != 0.5 * (double)i)
			w->bad = 1;
		w->sum = x;
		w->iters = i;
		if (i % 4 == 0)
			nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8, i, bad = 0;
	unsigned long at_ready[MAX_THREADS];
	char line[64];

	if (n < 1 || n > MAX_THREADS)
		return 2;
	for (i = 0; i < n; i++)
		pthread_create(&workers[i].th, NULL, run, &workers[i]);
	while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < n)
		usleep(1000);
	for (i = 0; i < n; i++)
		at_ready[i] = workers[i].iters;
	printf("ready %d\n", getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || strncmp(line, "quit", 4)) {
		fprintf(stderr, "read failed or got '%s'\n", line);
		bad = 1;
	}
	/*
	 * setuid() makes glibc signal every thread (SIGSETXID) and wait for
	 * each: it hangs if any thread, e.g. one an injected object started,
	 * blocks that signal.
	 */
	if (setuid(getuid()) != 0) {
		perror("setuid");
		bad = 1;
	}
	stop = 1;
	for (i = 0; i < n; i++) {
		unsigned long x = 1, j;

		pthread_join(workers[i].th, NULL);
		for (j = 0; j < workers[i].iters; j++)
			x = step(x, j);
		if (x != workers[i].sum || workers[i].bad) {
			fprintf(stderr, "thread %d: state corrupted\n", i);
			bad = 1;
		}
		if (workers[i].iters <= at_ready[i]) {
			fprintf(stderr, "thread %d: no progress\n", i);
			bad = 1;
		}
	}
	return bad;
}
