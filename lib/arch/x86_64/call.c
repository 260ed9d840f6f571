/* SPDX-License-Identifier: MIT */
/*
 * call.c - x86-64 SysV calling convention for remote function calls:
 * integer arguments in rdi, rsi, rdx, rcx, r8, r9, the result in rax, al =
 * number of vector registers for variadic callees (0), rsp + 8 16-byte
 * aligned at the callee's first instruction (the return address just
 * pushed), direction flag clear. Tracer process; pure functions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"

#define X86_EFLAGS_TF 0x100ULL
#define X86_EFLAGS_DF 0x400ULL

/**
 * arch_prepare_call - set up a thread's registers to call a function.
 * @regs: a copy of the thread's registers, modified
 * @fn: the callee
 * @args: its six integer arguments
 * @ret_slot: receives the stack slot for the return address
 *
 * The stack pointer moves below the red zone (the interrupted code may keep
 * live data in the 128 bytes under rsp) plus some slack, aligned to 16, and
 * one slot down for the return address. orig_rax = -1: the thread is no
 * longer "in a syscall", so the kernel does not rewind the new rip to
 * restart one (gdb's amd64_linux_write_pc()). The trap and direction flags
 * are cleared (CRIU's parasite_setup_regs()).
 * Return: nothing.
 */
void arch_prepare_call(struct user_regs_struct *regs, uint64_t fn, const uint64_t args[6],
		       uint64_t *ret_slot)
{
	uint64_t sp = (regs->rsp - ARCH_CALL_STACK_GAP) & ~15ULL;

	sp -= 8;
	regs->orig_rax = (unsigned long long)-1;
	regs->rip = fn;
	regs->rsp = sp;
	regs->rdi = args[0];
	regs->rsi = args[1];
	regs->rdx = args[2];
	regs->rcx = args[3];
	regs->r8 = args[4];
	regs->r9 = args[5];
	regs->rax = 0;
	regs->eflags &= ~(X86_EFLAGS_TF | X86_EFLAGS_DF);
	*ret_slot = sp;
}

/**
 * arch_call_returned - did the callee return to our fake address?
 * @regs: registers at the fault
 * @ret_addr: the fake return address
 * @ret_slot: where it was stored
 *
 * A ret pops the slot: rip is the fake address and rsp is one slot above.
 * Return: true if so.
 */
bool arch_call_returned(const struct user_regs_struct *regs, uint64_t ret_addr, uint64_t ret_slot)
{
	return regs->rip == ret_addr && regs->rsp == ret_slot + 8;
}

/**
 * arch_call_result - the callee's integer result.
 * @regs: registers after the return
 *
 * Return: rax.
 */
uint64_t arch_call_result(const struct user_regs_struct *regs)
{
	return regs->rax;
}

