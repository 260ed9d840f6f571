/* SPDX-License-Identifier: MIT */
/*
 * s-uprobes.c - victim of the uprobes tests. Each mode checks its own
 * results (exit 1 on a wrong value: a probe that corrupted the program)
 * and prints the counts the tracer should have seen as "expect KEY=N".
 *
 *   mt CALLS THREADS    THREADS threads x CALLS calls of work()
 *   fib N               fib(N), recursive: fib() is entered fib_calls times
 *   gate IN DONE N      waits for a byte on fifo IN, N x work(), "done" on fifo DONE
 *   longjmp N           jumper(i) for i < N: odd i longjmp out of it
 *   signal N            N x work() in main, N x SIGUSR1 whose handler calls work()
 *   dlopen LIB N        dlopen(LIB) after start, N x lib_func()
 *   dlcycle LIB N K     K x (dlopen(LIB), N x lib_func(), dlclose): the
 *                       object is unmapped and mapped again each time
 *   dlnest NEST LIB N   dlopen(NEST), whose constructor dlopen()s LIB (nested,
 *                       the loader's lock held), then N x lib_func()
 *   dlwait LIB N        "ready"; after a stdin line dlopen(LIB), "loaded";
 *                       after another one N x lib_func() (a tracer attached
 *                       meanwhile arms the library in between), the counts,
 *                       and dlclose once stdin closes
 *   fork N M            N x work(), fork: the child M x work() and prints the
 *                       first 8 code bytes of work(); the parent waits for it
 *   exec N M            N x work(), then execs "mt M 1"
 *   execwait            "ready"; after a stdin line execs "loop 1"
 *   loop THREADS        THREADS threads call work() until stdin closes
 *   tail N              N x tail_a(), which tail-calls tail_b()
 *   sigtrap N           N x work(), raise(SIGTRAP) and int3 with a handler
 *   vfork N             N x work(), vfork + exec /bin/true, N x work()
 *   coro                a coroutine (swapcontext) yields inside co_func()
 *   riprel N            N x rip_push() (push [rip + x] probed)
 *   value N             N x get_value() (fault injection makes it return 7)
 *   pexit LIB N D       dlopen(LIB) (libuprobe-unwind.so, which loads
 *                       libgcc_s), then N threads, one after the other, run
 *                       its unwind_thread() with exiter(D), recursive: the
 *                       innermost call of an even thread calls exit_now(),
 *                       which calls pthread_exit(); an odd thread is
 *                       cancelled there. The forced unwind through D + 1
 *                       exiter frames must run unwind_thread()'s cleanup
 *                       handler (found by the unwind info)
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

static volatile long sink;

NOINLINE long work(long x)
{
	sink += x;
	return x * 2 + 1;
}

NOINLINE long fib(long n)
{
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

static jmp_buf jb;

NOINLINE long jumper(long i)
{
	sink += i;
	if (i & 1)
		longjmp(jb, 1);
	return i + 100;
}

/*
 * tail_a(x) tail-calls tail_b(x + 1): a probed function jumping into
 * another probed one (chained return instances).
 */
NOINLINE long tail_b(long x)
{
	sink += x;
	return x * 3;
}
long tail_a(long x);
__asm__(".text\n"
	".globl tail_a\n"
	".type tail_a, @function\n"
	"tail_a:\n"
	"\tadd $1, %rdi\n" /* 48 83 c7 01 */
	"\tjmp tail_b\n"
	".size tail_a, .-tail_a\n");

/*
 * rip_push() returns sink through "push [rip + sink]": an instruction that
 * only runs out of line within ±2 GiB of sink (no scratch-register form),
 * so its XOL slot must be placed near the executable.
 */
long rip_push(void);
__asm__(".text\n"
	".globl rip_push\n"
	".type rip_push, @function\n"
	"rip_push:\n"
	"\tpushq sink(%rip)\n" /* ff 35 rel32 */
	"\tpopq %rax\n"
	"\tret\n"
	".size rip_push, .-rip_push\n");

/* A site the planner refuses (ud2 cannot run out of line); never called. */
__attribute__((naked)) void trap_fn(void)
{
	__asm__ volatile("ud2");
}

static volatile long traps;

static void on_sigtrap(int sig)
{
	(void)sig;
	traps++;
}

