/* SPDX-License-Identifier: MIT */
/*
 * fault.c - an example C probe module that changes behaviour: every second
 * call of answer() returns 42 without running (fault injection decided by
 * the module's own logic, in the probed thread with -b agent); every
 * return of leaf() is logged with its value; leaf(s)'s string is read and
 * the calls with "hello" counted, and a read at a bad address is counted
 * too: it must fail with -EFAULT, never crash the program.
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

/* leaf(const char *s): memory reads from a handler, good and bad. */
static int on_leaf(struct utrace_probe_ctx *ctx, void *data)
{
	static const char hello[] = "hello";
	char s[16];
	ssize_t n = utrace_probe_ctx__read_str(ctx, utrace_probe_ctx__arg(ctx, 0), s, sizeof(s));
	int i;

	(void)data;
	for (i = 0; n == 5 && i < 5 && s[i] == hello[i]; i++)
		;
	if (i == 5)
		utrace_module__count(ctx, 1, 1);
	if (utrace_probe_ctx__read(ctx, 8, s, 1) < 0) /* page 0: never mapped */
		utrace_module__count(ctx, 2, 1);
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
	{ .spec = "leaf",
	  .handler = on_leaf,
	  .ret_handler = on_leaf_return,
	  .fields = { "ret", "depth" } },
	{ 0 },
};

static const char *const counters[] = { "injected", "hello", "efault", NULL };

UTRACE_MODULE(.name = "fault", .probes = probes, .counters = counters);
