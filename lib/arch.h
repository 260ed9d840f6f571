/* SPDX-License-Identifier: MIT */
/*
 * arch.h - what the engine layer needs to know about the architecture's
 * registers and syscall ABI. Implemented in lib/arch/<arch>/regs.c, chosen
 * at build time (no weak symbols). Tracer process; no allocation, no I/O.
 */
#ifndef __UTRACE_ARCH_H
#define __UTRACE_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

#include "utrace/session.h"

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

#endif /* __UTRACE_ARCH_H */
