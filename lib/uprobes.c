/* SPDX-License-Identifier: MIT */
/*
 * uprobes.c - the probe registry: probes, probe points, SPEC resolution per
 * process, pending objects, deferred (un)registration and the process life
 * cycle (fork, exec, exit, dlopen/dlclose). Backend-independent; the
 * breakpoints themselves are written by the backend (backend-ptrace.c).
 * Runs in the tracer process, in the session's tracing thread.
 *
 * DESIGN
 *
 * Objects. A probe (struct utrace_probe) is a handler bound to a SPEC or to
 * one (pid, address). A probe point (struct probe_point) is one breakpoint
 * in one process, keyed by (pid, runtime address) in a per-process hash; it
 * holds the probes that resolve to that address, sorted by registration
 * sequence, so handlers run in registration order whatever the order in
 * which processes and objects were discovered. Any number of probes share a
 * point; the breakpoint goes when the last one leaves.
 *
 * Resolution. Each process keeps a utrace_image of the objects it has
 * mapped and a site planner on it. A SPEC is resolved against that image;
 * each match is planned (jmp/int3/refused: this backend always uses int3,
 * it only needs the site not to be refused) and armed. utrace_image__resolve
 * tells whether the SPEC names an object that is not loaded: the probe then
 * stays pending on that process.
 *
 * Libraries loaded later. We chose the dynamic linker's notification
 * breakpoint over re-scanning the maps at mmap syscall exits: ld.so calls
 * _dl_debug_state() (the r_brk of struct r_debug, the function debuggers
 * break on) after every change of the link map: RT_ADD before mapping,
 * RT_CONSISTENT once the object is mapped and relocated but before its
 * initialisers run, RT_DELETE/RT_CONSISTENT around dlclose. An internal
 * probe point on it costs one trap per dlopen/dlclose instead of two
 * syscall stops for every system call of the process (syscall stops are
 * all-or-nothing per thread with ptrace), and it fires at the exact moment
 * new code becomes valid. At each notification the image is rebuilt from
 * /proc/PID/maps; points whose object went away are dropped without
 * touching memory (something else may be mapped there now), and every SPEC
 * is resolved again (arming is idempotent), which arms pending objects.
 * Writing those breakpoints does not quiesce the process: no thread can be
 * running in an object whose dlopen() has not returned yet.
 *
 * Unwind guards. Once a return probe applies to a process, internal points
 * go on the unwinders' entry points (_Unwind_RaiseException and friends,
 * libc's pthread_exit; proc_arm_unwind_guards()): the backend writes the
 * hitting thread's hijacked return addresses back before the unwinder
 * walks its stack. libgcc_s is often loaded later: its guards are armed
 * like pending SPECs, at the dlopen notification that maps it, and are
 * forgotten with it at dlclose (r_brk is never forgotten).
 *
 * Deferral. While handlers run (hit_depth > 0), register and unregister
 * only queue the request; uprobes_hit_end() of the outermost hit runs the
 * queue and calls opts->done. A probe unregistered that way is marked dead
 * at once, so that the remaining handlers of the same hit skip it.
 *
 * Life cycle. exec: the old address space is gone, so the points are
 * freed without writing memory, owners are told (UTRACE_DROP_EXEC), and the
 * SPEC probes are armed again in the new image (the exec'ing thread is the
 * only one and it is stopped). exit: the same without re-arming. fork: the
 * child's copy of the breakpoints is removed before the child runs (the
 * session holds an unfollowed child until the parent's fork event); the
 * return addresses the parent had redirected to the trampoline are put
 * back in the child's stack copy; a followed child then gets the SPEC
 * probes as a new process, reusing the XOL areas it inherited.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "utrace/proc.h"
#include "utrace/probe.h"
#include "internal.h"
#include "uprobes.h"

#define offsetofend(TYPE, FIELD) (offsetof(TYPE, FIELD) + sizeof(((TYPE *)0)->FIELD))

static bool opts_tail_zero(const void *opts, size_t known, size_t sz)
{
	const char *p = opts;
	size_t i;

	for (i = known; i < sz; i++)
		if (p[i])
			return false;
	return true;
}

#define OPTS_VALID(opts, type)                                                     \
	(!(opts) || ((opts)->sz >= offsetofend(struct type, type##__last_field) && \
		     opts_tail_zero((opts), sizeof(struct type), (opts)->sz)))

static const char *const backend_names[] = {
	[UTRACE_BACKEND_AUTO] = "auto",
	[UTRACE_BACKEND_AGENT] = "agent",
	[UTRACE_BACKEND_PTRACE] = "ptrace",
	[UTRACE_BACKEND_KERNEL] = "kernel",
};

const char *utrace_backend_str(enum utrace_backend b)
{
	if ((unsigned int)b >= __UTRACE_BACKEND_MAX)
		return "unknown";
	return backend_names[b];
}

/**
 * uprobes_now_ns - CLOCK_MONOTONIC in nanoseconds.
 *
 * Return: the time; no failure.
 */
uint64_t uprobes_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static unsigned int hash_addr(uint64_t addr)
{
	return (unsigned int)((addr ^ (addr >> 12) ^ (addr >> 24)) % PROC_HASH);
}

/* ------------------------------------------------------------------------ */
/* Processes, points, tasks                                                  */
/* ------------------------------------------------------------------------ */

