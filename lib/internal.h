/* SPDX-License-Identifier: MIT */
/*
 * internal.h - declarations shared by the files of libutrace. Not installed.
 */
#ifndef __UTRACE_INTERNAL_H
#define __UTRACE_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>

#include "utrace/elf.h"
#include "utrace/session.h"

#include "util.h"
#include "log.h"

/**
 * proc_status_field - read one "Key: value" field of /proc/@pid/status
 * @pid: process or thread id
 * @key: field name without the colon, e.g. "TracerPid"
 * @buf: receives the value, leading blanks stripped
 * @size: size of @buf
 *
 * Runs in the tracer. Return: 0 on success; -ESRCH if the process is gone;
 * -ENOENT if the field does not exist.
 */
int proc_status_field(pid_t pid, const char *key, char *buf, size_t size);

/**
 * proc_exiting - is @pid gone, a zombie, or past the start of do_exit()?
 * @pid: process or thread id
 *
 * PF_EXITING (the 9th field of /proc/@pid/stat) is set before exit_mm()
 * drops the address space, so a write that failed with EFAULT on a task
 * that has it failed because the task is going (a SIGKILL, exit_group()),
 * not because the address is wrong. Runs in the tracer.
 */
bool proc_exiting(pid_t pid);

/**
 * proc_stat_fields - /proc/@pid/stat read into @buf (@size bytes): its
 * fields after "pid (comm)", the first being the state. Tracer.
 * Return: a pointer into @buf, or NULL with errno ENOENT (gone), ESRCH
 * (reaped while read), EINVAL (no "(comm)"), or open()'s.
 */
const char *proc_stat_fields(pid_t pid, char *buf, size_t size);

/* elf.c: see the kernel-doc comments there. */
struct elf_dyninfo {
	const char *interp; /* PT_INTERP, or NULL */
	const char **needed; /* DT_NEEDED names (array allocated, strings borrowed) */
	size_t nr_needed;
	const char *rpath; /* DT_RPATH, or NULL */
	const char *runpath; /* DT_RUNPATH, or NULL */
};

int elf_dyninfo_get(struct utrace_elf *elf, struct elf_dyninfo *ret);
void elf_dyninfo_clear(struct elf_dyninfo *di);
int elf_load_bias(const struct utrace_elf *elf, uint64_t map_start, uint64_t map_offset,
		  uint64_t *ret_bias);
bool elf_addr_is_code(const struct utrace_elf *elf, uint64_t addr);
void elf_ident(const struct utrace_elf *elf, int *ret_class, int *ret_machine);

/* spec.c */
bool spec_object_is_path(const char *object);
/*
 * Give object @i of exec image @img load bias @bias (image.c): the
 * system-wide layer spreads its objects apart, so that the file addresses
 * of two objects never name one probe point.
 */
struct utrace_image;
void image_set_bias(struct utrace_image *img, size_t i, uint64_t bias);
bool spec_name_matches(const char *object, const char *base);

/* ---- ptrace.c: one wrapper per request, 0/value or negative errno ---- */

int ptrace_seize(pid_t tid, unsigned long options);
int ptrace_setoptions(pid_t tid, unsigned long options);
int ptrace_interrupt(pid_t tid);
int ptrace_resume(pid_t tid, int req, int sig);
int ptrace_listen(pid_t tid);
int ptrace_detach(pid_t tid, int sig);
int ptrace_getregs(pid_t tid, struct user_regs_struct *regs);
int ptrace_setregs(pid_t tid, const struct user_regs_struct *regs);
int ptrace_getregset(pid_t tid, int type, void *buf, size_t size);
int ptrace_setregset(pid_t tid, int type, const void *buf, size_t size);
int ptrace_getsiginfo(pid_t tid, siginfo_t *info);
int ptrace_setsiginfo(pid_t tid, const siginfo_t *info);
int ptrace_geteventmsg(pid_t tid, unsigned long *ret);
int ptrace_getsigmask(pid_t tid, uint64_t *mask);
int ptrace_setsigmask(pid_t tid, uint64_t mask);
int ptrace_get_syscall_info(pid_t tid, struct __ptrace_syscall_info *info);

/* ---- session.c / remote.c: the engine layer's private state ---- */

/*
 * enum tstop - where a traced thread is, as last reported by waitpid().
 * Everything but TSTOP_RUNNING is a ptrace stop in which registers can be
 * accessed. The kind matters when resuming (a signal to deliver, LISTEN
 * for a group-stop) and for remote syscalls (see remote.c).
 */
enum tstop {
	TSTOP_RUNNING = 0,
	TSTOP_EVENT, /* PTRACE_EVENT_STOP, SIGTRAP: interrupt / new thread; in get_signal() */
	TSTOP_GROUP, /* PTRACE_EVENT_STOP for a stop signal: group-stop; in get_signal() */
	TSTOP_SIGNAL, /* signal-delivery stop; in get_signal() */
	TSTOP_SYSCALL_ENTRY, /* syscall-entry stop */
	TSTOP_SYSCALL_EXIT, /* syscall-exit stop */
	TSTOP_SECCOMP, /* PTRACE_EVENT_SECCOMP; inside syscall entry */
	TSTOP_PEVENT, /* clone/fork/vfork/exec/vfork-done event; inside a syscall */
};

