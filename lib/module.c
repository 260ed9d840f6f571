/* SPDX-License-Identifier: MIT */
/*
 * module.c - C probe modules on the library's side (include/utrace/module.h
 * is the author's header, agent/module.c the target's side, docs/modules.md
 * the guide). Tracer process, the session's tracing thread.
 *
 * A module is a shared object with one exported descriptor: a name, a
 * table of probes (SPEC + entry and/or return handler) and counter names.
 * Its handlers call the probe.h context functions through a table of
 * function pointers that whoever loads it stores in it, so one .so has no
 * undefined utrace symbol and runs unchanged where the backend says:
 *
 *  - agent: the agent dlopen()s it inside each traced process
 *    (UTRACE_CMD_MODULE_LOAD) and runs its handlers in the probed threads,
 *    after a point's built-in actions (UTRACE_CMD_MODULE_BIND);
 *    counters are per-thread counters of the shared arena, records go
 *    through the threads' rings (backend-agent.c);
 *  - ptrace: its handlers run here, in the tracer, while the probed thread
 *    is stopped (the registry calls them as any tracer-side handler):
 *    the table below serves them with libutrace's context functions.
 *
 * Either way it is dlopen()ed here first, to read and check the descriptor
 * (a bad module is refused before anything runs) and to give its names to
 * the caller (utrace_uprobes__module()). Never dlclose()d: its strings
 * name records up to the end.
 *
 * Safety. A module is code that runs inside the target: it is loaded only
 * from a path that nobody but its owner (us or root) can change, up to the
 * root directory (the rule lib/inject.c applies to the agent itself). In
 * the target its handlers run on the probed thread's registers, and the
 * trampolines save the integer registers only: a module whose code touches
 * an SSE/AVX/x87/MMX register would corrupt the application's
 * floating-point state. Its executable sections are decoded (Zydis, linear
 * sweep; microseconds for a small module) and such a module is refused
 * for a backend that runs handlers in the target.
 */
#define UTRACE_MODULE_LOADER /* we implement the table: no redirecting macros */

#include <Zydis/Zydis.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utrace/module.h"
#include "backend.h"
#include "internal.h"
#include "uprobes.h"

/* ---- checks --------------------------------------------------------------- */

/* Can anyone but us or root change @p (@st)? A sticky directory is fine. */
static bool unsafe(const char *p, const struct stat *st, bool is_dir, char *why, size_t size)
{
	if (st->st_uid != geteuid() && st->st_uid != 0) {
		snprintf(why, size, "'%s' belongs to uid %u, neither us nor root", p,
			 (unsigned int)st->st_uid);
		return true;
	}
	if (!(st->st_mode & (S_IWGRP | S_IWOTH)) || (is_dir && (st->st_mode & S_ISVTX)))
		return false;
	snprintf(why, size, "'%s' is writable by %s (mode %04o)", p,
		 (st->st_mode & S_IWOTH) ? "others" : "its group",
		 (unsigned int)(st->st_mode & 07777));
	return true;
}

/* Canonicalise @arg into @real and check the file and every directory above it. */
static int check_path(const char *arg, char *real, char *why, size_t whylen)
{
	char what[PATH_MAX + 128], dir[PATH_MAX];
	struct stat st;
	char *slash;
	int err;

	if (!realpath(arg, real) || stat(real, &st)) {
		err = -errno;
		snprintf(why, whylen, "%s", strerror(-err));
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		return -EINVAL;
	}
	if (unsafe(real, &st, false, what, sizeof(what)))
		goto refuse;
	snprintf(dir, sizeof(dir), "%s", real);
	while ((slash = strrchr(dir, '/'))) {
		slash[slash == dir ? 1 : 0] = '\0';
		if (stat(dir, &st)) {
			err = -errno;
			snprintf(why, whylen, "%s: %s", dir, strerror(-err));
			return err;
		}
		if (unsafe(dir, &st, true, what, sizeof(what)))
			goto refuse;
		if (slash == dir)
			break;
	}
	return 0;
refuse:
	snprintf(why, whylen,
		 "refused: %s (a module runs inside the traced program: only its owner may be "
		 "able to change it)",
		 what);
	return -EPERM;
}

