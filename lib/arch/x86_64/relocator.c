/* SPDX-License-Identifier: MIT */
/*
 * relocator.c - run displaced x86-64 instructions out of line.
 *
 * Runs in the tracer process. Works on a host copy of the target's bytes
 * and emits code for a target address through the writer (writer.c).
 *
 * What this is for
 * ================
 * Every backend that probes an instruction has to execute the bytes it
 * overwrote somewhere else:
 *   - int3 mode (ptrace backend, agent before optimisation): the first
 *     instruction at the site is replaced by 0xcc; after the handlers run,
 *     the thread continues in an "XOL" (execute out of line) copy of that
 *     one instruction, which then jumps back to the next original one;
 *   - jmp mode (agent): a 5-byte jmp rel32 replaces one or more whole
 *     instructions; the trampoline runs the handlers and then the same kind
 *     of copy of all displaced instructions, and jumps back after them.
 * Both use reloc_relocate() on the same input, so a site that works in
 * int3 mode works in jmp mode with one instruction and vice versa.
 *
 * What is relocatable
 * ===================
 * Most instructions do not care where they run. Those that do read RIP,
 * explicitly or implicitly. Each class and what we do with it (the policy
 * table of docs/prior-art.md §3; the code is classify() below):
 *
 *   class                              action
 *   ---------------------------------  ---------------------------------------
 *   no position-relative operand       copied byte for byte
 *   RIP-relative memory operand        copied; disp32 re-pointed at the same
 *   (mov/lea/cmp/push [rip+x], SSE,    absolute address. A RIP-relative operand
 *   VEX, EVEX)                         is always disp32 (never EVEX disp8*N),
 *                                      so the length does not change. Out of
 *                                      ±2 GiB: scratch-register rewrite, or
 *                                      SITE_FAIL_RIPREL_FAR (see below)
 *   [eip + x] (0x67 + RIP-relative)    refused (32-bit truncated address)
 *   jmp rel8/rel32                     jmp rel32 to the same target, or
 *                                      jmp [rip+0]; dq target when far
 *   jcc rel8/rel32                     jcc rel32, or the inverted jcc over an
 *                                      absolute jmp when far. The condition
 *                                      comes from the mnemonic, not the
 *                                      opcode byte (safetyhook's E0..E3 bug)
 *   loop/loope/loopne/jrcxz/jecxz      no rel32 form: "op +2; jmp short over;
 *                                      jmp target" (Frida's label dance); the
 *                                      0x67 prefix (ecx forms) is kept
 *   call rel32                         emulated: push the ORIGINAL return
 *                                      address, jmp target. The callee returns
 *                                      straight to the original code: no
 *                                      trampoline address on any stack, so
 *                                      unwinders work and nothing pins the
 *                                      trampoline. Last displaced insn only
 *   call r/m                           same: push original return address,
 *                                      then the same ModRM with /4 (jmp r/m).
 *                                      Refused if it addresses through RSP
 *                                      (the push moved it)
 *   jmp r/m, ret, ret imm16            copied (RIP fix for jmp [rip+x]);
 *                                      they end the block
 *   refuse list (refuse_table[])       SITE_FAIL_* with the reason
 *
 * Branches whose target is inside the displaced block (other than its first
 * byte) are refused here: the planner already refuses such sites through the
 * module's branch-target index, so local labels are never needed. A branch
 * to the first byte goes to the original address, which re-enters the probe
 * as the original loop would.
 *
 * Prefixes: segment overrides es/cs/ss/ds are ignored in 64-bit mode and
 * fs/gs (TLS, the stack protector's fs:0x28) are address-independent, so
 * copied instructions keep them. lock is a property of the instruction, not
 * of its address: out of line the same memory operand is updated atomically,
 * so it is kept (the kernel's uprobes refuse lock-prefixed instructions; we
 * see no reason to for a copy that runs without single-stepping). Re-encoded branches drop branch hints, bnd and notrack,
 * none of which changes the architectural result (IBT is not enabled for
 * user space on our kernels; a direct jmp needs no endbr64 anyway). Any
 * 0x66-prefixed branch is refused: AMD truncates RIP to 16 bits.
 *
 * Scenarios (Frida's OFFLINE/ONLINE)
 * ==================================
 * In a live process a thread may be inside the displaced bytes. The patch
 * protocol moves RIPs that are in the region (docs/prior-art.md §2), but two
 * things cannot be moved: a return address into the region (a displaced call
 * that is not the last instruction) and a thread blocked in a displaced
 * syscall. So calls are allowed only as the last displaced instruction and
 * syscall/sysenter/int are never displaced (and refused outright in int3 mode,
 * where the one displaced instruction would be the syscall itself). The
 * planner (planner.c) applies these rules; the relocator checks the
 * "last only" part again, so a bad plan fails loudly instead of silently.
 *
 * RIP-relative strategy
 * =====================
 * Re-pointing disp32 is exact and costs nothing, but only works within
 * ±2 GiB. Trampolines are therefore placed near the site AND near every
 * RIP-relative target (reloc_targets() lists them, reloc_find_slot() finds
 * a free page-aligned range within reach of all of them, safetyhook's
 * "desired addresses"). Far branch targets need no such care: they take the
 * absolute forms.
 *
 * When the destination is out of reach anyway (no free slot near, or an XOL
 * area shared by far-apart modules), data accesses fall back to the kernel's
 * scratch-register rewrite (riprel_analyze; put_riprel_scratch() below):
 * [rip + d] becomes [reg + d] with reg loaded with the original next-insn
 * address, after stepping over the red zone. It covers legacy encodings that
 * do not use rsp; VEX/EVEX, push/pop [rip + x] and jmp/call [rip + x] still
 * need a near destination (SITE_FAIL_RIPREL_FAR otherwise). An indirect far
 * jmp would need a "push; ret" trick, which breaks user shadow stacks.
 *
 * Shadow stacks (CET)
 * ===================
 * The call emulation (push + jmp) leaves the callee's ret without a
 * matching shadow-stack entry. This kernel has no user shadow stacks
 * (CONFIG_X86_USER_SHADOW_STACK unset), and glibc 2.36 does not enable them;
 * where they are enabled (arch_prctl ARCH_SHSTK_STATUS), a displaced call
 * must instead be refused or executed as a real call from the trampoline
 * (Frida's way, which pins the trampoline). Not done yet.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "arch.h"
#include "util.h"

/*
 * What to do with one instruction. KIND_REFUSE carries a site_fail.
 */