/* never called by the program except through fault injection tests */
static volatile long forty_two = 42; /* not a constant: the call must happen */

NOINLINE long get_value(void)
{
	return forty_two;
}

/* pexit: exit_now() leaves the thread from under D + 1 exiter() frames. */
static atomic_int pexit_ready;

/* returns for v == 0 only (never here): not noreturn, or exiter() looks endless */
NOINLINE void exit_now(long v)
{
	sink += v;
	if (v & 1) {
		/* cancelled here (deferred: at a cancellation point) */
		atomic_store(&pexit_ready, 1);
		for (;;) {
			pthread_testcancel();
			usleep(1000);
		}
	}
	if (v)
		pthread_exit((void *)v);
}

NOINLINE long exiter(long d, long v)
{
	if (d > 0)
		return exiter(d - 1, v) + 1;
	exit_now(v);
	return 0;
}

struct unwind_arg {
	long (*body)(long depth, long value);
	long depth, value;
	volatile long *cleanups;
};

static long calls;

static void *mt_thread(void *arg)
{
	long i, n = (long)arg, bad = 0;

	for (i = 0; i < n; i++)
		if (work(i) != i * 2 + 1)
			bad++;
	return (void *)bad;
}

static atomic_int stop_loop;
static atomic_long loop_calls;

static void *loop_thread(void *arg)
{
	long i = 0;

	(void)arg;
	while (!atomic_load(&stop_loop)) {
		if (work(i) != i * 2 + 1) {
			fprintf(stderr, "work(%ld) wrong\n", i);
			exit(1);
		}
		i++;
		atomic_fetch_add(&loop_calls, 1);
	}
	return NULL;
}

static long handler_calls;

static void on_usr1(int sig)
{
	(void)sig;
	if (work(7) != 15)
		_exit(1);
	handler_calls++;
}

/*
 * Coroutines: co_func() is entered on a heap stack, yields to main, which
 * calls work() on the (higher) main stack, then resumes it.
 */
static ucontext_t uc_main, uc_co;
static volatile long co_result;

NOINLINE long co_func(long x)
{
	swapcontext(&uc_co, &uc_main);
	return x + 5;
}

static void co_body(void)
{
	co_result = co_func(10);
}

static int run_coro(void)
{
	static char stack[256 * 1024];

	getcontext(&uc_co);
	uc_co.uc_stack.ss_sp = stack;
	uc_co.uc_stack.ss_size = sizeof(stack);
	uc_co.uc_link = &uc_main;
	makecontext(&uc_co, co_body, 0);
	swapcontext(&uc_main, &uc_co); /* runs until co_func() yields */
	if (work(1) != 3)
		return 1;
	swapcontext(&uc_main, &uc_co); /* co_func() returns, co_body() ends */
	if (co_result != 15)
		return 1;
	printf("coro result=%ld\n", (long)co_result);
	return 0;
}

static int run_longjmp(long n)
{
	volatile long jumps = 0, rets = 0, k;

	for (k = 0; k < n; k++) {
		if (setjmp(jb)) {
			jumps++;
			continue;
		}
		if (jumper(k) != k + 100)
			return 1;
		rets++;
	}
	/* a last call after the last longjmp, so the stale instance is seen */
	if (work(1) != 3)
		return 1;
	printf("expect entries=%ld returns=%ld missed=%ld\n", n, (long)rets, (long)jumps);
	return 0;
}

