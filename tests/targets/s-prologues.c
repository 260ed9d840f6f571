/* SPDX-License-Identifier: MIT */
/*
 * s-prologues - functions whose prologues exercise each planner decision,
 * for `utrace -l ... --why` (tests/unit/test-planner.c). Hand-written so the
 * bytes do not depend on the compiler. Running it calls none of them; with
 * an argument it prints "ready" and waits to be killed.
 */
#include <stdio.h>
#include <unistd.h>

__asm__(".intel_syntax noprefix\n"
	".text\n"
	/* jmp: push rbp; mov rbp, rsp; sub rsp, 16 */
	".globl p_classic\n.type p_classic, @function\np_classic:\n"
	"	push rbp\n	mov rbp, rsp\n	sub rsp, 16\n	leave\n	ret\n"
	".size p_classic, . - p_classic\n"
	/* jmp after endbr64 (mov r9, rdi writes an argument: it is not kept) */
	".globl p_endbr\n.type p_endbr, @function\np_endbr:\n"
	"	endbr64\n	mov r9, rdi\n	push r15\n	push r14\n	pop r14\n	pop r15\n	ret\n"
	".size p_endbr, . - p_endbr\n"
	/* jmp after a kept first instruction (planner.c rule 5, the agent) */
	".globl p_kept\n.type p_kept, @function\np_kept:\n"
	"	xor eax, eax\n	push rbx\n	push rbp\n	push r12\n	pop r12\n	pop rbp\n	pop rbx\n"
	"	ret\n"
	".size p_kept, . - p_kept\n"
	/* refused: the first instruction is a syscall */
	".globl p_syscall\n.type p_syscall, @function\np_syscall:\n"
	"	syscall\n	ret\n"
	".size p_syscall, . - p_syscall\n"
	/* int3: the syscall would be displaced */
	".globl p_pre_syscall\n.type p_pre_syscall, @function\np_pre_syscall:\n"
	"	xor edi, edi\n	syscall\n	ret\n"
	".size p_pre_syscall, . - p_pre_syscall\n"
	/* int3: a loop head at +1 */
	".globl p_loop_head\n.type p_loop_head, @function\np_loop_head:\n"
	"	push rbx\n1:	dec rdi\n	jnz 1b\n	pop rbx\n	ret\n"
	".size p_loop_head, . - p_loop_head\n"
	/* refused: ud2 */
	".globl p_ud2\n.type p_ud2, @function\np_ud2:\n"
	"	ud2\n"
	".size p_ud2, . - p_ud2\n"
	/* int3: too short */
	".globl p_short\n.type p_short, @function\np_short:\n"
	"	xor eax, eax\n	ret\n"
	".size p_short, . - p_short\n"
	".att_syntax prefix\n");

int main(int argc, char **argv)
{
	if (argc > 1) { /* "wait": stay alive for utrace -l -p */
		printf("ready\n");
		fflush(stdout);
		pause();
	}
	return 0;
}
