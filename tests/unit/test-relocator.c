/* SPDX-License-Identifier: MIT */
/*
 * test-relocator.c - golden bytes for every class of the relocation policy
 * (lib/arch/x86_64/relocator.c), relocated near (256 MiB) and far (16 GiB)
 * from the source, into real buffers mapped at fixed hints with
 * MAP_FIXED_NOREPLACE (Frida style). The disassembly beside each byte is
 * objdump's, at the address the bytes live at; "; = X" is the absolute
 * address a RIP-relative operand refers to, which must not change.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "arch.h"
#include "harness.h"

static int find_slot_self_marker;

#define S 0x200000000100ULL /* source address of every input */
#define N 0x200010000000ULL /* near destination: S + 256 MiB */
#define F 0x200400000000ULL /* far destination: S + 16 GiB */

static void map_fixed(uint64_t addr)
{
	void *p = mmap((void *)(addr & ~0xfffULL), 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED)
		SKIP("cannot map %#llx: %s", (unsigned long long)addr, strerror(errno));
}

static void setup(const uint8_t *in, size_t len)
{
	map_fixed(S);
	map_fixed(N);
	map_fixed(F);
	memcpy((void *)S, in, len);
}

static void dump(const char *what, const uint8_t *p, size_t n)
{
	char buf[512];
	size_t i, o = 0;

	for (i = 0; i < n && o + 4 < sizeof(buf); i++)
		o += snprintf(buf + o, sizeof(buf) - o, "%02x ", p[i]);
	harness_note("%s: %s", what, buf);
}

static int relocate_to(uint64_t dst, size_t len, struct reloc *r)
{
	struct writer w;
	int n;

	memset((void *)dst, 0xcc, 256); /* int3 */
	writer_init(&w, (void *)dst, 256, dst);
	reloc_init(r, (const void *)S, len, S);
	n = reloc_relocate(r, &w, true);
	writer_clear(&w);
	return n;
}

static void check_at(uint64_t dst, size_t in_len, const uint8_t *want, size_t want_len)
{
	struct reloc r;
	int n = relocate_to(dst, in_len, &r);

	if (n != (int)want_len || memcmp((void *)dst, want, want_len)) {
		dump("want", want, want_len);
		dump("got ", (const uint8_t *)dst, n > 0 ? (size_t)n : 0);
		harness_fail(__FILE__, __LINE__,
			     "relocation to %#llx: %d bytes, want %zu (fail %d)",
			     (unsigned long long)dst, n, want_len, r.fail);
	}
	CHECK_EQ(r.fail, SITE_FAIL_NONE);
	reloc_clear(&r);
}

static void check_golden(const uint8_t *in, size_t in_len, const uint8_t *near, size_t near_len,
			 const uint8_t *far, size_t far_len)
{
	setup(in, in_len);
	check_at(N, in_len, near, near_len);
	if (far)
		check_at(F, in_len, far, far_len);
}

static void check_fail_at(uint64_t dst, size_t len, enum site_fail fail, const char *insn)
{
	struct reloc r;
	int n = relocate_to(dst, len, &r);

	CHECK_EQ(n, -UTRACE_ERRNO__RELOC);
	CHECK_EQ(r.fail, fail);
	CHECK_STREQ(r.fail_insn, insn);
	CHECK_EQ(r.fail_addr, S);
}

static void check_fail(const uint8_t *in, size_t len, enum site_fail fail, const char *insn)
{
	setup(in, len);
	check_fail_at(N, len, fail, insn);
	check_fail_at(F, len, fail, insn);
}

/* After check_golden(): the same input, relocated far. */
static void check_far_fail(const uint8_t *in, size_t len, enum site_fail fail, const char *insn)
{
	check_fail_at(F, len, fail, insn);
}

/* One instruction per line, its disassembly beside it (or above, when long). */
/* clang-format off */
/* plain */
static const uint8_t plain_in[] = {
	0x55, /* push rbp */
	0x48, 0x89, 0xe5, /* mov rbp,rsp */
	0x48, 0x83, 0xec, 0x10, /* sub rsp,0x10 */
};
static const uint8_t plain_near[] = {
	0x55, /* push rbp */
	0x48, 0x89, 0xe5, /* mov rbp,rsp */
	0x48, 0x83, 0xec, 0x10, /* sub rsp,0x10 */
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000108 */
};
static const uint8_t plain_far[] = {
	0x55, /* push rbp */
	0x48, 0x89, 0xe5, /* mov rbp,rsp */
	0x48, 0x83, 0xec, 0x10, /* sub rsp,0x10 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x08, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000108 */
};

/* push_pop */
static const uint8_t push_pop_in[] = {
	0x53, /* push rbx */
	0x41, 0x54, /* push r12 */
	0x5b, /* pop rbx */
	0x41, 0x5c, /* pop r12 */
};
static const uint8_t push_pop_near[] = {
	0x53, /* push rbx */
	0x41, 0x54, /* push r12 */
	0x5b, /* pop rbx */
	0x41, 0x5c, /* pop r12 */
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000106 */
};
static const uint8_t push_pop_far[] = {
	0x53, /* push rbx */
	0x41, 0x54, /* push r12 */
	0x5b, /* pop rbx */
	0x41, 0x5c, /* pop r12 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x06, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000106 */
};

