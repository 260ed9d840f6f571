/* SPDX-License-Identifier: MIT */
/*
 * uprobe-sc.h - the one table of what the kernel backend copies of a
 * system call's memory with its record (x86-64 numbers), for the decoders
 * of syscalls/ to read as they read the tracee at the ptrace path's stops:
 * arg_path()/arg_str() strings at the entry, arg_buf() buffers written at
 * the entry and read at the return, the small structs the decoders print
 * at the return (umove() of struct stat, statx, timespec, int[2], pollfd,
 * rlimit, utsname, sigset, sigaction). lib/backend-kernel.c copies it into
 * the "sc_caps" BPF array at start-up; uprobe.bpf.c's sc_capture() reads
 * it by number (bpf/uprobe-abi.h: UK_CAP_*). A syscall not listed is
 * recorded with its numbers only: its pointers print as addresses.
 * Included by lib/backend-kernel.c only (a static table).
 */
#ifndef __UTRACE_BPF_UPROBE_SC_H
#define __UTRACE_BPF_UPROBE_SC_H

#include "uprobe-abi.h"

/* a path or name at the entry */
#define SC_STR(a)                         \
	{                                 \
		UK_CAP_STR, a, 0, 0, 0, 0 \
	}
/* a string written by the call (getcwd) */
#define SC_OUT_STR(a)                                             \
	{                                                         \
		UK_CAP_STR, a, 0, UK_CAPF_EXIT | UK_CAPF_OK, 0, 0 \
	}
/* data written: args[l] bytes, at most the -s size */
#define SC_IN_BUF(a, l)                                \
	{                                              \
		UK_CAP_LEN, a, l, UK_CAPF_STRMAX, 0, 0 \
	}
/* a struct of args[l] bytes at the entry (a sockaddr, a sigset) */
#define SC_IN_LEN(a, l)                   \
	{                                 \
		UK_CAP_LEN, a, l, 0, 0, 0 \
	}
/* ... at the return */
#define SC_OUT_LEN(a, l)                             \
	{                                            \
		UK_CAP_LEN, a, l, UK_CAPF_EXIT, 0, 0 \
	}
/* data read: the returned count of bytes, at most the -s size */
#define SC_OUT_BUF(a)                                                              \
	{                                                                          \
		UK_CAP_RET, a, 0, UK_CAPF_EXIT | UK_CAPF_STRMAX | UK_CAPF_OK, 0, 0 \
	}
/* @sz bytes at the entry */
#define SC_IN_FIX(a, sz)                   \
	{                                  \
		UK_CAP_FIX, a, 0, 0, sz, 0 \
	}
/* @sz bytes at a successful return */
#define SC_OUT_FIX(a, sz)                                          \
	{                                                          \
		UK_CAP_FIX, a, 0, UK_CAPF_EXIT | UK_CAPF_OK, sz, 0 \
	}
/* @sz bytes at a failed return (nanosleep's remaining time) */
#define SC_ERR_FIX(a, sz)                                           \
	{                                                           \
		UK_CAP_FIX, a, 0, UK_CAPF_EXIT | UK_CAPF_ERR, sz, 0 \
	}
/* args[n] elements of @sz bytes, at the entry and at a successful return */
#define SC_IN_ARR(a, n, sz)                \
	{                                  \
		UK_CAP_ARR, a, n, 0, sz, 0 \
	}
#define SC_OUT_ARR(a, n, sz)                                       \
	{                                                          \
		UK_CAP_ARR, a, n, UK_CAPF_EXIT | UK_CAPF_OK, sz, 0 \
	}

#define SC_CAPS(...)                   \
	{                              \
		.cap = { __VA_ARGS__ } \
	}

/* sizes on x86-64 (the decoders' umove()s) */
#define SC_STAT 144 /* struct stat */
#define SC_STATX 256 /* struct statx */
#define SC_TIMESPEC 16
#define SC_POLLFD 8
#define SC_RLIMIT 16
#define SC_UTSNAME 390 /* 6 * 65 */
#define SC_SIGACTION 32 /* struct kernel_sigaction with an 8-byte mask */

