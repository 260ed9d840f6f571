/* SPDX-License-Identifier: MIT */
/*
 * probe.h - the uprobes layer: breakpoint probes on user code, with the
 * semantics of the 2007 paper ("Ptrace, Utrace, Uprobes"), and the context
 * that probe handlers get. Handlers are written once against this header
 * and run by any backend:
 *
 *   ptrace  - handlers run in the tracer process, in the session's tracing
 *             thread, while the probed thread is in a ptrace stop;
 *   agent   - handlers run inside the target, in the probed thread
 *             (C probe modules loaded with utrace -m);
 *   kernel  - the kernel's uprobes; only the built-in handlers (counting,
 *             recording arguments) can run there.
 *
 * Semantics (all backends):
 * - A probe is a handler bound to a SPEC or to one (process, address). It is
 *   armed at every probe point it resolves to, in every traced process, and
 *   shared by all threads, including threads created later.
 * - Any number of probes may share an address; their handlers run in
 *   registration order. A breakpoint is never removed while the process
 *   runs: displaced instructions execute out of line, so no thread can run
 *   past a probe.
 * - Inserting or removing breakpoints quiesces the process; a hit does not
 *   stop other threads.
 * - Return probes replace the return address with a trampoline; the real one
 *   is kept per thread and checked against the stack pointer (longjmp and
 *   exceptions unwind past frames); depth is bounded, overflow is counted.
 *   Before an unwinder walks a thread's stack (C++ throw, pthread_exit,
 *   cancellation) the thread's hijacked return addresses are put back and
 *   its pending returns counted as missed: the unwinder never meets the
 *   trampoline, which has no unwind info.
 * - fork: the child carries no probes (its copy of the breakpoints and of
 *   the trampoline return addresses is removed before it runs). When the
 *   session follows forks (-F), the child is a traced process of its own
 *   and the SPEC probes are armed in it; address probes never are. A vfork
 *   (or CLONE_VM) child shares its parent's memory and so its breakpoints
 *   until it execs: followed, its hits are handled; not followed, it must
 *   not call a probed function before exec (ptrace backend limit).
 * - exec and exit: the process's probe points are dropped and the owner
 *   told (opts->dropped); with a SPEC, exec re-arms in the new image.
 * - A SPEC on an object that is not loaded stays pending and is armed when
 *   the object is loaded (dlopen), in every traced process; a point in an
 *   object unloaded by dlclose is dropped (UTRACE_DROP_UNLOAD) and re-armed
 *   if it is loaded again.
 * - (Un)registering from inside a handler is deferred until every handler
 *   of that hit has run; opts->done reports completion.
 *
 * Typical use (launch mode):
 *
 *	s = utrace_session__new(NULL);
 *	up = utrace_uprobes__new(s, NULL);
 *	utrace_probe__register_spec(up, "libc:malloc", &opts);   (pending until exec)
 *	utrace_session__launch(s, argv, NULL);
 *	while (utrace_session__run(s, -1) == UTRACE_RUN_BREAK)
 *		;
 *	utrace_uprobes__free(up);      (before closing the session)
 *	utrace_session__close(s);
 *
 * Attach mode: utrace_session__attach() first, then register (or register
 * first and call utrace_uprobes__sync() after attaching).
 */
#ifndef __UTRACE_PROBE_H
#define __UTRACE_PROBE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "utrace/common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct utrace_session;
struct utrace_uprobes;
struct utrace_probe;
struct utrace_probe_ctx;

enum utrace_backend {
	UTRACE_BACKEND_AUTO = 0,
	UTRACE_BACKEND_AGENT,
	UTRACE_BACKEND_PTRACE,
	UTRACE_BACKEND_KERNEL,
	__UTRACE_BACKEND_MAX,
};

/** @brief **utrace_backend_str()** "auto", "agent", "ptrace", "kernel". */
UTRACE_API const char *utrace_backend_str(enum utrace_backend b);

/**
 * struct utrace_uprobes_opts - options of utrace_uprobes__new().
 * @sz: size of this struct
 * @backend: enum utrace_backend (AUTO: the fastest that works)
 * @max_depth: return probes: nested return instances kept per thread
 *	(default 64); deeper calls are not reported at return and counted
 * @agent_path: the agent backend's libutrace-agent.so (NULL: $UTRACE_AGENT,
 *	else $UTRACE_BUILD_DIR/agent/, else the installed one); it is loaded
 *	into targets, so it must be a file nobody but us or root can replace
 * @flags: UTRACE_UPROBES_* below
 * @all_exec: system-wide probing (NULL: the session's processes only).
 *	SPEC probes resolve against the image a launch of @all_exec would have
 *	(the executable and its DT_NEEDED closure, utrace_image__open_exec())
 *	and are armed on the files themselves: every process that maps a
 *	probed file counts and records, whoever started it and whenever,
 *	before or after the probe was registered, with no process filter.
 *	The session's processes are not tracked by the layer then (a launched
 *	command runs as any other process); address probes
 *	(utrace_probe__register()) fail with EOPNOTSUPP; records carry the
 *	hitting process's pid and name (utrace_record.comm). Only the kernel
 *	backend can do it (AUTO picks it); asking another one fails with
 *	EOPNOTSUPP and a logged reason
 */
