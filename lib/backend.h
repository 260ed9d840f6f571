/* SPDX-License-Identifier: MIT */
/*
 * backend.h - the one contract between the probe registry (uprobes.c) and
 * a backend of the uprobes layer (internal, not installed). The registry
 * owns probes, probe points, SPEC resolution, pending objects, deferral and
 * the process life cycle; a backend owns only what differs between
 * "handlers run in the tracer" (ptrace), "in the probed thread" (agent) and
 * "in the kernel" (eBPF): how a point is armed and disarmed, what it keeps
 * per point and per process, what a fork leaves in the child, and what must
 * go when it lets a process go. Everything here runs in the tracer process,
 * in the session's tracing thread, unlocked (there is one thread).
 *
 * State. A backend keeps its per-layer, per-process and per-point state
 * behind up->priv, pp->priv and pt->priv; the registry never looks inside.
 * Per-point state is created lazily by ->arm() (and freed by ->point_free()
 * whether or not arming succeeded); per-process state by ->proc_init().
 *
 * Order of calls, for one process:
 *   proc_init   when the registry first meets the process (attach, fork, exec)
 *   quiesce     before a batch of arm/disarm calls that threads could race
 *   arm/disarm  per point, each taking effect at once, or at ...
 *   commit      ... the end of the batch (NULL: arm() took effect)
 *   resume      after the batch (also when quiesce failed)
 *   release     after every point was disarmed, before the registry lets
 *               the process go (detach, utrace_uprobes__free()): trampolines,
 *               out-of-line areas, anything the backend put in the target
 *   proc_forget when the address space is gone (exec, exit) or after
 *               release: free pp->priv without touching the target
 *
 * Optional operations are NULL when the backend has nothing to do there.
 */
#ifndef __UTRACE_BACKEND_H
#define __UTRACE_BACKEND_H

#include <stdbool.h>
#include <sys/types.h>

#include <signal.h>

#include "utrace/event.h"
#include "utrace/probe.h"

struct utrace_uprobes;
struct uprobes_proc;
struct probe_point;
struct utrace_thread;
struct uprobes_module;

