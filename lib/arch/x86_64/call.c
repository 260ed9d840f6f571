/* SPDX-License-Identifier: MIT */
/*
 * call.c - x86-64 SysV calling convention for remote function calls:
 * integer arguments in rdi, rsi, rdx, rcx, r8, r9, the result in rax, al =
 * number of vector registers for variadic callees (0), rsp + 8 16-byte
 * aligned at the callee's first instruction (the return address just
 * pushed), direction flag clear. Tracer process; pure functions.
 */
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
