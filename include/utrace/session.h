/* SPDX-License-Identifier: MIT */
/*
 * session.h - the utrace engine layer: take hold of processes with ptrace
 * (launch a command or attach to a running pid), report per-thread events to
 * engines through callbacks, stop and resume threads, access registers and
 * memory, and run system calls inside a stopped thread. Everything here runs
 * in the tracer process, in the thread that created the session (ptrace
 * requests are only accepted from the tracing thread).
 *
 * Life cycle:
 *
 *	s = utrace_session__new(&opts);
 *	e = utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL_ENTRY | ..., ctx);
 *	pid = utrace_session__launch(s, argv, &lopts);   or   utrace_session__attach(s, pid);
 *	while ((r = utrace_session__run(s, -1)) == UTRACE_RUN_BREAK)
 *		...;
 *	status = utrace_session__exit_status(s);
 *	utrace_session__close(s);
 *
 * Engines are attached before processes are taken so that they see the very
 * first events (the exec of a launched command).
 */
#ifndef __UTRACE_SESSION_H
#define __UTRACE_SESSION_H

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
struct utrace_engine;
struct utrace_thread;

/* ------------------------------------------------------------------------ */
/* Sessions                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * enum utrace_syscall_mode - how system calls are intercepted.
 * @UTRACE_SYSCALLS_PTRACE: PTRACE_SYSCALL stops at every entry and exit of
 *	every syscall (works in attach and launch mode).
 * @UTRACE_SYSCALLS_SECCOMP: launch mode only: the command installs a seccomp
 *	filter returning SECCOMP_RET_TRACE for the interesting syscalls from
 *	its pre-exec hook; the session uses PTRACE_O_TRACESECCOMP and
 *	PTRACE_CONT, and asks for one syscall-exit stop after each seccomp stop
 *	when an engine wants exits. Untraced syscalls cost nothing.
 */
enum utrace_syscall_mode {
	UTRACE_SYSCALLS_PTRACE = 0,
	UTRACE_SYSCALLS_SECCOMP = 1,
	__UTRACE_SYSCALLS_MAX,
};

/**
 * struct utrace_session_opts - options of utrace_session__new().
 * @sz: size of this struct, for forward/backward compatibility
 * @follow_forks: trace the children created by fork/vfork/clone without
 *	CLONE_THREAD (-F). When false, a forked child is detached as soon as it
 *	reports its first stop and runs untraced (in seccomp mode it is kept
 *	under a silent trace instead, see the comment in lib/session.c: an
 *	untraced process carrying a SECCOMP_RET_TRACE filter would get ENOSYS).
 * @syscall_mode: enum utrace_syscall_mode
 * @remote_timeout_ms: how long a remote syscall may block before it is
 *	interrupted (PTRACE_INTERRUPT) and fails with -ETIMEDOUT; 0 means the
 *	default, 5000 ms; negative means no limit
 */
struct utrace_session_opts {
	size_t sz;
	bool follow_forks;
	int syscall_mode;
	int remote_timeout_ms;
	size_t : 0;
};
#define utrace_session_opts__last_field remote_timeout_ms

/**
 * @brief **utrace_session__new()** creates an empty session: no process,
 * no engine. The calling thread becomes the tracing thread. The first
 * session installs a SIGCHLD handler (SA_RESTART, chaining to the previous
 * handler) that wakes the event loop; it stays installed.
 * @param opts options, or NULL for defaults
 * @return a new session to free with utrace_session__close(); NULL with
 * errno set on failure (EINVAL: bad opts; ENOMEM)
 */
UTRACE_API struct utrace_session *utrace_session__new(const struct utrace_session_opts *opts);

