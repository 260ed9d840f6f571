/* SPDX-License-Identifier: MIT */
/*
 * test-planner.c - the site planner (lib/arch/x86_64/planner.c) and the
 * branch-target index on small hand-written modules: each rule of "is a
 * 5-byte jmp safe at this site?" and the text of each refusal.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utrace/utrace.h"
#include "arch.h"
#include "harness.h"
#include "util.h"

#define BASE 0x401000ULL

/* A tiny "module": one executable section at BASE holding @code. */
struct module {
	struct utrace_elf_section sec;
	struct branch_index *bti;
};

static void module_init(struct module *m, const uint8_t *code, size_t len)
{
	m->sec = (struct utrace_elf_section){ ".text", BASE, len, code };
	m->bti = branch_index__new(&m->sec, 1, NULL, 0);
	CHECK(m->bti);
}

static void module_clear(struct module *m)
{
	branch_index__free(m->bti);
}

/* Plan the site at BASE + @off in a function [BASE + @func, +@size). */
static int plan(const struct module *m, uint64_t off, uint64_t func, uint64_t size, bool live,
		struct site_plan *p)
{
	struct site_input in = {
		.addr = BASE + off,
		.bytes = m->sec.data + off,
		.len = m->sec.size - off,
		.func_addr = BASE + func,
		.func_size = size,
		.bti = m->bti,
		.live = live,
	};

	return site_plan(&in, p);
}

static const char *why(const struct site_plan *p)
{
	static char buf[256];

	site_plan__why(p, buf, sizeof(buf));
	return buf;
}

TEST(plan_classic_prologue)
{
	static const uint8_t code[] = {
		0x55, /* push rbp */
		0x48, 0x89, 0xe5, /* mov rbp, rsp */
		0x48, 0x83, 0xec, 0x10, /* sub rsp, 0x10 */
		0xc9, /* leave */
		0xc3, /* ret */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 0, 0, sizeof(code), true, &p), 0);
	CHECK_EQ(p.mode, SITE_JMP);
	CHECK_EQ(p.addr, BASE);
	CHECK_EQ(p.len, 8);
	CHECK_EQ(p.nr_insns, 3);
	CHECK_EQ(p.fail, SITE_FAIL_NONE);
	CHECK_STREQ(why(&p), "");
	module_clear(&m);
}

TEST(plan_endbr64_stays)
{
	static const uint8_t code[] = {
		0xf3, 0x0f, 0x1e, 0xfa, /* endbr64 */
		0x41, 0x57, /* push r15 */
		0x41, 0x56, /* push r14 */
		0x41, 0x55, /* push r13 */
		0xc3, /* ret */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 0, 0, sizeof(code), true, &p), 0);
	CHECK_EQ(p.mode, SITE_JMP);
	CHECK_EQ(p.addr, BASE + 4); /* after endbr64 */
	CHECK_EQ(p.len, 6);
	module_clear(&m);
}

/* A function that is only endbr64: the probe must not move into the next one. */
TEST(plan_endbr64_alone)
{
	static const uint8_t code[] = {
		0xf3, 0x0f, 0x1e, 0xfa, /* endbr64 */
		0x55, /* push rbp: the next function */
		0x48, 0x89, 0xe5, /* mov rbp, rsp */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 0, 0, 4, true, &p), 0);
	CHECK_EQ(p.addr, BASE);
	CHECK_EQ(p.mode, SITE_INT3);
	CHECK_EQ(p.len, 4);
	module_clear(&m);
}

TEST(plan_syscall_refused)
{
	static const uint8_t code[] = {
		0x0f, 0x05, /* syscall */
		0xc3, /* ret */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 0, 0, sizeof(code), true, &p), -UTRACE_ERRNO__RELOC);
	CHECK_EQ(p.mode, SITE_REFUSED);
	CHECK_EQ(p.fail, SITE_FAIL_UNSAFE_INSN);
	CHECK_STREQ(why(&p), "instruction 'syscall' cannot run out of line");
	module_clear(&m);
}

TEST(plan_syscall_not_displaced)
{
	static const uint8_t code[] = {
		0x31, 0xff, /* xor edi, edi */
		0x0f, 0x05, /* syscall */
		0xc3, /* ret */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 0, 0, sizeof(code), true, &p), 0);
	CHECK_EQ(p.mode, SITE_INT3);
	CHECK_EQ(p.len, 2);
	CHECK_EQ(p.fail, SITE_FAIL_STOP_INSN);
	CHECK_EQ(p.fail_addr, BASE + 2);
	CHECK_STREQ(why(&p), "'syscall' within 5 bytes cannot be displaced in a live process");
	module_clear(&m);
}