/**
 * uprobes_proc_find - the probe state of process @pid, or NULL.
 * @up: layer
 * @pid: process id
 *
 * Return: borrowed pointer or NULL. A followed vfork child is its own
 * entry (whose vfork_parent names the process whose points it shares).
 */
struct uprobes_proc *uprobes_proc_find(struct utrace_uprobes *up, pid_t pid)
{
	struct uprobes_proc *pp;

	for (pp = up->procs; pp; pp = pp->next)
		if (pp->pid == pid)
			return pp;
	return NULL;
}

/**
 * uprobes_point_find - the probe point at @addr in @pp, or NULL.
 * @pp: process
 * @addr: runtime address
 *
 * Return: borrowed pointer or NULL. No allocation.
 */
struct probe_point *uprobes_point_find(struct uprobes_proc *pp, uint64_t addr)
{
	struct probe_point *pt;

	for (pt = pp->points[hash_addr(addr)]; pt; pt = pt->hnext)
		if (pt->addr == addr)
			return pt;
	return NULL;
}

/**
 * uprobes_task_get - the per-thread state of @tid in @pp.
 * @pp: process
 * @tid: thread id
 * @create: allocate it if missing
 *
 * Return: borrowed pointer; NULL if missing (or out of memory).
 */
struct utrace_task *uprobes_task_get(struct uprobes_proc *pp, pid_t tid, bool create)
{
	unsigned int h = (unsigned int)tid % PROC_HASH;
	struct utrace_task *t;

	for (t = pp->tasks[h]; t; t = t->hnext)
		if (t->tid == tid)
			return t;
	if (!create)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->ri = calloc(pp->up->max_depth, sizeof(*t->ri));
	if (!t->ri) {
		free(t);
		return NULL;
	}
	t->tid = tid;
	t->hnext = pp->tasks[h];
	pp->tasks[h] = t;
	return t;
}

/**
 * uprobes_task_exit - forget thread @tid of @pp (it exited). Its pending
 * return instances die with its stack.
 * @pp: process
 * @tid: thread id
 */
void uprobes_task_exit(struct uprobes_proc *pp, pid_t tid)
{
	struct utrace_task **tp = &pp->tasks[(unsigned int)tid % PROC_HASH];

	while (*tp) {
		struct utrace_task *t = *tp;

		if (t->tid == tid) {
			*tp = t->hnext;
			free(t->ri);
			free(t);
			return;
		}
		tp = &t->hnext;
	}
}

static void tasks_free(struct uprobes_proc *pp)
{
	unsigned int i;

	for (i = 0; i < PROC_HASH; i++) {
		while (pp->tasks[i]) {
			struct utrace_task *t = pp->tasks[i];

			pp->tasks[i] = t->hnext;
			free(t->ri);
			free(t);
		}
	}
}

/**
 * uprobes_point_wants_return - true if a live probe at @pt has a return
 * handler (or is a return probe).
 * @pt: probe point
 */
bool uprobes_point_wants_return(const struct probe_point *pt)
{
	unsigned int i;

	/* the ELF entry point is jumped to, not called: [rsp] is argc, not a return */
	if (pt->entry && pt->symbol && !strcmp(pt->symbol, "_start"))
		return false;

	for (i = 0; i < pt->nr_probes; i++) {
		const struct utrace_probe *p = pt->probes[i];

		if (!p->dead && (p->opts.ret_handler || p->opts.retprobe))
			return true;
	}
	return false;
}

static void point_free(struct probe_point *pt)
{
	free(pt->probes);
	free(pt->object);
	free(pt->symbol);
	free(pt->name);
	free(pt);
}

static void point_unlink(struct uprobes_proc *pp, struct probe_point *pt)
{
	struct probe_point **pp_ = &pp->points[hash_addr(pt->addr)];

	for (; *pp_; pp_ = &(*pp_)->hnext) {
		if (*pp_ == pt) {
			*pp_ = pt->hnext;
			pp->nr_points--;
			if (pt->armed && pp->up->stats.points)
				pp->up->stats.points--;
			return;
		}
	}
}

static void remember_removed(struct uprobes_proc *pp, uint64_t addr)
{
	pp->removed[pp->nr_removed % ARRAY_SIZE(pp->removed)] = addr;
	pp->nr_removed++;
}

/* Tell every probe of @pt that the point is gone; detach them from it. */
static void point_drop_probes(struct uprobes_proc *pp, struct probe_point *pt,
			      enum utrace_drop_reason why)
{
	unsigned int i;

	for (i = 0; i < pt->nr_probes; i++) {
		struct utrace_probe *p = pt->probes[i];

		if (p->points)
			p->points--;
		if (p->opts.dropped && !p->dead)
			p->opts.dropped(p, pp->pid, why, p->opts.data);
	}
	pt->nr_probes = 0;
}

/* Free a point whose memory is gone (exec, exit, unload): no write. */
static void point_forget(struct uprobes_proc *pp, struct probe_point *pt,
			 enum utrace_drop_reason why)
{
	point_drop_probes(pp, pt, why);
	point_unlink(pp, pt);
	point_free(pt);
}

static void proc_forget_points(struct uprobes_proc *pp, enum utrace_drop_reason why)
{
	unsigned int i;

	for (i = 0; i < PROC_HASH; i++)
		while (pp->points[i])
			point_forget(pp, pp->points[i], why);
}

static void proc_free(struct uprobes_proc *pp)
{
	struct uprobes_proc **l;

	for (l = &pp->up->procs; *l; l = &(*l)->next) {
		if (*l == pp) {
			*l = pp->next;
			break;
		}
	}
	tasks_free(pp);
	xol_forget(pp);
	utrace_planner__free(pp->planner);
	utrace_image__close(pp->img);
	free(pp);
}

