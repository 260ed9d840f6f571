/* SPDX-License-Identifier: MIT */
/*
 * uprobes-arm.c - arming, for the probe registry (uprobes.c): probe points
 * made, armed and removed, SPEC probes armed in a process, the dynamic
 * linker's r_brk and the unwind guards as internal points; and the hits:
 * the handlers and the built-in actions run in the tracer at a backend's
 * stop, the deferred (un)registration at the end of the outermost hit.
 * Backend-independent. Runs in the tracer process, in the session's
 * tracing thread.
 *
 * It writes no breakpoint itself: the backend's ->arm and ->disarm do
 * (backend.h). The arming functions neither quiesce nor resume a process:
 * their callers arm with the process quiesced (registration, uprobes.c) or
 * where no thread can run in the objects concerned (the life cycle,
 * uprobes-life.c). While handlers run, no point's list of probes may
 * change: (un)registration from a handler is queued, and the outermost
 * hit's uprobes_hit_end() has the registry do it.
 *
 * DESIGN
 *
 * Unwind guards. Once a return probe applies to a process, internal points
 * go on the unwinders' entry points (_Unwind_RaiseException and friends,
 * libc's pthread_exit; uprobes_proc_arm_unwind_guards()): the backend
 * writes the hitting thread's hijacked return addresses back before the
 * unwinder walks its stack. libgcc_s is often loaded later: its guards are
 * armed like pending SPECs, at the dlopen notification that maps it, and
 * are forgotten with it at dlclose (r_brk is never forgotten).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "utrace/proc.h"
#include "utrace/probe.h"
#include "utrace/unwind.h"
#include "abi.h"
#include "backend.h"
#include "internal.h"
#include "uprobes.h"

/* ------------------------------------------------------------------------ */
/* Arming                                                                    */
/* ------------------------------------------------------------------------ */

static void point_set_info(struct probe_point *pt, const struct utrace_image *img,
			   const struct utrace_match *m)
{
	const struct utrace_object *o = utrace_image__object(img, m->object);
	const char *base;
	char buf[512];
	uint64_t off = m->offset + (pt->addr - m->addr);

	pt->object = strdup(o && o->path ? o->path : "?");
	pt->symbol = m->symbol ? strdup(m->symbol) : NULL;
	base = pt->object ? strrchr(pt->object, '/') : NULL;
	base = base ? base + 1 : (pt->object ? pt->object : "?");
	if (m->symbol && off)
		snprintf(buf, sizeof(buf), "%s:%s+0x%llx", base, m->symbol,
			 (unsigned long long)off);
	else if (m->symbol)
		snprintf(buf, sizeof(buf), "%s:%s", base, m->symbol);
	else
		snprintf(buf, sizeof(buf), "%s:0x%llx", base, (unsigned long long)m->file_addr);
	pt->name = strdup(buf);
	pt->info.addr = pt->addr;
	pt->info.object = pt->object;
	pt->info.symbol = pt->symbol;
	pt->info.offset = off;
	pt->info.name = pt->name;
	pt->entry = m->symbol && off == 0;
	pt->match = *m;
	pt->match.symbol = pt->symbol;
}

/*
 * Get the point for match @m in @pp, creating and arming it if needed.
 * Returns 0 with *ret_pt set; -UTRACE_ERRNO__NOT_PATCHABLE if the planner
 * refuses the site (@why filled); negative errno otherwise.
 */
/* @pt's original bytes from @m's file (not its process's memory). Return: bytes, or <= 0. */
static ssize_t file_orig(struct uprobes_proc *pp, const struct utrace_match *m,
			 struct probe_point *pt)
{
	struct utrace_elf *elf = utrace_image__elf(pp->img, m->object);

	return elf ? utrace_elf__read(elf, m->file_addr + (pt->addr - m->addr), pt->orig,
				      sizeof(pt->orig)) :
		     -EFAULT;
}

int uprobes_point_get(struct uprobes_proc *pp, const struct utrace_match *m, bool internal,
		      struct probe_point **ret_pt, char *why, size_t whylen)
{
	struct utrace_plan plan;
	struct probe_point *pt;
	ssize_t n;
	int err, len;