/*
 * Does the code of @path use no SIMD, x87 or MMX register? The agent's
 * trampolines save the integer registers only (agent/tramp.c). Return: 0,
 * or -EOPNOTSUPP with the first such instruction named in @why.
 */
static int simd_free(const char *path, char *why, size_t whylen)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, ret = 0;
	Elf *e;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* dlopen() says why */
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getshdrstrndx(e, &shstrndx)) {
		if (e)
			elf_end(e);
		close(fd);
		return 0;
	}
	while (!ret && (scn = elf_nextscn(e, scn))) {
		ZydisDecoder dec;
		ZydisDecodedInstruction insn;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		Elf_Data *d;
		GElf_Shdr sh;
		size_t off = 0;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
		while (off < d->d_size && !ret) {
			unsigned int i;

			if (ZYAN_FAILED(ZydisDecoderDecodeFull(&dec,
							       (const uint8_t *)d->d_buf + off,
							       d->d_size - off, &insn, ops))) {
				off++; /* data or padding: go on */
				continue;
			}
			for (i = 0; i < insn.operand_count; i++) {
				ZydisRegisterClass c;

				if (ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER)
					continue;
				c = ZydisRegisterGetClass(ops[i].reg.value);
				if (c != ZYDIS_REGCLASS_XMM && c != ZYDIS_REGCLASS_YMM &&
				    c != ZYDIS_REGCLASS_ZMM && c != ZYDIS_REGCLASS_X87 &&
				    c != ZYDIS_REGCLASS_MMX && c != ZYDIS_REGCLASS_MASK)
					continue;
				snprintf(
					why, whylen,
					"its code uses %s at 0x%" PRIx64
					" (%s): in the target the agent saves integer registers "
					"only; rebuild it with -mgeneral-regs-only, or use -b ptrace",
					ZydisRegisterGetString(ops[i].reg.value),
					(uint64_t)(sh.sh_addr + off),
					elf_strptr(e, shstrndx, sh.sh_name) ?: "?");
				ret = -EOPNOTSUPP;
				break;
			}
			off += insn.length;
		}
	}
	elf_end(e);
	close(fd);
	return ret;
}

/* The descriptor makes sense? Its probe and counter numbers into @np, @nc. */
static int check_desc(const struct utrace_module *d, unsigned int *np, unsigned int *nc, char *why,
		      size_t whylen)
{
	unsigned int i;

	if (d->abi != UTRACE_MODULE_ABI) {
		snprintf(why, whylen,
			 "built for module ABI %u, this utrace has %u (rebuild it against this "
			 "include/utrace/module.h)",
			 d->abi, UTRACE_MODULE_ABI);
		return -ENOEXEC;
	}
	if (!d->name || !d->name[0] || !d->ops || !d->probes || !d->probes[0].spec) {
		snprintf(why, whylen,
			 "its descriptor has no name or no probe (see UTRACE_MODULE() in "
			 "utrace/module.h)");
		return -ENOEXEC;
	}
	for (i = 0; d->probes[i].spec; i++) {
		if (i >= UTRACE_MODULE_MAX_PROBES) {
			snprintf(why, whylen, "more than %d probes", UTRACE_MODULE_MAX_PROBES);
			return -ENOEXEC;
		}
		if (!d->probes[i].handler && !d->probes[i].ret_handler) {
			snprintf(why, whylen, "probe '%s' has no handler", d->probes[i].spec);
			return -ENOEXEC;
		}
	}
	*np = i;
	for (i = 0; d->counters && d->counters[i]; i++)
		if (i >= UTRACE_MODULE_MAX_COUNTERS) {
			snprintf(why, whylen, "more than %d counters", UTRACE_MODULE_MAX_COUNTERS);
			return -ENOEXEC;
		}
	*nc = i;
	return 0;
}

/* ---- the tracer's table (ptrace backend: handlers run here) --------------- */

