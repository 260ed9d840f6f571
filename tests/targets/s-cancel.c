/* SPDX-License-Identifier: MIT */
/*
 * s-cancel T D - T threads, one after the other, each cancelled (deferred,
 * by the main thread) from under D + 1 nested calls of deep(), which a
 * tracer probes with return probes. The program never loads libgcc_s
 * itself: glibc does at the first cancellation, and unwinds through its
 * own pointer to _Unwind_ForcedUnwind. Each thread's cleanup handler must
 * run (the forced unwind found it through every deep() frame). Prints
 * "cancelled=T cleanups=C" and exits 0 if C == T, else 1.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static atomic_int ready, cleanups;
static volatile long sink;

static void cleanup(void *arg)
{
	(void)arg;
	atomic_fetch_add(&cleanups, 1);
}

static volatile int forever = 1;

__attribute__((noinline)) long deep(long d)
{
	if (d > 0) {
		sink += deep(d - 1);
		return d;
	}
	atomic_store(&ready, 1);
	while (forever) {
		pthread_testcancel();
		usleep(1000);
	}
	return d;
}

static void *thread_fn(void *arg)
{
	long d = (long)arg;

	pthread_cleanup_push(cleanup, NULL);
	deep(d);
	pthread_cleanup_pop(0);
	return NULL;
}

int main(int argc, char **argv)
{
	int t = argc > 1 ? atoi(argv[1]) : 2, d = argc > 2 ? atoi(argv[2]) : 5, i;

	for (i = 0; i < t; i++) {
		pthread_t th;
		void *r;

		atomic_store(&ready, 0);
		if (pthread_create(&th, NULL, thread_fn, (void *)(long)d))
			return 2;
		while (!atomic_load(&ready))
			usleep(100);
		pthread_cancel(th);
		pthread_join(th, &r);
		if (r != PTHREAD_CANCELED)
			return 3;
	}
	printf("cancelled=%d cleanups=%d\n", t, atomic_load(&cleanups));
	return atomic_load(&cleanups) == t ? 0 : 1;
}
