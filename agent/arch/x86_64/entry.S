/* SPDX-License-Identifier: MIT */
/*
 * entry.S - the trampoline thunks of libutrace-agent.so (x86-64).
 *
 * __utrace_agent_entry is called from a probe's trampoline slot (see abi.h):
 *
 *	slot+0   lea  rsp, [rsp - 128]      the application's red zone is skipped
 *	slot+5   push imm32 (probe id)
 *	slot+18  call [rip + area_thunk]    -> here
 *	slot+24  lea  rsp, [rsp + 136]
 *	slot+32  displaced instructions (relocated), jmp back to site + len
 *
 * On entry: [rsp] = slot+24, [rsp+8] = probe id, [rsp+16..144) = the skipped
 * red zone, rsp+144 = the application's rsp at the site.
 *
 * The thunk saves rflags and the 15 integer registers as a struct
 * user_regs_struct (216 bytes; rip = the site, rsp = the application's),
 * aligns the stack, clears DF (the C ABI), and calls
 * utrace_dispatch_entry(id, regs). SIMD state is not saved: the agent is
 * compiled with -mgeneral-regs-only. The return value picks the exit:
 *	0  restore, ret to slot+24: run the displaced instructions
 *	1  a handler changed rip: restore, continue at the rip the dispatcher
 *	   stored in the id word, with the application's rsp (ret 128)
 *	2  a handler changed rip and rsp (rsp only grows: set_return pops the
 *	   return address): the dispatcher stored rip at new_rsp - 8 and
 *	   new_rsp - 8 in the return word; restore, rsp = that, ret
 * Handlers may change every integer register and the arithmetic flags and
 * DF of rflags.
 *
 * Counting fast path. A probe that only counts (flags == UTRACE_PF_COUNT,
 * with or without UTRACE_PF_ENTRY,
 * no in-process handler: `utrace -c -u`, the -c of a plain entry) needs
 * none of that: the thunk checks, with three scratch registers and the
 * flags saved by pushfq, exactly what utrace_dispatch_entry()'s C fast
 * path checks (the id is in use, the agent active, the probe armed, the
 * thread has a task of this session with a counter slot and is not inside
 * the agent), adds one to the thread's counter and returns to the slot;
 * the arithmetic flags come back through sahf (and OF through an add), as
 * in RESTORE_GPRS: popfq alone would cost more than the rest of the hit.
 * DF is never changed on this path. Anything else goes the full way, with
 * the registers and the pushfq word exactly as on entry.
 */
#include "offsets.h"


#define F_R15 0
#define F_R14 8
#define F_R13 16
#define F_R12 24
#define F_RBP 32
#define F_RBX 40
#define F_R11 48
#define F_R10 56
#define F_R9 64
#define F_R8 72
#define F_RAX 80
#define F_RCX 88
#define F_RDX 96
#define F_RSI 104
#define F_RDI 112
#define F_RIP 128
#define F_EFLAGS 144
#define F_RSP 152
#define FRAME 216

.macro SAVE_GPRS
	movq	%r15, F_R15(%rsp)
	movq	%r14, F_R14(%rsp)
	movq	%r13, F_R13(%rsp)
	movq	%r12, F_R12(%rsp)
	movq	%rbp, F_RBP(%rsp)
	movq	%rbx, F_RBX(%rsp)
	movq	%r11, F_R11(%rsp)
	movq	%r10, F_R10(%rsp)
	movq	%r9, F_R9(%rsp)
	movq	%r8, F_R8(%rsp)
	movq	%rax, F_RAX(%rsp)
	movq	%rcx, F_RCX(%rsp)
	movq	%rdx, F_RDX(%rsp)
	movq	%rsi, F_RSI(%rsp)
	movq	%rdi, F_RDI(%rsp)
.endm

/*
 * Restore the GPRs and the arithmetic flags without popfq (which costs
 * ~17 cycles, a third of a hit): OF through "add $0x7f" on 0 or 1, then
 * SF ZF AF PF CF through sahf, DF through std/cld. The other rflags bits
 * (TF, AC, IF...) are not changed by the trampoline and so need no restore.
 * rcx and rax go last: they are the scratch registers.
 */
.macro RESTORE_GPRS
	movq	F_R15(%rsp), %r15
	movq	F_R14(%rsp), %r14
	movq	F_R13(%rsp), %r13
	movq	F_R12(%rsp), %r12
	movq	F_RBP(%rsp), %rbp
	movq	F_RBX(%rsp), %rbx
	movq	F_R11(%rsp), %r11
	movq	F_R10(%rsp), %r10
	movq	F_R9(%rsp), %r9
	movq	F_R8(%rsp), %r8
	movq	F_RDX(%rsp), %rdx
	movq	F_RSI(%rsp), %rsi
	movq	F_RDI(%rsp), %rdi
	movq	F_EFLAGS(%rsp), %rax
	testl	$0x400, %eax
	jz	77f
	std
77:	movl	%eax, %ecx
	shrl	$11, %ecx
	andl	$1, %ecx
	addb	$0x7f, %cl
	movb	%al, %ah
	sahf
	movq	F_RCX(%rsp), %rcx
	movq	F_RAX(%rsp), %rax
