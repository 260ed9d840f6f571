/* SPDX-License-Identifier: MIT */
/*
 * s-waits T_MS RUN_MS LIB [busy|burst] - threads that sit in the blocking calls the
 * kernel never restarts once a signal handler has run (signal(7)), or that
 * fail with EINTR even after a mere stop (epoll_wait, sigtimedwait, semop,
 * io_getevents), while a tracer arms, upgrades and disarms probes.
 *
 * One thread per call: nanosleep, clock_nanosleep, poll, ppoll, epoll_wait,
 * select, pselect6, sigtimedwait, io_getevents (raw syscall, after
 * io_setup), semtimedop, each with a timeout of T_MS that it checks itself
 * (an early return, a result other than the timeout's, EINTR), and one in
 * semop without a timeout, which must return only when main releases it.
 * Each thread calls one function of LIB before each call. The program has
 * handlers for SIGUSR1, SIGALRM, SIGCHLD, SIGWINCH, SIGURG, SIGPIPE,
 * SIGRTMIN, SIGRTMAX - 1 and SIGRTMAX that count if they ever run.
 *
 * Main starts the threads, waits 50 ms (they are blocked), dlopen()s LIB
 * (libwaits.so: waits_fn_000 ... waits_fn_099; a SPEC pending on it is
 * armed then, while the threads sleep), prints "ready PID", then every
 * 10 ms calls the 100 functions and looks at their first code byte (0xe9:
 * a jmp, 0xcc: an int3 probe) between checked poll()s of stdin, for
 * RUN_MS ms, or until stdin is closed when RUN_MS is 0. Then it releases
 * the threads and prints
 *   "calls=N early=N eintr=N bad=N handlers=N jmp=N int3=N"
 * (jmp, int3: functions seen so at one look, at most), one
 * "FAIL: CALL ..." line per wrong return before it, and exits 0 if early,
 * eintr, bad and handlers are 0, else 1.
 *
 * busy: one more thread computes all along (it calls the 100 functions in
 * a loop, no syscall): a tracer may interrupt it, never the others. burst:
 * one more thread computes for 2 ms of CPU time (calling the functions),
 * then sleeps 2 ms (a checked nanosleep), over and over: the worst case for
 * a tracer that interrupts only threads it sees busy.
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/aio_abi.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NR_FNS 100

enum {
	K_NANOSLEEP,
	K_CLOCK_NANOSLEEP,
	K_POLL,
	K_PPOLL,
	K_EPOLL,
	K_SELECT,
	K_PSELECT,
	K_SIGTIMEDWAIT,
	K_IO_GETEVENTS,
	K_SEMTIMEDOP,
	K_SEMOP,
	K_NR
};

static const char *const names[K_NR] = {
	"nanosleep", "clock_nanosleep", "poll",		"ppoll",      "epoll_wait", "select",
	"pselect",   "sigtimedwait",	"io_getevents", "semtimedop", "semop",
};

static long t_ms = 200;
static volatile int stop, released;
static int pfd[2], epfd, semid;
static aio_context_t aio;
static int (*fns[NR_FNS])(int);
static int nr_calls, nr_early, nr_eintr, nr_bad;
static volatile int handlers;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void on_signal(int sig)
{
	(void)sig;
	__atomic_fetch_add(&handlers, 1, __ATOMIC_RELAXED);
}

/* One call's verdict: @want is the result of a call that timed out. */
static void check(int k, long r, int err, long want, double ms, double min_ms)
{
	pthread_mutex_lock(&lock);
	nr_calls++;
	if (r < 0 && err == EINTR) {
		nr_eintr++;
		printf("FAIL: %s: EINTR after %.1f ms\n", names[k], ms);
	} else if (r != want) {
		nr_bad++;
		printf("FAIL: %s: returned %ld (errno %d) after %.1f ms\n", names[k], r, err, ms);
	} else if (ms < min_ms) {
		nr_early++;
		printf("FAIL: %s: returned after %.1f ms of %.1f\n", names[k], ms, min_ms);
	}
	pthread_mutex_unlock(&lock);
}

