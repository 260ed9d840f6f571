/* SPDX-License-Identifier: MIT */
/*
 * s-agent.c - self-checking victim for the agent tests: each mode calls
 * probed functions a known number of times and checks its own results (so a
 * wrong return address, a clobbered register or a lost flag shows up as a
 * wrong answer or a crash). Exit 0 = the program computed what it should.
 *
 *   s-agent count THREADS ITERS      threads call probed_add()
 *   s-agent retval N                 probed_work() N times
 *   s-agent flags ROUNDS             flags live across a mid-function site
 *   s-agent recurse N                probed_fib(N), checked
 *   s-agent longjmp ROUNDS DEPTH     probed_jump() recursion left by longjmp
 *   s-agent malloc THREADS ITERS     malloc+free pairs between two stdin
 *                                    handshakes; prints worker tids
 *   s-agent spin THREADS [block]     probed_add() until stdin closes;
 *                                    pre_calls[]/post_calls[] per thread;
 *                                    block: thread 0 blocks every signal
 *                                    (but SIGTRAP: the interposers)
 *   s-agent inject N                 its own handler forces probed_add() = 42
 *   s-agent churn TOTAL ITERS        TOTAL short-lived threads, 4 at a time
 *   s-agent pexit ROUNDS DEPTH       threads leave probed frames by pthread_exit
 *   s-agent bench N [T]              N calls of probed_nop() in each of T threads
 *                                    (1) at once; prints ns/call of the slowest
 *   s-agent fork                     child and parent call probed_add()
 *   s-agent rawblock N               same, blocked with a raw syscall
 *   s-agent sigblock N               a thread blocking all signals calls
 *                                    probed_add() N times; own SIGTRAP handler
 *   s-agent badfp N                  N rounds of probed_add() called with rbp
 *                                    holding garbage (as code without frame
 *                                    pointers may): 8 calls per round
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXT 64

volatile uint64_t pre_calls[MAXT * 8]; /* [t * 8]: one cache line per thread */
volatile uint64_t post_calls[MAXT * 8];
static volatile int stop;
static long iters;

/* Prologues of >= 5 bytes: these are jmp sites. */
__attribute__((noinline)) uint64_t probed_add(uint64_t a, uint64_t b)
{
	uint64_t r = a * 3 + b;

	__asm__ volatile("" : "+r"(r));
	return r ^ (a << 1);
}

__attribute__((noinline)) uint64_t probed_work(uint64_t x)
{
	uint64_t r = x;

	for (int i = 0; i < 8; i++)
		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
	__asm__ volatile("" : "+r"(r));
	return r;
}

__attribute__((noinline)) uint64_t probed_fib(uint64_t n)
{
	__asm__ volatile("" ::: "memory");
	return n < 2 ? n : probed_fib(n - 1) + probed_fib(n - 2);
}

static jmp_buf jb;

__attribute__((noinline)) int probed_jump(int depth, int max)
{
	volatile int d = depth;

	if (d >= max)
		longjmp(jb, d);
	return probed_jump(d + 1, max) + 1;
}

__attribute__((noinline)) void probed_nop(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop" ::: "memory");
}

/*
 * Flags live across a probe site in the middle of a function: the site is
 * the 5-byte "mov $7, %ecx" at probed_flags+3, between a cmp and the reads
 * of its flags (CF ZF SF OF PF, packed into the result); plain_flags is the
 * unprobed twin.
 */
uint64_t probed_flags(uint64_t a, uint64_t b);
uint64_t plain_flags(uint64_t a, uint64_t b);
#define FLAGS_BODY(name)                                                            \
	".globl " #name "\n.type " #name ", @function\n" #name ":\n"                \
	"cmp %rsi, %rdi\n"                                                          \
	"movl $7, %ecx\n" /* the site: b9 07 00 00 00 */                            \
	"pushfq\n pop %rax\n and $0x8d5, %eax\n" /* OF SF ZF AF PF CF of the cmp */ \
	"add %rcx, %rax\n ret\n"                                                    \
	".size " #name ", . - " #name "\n"
__asm__(".text\n" FLAGS_BODY(probed_flags) FLAGS_BODY(plain_flags));

static uint64_t ref_add(uint64_t a, uint64_t b)
{
	return (a * 3 + b) ^ (a << 1);
}

static uint64_t ref_fib(uint64_t n)
{
	uint64_t a = 0, b = 1;

	while (n--) {
		uint64_t t = a + b;

		a = b;
		b = t;
	}
	return a;
}

