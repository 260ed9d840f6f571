/* SPDX-License-Identifier: MIT */
/*
 * session.c - the utrace engine layer over ptrace. Runs in the tracer
 * process, in the tracing thread (the one that created the session).
 *
 * DESIGN
 *
 * A session traces processes (struct tproc) made of threads (struct
 * utrace_thread); engines (struct utrace_engine) get callbacks for the
 * events of every thread. All kernel interaction goes through one loop:
 * waitpid(-1, __WALL) returns (tid, status) pairs; session_handle_status()
 * decodes the status into one kind of ptrace stop (enum tstop), calls the
 * engines, and either resumes the thread or leaves it stopped.
 *
 * Why PTRACE_SEIZE everywhere. PTRACE_ATTACH sends a SIGSTOP that races
 * with other signals and turns into a real group-stop if the tracer loses
 * track of it; it also hides group-stops behind ordinary signal stops.
 * SEIZE (kernel/ptrace.c: ptrace_attach(), PTRACE_SEIZE) attaches silently,
 * makes group-stops visible as PTRACE_EVENT_STOP with the stop signal in
 * WSTOPSIG, and enables PTRACE_INTERRUPT and PTRACE_LISTEN. New threads and
 * (with -F) children are auto-attached with PTRACE_O_TRACECLONE/FORK/VFORK;
 * a SEIZEd parent's children start with JOBCTL_TRAP_STOP pending
 * (ptrace_init_task()), so their first report is a PTRACE_EVENT_STOP with
 * SIGTRAP, and it may arrive before the parent's PTRACE_EVENT_CLONE: an
 * unknown tid that stops is adopted by reading its Tgid from /proc.
 *
 * The stop kinds (enum tstop) and how each one is left:
 *  - TSTOP_EVENT: PTRACE_EVENT_STOP with SIGTRAP, from PTRACE_INTERRUPT or
 *    the first stop of a new thread. The thread sits in get_signal()
 *    (kernel/signal.c: do_jobctl_trap()), *before* the syscall-restart
 *    code of arch_do_signal_or_restart(): a thread interrupted in read()
 *    has rax = -ERESTARTSYS and restarts the read when resumed with no
 *    signal. Resumed with PTRACE_CONT/SYSCALL; a signal argument is
 *    ignored by the kernel here.
 *  - TSTOP_GROUP: PTRACE_EVENT_STOP with SIGSTOP/SIGTSTP/SIGTTIN/SIGTTOU:
 *    the process is group-stopped. Resuming with PTRACE_CONT would let the
 *    thread run although the process is stopped (ptrace overrides job
 *    control), so it is resumed with PTRACE_LISTEN: the thread stays
 *    stopped but still reports events; SIGCONT wakes it and it re-traps
 *    with PTRACE_EVENT_STOP/SIGTRAP (JOBCTL_TRAP_NOTIFY). A LISTENing
 *    thread is not "stopped" for ptrace requests (ptrace_freeze_traced()
 *    refuses JOBCTL_LISTENING), so it counts as running here and is
 *    PTRACE_INTERRUPTed when we need it.
 *  - TSTOP_SIGNAL: signal-delivery stop. The signal is already dequeued;
 *    it is delivered only if passed to the resuming request. Engines may
 *    suppress or change it. It is kept across UTRACE_STOP and handed to
 *    PTRACE_DETACH, so no signal is ever lost.
 *  - TSTOP_SYSCALL_ENTRY/EXIT: SIGTRAP|0x80 (PTRACE_O_TRACESYSGOOD).
 *    Entry and exit are told apart with PTRACE_GET_SYSCALL_INFO (probed
 *    at the first syscall stop; on kernels < 5.3 a per-thread toggle is
 *    used, which stays right because every path that resumes with
 *    PTRACE_SYSCALL keeps entry/exit paired).
 *  - TSTOP_SECCOMP: PTRACE_EVENT_SECCOMP, in seccomp mode. Since Linux 4.8
 *    the seccomp stop comes after the ptrace syscall-entry stop
 *    (kernel/entry/syscall-common.c: syscall_trace_enter()), so in
 *    seccomp mode threads are resumed with PTRACE_CONT (no entry stops)
 *    and, when an engine wants the exit, with one PTRACE_SYSCALL after the
 *    seccomp stop: the next stop is then the syscall-exit stop.
 *  - TSTOP_PEVENT: clone/fork/vfork/exec/vfork-done events, inside a
 *    syscall.
 *
 * Quiescing. want_stop marks a thread that must stay stopped; a running
 * one gets PTRACE_INTERRUPT. Any stop satisfies the request: the thread
 * may report a syscall, signal or clone stop before reaching get_signal(),
 * and that stop *consumes* the interrupt: ptrace_stop() clears
 * JOBCTL_TRAP_STOP on every trap ("any trap clears pending STOP trap",
 * kernel/signal.c), so no PTRACE_EVENT_STOP follows. The interrupted flag
 * therefore means "sent, and no stop of any kind seen since"; believing
 * that an EVENT_STOP is still due after another stop leaves a quiesce
 * waiting forever (our first stress runs did exactly that). A vfork
 * parent cannot stop until its child execs or exits (it waits in
 * TASK_KILLABLE, which PTRACE_INTERRUPT's wake-up does not interrupt):
 * PTRACE_O_TRACEVFORKDONE tells when it can again. quiesce does not wait
 * for such threads; detach detaches everything else first (the vfork
 * child included, which then execs) and waits for them last.
 *
 * Attaching. Every tid of /proc/PID/task is seized and interrupted, and
 * the list is read again until no new tid appears (threads created by a
 * seized thread are auto-attached; those created by one not yet seized
 * are not). PTRACE_SEIZE fails with EPERM not only for permission but for
 * a thread that is already exiting (PF_EXITING) or a zombie: /proc tells
 * them apart, and such threads are skipped. attach() waits
 * ATTACH_GRACE_MS for the first stops, not forever: a thread that cannot
 * stop now (vfork parent, uninterruptible sleep) keeps its interrupt
 * pending and is handled by the loop when it stops.
 * utrace_session__attach_thread() seizes one thread alone (lib/inject.c):
 * the others are never stopped. Another tracer
 * (TracerPid, which names the tracing *thread*) is an error, never a
 * reason to touch the target.
 *
 * Lifetime. A thread handle is freed when the thread's exit is reaped, or
 * at detach. A callback may quiesce the process and so reap the death of
 * the very thread it runs for: handles being handled carry a reference
 * (busy), and such a thread is only unlinked and marked dead, then freed
 * by the outermost handler.
 *
 * Detaching. PTRACE_DETACH needs the thread in a ptrace stop. Every
 * thread is interrupted and waited for (events that arrive meanwhile are
 * still reported), then detached with the signal held at a
 * signal-delivery stop, if any. __ptrace_unlink() clears the pending
 * JOBCTL_TRAP_* bits, so no stray stop remains, and re-arms
 * JOBCTL_STOP_PENDING when the group is stopped: a stopped process stays
 * stopped. Registers are written back immediately by set_regs, so there is
 * nothing to flush.
 *
 * Exec. When a non-leader thread calls execve, the kernel (fs/exec.c:
 * de_thread()) kills the other threads, which report their exit, and the
 * exec'ing thread takes over the leader's tid: PTRACE_EVENT_EXEC arrives
 * for tid == pid, PTRACE_GETEVENTMSG gives the former tid, and the former
 * tid never reports again. Its state (in_syscall, etc.) moves to the
 * leader's handle. The old leader's own death is not reported either.
 *
 * Forks not followed. With PTRACE_O_TRACEFORK the child is auto-attached;
 * it is detached at its first stop and runs untraced. In seccomp mode
 * that would be wrong: the child inherits the SECCOMP_RET_TRACE filter,
 * and without a tracer every traced syscall fails with ENOSYS
 * (kernel/seccomp.c: __seccomp_filter()). Such children are kept traced
 * silently (tproc.hidden): their seccomp stops are continued and no
 * callback sees them. That is also why close() in seccomp launch mode
 * keeps servicing the command until it exits instead of detaching it.
 *
 * Launch. As strace does: the child raises SIGSTOP, the parent waits for
 * it, PTRACE_SEIZEs it (the kernel re-traps it as a group-stop report)
 * and sends SIGCONT; the child then runs the pre-exec hook (seccomp
 * filter) and execs. The SIGCONT delivery is swallowed. Events before the
 * execve are hidden unless asked.
 *
 * Waiting. waitpid(-1, __WALL) is the only way to wait for many tracees.
 * __WNOTHREAD restricts it to the tracees and children of the tracing
 * thread (do_wait() otherwise scans every thread of the tracer's process),
 * so sessions in different threads, or a tracer thread next to threads
 * that fork their own children, do not steal each other's events; two
 * sessions in the same thread would, which is why there must be at most
 * one per thread.
 * Ptrace stops send SIGCHLD to the tracer (do_notify_parent_cldstop(),
 * which is why SA_NOCLDSTOP must never be used). run() normally takes the
 * fast path (run_fast()) with SIGCHLD blocked in the tracing thread, so no
 * signal is ever delivered per stop. run(-1) then sleeps in a blocking
 * waitpid(-1), as strace does: the tracee's stop wakes it with a *sync*
 * wake-up (__wake_up_parent()), which keeps tracer and tracee ping-ponging
 * on one CPU; a signal wake-up (sigtimedwait(), poll() on the pipe) is not
 * sync and often pulls the tracer to the other, idle CPU, which costs more
 * than the system calls themselves (we measured it: 20-40% more CPU, in
 * runs that came out bimodal). One stop costs waitpid() and the engines'
 * ptrace requests: 3 system calls for utrace -s. A blocking waitpid() is
 * restarted after a signal handler with SA_RESTART, so interrupt() cannot
 * rely on EINTR: run(-1) starts a waker (waker_spawn()), a CLONE_VM child
 * of the tracing thread that exits when interrupt() writes to its pipe,
 * which waitpid() then reports. run() with a timeout of WAKER_MIN_MS or
 * more does the same with a waker that also exits at the timeout (the
 * CLI's event loops return every 50 ms to let output out: with a signal
 * wake-up instead, utrace -s cost 24% more CPU in bench/syscalls.sh).
 * Shorter timeouts drain waitpid(WNOHANG) and sleep in sigtimedwait(),
 * which returns as soon as a SIGCHLD is pending (no event is missed
 * between the drain and the sleep); interrupt() tgkill()s a SIGCHLD to it. SIGCHLD being
 * process-directed, a thread that does not block it may take it instead:
 * the handler forwards it to the fast-path threads (fast_waiters[]).
 * Otherwise (the caller's own SIGCHLD handler to chain to, SIGCHLD blocked
 * by the caller, or fd integration with utrace_session__fd()/__poll()) the
 * loop sleeps in poll() on a self-pipe written by the SIGCHLD handler.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utrace/proc.h"
#include "utrace/session.h"
#include "arch.h"
#include "internal.h"

#define OPTS_OK(opts, type)                                                        \
	(!(opts) || ((opts)->sz >= offsetofend(struct type, type##__last_field) && \
		     opts_tail_zero((opts), sizeof(struct type), (opts)->sz)))
#define offsetofend(TYPE, FIELD) (offsetof(TYPE, FIELD) + sizeof(((TYPE *)0)->FIELD))
/* A field of an opts struct, or @def if the caller's struct is too old to have it. */
#define OPTS_GET(opts, type, field, def) \
	((opts) && (opts)->sz >= offsetofend(struct type, field) ? (opts)->field : (def))

