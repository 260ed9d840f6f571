/* SPDX-License-Identifier: MIT */
/* xlat/signal.h - signal names, sigaction flags, sigprocmask "how". */
#ifndef __UTRACE_XLAT_SIGNAL_H
#define __UTRACE_XLAT_SIGNAL_H

#include "decode.h"

/* Kernel numbering on x86-64; 32.. are real-time signals (sb_signame). */
static const char *const signal_names[] = {
	[1] = "SIGHUP",	    [2] = "SIGINT",   [3] = "SIGQUIT",	 [4] = "SIGILL",   [5] = "SIGTRAP",
	[6] = "SIGABRT",    [7] = "SIGBUS",   [8] = "SIGFPE",	 [9] = "SIGKILL",  [10] = "SIGUSR1",
	[11] = "SIGSEGV",   [12] = "SIGUSR2", [13] = "SIGPIPE",	 [14] = "SIGALRM", [15] = "SIGTERM",
	[16] = "SIGSTKFLT", [17] = "SIGCHLD", [18] = "SIGCONT",	 [19] = "SIGSTOP", [20] = "SIGTSTP",
	[21] = "SIGTTIN",   [22] = "SIGTTOU", [23] = "SIGURG",	 [24] = "SIGXCPU", [25] = "SIGXFSZ",
	[26] = "SIGVTALRM", [27] = "SIGPROF", [28] = "SIGWINCH", [29] = "SIGIO",   [30] = "SIGPWR",
	[31] = "SIGSYS",
};

static const struct xlat xlat_sa_flags[] = {
	XLAT_PAIR(0x00000001, "SA_NOCLDSTOP"),
	XLAT_PAIR(0x00000002, "SA_NOCLDWAIT"),
	XLAT_PAIR(0x00000004, "SA_SIGINFO"),
	XLAT_PAIR(0x00000400, "SA_UNSUPPORTED"),
	XLAT_PAIR(0x00000800, "SA_EXPOSE_TAGBITS"),
	XLAT_PAIR(0x04000000, "SA_RESTORER"),
	XLAT_PAIR(0x08000000, "SA_ONSTACK"),
	XLAT_PAIR(0x10000000, "SA_RESTART"),
	XLAT_PAIR(0x40000000, "SA_NODEFER"),
	XLAT_PAIR(0x80000000U, "SA_RESETHAND"),
	XLAT_END,
};

static const struct xlat xlat_sigprocmask_how[] = {
	XLAT_PAIR(0, "SIG_BLOCK"),
	XLAT_PAIR(1, "SIG_UNBLOCK"),
	XLAT_PAIR(2, "SIG_SETMASK"),
	XLAT_END,
};

static const struct xlat xlat_sigaltstack_flags[] = {
	XLAT_PAIR(1, "SS_ONSTACK"),
	XLAT_PAIR(2, "SS_DISABLE"),
	XLAT_PAIR(0x80000000U, "SS_AUTODISARM"),
	XLAT_END,
};

#endif /* __UTRACE_XLAT_SIGNAL_H */
