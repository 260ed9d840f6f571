/* SPDX-License-Identifier: MIT */
/*
 * s-blocked MODE - a target that is somewhere a tracer will interrupt it,
 * and checks that it was not harmed. Prints "ready <pid>" on stdout first.
 *   read:  blocks in read(0); must get exactly the bytes "hello\n" (not
 *          EINTR, not -512), then exits 0.
 *   sleep: nanosleep(argv[2] ms, default 1500); must return 0 and last at
 *          least the requested time (a restart must not lose or cut time).
 *   spin:  a register-heavy busy loop (integer and SSE state) sized from
 *          argv[2] ms (the calibration aims low: measured 0.16-0.36 s for
 *          1500, a fifth or less; a test that needs the target alive for a
 *          while uses 0); the result must equal the value computed before
 *          tracing could start. argv[2] = 0: rounds of about 50 ms each
 *          checked so, until EOF on stdin (no lifetime that a slow
 *          tracer could outlast).
 * With argv[3] (an object's path), once the mode's check passed, the
 * target dlopen()s it in a new thread: that must succeed within 5 s
 * (nobody left the loader lock taken); it prints "dlopen ok" and exits at
 * EOF on stdin.
 * Exit status 0 when all is well, 1 otherwise (the reason on stderr).
 */
#include <dlfcn.h>
#include <errno.h>
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

static void ready(void)
{
	printf("ready %d\n", getpid());
	fflush(stdout);
}

/* Integer and floating point state live in registers for the whole loop. */
static __attribute__((noinline)) unsigned long spin(unsigned long iters, double *fp)
{
	unsigned long x = 88172645463325252UL, y = 1, i;
	double d = 1.0, e = 0.5;

	for (i = 0; i < iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		y = y * 6364136223846793005UL + x;
		d = d * 1.0000001 + e;
		e = e * 0.9999999 + (double)(x & 0xff) * 1e-9;
	}
	*fp = d + e;
	return x ^ y;
}

static void *dlopen_thread(void *path)
{
	return dlopen(path, RTLD_NOW);
}

/*
 * The optional dlopen() after the mode's check, in a new thread: the
 * loader lock is recursive, so only another thread than the one a tracer
 * hijacked would block on it if it had been left taken. 0, or 1 with
 * the reason.
 */
static int dlopen_after(const char *path)
{
	struct timespec ts;
	pthread_t th;
	void *h = NULL;
	char c;
	int r;

	if (!path)
		return 0;
	if (pthread_create(&th, NULL, dlopen_thread, (void *)path)) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	r = pthread_timedjoin_np(th, &h, &ts);
	if (r) {
		fprintf(stderr, "dlopen %s in a new thread: %s\n", path,
			r == ETIMEDOUT ? "hangs (the loader lock is taken)" : strerror(r));
		return 1;
	}
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		return 1;
	}
	printf("dlopen ok\n");
	fflush(stdout);
	/* Stay until EOF: the tracer looks at this process meanwhile. */
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "read";
	long ms = argc > 2 ? atol(argv[2]) : 1500;
	const char *dl = argc > 3 ? argv[3] : NULL;

	if (!strcmp(mode, "read")) {
		char buf[64];
		ssize_t r;

		ready();
		r = read(0, buf, sizeof(buf));
		if (r != 6 || memcmp(buf, "hello\n", 6)) {
			fprintf(stderr, "read returned %zd (%s)\n", r,
				r < 0 ? strerror(errno) : "");
			return 1;
		}
		return dlopen_after(dl);
	}
	if (!strcmp(mode, "sleep")) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		double t0, t1;
		int r;

		ready();
		t0 = now();
		r = nanosleep(&ts, NULL);
		t1 = now();
		if (r != 0) {
			fprintf(stderr, "nanosleep returned %d (%s)\n", r, strerror(errno));
			return 1;
		}
		if (t1 - t0 < ms / 1000.0 - 0.001) {
			fprintf(stderr, "slept %.3fs instead of %.3fs\n", t1 - t0, ms / 1000.0);
			return 1;
		}
		return dlopen_after(dl);
	}
	if (!strcmp(mode, "spin")) {
		unsigned long iters = 1000000, a, b;
		double fa, fb, t0 = now();

		/* Calibrate to about @ms, computing the expected value untraced. */
		while (now() - t0 < 0.05)
			spin(iters, &fa), iters += iters / 2;
		if (ms == 0) {
			struct pollfd p = { .fd = 0, .events = POLLIN };
			char buf[16];

			a = spin(iters, &fa);
			ready();
			do {
				b = spin(iters, &fb);
				if (a != b || fa != fb) {
					fprintf(stderr, "spin state corrupted: %lx/%g vs %lx/%g\n",
						a, fa, b, fb);
					return 1;
				}
			} while (poll(&p, 1, 0) == 0 || read(0, buf, sizeof(buf)) > 0);
			return dlopen_after(dl);
		}
		iters = (unsigned long)((double)iters * (ms / 1000.0) / (now() - t0) * 0.5);
		a = spin(iters, &fa);
		ready();
		b = spin(iters, &fb);
		if (a != b || fa != fb) {
			fprintf(stderr, "spin state corrupted: %lx/%g vs %lx/%g\n", a, fa, b, fb);
			return 1;
		}
		return dlopen_after(dl);
	}
	fprintf(stderr, "unknown mode %s\n", mode);
	return 2;
}
