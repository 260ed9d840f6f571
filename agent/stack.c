/* SPDX-License-Identifier: MIT */
/*
 * stack.c - the caller stack of an entry hit (utrace -k), walked in the
 * probed thread by frame pointers.
 *
 * A hit may come from any code: built without frame pointers (rbp is then
 * just a register), inside a signal handler, in the middle of a prologue.
 * So the walk never trusts a pointer it has not bounded: every read is an
 * aligned 16-byte frame [fp, fp + 16) inside [rsp, stack_hi), the part of
 * the thread's stack mapping above the stack pointer, which is mapped and
 * readable by construction (a stack VMA is one piece from its low end to
 * its high end, and rsp is inside it). Frame pointers must grow strictly,
 * so the walk ends. It can still follow garbage that happens to look like a
 * frame chain: the host keeps only the addresses that fall in executable
 * mappings, stopping at the first one that does not (as the ptrace backend
 * does with its own walk).
 *
 * The stack range. A thread's stack mapping is found once, at its first
 * hit of a -k probe, by reading /proc/self/maps with raw syscalls into a
 * buffer on the stack (no libc stdio, no malloc): the same one-time
 * exception as the mmap of a thread's first hit (guard.c). Every later walk
 * on that stack makes no syscall.
 *
 * Signal handlers. A hit outside the learned range asks the kernel for the
 * thread's alternate signal stack (sigaltstack(NULL, &ss), one syscall per
 * such walk): a hit on it walks within [rsp, ss_sp + ss_size), the
 * altstack as it is now (mapped: the thread runs on it), and is never
 * learned as the thread's stack. Any other hit off the learned range
 * records only the return address at [rsp] (always readable at a function
 * entry: the call has just written it). Whatever the stack, the walk stops
 * after a return address that is the signal return trampoline (the
 * kernel's sa_restorer, read once with rt_sigaction): beyond it the frame
 * pointer is the interrupted code's, on the interrupted stack (which may
 * share the mapping: an altstack in an array of main()'s frame), so each
 * walk stays on the stack it started on.
 *
 * Return addresses hijacked by return probes (retprobe.c) read as the
 * return trampoline; they are replaced by the real ones from the thread's
 * return instances (matched by the address of the slot).
 *
 * The same bound serves -k's copy of the stack for the host's CFI
 * unwinder (ring.c ring_emit_group(), ABI 12): the bytes [rsp, top) that
 * stack_walk() reports are readable, so the copy is plain loads.
 *
 * Runs in the probed thread, guard held; no locks, no malloc, no stdio;
 * syscalls only in stack_learn(), once per thread, and sigaltstack() for
 * walks off the thread's stack.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent-internal.h"

/* The kernel's sa_restorer of a handler installed by libc; 0 until known. */
static uint64_t sig_restorer;

/*
 * Read it from the first signal action that has one (SIGTRAP first: the
 * agent's own handler in int3 mode). Up to 64 syscalls, at a thread's
 * first walk and at walks on an altstack, until it is known.
 */
static void restorer_learn(void)
{
	struct {
		uint64_t handler, flags, restorer, mask;
	} k;
	int sig;

	for (sig = SIGTRAP; sig < 65 && !__atomic_load_n(&sig_restorer, __ATOMIC_RELAXED);
	     sig = sig == SIGTRAP ? 1 : sig + 1) {
		/* 0x04000000: SA_RESTORER, not in glibc's headers */
		if (sig != SIGKILL && sig != SIGSTOP &&
		    !raw_syscall6(SYS_rt_sigaction, sig, 0, (long)&k, sizeof(k.mask), 0, 0) &&
		    (k.flags & 0x04000000) && k.restorer)
			__atomic_store_n(&sig_restorer, k.restorer, __ATOMIC_RELAXED);
	}
}

/* The altstack's top if @sp is on the thread's alternate signal stack, else 0. */
static uint64_t altstack_hi(uint64_t sp)
{
	uint64_t hi = 0;
	stack_t ss;

	if (!raw_syscall6(SYS_sigaltstack, 0, (long)&ss, 0, 0, 0, 0) &&
	    !(ss.ss_flags & SS_DISABLE) && sp >= (uint64_t)ss.ss_sp &&
	    sp - (uint64_t)ss.ss_sp < ss.ss_size)
		hi = (uint64_t)ss.ss_sp + ss.ss_size;
	return hi;
}

