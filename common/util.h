/* SPDX-License-Identifier: MIT */
/*
 * util.h - small helpers shared by the library, the agent and the CLI.
 * Header only; safe to include anywhere (no allocation, no I/O).
 */
#ifndef __UTRACE_UTIL_H
#define __UTRACE_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <sys/user.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define __unused __attribute__((unused))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/*
 * RET_NERRNO - turn a libc-style result (-1 and errno) into a negative errno.
 * Any other value is passed through unchanged.
 */
#define RET_NERRNO(expr)                        \
	({                                      \
		long __r = (long)(expr);        \
		__r == -1 ? -(long)errno : __r; \
	})

/* Free *p and set it to NULL; for use in cleanup paths. */
#define zfree(p)             \
	do {                 \
		free(*(p));  \
		*(p) = NULL; \
	} while (0)

/*
 * regs_arg - integer argument @n (0-5) of the x86-64 SysV call whose entry
 * registers are @r; 0 past the sixth (they are on the stack).
 */
static inline uint64_t regs_arg(const struct user_regs_struct *r, unsigned int n)
{
	switch (n) {
	case 0:
		return r->rdi;
	case 1:
		return r->rsi;
	case 2:
		return r->rdx;
	case 3:
		return r->rcx;
	case 4:
		return r->r8;
	case 5:
		return r->r9;
	default:
		return 0;
	}
}

#endif /* __UTRACE_UTIL_H */
