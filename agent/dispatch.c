/* SPDX-License-Identifier: MIT */
/*
 * dispatch.c - what a hit does: the handlers of a probe, in registration
 * order (built-in ones from the probe's flags first, then in-process ones
 * added with __utrace_agent_add_handler()), under the thread's reentrancy
 * guard. The built-in order: count, stack walk (-k), entry record (with the
 * stack), in-process handlers, injection (--inject: after the handlers, so
 * that one that moved rip wins), return-address hijack (not for an
 * injected call: it never runs).
 *
 * Runs in the probed thread: from the trampoline thunk (jmp mode) or from
 * the SIGTRAP handler (int3 mode). No malloc, locks, stdio or syscalls
 * (a thread's first hit maps its task: guard.c; its first -k hit reads its
 * stack range: stack.c).
 */
#include "agent-internal.h"
#include "arch/x86_64/offsets.h"

/* entry.S's counting fast path reads these */
_Static_assert(sizeof(struct utrace_probe) == AO_PROBE_SIZE, "offsets.h");
_Static_assert(offsetof(struct utrace_probe, flags) == AO_PROBE_FLAGS, "offsets.h");
_Static_assert(offsetof(struct utrace_probe, state) == AO_PROBE_STATE, "offsets.h");
_Static_assert(offsetof(struct utrace_probe, nr_handlers) == AO_PROBE_NR_HANDLERS, "offsets.h");
_Static_assert(offsetof(struct utrace_task, guard) == AO_TASK_GUARD, "offsets.h");
_Static_assert(offsetof(struct utrace_task, gen) == AO_TASK_GEN, "offsets.h");
_Static_assert(offsetof(struct utrace_task, hits) == AO_TASK_HITS, "offsets.h");
_Static_assert(UTRACE_PF_COUNT == AO_PF_COUNT && UTRACE_PF_ENTRY == AO_PF_ENTRY &&
		       UTRACE_PS_INT3 == AO_PS_INT3 && UTRACE_PS_JMP == AO_PS_INT3 + 1,
	       "offsets.h");

static inline void count_hit(struct utrace_task *t, struct utrace_probe *p)
{
	if (__builtin_expect(t->hits != NULL, 1)) {
		count_inc(&t->hits[p->id]);
	} else {
		__atomic_fetch_add(&p->abi->hits_shared, 1, __ATOMIC_RELAXED);
	}
}

/*
 * nested_hit - a hit of @p while its thread holds the guard: no handler
 * runs (@nested). Under a hit's dispatch (GUARD_HIT, guard.c) the call is
 * the program's: a signal handler of the program interrupted the dispatch
 * (whose built-in actions call no libc function) and called @p; it is
 * counted, so that -c stays exact under signals. Under the agent's own
 * code (GUARD_OWN) it is the agent's call: not counted.
 */
static void nested_hit(struct utrace_probe *p)
{
	struct utrace_task *t = utrace_tls_task;

	__atomic_fetch_add(&p->abi->nested, 1, __ATOMIC_RELAXED);
	if (!t && guard_making_task()) {
		/* the thread's first hit is making its task: no slot yet */
		__atomic_fetch_add(&p->abi->nested_calls, 1, __ATOMIC_RELAXED);
		if (p->flags & UTRACE_PF_COUNT)
			__atomic_fetch_add(&p->abi->hits_shared, 1, __ATOMIC_RELAXED);
		return;
	}
	if (!t || t->guard != GUARD_HIT || t->gen != __atomic_load_n(&agent_gen, __ATOMIC_RELAXED))
		return;
	__atomic_fetch_add(&p->abi->nested_calls, 1, __ATOMIC_RELAXED); /* said at the end */
	if (p->flags & UTRACE_PF_COUNT)
		count_hit(t, p);
}

/*
 * run_handler - an in-process handler (a C probe module's) under
 * GUARD_OWN: the libc calls it makes are the tool's, not the program's.
 */
static void run_handler(struct utrace_task *t, struct utrace_handler *h,
			struct utrace_agent_ctx *ctx)
{
	t->guard = GUARD_OWN;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	h->fn(ctx, h->data);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->guard = GUARD_HIT;
}

/*
 * A record with the caller stack (-k): the frame-pointer walk's return
 * addresses, and (ABI 12) the registers and the top of the stack for the
 * host's CFI unwinder. Out of line: the 320 bytes of addresses and
 * registers are on the probed thread's stack only for -k probes (a hit
 * may run on a small sigaltstack); the stack's bytes go straight from the
 * stack into the ring, never through a buffer here.
 */