struct tproc;

struct utrace_thread {
	struct utrace_session *s;
	struct tproc *proc;
	struct utrace_thread *prev, *next; /* session list */
	pid_t tid;
	enum tstop stop;
	int stop_sig; /* TSTOP_SIGNAL: signal to deliver (0 = none); TSTOP_GROUP: signo */
	bool seen; /* its first stop has been seen */
	bool want_stop; /* quiesce requested (session, API, detach) */
	bool notify_quiesce; /* report UTRACE_EV_QUIESCE when the stop comes */
	bool engine_stop; /* an engine returned UTRACE_STOP */
	bool interrupted; /* PTRACE_INTERRUPT sent, no stop of any kind seen since */
	bool listening; /* resumed with PTRACE_LISTEN (group-stopped) */
	bool group_stopped; /* UTRACE_EV_STOP reported, no continue seen since */
	bool stepping; /* resumed with PTRACE_SINGLESTEP */
	bool in_syscall; /* between syscall entry and exit */
	bool exit_wanted; /* seccomp mode: one PTRACE_SYSCALL for the exit stop */
	bool in_vfork; /* vfork parent waiting for its child (cannot stop) */
	bool launch_sigcont; /* launched child: swallow our own SIGCONT once */
	bool override_resume; /* utrace_thread__resume() called from its own callback */
	bool skip; /* syscall skipped, force @skip_ret at exit */
	bool detach_req; /* session_detach_at_stop(): let it go instead of resuming it */
	long skip_ret;
	long cur_nr; /* syscall in progress */
	uint64_t cur_args[6];
	bool regs_valid;
	struct user_regs_struct regs; /* cache, valid while stopped */
	int busy; /* event handling or callbacks in progress for it */
	bool dead; /* gone (unlinked); freed when @busy drops to 0 */
	/*
	 * Cloned by the thread the session was injecting code into, during
	 * the injection (lib/inject.c): a thread of the injected code (the
	 * agent's control thread), not the program's. Its system calls are
	 * the agent's from its first one (lib/backend-agent.c own_syscall).
	 */
	bool injected;
};

struct tproc {
	struct tproc *prev, *next;
	pid_t pid;
	int nr_threads;
	bool hidden; /* traced silently: seccomp mode, fork not followed */
	bool detach_new; /* fork not followed: detach at the first stop */
	bool fork_reported; /* detach_new: the parent's fork event was dispatched */
	bool hide_pre_exec; /* launched, execve not reached yet */
	bool launched;
	uint64_t gadget; /* address of a syscall instruction; 0: not searched */
	uint64_t sysret; /* "syscall; ret" in libc (kill-safe remote syscalls, remote.c) */
	uint64_t restore_rt; /* glibc's __restore_rt ("mov $15, %rax; syscall") */
	bool safe_searched; /* sysret and restore_rt were looked for */
	uint64_t call_stub; /* arch_call_stub in the target (remote-call.c); 0: none */
};

struct utrace_engine {
	struct utrace_session *s;
	struct utrace_engine *next;
	struct utrace_engine_ops ops;
	uint32_t events;
	void *ctx;
	unsigned long gen;
	bool dead;
};

struct session_launch_extra;