/**
 * @brief **utrace_session__attach()** takes hold of the running process
 * @pid: PTRACE_SEIZE of every thread (re-listing /proc/PID/task until no new
 * thread shows up), PTRACE_O_TRACECLONE so that later threads are followed.
 * The session never becomes the parent, never sends SIGSTOP and never kills
 * the target; on failure every thread seized so far is detached again.
 * Returns with all threads running (or group-stopped, if they were).
 * @param s session
 * @param pid process id (a thread id is rejected with -EINVAL)
 * @return 0 on success; negative error code otherwise: -ESRCH (no such
 * process, or a zombie), -EPERM/-EACCES (not allowed to trace it),
 * -UTRACE_ERRNO__TRACED (TracerPid != 0: another tracer, e.g. gdb or strace,
 * holds it), -EEXIST (already in this session)
 */
UTRACE_API int utrace_session__attach(struct utrace_session *s, pid_t pid);

/** Runs in the forked child before execve(); see utrace_launch_opts. */
typedef int (*utrace_pre_exec_fn_t)(void *ctx);

/**
 * struct utrace_launch_opts - options of utrace_session__launch().
 * @sz: size of this struct
 * @envp: environment of the command; NULL = the caller's environ
 * @pre_exec: called in the child after it has been seized and continued,
 *	just before execve(); a seccomp filter is installed here. It runs in a
 *	forked child of a possibly multithreaded process: only
 *	async-signal-safe work. A nonzero return makes the child _exit(127)
 *	without exec.
 * @pre_exec_ctx: argument of @pre_exec
 * @kill_on_exit: the command is killed if the tracer dies
 *	(PTRACE_O_EXITKILL) and by utrace_session__close(). In seccomp mode
 *	PTRACE_O_EXITKILL is set anyway (an untraced filter would make the
 *	traced syscalls fail with ENOSYS), but close() kills only if asked.
 * @show_pre_exec: also report the events of the child before it calls
 *	execve (by default they are hidden: the first reported event is the
 *	entry of the execve syscall, or the exec event)
 * @kill_if_tracer_dies: PTRACE_O_EXITKILL only: the command ends with
 *	SIGKILL if the tracer dies (its breakpoints would otherwise make it
 *	die of SIGTRAP, or run on with the tracer's int3s in its code); a
 *	detach or close() leaves it running
 */
struct utrace_launch_opts {
	size_t sz;
	char *const *envp;
	utrace_pre_exec_fn_t pre_exec;
	void *pre_exec_ctx;
	bool kill_on_exit;
	bool show_pre_exec;
	bool kill_if_tracer_dies;
	size_t : 0;
};
#define utrace_launch_opts__last_field show_pre_exec

/**
 * @brief **utrace_session__launch()** runs a command under the session:
 * fork; the child stops itself with SIGSTOP, the parent seizes it
 * (PTRACE_SEIZE, so events before exec are already seen) and continues it;
 * the child runs @opts->pre_exec then execvp(@argv[0], @argv). Events flow
 * once utrace_session__run() is called. At most one launched command per
 * session; its exit status is returned by utrace_session__exit_status().
 * @param s session
 * @param argv NULL-terminated argument vector; argv[0] is searched in PATH
 * @param opts options, or NULL
 * @return the command's pid (> 0) on success; negative error code otherwise
 * (-ENOENT/-EACCES: argv[0] cannot be executed, checked before forking;
 * -EBUSY: a command was already launched; -EINVAL)
 */
UTRACE_API pid_t utrace_session__launch(struct utrace_session *s, char *const argv[],
					const struct utrace_launch_opts *opts);

/** Results of utrace_session__run() and utrace_session__poll(). */
enum utrace_run_result {
	UTRACE_RUN_DONE = 0, /* no traced process left (all exited or detached) */
	UTRACE_RUN_BREAK = 1, /* a callback returned UTRACE_BREAK */
	UTRACE_RUN_TIMEOUT = 2, /* the timeout expired */
	UTRACE_RUN_INTERRUPTED = 3, /* utrace_session__interrupt() was called */
	UTRACE_RUN_IDLE = 4, /* utrace_session__poll() only: nothing (more) to do now */
};