enum insn_kind {
	KIND_COPY, /* copied verbatim */
	KIND_RIPREL, /* copied, disp32 re-pointed */
	KIND_JMP_REL, /* jmp rel8/rel32 */
	KIND_JCC_REL, /* jcc rel8/rel32 */
	KIND_LOOP, /* loop/loope/loopne/jrcxz/jecxz */
	KIND_CALL_REL, /* call rel32 */
	KIND_CALL_IND, /* call r/m */
	KIND_JMP_IND, /* jmp r/m */
	KIND_RET, /* ret, ret imm16 */
	KIND_REFUSE,
};

struct insn_class {
	enum insn_kind kind;
	enum site_fail fail; /* KIND_REFUSE only */
	bool riprel; /* has a [rip + disp32] operand */
	bool ends_block; /* control never falls through */
	bool last_only; /* may only be the last displaced instruction */
};

/*
 * The refuse list: instructions that never run out of line, and why. Checked
 * before anything else. Privileged instructions are refused through
 * ZYDIS_ATTRIB_IS_PRIVILEGED, far branches through branch_type, I/O through
 * the category (see classify()).
 */
static const struct refuse_rule {
	ZydisMnemonic mnemonic;
	enum site_fail fail;
	const char *why; /* for the reader: why it never runs out of line */
} refuse_table[] = {
	{ ZYDIS_MNEMONIC_SYSCALL, SITE_FAIL_UNSAFE_INSN,
	  "a thread blocked in it keeps RIP in the copy forever; restart and "
	  "sigreturn would resume in the copy" },
	{ ZYDIS_MNEMONIC_SYSENTER, SITE_FAIL_UNSAFE_INSN, "as syscall" },
	{ ZYDIS_MNEMONIC_SYSEXIT, SITE_FAIL_UNSAFE_INSN, "kernel only" },
	{ ZYDIS_MNEMONIC_SYSRET, SITE_FAIL_UNSAFE_INSN, "kernel only" },
	{ ZYDIS_MNEMONIC_INT, SITE_FAIL_UNSAFE_INSN,
	  "int 0x80 is a syscall; others trap with the copy's RIP" },
	{ ZYDIS_MNEMONIC_INT1, SITE_FAIL_UNSAFE_INSN, "debug trap: the handler sees the copy" },
	{ ZYDIS_MNEMONIC_INT3, SITE_FAIL_UNSAFE_INSN,
	  "someone else's breakpoint (debugger, another tracer)" },
	{ ZYDIS_MNEMONIC_INTO, SITE_FAIL_UNSAFE_INSN, "invalid in 64-bit mode" },
	{ ZYDIS_MNEMONIC_UD0, SITE_FAIL_UNSAFE_INSN, "deliberate #UD: SIGILL handlers read RIP" },
	{ ZYDIS_MNEMONIC_UD1, SITE_FAIL_UNSAFE_INSN, "deliberate #UD" },
	{ ZYDIS_MNEMONIC_UD2, SITE_FAIL_UNSAFE_INSN, "deliberate #UD (__builtin_trap)" },
	{ ZYDIS_MNEMONIC_HLT, SITE_FAIL_UNSAFE_INSN, "privileged: faults, handlers read RIP" },
	{ ZYDIS_MNEMONIC_XBEGIN, SITE_FAIL_UNSAFE_INSN,
	  "relative abort handler; a transaction aborts at the int3 anyway" },
	{ ZYDIS_MNEMONIC_XABORT, SITE_FAIL_UNSAFE_INSN, "transactional memory" },
	{ ZYDIS_MNEMONIC_XEND, SITE_FAIL_UNSAFE_INSN, "transactional memory" },
	{ ZYDIS_MNEMONIC_IRET, SITE_FAIL_FAR_BRANCH, "changes CS" },
	{ ZYDIS_MNEMONIC_IRETD, SITE_FAIL_FAR_BRANCH, "changes CS" },
	{ ZYDIS_MNEMONIC_IRETQ, SITE_FAIL_FAR_BRANCH, "changes CS" },
	{ ZYDIS_MNEMONIC_ENCLU, SITE_FAIL_UNSAFE_INSN,
	  "SGX: the enclave exit address is the copy" },
};

