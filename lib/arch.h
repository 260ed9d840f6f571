/* SPDX-License-Identifier: MIT */
/*
 * arch.h - the architecture layer of libutrace: site planning, the branch
 * target index, out-of-line relocation of displaced instructions, a small
 * machine-code writer and trampoline placement. Internal, not installed.
 *
 * Everything here runs in the tracer process ("decode on the host, patch in
 * the target"): it works on copies of the target's bytes and on target
 * addresses, and never touches the target itself. The x86-64 implementation
 * lives in lib/arch/x86_64/; see the essay at the top of relocator.c.
 *
 * The second part is what the engine layer needs to know about the
 * architecture's registers and syscall ABI, implemented in
 * lib/arch/<arch>/regs.c, chosen at build time (no weak symbols). Tracer
 * process; no allocation, no I/O.
 */
#ifndef __UTRACE_ARCH_H
#define __UTRACE_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

#include "utrace/elf.h"
#include "utrace/proc.h"
#include "utrace/session.h"

/*
 * ---------------------------------------------------------------------------
 * Failure reasons (uftrace's INSTRUMENT_FAIL_* style)
 * ---------------------------------------------------------------------------
 */

/**
 * enum site_fail - why a site is refused, or why it gets int3 instead of a
 * jmp. site_fail_str() turns each value into text a user can read; most take
 * the mnemonic of the offending instruction (%s).
 */
enum site_fail {
	SITE_FAIL_NONE = 0,
	/* Refusals: the site cannot be probed at all. */
	SITE_FAIL_DECODE, /* bytes at the site are not a valid instruction */
	SITE_FAIL_TRUNCATED, /* the instruction runs past the bytes we could read */
	SITE_FAIL_UNSAFE_INSN, /* on the refuse list: cannot run out of line */
	SITE_FAIL_PRIVILEGED, /* privileged instruction (faults in user space anyway) */
	SITE_FAIL_FAR_BRANCH, /* far jmp/call/ret, iret: changes CS */
	SITE_FAIL_BRANCH16, /* 0x66-prefixed branch: truncates RIP on AMD */
	SITE_FAIL_CALL_RSP, /* indirect call through RSP: cannot be emulated by push+jmp */
	SITE_FAIL_UNKNOWN_REL, /* position-relative operand of a kind we do not handle */
	SITE_FAIL_RIPREL_FAR, /* RIP-relative operand out of ±2 GiB of the destination */
	SITE_FAIL_NOSPACE, /* the destination buffer is too small */
	SITE_FAIL_MID_INSN, /* the address is inside an instruction of the function */
	/* Reasons for int3 rather than a 5-byte jmp (the site is still probed). */
	SITE_FAIL_NOT_ENTRY, /* not a function entry and first instruction < 5 bytes */
	SITE_FAIL_NO_SIZE, /* the symbol has no size: cannot prove bytes stay inside */
	SITE_FAIL_TOO_SHORT, /* fewer than 5 bytes before the function ends */
	SITE_FAIL_BLOCK_END, /* an unconditional jmp/ret ends the code before 5 bytes */
	SITE_FAIL_STOP_INSN, /* call/syscall before 5 bytes (live process: ONLINE) */
	SITE_FAIL_BRANCH_INTO, /* a direct branch targets the middle of the displaced bytes */
	SITE_FAIL_INDIRECT_JMP, /* the function has an indirect jmp (jump table) */
	SITE_FAIL_NO_INDEX, /* no branch-target index for the module */
	SITE_FAIL_INSN_IN_JMP, /* this instruction cannot be among several displaced ones */
	__SITE_FAIL_MAX,
};

/**
 * site_fail_str - printf format describing @fail
 * @fail: a failure reason
 *
 * Return: a static string; it contains one "%s" (the mnemonic) for the
 * reasons that name an instruction (see site_fail_has_insn()).
 */
const char *site_fail_str(enum site_fail fail);

/** site_fail_has_insn - true if site_fail_str(@fail) takes a mnemonic. */
bool site_fail_has_insn(enum site_fail fail);

/*
 * ---------------------------------------------------------------------------
 * Writer: emits x86-64 machine code into a host buffer that will live at a
 * (possibly different) target address.
 * ---------------------------------------------------------------------------
 */

/* Longest sequence writer_put_jmp() emits: jmp [rip+0]; dq target. */
#define WRITER_JMP_ABS_SIZE 14

