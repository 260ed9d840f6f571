/* SPDX-License-Identifier: MIT */
/*
 * backend-ptrace.h - the ptrace backend's own state, shared by its two files
 * (backend-ptrace.c: breakpoints and hits; xol.c: the out-of-line areas).
 * Internal; the registry (uprobes.c) sees none of it, only backend.h.
 * Tracer process, tracing thread.
 */
#ifndef __UTRACE_BACKEND_PTRACE_H
#define __UTRACE_BACKEND_PTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "uprobes.h"

struct xol_area;

/* struct ptrace_point - behind probe_point.priv. */
struct ptrace_point {
	uint64_t slot; /* XOL copy of the instruction, 0 until the first hit */
	uint16_t slot_len; /* bytes of the relocated instruction (the jmp back follows) */
	struct xol_area *area; /* area holding @slot */
};

/* struct ptrace_proc - behind uprobes_proc.priv. */
struct ptrace_proc {
	struct xol_area *xol; /* list of the process's XOL areas */
};

static inline struct ptrace_point *ptrace_point(const struct probe_point *pt)
{
	return (struct ptrace_point *)pt->priv;
}

static inline struct ptrace_proc *ptrace_proc(const struct uprobes_proc *pp)
{
	return (struct ptrace_proc *)pp->priv;
}

/* The point whose XOL slot contains @rip, or NULL. */
struct probe_point *ptrace_slot_owner(struct uprobes_proc *pp, uint64_t rip);

/* ---- xol.c: out-of-line areas ------------------------------------------- */

int xol_prepare_slot(struct uprobes_proc *pp, struct utrace_thread *th, struct probe_point *pt);
uint64_t xol_tramp(const struct uprobes_proc *pp);
bool xol_contains(const struct uprobes_proc *pp, uint64_t addr);
int xol_unmap_all(struct uprobes_proc *pp, struct utrace_thread *th);
int xol_inherit(struct uprobes_proc *child, const struct uprobes_proc *parent);
void xol_forget(struct uprobes_proc *pp);
int xol_rip_fixup(const struct probe_point *pt, uint64_t rip, uint64_t *ret);

#endif /* __UTRACE_BACKEND_PTRACE_H */