static void *count_thread(void *arg)
{
	long t = (long)arg, i;

	for (i = 0; i < iters; i++)
		if (probed_add((uint64_t)i, (uint64_t)t) != ref_add((uint64_t)i, (uint64_t)t))
			return (void *)1;
	return NULL;
}

static pthread_barrier_t bar_ready, bar_go, bar_done, bar_exit;

static void *malloc_thread(void *arg)
{
	long i;
	int bad = 0;

	printf("tid %ld\n", (long)syscall(SYS_gettid));
	(void)arg;
	pthread_barrier_wait(&bar_ready);
	pthread_barrier_wait(&bar_go);
	for (i = 0; i < iters; i++) {
		char *p = malloc(16 + (size_t)(i % 512));

		if (!p)
			bad = 1;
		else
			p[0] = (char)i;
		__asm__ volatile("" : : "r"(p) : "memory"); /* clang elides unused malloc+free */
		free(p);
	}
	pthread_barrier_wait(&bar_done);
	pthread_barrier_wait(&bar_exit);
	return bad ? (void *)1 : NULL;
}

/* Print @what and wait for a line on stdin (the host snapshots meanwhile). */
static void handshake(const char *what)
{
	char c;

	printf("%s\n", what);
	fflush(stdout);
	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

static int run_malloc(int n)
{
	pthread_t th[MAXT];
	int i, bad = 0;

	pthread_barrier_init(&bar_ready, NULL, (unsigned)n + 1);
	pthread_barrier_init(&bar_go, NULL, (unsigned)n + 1);
	pthread_barrier_init(&bar_done, NULL, (unsigned)n + 1);
	pthread_barrier_init(&bar_exit, NULL, (unsigned)n + 1);
	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, malloc_thread, NULL);
	pthread_barrier_wait(&bar_ready);
	handshake("ready");
	pthread_barrier_wait(&bar_go);
	pthread_barrier_wait(&bar_done);
	handshake("done");
	pthread_barrier_wait(&bar_exit);
	for (i = 0; i < n; i++) {
		void *r;

		pthread_join(th[i], &r);
		bad |= r != NULL;
	}
	return bad;
}

static volatile int app_traps;

static void app_trap(int sig)
{
	(void)sig;
	app_traps++;
}

/* A worker that blocks every signal (SIGTRAP included, as far as it knows). */
static void *blocked_thread(void *arg)
{
	sigset_t all;
	long i;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (i = 0; i < iters; i++)
		if (probed_add((uint64_t)i, 7) != ref_add((uint64_t)i, 7))
			return (void *)1;
	return NULL;
}

/* Blocks every signal behind the agent's back (raw syscall), then waits for stdin. */
static void *rawblock_thread(void *arg)
{
	uint64_t all = ~0ULL;
	char c;
	long i;

	(void)arg;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, 8);
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) == 1 && c != '\n')
		;
	for (i = 0; i < iters; i++)
		if (probed_add((uint64_t)i, 7) != ref_add((uint64_t)i, 7))
			return (void *)1;
	return NULL;
}

/*
 * The target as its own probe module: an in-process handler (run by the
 * agent in the probed thread) that forces probed_add() to return 42 at
 * once: rax = 42, rip = the return address, rsp past it. Integer code only.
 */
struct agent_ctx {
	uint32_t probe, tid;
	struct user_regs_struct *regs;
};

static int force_42(struct agent_ctx *ctx, void *data)
{
	struct user_regs_struct *r = ctx->regs;

	(void)data;
	r->rax = 42;
	r->rip = *(uint64_t *)r->rsp;
	r->rsp += 8;
	return 0;
}

/* Leaves a thread from inside probed frames: pthread_exit unwinds them. */
__attribute__((noinline)) int probed_exit(int depth, int max)
{
	volatile int d = depth;

	if (d >= max)
		pthread_exit((void *)42);
	return probed_exit(d + 1, max) + 1;
}

static void *exit_thread(void *arg)
{
	probed_exit(0, (int)(long)arg);
	return NULL;
}

static int spin_block;

static void *spin_thread(void *arg)
{
	long t = (long)arg;
	uint64_t i = 0;

	if (spin_block && t == 0) {
		sigset_t all;

		/* It cannot answer an upgrade broadcast: each one waits for the timeout. */
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
	}

	while (!stop) {
		pre_calls[t * 8]++;
		if (probed_add(i, (uint64_t)t) != ref_add(i, (uint64_t)t))
			return (void *)1;
		post_calls[t * 8]++;
		i++;
	}
	return NULL;
}