/* riprel_load */
static const uint8_t riprel_load_in[] = {
	/* mov rax,QWORD PTR [rip+0x1000] ; = 0x200000001107 */
	0x48, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00,
};
static const uint8_t riprel_load_near[] = {
	/* mov rax,QWORD PTR [rip+0xfffffffff0001100] ; = 0x200000001107 */
	0x48, 0x8b, 0x05, 0x00, 0x11, 0x00, 0xf0,
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000107 */
};
static const uint8_t riprel_load_far[] = {
	0x48, 0x8d, 0x64, 0x24, 0x80, /* lea rsp,[rsp-0x80] */
	0x51, /* push rcx */
	0x48, 0xb9, 0x07, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* movabs rcx,0x200000000107 */
	0x48, 0x8b, 0x81, 0x00, 0x10, 0x00, 0x00, /* mov rax,QWORD PTR [rcx+0x1000] */
	0x59, /* pop rcx */
	0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00, /* lea rsp,[rsp+0x80] */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x07, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000107 */
};

/* riprel_store */
static const uint8_t riprel_store_in[] = {
	0x89, 0x3d, 0x00, 0x20, 0x00, 0x00, /* mov DWORD PTR [rip+0x2000],edi ; = 0x200000002106 */
};
static const uint8_t riprel_store_near[] = {
	/* mov DWORD PTR [rip+0xfffffffff0002100],edi ; = 0x200000002106 */
	0x89, 0x3d, 0x00, 0x21, 0x00, 0xf0,
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000106 */
};
static const uint8_t riprel_store_far[] = {
	0x48, 0x8d, 0x64, 0x24, 0x80, /* lea rsp,[rsp-0x80] */
	0x50, /* push rax */
	0x48, 0xb8, 0x06, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* movabs rax,0x200000000106 */
	0x89, 0xb8, 0x00, 0x20, 0x00, 0x00, /* mov DWORD PTR [rax+0x2000],edi */
	0x58, /* pop rax */
	0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00, /* lea rsp,[rsp+0x80] */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x06, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000106 */
};

/* riprel_lea */
static const uint8_t riprel_lea_in[] = {
	/* lea rdi,[rip+0xffffffffffffff00] ; = 0x200000000007 */
	0x48, 0x8d, 0x3d, 0x00, 0xff, 0xff, 0xff,
};
static const uint8_t riprel_lea_near[] = {
	/* lea rdi,[rip+0xfffffffff0000000] ; = 0x200000000007 */
	0x48, 0x8d, 0x3d, 0x00, 0x00, 0x00, 0xf0,
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000107 */
};
static const uint8_t riprel_lea_far[] = {
	0x48, 0x8d, 0x64, 0x24, 0x80, /* lea rsp,[rsp-0x80] */
	0x50, /* push rax */
	0x48, 0xb8, 0x07, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* movabs rax,0x200000000107 */
	0x48, 0x8d, 0xb8, 0x00, 0xff, 0xff, 0xff, /* lea rdi,[rax-0x100] */
	0x58, /* pop rax */
	0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00, /* lea rsp,[rsp+0x80] */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x07, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000107 */
};

/* riprel_cmp_imm */
static const uint8_t riprel_cmp_imm_in[] = {
	/* cmp DWORD PTR [rip+0x10],0x5 ; = 0x200000000117 */
	0x83, 0x3d, 0x10, 0x00, 0x00, 0x00, 0x05,
};
static const uint8_t riprel_cmp_imm_near[] = {
	/* cmp DWORD PTR [rip+0xfffffffff0000110],0x5 ; = 0x200000000117 */
	0x83, 0x3d, 0x10, 0x01, 0x00, 0xf0, 0x05,
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000107 */
};
static const uint8_t riprel_cmp_imm_far[] = {
	0x48, 0x8d, 0x64, 0x24, 0x80, /* lea rsp,[rsp-0x80] */
	0x50, /* push rax */
	0x48, 0xb8, 0x07, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* movabs rax,0x200000000107 */
	0x83, 0xb8, 0x10, 0x00, 0x00, 0x00, 0x05, /* cmp DWORD PTR [rax+0x10],0x5 */
	0x58, /* pop rax */
	0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00, /* lea rsp,[rsp+0x80] */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x07, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000107 */
};

/* fs_load */
static const uint8_t fs_load_in[] = {
	0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00, /* mov rax,QWORD PTR fs:0x28 */
};
static const uint8_t fs_load_near[] = {
	0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00, /* mov rax,QWORD PTR fs:0x28 */
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000109 */
};
static const uint8_t fs_load_far[] = {
	0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00, /* mov rax,QWORD PTR fs:0x28 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x09, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000109 */
};

/* jmp_rel8 */
static const uint8_t jmp_rel8_in[] = {
	0xeb, 0x10, /* jmp 0x200000000112 */
};
static const uint8_t jmp_rel8_near[] = {
	0xe9, 0x0d, 0x01, 0x00, 0xf0, /* jmp 0x200000000112 */
};
static const uint8_t jmp_rel8_far[] = {
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x12, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000112 */
};