struct writer {
	uint8_t *buf; /* host buffer */
	size_t cap; /* its size */
	size_t len; /* bytes written */
	uint64_t pc; /* target address of buf[0] */
	int err; /* sticky: -ENOSPC once a write did not fit */
};

void writer_init(struct writer *w, void *buf, size_t cap, uint64_t pc);
void writer_clear(struct writer *w);
uint64_t writer_pc(const struct writer *w);
void writer_put_bytes(struct writer *w, const void *p, size_t n);
void writer_put_u8(struct writer *w, uint8_t v);
void writer_put_u32(struct writer *w, uint32_t v);
void writer_put_u64(struct writer *w, uint64_t v);
void writer_put_jmp_abs(struct writer *w, uint64_t target);
void writer_put_jmp(struct writer *w, uint64_t target);
void writer_put_jcc(struct writer *w, unsigned int cc, uint64_t target);
void writer_put_push_imm64(struct writer *w, uint64_t value);
void writer_put_int3(struct writer *w);
void writer_put_push_reg(struct writer *w, unsigned int reg);
void writer_put_pop_reg(struct writer *w, unsigned int reg);
void writer_put_mov_imm64(struct writer *w, unsigned int reg, uint64_t value);
void writer_put_lea_rsp(struct writer *w, int32_t delta);
bool writer_rel32_ok(uint64_t from_end, uint64_t target);

/*
 * ---------------------------------------------------------------------------
 * Relocator
 * ---------------------------------------------------------------------------
 */

/* At most this many instructions are displaced (5 bytes need at most 5). */
#define RELOC_MAX_INSNS 8
/*
 * Upper bound of the code reloc_relocate() emits per displaced instruction:
 * the scratch-register rewrite of a 15-byte instruction is the longest
 * (lea 5 + push 1 + movabs 10 + 15 + pop 1 + lea 8 = 40); the final jump
 * back adds WRITER_JMP_ABS_SIZE.
 */
#define RELOC_MAX_INSN_OUT 48
#define RELOC_MAX_OUT(nr) ((nr)*RELOC_MAX_INSN_OUT + WRITER_JMP_ABS_SIZE)

/**
 * struct reloc - relocates whole instructions from a source (a host copy of
 * target bytes) to a destination (a writer). Embedded object: reloc_init()
 * and reloc_clear().
 */
struct reloc {
	const uint8_t *src; /* host copy of the displaced bytes */
	size_t src_len; /* number of bytes to relocate (whole instructions) */
	uint64_t src_addr; /* target address of src[0] */
	/* Filled by reloc_relocate(): */
	unsigned int nr; /* instructions relocated */
	uint8_t src_off[RELOC_MAX_INSNS]; /* offset of insn i in the source */
	uint16_t dst_off[RELOC_MAX_INSNS]; /* offset of its copy in the writer */
	/* On failure: */
	enum site_fail fail;
	uint64_t fail_addr; /* target address of the offending instruction */
	char fail_insn[24]; /* its mnemonic */
};

void reloc_init(struct reloc *r, const void *src, size_t len, uint64_t src_addr);
void reloc_clear(struct reloc *r);
int reloc_relocate(struct reloc *r, struct writer *w, bool jmp_back);
const char *reloc_refuse_detail(const char *mnemonic);
int reloc_insn_len(const void *src, size_t len);
int reloc_map_addr(const struct reloc *r, uint64_t dst, uint64_t addr, uint64_t *ret_addr);
int reloc_targets(const void *src, size_t len, uint64_t src_addr, uint64_t *out, size_t max);
int reloc_find_slot(const struct utrace_maps *maps, const uint64_t *addrs, size_t nr, size_t size,
		    uint64_t *ret_addr);

/*
 * ---------------------------------------------------------------------------
 * Branch-target index: one per module
 * ---------------------------------------------------------------------------
 */

struct branch_index;

/** struct branch_index_stats - what a sweep saw, for notes and tests. */
struct branch_index_stats {
	size_t insns; /* instructions decoded */
	size_t bad_bytes; /* bytes skipped because they did not decode */
	size_t targets; /* distinct direct branch / code-lea targets */
	size_t indirect_jmps; /* indirect jmps that are not tail calls through [rip+x] */
};

struct branch_index *branch_index__new(const struct utrace_elf_section *secs, size_t nr,
				       const uint64_t *sync, size_t nr_sync);