static long fib_calls(long n)
{
	return n < 2 ? 1 : 1 + fib_calls(n - 1) + fib_calls(n - 2);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "mt";
	long i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "mt")) {
		long n = argc > 2 ? atol(argv[2]) : 1000, nt = argc > 3 ? atol(argv[3]) : 1;
		pthread_t th[64];
		void *bad;

		if (nt > 64)
			return 2;
		for (i = 0; i < nt; i++)
			pthread_create(&th[i], NULL, mt_thread, (void *)n);
		for (i = 0; i < nt; i++) {
			pthread_join(th[i], &bad);
			if (bad)
				return 1;
		}
		printf("expect entries=%ld returns=%ld\n", n * nt, n * nt);
	} else if (!strcmp(mode, "gate")) {
		/*
		 * gate IN DONE N: a process that is running before a tracer arms
		 * (test-kernel's -a test): wait for a byte on fifo IN, call
		 * work() N times, then say so on fifo DONE.
		 */
		long n = atol(argv[4]);
		char c;
		FILE *f = fopen(argv[2], "r");

		if (!f || fread(&c, 1, 1, f) != 1)
			return 2;
		fclose(f);
		for (i = 0; i < n; i++)
			if (work(i) != i * 2 + 1)
				return 1;
		f = fopen(argv[3], "w");
		if (!f || fputs("done\n", f) < 0 || fclose(f))
			return 2;
		printf("expect entries=%ld returns=%ld\n", n, n);
	} else if (!strcmp(mode, "fib")) {
		long n = atol(argv[2]), r = fib(n), a = 0, b = 1, k;

		for (k = 0; k < n; k++) {
			long c = a + b;

			a = b;
			b = c;
		}
		if (r != a)
			return 1;
		printf("expect entries=%ld returns=%ld result=%ld\n", fib_calls(n), fib_calls(n),
		       r);
	} else if (!strcmp(mode, "longjmp")) {
		if (run_longjmp(atol(argv[2])))
			return 1;
	} else if (!strcmp(mode, "signal")) {
		long n = atol(argv[2]);

		signal(SIGUSR1, on_usr1);
		for (i = 0; i < n; i++) {
			if (work(i) != i * 2 + 1)
				return 1;
			raise(SIGUSR1);
		}
		if (handler_calls != n)
			return 1;
		printf("expect entries=%ld returns=%ld\n", 2 * n, 2 * n);
	} else if (!strcmp(mode, "dlopen")) {
		long n = atol(argv[3]);
		long (*fn)(long);
		void *h;

		if (work(1) != 3) /* before the library exists */
			return 1;
		h = dlopen(argv[2], RTLD_NOW);
		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 3;
		}
		fn = (long (*)(long))dlsym(h, "lib_func");
		for (i = 0; i < n; i++)
			if (fn(i) != i + 1000)
				return 1;
		printf("expect entries=%ld returns=%ld\n", n, n);
	} else if (!strcmp(mode, "dlnest")) {
		long n = atol(argv[4]);
		long (*fn)(long);
		void *nest, *h;

		setenv("UPROBE_NEST_LIB", argv[3], 1);
		nest = dlopen(argv[2], RTLD_NOW);
		h = nest ? dlopen(argv[3], RTLD_NOW | RTLD_NOLOAD) : NULL;
		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 3;
		}
		fn = (long (*)(long))dlsym(h, "lib_func");
		for (i = 0; i < n; i++)
			if (fn(i) != i + 1000)
				return 1;
		printf("expect entries=%ld returns=%ld\n", n, n);
	} else if (!strcmp(mode, "dlcycle") || !strcmp(mode, "dlwait")) {
		long n = atol(argv[3]), k = argc > 4 ? atol(argv[4]) : 1, j;
		bool wait = !strcmp(mode, "dlwait");
		char buf[16];

		if (wait) {
			printf("ready\n");
			if (read(0, buf, sizeof(buf)) <= 0)
				return 1;
		}
		for (j = 0; j < k; j++) {
			long (*fn)(long);
			void *h = dlopen(argv[2], RTLD_NOW);

			if (!h) {
				fprintf(stderr, "%s\n", dlerror());
				return 3;
			}
			if (wait) {
				printf("loaded\n");
				if (read(0, buf, sizeof(buf)) <= 0)
					return 1;
			}
			fn = (long (*)(long))dlsym(h, "lib_func");
			for (i = 0; i < n; i++)
				if (fn(i) != i + 1000)
					return 1;
			if (wait) {
				printf("expect entries=%ld returns=%ld\n", n, n);
				while (read(0, buf, sizeof(buf)) > 0)
					;
			}
			if (dlclose(h))
				return 1;
		}
		if (!wait)
			printf("expect entries=%ld returns=%ld\n", n * k, n * k);
	} else if (!strcmp(mode, "fork")) {
		long n = atol(argv[2]), m = atol(argv[3]);
		int status;
		pid_t pid;

		for (i = 0; i < n; i++)
			work(i);
		pid = fork();
		if (pid == 0) {
			for (i = 0; i < m; i++)
				if (work(i) != i * 2 + 1)
					_exit(1);
			{
				const volatile unsigned char *c = (const void *)work;
				int k;

				printf("child bytes=");
				for (k = 0; k < 8; k++)
					printf("%02x", c[k]);
				printf("\n");
			}
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
		for (i = 0; i < n; i++)
			work(i);
		printf("expect entries=%ld returns=%ld\n", 2 * n, 2 * n);
	} else if (!strcmp(mode, "exec")) {
		long n = atol(argv[2]);

		for (i = 0; i < n; i++)
			work(i);
		printf("expect before_exec=%ld\n", n);
		execl("/proc/self/exe", argv[0], "mt", argv[3], "1", (char *)NULL);
		return 4;
	} else if (!strcmp(mode, "execwait")) {
		char buf[16];

		printf("ready\n");
		if (read(0, buf, sizeof(buf)) <= 0)
			return 1;
		execl("/proc/self/exe", argv[0], "loop", "1", (char *)NULL);
		return 4;
	} else if (!strcmp(mode, "loop")) {
		long nt = atol(argv[2]);
		pthread_t th[64];
		char buf[16];

		for (i = 0; i < nt && i < 64; i++)
			pthread_create(&th[i], NULL, loop_thread, NULL);
		printf("ready\n");
		while (read(0, buf, sizeof(buf)) > 0)
			;
		atomic_store(&stop_loop, 1);
		for (i = 0; i < nt && i < 64; i++)
			pthread_join(th[i], NULL);
		printf("calls=%ld ok\n", atomic_load(&loop_calls));
	} else if (!strcmp(mode, "tail")) {
		long n = atol(argv[2]);

		for (i = 0; i < n; i++)
			if (tail_a(i) != (i + 1) * 3)
				return 1;
		printf("expect entries=%ld returns=%ld\n", n, n);
	} else if (!strcmp(mode, "sigtrap")) {
		long n = atol(argv[2]);

		/* SIGTRAPs of the program's own: raise() and a literal int3 */
		signal(SIGTRAP, on_sigtrap);
		for (i = 0; i < n; i++) {
			work(i);
			raise(SIGTRAP);
			__asm__ volatile("int3");
		}
		if (traps != 2 * n)
			return 1;
		printf("expect entries=%ld traps=%ld\n", n, traps);
	} else if (!strcmp(mode, "vfork")) {
		long n = atol(argv[2]);
		int status;
		pid_t pid;

		for (i = 0; i < n; i++)
			work(i);
		pid = vfork();
		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
		for (i = 0; i < n; i++)
			work(i);
		printf("expect entries=%ld returns=%ld\n", 2 * n, 2 * n);
	} else if (!strcmp(mode, "coro")) {
		if (run_coro())
			return 1;
	} else if (!strcmp(mode, "riprel")) {
		long n = atol(argv[2]);

		for (i = 0; i < n; i++) {
			sink = i * 7;
			if (rip_push() != i * 7)
				return 1;
		}
		printf("expect entries=%ld returns=%ld\n", n, n);
	} else if (!strcmp(mode, "pexit")) {
		long n = atol(argv[3]), d = atol(argv[4]);
		volatile long cleanups = 0;
		void *(*fn)(void *);
		void *h = dlopen(argv[2], RTLD_NOW);

		if (!h)
			return 3;
		fn = (void *(*)(void *))dlsym(h, "unwind_thread");
		if (!fn)
			return 3;
		for (i = 0; i < n; i++) {
			struct unwind_arg a = { exiter, d, 1000 + i, &cleanups };
			void *want = i & 1 ? PTHREAD_CANCELED : (void *)a.value;
			pthread_t th;
			void *ret;

			atomic_store(&pexit_ready, 0);
			if (pthread_create(&th, NULL, fn, &a))
				return 1;
			if (i & 1) {
				while (!atomic_load(&pexit_ready))
					usleep(1000);
				pthread_cancel(th);
			}
			if (pthread_join(th, &ret) || ret != want)
				return 1;
		}
		if (cleanups != n)
			return 1;
		work(1); /* the process goes on: its return is reported */
		printf("expect entries=%ld returns=0 missed=%ld\n", n * (d + 1), n * (d + 1));
	} else if (!strcmp(mode, "value")) {
		long n = atol(argv[2]), sum = 0;

		for (i = 0; i < n; i++)
			sum += get_value();
		printf("sum=%ld\n", sum);
	} else {
		return 2;
	}
	(void)calls;
	return 0;
}