/* jmp_rel32 */
static const uint8_t jmp_rel32_in[] = {
	0xe9, 0x00, 0x01, 0x00, 0x00, /* jmp 0x200000000205 */
};
static const uint8_t jmp_rel32_near[] = {
	0xe9, 0x00, 0x02, 0x00, 0xf0, /* jmp 0x200000000205 */
};
static const uint8_t jmp_rel32_far[] = {
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x05, 0x02, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000205 */
};

/* jmp_to_start */
static const uint8_t jmp_to_start_in[] = {
	0x90, /* nop */
	0xeb, 0xfd, /* jmp 0x200000000100 */
};
static const uint8_t jmp_to_start_near[] = {
	0x90, /* nop */
	0xe9, 0xfa, 0x00, 0x00, 0xf0, /* jmp 0x200000000100 */
};
static const uint8_t jmp_to_start_far[] = {
	0x90, /* nop */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x00, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000100 */
};

/* jcc_rel8 */
static const uint8_t jcc_rel8_in[] = {
	0x74, 0x10, /* je 0x200000000112 */
};
static const uint8_t jcc_rel8_near[] = {
	0x0f, 0x84, 0x0c, 0x01, 0x00, 0xf0, /* je 0x200000000112 */
	0xe9, 0xf7, 0x00, 0x00, 0xf0, /* jmp 0x200000000102 */
};
static const uint8_t jcc_rel8_far[] = {
	0x75, 0x0e, /* jne 0x200400000010 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x12, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000112 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x02, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000102 */
};

/* jcc_rel32 */
static const uint8_t jcc_rel32_in[] = {
	0x0f, 0x85, 0x00, 0x02, 0x00, 0x00, /* jne 0x200000000306 */
};
static const uint8_t jcc_rel32_near[] = {
	0x0f, 0x85, 0x00, 0x03, 0x00, 0xf0, /* jne 0x200000000306 */
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000106 */
};
static const uint8_t jcc_rel32_far[] = {
	0x74, 0x0e, /* je 0x200400000010 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x06, 0x03, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000306 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x06, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000106 */
};

/* jcc_back */
static const uint8_t jcc_back_in[] = {
	0x48, 0x85, 0xff, /* test rdi,rdi */
	0x7e, 0xe0, /* jle 0x2000000000e5 */
};
static const uint8_t jcc_back_near[] = {
	0x48, 0x85, 0xff, /* test rdi,rdi */
	0x0f, 0x8e, 0xdc, 0x00, 0x00, 0xf0, /* jle 0x2000000000e5 */
	0xe9, 0xf7, 0x00, 0x00, 0xf0, /* jmp 0x200000000105 */
};
static const uint8_t jcc_back_far[] = {
	0x48, 0x85, 0xff, /* test rdi,rdi */
	0x7f, 0x0e, /* jg 0x200400000013 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0xe5, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x2000000000e5 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x05, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000105 */
};

/* call_rel32_last */
static const uint8_t call_rel32_last_in[] = {
	0x55, /* push rbp */
	0xe8, 0x00, 0x10, 0x00, 0x00, /* call 0x200000001106 */
};
static const uint8_t call_rel32_last_near[] = {
	0x55, /* push rbp */
	0x68, 0x06, 0x01, 0x00, 0x00, /* push 0x106 */
	0xc7, 0x44, 0x24, 0x04, 0x00, 0x20, 0x00, 0x00, /* mov DWORD PTR [rsp+0x4],0x2000 */
	0xe9, 0xf3, 0x10, 0x00, 0xf0, /* jmp 0x200000001106 */
};
static const uint8_t call_rel32_last_far[] = {
	0x55, /* push rbp */
	0x68, 0x06, 0x01, 0x00, 0x00, /* push 0x106 */
	0xc7, 0x44, 0x24, 0x04, 0x00, 0x20, 0x00, 0x00, /* mov DWORD PTR [rsp+0x4],0x2000 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x06, 0x11, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000001106 */
};

/* call_riprel_last */
static const uint8_t call_riprel_last_in[] = {
	0xff, 0x15, 0x00, 0x10, 0x00, 0x00, /* call QWORD PTR [rip+0x1000] ; = 0x200000001106 */
};
static const uint8_t call_riprel_last_near[] = {
	0x68, 0x06, 0x01, 0x00, 0x00, /* push 0x106 */
	0xc7, 0x44, 0x24, 0x04, 0x00, 0x20, 0x00, 0x00, /* mov DWORD PTR [rsp+0x4],0x2000 */
	/* jmp QWORD PTR [rip+0xfffffffff00010f3] ; = 0x200000001106 */
	0xff, 0x25, 0xf3, 0x10, 0x00, 0xf0,
};

/* call_reg_last */
static const uint8_t call_reg_last_in[] = {
	0xff, 0xd0, /* call rax */
};
static const uint8_t call_reg_last_near[] = {
	0x68, 0x02, 0x01, 0x00, 0x00, /* push 0x102 */
	0xc7, 0x44, 0x24, 0x04, 0x00, 0x20, 0x00, 0x00, /* mov DWORD PTR [rsp+0x4],0x2000 */
	0xff, 0xe0, /* jmp rax */
};
static const uint8_t call_reg_last_far[] = {
	0x68, 0x02, 0x01, 0x00, 0x00, /* push 0x102 */
	0xc7, 0x44, 0x24, 0x04, 0x00, 0x20, 0x00, 0x00, /* mov DWORD PTR [rsp+0x4],0x2000 */
	0xff, 0xe0, /* jmp rax */
};

