/* SPDX-License-Identifier: MIT */
/*
 * libinject-slowctor.so - an object whose constructor runs for about
 * SLOWCTOR_MS, inside dlopen(), so with glibc's loader lock held, using the
 * integer and vector registers all along. test-inject.c loads it with a
 * remote-call timeout shorter than that: the injection must give up
 * without restoring the thread mid-call, the constructor must finish on
 * its own, the loader lock must be released (the target's own dlopen()
 * afterwards works), and the thread must come back with its own state.
 */
#include <stdint.h>
#include <time.h>

#define SLOWCTOR_MS 800

__attribute__((constructor)) static void slow_ctor(void)
{
	volatile double d = 1.0;
	struct timespec a, b, ts = { 0, 100 * 1000 * 1000 };

	/* A sleep first: a syscall of the callee that the tracer's stop interrupts. */
	nanosleep(&ts, NULL);
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		int i;

		for (i = 0; i < 1000; i++)
			d = d * 1.0000001 + 0.5;
		__asm__ volatile("pcmpeqd %%xmm0, %%xmm0\n\tpcmpeqd %%xmm1, %%xmm1\n\t"
				 "pcmpeqd %%xmm2, %%xmm2\n\tpcmpeqd %%xmm3, %%xmm3\n\t"
				 "pcmpeqd %%xmm4, %%xmm4\n\tpcmpeqd %%xmm5, %%xmm5" ::
					 : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5");
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < SLOWCTOR_MS);
}