/*
 * KILL-SAFE RETURNS
 *
 * While a remote syscall or call runs, the thread holds our registers, not
 * its own, and ptrace puts its own back afterwards. If the tracer dies in
 * between (SIGKILL, OOM), the kernel detaches the thread as it is
 * (kernel/ptrace.c: exit_ptrace()) and it runs on with our registers: it
 * returns to the fake address 0x320 and dies, or runs on after the syscall
 * instruction with garbage. So each call carries its own way back, which
 * needs no tracer: an rt_sigreturn frame on the thread's stack, below the
 * red zone, holding the saved registers, signal mask and xstate.
 *
 *  - remote syscalls run at a "syscall; ret" gadget of libc with rsp at the
 *    frame's first slot, which holds the address of glibc's __restore_rt
 *    ("mov $15, %rax; syscall"): after the syscall, ret pops it and
 *    rt_sigreturn restores everything;
 *  - remote calls return to a 24-byte stub (arch_call_stub, in memory the
 *    injection maps first): "mov %rax, %rdi; mov $39, %eax; syscall" (the
 *    marker: the tracer, which runs the call with PTRACE_SYSCALL, sees its
 *    entry stop and reads the result in rdi), then "mov $15, %eax;
 *    syscall": rt_sigreturn, run only if the tracer is gone.
 *
 * With the tracer alive, nothing changes: it catches the result at a stop
 * and restores with ptrace as before, in the order mask, xstate, registers,
 * each step idempotent with the frame (the thread is at a stop where the
 * frame's path is still ahead; the registers are written last, and once
 * they are the thread is back at a stop with its own). rt_sigreturn sets
 * the mask and the registers in one step, so no signal can be delivered on
 * a half-restored thread; it also sets orig_rax = -1, so the restart the
 * kernel would have done for an interrupted syscall is done here, as in
 * arch_do_signal_or_restart(): rip - 2 and rax = orig_rax for
 * -ERESTARTSYS, -ERESTARTNOINTR and -ERESTARTNOHAND. For
 * -ERESTART_RESTARTBLOCK the kernel would run restart_syscall with the
 * thread's restart_block, but rt_sigreturn resets that block
 * (restore_sigcontext(): "make any pending restarted system calls return
 * -EINTR"; the test saw nanosleep fail with EINTR): the original syscall
 * is run again instead, with its original arguments, so a relative sleep
 * (nanosleep, poll, futex with a timeout) starts over and lasts longer
 * than asked, which sleeps may always do, rather than failing.
 * Differences from the kernel's restart, in this tracer-died path only:
 * that one; a signal pending meanwhile is delivered before the restart
 * (as with SA_RESTART, where without SA_RESTART the kernel would return
 * -EINTR); and signals the tracer had taken to re-send later are lost.
 *
 * uc_stack: restore_altstack() would set the thread's sigaltstack from it,
 * and ptrace cannot read the current one. An invalid ss_flags (3) makes
 * do_sigaltstack() fail with -EINVAL, whose result restore_altstack()
 * ignores: the altstack stays as it is.
 *
 * The xstate is the NT_X86_XSTATE image: the standard (non-compacted)
 * XSAVE layout the kernel's signal frames use, with its software bytes
 * (fx_sw_bytes, FP_XSTATE_MAGIC1) filled in by the kernel; we add
 * FP_XSTATE_MAGIC2 after it, 64-byte aligned as fpu__restore_sig() wants.
 */
/* Kernel ABI: struct sigcontext (64-bit) and struct ucontext, spelled out. */
struct k_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2, fpstate;
	uint64_t reserved1[8];
};
_Static_assert(sizeof(struct k_sigcontext) == 256, "sigcontext");

struct k_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	uint64_t ss_sp;
	int32_t ss_flags;
	int32_t __pad;
	uint64_t ss_size;
	struct k_sigcontext mc;
	uint64_t sigmask;
};
_Static_assert(sizeof(struct k_ucontext) == 304, "ucontext");

#define K_SIGINFO_SIZE 128
#define UC_FP_XSTATE 0x1
#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#define FP_XSTATE_MAGIC2 0x46505845U
#define FX_SW_XSTATE_SIZE 480 /* offsetof(xsave, i387.sw_reserved.xstate_size) */
#define NR_RESTART_SYSCALL 219

/* Where the thread resumes and with which rax, as the kernel's restart would. */
static void restart_point(const struct user_regs_struct *saved, bool have_block, uint64_t *rip,
			  uint64_t *rax)
{
	long err = (long)saved->rax;

	*rip = saved->rip;
	*rax = saved->rax;
	if ((long)saved->orig_rax < 0)
		return;
	if (err == -512 || err == -513 || err == -514) {
		*rip -= 2;
		*rax = saved->orig_rax;
	} else if (err == -516) {
		*rip -= 2;
		*rax = have_block ? NR_RESTART_SYSCALL : saved->orig_rax;
	}
}