struct utrace_uprobes_opts {
	size_t sz;
	int backend;
	unsigned int max_depth;
	const char *agent_path;
	/*
	 * Agent backend, launch mode: once the probes are armed, keep only the
	 * agent's control thread traced (backend-agent.c, ANCHOR), so that no
	 * ptrace stop (a detach's, a signal's) ever makes the program's
	 * epoll_wait, semop, sigtimedwait or io_getevents fail with EINTR, and
	 * its signals cost no stop. An exec of a launched process is
	 * followed (the new image preloads the agent again, which is armed
	 * before its main() runs); one of an attached process is not (the
	 * agent was loaded into the old image only: a warning). Attach mode:
	 * utrace_uprobes__attach().
	 */
	bool agent_untraced;
	unsigned int flags;
	const char *all_exec;
	/*
	 * Kernel backend, UTRACE_SC_RECORD: the bytes of a buffer copied with
	 * a syscall's record (write's data, read's), as strace's -s (0: 32;
	 * at most 511). Strings (paths) are copied up to 511 bytes whatever it
	 * is; structs whole.
	 */
	unsigned int sc_str_max;
	size_t : 0;
};
/*
 * Lossless records (utrace record): a probed thread whose ring is full
 * waits for utrace_uprobes__poll() to drain it instead of dropping the
 * record; it stops waiting, and drops and counts (UTRACE_REC_LOST), when
 * the tracer is gone, the session ends, or nothing was drained for 2 s.
 * Agent backend (the ptrace backend never drops; the kernel's ring does).
 */
#define UTRACE_UPROBES_RING_WAIT (1U << 0)
/*
 * Launch mode (agent backend): a command none of whose probe points could
 * be placed at its start (every site refused: a kernel uprobe's int3 on a
 * short function, a planner refusal), and with no SPEC waiting for a
 * library, is killed before its first instruction instead of running
 * unprobed; utrace_uprobes__attach_why() then begins with
 * UTRACE_WHY_NOTHING_ARMED. (The ptrace backend arms at the exec event,
 * where utrace_probe__stats() tells the same before anything runs.)
 */
#define UTRACE_UPROBES_LAUNCH_ARMED (1U << 1)
/*
 * Agent backend with agent_untraced: fork children keep their probes (the
 * agent makes each child an arena of its own before fork() returns there,
 * agent.c fork_rearena()) and are traced as processes of their own, with
 * their parent's points and figures of their own, found while
 * utrace_uprobes__poll() runs (a child waits at most 1 s for that). Without
 * it a child runs without the probes. A child's exec is not followed yet
 * (its new image runs unprobed, said once). The ptrace backend follows
 * the children the session follows (utrace_session_opts.follow_forks).
 */
#define UTRACE_UPROBES_FOLLOW_FORKS (1U << 2)
#define UTRACE_WHY_NOTHING_ARMED "no probe point could be armed"
#define utrace_uprobes_opts__last_field max_depth

/**
 * @brief **utrace_uprobes__new()** creates the uprobes layer of session @s
 * (an engine on it). Create it before launching, so that SPEC probes
 * registered before utrace_session__launch() are armed at the exec, before
 * the command runs its first instruction. A process taken with
 * utrace_session__attach() is armed when a probe is registered after the
 * attach, or by utrace_uprobes__sync() for the probes registered before.
 * @return new object, freed with utrace_uprobes__free(); NULL with errno set
 * on failure (EINVAL, ENOMEM, EOPNOTSUPP: backend unavailable, or
 * @all_exec with a backend that cannot probe system-wide; ENOENT, EACCES:
 * @all_exec cannot be read)
 */
UTRACE_API struct utrace_uprobes *utrace_uprobes__new(struct utrace_session *s,
						      const struct utrace_uprobes_opts *opts);

/**
 * @brief **utrace_uprobes__free()** unregisters every probe (quiescing each
 * process, removing every breakpoint: code bytes identical to before;
 * putting back every return address replaced by a trampoline; unmapping
 * the XOL areas) and frees @up. Call it before utrace_session__close() or
 * utrace_session__detach(): a process left with breakpoints would die of
 * its next hit once untraced. Accepts NULL.
 */
UTRACE_API void utrace_uprobes__free(struct utrace_uprobes *up);

/**
 * @brief **utrace_uprobes__attach()** takes running process @pid for the
 * layer the way its backend needs it, and arms the SPEC probes registered
 * so far. The ptrace and kernel backends: utrace_session__attach() (every
 * thread is stopped once). The agent with agent_untraced: the agent is
 * loaded through one chosen thread (lib/inject.c) and only its control
 * thread stays traced, so that no thread of the program is ever stopped
 * (no EINTR in its epoll_wait, semop, sigtimedwait, io_getevents, at the
 * attach or at the detach). A library loaded later is seen while
 * utrace_uprobes__poll() runs (the executable mappings, every 100 ms).
 * @return 0; negative errno, with the reason in utrace_uprobes__attach_why()
 */
UTRACE_API int utrace_uprobes__attach(struct utrace_uprobes *up, pid_t pid);

/**
 * @brief **utrace_uprobes__attach_why()** why the last attach failed ("" if
 * it did not); with the agent, also why a launched command ran without its
 * probes ("target exited before the agent was ready": its agent never
 * answered).
 */
UTRACE_API const char *utrace_uprobes__attach_why(const struct utrace_uprobes *up);