#define POLL_FALLBACK_MS 10

/* Only tracees and children of the calling (tracing) thread. */
#define WAIT_FLAGS (__WALL | __WNOTHREAD)

/* How long attach waits for a thread's first stop before moving on. */
#define ATTACH_GRACE_MS 300

extern char **environ;

static long now_ms(void);

static bool opts_tail_zero(const void *opts, size_t known, size_t sz)
{
	const char *p = opts;
	size_t i;

	for (i = known; i < sz; i++)
		if (p[i])
			return false;
	return true;
}

static pid_t gettid_raw(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/*
 * The calling thread's tid, cached: check_tracer() runs on every poll() and
 * run() call, and gettid() is a system call. A forked child inherits the
 * cache of the thread that forked, so an atfork handler clears it.
 */
static __thread pid_t cached_tid;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;

static void tid_forget(void)
{
	cached_tid = 0;
}

static void tid_once_init(void)
{
	pthread_atfork(NULL, NULL, tid_forget);
}

static pid_t current_tid(void)
{
	if (!cached_tid) {
		pthread_once(&tid_once, tid_once_init);
		cached_tid = gettid_raw();
	}
	return cached_tid;
}

/* ------------------------------------------------------------------------ */
/* SIGCHLD self-pipe                                                         */
/* ------------------------------------------------------------------------ */

static int sigchld_pipe[2] = { -1, -1 };
static struct sigaction old_sigchld;

/*
 * Tracing threads inside run()'s fast path (see run_fast()): they keep
 * SIGCHLD blocked and take it with sigtimedwait(). SIGCHLD is
 * process-directed, so another thread of the process may take it instead;
 * the handler then forwards it to every such thread with tgkill(). Slots
 * are claimed with a compare-and-swap of 0 -> tid; the handler only reads.
 */
#define FAST_WAITERS 8
static volatile sig_atomic_t fast_waiters[FAST_WAITERS];

/* Async-signal-safe. */
static void sigchld_forward(void)
{
	pid_t self = 0;
	int i;

	for (i = 0; i < FAST_WAITERS; i++) {
		pid_t t = fast_waiters[i];

		if (!t)
			continue;
		if (!self)
			self = gettid_raw();
		if (t != self)
			syscall(SYS_tgkill, getpid(), t, SIGCHLD);
	}
}

static void sigchld_handler(int sig, siginfo_t *info, void *uctx)
{
	int saved = errno;
	char c = 0;

	if (write(sigchld_pipe[1], &c, 1) < 0) {
		/* full pipe: a wake-up is already pending */
	}
	sigchld_forward();
	if (old_sigchld.sa_flags & SA_SIGINFO) {
		if (old_sigchld.sa_sigaction)
			old_sigchld.sa_sigaction(sig, info, uctx);
	} else if (old_sigchld.sa_handler != SIG_DFL && old_sigchld.sa_handler != SIG_IGN) {
		old_sigchld.sa_handler(sig);
	}
	errno = saved;
}

static int sigchld_setup(void)
{
	struct sigaction sa;

	if (sigchld_pipe[0] >= 0)
		return 0;
	if (pipe2(sigchld_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sigchld_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGCHLD, &sa, &old_sigchld) < 0) {
		int err = -errno;

		close(sigchld_pipe[0]);
		close(sigchld_pipe[1]);
		sigchld_pipe[0] = sigchld_pipe[1] = -1;
		return err;
	}
	return 0;
}

/*
 * Can poll() on the pipe be trusted to wake us? Not if the caller replaced
 * our SIGCHLD handler or blocks SIGCHLD in this thread (e.g. to read it
 * from a signalfd): then run() falls back to polling waitpid() every
 * POLL_FALLBACK_MS, and says so once.
 */
static bool sigchld_reliable(void)
{
	static bool warned;
	struct sigaction cur;
	sigset_t mask;
	bool ok;

	ok = sigaction(SIGCHLD, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
	     cur.sa_sigaction == sigchld_handler && pthread_sigmask(SIG_BLOCK, NULL, &mask) == 0 &&
	     !sigismember(&mask, SIGCHLD);
	if (!ok && !warned) {
		warned = true;
		pr_info("SIGCHLD handler replaced or SIGCHLD blocked: polling every %d ms\n",
			POLL_FALLBACK_MS);
	}
	return ok;
}

static void sigchld_drain(void)
{
	char buf[64];

	while (read(sigchld_pipe[0], buf, sizeof(buf)) > 0)
		;
}

/* ------------------------------------------------------------------------ */
/* Objects                                                                   */
/* ------------------------------------------------------------------------ */

static struct tproc *find_proc(struct utrace_session *s, pid_t pid)
{
	struct tproc *p;

	for (p = s->procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

struct utrace_thread *utrace_session__find_thread(struct utrace_session *s, pid_t tid)
{
	struct utrace_thread *th;

	if (!s)
		return NULL;
	for (th = s->threads; th; th = th->next)
		if (th->tid == tid)
			return th;
	return NULL;
}

static struct tproc *proc_new(struct utrace_session *s, pid_t pid)
{
	struct tproc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	p->next = s->procs;
	if (s->procs)
		s->procs->prev = p;
	s->procs = p;
	return p;
}

static void proc_free(struct utrace_session *s, struct tproc *p)
{
	pr_debug("process %d: no traced thread left\n", p->pid);
	if (p->prev)
		p->prev->next = p->next;
	else
		s->procs = p->next;
	if (p->next)
		p->next->prev = p->prev;
	free(p);
}

static struct utrace_thread *thread_new(struct utrace_session *s, struct tproc *p, pid_t tid)
{
	struct utrace_thread *th = calloc(1, sizeof(*th));

	if (!th)
		return NULL;
	th->s = s;
	th->proc = p;
	th->tid = tid;
	th->stop = TSTOP_RUNNING;
	th->cur_nr = -1;
	th->next = s->threads;
	if (s->threads)
		s->threads->prev = th;
	s->threads = th;
	p->nr_threads++;
	return th;
}

/*
 * Unlink and free @th; frees its process when it was the last thread. A
 * thread whose event is being handled further up the stack (a callback
 * quiesced the process and the thread's own death was reaped meanwhile) is
 * only unlinked and marked dead; the outermost handler frees it.
 */
static void thread_free(struct utrace_session *s, struct utrace_thread *th)
{
	struct tproc *p = th->proc;

	if (th->dead)
		return;
	if (th->prev)
		th->prev->next = th->next;
	else
		s->threads = th->next;
	if (th->next)
		th->next->prev = th->prev;
	th->prev = th->next = NULL;
	th->proc = NULL;
	th->stop = TSTOP_RUNNING;
	if (th->busy)
		th->dead = true;
	else
		free(th);
	if (--p->nr_threads == 0)
		proc_free(s, p);
}

static void thread_get(struct utrace_thread *th)
{
	th->busy++;
}

/* Drop a reference; returns false if @th died meanwhile (and frees it). */
static bool thread_put(struct utrace_thread *th)
{
	if (--th->busy == 0 && th->dead) {
		free(th);
		return false;
	}
	return !th->dead;
}

/**
 * thread_invalidate_regs - forget the register cache of @th.
 * @th: thread
 *
 * Called whenever the thread runs (tracer). Return: nothing.
 */
void thread_invalidate_regs(struct utrace_thread *th)
{
	th->regs_valid = false;
}

/* ------------------------------------------------------------------------ */
/* Engines                                                                   */
/* ------------------------------------------------------------------------ */

static uint32_t engines_mask(struct utrace_session *s)
{
	struct utrace_engine *e;
	uint32_t m = 0;

	for (e = s->engines; e; e = e->next)
		if (!e->dead)
			m |= e->events;
	return m;
}

static void engines_reap(struct utrace_session *s)
{
	struct utrace_engine **pp = &s->engines;

	if (s->dispatch_depth)
		return;
	while (*pp) {
		struct utrace_engine *e = *pp;

		if (e->dead) {
			*pp = e->next;
			free(e);
		} else {
			pp = &e->next;
		}
	}
}

struct utrace_engine *utrace_engine__attach(struct utrace_session *s,
					    const struct utrace_engine_ops *ops, uint32_t events,
					    void *ctx)
{
	struct utrace_engine *e, **pp;

	if (!s || !ops || (events & ~(uint32_t)UTRACE_EV_ALL) || ops->sz < sizeof(size_t) ||
	    !opts_tail_zero(ops, sizeof(*ops), ops->sz)) {
		errno = EINVAL;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(&e->ops, ops, MIN(ops->sz, sizeof(e->ops)));
	e->ops.sz = sizeof(e->ops);
	e->s = s;
	e->events = events;
	e->ctx = ctx;
	e->gen = ++s->engine_gen;
	for (pp = &s->engines; *pp; pp = &(*pp)->next)
		;
	*pp = e;
	return e;
}

void utrace_engine__detach(struct utrace_engine *e)
{
	if (!e || e->dead)
		return;
	e->dead = true;
	if (e->ops.detach)
		e->ops.detach(e);
	engines_reap(e->s);
}

int utrace_engine__set_events(struct utrace_engine *e, uint32_t events)
{
	if (!e || (events & ~(uint32_t)UTRACE_EV_ALL))
		return -EINVAL;
	e->events = events;
	return 0;
}

void *utrace_engine__ctx(const struct utrace_engine *e)
{
	return e ? e->ctx : NULL;
}

struct utrace_session *utrace_engine__session(const struct utrace_engine *e)
{
	return e ? e->s : NULL;
}

/* The arguments of one event, for dispatch(). */
struct evargs {
	uint32_t ev;
	struct utrace_syscall *sc;
	siginfo_t *info;
	pid_t child;
	bool vfork;
	bool followed;
	pid_t former;
	int status;
	int signo;
};

static int call_one(struct utrace_engine *e, struct utrace_thread *th, const struct evargs *a)
{
	const struct utrace_engine_ops *o = &e->ops;

	switch (a->ev) {
	case UTRACE_EV_SYSCALL_ENTRY:
		return o->syscall_entry ? o->syscall_entry(e, th, a->sc) : 0;
	case UTRACE_EV_SYSCALL_EXIT:
		return o->syscall_exit ? o->syscall_exit(e, th, a->sc) : 0;
	case UTRACE_EV_SECCOMP:
		return o->seccomp ? o->seccomp(e, th, a->sc) : 0;
	case UTRACE_EV_SIGNAL:
		return o->signal ? o->signal(e, th, a->info) : 0;
	case UTRACE_EV_CLONE:
		return o->clone ? o->clone(e, th, a->child) : 0;
	case UTRACE_EV_FORK:
		return o->fork ? o->fork(e, th, a->child, a->vfork, a->followed) : 0;
	case UTRACE_EV_EXEC:
		return o->exec ? o->exec(e, th, a->former) : 0;
	case UTRACE_EV_EXIT:
		return o->exit ? o->exit(e, th, a->status) : 0;
	case UTRACE_EV_STOP:
		return o->stop ? o->stop(e, th, a->signo) : 0;
	case UTRACE_EV_QUIESCE:
		return o->quiesce ? o->quiesce(e, th) : 0;
	case UTRACE_EV_STEP:
		return o->step ? o->step(e, th) : 0;
	case UTRACE_EV_ATTACH:
		return o->attach ? o->attach(e, th) : 0;
	}
	return 0;
}

/*
 * Call every engine interested in @a->ev, in attach order; engines attached
 * during this dispatch are not called for it. Returns the combined action.
 */
static int dispatch(struct utrace_session *s, struct utrace_thread *th, const struct evargs *a)
{
	unsigned long gen = s->engine_gen;
	struct utrace_engine *e;
	int action = UTRACE_RESUME, flags = 0;
	struct utrace_thread *saved_th = s->dispatch_th;

	if (th->dead || th->proc->hidden || th->proc->hide_pre_exec)
		return 0;
	s->dispatch_depth++;
	s->dispatch_th = th;
	thread_get(th);
	for (e = s->engines; e; e = e->next) {
		int r;

		if (th->dead)
			break;
		if (e->dead || e->gen > gen || !(e->events & a->ev))
			continue;
		r = call_one(e, th, a);
		if (r < 0)
			r = 0;
		if ((r & UTRACE_ACTION_MASK) > action)
			action = r & UTRACE_ACTION_MASK;
		flags |= r & (UTRACE_SIGNAL_IGNORE | UTRACE_BREAK);
		if (r & UTRACE_DETACH)
			utrace_engine__detach(e);
		/*
		 * A signal an engine suppressed is not "about to be delivered"
		 * (UTRACE_EV_SIGNAL) any more: later engines do not see it (a
		 * syscall tracer after the uprobes layer would show each
		 * breakpoint's SIGTRAP as the program's)
		 */
		if (a->ev == UTRACE_EV_SIGNAL && (flags & UTRACE_SIGNAL_IGNORE))
			break;
	}
	th->busy--; /* the caller holds a reference too: never freed here */
	s->dispatch_depth--;
	s->dispatch_th = saved_th;
	engines_reap(s);
	if (flags & UTRACE_BREAK)
		s->break_req = true;
	return action | flags;
}

/* ------------------------------------------------------------------------ */
/* Resuming                                                                  */
/* ------------------------------------------------------------------------ */

static bool wants_syscall_stops(struct utrace_thread *th)
{
	struct utrace_session *s = th->s;

	if (th->proc->hidden)
		return th->exit_wanted;
	if (s->mode == UTRACE_SYSCALLS_SECCOMP)
		return th->exit_wanted;
	return engines_mask(s) & UTRACE_EV_SYSCALL;
}

/* Let a stopped thread go, whatever held it. */
static int thread_release(struct utrace_thread *th)
{
	int sig = 0, req, r;

	if (th->stop == TSTOP_RUNNING)
		return 0;
	if (th->stop == TSTOP_SIGNAL)
		sig = th->stop_sig;
	thread_invalidate_regs(th);
	th->engine_stop = false;
	th->want_stop = false;
	th->notify_quiesce = false;
	if (th->stop == TSTOP_GROUP && !th->stepping) {
		th->stop = TSTOP_RUNNING;
		th->listening = true;
		r = ptrace_listen(th->tid);
		if (r < 0 && r != -ESRCH)
			pr_warn("thread %d: PTRACE_LISTEN failed: %s\n", th->tid, strerror(-r));
		return r == -ESRCH ? 0 : r;
	}
	if (th->stepping)
		req = PTRACE_SINGLESTEP;
	else if (wants_syscall_stops(th))
		req = PTRACE_SYSCALL;
	else
		req = PTRACE_CONT;
	th->stop = TSTOP_RUNNING;
	r = ptrace_resume(th->tid, req, sig);
	/* -ESRCH: killed while stopped; its exit will be reported. */
	if (r < 0 && r != -ESRCH)
		pr_warn("thread %d: failed to resume: %s\n", th->tid, strerror(-r));
	return r == -ESRCH ? 0 : r;
}

static int detach_thread(struct utrace_session *s, struct utrace_thread *th);

void session_detach_at_stop(struct utrace_thread *th)
{
	th->detach_req = true;
}

/* After an event: stay stopped if anybody wants it, else resume (or let go). */
static void thread_settle(struct utrace_thread *th)
{
	if (th->dead || th->want_stop || th->engine_stop)
		return;
	if (th->detach_req && th->stop != TSTOP_RUNNING && th->proc->nr_threads > 1) {
		struct utrace_session *s = th->s;

		if (th->tid == s->launched_pid)
			s->launch_untraced = true;
		pr_debug("thread %d: let go (its process stays traced)\n", th->tid);
		detach_thread(s, th);
		return;
	}
	thread_release(th);
}

/* Apply the combined action of a dispatch to @th. */
static void apply_action(struct utrace_thread *th, int action)
{
	switch (action & UTRACE_ACTION_MASK) {
	case UTRACE_STOP:
		if (!th->override_resume)
			th->engine_stop = true;
		break;
	case UTRACE_SINGLESTEP:
		th->stepping = true;
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------------ */
/* Event decoding                                                            */
/* ------------------------------------------------------------------------ */

static int syscall_info_state; /* 0 unknown, 1 works, -1 unsupported */

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static pid_t read_tgid(pid_t tid)
{
	char buf[32];

	if (proc_status_field(tid, "Tgid", buf, sizeof(buf)) < 0)
		return -1;
	return (pid_t)atoi(buf);
}

/* Decide how a new child process of a traced one is handled. */
static void child_policy(struct utrace_session *s, struct tproc *child, struct tproc *parent)
{
	if (parent && parent->hidden) {
		child->hidden = true;
	} else if (s->follow_forks) {
		/* traced and reported */
	} else if (s->mode == UTRACE_SYSCALLS_SECCOMP) {
		child->hidden = true;
	} else {
		child->detach_new = true;
	}
}

/* A tid we do not know reported a ptrace stop: a new thread or child. */
static struct utrace_thread *adopt(struct utrace_session *s, pid_t tid, struct tproc *parent)
{
	pid_t tgid = read_tgid(tid);
	struct tproc *p;
	struct utrace_thread *th;

	if (tgid <= 0)
		return NULL;
	p = find_proc(s, tgid);
	if (!p) {
		p = proc_new(s, tgid);
		if (!p)
			return NULL;
		child_policy(s, p, parent);
	}
	th = thread_new(s, p, tid);
	if (!th && p->nr_threads == 0)
		proc_free(s, p);
	return th;
}

/* Write back what an entry callback changed in @sc. */
static void syscall_entry_writeback(struct utrace_thread *th, const struct utrace_syscall *old,
				    const struct utrace_syscall *sc)
{
	struct user_regs_struct regs;

	if (old->nr == sc->nr && !memcmp(old->args, sc->args, sizeof(sc->args)))
		return;
	if (utrace_thread__get_regs(th, &regs) < 0)
		return;
	arch_set_syscall(&regs, sc->nr, sc->args);
	utrace_thread__set_regs(th, &regs);
	th->cur_nr = sc->nr;
	memcpy(th->cur_args, sc->args, sizeof(sc->args));
}

static void handle_syscall_entry(struct utrace_session *s, struct utrace_thread *th,
				 struct utrace_syscall *sc)
{
	struct utrace_syscall old = *sc;
	struct evargs a = { .sc = sc };
	int action = 0;

	th->in_syscall = true;
	th->skip = false;
	th->cur_nr = sc->nr;
	memcpy(th->cur_args, sc->args, sizeof(sc->args));
	if (th->proc->hide_pre_exec && (sc->nr == SYS_execve || sc->nr == SYS_execveat))
		th->proc->hide_pre_exec = false;
	if (sc->seccomp) {
		a.ev = UTRACE_EV_SECCOMP;
		action |= dispatch(s, th, &a);
	}
	a.ev = UTRACE_EV_SYSCALL_ENTRY;
	action |= dispatch(s, th, &a);
	if (th->dead)
		return;
	if (!th->skip)
		syscall_entry_writeback(th, &old, sc);
	if (sc->seccomp && !th->proc->hidden)
		th->exit_wanted = (engines_mask(s) & UTRACE_EV_SYSCALL_EXIT) || th->skip;
	apply_action(th, action);
}

static void handle_syscall_exit(struct utrace_session *s, struct utrace_thread *th,
				struct utrace_syscall *sc)
{
	struct evargs a = { .ev = UTRACE_EV_SYSCALL_EXIT, .sc = sc };
	long ret;
	int action;

	th->in_syscall = false;
	th->exit_wanted = false;
	sc->nr = th->cur_nr;
	memcpy(sc->args, th->cur_args, sizeof(sc->args));
	if (th->skip) {
		struct user_regs_struct regs;

		th->skip = false;
		if (utrace_thread__get_regs(th, &regs) == 0 &&
		    arch_syscall_ret(&regs) != th->skip_ret) {
			arch_set_syscall_ret(&regs, th->skip_ret);
			utrace_thread__set_regs(th, &regs);
		}
		sc->ret = th->skip_ret;
	}
	ret = sc->ret;
	action = dispatch(s, th, &a);
	if (sc->ret != ret) {
		struct user_regs_struct regs;

		if (utrace_thread__get_regs(th, &regs) == 0) {
			arch_set_syscall_ret(&regs, sc->ret);
			utrace_thread__set_regs(th, &regs);
		}
	}
	apply_action(th, action);
}

static void handle_syscall_stop(struct utrace_session *s, struct utrace_thread *th, bool seccomp)
{
	struct __ptrace_syscall_info info;
	struct utrace_syscall sc;
	struct user_regs_struct regs;
	int op = -1;

	memset(&sc, 0, sizeof(sc));
	/* Test knob: exercise the fallback used on kernels < 5.3. */
	if (!syscall_info_state && getenv("UTRACE_NO_SYSCALL_INFO"))
		syscall_info_state = -1;
	if (syscall_info_state >= 0) {
		int r = ptrace_get_syscall_info(th->tid, &info);

		if (r > 0) {
			syscall_info_state = 1;
			op = info.op;
		} else if (r == -EIO || r == -EINVAL) {
			syscall_info_state = -1;
		}
	}
	if (op == PTRACE_SYSCALL_INFO_ENTRY || op == PTRACE_SYSCALL_INFO_SECCOMP) {
		sc.nr = (long)info.entry.nr;
		memcpy(sc.args, info.entry.args, sizeof(sc.args));
		sc.instruction_pointer = info.instruction_pointer;
		sc.stack_pointer = info.stack_pointer;
		if (op == PTRACE_SYSCALL_INFO_SECCOMP) {
			sc.seccomp = true;
			sc.seccomp_data = info.seccomp.ret_data;
		}
	} else if (op == PTRACE_SYSCALL_INFO_EXIT) {
		sc.ret = (long)info.exit.rval;
		sc.instruction_pointer = info.instruction_pointer;
		sc.stack_pointer = info.stack_pointer;
	} else {
		/* No PTRACE_GET_SYSCALL_INFO: registers and a toggle. */
		if (utrace_thread__get_regs(th, &regs) < 0)
			return;
		arch_regs_to_syscall(&regs, &sc);
		if (seccomp) {
			unsigned long msg = 0;

			ptrace_geteventmsg(th->tid, &msg);
			sc.seccomp = true;
			sc.seccomp_data = (uint32_t)msg;
			op = PTRACE_SYSCALL_INFO_SECCOMP;
		} else {
			op = th->in_syscall ? PTRACE_SYSCALL_INFO_EXIT : PTRACE_SYSCALL_INFO_ENTRY;
		}
	}
	if (op == PTRACE_SYSCALL_INFO_EXIT) {
		th->stop = TSTOP_SYSCALL_EXIT;
		handle_syscall_exit(s, th, &sc);
	} else {
		th->stop = op == PTRACE_SYSCALL_INFO_SECCOMP ? TSTOP_SECCOMP : TSTOP_SYSCALL_ENTRY;
		handle_syscall_entry(s, th, &sc);
	}
}

static void handle_signal_stop(struct utrace_session *s, struct utrace_thread *th, int sig)
{
	siginfo_t info, orig;
	struct evargs a = { .ev = UTRACE_EV_SIGNAL, .info = &info };
	int action;

	th->stop = TSTOP_SIGNAL;
	th->stop_sig = sig;
	if (ptrace_getsiginfo(th->tid, &info) < 0) {
		memset(&info, 0, sizeof(info));
		info.si_signo = sig;
	}
	if (th->stepping && sig == SIGTRAP) {
		struct evargs st = { .ev = UTRACE_EV_STEP };

		/* The trap of PTRACE_SINGLESTEP (TRAP_TRACE): ours, not the program's. */
		th->stepping = false;
		th->stop_sig = 0;
		apply_action(th, dispatch(s, th, &st));
		return;
	}
	if (th->launch_sigcont && sig == SIGCONT) {
		th->launch_sigcont = false;
		th->stop_sig = 0;
		return;
	}
	orig = info;
	action = dispatch(s, th, &a);
	if (action & UTRACE_SIGNAL_IGNORE || info.si_signo == 0) {
		th->stop_sig = 0;
	} else if (memcmp(&orig, &info, sizeof(info))) {
		if (ptrace_setsiginfo(th->tid, &info) == 0)
			th->stop_sig = info.si_signo;
	}
	apply_action(th, action);
}

static void handle_event_stop(struct utrace_session *s, struct utrace_thread *th, int sig)
{
	th->interrupted = false;
	if (is_stop_signal(sig)) {
		th->stop = TSTOP_GROUP;
		th->stop_sig = sig;
		if (!th->group_stopped) {
			struct evargs a = { .ev = UTRACE_EV_STOP, .signo = sig };

			th->group_stopped = true;
			apply_action(th, dispatch(s, th, &a));
		}
	} else {
		th->stop = TSTOP_EVENT;
		th->stop_sig = 0;
		th->group_stopped = false;
	}
}

/*
 * The parent's fork event has been reported: a child that is not followed
 * may go now. Its first stop may have come before the parent's event (the
 * two race in waitpid()); it was held stopped then, so that engines could
 * clean up the child (e.g. remove breakpoints from its copy of the code)
 * before it runs a single instruction.
 */
static void fork_release_child(struct utrace_session *s, pid_t child)
{
	struct utrace_thread *cth = utrace_session__find_thread(s, child);

	if (!cth || !cth->proc->detach_new)
		return;
	cth->proc->fork_reported = true;
	if (cth->stop != TSTOP_RUNNING) {
		int sig = cth->stop == TSTOP_SIGNAL ? cth->stop_sig : 0;

		ptrace_detach(cth->tid, sig);
		thread_free(s, cth);
	}
}

static void handle_clone_event(struct utrace_session *s, struct utrace_thread *th, int event)
{
	unsigned long msg = 0;
	pid_t child;
	pid_t tgid;
	struct utrace_thread *cth;
	struct tproc *cp;
	struct evargs a = { 0 };

	if (ptrace_geteventmsg(th->tid, &msg) < 0)
		return;
	child = (pid_t)msg;
	if (event == PTRACE_EVENT_VFORK)
		th->in_vfork = true;
	cth = utrace_session__find_thread(s, child);
	if (!cth) {
		tgid = read_tgid(child);
		if (tgid == th->proc->pid) {
			cth = thread_new(s, th->proc, child);
		} else if (tgid > 0) {
			struct tproc tmp = { .pid = tgid };

			child_policy(s, &tmp, th->proc);
			if (tmp.detach_new) {
				/*
				 * Not followed: detached at its first stop, which is still to
				 * come (a first stop seen earlier is held, see below); the
				 * engines see the fork before the child can run.
				 */
				cp = proc_new(s, tgid);
				if (cp) {
					cp->detach_new = true;
					if (!thread_new(s, cp, child))
						proc_free(s, cp);
				}
				a.ev = UTRACE_EV_FORK;
				a.child = tgid;
				a.vfork = event == PTRACE_EVENT_VFORK;
				apply_action(th, dispatch(s, th, &a));
				fork_release_child(s, child);
				return;
			}
			cp = proc_new(s, tgid);
			if (cp) {
				child_policy(s, cp, th->proc);
				cth = thread_new(s, cp, child);
			}
		}
		if (!cth) {
			pr_warn("thread %d: cannot track new task %d\n", th->tid, child);
			return;
		}
	}
	a.child = child;
	if (s->injecting_tid && th->tid == s->injecting_tid)
		cth->injected = true; /* before any of its stops is dispatched */
	if (cth->proc == th->proc) {
		a.ev = UTRACE_EV_CLONE;
	} else {
		a.ev = UTRACE_EV_FORK;
		a.vfork = event == PTRACE_EVENT_VFORK;
		a.followed = !cth->proc->detach_new && !cth->proc->hidden;
		a.child = cth->proc->pid;
	}
	apply_action(th, dispatch(s, th, &a));
	if (a.ev == UTRACE_EV_FORK)
		fork_release_child(s, child);
}

void session_note_clone(struct utrace_session *s, struct utrace_thread *th, int event)
{
	/* Only the new task matters here: @th's own flags stay as the call left them. */
	bool engine_stop = th->engine_stop, stepping = th->stepping;
	enum tstop stop = th->stop;

	handle_clone_event(s, th, event);
	th->engine_stop = engine_stop;
	th->stepping = stepping;
	th->stop = stop;
}

static void handle_exec_event(struct utrace_session *s, struct utrace_thread *th)
{
	unsigned long msg = 0;
	pid_t former;
	struct utrace_thread *old;
	struct evargs a = { .ev = UTRACE_EV_EXEC };

	if (ptrace_geteventmsg(th->tid, &msg) < 0)
		msg = (unsigned long)th->tid;
	former = (pid_t)msg;
	if (former != th->tid) {
		old = utrace_session__find_thread(s, former);
		if (old) {
			/* The exec'ing thread took over the leader's tid. */
			th->in_syscall = old->in_syscall;
			th->cur_nr = old->cur_nr;
			memcpy(th->cur_args, old->cur_args, sizeof(th->cur_args));
			th->exit_wanted = old->exit_wanted;
			th->want_stop |= old->want_stop;
			th->notify_quiesce |= old->notify_quiesce;
			th->engine_stop = false;
			th->stepping = false;
			th->in_vfork = false;
			thread_free(s, old);
		}
	}
	th->proc->gadget = 0;
	th->proc->sysret = th->proc->restore_rt = th->proc->call_stub = 0;
	th->proc->safe_searched = false;
	th->group_stopped = false;
	th->proc->hide_pre_exec = false;
	a.former = former;
	apply_action(th, dispatch(s, th, &a));
}

static void handle_exit(struct utrace_session *s, struct utrace_thread *th, pid_t tid, int status)
{
	struct evargs a = { .ev = UTRACE_EV_EXIT, .status = status };
	bool launched_leader;
	struct tproc *p;

	if (!th) {
		if (tid == s->launched_pid && !s->launch_reaped)
			goto launched;
		pr_debug("reaped task %d that is not traced (status 0x%x)\n", tid, status);
		return;
	}
	p = th->proc;
	launched_leader = tid == p->pid && p->launched;
	th->stop = TSTOP_RUNNING;
	th->regs_valid = false;
	dispatch(s, th, &a);
	thread_free(s, th);
	if (!launched_leader)
		return;
launched:
	s->launch_reaped = true;
	if (WIFEXITED(status))
		s->launch_status = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		s->launch_status = 128 + WTERMSIG(status);
}

static void handle_stop(struct utrace_session *s, struct utrace_thread *th, int sig, int event);

/**
 * session_handle_status - process one waitpid() result.
 * @s: session
 * @tid: the task waitpid() returned
 * @status: its wait status
 *
 * Runs in the tracing thread; calls engines; may allocate. Return: nothing
 * (problems are logged).
 */
void session_handle_status(struct utrace_session *s, pid_t tid, int status)
{
	struct utrace_thread *th = utrace_session__find_thread(s, tid);

	if ((WIFEXITED(status) || WIFSIGNALED(status)) && s->hold_exits &&
	    s->nr_held < (int)ARRAY_SIZE(s->held)) {
		s->held[s->nr_held].tid = tid;
		s->held[s->nr_held++].status = status;
		return;
	}
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		handle_exit(s, th, tid, status);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	if (!th) {
		th = adopt(s, tid, NULL);
		if (!th) {
			pr_warn("task %d stopped but cannot be identified, resuming it\n", tid);
			ptrace_resume(tid, PTRACE_CONT, 0);
			return;
		}
	}
	thread_get(th);
	handle_stop(s, th, WSTOPSIG(status), (unsigned int)status >> 16);
	if (!thread_put(th))
		return;
	thread_settle(th);
}

/* The body of session_handle_status() for a stop; @th is referenced. */
static void handle_stop(struct utrace_session *s, struct utrace_thread *th, int sig, int event)
{
	pid_t tid = th->tid;

	th->regs_valid = false;
	th->listening = false;
	th->override_resume = false;
	/* Any ptrace stop consumes a pending PTRACE_INTERRUPT (see the essay). */
	th->interrupted = false;

	if (th->proc->detach_new) {
		/* A fork that is not followed: let it go at its first stop. */
		int dsig = (event == 0 && sig != (SIGTRAP | 0x80)) ? sig : 0;

		if (!th->proc->fork_reported) {
			/* Held until the parent's fork event (fork_release_child()). */
			th->stop = dsig ? TSTOP_SIGNAL : TSTOP_EVENT;
			th->stop_sig = dsig;
			return;
		}
		ptrace_detach(tid, dsig);
		thread_free(s, th);
		return;
	}

	/* Provisional stop kind, refined by the handlers below. */
	th->stop = TSTOP_EVENT;
	if (!th->seen) {
		struct evargs a = { .ev = UTRACE_EV_ATTACH };

		th->seen = true;
		apply_action(th, dispatch(s, th, &a));
		if (th->dead)
			return;
	}

	if (sig == (SIGTRAP | 0x80)) {
		handle_syscall_stop(s, th, false);
	} else if (event == PTRACE_EVENT_STOP) {
		handle_event_stop(s, th, sig);
	} else if (event == 0) {
		handle_signal_stop(s, th, sig);
	} else {
		th->stop = TSTOP_PEVENT;
		switch (event) {
		case PTRACE_EVENT_SECCOMP:
			handle_syscall_stop(s, th, true);
			break;
		case PTRACE_EVENT_CLONE:
		case PTRACE_EVENT_FORK:
		case PTRACE_EVENT_VFORK:
			handle_clone_event(s, th, event);
			break;
		case PTRACE_EVENT_VFORK_DONE:
			th->in_vfork = false;
			break;
		case PTRACE_EVENT_EXEC:
			handle_exec_event(s, th);
			break;
		default:
			break;
		}
	}
	if (th->want_stop && th->notify_quiesce) {
		struct evargs a = { .ev = UTRACE_EV_QUIESCE };

		th->notify_quiesce = false;
		apply_action(th, dispatch(s, th, &a));
	}
	if (th->override_resume) {
		th->override_resume = false;
		th->engine_stop = false;
		th->want_stop = false;
	}
}

/* ------------------------------------------------------------------------ */
/* Waiting                                                                   */
/* ------------------------------------------------------------------------ */

/* Forget everything: waitpid() says we have no tracee left. */
static void drop_all(struct utrace_session *s)
{
	while (s->threads) {
		pr_debug("task %d vanished\n", s->threads->tid);
		thread_free(s, s->threads);
	}
}

/*
 * Wait for one event (blocking or not) and handle it.
 * Return: 1 if an event was handled, 0 if none was pending, -ECHILD if no
 * child is left, -EINTR if a blocking wait was interrupted.
 */
static int wait_one(struct utrace_session *s, bool block)
{
	int status;
	pid_t pid;

	if (s->nr_held && !s->hold_exits && !s->dispatch_depth) {
		/* exits reaped under session_pump_hold(), oldest first */
		pid = s->held[0].tid;
		status = s->held[0].status;
		memmove(&s->held[0], &s->held[1], (size_t)--s->nr_held * sizeof(s->held[0]));
		session_handle_status(s, pid, status);
		return 1;
	}
	pid = waitpid(-1, &status, WAIT_FLAGS | (block ? 0 : WNOHANG));

	if (pid == 0)
		return 0;
	if (pid < 0) {
		int err = -errno;

		if (err == -ECHILD)
			drop_all(s);
		return err;
	}
	if (pid == s->waker_pid) {
		/* interrupt() woke the blocking waitpid() of run_fast() */
		s->waker_pid = 0;
		s->waker_wfd = -1;
		return 1;
	}
	session_handle_status(s, pid, status);
	if (s->after_hook && !s->dispatch_depth && !s->in_after) {
		s->in_after = true;
		s->after_hook(s->after_data);
		s->in_after = false;
	}
	return 1;
}

static sigset_t sigchld_set(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	return set;
}

/*
 * Sleep until a ptrace event may be pending, an interrupt, or @ms
 * milliseconds (< 0: no limit). Inside run()'s fast path SIGCHLD is blocked
 * in this thread and is taken with sigtimedwait(); otherwise poll() waits
 * on the self-pipe (for at most POLL_FALLBACK_MS if it cannot be trusted)
 * and drains it. Either way the caller must check waitpid() again.
 */
static void sleep_for_events(struct utrace_session *s, int ms)
{
	struct pollfd pfd = { .fd = sigchld_pipe[0], .events = POLLIN };

	if (s->fast_tid) {
		sigset_t set = sigchld_set();
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		sigtimedwait(&set, NULL, ms < 0 ? NULL : &ts);
		return;
	}
	if (!sigchld_reliable() && (ms < 0 || ms > POLL_FALLBACK_MS))
		ms = POLL_FALLBACK_MS;
	poll(&pfd, 1, ms);
	sigchld_drain();
}

/**
 * session_now_ms - the monotonic clock in milliseconds.
 *
 * Return: milliseconds since an arbitrary start (never fails).
 */
long session_now_ms(void)
{
	return now_ms();
}

/**
 * session_wait_tid - wait for the next status of one tracee.
 * @s: session
 * @tid: the tracee
 * @ret_status: its wait status, on success
 * @deadline_ms: session_now_ms() value to give up at; < 0: no limit
 *
 * Other tracees' events stay queued in the kernel for the event loop.
 * Tracing thread only. Return: 0 on success; -ETIMEDOUT; negative errno
 * from waitpid() (-ECHILD if @tid is not our tracee); @ret_status untouched
 * on failure.
 */
/**
 * session_pump - handle every stop that is pending now, for any tracee.
 * For a caller inside a callback that waits for the target to do
 * something (the agent backend waiting for its control thread, which may
 * meet an int3 and stop, or whose work waits for a thread that did): the
 * other tracees' stops are dispatched as run() would (remote.c does the
 * same while a remote call runs). Never blocks.
 */
void session_pump(struct utrace_session *s)
{
	int status;
	pid_t tid;

	while ((tid = waitpid(-1, &status, WAIT_FLAGS | WNOHANG)) > 0)
		session_handle_status(s, tid, status);
}

void session_pump_hold(struct utrace_session *s)
{
	s->hold_exits++;
	session_pump(s);
	s->hold_exits--;
}

int session_wait_tid(struct utrace_session *s, pid_t tid, int *ret_status, long deadline_ms)
{
	for (;;) {
		int status, wait_ms;
		pid_t r = waitpid(tid, &status, WAIT_FLAGS | (deadline_ms < 0 ? 0 : WNOHANG));

		if (r == tid) {
			*ret_status = status;
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r < 0 || deadline_ms < 0)
			continue;
		wait_ms = (int)(deadline_ms - now_ms());
		if (wait_ms <= 0)
			return -ETIMEDOUT;
		sleep_for_events(s, wait_ms);
	}
}

static int check_tracer(const struct utrace_session *s)
{
	return current_tid() == s->tracer_tid ? 0 : -EINVAL;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int run_status(struct utrace_session *s)
{
	if (s->break_req) {
		s->break_req = false;
		return UTRACE_RUN_BREAK;
	}
	if (s->interrupted) {
		s->interrupted = 0;
		return UTRACE_RUN_INTERRUPTED;
	}
	/* a launched leader let go: done once its exit is reaped (our child) */
	if (!s->procs && (!s->launch_untraced || s->launch_reaped))
		return UTRACE_RUN_DONE;
	return -1;
}

int utrace_session__poll(struct utrace_session *s)
{
	int r;

	if (!s)
		return -EINVAL;
	r = check_tracer(s);
	if (r)
		return r;
	sigchld_drain();
	for (;;) {
		r = run_status(s);
		if (r >= 0)
			return r;
		r = wait_one(s, false);
		if (r == 0)
			return UTRACE_RUN_IDLE;
		if (r < 0 && r != -ECHILD && r != -EINTR)
			return r;
	}
}

/*
 * Enter run()'s fast path if the signal set-up allows it: our handler is
 * installed with nothing to chain to (sigtimedwait() consumes SIGCHLDs that
 * a chained handler would have seen), the caller does not block SIGCHLD in
 * this thread (it may be reading it from a signalfd), and a fast_waiters[]
 * slot is free. Return: true with SIGCHLD blocked in this thread.
 */
static bool fast_enter(struct utrace_session *s)
{
	sigset_t set = sigchld_set(), old;
	struct sigaction cur;
	int i;

	if (sigaction(SIGCHLD, NULL, &cur) < 0 || !(cur.sa_flags & SA_SIGINFO) ||
	    cur.sa_sigaction != sigchld_handler)
		return false;
	if (old_sigchld.sa_handler != SIG_DFL && old_sigchld.sa_handler != SIG_IGN)
		return false;
	if (pthread_sigmask(SIG_BLOCK, &set, &old) != 0)
		return false;
	if (sigismember(&old, SIGCHLD))
		return false; /* the caller's own choice: leave it */
	for (i = 0; i < FAST_WAITERS; i++) {
		sig_atomic_t zero = 0;

		if (__atomic_compare_exchange_n(&fast_waiters[i], &zero, s->tracer_tid, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			s->fast_slot = i;
			s->fast_tid = s->tracer_tid;
			return true;
		}
	}
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	return false;
}

#define WAKER_STACK_SIZE (16 * 1024)
/* run() timeouts from which a waker (a clone(), ~0.1 ms) is worth starting */
#define WAKER_MIN_MS 20

/* The waker: runs on its own small stack in the tracer's memory; raw system calls only. */
static int waker_main(void *arg)
{
	const struct utrace_session *s = arg;
	struct pollfd pfd = { .fd = s->waker_pipe[0], .events = POLLIN };

	syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	syscall(SYS_poll, &pfd, 1, s->waker_ms);
	syscall(SYS_exit, 0);
	return 0;
}

/*
 * Start the waker of run(): a child of the tracing thread (clone with
 * CLONE_VM, so nothing is copied) that waits for a byte from interrupt()
 * or @ms milliseconds (-1: no limit) and exits, which makes the blocking
 * waitpid(-1) of run_fast() return whatever signal handler flags the
 * caller chose. All signals are blocked in it (a terminal's SIGINT goes to
 * it too). Return: true if it runs.
 */
static bool waker_spawn(struct utrace_session *s, int ms)
{
	sigset_t all, old;
	pid_t pid;

	if (s->waker_pipe[1] <= 0 && pipe2(s->waker_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		s->waker_pipe[0] = s->waker_pipe[1] = 0;
		return false;
	}
	if (!s->waker_stack)
		s->waker_stack = malloc(WAKER_STACK_SIZE);
	if (!s->waker_stack)
		return false;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	s->waker_ms = ms;
	pid = clone(waker_main, s->waker_stack + WAKER_STACK_SIZE, CLONE_VM | SIGCHLD, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid <= 0)
		return false;
	s->waker_pid = pid;
	s->waker_wfd = s->waker_pipe[1];
	return true;
}

static void waker_stop(struct utrace_session *s)
{
	char buf[64];
	int status;

	s->waker_wfd = -1;
	if (s->waker_pid > 0) {
		kill(s->waker_pid, SIGKILL);
		waitpid(s->waker_pid, &status, __WALL);
		s->waker_pid = 0;
	}
	if (s->waker_pipe[0] > 0)
		while (read(s->waker_pipe[0], buf, sizeof(buf)) > 0)
			;
}

static void fast_leave(struct utrace_session *s)
{
	sigset_t set = sigchld_set();

	waker_stop(s);

	s->fast_tid = 0;
	__atomic_store_n(&fast_waiters[s->fast_slot], 0, __ATOMIC_SEQ_CST);
	/* a SIGCHLD still pending now goes to the handler: one pipe write */
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/*
 * run()'s fast path (see the essay, "Waiting"). With the waker running
 * (run(-1), or a timeout >= WAKER_MIN_MS) it blocks in waitpid(); without
 * one (a short timeout, or the waker could not start or has exited) it
 * drains waitpid(WNOHANG) and sleeps in sigtimedwait(). A callback that waits (quiesce, remote syscalls) does so
 * while the waker lives, so a waitpid(-1) there cannot see ECHILD.
 */
static int run_fast(struct utrace_session *s, int timeout_ms, long deadline)
{
	for (;;) {
		int r = run_status(s), wait_ms = -1;

		if (r >= 0)
			return r;
		r = wait_one(s, s->waker_pid > 0);
		if (r > 0 || r == -ECHILD) {
			/*
			 * With a timeout, honour it even while events keep
			 * coming (threads hitting probes without a pause):
			 * the caller's loop must get control back.
			 */
			if (timeout_ms >= 0 && now_ms() >= deadline)
				return UTRACE_RUN_TIMEOUT;
			continue;
		}
		if (r < 0 && r != -EINTR)
			return r;
		if (r < 0)
			continue;
		if (timeout_ms >= 0) {
			long left = deadline - now_ms();

			if (left <= 0)
				return UTRACE_RUN_TIMEOUT;
			wait_ms = (int)left;
		}
		sleep_for_events(s, wait_ms);
	}
}

int utrace_session__run(struct utrace_session *s, int timeout_ms)
{
	bool reliable;
	long deadline;
	int r;

	if (!s)
		return -EINVAL;
	r = check_tracer(s);
	if (r)
		return r;
	deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : 0;
	if (!s->fast_tid && fast_enter(s)) {
		if (timeout_ms < 0 || timeout_ms >= WAKER_MIN_MS)
			waker_spawn(s, timeout_ms);
		r = run_fast(s, timeout_ms, deadline);
		fast_leave(s);
		return r;
	}
	reliable = sigchld_reliable();
	for (;;) {
		struct pollfd pfd = { .fd = sigchld_pipe[0], .events = POLLIN };
		int wait_ms = -1;

		r = utrace_session__poll(s);
		if (r != UTRACE_RUN_IDLE)
			return r;
		if (timeout_ms >= 0) {
			long left = deadline - now_ms();

			if (left <= 0)
				return UTRACE_RUN_TIMEOUT;
			wait_ms = (int)left;
		}
		if (!reliable && (wait_ms < 0 || wait_ms > POLL_FALLBACK_MS))
			wait_ms = POLL_FALLBACK_MS;
		if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR)
			return -errno;
	}
}

int utrace_session__fd(struct utrace_session *s)
{
	if (!s)
		return -EINVAL;
	return sigchld_pipe[0];
}

void utrace_session__interrupt(struct utrace_session *s)
{
	char c = 1;
	pid_t tid;

	if (!s)
		return;
	s->interrupted = 1;
	if (write(sigchld_pipe[1], &c, 1) < 0) {
		/* pipe full: poll() wakes anyway */
	}
	if (s->waker_wfd >= 0 && write(s->waker_wfd, &c, 1) < 0) {
		/* full: the waker is woken anyway */
	}
	tid = s->fast_tid;
	if (tid)
		syscall(SYS_tgkill, getpid(), tid, SIGCHLD); /* wakes run_fast()'s sigtimedwait() */
}

/* ------------------------------------------------------------------------ */
/* Quiesce, resume                                                           */
/* ------------------------------------------------------------------------ */

/* Ask @th to stop; does not wait. */
static int thread_request_stop(struct utrace_thread *th)
{
	int r;

	th->want_stop = true;
	if (th->stop != TSTOP_RUNNING || th->interrupted)
		return 0;
	r = ptrace_interrupt(th->tid);
	if (r < 0)
		return r;
	th->interrupted = true;
	return 0;
}

static bool thread_settled(const struct utrace_thread *th)
{
	return th->stop != TSTOP_RUNNING || th->in_vfork;
}

/*
 * Wait for one event for at most @ms milliseconds (< 0: no limit).
 * Return: as wait_one(); -ETIMEDOUT when the time ran out.
 */
static int wait_one_timeout(struct utrace_session *s, int ms)
{
	long deadline = now_ms() + ms;
	int r;

	if (ms < 0)
		return wait_one(s, true);
	for (;;) {
		long left;

		r = wait_one(s, false);
		if (r != 0)
			return r;
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		sleep_for_events(s, (int)left);
	}
}

/*
 * Stop every thread of @pid (0: all); wait until all are stopped, at most
 * @timeout_ms (< 0: no limit). Return: 0; -ETIMEDOUT if some thread did not
 * stop in time (it still has the interrupt pending); negative errno.
 */
static int quiesce(struct utrace_session *s, pid_t pid, bool notify, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	struct utrace_thread *th;
	int r;

	for (;;) {
		bool pending = false;

		for (th = s->threads; th; th = th->next) {
			if (pid && th->proc->pid != pid)
				continue;
			if (!th->want_stop || th->stop == TSTOP_RUNNING) {
				if (notify && th->stop == TSTOP_RUNNING)
					th->notify_quiesce = true;
				r = thread_request_stop(th);
				if (r < 0 && r != -ESRCH)
					pr_debug("thread %d: PTRACE_INTERRUPT: %s\n", th->tid,
						 strerror(-r));
			}
			if (!thread_settled(th))
				pending = true;
		}
		if (!pending)
			return 0;
		if (timeout_ms >= 0) {
			long left = deadline - now_ms();

			r = left > 0 ? wait_one_timeout(s, (int)left) : -ETIMEDOUT;
		} else {
			r = wait_one(s, true);
		}
		if (r == -ECHILD)
			return 0;
		if (r < 0 && r != -EINTR)
			return r;
	}
}

int utrace_session__quiesce(struct utrace_session *s, pid_t pid)
{
	int r;

	if (!s)
		return -EINVAL;
	r = check_tracer(s);
	if (r)
		return r;
	if (pid && !find_proc(s, pid))
		return -ESRCH;
	return quiesce(s, pid, true, -1);
}

int utrace_session__resume(struct utrace_session *s, pid_t pid)
{
	struct utrace_thread *th, *next;
	int ret = 0;

	if (!s)
		return -EINVAL;
	if (pid && !find_proc(s, pid))
		return -ESRCH;
	for (th = s->threads; th; th = next) {
		next = th->next;
		if (pid && th->proc->pid != pid)
			continue;
		th->want_stop = false;
		th->engine_stop = false;
		if (th->stop != TSTOP_RUNNING) {
			int r = thread_release(th);

			if (r < 0 && !ret)
				ret = r;
		}
	}
	return ret;
}

int utrace_session__threads(struct utrace_session *s, pid_t pid, struct utrace_thread **ret,
			    size_t size)
{
	struct utrace_thread *th;
	size_t n = 0;

	if (!s)
		return -EINVAL;
	if (pid && !find_proc(s, pid))
		return -ESRCH;
	for (th = s->threads; th; th = th->next) {
		if (pid && th->proc->pid != pid)
			continue;
		if (ret && n < size)
			ret[n] = th;
		n++;
	}
	return (int)n;
}

/* ------------------------------------------------------------------------ */
/* Detach                                                                    */
/* ------------------------------------------------------------------------ */

static int detach_thread(struct utrace_session *s, struct utrace_thread *th)
{
	int sig = th->stop == TSTOP_SIGNAL ? th->stop_sig : 0;
	int r = ptrace_detach(th->tid, sig);

	if (r == -ESRCH) {
		int status;

		/* Died while stopped: reap it if its exit is already there. */
		if (waitpid(th->tid, &status, WAIT_FLAGS | WNOHANG) == th->tid) {
			session_handle_status(s, th->tid, status);
			return 0;
		}
	} else if (r < 0) {
		pr_warn("thread %d: PTRACE_DETACH failed: %s\n", th->tid, strerror(-r));
	}
	thread_free(s, th);
	return r == -ESRCH ? 0 : r;
}

static int detach_proc(struct utrace_session *s, pid_t pid)
{
	struct utrace_thread *th, *next;
	int ret = 0, r;

	for (;;) {
		bool left = false;

		r = quiesce(s, pid, false, -1);
		if (r < 0 && !ret)
			ret = r;
		if (!find_proc(s, pid))
			break;
		for (th = s->threads; th; th = next) {
			next = th->next;
			if (th->proc->pid != pid)
				continue;
			if (th->stop == TSTOP_RUNNING) {
				left = true; /* a vfork parent: comes back later */
				continue;
			}
			r = detach_thread(s, th);
			if (r < 0 && !ret)
				ret = r;
			/* thread_free() may have freed the next entries' process. */
			next = s->threads;
		}
		if (!left || !find_proc(s, pid))
			break;
		/* Wait for the vfork parents (their child runs untraced now). */
		for (th = s->threads; th; th = th->next)
			if (th->proc->pid == pid)
				th->in_vfork = false;
	}
	return ret;
}

int utrace_session__detach_pid(struct utrace_session *s, pid_t pid)
{
	int r;

	if (!s)
		return -EINVAL;
	r = check_tracer(s);
	if (r)
		return r;
	if (!find_proc(s, pid))
		return -ESRCH;
	if (s->release_hook)
		s->release_hook(s->release_data, pid); /* probes out first */
	if (!find_proc(s, pid))
		return 0; /* it exited meanwhile */
	return detach_proc(s, pid);
}

int utrace_session__detach(struct utrace_session *s)
{
	int ret = 0;

	if (!s)
		return -EINVAL;
	if (check_tracer(s))
		return -EINVAL;
	if (s->release_hook)
		s->release_hook(s->release_data, 0); /* probes out first */
	while (s->procs) {
		pid_t pid = s->procs->pid;
		int r;

		/* Seccomp mode: a launched command cannot run untraced. */
		if (s->mode == UTRACE_SYSCALLS_SECCOMP && s->procs->launched)
			return ret ? ret : -EBUSY;
		r = detach_proc(s, pid);
		if (r < 0 && !ret)
			ret = r;
		if (find_proc(s, pid))
			return ret ? ret : -EIO; /* could not make progress */
	}
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Session                                                                   */
/* ------------------------------------------------------------------------ */

struct utrace_session *utrace_session__new(const struct utrace_session_opts *opts)
{
	struct utrace_session *s;
	int r;

	if (!OPTS_OK(opts, utrace_session_opts) ||
	    OPTS_GET(opts, utrace_session_opts, syscall_mode, 0) < 0 ||
	    OPTS_GET(opts, utrace_session_opts, syscall_mode, 0) >= __UTRACE_SYSCALLS_MAX) {
		errno = EINVAL;
		return NULL;
	}
	r = sigchld_setup();
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->tracer_tid = current_tid();
	s->waker_wfd = -1;
	s->follow_forks = OPTS_GET(opts, utrace_session_opts, follow_forks, false);
	s->mode = OPTS_GET(opts, utrace_session_opts, syscall_mode, UTRACE_SYSCALLS_PTRACE);
	s->remote_timeout_ms = OPTS_GET(opts, utrace_session_opts, remote_timeout_ms, 0);
	if (s->remote_timeout_ms == 0)
		s->remote_timeout_ms = 5000;
	s->options = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
		     PTRACE_O_TRACEVFORK | PTRACE_O_TRACEVFORKDONE | PTRACE_O_TRACEEXEC;
	if (s->mode == UTRACE_SYSCALLS_SECCOMP)
		s->options |= PTRACE_O_TRACESECCOMP;
	s->launched_pid = 0;
	s->launch_status = -ECHILD;
	return s;
}

/* TracerPid of thread @tid of @pid; negative errno if it is gone. */
static int proc_task_tracer(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	int tracer = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "TracerPid:", 10)) {
			tracer = atoi(line + 10);
			break;
		}
	}
	fclose(f);
	return tracer;
}

/* The state letter of /proc/@pid/task/@tid/stat, '?' if unknown. */
static char task_state(pid_t pid, pid_t tid)
{
	char path[64], buf[256];
	char *p;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static bool is_zombie(pid_t pid, pid_t tid)
{
	char c = task_state(pid, tid);

	return c == 'Z' || c == 'X';
}

/*
 * PTRACE_SEIZE of @tid said EPERM: find out why. The kernel also refuses
 * zombies and threads that are already exiting (PF_EXITING in
 * ptrace_attach()), which a process that creates and ends threads all the
 * time has at any moment: those are skipped (-ESRCH). Another tracer is
 * reported as such.
 */
static int seize_eperm(struct utrace_session *s, struct tproc *p, pid_t pid, pid_t tid)
{
	char buf[32];
	int tracer;

	if (is_zombie(pid, tid))
		return -ESRCH;
	if (proc_status_field(pid, "TracerPid", buf, sizeof(buf)) == 0 && tid == pid) {
		tracer = atoi(buf);
		if (tracer)
			return -UTRACE_ERRNO__TRACED;
	}
	tracer = proc_task_tracer(pid, tid);
	if (tracer < 0)
		return -ESRCH; /* gone meanwhile */
	/* TracerPid names the tracing thread. Ours: auto-attached by a clone. */
	if (tracer > 0 && tracer != s->tracer_tid)
		return -UTRACE_ERRNO__TRACED;
	/* Permission is per process: if a sibling was seized, this one is exiting. */
	if (p->nr_threads > 1)
		return -ESRCH;
	return -EPERM;
}

/*
 * Attach @pid: every thread, or only thread @only (> 0, for lib/inject.c:
 * the one thread that makes the remote calls; the others are never stopped,
 * so none of their epoll_wait(), sigtimedwait(), semop() or io_getevents()
 * fails with EINTR, which such calls do after any stop, signal(7)).
 */
static int attach_proc(struct utrace_session *s, pid_t pid, pid_t only)
{
	struct tproc *p;
	struct utrace_thread *th;
	bool added;
	int r, rounds = 0;

	if (!s || pid <= 0)
		return -EINVAL;
	r = check_tracer(s);
	if (r)
		return r;
	if (find_proc(s, pid))
		return -EEXIST;
	if (read_tgid(pid) != pid)
		return read_tgid(pid) < 0 ? -ESRCH : -EINVAL;
	if (is_zombie(pid, pid)) {
		pid_t *tids;
		size_t n;

		/* A zombie process, or a zombie leader with live threads. */
		if (utrace_proc__threads(pid, &tids, &n) < 0)
			return -ESRCH;
		free(tids);
		if (n <= 1)
			return -ESRCH;
	}
	r = utrace_proc__tracer(pid);
	if (r < 0)
		return r;
	if (r > 0) {
		pr_warn("process %d: already traced by process %d\n", pid, r);
		return -UTRACE_ERRNO__TRACED;
	}
	p = proc_new(s, pid);
	if (!p)
		return -ENOMEM;
	/* proc_new() + no thread: keep it alive by hand until a thread joins. */
	p->nr_threads++;
	do {
		pid_t *tids;
		size_t n, i;

		added = false;
		r = utrace_proc__threads(pid, &tids, &n);
		if (r < 0)
			break;
		for (i = 0; i < n; i++) {
			if ((only && tids[i] != only) || utrace_session__find_thread(s, tids[i]))
				continue;
			r = ptrace_seize(tids[i], s->options);
			if (r == -EPERM)
				r = seize_eperm(s, p, pid, tids[i]);
			if (r == -ESRCH) {
				/* Gone, a zombie or exiting: nothing to trace. */
				pr_debug("thread %d: not seized (exiting)\n", tids[i]);
				r = 0;
				continue;
			}
			if (r < 0)
				break;
			th = thread_new(s, p, tids[i]);
			if (!th) {
				/*
				 * Seized but untracked: it runs on, and is adopted if
				 * it ever reports a stop. Cannot be detached unstopped.
				 */
				r = -ENOMEM;
				break;
			}
			th->want_stop = true;
			if (ptrace_interrupt(tids[i]) == 0)
				th->interrupted = true;
			added = true;
		}
		free(tids);
	} while (r == 0 && added && ++rounds < 1000);
	if (r == 0 && p->nr_threads == 1) {
		pr_debug("process %d: no thread could be seized\n", pid);
		p->nr_threads--;
		proc_free(s, p);
		return -ESRCH;
	}
	/*
	 * Wait for every thread's first stop (new threads included). A thread
	 * that cannot stop now (a vfork parent waiting for its child, which
	 * PTRACE_INTERRUPT does not wake; an uninterruptible sleep) is not
	 * waited for forever: it keeps its interrupt pending, and its stop is
	 * handled by the event loop when it comes.
	 */
	if (r == 0) {
		r = quiesce(s, pid, false, ATTACH_GRACE_MS);
		if (r == -ETIMEDOUT) {
			for (th = s->threads; th; th = th->next) {
				if (th->proc->pid != pid || th->stop != TSTOP_RUNNING)
					continue;
				pr_info("thread %d: does not stop now (state %c); traced from its next stop\n",
					th->tid, task_state(pid, th->tid));
				if (task_state(pid, th->tid) == 'D')
					th->in_vfork = true;
			}
			r = 0;
		}
	}
	p = find_proc(s, pid);
	if (!p) {
		pr_debug("process %d: vanished during attach\n", pid);
		return r < 0 ? r : -ESRCH;
	}
	if (r < 0) {
		pr_warn("process %d: attach failed: %s; detaching\n", pid, strerror(-r));
		p->nr_threads--;
		if (p->nr_threads == 0)
			proc_free(s, p);
		else
			detach_proc(s, pid);
		return r;
	}
	p->nr_threads--;
	if (p->nr_threads == 0) {
		pr_debug("process %d: every thread exited during attach\n", pid);
		proc_free(s, p);
		return -ESRCH;
	}
	/* Let them run (a group-stopped process stays stopped: LISTEN). */
	for (th = s->threads; th; th = th->next) {
		if (th->proc != p)
			continue;
		th->want_stop = false;
		thread_settle(th);
	}
	return 0;
}

int utrace_session__attach(struct utrace_session *s, pid_t pid)
{
	return attach_proc(s, pid, 0);
}

int utrace_session__attach_thread(struct utrace_session *s, pid_t pid, pid_t tid)
{
	return tid > 0 ? attach_proc(s, pid, tid) : -EINVAL;
}

static int find_in_path(const char *file)
{
	const char *path = getenv("PATH");
	char buf[4096];
	int err = -ENOENT;

	if (strchr(file, '/'))
		return access(file, X_OK) ? -errno : 0;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchrnul(path, ':');
		int len = (int)(end - path);
		struct stat st;

		snprintf(buf, sizeof(buf), "%.*s%s%s", len, path, len ? "/" : "", file);
		if (stat(buf, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(buf, X_OK) == 0)
				return 0;
			err = -EACCES;
		}
		path = *end ? end + 1 : end;
	}
	return err;
}

/*
 * The environment of a launch with the layer's additions (launch_hook):
 * one malloc'ed block, the array then the strings, built before the fork
 * (the child of a threaded tracer may not allocate). Tracing thread.
 */
static int launch_extra(struct utrace_session *s, char *const *envp, char ***ret, int *keep_fd,
			int *keep_as)
{
	struct session_launch_extra *x = calloc(1, sizeof(*x));
	char *const *base = envp ? envp : environ;
	size_t n = 0, bytes = 0, i, k, j = 0;
	char **out, *str;
	int r;

	if (!x)
		return -ENOMEM;
	x->keep_fd = -1;
	r = s->launch_hook(s->launch_data, x);
	if (r < 0 || x->nr_env > ARRAY_SIZE(x->env)) {
		free(x);
		return r < 0 ? r : -EINVAL;
	}
	for (i = 0; base[i]; i++, n++)
		bytes += strlen(base[i]) + 1;
	for (k = 0; k < x->nr_env; k++)
		bytes += strlen(x->env[k]) + 1;
	bytes += strlen("LD_PRELOAD=") + 1; /* a merged LD_PRELOAD's ':' and the rest */
	out = malloc((n + x->nr_env + 1) * sizeof(*out) + bytes + 4096 * 2);
	if (!out) {
		free(x);
		return -ENOMEM;
	}
	str = (char *)(out + n + x->nr_env + 1);
	for (k = 0; k < x->nr_env; k++) {
		const char *eq = strchr(x->env[k], '=');
		size_t nl = eq ? (size_t)(eq - x->env[k]) + 1 : 0;
		const char *old = NULL;

		for (i = 0; nl && base[i]; i++)
			if (!strncmp(base[i], x->env[k], nl))
				old = base[i] + nl;
		out[j++] = str;
		if (old && *old && nl == strlen("LD_PRELOAD=") &&
		    !strncmp(x->env[k], "LD_PRELOAD=", nl))
			str += sprintf(str, "%s:%s", x->env[k], old) + 1; /* ours first */
		else
			str += sprintf(str, "%s", x->env[k]) + 1;
	}
	for (i = 0; base[i]; i++) {
		bool replaced = false;

		for (k = 0; k < x->nr_env && !replaced; k++) {
			const char *eq = strchr(x->env[k], '=');
			size_t nl = eq ? (size_t)(eq - x->env[k]) + 1 : 0;

			replaced = nl && !strncmp(base[i], x->env[k], nl);
		}
		if (!replaced)
			out[j++] = base[i];
	}
	out[j] = NULL;
	*keep_fd = x->keep_fd;
	*keep_as = x->keep_as;
	*ret = out;
	free(x);
	return 0;
}

pid_t utrace_session__launch(struct utrace_session *s, char *const argv[],
			     const struct utrace_launch_opts *opts)
{
	struct tproc *p;
	struct utrace_thread *th;
	unsigned long options;
	char **xenv = NULL;
	int keep_fd = -1, keep_as = -1;
	pid_t pid, tracer;
	int r, status, death_sig;

	if (!s || !argv || !argv[0] || !OPTS_OK(opts, utrace_launch_opts))
		return -EINVAL;
	r = check_tracer(s);
	if (r)
		return r;
	if (s->launched_pid)
		return -EBUSY;
	r = find_in_path(argv[0]);
	if (r < 0)
		return r;
	if (s->launch_hook) {
		r = launch_extra(s, OPTS_GET(opts, utrace_launch_opts, envp, NULL), &xenv, &keep_fd,
				 &keep_as);
		if (r < 0)
			return r;
	}
	tracer = getpid();
	death_sig =
		OPTS_GET(opts, utrace_launch_opts, kill_on_exit, false) ||
				OPTS_GET(opts, utrace_launch_opts, kill_if_tracer_dies, false) ||
				s->mode == UTRACE_SYSCALLS_SECCOMP ?
			SIGKILL :
			SIGCONT;
	pid = fork();
	if (pid < 0) {
		free(xenv);
		return -errno;
	}
	if (pid == 0) {
		char *const *envp = xenv ? xenv : OPTS_GET(opts, utrace_launch_opts, envp, NULL);
		utrace_pre_exec_fn_t hook = OPTS_GET(opts, utrace_launch_opts, pre_exec, NULL);
		sigset_t none;

		/* the layer's fd (the agent's arena): inherited across the exec */
		if (keep_fd >= 0 && dup2(keep_fd, keep_as) < 0)
			_exit(127);

		/*
		 * Child: wait to be seized, then run the hook and exec. A
		 * tracer killed before it seized us would leave this child
		 * stopped for ever, an orphan nobody continues (CI: utrace
		 * SIGKILLed 13 ms into a launch, its child in state T for
		 * minutes). Until it runs, the tracer's death does what the
		 * caller asked for a tracer's death: SIGKILL with
		 * kill_if_tracer_dies or kill_on_exit (nothing of the command
		 * ran yet), else SIGCONT, and the command runs untraced, as
		 * it would have after a detach (the agent's launch: it goes
		 * dormant at its host's death). Cleared before the exec, which
		 * PDEATHSIG would survive.
		 */
		prctl(PR_SET_PDEATHSIG, death_sig);
		if (getppid() != tracer && death_sig == SIGKILL)
			_exit(127); /* it died before the prctl() */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGCHLD, SIG_DFL);
		if (getppid() == tracer)
			kill(getpid(), SIGSTOP);
		prctl(PR_SET_PDEATHSIG, 0);
		if (getppid() != tracer && death_sig == SIGKILL)
			_exit(127); /* continued by its death (SIGKILL comes), or by someone else */
		if (hook && hook(OPTS_GET(opts, utrace_launch_opts, pre_exec_ctx, NULL)))
			_exit(127);
		execvpe(argv[0], argv, envp ? envp : environ);
		_exit(errno == ENOENT ? 127 : 126);
	}
	free(xenv); /* the child has its copy */
	if (waitpid(pid, &status, WUNTRACED) != pid) {
		r = -ECHILD;
		goto err_kill;
	}
	if (!WIFSTOPPED(status))
		return -ECHILD; /* died before stopping, and reaped */
	options = s->options;
	if (OPTS_GET(opts, utrace_launch_opts, kill_on_exit, false) ||
	    OPTS_GET(opts, utrace_launch_opts, kill_if_tracer_dies, false) ||
	    s->mode == UTRACE_SYSCALLS_SECCOMP)
		options |= PTRACE_O_EXITKILL;
	r = ptrace_seize(pid, options);
	if (r < 0)
		goto err_kill;
	p = proc_new(s, pid);
	th = p ? thread_new(s, p, pid) : NULL;
	if (!th) {
		if (p)
			proc_free(s, p);
		r = -ENOMEM;
		goto err_kill;
	}
	p->launched = true;
	p->hide_pre_exec = !OPTS_GET(opts, utrace_launch_opts, show_pre_exec, false);
	th->launch_sigcont = true;
	s->launched_pid = pid;
	s->launch_status = -EAGAIN;
	s->launch_kill = OPTS_GET(opts, utrace_launch_opts, kill_on_exit, false);
	kill(pid, SIGCONT);
	return pid;

err_kill:
	kill(pid, SIGKILL);
	waitpid(pid, &status, __WALL);
	return r;
}

int utrace_session__exit_status(const struct utrace_session *s)
{
	int i;

	if (!s || !s->launched_pid)
		return -ECHILD;
	if (s->launch_reaped)
		return s->launch_status;
	/*
	 * Reaped under session_pump_hold() (an agent's command was waiting)
	 * and not handled yet: the run that would have handled it may never
	 * come (-d ended it). The status is known all the same.
	 */
	for (i = 0; i < s->nr_held; i++)
		if (s->held[i].tid == s->launched_pid) {
			int st = s->held[i].status;

			if (WIFEXITED(st))
				return WEXITSTATUS(st);
			if (WIFSIGNALED(st))
				return 128 + WTERMSIG(st);
		}
	return -EAGAIN;
}

void utrace_session__close(struct utrace_session *s)
{
	struct utrace_engine *e;
	struct tproc *p;

	if (!s)
		return;
	if (s->release_hook)
		s->release_hook(s->release_data, -1); /* probes out, the layer unhooked */
	s->closing = true;
	s->dispatch_depth++;
	for (e = s->engines; e; e = e->next)
		utrace_engine__detach(e);
	s->dispatch_depth--;
	engines_reap(s);
	if (check_tracer(s) == 0) {
		if (s->mode == UTRACE_SYSCALLS_SECCOMP && s->launched_pid && !s->launch_reaped &&
		    !s->launch_kill) {
			/* Keep servicing seccomp stops silently until everything exits. */
			for (p = s->procs; p; p = p->next)
				p->hidden = true;
			utrace_session__resume(s, 0);
			while (s->procs && wait_one(s, true) != -ECHILD)
				;
		}
		while (s->procs) {
			pid_t pid = s->procs->pid;

			detach_proc(s, pid);
			if (s->procs && s->procs->pid == pid) {
				pr_warn("process %d: could not detach, dropping it\n", pid);
				while (s->procs && s->procs->pid == pid) {
					struct utrace_thread *th;

					for (th = s->threads; th && th->proc != s->procs;
					     th = th->next)
						;
					if (!th) {
						proc_free(s, s->procs);
						break;
					}
					thread_free(s, th);
				}
			}
		}
		if (s->launched_pid && !s->launch_reaped) {
			int status;

			if (s->launch_kill)
				kill(s->launched_pid, SIGKILL);
			if (waitpid(s->launched_pid, &status, 0) == s->launched_pid)
				handle_exit(s, NULL, s->launched_pid, status);
		}
	}
	drop_all(s);
	while (s->procs)
		proc_free(s, s->procs);
	if (s->waker_pipe[1] > 0) {
		close(s->waker_pipe[0]);
		close(s->waker_pipe[1]);
	}
	free(s->waker_stack);
	free(s);
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

pid_t utrace_thread__tid(const struct utrace_thread *th)
{
	return th ? th->tid : -EINVAL;
}

pid_t utrace_thread__pid(const struct utrace_thread *th)
{
	return th ? th->proc->pid : -EINVAL;
}

struct utrace_session *utrace_thread__session(const struct utrace_thread *th)
{
	return th ? th->s : NULL;
}

bool utrace_thread__is_stopped(const struct utrace_thread *th)
{
	return th && th->stop != TSTOP_RUNNING;
}

int utrace_thread__get_regs(struct utrace_thread *th, struct user_regs_struct *regs)
{
	int r;

	if (!th || !regs)
		return -EINVAL;
	if (th->stop == TSTOP_RUNNING)
		return -ESRCH;
	if (!th->regs_valid) {
		r = ptrace_getregs(th->tid, &th->regs);
		if (r < 0)
			return r;
		th->regs_valid = true;
	}
	*regs = th->regs;
	return 0;
}

int utrace_thread__set_regs(struct utrace_thread *th, const struct user_regs_struct *regs)
{
	int r;

	if (!th || !regs)
		return -EINVAL;
	if (th->stop == TSTOP_RUNNING)
		return -ESRCH;
	r = ptrace_setregs(th->tid, regs);
	if (r < 0) {
		th->regs_valid = false;
		return r;
	}
	th->regs = *regs;
	th->regs_valid = true;
	return 0;
}

int utrace_thread__get_fpregs(struct utrace_thread *th, struct user_fpregs_struct *fpregs)
{
	int r;

	if (!th || !fpregs)
		return -EINVAL;
	if (th->stop == TSTOP_RUNNING)
		return -ESRCH;
	r = ptrace_getregset(th->tid, NT_PRFPREG, fpregs, sizeof(*fpregs));
	return r < 0 ? r : 0;
}

int utrace_thread__set_fpregs(struct utrace_thread *th, const struct user_fpregs_struct *fpregs)
{
	if (!th || !fpregs)
		return -EINVAL;
	if (th->stop == TSTOP_RUNNING)
		return -ESRCH;
	return ptrace_setregset(th->tid, NT_PRFPREG, fpregs, sizeof(*fpregs));
}

int utrace_thread__get_xstate(struct utrace_thread *th, void *buf, size_t size)
{
	int r;

	if (!th || !buf)
		return -EINVAL;
	if (th->stop == TSTOP_RUNNING)
		return -ESRCH;
	r = ptrace_getregset(th->tid, NT_X86_XSTATE, buf, size);
	return r == -EINVAL || r == -EIO ? -ENODEV : r;
}

int utrace_thread__set_xstate(struct utrace_thread *th, const void *buf, size_t size)
{
	if (!th || !buf)
		return -EINVAL;
	if (th->stop == TSTOP_RUNNING)
		return -ESRCH;
	return ptrace_setregset(th->tid, NT_X86_XSTATE, buf, size);
}

ssize_t utrace_thread__read_mem(struct utrace_thread *th, uint64_t addr, void *buf, size_t len)
{
	if (!th)
		return -EINVAL;
	return utrace_mem__read(th->tid, addr, buf, len);
}

ssize_t utrace_thread__write_mem(struct utrace_thread *th, uint64_t addr, const void *buf,
				 size_t len)
{
	if (!th)
		return -EINVAL;
	return utrace_mem__write(th->tid, addr, buf, len);
}

int utrace_thread__quiesce(struct utrace_thread *th, bool wait)
{
	struct utrace_session *s;
	pid_t tid;
	int r;

	if (!th)
		return -EINVAL;
	s = th->s;
	tid = th->tid;
	if (th->stop != TSTOP_RUNNING) {
		th->want_stop = true;
		return 0;
	}
	th->notify_quiesce = true;
	r = thread_request_stop(th);
	if (r < 0)
		return r;
	while (wait) {
		th = utrace_session__find_thread(s, tid);
		if (!th)
			return -ESRCH;
		if (thread_settled(th))
			return 0;
		r = wait_one(s, true);
		if (r == -ECHILD)
			return -ESRCH;
		if (r < 0 && r != -EINTR)
			return r;
	}
	return 0;
}

int utrace_thread__resume(struct utrace_thread *th)
{
	if (!th)
		return -EINVAL;
	th->want_stop = false;
	th->engine_stop = false;
	if (th->stop == TSTOP_RUNNING)
		return 0;
	if (th->s->dispatch_depth && th->s->dispatch_th == th) {
		/* Inside a callback for @th: released when the event is done. */
		th->override_resume = true;
		return 0;
	}
	return thread_release(th);
}

int utrace_thread__singlestep(struct utrace_thread *th)
{
	if (!th)
		return -EINVAL;
	if (th->stop == TSTOP_RUNNING)
		return -EBUSY;
	th->stepping = true;
	th->want_stop = false;
	th->engine_stop = false;
	if (th->s->dispatch_depth && th->s->dispatch_th == th) {
		th->override_resume = true;
		return 0;
	}
	return thread_release(th);
}

int utrace_thread__skip_syscall(struct utrace_thread *th, long ret)
{
	struct user_regs_struct regs;
	int r;

	if (!th)
		return -EINVAL;
	if (th->stop != TSTOP_SYSCALL_ENTRY && th->stop != TSTOP_SECCOMP)
		return -EINVAL;
	r = utrace_thread__get_regs(th, &regs);
	if (r < 0)
		return r;
	arch_skip_syscall(&regs, ret);
	r = utrace_thread__set_regs(th, &regs);
	if (r < 0)
		return r;
	th->skip = true;
	th->skip_ret = ret;
	return 0;
}
