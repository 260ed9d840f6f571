/* SPDX-License-Identifier: MIT */
/*
 * call-stub.S - the code the injection copies into the target (one page it
 * maps first, read and execute only) so that remote function calls and
 * syscalls come back by themselves if the tracer dies meanwhile. Assembled
 * here, never run here: the tracer copies the bytes between
 * arch_call_stub_start and arch_call_stub_end. Position independent.
 * Why and how: the essay "KILL-SAFE RETURNS" in call.c.
 *
 * Runs in the target thread that made the call, with every signal blocked
 * but the synchronous faults and SIGSETXID (the tracer's call mask).
 */
	.section .rodata.utrace_stub, "a"
	.p2align 6
	.globl arch_call_stub_start
	.globl arch_call_stub_end
	.globl arch_call_stub_marker
	.globl arch_call_stub_sys
	.globl arch_call_stub_resume
	.hidden arch_call_stub_start, arch_call_stub_end, arch_call_stub_marker
	.hidden arch_call_stub_sys, arch_call_stub_resume

arch_call_stub_start:
	/* The callee returns here; rsp = the frame's data (call.c). */
	mov	%rax, %rdi		/* the result, for the tracer */
	mov	$39, %eax		/* getpid: the marker */
	syscall
arch_call_stub_marker:
	/*
	 * Only reached when the tracer is gone (it restores with ptrace and
	 * never lets the thread run on from the marker). The data at rsp:
	 * mask, xstate address (0: none), r15 ... rax, rflags, rsp.
	 */
	mov	$14, %eax		/* rt_sigprocmask(SIG_SETMASK, rsp, NULL, 8) */
	mov	$2, %edi
	mov	%rsp, %rsi
	xor	%edx, %edx
	mov	$8, %r10d
	syscall
	/*
	 * From here on a signal may be delivered: its handler runs on this
	 * stack below rsp, where nothing is needed any more.
	 */
	mov	8(%rsp), %rcx
	test	%rcx, %rcx
	jz	1f
	mov	$-1, %eax
	mov	$-1, %edx
	xrstor64 (%rcx)
1:	lea	16(%rsp), %rsp
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rdi
	pop	%rsi
	pop	%rbp
	pop	%rbx
	pop	%rdx
	pop	%rcx
	pop	%rax
	popfq
	pop	%rsp
	jmp	*arch_call_stub_resume(%rip)	/* rip, or rip - 2: the restart */

	/* sys(nr, a0, a1, a2, a3, a4): a remote syscall as a remote call. */
arch_call_stub_sys:
	mov	%rdi, %rax
	mov	%rsi, %rdi
	mov	%rdx, %rsi
	mov	%rcx, %rdx
	mov	%r8, %r10
	mov	%r9, %r8
	syscall
	ret

	.p2align 3
arch_call_stub_resume:
	.quad	0			/* written by the tracer before each call */
arch_call_stub_end:

	.section .note.GNU-stack, "", @progbits
