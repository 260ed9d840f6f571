/* SPDX-License-Identifier: MIT */
/*
 * uprobes.c - the probe registry: probes, probe points, SPEC resolution per
 * process, pending objects, deferred (un)registration, the figures and
 * records of the built-in actions, and the layer's API. Arming, hits and
 * the built-in actions run in the tracer are in uprobes-arm.c; the process
 * life cycle (fork, exec, exit, dlopen/dlclose) and the session engine
 * that reports it, in uprobes-life.c. Backend-independent; the
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
 * Deferral. While handlers run (hit_depth > 0), register and unregister
 * only queue the request; uprobes_hit_end() of the outermost hit runs the
 * queue and calls opts->done. A probe unregistered that way is marked dead
 * at once, with the hit it died in (hit_seq): it still runs for that hit if
 * its turn has not come yet (the paper's rule: unregistration takes effect
 * once the handlers of the current hit have run), and for no later hit.
 *
 * Unwind guards: uprobes-arm.c. Libraries loaded later (the dynamic
 * linker's notification breakpoint) and the life cycle: uprobes-life.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "utrace/proc.h"
#include "utrace/probe.h"
#include "utrace/unwind.h"
#include "abi.h"
#include "backend.h"
#include "internal.h"
#include "uprobes.h"

/* the public error kinds are the agent ABI's (one table of rules) */
_Static_assert((int)UTRACE_ERRK_NEG32 == (int)UTRACE_ERR_NEG32 &&
		       (int)UTRACE_ERRK_NULL == (int)UTRACE_ERR_NULL &&
		       (int)UTRACE_ERRK_MAPFAIL == (int)UTRACE_ERR_MAPFAIL &&
		       UTRACE_HIST_BUCKETS == UTRACE_ABI_HIST_BUCKETS,
	       "probe.h and abi.h disagree");

/*
 * The backend's operations around a batch of writes to sites (backend.h):
 * quiesce and resume are optional (the agent arms safely with every
 * thread running); commit, when there is one, makes the batch take effect.
 */
static int proc_quiesce(struct uprobes_proc *pp)
{
	return pp->up->ops->quiesce ? pp->up->ops->quiesce(pp) : 0;
}

static void proc_resume(struct uprobes_proc *pp)
{
	if (pp->up->ops->commit)
		pp->up->ops->commit(pp);
	if (pp->up->ops->resume)
		pp->up->ops->resume(pp);
}

static int proc_backend_release(struct uprobes_proc *pp)
{
	return pp->up->ops->release ? pp->up->ops->release(pp) : 0;
}

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

unsigned int uprobes_hash_addr(uint64_t addr)
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

/* The process's memory, shared with a vfork parent's, is used through it. */
struct uprobes_proc *uprobes_points_proc(struct uprobes_proc *pp)
{
	if (pp->vfork_parent) {
		struct uprobes_proc *parent = uprobes_proc_find(pp->up, pp->vfork_parent);

		if (parent)
			return parent;
	}
	return pp;
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

	for (pt = pp->points[uprobes_hash_addr(addr)]; pt; pt = pt->hnext)
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

		if (!p->dead && uprobes_probe_has_return(p))
			return true;
	}
	return false;
}

/**
 * uprobes_probe_has_entry - does @p do anything at entries?
 * uprobes_probe_has_return - ... at returns (the trampoline is needed)?
 * The rules of probe.h's enum utrace_probe_action.
 */
bool uprobes_probe_has_entry(const struct utrace_probe *p)
{
	/* a module's probe is entered even for a return handler alone: timed */
	return !p->opts.retprobe && (p->opts.handler || p->opts.actions || p->mod);
}

bool uprobes_probe_has_return(const struct utrace_probe *p)
{
	unsigned int a = p->opts.actions;

	if (p->opts.ret_handler || p->opts.retprobe)
		return true;
	if (p->mod && (p->mod->ret_mask >> p->mprobe & 1))
		return true;
	if (a & UTRACE_ACT_NORET)
		return false;
	return (a & (UTRACE_ACT_HIST | UTRACE_ACT_RECORD)) ||
	       ((a & UTRACE_ACT_COUNT) && p->opts.err_kind);
}

void uprobes_point_free(struct probe_point *pt)
{
	if (pt->proc->up->ops->point_free)
		pt->proc->up->ops->point_free(pt);
	free(pt->probes);
	free(pt->popts);
	free(pt->pcnt);
	free(pt->object);
	free(pt->symbol);
	free(pt->name);
	free(pt);
}

void uprobes_point_unlink(struct uprobes_proc *pp, struct probe_point *pt)
{
	struct probe_point **pp_ = &pp->points[uprobes_hash_addr(pt->addr)];

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

void uprobes_remember_removed(struct uprobes_proc *pp, uint64_t addr)
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

		uprobes_point_retire(pt, i);
		if (p->points)
			p->points--;
		if (p->opts.dropped && !p->dead)
			p->opts.dropped(p, pp->pid, why, p->opts.data);
	}
	pt->nr_probes = 0;
}

/* Free a point whose memory is gone (exec, exit, unload): no write. */
void uprobes_point_forget(struct uprobes_proc *pp, struct probe_point *pt,
			  enum utrace_drop_reason why)
{
	point_drop_probes(pp, pt, why);
	uprobes_point_unlink(pp, pt);
	uprobes_point_free(pt);
}