/* jmp_riprel */
static const uint8_t jmp_riprel_in[] = {
	0xff, 0x25, 0x00, 0x10, 0x00, 0x00, /* jmp QWORD PTR [rip+0x1000] ; = 0x200000001106 */
};
static const uint8_t jmp_riprel_near[] = {
	/* jmp QWORD PTR [rip+0xfffffffff0001100] ; = 0x200000001106 */
	0xff, 0x25, 0x00, 0x11, 0x00, 0xf0,
};

/* jmp_reg */
static const uint8_t jmp_reg_in[] = {
	0xff, 0xe0, /* jmp rax */
};
static const uint8_t jmp_reg_near[] = {
	0xff, 0xe0, /* jmp rax */
};
static const uint8_t jmp_reg_far[] = {
	0xff, 0xe0, /* jmp rax */
};

/* ret_last */
static const uint8_t ret_last_in[] = {
	0x5d, /* pop rbp */
	0xc3, /* ret */
};
static const uint8_t ret_last_near[] = {
	0x5d, /* pop rbp */
	0xc3, /* ret */
};
static const uint8_t ret_last_far[] = {
	0x5d, /* pop rbp */
	0xc3, /* ret */
};

/* endbr64_first */
static const uint8_t endbr64_first_in[] = {
	0xf3, 0x0f, 0x1e, 0xfa, /* endbr64 */
	0x55, /* push rbp */
};
static const uint8_t endbr64_first_near[] = {
	0xf3, 0x0f, 0x1e, 0xfa, /* endbr64 */
	0x55, /* push rbp */
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000105 */
};
static const uint8_t endbr64_first_far[] = {
	0xf3, 0x0f, 0x1e, 0xfa, /* endbr64 */
	0x55, /* push rbp */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x05, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000105 */
};

/* loop */
static const uint8_t loop_in[] = {
	0xe2, 0x10, /* loop 0x200000000112 */
};
static const uint8_t loop_near[] = {
	0xe2, 0x02, /* loop 0x200010000004 */
	0xeb, 0x05, /* jmp 0x200010000009 */
	0xe9, 0x09, 0x01, 0x00, 0xf0, /* jmp 0x200000000112 */
	0xe9, 0xf4, 0x00, 0x00, 0xf0, /* jmp 0x200000000102 */
};
static const uint8_t loop_far[] = {
	0xe2, 0x02, /* loop 0x200400000004 */
	0xeb, 0x0e, /* jmp 0x200400000012 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x12, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000112 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x02, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000102 */
};

/* jrcxz */
static const uint8_t jrcxz_in[] = {
	0xe3, 0x10, /* jrcxz 0x200000000112 */
};
static const uint8_t jrcxz_near[] = {
	0xe3, 0x02, /* jrcxz 0x200010000004 */
	0xeb, 0x05, /* jmp 0x200010000009 */
	0xe9, 0x09, 0x01, 0x00, 0xf0, /* jmp 0x200000000112 */
	0xe9, 0xf4, 0x00, 0x00, 0xf0, /* jmp 0x200000000102 */
};
static const uint8_t jrcxz_far[] = {
	0xe3, 0x02, /* jrcxz 0x200400000004 */
	0xeb, 0x0e, /* jmp 0x200400000012 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x12, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000112 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x02, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000102 */
};

/* jecxz */
static const uint8_t jecxz_in[] = {
	0x67, 0xe3, 0x10, /* jecxz 0x200000000113 */
};
static const uint8_t jecxz_near[] = {
	0x67, 0xe3, 0x02, /* jecxz 0x200010000005 */
	0xeb, 0x05, /* jmp 0x20001000000a */
	0xe9, 0x09, 0x01, 0x00, 0xf0, /* jmp 0x200000000113 */
	0xe9, 0xf4, 0x00, 0x00, 0xf0, /* jmp 0x200000000103 */
};
static const uint8_t jecxz_far[] = {
	0x67, 0xe3, 0x02, /* jecxz 0x200400000005 */
	0xeb, 0x0e, /* jmp 0x200400000013 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x13, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000113 */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x03, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000103 */
};

/* call_not_last */
static const uint8_t call_not_last_in[] = {
	0xe8, 0x00, 0x10, 0x00, 0x00, /* call 0x200000001105 */
	0x90, /* nop */
};

/* ret_middle */
static const uint8_t ret_middle_in[] = {
	0xc3, /* ret */
	0x90, /* nop */
};

/* syscall */
static const uint8_t syscall_in[] = {
	0x0f, 0x05, /* syscall */
};

/* int80 */
static const uint8_t int80_in[] = {
	0xcd, 0x80, /* int 0x80 */
};

/* int3 */
static const uint8_t int3_in[] = {
	0xcc, /* int3 */
};

/* ud2 */
static const uint8_t ud2_in[] = {
	0x0f, 0x0b, /* ud2 */
};

/* xbegin */
static const uint8_t xbegin_in[] = {
	0xc7, 0xf8, 0x00, 0x00, 0x00, 0x00, /* xbegin 0x200000000106 */
};