.endm

	.text
	.p2align 4
	.globl	__utrace_agent_entry
	.type	__utrace_agent_entry, @function
__utrace_agent_entry:
	.cfi_startproc
	pushfq
	pushq	%rax
	pushq	%rcx
	pushq	%rdx
	/* [rsp] rdx, +8 rcx, +16 rax, +24 rflags, +32 ret to the slot, +40 id */
	movl	40(%rsp), %edx
	cmpl	agent_nr_probes(%rip), %edx
	jae	.Lslow
	cmpl	$0, agent_active(%rip)
	je	.Lslow
	imulq	$AO_PROBE_SIZE, %rdx, %rcx
	addq	agent_probes(%rip), %rcx
	movl	AO_PROBE_FLAGS(%rcx), %eax
	andl	$~AO_PF_ENTRY, %eax	/* ENTRY alone changes nothing for counting */
	cmpl	$AO_PF_COUNT, %eax
	jne	.Lslow
	cmpl	$0, AO_PROBE_NR_HANDLERS(%rcx)
	jne	.Lslow
	movl	AO_PROBE_STATE(%rcx), %eax
	subl	$AO_PS_INT3, %eax
	cmpl	$1, %eax
	ja	.Lslow
	movq	utrace_tls_task@gottpoff(%rip), %rax
	movq	%fs:(%rax), %rax
	testq	%rax, %rax
	jz	.Lslow
	cmpl	$0, AO_TASK_GUARD(%rax)
	jne	.Lslow
	movl	AO_TASK_GEN(%rax), %ecx
	cmpl	agent_gen(%rip), %ecx
	jne	.Lslow
	movq	AO_TASK_HITS(%rax), %rcx
	testq	%rcx, %rcx
	jz	.Lslow
	incq	(%rcx,%rdx,8)		/* one instruction: a signal cannot split it */
	movq	24(%rsp), %rax		/* the application's rflags: SF ZF AF PF CF, OF */
	movl	%eax, %ecx
	shrl	$11, %ecx
	andl	$1, %ecx
	addb	$0x7f, %cl
	movb	%al, %ah
	sahf
	popq	%rdx
	popq	%rcx
	popq	%rax
	leaq	8(%rsp), %rsp		/* the pushfq word; lea keeps the flags */
	ret				/* to slot+24 */
.Lslow:
	popq	%rdx
	popq	%rcx
	popq	%rax
	subq	$FRAME, %rsp
	SAVE_GPRS
	movq	FRAME(%rsp), %rax
	movq	%rax, F_EFLAGS(%rsp)
	leaq	FRAME + 8 + 8 + 8 + 128(%rsp), %rax	/* the application's rsp */
	movq	%rax, F_RSP(%rsp)
	movl	FRAME + 16(%rsp), %edi			/* probe id */
	movq	%rsp, %rsi
	movq	%rsp, %rbx
	andq	$-16, %rsp
	cld
	call	utrace_dispatch_entry
	movq	%rbx, %rsp
	cmpl	$1, %eax
	je	1f
	ja	2f
	RESTORE_GPRS
	leaq	FRAME + 8(%rsp), %rsp	/* and the pushfq word */
	ret				/* to slot+24 */
1:	RESTORE_GPRS
	leaq	FRAME + 16(%rsp), %rsp	/* the pushfq word, the return into the slot */
	ret	$128			/* to the new rip; rsp = the application's */
2:	RESTORE_GPRS
	leaq	FRAME + 8(%rsp), %rsp
	movq	(%rsp), %rsp		/* new_rsp - 8, where the new rip is */
	ret
	.cfi_endproc
	.size	__utrace_agent_entry, . - __utrace_agent_entry

/*
 * __utrace_agent_ret_tramp - where a hijacked return address leads. Entered
 * by the probed function's ret: rsp = its entry rsp + 8. The stack below
 * rsp is dead here (the caller's red zone does not survive a call). Saves
 * everything as above, calls utrace_dispatch_return(regs), which pops the
 * matching return instance and gives the real return address; handlers may
 * change rax (the return value) and the other registers.
 */
	.p2align 4
	.globl	__utrace_agent_ret_tramp
	.type	__utrace_agent_ret_tramp, @function
__utrace_agent_ret_tramp:
	.cfi_startproc
	pushq	$0			/* becomes the real return address */
	pushfq
	subq	$FRAME, %rsp
	SAVE_GPRS
	movq	FRAME(%rsp), %rax
	movq	%rax, F_EFLAGS(%rsp)
	leaq	FRAME + 16(%rsp), %rax
	movq	%rax, F_RSP(%rsp)
	movq	%rsp, %rdi
	movq	%rsp, %rbx
	andq	$-16, %rsp
	cld
	call	utrace_dispatch_return
	movq	%rbx, %rsp
	movq	%rax, FRAME + 8(%rsp)
	RESTORE_GPRS
	leaq	FRAME + 8(%rsp), %rsp
	ret
	.cfi_endproc
	.size	__utrace_agent_ret_tramp, . - __utrace_agent_ret_tramp

	.section .note.GNU-stack, "", @progbits
