/* SPDX-License-Identifier: MIT */
/*
 * inject.h - run code inside a traced process: remote function calls on a
 * stopped thread, and loading a shared object (the agent) into a running
 * process with a shared memory arena between tracer and target. Everything
 * here runs in the tracer process, in the session's tracing thread. The
 * sequence is described step by step at the top of lib/inject.c.
 */
#ifndef __UTRACE_INJECT_H
#define __UTRACE_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "utrace/common.h"
#include "utrace/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct utrace_call_opts - options of utrace_thread__remote_call().
 * @sz: size of this struct
 * @timeout_ms: how long the call may run; 0 = 5000 ms. When it expires
 *	while an injection's return stub is mapped (utrace_session__inject()),
 *	the call is left to finish on its own: the thread is stopped once and
 *	left at that stop in the middle of the callee; once resumed or
 *	detached it finishes and restores itself through the stub, so a lock
 *	the callee holds is released. Without the stub the thread is
 *	interrupted wherever it is and restored (whatever the callee did so
 *	far stays done, e.g. a lock it took stays taken).
 */
struct utrace_call_opts {
	size_t sz;
	int timeout_ms;
	size_t : 0;
};
#define utrace_call_opts__last_field timeout_ms

/**
 * @brief **utrace_thread__remote_call()** makes the stopped thread @th call
 * the function at @addr (in the target) with six integer arguments (SysV
 * ABI: rdi, rsi, rdx, rcx, r8, r9; al = 0 for variadic callees) and returns
 * rax. The call runs on the thread's own stack, below its red zone, and
 * returns to an unmapped address (0x320, as Frida does): the fault at that
 * address is the completion. Before, every register (NT_PRSTATUS,
 * NT_X86_XSTATE) and the signal mask are saved; during the call every
 * signal is blocked except SIGTRAP, the synchronous faults (SIGSEGV,
 * SIGBUS, SIGILL, SIGFPE, SIGSYS, which the kernel would otherwise reset to
 * SIG_DFL when forced while blocked) and glibc's SIGSETXID; afterwards everything is restored
 * and the thread is back in its stop, with the syscall it was blocked in
 * restarted as the kernel would have. Signals sent meanwhile are delivered
 * after. Events of other traced threads that arrive during the call are
 * handled by the session as usual (a thread created by the callee is
 * adopted and runs). Works from the same stops as
 * utrace_thread__remote_syscall() except syscall-entry and seccomp stops.
 *
 * Calling into libc can deadlock if @th was stopped holding a lock the
 * callee needs (malloc's arena lock, the loader lock): choose the thread
 * with care (utrace_session__inject() does) and rely on the timeout.
 * A thread created by the callee inherits the temporary signal mask (all
 * blocked but the faults and SIGSETXID), as pthread_create() copies the
 * creator's mask; a callee that wants another mask for its threads sets it
 * with pthread_attr_setsigmask_np().
 * @param th a stopped thread
 * @param addr function address in the target
 * @param args six arguments (unused ones ignored)
 * @param opts options, or NULL
 * @param ret_val on success, rax at the return
 * @return 0 on success; negative error code otherwise: -EBUSY (not stopped,
 * or at a signal, event, syscall-entry or seccomp stop), -ETIMEDOUT (the
 * call did not return in time; see @timeout_ms: restored, or, with the
 * injection's stub, stopped mid-call, to be resumed so that it finishes),
 * -UTRACE_ERRNO__REMOTE_FAULT (the callee crashed; restored, the fault is
 * logged), -ESRCH (the thread died), -EINTR (the process exec'ed, or the
 * thread could not be restored), -EINVAL
 */
UTRACE_API int utrace_thread__remote_call(struct utrace_thread *th, uint64_t addr,
					  const uint64_t args[6],
					  const struct utrace_call_opts *opts, uint64_t *ret_val);

/**
 * typedef utrace_inject_init_fn_t - the init function of an injected
 * object, called once in the target by utrace_session__inject() after
 * dlopen(); the agent's is __utrace_agent_init(arena_fd, flags), which
 * ignores the third argument. It runs in a hijacked application thread
 * whose signals are blocked: it must return quickly (start a thread for
 * long work) and must not wait for threads it creates for longer than the
 * call timeout. On failure it undoes its own work before returning, since
 * the object is then dlclose()d. The result is read as an int (eax).
 * @arena_fd: a memfd shared with the tracer (0600, sealed against
 *	shrinking and growing, close-on-exec; fstat() gives its size), or -1
 *	without an arena; the object owns it (mmap MAP_SHARED, keep or close)
 * @flags: utrace_inject_opts.init_flags
 * @arg: utrace_inject_opts.init_arg
 * Return: >= 0 on success; negative errno on failure.
 */
typedef int (*utrace_inject_init_fn_t)(int arena_fd, unsigned int flags, uint64_t arg);

/**
 * typedef utrace_inject_arena_fn_t - called in the tracer once the arena is
 * mapped on both sides, before dlopen: write what init expects to find
 * there (the agent checks its header). Return 0, or a negative errno to
 * abandon the injection (the target is left as it was).
 */
typedef int (*utrace_inject_arena_fn_t)(void *arena, size_t size, void *ctx);