/** @brief **utrace_uprobes__backend()** the backend in use (never AUTO). */
UTRACE_API enum utrace_backend utrace_uprobes__backend(const struct utrace_uprobes *up);

/**
 * @brief **utrace_uprobes__backend_why()** why AUTO chose the backend in
 * use ("the agent loads", "the agent is not installed: ..."); for an
 * explicit choice, "asked for". @return a string owned by @up
 */
UTRACE_API const char *utrace_uprobes__backend_why(const struct utrace_uprobes *up);

/**
 * @brief **utrace_uprobes__backend_how()** how the backend places its
 * probes, where it has a choice: the kernel's "uprobe_multi links (...)"
 * or "one uprobe link per probe point (why)"; "" for the others.
 * @return a string owned by @up
 */
UTRACE_API const char *utrace_uprobes__backend_how(struct utrace_uprobes *up);

/**
 * @brief **utrace_uprobes__detach_pid()** takes every breakpoint, return
 * trampoline and XOL area out of process @pid (as utrace_uprobes__free()
 * does for all) and forgets it; the probes stay registered. Call it before
 * utrace_session__detach_pid(). Not from a handler.
 * @return 0 on success; -ESRCH if @pid has no probe point; -EINVAL from a
 * handler; another negative error code if something could not be undone
 * (logged; the process keeps running correctly): the agent's -EBUSY, a
 * site it left patched (an inert jmp, because a thread blocked SIGTRAP
 * throughout); -EBADMSG, its arena failed a check
 */
UTRACE_API int utrace_uprobes__detach_pid(struct utrace_uprobes *up, pid_t pid);

/**
 * @brief **utrace_uprobes__sync()** arms every SPEC probe in every process
 * of the session that is not known yet (attached after the probes were
 * registered). Quiesces each such process while arming.
 * @return number of processes armed (>= 0); negative error code otherwise
 * (the first error; the other processes are still armed)
 */
UTRACE_API int utrace_uprobes__sync(struct utrace_uprobes *up);

/** struct utrace_uprobes_stats - counters of the whole layer. */
struct utrace_uprobes_stats {
	uint64_t hits; /* entry hits handled */
	uint64_t returns; /* return-trampoline hits handled */
	uint64_t missed_returns; /* depth overflow or unwound past (longjmp) */
	uint64_t foreign_traps; /* SIGTRAPs that were not ours (passed on) */
	uint64_t late_traps; /* hits of a breakpoint removed meanwhile (re-executed) */
	uint64_t dl_events; /* dynamic linker notifications (r_brk hits) */
	uint64_t xol_areas; /* XOL areas mapped */
	uint64_t points; /* probe points armed now */
	uint64_t deferred; /* (un)registrations deferred from handlers */
	uint64_t points_made; /* the probes' points made in all, gone ones (exit, exec,
				 dlclose) too; not the layer's own (r_brk, unwinder guards) */
};

/**
 * @brief **utrace_uprobes__stats()** reads the layer's counters.
 * @return 0 on success; -EINVAL on bad arguments
 */
UTRACE_API int utrace_uprobes__stats(const struct utrace_uprobes *up,
				     struct utrace_uprobes_stats *st);

/**
 * @brief **utrace_uprobes__pid_stats()** one process's share, from its
 * probes' figures (on every backend, the in-target counters included):
 * hits (entry calls counted), returns, missed_returns, and points (armed
 * in it now); the other fields are 0. A process gone or detached keeps
 * its hits and returns.
 * @return 0; -ESRCH if @pid was never traced by @up; -EINVAL
 */
UTRACE_API int utrace_uprobes__pid_stats(const struct utrace_uprobes *up, pid_t pid,
					 struct utrace_uprobes_stats *st);

/**
 * Handler return values. UTRACE_PROBE_OK: go on. UTRACE_PROBE_REMOVE:
 * unregister this probe after the hit (deferred, like any unregistration from
 * a handler).
 */
enum utrace_probe_ret {
	UTRACE_PROBE_OK = 0,
	UTRACE_PROBE_REMOVE = 1,
};

typedef int (*utrace_handler_fn_t)(struct utrace_probe_ctx *ctx, void *data);
typedef void (*utrace_probe_done_fn_t)(struct utrace_probe *p, int err, void *data);

/** why a probe point was dropped. */
enum utrace_drop_reason {
	UTRACE_DROP_EXEC = 1,
	UTRACE_DROP_EXIT,
	UTRACE_DROP_DETACH,
	UTRACE_DROP_UNLOAD, /* the object was unloaded (dlclose); a SPEC re-arms if reloaded */
	UTRACE_DROP_UNREGISTER, /* the probe was unregistered */
};
typedef void (*utrace_probe_dropped_fn_t)(struct utrace_probe *p, pid_t pid,
					  enum utrace_drop_reason why, void *data);

/**
 * struct utrace_point_opts - the built-in actions' settings at one probe
 * point, where the functions a SPEC matches differ (which arguments are
 * strings, which returns are errors: each function's prototype says).
 * Filled with the probe's own @nargs, @str_args and @err_kind, then handed
 * to utrace_probe_opts.point_opts, which may change them.
 */
struct utrace_point_opts {
	unsigned int nargs;
	uint32_t str_args;
	int err_kind;
};
struct utrace_probe_point_info;
typedef void (*utrace_point_opts_fn_t)(struct utrace_probe *p,
				       const struct utrace_probe_point_info *point,
				       struct utrace_point_opts *po, void *data);

