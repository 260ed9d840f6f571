/* SPDX-License-Identifier: MIT */
/*
 * guard.c - per-thread state and the reentrancy guard.
 *
 * One initial-exec TLS pointer per thread (no TLS first-touch malloc, unlike
 * the general-dynamic model: jemalloc#937). The struct utrace_task it points
 * to is created at the thread's first hit, with its thread slot in the arena
 * (ring + counters): a slot released by an exited thread is reused first
 * (CAS state FREE -> USED), else a new one is claimed by an atomic
 * increment. A reused slot keeps its counters and ring indices (the host
 * sums slots; its tid changes). A pthread key destructor releases the slot
 * at thread exit; the task memory itself is not freed (a later destructor
 * may still hit a probe). A thread that finds no slot still counts its hits
 * (atomic adds into the probe's hits_shared) and drops its records.
 *
 * The guard: a hit while the thread is already inside the agent (a probe on
 * malloc or memcpy reached from a handler, a signal handler that interrupts
 * a handler and hits a probe) runs no handler: the displaced instructions
 * still execute, the probe's @nested counter is bumped.
 *
 * Runs in the probed thread, async-signal-safe, no locks.
 */
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent-internal.h"

__thread struct utrace_task *utrace_tls_task __attribute__((tls_model("initial-exec")));

/* Raw: called in signal handlers and at a thread's first hit (agent-internal.h). */
uint32_t guard_gettid(void)
{
	return (uint32_t)raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

#include <pthread.h>

#define SLOT_USED 1
#define SLOT_FREE 2

static pthread_key_t exit_key;
static bool have_exit_key;

/*
 * A thread that is making its task (task_new()): the first hit maps memory
 * and claims a slot before the guard exists. Seen by guard_busy().
 */
static __thread int task_creating __attribute__((tls_model("initial-exec")));
/*
 * task_creating counts the task_new()s of the thread in its low 16 bits
 * and its guard_hold()s from CREATING_HOLD up: a hit while only task_new()
 * runs is the program's (task_new() calls no libc function before the task
 * is the thread's; guard_making_task()), under a hold it is the agent's.
 */
#define CREATING_HOLD 0x10000

/*
 * Thread exit (pthread key destructor). Only a slot of the running session
 * is released: an earlier session's arena is gone (agent.c), and the same
 * offset of the next one is another thread's slot.
 */
static void task_exit(void *arg)
{
	struct utrace_task *t = arg;

	if (t && t->slot && utrace_tls_task == t && agent_active &&
	    t->gen == __atomic_load_n(&agent_gen, __ATOMIC_ACQUIRE)) {
		utrace_tls_task = NULL;
		__atomic_store_n(&t->slot->state, SLOT_FREE, __ATOMIC_RELEASE);
	}
}

/**
 * guard_release_all - after an execve(): no thread of the old image is
 * left, so every slot it held is free again (rings and counters kept: the
 * host may still be reading them). Control thread, before any hit.
 */
void guard_release_all(void)
{
	uint64_t i, n = __atomic_load_n(&agent_hdr->nr_threads, __ATOMIC_ACQUIRE);

	if (n > agent_layout.max_threads)
		n = agent_layout.max_threads;
	for (i = 0; i < n; i++) {
		struct utrace_abi_thread *s = agent_abi_thread((uint32_t)i);

		if (__atomic_load_n(&s->state, __ATOMIC_RELAXED) == SLOT_USED)
			__atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_RELEASE);
	}
}

/** guard_init - the thread-exit hook that releases slots (agent start). */
void guard_init(void)
{
	have_exit_key = pthread_key_create(&exit_key, task_exit) == 0;
}

static struct utrace_abi_thread *slot_reuse(struct utrace_arena_hdr *h, uint32_t *ret_i)
{
	uint64_t i, n = __atomic_load_n(&h->nr_threads, __ATOMIC_ACQUIRE);

