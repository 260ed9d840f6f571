/* SPDX-License-Identifier: MIT */
/*
 * remote.c - remote syscalls: make a stopped tracee execute a syscall of
 * the tracer's choosing, then put it back exactly as it was. Runs in the
 * tracing thread.
 *
 * The syscall runs at a real "syscall" instruction of the target (vdso,
 * else libc, else any executable mapping); the tracer stops the thread at
 * the syscall-exit stop of that syscall, so nothing after the instruction
 * ever runs and any 0f 05 byte pair will do.
 *
 * The hard part is leaving. The thread was stopped at one of these
 * places, and must be returned to the same kind of place, with the same
 * registers:
 *
 *  - in get_signal() (PTRACE_EVENT_STOP from PTRACE_INTERRUPT, or a
 *    group-stop). If it was blocked in a syscall, rax holds -ERESTARTSYS,
 *    -ERESTARTNOINTR, -ERESTARTNOHAND or -ERESTART_RESTARTBLOCK and the
 *    kernel will rewind rip and restart the call (or run restart_syscall
 *    with the thread's restart_block, for nanosleep) when get_signal()
 *    returns with no signal to deliver (arch/x86/kernel/signal.c:
 *    arch_do_signal_or_restart()). If we simply wrote the saved registers
 *    back at the exit stop of our syscall, that restart code would never
 *    run and the program would see -512 from read(). So, after writing
 *    the registers back, we queue a PTRACE_INTERRUPT and continue: the
 *    thread leaves syscall_exit_work(), enters get_signal() again (the
 *    INTERRUPT set TIF_SIGPENDING) and stops there in PTRACE_EVENT_STOP
 *    (jobctl traps are handled before any signal is dequeued), with the
 *    original registers: the restart happens when it is resumed, as it
 *    would have. During the call, orig_rax = -1 keeps the kernel from
 *    "restarting" our injected syscall (gdb: amd64_linux_write_pc()).
 *  - at a syscall-exit stop: the same. It is tempting to write the
 *    registers back at our own exit stop and stop there, but a thread
 *    whose syscall was interrupted by PTRACE_INTERRUPT (rax = -ERESTARTSYS)
 *    reports that syscall-exit stop *instead of* the EVENT_STOP (the exit
 *    stop consumes the trap), and the restart then depends on
 *    TIF_SIGPENDING still being set when it leaves the stop. Our syscall
 *    went through get_signal(), which cleared it (nothing deliverable: all
 *    blocked), so the program would see -512 from read(). The stress test
 *    caught exactly that. Going back through get_signal() is right in
 *    every case: with no signal pending it only does the restart.
 *  - at a syscall-entry or seccomp stop: the current syscall slot is used
 *    (orig_rax = our number), then the registers are set so that the
 *    thread re-executes the original syscall instruction (rip - 2, rax =
 *    the original number) and it is run to the next syscall-entry (or
 *    seccomp) stop, where the saved registers are written back: the
 *    thread is at the same entry stop as before.
 *
 *  - at a signal-delivery stop: the signal was already dequeued, and
 *    resuming with 0 makes the kernel forget it. After the call it is
 *    queued again with tgkill(), the thread is run into get_signal(), which
 *    dequeues it and stops, and PTRACE_SETSIGINFO restores the original
 *    siginfo (a kill()'s SI_USER stays SI_USER): the thread is back at a
 *    signal-delivery stop for the same signal, with the same registers, so
 *    the restart-or-EINTR decision for an interrupted syscall is the
 *    kernel's as before. (An engine that suppressed the signal gets the
 *    get_signal() stop of the first case instead.)
 *
 * If the tracer dies in the middle, the kernel detaches the thread with
 * our registers. So, when libc has the two gadgets
 * (remote_find_safe_gadgets()), the syscall runs at a "syscall; ret" of
 * libc with rsp at an rt_sigreturn frame below the red zone whose first
 * slot is glibc's __restore_rt: a thread left alone returns through it
 * with its own registers, mask and xstate (arch/x86_64/call.c, "KILL-SAFE
 * RETURNS"). The tracer restores mask, xstate, then registers: every
 * prefix of that sequence still ends well if it dies there (after the
 * registers, the detach wakes the thread with TIF_SIGPENDING, so the
 * kernel's restart logic runs on them).
 *
 * Signals: PTRACE_SETSIGMASK blocks everything but SIGTRAP for the
 * duration (CRIU compel's parasite_run(); a blocked forced SIGTRAP would
 * reset its handler), so signals arriving meanwhile stay pending and are
 * delivered after. SIGSTOP cannot be blocked: if one (or a SIGTRAP)
 * arrives it is suppressed at its signal-delivery stop and re-sent with
 * tgkill() at the end (its siginfo becomes the tracer's tgkill's). Extended state (NT_X86_XSTATE) and the mask are restored too.
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "utrace/proc.h"
#include "utrace/session.h"
#include "arch.h"
#include "internal.h"

#define XSTATE_MAX (64 * 1024)

/* State of one remote call. */
struct remote_ctx {
	long deadline; /* session_now_ms() value; < 0: none */
	bool timed_out; /* interrupted for taking too long */
};
#define SCAN_CHUNK (64 * 1024)