static void *waiter(void *arg)
{
	int k = (int)(long)arg, n = 0;
	struct timespec ts = { t_ms / 1000, (t_ms % 1000) * 1000000 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	if (k == K_SIGTIMEDWAIT)
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	while (!stop) {
		struct timeval tv = { t_ms / 1000, (t_ms % 1000) * 1000 };
		struct pollfd p = { pfd[0], POLLIN, 0 };
		struct epoll_event ev;
		struct io_event ioev;
		struct sembuf sb = { 0, -1, 0 };
		fd_set rd;
		long r, want = 0;
		double t0, min = (double)t_ms - 1;
		int (*fn)(int) = __atomic_load_n(&fns[(k * 9 + n++) % NR_FNS], __ATOMIC_ACQUIRE);

		if (fn)
			fn(n);
		FD_ZERO(&rd);
		FD_SET(pfd[0], &rd);
		errno = 0;
		t0 = now_ms();
		switch (k) {
		case K_NANOSLEEP:
			r = nanosleep(&ts, NULL);
			break;
		case K_CLOCK_NANOSLEEP:
			r = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
			if (r > 0) /* returns the error */
				errno = (int)r, r = -1;
			break;
		case K_POLL:
			r = poll(&p, 1, (int)t_ms);
			break;
		case K_PPOLL:
			r = ppoll(&p, 1, &ts, NULL);
			break;
		case K_EPOLL:
			r = epoll_wait(epfd, &ev, 1, (int)t_ms);
			break;
		case K_SELECT:
			r = select(pfd[0] + 1, &rd, NULL, NULL, &tv);
			break;
		case K_PSELECT:
			r = pselect(pfd[0] + 1, &rd, NULL, NULL, &ts, NULL);
			break;
		case K_SIGTIMEDWAIT:
			r = sigtimedwait(&set, NULL, &ts);
			want = -1; /* EAGAIN */
			break;
		case K_IO_GETEVENTS:
			r = syscall(SYS_io_getevents, aio, 1L, 1L, &ioev, &ts);
			break;
		case K_SEMTIMEDOP:
			sb.sem_num = 0;
			r = semtimedop(semid, &sb, 1, &ts);
			want = -1; /* EAGAIN */
			break;
		default: /* K_SEMOP: until main releases it */
			sb.sem_num = 1;
			r = semop(semid, &sb, 1);
			min = 0;
			if (r == 0 && !released) {
				r = 1; /* returned without a release */
				errno = 0;
			}
			break;
		}
		if (want == -1 && r == -1 && errno == EAGAIN)
			r = want;
		check(k, r, errno, want, now_ms() - t0, min);
	}
	return NULL;
}

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* busy (@arg 0) and burst (1) */
static void *computer(void *arg)
{
	bool burst = arg != NULL;
	unsigned int x = 0;

	while (!stop) {
		double c0 = cpu_ms();
		struct timespec ts = { 0, 2000000 };
		double t0;
		long r;

		do {
			for (int i = 0; i < NR_FNS; i++) {
				int (*fn)(int) = __atomic_load_n(&fns[i], __ATOMIC_ACQUIRE);

				if (fn)
					x += (unsigned int)fn((int)x);
			}
		} while (!stop && (!burst || cpu_ms() - c0 < 2));
		if (!burst)
			break;
		t0 = now_ms();
		errno = 0;
		r = nanosleep(&ts, NULL);
		check(K_NANOSLEEP, r, errno, 0, now_ms() - t0, 1.9);
	}
	return (void *)(unsigned long)x;
}

/* Functions whose first byte (after an endbr64, or a kept push) is 0xe9 and 0xcc. */
static void look(int *jmp, int *int3)
{
	int i, j = 0, t = 0;

	for (i = 0; i < NR_FNS; i++) {
		const unsigned char *c = (const unsigned char *)fns[i];

		if (c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
			c += 4;
		/* a first push stays in place, the probe follows it (planner.c rule 5) */
		if (c[0] >= 0x50 && c[0] <= 0x57 && (c[1] == 0xe9 || c[1] == 0xcc))
			c += 1;
		j += c[0] == 0xe9;
		t += c[0] == 0xcc;
	}
	*jmp = j > *jmp ? j : *jmp;
	*int3 = t > *int3 ? t : *int3;
}

int main(int argc, char **argv)
{
	static const int sigs[] = { SIGUSR1, SIGALRM, SIGCHLD, SIGWINCH, SIGURG, SIGPIPE };
	pthread_t th[K_NR], extra;
	const char *mode = argc > 4 ? argv[4] : "";
	bool more = !strcmp(mode, "busy") || !strcmp(mode, "burst");
	struct epoll_event ev = { .events = EPOLLIN };
	struct sembuf up = { 1, 1, 0 };
	struct sigaction sa;
	struct timespec settle = { 0, 50000000 };
	double run_ms, end;
	int i, jmp = 0, int3 = 0, bad;
	void *h;

	if (argc < 4)
		return 2;
	t_ms = atol(argv[1]);
	run_ms = atof(argv[2]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < (int)(sizeof(sigs) / sizeof(sigs[0])); i++)
		sigaction(sigs[i], &sa, NULL);
	sigaction(SIGRTMIN, &sa, NULL);
	sigaction(SIGRTMAX - 1, &sa, NULL);
	sigaction(SIGRTMAX, &sa, NULL);
	if (pipe(pfd) || (epfd = epoll_create1(0)) < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, pfd[0], &ev) ||
	    (semid = semget(IPC_PRIVATE, 2, 0600)) < 0 || syscall(SYS_io_setup, 4, &aio)) {
		perror("s-waits: setup");
		return 2;
	}
	for (i = 0; i < K_NR; i++)
		pthread_create(&th[i], NULL, waiter, (void *)(long)i);
	if (more)
		pthread_create(&extra, NULL, computer, (void *)(long)!strcmp(mode, "burst"));
	nanosleep(&settle, NULL);
	h = dlopen(argv[3], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "s-waits: %s\n", dlerror());
		return 2;
	}
	for (i = 0; i < NR_FNS; i++) {
		char name[32];

		snprintf(name, sizeof(name), "waits_fn_%03d", i);
		__atomic_store_n(&fns[i], (int (*)(int))dlsym(h, name), __ATOMIC_RELEASE);
		if (!fns[i])
			return 2;
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	end = now_ms() + run_ms;
	while (run_ms <= 0 || now_ms() < end) {
		struct pollfd p = { run_ms > 0 ? -1 : 0, POLLIN, 0 }; /* -1: a sleep */
		double t0;
		int r;

		for (i = 0; i < NR_FNS; i++)
			fns[i](i);
		look(&jmp, &int3);
		t0 = now_ms();
		r = poll(&p, 1, 10);
		if (r == 1) {
			char c;

			if (read(0, &c, 1) <= 0)
				break;
			continue;
		}
		check(K_POLL, r, errno, 0, now_ms() - t0, 9);
	}
	stop = 1;
	released = 1;
	semop(semid, &up, 1);
	for (i = 0; i < K_NR; i++)
		pthread_join(th[i], NULL);
	if (more)
		pthread_join(extra, NULL);
	semctl(semid, 0, IPC_RMID);
	syscall(SYS_io_destroy, aio);
	bad = nr_early + nr_eintr + nr_bad + handlers;
	printf("calls=%d early=%d eintr=%d bad=%d handlers=%d jmp=%d int3=%d\n", nr_calls, nr_early,
	       nr_eintr, nr_bad, handlers, jmp, int3);
	return bad ? 1 : 0;
}