void branch_index__free(struct branch_index *bti);
bool branch_index__any_target(const struct branch_index *bti, uint64_t lo, uint64_t hi);
uint64_t branch_index__first_target(const struct branch_index *bti, uint64_t lo, uint64_t hi);
bool branch_index__any_indirect(const struct branch_index *bti, uint64_t lo, uint64_t hi);
void branch_index__stats(const struct branch_index *bti, struct branch_index_stats *st);

/*
 * ---------------------------------------------------------------------------
 * Site planner
 * ---------------------------------------------------------------------------
 */

/* A 5-byte jmp rel32 overwrites this many bytes. */
#define SITE_JMP_SIZE 5

enum site_mode {
	SITE_REFUSED = 0,
	SITE_INT3,
	SITE_JMP,
};

/** struct site_input - what the planner knows about a probe address. */
struct site_input {
	uint64_t addr; /* requested probe address */
	const uint8_t *bytes; /* host copy of the code at @addr */
	size_t len; /* bytes available at @bytes (>= 16 if the code allows) */
	uint64_t func_addr; /* start of the containing function; 0 if unknown */
	uint64_t func_size; /* its size; 0 if unknown */
	const uint8_t *func_bytes; /* host copy of the function from @func_addr, to check
				    * that @addr is an instruction boundary; may be NULL */
	const struct branch_index *bti; /* module index (same address space); may be NULL */
	bool live; /* ONLINE scenario: never steal across call/syscall */
	/*
	 * The agent's jmp mode: keep a short first instruction of an entry in
	 * place when it only moves rsp or only writes scratch registers
	 * (site_plan() rule 5: kernel uprobes at the entry stay safe). On for
	 * the agent and `utrace -l` (which shows the agent's plans), off for
	 * the ptrace backend, which writes no jmp.
	 */
	bool keep_first;
};

/** struct site_plan - the planner's decision. */
struct site_plan {
	enum site_mode mode;
	uint64_t addr; /* probe address, moved past endbr64 at an entry */
	uint8_t len; /* displaced bytes: >= 5 for jmp, one instruction for int3 */
	uint8_t nr_insns; /* displaced instructions */
	/*
	 * keep_first: the entry's first instruction (@pre_len bytes, before
	 * @addr) stays in place and runs there; it moved rsp down by @undo,
	 * which the trampoline gives back before the handlers see the entry.
	 */
	uint8_t pre_len, undo;
	enum site_fail fail; /* REFUSED: why; INT3: why not jmp; JMP: NONE */
	uint64_t fail_addr; /* the instruction @fail is about */
	char fail_insn[24]; /* its mnemonic, for the "%s" in site_fail_str() */
};

int site_plan(const struct site_input *in, struct site_plan *out);
int site_plan__why(const struct site_plan *plan, char *buf, size_t size);
const char *site_mode_str(enum site_mode mode);

/*
 * ---------------------------------------------------------------------------
 * Registers and syscall ABI (lib/arch/x86_64/regs.c)
 * ---------------------------------------------------------------------------
 */

/* Length of the syscall instruction; the kernel rewinds the pc by it to restart. */
#define ARCH_SYSCALL_INSN_LEN 2

/** arch_syscall_insn_at - whether @buf (>= ARCH_SYSCALL_INSN_LEN bytes) starts with one. */
bool arch_syscall_insn_at(const unsigned char *buf);

/** arch_regs_to_syscall - fill @sc (nr, args, ret, pc, sp) from @regs. */
void arch_regs_to_syscall(const struct user_regs_struct *regs, struct utrace_syscall *sc);

/** arch_set_syscall - set the syscall number (as the kernel reads it at entry) and args. */
void arch_set_syscall(struct user_regs_struct *regs, long nr, const uint64_t args[6]);

/** arch_syscall_ret - the return value register. */
long arch_syscall_ret(const struct user_regs_struct *regs);

/** arch_set_syscall_ret - set the return value register. */
void arch_set_syscall_ret(struct user_regs_struct *regs, long ret);

/** arch_skip_syscall - at an entry stop: no syscall (nr -1), @ret as its result. */
void arch_skip_syscall(struct user_regs_struct *regs, long ret);

/**
 * arch_prepare_remote - registers for running syscall @nr(@args) at the
 * syscall instruction @insn from a stop outside a syscall: pc, nr, args,
 * "no syscall in progress" (so the kernel does not restart anything), and
 * flags that must not leak into the call (trap flag, direction flag).
 */
