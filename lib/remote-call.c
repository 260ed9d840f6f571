/* SPDX-License-Identifier: MIT */
/*
 * remote-call.c - remote function calls: make a stopped tracee call a
 * function of its own address space, then put it back exactly as it was.
 * Runs in the tracing thread. Companion of remote.c (remote syscalls),
 * whose essay explains how a thread is returned to its stop so that an
 * interrupted syscall restarts; the same exit path is used here.
 *
 * The sequence (prior-art.md §1, "Per remote call"):
 *
 *  1. Save NT_PRSTATUS, NT_X86_XSTATE and the signal mask.
 *  2. PTRACE_SETSIGMASK: block everything but SIGTRAP, the synchronous
 *     fault signals and glibc's SIGSETXID (see GLIBC_SIGSETXID). Blocking
 *     a fault signal would be worse than useless: when the kernel forces
 *     a blocked (or ignored) SIGSEGV on a crash, it
 *     unblocks it and resets its handler to SIG_DFL
 *     (kernel/signal.c: force_sig_info_to_task()), silently removing the
 *     target's own handler. Unblocked, a crash in the callee is reported to
 *     us at its signal-delivery stop and suppressed; a fault signal sent
 *     by kill() meanwhile (si_code <= 0) is suppressed and sent again
 *     after the restore, like any other signal that stayed pending.
 *  3. orig_rax = -1 (no syscall restart rewinds our rip), arguments in
 *     rdi..r9, rsp below the red zone and aligned, the return address
 *     0x320 written into the new stack slot, TF/DF cleared. When the
 *     injection has mapped its stub (proc->call_stub), the return address
 *     is the stub instead, above it a frame from which the stub restores
 *     the thread by itself if the tracer dies (arch/x86_64/call.c); the
 *     return is then the entry stop of the stub's marker syscall (run
 *     with PTRACE_SYSCALL), and the thread is moved to a PTRACE_EVENT_STOP
 *     before the restore (marker_to_event_stop()). The registers are set
 *     before the mask and restored after it, so that no moment leaves a
 *     thread running its own code with every signal blocked.
 *  4. PTRACE_CONT. The callee returns to 0x320, which can never be mapped
 *     (below mmap_min_addr): a SIGSEGV signal-delivery stop with rip =
 *     0x320 and rsp just above our slot is the completion (Frida's
 *     DUMMY_RETURN_ADDRESS). Nothing is written into the target's code,
 *     no memory is needed, and the kernel prints no "segfault at" line
 *     for a traced task (unhandled_signal() defers to the tracer).
 *  5. Wait with a deadline. Other tracees' events (e.g. the first stop of
 *     a thread the callee created) go to the session meanwhile, so that
 *     such a thread runs: an agent init that waits for its new thread
 *     would otherwise deadlock against us. On timeout with the stub
 *     (call_abandon()) the call is not taken back: restoring the
 *     registers mid-call would leave whatever the callee holds (dlopen's
 *     loader lock, a malloc lock) held forever, and the process would
 *     deadlock at its next dlopen(). The thread is stopped once and left
 *     at that stop with the callee's registers; resumed or detached, it
 *     finishes the call and the stub restores it by itself, exactly as
 *     if we had died. Without the stub (no way back but ours) the thread
 *     is interrupted wherever it is - typically in a futex wait for a
 *     lock it will never get - and restored, as before.
 *  6. Restore registers, xstate and mask, and send the thread back into
 *     get_signal() (PTRACE_INTERRUPT + PTRACE_CONT) so that it sits in
 *     the same kind of stop as before, with the kernel's restart logic
 *     still ahead of it (remote.c). Signals noted during the call are
 *     re-sent with tgkill().
 *
 * Restartable sequences. glibc >= 2.35 registers an rseq area for every
 * thread. If the thread was stopped inside a critical section of some rseq
 * user (tcmalloc, librseq), the kernel would abort that section when the
 * thread next returns to user space: it was preempted. But the first
 * return to user space is into our callee, where the kernel finds rip
 * outside the section and merely clears rseq_cs
 * (kernel/rseq.c: rseq_ip_fixup()); restoring the saved rip afterwards
 * would resume the section as if nothing had happened, breaking its
 * per-CPU guarantee. So the abort is done here: rip = abort_ip and
 * rseq_cs = 0, exactly what the kernel would have done.
 *
 * Not handled: the per-thread restart_block. If the call times out while
 * the callee sleeps (nanosleep, poll or futex with a timeout), the interrupt
 * overwrites it, and a thread that was itself interrupted in such a sleep
 * (-ERESTART_RESTARTBLOCK) would restart the callee's sleep instead of its
 * own; ptrace cannot save it (prior-art.md §1, pitfall 1). Calls that
 * return normally leave it alone. Also not handled: CET shadow stacks
 * (the fake return would raise #CP; the kernel on the development machines
 * does not enable them), and a thread stopped on a small sigaltstack (the
 * call uses whatever stack rsp is on).
 */