/**
 * @brief **utrace_session__run()** is the event loop: it waits for ptrace
 * events of every traced thread (waitpid(-1, __WALL)), calls the engines and
 * resumes the threads, until one of the enum utrace_run_result conditions.
 * Call it again to continue. Tracees stopped by an engine (UTRACE_STOP) stay
 * stopped across calls. The session reaps with waitpid(-1, __WALL |
 * __WNOTHREAD): children that the tracing thread itself forked are reaped
 * too (logged with pr_debug and forgotten), children of other threads are
 * not touched. At most one session per thread. While it runs, run() keeps
 * SIGCHLD blocked in the tracing thread (the mask is restored on return):
 * with @timeout_ms < 0 it sleeps in waitpid() and starts a small waker
 * child of the tracing thread (killed and reaped before run() returns)
 * that utrace_session__interrupt() wakes; with a timeout it sleeps in
 * sigtimedwait(). If the caller's own SIGCHLD handler was installed before
 * the session (it would miss those signals), it sleeps in poll() on the
 * fd of utrace_session__fd() instead. If the caller replaces the
 * library's SIGCHLD handler or blocks SIGCHLD in the tracing thread, the
 * loop still works but polls every 10 ms.
 * @param s session
 * @param timeout_ms maximum time to wait, in milliseconds; < 0 = no limit
 * @return an enum utrace_run_result (>= 0) on success; negative error code
 * on failure (-EINVAL: called from a thread other than the tracing thread)
 */
UTRACE_API int utrace_session__run(struct utrace_session *s, int timeout_ms);

/**
 * @brief **utrace_session__poll()** handles the events that are pending now,
 * without blocking. Use it with utrace_session__fd() in the caller's own
 * poll() loop.
 * @return an enum utrace_run_result: UTRACE_RUN_IDLE when everything
 * pending was handled and processes remain, otherwise as
 * utrace_session__run(); negative error code on failure
 */
UTRACE_API int utrace_session__poll(struct utrace_session *s);

/**
 * @brief **utrace_session__fd()** returns a file descriptor that becomes
 * readable when ptrace events may be pending (a pipe written by the
 * library's SIGCHLD handler, which chains to the caller's previous handler).
 * Call utrace_session__poll() when it is readable; it drains the fd.
 * @return a file descriptor owned by the session (>= 0); negative error code
 * on failure
 */
UTRACE_API int utrace_session__fd(struct utrace_session *s);

/**
 * @brief **utrace_session__interrupt()** makes the running or next
 * utrace_session__run() return UTRACE_RUN_INTERRUPTED. Async-signal-safe:
 * meant to be called from the CLI's SIGINT/SIGTERM handler or a timer.
 */
UTRACE_API void utrace_session__interrupt(struct utrace_session *s);

/**
 * @brief **utrace_session__detach()** releases every traced process and
 * leaves each exactly as it was: all threads are stopped (PTRACE_INTERRUPT),
 * any signal caught at a signal-delivery stop is handed back with
 * PTRACE_DETACH, no SIGSTOP is left pending, a group-stopped process stays
 * stopped, registers are untouched. Engines stay attached to the session.
 * A launched command keeps running untraced (in seccomp mode it is not
 * detached, see utrace_session__close()).
 * @return 0 on success; negative error code otherwise (the first error
 * met; detaching continues with the other threads)
 */
UTRACE_API int utrace_session__detach(struct utrace_session *s);

/**
 * @brief **utrace_session__detach_pid()** releases one process (all its
 * threads), as utrace_session__detach().
 * @return 0 on success; -ESRCH if @pid is not traced by @s; negative error
 * code otherwise
 */
UTRACE_API int utrace_session__detach_pid(struct utrace_session *s, pid_t pid);

/**
 * @brief **utrace_session__exit_status()** gives the launched command's exit
 * status as a shell reports it: its exit code, or 128 + signal number if it
 * was killed by a signal.
 * @return the status (0..255) once the command has exited; -EAGAIN if it is
 * still running; -ECHILD if nothing was launched
 */
