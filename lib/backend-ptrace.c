/* SPDX-License-Identifier: MIT */
/*
 * backend-ptrace.c - the ptrace backend of uprobes: int3 breakpoints, an
 * XOL area in the target (xol.c), handlers in the tracer. It is a utrace
 * engine on the session. Runs in the tracer process, in the tracing thread.
 *
 * DESIGN
 *
 * A hit, step by step:
 *  1. A thread executes our int3; the kernel queues SIGTRAP (si_code
 *     SI_KERNEL) and the thread reports a signal-delivery stop. No other
 *     thread stops.
 *  2. The engine's signal callback reads the registers; rip - 1 is the
 *     breakpoint. A SIGTRAP that is not from one of our int3s (the
 *     program's own, a kill(SIGTRAP), a single-step of a debugger) is
 *     passed on untouched.
 *  3. The signal is suppressed; the handlers of every probe at the point
 *     run in registration order with the thread's registers (they may
 *     change them). Return probes push a return instance and replace the
 *     return address at [rsp] with the trampoline.
 *  4. rip is set to the point's XOL slot (filled at the first hit: the
 *     relocated instruction followed by a jump back) and the registers are
 *     written once. The thread resumes and runs on by itself: one trap,
 *     no single-step, the breakpoint never leaves the code.
 *
 * Return probes. The trampoline is an int3 at the start of the first XOL
 * area. At its trap the thread's return instances (struct utrace_task) are
 * checked against the stack pointer: after the ret, rsp is 8 above the
 * slot the return address was in. Instances whose slot is below that
 * belong to frames that were unwound without returning (longjmp, C++
 * exceptions, a signal handler that longjmp'd out): they are dropped and
 * counted as missed returns, lazily, at the next return or entry (the
 * kernel's cleanup_return_instances(); an instance is alive at a call iff
 * rsp < its slot, at a chained call iff rsp <= its slot). The matching
 * instance gives the real return address; the thread resumes there.
 * Recursion just pushes more instances; a tail call from one probed
 * function into another finds the trampoline already at [rsp] and chains
 * (the kernel's "chained" instances: both return through one trap). The
 * depth is bounded (opts.max_depth): deeper calls are not hijacked and are
 * counted. The stack-pointer clock only runs on one stack: a signal
 * handler on an alternate stack (sigaltstack, SA_ONSTACK) pushes instances
 * of another stack, above or below the interrupted one, near or far. So
 * before an instance is dropped (a slow path: a plain call finds the
 * instance above it alive, a plain return finds its own on top), the
 * thread's altstack is asked for with a remote sigaltstack() and each
 * instance is judged by the stack it is on against the hit's: same stack,
 * the rule above; hit on the altstack and instance not, an interrupted
 * frame, alive; hit off the altstack and instance on it, its handler is
 * over (returned, or left with siglongjmp()), dead (agent/retprobe.c does
 * the same in the probed thread). A stack switch (swapcontext, coroutines) can fool the
 * stack-pointer check into dropping a live instance; the last dropped
 * instances are therefore kept per thread, and a trampoline hit that finds
 * no live match looks there for the slot's real return address, so the
 * thread always goes on (that return is not reported: counted as missed). A handler that called utrace_probe_ctx__set_return() at entry
 * skips the function: rax is set, the return address is popped into rip;
 * no instance is pushed.
 *
 * Unwinders. A C++ throw (_Unwind_RaiseException), a forced unwind
 * (_Unwind_ForcedUnwind: pthread_exit, cancellation) and a rethrow read
 * each frame's return address to find its unwind info (FDE); the
 * trampoline has none, so a throw through a hijacked frame ends in
 * std::terminate and a forced unwind stops there, skipping the cleanup
 * handlers above. The registry puts internal points, unwind guards, on
 * these entry points (uprobes-arm.c uprobes_proc_arm_unwind_guards(); libc's
 * pthread_exit too, as glibc dlopen()s libgcc_s inside its first call).
 * A guard's hit runs ptrace_backend_unwind_begin() before the function
 * runs: the thread's hijacked return addresses go back with the code the
 * detach uses (task_restore_returns()) and its instances are dropped as
 * missed, as the in-process agent does (agent/retprobe.c). Only the
 * hitting thread's stack is touched; it is stopped. We chose restoring
 * every instance over finding the catching frame: the unwinder's search
 * phase is libgcc_s's business, and a lost return event is harmless where
 * a wrong return address is not.
 *
 * Breakpoints. Inserting or removing one writes a single byte through
 * /proc/PID/mem (code pages are read-only) with the process quiesced
 * (utrace_session__quiesce()); the hitting thread itself is never resumed
 * by us inside its own callback (utrace_thread__resume() defers that). A
 * SIGTRAP may already be queued for a thread when its breakpoint goes
 * away: such a "late trap" is recognised (the address was one of ours and
 * holds no int3 any more) and the thread re-executes the restored
 * instruction. Before detaching, queued SIGTRAPs are flushed that way, so
 * no untraced thread is ever killed by one of our traps.
 *
 * Detach (ptrace_backend_release()): with the process quiesced and every
 * breakpoint removed, each return instance's stack slot that still holds
 * the trampoline gets its real return address back; a thread stopped at
 * the start or at the jump back of a slot is moved to the equivalent
 * original address; then the XOL areas are unmapped with a remote munmap,
 * unless some thread is stopped in the middle of a slot (then the area is
 * left mapped: harmless, never harmful). Threads inside a signal handler
 * that interrupted a slot cannot be seen; the window is one instruction.
 *
 * Known limits: sigaltstack handlers calling return-probed functions (the
 * stack-pointer checks assume one stack, as the kernel's do); a vfork
 * child that is not followed shares its parent's breakpoints until it
 * execs and would die of a hit; Go stacks and CET shadow stacks are not
 * handled (see docs/prior-art.md §4). Using the API: docs/uprobes.md.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "utrace/proc.h"
#include "internal.h"
#include "backend.h"
#include "backend-ptrace.h"

#ifndef SI_KERNEL
#define SI_KERNEL 0x80
#endif
#ifndef KCMP_VM
#define KCMP_VM 1
#endif

/* What a hit's handlers asked for, behind ctx->priv. */
struct hit_state {
	struct utrace_thread *th;
	struct uprobes_proc *mp; /* whose points and tasks (a vfork child: its parent) */
	bool skipped; /* set_return at entry: the function does not run */
};

