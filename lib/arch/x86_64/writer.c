/* SPDX-License-Identifier: MIT */
/*
 * writer.c - a small x86-64 machine-code writer for trampolines and
 * out-of-line copies. Runs in the tracer process; no allocation.
 *
 * The writer fills a host buffer whose bytes will live at another address
 * (w->pc) in the target, so every PC-relative encoding is computed against
 * the target address, never against the host pointer. Errors are sticky:
 * once a write does not fit, w->err is -ENOSPC and later writes are no-ops,
 * so a caller checks once at the end.
 */
#include <errno.h>
#include <string.h>

#include "arch.h"

/**
 * writer_init - start writing at @buf, which will be mapped at @pc
 * @w: the writer (embedded object)
 * @buf: host buffer
 * @cap: its size
 * @pc: target address of @buf[0]
 */
void writer_init(struct writer *w, void *buf, size_t cap, uint64_t pc)
{
	w->buf = buf;
	w->cap = cap;
	w->len = 0;
	w->pc = pc;
	w->err = 0;
}

/** writer_clear - forget the buffer; the writer owns nothing. */
void writer_clear(struct writer *w)
{
	memset(w, 0, sizeof(*w));
}

/** writer_pc - Return: the target address of the next byte. */
uint64_t writer_pc(const struct writer *w)
{
	return w->pc + w->len;
}

/**
 * writer_put_bytes - append @n raw bytes (a copied instruction)
 *
 * On overflow nothing is written and w->err becomes -ENOSPC.
 */
