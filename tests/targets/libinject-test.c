/* SPDX-License-Identifier: MIT */
/*
 * libinject-test.so - the object test-inject.c loads into targets. Its
 * init records its argument, counts its calls and those of its
 * constructor, and writes a marker into the arena it is given, so that the
 * tracer can check from its own mapping that everything ran exactly once
 * in the right process. It uses malloc, stdio and SSE on purpose: a remote
 * call that did not restore the thread, or ran on a misaligned stack,
 * shows up in the target afterwards.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inject-test.h"

#define EXPORT __attribute__((visibility("default")))

static volatile uint64_t ctor_calls, init_calls;
EXPORT uint64_t inject_test_arg;
static struct inject_test_marker *last_arena;

__attribute__((constructor)) static void ctor(void)
{
	ctor_calls++;
}

/* The init function (utrace_inject_init_fn_t). */
EXPORT int inject_test_init(int arena_fd, unsigned int flags, uint64_t arg)
{
	struct inject_test_marker *m;
	volatile double d = 1.0;
	uint64_t arena_size;
	struct stat st;
	char *heap;
	void *p;
	int i;

	init_calls++;
	inject_test_arg = arg;
	if (arena_fd < 0 || fstat(arena_fd, &st) < 0 || (size_t)st.st_size < sizeof(*m))
		return -EINVAL;
	arena_size = (uint64_t)st.st_size;
	p = mmap(NULL, arena_size, PROT_READ | PROT_WRITE, MAP_SHARED, arena_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	close(arena_fd);
	m = p;
	last_arena = m;
	if (m->host_cookie != INJECT_TEST_COOKIE)
		return -EPROTO; /* prepare_arena() did not run first */
	m->flags = flags;
	heap = malloc(100000); /* large: the arena lock, not the tcache */
	if (!heap)
		return -ENOMEM;
	for (i = 0; i < 10; i++)
		d = d * 1.5; /* SSE: needs an aligned stack in practice */
	snprintf(m->text, sizeof(m->text), "pid %d arg %llu d %.1f", getpid(),
		 (unsigned long long)arg, d);
	free(heap);
	m->arg = arg;
	m->pid = getpid();
	m->tid = gettid();
	m->init_calls = init_calls;
	m->ctor_calls = ctor_calls;
	m->arena_size = arena_size;
	__atomic_store_n(&m->magic, INJECT_TEST_MAGIC, __ATOMIC_RELEASE);
	return 42;
}

static void *agent_thread(void *arg)
{
	struct inject_test_marker *m = arg;
	sigset_t set;
	uint64_t bits = 0;
	int sig;

	pthread_sigmask(SIG_BLOCK, NULL, &set);
	for (sig = 1; sig <= 64; sig++)
		if (sigismember(&set, sig) == 1)
			bits |= 1ULL << (sig - 1);
	m->thread_sigblk = bits;
	__atomic_store_n(&m->thread_tid, gettid(), __ATOMIC_RELEASE);
	for (;;) {
		struct timespec ts = { 0, 1000 * 1000 };

		__atomic_add_fetch(&m->thread_ticks, 1, __ATOMIC_RELAXED);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/*
 * An init that starts a thread with the default attributes, as an agent
 * would, and waits until it runs: the thread must be able to start while
 * the tracer is still inside the remote call.
 */
EXPORT int inject_test_init_thread(int arena_fd, unsigned int flags, uint64_t arg)
{
	struct inject_test_marker *m;
	pthread_t th;
	int r;
	int i;

	r = inject_test_init(arena_fd, flags, arg);
	if (r < 0)
		return r;
	m = last_arena;
	if (pthread_create(&th, NULL, agent_thread, m))
		return -EAGAIN;
	pthread_detach(th);
	for (i = 0; i < 2000 && !__atomic_load_n(&m->thread_tid, __ATOMIC_ACQUIRE); i++) {
		struct timespec ts = { 0, 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	return m->thread_tid ? r : -ETIMEDOUT;
}

/*
 * The same, but returning at once, as the agent's init does: the thread's
 * clone event and first stop may come while the tracer is still inside the
 * remote call, or after it returned, or as it detaches. Either way the
 * tracer must see both before it detaches, or the thread is left stopped.
 */
EXPORT int inject_test_init_thread_nowait(int arena_fd, unsigned int flags, uint64_t arg)
{
	pthread_t th;
	int r;

	r = inject_test_init(arena_fd, flags, arg);
	if (r < 0)
		return r;
	if (pthread_create(&th, NULL, agent_thread, last_arena))
		return -EAGAIN;
	pthread_detach(th);
	return r;
}

/*
 * A slow init (about 400 ms of work, no syscalls: clock_gettime is the
 * vdso's) that uses the vector registers all along: the tracer is killed
 * while it runs, and the thread must come back by itself with its own
 * registers, xstate and mask, its interrupted syscall restarted.
 */
EXPORT int inject_test_init_slow(int arena_fd, unsigned int flags, uint64_t arg)
{
	volatile double d = 1.0;
	struct timespec a, b;
	int r;

	r = inject_test_init(arena_fd, flags, arg);
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
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < 400);
	return r;
}

/*
 * An init that outlasts the tracer's remote-call timeout: nanosleep(@arg
 * ms) (a syscall of the callee that the tracer's stop interrupts) with the
 * vector registers clobbered before and after. The tracer gives up and
 * leaves it to finish on its own; the thread must come back by itself.
 */
EXPORT int inject_test_init_sleep(int arena_fd, unsigned int flags, uint64_t arg)
{
	struct timespec ts = { (time_t)(arg / 1000), (long)(arg % 1000) * 1000000L };
	int r;

	r = inject_test_init(arena_fd, flags, arg);
	__asm__ volatile("pcmpeqd %%xmm0, %%xmm0\n\tpcmpeqd %%xmm1, %%xmm1" ::: "xmm0", "xmm1");
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	__asm__ volatile("pcmpeqd %%xmm2, %%xmm2\n\tpcmpeqd %%xmm3, %%xmm3" ::: "xmm2", "xmm3");
	if (r >= 0)
		__atomic_store_n(&last_arena->late_done, arg, __ATOMIC_RELEASE);
	return r;
}

/* An init that fails: the injection must undo everything. */
EXPORT int inject_test_init_fail(int arena_fd, unsigned int flags, uint64_t arg)
{
	init_calls++;
	return -EPERM;
}

/* An init that crashes (reads address 16). */
static volatile uintptr_t crash_addr = 16;

EXPORT int inject_test_init_crash(int arena_fd, unsigned int flags, uint64_t arg)
{
	return (int)*(volatile long *)crash_addr;
}
