/* SPDX-License-Identifier: MIT */
/*
 * exec-harness.S - call a function with every register set to a known
 * pattern, and snapshot the complete register state when execution reaches
 * exec_snapshot (a jmp planted at the end of the displaced bytes sends it
 * there). Used by test-reloc-exec.c to compare a native run with a run
 * through the relocated prologue: same registers, same flags, same stack.
 *
 *   long exec_call(void *fn, long a, long b);
 *
 * Returns fn's return value, or the value of rax at the snapshot if
 * exec_snapshot was reached (exec_snap.taken is then 1). The snapshot holds
 * the 16 general registers, rflags, the stack below the caller and
 * xmm0..xmm15. Not reentrant.
 */
	.intel_syntax noprefix
	.text

	.globl exec_call
	.type exec_call, @function
exec_call:
	push rbp
	push rbx
	push r12
	push r13
	push r14
	push r15
	mov [rip + exec_saved_rsp], rsp
	mov [rip + exec_fn], rdi
	mov r8, rsi
	mov r9, rdx
	/* zero the stack below us: reserved-but-unwritten slots compare equal */
	lea rdi, [rsp - 2048]
	mov rcx, 2048
	xor eax, eax
	cld
	rep stosb
	mov rdi, r8			/* a */
	mov rsi, r9			/* b */
	movabs rax, 0x1010101010101010
	movabs rbx, 0x2020202020202020
	movabs rcx, 0x3030303030303030
	movabs rdx, 0x4040404040404040
	movabs rbp, 0x5050505050505050
	movabs r8, 0x6060606060606060
	movabs r9, 0x7070707070707070
	movabs r10, 0x8080808080808080
	movabs r11, 0x9090909090909090
	movabs r12, 0xa0a0a0a0a0a0a0a0
	movabs r13, 0xb0b0b0b0b0b0b0b0
	movabs r14, 0xc0c0c0c0c0c0c0c0
	movabs r15, 0xd0d0d0d0d0d0d0d0
	/* xmm0..15: patterns too, so both runs start from the same vector state */
	movq xmm0, rax
	movq xmm1, rbx
	movq xmm2, rcx
	movq xmm3, rdx
	movq xmm4, rbp
	movq xmm5, r8
	movq xmm6, r9
	movq xmm7, r10
	movq xmm8, r11
	movq xmm9, r12
	movq xmm10, r13
	movq xmm11, r14
	movq xmm12, r15
	movq xmm13, rdi
	movq xmm14, rsi
	pxor xmm15, xmm15
	push 0x247			/* CF PF ZF IF: a flags pattern */
	popfq
	call [rip + exec_fn]
	pop r15
	pop r14
	pop r13
	pop r12
	pop rbx
	pop rbp
	ret
	.size exec_call, . - exec_call

	.globl exec_snapshot
	.type exec_snapshot, @function
exec_snapshot:
	mov [rip + exec_snap + 0 * 8], rax
	mov [rip + exec_snap + 1 * 8], rbx
	mov [rip + exec_snap + 2 * 8], rcx
	mov [rip + exec_snap + 3 * 8], rdx
	mov [rip + exec_snap + 4 * 8], rsi
	mov [rip + exec_snap + 5 * 8], rdi
	mov [rip + exec_snap + 6 * 8], rbp
	mov [rip + exec_snap + 7 * 8], rsp
	mov [rip + exec_snap + 8 * 8], r8
	mov [rip + exec_snap + 9 * 8], r9
	mov [rip + exec_snap + 10 * 8], r10
	mov [rip + exec_snap + 11 * 8], r11
	mov [rip + exec_snap + 12 * 8], r12
	mov [rip + exec_snap + 13 * 8], r13
	mov [rip + exec_snap + 14 * 8], r14
	mov [rip + exec_snap + 15 * 8], r15
	pushfq
	pop rax
	mov [rip + exec_snap + 16 * 8], rax
	movdqu [rip + exec_snap + 19 * 8 + 512 + 0 * 16], xmm0
	movdqu [rip + exec_snap + 19 * 8 + 512 + 1 * 16], xmm1
	movdqu [rip + exec_snap + 19 * 8 + 512 + 2 * 16], xmm2
	movdqu [rip + exec_snap + 19 * 8 + 512 + 3 * 16], xmm3
	movdqu [rip + exec_snap + 19 * 8 + 512 + 4 * 16], xmm4
	movdqu [rip + exec_snap + 19 * 8 + 512 + 5 * 16], xmm5
	movdqu [rip + exec_snap + 19 * 8 + 512 + 6 * 16], xmm6
	movdqu [rip + exec_snap + 19 * 8 + 512 + 7 * 16], xmm7
	movdqu [rip + exec_snap + 19 * 8 + 512 + 8 * 16], xmm8
	movdqu [rip + exec_snap + 19 * 8 + 512 + 9 * 16], xmm9
	movdqu [rip + exec_snap + 19 * 8 + 512 + 10 * 16], xmm10
	movdqu [rip + exec_snap + 19 * 8 + 512 + 11 * 16], xmm11
	movdqu [rip + exec_snap + 19 * 8 + 512 + 12 * 16], xmm12
	movdqu [rip + exec_snap + 19 * 8 + 512 + 13 * 16], xmm13
	movdqu [rip + exec_snap + 19 * 8 + 512 + 14 * 16], xmm14
	movdqu [rip + exec_snap + 19 * 8 + 512 + 15 * 16], xmm15
	/* the stack the function built: [rsp, exec_saved_rsp), at most 512 bytes */
	mov rsi, [rip + exec_snap + 7 * 8]
	mov rcx, [rip + exec_saved_rsp]
	sub rcx, rsi
	cmp rcx, 512
	jbe 1f
	mov rcx, 512
1:	mov [rip + exec_snap + 17 * 8], rcx
	lea rdi, [rip + exec_snap + 19 * 8]
	cld
	rep movsb
	mov qword ptr [rip + exec_snap + 18 * 8], 1	/* taken */
	mov rax, [rip + exec_snap + 0 * 8]
	mov rsp, [rip + exec_saved_rsp]
	pop r15
	pop r14
	pop r13
	pop r12
	pop rbx
	pop rbp
	ret
	.size exec_snapshot, . - exec_snapshot

	.bss
	.align 16
	.globl exec_snap
exec_snap:
	.skip 19 * 8 + 512 + 16 * 16
	.size exec_snap, . - exec_snap
exec_saved_rsp:
	.skip 8
exec_fn:
	.skip 8

	.section .note.GNU-stack, "", @progbits
