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
 *    exists: it is dropped and counted in its probe's @missed_ret. The
 *    check is limited to instances less than AGENT_STACK_SPAN below S so
 *    that a hit on another stack (a sigaltstack handler) does not purge the
 *    thread's main stack;
 *  - at a return to sp + 8, instances above the matching one are dropped
 *    the same way.
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
 * them), CET shadow stacks (not enabled on this kernel; refuse is left to
 * the host), and unwinders that read the hijacked address (backtrace()
 * sees the trampoline).
 *
 * Runs in the probed thread; no locks, no allocation.
 */
#include "agent-internal.h"

#define AGENT_STACK_SPAN (1ULL << 20)

static void drop(struct utrace_task *t)
{
	struct utrace_return_instance *ri = &t->ri[--t->depth];
	uint32_t id = agent_ri_probe(ri->func, agent_nr_probes);

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

	while (t->depth) {
		ri = &t->ri[t->depth - 1];
		if (ri->sp > s || s - ri->sp >= AGENT_STACK_SPAN)
			break;
		if (ri->sp == s && ret == tramp)
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
	int i;

	while (t->depth && t->ri[t->depth - 1].sp < s)
		drop(t);
	if (t->depth && t->ri[t->depth - 1].sp == s) {
		*ret_ri = t->ri[--t->depth];
		return ret_ri->orig_ret;
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