/**
 * struct utrace_probe_opts - what a probe does. Handlers of the ptrace
 * backend run in the tracing thread while the probed thread is stopped;
 * they may call any utrace_probe_ctx__*() function, and register or
 * unregister probes (deferred, see @done); they must not call
 * utrace_session__run() or free the session or @up.
 * @sz: size of this struct
 * @handler: runs at each entry hit (or, with @retprobe, at each return)
 * @ret_handler: runs at each return of the probed function; setting both
 *	@handler and @ret_handler makes one probe with paired entry and return
 *	(-f), where the return context carries the entry timestamp
 * @retprobe: only a return probe: @handler runs at returns (-r)
 * @data: passed to every callback
 * @done: completion of a registration or unregistration deferred because
 *	it was made from a handler (also called, with err = 0, for an
 *	immediate registration). After a failed registration or an
 *	unregistration, the probe is freed when @done returns
 * @dropped: a probe point of this probe was dropped (exec, exit, detach)
 * @actions: built-in actions (enum utrace_probe_action), on every backend
 * @nargs: ACT_RECORD: integer arguments recorded at entry (0..6)
 * @str_args: ACT_RECORD: bit i (0..5): argument i is a C string, copied
 *	at the hit; bit 6: so is the return value
 * @str_max: ACT_RECORD: bytes kept per string (0: 32; at most 1024)
 * @err_kind: enum utrace_err_kind: which returns COUNT calls errors
 * @inject_value, @inject_every: ACT_INJECT: every @inject_every-th call
 *	(0 and 1: every call) returns @inject_value without running
 * @point_opts: called (in the tracer) when the probe gets a new probe
 *	point, before it is armed, to set that point's @nargs, @str_args and
 *	@err_kind (struct utrace_point_opts); NULL: the probe's own everywhere
 * @module: a C probe module's id (utrace_uprobes__load_module()), 0: none.
 *	The probe runs entry @module_probe of the module's table: its
 *	handlers, where the backend runs handlers (agent: in the probed
 *	thread; ptrace: in the tracer), after the point's built-in actions.
 *	@handler and @ret_handler must be NULL; @actions may add built-in
 *	ones. A table entry with a return handler gets a timed entry
 *	(ctx->entry_ns) on every backend
 * @exclude: SPECs (utrace_probe__register_spec() only) whose matches this
 *	probe leaves out: a function that @spec and one of them match is not
 *	probed, in every process and every object loaded later (ltrace's
 *	'-' rules: -e 'malloc+free-@libc.so.6'). NULL-terminated, parsed
 *	and kept at registration; NULL: none. A malformed one fails the
 *	registration (-UTRACE_ERRNO__SPEC, said through the log)
 */
struct utrace_probe_opts {
	size_t sz;
	utrace_handler_fn_t handler;
	utrace_handler_fn_t ret_handler;
	bool retprobe;
	void *data;
	utrace_probe_done_fn_t done;
	utrace_probe_dropped_fn_t dropped;
	unsigned int actions;
	unsigned int nargs;
	uint32_t str_args;
	unsigned int str_max;
	int err_kind;
	uint64_t inject_value;
	uint64_t inject_every;
	utrace_point_opts_fn_t point_opts;
	int module;
	unsigned int module_probe;
	const char *const *exclude;
	size_t : 0;
};
#define utrace_probe_opts__last_field dropped /* the fields after it are optional */

/**
 * @brief **utrace_probe__register()** registers a probe at runtime address
 * @addr of process @pid (must be an instruction boundary in a mapped ELF
 * object; the site planner decides int3 / jmp / refused; at a function
 * entry that starts with endbr64 the probe goes after it). The process is
 * quiesced while the breakpoint is written. The probe is dropped (not
 * re-armed) when @pid execs or exits; opts->dropped tells.
 * Called from a handler: returns at once, the breakpoint is written after
 * the hit's handlers have run, and opts->done reports the result.
 * @return new probe (owned by @up); NULL with errno set on failure:
 * ESRCH (pid not traced), UTRACE_ERRNO__NOT_PATCHABLE (site refused; the
 * planner's reason is logged), EFAULT (address not in a mapped ELF
 * object's code), EEXIST (another tracer's breakpoint is already there)
 */
UTRACE_API struct utrace_probe *utrace_probe__register(struct utrace_uprobes *up, pid_t pid,
						       uint64_t addr,
						       const struct utrace_probe_opts *opts);

/**
 * @brief **utrace_probe__register_spec()** registers a probe on every point
 * SPEC (see utrace/spec.h) resolves to, in every process traced now or
 * later (children with -F, new images after exec), and keeps it pending on
 * objects not loaded yet.
 * @return new probe; NULL with errno set: UTRACE_ERRNO__SPEC (malformed),
 * UTRACE_ERRNO__NOMATCH (matches nothing and cannot become pending)
 */
UTRACE_API struct utrace_probe *utrace_probe__register_spec(struct utrace_uprobes *up,
							    const char *spec,
							    const struct utrace_probe_opts *opts);

/* utrace_module__open() flags */
#define UTRACE_MODULE_IN_TARGET (1U << 0) /* its handlers will run in the target (the agent) */