void uprobes_proc_forget_points(struct uprobes_proc *pp, enum utrace_drop_reason why)
{
	unsigned int i;

	if (pp->up->ops->proc_flush)
		pp->up->ops->proc_flush(pp); /* its events, while the points still name them */
	for (i = 0; i < PROC_HASH; i++)
		while (pp->points[i])
			uprobes_point_forget(pp, pp->points[i], why);
}

void uprobes_proc_free(struct uprobes_proc *pp)
{
	struct uprobes_proc **l;

	for (l = &pp->up->procs; *l; l = &(*l)->next) {
		if (*l == pp) {
			*l = pp->next;
			break;
		}
	}
	tasks_free(pp);
	if (pp->up->ops->proc_forget)
		pp->up->ops->proc_forget(pp);
	utrace_planner__free(pp->planner);
	utrace_image__close(pp->img);
	utrace_unwind__free(pp->unwind);
	free(pp);
}

struct uprobes_proc *uprobes_proc_new(struct utrace_uprobes *up, pid_t pid)
{
	struct uprobes_proc *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return NULL;
	pp->up = up;
	pp->pid = pid;
	if (up->ops->proc_init && up->ops->proc_init(pp)) {
		free(pp);
		return NULL;
	}
	pp->next = up->procs;
	up->procs = pp;
	return pp;
}

/* (Re)build the image of @pp from its maps. */
int uprobes_proc_refresh_image(struct uprobes_proc *pp)
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

/* A process the session traces and we may arm (not before its exec). */
static bool pid_armable(struct utrace_uprobes *up, pid_t pid)
{
	struct utrace_thread *th = utrace_session__find_thread(up->s, pid);

	if (!th) {
		/* a process whose leader was let go (the agent's ANCHOR): any thread */
		struct utrace_thread *ths[1];

		if (utrace_session__threads(up->s, pid, ths, 1) >= 1)
			th = ths[0];
	}
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

void uprobes_probe_free(struct utrace_probe *p)
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
	{
		struct uprobes_rec *q;

		for (q = up->rq; q; q = q->next) /* polled later: no dangling probe */
			if (q->r.probe == p)
				q->r.probe = NULL;
	}
	while (p->retired) {
		struct uprobes_retired *r = p->retired;

		p->retired = r->next;
		free(r->name);
		free(r->symbol);
		free(r->object);
		free(r);
	}
	if (p->mod && p->mod->by_pi[p->mprobe] == p)
		p->mod->by_pi[p->mprobe] = NULL;
	utrace_spec__clear(&p->spec);
	while (p->nr_excl)
		utrace_spec__clear(&p->excl[--p->nr_excl]);
	free(p->excl);
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
			uprobes_point_del_probe_at(pt, k);
			if (p->points)
				p->points--;
			if (pt->nr_probes || pt->internal || pt->addr == pp->r_brk || pt->unwind) {
				/* r_brk or an unwind guard probed by the user too: ours again */
				pt->internal = pt->internal || pt->addr == pp->r_brk || pt->unwind;
				if (pp->up->ops->point_update)
					pp->up->ops->point_update(pp, pt);
				continue;
			}
			if (quiesce && !stopped) {
				int r = proc_quiesce(pp);

				if (r < 0 && !ret)
					ret = r;
				stopped = true;
			}
			{
				int r = uprobes_point_remove(pp, pt);

				if (r < 0 && !ret)
					ret = r;
			}
		}
	}
	if (stopped)
		proc_resume(pp);
	return ret;
}

