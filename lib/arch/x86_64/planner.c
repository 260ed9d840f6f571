/* SPDX-License-Identifier: MIT */
/*
 * planner.c - decide, on the host, how to probe one site: a 5-byte jmp to a
 * trampoline, an int3 with the instruction run out of line, or a refusal
 * with a reason a user can read. Tracer process; no allocation.
 *
 * The rules (docs/prior-art.md §3, "Is a 5-byte jmp safe at this site?"):
 *
 *  1. endbr64 at a function entry stays in place (indirect calls land on
 *     it); the probe moves after it and the plan reports the new address.
 *  2. The first instruction must be relocatable (relocator.c's policy),
 *     else the site is REFUSED: int3 mode runs exactly that instruction out
 *     of line.
 *  3. jmp mode needs 5 bytes of whole instructions that:
 *     a. stay inside the function (its symbol size is known);
 *     b. contain nothing on the refuse list, and in a live process no call
 *        or syscall except a call as the LAST one (Frida's ONLINE scenario:
 *        a return address or a blocked syscall in the middle cannot be moved);
 *     c. do not include an unconditional jmp/ret before the 5th byte;
 *     d. are not the target of any direct branch in the module other than
 *        at their first byte (the module's branch-target index; it includes
 *        foo.cold parts jumping back into foo);
 *     e. when more than one instruction is displaced: are at a function
 *        entry, in a function without indirect jmps. Jump-table targets and
 *        exception landing pads are invisible to the index; they are never
 *        at an entry, and a switch's table is what an indirect jmp reads.
 *     A single instruction of 5 bytes or more needs none of d/e: nothing
 *     can jump into the middle of one instruction.
 *  4. Otherwise int3, and the plan says why not jmp (for `utrace -l --why`).
 *  5. keep_first (the agent): a kernel uprobe put on a function we patched
 *     (bpftrace, perf probe: always at the symbol) writes its int3 over our
 *     jmp's first byte, runs the file's first instruction out of line and
 *     resumes after it, in the middle of our jmp: the target dies. So when
 *     the entry's first instruction is shorter than 5 bytes and only moves
 *     rsp down (push reg, sub rsp imm8), or is a nop, or only writes
 *     scratch registers and status flags (scratch_only_insn(): xor eax,eax,
 *     mov rax,rdi, test rdi,rdi...), it stays in place, runs there, and
 *     the jmp goes right after it (rules 3a-e apply there too, and no
 *     direct branch may target that address either: it would skip the
 *     instruction the trampoline undoes). The trampoline gives rsp back
 *     (plan @undo), so the handlers see the entry as before, then runs a
 *     copy of that instruction with the displaced ones. A kernel uprobe at
 *     the entry then resumes on our jmp: both probes see every call.
 *
 * Known limits: a jump table in a foo.cold part is not seen by rule 3e
 * (only indirect jmps inside [foo, foo + size) are); the index does not
 * read jump tables, so a function with a switch gets int3 even when its
 * table cannot reach the prologue (the kernel's optprobes make the same
 * choice). Both err on the side of int3.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "arch.h"
#include "util.h"

static const struct {
	const char *fmt;
	bool insn; /* fmt takes the mnemonic */
} fail_table[__SITE_FAIL_MAX] = {
	[SITE_FAIL_NONE] = { "ok", false },
	[SITE_FAIL_DECODE] = { "bytes at the site are not a valid instruction", false },
	[SITE_FAIL_TRUNCATED] = { "instruction runs past the readable code", false },
	[SITE_FAIL_UNSAFE_INSN] = { "instruction '%s' cannot run out of line", true },
	[SITE_FAIL_PRIVILEGED] = { "privileged instruction '%s' cannot run out of line", true },
	[SITE_FAIL_FAR_BRANCH] = { "far branch '%s' cannot run out of line", true },
	[SITE_FAIL_BRANCH16] = { "16-bit branch '%s' cannot run out of line", true },
	[SITE_FAIL_CALL_RSP] = { "'%s' through rsp cannot be emulated out of line", true },
	[SITE_FAIL_UNKNOWN_REL] = { "instruction '%s' has an unsupported relative operand", true },
	[SITE_FAIL_RIPREL_FAR] = { "rip-relative operand of '%s' out of reach (2 GiB) of the "
				   "trampoline",
				   true },
	[SITE_FAIL_NOSPACE] = { "trampoline buffer too small", false },
	[SITE_FAIL_MID_INSN] = { "not an instruction boundary: inside '%s'", true },
	[SITE_FAIL_NOT_ENTRY] = { "not a function entry, and '%s' is shorter than 5 bytes", true },
	[SITE_FAIL_NO_SIZE] = { "function size unknown", false },
	[SITE_FAIL_TOO_SHORT] = { "function ends within 5 bytes", false },
	[SITE_FAIL_BLOCK_END] = { "'%s' ends the code within 5 bytes", true },
	[SITE_FAIL_STOP_INSN] = { "'%s' within 5 bytes cannot be displaced in a live process",
				  true },
	[SITE_FAIL_BRANCH_INTO] = { "a branch targets the middle of the displaced bytes", false },
	[SITE_FAIL_INDIRECT_JMP] = { "function has an indirect jmp (jump-table targets unknown)",
				     false },
	[SITE_FAIL_NO_INDEX] = { "no branch-target index for the module", false },
	[SITE_FAIL_INSN_IN_JMP] = { "'%s' can only be the last displaced instruction", true },
};