/**
 * reloc_refuse_detail - the reason an instruction is on the refuse list
 * @mnemonic: as in site_plan.fail_insn (Zydis spelling, e.g. "syscall")
 *
 * Return: a static sentence, or NULL if @mnemonic is not on the list.
 */
const char *reloc_refuse_detail(const char *mnemonic)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(refuse_table); i++)
		if (!strcmp(ZydisMnemonicGetString(refuse_table[i].mnemonic), mnemonic))
			return refuse_table[i].why;
	return NULL;
}

/* Condition code (low nibble of 0x70..0x7f) of each jcc mnemonic. */
static const struct {
	ZydisMnemonic mnemonic;
	uint8_t cc;
} jcc_table[] = {
	{ ZYDIS_MNEMONIC_JO, 0x0 },   { ZYDIS_MNEMONIC_JNO, 0x1 },  { ZYDIS_MNEMONIC_JB, 0x2 },
	{ ZYDIS_MNEMONIC_JNB, 0x3 },  { ZYDIS_MNEMONIC_JZ, 0x4 },   { ZYDIS_MNEMONIC_JNZ, 0x5 },
	{ ZYDIS_MNEMONIC_JBE, 0x6 },  { ZYDIS_MNEMONIC_JNBE, 0x7 }, { ZYDIS_MNEMONIC_JS, 0x8 },
	{ ZYDIS_MNEMONIC_JNS, 0x9 },  { ZYDIS_MNEMONIC_JP, 0xa },   { ZYDIS_MNEMONIC_JNP, 0xb },
	{ ZYDIS_MNEMONIC_JL, 0xc },   { ZYDIS_MNEMONIC_JNL, 0xd },  { ZYDIS_MNEMONIC_JLE, 0xe },
	{ ZYDIS_MNEMONIC_JNLE, 0xf },
};

static int jcc_cc(ZydisMnemonic m)
{
	size_t i;

	for (i = 0; i < sizeof(jcc_table) / sizeof(jcc_table[0]); i++)
		if (jcc_table[i].mnemonic == m)
			return jcc_table[i].cc;
	return -1;
}

static void decoder_init(ZydisDecoder *d)
{
	ZydisDecoderInit(d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
}

static bool has_riprel(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
		       int *ret_op)
{
	int i;

	for (i = 0; i < in->operand_count; i++) {
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    ops[i].mem.base == ZYDIS_REGISTER_RIP) {
			*ret_op = i;
			return true;
		}
	}
	return false;
}

static bool uses_rsp(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
	const ZydisDecodedOperand *op = &ops[0]; /* call's target operand */

	if (op->type == ZYDIS_OPERAND_TYPE_REGISTER)
		return op->reg.value == ZYDIS_REGISTER_RSP;
	if (op->type == ZYDIS_OPERAND_TYPE_MEMORY)
		return op->mem.base == ZYDIS_REGISTER_RSP || op->mem.index == ZYDIS_REGISTER_RSP;
	return false;
}