TEST(plan_call_last_ok_call_middle_not)
{
	static const uint8_t code[] = {
		0x55, /* push rbp */
		0xe8, 0x0a, 0x00, 0x00, 0x00, /* call +10 */
		0x5d, /* pop rbp */
		0xc3, /* ret */
		/* f2 at 8: */
		0xe8, 0x00, 0x00, 0x00, 0x00, /* call +0 (5 bytes: one long instruction) */
		0xc3, /* ret */
		/* f3 at 14: */
		0x53, /* push rbx */
		0xff, 0xd0, /* call rax */
		0x5b, /* pop rbx */
		0x5b, /* pop rbx */
		0xc3, /* ret */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 0, 0, 8, true, &p), 0);
	CHECK_EQ(p.mode, SITE_JMP); /* call is the last displaced instruction */
	CHECK_EQ(p.len, 6);
	CHECK_EQ(plan(&m, 8, 8, 6, true, &p), 0);
	CHECK_EQ(p.mode, SITE_JMP);
	CHECK_EQ(p.len, 5);
	CHECK_EQ(plan(&m, 14, 14, 6, true, &p), 0);
	CHECK_EQ(p.mode, SITE_INT3); /* push; call rax = 3 bytes: the call would be in the middle */
	CHECK_EQ(p.fail, SITE_FAIL_STOP_INSN);
	CHECK_STREQ(why(&p), "'call' within 5 bytes cannot be displaced in a live process");
	CHECK_EQ(plan(&m, 14, 14, 6, false, &p), 0);
	CHECK_EQ(p.fail, SITE_FAIL_INSN_IN_JMP);
	module_clear(&m);
}

TEST(plan_branch_into_prologue)
{
	static const uint8_t code[] = {
		0x53, /* push rbx */
		0x48, 0x89, 0xfb, /* mov rbx, rdi (loop head, +1) */
		0x48, 0xff, 0xcb, /* dec rbx */
		0x75, 0xf8, /* jnz +1 */
		0x5b, /* pop rbx */
		0xc3, /* ret */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 0, 0, sizeof(code), true, &p), 0);
	CHECK_EQ(p.mode, SITE_INT3);
	CHECK_EQ(p.fail, SITE_FAIL_BRANCH_INTO);
	CHECK_EQ(p.fail_addr, BASE + 1);
	CHECK_STREQ(why(&p), "a branch targets the middle of the displaced bytes (at 0x401001)");
	module_clear(&m);
}

/* A second symbol inside the first one's prologue (an asm alternate entry). */
TEST(plan_symbol_inside_prologue)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0xf8, /* f: mov rax, rdi */
		0x48, 0x01, 0xf0, /* g = f + 3: add rax, rsi */
		0xc3, /* ret */
	};
	const uint64_t syms[] = { BASE, BASE + 3 };
	struct utrace_elf_section sec = { ".text", BASE, sizeof(code), code };
	struct branch_index *bti = branch_index__new(&sec, 1, syms, 2);
	struct site_input in = { BASE, code, sizeof(code), BASE, sizeof(code), code, bti, true };
	struct site_plan p;

	CHECK(bti);
	CHECK_EQ(site_plan(&in, &p), 0);
	CHECK_EQ(p.mode, SITE_INT3);
	CHECK_EQ(p.fail, SITE_FAIL_BRANCH_INTO);
	CHECK_EQ(p.fail_addr, BASE + 3);
	branch_index__free(bti);
}

TEST(plan_branch_to_first_byte_ok)
{
	static const uint8_t code[] = {
		0x48, 0xff, 0xcf, /* dec rdi (loop head at the entry) */
		0x48, 0x85, 0xff, /* test rdi, rdi */
		0x75, 0xf8, /* jnz entry */
		0xc3, /* ret */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 0, 0, sizeof(code), true, &p), 0);
	CHECK_EQ(p.mode, SITE_JMP);
	CHECK_EQ(p.len, 6);
	module_clear(&m);
}