/**
 * site_fail_str - printf format describing @fail
 *
 * Return: a static string; it takes one "%s" (the mnemonic) when
 * site_fail_has_insn(@fail).
 */
const char *site_fail_str(enum site_fail fail)
{
	if ((unsigned int)fail >= __SITE_FAIL_MAX || !fail_table[fail].fmt)
		return "unknown reason";
	return fail_table[fail].fmt;
}

/** site_fail_has_insn - Return: true if site_fail_str(@fail) takes a mnemonic. */
bool site_fail_has_insn(enum site_fail fail)
{
	return (unsigned int)fail < __SITE_FAIL_MAX && fail_table[fail].insn;
}

/** site_mode_str - Return: "jmp", "int3" or "refused". */
const char *site_mode_str(enum site_mode mode)
{
	switch (mode) {
	case SITE_JMP:
		return "jmp";
	case SITE_INT3:
		return "int3";
	default:
		return "refused";
	}
}

/**
 * site_plan__why - write the reason of @plan as text into @buf
 *
 * Return: the length snprintf() would write; 0 when there is no reason
 * (mode jmp).
 */
int site_plan__why(const struct site_plan *plan, char *buf, size_t size)
{
	const char *fmt = site_fail_str(plan->fail);
	int n;

	if (plan->fail == SITE_FAIL_NONE) {
		if (size)
			buf[0] = 0;
		return 0;
	}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	n = snprintf(buf, size, fmt, plan->fail_insn);
#pragma GCC diagnostic pop
	if ((plan->fail == SITE_FAIL_BRANCH_INTO || plan->fail == SITE_FAIL_MID_INSN) && n >= 0 &&
	    (size_t)n < size)
		n += snprintf(buf + n, size - n, " (at %#llx)",
			      (unsigned long long)plan->fail_addr);
	return n;
}

static void set_fail(struct site_plan *p, enum site_fail fail, uint64_t addr,
		     const ZydisDecodedInstruction *in)
{
	p->fail = fail;
	p->fail_addr = addr;
	p->fail_insn[0] = 0;
	if (in)
		snprintf(p->fail_insn, sizeof(p->fail_insn), "%s",
			 ZydisMnemonicGetString(in->mnemonic));
}

/* Dry-run the relocator on [addr, addr + len) placed at its own address. */
static int try_relocate(const uint8_t *bytes, size_t len, uint64_t addr, struct reloc *r)
{
	uint8_t out[RELOC_MAX_OUT(RELOC_MAX_INSNS)];
	struct writer w;
	int err;

	writer_init(&w, out, sizeof(out), addr);
	reloc_init(r, bytes, len, addr);
	err = reloc_relocate(r, &w, true);
	writer_clear(&w);
	return err;
}

/*
 * Why jmp mode is impossible at @p->addr; SITE_FAIL_NONE if it is possible.
 * @kept: the entry's first instruction stays before @p->addr (rule 5): no
 * branch may target @p->addr itself either.
 */
