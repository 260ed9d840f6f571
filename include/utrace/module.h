/* SPDX-License-Identifier: MIT */
/*
 * module.h - C probe modules: the paper's "instrumentation modules", loaded
 * with `utrace -m FILE.so`. Include this header (it includes probe.h) in
 * the module's sources; the full guide is docs/modules.md.
 *
 * Why a module, and where its handlers run
 * ----------------------------------------
 * The built-in handlers of the utrace command count, time, record arguments
 * and inject return values. A module adds handlers of its own, written once
 * against probe.h (utrace_probe_ctx__arg(), __retval(), __set_return(),
 * __read(), ...), and the backend decides where they run:
 *
 *   -b agent   inside the target, in the probed thread, called by the
 *              agent's trampoline: no trap, no context switch, a few ns
 *              per hit on top of the probe itself;
 *   -b ptrace  in the tracer (the utrace process), while the probed thread
 *              is in a ptrace stop: the same .so, tens of µs per hit.
 *
 * The same file must load in both places, and in the target it is dlopen()ed
 * by an agent that may itself be RTLD_LOCAL (injected) or a private copy
 * (a second session): a reference from the module to a symbol named
 * utrace_probe_ctx__arg could bind to the wrong instance, or to nothing. So
 * a module has no undefined utrace symbol at all: this header turns the
 * probe.h context functions into calls through a table of function
 * pointers (struct utrace_module_ops) that whoever loads the module stores
 * into it before any handler runs (the agent its own implementations, the
 * utrace command libutrace's). A module links against libc only (and
 * should not need even that in its handlers).
 *
 * What a module declares
 * ----------------------
 * One exported descriptor, made with UTRACE_MODULE(): a name, a table of
 * probes (SPEC, entry handler and/or return handler, data, names of the
 * values it emits) and the names of its counters:
 *
 *	static int on_ret(struct utrace_probe_ctx *ctx, void *data)
 *	{
 *		if (ctx->now_ns - ctx->entry_ns > 1000000)
 *			utrace_module__count(ctx, 0, 1);       counter "slow"
 *		return UTRACE_PROBE_OK;
 *	}
 *	static const struct utrace_module_probe probes[] = {
 *		{ .spec = "work", .ret_handler = on_ret },
 *		{ 0 },
 *	};
 *	static const char *const counters[] = { "slow", NULL };
 *	UTRACE_MODULE(.name = "slow", .probes = probes, .counters = counters);
 *
 * How it reports
 * --------------
 * - Counters: utrace_module__count(ctx, i, delta) adds to counter i (with
 *   the agent: a per-thread slot of the shared arena, one add, no atomic;
 *   the host sums the threads). The utrace command prints each module's
 *   counters at exit: "module slow: slow=12".
 * - Records: UTRACE_MODULE_EMIT(ctx, v0, v1, ...) (at most 6 integers)
 *   puts one record in the thread's ring (agent) or prints at once (ptrace);
 *   the command prints it as a line "[tid] slow:work n=5 dur_ns=1200", with
 *   the probe's @fields as names (else v0, v1, ...), or a JSON object with
 *   "type": "module".
 *
 * What a handler may do (the agent runs it in the probed thread, which may
 * be inside malloc, a signal handler or holding any lock)
 * -----------------------------------------------------------------------
 * - integer code only: the trampolines do not save SIMD state. Build with
 *   -mgeneral-regs-only (the compiler then refuses float code), and
 *   -fno-omit-frame-pointer (-k stacks through module frames). The utrace
 *   command refuses, in one line, a module whose code uses SSE/AVX registers.
 * - no malloc, no locks, no stdio, no syscalls; no static state that two
 *   threads write without atomics (handlers run in many threads at once).
 * - utrace_probe_ctx__read()/__write()/__read_str() are safe on any address
 *   (a bad one gives -EFAULT, never a crash): with the agent they cost one
 *   process_vm_readv/writev (~0.3 µs).
 * - returning UTRACE_PROBE_REMOVE stops this handler for the rest of the
 *   session (with the agent the probe stays armed for other users).
 * - the module's constructors run in the target (agent) and in the tracer
 *   (the command reads the descriptor there): keep them free of effects.
 *
 * ctx fields with the agent: @probe NULL (no probe object in the target),
 * @point->addr only (names are the host's: the command prints them),
 * @pid, @tid, @regs, @is_return, @ret_addr, @entry_ns (return hits of a
 * probe with both handlers, or a ret_handler: the entry is timed), @now_ns,
 * @depth. With ptrace: as probe.h says.
 */
#ifndef __UTRACE_MODULE_H
#define __UTRACE_MODULE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "utrace/probe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UTRACE_MODULE_ABI 1 /* bumps on any change of the structs below */
#define UTRACE_MODULE_MAX_PROBES 32
#define UTRACE_MODULE_MAX_COUNTERS 32
#define UTRACE_MODULE_MAX_VALUES 6 /* integers per emitted record */
#define UTRACE_MODULE_SYMBOL "utrace_module" /* the descriptor's exported name */

/**
 * struct utrace_module_ops - the context functions, filled in by the loader
 * (the agent in the target, the utrace command in the tracer). Handlers
 * call them through the macros below, never directly.
 */
