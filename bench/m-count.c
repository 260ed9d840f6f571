/* SPDX-License-Identifier: MIT */
/*
 * m-count.c - the probe module of bench/module-hit.sh: counts the calls of
 * bench_work() (bench/hit-loop) and sums their arguments, the smallest
 * useful module handler (two counter adds and one argument read).
 */
#include "utrace/module.h"

static int on_work(struct utrace_probe_ctx *ctx, void *data)
{
	(void)data;
	utrace_module__count(ctx, 0, 1);
	utrace_module__count(ctx, 1, utrace_probe_ctx__arg(ctx, 0));
	return UTRACE_PROBE_OK;
}

static const struct utrace_module_probe probes[] = {
	{ .spec = "bench_work", .handler = on_work },
	{ 0 },
};

static const char *const counters[] = { "calls", "sum", NULL };

UTRACE_MODULE(.name = "count", .probes = probes, .counters = counters);