static void plan_jmp(const struct site_input *in, const uint8_t *bytes, size_t avail, bool entry,
		     bool kept, struct site_plan *p)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t func_end = in->func_addr + in->func_size;
	size_t total = 0;
	unsigned int nr = 0;
	struct reloc r;

	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	while (total < SITE_JMP_SIZE) {
		uint64_t addr = p->addr + total;

		if (ZYAN_FAILED(ZydisDecoderDecodeFull(&dec, bytes + total, avail - total, &insn,
						       ops))) {
			set_fail(p, total + 15 > avail ? SITE_FAIL_TOO_SHORT : SITE_FAIL_DECODE,
				 addr, NULL);
			return;
		}
		if (!nr && insn.length >= SITE_JMP_SIZE) {
			/* one long instruction: nothing can branch into it */
			p->len = insn.length;
			p->nr_insns = 1;
			return;
		}
		if (!entry) {
			set_fail(p, SITE_FAIL_NOT_ENTRY, addr, &insn);
			return;
		}
		if (!in->func_size) {
			set_fail(p, SITE_FAIL_NO_SIZE, addr, NULL);
			return;
		}
		if (addr + insn.length > func_end) {
			set_fail(p, SITE_FAIL_TOO_SHORT, addr, NULL);
			return;
		}
		if (insn.meta.category == ZYDIS_CATEGORY_SYSCALL ||
		    insn.meta.category == ZYDIS_CATEGORY_INTERRUPT ||
		    insn.mnemonic == ZYDIS_MNEMONIC_SYSENTER) {
			set_fail(p, SITE_FAIL_STOP_INSN, addr, &insn);
			return;
		}
		if (insn.meta.category == ZYDIS_CATEGORY_CALL &&
		    total + insn.length < SITE_JMP_SIZE) {
			/*
			 * The emulated call returns to the original next instruction,
			 * which would be inside the patch: a call is only ever the last
			 * displaced instruction, live process or not.
			 */
			set_fail(p, in->live ? SITE_FAIL_STOP_INSN : SITE_FAIL_INSN_IN_JMP, addr,
				 &insn);
			return;
		}
		if ((insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
		     insn.meta.category == ZYDIS_CATEGORY_RET) &&
		    total + insn.length < SITE_JMP_SIZE) {
			set_fail(p, SITE_FAIL_BLOCK_END, addr, &insn);
			return;
		}
		total += insn.length;
		nr++;
	}
	if (!in->bti) {
		set_fail(p, SITE_FAIL_NO_INDEX, p->addr, NULL);
		return;
	}
	if (branch_index__any_target(in->bti, p->addr + !kept, p->addr + total)) {
		set_fail(p, SITE_FAIL_BRANCH_INTO,
			 branch_index__first_target(in->bti, p->addr + !kept, p->addr + total),
			 NULL);
		return;
	}
	if (branch_index__any_indirect(in->bti, in->func_addr, func_end)) {
		set_fail(p, SITE_FAIL_INDIRECT_JMP, in->func_addr, NULL);
		return;
	}
	if (try_relocate(bytes, total, p->addr, &r) < 0) {
		p->fail = r.fail;
		p->fail_addr = r.fail_addr;
		memcpy(p->fail_insn, r.fail_insn, sizeof(p->fail_insn));
		return;
	}
	p->len = total;
	p->nr_insns = nr;
}

/*
 * An int3 or jmp written into the middle of an instruction corrupts it:
 * decode the function from its start and refuse an address that is not
 * where an instruction begins (bpftrace refuses these without --unsafe).
 * Functions have no data inside them on x86-64, so the linear decode is
 * exact. Returns 0, or -1 with @p set.
 */
static int check_boundary(const ZydisDecoder *dec, const struct site_input *in, struct site_plan *p)
{
	uint64_t off = 0, want = in->addr - in->func_addr;
	ZydisDecodedInstruction insn;

	while (off < want) {
		if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(
			    dec, NULL, in->func_bytes + off, want - off + MIN(15, in->len), &insn)))
			return 0; /* undecodable on the way: leave it to the decoder below */
		if (off + insn.length > want) {
			set_fail(p, SITE_FAIL_MID_INSN, in->func_addr + off, &insn);
			return -1;
		}
		off += insn.length;
	}
	return 0;
}

/*
 * Rule 5: how far does @insn (an entry's first instruction) move rsp
 * down, when that is all it does? push r64: 8; sub rsp, imm8 (>= 0): imm.
 * Return: the bytes, or -1 for any other instruction.
 */
static int stack_only_insn(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	if (insn->mnemonic == ZYDIS_MNEMONIC_PUSH && insn->operand_count_visible == 1 &&
	    ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[0].size == 64 &&
	    ops[0].reg.value != ZYDIS_REGISTER_RSP)
		return 8;
	if (insn->mnemonic == ZYDIS_MNEMONIC_SUB && insn->operand_count_visible == 2 &&
	    ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[0].reg.value == ZYDIS_REGISTER_RSP &&
	    ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[1].imm.value.s >= 0 &&
	    ops[1].imm.value.s <= 127)
		return (int)ops[1].imm.value.s;
	return -1;
}