struct utrace_module; /* utrace/module.h (include it with UTRACE_MODULE_LOADER defined) */

/**
 * @brief **utrace_module__open()** checks that @path is a C probe module
 * that may be loaded (utrace/module.h, docs/modules.md): a regular file
 * that nobody but its owner (us or root) can change, in directories no one
 * else can change, up to /; loadable (dlopen() in this process: its
 * constructors run here); a descriptor of this module ABI with a name and
 * probes that have handlers. With UTRACE_MODULE_IN_TARGET its code is also
 * decoded: one instruction on an SSE/AVX/x87/MMX register refuses it (the
 * agent's trampolines save integer registers only). The module stays
 * loaded in this process (never dlclose()d). @why (may be NULL) gets one
 * line on failure.
 * @return 0 (*@desc, may be NULL: the descriptor), or a negative error:
 * -ENOENT and other errors of the path, -EPERM (others may change it),
 * -ENOEXEC (not loadable, no descriptor, a bad one), -EOPNOTSUPP (SIMD code
 * with UTRACE_MODULE_IN_TARGET)
 */
UTRACE_API int utrace_module__open(const char *path, unsigned int flags,
				   const struct utrace_module **desc, char *why, size_t whylen);

/**
 * @brief **utrace_uprobes__load_module()** loads the C probe module @path
 * into @up, checked as utrace_module__open() does (in the target's terms
 * when the backend runs handlers there). With the agent every process
 * traced now loads it at once (a failure there, e.g. another file at that
 * path in the process's mount namespace, fails the call), and every later
 * one (attach, launch, exec, -F children) before its probes are armed.
 * Then register its probes with utrace_probe_opts.module; nothing runs
 * before. At most 8 modules per layer.
 * @return the module's id (> 0); a negative error as utrace_module__open()
 * says, or -EEXIST (loaded already), -E2BIG (too many), -EOPNOTSUPP (the
 * kernel backend runs no C code), with one line in @why (may be NULL)
 */
UTRACE_API int utrace_uprobes__load_module(struct utrace_uprobes *up, const char *path, char *why,
					   size_t whylen);

/**
 * @brief **utrace_uprobes__own_syscall()** is the system call @th is
 * stopped at (its entry stop, in a syscall engine of the same session)
 * one that @up's backend makes in the target, not the program? The agent's
 * control thread, its constructor (launch: before main()) and the calls
 * of its code are; a syscall tracer hides them (utrace -s with -b agent).
 */
struct utrace_thread;
UTRACE_API bool utrace_uprobes__own_syscall(struct utrace_uprobes *up, struct utrace_thread *th);

/**
 * @brief **utrace_uprobes__own_signal()** is signal @si, about to be
 * delivered to @th, one of @up's backend (the agent's SIGTRAP of an
 * int3-mode site, its upgrade signal)? Its handler is the agent's, and its
 * rt_sigreturn too: a syscall tracer hides the three.
 */
UTRACE_API bool utrace_uprobes__own_signal(struct utrace_uprobes *up, struct utrace_thread *th,
					   const siginfo_t *si);

/**
 * @brief **utrace_uprobes__module()** the descriptor of module @id (its
 * name, probe table and counter names), NULL if there is none.
 */
UTRACE_API const struct utrace_module *utrace_uprobes__module(struct utrace_uprobes *up, int id);

/**
 * @brief **utrace_uprobes__module_counters()** module @id's counters
 * (utrace_module__count()) summed over every process it ran in, gone or
 * running, read while the program runs: the first @n into @vals.
 * @return the module's number of counters, or -EINVAL
 */
UTRACE_API int utrace_uprobes__module_counters(struct utrace_uprobes *up, int id, uint64_t *vals,
					       unsigned int n);

/**
 * @brief **utrace_probe__unregister()** removes @p from every probe point
 * (the breakpoint goes when no probe is left at that address) and frees it;
 * from a handler, deferred until the hit's handlers have run. Accepts NULL.
 * @return 0 on success; negative error code otherwise (the probe is then
 * disabled but may still be armed)
 */
UTRACE_API int utrace_probe__unregister(struct utrace_probe *p);

/**
 * @brief **utrace_probe__name()** the SPEC text, or "PID:0xADDR" for an
 * address probe. @return a string owned by @p
 */
UTRACE_API const char *utrace_probe__name(const struct utrace_probe *p);

/** struct utrace_probe_stats - per-probe counters. */
struct utrace_probe_stats {
	uint64_t hits; /* entry hits */
	uint64_t returns; /* return hits */
	uint64_t missed_returns; /* depth overflow or unwound past (longjmp) */
	uint64_t points; /* armed probe points now */
	uint64_t pending; /* pending SPEC objects */
};

/** @brief **utrace_probe__stats()** reads @p's counters. @return 0 or negative error code */
UTRACE_API int utrace_probe__stats(const struct utrace_probe *p, struct utrace_probe_stats *st);

/* ------------------------------------------------------------------------ */
/* Built-in actions                                                          */
/* ------------------------------------------------------------------------ */

