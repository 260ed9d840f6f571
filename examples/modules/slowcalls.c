/* SPDX-License-Identifier: MIT */
/*
 * slowcalls.c - an example C probe module (utrace -m, docs/modules.md):
 * which calls of work(x) matter? It counts every call, the calls whose
 * argument is at least BIG_ARG ("big"), and the calls that took longer
 * than SLOW_NS ("slow"); each call with an argument of at least LOG_ARG
 * is also logged as one record (x).
 *
 *   utrace -m build/examples/modules/slowcalls.so -- prog ...
 *
 * The same .so runs with -b agent (the handlers run inside prog, in the
 * thread that called work(): a few ns) and with -b ptrace (in utrace). It
 * follows the agent's rules: integer code only (built with
 * -mgeneral-regs-only), no malloc, locks, stdio or syscalls, no state that
 * two threads write but the counters (utrace_module__count()).
 */
#include "utrace/module.h"

#define BIG_ARG 10
#define LOG_ARG 15
#define SLOW_NS 1000000 /* 1 ms */

enum { C_CALLS, C_BIG, C_SLOW };

static int on_work(struct utrace_probe_ctx *ctx, void *data)
{
	int64_t x = (int)utrace_probe_ctx__arg(ctx, 0); /* int work(int x) */

	(void)data;
	utrace_module__count(ctx, C_CALLS, 1);
	if (x >= BIG_ARG)
		utrace_module__count(ctx, C_BIG, 1);
	if (x >= LOG_ARG)
		UTRACE_MODULE_EMIT(ctx, (uint64_t)x);
	return UTRACE_PROBE_OK;
}

static int on_work_return(struct utrace_probe_ctx *ctx, void *data)
{
	(void)data;
	if (ctx->entry_ns && ctx->now_ns - ctx->entry_ns >= SLOW_NS)
		utrace_module__count(ctx, C_SLOW, 1);
	return UTRACE_PROBE_OK;
}

static const struct utrace_module_probe probes[] = {
	{ .spec = "work", .handler = on_work, .ret_handler = on_work_return, .fields = { "x" } },
	{ 0 },
};

static const char *const counters[] = { "calls", "big", "slow", NULL };

UTRACE_MODULE(.name = "slowcalls", .probes = probes, .counters = counters);