#include <elf.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utrace/inject.h"
#include "utrace/proc.h"
#include "arch.h"
#include "internal.h"

#define XSTATE_MAX (64 * 1024)
#define CALL_RET_ADDR 0x320ULL
#define CALL_DEFAULT_TIMEOUT_MS 5000
#define WAIT_SLICE_MS 10

/*
 * glibc's SIGSETXID (SIGRTMIN + 1, hidden by its <signal.h>): setuid() and
 * friends in any thread send it to every thread and wait until each has
 * run the handler. It stays unblocked during a call, for two reasons: a
 * thread created by the callee inherits the caller's mask (pthread_create()
 * copies it, removing only SIGCANCEL), and with SIGSETXID blocked such a
 * thread would make every later setuid() in the process hang; and a
 * setuid() in another thread during a long call would wait for us.
 */
#define GLIBC_SIGSETXID 33

/* Signals the kernel forces on a fault; they stay deliverable during a call. */
#define SIGBIT(s) (1ULL << ((s)-1))
#define FAULT_SIGS                                                                             \
	(SIGBIT(SIGSEGV) | SIGBIT(SIGBUS) | SIGBIT(SIGILL) | SIGBIT(SIGFPE) | SIGBIT(SIGSYS) | \
	 SIGBIT(SIGTRAP))

/* Kernel ABI (include/uapi/linux/rseq.h, ptrace.h), spelled out locally. */
struct rseq_config {
	uint64_t rseq_abi_pointer;
	uint32_t rseq_abi_size;
	uint32_t signature;
	uint32_t flags;
	uint32_t pad;
};

struct rseq_cs_desc {
	uint32_t version;
	uint32_t flags;
	uint64_t start_ip;
	uint64_t post_commit_offset;
	uint64_t abort_ip;
};

#define RSEQ_CS_FIELD 8 /* offsetof(struct rseq, rseq_cs) */

/*
 * If @tid was stopped at @rip inside an rseq critical section: its abort
 * handler, and in *@cs_field the address of the thread's rseq_cs pointer.
 * Return: the abort_ip, or 0 (no rseq area, no section, or outside it).
 */
static uint64_t rseq_abort_ip(pid_t pid, pid_t tid, uint64_t rip, uint64_t *cs_field)
{
	struct rseq_config conf = { 0 };
	struct rseq_cs_desc cs;
	uint64_t p = 0;

	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, tid, (void *)sizeof(conf), &conf) <= 0 ||
	    !conf.rseq_abi_pointer)
		return 0;
	*cs_field = conf.rseq_abi_pointer + RSEQ_CS_FIELD;
	if (utrace_mem__read(pid, *cs_field, &p, sizeof(p)) != sizeof(p) || !p)
		return 0;
	if (utrace_mem__read(pid, p, &cs, sizeof(cs)) != sizeof(cs))
		return 0;
	if (rip - cs.start_ip >= cs.post_commit_offset)
		return 0;
	return cs.abort_ip;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/*
 * Wait until @th stops (or dies), at most until @deadline (0: no limit).
 * Stops of other tracees are handed to the session. Returns 0 with
 * *@status set; -ETIMEDOUT; -ESRCH if @th is gone (reported to the
 * session); negative errno.
 */