struct utrace_session {
	pid_t tracer_tid;
	pid_t injecting_tid; /* lib/inject.c: the thread running injected code now, or 0 */
	bool follow_forks;
	int mode;
	int remote_timeout_ms; /* < 0: no limit */
	unsigned long options; /* PTRACE_O_* for every tracee */
	struct utrace_engine *engines;
	unsigned long engine_gen;
	struct utrace_thread *threads;
	struct tproc *procs;
	int dispatch_depth;
	struct utrace_thread *dispatch_th; /* thread whose event is being dispatched */
	bool break_req;
	volatile sig_atomic_t interrupted;
	volatile sig_atomic_t fast_tid; /* tracer tid while in run()'s fast path, else 0 */
	int fast_slot; /* its fast_waiters[] slot */
	pid_t waker_pid; /* run()'s waker child (session.c: waker_spawn()), or 0 */
	int waker_ms; /* how long the waker waits for interrupt() (-1: for ever); it reads this */
	int waker_pipe[2]; /* interrupt() writes [1]; the waker polls [0] */
	volatile sig_atomic_t waker_wfd; /* waker_pipe[1] while a waker runs, else -1 */
	char *waker_stack;
	pid_t launched_pid;
	int launch_status; /* -EAGAIN while running, -ECHILD if none */
	bool launch_kill;
	bool launch_reaped;
	/*
	 * The launched leader was let go at a stop while its process stays
	 * traced by another thread (session_detach_at_stop()): the session
	 * is not done before its exit is reaped (it is our child).
	 */
	bool launch_untraced;
	bool closing;
	/*
	 * The uprobes layer on this session (uprobes.c uprobes_session_hook()),
	 * told before a process is let go by utrace_session__detach_pid() (its
	 * pid), __detach() (0) or __close() (-1: the session goes away), so that
	 * no int3, trampoline return address or XOL area stays in a process that
	 * nobody traces any more: its next hit would kill it with SIGTRAP.
	 */
	void (*release_hook)(void *data, pid_t pid);
	void *release_data;
	/*
	 * Work a stop's callback could not do because it needs the stopped
	 * thread running (the agent's control thread serves the commands that
	 * a dlopen's re-plan sends): called after each handled stop, outside
	 * any dispatch, never nested (session_after()).
	 */
	void (*after_hook)(void *data);
	void *after_data;
	bool in_after;
	/*
	 * session_pump_hold(): exits reaped while a backend waits for its
	 * target (an agent command) are kept here and dispatched at the next
	 * wait, so that no process is freed under the waiting code.
	 */
	int hold_exits;
	int nr_held;
	struct {
		pid_t tid;
		int status;
	} held[64];
	/*
	 * The uprobes layer's additions to a launch (the agent backend: its
	 * object in LD_PRELOAD, the arena's fd): called before the fork,
	 * in the tracer; it fills @x (struct session_launch_extra).
	 */
	int (*launch_hook)(void *data, struct session_launch_extra *x);
	void *launch_data;
};

/*
 * struct session_launch_extra - what a launch hook adds: environment
 * entries ("NAME=value", replacing the caller's NAME; LD_PRELOAD is put
 * before the caller's own), and one fd that the command inherits as
 * @keep_as (the hook's fd may be close-on-exec).
 */
struct session_launch_extra {
	char env[4][4200];
	unsigned int nr_env;
	int keep_fd;
	int keep_as;
};

/*
 * utrace_session__attach_thread - utrace_session__attach() for thread @tid
 * of @pid alone (lib/inject.c): no other thread is seized or stopped.
 * Return: 0, -ESRCH if @tid is not a live thread of @pid, or as attach.
 */
int utrace_session__attach_thread(struct utrace_session *s, pid_t pid, pid_t tid);

/**
 * session_handle_status - process one waitpid() result for @tid (defined
 * in session.c; remote.c hands it the statuses it does not expect).
 */
void session_handle_status(struct utrace_session *s, pid_t tid, int status);
/* session_pump - dispatch every pending stop now (session.c); never blocks */
void session_pump(struct utrace_session *s);
/* session_pump_hold - the same, exits held for the next wait (session.c) */
void session_pump_hold(struct utrace_session *s);

/*
 * session_detach_at_stop - from a callback of @th's stop: when the stop
 * ends, PTRACE_DETACH @th (with the signal the stop still delivers, if
 * any) instead of resuming it; the session goes on tracing the process's
 * other threads (session.c). The agent backend keeps only its control
 * thread traced this way (backend-agent.c, ANCHOR).
 */
void session_detach_at_stop(struct utrace_thread *th);

/**
 * session_wait_tid - wait for a status of @tid only, until @deadline_ms
 * (CLOCK_MONOTONIC milliseconds; < 0: no limit) (session.c).
 */
int session_wait_tid(struct utrace_session *s, pid_t tid, int *ret_status, long deadline_ms);

/**
 * session_note_clone - @th, busy in a remote call, reported a clone, fork
 * or vfork event (@event): make the new task known to the session without
 * resuming @th, so that a later detach waits for the task's first stop and
 * detaches it too (session.c). Engines see the event as usual.
 */
void session_note_clone(struct utrace_session *s, struct utrace_thread *th, int event);

/** session_now_ms - CLOCK_MONOTONIC in milliseconds (session.c). */
long session_now_ms(void);

/** thread_invalidate_regs - forget the register cache of @th (session.c). */
void thread_invalidate_regs(struct utrace_thread *th);

/**
 * remote_find_syscall_insn - address of a syscall instruction in @th's
 * process, searched in the vdso then in libc (cached per process).
 */
int remote_find_syscall_insn(struct utrace_thread *th, uint64_t *ret_addr);

/**
 * remote_find_safe_gadgets - "syscall; ret" and __restore_rt in @th's libc
 * (cached per process): what kill-safe remote syscalls need (remote.c).
 * Return: true if both were found.
 */
bool remote_find_safe_gadgets(struct utrace_thread *th);

/*
 * inject_check_path - may @path be loaded into another process (inject.c)?
 * The rule of utrace_session__inject(), which the CLI also applies to the
 * agent it preloads. Return: 0, or a negative errno with @why set.
 */
int inject_check_path(const char *path, char *real, char *why, size_t size);

#endif /* __UTRACE_INTERNAL_H */