struct uprobes_backend_ops {
	enum utrace_backend id;
	const char *name;
	/* Set up @up (engine registration, up->priv). 0 or negative errno. */
	int (*init)(struct utrace_uprobes *up);
	void (*fini)(struct utrace_uprobes *up);
	/* Per-process state (pp->priv); 0 or negative errno (the process is not traced then). */
	int (*proc_init)(struct uprobes_proc *pp);
	void (*proc_forget)(struct uprobes_proc *pp);
	/* Stop every thread of @pp that could race a write to a site (optional). */
	int (*quiesce)(struct uprobes_proc *pp);
	void (*resume)(struct uprobes_proc *pp);
	/* Place / remove @pt's probe; pt->orig and pt->insn_len are set. */
	int (*arm)(struct uprobes_proc *pp, struct probe_point *pt);
	int (*disarm)(struct uprobes_proc *pp, struct probe_point *pt, bool alive);
	int (*commit)(struct uprobes_proc *pp);
	void (*point_free)(struct probe_point *pt);
	/* Take out of @pp what the backend put there besides the probes. */
	int (*release)(struct uprobes_proc *pp);
	/*
	 * @child is a fork of @parent that has not run yet (not a vfork):
	 * remove the backend's code and return addresses from its copy.
	 */
	void (*fork_clean)(struct uprobes_proc *parent, pid_t child);
	/* A followed fork child @child adopts what it inherited from @parent. */
	int (*fork_inherit)(struct uprobes_proc *child, const struct uprobes_proc *parent);
	/* A thread entered an unwinder (C++ throw, pthread_exit): its returns go back. */
	void (*unwind_begin)(struct uprobes_proc *pp, pid_t tid);
	/*
	 * A signal-delivery stop of a traced thread (the registry's engine
	 * forwards it): an enum utrace_action. NULL: UTRACE_RESUME.
	 */
	int (*signal)(struct utrace_uprobes *up, struct utrace_thread *th, siginfo_t *info);
	/*
	 * after: optional; after each stop the session handled, outside any
	 * callback (internal.h after_hook): what ->signal left for when the
	 * stopped thread runs again
	 */
	void (*after)(struct utrace_uprobes *up);
	/*
	 * attach: optional; utrace_uprobes__attach(): take running process
	 * @pid into the session the way this backend needs it (NULL: every
	 * thread, utrace_session__attach()). A failure's reason into @why.
	 */
	int (*attach)(struct utrace_uprobes *up, pid_t pid, char *why, size_t whylen);
	/*
	 * The registry's internal points: the dynamic linker's r_brk (how
	 * dlopen is seen) and the unwind guards. Only a backend whose hits
	 * stop the thread in the tracer has them; the others tell the
	 * registry about image changes (uprobes_image_changed()) their own way.
	 */
	bool internal_points;
	/*
	 * Handlers run in the tracer (utrace_probe_opts.handler). false: only
	 * built-in actions; a probe with a handler is refused (EOPNOTSUPP).
	 */
	bool tracer_handlers;
	/*
	 * The probes at @pt changed (one added or removed; pt->nr_probes may
	 * be 0 before a disarm): a backend whose point state depends on what
	 * the probes want (the agent's flags, the kernel's programs) updates it.
	 */
	int (*point_update)(struct uprobes_proc *pp, struct probe_point *pt);
	/*
	 * Add what @p's built-in actions measured at @pt to @c. NULL: the
	 * registry counted at the hits (handlers run in the tracer).
	 */
	void (*point_counts)(struct uprobes_proc *pp, struct probe_point *pt,
			     const struct utrace_probe *p, struct utrace_probe_counts *c);
	/*
	 * Deliver recorded events to @fn, waiting at most @timeout_ms.
	 * NULL: the registry's own queue, filled at the hits, while the
	 * session runs. Return: events delivered, @fn's nonzero return, or
	 * a negative errno.
	 */
	int (*poll)(struct utrace_uprobes *up, utrace_record_fn_t fn, void *ctx, int timeout_ms);
	/*
	 * @pp's points are about to be dropped (exit, exec, detach): hand
	 * its pending events to uprobes_queue_record() while they still
	 * name their points.
	 */
	void (*proc_flush)(struct uprobes_proc *pp);
	/*
	 * Built-in actions (enum utrace_probe_action) the backend cannot
	 * run: a probe asking for one is refused (EOPNOTSUPP), @refused_why
	 * logged once per probe (the kernel: INJECT).
	 */
	unsigned int refused_actions;
	const char *refused_why;
	/*
	 * A backend without internal points watches the dynamic linker its
	 * own way: called when @pp's image is first built (exec, attach,
	 * fork), before its SPECs are armed; the backend then calls
	 * uprobes_dl_activity() at each change of the link map (the kernel:
	 * a BPF uprobe on _dl_debug_state that stops the thread).
	 */
	void (*dl_watch)(struct uprobes_proc *pp);
	/*
	 * System-wide probes (utrace_uprobes_opts.all_exec) can be armed:
	 * the registry's pseudo-process 0 (uprobes_proc.pid == 0, an exec
	 * image with no process behind it) stands for every process that maps
	 * the probed files; its points are to be armed for all of them
	 * (the kernel: uprobe links with pid -1, no tgid filter in BPF).
	 */
	bool system_wide;
	/*
	 * The backend writes nothing in the target (the kernel's uprobes): a
	 * point's displaced bytes are read from the file, never from memory,
	 * where a fork child still holds the kernel's int3 copies of its
	 * parent's probes until their first hit there.
	 */
	bool file_bytes;
	/*
	 * The backend checks a site's live bytes itself when it plans it:
	 * an int3 already on a function's entry is not refused by the
	 * registry (the agent keeps a kernel uprobe's int3 there and puts its
	 * jmp after the first instruction, lib/agent-host.c; it refuses a site
	 * someone else patched, -EBUSY).
	 */
	bool site_checks;
	/*
	 * System calls counted outside the tracer (utrace_uprobes__count_syscalls(),
	 * utrace_uprobes__syscall_counts()); NULL: -EOPNOTSUPP.
	 */
	int (*count_syscalls)(struct utrace_uprobes *up, pid_t pid, unsigned int flags);
	int (*syscall_counts)(struct utrace_uprobes *up, long nr, struct utrace_syscall_counts *c);
	/*
	 * Every SPEC was armed in @pp's new image (exec, fork, dlopen, a new
	 * process): the end of a batch that no resume/commit follows (the
	 * kernel makes its uprobe_multi links here and at ->commit).
	 */
	void (*armed_all)(struct uprobes_proc *pp);
	/*
	 * How @pt is placed (utrace_probe__sites()): @ps->site and @ps->err.
	 * NULL: UTRACE_SITE_INT3 once armed (the registry's breakpoints).
	 */
	void (*site)(struct uprobes_proc *pp, struct probe_point *pt, struct utrace_point_site *ps);
	/*
	 * C probe modules whose handlers run where the probes do (the agent):
	 * load @m into every process now, and into later ones by itself
	 * (module_load; NULL with tracer_handlers: they run in the tracer,
	 * else modules are refused); add the live processes' counters to @c.
	 */
	int (*module_load)(struct utrace_uprobes *up, struct uprobes_module *m, char *why,
			   size_t whylen);
	void (*module_counts)(struct utrace_uprobes *up, const struct uprobes_module *m,
			      uint64_t *c);
	/*
	 * utrace_uprobes__own_syscall(): is the syscall @th is stopped at
	 * (its entry) made by what the backend runs in the target? NULL: none.
	 */
	bool (*own_syscall)(struct utrace_uprobes *up, struct utrace_thread *th);
	/* utrace_uprobes__own_signal(): is @si, delivered to @th, the backend's? NULL: none */
	bool (*own_signal)(struct utrace_uprobes *up, struct utrace_thread *th,
			   const siginfo_t *si);
	/* utrace_uprobes__backend_how(); NULL: "" */
	const char *(*how)(struct utrace_uprobes *up);
};

/* The backends built into this library, one file each. */
extern const struct uprobes_backend_ops uprobes_ptrace_ops;
extern const struct uprobes_backend_ops uprobes_agent_ops;
#ifdef UTRACE_HAVE_BPF
extern const struct uprobes_backend_ops uprobes_kernel_ops; /* backend-kernel.c */
#endif

#endif /* __UTRACE_BACKEND_H */