static struct uprobes_proc *proc_new(struct utrace_uprobes *up, pid_t pid)
{
	struct uprobes_proc *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return NULL;
	pp->up = up;
	pp->pid = pid;
	pp->next = up->procs;
	up->procs = pp;
	return pp;
}

/* (Re)build the image of @pp from its maps. */
static int proc_refresh_image(struct uprobes_proc *pp)
{
	struct utrace_image *img = utrace_image__open_pid(pp->pid);
	struct utrace_planner *pl;

	if (!img)
		return -errno;
	pl = utrace_planner__new(img);
	if (!pl) {
		int err = -errno;

		utrace_image__close(img);
		return err;
	}
	utrace_planner__free(pp->planner);
	utrace_image__close(pp->img);
	pp->img = img;
	pp->planner = pl;
	return 0;
}

/* The object of @img containing runtime address @addr (by its maps). */
static int image_find_object(struct utrace_image *img, const struct utrace_maps *maps,
			     uint64_t addr, size_t *ret_idx)
{
	const struct utrace_map *m = utrace_maps__find(maps, addr);
	size_t i, n = utrace_image__object_count(img);

	if (!m || !m->path || !(m->prot & UTRACE_MAP_EXEC))
		return -EFAULT;
	for (i = 0; i < n; i++) {
		const struct utrace_object *o = utrace_image__object(img, i);
		struct utrace_elf *elf;
		uint64_t off;

		if (!o || !o->live)
			continue;
		elf = utrace_image__elf(img, i);
		if (!elf)
			continue;
		/* the file offset of @addr must match the mapping's */
		if (utrace_elf__file_offset(elf, addr - o->bias, &off) == 0 &&
		    off == addr - m->start + m->offset) {
			*ret_idx = i;
			return 0;
		}
	}
	return -EFAULT;
}

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
}

/*
 * Get the point for match @m in @pp, creating and arming it if needed.
 * Returns 0 with *ret_pt set; -UTRACE_ERRNO__NOT_PATCHABLE if the planner
 * refuses the site (@why filled); negative errno otherwise.
 */
static int point_get(struct uprobes_proc *pp, const struct utrace_match *m, bool internal,
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
		if (!internal && pt->internal)
			pt->internal = false; /* the r_brk is also probed by the user */
		*ret_pt = pt;
		return 0;
	}
	pt = calloc(1, sizeof(*pt));
	if (!pt)
		return -ENOMEM;
	pt->proc = pp;
	pt->addr = plan.addr;
	pt->internal = internal;
	n = utrace_mem__read(pp->pid, pt->addr, pt->orig, sizeof(pt->orig));
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
	if (pt->orig[0] == 0xcc) {
		/* someone else's breakpoint (a debugger): not ours to displace */
		snprintf(why, whylen, "an int3 is already there");
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
	err = ptrace_backend_arm(pp, pt);
	if (err) {
		point_free(pt);
		return err;
	}
	pt->hnext = pp->points[hash_addr(pt->addr)];
	pp->points[hash_addr(pt->addr)] = pt;
	pp->nr_points++;
	pp->up->stats.points++;
	*ret_pt = pt;
	return 0;
}