UTRACE_API int utrace_session__exit_status(const struct utrace_session *s);

/**
 * @brief **utrace_session__close()** ends the session and frees it; accepts
 * NULL. Engines get their detach callback. Processes attached with
 * utrace_session__attach() are detached as by utrace_session__detach().
 * A launched command is handled as strace does: the session does not kill
 * it, it detaches it and then waits for it to exit (so its exit status is
 * not lost and no zombie is left). In seccomp mode it is not detached but
 * traced silently (seccomp stops continued, no callbacks) until it exits,
 * since a SECCOMP_RET_TRACE filter without a tracer fails syscalls with
 * ENOSYS. If the launch used @kill_on_exit, the command is killed with
 * SIGKILL instead of being waited for. Call it from the tracing thread:
 * from any other thread the processes are only forgotten (the kernel
 * detaches them when the tracing thread exits).
 */
UTRACE_API void utrace_session__close(struct utrace_session *s);

/**
 * @brief **utrace_session__find_thread()** looks up a traced thread.
 * @return a borrowed pointer, valid until the thread's exit callback has
 * returned or the thread is detached; NULL if @tid is not traced
 */
UTRACE_API struct utrace_thread *utrace_session__find_thread(struct utrace_session *s, pid_t tid);

/**
 * @brief **utrace_session__threads()** lists the traced threads of @pid
 * (pid 0: of every traced process).
 * @param ret array to fill with borrowed pointers
 * @param size number of entries in @ret
 * @return the total number of threads (may be larger than @size: only @size
 * are stored); negative error code: -ESRCH if @pid is not traced
 */
UTRACE_API int utrace_session__threads(struct utrace_session *s, pid_t pid,
				       struct utrace_thread **ret, size_t size);

/**
 * @brief **utrace_session__quiesce()** stops every thread of @pid (0: of
 * every traced process) with PTRACE_INTERRUPT and waits until each one is in
 * a ptrace stop. Events that arrive meanwhile are reported to the engines
 * as usual; their threads stay stopped. Threads created while stopping are
 * stopped too. Threads that exit meanwhile are reported and dropped.
 * @return 0 on success; -ESRCH if @pid is not traced; negative error code
 * otherwise
 */
UTRACE_API int utrace_session__quiesce(struct utrace_session *s, pid_t pid);

/**
 * @brief **utrace_session__resume()** resumes every stopped thread of @pid
 * (0: all) as utrace_thread__resume() does.
 * @return 0 on success; negative error code otherwise
 */
UTRACE_API int utrace_session__resume(struct utrace_session *s, pid_t pid);

/* ------------------------------------------------------------------------ */
/* Engines                                                                   */
/* ------------------------------------------------------------------------ */

/** enum utrace_event - event mask bits of an engine. */
enum utrace_event {
	UTRACE_EV_SYSCALL_ENTRY = 1U
				  << 0, /* syscall entry (in seccomp mode: at the seccomp stop) */
	UTRACE_EV_SYSCALL_EXIT = 1U << 1, /* syscall exit */
	UTRACE_EV_SECCOMP = 1U << 2, /* PTRACE_EVENT_SECCOMP stop, with SECCOMP_RET_DATA */
	UTRACE_EV_SIGNAL = 1U << 3, /* a signal is about to be delivered */
	UTRACE_EV_CLONE = 1U << 4, /* the thread created a new thread (CLONE_THREAD) */
	UTRACE_EV_FORK = 1U << 5, /* fork, vfork, or clone without CLONE_THREAD */
	UTRACE_EV_EXEC = 1U << 6, /* successful execve */
	UTRACE_EV_EXIT = 1U << 7, /* the thread exited (or the process, for the leader) */
	UTRACE_EV_STOP = 1U << 8, /* group-stop entered (SIGSTOP, SIGTSTP ...) */
	UTRACE_EV_QUIESCE = 1U << 9, /* a stop asked with utrace_thread__quiesce() was reached */
	UTRACE_EV_STEP = 1U << 10, /* a single-step completed */
	UTRACE_EV_ATTACH = 1U << 11, /* a thread was taken (attach, launch, new thread/child) */
	__UTRACE_EV_MAX = 1U << 12,
};
#define UTRACE_EV_SYSCALL (UTRACE_EV_SYSCALL_ENTRY | UTRACE_EV_SYSCALL_EXIT)
#define UTRACE_EV_ALL (__UTRACE_EV_MAX - 1)