/*
 * classify - apply the policy to one decoded instruction.
 */
static struct insn_class classify(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
	struct insn_class c = { .kind = KIND_COPY };
	bool branch = false;
	size_t i;
	int op;

	for (i = 0; i < sizeof(refuse_table) / sizeof(refuse_table[0]); i++) {
		if (refuse_table[i].mnemonic == in->mnemonic) {
			c.kind = KIND_REFUSE;
			c.fail = refuse_table[i].fail;
			return c;
		}
	}
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_IO:
	case ZYDIS_CATEGORY_IOSTRINGOP:
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSRET:
	case ZYDIS_CATEGORY_SGX:
		/* in/out need iopl and fault with the copy's RIP; the rest as the table */
		c.kind = KIND_REFUSE;
		c.fail = SITE_FAIL_UNSAFE_INSN;
		return c;
	case ZYDIS_CATEGORY_COND_BR:
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_RET:
		branch = true;
		break;
	default:
		break;
	}
	if (in->attributes & ZYDIS_ATTRIB_IS_PRIVILEGED) {
		c.kind = KIND_REFUSE;
		c.fail = SITE_FAIL_PRIVILEGED;
		return c;
	}
	if (branch && in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR) {
		c.kind = KIND_REFUSE;
		c.fail = SITE_FAIL_FAR_BRANCH;
		return c;
	}
	/*
	 * Zydis decodes 66 e9 as Intel does (prefix ignored, rel32); AMD takes a
	 * rel16 and truncates RIP. Refuse on the prefix, not the decoded width.
	 */
	if (branch &&
	    (in->operand_width == 16 || (in->attributes & ZYDIS_ATTRIB_HAS_OPERANDSIZE))) {
		c.kind = KIND_REFUSE;
		c.fail = SITE_FAIL_BRANCH16;
		return c;
	}
	for (i = 0; i < in->operand_count; i++) {
		/* 0x67 + [rip + d] is [eip + d]: truncated to 32 bits, never relocated */
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    ops[i].mem.base == ZYDIS_REGISTER_EIP) {
			c.kind = KIND_REFUSE;
			c.fail = SITE_FAIL_UNKNOWN_REL;
			return c;
		}
	}
	c.riprel = has_riprel(in, ops, &op);
	if (c.riprel && (in->raw.disp.size != 32 || !in->raw.disp.offset)) {
		/* cannot happen per the SDM; refuse rather than guess */
		c.kind = KIND_REFUSE;
		c.fail = SITE_FAIL_UNKNOWN_REL;
		return c;
	}

	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_JMP:
		c.ends_block = true;
		if (in->raw.imm[0].is_relative) {
			c.kind = KIND_JMP_REL;
		} else {
			c.kind = KIND_JMP_IND;
			c.last_only = true;
		}
		return c;
	case ZYDIS_MNEMONIC_CALL:
		c.last_only = true;
		c.ends_block = true; /* emulated call jumps away; the callee returns to orig */
		if (in->raw.imm[0].is_relative) {
			c.kind = KIND_CALL_REL;
		} else if (uses_rsp(in, ops)) {
			c.kind = KIND_REFUSE;
			c.fail = SITE_FAIL_CALL_RSP;
		} else {
			c.kind = KIND_CALL_IND;
		}
		return c;
	case ZYDIS_MNEMONIC_RET:
		c.kind = KIND_RET;
		c.ends_block = true;
		c.last_only = true;
		return c;
	case ZYDIS_MNEMONIC_LOOP:
	case ZYDIS_MNEMONIC_LOOPE:
	case ZYDIS_MNEMONIC_LOOPNE:
	case ZYDIS_MNEMONIC_JRCXZ:
	case ZYDIS_MNEMONIC_JECXZ:
		c.kind = KIND_LOOP;
		return c;
	default:
		break;
	}
	if (in->meta.category == ZYDIS_CATEGORY_COND_BR) {
		if (jcc_cc(in->mnemonic) < 0 || !in->raw.imm[0].is_relative) {
			c.kind = KIND_REFUSE;
			c.fail = SITE_FAIL_UNKNOWN_REL;
		} else {
			c.kind = KIND_JCC_REL;
		}
		return c;
	}
	if (branch) {
		/* a branch we did not list: be conservative */
		c.kind = KIND_REFUSE;
		c.fail = SITE_FAIL_UNKNOWN_REL;
		return c;
	}
	if (c.riprel) {
		c.kind = KIND_RIPREL;
		return c;
	}
	if (in->attributes & ZYDIS_ATTRIB_IS_RELATIVE) {
		c.kind = KIND_REFUSE;
		c.fail = SITE_FAIL_UNKNOWN_REL;
	}
	return c;
}

