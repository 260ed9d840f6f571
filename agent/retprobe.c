/* SPDX-License-Identifier: MIT */
/*
 * retprobe.c - return probes: hijacked return addresses and the per-thread
 * shadow stack of return instances.
 *
 * At an entry hit of a probe with UTRACE_PF_RETPROBE (a function entry:
 * [rsp] is the return address), the real return address is pushed on the
 * thread's stack of struct utrace_return_instance together with the address
 * of its slot (sp) and the entry time, and [rsp] is replaced with
 * __utrace_agent_ret_tramp. When the function returns, the trampoline finds
 * the instance whose sp is rsp - 8 and returns to the real address.
 *
 * Stale instances. longjmp, C++ exceptions and thread cancellation unwind
 * past hijacked frames without returning through them; their instances go
 * stale. The kernel's rule (arch_uretprobe_is_alive) applies, with the
 * stack pointer as the clock:
 *  - at an entry with return slot S, an instance with sp < S (or sp == S
 *    when [S] is not the trampoline) belongs to a frame that no longer
 *    exists: it is dropped and counted in its probe's @missed_ret;
 *  - at a return to sp + 8, instances above the matching one are dropped
 *    the same way.
 * That clock only runs on one stack. A signal handler on an alternate
 * stack (sigaltstack, SA_ONSTACK) that interrupted a hijacked function and
 * calls probed code pushes instances of another stack on top of the
 * interrupted ones; the altstack may be above or below the interrupted
 * stack, near it or not (an array in main()'s frame is just above the
 * frames of the functions main() calls). So before anything is dropped, the
 * thread's altstack is asked for (sigaltstack(NULL, &ss): a syscall, only
 * on this slow path: a plain entry finds the instance above it alive, a
 * plain return finds its own on top) and each instance is judged by the
 * stack it is on, against the stack of the hit (struct altstack):
 *  - same stack: the stack-pointer rule above;
 *  - the hit on the altstack, the instance not: the handler interrupted
 *    that frame, it is alive (and so is everything under it);
 *  - the hit off the altstack, the instance on it: the handler that made it
 *    is over (it returned, or left with siglongjmp()): dead.
 * Off the altstack, entries do not purge instances more than
 * AGENT_STACK_SPAN below S (a stack switched some other way, e.g. a
 * coroutine's).
 * Signals. A handler on any stack may run a hit while this thread is
 * between the trampoline and the pop of retprobe_return() (the return side
 * runs before the guard is taken): the pop copies the instance before it
 * lowers @depth, and sets @depth to the index it popped, so that the
 * handler's pushes go above it and whatever the handler left there (a
 * siglongjmp() out of its frames) goes with the pop.
 * Tail calls: a probed function entered by jmp from a hijacked one finds
 * the trampoline in [S] already; it gets a chained instance with the same
 * sp, and one return pops both (the kernel's @chained).
 * Depth: at most max_depth instances (the arena header, default 64); deeper
 * calls are not hijacked and count as @missed_ret.
 *
 * C++ exceptions and forced unwinds (pthread_cancel, pthread_exit): the
 * unwinder reads return addresses to find each frame's unwind info, and
 * the trampoline has none for the frame it stands in for. So, before it
 * walks the stack (the interposed _Unwind_RaiseException and
 * _Unwind_ForcedUnwind, interpose.c), retprobe_unwind_begin() writes every
 * hijacked return address back (only where the slot still holds the
 * trampoline: a stale slot reused by another frame is left alone) and drops
 * the thread's instances, counted in @missed_ret. Frames that the exception
 * does not unwind lose their return event; none loses its return address.
 * Injected (not preloaded), the agent cannot interpose these: the host
 * probes their entry points instead (UTRACE_PF_UNWIND, dispatch.c), and
 * the hit calls retprobe_unwind_begin() before the unwinder runs.
 *
 * Not handled: stacks switched by swapcontext/coroutines in the middle of
 * hijacked frames (instances stay until an entry on the same stack purges
 * them), an altstack changed by sigaltstack() while one of its handlers'
 * instances is still pending (it is then judged as an ordinary stack), CET shadow stacks (not enabled on this kernel; refuse is left to
 * the host), and unwinders that read the hijacked address (backtrace()
 * sees the trampoline).
 *
 * Runs in the probed thread; no locks, no allocation; the one syscall is
 * sigaltstack(), on the slow paths above.
 */
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent-internal.h"

#define AGENT_STACK_SPAN (1ULL << 20)

/* The thread's alternate signal stack, asked for once per slow path. */
struct altstack {
	int known; /* 0: not asked yet, 1: [lo, hi), -1: none (or disabled) */
	uint64_t lo, hi;
};

static bool on_alt(struct altstack *a, uint64_t sp)
{
	if (!a->known) {
		stack_t ss;

		/* raw: the return path runs outside the guard; libc's may be probed */
		a->known = -1;
		if (!raw_syscall6(SYS_sigaltstack, 0, (long)&ss, 0, 0, 0, 0) &&
		    !(ss.ss_flags & SS_DISABLE) && ss.ss_size) {
			a->lo = (uint64_t)ss.ss_sp;
			a->hi = a->lo + ss.ss_size;
			a->known = 1;
		}
	}
	return a->known > 0 && sp >= a->lo && sp < a->hi;
}

