/* SPDX-License-Identifier: MIT */
/*
 * unwind.h - utrace -k's stack unwinder for a thread stopped at a hit (the
 * ptrace backend's handlers) or from a copy of its registers and stack
 * made at the hit (the agent's records): libdw's CFI unwinder (dwfl),
 * which needs no frame pointers. Tracer process, the session's tracing
 * thread.
 */
#ifndef __UTRACE_CLI_UNWIND_H
#define __UTRACE_CLI_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "utrace/proc.h"

/* One traced process's unwinder (its modules, as last reported). */
struct unwind;

/*
 * What a stack slot holds for the unwinder: @value read at @slot, or the
 * return address that a return probe's trampoline stands for there
 * (utrace_probe_ctx__real_return()).
 */
typedef uint64_t (*unwind_fix_fn)(void *arg, uint64_t slot, uint64_t value);

/*
 * unwind_new - an unwinder for @pid, its modules read from /proc/PID/maps.
 * Return: NULL if libdw cannot unwind it (@why, @whylen: why; built
 * without libdw: always).
 */
struct unwind *unwind_new(pid_t pid, char *why, size_t whylen);
/* unwind_new_maps - the same, its modules from @m (a snapshot of the maps) */
struct unwind *unwind_new_maps(pid_t pid, const struct utrace_maps *m, char *why, size_t whylen);

/* unwind_free - NULL is fine */
void unwind_free(struct unwind *u);

/*
 * unwind_report - read the process's modules again (its mappings changed:
 * a dlopen, an exec). Return: 0; an errno (the maps could not be read) or
 * -1 (libdw's error): the modules are what could be read.
 */
int unwind_report(struct unwind *u);
/*
 * unwind_report_maps - the same from @m, maps read earlier: the process
 * may be gone since (the agent's records are unwound after the fact)
 */
int unwind_report_maps(struct unwind *u, const struct utrace_maps *m);

/*
 * unwind_stack - the frames of thread @tid, stopped with @regs: @pcs[0]
 * is the pc of @regs, then each caller's return address (the pc the frame
 * resumes at), at most @max. @act (may be NULL) gets, per frame, whether
 * its pc is where it resumes as is (the first frame, a signal frame's
 * interrupted pc) rather than a return address, which is one byte past
 * its call instruction.
 * Return: the number of frames (0 if even the first cannot be had).
 */
int unwind_stack(struct unwind *u, pid_t tid, const struct user_regs_struct *regs,
		 unwind_fix_fn fix, void *fix_arg, uint64_t *pcs, bool *act, int max);

/*
 * unwind_stack_copy - the frames of a hit from a copy made at the hit (the
 * agent's -k records, perf's --call-graph dwarf model): @regs in enum
 * utrace_rec_reg order (rip rsp rbp rbx r12-r15; the others are not
 * known), and the @len bytes of stack at @sp. Memory reads are served
 * from the copy only: anything outside it is not readable, and the unwind
 * stops there. The modules are the process's as last reported (the
 * process may be gone: the caller keeps its unwinder). @pcs, @act, @max
 * and the return: as unwind_stack().
 */
int unwind_stack_copy(struct unwind *u, pid_t tid, const uint64_t *regs, uint64_t sp,
		      const uint8_t *data, size_t len, uint64_t *pcs, bool *act, int max);

/* unwind_has_module - @pc is in one of the modules as last reported */
bool unwind_has_module(struct unwind *u, uint64_t pc);

/*
 * unwind_name - the symbol for @pc (looked up at @pc - 1 unless @act:
 * the call instruction of a return address) in the modules' symbol
 * tables, separate debug files included: its name (libdw's, valid until
 * the next unwind_report()), *@off the offset of @pc in it. NULL if none.
 */
const char *unwind_name(struct unwind *u, uint64_t pc, bool act, uint64_t *off);

/* unwind_name_len - @name's length without its symbol version ("@@GLIBC_2.2.5") */
static inline int unwind_name_len(const char *name)
{
	const char *at = __builtin_strchr(name, '@');

	return at && at > name ? (int)(at - name) : (int)__builtin_strlen(name);
}

/* unwind_module - the basename of the module that holds @pc ("libc.so.6"), or NULL. */
const char *unwind_module(struct unwind *u, uint64_t pc);

#endif /* __UTRACE_CLI_UNWIND_H */