/**
 * reloc_init - prepare to relocate @len bytes of whole instructions
 * @r: the relocator (embedded object)
 * @src: host copy of the bytes
 * @len: number of bytes to relocate; must end on an instruction boundary
 * @src_addr: target address of @src[0]
 */
void reloc_init(struct reloc *r, const void *src, size_t len, uint64_t src_addr)
{
	memset(r, 0, sizeof(*r));
	r->src = src;
	r->src_len = len;
	r->src_addr = src_addr;
}

/** reloc_clear - reset @r; it owns nothing. */
void reloc_clear(struct reloc *r)
{
	memset(r, 0, sizeof(*r));
}

static int reloc_fail(struct reloc *r, enum site_fail fail, uint64_t addr,
		      const ZydisDecodedInstruction *in)
{
	r->fail = fail;
	r->fail_addr = addr;
	if (in)
		snprintf(r->fail_insn, sizeof(r->fail_insn), "%s",
			 ZydisMnemonicGetString(in->mnemonic));
	return fail == SITE_FAIL_NOSPACE ? -ENOSPC : -UTRACE_ERRNO__RELOC;
}

/*
 * Scratch registers for the far RIP-relative rewrite, by ModRM encoding.
 * rsp (4) and rbp (5) are left out: rm=100 means "SIB follows" and rbp is
 * the frame pointer a profiler may be reading; r8..r15 would need REX.B.
 */
static const struct {
	ZydisRegister reg;
	uint8_t id;
} scratch_regs[] = {
	{ ZYDIS_REGISTER_RAX, 0 }, { ZYDIS_REGISTER_RCX, 1 }, { ZYDIS_REGISTER_RDX, 2 },
	{ ZYDIS_REGISTER_RBX, 3 }, { ZYDIS_REGISTER_RSI, 6 }, { ZYDIS_REGISTER_RDI, 7 },
};

static ZydisRegister reg64(ZydisRegister reg)
{
	if (reg == ZYDIS_REGISTER_NONE)
		return reg;
	return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
}

/*
 * put_riprel_scratch - the RIP-relative target is out of ±2 GiB of the
 * destination: rewrite [rip + disp32] as [scratch + disp32] with scratch
 * holding the ORIGINAL address of the next instruction, so the effective
 * address is unchanged (the kernel's riprel_analyze, Frida's fallback):
 *
 *   lea rsp, [rsp - 128]    ; step over the red zone of a leaf function
 *   push scratch
 *   movabs scratch, next    ; original address after the instruction
 *   <insn, ModRM mod=10 rm=scratch, same disp32>
 *   pop scratch
 *   lea rsp, [rsp + 128]
 *
 * None of these touches the flags. The scratch register is one that no
 * operand of the instruction uses, explicit or implicit (Zydis lists the
 * hidden ones: cmpxchg's rax, rep's rcx/rsi/rdi, mul's rdx ...). Refused
 * (SITE_FAIL_RIPREL_FAR) for branches (they would leave before the pop),
 * for VEX/EVEX/XOP encodings, whose inverted B bits we do not rewrite, and
 * for instructions that use rsp, which the sequence moves (push/pop [rip]).
 */