static pid_t points_pid(struct uprobes_proc *pp)
{
	return pp->vfork_parent ? pp->vfork_parent : pp->pid;
}

/* ------------------------------------------------------------------------ */
/* Breakpoints                                                               */
/* ------------------------------------------------------------------------ */

/**
 * ptrace_backend_arm - write the int3 of @pt.
 * @pp: process (quiesced, or with no thread able to reach @pt)
 * @pt: point with orig[] read
 *
 * Return: 0 on success; negative errno otherwise (nothing written).
 */
static int ptrace_backend_arm(struct uprobes_proc *pp, struct probe_point *pt)
{
	static const uint8_t int3 = 0xcc; /* int3 */
	ssize_t n;

	if (!pt->priv) {
		pt->priv = calloc(1, sizeof(struct ptrace_point));
		if (!pt->priv)
			return -ENOMEM;
	}
	n = utrace_mem__write(points_pid(pp), pt->addr, &int3, 1);
	if (n != 1)
		return n < 0 ? (int)n : -EFAULT;
	pt->armed = true;
	return 0;
}

/**
 * ptrace_backend_disarm - put the original byte of @pt back.
 * @pp: process (quiesced)
 * @pt: armed point
 * @alive: the process still exists (else nothing is written)
 *
 * Return: 0 on success; negative errno otherwise.
 */
static int ptrace_backend_disarm(struct uprobes_proc *pp, struct probe_point *pt, bool alive)
{
	ssize_t n = 1;

	if (alive)
		n = utrace_mem__write(points_pid(pp), pt->addr, pt->orig, 1);
	pt->armed = false;
	if (n == -ESRCH || (n == -EFAULT && proc_exiting(pp->pid)))
		return 0; /* gone meanwhile (killed, or it ended): no code left to restore */
	if (n != 1) {
		pr_warn("process %d: cannot remove breakpoint at 0x%llx: %s\n", pp->pid,
			(unsigned long long)pt->addr, strerror(n < 0 ? (int)-n : EFAULT));
		return n < 0 ? (int)n : -EFAULT;
	}
	return 0;
}

/**
 * ptrace_backend_quiesce - stop every thread of @pp (the paper: inserting
 * or removing a breakpoint quiesces the process). Events arriving
 * meanwhile, breakpoint hits included, are handled.
 * @pp: process
 *
 * Return: 0 on success; negative errno otherwise.
 */
static int ptrace_backend_quiesce(struct uprobes_proc *pp)
{
	return utrace_session__quiesce(pp->up->s, pp->pid);
}

/**
 * ptrace_backend_resume - resume the threads of @pp stopped by
 * ptrace_backend_quiesce(); the thread whose hit is being handled resumes
 * when its callback returns.
 * @pp: process
 */
static void ptrace_backend_resume(struct uprobes_proc *pp)
{
	struct utrace_thread *ths[256];
	int n, i;

	n = utrace_session__threads(pp->up->s, pp->pid, ths, ARRAY_SIZE(ths));
	if (n > (int)ARRAY_SIZE(ths)) {
		utrace_session__resume(pp->up->s, pp->pid); /* not inside a hit of pp */
		return;
	}
	for (i = 0; i < n; i++)
		utrace_thread__resume(ths[i]);
}