int arch_sigframe_build(struct arch_sigframe *f, const struct user_regs_struct *saved,
			uint64_t mask, const void *xstate, int xlen, uint64_t ret)
{
	uint64_t top = saved->rsp - ARCH_CALL_STACK_GAP, fp = 0, uc;
	size_t xsize = 0;
	struct k_ucontext u;
	uint64_t rip, rax;

	memset(f, 0, sizeof(*f));
	if (xstate && xlen >= 512) {
		uint32_t sz;

		memcpy(&sz, (const char *)xstate + FX_SW_XSTATE_SIZE, sizeof(sz));
		xsize = (size_t)xlen;
		if (sz >= 512 && sz <= (uint32_t)xlen)
			xsize = sz;
		fp = (top - (xsize + 4)) & ~63ULL;
		top = fp;
	}
	uc = (top - K_SIGINFO_SIZE - sizeof(u)) & ~15ULL;
	f->lo = uc - 8;
	f->uc = uc;
	f->len = (size_t)((fp ? fp + xsize + 4 : uc + sizeof(u) + K_SIGINFO_SIZE) - f->lo);
	f->buf = calloc(1, f->len);
	if (!f->buf)
		return -ENOMEM;
	memcpy(f->buf, &ret, 8);

	memset(&u, 0, sizeof(u));
	u.uc_flags = UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS | (fp ? UC_FP_XSTATE : 0);
	u.ss_flags = 3; /* invalid: the altstack is left alone (see above) */
	u.mc.r8 = saved->r8;
	u.mc.r9 = saved->r9;
	u.mc.r10 = saved->r10;
	u.mc.r11 = saved->r11;
	u.mc.r12 = saved->r12;
	u.mc.r13 = saved->r13;
	u.mc.r14 = saved->r14;
	u.mc.r15 = saved->r15;
	u.mc.rdi = saved->rdi;
	u.mc.rsi = saved->rsi;
	u.mc.rbp = saved->rbp;
	u.mc.rbx = saved->rbx;
	u.mc.rdx = saved->rdx;
	u.mc.rax = saved->rax;
	u.mc.rcx = saved->rcx;
	u.mc.rsp = saved->rsp;
	u.mc.rip = saved->rip;
	u.mc.eflags = saved->eflags;
	u.mc.cs = (uint16_t)saved->cs;
	u.mc.ss = (uint16_t)saved->ss;
	u.mc.fpstate = fp;
	u.sigmask = mask;
	/* The kernel's syscall restart (arch_do_signal_or_restart(), no handler). */
	restart_point(saved, false, &rip, &rax);
	u.mc.rip = rip;
	u.mc.rax = rax;
	memcpy(f->buf + 8, &u, sizeof(u));
	if (fp) {
		uint32_t magic2 = FP_XSTATE_MAGIC2;

		memcpy(f->buf + (fp - f->lo), xstate, xsize);
		memcpy(f->buf + (fp - f->lo) + xsize, &magic2, 4);
	}
	return 0;
}

/* The data call-stub.S pops: mask, xstate address, 15 registers, rflags, rsp. */
#define STUB_SLOTS 19

int arch_stubframe_build(struct arch_sigframe *f, const struct user_regs_struct *saved,
			 uint64_t mask, const void *xstate, int xlen, uint64_t ret,
			 uint64_t *resume)
{
	uint64_t top = saved->rsp - ARCH_CALL_STACK_GAP, fp = 0, d, v[STUB_SLOTS], rax;
	size_t xsize = 0;

	memset(f, 0, sizeof(*f));
	if (xstate && xlen >= 512) {
		xsize = (size_t)xlen;
		fp = (top - xsize) & ~63ULL; /* xrstor wants 64-byte alignment */
		top = fp;
	}
	d = (top - sizeof(v)) & ~15ULL;
	f->lo = d - 8;
	f->uc = d;
	f->len = (size_t)((fp ? fp + xsize : d + sizeof(v)) - f->lo);
	f->buf = calloc(1, f->len);
	if (!f->buf)
		return -ENOMEM;
	/* restart_syscall works: the stub leaves the restart_block alone. */
	restart_point(saved, true, resume, &rax);
	v[0] = mask;
	v[1] = fp;
	v[2] = saved->r15;
	v[3] = saved->r14;
	v[4] = saved->r13;
	v[5] = saved->r12;
	v[6] = saved->r11;
	v[7] = saved->r10;
	v[8] = saved->r9;
	v[9] = saved->r8;
	v[10] = saved->rdi;
	v[11] = saved->rsi;
	v[12] = saved->rbp;
	v[13] = saved->rbx;
	v[14] = saved->rdx;
	v[15] = saved->rcx;
	v[16] = rax;
	v[17] = saved->eflags & ~(X86_EFLAGS_TF);
	v[18] = saved->rsp;
	memcpy(f->buf, &ret, 8);
	memcpy(f->buf + 8, v, sizeof(v));
	if (fp)
		memcpy(f->buf + (fp - f->lo), xstate, xsize);
	return 0;
}

void arch_sigframe_free(struct arch_sigframe *f)
{
	free(f->buf);
	f->buf = NULL;
}

void arch_call_from_frame(struct user_regs_struct *regs, uint64_t fn, const uint64_t args[6],
			  const struct arch_sigframe *f)
{
	uint64_t slot;

	arch_prepare_call(regs, fn, args, &slot);
	regs->rsp = f->lo; /* 8 mod 16, as at a function's entry */
}