/* First address of @pat (or of a syscall instruction, @pat NULL) in @m. */
static uint64_t scan_mapping_for(pid_t pid, const struct utrace_map *m, const unsigned char *pat,
				 size_t plen)
{
	size_t over = pat ? plen : ARCH_SYSCALL_INSN_LEN;
	unsigned char *buf = malloc(SCAN_CHUNK + over);
	uint64_t addr, found = 0;

	if (!buf)
		return 0;
	for (addr = m->start; addr < m->end && !found; addr += SCAN_CHUNK) {
		size_t len = MIN((uint64_t)SCAN_CHUNK + over, m->end - addr);
		size_t i;

		if (utrace_mem__read(pid, addr, buf, len) != (ssize_t)len)
			break;
		for (i = 0; i + over <= len; i++) {
			if (pat ? !memcmp(&buf[i], pat, plen) : arch_syscall_insn_at(&buf[i])) {
				found = addr + i;
				break;
			}
		}
	}
	free(buf);
	return found;
}

static uint64_t scan_mapping(pid_t pid, const struct utrace_map *m)
{
	return scan_mapping_for(pid, m, NULL, 0);
}

bool remote_find_safe_gadgets(struct utrace_thread *th)
{
	static const unsigned char sysret[] = { 0x0f, 0x05, 0xc3 };
	/* glibc's __restore_rt, the sa_restorer of every handler it installs */
	static const unsigned char restore_rt[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00,
						    0x00, 0x00, 0x0f, 0x05 };
	struct tproc *p = th->proc;
	struct utrace_maps *maps;
	size_t i;

	if (p->safe_searched)
		return p->sysret && p->restore_rt;
	p->safe_searched = true;
	maps = utrace_maps__read(p->pid);
	if (!maps)
		return false;
	for (i = 0; i < maps->nr && !(p->sysret && p->restore_rt); i++) {
		const struct utrace_map *m = &maps->maps[i];

		if (!(m->prot & UTRACE_MAP_EXEC) || !m->path || !strstr(m->path, "/libc"))
			continue;
		if (!p->sysret)
			p->sysret = scan_mapping_for(p->pid, m, sysret, sizeof(sysret));
		if (!p->restore_rt)
			p->restore_rt = scan_mapping_for(p->pid, m, restore_rt, sizeof(restore_rt));
	}
	utrace_maps__free(maps);
	if (!(p->sysret && p->restore_rt))
		pr_debug("pid %d: no 'syscall; ret' or __restore_rt in libc: remote syscalls are "
			 "not kill-safe\n",
			 p->pid);
	return p->sysret && p->restore_rt;
}

/**
 * remote_find_syscall_insn - find a syscall instruction in @th's process.
 * @th: a traced thread
 * @ret_addr: on success, the address of a 0f 05 byte pair
 *
 * Searches the vdso, then libc, then any executable mapping. The result is
 * cached per process and forgotten at exec. May allocate. Return: 0 on
 * success; -ENOEXEC if none was found; negative errno if the maps cannot be
 * read; @ret_addr untouched on failure.
 */