/**
 * ptrace_backend_stopped_thread - a thread of @pp in a stop from which
 * remote syscalls work, or NULL.
 * @pp: process (quiesced)
 */
static struct utrace_thread *ptrace_backend_stopped_thread(struct uprobes_proc *pp)
{
	struct utrace_thread *ths[256];
	int n, i;

	n = utrace_session__threads(pp->up->s, pp->pid, ths, ARRAY_SIZE(ths));
	for (i = 0; i < MIN(n, (int)ARRAY_SIZE(ths)); i++)
		switch (ths[i]->stop) {
		case TSTOP_EVENT:
		case TSTOP_GROUP:
		case TSTOP_SYSCALL_ENTRY:
		case TSTOP_SYSCALL_EXIT:
		case TSTOP_SECCOMP:
			return ths[i];
		default:
			break;
		}
	return NULL;
}

/* Is a SIGTRAP queued (not yet dequeued) for thread @tid? */
static bool sigtrap_pending(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	bool ret = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "SigPnd:", 7)) {
			unsigned long long mask = strtoull(line + 7, NULL, 16);

			ret = mask & (1ULL << (SIGTRAP - 1));
			break;
		}
	}
	fclose(f);
	return ret;
}

/*
 * Put the real return address back in every stack slot of @task that still
 * holds the trampoline, and forget its instances (and the dropped ones
 * kept for a late match); @missed: count the live ones as missed returns.
 * Newest first: a stale instance whose slot a newer frame reuses finds the
 * newer frame's real address already there and is left alone, like any
 * slot that no longer holds the trampoline. Used at detach and before an
 * unwinder walks the thread's stack. @task's thread is stopped.
 * Return: 0, or -EFAULT if a slot could not be written.
 */
static int task_restore_returns(struct uprobes_proc *pp, struct utrace_task *task, bool missed)
{
	uint64_t tramp = xol_tramp(pp);
	unsigned int k;
	int ret = 0;

	for (k = task->depth; tramp && k > 0; k--) {
		const struct utrace_return_instance *ri = &task->ri[k - 1];
		uint64_t v;

		if (missed)
			uprobes_missed_return(pp, ri->func);
		if (ri->chained)
			continue; /* its slot is the one of the instance below */
		if (utrace_mem__read(pp->pid, ri->sp, &v, 8) == 8 && v == tramp &&
		    utrace_mem__write(pp->pid, ri->sp, &ri->orig_ret, 8) != 8)
			ret = -EFAULT;
	}
	/* dropped ones may live on another stack (coroutines) */
	for (k = 0; tramp && k < MIN(task->nr_dropped, UPROBES_DROPPED_KEEP); k++) {
		const struct utrace_return_instance *ri = &task->dropped[k];
		uint64_t v;

		if (!ri->chained && ri->orig_ret && utrace_mem__read(pp->pid, ri->sp, &v, 8) == 8 &&
		    v == tramp)
			utrace_mem__write(pp->pid, ri->sp, &ri->orig_ret, 8);
	}
	task->depth = 0;
	task->nr_dropped = 0;
	return ret;
}

/**
 * ptrace_backend_unwind_begin - thread @tid entered an unwinder (an unwind
 * guard's hit, before the function runs): it is about to walk its stack by
 * the return addresses, and finds no unwind info for the trampoline. Every
 * hijacked return address of the thread goes back; its instances are
 * dropped and counted as missed returns (frames that the unwind does not
 * pass lose their return event, never their return address). Other
 * threads are not touched: they unwind their own stacks.
 * @pp: process whose points and tasks the thread uses
 * @tid: the hitting thread, stopped at the guard
 */
static void ptrace_backend_unwind_begin(struct uprobes_proc *pp, pid_t tid)
{
	struct utrace_task *t = uprobes_task_get(pp, tid, false);

	if (!t || (!t->depth && !t->nr_dropped))
		return;
	pr_debug("thread %d: unwinding: %u hijacked return address(es) put back\n", tid, t->depth);
	if (task_restore_returns(pp, t, true))
		pr_warn("thread %d: a return address could not be put back before unwinding\n",
			tid);
}

/**
 * ptrace_backend_release - leave @pp clean before detaching: flush queued
 * traps, restore redirected return addresses, move threads out of XOL
 * slots, unmap the XOL areas.
 * @pp: process, quiesced, breakpoints already removed
 *
 * Return: 0 on success; negative errno if something could not be undone
 * (logged; the target keeps running correctly, at worst with an XOL area
 * left mapped).
 */