	err = utrace_planner__plan(pp->planner, m, &plan);
	if (err == -UTRACE_ERRNO__RELOC) {
		snprintf(why, whylen, "%s", plan.why);
		return -UTRACE_ERRNO__NOT_PATCHABLE;
	}
	if (err)
		return err == -ENOENT ? -EFAULT : err;
	pt = uprobes_point_find(pp, plan.addr);
	if (pt) {
		if (!internal && pt->internal) {
			pt->internal = false; /* the r_brk is also probed by the user */
			pp->up->stats.points_made++;
		}
		*ret_pt = pt;
		return 0;
	}
	pt = calloc(1, sizeof(*pt));
	if (!pt)
		return -ENOMEM;
	pt->proc = pp;
	pt->addr = plan.addr;
	pt->internal = internal;
	if (!pp->pid || pp->up->ops->file_bytes) {
		/*
		 * system-wide: no process to read; a backend writing nothing
		 * there: its int3s are the kernel's. The file's bytes.
		 */
		n = file_orig(pp, m, pt);
		if (n <= 0) {
			free(pt);
			return -EFAULT;
		}
	} else {
		n = utrace_mem__read(pp->pid, pt->addr, pt->orig, sizeof(pt->orig));
	}
	if (n < 0) {
		/* near the end of a mapping: read what there is */
		for (n = sizeof(pt->orig) - 1; n > 0; n--)
			if (utrace_mem__read(pp->pid, pt->addr, pt->orig, (size_t)n) == n)
				break;
		if (n <= 0) {
			free(pt);
			return -EFAULT;
		}
	}
	if (pt->orig[0] == 0xcc && pp->up->ops->site_checks) {
		/*
		 * The backend looks at the live bytes itself (the agent keeps
		 * a kernel uprobe's int3 on an entry and puts its jmp after
		 * the first instruction): the file's bytes, for the length.
		 */
		n = file_orig(pp, m, pt);
		if (n <= 0) {
			free(pt);
			return -EFAULT;
		}
	}
	if (pt->orig[0] == 0xcc) {
		/* someone else's breakpoint (a debugger): not ours to displace */
		snprintf(
			why, whylen,
			"an int3 is already there (a kernel uprobe such as bpftrace's, or a debugger's breakpoint)");
		free(pt);
		return -EEXIST;
	}
	len = xol_insn_len(pt->orig, (size_t)n);
	if (len <= 0) {
		snprintf(why, whylen, "the instruction does not decode");
		free(pt);
		return -UTRACE_ERRNO__NOT_PATCHABLE;
	}
	pt->insn_len = (uint8_t)len;
	point_set_info(pt, pp->img, m);
	pp->up->arm_why[0] = 0;
	err = pp->up->ops->arm(pp, pt);
	if (err) {
		if (pp->up->arm_why[0])
			snprintf(why, whylen, "%s", pp->up->arm_why);
		uprobes_point_free(pt);
		return err;
	}
	pt->hnext = pp->points[uprobes_hash_addr(pt->addr)];
	pp->points[uprobes_hash_addr(pt->addr)] = pt;
	pp->nr_points++;
	pp->up->stats.points++;
	if (!internal) /* the user's points (not the r_brk, nor the unwinders' guards) */
		pp->up->stats.points_made++;
	*ret_pt = pt;
	return 0;
}

/*
 * Probe @i leaves point @pt (unregistered, or the point goes): what it
 * counted there stays with the probe, under the point's name.
 */
void uprobes_point_retire(struct probe_point *pt, unsigned int i)
{
	struct utrace_probe *p = pt->probes[i];
	struct utrace_probe_counts c = pt->pcnt[i];

	if (pt->proc->up->ops->point_counts)
		pt->proc->up->ops->point_counts(pt->proc, pt, p, &c);
	uprobes_retire_counts(p, pt, &c);
}

/* Take the probe at index @i out of @pt's lists. */
void uprobes_point_del_probe_at(struct probe_point *pt, unsigned int i)
{
	uprobes_point_retire(pt, i);
	memmove(&pt->probes[i], &pt->probes[i + 1], (pt->nr_probes - i - 1) * sizeof(*pt->probes));
	memmove(&pt->popts[i], &pt->popts[i + 1], (pt->nr_probes - i - 1) * sizeof(*pt->popts));
	memmove(&pt->pcnt[i], &pt->pcnt[i + 1], (pt->nr_probes - i - 1) * sizeof(*pt->pcnt));
	pt->nr_probes--;
}