static int run_threads(int n, void *(*fn)(void *))
{
	pthread_t th[MAXT];
	int i, bad = 0;

	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, fn, (void *)(long)i);
	for (i = 0; i < n; i++) {
		void *r;

		pthread_join(th[i], &r);
		bad |= r != NULL;
	}
	return bad;
}

/*
 * probed_add(x, 1) called with rbp = @fake: what a -k stack walk starts
 * from in a caller built without frame pointers. The red zone is skipped
 * and the stack stays 16-byte aligned at the call.
 */
static uint64_t call_with_rbp(uint64_t fake, uint64_t x)
{
	uint64_t r = fake;

	__asm__ volatile("lea -136(%%rsp), %%rsp\n\t"
			 "push %%rbp\n\t"
			 "mov %%rax, %%rbp\n\t"
			 "mov $1, %%esi\n\t"
			 "call probed_add\n\t"
			 "pop %%rbp\n\t"
			 "lea 136(%%rsp), %%rsp"
			 : "+a"(r), "+D"(x)
			 :
			 : "rsi", "rdx", "rcx", "r8", "r9", "r10", "r11", "memory", "cc");
	return r;
}

static int bad_frame_pointers(long rounds)
{
	volatile uint64_t loop[2], chain[4], *heap = malloc(64);
	uint64_t sp = (uint64_t)__builtin_frame_address(0);

	if (!heap)
		return 1;
	for (long i = 0; i < rounds; i++) {
		uint64_t fakes[8] = {
			0,
			0x10,
			0xdead0000beefULL, /* unmapped */
			sp - 4096, /* below the stack pointer */
			(uint64_t)loop | 1, /* misaligned */
			(uint64_t)loop, /* a frame that points at itself */
			(uint64_t)chain, /* a frame whose next one is past the stack */
			(uint64_t)heap, /* mapped, not the stack */
		};

		loop[0] = (uint64_t)loop;
		loop[1] = (uint64_t)probed_add;
		chain[0] = ~0ULL - 15;
		chain[1] = (uint64_t)probed_add;
		heap[0] = (uint64_t)heap + 16;
		heap[1] = (uint64_t)probed_add;
		for (int k = 0; k < 8; k++)
			if (call_with_rbp(fakes[k], (uint64_t)(i + k)) !=
			    probed_add((uint64_t)(i + k), 1))
				return 1;
	}
	free((void *)heap);
	return 0;
}