TEST(plan_short_function)
{
	static const uint8_t code[] = {
		0x31, 0xc0, /* xor eax, eax */
		0xc3, /* ret */
		0xcc, 0xcc, 0xcc, 0xcc, 0xcc, /* padding: int3 */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 0, 0, 3, true, &p), 0);
	CHECK_EQ(p.mode, SITE_INT3);
	CHECK_EQ(p.fail, SITE_FAIL_BLOCK_END);
	CHECK_STREQ(why(&p), "'ret' ends the code within 5 bytes");
	CHECK_EQ(plan(&m, 0, 0, 2, true, &p), 0); /* a lying size: the ret is outside */
	CHECK_EQ(p.fail, SITE_FAIL_TOO_SHORT);
	CHECK_EQ(plan(&m, 0, 0, 0, true, &p), 0);
	CHECK_EQ(p.fail, SITE_FAIL_NO_SIZE);
	CHECK_EQ(plan(&m, 2, 0, 3, true, &p), 0); /* the ret alone */
	CHECK_EQ(p.mode, SITE_INT3);
	module_clear(&m);
}

TEST(plan_not_entry)
{
	static const uint8_t code[] = {
		0x55, /* push rbp */
		0x48, 0x89, 0xe5, /* mov rbp, rsp */
		0x48, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00, /* mov rax, [rip + 0x1000] */
		0x5d, /* pop rbp */
		0xc3, /* ret */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 1, 0, sizeof(code), true, &p), 0);
	CHECK_EQ(p.mode, SITE_INT3);
	CHECK_EQ(p.fail, SITE_FAIL_NOT_ENTRY);
	CHECK_STREQ(why(&p), "not a function entry, and 'mov' is shorter than 5 bytes");
	CHECK_EQ(plan(&m, 4, 0, sizeof(code), true, &p), 0);
	CHECK_EQ(p.mode, SITE_JMP); /* one 7-byte instruction */
	CHECK_EQ(p.len, 7);
	module_clear(&m);
}

/* An address inside an instruction is refused, when the function's bytes are known. */
TEST(plan_mid_instruction)
{
	static const uint8_t code[] = {
		0x55, /* push rbp */
		0x48, 0x89, 0xe5, /* mov rbp, rsp */
		0x48, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00, /* mov rax, [rip + 0x1000] */
		0x5d, /* pop rbp */
		0xc3, /* ret */
	};
	struct module m;
	struct site_input in = { 0 };
	struct site_plan p;
	char why[128];

	module_init(&m, code, sizeof(code));
	in = (struct site_input){ BASE + 2, code + 2, sizeof(code) - 2, BASE, sizeof(code), code,
				  m.bti,    true };
	CHECK_EQ(site_plan(&in, &p), -UTRACE_ERRNO__RELOC);
	CHECK_EQ(p.fail, SITE_FAIL_MID_INSN);
	site_plan__why(&p, why, sizeof(why));
	CHECK_STREQ(why, "not an instruction boundary: inside 'mov' (at 0x401001)");
	in = (struct site_input){ BASE + 4, code + 4, sizeof(code) - 4, BASE, sizeof(code), code,
				  m.bti,    true };
	CHECK_EQ(site_plan(&in, &p), 0);
	CHECK_EQ(p.mode, SITE_JMP);
	module_clear(&m);
}

TEST(plan_indirect_jmp)
{
	static const uint8_t code[] = {
		0x53, /* push rbx */
		0x48, 0x89, 0xfb, /* mov rbx, rdi */
		0x48, 0x63, 0xc7, /* movsxd rax, edi */
		0xff, 0xe0, /* jmp rax: a switch */
		0x5b, /* pop rbx */
		0xc3, /* ret */
		/* tail call through the GOT at 11: not a jump table */
		0x53, /* push rbx */
		0x48, 0x89, 0xfb, /* mov rbx, rdi */
		0x5b, /* pop rbx */
		0xff, 0x25, 0x00, 0x10, 0x00, 0x00, /* jmp [rip + 0x1000] */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 0, 0, 11, true, &p), 0);
	CHECK_EQ(p.mode, SITE_INT3);
	CHECK_EQ(p.fail, SITE_FAIL_INDIRECT_JMP);
	CHECK_EQ(plan(&m, 11, 11, 11, true, &p), 0);
	CHECK_EQ(p.mode, SITE_JMP);
	module_clear(&m);
}

