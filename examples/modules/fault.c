/* SPDX-License-Identifier: MIT */
/*
 * fault.c - an example C probe module that changes behaviour: every second
 * call of answer() returns 42 without running (fault injection decided by
 * the module's own logic, in the probed thread with -b agent), and every
 * return of leaf() is logged with its value.
 *
 *   utrace -m build/examples/modules/fault.so -- prog ...
 *
 * The call counter is shared by all threads: one atomic add (lock-free,
 * allowed in a handler).
 */
#include "utrace/module.h"

static uint64_t answer_calls;

static int on_answer(struct utrace_probe_ctx *ctx, void *data)
{
	uint64_t n = __atomic_add_fetch(&answer_calls, 1, __ATOMIC_RELAXED);

	(void)data;
	if (n % 2 == 0) {
		utrace_probe_ctx__set_return(ctx, 42);
		utrace_module__count(ctx, 0, 1);
	}
	return UTRACE_PROBE_OK;
}

static int on_leaf_return(struct utrace_probe_ctx *ctx, void *data)
{
	(void)data;
	UTRACE_MODULE_EMIT(ctx, utrace_probe_ctx__retval(ctx), ctx->depth);
	return UTRACE_PROBE_OK;
}

static const struct utrace_module_probe probes[] = {
	{ .spec = "answer", .handler = on_answer },
	{ .spec = "leaf", .ret_handler = on_leaf_return, .fields = { "ret", "depth" } },
	{ 0 },
};

static const char *const counters[] = { "injected", NULL };

UTRACE_MODULE(.name = "fault", .probes = probes, .counters = counters);