int remote_find_syscall_insn(struct utrace_thread *th, uint64_t *ret_addr)
{
	struct utrace_maps *maps;
	uint64_t found = 0;
	size_t i;
	int pass;

	if (th->proc->gadget) {
		*ret_addr = th->proc->gadget;
		return 0;
	}
	maps = utrace_maps__read(th->proc->pid);
	if (!maps)
		return -errno;
	for (pass = 0; pass < 3 && !found; pass++) {
		for (i = 0; i < maps->nr && !found; i++) {
			const struct utrace_map *m = &maps->maps[i];

			if (!(m->prot & UTRACE_MAP_EXEC))
				continue;
			if (pass == 0 && !(m->path && !strcmp(m->path, "[vdso]")))
				continue;
			if (pass == 1 && !(m->path && strstr(m->path, "/libc")))
				continue;
			if (pass == 2 && m->path && !strcmp(m->path, "[vsyscall]"))
				continue;
			found = scan_mapping(th->proc->pid, m);
		}
	}
	utrace_maps__free(maps);
	if (!found)
		return -ENOEXEC;
	th->proc->gadget = found;
	*ret_addr = found;
	return 0;
}

/*
 * Wait for the next stop of @th during a remote call. Stops that are not
 * part of the call are absorbed: group-stops (PTRACE_EVENT_STOP) are
 * resumed with @req, signals (SIGSTOP, SIGTRAP: the others are blocked)
 * are suppressed and noted in @requeue. Returns the stop's status (a
 * syscall or seccomp stop, or PTRACE_EVENT_STOP when @want_event) or a
 * negative errno: -ESRCH if the thread is gone (its exit has been reported
 * to the session, or will be).
 */
static int remote_wait(struct utrace_thread *th, int req, bool want_event, uint64_t *requeue,
		       struct remote_ctx *rc)
{
	struct utrace_session *s = th->s;
	pid_t tid = th->tid;

	for (;;) {
		int status, sig, event, r;

		r = session_wait_tid(s, tid, &status, rc->timed_out ? -1 : rc->deadline);
		if (r == -ETIMEDOUT) {
			/*
			 * Blocked too long: interrupt it. A blocked syscall then
			 * ends with -ERESTART* at its exit stop (which consumes the
			 * interrupt); we wait for that stop without limit, since
			 * the registers must be put back in any case.
			 */
			pr_info("thread %d: remote syscall timed out, interrupting it\n", tid);
			rc->timed_out = true;
			if (ptrace_interrupt(tid) < 0)
				return -ESRCH;
			continue;
		}
		if (r < 0)
			return r;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			session_handle_status(s, tid, status);
			return -ESRCH;
		}
		if (!WIFSTOPPED(status))
			continue;
		sig = WSTOPSIG(status);
		event = (unsigned int)status >> 16;
		th->interrupted = false; /* every stop consumes a pending interrupt */
		if (sig == (SIGTRAP | 0x80) || event == PTRACE_EVENT_SECCOMP)
			return status;
		if (event == PTRACE_EVENT_STOP) {
			if (want_event)
				return status;
			if (rc->timed_out && sig == SIGTRAP)
				return -ETIMEDOUT; /* our interrupt, outside any syscall */
			/* A group-stop (SIGSTOP got through): go on. */
		} else if (event == 0) {
			/* Only SIGTRAP and SIGSTOP get past our mask: re-sent at the end. */
			*requeue |= 1ULL << (sig - 1);
		}
		if (ptrace_resume(tid, req, 0) < 0)
			return -ESRCH;
	}
}

static bool is_syscall_entry(pid_t tid, int status, const struct user_regs_struct *regs)
{
	struct __ptrace_syscall_info info;

	if (((unsigned int)status >> 16) == PTRACE_EVENT_SECCOMP)
		return true;
	if (ptrace_get_syscall_info(tid, &info) > 0) {
		return info.op == PTRACE_SYSCALL_INFO_ENTRY ||
		       info.op == PTRACE_SYSCALL_INFO_SECCOMP;
	}
	return arch_at_entry_stop(regs);
}

/*
 * Run the prepared registers @call to our syscall's exit stop; result in
 * @ret. The registers go in first, then the mask that blocks signals: a
 * tracer killed in between leaves a thread that runs our syscall and its
 * way back (the sigreturn frame), not one that runs on with every signal
 * blocked.
 */