TEST(plan_unsafe_in_window)
{
	static const uint8_t code[] = {
		0x55, /* push rbp */
		0x0f, 0x0b, /* ud2 */
		0x90, 0x90, 0x90, /* nop x3 */
	};
	struct module m;
	struct site_plan p;

	module_init(&m, code, sizeof(code));
	CHECK_EQ(plan(&m, 0, 0, sizeof(code), true, &p), 0);
	CHECK_EQ(p.mode, SITE_INT3);
	CHECK_EQ(p.fail, SITE_FAIL_UNSAFE_INSN);
	CHECK_STREQ(why(&p), "instruction 'ud2' cannot run out of line");
	CHECK_EQ(plan(&m, 1, 0, sizeof(code), true, &p), -UTRACE_ERRNO__RELOC);
	CHECK_EQ(p.mode, SITE_REFUSED);
	module_clear(&m);
}

TEST(plan_no_index)
{
	static const uint8_t code[] = {
		0x55, /* push rbp */
		0x48, 0x89, 0xe5, /* mov rbp, rsp */
		0x5d, /* pop rbp */
		0xc3, /* ret */
	};
	struct site_input in = { BASE, code, sizeof(code), BASE, sizeof(code), NULL, NULL, true };
	struct site_plan p;

	CHECK_EQ(site_plan(&in, &p), 0);
	CHECK_EQ(p.mode, SITE_INT3);
	CHECK_EQ(p.fail, SITE_FAIL_NO_INDEX);
}

TEST(plan_branch16_and_garbage)
{
	static const uint8_t jmp16[] = {
		0x66, 0xe9, 0x00, 0x00, /* jmp rel16 (AMD) */
		0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	};
	static const uint8_t bad[] = {
		0x06, /* push es: invalid in 64-bit mode */
		0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
		0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	};
	struct site_input in = {
		BASE, jmp16, sizeof(jmp16), BASE, sizeof(jmp16), NULL, NULL, true
	};
	struct site_plan p;

	CHECK_EQ(site_plan(&in, &p), -UTRACE_ERRNO__RELOC);
	CHECK_EQ(p.fail, SITE_FAIL_BRANCH16);
	CHECK_STREQ(why(&p), "16-bit branch 'jmp' cannot run out of line");
	in.bytes = bad;
	CHECK_EQ(site_plan(&in, &p), -UTRACE_ERRNO__RELOC);
	CHECK_EQ(p.fail, SITE_FAIL_DECODE);
	in.len = 1;
	in.bytes = jmp16;
	CHECK_EQ(site_plan(&in, &p), -UTRACE_ERRNO__RELOC);
	CHECK_EQ(p.fail, SITE_FAIL_TRUNCATED);
}

/*
 * Rule 5 (keep_first, the agent): which short first instructions stay in
 * place before the jmp (a kernel uprobe on the entry then resumes on our
 * jmp) and which keep the jmp at the entry. Each @first is followed by
 * mov rbp, rsp; sub rsp, 16; leave; ret: 7 bytes a jmp can displace.
 */
