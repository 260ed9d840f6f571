/* SPDX-License-Identifier: MIT */
/*
 * regs.c - x86-64 registers and syscall ABI for the engine layer: the
 * syscall number in rax at the instruction and in orig_rax once in the
 * kernel, arguments in rdi, rsi, rdx, r10, r8, r9, the result in rax.
 * Tracer process; pure functions.
 */
#include <errno.h>

#include "arch.h"

#define X86_EFLAGS_TF 0x100ULL
#define X86_EFLAGS_DF 0x400ULL

/**
 * arch_syscall_insn_at - "syscall" is 0f 05.
 * @buf: at least ARCH_SYSCALL_INSN_LEN bytes
 *
 * Return: true if @buf starts with a syscall instruction.
 */
bool arch_syscall_insn_at(const unsigned char *buf)
{
	return buf[0] == 0x0f && buf[1] == 0x05;
}

/**
 * arch_regs_to_syscall - decode a syscall stop's registers.
 * @regs: registers at the stop
 * @sc: filled: nr (orig_rax), args, ret (rax), pc, sp
 *
 * Return: nothing.
 */
void arch_regs_to_syscall(const struct user_regs_struct *regs, struct utrace_syscall *sc)
{
	sc->nr = (long)regs->orig_rax;
	sc->args[0] = regs->rdi;
	sc->args[1] = regs->rsi;
	sc->args[2] = regs->rdx;
	sc->args[3] = regs->r10;
	sc->args[4] = regs->r8;
	sc->args[5] = regs->r9;
	sc->ret = (long)regs->rax;
	sc->instruction_pointer = regs->rip;
	sc->stack_pointer = regs->rsp;
}

/**
 * arch_set_syscall - change the syscall a thread at an entry stop will run.
 * @regs: registers to modify
 * @nr: syscall number (orig_rax: what the kernel dispatches on after the stop)
 * @args: its six arguments
 *
 * Return: nothing.
 */
void arch_set_syscall(struct user_regs_struct *regs, long nr, const uint64_t args[6])
{
	regs->orig_rax = (unsigned long long)nr;
	regs->rdi = args[0];
	regs->rsi = args[1];
	regs->rdx = args[2];
	regs->r10 = args[3];
	regs->r8 = args[4];
	regs->r9 = args[5];
}

/**
 * arch_syscall_ret - the syscall result register.
 * @regs: registers at an exit stop
 *
 * Return: rax as a signed value (-errno on failure).
 */
long arch_syscall_ret(const struct user_regs_struct *regs)
{
	return (long)regs->rax;
}

/**
 * arch_set_syscall_ret - set the syscall result register.
 * @regs: registers to modify
 * @ret: new result
 *
 * Return: nothing.
 */
void arch_set_syscall_ret(struct user_regs_struct *regs, long ret)
{
	regs->rax = (unsigned long long)ret;
}

/**
 * arch_skip_syscall - skip the syscall at an entry (or seccomp) stop.
 * @regs: registers to modify
 * @ret: what the skipped syscall returns
 *
 * orig_rax = -1 makes do_syscall_64() run nothing and leave rax alone.
 * Return: nothing.
 */
void arch_skip_syscall(struct user_regs_struct *regs, long ret)
{
	regs->orig_rax = (unsigned long long)-1;
	regs->rax = (unsigned long long)ret;
}

/**
 * arch_prepare_remote - set up registers for a remote syscall.
 * @regs: registers to modify (a copy of the thread's)
 * @insn: address of a syscall instruction in the target
 * @nr: syscall number
 * @args: its six arguments
 *
 * orig_rax = -1: the thread is not "in a syscall" any more, so the
 * kernel's restart code (which rewinds rip by 2) leaves the new rip alone.
 * Return: nothing.
 */
void arch_prepare_remote(struct user_regs_struct *regs, uint64_t insn, long nr,
			 const uint64_t args[6])
{
	arch_set_syscall(regs, -1, args);
	regs->rip = insn;
	regs->rax = (unsigned long long)nr;
	regs->eflags &= ~(X86_EFLAGS_TF | X86_EFLAGS_DF);
}

/**
 * arch_rewind_syscall - re-execute a syscall from its exit stop.
 * @regs: registers to modify
 * @entry: the registers at that syscall's entry stop
 *
 * The pc goes back over the syscall instruction and rax gets the number
 * again, as the kernel does for -ERESTARTNOINTR.
 * Return: nothing.
 */
void arch_rewind_syscall(struct user_regs_struct *regs, const struct user_regs_struct *entry)
{
	*regs = *entry;
	regs->rip = entry->rip - ARCH_SYSCALL_INSN_LEN;
	regs->rax = entry->orig_rax;
}

/**
 * arch_at_entry_stop - fallback test for a syscall-entry stop.
 * @regs: registers at a syscall stop
 *
 * At the entry stop the kernel has preset rax to -ENOSYS. A syscall that
 * returns -ENOSYS looks the same at its exit, hence only a fallback.
 * Return: true if it looks like an entry stop.
 */
bool arch_at_entry_stop(const struct user_regs_struct *regs)
{
	return (long)regs->rax == -ENOSYS;
}
