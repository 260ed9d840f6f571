/* SPDX-License-Identifier: MIT */
/*
 * plan.h - site planning: how each probe point would be probed (a 5-byte
 * jmp to a trampoline, an int3 with the instruction run out of line, or
 * not at all) and why. Decided in the tracer from the object's file bytes
 * ("decode on the host, patch in the target").
 */
#ifndef __UTRACE_PLAN_H
#define __UTRACE_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "utrace/common.h"
#include "utrace/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

struct utrace_planner;

enum utrace_plan_mode {
	UTRACE_PLAN_REFUSED = 0, /* cannot be probed; why says why */
	UTRACE_PLAN_INT3, /* breakpoint; why says why not a jmp */
	UTRACE_PLAN_JMP, /* 5-byte jmp to a trampoline */
	__UTRACE_PLAN_MAX,
};

/** struct utrace_plan - the decision for one probe point. */
struct utrace_plan {
	enum utrace_plan_mode mode;
	uint64_t addr; /* probe address (runtime), moved past endbr64 at an entry */
	uint32_t len; /* bytes displaced (run out of line) */
	uint32_t nr_insns; /* instructions displaced */
	char why[160]; /* empty for a jmp */
	const char *detail; /* static background for why, or NULL (for --why) */
	/*
	 * utrace_planner__keep_first() only: the entry's first instruction,
	 * @pre_len bytes before @addr, stays in place (a kernel uprobe at the
	 * entry stays safe) and moved rsp down by @undo bytes, which the
	 * trampoline gives back before the handlers run. 0 otherwise.
	 */
	uint32_t pre_len, undo;
};

/**
 * @brief **utrace_planner__new()** creates a planner for the objects of
 * @img. It builds each object's branch-target index (one linear sweep of
 * its code) the first time a probe point in that object is planned.
 * @param img image the matches come from (borrowed; must outlive the planner)
 * @return new planner to free with utrace_planner__free(); NULL with errno
 * set (ENOMEM)
 */
UTRACE_API struct utrace_planner *utrace_planner__new(struct utrace_image *img);

/**
 * @brief **utrace_planner__keep_first()**: for jmp plans of the in-process
 * agent, keep a short first instruction of an entry that only moves rsp
 * (push, sub rsp) in place and put the jmp after it (lib/arch/x86_64/
 * planner.c rule 5: a kernel uprobe placed on the function later writes
 * its int3 over the entry and resumes after that instruction).
 */
UTRACE_API void utrace_planner__keep_first(struct utrace_planner *pl, bool on);

/** @brief **utrace_planner__free()** frees @pl; accepts NULL. */
UTRACE_API void utrace_planner__free(struct utrace_planner *pl);

/**
 * @brief **utrace_planner__plan()** decides how to probe the match @m.
 * @param pl planner of the image @m was resolved in
 * @param m a match from utrace_image__resolve()
 * @param ret_plan receives the plan, also when the site is refused
 * @return 0 when the site can be probed (jmp or int3);
 * -UTRACE_ERRNO__RELOC when it is refused (ret_plan->why says why);
 * other negative errno when the object cannot be read (ret_plan untouched)
 */
UTRACE_API int utrace_planner__plan(struct utrace_planner *pl, const struct utrace_match *m,
				    struct utrace_plan *ret_plan);

/** @return "jmp", "int3" or "refused". */
UTRACE_API const char *utrace_plan_mode_str(enum utrace_plan_mode mode);

#ifdef __cplusplus
}
#endif

#endif /* __UTRACE_PLAN_H */