void arch_prepare_remote(struct user_regs_struct *regs, uint64_t insn, long nr,
			 const uint64_t args[6]);

/**
 * arch_rewind_syscall - from an exit stop, make the thread re-execute the
 * syscall it entered with @entry (its registers at the entry stop).
 */
void arch_rewind_syscall(struct user_regs_struct *regs, const struct user_regs_struct *entry);

/** arch_at_entry_stop - guess (no PTRACE_GET_SYSCALL_INFO) whether @regs are at an entry stop. */
bool arch_at_entry_stop(const struct user_regs_struct *regs);

/*
 * ---------------------------------------------------------------------------
 * Remote function calls (call.c)
 * ---------------------------------------------------------------------------
 */

/* Bytes left untouched below the interrupted rsp: the red zone, plus slack. */
#define ARCH_CALL_STACK_GAP (128 + 128)

/**
 * arch_prepare_call - registers for calling @fn(@args) from @regs.
 * @ret_slot receives the stack address where the caller must store the
 * return address (the callee finds it at its rsp, 16-byte ABI alignment).
 */
void arch_prepare_call(struct user_regs_struct *regs, uint64_t fn, const uint64_t args[6],
		       uint64_t *ret_slot);

/** arch_call_returned - @regs are those of a return to @ret_addr popped from @ret_slot. */
bool arch_call_returned(const struct user_regs_struct *regs, uint64_t ret_addr, uint64_t ret_slot);

/** arch_call_result - the integer return value register. */
uint64_t arch_call_result(const struct user_regs_struct *regs);

/*
 * Kill-safe returns (call.c): an rt_sigreturn frame on the thread's own
 * stack that puts everything back when the tracer is no longer there to.
 */

/*
 * The stub the injection maps for remote calls (call-stub.S): its bytes,
 * and the offsets of its marker (the entry stop of its getpid at
 * start + ARCH_STUB_MARKER is the return), of sys() (a remote syscall run
 * as a remote call) and of the resume address slot.
 */
extern const unsigned char arch_call_stub_start[], arch_call_stub_end[];
extern const unsigned char arch_call_stub_marker[], arch_call_stub_sys[];
extern const unsigned char arch_call_stub_resume[];
#define ARCH_STUB_LEN ((size_t)(arch_call_stub_end - arch_call_stub_start))
#define ARCH_STUB_MARKER ((uint64_t)(arch_call_stub_marker - arch_call_stub_start))
#define ARCH_STUB_SYS ((uint64_t)(arch_call_stub_sys - arch_call_stub_start))
#define ARCH_STUB_RESUME ((uint64_t)(arch_call_stub_resume - arch_call_stub_start))
#define ARCH_STUB_MARKER_NR 39 /* getpid */

/** struct arch_sigframe - an rt_sigreturn frame image built for a thread. */
struct arch_sigframe {
	uint64_t lo; /* target address of buf[0]: the return-address slot */
	uint64_t uc; /* address of the ucontext (rsp when rt_sigreturn runs) */
	size_t len;
	unsigned char *buf;
};

/**
 * arch_sigframe_build - an rt_sigreturn frame that resumes @saved as the
 * kernel would have (an interrupted syscall restarted), with signal mask
 * @mask and the FP/vector state @xstate (NT_X86_XSTATE, @xlen bytes; none
 * if 0), placed below @saved's red zone. @ret is stored in its first slot
 * (the return address a callee or a "ret" pops). Return: 0; -ENOMEM.
 */
int arch_sigframe_build(struct arch_sigframe *f, const struct user_regs_struct *saved,
			uint64_t mask, const void *xstate, int xlen, uint64_t ret);

/**
 * arch_stubframe_build - the same for the stub's own way back (call-stub.S):
 * the data its dead path pops, below @saved's red zone, @ret in the first
 * slot; *@resume receives the address it must jump to (the restart
 * included), to be written at the stub's resume slot. Return: 0; -ENOMEM.
 */
int arch_stubframe_build(struct arch_sigframe *f, const struct user_regs_struct *saved,
			 uint64_t mask, const void *xstate, int xlen, uint64_t ret,
			 uint64_t *resume);
void arch_sigframe_free(struct arch_sigframe *f);

/** arch_call_from_frame - like arch_prepare_call(), the return slot being @f's first. */
void arch_call_from_frame(struct user_regs_struct *regs, uint64_t fn, const uint64_t args[6],
			  const struct arch_sigframe *f);

#endif /* __UTRACE_ARCH_H */