/* call_rsp */
static const uint8_t call_rsp_in[] = {
	0xff, 0x54, 0x24, 0x08, /* call QWORD PTR [rsp+0x8] */
};

/* jmp_into_block */
static const uint8_t jmp_into_block_in[] = {
	0xeb, 0x01, /* jmp 0x200000000103 */
	0x90, /* nop */
	0x90, /* nop */
};

/* far_jmp */
static const uint8_t far_jmp_in[] = {
	0xff, 0x2c, 0x24, /* jmp FWORD PTR [rsp] */
};

/* hlt */
static const uint8_t hlt_in[] = {
	0xf4, /* hlt */
};

/* in_al */
static const uint8_t in_al_in[] = {
	0xe4, 0x60, /* in al,0x60 */
};

TEST(reloc_plain)
{
	check_golden(plain_in, sizeof(plain_in), plain_near, sizeof(plain_near), plain_far,
		     sizeof(plain_far));
}

TEST(reloc_push_pop)
{
	check_golden(push_pop_in, sizeof(push_pop_in), push_pop_near, sizeof(push_pop_near),
		     push_pop_far, sizeof(push_pop_far));
}

TEST(reloc_riprel_load)
{
	check_golden(riprel_load_in, sizeof(riprel_load_in), riprel_load_near,
		     sizeof(riprel_load_near), riprel_load_far, sizeof(riprel_load_far));
}

TEST(reloc_riprel_store)
{
	check_golden(riprel_store_in, sizeof(riprel_store_in), riprel_store_near,
		     sizeof(riprel_store_near), riprel_store_far, sizeof(riprel_store_far));
}

TEST(reloc_riprel_lea)
{
	check_golden(riprel_lea_in, sizeof(riprel_lea_in), riprel_lea_near, sizeof(riprel_lea_near),
		     riprel_lea_far, sizeof(riprel_lea_far));
}

TEST(reloc_riprel_cmp_imm)
{
	check_golden(riprel_cmp_imm_in, sizeof(riprel_cmp_imm_in), riprel_cmp_imm_near,
		     sizeof(riprel_cmp_imm_near), riprel_cmp_imm_far, sizeof(riprel_cmp_imm_far));
}

TEST(reloc_fs_load)
{
	check_golden(fs_load_in, sizeof(fs_load_in), fs_load_near, sizeof(fs_load_near),
		     fs_load_far, sizeof(fs_load_far));
}

TEST(reloc_jmp_rel8)
{
	check_golden(jmp_rel8_in, sizeof(jmp_rel8_in), jmp_rel8_near, sizeof(jmp_rel8_near),
		     jmp_rel8_far, sizeof(jmp_rel8_far));
}

TEST(reloc_jmp_rel32)
{
	check_golden(jmp_rel32_in, sizeof(jmp_rel32_in), jmp_rel32_near, sizeof(jmp_rel32_near),
		     jmp_rel32_far, sizeof(jmp_rel32_far));
}

TEST(reloc_jmp_to_start)
{
	check_golden(jmp_to_start_in, sizeof(jmp_to_start_in), jmp_to_start_near,
		     sizeof(jmp_to_start_near), jmp_to_start_far, sizeof(jmp_to_start_far));
}

TEST(reloc_jcc_rel8)
{
	check_golden(jcc_rel8_in, sizeof(jcc_rel8_in), jcc_rel8_near, sizeof(jcc_rel8_near),
		     jcc_rel8_far, sizeof(jcc_rel8_far));
}

TEST(reloc_jcc_rel32)
{
	check_golden(jcc_rel32_in, sizeof(jcc_rel32_in), jcc_rel32_near, sizeof(jcc_rel32_near),
		     jcc_rel32_far, sizeof(jcc_rel32_far));
}

TEST(reloc_jcc_back)
{
	check_golden(jcc_back_in, sizeof(jcc_back_in), jcc_back_near, sizeof(jcc_back_near),
		     jcc_back_far, sizeof(jcc_back_far));
}

TEST(reloc_call_rel32_last)
{
	check_golden(call_rel32_last_in, sizeof(call_rel32_last_in), call_rel32_last_near,
		     sizeof(call_rel32_last_near), call_rel32_last_far,
		     sizeof(call_rel32_last_far));
}

TEST(reloc_call_riprel_last)
{
	check_golden(call_riprel_last_in, sizeof(call_riprel_last_in), call_riprel_last_near,
		     sizeof(call_riprel_last_near), NULL, 0);
	check_far_fail(call_riprel_last_in, sizeof(call_riprel_last_in), SITE_FAIL_RIPREL_FAR,
		       "call");
}

TEST(reloc_call_reg_last)
{
	check_golden(call_reg_last_in, sizeof(call_reg_last_in), call_reg_last_near,
		     sizeof(call_reg_last_near), call_reg_last_far, sizeof(call_reg_last_far));
}

TEST(reloc_jmp_riprel)
{
	check_golden(jmp_riprel_in, sizeof(jmp_riprel_in), jmp_riprel_near, sizeof(jmp_riprel_near),
		     NULL, 0);
	check_far_fail(jmp_riprel_in, sizeof(jmp_riprel_in), SITE_FAIL_RIPREL_FAR, "jmp");
}