struct utrace_module_ops {
	uint32_t abi; /* UTRACE_MODULE_ABI */
	uint32_t backend; /* enum utrace_backend: where the handlers run */
	uint64_t (*arg)(const struct utrace_probe_ctx *ctx, unsigned int n);
	uint64_t (*retval)(const struct utrace_probe_ctx *ctx);
	int (*set_return)(struct utrace_probe_ctx *ctx, uint64_t value);
	ssize_t (*read)(struct utrace_probe_ctx *ctx, uint64_t addr, void *buf, size_t len);
	ssize_t (*write)(struct utrace_probe_ctx *ctx, uint64_t addr, const void *buf, size_t len);
	ssize_t (*read_str)(struct utrace_probe_ctx *ctx, uint64_t addr, char *buf, size_t size);
	void (*count)(struct utrace_probe_ctx *ctx, unsigned int counter, uint64_t delta);
	void (*emit)(struct utrace_probe_ctx *ctx, const uint64_t *values, unsigned int n);
};

/**
 * struct utrace_module_probe - one probe of a module (a table ends with an
 * entry whose @spec is NULL).
 * @spec: where (utrace/spec.h grammar: "work", "libc:malloc", "prog:f+0x4")
 * @handler: runs at each entry hit (may be NULL)
 * @ret_handler: runs at each return (may be NULL; the entry is then timed:
 *	ctx->entry_ns); a function entry only
 * @data: passed to both handlers
 * @fields: names of the values the handlers emit (NULL-padded)
 */
struct utrace_module_probe {
	const char *spec;
	utrace_handler_fn_t handler;
	utrace_handler_fn_t ret_handler;
	void *data;
	const char *fields[UTRACE_MODULE_MAX_VALUES];
};

/**
 * struct utrace_module - the exported descriptor (UTRACE_MODULE()).
 * @abi: UTRACE_MODULE_ABI
 * @name: a short name for output ("slow")
 * @probes: the probe table, ended by a NULL @spec
 * @counters: names of the counters, ended by NULL (may be NULL)
 * @ops: where the loader stores its function table
 */
struct utrace_module {
	uint32_t abi;
	uint32_t flags; /* 0 */
	const char *name;
	const struct utrace_module_probe *probes;
	const char *const *counters;
	const struct utrace_module_ops **ops;
};

/* The loader's table, in the module (hidden: each module has its own). */
extern __attribute__((visibility("hidden"))) const struct utrace_module_ops *__utrace_module_ops;

/* Define the module's descriptor: UTRACE_MODULE(.name = ..., .probes = ...). */
#define UTRACE_MODULE(...)                                                                         \
	__attribute__((visibility("hidden"))) const struct utrace_module_ops *__utrace_module_ops; \
	__attribute__((visibility("default"))) struct utrace_module utrace_module = {              \
		.abi = UTRACE_MODULE_ABI, .ops = &__utrace_module_ops, __VA_ARGS__                 \
	}

/*
 * The probe.h context functions, routed through the loader's table: the
 * module keeps no undefined reference to libutrace or to the agent. (A
 * loader defines UTRACE_MODULE_LOADER: it implements the table.)
 */
#ifndef UTRACE_MODULE_LOADER
#define utrace_probe_ctx__arg(ctx, n) (__utrace_module_ops->arg((ctx), (n)))
#define utrace_probe_ctx__retval(ctx) (__utrace_module_ops->retval((ctx)))
#define utrace_probe_ctx__set_return(ctx, v) (__utrace_module_ops->set_return((ctx), (v)))
#define utrace_probe_ctx__read(ctx, a, b, l) (__utrace_module_ops->read((ctx), (a), (b), (l)))
#define utrace_probe_ctx__write(ctx, a, b, l) (__utrace_module_ops->write((ctx), (a), (b), (l)))
#define utrace_probe_ctx__read_str(ctx, a, b, s) \
	(__utrace_module_ops->read_str((ctx), (a), (b), (s)))
#endif

/** @brief **utrace_module__count()** adds @delta to the module's counter @i. */
static inline void utrace_module__count(struct utrace_probe_ctx *ctx, unsigned int i,
					uint64_t delta)
{
	__utrace_module_ops->count(ctx, i, delta);
}

/** @brief **utrace_module__emit()** one record of @n (<= 6) integers. */
static inline void utrace_module__emit(struct utrace_probe_ctx *ctx, const uint64_t *values,
				       unsigned int n)
{
	__utrace_module_ops->emit(ctx, values, n);
}

/** UTRACE_MODULE_EMIT(ctx, a, b, ...): utrace_module__emit() of its arguments. */
#define UTRACE_MODULE_EMIT(ctx, ...)                                  \
	utrace_module__emit((ctx), (const uint64_t[]){ __VA_ARGS__ }, \
			    sizeof((const uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t))

/** @brief **utrace_module__backend()** where the handlers run (enum utrace_backend). */
static inline enum utrace_backend utrace_module__backend(void)
{
	return (enum utrace_backend)__utrace_module_ops->backend;
}

#ifdef __cplusplus
}
#endif

#endif /* __UTRACE_MODULE_H */
