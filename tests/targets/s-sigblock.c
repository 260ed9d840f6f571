/* SPDX-License-Identifier: MIT */
/*
 * s-sigblock - worker threads that block every signal (sigfillset + a mask
 * call, as xz -T2's liblzma workers and many thread pools do) and then call
 * tiny(), a 4-byte function that only an int3 can probe, and wide(), which
 * takes a jmp. A SIGTRAP blocked at an int3 site kills the process.
 *
 * Prints "ready <pid>", then serves commands on stdin, one per line:
 *   run MODE T N  T workers one after the other, each blocking every
 *                 signal the MODE's way, then calling tiny() and wide() N
 *                 times each; prints "done tiny=X wide=Y" (the calls of
 *                 this command). MODE: inherit (the creating thread blocks
 *                 all around pthread_create: the worker inherits the mask),
 *                 self (the worker calls pthread_sigmask), proc (the
 *                 worker calls sigprocmask), attr (pthread_attr_setsigmask_np),
 *                 raw (syscall(SYS_rt_sigprocmask): what a tracer cannot
 *                 see coming; an int3 then kills the process).
 *   churn on|off  one background thread creating such workers in every
 *                 mode (a 1 ms pause after each four), until "churn off"
 *                 (then "churned K").
 *   quit          exit 0.
 * Every worker checks that every other signal is still blocked (a tracer
 * may keep SIGTRAP open, nothing else): "bad mask" and exit 1 otherwise.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* lea 1(%rdi),%eax; ret: 4 bytes, too short for a 5-byte jmp */
__asm__(".text\n"
	".globl tiny\n"
	".type tiny, @function\n"
	"tiny:\n"
	"\tlea 1(%rdi), %eax\n"
	"\tret\n"
	".size tiny, .-tiny\n");
int tiny(int x);

__attribute__((noinline)) int wide(int x)
{
	volatile int y = x;

	return y * 3 + 1;
}

enum mode { M_INHERIT, M_SELF, M_PROC, M_ATTR, M_NR, M_RAW = M_NR };
static const char *const mode_names[M_NR + 1] = { "inherit", "self", "proc", "attr", "raw" };

struct job {
	enum mode mode;
	long n;
};

static long tiny_calls, wide_calls; /* atomic */
static volatile int sink;
static volatile int churning;

static void check_mask(void)
{
	const int sigs[] = { SIGHUP,  SIGINT,  SIGUSR1,	 SIGUSR2, SIGTERM, SIGCHLD,
			     SIGALRM, SIGPIPE, SIGWINCH, SIGSEGV, SIGBUS };
	sigset_t cur;
	size_t i;

	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		if (!sigismember(&cur, sigs[i])) {
			fprintf(stderr, "bad mask: signal %d not blocked\n", sigs[i]);
			exit(1);
		}
	}
}

static void *worker(void *arg)
{
	struct job *j = arg;
	sigset_t all;
	long i;

	sigfillset(&all);
	if (j->mode == M_SELF)
		pthread_sigmask(SIG_BLOCK, &all, NULL);
	else if (j->mode == M_PROC)
		sigprocmask(SIG_SETMASK, &all, NULL);
	else if (j->mode == M_RAW) /* no libc function to redirect: the kernel's 8 bytes */
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, (size_t)8);
	check_mask();
	for (i = 0; i < j->n; i++) {
		sink = tiny(sink);
		__atomic_fetch_add(&tiny_calls, 1, __ATOMIC_RELAXED);
		sink = wide(sink);
		__atomic_fetch_add(&wide_calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void one_worker(enum mode mode, long n)
{
	struct job j = { mode, n };
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int err;

	sigfillset(&all);
	pthread_attr_init(&attr);
	if (mode == M_ATTR)
		pthread_attr_setsigmask_np(&attr, &all);
	if (mode == M_INHERIT)
		pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, &attr, worker, &j);
	if (mode == M_INHERIT)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		fprintf(stderr, "pthread_create: %s\n", strerror(err));
		exit(1);
	}
	pthread_join(t, NULL);
}

static void *churn(void *arg)
{
	long k = 0;

	(void)arg;
	while (churning) {
		one_worker((enum mode)(k % M_NR), 200);
		k++;
		if (k % 4 == 0)
			usleep(1000); /* a moment with no worker: an attach may see none blocking */
	}
	return (void *)k;
}

int main(void)
{
	char line[256], mode[32];
	pthread_t ct;
	long t, n, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "run %31s %ld %ld", mode, &t, &n) == 3) {
			long t0 = __atomic_load_n(&tiny_calls, __ATOMIC_RELAXED);
			long w0 = __atomic_load_n(&wide_calls, __ATOMIC_RELAXED);
			int m;

			for (m = 0; m <= M_RAW && strcmp(mode, mode_names[m]); m++)
				;
			if (m > M_RAW) {
				fprintf(stderr, "bad mode '%s'\n", mode);
				return 1;
			}
			for (i = 0; i < t; i++)
				one_worker((enum mode)m, n);
			printf("done tiny=%ld wide=%ld\n",
			       __atomic_load_n(&tiny_calls, __ATOMIC_RELAXED) - t0,
			       __atomic_load_n(&wide_calls, __ATOMIC_RELAXED) - w0);
		} else if (!strcmp(line, "churn on\n")) {
			churning = 1;
			if (pthread_create(&ct, NULL, churn, NULL))
				return 1;
		} else if (!strcmp(line, "churn off\n")) {
			void *k;

			churning = 0;
			pthread_join(ct, &k);
			printf("churned %ld\n", (long)k);
		} else if (!strcmp(line, "quit\n")) {
			return 0;
		}
	}
	return 0;
}