TEST(reloc_jmp_reg)
{
	check_golden(jmp_reg_in, sizeof(jmp_reg_in), jmp_reg_near, sizeof(jmp_reg_near),
		     jmp_reg_far, sizeof(jmp_reg_far));
}

TEST(reloc_ret_last)
{
	check_golden(ret_last_in, sizeof(ret_last_in), ret_last_near, sizeof(ret_last_near),
		     ret_last_far, sizeof(ret_last_far));
}

TEST(reloc_endbr64_first)
{
	check_golden(endbr64_first_in, sizeof(endbr64_first_in), endbr64_first_near,
		     sizeof(endbr64_first_near), endbr64_first_far, sizeof(endbr64_first_far));
}

TEST(reloc_loop)
{
	check_golden(loop_in, sizeof(loop_in), loop_near, sizeof(loop_near), loop_far,
		     sizeof(loop_far));
}

TEST(reloc_jrcxz)
{
	check_golden(jrcxz_in, sizeof(jrcxz_in), jrcxz_near, sizeof(jrcxz_near), jrcxz_far,
		     sizeof(jrcxz_far));
}

TEST(reloc_jecxz)
{
	check_golden(jecxz_in, sizeof(jecxz_in), jecxz_near, sizeof(jecxz_near), jecxz_far,
		     sizeof(jecxz_far));
}

TEST(reloc_call_not_last)
{
	check_fail(call_not_last_in, sizeof(call_not_last_in), SITE_FAIL_INSN_IN_JMP, "call");
}

TEST(reloc_ret_middle)
{
	check_fail(ret_middle_in, sizeof(ret_middle_in), SITE_FAIL_INSN_IN_JMP, "ret");
}

TEST(reloc_syscall)
{
	check_fail(syscall_in, sizeof(syscall_in), SITE_FAIL_UNSAFE_INSN, "syscall");
}

TEST(reloc_int80)
{
	check_fail(int80_in, sizeof(int80_in), SITE_FAIL_UNSAFE_INSN, "int");
}

TEST(reloc_int3)
{
	check_fail(int3_in, sizeof(int3_in), SITE_FAIL_UNSAFE_INSN, "int3");
}

TEST(reloc_ud2)
{
	check_fail(ud2_in, sizeof(ud2_in), SITE_FAIL_UNSAFE_INSN, "ud2");
}

TEST(reloc_xbegin)
{
	check_fail(xbegin_in, sizeof(xbegin_in), SITE_FAIL_UNSAFE_INSN, "xbegin");
}

TEST(reloc_call_rsp)
{
	check_fail(call_rsp_in, sizeof(call_rsp_in), SITE_FAIL_CALL_RSP, "call");
}

TEST(reloc_jmp_into_block)
{
	check_fail(jmp_into_block_in, sizeof(jmp_into_block_in), SITE_FAIL_BRANCH_INTO, "jmp");
}

TEST(reloc_far_jmp)
{
	check_fail(far_jmp_in, sizeof(far_jmp_in), SITE_FAIL_FAR_BRANCH, "jmp");
}

TEST(reloc_hlt)
{
	check_fail(hlt_in, sizeof(hlt_in), SITE_FAIL_UNSAFE_INSN, "hlt");
}

TEST(reloc_in_al)
{
	check_fail(in_al_in, sizeof(in_al_in), SITE_FAIL_UNSAFE_INSN, "in");
}

/* riprel_cmpxchg */
static const uint8_t riprel_cmpxchg_in[] = {
	/* cmpxchg QWORD PTR [rip+0x40],rcx ; = 0x200000000148 */
	0x48, 0x0f, 0xb1, 0x0d, 0x40, 0x00, 0x00, 0x00,
};
static const uint8_t riprel_cmpxchg_near[] = {
	/* cmpxchg QWORD PTR [rip+0xfffffffff0000140],rcx ; = 0x200000000148 */
	0x48, 0x0f, 0xb1, 0x0d, 0x40, 0x01, 0x00, 0xf0,
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000108 */
};
static const uint8_t riprel_cmpxchg_far[] = {
	0x48, 0x8d, 0x64, 0x24, 0x80, /* lea rsp,[rsp-0x80] */
	0x52, /* push rdx */
	0x48, 0xba, 0x08, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* movabs rdx,0x200000000108 */
	0x48, 0x0f, 0xb1, 0x8a, 0x40, 0x00, 0x00, 0x00, /* cmpxchg QWORD PTR [rdx+0x40],rcx */
	0x5a, /* pop rdx */
	0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00, /* lea rsp,[rsp+0x80] */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x08, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000108 */
};

/* riprel_rexb */
static const uint8_t riprel_rexb_in[] = {
	/* mov eax,DWORD PTR [rip+0x10] ; = 0x200000000117 */
	0x41, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00,
};
static const uint8_t riprel_rexb_near[] = {
	/* mov eax,DWORD PTR [rip+0xfffffffff0000110] ; = 0x200000000117 */
	0x41, 0x8b, 0x05, 0x10, 0x01, 0x00, 0xf0,
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000107 */
};
static const uint8_t riprel_rexb_far[] = {
	0x48, 0x8d, 0x64, 0x24, 0x80, /* lea rsp,[rsp-0x80] */
	0x51, /* push rcx */
	0x48, 0xb9, 0x07, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* movabs rcx,0x200000000107 */
	0x40, 0x8b, 0x81, 0x10, 0x00, 0x00, 0x00, /* rex mov eax,DWORD PTR [rcx+0x10] */
	0x59, /* pop rcx */
	0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00, /* lea rsp,[rsp+0x80] */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00, /* jmp QWORD PTR [rip+0x0] */
	0x07, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, /* dq 0x200000000107 */
};

