/* SPDX-License-Identifier: MIT */
/*
 * s-sigrestart - blocking syscalls interrupted by signals, in a fixed order so
 * that a tracer sees the same calls every run. A one-shot timer fires
 * DELAY ms (argv[1], default 150) after each blocking call was entered;
 * the handler writes one byte to the pipe the call reads.
 *
 *   1. read() with an SA_RESTART handler: the kernel returns ERESTARTSYS
 *      at the exit stop, runs the handler, restarts the read, which then
 *      gets the byte (strace counts 2 reads, 1 error).
 *   2. read() with a handler without SA_RESTART: EINTR; a second read
 *      then gets the byte.
 *   3. nanosleep(10 s) with a handler: ERESTART_RESTARTBLOCK, then EINTR
 *      to the program; the remaining time is > 0.
 *   4. nanosleep(DELAY * 2) while SIGALRM is blocked and ignored: not
 *      interrupted.
 *
 * Prints "ok" or "FAIL: step" and exits 1. Single-threaded on purpose.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int pfd[2];
static volatile sig_atomic_t hits;

static void on_alarm(int sig)
{
	(void)sig;
	hits++;
	if (write(pfd[1], "x", 1) != 1)
		_exit(3);
}

static void arm(int ms)
{
	struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };

	setitimer(ITIMER_REAL, &it, NULL);
}

static void handler(int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = flags;
	sigaction(SIGALRM, &sa, NULL);
}

#define FAIL(step)                                            \
	do {                                                  \
		printf("FAIL: %s (errno %d)\n", step, errno); \
		return 1;                                     \
	} while (0)

int main(int argc, char **argv)
{
	int delay = argc > 1 ? atoi(argv[1]) : 150;
	struct timespec ts = { 10, 0 }, rem = { 0, 0 };
	char c;
	ssize_t n;

	if (pipe(pfd))
		return 2;

	/* 1: restarted read */
	handler(SA_RESTART);
	arm(delay);
	n = read(pfd[0], &c, 1);
	if (n != 1 || c != 'x' || hits != 1)
		FAIL("SA_RESTART read");

	/* 2: interrupted read */
	handler(0);
	arm(delay);
	n = read(pfd[0], &c, 1);
	if (n != -1 || errno != EINTR || hits != 2)
		FAIL("EINTR read");
	n = read(pfd[0], &c, 1);
	if (n != 1 || c != 'x')
		FAIL("read after EINTR");

	/* 3: interrupted nanosleep */
	arm(delay);
	if (nanosleep(&ts, &rem) != -1 || errno != EINTR || rem.tv_sec < 5 || hits != 3)
		FAIL("nanosleep EINTR");
	n = read(pfd[0], &c, 1);
	if (n != 1)
		FAIL("drain");

	/* 4: blocked signal: the sleep runs to its end */
	{
		sigset_t set;
		struct timespec shortsleep = { 0, delay * 2 * 1000000L };

		signal(SIGALRM, SIG_IGN);
		sigemptyset(&set);
		sigaddset(&set, SIGALRM);
		sigprocmask(SIG_BLOCK, &set, NULL);
		arm(delay);
		if (nanosleep(&shortsleep, NULL))
			FAIL("blocked nanosleep");
	}
	printf("ok\n");
	return 0;
}