static int ptrace_backend_release(struct uprobes_proc *pp)
{
	struct utrace_uprobes *up = pp->up;
	struct utrace_thread *ths[256];
	uint64_t tramp = xol_tramp(pp);
	bool busy = false;
	unsigned int i, k;
	int n, t, round, ret = 0;

	/*
	 * 1. traps queued before the breakpoints went: let them arrive now.
	 * A thread stopped by PTRACE_INTERRUPT with its SIGTRAP still queued
	 * handles the interrupt before it dequeues signals: quiescing it again
	 * at once stops it again with the trap still queued, round after
	 * round, and the trap killed it after the detach (rip just past a
	 * removed int3; seen about once in 250 utrace -f ... -p PID -d
	 * cycles). So the resumed threads are given time, with no interrupt
	 * sent, to take their trap (on_signal() rewinds them) first.
	 */
	for (round = 0; round < 4; round++) {
		pid_t pid = pp->pid;
		bool any = false;
		int waited;

		n = utrace_session__threads(up->s, pid, ths, ARRAY_SIZE(ths));
		for (t = 0; t < MIN(n, (int)ARRAY_SIZE(ths)); t++) {
			if (ths[t] != up->hit_th &&
			    sigtrap_pending(pid, utrace_thread__tid(ths[t]))) {
				utrace_thread__resume(ths[t]);
				any = true;
			}
		}
		if (!any)
			break;
		for (waited = 0; any && waited < 500; waited++) {
			struct timespec ts = { 0, 100 * 1000 };

			utrace_session__poll(up->s);
			if (uprobes_proc_find(up, pid) != pp)
				return -ESRCH; /* exited meanwhile: @pp is gone */
			any = false;
			n = utrace_session__threads(up->s, pid, ths, ARRAY_SIZE(ths));
			for (t = 0; t < MIN(n, (int)ARRAY_SIZE(ths)) && !any; t++)
				any = ths[t] != up->hit_th &&
				      sigtrap_pending(pid, utrace_thread__tid(ths[t]));
			if (any)
				nanosleep(&ts, NULL);
		}
		utrace_session__quiesce(up->s, pid);
		if (uprobes_proc_find(up, pid) != pp)
			return -ESRCH;
	}
	if (!tramp)
		return 0;
	/* 2. real return addresses back on the stacks */
	for (i = 0; i < PROC_HASH; i++) {
		struct utrace_task *task;

		for (task = pp->tasks[i]; task; task = task->hnext) {
			struct utrace_thread *th = utrace_session__find_thread(up->s, task->tid);
			struct user_regs_struct regs;

			/*
			 * Stopped on the trampoline (its ret done, the int3 not
			 * yet executed, or executed with the trap not flushed):
			 * it returns where the matching instance says.
			 */
			if (th && utrace_thread__get_regs(th, &regs) == 0 &&
			    (regs.rip == tramp || regs.rip == tramp + 1)) {
				for (k = task->depth; k > 0; k--) {
					if (task->ri[k - 1].sp != regs.rsp - 8)
						continue;
					regs.rip = task->ri[k - 1].orig_ret;
					utrace_thread__set_regs(th, &regs);
					break;
				}
			}
			if (task_restore_returns(pp, task, false)) {
				busy = true;
				ret = -EFAULT;
			}
		}
	}
	/* 3. threads inside a slot */
	n = utrace_session__threads(up->s, pp->pid, ths, ARRAY_SIZE(ths));
	for (t = 0; t < MIN(n, (int)ARRAY_SIZE(ths)); t++) {
		struct user_regs_struct regs;
		struct probe_point *pt;
		uint64_t rip;

		if (utrace_thread__get_regs(ths[t], &regs) < 0 || !xol_contains(pp, regs.rip))
			continue;
		pt = ptrace_slot_owner(pp, regs.rip);
		if (pt && xol_rip_fixup(pt, regs.rip, &rip) == 0) {
			regs.rip = rip;
			utrace_thread__set_regs(ths[t], &regs);
		} else {
			busy = true;
		}
	}
	if (busy) {
		pr_warn("process %d: a thread is inside the XOL area; leaving it mapped\n",
			pp->pid);
		xol_forget(pp);
		return ret ? ret : -EBUSY;
	}
	/* 4. unmap */
	{
		struct utrace_thread *th = ptrace_backend_stopped_thread(pp);
		int r = xol_unmap_all(pp, th);

		/* -ESRCH: the process exited meanwhile; its XOL area went with it. */
		if (r == -ESRCH) {
			pr_debug("process %d: exited before its XOL area was unmapped\n", pp->pid);
		} else if (r) {
			pr_warn("process %d: cannot unmap the XOL area: %s\n", pp->pid,
				strerror(-r));
			if (!ret)
				ret = r;
		}
	}
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Hits                                                                      */
/* ------------------------------------------------------------------------ */

/* Pop the newest instance as unwound past; keep it in the graveyard. */
static void ri_drop(struct uprobes_proc *pp, struct utrace_task *t)
{
	const struct utrace_return_instance *ri = &t->ri[t->depth - 1];

	uprobes_missed_return(pp, ri->func);
	t->dropped[t->nr_dropped++ % UPROBES_DROPPED_KEEP] = *ri;
	t->depth--;
}

/*
 * The stopped thread's alternate signal stack, asked for at most once per
 * slow path (a remote sigaltstack(NULL, &old) whose 24 bytes of output go
 * below the red zone and are put back): see "Return probes" above.
 */
struct altstack {
	int known; /* 0: not asked yet, 1: [lo, hi), -1: none, disabled or unknown */
	uint64_t lo, hi;
};

static bool on_alt(struct uprobes_proc *pp, struct utrace_thread *th, struct altstack *a,
		   uint64_t sp)
{
	if (!a->known) {
		struct user_regs_struct regs;
		uint64_t buf, save[3], ss[3], args[6] = { 0 };
		long res = -1;

		a->known = -1;
		if (utrace_thread__get_regs(th, &regs) < 0)
			return false;
		buf = (regs.rsp - 128 - sizeof(ss)) & ~15ULL;
		if (utrace_mem__read(pp->pid, buf, save, sizeof(save)) != sizeof(save))
			return false;
		args[1] = buf;
		if (!utrace_thread__remote_syscall(th, SYS_sigaltstack, args, &res) && !res &&
		    utrace_mem__read(pp->pid, buf, ss, sizeof(ss)) == sizeof(ss) &&
		    !((int)ss[1] & SS_DISABLE) && ss[2]) {
			a->lo = ss[0];
			a->hi = ss[0] + ss[2];
			a->known = 1;
		}
		utrace_mem__write(pp->pid, buf, save, sizeof(save));
	}
	return a->known > 0 && sp >= a->lo && sp < a->hi;
}

/*
 * Is @ri, older than a hit with return slot @sp, dead? Return: 1 dead, 0
 * alive, -1 on the same stack as @sp (the stack-pointer rule decides).
 */
static int ri_judge(struct uprobes_proc *pp, struct utrace_thread *th, struct altstack *a,
		    const struct utrace_return_instance *ri, uint64_t sp)
{
	bool sp_alt = on_alt(pp, th, a, sp), ri_alt = on_alt(pp, th, a, ri->sp);

	if (sp_alt != ri_alt)
		return ri_alt; /* its handler is over: dead; interrupted frame: alive */
	return -1;
}

/* Drop instances unwound past without returning (longjmp, exceptions). */
static void ri_cleanup(struct uprobes_proc *pp, struct utrace_thread *th, struct utrace_task *t,
		       uint64_t sp, bool chained)
{
	struct altstack alt = { 0 };

	while (t->depth) {
		const struct utrace_return_instance *ri = &t->ri[t->depth - 1];

		if (chained ? sp <= ri->sp : sp < ri->sp)
			break;
		if (!ri_judge(pp, th, &alt, ri, sp))
			break; /* a frame a handler on the altstack interrupted */
		ri_drop(pp, t);
	}
}

/*
 * The trampoline was reached with no live instance for this frame: look
 * for one dropped as stale (a stack switch fooled the check). Return: the
 * real return address, or 0.
 */
static uint64_t ri_resurrect(struct utrace_task *t, uint64_t slot_sp)
{
	unsigned int i, n = MIN(t->nr_dropped, UPROBES_DROPPED_KEEP);

	for (i = 0; i < n; i++) {
		struct utrace_return_instance *ri = &t->dropped[i];

		if (ri->sp == slot_sp && ri->orig_ret) {
			uint64_t ret = ri->orig_ret;

			ri->orig_ret = 0; /* used once */
			return ret;
		}
	}
	return 0;
}

/* Entry of a return-probed function: hijack the return address. */
static void ri_push(struct uprobes_proc *pp, struct probe_point *pt, struct utrace_thread *th,
		    pid_t tid, struct user_regs_struct *regs, uint64_t now)
{
	uint64_t tramp = xol_tramp(pp), ret;
	struct utrace_return_instance *ri;
	struct utrace_task *t;
	bool chained;

	t = uprobes_task_get(pp, tid, true);
	if (!t || !tramp || utrace_mem__read(pp->pid, regs->rsp, &ret, 8) != 8) {
		uprobes_missed_return(pp, pt->addr);
		return;
	}
	chained = ret == tramp;
	ri_cleanup(pp, th, t, regs->rsp, chained);
	if (chained && !t->depth) {
		/* a trampoline address we have no record of: leave it */
		uprobes_missed_return(pp, pt->addr);
		return;
	}
	if (t->depth >= pp->up->max_depth) {
		uprobes_missed_return(pp, pt->addr);
		return;
	}
	if (!chained && utrace_mem__write(pp->pid, regs->rsp, &tramp, 8) != 8) {
		uprobes_missed_return(pp, pt->addr);
		return;
	}
	ri = &t->ri[t->depth++];
	ri->func = pt->addr;
	ri->sp = regs->rsp;
	ri->orig_ret = chained ? t->ri[t->depth - 2].orig_ret : ret;
	ri->chained = chained;
	ri->entry_ns = now;
}

static int handle_entry(struct utrace_uprobes *up, struct uprobes_proc *pp, struct uprobes_proc *mp,
			struct probe_point *pt, struct utrace_thread *th,
			struct user_regs_struct *regs)
{
	struct user_regs_struct orig = *regs;
	struct hit_state hs = { .th = th, .mp = mp };
	struct utrace_probe_ctx ctx = {
		.pid = pp->pid,
		.tid = utrace_thread__tid(th),
		.regs = regs,
		.now_ns = uprobes_now_ns(),
		.priv = &hs,
	};
	struct utrace_task *t = uprobes_task_get(mp, ctx.tid, false);
	bool is_rbrk = pt->addr == mp->r_brk;
	int err;

	up->stats.hits++;
	ctx.depth = t ? t->depth : 0;
	regs->rip = pt->addr; /* handlers see the probed address */
	orig.rip = pt->addr;
	uprobes_run_entry(pt, &ctx);
	/* the point may have lost all probes (deferred): it stays until hit_end */
	if (!hs.skipped && regs->rip == orig.rip) {
		err = xol_prepare_slot(mp, th, pt);
		if (err) {
			/* cannot run out of line: give the site back, never harm the target */
			char ebuf[128];

			utrace_strerror(err, ebuf, sizeof(ebuf));
			pr_warn("probe point %s: cannot run the instruction out of line: %s; removed\n",
				pt->name, ebuf);
			ptrace_backend_disarm(mp, pt, true);
			regs->rip = pt->addr;
		} else {
			if (uprobes_point_wants_return(pt))
				ri_push(mp, pt, th, ctx.tid, regs, ctx.now_ns);
			regs->rip = ptrace_point(pt)->slot;
		}
		/* an unwinder's entry: after ri_push, so that its own frame is restored too */
		if (pt->unwind)
			ptrace_backend_unwind_begin(mp, ctx.tid);
	}
	utrace_thread__set_regs(th, regs);
	if (is_rbrk)
		uprobes_dl_activity(mp, th);
	return 0;
}

static int handle_return(struct utrace_uprobes *up, struct uprobes_proc *pp,
			 struct uprobes_proc *mp, struct utrace_thread *th,
			 struct user_regs_struct *regs)
{
	struct hit_state hs = { .th = th, .mp = mp };
	struct utrace_probe_ctx ctx = {
		.pid = pp->pid,
		.tid = utrace_thread__tid(th),
		.regs = regs,
		.now_ns = uprobes_now_ns(),
		.priv = &hs,
	};
	struct utrace_task *t = uprobes_task_get(mp, ctx.tid, false);
	uint64_t slot_sp = regs->rsp - 8;
	struct altstack alt = { 0 };
	uint64_t ret;

	/*
	 * Not this frame's on top: frames below the returning one unwound
	 * past, or a signal handler's that left with siglongjmp() (dead), or
	 * frames of the stack a handler on the altstack interrupted (alive).
	 */
	while (t && t->depth && t->ri[t->depth - 1].sp != slot_sp) {
		const struct utrace_return_instance *ri = &t->ri[t->depth - 1];
		int dead = ri_judge(mp, th, &alt, ri, slot_sp);

		if (dead < 0)
			dead = ri->sp < slot_sp;
		if (!dead) {
			/* not this frame's: a stale instance of another stack? */
			ret = ri_resurrect(t, slot_sp);
			if (ret) {
				pr_debug("thread %d: return through a dropped instance\n", ctx.tid);
				regs->rip = ret;
				utrace_thread__set_regs(th, regs);
				return 0;
			}
			break;
		}
		ri_drop(mp, t);
	}
	if (!t || !t->depth || t->ri[t->depth - 1].sp != slot_sp) {
		ret = t ? ri_resurrect(t, slot_sp) : 0;
		if (ret) {
			pr_debug("thread %d: return through a dropped instance\n", ctx.tid);
			regs->rip = ret;
			utrace_thread__set_regs(th, regs);
			return 0;
		}
		pr_warn("thread %d: return trampoline hit with no matching return instance "
			"(rsp 0x%llx)\n",
			ctx.tid, (unsigned long long)regs->rsp);
		return -ENOENT;
	}
	for (;;) {
		struct utrace_return_instance ri = t->ri[--t->depth];

		up->stats.returns++;
		regs->rip = ri.orig_ret;
		ctx.ret_addr = ri.orig_ret;
		ctx.depth = t->depth;
		uprobes_run_return(mp, &ri, &ctx);
		regs->rip = ri.orig_ret;
		if (!ri.chained || !t->depth)
			break;
	}
	utrace_thread__set_regs(th, regs);
	return 0;
}

/*
 * The session's engine (uprobes-life.c) got a signal-delivery stop: an int3 of
 * ours (entry or return trampoline), a late trap, or someone else's.
 */
static int ptrace_backend_signal(struct utrace_uprobes *up, struct utrace_thread *th,
				 siginfo_t *info)
{
	struct uprobes_proc *pp, *mp;
	struct user_regs_struct regs;
	struct utrace_thread *saved_th;
	struct probe_point *pt;
	uint64_t addr;
	uint8_t b;
	unsigned int i;
	int err;

	if (info->si_signo != SIGTRAP || info->si_code != SI_KERNEL)
		goto foreign;
	pp = uprobes_proc_find(up, utrace_thread__pid(th));
	if (!pp)
		goto foreign;
	if (utrace_thread__get_regs(th, &regs) < 0)
		goto foreign;
	mp = uprobes_points_proc(pp);
	addr = regs.rip - 1;
	pt = uprobes_point_find(mp, addr);
	if (!pt && !(ptrace_proc(mp)->xol && addr == xol_tramp(mp))) {
		/* a late trap: our breakpoint was removed after it fired */
		for (i = 0; i < MIN(mp->nr_removed, ARRAY_SIZE(mp->removed)); i++) {
			if (mp->removed[i] == addr && utrace_mem__read(mp->pid, addr, &b, 1) == 1 &&
			    b != 0xcc) {
				regs.rip = addr;
				utrace_thread__set_regs(th, &regs);
				up->stats.late_traps++;
				return UTRACE_RESUME | UTRACE_SIGNAL_IGNORE;
			}
		}
		goto foreign;
	}
	if (pt && !pt->armed) {
		/* disarmed meanwhile (a failed slot): re-execute the original */
		regs.rip = addr;
		utrace_thread__set_regs(th, &regs);
		up->stats.late_traps++;
		return UTRACE_RESUME | UTRACE_SIGNAL_IGNORE;
	}
	/* ours: the signal is gone (also lets remote syscalls run from here) */
	th->stop_sig = 0;
	saved_th = up->hit_th;
	up->hit_th = th;
	uprobes_hit_begin(up);
	if (pt)
		err = handle_entry(up, pp, mp, pt, th, &regs);
	else
		err = handle_return(up, pp, mp, th, &regs);
	uprobes_hit_end(up);
	up->hit_th = saved_th;
	if (err) {
		th->stop_sig = SIGTRAP; /* nothing we can do: the program's own fate */
		return UTRACE_RESUME;
	}
	return UTRACE_RESUME | UTRACE_SIGNAL_IGNORE;

foreign:
	up->stats.foreign_traps += info->si_signo == SIGTRAP;
	return UTRACE_RESUME;
}

/* ------------------------------------------------------------------------ */
/* Per-process and per-point state; fork                                    */
/* ------------------------------------------------------------------------ */

static int ptrace_proc_init(struct uprobes_proc *pp)
{
	pp->priv = calloc(1, sizeof(struct ptrace_proc));
	return pp->priv ? 0 : -ENOMEM;
}

/* exec, exit, or after the release: the areas are gone or unmapped. */
static void ptrace_proc_forget(struct uprobes_proc *pp)
{
	if (!pp->priv)
		return;
	xol_forget(pp);
	free(pp->priv);
	pp->priv = NULL;
}

static void ptrace_point_free(struct probe_point *pt)
{
	free(pt->priv);
	pt->priv = NULL;
}

/**
 * ptrace_slot_owner - the point whose XOL slot contains @rip, or NULL.
 * @pp: process
 * @rip: an address inside an XOL area
 */
struct probe_point *ptrace_slot_owner(struct uprobes_proc *pp, uint64_t rip)
{
	unsigned int i;

	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = pp->points[i]; pt; pt = pt->hnext) {
			const struct ptrace_point *bp = ptrace_point(pt);

			if (bp && bp->slot && rip >= bp->slot && rip < bp->slot + 64)
				return pt;
		}
	}
	return NULL;
}