static int put_riprel_scratch(struct reloc *r, struct writer *w, uint8_t *buf, uint64_t addr,
			      const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
	bool used[ARRAY_SIZE(scratch_regs)] = { 0 };
	int i, k, id = -1;

	if (in->meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
	    in->meta.category == ZYDIS_CATEGORY_CALL || in->meta.category == ZYDIS_CATEGORY_RET ||
	    in->meta.category == ZYDIS_CATEGORY_COND_BR)
		return reloc_fail(r, SITE_FAIL_RIPREL_FAR, addr, in);
	if (in->attributes & (ZYDIS_ATTRIB_HAS_VEX | ZYDIS_ATTRIB_HAS_EVEX | ZYDIS_ATTRIB_HAS_MVEX |
			      ZYDIS_ATTRIB_HAS_XOP))
		return reloc_fail(r, SITE_FAIL_RIPREL_FAR, addr, in);
	for (i = 0; i < in->operand_count; i++) {
		ZydisRegister regs[2] = { ZYDIS_REGISTER_NONE, ZYDIS_REGISTER_NONE };

		if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER) {
			regs[0] = reg64(ops[i].reg.value);
		} else if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY) {
			regs[0] = reg64(ops[i].mem.base);
			regs[1] = reg64(ops[i].mem.index);
		}
		for (k = 0; k < 2; k++) {
			size_t j;

			if (regs[k] == ZYDIS_REGISTER_RSP)
				return reloc_fail(r, SITE_FAIL_RIPREL_FAR, addr, in);
			for (j = 0; j < ARRAY_SIZE(scratch_regs); j++)
				if (regs[k] == scratch_regs[j].reg)
					used[j] = true;
		}
	}
	for (i = 0; i < (int)ARRAY_SIZE(scratch_regs) && id < 0; i++)
		if (!used[i])
			id = scratch_regs[i].id;
	if (id < 0)
		return reloc_fail(r, SITE_FAIL_RIPREL_FAR, addr, in);

	/* mod=10 (disp32), reg kept, rm=scratch; REX.B (ignored for rip) cleared */
	buf[in->raw.modrm.offset] = 0x80 | (buf[in->raw.modrm.offset] & 0x38) | id;
	if (in->attributes & ZYDIS_ATTRIB_HAS_REX)
		buf[in->raw.rex.offset] &= ~0x01;
	writer_put_lea_rsp(w, -128);
	writer_put_push_reg(w, id);
	writer_put_mov_imm64(w, id, addr + in->length);
	writer_put_bytes(w, buf, in->length);
	writer_put_pop_reg(w, id);
	writer_put_lea_rsp(w, 128);
	return 0;
}

/* Copy @in, re-pointing its disp32 (if @riprel) for the writer's position. */
static int put_copy(struct reloc *r, struct writer *w, const uint8_t *p, uint64_t addr,
		    const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, bool riprel,
		    int modrm_reg)
{
	uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
	uint64_t end = writer_pc(w) + in->length;

	memcpy(buf, p, in->length);
	if (modrm_reg >= 0)
		buf[in->raw.modrm.offset] = (buf[in->raw.modrm.offset] & ~0x38) | (modrm_reg << 3);
	if (riprel) {
		uint64_t target = addr + in->length + (int64_t)in->raw.disp.value;
		int32_t disp;

		if (!writer_rel32_ok(end, target))
			return modrm_reg < 0 ? put_riprel_scratch(r, w, buf, addr, in, ops) :
					       reloc_fail(r, SITE_FAIL_RIPREL_FAR, addr, in);
		disp = (int32_t)(target - end);
		memcpy(buf + in->raw.disp.offset, &disp, 4);
	}
	writer_put_bytes(w, buf, in->length);
	return 0;
}

/* loop/jrcxz: "op +2; jmp short +N; jmp target" (the taken path is the far jmp). */
static void put_loop(struct writer *w, const uint8_t *p, const ZydisDecodedInstruction *in,
		     uint64_t target)
{
	uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
	uint64_t far_at;

	memcpy(buf, p, in->length);
	buf[in->raw.imm[0].offset] = 2; /* loop/jrcxz +2: over the jmp short */
	writer_put_bytes(w, buf, in->length);
	far_at = writer_pc(w) + 2;
	writer_put_u8(w, 0xeb); /* jmp short over the jmp to the target */
	writer_put_u8(w, writer_rel32_ok(far_at + 5, target) ? 5 : WRITER_JMP_ABS_SIZE);
	writer_put_jmp(w, target);
}

/**
 * reloc_relocate - emit the displaced instructions for execution at the
 * writer's position, optionally followed by a jump back to the first byte
 * after them
 * @r: relocator set up with reloc_init()
 * @w: destination; its pc is where the code will run
 * @jmp_back: append the jump back (unless the last instruction ends the
 * block: jmp, ret, emulated call)
 *
 * Fills r->nr, r->src_off[] and r->dst_off[] (the map from original to
 * relocated instruction, used to move thread RIPs out of a patched region).
 * Tracer process; no allocation.
 *
 * Return: number of bytes written on success; -UTRACE_ERRNO__RELOC with
 * r->fail, r->fail_addr and r->fail_insn set when an instruction cannot be
 * relocated to this destination; -ENOSPC if the writer is full; -EINVAL if
 * more than RELOC_MAX_INSNS instructions are displaced.
 */
