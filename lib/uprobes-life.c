/* SPDX-License-Identifier: MIT */
/*
 * uprobes-life.c - the process life cycle of the probe registry
 * (uprobes.c): exec, exit, fork and the dynamic linker's notifications
 * (dlopen/dlclose), and the one engine on the session whose callbacks
 * report them. Backend-independent. Runs in the tracer process, in the
 * session's tracing thread, from the session's callbacks or a backend's
 * stop.
 *
 * From a callback it may not run, attach, detach or close the session
 * (utrace/session.h). Memory that is gone (the old image after an exec,
 * an exited process, an unloaded object) is never touched: its points are
 * freed and their probes told. It arms without quiescing, only where no
 * other thread can run the code concerned (the exec'ing thread is the
 * only one, a fork child has not run yet, an object's dlopen() has not
 * returned).
 *
 * DESIGN
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
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "utrace/proc.h"
#include "backend.h"
#include "internal.h"
#include "uprobes.h"

#ifndef KCMP_VM
#define KCMP_VM 1
#endif

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
	uprobes_proc_exec_pid(up, utrace_thread__pid(th));
}

/**
 * uprobes_proc_exec_pid - uprobes_proc_exec() for a process none of whose
 * threads saw the exec (the agent backend's ANCHOR: only the agent's
 * control thread is traced, and it died in the execve; the new image's
 * agent answered): the SPEC probes are armed in the new image.
 * Return: the new image's process, or NULL (nothing to arm, or it failed)
 */
struct uprobes_proc *uprobes_proc_exec_pid(struct utrace_uprobes *up, pid_t pid)
{
	struct uprobes_proc *pp = uprobes_proc_find(up, pid);
	struct utrace_probe *p;
	bool any = false;

	if (pp) {
		uprobes_proc_forget_points(pp, UTRACE_DROP_EXEC);
		uprobes_proc_free(pp);
	}
	for (p = up->probes; p; p = p->next)
		if (p->is_spec && !p->dead)
			any = true;
	/* utrace_uprobes__free() is quiescing: nothing to arm any more */
	if (!any || up->freeing || up->all)
		return NULL; /* (system-wide: the new image's files are probed already, or not wanted) */
	return uprobes_proc_setup(up, pid, true);
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
	uprobes_proc_forget_points(pp, UTRACE_DROP_EXIT);
	uprobes_proc_free(pp);
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
			cp = uprobes_proc_new(up, child);
			if (cp)
				cp->vfork_parent = pp->pid;
		}
		return;
	}
	if (up->ops->fork_clean)
		up->ops->fork_clean(pp, child);
	if (!followed)
		return;
	cp = uprobes_proc_new(up, child);
	if (!cp)
		return;
	if (uprobes_proc_refresh_image(cp)) {
		uprobes_proc_free(cp);
		return;
	}
	if (up->ops->fork_inherit && up->ops->fork_inherit(cp, pp)) {
		uprobes_proc_free(cp);
		return;
	}
	uprobes_proc_arm_rbrk(cp);
	uprobes_proc_arm_all_specs(cp);
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
			uprobes_point_forget(pp, pt, UTRACE_DROP_UNLOAD);
		}
	}
	utrace_maps__free(maps);
	if (uprobes_proc_refresh_image(pp))
		return;
	uprobes_proc_arm_all_specs(pp);
}

/* ------------------------------------------------------------------------ */
/* The life cycle engine                                                     */
/* ------------------------------------------------------------------------ */

/*
 * One engine on the session for every backend: exec, exit, fork and new
 * processes are the registry's business (the life cycle above), whatever
 * writes the breakpoints. Signals go to the backend (ptrace: its int3s).
 * Session callbacks, tracing thread.
 */
static int on_signal(struct utrace_engine *e, struct utrace_thread *th, siginfo_t *info)
{
	struct utrace_uprobes *up = utrace_engine__ctx(e);

	return up->ops->signal ? up->ops->signal(up, th, info) : UTRACE_RESUME;
}

static int on_thread_exec(struct utrace_engine *e, struct utrace_thread *th, pid_t former)
{
	struct utrace_uprobes *up = utrace_engine__ctx(e);

	(void)former;
	uprobes_proc_exec(up, th);
	return UTRACE_RESUME;
}

static int on_thread_exit(struct utrace_engine *e, struct utrace_thread *th, int status)
{
	struct utrace_uprobes *up = utrace_engine__ctx(e);
	pid_t pid = utrace_thread__pid(th);
	struct uprobes_proc *pp = uprobes_proc_find(up, pid);

	(void)status;
	if (!pp)
		return UTRACE_RESUME;
	if (utrace_session__threads(up->s, pid, NULL, 0) <= 1)
		uprobes_proc_exit(up, pid); /* the last thread: the process is gone */
	else
		uprobes_task_exit(uprobes_points_proc(pp), utrace_thread__tid(th));
	return UTRACE_RESUME;
}

static int on_fork(struct utrace_engine *e, struct utrace_thread *th, pid_t child, bool vfork,
		   bool followed)
{
	struct utrace_uprobes *up = utrace_engine__ctx(e);
	pid_t pid = utrace_thread__pid(th);

	/* clone(CLONE_VM) without CLONE_VFORK shares the memory too */
	if (!vfork && syscall(SYS_kcmp, pid, child, KCMP_VM, 0, 0) == 0)
		vfork = true;
	uprobes_proc_fork(up, pid, child, vfork, followed);
	return UTRACE_RESUME;
}

/* PPid of @pid, or 0. */
static pid_t read_ppid(pid_t pid)
{
	char buf[32];

	if (proc_status_field(pid, "PPid", buf, sizeof(buf)) < 0)
		return 0;
	return (pid_t)atoi(buf);
}

/*
 * A followed fork child may report its first stop before its parent's fork
 * event: set it up now, before it runs (uprobes_proc_fork() is idempotent).
 */
static int on_attach(struct utrace_engine *e, struct utrace_thread *th)
{
	struct utrace_uprobes *up = utrace_engine__ctx(e);
	pid_t pid = utrace_thread__pid(th), ppid;
	bool vfork;

	if (utrace_thread__tid(th) != pid || uprobes_proc_find(up, pid) || up->all)
		return UTRACE_RESUME;
	ppid = read_ppid(pid);
	if (ppid <= 0 || !uprobes_proc_find(up, ppid))
		return UTRACE_RESUME;
	if (utrace_session__threads(up->s, pid, NULL, 0) != 1)
		return UTRACE_RESUME; /* not a fresh fork child */
	vfork = syscall(SYS_kcmp, pid, ppid, KCMP_VM, 0, 0) == 0;
	uprobes_proc_fork(up, ppid, pid, vfork, true);
	return UTRACE_RESUME;
}

int uprobes_engine_attach(struct utrace_uprobes *up)
{
	UTRACE_OPTS(utrace_engine_ops, ops, .signal = on_signal, .exec = on_thread_exec,
		    .exit = on_thread_exit, .fork = on_fork, .attach = on_attach);

	up->engine = utrace_engine__attach(up->s, &ops,
					   UTRACE_EV_SIGNAL | UTRACE_EV_EXEC | UTRACE_EV_EXIT |
						   UTRACE_EV_FORK | UTRACE_EV_ATTACH,
					   up);
	return up->engine ? 0 : -errno;
}

void uprobes_engine_detach(struct utrace_uprobes *up)
{
	if (up->s && up->engine)
		utrace_engine__detach(up->engine);
	up->engine = NULL;
}