/*
 * Fork: remove our breakpoints and return trampolines from the copy of
 * @child (not run yet; the session holds it until the parent's fork event).
 */
static void ptrace_fork_clean(struct uprobes_proc *parent, pid_t child)
{
	uint64_t tramp = xol_tramp(parent);
	unsigned int i, k;

	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = parent->points[i]; pt; pt = pt->hnext) {
			uint8_t b;

			if (!pt->armed)
				continue;
			if (utrace_mem__read(child, pt->addr, &b, 1) == 1 && b == 0xcc &&
			    utrace_mem__write(child, pt->addr, pt->orig, 1) != 1 &&
			    !proc_exiting(child))
				pr_warn("fork child %d: cannot remove breakpoint at 0x%llx\n",
					child, (unsigned long long)pt->addr);
		}
	}
	if (!tramp)
		return;
	for (i = 0; i < PROC_HASH; i++) {
		struct utrace_task *t;

		for (t = parent->tasks[i]; t; t = t->hnext) {
			for (k = 0; k < t->depth; k++) {
				const struct utrace_return_instance *ri = &t->ri[k];
				uint64_t v;

				if (ri->chained)
					continue; /* its slot holds the caller's trampoline */
				if (utrace_mem__read(child, ri->sp, &v, 8) == 8 && v == tramp)
					utrace_mem__write(child, ri->sp, &ri->orig_ret, 8);
			}
		}
	}
}