static const struct keep_case {
	const char *what;
	uint8_t first[8], len;
	int undo; /* -1: not kept */
} keep_cases[] = {
	{ "push rbx", { 0x53 }, 1, 8 },
	{ "push r12", { 0x41, 0x54 }, 2, 8 },
	{ "sub rsp, 0x18", { 0x48, 0x83, 0xec, 0x18 }, 4, 0x18 },
	{ "nop", { 0x90 }, 1, 0 },
	{ "xchg ax, ax (66 nop)", { 0x66, 0x90 }, 2, 0 },
	{ "nop dword [rax]", { 0x0f, 0x1f, 0x40, 0x00 }, 4, 0 },
	{ "xor eax, eax", { 0x31, 0xc0 }, 2, 0 },
	{ "sub eax, eax", { 0x29, 0xc0 }, 2, 0 },
	{ "xor r11d, r11d", { 0x45, 0x31, 0xdb }, 3, 0 },
	{ "mov rax, rdi", { 0x48, 0x89, 0xf8 }, 3, 0 },
	{ "mov r10, rcx", { 0x49, 0x89, 0xca }, 3, 0 },
	{ "movzx eax, dil", { 0x40, 0x0f, 0xb6, 0xc7 }, 4, 0 },
	{ "mov al, 1", { 0xb0, 0x01 }, 2, 0 },
	{ "lea r11, [rdi + 8]", { 0x4c, 0x8d, 0x5f, 0x08 }, 4, 0 },
	{ "mov rax, rsp", { 0x48, 0x89, 0xe0 }, 3, 0 },
	{ "test rdi, rdi", { 0x48, 0x85, 0xff }, 3, 0 },
	{ "cmp rdi, rsi", { 0x48, 0x39, 0xf7 }, 3, 0 },
	{ "and eax, 1 (imm8)", { 0x83, 0xe0, 0x01 }, 3, -1 }, /* reads eax */
	{ "xor edi, edi (an argument)", { 0x31, 0xff }, 2, -1 },
	{ "mov rdx, rax (an argument)", { 0x48, 0x89, 0xc2 }, 3, -1 },
	{ "mov rbx, rdi (callee-saved)", { 0x48, 0x89, 0xfb }, 3, -1 },
	{ "mov rbp, rsp (callee-saved)", { 0x48, 0x89, 0xe5 }, 3, -1 },
	{ "mov rsp, rax (rsp)", { 0x48, 0x89, 0xc4 }, 3, -1 },
	{ "add rax, 1 (reads what it writes)", { 0x48, 0x83, 0xc0, 0x01 }, 4, -1 },
	{ "inc eax", { 0xff, 0xc0 }, 2, -1 },
	{ "lea rax, [rax + 8]", { 0x48, 0x8d, 0x40, 0x08 }, 4, -1 },
	{ "adc eax, edi (reads CF)", { 0x11, 0xf8 }, 2, -1 },
	{ "cmovz rax, rdi (reads ZF)", { 0x48, 0x0f, 0x44, 0xc7 }, 4, -1 },
	{ "mov eax, [rdi] (a load)", { 0x8b, 0x07 }, 2, -1 },
	{ "mov [rdi], eax (a store)", { 0x89, 0x07 }, 2, -1 },
	{ "cmp byte [rdi], 0 (a load)", { 0x80, 0x3f, 0x00 }, 3, -1 },
	{ "std (DF)", { 0xfd }, 1, -1 },
	{ "cld", { 0xfc }, 1, -1 },
	{ "pop rax (a load)", { 0x58 }, 1, -1 },
	{ "push rsp", { 0x54 }, 1, -1 },
	{ "rdtsc (rdx)", { 0x0f, 0x31 }, 2, -1 },
	{ "xchg rax, rdi", { 0x48, 0x97 }, 2, -1 },
};

TEST(plan_keep_first_forms)
{
	static const uint8_t rest[] = { 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xc9, 0xc3 };
	size_t i;

	for (i = 0; i < sizeof(keep_cases) / sizeof(keep_cases[0]); i++) {
		const struct keep_case *c = &keep_cases[i];
		uint8_t code[32];
		size_t n = c->len + sizeof(rest);
		struct module m;
		struct site_plan p;
		struct site_input in;

		memcpy(code, c->first, c->len);
		memcpy(code + c->len, rest, sizeof(rest));
		module_init(&m, code, n);
		in = (struct site_input){ .addr = BASE,
					  .bytes = code,
					  .len = n,
					  .func_addr = BASE,
					  .func_size = n,
					  .bti = m.bti,
					  .live = true,
					  .keep_first = true };
		CHECK_EQ(site_plan(&in, &p), 0);
		CHECK_MSG(p.mode == SITE_JMP, "%s: mode %d (%s)", c->what, p.mode, why(&p));
		if (c->undo >= 0) {
			CHECK_MSG(
				p.pre_len == c->len && p.addr == BASE + c->len && p.undo == c->undo,
				"%s: want kept (undo %d), got pre_len %u undo %u at +%llu", c->what,
				c->undo, p.pre_len, p.undo, (unsigned long long)(p.addr - BASE));
		} else {
			CHECK_MSG(p.pre_len == 0 && p.addr == BASE && p.undo == 0,
				  "%s: want the jmp at the entry, got pre_len %u at +%llu", c->what,
				  p.pre_len, (unsigned long long)(p.addr - BASE));
		}
		/* without keep_first (ptrace, the library's default) nothing moves */
		in.keep_first = false;
		CHECK_EQ(site_plan(&in, &p), 0);
		CHECK_EQ(p.pre_len, 0);
		CHECK_EQ(p.addr, BASE);
		module_clear(&m);
	}
}