/*
 * Registers a kept instruction may write: caller-saved, and neither an
 * argument (rdi rsi rdx rcx r8 r9, which the handlers read) nor rsp (the
 * return address). rax is the return value (an injected return sets it),
 * r10 and r11 are scratch (r10 is a nested function's static chain, which
 * no handler reads). A write to eax/ax/al/ah lands in rax.
 */
static bool scratch_reg(ZydisRegister reg)
{
	switch (ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg)) {
	case ZYDIS_REGISTER_RAX:
	case ZYDIS_REGISTER_R10:
	case ZYDIS_REGISTER_R11:
		return true;
	default:
		return false;
	}
}

/* the status flags: caller-saved; DF (must stay clear), TF, IF, AC... are not */
#define STATUS_FLAGS                                                                 \
	(ZYDIS_CPUFLAG_CF | ZYDIS_CPUFLAG_PF | ZYDIS_CPUFLAG_AF | ZYDIS_CPUFLAG_ZF | \
	 ZYDIS_CPUFLAG_SF | ZYDIS_CPUFLAG_OF)

/*
 * Rule 5, the other keepable first instructions (undo 0): nop, and an
 * instruction of a few plain ALU/move mnemonics that touches no memory
 * (lea computes an address, it reads nothing), reads no flag, and writes
 * only scratch_reg()s and status flags. Why that is enough: the
 * instruction runs in place (target thread, before our jmp), so
 *  - the handlers still see the arguments, rsp and the return address of
 *    the entry;
 *  - an --inject at the entry returns to the caller without running the
 *    function: the caller may only see what the ABI lets a call clobber
 *    (rax, r10, r11, status flags), and no memory or callee-saved register;
 *  - it cannot fault (no memory access, no divide, no trap);
 *  - the slot runs a copy of it again after the handlers (as for push):
 *    the second run must give the same result, so it reads none of the
 *    registers it writes (xor/sub of a register with itself, which gives 0
 *    whatever it reads, excepted) and no flag.
 * Return: true if @insn is such an instruction.
 */
static bool scratch_only_insn(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	ZydisRegister wrote[ZYDIS_MAX_OPERAND_COUNT];
	unsigned int i, j, nw = 0;
	bool zero_idiom = false;

	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_NOP:
		return true; /* its operand, if any, is never accessed */
	case ZYDIS_MNEMONIC_XOR:
	case ZYDIS_MNEMONIC_SUB:
		zero_idiom = insn->operand_count_visible == 2 &&
			     ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
			     ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
			     ops[0].reg.value == ops[1].reg.value;
		break;
	case ZYDIS_MNEMONIC_MOV:
	case ZYDIS_MNEMONIC_MOVZX:
	case ZYDIS_MNEMONIC_MOVSX:
	case ZYDIS_MNEMONIC_MOVSXD:
	case ZYDIS_MNEMONIC_LEA:
	case ZYDIS_MNEMONIC_ADD:
	case ZYDIS_MNEMONIC_AND:
	case ZYDIS_MNEMONIC_OR:
	case ZYDIS_MNEMONIC_TEST:
	case ZYDIS_MNEMONIC_CMP:
		break;
	default:
		return false;
	}
	if (insn->attributes & (ZYDIS_ATTRIB_HAS_LOCK | ZYDIS_ATTRIB_HAS_SEGMENT))
		return false;
	if (insn->cpu_flags &&
	    (insn->cpu_flags->tested || ((insn->cpu_flags->modified | insn->cpu_flags->set_0 |
					  insn->cpu_flags->set_1 | insn->cpu_flags->undefined) &
					 ~(ZydisAccessedFlagsMask)STATUS_FLAGS)))
		return false;
	for (i = 0; i < insn->operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];

		if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.type != ZYDIS_MEMOP_TYPE_AGEN)
			return false; /* a load or a store: may fault, may be seen */
		if (op->type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    !(op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		if (op->reg.value == ZYDIS_REGISTER_RFLAGS ||
		    op->reg.value == ZYDIS_REGISTER_EFLAGS || op->reg.value == ZYDIS_REGISTER_FLAGS)
			continue; /* checked above */
		if (!scratch_reg(op->reg.value))
			return false;
		wrote[nw++] =
			ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, op->reg.value);
	}
	if (zero_idiom)
		return true;
	/* idempotent: nothing it reads is something it wrote */
	for (i = 0; i < insn->operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];
		ZydisRegister rd[2] = { ZYDIS_REGISTER_NONE, ZYDIS_REGISTER_NONE };

		if (op->type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ))
			rd[0] = op->reg.value;
		else if (op->type == ZYDIS_OPERAND_TYPE_MEMORY) {
			rd[0] = op->mem.base;
			rd[1] = op->mem.index;
		}
		for (j = 0; j < nw; j++)
			if ((rd[0] != ZYDIS_REGISTER_NONE &&
			     ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, rd[0]) ==
				     wrote[j]) ||
			    (rd[1] != ZYDIS_REGISTER_NONE &&
			     ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, rd[1]) ==
				     wrote[j]))
				return false;
	}
	return true;
}