/* Insert @p in @pt's handler list, in registration order. */
int uprobes_point_add_probe(struct probe_point *pt, struct utrace_probe *p)
{
	unsigned int i;

	struct utrace_point_opts po = { p->opts.nargs, p->opts.str_args, p->opts.err_kind };

	for (i = 0; i < pt->nr_probes; i++)
		if (pt->probes[i] == p)
			return 0;
	if (pt->nr_probes == pt->cap_probes) {
		unsigned int cap = pt->cap_probes ? pt->cap_probes * 2 : 2;
		struct utrace_probe **n = realloc(pt->probes, cap * sizeof(*n));
		struct utrace_point_opts *o;
		struct utrace_probe_counts *c;

		if (!n)
			return -ENOMEM;
		pt->probes = n;
		o = realloc(pt->popts, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		pt->popts = o;
		c = realloc(pt->pcnt, cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		pt->pcnt = c;
		pt->cap_probes = cap;
	}
	if (p->opts.point_opts) {
		p->opts.point_opts(p, &pt->info, &po, p->opts.data);
		if (po.nargs > 6)
			po.nargs = 6;
		po.str_args &= 0x7f;
		if (po.err_kind < 0 || po.err_kind > UTRACE_ERRK_MAPFAIL)
			po.err_kind = 0;
	}
	for (i = pt->nr_probes; i > 0 && pt->probes[i - 1]->seq > p->seq; i--) {
		pt->probes[i] = pt->probes[i - 1];
		pt->popts[i] = pt->popts[i - 1];
		pt->pcnt[i] = pt->pcnt[i - 1];
	}
	pt->probes[i] = p;
	pt->popts[i] = po;
	memset(&pt->pcnt[i], 0, sizeof(pt->pcnt[i]));
	pt->nr_probes++;
	p->points++;
	if (pt->proc->up->ops->point_update) {
		int err = pt->proc->up->ops->point_update(pt->proc, pt);

		if (err) {
			uprobes_point_del_probe_at(pt, i);
			p->points--;
			return err;
		}
	}
	return 0;
}

/* Remove the breakpoint of @pt (process alive) and free it. */
int uprobes_point_remove(struct uprobes_proc *pp, struct probe_point *pt)
{
	int err = 0;

	if (pt->armed)
		err = pp->up->ops->disarm(pp, pt, true);
	uprobes_remember_removed(pp, pt->addr);
	uprobes_point_unlink(pp, pt);
	uprobes_point_free(pt);
	return err;
}

/*
 * A probe with a return half cannot go where return probes are refused
 * (Go code): -UTRACE_ERRNO__NOT_PATCHABLE with @why, before anything is
 * armed. Entry-only probes can.
 */
int uprobes_ret_refused(struct uprobes_proc *pp, const struct utrace_probe *p,
			const struct utrace_match *m, char *why, size_t whylen)
{
	const char *r;

	if (!uprobes_probe_has_return(p))
		return 0;
	r = utrace_plan__ret_refused(pp->img, m);
	if (!r)
		return 0;
	snprintf(why, whylen, "%s", r);
	return -UTRACE_ERRNO__NOT_PATCHABLE;
}

/*
 * Is @m in the agent's library (libutrace-agent.so, or a session's private
 * copy of it) while @p's OBJECT is '*' or a glob? The agent refuses its own
 * sites (a warning each): a SPEC that does not name it means the program's.
 */
static bool agent_object_by_glob(struct uprobes_proc *pp, const struct utrace_probe *p,
				 const struct utrace_match *m)
{
	const struct utrace_object *o = utrace_image__object(pp->img, m->object);

	return o && o->path && strstr(o->path, "libutrace-agent") && p->spec.object &&
	       strpbrk(p->spec.object, "*?[");
}

/* Arm SPEC probe @p in @pp. Return: points added, or negative errno. */
int uprobes_proc_arm_spec(struct uprobes_proc *pp, struct utrace_probe *p, bool *ret_pending)
{
	struct utrace_match *m = NULL;
	size_t nr = 0, i, excluded = 0;
	bool pending = false;
	int err, armed = 0, first_err = 0;
	char why[200];

	if (!pp->img)
		return -ESRCH;
	err = utrace_image__resolve(pp->img, &p->spec, &m, &nr, &pending);
	if (err)
		return err;
	for (i = 0; i < nr; i++) {
		struct probe_point *pt;
		size_t x;

		for (x = 0; x < p->nr_excl && !utrace_image__match_is(pp->img, &m[i], &p->excl[x]);
		     x++)
			;
		if (x < p->nr_excl) {
			excluded++; /* utrace_probe_opts.exclude: left out */
			continue;
		}
		if (agent_object_by_glob(pp, p, &m[i]))
			continue; /* the agent's own code is no program's: never a '*' match */
		why[0] = 0;
		err = uprobes_ret_refused(pp, p, &m[i], why, sizeof(why));
		if (!err)
			err = uprobes_point_get(pp, &m[i], false, &pt, why, sizeof(why));
		if (!err)
			err = uprobes_point_add_probe(pt, p);
		if (err) {
			if (!first_err)
				first_err = err;
			if (!p->warned) {
				char ebuf[128];

				utrace_strerror(err, ebuf, sizeof(ebuf));
				if (pp->pid)
					pr_warn("probe '%s': cannot probe %s in process %d: %s%s%s\n",
						p->name, m[i].symbol ? m[i].symbol : "address",
						pp->pid, ebuf, why[0] ? ": " : "", why);
				else
					pr_warn("probe '%s': cannot probe %s system-wide: %s%s%s\n",
						p->name, m[i].symbol ? m[i].symbol : "address",
						ebuf, why[0] ? ": " : "", why);
			}
			continue;
		}
		armed++;
	}
	if (first_err)
		p->warned = true;
	free(m);
	/*
	 * Every match taken away: the probe stays registered for the objects
	 * an OBJECT name or glob may match later (dlopen); the executable or
	 * a path has nothing more to come.
	 */
	if (ret_pending)
		*ret_pending = pending || (nr && excluded == nr && p->spec.object &&
					   !spec_object_is_path(p->spec.object));
	if (!armed && first_err)
		return first_err;
	return armed;
}

/*
 * File address of data symbol @name in @elf's .dynsym, 0 if none (the ELF
 * layer lists functions only).
 */
static uint64_t elf_data_symbol(struct utrace_elf *elf, const char *name)
{
	Elf *e = NULL;
	int fd = open(utrace_elf__path(elf), O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	uint64_t ret = 0;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && !ret && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		n = d ? sh.sh_size / sh.sh_entsize : 0;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_OBJECT)
				continue;
			nm = elf_strptr(e, sh.sh_link, sym.st_name);
			if (nm && !strcmp(nm, name)) {
				ret = sym.st_value;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

/* The dynamic linker's r_brk (_dl_debug_state) as an internal point. */
void uprobes_proc_arm_rbrk(struct uprobes_proc *pp)
{
	size_t i, n = utrace_image__object_count(pp->img);
	char why[200];

	if (!pp->up->ops->internal_points) {
		/* the backend sees image changes its own way (backend.h dl_watch) */
		if (pp->up->ops->dl_watch)
			pp->up->ops->dl_watch(pp);
		return;
	}
	for (i = 0; i < n; i++) {
		const struct utrace_object *o = utrace_image__object(pp->img, i);
		const char *base = o && o->path ? strrchr(o->path, '/') : NULL;
		struct utrace_elf *elf;
		size_t k, nsym;

		base = base ? base + 1 : (o ? o->path : NULL);
		if (!base || !o->live ||
		    (strncmp(base, "ld-linux", 8) && strncmp(base, "ld-musl", 7) &&
		     strncmp(base, "ld.so", 5)))
			continue;
		elf = utrace_image__elf(pp->img, i);
		if (!elf)
			continue;
		pp->r_debug = elf_data_symbol(elf, "_r_debug");
		if (pp->r_debug)
			pp->r_debug += o->bias;
		nsym = utrace_elf__sym_count(elf);
		for (k = 0; k < nsym; k++) {
			const struct utrace_sym *sym = utrace_elf__sym(elf, k);
			struct utrace_match m = { 0 };
			struct probe_point *pt;

			if (strcmp(sym->name, "_dl_debug_state") || (sym->flags & UTRACE_SYM_PLT))
				continue;
			m.object = i;
			m.symbol = sym->name;
			m.file_addr = sym->addr;
			m.addr = sym->addr + o->bias;
			m.sym_size = sym->size;
			if (uprobes_point_get(pp, &m, true, &pt, why, sizeof(why)) == 0)
				pp->r_brk = pt->addr;
			else
				pr_debug("process %d: no dlopen notification: %s\n", pp->pid, why);
			return;
		}
	}
}

/*
 * The entry points of the unwinders that walk a thread's stack through its
 * return addresses: C++ throw (and rethrow), forced unwinding (pthread_exit,
 * cancellation), in libgcc_s or linked into the program (static libgcc_eh),
 * and libc's pthread_exit, which dlopen()s libgcc_s at its first call, so
 * the libgcc_s guard may not be armed yet when it is entered.
 */
static const char *const unwind_guard_specs[] = {
	"libgcc_s:_Unwind_RaiseException",
	"libgcc_s:_Unwind_ForcedUnwind",
	"libgcc_s:_Unwind_Resume_or_Rethrow",
	"libc:pthread_exit",
	"_Unwind_RaiseException",
	"_Unwind_ForcedUnwind",
	"_Unwind_Resume_or_Rethrow",
};

/* Does a live probe that applies to @pp hijack return addresses? */
static bool proc_has_retprobe(struct uprobes_proc *pp)
{
	struct utrace_probe *p;

	for (p = pp->up->probes; p; p = p->next)
		if (!p->dead && uprobes_probe_has_return(p) && (p->is_spec || p->pid == pp->pid))
			return true;
	return false;
}

/*
 * Unwind guards: internal points on the unwinders' entry points, armed in
 * @pp once a return probe applies to it (a SPEC return probe counts even
 * where none of its objects is loaded yet: the guards in libc are then
 * armed while it is safe, at the process's first look or under quiesce,
 * never from a later dlopen notification with other threads running). The
 * unwinder reads each frame's return address to find its unwind info, and
 * the trampoline has none: an exception through a hijacked frame would
 * std::terminate the program. At a guard's hit the backend writes the
 * thread's hijacked return addresses back first
 * (the backend's unwind_begin). Objects not loaded yet (libgcc_s) are
 * armed by the next call, at the dlopen notification that maps them:
 * idempotent, like SPEC arming. Guards stay until detach, exec or exit
 * (instances may outlive their probe). Same conditions as SPEC arming:
 * @pp quiesced, or no thread able to run in the objects concerned.
 */
void uprobes_proc_arm_unwind_guards(struct uprobes_proc *pp)
{
	unsigned int g;

	if (!pp->img || pp->vfork_parent || !pp->up->ops->internal_points || !proc_has_retprobe(pp))
		return;
	for (g = 0; g < ARRAY_SIZE(unwind_guard_specs); g++) {
		struct utrace_match *m = NULL;
		struct utrace_spec spec;
		size_t nr = 0, i;
		bool pending = false;

		if (utrace_spec__parse(unwind_guard_specs[g], &spec, NULL, 0))
			continue;
		if (utrace_image__resolve(pp->img, &spec, &m, &nr, &pending) == 0) {
			for (i = 0; i < nr; i++) {
				struct probe_point *pt;
				char why[200] = "";

				if (uprobes_point_get(pp, &m[i], true, &pt, why, sizeof(why)) ==
				    0) {
					if (!pt->unwind)
						pr_debug("process %d: unwind guard on %s\n",
							 pp->pid, pt->name);
					pt->unwind = true;
				} else {
					pr_debug("process %d: no unwind guard on %s: %s\n", pp->pid,
						 unwind_guard_specs[g], why);
				}
			}
		}
		free(m);
		utrace_spec__clear(&spec);
	}
}

/* Arm every live SPEC probe in @pp (new process, new image). */
void uprobes_proc_arm_all_specs(struct uprobes_proc *pp)
{
	struct utrace_probe *p;

	for (p = pp->up->probes; p; p = p->next)
		if (p->is_spec && !p->dead && p->registered)
			uprobes_proc_arm_spec(pp, p, NULL);
	uprobes_proc_arm_unwind_guards(pp);
	/* the batch's end (the callers at an exec, a fork or a dlopen have no resume) */
	if (pp->up->ops->armed_all)
		pp->up->ops->armed_all(pp);
}

/* Start tracking process @pid: image, r_brk, SPEC probes. No quiesce. */
struct uprobes_proc *uprobes_proc_setup(struct utrace_uprobes *up, pid_t pid, bool arm_specs)
{
	struct uprobes_proc *pp = uprobes_proc_new(up, pid);
	int err;

	if (!pp)
		return NULL;
	err = uprobes_proc_refresh_image(pp);
	if (err) {
		pr_warn("process %d: cannot read its image: %s\n", pid, strerror(-err));
		uprobes_proc_free(pp);
		return NULL;
	}
	uprobes_proc_arm_rbrk(pp);
	if (arm_specs)
		uprobes_proc_arm_all_specs(pp);
	return pp;
}

/* ------------------------------------------------------------------------ */
/* Hits                                                                      */
/* ------------------------------------------------------------------------ */

/**
 * uprobes_hit_begin - handlers are about to run: defer (un)registration.
 * @up: layer
 */
void uprobes_hit_begin(struct utrace_uprobes *up)
{
	if (!up->hit_depth++)
		up->hit_seq++;
}

/* Does @p run for the current hit? Not once dead, except in the hit it died in. */
static bool probe_runs(const struct utrace_uprobes *up, const struct utrace_probe *p)
{
	return !p->dead || (p->dead_hit && p->dead_hit == up->hit_seq && up->hit_depth);
}

/**
 * uprobes_hit_end - the handlers of a hit have run; the outermost hit runs
 * the deferred requests and their completion callbacks. May quiesce the
 * process (nested hits of other threads are then handled in between).
 * @up: layer
 */
void uprobes_hit_end(struct utrace_uprobes *up)
{
	if (--up->hit_depth || up->in_deferred)
		return;
	up->in_deferred = true;
	while (up->deferred) {
		struct uprobes_deferred *d = up->deferred;
		struct utrace_probe *p = d->p;
		bool reg;
		int err;

		up->deferred = d->next;
		if (!up->deferred)
			up->deferred_tail = &up->deferred;
		reg = d->reg;
		free(d);
		if (reg) {
			if (p->dead) {
				/* unregistered before it was armed */
				if (p->opts.done)
					p->opts.done(p, -ECANCELED, p->opts.data);
				continue;
			}
			err = uprobes_do_register(p);
			if (err)
				uprobes_do_unregister(p);
			p->registered = !err;
			if (p->opts.done)
				p->opts.done(p, err, p->opts.data);
			if (err)
				uprobes_probe_free(p);
		} else {
			err = uprobes_do_unregister(p);
			if (p->opts.done)
				p->opts.done(p, err, p->opts.data);
			uprobes_probe_free(p);
		}
	}
	up->in_deferred = false;
}

/* ------------------------------------------------------------------------ */
/* Built-in actions run in the tracer                                        */
/* ------------------------------------------------------------------------ */

/*
 * With a backend whose hits stop in the tracer (ptrace), the built-in
 * actions of probe.h run here, at the stop, with the same rules as the
 * agent's in-target ones (agent/dispatch.c) so that the figures agree:
 * COUNT counts entries and, with an err_kind, error returns; HIST times
 * entry to return with the entry's timestamp; INJECT takes every Nth call
 * (the Nth, 2Nth ...) and counts an injected error value as an error.
 */

static const char *rec_str(struct utrace_probe_ctx *ctx, uint64_t addr, unsigned int max,
			   char **owned, size_t *len, unsigned int *flags)
{
	char *buf = malloc(max + 2);
	ssize_t n;

	*owned = NULL;
	*len = 0;
	*flags = 0;
	if (!buf)
		return NULL;
	n = utrace_probe_ctx__read_str(ctx, addr, buf, max + 2);
	if (n < 0) {
		free(buf);
		*flags = UTRACE_REC_STR_FAULT;
		return NULL;
	}
	if ((size_t)n > max) {
		n = max;
		buf[n] = 0;
		*flags = UTRACE_REC_STR_TRUNC;
	}
	*owned = buf;
	*len = (size_t)n;
	return buf;
}

void uprobes_rec_free(struct uprobes_rec *q)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(q->strs); i++)
		free(q->strs[i]);
	free(q->name);
	free(q->symbol);
	free(q->object);
	free(q->mem);
	free(q->stack_data);
	free(q);
}

/* Queue @q; the oldest record goes when the queue is full (counted). */
void uprobes_rec_queue(struct utrace_uprobes *up, struct uprobes_rec *q)
{
	if (up->rq_len >= UPROBES_RQ_MAX) {
		struct uprobes_rec *old = up->rq;

		up->rq = old->next;
		if (!up->rq)
			up->rq_tail = &up->rq;
		up->rq_len--;
		up->rq_lost++;
		uprobes_rec_free(old);
	}
	if (!up->rq_tail)
		up->rq_tail = &up->rq;
	*up->rq_tail = q;
	up->rq_tail = &q->next;
	up->rq_len++;
}

static struct uprobes_rec *rec_new(struct utrace_probe *p, struct utrace_probe_ctx *ctx, int type)
{
	struct uprobes_rec *q = calloc(1, sizeof(*q));

	if (!q) {
		p->up->rq_lost++;
		return NULL;
	}
	q->r.sz = sizeof(q->r);
	q->r.type = type;
	q->r.pid = ctx->pid;
	q->r.tid = ctx->tid;
	q->r.ts_ns = ctx->now_ns;
	q->r.probe = p;
	q->r.addr = ctx->point->addr;
	q->name = ctx->point->name ? strdup(ctx->point->name) : NULL;
	q->r.name = q->name;
	q->symbol = ctx->point->symbol ? strdup(ctx->point->symbol) : NULL;
	q->r.symbol = q->symbol;
	q->object = ctx->point->object ? strdup(ctx->point->object) : NULL;
	q->r.object = q->object;
	q->r.offset = ctx->point->offset;
	q->r.depth = ctx->depth;
	return q;
}

/*
 * ACT_STACK in the tracer without a CFI unwinder (built without libdw, or
 * libdw could not start on the process): the return address at [rsp] (the
 * call just wrote it: the probe is at a function entry), then the
 * frame-pointer chain, each frame above the last (so the walk ends), at
 * most UTRACE_REC_MAX_STACK; code built without frame pointers ends it
 * early.
 */
static unsigned int walk_fp(struct utrace_probe_ctx *ctx, uint64_t *pcs)
{
	uint64_t fp = ctx->regs->rbp, frame[2];
	unsigned int n = 0;

	if (utrace_mem__read(ctx->pid, ctx->regs->rsp, &pcs[0], 8) == 8)
		n++;
	while (n < UTRACE_REC_MAX_STACK && fp > ctx->regs->rsp && !(fp & 7) &&
	       utrace_mem__read(ctx->pid, fp, frame, sizeof(frame)) == sizeof(frame) && frame[1]) {
		pcs[n++] = frame[1];
		if (frame[0] <= fp)
			break;
		fp = frame[0];
	}
	return n;
}

static uint64_t unwind_fix(void *ctx, uint64_t slot, uint64_t value)
{
	return utrace_probe_ctx__real_return(ctx, slot, value);
}

/*
 * ACT_STACK in the tracer, the thread stopped at its hit: libdw's CFI
 * unwinder (unwind.c) from its registers, so that code built without
 * frame pointers (Debian's libc, -O2 programs) is walked through, as gdb's
 * bt walks it; the return probes' trampolines seen through (unwind_fix()).
 * One unwinder per process, made at its first stack (freed with the
 * process's state: at its exec, its exit), on /proc/PID/maps: it reads
 * them anew itself after a dlopen. The callers only: the
 * first frame, the probed function's, is not one. Return: the frames in
 * @pcs, at most UTRACE_REC_MAX_STACK.
 */
static unsigned int walk_stack(struct utrace_probe *p, struct utrace_probe_ctx *ctx, uint64_t *pcs)
{
	struct uprobes_proc *pp = uprobes_proc_find(p->up, ctx->pid);
	uint64_t all[UTRACE_REC_MAX_STACK + 1];
	bool act[UTRACE_REC_MAX_STACK + 1];
	int n, i;

	if (pp && !pp->unwind && !pp->unwind_tried) {
		char why[256];

		pp->unwind_tried = true;
		pp->unwind = utrace_unwind__new(pp->pid, NULL, why, sizeof(why));
		if (!pp->unwind)
			pr_info("stacks of pid %d by frame pointers only: %s\n", (int)pp->pid, why);
	}
	if (!pp || !pp->unwind)
		return walk_fp(ctx, pcs);
	n = utrace_unwind__stack(pp->unwind, ctx->tid, ctx->regs, unwind_fix, ctx, all, act,
				 UTRACE_REC_MAX_STACK + 1);
	if (n <= 1)
		return walk_fp(ctx, pcs);
	for (i = 1; i < n; i++)
		pcs[i - 1] = all[i];
	return (unsigned int)n - 1;
}

static void builtin_entry(struct utrace_probe *p, const struct utrace_point_opts *po,
			  struct utrace_probe_counts *cnt, struct utrace_probe_ctx *ctx)
{
	unsigned int a = p->opts.actions, i, max = p->opts.str_max ? p->opts.str_max : 32;
	uint64_t every = p->opts.inject_every ? p->opts.inject_every : 1;

	if (a & UTRACE_ACT_COUNT)
		cnt->calls++;
	if (a & UTRACE_ACT_RECORD) {
		struct uprobes_rec *q = rec_new(p, ctx, UTRACE_REC_ENTRY);

		if (q) {
			q->r.nargs = po->nargs;
			for (i = 0; i < 6; i++) {
				q->r.args[i] = utrace_probe_ctx__arg(ctx, i);
				if (i < po->nargs && (po->str_args & (1U << i)))
					q->r.str[i] = rec_str(ctx, q->r.args[i], max, &q->strs[i],
							      &q->r.str_len[i], &q->r.str_flags[i]);
			}
			if (a & UTRACE_ACT_STACK) {
				q->r.stack = q->stack;
				q->r.nr_stack = walk_stack(p, ctx, q->stack);
			}
			uprobes_rec_queue(p->up, q);
		}
	}
	if ((a & UTRACE_ACT_INJECT) && ++p->inject_calls % every == 0 &&
	    utrace_probe_ctx__set_return(ctx, p->opts.inject_value) == 0) {
		cnt->injected++;
		if (utrace_abi_is_error((unsigned int)po->err_kind, p->opts.inject_value))
			cnt->errors++;
		if (a & UTRACE_ACT_RECORD) { /* its return, as the agent gives it */
			struct uprobes_rec *q = rec_new(p, ctx, UTRACE_REC_RETURN);

			if (q) {
				q->r.retval = p->opts.inject_value;
				q->r.flags = UTRACE_REC_F_INJECTED;
				uprobes_rec_queue(p->up, q);
			}
		}
		if (a & UTRACE_ACT_HIST) { /* as the agent: an injected call is a 0 ns call */
			cnt->min_ns = 0;
			cnt->timed++;
			cnt->hist[0]++;
		}
	}
}

static void builtin_return(struct utrace_probe *p, const struct utrace_point_opts *po,
			   struct utrace_probe_counts *cnt, struct utrace_probe_ctx *ctx,
			   uint64_t entry_ns)
{
	unsigned int a = p->opts.actions, max = p->opts.str_max ? p->opts.str_max : 32;
	uint64_t rax = utrace_probe_ctx__retval(ctx);
	uint64_t dur = entry_ns && ctx->now_ns >= entry_ns ? ctx->now_ns - entry_ns : 0;

	if (a & (UTRACE_ACT_COUNT | UTRACE_ACT_HIST))
		cnt->returns++;
	if ((a & UTRACE_ACT_COUNT) && utrace_abi_is_error((unsigned int)po->err_kind, rax))
		cnt->errors++;
	if ((a & UTRACE_ACT_HIST) && entry_ns) {
		if (!cnt->timed || dur < cnt->min_ns)
			cnt->min_ns = dur;
		if (dur > cnt->max_ns)
			cnt->max_ns = dur;
		cnt->timed++;
		cnt->sum_ns += dur;
		cnt->hist[utrace_abi_hist_bucket(dur)]++;
	}
	if (a & UTRACE_ACT_RECORD) {
		struct uprobes_rec *q = rec_new(p, ctx, UTRACE_REC_RETURN);

		if (q) {
			q->r.retval = rax;
			q->r.dur_ns = dur;
			if (po->str_args & (1U << 6))
				q->r.ret_str = rec_str(ctx, rax, max, &q->strs[6],
						       &q->r.ret_str_len, &q->r.ret_str_flags);
			uprobes_rec_queue(p->up, q);
		}
	}
}

/**
 * uprobes_run_entry - run the entry handlers of @pt in registration order.
 * @pt: the point hit
 * @ctx: context (regs, pid, tid, now_ns filled by the backend)
 *
 * Called between uprobes_hit_begin() and uprobes_hit_end().
 */
void uprobes_run_entry(struct probe_point *pt, struct utrace_probe_ctx *ctx)
{
	unsigned int i;

	ctx->point = &pt->info;
	ctx->is_return = false;
	/* the list may not change during the hit: changes are deferred */
	for (i = 0; i < pt->nr_probes; i++) {
		struct utrace_probe *p = pt->probes[i];

		if (!probe_runs(p->up, p))
			continue;
		p->hits++;
		ctx->probe = p;
		if (p->opts.actions && !p->opts.retprobe)
			builtin_entry(p, &pt->popts[i], &pt->pcnt[i], ctx);
		if (!p->opts.handler || p->opts.retprobe)
			continue;
		if (p->opts.handler(ctx, p->opts.data) == UTRACE_PROBE_REMOVE)
			utrace_probe__unregister(p);
	}
}

/**
 * uprobes_run_return - run the return handlers for instance @ri.
 * @pp: process
 * @ri: the return instance being completed
 * @ctx: context (regs already show the return; ret_addr and entry_ns set)
 */
void uprobes_run_return(struct uprobes_proc *pp, const struct utrace_return_instance *ri,
			struct utrace_probe_ctx *ctx)
{
	struct probe_point *pt = uprobes_point_find(pp, ri->func);
	unsigned int i;

	if (!pt)
		return; /* every probe there was unregistered meanwhile */
	ctx->point = &pt->info;
	ctx->is_return = true;
	for (i = 0; i < pt->nr_probes; i++) {
		struct utrace_probe *p = pt->probes[i];
		utrace_handler_fn_t fn;

		if (!probe_runs(p->up, p))
			continue;
		fn = p->opts.retprobe ? p->opts.handler : p->opts.ret_handler;
		if (!fn && !(p->opts.actions && uprobes_probe_has_return(p)))
			continue;
		p->returns++;
		ctx->probe = p;
		ctx->entry_ns = p->opts.retprobe ? 0 : ri->entry_ns;
		if (p->opts.actions)
			builtin_return(p, &pt->popts[i], &pt->pcnt[i], ctx, ctx->entry_ns);
		if (fn && fn(ctx, p->opts.data) == UTRACE_PROBE_REMOVE)
			utrace_probe__unregister(p);
	}
}

/**
 * uprobes_missed_return - count a return that will not be reported (depth
 * overflow, or the frame was unwound past by longjmp or an exception).
 * @pp: process
 * @func: the probe point of the function
 */
void uprobes_missed_return(struct uprobes_proc *pp, uint64_t func)
{
	struct probe_point *pt = uprobes_point_find(pp, func);
	unsigned int i;

	pp->up->stats.missed_returns++;
	if (!pt)
		return;
	for (i = 0; i < pt->nr_probes; i++) {
		struct utrace_probe *p = pt->probes[i];

		/*
		 * every probe with a return half (probe.h's rules: a handler,
		 * a retprobe, a module's, or built-in actions): a COUNT|HIST
		 * probe's longjmp-ed return was counted nowhere before
		 * (utrace_probe__counts() said 0 missed of 5)
		 */
		if (!p->dead && uprobes_probe_has_return(p))
			p->missed_returns++;
	}
}