static __attribute__((noinline)) void emit_with_stack(struct utrace_task *t, struct utrace_probe *p,
						      uint16_t kind, uint64_t now,
						      const utrace_regs_t *regs,
						      const uint64_t *args)
{
	uint64_t pcs[UTRACE_ABI_STACK_MAX], top;
	unsigned int n = stack_walk(t, regs, p->flags & UTRACE_PF_ENTRY, pcs, &top);
	uint64_t want = agent_layout.stack_dump;
	struct ring_stack_copy sc = {
		.regs = { regs->rip, regs->rsp, regs->rbp, regs->rbx, regs->r12, regs->r13,
			  regs->r14, regs->r15 },
	};

	/*
	 * The copy for the host's CFI unwinder: the readable bytes above rsp
	 * that stack_walk() bounded, as many as the host asked for.
	 */
	if (want > UTRACE_ABI_STACK_DUMP_MAX)
		want = UTRACE_ABI_STACK_DUMP_MAX;
	sc.len = top - regs->rsp < want ? top - regs->rsp : want;
	ring_emit_group(t, p->id, kind, now, 0, args, UTRACE_ABI_ARGS, p->abi->str_args,
			p->abi->str_max, pcs, n, want ? &sc : NULL);
}

/*
 * cell_of - the calling thread's timing cell of @p (struct utrace_abi_cell),
 * taken at its first use; NULL if the thread has no slot or the cell
 * belongs to another probe (the figures then go to the shared atomics).
 * Probed thread, under the guard: the only writer of its cells.
 */
static inline struct utrace_abi_cell *cell_of(struct utrace_task *t, const struct utrace_probe *p)
{
	struct utrace_abi_cell *c;

	if (__builtin_expect(!t->cells, 0))
		return NULL;
	c = &t->cells[p->id & (UTRACE_ABI_CELLS - 1)];
	if (__builtin_expect(c->probe == p->id + 1, 1))
		return c;
	if (c->probe)
		return NULL;
	__atomic_store_n(&c->probe, p->id + 1, __ATOMIC_RELEASE);
	return c;
}

/*
 * account - one timed call of @p for -c and -H: its log2 bucket, and the
 * exact total, minimum, maximum and error count beside it. Probed thread,
 * under the guard. Into the thread's cell @c: single-writer adds and
 * stores, no lock prefix. Without a cell, into the probe's shared figures,
 * lock-free: min and max retry a compare-and-swap only while the call is
 * a new extreme (rarely, once the run warms up).
 */