/* riprel_push */
static const uint8_t riprel_push_in[] = {
	0xff, 0x35, 0x00, 0x10, 0x00, 0x00, /* push QWORD PTR [rip+0x1000] ; = 0x200000001106 */
};
static const uint8_t riprel_push_near[] = {
	/* push QWORD PTR [rip+0xfffffffff0001100] ; = 0x200000001106 */
	0xff, 0x35, 0x00, 0x11, 0x00, 0xf0,
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000106 */
};

/* riprel_vex */
static const uint8_t riprel_vex_in[] = {
	/* vmovdqu xmm0,XMMWORD PTR [rip+0x10] ; = 0x200000000118 */
	0xc5, 0xfa, 0x6f, 0x05, 0x10, 0x00, 0x00, 0x00,
};
static const uint8_t riprel_vex_near[] = {
	/* vmovdqu xmm0,XMMWORD PTR [rip+0xfffffffff0000110] ; = 0x200000000118 */
	0xc5, 0xfa, 0x6f, 0x05, 0x10, 0x01, 0x00, 0xf0,
	0xe9, 0xfb, 0x00, 0x00, 0xf0, /* jmp 0x200000000108 */
};

/* The far rewrite avoids the registers the instruction uses: rax (hidden) and rcx here. */
TEST(reloc_riprel_cmpxchg)
{
	check_golden(riprel_cmpxchg_in, sizeof(riprel_cmpxchg_in), riprel_cmpxchg_near,
		     sizeof(riprel_cmpxchg_near), riprel_cmpxchg_far, sizeof(riprel_cmpxchg_far));
}

/* REX.B is ignored for [rip + d] but not for [reg + d]: the rewrite clears it. */
TEST(reloc_riprel_rexb)
{
	check_golden(riprel_rexb_in, sizeof(riprel_rexb_in), riprel_rexb_near,
		     sizeof(riprel_rexb_near), riprel_rexb_far, sizeof(riprel_rexb_far));
}

/* push [rip + x] uses rsp, which the far rewrite moves: near only. */
TEST(reloc_riprel_push)
{
	check_golden(riprel_push_in, sizeof(riprel_push_in), riprel_push_near,
		     sizeof(riprel_push_near), NULL, 0);
	check_far_fail(riprel_push_in, sizeof(riprel_push_in), SITE_FAIL_RIPREL_FAR, "push");
}

/* VEX encodings keep B inverted in the prefix: near only. */
TEST(reloc_riprel_vex)
{
	check_golden(riprel_vex_in, sizeof(riprel_vex_in), riprel_vex_near, sizeof(riprel_vex_near),
		     NULL, 0);
	check_far_fail(riprel_vex_in, sizeof(riprel_vex_in), SITE_FAIL_RIPREL_FAR, "vmovdqu");
}

/* clang-format on */

/* An address-size prefix makes [rip + d] into [eip + d]: refused, not mis-relocated. */
TEST(reloc_eip_relative)
{
	static const uint8_t in[] = {
		0x67, 0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00, /* lea rax, [eip + 0x10] */
	};

	check_fail(in, sizeof(in), SITE_FAIL_UNKNOWN_REL, "lea");
}

/* The offsets map, used to move thread RIPs out of a patched region. */
TEST(reloc_offset_map)
{
	struct reloc r;

	setup(call_rel32_last_in, sizeof(call_rel32_last_in));
	CHECK(relocate_to(N, sizeof(call_rel32_last_in), &r) > 0);
	CHECK_EQ(r.nr, 2);
	CHECK_EQ(r.src_off[0], 0);
	CHECK_EQ(r.dst_off[0], 0);
	CHECK_EQ(r.src_off[1], 1); /* call */
	CHECK_EQ(r.dst_off[1], 1); /* push imm32 of the emulation */
	{
		uint64_t to = 0;

		CHECK_EQ(reloc_map_addr(&r, N, S + 1, &to), 0);
		CHECK_EQ(to, N + 1);
		CHECK_EQ(reloc_map_addr(&r, N, S + 2, &to), -EINVAL); /* inside the call */
		CHECK_EQ(reloc_map_addr(&r, N, S + 6, &to), -ENOENT);
	}
}

/* A full writer fails cleanly with -ENOSPC and writes nothing past the end. */
TEST(reloc_nospace)
{
	uint8_t buf[16];
	struct writer w;
	struct reloc r;

	setup(plain_in, sizeof(plain_in));
	memset(buf, 0xcc, sizeof(buf));
	writer_init(&w, buf, 10, F);
	reloc_init(&r, (const void *)S, sizeof(plain_in), S);
	CHECK_EQ(reloc_relocate(&r, &w, true), -ENOSPC);
	CHECK_EQ(r.fail, SITE_FAIL_NOSPACE);
	CHECK_EQ(buf[10], 0xcc);
}