static int run_to_exit(struct utrace_thread *th, const struct user_regs_struct *call,
		       bool from_entry, long *ret, uint64_t *requeue, struct remote_ctx *rc)
{
	struct user_regs_struct regs;
	bool entered = from_entry;
	int r, status;

	r = ptrace_setregs(th->tid, call);
	if (r < 0)
		return r;
	/* Block everything but SIGTRAP (SIGKILL/SIGSTOP cannot be blocked). */
	r = ptrace_setsigmask(th->tid, ~(1ULL << (SIGTRAP - 1)));
	if (r < 0)
		return r;
	for (;;) {
		r = ptrace_resume(th->tid, PTRACE_SYSCALL, 0);
		if (r < 0)
			return r;
		status = remote_wait(th, PTRACE_SYSCALL, false, requeue, rc);
		if (status < 0)
			return status;
		r = ptrace_getregs(th->tid, &regs);
		if (r < 0)
			return r;
		if (is_syscall_entry(th->tid, status, &regs)) {
			entered = true;
			continue;
		}
		if (entered)
			break;
	}
	*ret = arch_syscall_ret(&regs);
	return 0;
}

/*
 * The call started at a signal-delivery stop for @sig, whose signal the
 * kernel forgot when we resumed with 0. Queue it again with tgkill() and
 * run the thread into get_signal(), which dequeues it and stops; there
 * PTRACE_SETSIGINFO puts back the original siginfo. The registers are the
 * saved ones, so the kernel's restart decision for an interrupted syscall
 * is made exactly as it would have been. Another signal dequeued first is
 * suppressed and re-sent later (noted in @requeue).
 */
static int redeliver(struct utrace_thread *th, int sig, const siginfo_t *info, uint64_t *requeue)
{
	pid_t tid = th->tid;
	int r, status;

	r = (int)RET_NERRNO(syscall(SYS_tgkill, th->proc->pid, tid, sig));
	if (r < 0)
		return r;
	r = ptrace_resume(tid, PTRACE_CONT, 0);
	while (r == 0) {
		int ssig, event;

		r = session_wait_tid(th->s, tid, &status, -1);
		if (r < 0)
			return r;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			session_handle_status(th->s, tid, status);
			return -ESRCH;
		}
		ssig = WSTOPSIG(status);
		event = (unsigned int)status >> 16;
		if (event == 0 && ssig == sig) {
			r = ptrace_setsiginfo(tid, info);
			th->stop = TSTOP_SIGNAL;
			th->stop_sig = sig;
			return r;
		}
		if (event == 0)
			*requeue |= 1ULL << (ssig - 1);
		r = ptrace_resume(tid, PTRACE_CONT, 0);
	}
	return r == -ESRCH ? -ESRCH : r;
}