/**
 * enum utrace_action - what a callback returns: one resume action, ORed
 * with flags. With several engines, the strongest resume action wins
 * (UTRACE_STOP > UTRACE_SINGLESTEP > UTRACE_RESUME) and flags accumulate.
 * @UTRACE_RESUME: let the thread run on
 * @UTRACE_STOP: keep the thread stopped (quiesced) until
 *	utrace_thread__resume(); a signal being delivered is kept and delivered
 *	then (unless also UTRACE_SIGNAL_IGNORE)
 * @UTRACE_SINGLESTEP: resume with one single-step; UTRACE_EV_STEP follows
 * @UTRACE_DETACH: detach the calling engine after this callback (the
 *	thread itself stays traced if other engines or the session need it)
 * @UTRACE_SIGNAL_IGNORE: signal callback: suppress the signal (engines after this one
 *	are not called for it: it is no longer about to be delivered)
 * @UTRACE_BREAK: make utrace_session__run() return UTRACE_RUN_BREAK after
 *	this event
 */
enum utrace_action {
	UTRACE_RESUME = 0,
	UTRACE_SINGLESTEP = 1,
	UTRACE_STOP = 2,
	UTRACE_ACTION_MASK = 0xff,
	UTRACE_DETACH = 1U << 8,
	UTRACE_SIGNAL_IGNORE = 1U << 9,
	UTRACE_BREAK = 1U << 10,
};

/**
 * struct utrace_syscall - a system call seen at its entry or exit stop.
 * @nr: syscall number (x86-64 numbering)
 * @args: the six arguments
 * @ret: return value (exit only; -errno on failure, as the kernel returns)
 * @instruction_pointer: address after the syscall instruction
 * @stack_pointer: rsp at the call
 * @seccomp: entry reported at a seccomp stop (@seccomp_data is valid)
 * @seccomp_data: SECCOMP_RET_DATA of the filter's return value
 *
 * Entry callbacks may change @nr and @args (written back to the registers
 * when they differ) or skip the call with utrace_thread__skip_syscall().
 * Exit callbacks may change @ret.
 */
struct utrace_syscall {
	long nr;
	uint64_t args[6];
	long ret;
	uint64_t instruction_pointer;
	uint64_t stack_pointer;
	bool seccomp;
	uint32_t seccomp_data;
};