static int call_wait(struct utrace_thread *th, long deadline, int *status)
{
	struct utrace_session *s = th->s;
	int fd = utrace_session__fd(s);

	for (;;) {
		siginfo_t si;
		int st;
		pid_t r = waitpid(th->tid, &st, __WALL | __WNOTHREAD | WNOHANG);

		if (r < 0 && errno != EINTR)
			return -errno;
		if (r == th->tid) {
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				session_handle_status(s, th->tid, st);
				return -ESRCH;
			}
			th->interrupted = false; /* any stop consumes a pending interrupt */
			*status = st;
			return 0;
		}
		/*
		 * Someone else's ptrace stop (a thread the callee created, say):
		 * the session deals with it. Only stops: waitid(WSTOPPED) never
		 * returns exits, so a plain child of the caller that exits now is
		 * not reaped behind the caller's back. Exits of other tracees
		 * wait for the session's loop, and so does a plain child in a
		 * group-stop (CLD_STOPPED, not a ptrace stop).
		 */
		memset(&si, 0, sizeof(si));
		r = waitid(P_ALL, 0, &si, WSTOPPED | WNOHANG | WNOWAIT | __WALL | __WNOTHREAD);
		if (r == 0 && si.si_pid > 0 && si.si_pid != th->tid && si.si_code == CLD_TRAPPED) {
			if (waitpid(si.si_pid, &st, __WALL | __WNOTHREAD | WNOHANG) == si.si_pid)
				session_handle_status(s, si.si_pid, st);
			continue;
		}
		if (r == 0 && si.si_pid == th->tid)
			continue; /* ours, just now */
		if (deadline) {
			long left = deadline - now_ms();
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			char buf[64];

			if (left <= 0)
				return -ETIMEDOUT;
			if (fd >= 0) {
				poll(&pfd, 1, (int)MIN(left, WAIT_SLICE_MS));
				while (read(fd, buf, sizeof(buf)) > 0)
					;
			} else {
				usleep(1000);
			}
		} else {
			struct timespec ts = { 0, 200 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
}

static bool is_stop_sig(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/*
 * @th is at the entry stop of the stub's marker syscall: the call has
 * returned. Let the harmless getpid run and stop the thread in
 * get_signal() (PTRACE_EVENT_STOP), right after it: from there the restore
 * is kill-safe at every step (arch/x86_64/call.c). Restoring here, at a
 * syscall-entry stop, would not be: a tracer killed after the registers
 * went back would leave the thread to run the syscall orig_rax says.
 */
static int marker_to_event_stop(struct utrace_thread *th, uint64_t *requeue)
{
	int r, status;

	r = ptrace_interrupt(th->tid);
	if (r == 0)
		r = ptrace_resume(th->tid, PTRACE_CONT, 0);
	while (r == 0) {
		int event, sig;

		r = call_wait(th, 0, &status);
		if (r < 0)
			break;
		event = (unsigned int)status >> 16;
		sig = WSTOPSIG(status);
		if (event == PTRACE_EVENT_STOP)
			return 0;
		/* Only a signal sent meanwhile can come first: re-sent later. */
		if (event == 0 && sig != (SIGTRAP | 0x80))
			*requeue |= SIGBIT(sig);
		r = ptrace_resume(th->tid, PTRACE_CONT, 0);
	}
	return r;
}

/*
 * The call did not return in time, and it runs with the stub as its way
 * back: leave it to finish on its own. Restoring the registers now would
 * put the thread back at its own code in the middle of the callee, with
 * whatever the callee holds (the loader lock of a dlopen, a malloc lock)
 * held forever: the process would deadlock at its next dlopen(). Instead
 * the thread is stopped once (PTRACE_INTERRUPT: a blocking syscall of the
 * callee restarts as after any ignored signal), and left at that
 * PTRACE_EVENT_STOP with the callee's registers. Resumed without syscall
 * stops, or detached, it finishes the call, runs the stub's marker
 * syscall without stopping and takes the stub's own way back: mask,
 * xstate and registers restored, its interrupted syscall restarted, as if
 * the tracer had died. The stub's resume word and the frame must stay as
 * they are until then: proc->call_stub is cleared (no later call writes
 * the word), and whoever mapped the stub must not unmap it.
 * Return: -ETIMEDOUT (*@abandoned set, the thread at an event stop mid-call);
 * 0 when the marker came first after all (returned late: completed, as in
 * call_run()); -ESRCH; -EINTR (exec); negative errno.
 */
static int call_abandon(struct utrace_thread *th, uint64_t fn, uint64_t stub, uint64_t *ret,
			uint64_t *requeue, bool *abandoned)
{
	pid_t tid = th->tid;
	int r, status;

	r = ptrace_interrupt(tid);
	while (r == 0) {
		struct user_regs_struct regs;
		int event, sig;

		r = call_wait(th, 0, &status);
		if (r < 0)
			return r;
		if (!WIFSTOPPED(status))
			continue;
		event = (unsigned int)status >> 16;
		sig = WSTOPSIG(status);
		if (event == PTRACE_EVENT_EXEC) {
			session_handle_status(th->s, tid, status);
			return -EINTR;
		}
		if (event == PTRACE_EVENT_STOP) {
			/* Ours, or a group-stop: either way a stop in get_signal(). */
			th->proc->call_stub = 0;
			thread_invalidate_regs(th);
			th->stop = is_stop_sig(sig) ? TSTOP_GROUP : TSTOP_EVENT;
			th->stop_sig = th->stop == TSTOP_GROUP ? sig : 0;
			*abandoned = true;
			pr_debug("thread %d: remote call of 0x%lx timed out; left to finish on "
				 "its own and return through the stub\n",
				 tid, (unsigned long)fn);
			return -ETIMEDOUT;
		}
		if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK ||
		    event == PTRACE_EVENT_VFORK) {
			session_note_clone(th->s, th, event);
			sig = 0;
		} else if (event == 0 && sig == (SIGTRAP | 0x80)) {
			if (ptrace_getregs(tid, &regs) < 0)
				return -ESRCH;
			if (regs.rip == stub + ARCH_STUB_MARKER &&
			    regs.orig_rax == ARCH_STUB_MARKER_NR) {
				/* It returned just now: completed after all. */
				*ret = regs.rdi;
				return marker_to_event_stop(th, requeue);
			}
			sig = 0;
		} else if (event != 0) {
			sig = 0; /* seccomp, ...: let it run on */
		} else if (FAULT_SIGS & SIGBIT(sig)) {
			/* A crash of the callee: as in call_run(), restored by the caller. */
			return -UTRACE_ERRNO__REMOTE_FAULT;
		}
		/*
		 * A signal-delivery stop: only the faults and SIGSETXID get
		 * through the call's mask; delivered as the kernel would.
		 * PTRACE_SYSCALL still: the marker may come before our stop.
		 * Any stop cleared the pending interrupt (kernel/signal.c:
		 * ptrace_stop(), "any trap clears pending STOP trap"; e.g. the
		 * exit stop of a sleep the interrupt cut short): ask again.
		 */
		r = ptrace_resume(tid, PTRACE_SYSCALL, sig);
		if (r == 0)
			r = ptrace_interrupt(tid);
	}
	return r;
}

/* Print a fault of the callee. */
static void log_fault(struct utrace_thread *th, uint64_t fn, const siginfo_t *si,
		      const struct user_regs_struct *regs)
{
	pr_warn("thread %d: remote call of 0x%lx crashed: %s (si_code %d) at 0x%lx, rip 0x%llx\n",
		th->tid, (unsigned long)fn, strsignal(si->si_signo), si->si_code,
		(unsigned long)si->si_addr, regs->rip);
}

/*
 * Run the prepared call until it returns, faults, dies or times out.
 * Return: 0 (completed, *@ret set); -ETIMEDOUT; -UTRACE_ERRNO__REMOTE_FAULT;
 * -ESRCH; -EINTR (exec); negative errno. The thread is stopped on return
 * unless -ESRCH/-EINTR.
 */
static int call_run(struct utrace_thread *th, uint64_t fn, uint64_t ret_slot, uint64_t stub,
		    long deadline, uint64_t *ret, uint64_t *requeue, bool *abandoned)
{
	pid_t tid = th->tid;
	int r, status, sig = 0;

	for (;;) {
		struct user_regs_struct regs;
		siginfo_t si;
		int event;

		/* With a stub, its marker syscall is the return: stop at syscalls. */
		r = ptrace_resume(tid, stub ? PTRACE_SYSCALL : PTRACE_CONT, sig);
		if (r < 0)
			return r;
		sig = 0;
		r = call_wait(th, deadline, &status);
		if (r == -ETIMEDOUT && stub)
			return call_abandon(th, fn, stub, ret, requeue, abandoned);
		if (r == -ETIMEDOUT) {
			/* No stub: no way back but ours. Take it back from wherever it is stuck. */
			r = ptrace_interrupt(tid);
			if (r < 0)
				return r;
			r = call_wait(th, 0, &status);
			if (r < 0)
				return r;
			pr_debug("thread %d: remote call of 0x%lx timed out, abandoned\n", tid,
				 (unsigned long)fn);
			return -ETIMEDOUT;
		}
		if (r < 0)
			return r;
		if (!WIFSTOPPED(status))
			continue;
		event = (unsigned int)status >> 16;
		if (event == PTRACE_EVENT_EXEC) {
			/* The process replaced itself under us: nothing to restore. */
			session_handle_status(th->s, tid, status);
			return -EINTR;
		}
		if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK ||
		    event == PTRACE_EVENT_VFORK) {
			/*
			 * The callee made a task (agent init: its control thread).
			 * Auto-attached through PTRACE_O_TRACECLONE, it must be known
			 * to the session before anybody detaches, or its first stop,
			 * if it comes after the detach, leaves it stopped and traced
			 * by nobody who will ever resume it.
			 */
			session_note_clone(th->s, th, event);
			continue;
		}
		if (stub && event == 0 && WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			if (ptrace_getregs(tid, &regs) < 0)
				return -ESRCH;
			if (regs.rip != stub + ARCH_STUB_MARKER ||
			    regs.orig_rax != ARCH_STUB_MARKER_NR)
				continue; /* a syscall of the callee */
			*ret = regs.rdi;
			return marker_to_event_stop(th, requeue);
		}
		if (event != 0 || WSTOPSIG(status) == (SIGTRAP | 0x80))
			continue; /* seccomp/group-stop/syscall: let it run on */
		/* A signal-delivery stop. */
		if (ptrace_getsiginfo(tid, &si) < 0 || ptrace_getregs(tid, &regs) < 0)
			return -ESRCH;
		if (si.si_code <= 0 || si.si_signo == SIGSTOP) {
			/* Sent by someone (kill, tgkill, sigqueue): deliver it later. */
			*requeue |= SIGBIT(si.si_signo);
			continue;
		}
		if (si.si_signo == SIGSEGV && arch_call_returned(&regs, CALL_RET_ADDR, ret_slot)) {
			*ret = arch_call_result(&regs);
			return 0;
		}
		/* A crash, or a trap we did not ask for (int3 in the callee). */
		if (FAULT_SIGS & SIGBIT(si.si_signo)) {
			log_fault(th, fn, &si, &regs);
			return -UTRACE_ERRNO__REMOTE_FAULT;
		}
		/* Anything else got through the mask (cannot happen): hold it. */
		*requeue |= SIGBIT(si.si_signo);
	}
}

/*
 * A thread at a syscall-entry stop (a session that traces syscalls caught
 * it entering one, e.g. a blocking read() restarted after the interrupt)
 * cannot take a call there: its syscall would run when it resumes. Let the
 * kernel skip it (orig_rax = -1: no syscall, -ENOSYS) and take the
 * syscall-exit stop that follows at once; the state to restore after the
 * call is then "about to execute that syscall": rip back on the 2-byte
 * syscall instruction, rax = its number, its arguments as they were. The
 * thread re-enters the syscall when it resumes, as if never stopped.
 * Tracing thread. Return: 0 (@entry = the entry registers), -EBUSY if
 * another stop came first (a signal: the caller tries another thread).
 */
static int leave_syscall_entry(struct utrace_thread *th, struct user_regs_struct *entry)
{
	struct user_regs_struct skip;
	int st;

	if (ptrace_getregs(th->tid, entry) < 0)
		return -ESRCH;
	skip = *entry;
	skip.orig_rax = (uint64_t)-1;
	thread_invalidate_regs(th);
	if (ptrace_setregs(th->tid, &skip) < 0 || ptrace(PTRACE_SYSCALL, th->tid, 0, 0) < 0)
		return -ESRCH;
	th->stop = TSTOP_RUNNING;
	if (waitpid(th->tid, &st, __WALL) != th->tid)
		return -ESRCH;
	if (!WIFSTOPPED(st) || WSTOPSIG(st) != (SIGTRAP | 0x80)) {
		/* not the exit stop: put the entry back as it was, let the session see it */
		if (WIFSTOPPED(st)) {
			th->stop = TSTOP_SIGNAL;
			th->stop_sig = WSTOPSIG(st);
		}
		return -EBUSY;
	}
	th->stop = TSTOP_SYSCALL_EXIT;
	entry->rip -= 2;
	entry->rax = entry->orig_rax;
	entry->orig_rax = (uint64_t)-1;
	return 0;
}

int utrace_thread__remote_call(struct utrace_thread *th, uint64_t addr, const uint64_t args[6],
			       const struct utrace_call_opts *opts, uint64_t *ret_val)
{
	static const uint64_t ret_addr = CALL_RET_ADDR;
	struct user_regs_struct saved, call;
	struct arch_sigframe frame = { 0 };
	uint64_t mask = 0, requeue = 0, ret_slot = 0, result = 0, rseq_abort, rseq_field = 0;
	uint64_t stub = 0;
	bool abandoned = false;
	int timeout_ms = CALL_DEFAULT_TIMEOUT_MS;
	struct user_regs_struct entry_regs;
	bool from_entry = false;
	enum tstop kind;
	void *xstate = NULL;
	int xlen = 0, r, r2, status, sig;
	pid_t tid;

	if (!th || !args || !ret_val || !addr)
		return -EINVAL;
	if (opts) {
		if (opts->sz < offsetof(struct utrace_call_opts, timeout_ms) + sizeof(int))
			return -EINVAL;
		if (opts->timeout_ms > 0)
			timeout_ms = opts->timeout_ms;
	}
	if (gettid() != th->s->tracer_tid)
		return -EINVAL;
	kind = th->stop;
	tid = th->tid;
	if (kind == TSTOP_SYSCALL_ENTRY) {
		r = leave_syscall_entry(th, &entry_regs);
		if (r < 0)
			return r;
		from_entry = true;
		kind = th->stop;
	}
	if (kind != TSTOP_EVENT && kind != TSTOP_GROUP && kind != TSTOP_SYSCALL_EXIT)
		return -EBUSY;

	/* 1. Save. */
	r = ptrace_getregs(tid, &saved);
	if (r < 0)
		return r;
	if (from_entry)
		saved = entry_regs; /* restore = re-enter the skipped syscall */
	r = ptrace_getsigmask(tid, &mask);
	if (r < 0)
		return r;
	xstate = malloc(XSTATE_MAX);
	if (!xstate)
		return -ENOMEM;
	xlen = ptrace_getregset(tid, NT_X86_XSTATE, xstate, XSTATE_MAX);
	if (xlen < 0)
		xlen = 0;
	rseq_abort = rseq_abort_ip(th->proc->pid, tid, saved.rip, &rseq_field);

	/*
	 * 3. The call frame (before touching the mask: a failed write changes
	 * nothing). With the injection's stub, the return address is the stub
	 * and a sigreturn frame below the red zone holds the way back, which
	 * the stub takes if we are gone by then (arch/x86_64/call.c).
	 */
	call = saved;
	if (th->proc->call_stub) {
		struct user_regs_struct back = saved;
		uint64_t resume = 0;

		if (rseq_abort)
			back.rip = rseq_abort;
		if (arch_stubframe_build(&frame, &back, mask, xstate, xlen, th->proc->call_stub,
					 &resume) == 0 &&
		    utrace_mem__write(th->proc->pid, frame.lo, frame.buf, frame.len) ==
			    (ssize_t)frame.len &&
		    utrace_mem__write(th->proc->pid, th->proc->call_stub + ARCH_STUB_RESUME,
				      &resume, sizeof(resume)) == sizeof(resume)) {
			stub = th->proc->call_stub;
			arch_call_from_frame(&call, addr, args, &frame);
			ret_slot = frame.lo;
		}
		arch_sigframe_free(&frame);
	}
	if (!stub) {
		arch_prepare_call(&call, addr, args, &ret_slot);
		if (utrace_mem__write(th->proc->pid, ret_slot, &ret_addr, sizeof(ret_addr)) !=
		    sizeof(ret_addr)) {
			r = -EFAULT;
			goto out_free;
		}
	}

	/*
	 * 2. Signals, after the registers: a tracer killed in between leaves
	 * a thread that runs the call (and, with the stub, its way back).
	 */
	thread_invalidate_regs(th);
	th->stop = TSTOP_RUNNING;
	r = ptrace_setregs(tid, &call);
	if (r == 0)
		r = ptrace_setsigmask(tid, ~(FAULT_SIGS | SIGBIT(GLIBC_SIGSETXID)));
	if (r == 0)
		/* 4, 5. */
		r = call_run(th, addr, ret_slot, stub, now_ms() + timeout_ms, &result, &requeue,
			     &abandoned);
	if (r == -ESRCH || r == -EINTR)
		goto out_free;
	if (abandoned) {
		/*
		 * Left mid-call (call_abandon()): nothing is restored here, the
		 * stub does it when the callee returns. The signals we took
		 * aside stay pending (the call's mask blocks them) until then.
		 */
		for (sig = 1; sig <= 64; sig++)
			if (requeue & SIGBIT(sig))
				syscall(SYS_tgkill, th->proc->pid, tid, sig);
		goto out_free;
	}

	/* 6. Restore, and back into get_signal() for the restart logic. */
	if (rseq_abort) {
		static const uint64_t zero;

		pr_debug("thread %d: was in an rseq critical section, resuming at its abort "
			 "handler 0x%lx\n",
			 tid, (unsigned long)rseq_abort);
		saved.rip = rseq_abort;
		utrace_mem__write(th->proc->pid, rseq_field, &zero, sizeof(zero));
	}
	/* Registers last: until then the stub's frame would restore it all too. */
	ptrace_setsigmask(tid, mask);
	if (xlen > 0)
		ptrace_setregset(tid, NT_X86_XSTATE, xstate, (size_t)xlen);
	r2 = ptrace_setregs(tid, &saved);
	if (r2 == 0)
		r2 = ptrace_interrupt(tid);
	if (r2 == 0)
		r2 = ptrace_resume(tid, PTRACE_CONT, 0);
	while (r2 == 0) {
		int event;

		r2 = call_wait(th, 0, &status);
		if (r2 < 0)
			break;
		event = (unsigned int)status >> 16;
		if (event == PTRACE_EVENT_STOP) {
			sig = WSTOPSIG(status);
			th->stop = is_stop_sig(sig) ? TSTOP_GROUP : TSTOP_EVENT;
			th->stop_sig = th->stop == TSTOP_GROUP ? sig : 0;
			break;
		}
		/* Cannot happen (the interrupt is first in get_signal()); keep going. */
		if (event == 0 && WSTOPSIG(status) != (SIGTRAP | 0x80))
			requeue |= SIGBIT(WSTOPSIG(status));
		r2 = ptrace_resume(tid, PTRACE_CONT, 0);
	}
	if (r2 == -ESRCH) {
		r = -ESRCH;
		goto out_free;
	}
	if (r2 < 0 && r == 0)
		r = -EINTR;
	for (sig = 1; sig <= 64; sig++)
		if (requeue & SIGBIT(sig))
			syscall(SYS_tgkill, th->proc->pid, tid, sig);
	if (r2 == 0) {
		th->regs = saved;
		th->regs_valid = true;
	}
	if (r == 0)
		*ret_val = result;
out_free:
	free(xstate);
	return r;
}