/* Insert @p in @pt's handler list, in registration order. */
static int point_add_probe(struct probe_point *pt, struct utrace_probe *p)
{
	unsigned int i;

	for (i = 0; i < pt->nr_probes; i++)
		if (pt->probes[i] == p)
			return 0;
	if (pt->nr_probes == pt->cap_probes) {
		unsigned int cap = pt->cap_probes ? pt->cap_probes * 2 : 2;
		struct utrace_probe **n = realloc(pt->probes, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		pt->probes = n;
		pt->cap_probes = cap;
	}
	for (i = pt->nr_probes; i > 0 && pt->probes[i - 1]->seq > p->seq; i--)
		pt->probes[i] = pt->probes[i - 1];
	pt->probes[i] = p;
	pt->nr_probes++;
	p->points++;
	return 0;
}

/* Remove the breakpoint of @pt (process alive) and free it. */
static int point_remove(struct uprobes_proc *pp, struct probe_point *pt)
{
	int err = 0;

	if (pt->armed)
		err = ptrace_backend_disarm(pp, pt, true);
	remember_removed(pp, pt->addr);
	point_unlink(pp, pt);
	point_free(pt);
	return err;
}

/*
 * A probe with a return half cannot go where return probes are refused
 * (Go code): -UTRACE_ERRNO__NOT_PATCHABLE with @why, before anything is
 * armed. Entry-only probes can.
 */
static int ret_refused(struct uprobes_proc *pp, const struct utrace_probe *p,
		       const struct utrace_match *m, char *why, size_t whylen)
{
	const char *r;

	if (!p->opts.ret_handler && !p->opts.retprobe)
		return 0;
	r = utrace_plan__ret_refused(pp->img, m);
	if (!r)
		return 0;
	snprintf(why, whylen, "%s", r);
	return -UTRACE_ERRNO__NOT_PATCHABLE;
}

/* Arm SPEC probe @p in @pp. Return: points added, or negative errno. */
static int proc_arm_spec(struct uprobes_proc *pp, struct utrace_probe *p, bool *ret_pending)
{
	struct utrace_match *m = NULL;
	size_t nr = 0, i;
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

		why[0] = 0;
		err = ret_refused(pp, p, &m[i], why, sizeof(why));
		if (!err)
			err = point_get(pp, &m[i], false, &pt, why, sizeof(why));
		if (!err)
			err = point_add_probe(pt, p);
		if (err) {
			if (!first_err)
				first_err = err;
			if (!p->warned) {
				char ebuf[128];

				utrace_strerror(err, ebuf, sizeof(ebuf));
				pr_warn("probe '%s': cannot probe %s in process %d: %s%s%s\n",
					p->name, m[i].symbol ? m[i].symbol : "address", pp->pid,
					ebuf, why[0] ? ": " : "", why);
			}
			continue;
		}
		armed++;
	}
	if (first_err)
		p->warned = true;
	free(m);
	if (ret_pending)
		*ret_pending = pending;
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
static void proc_arm_rbrk(struct uprobes_proc *pp)
{
	size_t i, n = utrace_image__object_count(pp->img);
	char why[200];

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
			if (point_get(pp, &m, true, &pt, why, sizeof(why)) == 0)
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
		if (!p->dead && (p->opts.ret_handler || p->opts.retprobe) &&
		    (p->is_spec || p->pid == pp->pid))
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
 * (ptrace_backend_unwind_begin()). Objects not loaded yet (libgcc_s) are
 * armed by the next call, at the dlopen notification that maps them:
 * idempotent, like SPEC arming. Guards stay until detach, exec or exit
 * (instances may outlive their probe). Same conditions as SPEC arming:
 * @pp quiesced, or no thread able to run in the objects concerned.
 */
static void proc_arm_unwind_guards(struct uprobes_proc *pp)
{
	unsigned int g;

	if (!pp->img || pp->vfork_parent || !proc_has_retprobe(pp))
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

				if (point_get(pp, &m[i], true, &pt, why, sizeof(why)) == 0) {
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
static void proc_arm_all_specs(struct uprobes_proc *pp)
{
	struct utrace_probe *p;

	for (p = pp->up->probes; p; p = p->next)
		if (p->is_spec && !p->dead && p->registered)
			proc_arm_spec(pp, p, NULL);
	proc_arm_unwind_guards(pp);
}

/* Start tracking process @pid: image, r_brk, SPEC probes. No quiesce. */
static struct uprobes_proc *proc_setup(struct utrace_uprobes *up, pid_t pid, bool arm_specs)
{
	struct uprobes_proc *pp = proc_new(up, pid);
	int err;

	if (!pp)
		return NULL;
	err = proc_refresh_image(pp);
	if (err) {
		pr_warn("process %d: cannot read its image: %s\n", pid, strerror(-err));
		proc_free(pp);
		return NULL;
	}
	proc_arm_rbrk(pp);
	if (arm_specs)
		proc_arm_all_specs(pp);
	return pp;
}

/* A process the session traces and we may arm (not before its exec). */
static bool pid_armable(struct utrace_uprobes *up, pid_t pid)
{
	struct utrace_thread *th = utrace_session__find_thread(up->s, pid);

	if (!th || utrace_thread__pid(th) != pid)
		return false; /* not traced, or a thread id */
	return !th->proc->hide_pre_exec && !th->proc->hidden && !th->proc->detach_new;
}

/* Distinct traced pids of the session. Caller frees. */
static int session_pids(struct utrace_uprobes *up, pid_t **ret)
{
	struct utrace_thread **ths;
	pid_t *pids;
	int n, i, k, nr = 0;

	n = utrace_session__threads(up->s, 0, NULL, 0);
	if (n < 0)
		return n;
	ths = calloc((size_t)n + 1, sizeof(*ths));
	pids = calloc((size_t)n + 1, sizeof(*pids));
	if (!ths || !pids) {
		free(ths);
		free(pids);
		return -ENOMEM;
	}
	n = MIN(n, utrace_session__threads(up->s, 0, ths, (size_t)n));
	for (i = 0; i < n; i++) {
		pid_t pid = utrace_thread__pid(ths[i]);

		for (k = 0; k < nr && pids[k] != pid; k++)
			;
		if (k == nr)
			pids[nr++] = pid;
	}
	free(ths);
	*ret = pids;
	return nr;
}

/* ------------------------------------------------------------------------ */
/* Registration                                                              */
/* ------------------------------------------------------------------------ */

static void probe_free(struct utrace_probe *p)
{
	struct utrace_uprobes *up = p->up;
	struct utrace_probe **l;

	for (l = &up->probes; *l; l = &(*l)->next) {
		if (*l == p) {
			*l = p->next;
			break;
		}
	}
	up->probes_tail = &up->probes;
	while (*up->probes_tail)
		up->probes_tail = &(*up->probes_tail)->next;
	utrace_spec__clear(&p->spec);
	free(p->name);
	free(p);
}

/* Remove @p from every point of @pp; quiesces if a breakpoint must go. */
static int proc_remove_probe(struct uprobes_proc *pp, struct utrace_probe *p, bool quiesce)
{
	unsigned int i, k;
	bool stopped = false;
	int ret = 0;

	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt, *next;

		for (pt = pp->points[i]; pt; pt = next) {
			next = pt->hnext;
			for (k = 0; k < pt->nr_probes && pt->probes[k] != p; k++)
				;
			if (k == pt->nr_probes)
				continue;
			memmove(&pt->probes[k], &pt->probes[k + 1],
				(pt->nr_probes - k - 1) * sizeof(*pt->probes));
			pt->nr_probes--;
			if (p->points)
				p->points--;
			if (pt->nr_probes || pt->internal || pt->addr == pp->r_brk || pt->unwind) {
				/* r_brk or an unwind guard probed by the user too: ours again */
				pt->internal = pt->internal || pt->addr == pp->r_brk || pt->unwind;
				continue;
			}
			if (quiesce && !stopped) {
				int r = ptrace_backend_quiesce(pp);

				if (r < 0 && !ret)
					ret = r;
				stopped = true;
			}
			{
				int r = point_remove(pp, pt);

				if (r < 0 && !ret)
					ret = r;
			}
		}
	}
	if (stopped)
		ptrace_backend_resume(pp);
	return ret;
}

static int do_unregister(struct utrace_probe *p)
{
	struct utrace_uprobes *up = p->up;
	struct uprobes_proc *pp;
	int ret = 0;

	for (pp = up->procs; pp; pp = pp->next) {
		int r = proc_remove_probe(pp, p, true);

		if (r < 0 && !ret)
			ret = r;
	}
	return ret;
}

/* Arm @p (address or SPEC) where it belongs. */
static int do_register(struct utrace_probe *p)
{
	struct utrace_uprobes *up = p->up;
	struct uprobes_proc *pp;
	int err = 0;

	if (!p->is_spec) {
		struct utrace_maps *maps;
		struct utrace_match m = { 0 };
		struct probe_point *pt = NULL;
		const struct utrace_sym *sym;
		const struct utrace_object *o;
		struct utrace_elf *elf;
		char why[200] = "";
		size_t idx;

		if (!pid_armable(up, p->pid))
			return -ESRCH;
		pp = uprobes_proc_find(up, p->pid);
		if (!pp) {
			pp = proc_setup(up, p->pid, false);
			if (!pp)
				return -ESRCH;
		}
		maps = utrace_maps__read(p->pid);
		if (!maps)
			return -errno;
		err = image_find_object(pp->img, maps, p->addr, &idx);
		if (err) {
			/* mapped after our last look: refresh once */
			if (proc_refresh_image(pp) == 0)
				err = image_find_object(pp->img, maps, p->addr, &idx);
		}
		utrace_maps__free(maps);
		if (err)
			return err;
		o = utrace_image__object(pp->img, idx);
		elf = utrace_image__elf(pp->img, idx);
		if (!o || !elf)
			return -EFAULT;
		m.object = idx;
		m.addr = p->addr;
		m.file_addr = p->addr - o->bias;
		sym = utrace_elf__find_sym(elf, m.file_addr);
		if (sym) {
			m.symbol = sym->name;
			m.sym_size = sym->size;
			m.offset = m.file_addr - sym->addr;
		}
		err = ret_refused(pp, p, &m, why, sizeof(why));
		if (err) {
			pr_warn("probe '%s': cannot probe: %s\n", p->name, why);
			return err;
		}
		err = ptrace_backend_quiesce(pp);
		if (!err) {
			err = point_get(pp, &m, false, &pt, why, sizeof(why));
			if (!err)
				err = point_add_probe(pt, p);
			if (!err)
				proc_arm_unwind_guards(pp);
		}
		ptrace_backend_resume(pp);
		if (err && why[0])
			pr_warn("probe '%s': cannot probe: %s\n", p->name, why);
		if (err && pt && !pt->nr_probes && !pt->internal) {
			ptrace_backend_quiesce(pp);
			point_remove(pp, pt);
			ptrace_backend_resume(pp);
		}
		return err;
	} else {
		pid_t *pids = NULL;
		int n, i, armed = 0, first_err = 0, known = 0;
		bool any_pending = false;

		/* processes the session traces that we have not seen yet */
		n = session_pids(up, &pids);
		for (i = 0; i < n; i++)
			if (!uprobes_proc_find(up, pids[i]) && pid_armable(up, pids[i]))
				proc_setup(up, pids[i], false);
		free(pids);
		for (pp = up->procs; pp; pp = pp->next) {
			bool pending = false;
			int r;

			if (pp->vfork_parent)
				continue;
			known++;
			r = ptrace_backend_quiesce(pp);
			if (!r) {
				r = proc_arm_spec(pp, p, &pending);
				proc_arm_unwind_guards(pp);
			}
			ptrace_backend_resume(pp);
			if (pending)
				any_pending = true;
			if (r > 0)
				armed += r;
			else if (r < 0 && !first_err)
				first_err = r;
		}
		if (!known || armed || any_pending)
			return 0;
		return first_err ? first_err : -UTRACE_ERRNO__NOMATCH;
	}
}

static struct utrace_probe *probe_new(struct utrace_uprobes *up,
				      const struct utrace_probe_opts *opts)
{
	struct utrace_probe *p;

	if (!up || !OPTS_VALID(opts, utrace_probe_opts) || !opts ||
	    (!opts->handler && !opts->ret_handler) || (opts->retprobe && opts->ret_handler)) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(&p->opts, opts, MIN(opts->sz, sizeof(p->opts)));
	p->opts.sz = sizeof(p->opts);
	p->up = up;
	p->seq = ++up->next_seq;
	return p;
}

static void probe_link(struct utrace_probe *p)
{
	struct utrace_uprobes *up = p->up;

	*up->probes_tail = p;
	up->probes_tail = &p->next;
}

static void defer(struct utrace_uprobes *up, struct utrace_probe *p, bool reg)
{
	struct uprobes_deferred *d = calloc(1, sizeof(*d));

	if (!d) {
		/* no memory to queue: do it now (the hit is in a consistent state) */
		if (reg) {
			int err = do_register(p);

			p->registered = !err;
			if (p->opts.done)
				p->opts.done(p, err, p->opts.data);
			if (err)
				probe_free(p);
		} else {
			do_unregister(p);
			probe_free(p);
		}
		return;
	}
	up->stats.deferred++;
	d->p = p;
	d->reg = reg;
	*up->deferred_tail = d;
	up->deferred_tail = &d->next;
}

static struct utrace_probe *finish_register(struct utrace_probe *p)
{
	struct utrace_uprobes *up = p->up;
	int err;

	probe_link(p);
	if (up->hit_depth) {
		defer(up, p, true);
		return p;
	}
	err = do_register(p);
	if (err) {
		do_unregister(p); /* whatever was armed */
		probe_free(p);
		errno = -err;
		return NULL;
	}
	p->registered = true;
	if (p->opts.done)
		p->opts.done(p, 0, p->opts.data);
	return p;
}

struct utrace_probe *utrace_probe__register(struct utrace_uprobes *up, pid_t pid, uint64_t addr,
					    const struct utrace_probe_opts *opts)
{
	struct utrace_probe *p;
	char buf[64];

	if (pid <= 0 || !addr) {
		errno = EINVAL;
		return NULL;
	}
	p = probe_new(up, opts);
	if (!p)
		return NULL;
	p->pid = pid;
	p->addr = addr;
	snprintf(buf, sizeof(buf), "%d:0x%llx", pid, (unsigned long long)addr);
	p->name = strdup(buf);
	if (!p->name) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	return finish_register(p);
}

struct utrace_probe *utrace_probe__register_spec(struct utrace_uprobes *up, const char *spec,
						 const struct utrace_probe_opts *opts)
{
	struct utrace_probe *p;
	char err[256];
	int r;

	if (!spec) {
		errno = EINVAL;
		return NULL;
	}
	p = probe_new(up, opts);
	if (!p)
		return NULL;
	r = utrace_spec__parse(spec, &p->spec, err, sizeof(err));
	if (r) {
		if (err[0])
			pr_warn("%s\n", err);
		free(p);
		errno = -r;
		return NULL;
	}
	p->is_spec = true;
	p->name = strdup(spec);
	if (!p->name) {
		utrace_spec__clear(&p->spec);
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	return finish_register(p);
}

int utrace_probe__unregister(struct utrace_probe *p)
{
	struct utrace_uprobes *up;
	int err;

	if (!p)
		return 0;
	up = p->up;
	if (p->dead)
		return 0;
	p->dead = true;
	if (up->hit_depth) {
		defer(up, p, false);
		return 0;
	}
	err = do_unregister(p);
	probe_free(p);
	return err;
}

const char *utrace_probe__name(const struct utrace_probe *p)
{
	return p ? p->name : NULL;
}

int utrace_probe__stats(const struct utrace_probe *p, struct utrace_probe_stats *st)
{
	struct uprobes_proc *pp;

	if (!p || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->hits = p->hits;
	st->returns = p->returns;
	st->missed_returns = p->missed_returns;
	st->points = p->points;
	if (p->is_spec) {
		for (pp = p->up->procs; pp; pp = pp->next) {
			struct utrace_match *m = NULL;
			size_t nr = 0;
			bool pending = false;

			if (pp->img && !pp->vfork_parent &&
			    utrace_image__resolve(pp->img, &p->spec, &m, &nr, &pending) == 0 &&
			    pending)
				st->pending++;
			free(m);
		}
	}
	return 0;
}

int utrace_uprobes__stats(const struct utrace_uprobes *up, struct utrace_uprobes_stats *st)
{
	if (!up || !st)
		return -EINVAL;
	*st = up->stats;
	return 0;
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
	up->hit_depth++;
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
			err = do_register(p);
			if (err)
				do_unregister(p);
			p->registered = !err;
			if (p->opts.done)
				p->opts.done(p, err, p->opts.data);
			if (err)
				probe_free(p);
		} else {
			err = do_unregister(p);
			if (p->opts.done)
				p->opts.done(p, err, p->opts.data);
			probe_free(p);
		}
	}
	up->in_deferred = false;
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

		if (p->dead)
			continue;
		p->hits++;
		if (!p->opts.handler || p->opts.retprobe)
			continue;
		ctx->probe = p;
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

		if (p->dead)
			continue;
		fn = p->opts.retprobe ? p->opts.handler : p->opts.ret_handler;
		if (!fn)
			continue;
		p->returns++;
		ctx->probe = p;
		ctx->entry_ns = p->opts.retprobe ? 0 : ri->entry_ns;
		if (fn(ctx, p->opts.data) == UTRACE_PROBE_REMOVE)
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

		if (!p->dead && (p->opts.ret_handler || p->opts.retprobe))
			p->missed_returns++;
	}
}

/**
 * uprobes_slot_owner - the point whose XOL slot contains @rip, or NULL.
 * @pp: process
 * @rip: an address inside an XOL area
 */
struct probe_point *uprobes_slot_owner(struct uprobes_proc *pp, uint64_t rip)
{
	unsigned int i;

	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = pp->points[i]; pt; pt = pt->hnext)
			if (pt->slot && rip >= pt->slot && rip < pt->slot + 64)
				return pt;
	}
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Process life cycle                                                        */
/* ------------------------------------------------------------------------ */

/**
 * uprobes_proc_exec - @th's process completed an execve: drop its points
 * (the old address space is gone), arm the SPEC probes in the new image.
 * @up: layer
 * @th: the thread (now the leader), stopped at the exec event
 */
void uprobes_proc_exec(struct utrace_uprobes *up, struct utrace_thread *th)
{
	pid_t pid = utrace_thread__pid(th);
	struct uprobes_proc *pp = uprobes_proc_find(up, pid);
	struct utrace_probe *p;
	bool any = false;

	if (pp) {
		proc_forget_points(pp, UTRACE_DROP_EXEC);
		proc_free(pp);
	}
	for (p = up->probes; p; p = p->next)
		if (p->is_spec && !p->dead)
			any = true;
	/* utrace_uprobes__free() is quiescing: nothing to arm any more */
	if (!any || up->freeing)
		return;
	proc_setup(up, pid, true);
}

/**
 * uprobes_proc_exit - process @pid exited: drop everything, no memory
 * access.
 * @up: layer
 * @pid: process id
 */
void uprobes_proc_exit(struct utrace_uprobes *up, pid_t pid)
{
	struct uprobes_proc *pp = uprobes_proc_find(up, pid);

	if (!pp)
		return;
	proc_forget_points(pp, UTRACE_DROP_EXIT);
	proc_free(pp);
}

/* Remove our breakpoints and return trampolines from a fork child's copy. */
static void clean_child(struct uprobes_proc *parent, pid_t child)
{
	uint64_t tramp = xol_tramp(parent);
	unsigned int i, k;

	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = parent->points[i]; pt; pt = pt->hnext) {
			uint8_t b;

			if (!pt->armed)
				continue;
			if (utrace_mem__read(child, pt->addr, &b, 1) == 1 && b == 0xcc &&
			    utrace_mem__write(child, pt->addr, pt->orig, 1) != 1)
				pr_warn("fork child %d: cannot remove breakpoint at 0x%llx\n",
					child, (unsigned long long)pt->addr);
		}
	}
	if (!tramp)
		return;
	for (i = 0; i < PROC_HASH; i++) {
		struct utrace_task *t;

		for (t = parent->tasks[i]; t; t = t->hnext) {
			for (k = 0; k < t->depth; k++) {
				const struct utrace_return_instance *ri = &t->ri[k];
				uint64_t v;

				if (ri->chained)
					continue; /* its slot holds the caller's trampoline */
				if (utrace_mem__read(child, ri->sp, &v, 8) == 8 && v == tramp)
					utrace_mem__write(child, ri->sp, &ri->orig_ret, 8);
			}
		}
	}
}

