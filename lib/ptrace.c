/* SPDX-License-Identifier: MIT */
/*
 * ptrace.c - thin wrappers over ptrace(2), one per request, returning 0 (or
 * a value) on success and a negative errno on failure. Runs in the tracer
 * process, in the tracing thread (the kernel accepts requests for a tracee
 * only from the thread that attached it). No allocation, no logging.
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

#include "internal.h"

/* The kernel's siginfo-sized mask for GETSIGMASK/SETSIGMASK is 8 bytes. */
#define KERNEL_SIGSET_SIZE 8

static long do_ptrace(enum __ptrace_request req, pid_t tid, void *addr, void *data)
{
	long r;

	errno = 0;
	r = ptrace(req, tid, addr, data);
	if (r == -1 && errno)
		return -errno;
	return r;
}

/**
 * ptrace_seize - PTRACE_SEIZE @tid with @options (PTRACE_O_* bits).
 * Return: 0 on success; negative errno (-EPERM, -ESRCH ...).
 */
int ptrace_seize(pid_t tid, unsigned long options)
{
	return (int)do_ptrace(PTRACE_SEIZE, tid, NULL, (void *)options);
}

/**
 * ptrace_setoptions - PTRACE_SETOPTIONS on a stopped tracee.
 * Return: 0 on success; negative errno.
 */
int ptrace_setoptions(pid_t tid, unsigned long options)
{
	return (int)do_ptrace(PTRACE_SETOPTIONS, tid, NULL, (void *)options);
}

/**
 * ptrace_interrupt - PTRACE_INTERRUPT: make a seized tracee report
 * PTRACE_EVENT_STOP (or any other stop that comes first).
 * Return: 0 on success; negative errno.
 */
int ptrace_interrupt(pid_t tid)
{
	return (int)do_ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
}

/**
 * ptrace_resume - resume a stopped tracee with @req (PTRACE_CONT,
 * PTRACE_SYSCALL, PTRACE_SINGLESTEP), delivering @sig (0: none).
 * Return: 0 on success; negative errno.
 */
int ptrace_resume(pid_t tid, int req, int sig)
{
	return (int)do_ptrace((enum __ptrace_request)req, tid, NULL, (void *)(long)sig);
}

/**
 * ptrace_listen - PTRACE_LISTEN: let a tracee in group-stop wait for
 * SIGCONT while still reporting events.
 * Return: 0 on success; negative errno.
 */
int ptrace_listen(pid_t tid)
{
	return (int)do_ptrace(PTRACE_LISTEN, tid, NULL, NULL);
}

/**
 * ptrace_detach - PTRACE_DETACH a stopped tracee, delivering @sig.
 * Return: 0 on success; negative errno.
 */
int ptrace_detach(pid_t tid, int sig)
{
	return (int)do_ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig);
}

/**
 * ptrace_getregs - read the general registers (NT_PRSTATUS).
 * Return: 0 on success; negative errno; @regs untouched on failure.
 */
int ptrace_getregs(pid_t tid, struct user_regs_struct *regs)
{
	struct user_regs_struct tmp;
	struct iovec iov = { &tmp, sizeof(tmp) };
	long r = do_ptrace(PTRACE_GETREGSET, tid, (void *)(long)NT_PRSTATUS, &iov);

	if (r < 0)
		return (int)r;
	if (iov.iov_len != sizeof(tmp))
		return -EIO;
	*regs = tmp;
	return 0;
}

/**
 * ptrace_setregs - write the general registers (NT_PRSTATUS).
 * Return: 0 on success; negative errno.
 */
int ptrace_setregs(pid_t tid, const struct user_regs_struct *regs)
{
	struct iovec iov = { (void *)regs, sizeof(*regs) };

	return (int)do_ptrace(PTRACE_SETREGSET, tid, (void *)(long)NT_PRSTATUS, &iov);
}

/**
 * ptrace_getregset - read register set @type (NT_PRFPREG, NT_X86_XSTATE)
 * into @buf of @size bytes.
 * Return: the number of bytes read; negative errno.
 */
int ptrace_getregset(pid_t tid, int type, void *buf, size_t size)
{
	struct iovec iov = { buf, size };
	long r = do_ptrace(PTRACE_GETREGSET, tid, (void *)(long)type, &iov);

	return r < 0 ? (int)r : (int)iov.iov_len;
}

/**
 * ptrace_setregset - write register set @type from @buf.
 * Return: 0 on success; negative errno.
 */
int ptrace_setregset(pid_t tid, int type, const void *buf, size_t size)
{
	struct iovec iov = { (void *)buf, size };

	return (int)do_ptrace(PTRACE_SETREGSET, tid, (void *)(long)type, &iov);
}

/**
 * ptrace_getsiginfo - siginfo of the current signal-delivery stop.
 * Return: 0 on success; negative errno (-EINVAL at a stop without one).
 */
int ptrace_getsiginfo(pid_t tid, siginfo_t *info)
{
	return (int)do_ptrace(PTRACE_GETSIGINFO, tid, NULL, info);
}

/**
 * ptrace_setsiginfo - replace the siginfo of the current signal-delivery stop.
 * Return: 0 on success; negative errno.
 */
int ptrace_setsiginfo(pid_t tid, const siginfo_t *info)
{
	return (int)do_ptrace(PTRACE_SETSIGINFO, tid, NULL, (void *)info);
}

/**
 * ptrace_geteventmsg - PTRACE_GETEVENTMSG (new tid, former tid, ...).
 * Return: 0 on success; negative errno; @ret untouched on failure.
 */
int ptrace_geteventmsg(pid_t tid, unsigned long *ret)
{
	unsigned long msg;
	long r = do_ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg);

	if (r < 0)
		return (int)r;
	*ret = msg;
	return 0;
}

/**
 * ptrace_getsigmask - the blocked-signal mask of a stopped tracee.
 * Return: 0 on success; negative errno.
 */
int ptrace_getsigmask(pid_t tid, uint64_t *mask)
{
	return (int)do_ptrace(PTRACE_GETSIGMASK, tid, (void *)(long)KERNEL_SIGSET_SIZE, mask);
}

/**
 * ptrace_setsigmask - set the blocked-signal mask (SIGKILL and SIGSTOP are
 * silently left unblocked by the kernel).
 * Return: 0 on success; negative errno.
 */
int ptrace_setsigmask(pid_t tid, uint64_t mask)
{
	return (int)do_ptrace(PTRACE_SETSIGMASK, tid, (void *)(long)KERNEL_SIGSET_SIZE, &mask);
}

/**
 * ptrace_get_syscall_info - PTRACE_GET_SYSCALL_INFO.
 * Return: the size the kernel would write (> 0) on success; negative errno
 * (-EIO on kernels older than 5.3).
 */
int ptrace_get_syscall_info(pid_t tid, struct __ptrace_syscall_info *info)
{
	memset(info, 0, sizeof(*info));
	return (int)do_ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(*info), info);
}