/**
 * struct utrace_engine_ops - callbacks of an engine. Every member may be
 * NULL. Callbacks run in the tracing thread, inside utrace_session__run()
 * (or __poll, __quiesce, __attach, __launch), while the thread @th is in a
 * ptrace stop: they may read and write registers and memory, make remote
 * syscalls, quiesce or resume threads, attach or detach engines
 * (including themselves). They must not call utrace_session__run(),
 * __poll(), __attach(), __launch(), __detach() or __close(): return
 * UTRACE_BREAK and do it when run() returns. Each returns an enum
 * utrace_action.
 *
 * @sz: size of this struct
 * @syscall_entry: UTRACE_EV_SYSCALL_ENTRY
 * @syscall_exit: UTRACE_EV_SYSCALL_EXIT
 * @seccomp: UTRACE_EV_SECCOMP; called before @syscall_entry
 * @signal: UTRACE_EV_SIGNAL: @info is the signal to be delivered; the
 *	callback may change it (info->si_signo = 0 is the same as
 *	UTRACE_SIGNAL_IGNORE)
 * @clone: UTRACE_EV_CLONE: @th created the thread @child (already traced;
 *	it reports UTRACE_EV_ATTACH when it first stops)
 * @fork: UTRACE_EV_FORK: @th created the process @child_pid; @vfork is set
 *	for vfork/CLONE_VFORK; @followed tells whether the child is traced.
 *	A child that is not followed has not run yet when this is called (it
 *	is detached afterwards), so its memory can still be fixed up
 * @exec: UTRACE_EV_EXEC: @th (now the leader: tid == pid) completed an
 *	execve; @former_tid is the tid of the thread that called execve
 *	(differs from the pid when a non-leader thread exec'ed)
 * @exit: UTRACE_EV_EXIT: @th exited; @status is the wait status
 *	(WIFEXITED/WIFSIGNALED); the registers are gone; the return value is
 *	ignored except UTRACE_BREAK and UTRACE_DETACH
 * @stop: UTRACE_EV_STOP: @th entered a group-stop for @signo
 * @quiesce: UTRACE_EV_QUIESCE: a stop asked with utrace_thread__quiesce()
 *	or utrace_session__quiesce() was reached
 * @step: UTRACE_EV_STEP: a single-step completed
 * @attach: UTRACE_EV_ATTACH: @th is newly traced
 * @detach: called once when the engine is detached (explicitly, by
 *	UTRACE_DETACH or by utrace_session__close()); no return value
 */
struct utrace_engine_ops {
	size_t sz;
	int (*syscall_entry)(struct utrace_engine *e, struct utrace_thread *th,
			     struct utrace_syscall *sc);
	int (*syscall_exit)(struct utrace_engine *e, struct utrace_thread *th,
			    struct utrace_syscall *sc);
	int (*seccomp)(struct utrace_engine *e, struct utrace_thread *th,
		       struct utrace_syscall *sc);
	int (*signal)(struct utrace_engine *e, struct utrace_thread *th, siginfo_t *info);
	int (*clone)(struct utrace_engine *e, struct utrace_thread *th, pid_t child);
	int (*fork)(struct utrace_engine *e, struct utrace_thread *th, pid_t child_pid, bool vfork,
		    bool followed);
	int (*exec)(struct utrace_engine *e, struct utrace_thread *th, pid_t former_tid);
	int (*exit)(struct utrace_engine *e, struct utrace_thread *th, int status);
	int (*stop)(struct utrace_engine *e, struct utrace_thread *th, int signo);
	int (*quiesce)(struct utrace_engine *e, struct utrace_thread *th);
	int (*step)(struct utrace_engine *e, struct utrace_thread *th);
	int (*attach)(struct utrace_engine *e, struct utrace_thread *th);
	void (*detach)(struct utrace_engine *e);
	size_t : 0;
};
#define utrace_engine_ops__last_field detach

/**
 * @brief **utrace_engine__attach()** adds an engine to @s. Engines are
 * called in attach order. May be called at any time, from a callback too.
 * @param ops callbacks (copied)
 * @param events enum utrace_event mask of events to report
 * @param ctx caller's data, see utrace_engine__ctx()
 * @return a new engine owned by the session; NULL with errno set on failure
 * (EINVAL: bad ops or mask; ENOMEM)
 */
UTRACE_API struct utrace_engine *utrace_engine__attach(struct utrace_session *s,
						       const struct utrace_engine_ops *ops,
						       uint32_t events, void *ctx);

/**
 * @brief **utrace_engine__detach()** removes @e; its detach callback runs;
 * @e is freed (at once, or after the current callback if called from one).
 * Accepts NULL. Threads stopped only because of @e are not resumed:
 * call utrace_thread__resume().
 */
UTRACE_API void utrace_engine__detach(struct utrace_engine *e);