int reloc_relocate(struct reloc *r, struct writer *w, bool jmp_back)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	size_t start = w->len, off = 0;
	bool fell_through = true;
	int err;

	decoder_init(&dec);
	r->nr = 0;
	while (off < r->src_len) {
		const uint8_t *p = r->src + off;
		uint64_t addr = r->src_addr + off, next, target = 0;
		struct insn_class c;

		if (r->nr == RELOC_MAX_INSNS)
			return -EINVAL;
		if (ZYAN_FAILED(ZydisDecoderDecodeFull(&dec, p, r->src_len - off, &in, ops)))
			return reloc_fail(
				r, off + 15 > r->src_len ? SITE_FAIL_TRUNCATED : SITE_FAIL_DECODE,
				addr, NULL);
		next = addr + in.length;
		c = classify(&in, ops);
		if (c.kind == KIND_REFUSE)
			return reloc_fail(r, c.fail, addr, &in);
		if (c.last_only && off + in.length != r->src_len)
			return reloc_fail(r, SITE_FAIL_INSN_IN_JMP, addr, &in);
		if (in.raw.imm[0].is_relative) {
			target = next + in.raw.imm[0].value.s;
			if (target > r->src_addr && target < r->src_addr + r->src_len)
				return reloc_fail(r, SITE_FAIL_BRANCH_INTO, addr, &in);
		}
		r->src_off[r->nr] = off;
		r->dst_off[r->nr] = w->len - start;
		r->nr++;

		err = 0;
		switch (c.kind) {
		case KIND_COPY:
		case KIND_RIPREL:
		case KIND_RET:
		case KIND_JMP_IND:
			err = put_copy(r, w, p, addr, &in, ops, c.riprel, -1);
			break;
		case KIND_JMP_REL:
			writer_put_jmp(w, target);
			break;
		case KIND_JCC_REL:
			writer_put_jcc(w, jcc_cc(in.mnemonic), target);
			break;
		case KIND_LOOP:
			put_loop(w, p, &in, target);
			break;
		case KIND_CALL_REL:
			writer_put_push_imm64(w, next); /* the ORIGINAL return address */
			writer_put_jmp(w, target);
			break;
		case KIND_CALL_IND:
			writer_put_push_imm64(w, next);
			err = put_copy(r, w, p, addr, &in, ops, c.riprel,
				       4); /* call r/m -> jmp r/m */
			break;
		case KIND_REFUSE:
			break;
		}
		if (err)
			return err;
		fell_through = !c.ends_block;
		off += in.length;
	}
	if (jmp_back && fell_through)
		writer_put_jmp(w, r->src_addr + r->src_len);
	if (w->err)
		return reloc_fail(r, SITE_FAIL_NOSPACE, r->src_addr, NULL);
	return (int)(w->len - start);
}

/**
 * reloc_map_addr - where a thread stopped at original address @addr must
 * continue after the region was patched: the start of the copy of the
 * instruction at @addr in the relocated code at @dst
 * @r: relocator after a successful reloc_relocate()
 * @dst: target address the relocated code was written for (writer pc)
 * @addr: a thread's RIP inside [r->src_addr, r->src_addr + r->src_len)
 * @ret_addr: receives the new RIP; untouched on failure
 *
 * Used by the patch protocol to move threads out of the displaced bytes
 * (Orbit's MoveInstructionPointersOutOfOverwrittenCode). No allocation.
 *
 * Return: 0 on success; -ENOENT if @addr is outside the region; -EINVAL if
 * it is not the start of a displaced instruction (a RIP cannot be there).
 */
int reloc_map_addr(const struct reloc *r, uint64_t dst, uint64_t addr, uint64_t *ret_addr)
{
	unsigned int i;

	if (addr < r->src_addr || addr >= r->src_addr + r->src_len)
		return -ENOENT;
	for (i = 0; i < r->nr; i++) {
		if (r->src_addr + r->src_off[i] == addr) {
			*ret_addr = dst + r->dst_off[i];
			return 0;
		}
	}
	return -EINVAL;
}

/**
 * reloc_targets - list the absolute addresses that RIP-relative memory
 * operands of the displaced bytes refer to; code relocated from @src must be
 * placed within ±2 GiB of each (branch targets are not listed: they have
 * absolute forms)
 * @src: host copy of the bytes; @len: their number; @src_addr: their address
 * @out: receives up to @max addresses
 *
 * Return: the number of targets (which may exceed @max); -UTRACE_ERRNO__RELOC
 * if the bytes do not decode.
 */
int reloc_targets(const void *src, size_t len, uint64_t src_addr, uint64_t *out, size_t max)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	size_t off = 0, n = 0;
	int op;

	decoder_init(&dec);
	while (off < len) {
		if (ZYAN_FAILED(ZydisDecoderDecodeFull(&dec, (const uint8_t *)src + off, len - off,
						       &in, ops)))
			return -UTRACE_ERRNO__RELOC;
		if (has_riprel(&in, ops, &op)) {
			if (n < max)
				out[n] = src_addr + off + in.length + (int64_t)in.raw.disp.value;
			n++;
		}
		off += in.length;
	}
	return (int)n;
}