/* endbr64 then a keepable instruction: the probe moves past both. */
TEST(plan_keep_first_after_endbr64)
{
	static const uint8_t code[] = {
		0xf3, 0x0f, 0x1e, 0xfa, /* endbr64 */
		0x48, 0x89, 0xf8, /* mov rax, rdi */
		0x48, 0x89, 0xe5, /* mov rbp, rsp */
		0x48, 0x83, 0xec, 0x10, /* sub rsp, 0x10 */
		0xc9, 0xc3, /* leave; ret */
	};
	struct module m;
	struct site_plan p;
	struct site_input in;

	module_init(&m, code, sizeof(code));
	in = (struct site_input){ .addr = BASE,
				  .bytes = code,
				  .len = sizeof(code),
				  .func_addr = BASE,
				  .func_size = sizeof(code),
				  .bti = m.bti,
				  .live = true,
				  .keep_first = true };
	CHECK_EQ(site_plan(&in, &p), 0);
	CHECK_EQ(p.mode, SITE_JMP);
	CHECK_EQ(p.pre_len, 3);
	CHECK_EQ(p.undo, 0);
	CHECK_EQ(p.addr, BASE + 7);
	CHECK_EQ(p.len, 7);
	module_clear(&m);
}

TEST(fail_table_complete)
{
	int i;

	for (i = 0; i < __SITE_FAIL_MAX; i++)
		CHECK_MSG(strcmp(site_fail_str(i), "unknown reason"), "reason %d has no text", i);
	CHECK_STREQ(site_fail_str(__SITE_FAIL_MAX), "unknown reason");
}

TEST(branch_index_lookup)
{
	static const uint8_t code[] = {
		0xeb, 0x03, /* jmp +5 */
		0x48, 0x8d, 0x05, 0xf9,
		0xff, 0xff, 0xff, /* lea rax, [rip - 7]: code address 0x401002 */
		0x74, 0xf5, /* je 0x401000 */
		0xff, 0xe0, /* jmp rax */
		0xc3, /* ret */
	};
	struct module m;
	struct branch_index_stats st;

	module_init(&m, code, sizeof(code));
	branch_index__stats(m.bti, &st);
	CHECK_EQ(st.insns, 5);
	CHECK_EQ(st.targets, 3); /* 0x401000, 0x401002, 0x401005 */
	CHECK_EQ(st.indirect_jmps, 1);
	CHECK(branch_index__any_target(m.bti, BASE, BASE + 1));
	CHECK(!branch_index__any_target(m.bti, BASE + 1, BASE + 2));
	CHECK(branch_index__any_target(m.bti, BASE + 1, BASE + 3));
	CHECK_EQ(branch_index__first_target(m.bti, BASE + 3, BASE + 100), BASE + 5);
	CHECK(!branch_index__any_target(m.bti, BASE + 6, BASE + 100));
	CHECK(branch_index__any_indirect(m.bti, BASE, BASE + sizeof(code)));
	module_clear(&m);
}

TEST(public_planner)
{
	struct utrace_image *img = utrace_image__open_exec("/bin/true");
	struct utrace_spec spec;
	struct utrace_match *m = NULL;
	struct utrace_planner *pl;
	struct utrace_plan p;
	size_t nr = 0, i, modes[__UTRACE_PLAN_MAX] = { 0 };

	if (!img)
		SKIP("/bin/true: %s", strerror(errno));
	CHECK_EQ(utrace_spec__parse("libc:str*", &spec, NULL, 0), 0);
	CHECK_EQ(utrace_image__resolve(img, &spec, &m, &nr, NULL), 0);
	CHECK(nr > 10);
	pl = utrace_planner__new(img);
	CHECK(pl);
	for (i = 0; i < nr; i++) {
		int err = utrace_planner__plan(pl, &m[i], &p);

		CHECK(err == 0 || err == -UTRACE_ERRNO__RELOC);
		CHECK(p.mode < __UTRACE_PLAN_MAX);
		CHECK((p.mode == UTRACE_PLAN_JMP) == !p.why[0]);
		CHECK(p.addr >= m[i].addr && p.addr < m[i].addr + 8);
		modes[p.mode]++;
	}
	harness_note("libc:str*: %zu matches: %zu jmp, %zu int3, %zu refused", nr,
		     modes[UTRACE_PLAN_JMP], modes[UTRACE_PLAN_INT3], modes[UTRACE_PLAN_REFUSED]);
	CHECK(modes[UTRACE_PLAN_JMP] > 0);
	CHECK_STREQ(utrace_plan_mode_str(UTRACE_PLAN_INT3), "int3");
	utrace_planner__free(pl);
	utrace_planner__free(NULL);
	free(m);
	utrace_spec__clear(&spec);
	utrace_image__close(img);
}