/**
 * @brief **utrace_engine__set_events()** changes the event mask of @e. The
 * new mask applies from the next resume of each thread (e.g. syscall stops
 * start or stop being requested).
 * @return 0 on success; -EINVAL on unknown bits
 */
UTRACE_API int utrace_engine__set_events(struct utrace_engine *e, uint32_t events);

/** @brief **utrace_engine__ctx()** returns the ctx given at attach. */
UTRACE_API void *utrace_engine__ctx(const struct utrace_engine *e);

/** @brief **utrace_engine__session()** returns the engine's session. */
UTRACE_API struct utrace_session *utrace_engine__session(const struct utrace_engine *e);

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

/** @brief **utrace_thread__tid()** returns the thread id. */
UTRACE_API pid_t utrace_thread__tid(const struct utrace_thread *th);

/** @brief **utrace_thread__pid()** returns the process id (thread group id). */
UTRACE_API pid_t utrace_thread__pid(const struct utrace_thread *th);

/** @brief **utrace_thread__session()** returns the thread's session. */
UTRACE_API struct utrace_session *utrace_thread__session(const struct utrace_thread *th);

/**
 * @brief **utrace_thread__is_stopped()** tells whether @th is in a ptrace
 * stop, so that its registers can be accessed (always true in a callback,
 * except for the exit callback).
 */
UTRACE_API bool utrace_thread__is_stopped(const struct utrace_thread *th);

/**
 * @brief **utrace_thread__get_regs()** reads the general registers
 * (PTRACE_GETREGSET NT_PRSTATUS; cached until the thread runs again).
 * @return 0 on success; -ESRCH if the thread is not stopped or gone;
 * negative error code otherwise
 */
UTRACE_API int utrace_thread__get_regs(struct utrace_thread *th, struct user_regs_struct *regs);

/**
 * @brief **utrace_thread__set_regs()** writes the general registers (taking
 * effect when the thread resumes). Changing rip while the thread is inside
 * a syscall does not cancel the kernel's syscall restart: set orig_rax to
 * -1 for that, as gdb does.
 * @return 0 on success; -ESRCH if not stopped; negative error code otherwise
 */
UTRACE_API int utrace_thread__set_regs(struct utrace_thread *th,
				       const struct user_regs_struct *regs);

/**
 * @brief **utrace_thread__get_fpregs()** reads the legacy FP/SSE state
 * (NT_PRFPREG, struct user_fpregs_struct).
 * @return 0 on success; negative error code otherwise
 */
UTRACE_API int utrace_thread__get_fpregs(struct utrace_thread *th,
					 struct user_fpregs_struct *fpregs);

/** @brief **utrace_thread__set_fpregs()** writes the FP/SSE state. @return 0 or negative error code */
UTRACE_API int utrace_thread__set_fpregs(struct utrace_thread *th,
					 const struct user_fpregs_struct *fpregs);

/**
 * @brief **utrace_thread__get_xstate()** reads the full XSAVE area
 * (NT_X86_XSTATE: AVX, AVX-512 ...).
 * @param buf destination; @size its size (4096 bytes is enough today)
 * @return the number of bytes stored on success; negative error code
 * otherwise (-ENODEV: no XSAVE)
 */
UTRACE_API int utrace_thread__get_xstate(struct utrace_thread *th, void *buf, size_t size);

/** @brief **utrace_thread__set_xstate()** writes an XSAVE area read by __get_xstate(). @return 0 or negative error code */
UTRACE_API int utrace_thread__set_xstate(struct utrace_thread *th, const void *buf, size_t size);

/**
 * @brief **utrace_thread__read_mem()** copies tracee memory (the whole
 * process's address space), with process_vm_readv or /proc/PID/mem.
 * @return @len on success; negative error code otherwise (-EFAULT)
 */
UTRACE_API ssize_t utrace_thread__read_mem(struct utrace_thread *th, uint64_t addr, void *buf,
					   size_t len);