/**
 * uprobes_proc_fork - @parent's process forked @child, which has not run
 * yet: remove our breakpoints and trampoline return addresses from its
 * copy; a followed child gets the SPEC probes as a new process. Idempotent
 * (called from the fork event or the child's first stop, whichever comes
 * first). A vfork child shares its parent's memory: nothing is removed;
 * a followed one shares the parent's points.
 * @up: layer
 * @parent: parent pid
 * @child: child pid
 * @vfork: CLONE_VM child
 * @followed: the session traces the child
 */
void uprobes_proc_fork(struct utrace_uprobes *up, pid_t parent, pid_t child, bool vfork,
		       bool followed)
{
	struct uprobes_proc *pp = uprobes_proc_find(up, parent);
	struct uprobes_proc *cp;

	if (!pp || uprobes_proc_find(up, child))
		return;
	if (vfork) {
		if (followed) {
			cp = proc_new(up, child);
			if (cp)
				cp->vfork_parent = pp->pid;
		}
		return;
	}
	clean_child(pp, child);
	if (!followed)
		return;
	cp = proc_new(up, child);
	if (!cp)
		return;
	if (proc_refresh_image(cp)) {
		proc_free(cp);
		return;
	}
	xol_inherit(cp, pp);
	proc_arm_rbrk(cp);
	proc_arm_all_specs(cp);
}