int utrace_thread__remote_syscall(struct utrace_thread *th, long nr, const uint64_t args[6],
				  long *ret_val)
{
	struct user_regs_struct saved, call;
	enum tstop kind;
	uint64_t gadget = 0, mask = 0, requeue = 0;
	void *xstate = NULL;
	int xlen = 0, r, status;
	long result = 0;
	pid_t tid;
	int sig, held_sig;
	siginfo_t held_info;
	struct remote_ctx rc = { -1, false };

	if (!th || !ret_val)
		return -EINVAL;
	if (gettid() != th->s->tracer_tid)
		return -EINVAL;
	kind = th->stop;
	if (kind == TSTOP_RUNNING || kind == TSTOP_PEVENT)
		return -EBUSY;
	held_sig = kind == TSTOP_SIGNAL ? th->stop_sig : 0;
	if (held_sig && ptrace_getsiginfo(th->tid, &held_info) < 0)
		return -EBUSY;
	tid = th->tid;
	if (kind != TSTOP_SYSCALL_ENTRY && kind != TSTOP_SECCOMP) {
		r = remote_find_syscall_insn(th, &gadget);
		if (r < 0)
			return r;
	}
	if (th->s->remote_timeout_ms >= 0)
		rc.deadline = session_now_ms() + th->s->remote_timeout_ms;
	r = ptrace_getregs(tid, &saved);
	if (r < 0)
		return r;
	r = ptrace_getsigmask(tid, &mask);
	if (r < 0)
		return r;
	xstate = malloc(XSTATE_MAX);
	if (xstate) {
		xlen = ptrace_getregset(tid, NT_X86_XSTATE, xstate, XSTATE_MAX);
		if (xlen < 0)
			xlen = 0;
	}
	thread_invalidate_regs(th);

	call = saved;
	if (kind == TSTOP_SYSCALL_ENTRY || kind == TSTOP_SECCOMP) {
		/* Use the syscall slot we are in. */
		arch_set_syscall(&call, nr, args);
		r = run_to_exit(th, &call, true, &result, &requeue, &rc);
	} else {
		struct arch_sigframe f = { 0 };

		/*
		 * Kill-safe when libc has the gadgets (arch/x86_64/call.c): the
		 * syscall runs at "syscall; ret", which returns into
		 * __restore_rt with our sigreturn frame, so the thread gets
		 * its own state back even if we die before we restore it.
		 */
		arch_prepare_remote(&call, gadget, nr, args);
		if (remote_find_safe_gadgets(th) &&
		    arch_sigframe_build(&f, &saved, mask, xstate, xlen, th->proc->restore_rt) ==
			    0) {
			if (utrace_mem__write(th->proc->pid, f.lo, f.buf, f.len) ==
			    (ssize_t)f.len) {
				call.rip = th->proc->sysret;
				call.rsp = f.lo;
			}
			arch_sigframe_free(&f);
		}
		r = run_to_exit(th, &call, false, &result, &requeue, &rc);
	}
	if (r == 0 && rc.timed_out)
		r = -ETIMEDOUT; /* interrupted at its exit stop: restore as usual */
	if (r < 0 && r != -ETIMEDOUT)
		goto out_restore;

	if (kind == TSTOP_SYSCALL_ENTRY || kind == TSTOP_SECCOMP) {
		/* Re-execute the original syscall instruction up to its entry stop. */
		struct user_regs_struct again;
		int req = kind == TSTOP_SECCOMP ? PTRACE_CONT : PTRACE_SYSCALL;

		int r2;

		/* An -ETIMEDOUT interrupt stop outside a syscall: nothing to rewind. */
		if (r == 0 || rc.timed_out) {
			arch_rewind_syscall(&again, &saved);
			r2 = ptrace_setregs(tid, &again);
			if (r2 == 0)
				r2 = ptrace_resume(tid, req, 0);
			if (r2 == 0) {
				rc.deadline = -1;
				status = remote_wait(th, req, false, &requeue, &rc);
				r2 = status < 0 ? status : 0;
			}
			if (r2 < 0)
				r = r2;
		}
	}

out_restore:
	if (r == -ESRCH)
		goto out_free;
	/*
	 * Mask, FP/vector state and registers back as they were, the
	 * registers last: until then, a tracer killed here leaves the thread
	 * on its way to the sigreturn frame, which restores all of it again.
	 */
	ptrace_setsigmask(tid, mask);
	if (xlen > 0)
		ptrace_setregset(tid, NT_X86_XSTATE, xstate, (size_t)xlen);
	if (ptrace_setregs(tid, &saved) < 0 && r == 0)
		r = -EINTR;
	if (held_sig) {
		/* Back to a signal-delivery stop for the same signal and siginfo. */
		int r2 = redeliver(th, held_sig, &held_info, &requeue);

		if (r2 == -ESRCH) {
			r = -ESRCH;
			goto out_free;
		}
		if (r == 0)
			r = r2;
	} else if (kind != TSTOP_SYSCALL_ENTRY && kind != TSTOP_SECCOMP) {
		/*
		 * Back into get_signal(), so that the kernel's restart logic runs.
		 * Also after a failure midway: the thread may sit in a syscall stop
		 * with the original registers, which must not reach user space.
		 */
		int r2 = ptrace_interrupt(tid);

		rc.deadline = -1; /* this must complete: the registers are at stake */
		if (r2 == 0)
			r2 = ptrace_resume(tid, PTRACE_CONT, 0);
		if (r2 == 0) {
			status = remote_wait(th, PTRACE_CONT, true, &requeue, &rc);
			if (status < 0) {
				r2 = status;
			} else {
				sig = WSTOPSIG(status);
				th->stop = sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
							   sig == SIGTTOU ?
						   TSTOP_GROUP :
						   TSTOP_EVENT;
				th->stop_sig = th->stop == TSTOP_GROUP ? sig : 0;
			}
		}
		if (r2 == -ESRCH) {
			r = -ESRCH;
			goto out_free;
		}
		if (r == 0)
			r = r2;
	}
	for (sig = 1; sig <= 64; sig++)
		if (requeue & (1ULL << (sig - 1)))
			syscall(SYS_tgkill, th->proc->pid, tid, sig);
	if (r == 0)
		*ret_val = result;
	else if (r != -ESRCH && r != -ETIMEDOUT)
		r = -EINTR;
out_free:
	free(xstate);
	if (r == 0) {
		th->regs = saved;
		th->regs_valid = true;
	}
	return r;
}