TEST(reloc_targets_list)
{
	uint64_t t[4];

	CHECK_EQ(reloc_targets(riprel_load_in, sizeof(riprel_load_in), S, t, 4), 1);
	CHECK_EQ(t[0], S + 7 + 0x1000);
	CHECK_EQ(reloc_targets(plain_in, sizeof(plain_in), S, t, 4), 0);
}

/* push imm64 without a register: only the low half when it sign-extends. */
TEST(writer_push_imm64)
{
	static const uint8_t small[] = {
		0x68, 0x00, 0x00, 0x40, 0x00, /* push 0x400000 */
	};
	static const uint8_t neg[] = {
		0x68, 0xf0, 0xff, 0xff, 0xff, /* push 0xfffffffffffffff0 */
	};
	static const uint8_t big[] = {
		0x68, 0x00, 0x00, 0x00, 0x80, /* push 0xffffffff80000000 */
		0xc7, 0x44, 0x24, 0x04, 0x00, 0x00, 0x00, 0x00, /* mov dword ptr [rsp + 4], 0 */
	};
	uint8_t buf[32];
	struct writer w;

	writer_init(&w, buf, sizeof(buf), 0x1000);
	writer_put_push_imm64(&w, 0x400000);
	CHECK_EQ(w.len, sizeof(small));
	CHECK_MEMEQ(buf, small, sizeof(small));
	writer_init(&w, buf, sizeof(buf), 0x1000);
	writer_put_push_imm64(&w, (uint64_t)-16);
	CHECK_EQ(w.len, sizeof(neg));
	CHECK_MEMEQ(buf, neg, sizeof(neg));
	writer_init(&w, buf, sizeof(buf), 0x1000);
	writer_put_push_imm64(&w, 0x80000000ULL);
	CHECK_EQ(w.len, sizeof(big));
	CHECK_MEMEQ(buf, big, sizeof(big));
}

/* Placement: within reach of every address, page-aligned, in a gap. */
TEST(find_slot_rules)
{
	const char *text = "10000-20000 r-xp 00000000 00:00 0 /lib/a\n"
			   "7f0000000000-7f0000100000 r-xp 00000000 00:00 0 /lib/b\n"
			   "7f0000100000-7f0000200000 rw-p 00000000 00:00 0 \n"
			   "7ffff0000000-7ffff0021000 rw-p 00000000 00:00 0 [stack]\n";
	struct utrace_maps *m = utrace_maps__parse(text);
	uint64_t a[2], slot = 0;

	CHECK(m);
	/* the closest free page to the site: just below its mapping */
	a[0] = 0x7f0000000100ULL;
	CHECK_EQ(reloc_find_slot(m, a, 1, 100, &slot), 0);
	CHECK_EQ(slot, 0x7f0000000000ULL - 0x1000);
	/* ... or just above, when that is closer */
	a[0] = 0x7f00001fff00ULL;
	CHECK_EQ(reloc_find_slot(m, a, 1, 100, &slot), 0);
	CHECK_EQ(slot, 0x7f0000200000ULL);
	/* a site below the first mapping: never below 64 KiB, never on a mapping */
	a[0] = 0x8000;
	CHECK_EQ(reloc_find_slot(m, a, 1, 4096, &slot), 0);
	CHECK_EQ(slot, 0x20000);
	/* two addresses 3 GiB apart: the slot lies between, within 2 GiB of both */
	a[0] = 0x7f0000000100ULL;
	a[1] = 0x7f0000000100ULL - (3ULL << 30);
	CHECK_EQ(reloc_find_slot(m, a, 2, 4096, &slot), 0);
	CHECK(writer_rel32_ok(slot, a[0]) && writer_rel32_ok(slot + 4096, a[0]));
	CHECK(writer_rel32_ok(slot, a[1]) && writer_rel32_ok(slot + 4096, a[1]));
	CHECK_EQ(slot & 0xfff, 0);
	/* 5 GiB apart: nothing can reach both */
	a[1] = 0x7f0000000100ULL - (5ULL << 30);
	CHECK_EQ(reloc_find_slot(m, a, 2, 4096, &slot), -ENOMEM);
	/* the stack's guard gap (1 MiB) stays free */
	a[0] = 0x7ffff0000000ULL - 0x1000;
	CHECK_EQ(reloc_find_slot(m, a, 1, 4096, &slot), 0);
	CHECK(slot + 4096 <= 0x7ffff0000000ULL - (1ULL << 20) || slot >= 0x7ffff0021000ULL);
	CHECK_EQ(reloc_find_slot(m, a, 0, 4096, &slot), -EINVAL);
	utrace_maps__free(m);
}

/* The helper against this process: the slot must really be free. */
TEST(find_slot_self)
{
	struct utrace_maps *m = utrace_maps__read(0);
	uint64_t a[1] = { (uint64_t)&find_slot_self_marker }, slot = 0;
	void *p;

	CHECK(m);
	CHECK_EQ(reloc_find_slot(m, a, 1, 3 * 4096, &slot), 0);
	CHECK(writer_rel32_ok(slot, a[0]));
	p = mmap((void *)slot, 3 * 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK_MSG(p == (void *)slot, "mmap %#llx: %s", (unsigned long long)slot, strerror(errno));
	utrace_maps__free(m);
}