/* @obj (an image path, maybe under /proc/PID/root) names the mapped @path. */
static bool path_same(const char *obj, const char *path)
{
	size_t lo, lp;

	if (!obj || !path)
		return false;
	lo = strlen(obj);
	lp = strlen(path);
	return lo >= lp && !strcmp(obj + lo - lp, path) && (lo == lp || path[0] == '/');
}

/**
 * uprobes_dl_activity - the dynamic linker changed the link map of @pp
 * (r_brk hit): forget points in objects that went away, arm pending SPECs.
 * @pp: process
 * @th: the thread that hit r_brk (stopped)
 */
void uprobes_dl_activity(struct uprobes_proc *pp, struct utrace_thread *th)
{
	struct utrace_maps *maps;
	unsigned int i;

	(void)th;
	pp->up->stats.dl_events++;
	if (pp->r_debug) {
		/* struct r_debug: int r_version; struct link_map *r_map; r_brk; r_state */
		int state;

		if (utrace_mem__read(pp->pid, pp->r_debug + 24, &state, sizeof(state)) ==
			    sizeof(state) &&
		    state != 0 /* RT_CONSISTENT */)
			return; /* RT_ADD / RT_DELETE: the link map is about to change */
	}
	pr_debug("process %d: link map changed, rescanning\n", pp->pid);
	maps = utrace_maps__read(pp->pid);
	if (!maps)
		return;
	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt, *next;

		for (pt = pp->points[i]; pt; pt = next) {
			const struct utrace_map *m = utrace_maps__find(maps, pt->addr);

			next = pt->hnext;
			/* r_brk stays; an unwind guard goes with its object */
			if ((pt->internal && !pt->unwind) ||
			    (m && m->path && (m->prot & UTRACE_MAP_EXEC) &&
			     path_same(pt->object, m->path)))
				continue;
			pr_debug("process %d: %s unloaded\n", pp->pid, pt->name);
			point_forget(pp, pt, UTRACE_DROP_UNLOAD);
		}
	}
	utrace_maps__free(maps);
	if (proc_refresh_image(pp))
		return;
	proc_arm_all_specs(pp);
}