/*
 * Is the instance @ri, older than a hit with return slot @s, dead? Return:
 * 1 dead, 0 alive, -1 on the same stack as @s (the stack-pointer rule
 * decides).
 */
static int judge(struct altstack *a, const struct utrace_return_instance *ri, uint64_t s)
{
	bool s_alt = on_alt(a, s), ri_alt = on_alt(a, ri->sp);

	if (s_alt != ri_alt)
		return ri_alt; /* handler over: dead; interrupted frame: alive */
	return -1;
}

static void drop(struct utrace_task *t)
{
	uint32_t d = t->depth, id = agent_ri_probe(t->ri[d - 1].func, agent_nr_probes);

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->depth = d - 1;
	/* dormant: the arena is gone (agent.c), and no one counts */
	if (id != UINT32_MAX && agent_active)
		__atomic_fetch_add(&agent_probes[id].abi->missed_ret, 1, __ATOMIC_RELAXED);
}

/**
 * retprobe_entry - hijack the return address of an entry hit
 * @t: the thread (guard held); @p: the probe; @regs: rsp -> return address
 * @now: entry time in ns, or 0
 */
void retprobe_entry(struct utrace_task *t, struct utrace_probe *p, utrace_regs_t *regs,
		    uint64_t now)
{
	uint64_t s = regs->rsp, ret = *(uint64_t *)s, tramp = (uint64_t)__utrace_agent_ret_tramp;
	struct utrace_return_instance *ri;
	bool chained = false;

	struct altstack alt = { 0 };
	int dead;

	while (t->depth) {
		ri = &t->ri[t->depth - 1];
		if (ri->sp > s)
			break; /* the caller's (or a stale one of an altstack above) */
		if (ri->sp == s && ret == tramp)
			break;
		/* the slow path: something looks stale */
		dead = judge(&alt, ri, s);
		if (dead < 0)
			dead = s - ri->sp < AGENT_STACK_SPAN; /* far below: another stack's */
		if (!dead)
			break;
		drop(t);
	}
	if (ret == tramp) {
		/* A tail call out of a hijacked function: share its instance. */
		if (!t->depth || t->ri[t->depth - 1].sp != s) {
			__atomic_fetch_add(&p->abi->missed_ret, 1, __ATOMIC_RELAXED);
			return;
		}
		ret = t->ri[t->depth - 1].orig_ret;
		chained = true;
	}
	if (t->depth >= t->max_depth) {
		__atomic_fetch_add(&p->abi->missed_ret, 1, __ATOMIC_RELAXED);
		return;
	}
	ri = &t->ri[t->depth];
	ri->func = agent_ri_func(p->id);
	ri->sp = s;
	ri->orig_ret = ret;
	ri->entry_ns = now;
	ri->chained = chained;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->depth++; /* visible before the hijack: a signal in between finds it */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*(uint64_t *)s = tramp;
}

/**
 * retprobe_return - pop the instance of a return through the trampoline
 * @t: the thread; @regs: rsp = the returning frame's sp + 8
 * @ret_ri: receives the popped instance
 *
 * Return: the real return address. The instance must exist (only a
 * hijacked return leads here); if an unwinder-confused stack lost it, the
 * newest instance with the same sp among the popped ones is used.
 */
uint64_t retprobe_return(struct utrace_task *t, utrace_regs_t *regs,
			 struct utrace_return_instance *ret_ri)
{
	uint64_t s = regs->rsp - 8;
	struct altstack alt = { 0 };
	uint32_t d;
	int i, dead;

	for (;;) {
		d = t->depth;
		if (!d)
			break;
		if (t->ri[d - 1].sp == s) {
			/* copy, then pop: a handler's push goes above it meanwhile */
			*ret_ri = t->ri[d - 1];
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			t->depth = d - 1;
			return ret_ri->orig_ret;
		}
		/* the slow path: frames unwound past, or another stack's */
		dead = judge(&alt, &t->ri[d - 1], s);
		if (dead < 0)
			dead = t->ri[d - 1].sp < s;
		if (!dead)
			break;
		drop(t);
	}
	/* Should not happen; the popped entries are still in the array. */
	for (i = (int)t->max_depth - 1; i >= 0; i--) {
		if (t->ri[i].sp == s && t->ri[i].orig_ret) {
			*ret_ri = t->ri[i];
			ret_ri->chained = false;
			ret_ri->func = UINT64_MAX;
			return ret_ri->orig_ret;
		}
	}
	ret_ri->func = UINT64_MAX;
	ret_ri->chained = false;
	return 0;
}

/**
 * retprobe_unwind_begin - an unwinder is about to walk the calling thread's
 * stack: put every hijacked return address back, drop the instances
 *
 * Runs in the throwing thread: from the interposers (interpose.c, outside
 * any hit), or from the hit of an unwinder guard probe (dispatch.c, guard
 * held; the function's own frame has no hijacked return address yet).
 */
void retprobe_unwind_begin(void)
{
	struct utrace_task *t = utrace_tls_task;
	uint64_t tramp = (uint64_t)__utrace_agent_ret_tramp;

	if (!t || !t->ri)
		return;
	while (t->depth) {
		struct utrace_return_instance *ri = &t->ri[t->depth - 1];

		if (!ri->chained && *(volatile uint64_t *)ri->sp == tramp)
			*(volatile uint64_t *)ri->sp = ri->orig_ret;
		drop(t);
	}
}