	if (n > agent_layout.max_threads)
		n = agent_layout.max_threads;
	for (i = 0; i < n; i++) {
		struct utrace_abi_thread *s = agent_abi_thread((uint32_t)i);
		uint32_t st = SLOT_FREE;

		if (__atomic_load_n(&s->state, __ATOMIC_RELAXED) == SLOT_FREE &&
		    __atomic_compare_exchange_n(&s->state, &st, SLOT_USED, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			*ret_i = (uint32_t)i;
			return s;
		}
	}
	return NULL;
}

/*
 * Give @t a slot of the current session's arena (none if it is full). A
 * task made in an earlier session comes here again at its first hit in
 * this one (guard_enter()): its old slot stays in the old arena, which the
 * agent never unmaps (a thread may be between reading and writing it).
 */
static void task_claim(struct utrace_task *t)
{
	uint32_t gen = __atomic_load_n(&agent_gen, __ATOMIC_ACQUIRE);
	struct utrace_arena_hdr *h = agent_hdr;
	uint64_t n;

	t->slot = NULL;
	t->hits = NULL;
	t->cells = NULL;
	t->ring = NULL;
	t->gen = gen;
	if (!agent_active) {
		/*
		 * Dormant (a return through the trampoline made this task), or
		 * the next session is not started yet: agent_hdr is no arena to
		 * claim in. Claim again at the next hit.
		 */
		t->gen = gen - 1;
		return;
	}
	if (h) {
		uint32_t i = 0;
		struct utrace_abi_thread *s = slot_reuse(h, &i);

		if (!s) {
			n = __atomic_fetch_add(&h->nr_threads, 1, __ATOMIC_RELAXED);
			if (n < agent_layout.max_threads) {
				i = (uint32_t)n;
				s = agent_abi_thread(i);
			} else {
				__atomic_fetch_add(&h->thread_overflow, 1, __ATOMIC_RELAXED);
			}
		}
		if (s) {
			t->slot = s;
			t->hits = utrace_abi_hits(s);
			t->cells = utrace_abi_cells(s, agent_layout.max_probes);
			t->ring = agent_abi_ring(i);
			__atomic_store_n(&s->tid, t->tid, __ATOMIC_RELAXED);
			__atomic_store_n(&s->state, SLOT_USED, __ATOMIC_RELEASE);
		}
	}
}

#define SIGBIT(s) (1ull << ((s)-1))

/*
 * own_block_signals - hold off the program's asynchronous signals while
 * the thread runs libc code for the agent under GUARD_OWN at the making
 * or first claim of its task (the exit key's pthread_setspecific()). A
 * handler of the program that ran there would hit its probes under
 * GUARD_OWN, where a hit is the agent's call: the handler's calls would be
 * neither shown nor counted (test-altstack: about one launch in 1,500
 * lost a SIGALRM handler's three calls so). Held off, the signal runs its
 * handler a few hundred nanoseconds later, after the guard is down. The
 * faults stay deliverable: the int3 of a probe on pthread_setspecific()
 * itself, a bad access (blocked, the kernel kills the process on them).
 * Raw rt_sigprocmask(): libc's is interposed and may be probed. Probed
 * thread, once per thread and session. Return: the mask to restore.
 */
static uint64_t own_block_signals(void)
{
	uint64_t set = ~(SIGBIT(SIGTRAP) | SIGBIT(SIGSEGV) | SIGBIT(SIGBUS) | SIGBIT(SIGILL) |
			 SIGBIT(SIGFPE) | SIGBIT(SIGSYS)),
		 old = 0;

	if (raw_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&set, (long)&old, sizeof(set), 0, 0))
		return ~0ull; /* nothing blocked: nothing to restore */
	return old;
}

static void own_restore_signals(uint64_t old)
{
	if (old != ~0ull)
		raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, sizeof(old), 0, 0);
}

static struct utrace_task *task_new(void)
{
	uint32_t depth = agent_layout.max_depth ?: AGENT_DEF_DEPTH;
	struct utrace_task *t;
	uint64_t mask;