/**
 * enum utrace_probe_action - what a probe does without a handler (bits of
 * utrace_probe_opts.actions). Built-in actions run where the backend runs
 * probes: in the probed thread (agent: nanoseconds, no stop), in the
 * tracer at the ptrace stop (ptrace), in BPF (kernel). They are the only
 * thing the agent and kernel backends run: a tracer-side @handler or
 * @ret_handler is refused there (EOPNOTSUPP); C code in the target is a
 * probe module (utrace/module.h).
 * @UTRACE_ACT_COUNT: count calls (entry hits); with a return half and
 *	@err_kind, also the returns that are errors
 * @UTRACE_ACT_HIST: time each call from entry to return: exact sum, min
 *	and max, and a log2 histogram (struct utrace_probe_counts)
 * @UTRACE_ACT_RECORD: an event at each entry and each return, with
 *	@nargs arguments and the strings @str_args names, copied at the hit
 *	(struct utrace_record in utrace/event.h, utrace_uprobes__poll())
 * @UTRACE_ACT_STACK: RECORD events carry the user stack at entry
 * @UTRACE_ACT_INJECT: every @inject_every-th call returns @inject_value
 *	at once without running the function (fault injection)
 * @UTRACE_ACT_NORET: no return half: nothing is done at returns (no
 *	return trampoline: cheaper); RECORD then records entries only
 *
 * A probe with actions has an entry half unless @retprobe, and a return
 * half when it has HIST, RECORD, COUNT with an @err_kind, or @retprobe,
 * unless NORET.
 */
enum utrace_probe_action {
	UTRACE_ACT_COUNT = 1U << 0,
	UTRACE_ACT_HIST = 1U << 1,
	UTRACE_ACT_RECORD = 1U << 2,
	UTRACE_ACT_STACK = 1U << 3,
	UTRACE_ACT_INJECT = 1U << 4,
	UTRACE_ACT_NORET = 1U << 5,
};

/**
 * enum utrace_err_kind - which return values count as errors (the
 * function's prototype decides: -1 and errno, NULL, ...).
 */
enum utrace_err_kind {
	UTRACE_ERRK_NONE = 0,
	UTRACE_ERRK_NEG32, /* a negative int (-1 and errno) */
	UTRACE_ERRK_NEG64, /* a negative long */
	UTRACE_ERRK_NULL, /* a NULL pointer */
	UTRACE_ERRK_NONZERO, /* a nonzero int (pthread_*: the error number) */
	UTRACE_ERRK_SQLITE, /* not SQLITE_OK, SQLITE_ROW or SQLITE_DONE */
	UTRACE_ERRK_MAPFAIL, /* MAP_FAILED */
};

/* log2 buckets of a utrace_probe_counts histogram */
#define UTRACE_HIST_BUCKETS 64

/**
 * struct utrace_probe_counts - the figures of a probe's built-in actions,
 * summed over its points, processes and threads. Readable at any time
 * while the program runs (utrace_probe__counts()).
 * @calls: entry hits (COUNT)
 * @returns: returns seen (COUNT, HIST with a return half)
 * @errors: returns that @err_kind calls errors, and injected error values
 * @timed: calls timed from entry to return (HIST)
 * @sum_ns, @min_ns, @max_ns: exact figures of the timed calls (min_ns is 0
 *	while @timed is 0)
 * @hist: @hist[0]: durations under 1 ns; then for each unit (ns, us, ms)
 *	ten buckets [2^k, 2^(k+1)) units, the tenth ending at the next unit
 *	([512ns, 1us)), seconds doubling after (utrace_hist_bucket_range())
 * @injected: calls that got @inject_value (INJECT)
 * @missed_returns: returns not seen (depth limit, longjmp, unwinding)
 */
struct utrace_probe_counts {
	uint64_t calls;
	uint64_t returns;
	uint64_t errors;
	uint64_t timed;
	uint64_t sum_ns;
	uint64_t min_ns;
	uint64_t max_ns;
	uint64_t hist[UTRACE_HIST_BUCKETS];
	uint64_t injected;
	uint64_t missed_returns;
	/*
	 * Calls counted in @calls that ran no action but the count: the
	 * agent's hits from a signal handler that interrupted its handler in
	 * the same thread (no record, no return timing). 0 on other backends.
	 */
	uint64_t unrecorded;
};

/**
 * @brief **utrace_hist_bucket_range()** the edges of histogram bucket @b:
 * [*@lo_ns, *@hi_ns) (the last bucket ends at UINT64_MAX).
 */
UTRACE_API void utrace_hist_bucket_range(unsigned int b, uint64_t *lo_ns, uint64_t *hi_ns);

/**
 * @brief **utrace_hist_bucket()** the histogram bucket a duration of @ns
 * falls in, on every backend (a writer's own histogram then has the same
 * edges as utrace_probe_counts.hist).
 */
UTRACE_API unsigned int utrace_hist_bucket(uint64_t ns);

/**
 * @brief **utrace_errk_is_error()** does return value @rax count as an
 * error under rule @err_kind (enum utrace_err_kind), as COUNT counts it?
 */
UTRACE_API bool utrace_errk_is_error(int err_kind, uint64_t rax);

/**
 * @brief **utrace_probe__counts()** reads @p's built-in figures now (the
 * program may be running; the agent's are read from the target's shared
 * counters without stopping it).
 * @return 0 on success; -EINVAL on bad arguments
 */
UTRACE_API int utrace_probe__counts(const struct utrace_probe *p, struct utrace_probe_counts *c);