/*
 * Find the mapping of /proc/self/maps that contains @sp. Out of line: its
 * buffer is on the thread's stack during this one call only.
 */
static __attribute__((noinline)) void stack_learn(struct utrace_task *t, uint64_t sp)
{
	char buf[512];
	uint64_t lo = 0, hi = 0;
	int field = 0; /* 0: start, 1: end, 2: rest of the line */
	long fd, n, i;

	t->stack_tried = true;
	fd = raw_syscall6(SYS_openat, AT_FDCWD, (long)"/proc/self/maps", O_RDONLY | O_CLOEXEC, 0, 0,
			  0);
	if (fd < 0)
		return;
	while ((n = raw_syscall6(SYS_read, fd, (long)buf, sizeof(buf), 0, 0, 0)) > 0) {
		for (i = 0; i < n; i++) {
			char c = buf[i];
			int d = c >= '0' && c <= '9' ? c - '0' :
				c >= 'a' && c <= 'f' ? c - 'a' + 10 :
						       -1;

			if (c == '\n') {
				if (field >= 1 && lo <= sp && sp < hi) {
					t->stack_lo = lo;
					t->stack_hi = hi;
					goto out;
				}
				field = 0;
				lo = hi = 0;
			} else if (field == 0 && d >= 0) {
				lo = lo << 4 | (uint64_t)d;
			} else if (field == 0 && c == '-') {
				field = 1;
			} else if (field == 1 && d >= 0) {
				hi = hi << 4 | (uint64_t)d;
			} else if (field == 1) {
				field = 2;
			}
		}
	}
out:
	raw_syscall6(SYS_close, fd, 0, 0, 0, 0, 0);
}

/* The real return address for the one read from @slot, if hijacked. */
static uint64_t unhijack(struct utrace_task *t, uint64_t pc, uint64_t slot)
{
	uint32_t i;

	if (pc != (uint64_t)__utrace_agent_ret_tramp || !t->ri)
		return pc;
	for (i = t->depth; i > 0; i--)
		if (t->ri[i - 1].sp == slot)
			return t->ri[i - 1].orig_ret;
	return pc;
}

/**
 * stack_walk - return addresses of the callers of a hit
 * @t: the thread (guard held); @regs: its registers at the site
 * @at_entry: the site is a function entry ([rsp] is the return address)
 * @pcs: receives up to UTRACE_ABI_STACK_MAX addresses, innermost first
 * @top: receives the end of what may be read from rsp on, for -k's copy
 *	of the stack (ring.c): the top of the stack rsp is on, or only
 *	[rsp, rsp + 8) at an entry off any stack we know (the return address)
 *
 * Return: the number of addresses.
 */
unsigned int stack_walk(struct utrace_task *t, const utrace_regs_t *regs, bool at_entry,
			uint64_t *pcs, uint64_t *top)
{
	uint64_t sp = regs->rsp, fp = regs->rbp, hi = 0, sigret;
	unsigned int n = 0;

	*top = at_entry ? sp + 8 : sp;
	if (at_entry)
		pcs[n++] = unhijack(t, *(const uint64_t *)sp, sp);
	if (sp < t->stack_lo || sp >= t->stack_hi) {
		/* not the stack we know: a handler's altstack, or not learned yet */
		hi = altstack_hi(sp);
		if (hi || !t->stack_tried)
			restorer_learn(); /* on an altstack: some handler has it */
		if (!hi && !t->stack_tried)
			stack_learn(t, sp);
	}
	if (!hi) {
		hi = t->stack_hi;
		if (sp < t->stack_lo || sp >= hi)
			return n; /* no stack we know */
	}
	*top = hi;
	sigret = __atomic_load_n(&sig_restorer, __ATOMIC_RELAXED);
	if (n && sigret && pcs[0] == sigret)
		return n; /* a handler's entry: the frame pointer is the interrupted code's */
	while (n < UTRACE_ABI_STACK_MAX && fp >= sp && hi >= 16 && fp <= hi - 16 && !(fp & 7)) {
		const uint64_t *frame = (const uint64_t *)fp;
		uint64_t next = frame[0], ret = frame[1];

		if (!ret)
			break;
		pcs[n++] = unhijack(t, ret, fp + 8);
		if (next <= fp || (sigret && ret == sigret))
			break; /* end, or a signal frame: the rest is another context's */
		sp = fp;
		fp = next;
	}
	return n;
}