void writer_put_bytes(struct writer *w, const void *p, size_t n)
{
	if (w->err)
		return;
	if (n > w->cap - w->len) {
		w->err = -ENOSPC;
		return;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

/** writer_put_u8 - append one byte (an opcode or ModRM built by the caller) */
void writer_put_u8(struct writer *w, uint8_t v)
{
	writer_put_bytes(w, &v, 1);
}

/** writer_put_u32 - append a little-endian 32-bit value (imm32, rel32, disp32) */
void writer_put_u32(struct writer *w, uint32_t v)
{
	uint8_t b[4] = { v, v >> 8, v >> 16, v >> 24 };

	writer_put_bytes(w, b, sizeof(b));
}

/** writer_put_u64 - append a little-endian 64-bit value (an absolute address) */
void writer_put_u64(struct writer *w, uint64_t v)
{
	writer_put_u32(w, (uint32_t)v);
	writer_put_u32(w, (uint32_t)(v >> 32));
}

/**
 * writer_rel32_ok - can an instruction ending at @from_end reach @target
 * with a signed 32-bit displacement?
 */
bool writer_rel32_ok(uint64_t from_end, uint64_t target)
{
	int64_t d = (int64_t)(target - from_end);

	return d >= INT32_MIN && d <= INT32_MAX;
}

/**
 * writer_put_jmp_abs - jmp [rip+0]; dq @target (14 bytes, any distance,
 * clobbers nothing)
 */
void writer_put_jmp_abs(struct writer *w, uint64_t target)
{
	writer_put_u8(w, 0xff); /* jmp qword ptr [rip + 0] */
	writer_put_u8(w, 0x25);
	writer_put_u32(w, 0);
	writer_put_u64(w, target); /* dq target */
}

/**
 * writer_put_jmp - jump to @target: jmp rel32 (5 bytes) when in range,
 * else the 14-byte absolute form.
 */
void writer_put_jmp(struct writer *w, uint64_t target)
{
	uint64_t end = writer_pc(w) + 5;

	if (!writer_rel32_ok(end, target)) {
		writer_put_jmp_abs(w, target);
		return;
	}
	writer_put_u8(w, 0xe9); /* jmp rel32 */
	writer_put_u32(w, (uint32_t)(target - end));
}

/**
 * writer_put_jcc - conditional jump to @target on condition code @cc (the
 * low nibble of the 0x70..0x7f opcodes: 0 = o, 1 = no, 2 = b, ... 0xf = g).
 * jcc rel32 (6 bytes) when in range; else the inverted condition skips an
 * absolute jmp (16 bytes).
 */
void writer_put_jcc(struct writer *w, unsigned int cc, uint64_t target)
{
	uint64_t end = writer_pc(w) + 6;

	cc &= 0xf;
	if (writer_rel32_ok(end, target)) {
		writer_put_u8(w, 0x0f); /* jcc rel32: 0f 80+cc rel32 */
		writer_put_u8(w, 0x80 + cc);
		writer_put_u32(w, (uint32_t)(target - end));
		return;
	}
	writer_put_u8(w, 0x70 + (cc ^ 1)); /* j!cc +14: over the absolute jmp */
	writer_put_u8(w, WRITER_JMP_ABS_SIZE);
	writer_put_jmp_abs(w, target);
}

/**
 * writer_put_push_imm64 - push a 64-bit constant without a scratch register
 * and without touching the flags:
 *   push imm32 (sign-extended low half); mov dword ptr [rsp + 4], imm32 (high half)
 * The second instruction is left out when the sign extension is already right.
 */
void writer_put_push_imm64(struct writer *w, uint64_t value)
{
	uint32_t lo = (uint32_t)value, hi = (uint32_t)(value >> 32);

	writer_put_u8(w, 0x68); /* push imm32 */
	writer_put_u32(w, lo);
	if ((uint64_t)(int64_t)(int32_t)lo == value)
		return;
	writer_put_u8(w, 0xc7); /* mov dword ptr [rsp + 4], imm32 */
	writer_put_u8(w, 0x44);
	writer_put_u8(w, 0x24);
	writer_put_u8(w, 0x04);
	writer_put_u32(w, hi);
}

/** writer_put_int3 - one int3 (0xcc), e.g. as padding that traps if reached. */
void writer_put_int3(struct writer *w)
{
	writer_put_u8(w, 0xcc); /* int3 */
}

/*
 * Legacy general-purpose registers by their 3-bit encoding (0 = rax ...
 * 7 = rdi), for the scratch-register rewrite. r8..r15 are not needed.
 */

/** writer_put_push_reg - push r64 (@reg: 0..7 = rax..rdi) */
void writer_put_push_reg(struct writer *w, unsigned int reg)
{
	writer_put_u8(w, 0x50 + (reg & 7)); /* push r64 */
}

/** writer_put_pop_reg - pop r64 (@reg: 0..7 = rax..rdi) */
void writer_put_pop_reg(struct writer *w, unsigned int reg)
{
	writer_put_u8(w, 0x58 + (reg & 7)); /* pop r64 */
}

/** writer_put_mov_imm64 - movabs r64, @value (@reg: 0..7); flags unchanged */
void writer_put_mov_imm64(struct writer *w, unsigned int reg, uint64_t value)
{
	writer_put_u8(w, 0x48); /* REX.W */
	writer_put_u8(w, 0xb8 + (reg & 7)); /* mov r64, imm64 */
	writer_put_u64(w, value);
}

/**
 * writer_put_lea_rsp - lea rsp, [rsp + @delta]: moves the stack pointer
 * without touching the flags (unlike add/sub)
 */
void writer_put_lea_rsp(struct writer *w, int32_t delta)
{
	writer_put_u8(w, 0x48); /* lea rsp, [rsp + delta] */
	writer_put_u8(w, 0x8d);
	if (delta >= INT8_MIN && delta <= INT8_MAX) {
		writer_put_u8(w, 0x64); /* ModRM mod=01 reg=rsp rm=SIB */
		writer_put_u8(w, 0x24); /* SIB base=rsp */
		writer_put_u8(w, (uint8_t)delta);
	} else {
		writer_put_u8(w, 0xa4); /* ModRM mod=10 reg=rsp rm=SIB */
		writer_put_u8(w, 0x24); /* SIB base=rsp */
		writer_put_u32(w, (uint32_t)delta);
	}
}
