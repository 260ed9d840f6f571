/* SPDX-License-Identifier: MIT */
/*
 * funcs.c - victim functions for the execute-and-compare relocation test
 * (tests/unit/test-reloc-exec.c). Built as one shared object per compiler
 * and flag set (gcc and clang, -O0 and -O2, with and without
 * -fcf-protection), so the prologues cover what real compilers emit:
 * RIP-relative loads and stores (GOT and local data), jcc in the first
 * bytes, calls and tail calls, jump tables, loops whose head is at the
 * entry, stack protector loads from fs:0x28, SSE constants, endbr64.
 *
 * Every function is long f(long a, long b) and is listed in func_names[].
 */
#include <stddef.h>
#include <string.h>

#define API __attribute__((visibility("default"), noinline))

long reloc_counter = 3; /* exported: accessed through the GOT */
static long local_counter = 5; /* local: direct RIP-relative */
int reloc_flag = 4;

API long f_add(long a, long b)
{
	return a + b;
}

API long f_global(long a, long b)
{
	reloc_counter += a;
	return reloc_counter * b;
}

API long f_local(long a, long b)
{
	local_counter = local_counter * 3 + a;
	return local_counter - b;
}

API long f_early_jcc(long a, long b)
{
	if (a == 0)
		return b;
	return a * b + 1;
}

API long f_loop(long a, long b)
{
	long s = 0, i;

	for (i = 0; i < (a & 63); i++)
		s += i * b;
	return s;
}

static __attribute__((noinline)) long helper(long x)
{
	__asm__ volatile("" ::: "memory");
	return x * 7 + 1;
}

API long f_ext(long x)
{
	return x ^ 0x55;
}

API long f_call(long a, long b)
{
	return helper(a) + b;
}

API long f_call_plt(long a, long b)
{
	return f_ext(a) * 2 + b;
}

API long f_tail(long a, long b)
{
	return helper(a + b);
}

API long f_switch(long a, long b)
{
	switch (a & 7) {
	case 0:
		return b + 11;
	case 1:
		return b * 13;
	case 2:
		return b - 17;
	case 3:
		return b ^ 19;
	case 4:
		return b << 2;
	case 5:
		return b >> 1;
	case 6:
		return -b;
	default:
		return 23;
	}
}

API long f_fib(long a, long b)
{
	a &= 15;
	return a < 2 ? a + b : f_fib(a - 1, b) + f_fib(a - 2, 0);
}

API long f_string(long a, long b)
{
	static const char *s[] = { "a", "bb", "ccc", "dddd" };

	return (long)strlen(s[a & 3]) + b;
}

API long f_stack(long a, long b)
{
	volatile char buf[64];
	size_t i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(a + i);
	return buf[b & 63] + buf[a & 63];
}

API long f_float(long a, long b)
{
	return (long)((double)a * 1.5 + (double)b * 2.25);
}

API long f_regs(long a, long b)
{
	long x1 = a + 1, x2 = b + 2, x3 = a * b, x4 = a - b, x5 = a ^ b, x6 = a | 7;
	long r = helper(x1);

	r += helper(x2) * x3;
	r -= helper(x4) + x5 * x6;
	return r + x1 + x2 + x3 + x4 + x5 + x6;
}

API long f_do_while(long a, long b)
{
	b &= 31;
	do {
		a = a * 3 + 1;
		b--;
	} while (b > 0);
	return a;
}

API long f_cmp_global(long a, long b)
{
	if (reloc_flag > 3)
		return a - b;
	return b;
}

API long f_min(long a, long b)
{
	return a < b ? a : b;
}

/*
 * Hand-written prologues no compiler emits, to execute the label dance for
 * loop and jrcxz (they have no rel32 form): both sit inside the first 5
 * bytes, with a target outside them.
 */
__asm__(".intel_syntax noprefix\n"
	".text\n"
	".globl f_asm_jrcxz\n"
	".type f_asm_jrcxz, @function\n"
	"f_asm_jrcxz:\n"
	"	mov rcx, rdi\n" /* 48 89 f9 */
	"	jrcxz 1f\n" /* e3 xx */
	"	lea rax, [rsi + 100]\n"
	"	ret\n"
	"1:	lea rax, [rsi + 200]\n"
	"	ret\n"
	".size f_asm_jrcxz, . - f_asm_jrcxz\n"
	".globl f_asm_loop\n"
	".type f_asm_loop, @function\n"
	"f_asm_loop:\n"
	"	mov rcx, rdi\n" /* 48 89 f9 */
	"	loop 1f\n" /* e2 xx: rcx--, jump if not zero */
	"	lea rax, [rsi + rcx + 100]\n"
	"	ret\n"
	"1:	lea rax, [rsi + rcx + 200]\n"
	"	ret\n"
	".size f_asm_loop, . - f_asm_loop\n"
	/* RIP-relative SSE and VEX loads in the displaced bytes (xmm state) */
	".globl f_asm_sse\n"
	".type f_asm_sse, @function\n"
	"f_asm_sse:\n"
	"	movsd xmm0, [rip + 2f]\n" /* f2 0f 10 05 disp32 */
	"	cvtsi2sd xmm1, rdi\n"
	"	addsd xmm0, xmm1\n"
	"	cvttsd2si rax, xmm0\n"
	"	ret\n"
	".size f_asm_sse, . - f_asm_sse\n"
	".globl f_asm_vex\n"
	".type f_asm_vex, @function\n"
	"f_asm_vex:\n"
	"	vmovsd xmm2, [rip + 2f]\n" /* c5 fb 10 15 disp32: needs a near trampoline */
	"	vcvtsi2sd xmm3, xmm3, rsi\n"
	"	vmulsd xmm2, xmm2, xmm3\n"
	"	vcvttsd2si rax, xmm2\n"
	"	ret\n"
	".size f_asm_vex, . - f_asm_vex\n"
	".section .rodata\n"
	".balign 8\n"
	"2:	.double 2.5\n"
	".text\n"
	".att_syntax prefix\n");

__attribute__((visibility("default"))) const char *const func_names[] = {
	"f_add",       "f_global",   "f_local",	   "f_early_jcc",  "f_loop",   "f_call",
	"f_call_plt",  "f_tail",     "f_switch",   "f_fib",	   "f_string", "f_stack",
	"f_float",     "f_regs",     "f_do_while", "f_cmp_global", "f_min",    "f_ext",
	"f_asm_jrcxz", "f_asm_loop", "f_asm_sse",  "f_asm_vex",	   NULL,
};