static void tr_count(struct utrace_probe_ctx *ctx, unsigned int i, uint64_t delta)
{
	struct uprobes_module *m = ctx->probe ? ctx->probe->mod : NULL;

	if (m && i < m->nr_counters)
		m->counts[i] += delta;
}

static void tr_emit(struct utrace_probe_ctx *ctx, const uint64_t *v, unsigned int n)
{
	struct utrace_probe *p = ctx->probe;
	struct utrace_record r = { .sz = sizeof(r), .type = UTRACE_REC_MODULE };

	if (!p || !p->mod)
		return;
	r.pid = ctx->pid;
	r.tid = ctx->tid;
	r.ts_ns = ctx->now_ns;
	r.probe = p;
	r.addr = ctx->point ? ctx->point->addr : 0;
	r.name = ctx->point ? ctx->point->name : NULL;
	r.module = p->mod->id;
	r.module_probe = p->mprobe;
	r.nargs = n > UTRACE_MODULE_MAX_VALUES ? UTRACE_MODULE_MAX_VALUES : n;
	memcpy(r.args, v, r.nargs * sizeof(*v));
	uprobes_queue_record(p->up, &r);
}

static const struct utrace_module_ops tracer_ops = {
	.abi = UTRACE_MODULE_ABI,
	.backend = UTRACE_BACKEND_PTRACE,
	.arg = utrace_probe_ctx__arg,
	.retval = utrace_probe_ctx__retval,
	.set_return = utrace_probe_ctx__set_return,
	.read = utrace_probe_ctx__read,
	.write = utrace_probe_ctx__write,
	.read_str = utrace_probe_ctx__read_str,
	.count = tr_count,
	.emit = tr_emit,
};

/* The registry's handlers of a module probe in the tracer (uprobes.c probe_new()). */
static int tr_call(struct utrace_probe_ctx *ctx, bool ret)
{
	struct utrace_probe *p = ctx->probe;
	const struct utrace_module_probe *mp;
	utrace_handler_fn_t fn;

	if (!p || !p->mod)
		return UTRACE_PROBE_OK;
	mp = &p->mod->desc->probes[p->mprobe];
	fn = ret ? mp->ret_handler : mp->handler;
	/* a return handler alone still gets a paired entry: ctx->entry_ns */
	return fn ? fn(ctx, mp->data) : UTRACE_PROBE_OK;
}

int uprobes_module_entry(struct utrace_probe_ctx *ctx, void *data)
{
	(void)data;
	return tr_call(ctx, false);
}

int uprobes_module_return(struct utrace_probe_ctx *ctx, void *data)
{
	(void)data;
	return tr_call(ctx, true);
}

/* ---- the API -------------------------------------------------------------- */

static int module_open(const char *path, unsigned int flags, char *real, void **handle,
		       const struct utrace_module **desc, unsigned int *np, unsigned int *nc,
		       char *why, size_t whylen)
{
	struct utrace_module *d;
	void *h;
	int err;

	err = check_path(path, real, why, whylen);
	if (err)
		return err;
	if (flags & UTRACE_MODULE_IN_TARGET) {
		err = simd_free(real, why, whylen);
		if (err)
			return err;
	}
	h = dlopen(real, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();

		snprintf(why, whylen, "cannot load it: %s", e ? e : "?");
		return -ENOEXEC;
	}
	d = dlsym(h, UTRACE_MODULE_SYMBOL);
	if (!d) {
		snprintf(why, whylen,
			 "no '%s' descriptor (define one with UTRACE_MODULE(), "
			 "include/utrace/module.h)",
			 UTRACE_MODULE_SYMBOL);
		return -ENOEXEC;
	}
	err = check_desc(d, np, nc, why, whylen);
	if (err)
		return err;
	/* whoever runs its handlers here gets libutrace's context functions */
	*d->ops = &tracer_ops;
	*handle = h;
	*desc = d;
	return 0;
}