const struct uprobes_backend_ops uprobes_ptrace_ops = {
	.id = UTRACE_BACKEND_PTRACE,
	.name = "ptrace",
	.internal_points = true,
	.tracer_handlers = true,
	.signal = ptrace_backend_signal,
	.proc_init = ptrace_proc_init,
	.proc_forget = ptrace_proc_forget,
	.quiesce = ptrace_backend_quiesce,
	.resume = ptrace_backend_resume,
	.arm = ptrace_backend_arm,
	.disarm = ptrace_backend_disarm,
	.point_free = ptrace_point_free,
	.release = ptrace_backend_release,
	.fork_clean = ptrace_fork_clean,
	.fork_inherit = xol_inherit,
};

/* ------------------------------------------------------------------------ */
/* Handler context                                                           */
/* ------------------------------------------------------------------------ */

uint64_t utrace_probe_ctx__arg(const struct utrace_probe_ctx *ctx, unsigned int n)
{
	if (!ctx || !ctx->regs)
		return 0;
	return regs_arg(ctx->regs, n);
}

uint64_t utrace_probe_ctx__retval(const struct utrace_probe_ctx *ctx)
{
	return ctx && ctx->regs ? ctx->regs->rax : 0;
}

int utrace_probe_ctx__set_return(struct utrace_probe_ctx *ctx, uint64_t value)
{
	struct hit_state *hs;
	uint64_t ret;

	if (!ctx || !ctx->regs || !ctx->priv)
		return -EINVAL;
	hs = ctx->priv;
	if (ctx->is_return) {
		ctx->regs->rax = value;
		return 0;
	}
	if (!ctx->point || ctx->point->offset != 0 || !ctx->point->symbol)
		return -EINVAL;
	if (!hs->skipped) {
		if (utrace_mem__read(ctx->pid, ctx->regs->rsp, &ret, 8) != 8)
			return -EFAULT;
		ctx->regs->rip = ret; /* may be the trampoline: the caller's return probe fires */
		ctx->regs->rsp += 8;
		hs->skipped = true;
	}
	ctx->regs->rax = value;
	return 0;
}

