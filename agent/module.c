/* SPDX-License-Identifier: MIT */
/*
 * module.c - C probe modules in the target (utrace -m FILE.so with the
 * agent backend; the module author's side is include/utrace/module.h, the
 * whole design docs/modules.md).
 *
 * Why in the target. A module handler is the paper's instrumentation
 * module: custom logic at a probe. Run by the agent it costs what a
 * function call costs, in the probed thread, with its registers and memory
 * at hand; no trap, no context switch, no tracer round trip.
 *
 * Loading (control thread, UTRACE_CMD_MODULE_LOAD). The host has checked
 * the path (a regular file that only its owner or root can change, in
 * directories others cannot change: the same rule as for the agent itself)
 * and dlopen()ed it once in the tracer to read its descriptor. Here we
 * dlopen() it RTLD_NOW | RTLD_LOCAL, find the descriptor (dlsym
 * "utrace_module"), check its ABI, and store our function table in it
 * (*desc->ops). The module never links against the agent: an injected agent
 * is RTLD_LOCAL and a second session's agent is a private copy, so a symbol
 * reference from the module could bind to another instance or to nothing;
 * the table always names this one. The module stays loaded for the life of
 * the process (a thread may still be in one of its handlers after a
 * disarm); loading the same path again in a later session finds the same
 * object and re-stores the table.
 *
 * Binding (control thread, UTRACE_CMD_MODULE_BIND). One table entry of one
 * module on one probe id: its handlers become in-process handlers of the
 * probe (__utrace_agent_add_handler(), run by dispatch.c after the built-in
 * ones, in order). The binding, our small adapter's data, is allocated
 * here, never on the hit path.
 *
 * A hit (probed thread, under the guard, dispatch.c). The adapter builds the
 * probe.h context on the stack from the agent's, calls the module's
 * handler, and serves its calls back through the table:
 *  - arg/retval/set_return work on the saved registers (set_return at an
 *    entry pops the return address: the thunk resumes the caller);
 *  - count adds to a per-thread counter of the arena: the host reserved
 *    probe ids that are never armed, and their hit counters (per thread
 *    slot, plain adds, summed by the host) are the module's counters;
 *  - emit writes one UTRACE_EV_MODULE record into the thread's ring;
 *  - read/write/read_str use process_vm_readv/writev on ourselves: one
 *    syscall (the one exception to "no syscalls", taken only when a module
 *    asks), so that a bad address is -EFAULT and never a crash of the
 *    target.
 * The same hot-path rules as the agent's own handlers apply: no malloc,
 * locks or stdio here; integer registers only (-mgeneral-regs-only).
 */
#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent-internal.h"
#include "util.h"
#include "utrace/module.h"

#define AGENT_MAX_MODULES 8

struct agent_module {
	void *handle;
	struct utrace_module *desc;
	uint32_t nr_probes;
	uint32_t counter_base, nr_counters; /* probe ids holding its counters */
};

struct mod_binding {
	struct agent_module *m;
	uint32_t index; /* in the module's probe table */
	uint32_t id; /* the agent probe */
	utrace_handler_fn_t fn, ret_fn;
	void *data;
	volatile int off; /* a handler returned UTRACE_PROBE_REMOVE */
	struct utrace_probe_point_info point;
};

/* What ctx->priv points to during a module handler. */
struct mod_hit {
	struct utrace_agent_ctx *a;
	struct mod_binding *b;
};

static struct agent_module modules[AGENT_MAX_MODULES];
static uint32_t nr_modules;
static pid_t mod_pid; /* cached at load: no getpid() on the hit path */

/* ---- the table the module calls (probed thread) ------------------------- */

static uint64_t mod_arg(const struct utrace_probe_ctx *ctx, unsigned int n)
{
	return regs_arg(ctx->regs, n);
}

static uint64_t mod_retval(const struct utrace_probe_ctx *ctx)
{
	return ctx->regs->rax;
}

static int mod_set_return(struct utrace_probe_ctx *ctx, uint64_t value)
{
	struct mod_hit *h = ctx->priv;
	struct user_regs_struct *r = ctx->regs;

	if (ctx->is_return) {
		r->rax = value;
		return 0;
	}
	if (!(agent_probes[h->b->id].flags & UTRACE_PF_ENTRY))
		return -EINVAL;
	/* The thunk resumes at rip with rsp (dispatch.c: a forced return). */
	r->rax = value;
	r->rip = *(uint64_t *)r->rsp;
	r->rsp += 8;
	return 0;
}