int utrace_module__open(const char *path, unsigned int flags, const struct utrace_module **desc,
			char *why, size_t whylen)
{
	char real[PATH_MAX], buf[8];
	const struct utrace_module *d;
	unsigned int np, nc;
	void *h;
	int err;

	if (!why || !whylen) {
		why = buf;
		whylen = sizeof(buf);
	}
	why[0] = 0;
	if (!path || (flags & ~UTRACE_MODULE_IN_TARGET))
		return -EINVAL;
	err = module_open(path, flags, real, &h, &d, &np, &nc, why, whylen);
	if (!err && desc)
		*desc = d;
	return err;
}

int utrace_uprobes__load_module(struct utrace_uprobes *up, const char *path, char *why,
				size_t whylen)
{
	bool in_target = up && up->ops && !up->ops->tracer_handlers;
	struct uprobes_module *m;
	char buf[8];
	unsigned int i;
	int err;

	if (!why || !whylen) {
		why = buf;
		whylen = sizeof(buf);
	}
	why[0] = 0;
	if (!up || !path)
		return -EINVAL;
	if (in_target && !up->ops->module_load) {
		snprintf(why, whylen, "C probe modules are not possible with the %s backend",
			 up->ops->name);
		return -EOPNOTSUPP;
	}
	if (up->nr_mods == UPROBES_MAX_MODULES) {
		snprintf(why, whylen, "at most %d modules at once", UPROBES_MAX_MODULES);
		return -E2BIG;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	err = module_open(path, in_target ? UTRACE_MODULE_IN_TARGET : 0, m->path, &m->handle,
			  (const struct utrace_module **)&m->desc, &m->nr_probes, &m->nr_counters,
			  why, whylen);
	for (i = 0; !err && i < up->nr_mods; i++)
		if (!strcmp(up->mods[i]->path, m->path)) {
			snprintf(why, whylen, "given twice");
			err = -EEXIST;
		}
	if (err) {
		free(m);
		return err;
	}
	m->id = (int)up->nr_mods + 1;
	m->name = m->desc->name;
	for (i = 0; i < m->nr_probes; i++)
		if (m->desc->probes[i].ret_handler)
			m->ret_mask |= 1u << i;
	if (up->ops->module_load) {
		err = up->ops->module_load(up, m, why, whylen);
		if (err) {
			free(m);
			return err;
		}
	}
	up->mods[up->nr_mods++] = m;
	return m->id;
}

bool utrace_uprobes__own_syscall(struct utrace_uprobes *up, struct utrace_thread *th)
{
	return up && th && up->ops->own_syscall && up->ops->own_syscall(up, th);
}

bool utrace_uprobes__own_signal(struct utrace_uprobes *up, struct utrace_thread *th,
				const siginfo_t *si)
{
	return up && th && si && up->ops->own_signal && up->ops->own_signal(up, th, si);
}

struct uprobes_module *uprobes_module_get(const struct utrace_uprobes *up, int id)
{
	return up && id > 0 && (unsigned int)id <= up->nr_mods ? up->mods[id - 1] : NULL;
}

const struct utrace_module *utrace_uprobes__module(struct utrace_uprobes *up, int id)
{
	struct uprobes_module *m = uprobes_module_get(up, id);

	return m ? m->desc : NULL;
}

int utrace_uprobes__module_counters(struct utrace_uprobes *up, int id, uint64_t *vals,
				    unsigned int n)
{
	struct uprobes_module *m = uprobes_module_get(up, id);
	uint64_t c[UTRACE_MODULE_MAX_COUNTERS];

	if (!m || (n && !vals))
		return -EINVAL;
	memcpy(c, m->counts, sizeof(c));
	if (up->ops->module_counts)
		up->ops->module_counts(up, m, c); /* the live processes' */
	memcpy(vals, c, MIN(n, m->nr_counters) * sizeof(*c));
	return (int)m->nr_counters;
}

void uprobes_modules_free(struct utrace_uprobes *up)
{
	unsigned int i;

	/* never dlclose(): a caller may still print a module's names */
	for (i = 0; i < up->nr_mods; i++)
		free(up->mods[i]);
	up->nr_mods = 0;
}
