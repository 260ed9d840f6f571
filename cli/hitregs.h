/* SPDX-License-Identifier: MIT */
/*
 * hitregs.h - what a probe hit's context does not carry, read from the
 * thread while it is stopped at the hit (ptrace handlers only): the xmm
 * registers (floating-point arguments and returns) and errno (the
 * function's failure). Tracer process, the session's tracing thread.
 */
#ifndef __UTRACE_CLI_HITREGS_H
#define __UTRACE_CLI_HITREGS_H

#include <stdbool.h>
#include <stdint.h>

#include "utrace/utrace.h"

/* errno's offset from the thread pointer in one process, found once */
struct hit_errno_cache {
	bool tried, ok;
	int64_t tpoff;
};

/*
 * hit_xmm - the low 64 bits of xmm0..xmm7 of @tid, a thread this thread
 * traces and that is stopped (PTRACE_GETFPREGS). Return: true if read.
 */
bool hit_xmm(pid_t tid, uint64_t xmm[8]);

/*
 * hit_errno - errno of the thread of @ctx (stopped at a return hit), in
 * the process whose image is @img (utrace_image__open_pid()): at libc's
 * TPOFF of errno from fs_base. Return: the errno value (1..4095), or 0
 * when it cannot be read.
 */
int hit_errno(struct utrace_probe_ctx *ctx, struct utrace_image *img, struct hit_errno_cache *c);

#endif /* __UTRACE_CLI_HITREGS_H */
