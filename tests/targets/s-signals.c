/* SPDX-License-Identifier: MIT */
/*
 * s-signals - counts SIGUSR1/SIGUSR2 with handlers while sleeping in a loop
 * of short nanosleeps (EINTR is fine and retried). Prints "ready <pid>"
 * then, after argv[1] ms (default 1500), "usr1=<n> usr2=<n>" and exits 0 if
 * the counts equal argv[2] and argv[3] (default 1 and 1), 1 otherwise:
 * a signal lost by a tracer makes it fail, and so does a SIGUSR1 whose
 * siginfo is not the kill() of its parent (SI_USER). With argv[4] = "eof" it also
 * stops early when its stdin reaches EOF (the tester closes it).
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1, usr2, bad_info;

/* SIGUSR1 always comes from kill(): a tracer must not change its siginfo. */
static void on_sig(int sig, siginfo_t *info, void *uctx)
{
	if (sig == SIGUSR1) {
		usr1++;
		if (info->si_code != SI_USER || info->si_pid != getppid())
			bad_info++;
	} else {
		usr2++;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 1500;
	int want1 = argc > 2 ? atoi(argv[2]) : 1;
	int want2 = argc > 3 ? atoi(argv[3]) : 1;
	int eof = argc > 4 && !strcmp(argv[4], "eof");
	struct sigaction sa;
	double end;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	printf("ready %d\n", getpid());
	fflush(stdout);
	end = now() + ms / 1000.0;
	while (now() < end) {
		struct pollfd in = { 0, POLLIN, 0 };

		/* 10 ms naps; EINTR from our handlers is fine. */
		if (poll(&in, eof ? 1 : 0, 10) == 1 && eof) {
			char c;

			if (read(0, &c, 1) <= 0)
				break;
		}
	}
	printf("usr1=%d usr2=%d bad_info=%d\n", (int)usr1, (int)usr2, (int)bad_info);
	return usr1 == want1 && usr2 == want2 && !bad_info ? 0 : 1;
}
