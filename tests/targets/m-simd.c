/* SPDX-License-Identifier: MIT */
/*
 * m-simd.c - a C probe module built WITHOUT -mgeneral-regs-only whose
 * handler uses floating point (SSE registers): utrace -b agent must refuse
 * it in one line (the trampolines do not save SIMD state), -b ptrace runs
 * it (handlers in the tracer). Counts work() calls with a double-valued
 * average, to make the compiler use xmm registers.
 */
#include "utrace/module.h"

static double avg;

static int on_work(struct utrace_probe_ctx *ctx, void *data)
{
	(void)data;
	avg = avg * 0.5 + (double)utrace_probe_ctx__arg(ctx, 0) * 0.5;
	utrace_module__count(ctx, 0, avg >= 0.0);
	return UTRACE_PROBE_OK;
}

static const struct utrace_module_probe probes[] = {
	{ .spec = "work", .handler = on_work },
	{ 0 },
};

static const char *const counters[] = { "calls", NULL };

UTRACE_MODULE(.name = "simd", .probes = probes, .counters = counters);
