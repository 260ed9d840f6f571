/* SPDX-License-Identifier: MIT */
/*
 * s-trace - a target for utrace -f/-u/-r that counts its own calls and
 * prints them, so that tests compare the tracer's events with the truth.
 *
 *   s-trace calls N T M    N calls of work() in main, then T threads doing
 *                          M calls each; leaf() once per work(); 4 calls
 *                          of answer() (returns 7) printed as
 *                          "answers=a,b,c,d"; recurse(5); N malloc/free;
 *                          prints "work=W leaf=L answer=4 recurse=6
 *                          malloc=N" and exits with status 0
 *   s-trace exit CODE      calls work(1) and exits with CODE
 *   s-trace fork C M       spawn() (a probed function that calls fork())
 *                          C times; each child calls work() M times,
 *                          prints "child PID work=M" and exits 0; then the
 *                          parent calls work() M times, waits for them and
 *                          prints "parent work=M children=C"
 *   s-trace loop           prints "ready PID", then calls work() every
 *                          millisecond until stdin is closed; then checks
 *                          that work() still computes right and exits 0
 *                          ("ok") or 1
 *   s-trace loop blocked   the same with every signal blocked (SIGTRAP
 *                          too: an int3 hit would kill it)
 *
 * Built at -O0 with frame pointers: every call is a real call, and -k
 * sees every frame.
 */
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int nr_work, nr_leaf, nr_recurse;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
void *volatile sink;

__attribute__((noinline)) size_t leaf(const char *s)
{
	pthread_mutex_lock(&lock);
	nr_leaf++;
	pthread_mutex_unlock(&lock);
	return strlen(s);
}

__attribute__((noinline)) int work(int x)
{
	pthread_mutex_lock(&lock);
	nr_work++;
	pthread_mutex_unlock(&lock);
	return x * 2 + (int)leaf("hello");
}

__attribute__((noinline)) int answer(void)
{
	return 7;
}

__attribute__((noinline)) int recurse(int n)
{
	nr_recurse++;
	return n ? recurse(n - 1) + 1 : 0;
}

static int per_thread;

static void *worker(void *arg)
{
	int i;

	for (i = 0; i < per_thread; i++)
		work(i);
	return arg;
}

static int do_calls(int n, int t, int m)
{
	pthread_t th[64];
	int i, a[4];

	for (i = 0; i < n; i++)
		work(i);
	per_thread = m;
	if (t > 64)
		t = 64;
	for (i = 0; i < t; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 4; i++)
		a[i] = answer();
	recurse(5);
	for (i = 0; i < n; i++) {
		sink = malloc(100 + i);
		free(sink);
	}
	printf("answers=%d,%d,%d,%d\n", a[0], a[1], a[2], a[3]);
	printf("work=%d leaf=%d answer=4 recurse=%d malloc=%d\n", nr_work, nr_leaf, nr_recurse, n);
	return 0;
}

__attribute__((noinline)) pid_t spawn(void)
{
	return fork();
}

static int do_fork(int c, int m)
{
	int i, k, ok = 0, st;

	for (k = 0; k < c; k++) {
		pid_t pid = spawn();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			for (i = 0; i < m; i++)
				work(i);
			printf("child %d work=%d\n", (int)getpid(), nr_work);
			_exit(nr_work == m ? 0 : 1);
		}
	}
	for (i = 0; i < m; i++)
		work(i);
	for (k = 0; k < c; k++)
		if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	printf("parent work=%d children=%d\n", nr_work, ok);
	return ok == c ? 0 : 1;
}

static int do_loop(void)
{
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	char buf[64];
	int i = 0;

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		if (poll(&pfd, 1, 1) > 0 && read(0, buf, sizeof(buf)) <= 0)
			break;
		if (work(i) != i * 2 + 5)
			return 1;
		i++;
	}
	printf(work(21) == 47 ? "ok\n" : "bad\n");
	return work(21) == 47 ? 0 : 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "calls"))
		return do_calls(argc > 2 ? atoi(argv[2]) : 10, argc > 3 ? atoi(argv[3]) : 0,
				argc > 4 ? atoi(argv[4]) : 0);
	if (argc > 2 && !strcmp(argv[1], "exit")) {
		work(1);
		return atoi(argv[2]);
	}
	if (argc > 3 && !strcmp(argv[1], "fork"))
		return do_fork(atoi(argv[2]), atoi(argv[3]));
	if (argc > 2 && !strcmp(argv[1], "loop") && !strcmp(argv[2], "blocked")) {
		sigset_t all;

		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
	}
	if (argc > 1 && !strcmp(argv[1], "loop"))
		return do_loop();
	fprintf(stderr, "usage: s-trace calls N T M | exit CODE | loop\n");
	return 2;
}