static const struct uk_sc_caps uk_sc_table[UK_SC_MAX] = {
	[0] = SC_CAPS(SC_OUT_BUF(1)), /* read */
	[1] = SC_CAPS(SC_IN_BUF(1, 2)), /* write */
	[2] = SC_CAPS(SC_STR(0)), /* open */
	[4] = SC_CAPS(SC_STR(0), SC_OUT_FIX(1, SC_STAT)), /* stat */
	[5] = SC_CAPS(SC_OUT_FIX(1, SC_STAT)), /* fstat */
	[6] = SC_CAPS(SC_STR(0), SC_OUT_FIX(1, SC_STAT)), /* lstat */
	[7] = SC_CAPS(SC_IN_ARR(0, 1, SC_POLLFD), SC_OUT_ARR(0, 1, SC_POLLFD)), /* poll */
	[13] = SC_CAPS(SC_IN_FIX(1, SC_SIGACTION), SC_OUT_FIX(2, SC_SIGACTION)), /* rt_sigaction */
	[14] = SC_CAPS(SC_IN_LEN(1, 3), SC_OUT_LEN(2, 3)), /* rt_sigprocmask */
	[17] = SC_CAPS(SC_OUT_BUF(1)), /* pread64 */
	[18] = SC_CAPS(SC_IN_BUF(1, 2)), /* pwrite64 */
	[21] = SC_CAPS(SC_STR(0)), /* access */
	[22] = SC_CAPS(SC_OUT_FIX(0, 8)), /* pipe */
	[35] = SC_CAPS(SC_IN_FIX(0, SC_TIMESPEC), SC_ERR_FIX(1, SC_TIMESPEC)), /* nanosleep */
	[42] = SC_CAPS(SC_IN_LEN(1, 2)), /* connect */
	[44] = SC_CAPS(SC_IN_BUF(1, 2), SC_IN_LEN(4, 5)), /* sendto */
	[45] = SC_CAPS(SC_OUT_BUF(1)), /* recvfrom */
	[49] = SC_CAPS(SC_IN_LEN(1, 2)), /* bind */
	[59] = SC_CAPS(SC_STR(0)), /* execve */
	[61] = SC_CAPS(SC_OUT_FIX(1, 4)), /* wait4 */
	[63] = SC_CAPS(SC_OUT_FIX(0, SC_UTSNAME)), /* uname */
	[76] = SC_CAPS(SC_STR(0)), /* truncate */
	[79] = SC_CAPS(SC_OUT_STR(0)), /* getcwd */
	[80] = SC_CAPS(SC_STR(0)), /* chdir */
	[82] = SC_CAPS(SC_STR(0), SC_STR(1)), /* rename */
	[83] = SC_CAPS(SC_STR(0)), /* mkdir */
	[84] = SC_CAPS(SC_STR(0)), /* rmdir */
	[85] = SC_CAPS(SC_STR(0)), /* creat */
	[87] = SC_CAPS(SC_STR(0)), /* unlink */
	[89] = SC_CAPS(SC_STR(0), SC_OUT_BUF(1)), /* readlink */
	[90] = SC_CAPS(SC_STR(0)), /* chmod */
	[137] = SC_CAPS(SC_STR(0)), /* statfs */
	[161] = SC_CAPS(SC_STR(0)), /* chroot */
	[197] = SC_CAPS(SC_STR(0), SC_STR(1)), /* removexattr */
	[198] = SC_CAPS(SC_STR(0), SC_STR(1)), /* lremovexattr */
	[199] = SC_CAPS(SC_STR(1)), /* fremovexattr */
	[228] = SC_CAPS(SC_OUT_FIX(1, SC_TIMESPEC)), /* clock_gettime */
	[230] = SC_CAPS(SC_IN_FIX(2, SC_TIMESPEC),
			SC_ERR_FIX(3, SC_TIMESPEC)), /* clock_nanosleep */
	[257] = SC_CAPS(SC_STR(1)), /* openat */
	[258] = SC_CAPS(SC_STR(1)), /* mkdirat */
	[262] = SC_CAPS(SC_STR(1), SC_OUT_FIX(2, SC_STAT)), /* newfstatat */
	[263] = SC_CAPS(SC_STR(1)), /* unlinkat */
	[264] = SC_CAPS(SC_STR(1), SC_STR(3)), /* renameat */
	[267] = SC_CAPS(SC_STR(1), SC_OUT_BUF(2)), /* readlinkat */
	[269] = SC_CAPS(SC_STR(1)), /* faccessat */
	[293] = SC_CAPS(SC_OUT_FIX(0, 8)), /* pipe2 */
	[302] = SC_CAPS(SC_IN_FIX(2, SC_RLIMIT), SC_OUT_FIX(3, SC_RLIMIT)), /* prlimit64 */
	[316] = SC_CAPS(SC_STR(1), SC_STR(3)), /* renameat2 */
	[318] = SC_CAPS(SC_OUT_BUF(0)), /* getrandom */
	[319] = SC_CAPS(SC_STR(0)), /* memfd_create */
	[322] = SC_CAPS(SC_STR(1)), /* execveat */
	[332] = SC_CAPS(SC_STR(1), SC_OUT_FIX(4, SC_STATX)), /* statx */
	[439] = SC_CAPS(SC_STR(1)), /* faccessat2 */
};

#endif /* __UTRACE_BPF_UPROBE_SC_H */
