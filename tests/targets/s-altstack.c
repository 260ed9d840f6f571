/* SPDX-License-Identifier: MIT */
/*
 * s-altstack - return probes against signal handlers on an alternate stack.
 *
 *   s-altstack CALLS [PHASES [SPIN]]
 *
 * A fast SIGALRM (setitimer, 200 us, one-shot: re-armed by the loop once
 * the last one was handled, so a slow tracer cannot turn it into a signal
 * storm) runs handler() on a sigaltstack while the thread loops over hot(),
 * so the signal mostly lands between hot()'s entry and its return. handler() calls hot() twice (on the
 * alternate stack); every third run that interrupted the main hot() leaves
 * with siglongjmp() back into that hot() (which then returns normally):
 * half of those jump from handler() itself, half from inside a hot() that
 * handler() called (a hot() call that never returns). Each phase puts the
 * alternate stack somewhere else relative to the stack it interrupts:
 *   0  main thread, malloc'ed: far below the main stack
 *   1  main thread, an array in main()'s frame: just above hot()'s frames
 *   2  a thread, the array in main()'s frame: far above its stack
 *   3  a thread, the same mapping as its stack, just below it
 *   4  a thread, the same mapping as its stack, just above it
 * PHASES is a string of phase digits (default "01234"); CALLS main-side
 * hot() calls each, of SPIN iterations (default 2000; more under a slow
 * tracer, so that its signals still land inside hot()). Prints
 *   "hot=E/R handler=E/R signals=S jumps=J"
 * (E entries, R returns, as counted by the program) and exits 0 if every
 * hot() computed the right value and a handler ran in each phase, 1
 * otherwise. Built at -O0 with frame pointers (-k walks them).
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#define ALT_SIZE (64 * 1024)

enum { MODE_PLAIN, MODE_JUMPABLE, MODE_LEAVE };

/* Counters: each is written by one thread and its handler, with atomic adds. */
static long spin = 2000;
static long hot_calls, hot_left, handler_runs, handler_left, jumps, bad;
static __thread sigjmp_buf env;
static __thread volatile sig_atomic_t armed;
static volatile sig_atomic_t pending; /* a SIGALRM is on its way */

static void add(long *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

/* sum of 0..n-1, the slow way; MODE_JUMPABLE may be re-entered by siglongjmp */
__attribute__((noinline)) long hot(long n, int mode)
{
	volatile long x, i;

	add(&hot_calls);
	if (mode == MODE_JUMPABLE) {
		if (sigsetjmp(env, 1))
			add(&jumps); /* back from a handler; armed is 0 now */
		else
			armed = 1;
	}
	for (x = 0, i = 0; i < n; i++)
		x += i;
	if (mode == MODE_JUMPABLE)
		armed = 0;
	if (mode == MODE_LEAVE) {
		add(&hot_left);
		armed = 0;
		siglongjmp(env, 1);
	}
	return x;
}

__attribute__((noinline)) void handler(int sig)
{
	long runs = __atomic_add_fetch(&handler_runs, 1, __ATOMIC_RELAXED);
	int jump = armed && runs % 3 == 0;

	(void)sig;
	pending = 0;
	if (hot(100, MODE_PLAIN) != 100 * 99 / 2)
		add(&bad);
	if (hot(50, MODE_PLAIN) != 50 * 49 / 2)
		add(&bad);
	if (!jump)
		return;
	add(&handler_left);
	if (runs % 2) {
		hot(10, MODE_LEAVE);
		add(&bad); /* not reached */
	}
	armed = 0;
	siglongjmp(env, 1);
}

static void timer(long us)
{
	struct itimerval it = { { 0, 0 }, { 0, us } };

	setitimer(ITIMER_REAL, &it, NULL);
}

static void loop(long calls)
{
	long i;

	for (i = 0; i < calls; i++) {
		if (!pending) {
			pending = 1;
			timer(200);
		}
		if (hot(spin, MODE_JUMPABLE) != spin * (spin - 1) / 2)
			add(&bad);
	}
}

static void set_alt(void *base, size_t size)
{
	stack_t ss = { .ss_sp = base, .ss_size = size, .ss_flags = base ? 0 : SS_DISABLE };

	if (sigaltstack(&ss, NULL))
		perror("sigaltstack"), exit(1);
}

struct job {
	long calls;
	void *alt;
};

static void *thread_main(void *arg)
{
	struct job *j = arg;
	sigset_t set;

	set_alt(j->alt, ALT_SIZE);
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	loop(j->calls);
	set_alt(NULL, 0);
	return NULL;
}

/* run loop() on a new thread whose stack is [stack, stack + size) */
static void on_thread(long calls, void *alt, void *stack, size_t size)
{
	struct job j = { calls, alt };
	pthread_attr_t a;
	pthread_t th;
	sigset_t set, old;

	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &set, &old); /* the thread inherits it, unblocks */
	pthread_attr_init(&a);
	if (stack)
		pthread_attr_setstack(&a, stack, size);
	if (pthread_create(&th, &a, thread_main, &j))
		perror("pthread_create"), exit(1);
	pthread_join(th, NULL);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* noinline: its frame (and the caller's array) stays above hot()'s */
static __attribute__((noinline)) void phase(int p, long calls, char *above)
{
	size_t tsize = 1 << 20;
	char *m;

	switch (p) {
	case 0:
		m = malloc(ALT_SIZE);
		set_alt(m, ALT_SIZE);
		loop(calls);
		set_alt(NULL, 0);
		free(m);
		break;
	case 1:
		set_alt(above, ALT_SIZE);
		loop(calls);
		set_alt(NULL, 0);
		break;
	case 2:
		on_thread(calls, above, NULL, 0);
		break;
	case 3:
	case 4:
		m = mmap(NULL, tsize + ALT_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (m == MAP_FAILED)
			perror("mmap"), exit(1);
		if (p == 3)
			on_thread(calls, m, m + ALT_SIZE, tsize);
		else
			on_thread(calls, m + tsize, m, tsize);
		munmap(m, tsize + ALT_SIZE);
		break;
	}
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 2000;
	const char *phases = argc > 2 ? argv[2] : "01234";
	char above[ALT_SIZE] __attribute__((aligned(16)));
	struct sigaction sa;
	long runs0;
	int ok = 1;

	if (argc > 3)
		spin = atol(argv[3]);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	for (; *phases; phases++) {
		runs0 = handler_runs;
		phase(*phases - '0', calls, above);
		timer(0);
		pending = 0;
		if (handler_runs == runs0) {
			fprintf(stderr, "phase %c: no signal\n", *phases);
			ok = 0;
		}
	}
	printf("hot=%ld/%ld handler=%ld/%ld signals=%ld jumps=%ld\n", hot_calls,
	       hot_calls - hot_left, handler_runs, handler_runs - handler_left, handler_runs,
	       jumps);
	return ok && !bad && jumps == handler_left ? 0 : 1;
}