/*
 * Placement. The lowest 64 KiB are never mappable (vm.mmap_min_addr), user
 * space ends at 47 bits, and the stack's guard gap (1 MiB by default,
 * stack_guard_gap) below "[stack]" must stay free for it to grow into.
 */
#define SLOT_MIN_ADDR 0x10000ULL
#define SLOT_MAX_ADDR 0x7ffffffff000ULL
#define SLOT_PAGE 4096ULL
#define SLOT_STACK_GAP (1ULL << 20)
/* Keep a margin so any rel32 inside the slot still reaches. */
#define SLOT_REACH ((uint64_t)INT32_MAX - SLOT_PAGE)

static uint64_t page_up(uint64_t a)
{
	return (a + SLOT_PAGE - 1) & ~(SLOT_PAGE - 1);
}

/**
 * reloc_find_slot - find a free page-aligned address range of @size bytes
 * within ±2 GiB of every address in @addrs (the site first, then the
 * RIP-relative targets from reloc_targets())
 * @maps: the target's mappings (utrace_maps__read())
 * @addrs: addresses to stay near; @nr >= 1; the slot closest to @addrs[0]
 * is chosen
 * @size: bytes needed (rounded up to pages)
 * @ret_addr: receives the slot; untouched on failure
 *
 * The result is only a hint: map it with MAP_FIXED_NOREPLACE, which fails
 * with EEXIST if the process mapped something there meanwhile.
 * Tracer process; no allocation.
 *
 * Return: 0 on success; -EINVAL on bad arguments; -ENOMEM if no free range
 * is within reach of all addresses.
 */
int reloc_find_slot(const struct utrace_maps *maps, const uint64_t *addrs, size_t nr, size_t size,
		    uint64_t *ret_addr)
{
	uint64_t lo = SLOT_MIN_ADDR, hi = SLOT_MAX_ADDR, mina = UINT64_MAX, maxa = 0;
	uint64_t best = 0, best_dist = UINT64_MAX, gap_lo = SLOT_MIN_ADDR;
	size_t i;

	if (!nr || !size || !maps)
		return -EINVAL;
	size = page_up(size);
	for (i = 0; i < nr; i++) {
		mina = MIN(mina, addrs[i]);
		maxa = MAX(maxa, addrs[i]);
	}
	if (maxa > SLOT_REACH)
		lo = MAX(lo, maxa - SLOT_REACH);
	hi = MIN(hi, mina + SLOT_REACH); /* the slot's end must stay below this */
	lo = page_up(lo);
	if (lo + size > hi)
		return -ENOMEM;

	for (i = 0; i <= maps->nr; i++) {
		uint64_t gap_hi = i < maps->nr ? maps->maps[i].start : SLOT_MAX_ADDR;
		uint64_t a, b, want, cand;

		if (i < maps->nr && maps->maps[i].path && !strcmp(maps->maps[i].path, "[stack]"))
			gap_hi = gap_hi > SLOT_STACK_GAP ? gap_hi - SLOT_STACK_GAP : 0;
		a = page_up(MAX(gap_lo, lo));
		b = MIN(gap_hi, hi) & ~(SLOT_PAGE - 1);
		if (a < b && b - a >= size) {
			/* the closest start to addrs[0] inside [a, b - size] */
			want = addrs[0] & ~(SLOT_PAGE - 1);
			cand = want < a ? a : want > b - size ? b - size : want;
			if ((cand > addrs[0] ? cand - addrs[0] : addrs[0] - cand) < best_dist) {
				best = cand;
				best_dist = cand > addrs[0] ? cand - addrs[0] : addrs[0] - cand;
			}
		}
		if (i < maps->nr)
			gap_lo = MAX(gap_lo, maps->maps[i].end);
	}
	if (best_dist == UINT64_MAX)
		return -ENOMEM;
	*ret_addr = best;
	return 0;
}

/**
 * reloc_insn_len - length of the instruction at @src
 * @src: host copy of the bytes
 * @len: bytes available
 *
 * For int3 probes, which displace exactly one instruction (the planner's
 * len covers all displaced instructions of a jmp plan). Tracer process; no
 * allocation.
 *
 * Return: the length (1..15); -UTRACE_ERRNO__RELOC if the bytes do not
 * decode.
 */
int reloc_insn_len(const void *src, size_t len)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction in;

	decoder_init(&dec);
	if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&dec, NULL, src, len, &in)))
		return -UTRACE_ERRNO__RELOC;
	return in.length;
}