/*
 * process_vm_readv/writev on ourselves, raw (no errno: the probed thread's
 * errno is the application's).
 */
static long mod_vm(long nr, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };
	register long r10 __asm__("r10") = (long)&remote;
	register long r8 __asm__("r8") = 1;
	register long r9 __asm__("r9") = 0;
	long ret = nr;

	__asm__ volatile("syscall"
			 : "+a"(ret)
			 : "D"((long)mod_pid), "S"(&local), "d"(1L), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

static ssize_t mod_read(struct utrace_probe_ctx *ctx, uint64_t addr, void *buf, size_t len)
{
	long n;

	(void)ctx;
	if (!len)
		return 0;
	n = mod_vm(SYS_process_vm_readv, addr, buf, len);
	return n == (long)len ? (ssize_t)len : n < 0 ? n : -EFAULT;
}

static ssize_t mod_write(struct utrace_probe_ctx *ctx, uint64_t addr, const void *buf, size_t len)
{
	long n;

	(void)ctx;
	if (!len)
		return 0;
	n = mod_vm(SYS_process_vm_writev, addr, (void *)buf, len);
	return n == (long)len ? (ssize_t)len : n < 0 ? n : -EFAULT;
}

/* In chunks that end at page boundaries: a string may end just before an unmapped page. */
static ssize_t mod_read_str(struct utrace_probe_ctx *ctx, uint64_t addr, char *buf, size_t size)
{
	size_t got = 0;

	(void)ctx;
	if (!size)
		return -EINVAL;
	while (got < size - 1) {
		size_t chunk = 4096 - ((addr + got) & 4095), i;
		long n;

		if (chunk > size - 1 - got)
			chunk = size - 1 - got;
		n = mod_vm(SYS_process_vm_readv, addr + got, buf + got, chunk);
		if (n <= 0) {
			if (!got)
				return n < 0 ? n : -EFAULT;
			break;
		}
		for (i = 0; i < (size_t)n; i++)
			if (!buf[got + i]) {
				return (ssize_t)(got + i);
			}
		got += (size_t)n;
		if ((size_t)n < chunk)
			break;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

static void mod_count(struct utrace_probe_ctx *ctx, unsigned int i, uint64_t delta)
{
	struct mod_hit *h = ctx->priv;
	struct agent_module *m = h->b->m;
	struct utrace_task *t = utrace_tls_task; /* the guard is held: ours */
	uint32_t id;

	if (i >= m->nr_counters)
		return;
	id = m->counter_base + i;
	if (__builtin_expect(t && t->hits && t->gen == agent_gen, 1))
		count_add(&t->hits[id], delta);
	else
		__atomic_fetch_add(&agent_abi_probe(id)->hits_shared, delta, __ATOMIC_RELAXED);
}

static void mod_emit(struct utrace_probe_ctx *ctx, const uint64_t *values, unsigned int n)
{
	struct mod_hit *h = ctx->priv;
	struct utrace_task *t = utrace_tls_task;
	uint64_t tag;

	if (!t || !t->slot || t->gen != agent_gen)
		return;
	if (n > UTRACE_ABI_ARGS)
		n = UTRACE_ABI_ARGS;
	tag = ((uint64_t)(h->b->m - modules) << 24) | ((uint64_t)h->b->index << 8) | n;
	ring_emit(t, h->b->id, UTRACE_EV_MODULE, ctx->now_ns, tag, values, n);
}

static const struct utrace_module_ops agent_module_ops = {
	.abi = UTRACE_MODULE_ABI,
	.backend = UTRACE_BACKEND_AGENT,
	.arg = mod_arg,
	.retval = mod_retval,
	.set_return = mod_set_return,
	.read = mod_read,
	.write = mod_write,
	.read_str = mod_read_str,
	.count = mod_count,
	.emit = mod_emit,
};

/* ---- the adapters (probed thread, dispatch.c's in-process handlers) ------ */

static int mod_call(struct utrace_agent_ctx *a, struct mod_binding *b, utrace_handler_fn_t fn)
{
	struct mod_hit h = { a, b };
	struct utrace_probe_ctx c = {
		.point = &b->point,
		.pid = mod_pid,
		.tid = (pid_t)a->tid,
		.regs = a->regs,
		.is_return = a->is_return,
		.ret_addr = a->ret_addr,
		.entry_ns = a->entry_ns,
		.now_ns = a->now_ns ? a->now_ns : ring_now_ns(),
		.depth = a->depth,
		.priv = &h,
	};

	if (b->off)
		return 0;
	if (fn(&c, b->data) == UTRACE_PROBE_REMOVE)
		b->off = 1;
	return 0;
}

static int mod_entry(struct utrace_agent_ctx *a, void *data)
{
	struct mod_binding *b = data;

	return mod_call(a, b, b->fn);
}

static int mod_return(struct utrace_agent_ctx *a, void *data)
{
	struct mod_binding *b = data;

	return mod_call(a, b, b->ret_fn);
}

/* ---- commands (control thread) ------------------------------------------ */

static void say(const char *msg)
{
	size_t n = 0;

	while (msg && msg[n] && n < sizeof(agent_hdr->cmd_str) - 1) {
		agent_hdr->cmd_str[n] = msg[n];
		n++;
	}
	agent_hdr->cmd_str[n] = '\0';
}

/**
 * module_load - UTRACE_CMD_MODULE_LOAD (control thread)
 * @counter_base: first probe id reserved for the module's counters
 * @nr_counters: how many
 *
 * Return: the module's index, or -errno (the reason in cmd_str).
 */
int module_load(uint64_t counter_base, uint64_t nr_counters)
{
	char path[sizeof(agent_hdr->cmd_str)];
	struct utrace_module *d;
	struct agent_module *m;
	uint32_t i, n;
	void *handle;

	utrace_memcpy(path, agent_hdr->cmd_str, sizeof(path));
	path[sizeof(path) - 1] = '\0';
	if (path[0] != '/' || counter_base + nr_counters > agent_layout.max_probes ||
	    nr_counters > UTRACE_MODULE_MAX_COUNTERS) {
		say("bad module load command");
		return -EINVAL;
	}
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		say(dlerror());
		return -ENOENT;
	}
	d = dlsym(handle, UTRACE_MODULE_SYMBOL);
	if (!d || d->abi != UTRACE_MODULE_ABI || !d->ops || !d->probes) {
		say(d ? "module ABI mismatch" : "no utrace_module descriptor");
		return -EPROTO; /* left loaded: its constructors ran, unloading helps nothing */
	}
	for (n = 0; n < UTRACE_MODULE_MAX_PROBES && d->probes[n].spec; n++)
		;
	for (i = 0; i < nr_modules; i++)
		if (modules[i].desc == d)
			break; /* loaded in an earlier session: the same object */
	if (i == nr_modules) {
		if (nr_modules >= AGENT_MAX_MODULES) {
			say("too many modules");
			return -ENOSPC;
		}
		nr_modules++;
	}
	mod_pid = getpid();
	m = &modules[i];
	m->handle = handle;
	m->desc = d;
	m->nr_probes = n;
	m->counter_base = (uint32_t)counter_base;
	m->nr_counters = (uint32_t)nr_counters;
	__atomic_store_n(d->ops, &agent_module_ops, __ATOMIC_RELEASE);
	say("");
	return (int)i;
}

/**
 * module_bind - UTRACE_CMD_MODULE_BIND (control thread)
 * @which: module index << 32 | index in its probe table
 * @id: the probe whose hits run them
 *
 * Return: 0 or -errno.
 */
int module_bind(uint64_t which, uint64_t id)
{
	uint32_t mi = (uint32_t)(which >> 32), pi = (uint32_t)which;
	const struct utrace_module_probe *mp;
	struct mod_binding *b;
	struct agent_module *m;
	int err = 0;

	if (mi >= nr_modules || id >= AGENT_MAX_PROBES || id >= agent_layout.max_probes)
		return -EINVAL;
	m = &modules[mi];
	if (pi >= m->nr_probes)
		return -EINVAL;
	mp = &m->desc->probes[pi];
	b = utrace_alloc(sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->m = m;
	b->index = pi;
	b->id = (uint32_t)id;
	b->fn = mp->handler;
	b->ret_fn = mp->ret_handler;
	b->data = mp->data;
	b->point.addr = agent_abi_probe((uint32_t)id)->addr;
	if (b->fn)
		err = __utrace_agent_add_handler((uint32_t)id, mod_entry, b, 0);
	if (!err && b->ret_fn)
		err = __utrace_agent_add_handler((uint32_t)id, mod_return, b, 1);
	return err;
}