/* ------------------------------------------------------------------------ */
/* The layer                                                                 */
/* ------------------------------------------------------------------------ */

struct utrace_uprobes *utrace_uprobes__new(struct utrace_session *s,
					   const struct utrace_uprobes_opts *opts)
{
	struct utrace_uprobes *up;
	int backend = opts && OPTS_VALID(opts, utrace_uprobes_opts) ? opts->backend : 0;
	int err;

	if (!s || !OPTS_VALID(opts, utrace_uprobes_opts) || backend < 0 ||
	    backend >= __UTRACE_BACKEND_MAX || (opts && opts->max_depth > UPROBES_MAX_DEPTH)) {
		errno = EINVAL;
		return NULL;
	}
	if (backend != UTRACE_BACKEND_AUTO && backend != UTRACE_BACKEND_PTRACE) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	up = calloc(1, sizeof(*up));
	if (!up) {
		errno = ENOMEM;
		return NULL;
	}
	up->s = s;
	up->backend = UTRACE_BACKEND_PTRACE;
	up->max_depth = opts && opts->max_depth ? opts->max_depth : UPROBES_DEFAULT_DEPTH;
	up->probes_tail = &up->probes;
	up->deferred_tail = &up->deferred;
	err = ptrace_backend_init(up);
	if (err) {
		free(up);
		errno = -err;
		return NULL;
	}
	return up;
}