static void account(struct utrace_abi_cell *c, struct utrace_abi_probe *a, uint64_t dur,
		    uint64_t rax)
{
	uint64_t cur;

	if (__builtin_expect(c != NULL, 1)) {
		count_inc(&c->hist[utrace_abi_hist_bucket(dur)]);
		count_add(&c->sum_ns, dur);
		if (~dur > c->min_inv)
			__atomic_store_n(&c->min_inv, ~dur, __ATOMIC_RELAXED);
		if (dur > c->max_ns)
			__atomic_store_n(&c->max_ns, dur, __ATOMIC_RELAXED);
		if (a->err_kind && utrace_abi_is_error(a->err_kind, rax))
			count_inc(&c->errors);
		return;
	}
	__atomic_fetch_add(&a->hist[utrace_abi_hist_bucket(dur)], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&a->sum_ns, dur, __ATOMIC_RELAXED);
	cur = __atomic_load_n(&a->min_inv, __ATOMIC_RELAXED);
	while (~dur > cur && !__atomic_compare_exchange_n(&a->min_inv, &cur, ~dur, true,
							  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	cur = __atomic_load_n(&a->max_ns, __ATOMIC_RELAXED);
	while (dur > cur && !__atomic_compare_exchange_n(&a->max_ns, &cur, dur, true,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	if (a->err_kind && utrace_abi_is_error(a->err_kind, rax))
		__atomic_fetch_add(&a->errors, 1, __ATOMIC_RELAXED);
}

/*
 * --inject: every inject_every-th call of @p returns inject_value at once.
 * The calls are counted in the arena with one atomic add, so "every Nth"
 * is exact over all threads. The call is recorded first (one INJECT
 * record: its arguments, and its stack when no entry record carried it),
 * then returned from: rax = value, rip = the return address at [rsp], rsp
 * past it (the thunk and the SIGTRAP handler both resume there, see
 * utrace_dispatch_entry). With HIST it counts as a 0 ns call.
 */
static void inject(struct utrace_task *t, struct utrace_probe *p, utrace_regs_t *regs, uint64_t now,
		   const uint64_t *args)
{
	uint64_t n = __atomic_add_fetch(&p->abi->inject_calls, 1, __ATOMIC_RELAXED);
	uint32_t flags = p->flags;

	if (n % p->inject_every)
		return;
	if (flags & (UTRACE_PF_RECORD_ENTRY | UTRACE_PF_RECORD_RETURN)) {
		if (!now)
			now = ring_now_ns();
		if ((flags & (UTRACE_PF_STACK | UTRACE_PF_RECORD_ENTRY)) == UTRACE_PF_STACK)
			emit_with_stack(t, p, UTRACE_EV_INJECT, now, regs, args);
		else
			ring_emit_group(t, p->id, UTRACE_EV_INJECT, now, 0, args, UTRACE_ABI_ARGS,
					p->abi->str_args, p->abi->str_max, NULL, 0, NULL);
	}
	if (flags & UTRACE_PF_HIST)
		account(cell_of(t, p), p->abi, 0, p->inject_value);
	regs->rax = p->inject_value;
	regs->rip = *(uint64_t *)regs->rsp;
	regs->rsp += 8;
}

/**
 * dispatch_hit - run the handlers of @p for an entry hit
 * @p: the probe; @regs: the thread's registers, regs->rip = the site
 *
 * Return: 0 to run the displaced instructions; 1 if a handler moved rip;
 * 2 if it moved rip and rsp.
 */
int dispatch_hit(struct utrace_probe *p, utrace_regs_t *regs)
{
	uint64_t rip0 = regs->rip, rsp0 = regs->rsp, now = 0;
	uint64_t args[UTRACE_ABI_ARGS] = { regs->rdi, regs->rsi, regs->rdx,
					   regs->rcx, regs->r8,	 regs->r9 };
	struct utrace_task *t;
	uint32_t flags = p->flags;
	unsigned int i, nr;

	if (__builtin_expect(
		    !agent_active || (p->state != UTRACE_PS_INT3 && p->state != UTRACE_PS_JMP), 0))
		return 0; /* late hit of a disarmed probe, or dormant */
	t = guard_enter();
	if (!t) {
		nested_hit(p);
		return 0;
	}
	if (__builtin_expect(flags & UTRACE_PF_UNWIND, 0))
		retprobe_unwind_begin(); /* before the unwinder reads the frames */
	if (flags & UTRACE_PF_COUNT)
		count_hit(t, p);
	if (flags & (UTRACE_PF_RECORD_ENTRY | UTRACE_PF_RECORD_RETURN | UTRACE_PF_HIST))
		now = ring_now_ns();
	if (flags & UTRACE_PF_RECORD_ENTRY) {
		if (flags & UTRACE_PF_STACK)
			emit_with_stack(t, p, UTRACE_EV_ENTRY, now, regs, args);
		else if (p->abi->str_args) /* strings copied now: later they may be gone */
			ring_emit_group(t, p->id, UTRACE_EV_ENTRY, now, 0, args, UTRACE_ABI_ARGS,
					p->abi->str_args, p->abi->str_max, NULL, 0, NULL);
		else
			ring_emit(t, p->id, UTRACE_EV_ENTRY, now, 0, args, UTRACE_ABI_ARGS);
	}
	nr = __atomic_load_n(&p->nr_handlers, __ATOMIC_ACQUIRE);
	for (i = 0; i < nr; i++) {
		struct utrace_handler *h = &p->handlers[i];
		struct utrace_agent_ctx ctx = {
			.probe = p->id,
			.tid = t->tid,
			.regs = regs,
			.depth = t->depth,
		};

		if (!h->on_return)
			run_handler(t, h, &ctx);
	}
	if ((flags & (UTRACE_PF_INJECT | UTRACE_PF_ENTRY)) ==
		    (UTRACE_PF_INJECT | UTRACE_PF_ENTRY) &&
	    regs->rip == rip0)
		inject(t, p, regs, now, args);
	if ((flags & (UTRACE_PF_RETPROBE | UTRACE_PF_ENTRY)) ==
		    (UTRACE_PF_RETPROBE | UTRACE_PF_ENTRY) &&
	    regs->rip == rip0)
		retprobe_entry(t, p, regs, now);
	guard_leave(t);
	if (regs->rip == rip0)
		return 0;
	return regs->rsp == rsp0 ? 1 : 2;
}

/**
 * utrace_dispatch_entry - called by __utrace_agent_entry (entry.S)
 * @id: probe id pushed by the slot
 * @regs: the saved registers; the thunk's exit words follow them
 *
 * Return: the thunk's exit (see entry.S); for 1 and 2 the exit words are set.
 */
int utrace_dispatch_entry(uint32_t id, utrace_regs_t *regs)
{
	uint64_t *words = (uint64_t *)(regs + 1); /* [0] rflags, [1] ret, [2] id */
	uint64_t rsp0 = (uint64_t)&words[3] + 128; /* past the skipped red zone */
	struct utrace_probe *p;
	int r;

	if (__builtin_expect(id >= agent_nr_probes, 0))
		return 0;
	p = &agent_probes[id];
	regs->rip = p->entry; /* the slot gave back what a kept first instruction moved */
	if (__builtin_expect((p->flags & ~UTRACE_PF_ENTRY) == UTRACE_PF_COUNT && !p->nr_handlers,
			     1)) {
		/*
		 * The fast path of a counting probe: no handler to call, so no
		 * guard to take (the guard is still respected: a hit from inside
		 * the agent counts as nested, as on the full path).
		 */
		struct utrace_task *t = utrace_tls_task;

		if (__builtin_expect(
			    t && t->hits && !t->guard && agent_active && t->gen == agent_gen &&
				    (p->state == UTRACE_PS_INT3 || p->state == UTRACE_PS_JMP),
			    1)) {
			count_inc(&t->hits[id]);
			return 0;
		}
	}
	r = dispatch_hit(p, regs);
	if (__builtin_expect(r == 0, 1))
		return 0;
	if (r == 2 && regs->rsp >= rsp0 + 8) {
		/* rsp grew (a return was forced): the new rip goes below it. */
		*(uint64_t *)(regs->rsp - 8) = regs->rip;
		words[1] = regs->rsp - 8;
		return 2;
	}
	words[2] = regs->rip;
	return 1;
}

/**
 * utrace_dispatch_return - called by __utrace_agent_ret_tramp (entry.S)
 * @regs: the saved registers at the return (rsp = after the ret)
 *
 * Pops the matching return instance(s) (retprobe.c), runs the return side
 * of their probes and gives the real return address. Runs even when the
 * guard is held or the agent is dormant: the address must be given back.
 *
 * Return: where to return to.
 */
uint64_t utrace_dispatch_return(utrace_regs_t *regs)
{
	struct utrace_task *t = guard_task();
	struct utrace_return_instance ri;
	uint64_t ret = 0;

	do {
		struct utrace_abi_cell *c;
		struct utrace_probe *p;
		struct utrace_task *g;
		uint64_t now, dur;
		unsigned int i, nr;
		uint32_t id;

		ret = retprobe_return(t, regs, &ri);
		id = agent_ri_probe(ri.func, agent_nr_probes);
		if (id == UINT32_MAX || !agent_active)
			continue;
		p = &agent_probes[id];
		regs->rip = ret;
		g = guard_enter();
		if (!g) {
			__atomic_fetch_add(&p->abi->nested, 1, __ATOMIC_RELAXED);
			continue;
		}
		c = cell_of(g, p);
		if (__builtin_expect(c != NULL, 1))
			count_inc(&c->returns);
		else
			__atomic_fetch_add(&p->abi->returns, 1, __ATOMIC_RELAXED);
		now = (p->flags & (UTRACE_PF_RECORD_RETURN | UTRACE_PF_HIST)) ? ring_now_ns() : 0;
		dur = now && ri.entry_ns && now > ri.entry_ns ? now - ri.entry_ns : 0;
		if (p->flags & UTRACE_PF_HIST)
			account(c, p->abi, dur, regs->rax);
		if (p->flags & UTRACE_PF_RECORD_RETURN) {
			uint64_t rax = regs->rax;

			if (p->abi->str_ret)
				ring_emit_group(g, p->id, UTRACE_EV_RETURN, now, dur, &rax, 1,
						1U << UTRACE_STR_RET, p->abi->str_max, NULL, 0,
						NULL);
			else
				ring_emit(g, p->id, UTRACE_EV_RETURN, now, dur, &rax, 1);
		}
		nr = __atomic_load_n(&p->nr_handlers, __ATOMIC_ACQUIRE);
		for (i = 0; i < nr; i++) {
			struct utrace_handler *h = &p->handlers[i];
			struct utrace_agent_ctx ctx = {
				.probe = p->id,
				.tid = g->tid,
				.regs = regs,
				.is_return = true,
				.ret_addr = ret,
				.entry_ns = ri.entry_ns,
				.now_ns = now,
				.depth = g->depth,
			};

			if (h->on_return)
				run_handler(g, h, &ctx);
		}
		guard_leave(g);
		if (regs->rip != ret)
			ret = regs->rip;
	} while (ri.chained);
	return ret;
}