/**
 * @brief **utrace_thread__write_mem()** writes tracee memory, read-only
 * (code) pages included.
 * @return @len on success; negative error code otherwise
 */
UTRACE_API ssize_t utrace_thread__write_mem(struct utrace_thread *th, uint64_t addr,
					    const void *buf, size_t len);

/**
 * @brief **utrace_thread__quiesce()** asks @th to stop. If it is already
 * stopped it stays stopped; otherwise PTRACE_INTERRUPT is sent and, when
 * @wait is true, the call handles events until @th is stopped.
 * UTRACE_EV_QUIESCE is reported when the stop is reached.
 * @return 0 on success (stopped, or stop requested if !@wait); -ESRCH if
 * the thread exited meanwhile; negative error code otherwise
 */
UTRACE_API int utrace_thread__quiesce(struct utrace_thread *th, bool wait);

/**
 * @brief **utrace_thread__resume()** lets a stopped thread run on: it is
 * resumed with the request its engines need (PTRACE_SYSCALL, PTRACE_CONT,
 * PTRACE_LISTEN if its process is group-stopped), delivering any signal
 * held at a signal-delivery stop. No-op if it is running. Inside a callback
 * for @th, it overrides UTRACE_STOP of the callbacks.
 * @return 0 on success; negative error code otherwise
 */
UTRACE_API int utrace_thread__resume(struct utrace_thread *th);

/**
 * @brief **utrace_thread__singlestep()** resumes a stopped thread for one
 * instruction (PTRACE_SINGLESTEP); UTRACE_EV_STEP is reported after it.
 * @return 0 on success; -EBUSY if not stopped; negative error code otherwise
 */
UTRACE_API int utrace_thread__singlestep(struct utrace_thread *th);

/**
 * @brief **utrace_thread__skip_syscall()** at a syscall-entry or seccomp
 * stop: do not run the syscall; make it return @ret (e.g. -ENOENT) instead.
 * Used for fault injection.
 * @return 0 on success; -EINVAL if @th is not at a syscall entry
 */
UTRACE_API int utrace_thread__skip_syscall(struct utrace_thread *th, long ret);

/**
 * @brief **utrace_thread__remote_syscall()** makes the stopped thread @th
 * execute the syscall @nr(@args) and returns its result, then puts the
 * thread back exactly as it was: general, FP and extended registers, signal
 * mask, and the syscall it was blocked in (which is restarted as the kernel
 * would have: -ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND and
 * -ERESTART_RESTARTBLOCK are honoured). All signals but SIGTRAP are blocked
 * during the call; signals arriving meanwhile stay pending and are
 * delivered later. The syscall instruction used is found in the target's
 * vdso (or libc). Works from quiesce stops, group-stops,
 * syscall-entry/exit/seccomp stops and signal-delivery stops (the signal,
 * with its siginfo, is pending delivery again afterwards); not from a
 * clone/fork/exec event stop. From a syscall-exit stop the thread ends up
 * stopped just after it (in the kernel's signal path, where a restart of
 * the interrupted syscall is decided), which is equivalent for the program.
 * @param th a stopped thread
 * @param nr syscall number
 * @param args six arguments (unused ones ignored)
 * @param ret_val on success, the raw result (-errno on syscall failure)
 * @return 0 on success (even if the syscall itself failed: see @ret_val);
 * negative error code otherwise: -EBUSY (not stopped, or at an event
 * stop), -ENOEXEC (no syscall instruction found), -ESRCH (the thread died),
 * -ETIMEDOUT (the syscall blocked longer than the session's
 * remote_timeout_ms: it was interrupted, the thread is restored),
 * -EINTR (the call failed midway; the thread is restored)
 */
UTRACE_API int utrace_thread__remote_syscall(struct utrace_thread *th, long nr,
					     const uint64_t args[6], long *ret_val);

#ifdef __cplusplus
}
#endif

#endif /* __UTRACE_SESSION_H */