/**
 * struct utrace_inject_opts - options of utrace_session__inject().
 * @sz: size of this struct
 * @init_symbol: function to call after dlopen (see utrace_inject_init_fn_t);
 *	NULL = do not call anything
 * @init_flags: its second argument
 * @init_arg: its third argument
 * @arena_size: size of the shared memfd arena (rounded up to pages);
 *	0 = no arena
 * @prepare_arena: optional, see utrace_inject_arena_fn_t
 * @prepare_ctx: its @ctx
 * @timeout_ms: limit of each remote function call; 0 = 5000 ms. A call
 *	that outlasts it (a dlopen() whose constructors block, a slow init)
 *	is left to finish on its own, returning through the injection's stub;
 *	the injection fails with -ETIMEDOUT, the scratch page (4 KiB) and the
 *	arena's fd stay in the target (lib/inject.c)
 * @tid: thread to hijack; 0 = choose one (see lib/inject.c)
 * @allow_unsafe_path: skip the check that nobody else can write the
 *	object or a directory above it (tests only)
 * @errbuf: if not NULL, receives the one-line error message on failure
 *	(also logged with pr_warn), e.g. "pid 123: cannot inject
 *	'/x/agent.so': dlopen failed: /x/agent.so: cannot open shared object
 *	file: No such file or directory"
 * @errlen: size of @errbuf
 * @allow_copies: if the init returns -EALREADY (this instance is busy),
 *	load a private copy of the object (a memfd in the target, a new
 *	instance for the dynamic loader) or reuse a free earlier copy, and
 *	call its init (lib/inject.c, "COPIES")
 */
struct utrace_inject_opts {
	size_t sz;
	const char *init_symbol;
	unsigned int init_flags;
	uint64_t init_arg;
	size_t arena_size;
	utrace_inject_arena_fn_t prepare_arena;
	void *prepare_ctx;
	int timeout_ms;
	pid_t tid;
	bool allow_unsafe_path;
	char *errbuf;
	size_t errlen;
	bool allow_copies;
	size_t : 0;
};
#define utrace_inject_opts__last_field allow_copies

/**
 * struct utrace_injection - what utrace_session__inject() produced. Owned
 * by the caller: release with utrace_injection__clear().
 * @pid: the target
 * @tid: the thread that ran the calls
 * @handle: dlopen()'s handle in the target
 * @init_ret: the init function's return value (>= 0; 0 without init)
 * @arena: the arena mapped in the tracer (MAP_SHARED), or NULL
 * @arena_size: its size
 * @arena_fd: the tracer's fd of the arena, or -1
 * @target_arena_fd: the arena's fd number in the target, or -1
 */
struct utrace_injection {
	pid_t pid;
	pid_t tid;
	uint64_t handle;
	int init_ret;
	void *arena;
	size_t arena_size;
	int arena_fd;
	int target_arena_fd;
};

/**
 * @brief **utrace_session__inject()** loads the shared object @path into
 * the traced process @pid and calls its init function: it checks that
 * @path is safe to load (absolute, a regular file, neither it nor any
 * directory above it writable by others than root or us, except sticky
 * directories; the same file in the target's mount namespace), chooses a
 * thread (blocked in a syscall and outside the loader if possible), maps a
 * scratch page, creates the arena (memfd_create("utrace-arena"),
 * ftruncate, seals; the tracer maps the same pages), calls dlopen(path,
 * RTLD_NOW), dlsym() and init(arena_fd, flags, arg), unmaps the scratch
 * page and lets the thread go on. If @pid is not in @s yet it is attached
 * first and detached at the end (staying attached would turn every signal
 * into a tracer stop); otherwise it stays traced. On failure the target is
 * left as it was (registers, memory, no arena fd; a library whose init
 * failed is dlclose()d) and one message says why.
 * @param s session
 * @param pid target process
 * @param path absolute path of the object
 * @param opts options, or NULL
 * @param ret on success, filled (untouched on failure)
 * @return 0 on success; negative error code otherwise:
 * -UTRACE_ERRNO__UNSAFE_PATH (someone else could replace the object),
 * -UTRACE_ERRNO__INJECT (dlopen, dlsym or init failed in the target),
 * -ENOENT (no such file, or no dlopen in the target: static, or libc not
 * loaded yet), -EAGAIN (no thread could be used safely now), -ETIMEDOUT,
 * -UTRACE_ERRNO__REMOTE_FAULT, or the error of attaching
 */
UTRACE_API int utrace_session__inject(struct utrace_session *s, pid_t pid, const char *path,
				      const struct utrace_inject_opts *opts,
				      struct utrace_injection *ret);

/**
 * @brief **utrace_inject__check_path()** may the object @path be loaded into
 * another process (the rule of utrace_session__inject(), also the one for
 * an agent preloaded at a launch)? An absolute path to a regular file that
 * only its owner (us or root) can change, in directories only they can
 * change, up to /. @why (may be NULL) gets the reason on failure.
 * @return 0; -UTRACE_ERRNO__UNSAFE_PATH, -EINVAL (not absolute, not a
 * regular file), or the error of examining it (-ENOENT ...)
 */
UTRACE_API int utrace_inject__check_path(const char *path, char *why, size_t whylen);

/**
 * @brief **utrace_inject()** is utrace_session__inject() with a session of
 * its own: seize @pid, inject, detach.
 * @return as utrace_session__inject()
 */
UTRACE_API int utrace_inject(pid_t pid, const char *path, const struct utrace_inject_opts *opts,
			     struct utrace_injection *ret);

/**
 * @brief **utrace_injection__clear()** unmaps the tracer's view of the
 * arena and closes its fd; the target keeps its own. Accepts NULL and a
 * cleared or zeroed struct.
 */
UTRACE_API void utrace_injection__clear(struct utrace_injection *inj);

#ifdef __cplusplus
}
#endif

#endif /* __UTRACE_INJECT_H */