int uprobes_do_unregister(struct utrace_probe *p)
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
int uprobes_do_register(struct utrace_probe *p)
{
	struct utrace_uprobes *up = p->up;
	struct uprobes_proc *pp;
	int err = 0;

	if (!p->is_spec && up->all) {
		pr_warn("probe '%s': address probes are per process; the layer is system-wide "
			"(all_exec): give a SPEC\n",
			p->name);
		return -EOPNOTSUPP;
	}
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
			pp = uprobes_proc_setup(up, p->pid, false);
			if (!pp)
				return -ESRCH;
		}
		maps = utrace_maps__read(p->pid);
		if (!maps)
			return -errno;
		err = image_find_object(pp->img, maps, p->addr, &idx);
		if (err) {
			/* mapped after our last look: refresh once */
			if (uprobes_proc_refresh_image(pp) == 0)
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
		err = uprobes_ret_refused(pp, p, &m, why, sizeof(why));
		if (err) {
			pr_warn("probe '%s': cannot probe: %s\n", p->name, why);
			return err;
		}
		err = proc_quiesce(pp);
		if (!err) {
			err = uprobes_point_get(pp, &m, false, &pt, why, sizeof(why));
			if (!err)
				err = uprobes_point_add_probe(pt, p);
			if (!err)
				uprobes_proc_arm_unwind_guards(pp);
		}
		proc_resume(pp);
		if (err && why[0])
			pr_warn("probe '%s': cannot probe: %s\n", p->name, why);
		if (err && pt && !pt->nr_probes && !pt->internal) {
			proc_quiesce(pp);
			uprobes_point_remove(pp, pt);
			proc_resume(pp);
		}
		return err;
	} else {
		pid_t *pids = NULL;
		int n, i, armed = 0, first_err = 0, known = 0;
		bool any_pending = false;

		/* processes the session traces that we have not seen yet (system-wide: none) */
		n = up->all ? 0 : session_pids(up, &pids);
		for (i = 0; i < n; i++)
			if (!uprobes_proc_find(up, pids[i]) && pid_armable(up, pids[i]))
				uprobes_proc_setup(up, pids[i], false);
		free(pids);
		for (pp = up->procs; pp; pp = pp->next) {
			bool pending = false;
			int r;

			if (pp->vfork_parent)
				continue;
			known++;
			r = proc_quiesce(pp);
			if (!r) {
				r = uprobes_proc_arm_spec(pp, p, &pending);
				uprobes_proc_arm_unwind_guards(pp);
			}
			proc_resume(pp);
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

#define ACT_ALL                                                                      \
	(UTRACE_ACT_COUNT | UTRACE_ACT_HIST | UTRACE_ACT_RECORD | UTRACE_ACT_STACK | \
	 UTRACE_ACT_INJECT | UTRACE_ACT_NORET)

/* Built-in actions that make sense together (probe.h). */
static bool actions_valid(const struct utrace_probe_opts *o)
{
	unsigned int a = o->actions;

	if (a & ~ACT_ALL)
		return false;
	if (o->nargs > 6 || o->str_max > 1024 || (o->str_args & ~0x7fu) || o->err_kind < 0 ||
	    o->err_kind > UTRACE_ERRK_MAPFAIL)
		return false;
	/* injecting at a return, or stacks of no record, mean nothing */
	if ((a & UTRACE_ACT_INJECT) && o->retprobe)
		return false;
	if ((a & UTRACE_ACT_STACK) && !(a & UTRACE_ACT_RECORD))
		return false;
	if ((a & UTRACE_ACT_HIST) && ((a & UTRACE_ACT_NORET) || o->retprobe))
		return false;
	return !((a & UTRACE_ACT_NORET) && o->retprobe);
}

static struct utrace_probe *probe_new(struct utrace_uprobes *up,
				      const struct utrace_probe_opts *opts)
{
	struct utrace_probe_opts o = { 0 };
	struct uprobes_module *m = NULL;
	struct utrace_probe *p;

	if (up && !up->s) {
		errno = ENOTCONN; /* the session was closed */
		return NULL;
	}
	if (!up || !OPTS_VALID(opts, utrace_probe_opts) || !opts) {
		errno = EINVAL;
		return NULL;
	}
	/* an older caller's shorter struct: the fields it does not know are 0 */
	memcpy(&o, opts, MIN(opts->sz, sizeof(o)));
	opts = &o;
	if (opts->module) {
		m = uprobes_module_get(up, opts->module);
		/* the module's table says what runs, at an entry */
		if (!m || opts->module_probe >= m->nr_probes || opts->handler ||
		    opts->ret_handler || opts->retprobe) {
			errno = EINVAL;
			return NULL;
		}
	}
	if ((!opts->handler && !opts->ret_handler && !opts->actions && !m) ||
	    (opts->retprobe && opts->ret_handler) || !actions_valid(opts)) {
		errno = EINVAL;
		return NULL;
	}
	if ((opts->handler || opts->ret_handler) && !up->ops->tracer_handlers) {
		/* the agent and the kernel run only built-in actions (probe.h) */
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (opts->actions & up->ops->refused_actions) {
		/* the kernel cannot inject (backend.h refused_actions) */
		pr_warn("%s\n", up->ops->refused_why);
		errno = EOPNOTSUPP;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(&p->opts, opts, MIN(opts->sz, sizeof(p->opts)));
	p->opts.sz = sizeof(p->opts);
	if (m) {
		p->mod = m;
		p->mprobe = opts->module_probe;
		m->by_pi[p->mprobe] = p;
		if (up->ops->tracer_handlers) {
			/* module.c runs the table's handlers here (a return alone: a timed entry) */
			p->opts.handler = uprobes_module_entry;
			if (m->ret_mask >> p->mprobe & 1)
				p->opts.ret_handler = uprobes_module_return;
		}
	}
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
			int err = uprobes_do_register(p);

			p->registered = !err;
			if (p->opts.done)
				p->opts.done(p, err, p->opts.data);
			if (err)
				uprobes_probe_free(p);
		} else {
			uprobes_do_unregister(p);
			uprobes_probe_free(p);
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
	err = uprobes_do_register(p);
	if (err) {
		uprobes_do_unregister(p); /* whatever was armed */
		uprobes_probe_free(p);
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
	p->opts.exclude = NULL; /* SPEC probes only: not kept */
	snprintf(buf, sizeof(buf), "%d:0x%llx", pid, (unsigned long long)addr);
	p->name = strdup(buf);
	if (!p->name) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	return finish_register(p);
}

/* opts.exclude into @p->excl; the caller's array is not kept. */
static int parse_excludes(struct utrace_probe *p)
{
	const char *const *ex = p->opts.exclude;
	char err[256];
	size_t n = 0;
	int r;

	p->opts.exclude = NULL;
	while (ex && ex[n])
		n++;
	if (!n)
		return 0;
	p->excl = calloc(n, sizeof(*p->excl));
	if (!p->excl)
		return -ENOMEM;
	for (; p->nr_excl < n; p->nr_excl++) {
		err[0] = '\0';
		r = utrace_spec__parse(ex[p->nr_excl], &p->excl[p->nr_excl], err, sizeof(err));
		if (r) {
			if (err[0])
				pr_warn("probe '%s': exclusion: %s\n", p->name, err);
			return r;
		}
	}
	return 0;
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
	r = p->name ? parse_excludes(p) : -ENOMEM;
	if (r) {
		uprobes_probe_free(p);
		errno = -r;
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
		p->dead_hit = up->hit_seq; /* still runs for this hit (uprobes_run_entry()) */
		defer(up, p, false);
		return 0;
	}
	err = uprobes_do_unregister(p);
	uprobes_probe_free(p);
	return err;
}

const char *utrace_probe__name(const struct utrace_probe *p)
{
	return p ? p->name : NULL;
}

/* Does a live SPEC probe wait for a library @pp has not loaded yet? */
bool uprobes_proc_pending(struct uprobes_proc *pp)
{
	struct utrace_probe *p;
	bool any = false;

	for (p = pp->up->probes; p && !any && pp->img; p = p->next) {
		struct utrace_match *m = NULL;
		size_t nr = 0;

		if (p->is_spec && !p->dead &&
		    utrace_image__resolve(pp->img, &p->spec, &m, &nr, &any) != 0)
			any = false;
		free(m);
	}
	return any;
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

int utrace_uprobes__pid_stats(const struct utrace_uprobes *up, pid_t pid,
			      struct utrace_uprobes_stats *st)
{
	const struct utrace_probe *p;
	const struct uprobes_retired *r;
	const struct uprobes_proc *pp;
	bool known = false;
	unsigned int i, k;

	if (!up || !st || pid <= 0)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	/* the points gone (an exited process, an exec's old image): their probes keep them */
	for (p = up->probes; p; p = p->next)
		for (r = p->retired; r; r = r->next)
			if (r->pid == pid) {
				known = true;
				st->hits += r->c.calls;
				st->returns += r->c.returns;
				st->missed_returns += r->c.missed_returns;
			}
	for (pp = up->procs; pp && pp->pid != pid; pp = pp->next)
		;
	for (i = 0; pp && i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = pp->points[i]; pt; pt = pt->hnext) {
			st->points++;
			for (k = 0; k < pt->nr_probes; k++) {
				struct utrace_probe_counts one = pt->pcnt[k];

				if (up->ops->point_counts)
					up->ops->point_counts((struct uprobes_proc *)pp, pt,
							      pt->probes[k], &one);
				st->hits += one.calls;
				st->returns += one.returns;
				st->missed_returns += one.missed_returns;
			}
		}
	}
	return pp || known ? 0 : -ESRCH;
}

/* ------------------------------------------------------------------------ */
/* Figures and events                                                        */
/* ------------------------------------------------------------------------ */

void uprobes_counts_add(struct utrace_probe_counts *c, const struct utrace_probe_counts *a)
{
	unsigned int i;

	if (a->timed && (!c->timed || a->min_ns < c->min_ns))
		c->min_ns = a->min_ns;
	if (a->max_ns > c->max_ns)
		c->max_ns = a->max_ns;
	c->calls += a->calls;
	c->returns += a->returns;
	c->errors += a->errors;
	c->timed += a->timed;
	c->sum_ns += a->sum_ns;
	c->injected += a->injected;
	c->missed_returns += a->missed_returns;
	c->unrecorded += a->unrecorded;
	for (i = 0; i < UTRACE_HIST_BUCKETS; i++)
		c->hist[i] += a->hist[i];
}

/**
 * uprobes_retire_counts - the figures @c of probe @p at point @pt, which
 * goes (or whose backend state restarts from zero): kept with the probe
 * under the point's name, so that utrace_probe__counts() and
 * utrace_probe__point_counts() still give them.
 */
void uprobes_retire_counts(struct utrace_probe *p, const struct probe_point *pt,
			   const struct utrace_probe_counts *c)
{
	pid_t pid = pt->proc ? pt->proc->pid : 0;
	struct uprobes_retired *r;

	if (!c->calls && !c->returns && !c->timed && !c->injected && !c->errors &&
	    !c->missed_returns && !c->unrecorded)
		return;

	for (r = p->retired; r; r = r->next)
		if (r->pid == pid && !strcmp(r->name, pt->name ? pt->name : "?"))
			break;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return;
		r->pid = pid;
		r->name = strdup(pt->name ? pt->name : "?");
		r->symbol = pt->symbol ? strdup(pt->symbol) : NULL;
		r->object = pt->object ? strdup(pt->object) : NULL;
		r->next = p->retired;
		p->retired = r;
	}
	uprobes_counts_add(&r->c, c);
}

int utrace_probe__point_counts(const struct utrace_probe *p, utrace_point_counts_fn_t fn, void *ctx)
{
	const struct uprobes_retired *r;
	struct uprobes_proc *pp;
	int ret;

	if (!p || !fn)
		return -EINVAL;
	for (r = p->retired; r; r = r->next) {
		ret = fn(r->name, r->symbol, r->object, &r->c, ctx);
		if (ret)
			return ret;
	}
	for (pp = p->up->procs; pp; pp = pp->next) {
		unsigned int i, k;

		for (i = 0; i < PROC_HASH; i++) {
			struct probe_point *pt;

			for (pt = pp->points[i]; pt; pt = pt->hnext) {
				struct utrace_probe_counts one;

				for (k = 0; k < pt->nr_probes && pt->probes[k] != p; k++)
					;
				if (k == pt->nr_probes)
					continue;
				one = pt->pcnt[k];
				if (p->up->ops->point_counts)
					p->up->ops->point_counts(pp, pt, p, &one);
				ret = fn(pt->name, pt->symbol, pt->object, &one, ctx);
				if (ret)
					return ret;
			}
		}
	}
	return 0;
}

int utrace_probe__sites(const struct utrace_probe *p, utrace_point_site_fn_t fn, void *ctx)
{
	struct uprobes_proc *pp;
	int ret;

	if (!p || !fn)
		return -EINVAL;
	for (pp = p->up->procs; pp; pp = pp->next) {
		unsigned int i, k;

		for (i = 0; i < PROC_HASH; i++) {
			struct probe_point *pt;

			for (pt = pp->points[i]; pt; pt = pt->hnext) {
				struct utrace_point_site ps = { .sz = sizeof(ps) };

				for (k = 0; k < pt->nr_probes && pt->probes[k] != p; k++)
					;
				if (k == pt->nr_probes)
					continue;
				ps.pid = pp->pid;
				ps.addr = pt->addr;
				ps.name = pt->name;
				ps.symbol = pt->symbol;
				ps.object = pt->object;
				ps.site = pt->armed ? UTRACE_SITE_INT3 : UTRACE_SITE_PENDING;
				if (p->up->ops->site)
					p->up->ops->site(pp, pt, &ps);
				ret = fn(&ps, ctx);
				if (ret)
					return ret;
			}
		}
	}
	return 0;
}

const char *utrace_site_str(enum utrace_site site)
{
	static const char *const names[] = {
		[UTRACE_SITE_PENDING] = "pending", [UTRACE_SITE_INT3] = "int3",
		[UTRACE_SITE_JMP] = "jmp",	   [UTRACE_SITE_KERNEL] = "uprobe",
		[UTRACE_SITE_FAILED] = "failed",   [UTRACE_SITE_TAKEN] = "taken",
	};

	return (unsigned int)site < ARRAY_SIZE(names) ? names[site] : "?";
}

static int counts_row(const char *name, const char *symbol, const char *object,
		      const struct utrace_probe_counts *one, void *ctx)
{
	(void)name;
	(void)symbol;
	(void)object;
	uprobes_counts_add(ctx, one);
	return 0;
}

int utrace_probe__counts(const struct utrace_probe *p, struct utrace_probe_counts *c)
{
	if (!p || !c)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	utrace_probe__point_counts(p, counts_row, c); /* every row, gone and live */
	c->missed_returns += p->missed_returns;
	return 0;
}

/**
 * uprobes_queue_record - keep a copy of @r (strings, name) for the next
 * utrace_uprobes__poll(): a backend's events of a process that is going
 * away (proc_flush), delivered after it is gone.
 */
void uprobes_queue_record(struct utrace_uprobes *up, const struct utrace_record *r)
{
	struct uprobes_rec *q = calloc(1, sizeof(*q));
	unsigned int i;

	if (!q) {
		up->rq_lost++;
		return;
	}
	q->r = *r;
	q->r.sz = sizeof(q->r);
	q->r.comm = NULL;
	if (r->sz > offsetof(struct utrace_record, comm) && r->comm) {
		snprintf(q->comm, sizeof(q->comm), "%s", r->comm);
		q->r.comm = q->comm;
	}
	q->name = r->name ? strdup(r->name) : NULL;
	q->r.name = q->name;
	q->symbol = r->symbol ? strdup(r->symbol) : NULL;
	q->r.symbol = q->symbol;
	q->object = r->object ? strdup(r->object) : NULL;
	q->r.object = q->object;
	for (i = 0; i < 6; i++) {
		q->strs[i] = r->str[i] ? strndup(r->str[i], r->str_len[i]) : NULL;
		q->r.str[i] = q->strs[i];
	}
	q->strs[6] = r->ret_str ? strndup(r->ret_str, r->ret_str_len) : NULL;
	q->r.ret_str = q->strs[6];
	q->r.nr_stack = r->stack ? MIN(r->nr_stack, (unsigned int)UTRACE_REC_MAX_STACK) : 0;
	memcpy(q->stack, r->stack ? r->stack : q->stack, q->r.nr_stack * sizeof(*q->stack));
	q->r.stack = q->r.nr_stack ? q->stack : NULL;
	q->r.nr_mem = 0;
	q->r.mem = NULL;
	/*
	 * -k's copy of the registers and the stack (the agent's records
	 * drained at a process's end are queued): copied, it is the backend's
	 */
	q->r.regs = NULL;
	q->r.nr_regs = 0;
	q->r.stack_data = NULL;
	q->r.stack_len = 0;
	if (r->sz >= offsetof(struct utrace_record, stack_len) + sizeof(size_t) && r->regs &&
	    r->nr_regs == UTRACE_REC_NR_REGS &&
	    (!r->stack_len || (q->stack_data = malloc(r->stack_len)))) {
		memcpy(q->regs, r->regs, sizeof(q->regs));
		q->r.regs = q->regs;
		q->r.nr_regs = r->nr_regs;
		if (r->stack_len)
			memcpy(q->stack_data, r->stack_data, r->stack_len);
		q->r.stack_data = q->stack_data;
		q->r.stack_len = r->stack_len;
	}
	if (r->sz > offsetof(struct utrace_record, mem) && r->nr_mem && r->mem) {
		size_t need = r->nr_mem * sizeof(struct utrace_mem), off;
		struct utrace_mem *m;

		for (i = 0; i < r->nr_mem; i++)
			need += r->mem[i].len;
		q->mem = malloc(need);
		if (q->mem) {
			m = q->mem;
			off = r->nr_mem * sizeof(*m);
			for (i = 0; i < r->nr_mem; i++) {
				m[i] = r->mem[i];
				m[i].data = (char *)q->mem + off;
				memcpy((char *)q->mem + off, r->mem[i].data, r->mem[i].len);
				off += r->mem[i].len;
			}
			q->r.nr_mem = r->nr_mem;
			q->r.mem = m;
		}
	}
	uprobes_rec_queue(up, q);
}

/* Hand the record queue to @fn. Return: delivered, or @fn's nonzero return. */
int uprobes_rq_deliver(struct utrace_uprobes *up, utrace_record_fn_t fn, void *ctx)
{
	int n = 0, r;

	if (up->rq_lost) {
		struct utrace_record lost = { .sz = sizeof(lost), .type = UTRACE_REC_LOST };

		lost.lost = up->rq_lost;
		lost.ts_ns = uprobes_now_ns();
		up->rq_lost = 0;
		r = fn(&lost, ctx);
		if (r)
			return r;
		n++;
	}
	while (up->rq) {
		struct uprobes_rec *q = up->rq;

		up->rq = q->next;
		if (!up->rq)
			up->rq_tail = &up->rq;
		up->rq_len--;
		r = fn(&q->r, ctx);
		uprobes_rec_free(q);
		if (r)
			return r;
		n++;
	}
	return n;
}

int utrace_uprobes__poll(struct utrace_uprobes *up, utrace_record_fn_t fn, void *ctx,
			 int timeout_ms)
{
	int n, r;

	if (!up || !fn || up->hit_depth)
		return -EINVAL;
	n = uprobes_rq_deliver(up, fn, ctx);
	if (up->ops->poll) {
		if (n)
			timeout_ms = 0;
		r = n < 0 ? 0 : up->ops->poll(up, fn, ctx, timeout_ms);
		return n < 0 ? n : r < 0 || (r && !n) ? r : n + r;
	}
	if (n || !timeout_ms || !up->s)
		return n;
	/* the events come from the stops: run the session until one is queued */
	r = utrace_session__run(up->s, timeout_ms);
	if (r < 0)
		return r;
	return uprobes_rq_deliver(up, fn, ctx);
}

int utrace_uprobes__count_syscalls(struct utrace_uprobes *up, pid_t pid, unsigned int flags)
{
	if (!up || pid <= 0 ||
	    (flags & ~(unsigned int)(UTRACE_SC_AT_EXEC | UTRACE_SC_FOLLOW | UTRACE_SC_RECORD)))
		return -EINVAL;
	return up->ops->count_syscalls ? up->ops->count_syscalls(up, pid, flags) : -EOPNOTSUPP;
}

int utrace_uprobes__syscall_counts(struct utrace_uprobes *up, long nr,
				   struct utrace_syscall_counts *c)
{
	if (!up || !c || nr < 0 || nr >= 512)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	return up->ops->syscall_counts ? up->ops->syscall_counts(up, nr, c) : -EOPNOTSUPP;
}

unsigned int utrace_hist_bucket(uint64_t ns)
{
	return utrace_abi_hist_bucket(ns);
}

bool utrace_errk_is_error(int err_kind, uint64_t rax)
{
	return err_kind > 0 && utrace_abi_is_error((unsigned int)err_kind, rax);
}

void utrace_hist_bucket_range(unsigned int b, uint64_t *lo_ns, uint64_t *hi_ns)
{
	if (!lo_ns || !hi_ns)
		return;
	utrace_abi_hist_range(b < UTRACE_HIST_BUCKETS ? b : UTRACE_HIST_BUCKETS - 1, lo_ns, hi_ns);
}

const char *utrace_uprobes__backend_how(struct utrace_uprobes *up)
{
	return up && up->ops && up->ops->how ? up->ops->how(up) : "";
}

const char *utrace_uprobes__backend_why(const struct utrace_uprobes *up)
{
	return up && up->backend_why ? up->backend_why : "";
}

/* ------------------------------------------------------------------------ */
/* The layer                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * The backends, by enum utrace_backend; NULL where none is built yet.
 * AUTO tries them in the order of auto_order (fastest first).
 */
static const struct uprobes_backend_ops *const backends[__UTRACE_BACKEND_MAX] = {
	[UTRACE_BACKEND_AGENT] = &uprobes_agent_ops,
	[UTRACE_BACKEND_PTRACE] = &uprobes_ptrace_ops,
#ifdef UTRACE_HAVE_BPF
	[UTRACE_BACKEND_KERNEL] = &uprobes_kernel_ops, /* never in auto_order (explicit only) */
#endif
};
static const enum utrace_backend auto_order[] = { UTRACE_BACKEND_AGENT, UTRACE_BACKEND_PTRACE };

static int backend_init(struct utrace_uprobes *up, enum utrace_backend b)
{
	int err;

	if (!backends[b])
		return -EOPNOTSUPP;
	up->ops = backends[b];
	up->backend = b;
	err = uprobes_engine_attach(up);
	if (!err && up->ops->init)
		err = up->ops->init(up);
	if (err) {
		uprobes_engine_detach(up);
		up->ops = NULL;
	}
	return err;
}

/*
 * The session lets processes go (internal.h release_hook): take our
 * probes out of @pid first (0: of every process); -1: the session is
 * closing: every process, then forget the session (its engines go with
 * it), so that utrace_uprobes__free() afterwards touches nothing of it.
 * Tracing thread, outside any callback (detach and close are not allowed
 * in callbacks), so quiescing and polling are allowed.
 */
static int proc_release(struct uprobes_proc *pp);

static void uprobes_session_hook(void *data, pid_t pid)
{
	struct utrace_uprobes *up = data;

	if (up->hit_depth)
		return; /* cannot happen (not from a callback); never release mid-hit */
	if (pid > 0) {
		struct uprobes_proc *pp = uprobes_proc_find(up, pid);

		if (pp)
			proc_release(pp);
		return;
	}
	up->freeing = pid < 0;
	while (up->procs)
		proc_release(up->procs);
	if (pid < 0) {
		if (up->ops->fini)
			up->ops->fini(up);
		uprobes_engine_detach(up);
		up->s->release_hook = NULL;
		if (up->s->after_data == up)
			up->s->after_hook = NULL;
		up->s = NULL;
	}
}

/* The session's after_hook: the backend's deferred work (backend.h ->after). */
static void uprobes_after(void *data)
{
	struct utrace_uprobes *up = data;

	if (!up->freeing && !up->hit_depth)
		up->ops->after(up);
}

/*
 * System-wide (utrace_uprobes_opts.all_exec): the pseudo-process 0 with
 * the image a launch of @path would have. Its objects get load biases
 * 1 TiB apart (file addresses of two objects would name one point);
 * the backend arms points on (object file, file offset) for every process.
 */
static int all_setup(struct utrace_uprobes *up, const char *path)
{
	struct uprobes_proc *pp;
	size_t i, n;
	int err;

	pp = uprobes_proc_new(up, 0);
	if (!pp)
		return -ENOMEM;
	pp->img = utrace_image__open_exec(path);
	if (!pp->img) {
		err = -errno;
		pr_warn("system-wide probes: cannot read '%s': %s\n", path, strerror(-err));
		uprobes_proc_free(pp);
		return err ? err : -ENOENT;
	}
	n = utrace_image__object_count(pp->img);
	for (i = 0; i < n; i++)
		image_set_bias(pp->img, i, (uint64_t)(i + 1) << 40);
	pp->planner = utrace_planner__new(pp->img);
	if (!pp->planner) {
		err = -errno;
		uprobes_proc_free(pp);
		return err ? err : -ENOMEM;
	}
	up->all = pp;
	return 0;
}

struct utrace_uprobes *utrace_uprobes__new(struct utrace_session *s,
					   const struct utrace_uprobes_opts *opts)
{
	struct utrace_uprobes *up;
	const char *all_exec;
	int backend = opts && OPTS_VALID(opts, utrace_uprobes_opts) ? opts->backend : 0;
	int err = -EOPNOTSUPP;
	unsigned int i;

	if (!s || !OPTS_VALID(opts, utrace_uprobes_opts) || backend < 0 ||
	    backend >= __UTRACE_BACKEND_MAX || (opts && opts->max_depth > UPROBES_MAX_DEPTH)) {
		errno = EINVAL;
		return NULL;
	}
	up = calloc(1, sizeof(*up));
	if (!up) {
		errno = ENOMEM;
		return NULL;
	}
	up->s = s;
	up->max_depth = opts && opts->max_depth ? opts->max_depth : UPROBES_DEFAULT_DEPTH;
	up->flags =
		opts && opts->sz > offsetof(struct utrace_uprobes_opts, flags) ? opts->flags : 0;
	up->agent_path = opts && opts->sz > offsetof(struct utrace_uprobes_opts, agent_path) ?
				 opts->agent_path :
				 NULL;
	up->agent_untraced = opts &&
			     opts->sz > offsetof(struct utrace_uprobes_opts, agent_untraced) &&
			     opts->agent_untraced;
	up->sc_str_max = opts && opts->sz > offsetof(struct utrace_uprobes_opts, sc_str_max) ?
				 opts->sc_str_max :
				 0;
	up->probes_tail = &up->probes;
	up->deferred_tail = &up->deferred;
	up->rq_tail = &up->rq;
	up->backend_why = "asked for";
	all_exec = opts && opts->sz > offsetof(struct utrace_uprobes_opts, all_exec) ?
			   opts->all_exec :
			   NULL;
	if (all_exec && backend == UTRACE_BACKEND_AUTO) {
		backend = UTRACE_BACKEND_KERNEL; /* the one backend that can */
		up->backend_why = "system-wide (all_exec): only the kernel backend can";
	}
	if (all_exec && (!backends[backend] || !backends[backend]->system_wide)) {
		pr_warn("the %s backend cannot probe system-wide (all_exec): its probes live in "
			"the processes it traces; the kernel backend can\n",
			utrace_backend_str((enum utrace_backend)backend));
		free(up);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (backend != UTRACE_BACKEND_AUTO)
		err = backend_init(up, (enum utrace_backend)backend);
	for (i = 0; backend == UTRACE_BACKEND_AUTO && i < ARRAY_SIZE(auto_order); i++) {
		const char *name = utrace_backend_str(auto_order[i]);
		size_t len;

		up->init_why[0] = 0;
		err = backend_init(up, auto_order[i]);
		len = strlen(up->why_buf);
		if (!err) {
			snprintf(up->why_buf + len, sizeof(up->why_buf) - len, "%s%s: works",
				 len ? "; " : "", name);
			up->backend_why = up->why_buf;
			break;
		}
		snprintf(up->why_buf + len, sizeof(up->why_buf) - len, "%s%s: %s", len ? "; " : "",
			 name, up->init_why[0] ? up->init_why : strerror(-err));
	}
	if (err) {
		free(up);
		errno = -err;
		return NULL;
	}
	if (all_exec) {
		err = all_setup(up, all_exec);
		if (err) {
			if (up->ops->fini)
				up->ops->fini(up);
			uprobes_engine_detach(up);
			free(up);
			errno = -err;
			return NULL;
		}
	}
	if (!s->release_hook) { /* one layer per session is the rule; the first one is told */
		s->release_hook = uprobes_session_hook;
		s->release_data = up;
	}
	if (up->ops->after && !s->after_hook) {
		s->after_hook = uprobes_after;
		s->after_data = up;
	}
	return up;
}

int utrace_uprobes__sync(struct utrace_uprobes *up)
{
	pid_t *pids = NULL;
	int n, i, armed = 0;

	if (!up)
		return -EINVAL;
	if (!up->s)
		return -ENOTCONN; /* the session was closed */
	if (up->all)
		return 0; /* system-wide: the session's processes are not the layer's */
	n = session_pids(up, &pids);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		struct uprobes_proc *pp;

		if (uprobes_proc_find(up, pids[i]) || !pid_armable(up, pids[i]))
			continue;
		pp = uprobes_proc_new(up, pids[i]);
		if (!pp)
			continue;
		if (proc_quiesce(pp) == 0 && uprobes_proc_refresh_image(pp) == 0) {
			uprobes_proc_arm_rbrk(pp);
			uprobes_proc_arm_all_specs(pp);
			armed++;
		}
		proc_resume(pp);
	}
	free(pids);
	return armed;
}

int utrace_uprobes__attach(struct utrace_uprobes *up, pid_t pid)
{
	int err;

	if (!up || pid <= 0)
		return -EINVAL;
	if (!up->s)
		return -ENOTCONN;
	up->attach_why[0] = 0;
	err = up->ops->attach ? up->ops->attach(up, pid, up->attach_why, sizeof(up->attach_why)) :
				utrace_session__attach(up->s, pid);
	if (err) {
		if (!up->attach_why[0])
			snprintf(up->attach_why, sizeof(up->attach_why), "%s", strerror(-err));
		return err;
	}
	err = utrace_uprobes__sync(up);
	return err < 0 ? err : 0;
}

const char *utrace_uprobes__attach_why(const struct utrace_uprobes *up)
{
	return up ? up->attach_why : "";
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
		ret = proc_quiesce(pp);
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
				int r = pt->armed ? pp->up->ops->disarm(pp, pt, true) : 0;

				if (r && !ret)
					ret = r;
				uprobes_remember_removed(pp, pt->addr);
			}
		}
		{
			int r = proc_backend_release(pp);

			if (r && !ret)
				ret = r;
		}
		/* the release waits for traps: the process may have exited */
		for (vp = up->procs; vp && !(vp == pp && vp->pid == pid); vp = vp->next)
			;
		if (!vp)
			return ret;
		proc_resume(pp);
	}
	uprobes_proc_forget_points(pp, UTRACE_DROP_DETACH);
	uprobes_proc_free(pp);
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
	if (up->s && up->s->release_hook == uprobes_session_hook && up->s->release_data == up)
		up->s->release_hook = NULL;
	if (up->s && up->s->after_data == up)
		up->s->after_hook = NULL;
	while (up->procs) {
		if (up->s) {
			proc_release(up->procs);
		} else { /* the session is gone: so are its processes, to us */
			uprobes_proc_forget_points(up->procs, UTRACE_DROP_DETACH);
			uprobes_proc_free(up->procs);
		}
	}
	while (up->deferred) {
		struct uprobes_deferred *d = up->deferred;

		up->deferred = d->next;
		free(d);
	}
	while (up->probes)
		uprobes_probe_free(up->probes);
	while (up->rq) {
		struct uprobes_rec *q = up->rq;

		up->rq = q->next;
		uprobes_rec_free(q);
	}
	if (up->s && up->ops->fini) /* (a closed session took its engines along) */
		up->ops->fini(up);
	if (up->s)
		uprobes_engine_detach(up);
	uprobes_modules_free(up);
	free(up);
}