/**
 * The callback of utrace_probe__point_counts(): one probe point's figures.
 * @name: its display name ("libc.so.6:malloc"), @symbol (NULL for an
 * address), @object (the file's path). Return nonzero to stop.
 */
typedef int (*utrace_point_counts_fn_t)(const char *name, const char *symbol, const char *object,
					const struct utrace_probe_counts *c, void *ctx);

/**
 * @brief **utrace_probe__point_counts()** @p's figures point by point (the
 * functions of a SPEC glob one by one: `utrace -c` rows), the points that
 * are gone first (an exited process, an exec's old image, an unloaded
 * library; a name may come more than once: add them up).
 * @return 0; the callback's nonzero return; -EINVAL
 */
UTRACE_API int utrace_probe__point_counts(const struct utrace_probe *p, utrace_point_counts_fn_t fn,
					  void *ctx);

/*
 * enum utrace_site - how a probe point is placed in its process.
 * @UTRACE_SITE_PENDING: not placed yet (the agent's next SYNC, a launched
 *	command before its hello)
 * @UTRACE_SITE_INT3: a breakpoint (ptrace: every point; the agent: a site
 *	too short for a jmp, or one being upgraded)
 * @UTRACE_SITE_JMP: the agent's 5-byte jmp into its trampoline (no trap)
 * @UTRACE_SITE_KERNEL: a kernel uprobe (the kernel backend)
 * @UTRACE_SITE_FAILED: refused or failed: utrace_point_site.err says why
 * @UTRACE_SITE_TAKEN: the agent gave its site back to a kernel uprobe
 *	placed on it since (bpftrace, perf probe): no longer counted
 */
enum utrace_site {
	UTRACE_SITE_PENDING,
	UTRACE_SITE_INT3,
	UTRACE_SITE_JMP,
	UTRACE_SITE_KERNEL,
	UTRACE_SITE_FAILED,
	UTRACE_SITE_TAKEN,
};

/**
 * struct utrace_point_site - one live probe point of a probe.
 * @sz: size of this struct
 * @pid: its process (0: every process of the file, system-wide)
 * @addr: its runtime address
 * @name, @symbol, @object: as in utrace_point_counts_fn_t
 * @site: how it is placed
 * @err: UTRACE_SITE_FAILED: the negative errno
 */
struct utrace_point_site {
	size_t sz;
	pid_t pid;
	uint64_t addr;
	const char *name;
	const char *symbol;
	const char *object;
	enum utrace_site site;
	int err;
};
typedef int (*utrace_point_site_fn_t)(const struct utrace_point_site *ps, void *ctx);

/**
 * @brief **utrace_probe__sites()** calls @fn for each live probe point of
 * @p with how it is placed (`utrace -vv`: "NAME armed (jmp)"), so a tool
 * can tell an int3 site (a trap per hit) from a jmp one, and say why a
 * point failed. The strings are valid during the call.
 * @return 0; the callback's nonzero return; -EINVAL
 */
UTRACE_API int utrace_probe__sites(const struct utrace_probe *p, utrace_point_site_fn_t fn,
				   void *ctx);

/** @brief **utrace_site_str()** "int3", "jmp", "uprobe", "pending", "failed", "taken". */
UTRACE_API const char *utrace_site_str(enum utrace_site site);

/* ------------------------------------------------------------------------ */
/* System calls in the kernel (the kernel backend)                           */
/* ------------------------------------------------------------------------ */

/**
 * struct utrace_syscall_counts - one syscall number's figures, counted in
 * BPF at the raw_syscalls tracepoints: @calls returns seen (exit and
 * exit_group never return and are not counted, as strace -c), @errors
 * returns in [-4095, -1], @total_ns, @min_ns, @max_ns from entry to return
 * (wall clock: blocked time included, as strace -c -w).
 */
struct utrace_syscall_counts {
	uint64_t calls;
	uint64_t errors;
	uint64_t total_ns;
	uint64_t min_ns;
	uint64_t max_ns;
};

/* flags of utrace_uprobes__count_syscalls() */
enum utrace_syscalls_flags {
	/* from the process's next exec on (a command just launched: not its launcher's calls) */
	UTRACE_SC_AT_EXEC = 1U << 0,
	/* its fork children too (and theirs), from their first instruction */
	UTRACE_SC_FOLLOW = 1U << 1,
	/*
	 * a UTRACE_REC_SYSCALL_EXIT record at each return too, through
	 * utrace_uprobes__poll(): @sysno, the six @args (@nargs 6), @retval,
	 * @ts_ns of the entry, @dur_ns (exit and exit_group, which never
	 * return: a UTRACE_REC_SYSCALL_ENTER at their entry), and the memory
	 * the decoders read (@nr_mem, @mem): the paths and strings at the
	 * entry, the buffers written (at most sc_str_max bytes) at the entry,
	 * the buffers read and the small structs written at the return
	 * (bpf/uprobe-sc.h says which for which syscall)
	 */
	UTRACE_SC_RECORD = 1U << 2,
};

/**
 * @brief **utrace_uprobes__count_syscalls()** counts every system call of
 * process @pid (all its threads) in the kernel, per number, without ever
 * stopping it (BPF on the raw_syscalls tracepoints; the first call attaches
 * them). Call it while @pid cannot have run past what should count: a
 * launched command, which waits in the session until utrace_session__run(),
 * with UTRACE_SC_AT_EXEC. UTRACE_SC_FOLLOW holds for every process counted.
 * @return 0; -EOPNOTSUPP: not the kernel backend, or a tracer inside a pid
 * namespace (the tracepoints see the kernel's pids); -ENOSPC: 8192 processes;
 * another negative errno from the kernel
 */