/*
 * Rule 5: can @insn, the entry's first instruction, run in place before
 * the probe? Return: the rsp it moves down (the slot's @undo), or -1.
 */
static int keepable_insn(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	int undo = stack_only_insn(insn, ops);

	if (undo >= 0)
		return undo;
	return scratch_only_insn(insn, ops) ? 0 : -1;
}

/* Rule 5: move the jmp of plan @p after the entry's first instruction @insn, if it can go there. */
static void keep_first(const struct site_input *in, const uint8_t *bytes, size_t avail,
		       const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops,
		       struct site_plan *p)
{
	struct site_plan q = *p;
	int undo = keepable_insn(insn, ops);

	if (undo < 0 || avail <= insn->length)
		return;
	q.addr = p->addr + insn->length;
	q.fail = SITE_FAIL_NONE;
	plan_jmp(in, bytes + insn->length, avail - insn->length, true, true, &q);
	if (q.fail != SITE_FAIL_NONE)
		return; /* the jmp stays at the entry */
	/* (plan_jmp() skips the branch check for one long instruction) */
	if (!in->bti || branch_index__any_target(in->bti, q.addr, q.addr + 1))
		return;
	q.pre_len = insn->length;
	q.undo = (uint8_t)undo;
	*p = q;
}

/**
 * site_plan - choose jmp, int3 or refusal for the probe address in @in
 * @in: the site: its bytes, containing function, module index, scenario
 * @out: receives the plan (also on refusal, with the reason)
 *
 * Tracer process; no allocation; O(log n) in the module's branch targets.
 *
 * Return: 0 when the site can be probed (jmp or int3); -UTRACE_ERRNO__RELOC
 * when it is refused (@out->fail says why); -EINVAL on bad arguments.
 */
int site_plan(const struct site_input *in, struct site_plan *out)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	const uint8_t *bytes = in->bytes;
	size_t avail = in->len;
	bool entry;
	struct reloc r;
	struct site_plan p = { .mode = SITE_REFUSED, .addr = in->addr };
	ZyanStatus st;

	if (!in->bytes)
		return -EINVAL;
	entry = in->func_addr && in->addr == in->func_addr;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	if (!entry && in->func_bytes && in->addr > in->func_addr &&
	    check_boundary(&dec, in, &p) < 0) {
		*out = p;
		return -UTRACE_ERRNO__RELOC;
	}
	st = ZydisDecoderDecodeFull(&dec, bytes, avail, &insn, ops);
	if (ZYAN_SUCCESS(st) && entry && insn.mnemonic == ZYDIS_MNEMONIC_ENDBR64 &&
	    (!in->func_size || in->func_size > insn.length)) {
		/* endbr64 stays: indirect branches land on it (unless it is all there is) */
		p.addr += insn.length;
		bytes += insn.length;
		avail -= insn.length;
		st = ZydisDecoderDecodeFull(&dec, bytes, avail, &insn, ops);
	}
	if (ZYAN_FAILED(st)) {
		set_fail(&p, avail < 15 ? SITE_FAIL_TRUNCATED : SITE_FAIL_DECODE, p.addr, NULL);
		*out = p;
		return -UTRACE_ERRNO__RELOC;
	}

	/* int3 mode: the first instruction alone must run out of line */
	if (try_relocate(bytes, insn.length, p.addr, &r) < 0) {
		p.fail = r.fail;
		p.fail_addr = r.fail_addr;
		memcpy(p.fail_insn, r.fail_insn, sizeof(p.fail_insn));
		*out = p;
		return -UTRACE_ERRNO__RELOC;
	}
	p.mode = SITE_INT3;
	p.len = insn.length;
	p.nr_insns = 1;

	plan_jmp(in, bytes, avail, entry, false, &p);
	if (p.fail == SITE_FAIL_NONE)
		p.mode = SITE_JMP;
	else {
		p.len = insn.length;
		p.nr_insns = 1;
	}
	if (p.mode == SITE_JMP && in->keep_first && entry && insn.length < SITE_JMP_SIZE)
		keep_first(in, bytes, avail, &insn, ops, &p);
	*out = p;
	return 0;
}
