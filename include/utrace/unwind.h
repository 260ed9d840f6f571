/* SPDX-License-Identifier: MIT */
/*
 * unwind.h - stack unwinding by the call frame information (.eh_frame,
 * .debug_frame), libdw's dwfl: the frames gdb's bt shows, through code
 * built without frame pointers (a distribution's libc, -O2 programs).
 *
 * One unwinder per traced process: its modules (the files it maps) read
 * from /proc/PID/maps or from a snapshot of them; then each stack is
 * unwound either from a thread stopped under ptrace (its registers, its
 * memory read as it is) or from a copy of the registers and of the top
 * of the stack made at a hit (the agent's and the kernel backend's -k
 * records: perf's --call-graph dwarf model), which needs no process at
 * all. The probes' stacks (UTRACE_ACT_STACK) are unwound with it; tools
 * use it to unwind and name the frames of their own handlers' hits.
 *
 * Not thread-safe: one unwinder is used by one thread at a time.
 * Built without libdw, utrace_unwind__new() fails with -EOPNOTSUPP.
 */
#ifndef __UTRACE_UNWIND_H
#define __UTRACE_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "utrace/common.h"
#include "utrace/proc.h"

#ifdef __cplusplus
extern "C" {
#endif

struct utrace_unwind;

/**
 * What a stack slot holds for the unwinder: @value read at @slot, or the
 * return address that a return probe's trampoline stands for there (the
 * ptrace backend's utrace_probe_ctx__real_return() is one).
 */
typedef uint64_t (*utrace_unwind_fix_fn)(void *arg, uint64_t slot, uint64_t value);

/**
 * @brief **utrace_unwind__new()** an unwinder for process @pid, its
 * modules read from @maps (a snapshot: the process may be gone by the
 * time its records are unwound), or from /proc/PID/maps when @maps is
 * NULL. @why (@whylen bytes) gets the reason of a failure.
 * @return the unwinder, or NULL with errno set (EOPNOTSUPP: built without
 * libdw)
 */
UTRACE_API struct utrace_unwind *utrace_unwind__new(pid_t pid, const struct utrace_maps *maps,
						    char *why, size_t whylen);

/** @brief **utrace_unwind__free()** NULL is fine. */
UTRACE_API void utrace_unwind__free(struct utrace_unwind *u);

/**
 * @brief **utrace_unwind__report()** read the modules again (the
 * mappings changed: a dlopen, an exec), from @maps or, when NULL, from
 * /proc/PID/maps. A process whose maps cannot be read keeps the modules
 * last reported. An unwinder on /proc/PID/maps (@maps NULL here or at
 * utrace_unwind__new()) does it by itself, once per unwind, when a frame
 * falls outside its modules; one on a snapshot is given the new maps.
 * @return 0, or a negative errno (-EIO: libdw refused the modules)
 */
UTRACE_API int utrace_unwind__report(struct utrace_unwind *u, const struct utrace_maps *maps);

/**
 * @brief **utrace_unwind__stack()** the frames of thread @tid, stopped
 * under ptrace with @regs: @pcs[0] is the pc of @regs, then each caller's
 * return address (where the frame resumes), at most @max. @fix (may be
 * NULL) sees each stack word read, @fix_arg its argument. @act (may be
 * NULL) gets, per frame, whether its pc is where it resumes as it is (the
 * first frame, a signal frame's interrupted pc) rather than a return
 * address, one byte past its call instruction.
 * @return the number of frames (0 if even the first cannot be had)
 */
UTRACE_API int utrace_unwind__stack(struct utrace_unwind *u, pid_t tid,
				    const struct user_regs_struct *regs, utrace_unwind_fix_fn fix,
				    void *fix_arg, uint64_t *pcs, bool *act, int max);

/**
 * @brief **utrace_unwind__stack_copy()** the frames of a hit from a copy
 * made at the hit: @regs in enum utrace_rec_reg order (rip rsp rbp rbx
 * r12-r15; the others are not known) and the @len bytes of stack at @sp.
 * Memory is read from the copy only: the unwind stops where the copy
 * ends. @pcs, @act, @max and the return: as utrace_unwind__stack().
 */
UTRACE_API int utrace_unwind__stack_copy(struct utrace_unwind *u, pid_t tid, const uint64_t *regs,
					 uint64_t sp, const uint8_t *data, size_t len,
					 uint64_t *pcs, bool *act, int max);

/** @brief **utrace_unwind__has_module()** @pc is in a module as last reported. */
UTRACE_API bool utrace_unwind__has_module(struct utrace_unwind *u, uint64_t pc);

/**
 * @brief **utrace_unwind__name()** the symbol of @pc (looked up at @pc - 1
 * unless @act: a return address's call instruction) in the modules'
 * symbol tables, separate debug files included.
 * @return its name (valid until the next report), *@off the offset of @pc
 * in it; NULL if none
 */
UTRACE_API const char *utrace_unwind__name(struct utrace_unwind *u, uint64_t pc, bool act,
					   uint64_t *off);

/** @brief **utrace_unwind__module()** the basename of @pc's module ("libc.so.6"), or NULL. */
UTRACE_API const char *utrace_unwind__module(struct utrace_unwind *u, uint64_t pc);

#ifdef __cplusplus
}
#endif

#endif /* __UTRACE_UNWIND_H */
