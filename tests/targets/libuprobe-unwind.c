/* SPDX-License-Identifier: MIT */
/*
 * libuprobe-unwind.c - the thread body of s-uprobes "pexit": built with
 * -fexceptions, so that its cleanup handler runs only if glibc's forced
 * unwind (pthread_exit, cancellation) finds it by the unwind info of every
 * frame in between. It needs libgcc_s: dlopen()ing it loads libgcc_s late
 * (the unwinder's entry points are then armed at that dlopen).
 */
#include <pthread.h>

struct unwind_arg {
	long (*body)(long depth, long value); /* leaves the thread from inside */
	long depth, value;
	volatile long *cleanups;
};

static void on_cleanup(void *arg)
{
	(*(volatile long *)arg)++;
}

void *unwind_thread(void *arg)
{
	struct unwind_arg *a = arg;

	pthread_cleanup_push(on_cleanup, (void *)a->cleanups);
	a->body(a->depth, a->value);
	pthread_cleanup_pop(0);
	return NULL; /* not reached: the body does not return */
}