	if (depth > AGENT_MAX_DEPTH)
		depth = AGENT_MAX_DEPTH;
	task_creating++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t = utrace_alloc(sizeof(*t) + depth * sizeof(struct utrace_return_instance));
	if (t) {
		t->tid = guard_gettid();
		t->max_depth = depth;
		t->ri = (struct utrace_return_instance *)(t + 1);
		task_claim(t);
		/*
		 * May allocate (keys >= 32), and is probed itself: its hits
		 * are nested; the program's signals wait (own_block_signals()).
		 */
		mask = own_block_signals();
		t->guard = GUARD_OWN;
		utrace_tls_task = t;
		if (t->slot && have_exit_key)
			pthread_setspecific(exit_key, t);
		t->guard = 0;
		own_restore_signals(mask);
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	task_creating--;
	return t;
}

/**
 * guard_task - the calling thread's task, created on first use
 *
 * Return: the task, or NULL if its memory could not be mapped.
 */
struct utrace_task *guard_task(void)
{
	struct utrace_task *t = utrace_tls_task;

	return t ? t : task_new();
}

/**
 * guard_enter - take the reentrancy guard of the calling thread
 *
 * Return: the task with the guard held, or NULL when the thread is already
 * inside the agent (or cloaked, or has no task): run no handler then.
 */
struct utrace_task *guard_enter(void)
{
	struct utrace_task *t = utrace_tls_task;

	if (__builtin_expect(!t, 0)) {
		/* The first hit maps memory: guard it against hits in mmap's path. */
		if (task_creating)
			return NULL;
		t = task_new();
		if (!t)
			return NULL;
	}
	if (t->guard || t->state == UTRACE_TASK_CLOAKED)
		return NULL;
	t->guard = GUARD_HIT;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__builtin_expect(t->gen != __atomic_load_n(&agent_gen, __ATOMIC_ACQUIRE), 0)) {
		/*
		 * First hit in a new session; setspecific may allocate: the
		 * agent's calls, with the program's signals held off.
		 */
		uint64_t mask = own_block_signals();

		t->guard = GUARD_OWN;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		task_claim(t);
		if (t->slot && have_exit_key)
			pthread_setspecific(exit_key, t);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->guard = GUARD_HIT;
		own_restore_signals(mask);
	}
	return t;
}

/** guard_leave - release the guard taken by guard_enter(). */
void guard_leave(struct utrace_task *t)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->guard = 0;
}

/**
 * guard_hold - the calling thread runs the agent's own code outside a hit
 * (an interposer, the fork child's handler): until guard_unhold(), its
 * hits of probes run no handler and count only as @nested. Unlike
 * guard_enter(), it makes no task and claims no slot (a fork child must
 * not claim one in its parent's arena).
 *
 * Any program thread. Return: what guard_unhold() restores.
 */
int guard_hold(void)
{
	struct utrace_task *t = utrace_tls_task;
	int was = t ? t->guard : 0;

	task_creating += CREATING_HOLD; /* a thread without a task: guard_enter() makes none */
	if (t && t->state != UTRACE_TASK_CLOAKED)
		t->guard = GUARD_OWN; /* a thread with one: the thunk's fast path sees it too */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return was;
}

/** guard_unhold - end a guard_hold() that returned @was. */
void guard_unhold(int was)
{
	struct utrace_task *t = utrace_tls_task;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (t && t->state != UTRACE_TASK_CLOAKED)
		t->guard = was;
	task_creating -= CREATING_HOLD;
}

/**
 * guard_making_task - the calling thread is inside its first hit's
 * task_new(), outside any hold: a hit now came from a signal handler of
 * the program (dispatch.c nested_hit() counts it).
 */
bool guard_making_task(void)
{
	return (task_creating & (CREATING_HOLD - 1)) && task_creating < CREATING_HOLD;
}

/**
 * guard_busy - is the calling thread inside the agent where its program
 * counter may not show it: under the guard (a module's handler, a libc
 * call of a handler) or making its task
 *
 * The thread's own signal handler (patch_quiesce()'s broadcast).
 */
bool guard_busy(void)
{
	struct utrace_task *t = utrace_tls_task;

	return task_creating || (t && t->guard);
}

/*
 * The task of every control thread. One for all, in .bss: each session
 * starts a control thread, and a page mapped for each would stay for
 * ever. Nothing writes it after this (a cloaked thread takes no guard,
 * hijacks no return), so two control threads (one ending while the next
 * starts, or a fork child's) can share it.
 */
static struct utrace_task cloak_task = { .state = UTRACE_TASK_CLOAKED };

/** guard_cloak_self - the calling thread is the agent's: its hits run no handler. */
void guard_cloak_self(void)
{
	utrace_tls_task = &cloak_task;
}