int utrace_uprobes__sync(struct utrace_uprobes *up)
{
	pid_t *pids = NULL;
	int n, i, armed = 0;

	if (!up)
		return -EINVAL;
	n = session_pids(up, &pids);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		struct uprobes_proc *pp;

		if (uprobes_proc_find(up, pids[i]) || !pid_armable(up, pids[i]))
			continue;
		pp = proc_new(up, pids[i]);
		if (!pp)
			continue;
		if (ptrace_backend_quiesce(pp) == 0 && proc_refresh_image(pp) == 0) {
			proc_arm_rbrk(pp);
			proc_arm_all_specs(pp);
			armed++;
		}
		ptrace_backend_resume(pp);
	}
	free(pids);
	return armed;
}

enum utrace_backend utrace_uprobes__backend(const struct utrace_uprobes *up)
{
	return up ? up->backend : UTRACE_BACKEND_AUTO;
}

/* Take every breakpoint, trampoline and XOL area out of @pp and forget it. */
static int proc_release(struct uprobes_proc *pp)
{
	struct utrace_uprobes *up = pp->up;
	struct uprobes_proc *vp;
	pid_t pid = pp->pid;
	unsigned int i;
	int ret = 0;

	/* followed vfork children use these points: forget them first */
	for (vp = up->procs; vp; vp = vp->next)
		if (vp->vfork_parent == pp->pid)
			vp->vfork_parent = 0;
	if (pid_armable(up, pp->pid) && !pp->vfork_parent) {
		ret = ptrace_backend_quiesce(pp);
		/*
		 * Quiescing handles the events that come meanwhile: an exec or
		 * an exit of this process frees @pp (its points are dropped
		 * without touching memory); nothing is left to release.
		 */
		for (vp = up->procs; vp && !(vp == pp && vp->pid == pid); vp = vp->next)
			;
		if (!vp)
			return ret;
		for (i = 0; i < PROC_HASH; i++) {
			struct probe_point *pt;

			for (pt = pp->points[i]; pt; pt = pt->hnext) {
				int r = pt->armed ? ptrace_backend_disarm(pp, pt, true) : 0;

				if (r && !ret)
					ret = r;
				remember_removed(pp, pt->addr);
			}
		}
		{
			int r = ptrace_backend_release(pp);

			if (r && !ret)
				ret = r;
		}
		/* the release waits for traps: the process may have exited */
		for (vp = up->procs; vp && !(vp == pp && vp->pid == pid); vp = vp->next)
			;
		if (!vp)
			return ret;
		ptrace_backend_resume(pp);
	}
	proc_forget_points(pp, UTRACE_DROP_DETACH);
	proc_free(pp);
	return ret;
}

int utrace_uprobes__detach_pid(struct utrace_uprobes *up, pid_t pid)
{
	struct uprobes_proc *pp;

	if (!up || up->hit_depth)
		return -EINVAL;
	pp = uprobes_proc_find(up, pid);
	if (!pp)
		return -ESRCH;
	return proc_release(pp);
}

void utrace_uprobes__free(struct utrace_uprobes *up)
{
	if (!up)
		return;
	up->freeing = true;
	while (up->procs)
		proc_release(up->procs);
	while (up->deferred) {
		struct uprobes_deferred *d = up->deferred;

		up->deferred = d->next;
		free(d);
	}
	while (up->probes)
		probe_free(up->probes);
	ptrace_backend_fini(up);
	free(up);
}