uint64_t utrace_probe_ctx__real_return(const struct utrace_probe_ctx *ctx, uint64_t slot,
				       uint64_t value)
{
	const struct hit_state *hs = ctx ? ctx->priv : NULL;
	const struct utrace_task *t;
	unsigned int i, n;

	if (!hs || !hs->mp || !value || value != xol_tramp(hs->mp))
		return value;
	t = uprobes_task_get(hs->mp, ctx->tid, false);
	if (!t)
		return value;
	for (i = t->depth; i-- > 0;)
		if (t->ri[i].sp == slot)
			return t->ri[i].orig_ret;
	/* one dropped as stale that the trampoline would still find (ri_resurrect()) */
	n = MIN(t->nr_dropped, UPROBES_DROPPED_KEEP);
	for (i = 0; i < n; i++)
		if (t->dropped[i].sp == slot && t->dropped[i].orig_ret)
			return t->dropped[i].orig_ret;
	return value;
}

ssize_t utrace_probe_ctx__read(struct utrace_probe_ctx *ctx, uint64_t addr, void *buf, size_t len)
{
	if (!ctx)
		return -EINVAL;
	return utrace_mem__read(ctx->pid, addr, buf, len);
}

ssize_t utrace_probe_ctx__write(struct utrace_probe_ctx *ctx, uint64_t addr, const void *buf,
				size_t len)
{
	if (!ctx)
		return -EINVAL;
	return utrace_mem__write(ctx->pid, addr, buf, len);
}

ssize_t utrace_probe_ctx__read_str(struct utrace_probe_ctx *ctx, uint64_t addr, char *buf,
				   size_t size)
{
	if (!ctx)
		return -EINVAL;
	return utrace_mem__read_str(ctx->pid, addr, buf, size);
}