UTRACE_API int utrace_uprobes__count_syscalls(struct utrace_uprobes *up, pid_t pid,
					      unsigned int flags);

/**
 * @brief **utrace_uprobes__syscall_counts()** reads syscall @nr's figures
 * now, summed over the counted processes and the CPUs.
 * @return 0 (zeros for a number never called); -EINVAL (@nr not in [0, 512));
 * -EOPNOTSUPP: not the kernel backend
 */
UTRACE_API int utrace_uprobes__syscall_counts(struct utrace_uprobes *up, long nr,
					      struct utrace_syscall_counts *c);

/* ------------------------------------------------------------------------ */
/* The context of a hit                                                     */
/* ------------------------------------------------------------------------ */

/**
 * struct utrace_probe_point_info - the resolved probe point being hit.
 * @addr: runtime address
 * @object: path of the object ("/usr/lib/x86_64-linux-gnu/libc.so.6")
 * @symbol: function name, NULL for a raw address
 * @offset: offset of @addr in @symbol
 * @name: display name: "libc.so.6:malloc", "prog:work+0x4"
 */
struct utrace_probe_point_info {
	uint64_t addr;
	const char *object;
	const char *symbol;
	uint64_t offset;
	const char *name;
};

/**
 * struct utrace_probe_ctx - what a handler gets.
 * @probe: the probe whose handler runs
 * @point: the probe point (borrowed, valid during the call)
 * @pid, @tid: process and thread that hit the probe
 * @regs: the thread's registers at the hit; a handler may change them
 *	(written back when the handlers have run: fault injection, fixes)
 * @is_return: a return hit
 * @ret_addr: return hits: the address the function returns to
 * @entry_ns: return hits of a paired probe: CLOCK_MONOTONIC ns at entry
 *	(0 if the entry was not seen)
 * @now_ns: CLOCK_MONOTONIC ns of this hit
 * @depth: nesting depth of return instances of this thread (at a return
 *	hit: the instances left below the returning one)
 * @priv: the backend's (do not touch)
 *
 * At an entry hit, @regs->rip is the probed address. A handler that
 * changes @regs->rip sends the thread there instead of running the probed
 * instruction (no return instance is then recorded).
 */
struct utrace_probe_ctx {
	struct utrace_probe *probe;
	const struct utrace_probe_point_info *point;
	pid_t pid;
	pid_t tid;
	struct user_regs_struct *regs;
	bool is_return;
	uint64_t ret_addr;
	uint64_t entry_ns;
	uint64_t now_ns;
	unsigned int depth;
	void *priv;
};

/** @brief **utrace_probe_ctx__arg()** integer argument @n (0..5) per the SysV ABI. */
UTRACE_API uint64_t utrace_probe_ctx__arg(const struct utrace_probe_ctx *ctx, unsigned int n);

/** @brief **utrace_probe_ctx__retval()** the return value (rax) at a return hit. */
UTRACE_API uint64_t utrace_probe_ctx__retval(const struct utrace_probe_ctx *ctx);

/**
 * @brief **utrace_probe_ctx__set_return()** at an entry hit: do not run the
 * function; return @value to the caller at once (fault injection: rax =
 * @value, the return address is popped into rip); the function's return
 * handlers do not run for this call. At a return hit: change the return
 * value (rax).
 * @return 0 on success; -EINVAL if the point is not a function entry;
 * -EFAULT if the return address cannot be read
 */
UTRACE_API int utrace_probe_ctx__set_return(struct utrace_probe_ctx *ctx, uint64_t value);

/**
 * @brief **utrace_probe_ctx__real_return()** what a stack unwinder should
 * read in the hit thread's stack slot @slot, where it read @value: the real
 * return address when a return probe replaced it with its trampoline (which
 * has no unwind info; ptrace backend: the slot's memory holds the
 * trampoline until the function returns), else @value.
 * @return the return address the slot stands for, or @value
 */
UTRACE_API uint64_t utrace_probe_ctx__real_return(const struct utrace_probe_ctx *ctx, uint64_t slot,
						  uint64_t value);

/**
 * @brief **utrace_probe_ctx__read()** reads target memory (direct access in
 * the agent, process_vm_readv in the ptrace backend).
 * @return @len on success; negative error code (-EFAULT) otherwise
 */
UTRACE_API ssize_t utrace_probe_ctx__read(struct utrace_probe_ctx *ctx, uint64_t addr, void *buf,
					  size_t len);

/** @brief **utrace_probe_ctx__write()** writes target memory. @return @len or negative error code */
UTRACE_API ssize_t utrace_probe_ctx__write(struct utrace_probe_ctx *ctx, uint64_t addr,
					   const void *buf, size_t len);

/**
 * @brief **utrace_probe_ctx__read_str()** reads a NUL-terminated string of at
 * most @size - 1 bytes.
 * @return its length on success; negative error code otherwise
 */
UTRACE_API ssize_t utrace_probe_ctx__read_str(struct utrace_probe_ctx *ctx, uint64_t addr,
					      char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* __UTRACE_PROBE_H */