/* bench: iters calls of probed_nop(); returns the time they took, in ps */
static void *bench_thread(void *arg)
{
	struct timespec t0, t1;

	(void)arg;
	for (long i = 0; i < iters / 10; i++) /* warm up */
		probed_nop();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < iters; i++)
		probed_nop();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (void *)(uintptr_t)(((t1.tv_sec - t0.tv_sec) * 1000000000LL +
				    (t1.tv_nsec - t0.tv_nsec)) *
				   1000);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long a1 = argc > 2 ? atol(argv[2]) : 0, a2 = argc > 3 ? atol(argv[3]) : 0;

	if (!strcmp(mode, "count")) {
		iters = a2;
		return run_threads((int)a1, count_thread);
	}
	if (!strcmp(mode, "flags")) {
		static const uint64_t v[] = { 0,
					      1,
					      2,
					      0x7f,
					      0x80,
					      0xff,
					      0x7fffffffffffffffULL,
					      0x8000000000000000ULL,
					      ~0ULL,
					      12345 };

		for (long r = 0; r < (a1 ?: 1); r++)
			for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++)
				for (unsigned j = 0; j < sizeof(v) / sizeof(v[0]); j++)
					if (probed_flags(v[i], v[j]) != plain_flags(v[i], v[j]))
						return 1;
		return 0;
	}
	if (!strcmp(mode, "sigblock")) {
		struct sigaction sa;
		pthread_t th;
		void *r;

		/* The application's own SIGTRAP handler, installed after the agent's. */
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = app_trap;
		sigaction(SIGTRAP, &sa, NULL);
		iters = a1;
		pthread_create(&th, NULL, blocked_thread, NULL);
		pthread_join(th, &r);
		raise(SIGTRAP); /* not a probe: chained to app_trap */
		return r != NULL || app_traps != 1;
	}
	if (!strcmp(mode, "badfp"))
		return bad_frame_pointers(a1);
	if (!strcmp(mode, "rawblock")) {
		pthread_t th;
		void *r;

		iters = a1;
		pthread_create(&th, NULL, rawblock_thread, NULL);
		pthread_join(th, &r);
		return r != NULL;
	}
	if (!strcmp(mode, "inject")) {
		int (*add_handler)(uint32_t, void *, void *, int) =
			(int (*)(uint32_t, void *, void *, int))dlsym(RTLD_DEFAULT,
								      "__utrace_agent_add_handler");
		long n = 0;

		if (!add_handler || add_handler(0, (void *)force_42, NULL, 0))
			return 5;
		for (long i = 0; i < a1; i++)
			n += probed_add((uint64_t)i, 1) == 42;
		return n != a1;
	}
	if (!strcmp(mode, "churn")) {
		/* a1 threads in all, 4 at a time, a2 calls each */
		iters = a2;
		for (long done = 0; done < a1; done += 4)
			if (run_threads(a1 - done < 4 ? (int)(a1 - done) : 4, count_thread))
				return 1;
		return 0;
	}
	if (!strcmp(mode, "pexit")) {
		for (long r = 0; r < a1; r++) {
			pthread_t th;
			void *ret;

			pthread_create(&th, NULL, exit_thread, (void *)a2);
			pthread_join(th, &ret);
			if (ret != (void *)42)
				return 1;
		}
		return probed_fib(10) != 55;
	}
	if (!strcmp(mode, "retval")) {
		uint64_t x = 1;

		for (long i = 0; i < a1; i++) {
			uint64_t r = x;

			for (int k = 0; k < 8; k++)
				r = r * 6364136223846793005ULL + 1442695040888963407ULL;
			if (probed_work(x) != r)
				return 1;
			x = r;
		}
		return 0;
	}
	if (!strcmp(mode, "recurse"))
		return probed_fib((uint64_t)a1) != ref_fib((uint64_t)a1);
	if (!strcmp(mode, "longjmp")) {
		for (long r = 0; r < a1; r++) {
			int v = setjmp(jb);

			if (!v) {
				probed_jump(0, (int)a2);
				return 2; /* not reached */
			}
			if (v != a2)
				return 3;
			/* Returns still work after the unwound frames. */
			if (probed_fib(10) != 55)
				return 4;
		}
		return 0;
	}
	if (!strcmp(mode, "malloc")) {
		iters = a2;
		return run_malloc((int)a1);
	}
	if (!strcmp(mode, "spin")) {
		pthread_t th[MAXT];
		char buf[16];
		int i, bad = 0;

		spin_block = argc > 3 && !strcmp(argv[3], "block");
		for (i = 0; i < a1; i++)
			pthread_create(&th[i], NULL, spin_thread, (void *)(long)i);
		printf("ready %p %p\n", (void *)pre_calls, (void *)post_calls);
		fflush(stdout);
		while (read(0, buf, sizeof(buf)) > 0)
			;
		stop = 1;
		for (i = 0; i < a1; i++) {
			void *r;

			pthread_join(th[i], &r);
			bad |= r != NULL;
		}
		return bad;
	}
	if (!strcmp(mode, "bench")) {
		pthread_t th[16];
		double worst = 0;
		long k, nt = a2 > 1 && a2 <= 16 ? a2 : 1;

		iters = a1;
		for (k = 1; k < nt; k++)
			pthread_create(&th[k], NULL, bench_thread, NULL);
		worst = (double)(uintptr_t)bench_thread(NULL);
		for (k = 1; k < nt; k++) {
			void *r;

			pthread_join(th[k], &r);
			if ((double)(uintptr_t)r > worst)
				worst = (double)(uintptr_t)r;
		}
		printf("%.3f\n", worst / 1000.0 / (double)a1);
		return 0;
	}
	if (!strcmp(mode, "fork")) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			for (int i = 0; i < 1000; i++)
				probed_add((uint64_t)i, 1);
			_exit(0);
		}
		waitpid(pid, &st, 0);
		for (int i = 0; i < 100; i++)
			probed_add((uint64_t)i, 1);
		return !WIFEXITED(st) || WEXITSTATUS(st);
	}
	fprintf(stderr, "usage: s-agent MODE ...\n");
	return 2;
}
