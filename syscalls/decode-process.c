/* SPDX-License-Identifier: MIT */
/*
 * decode-process.c - decoders of process, thread, time and misc syscalls:
 * clone, exec, exit, wait, prctl, futex, sleeps and clocks, rlimits.
 * Tracer process.
 */
#include <fcntl.h>
#include <string.h>

#include "decode.h"
#include "xlat/process.h"
#include "xlat/time.h"

/* CLONE_VM|...|SIGCHLD: flags, then the exit signal in the low byte. */
static void sb_clone_flags(struct sbuf *sb, uint64_t flags, bool with_signal)
{
	uint64_t f = with_signal ? flags & ~0xffULL : flags;
	int sig = with_signal ? (int)(flags & 0xff) : 0;

	if (f)
		sb_flags(sb, xlat_clone_flags, f, NULL);
	if (sig) {
		if (f)
			sb_puts(sb, "|");
		sb_signame(sb, sig);
	}
	if (!f && !sig)
		sb_puts(sb, "0");
}

/*
 * x86-64 clone(flags, stack, parent_tid, child_tid, tls); strace shows
 * child_stack first and the pointers only when a flag uses them.
 */
SYS_FUNC(clone)
{
	struct sbuf sb;
	uint64_t flags = c->args[0];
	int n = 0;

	arg_sb(c, n, &sb);
	sb_puts(&sb, "child_stack=");
	sb_ptr(&sb, c->args[1]);
	arg_sb(c, ++n, &sb);
	sb_puts(&sb, "flags=");
	sb_clone_flags(&sb, flags, true);
	if (flags & (0x00100000 | 0x00001000)) { /* CLONE_PARENT_SETTID|CLONE_PIDFD */
		arg_sb(c, ++n, &sb);
		sb_printf(&sb, "parent_tid=%#llx", (unsigned long long)c->args[2]);
	}
	if (flags & (0x01000000 | 0x00200000)) { /* CLONE_CHILD_SETTID|CLEARTID */
		arg_sb(c, ++n, &sb);
		sb_printf(&sb, "child_tidptr=%#llx", (unsigned long long)c->args[3]);
	}
	if (flags & 0x00080000) { /* CLONE_SETTLS */
		arg_sb(c, ++n, &sb);
		sb_printf(&sb, "tls=%#llx", (unsigned long long)c->args[4]);
	}
	show(c, n + 1);
}

SYS_FUNC(clone3)
{
	uint64_t ca[11] = { 0 }; /* struct clone_args, up to cgroup */
	uint64_t size = c->args[1];
	struct sbuf sb;

	arg_ulong(c, 1); /* size */
	if (size < 64 || umove(c, c->args[0], ca, size < sizeof(ca) ? size : sizeof(ca))) {
		arg_ptr(c, 0);
		return;
	}
	arg_sb(c, 0, &sb); /* cl_args */
	sb_puts(&sb, "{flags=");
	sb_clone_flags(&sb, ca[0], false);
	if (ca[0] & 0x00001000) /* CLONE_PIDFD */
		sb_printf(&sb, ", pidfd=%#llx", (unsigned long long)ca[1]);
	if (ca[0] & (0x01000000 | 0x00200000))
		sb_printf(&sb, ", child_tid=%#llx", (unsigned long long)ca[2]);
	if (ca[0] & 0x00100000)
		sb_printf(&sb, ", parent_tid=%#llx", (unsigned long long)ca[3]);
	sb_puts(&sb, ", exit_signal=");
	if (ca[4])
		sb_signame(&sb, (int)ca[4]);
	else
		sb_puts(&sb, "0");
	sb_puts(&sb, ", stack=");
	sb_ptr(&sb, ca[5]);
	sb_printf(&sb, ", stack_size=%#llx", (unsigned long long)ca[6]);
	if (ca[0] & 0x00080000)
		sb_printf(&sb, ", tls=%#llx", (unsigned long long)ca[7]);
	sb_puts(&sb, "}");
}

/* ["ls", "-la"]: at most -S elements, each cut at -S bytes. */
static void print_argv(struct sysdec_call *c, int i)
{
	struct sbuf sb;
	uint64_t addr = c->args[i];
	int k;

	arg_sb(c, i, &sb);
	if (!addr) {
		sb_puts(&sb, "NULL");
		return;
	}
	sb_puts(&sb, "[");
	for (k = 0; !sb.trunc; k++) {
		uint64_t p;

		if (umove(c, addr + k * 8, &p, sizeof(p))) {
			if (!k) {
				sb_init(&sb, c->out[i].text, sizeof(c->out[i].text));
				sb_ptr(&sb, addr);
				return;
			}
			sb_printf(&sb, ", %#llx", (unsigned long long)(addr + k * 8));
			break;
		}
		if (!p)
			break;
		if (k >= c->strsize) {
			sb_puts(&sb, ", ...");
			break;
		}
		if (k)
			sb_puts(&sb, ", ");
		sb_cstr(&sb, c, p, c->strsize);
	}
	sb_puts(&sb, "]");
}

/* 0x7ffd... / * 20 vars * / */
static void print_envp(struct sysdec_call *c, int i)
{
	uint64_t addr = c->args[i], p;
	int n = 0;

	if (!addr) {
		arg_printf(c, i, "NULL");
		return;
	}
	if (umove(c, addr, &p, sizeof(p))) {
		/* unreadable (or not read: -b kernel copies nothing): no count to tell */
		arg_printf(c, i, "%#llx", (unsigned long long)addr);
		return;
	}
	while (n < 100000 && !umove(c, addr + n * 8, &p, sizeof(p)) && p)
		n++;
	arg_printf(c, i, "%#llx /* %d var%s */", (unsigned long long)addr, n, n == 1 ? "" : "s");
}

SYS_FUNC(execve)
{
	arg_path(c, 0); /* pathname */
	print_argv(c, 1); /* argv */
	print_envp(c, 2); /* envp */
}

SYS_FUNC(execveat)
{
	arg_dirfd(c, 0); /* dirfd */
	arg_path(c, 1); /* pathname */
	print_argv(c, 2); /* argv */
	print_envp(c, 3); /* envp */
	arg_printf(c, 4, "%s",
		   c->args[4] & 0x1000 ? (c->args[4] & 0x100 ? "AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH" :
							       "AT_EMPTY_PATH") :
		   c->args[4] & 0x100  ? "AT_SYMLINK_NOFOLLOW" :
					 "0"); /* flags */
}

SYS_FUNC(exit)
{
	arg_int(c, 0); /* status */
	c->rfmt = RVAL_NONE;
}

/* [{WIFEXITED(s) && WEXITSTATUS(s) == 0}] */
static void print_wstatus(struct sysdec_call *c, int i)
{
	struct sbuf sb;
	int st;

	if (!c->args[i]) {
		arg_printf(c, i, "NULL");
		return;
	}
	if (c->failed || c->ret == 0 || umove(c, c->args[i], &st, sizeof(st))) {
		arg_ptr(c, i);
		return;
	}
	arg_sb(c, i, &sb);
	sb_puts(&sb, "[{");
	if ((st & 0x7f) == 0) {
		sb_printf(&sb, "WIFEXITED(s) && WEXITSTATUS(s) == %d", (st >> 8) & 0xff);
	} else if ((st & 0xff) == 0x7f) {
		sb_puts(&sb, "WIFSTOPPED(s) && WSTOPSIG(s) == ");
		sb_signame(&sb, (st >> 8) & 0xff);
		if (st >> 16)
			sb_printf(&sb, " && s >> 16 == %d", st >> 16);
	} else if (st == 0xffff) {
		sb_puts(&sb, "WIFCONTINUED(s)");
	} else {
		sb_puts(&sb, "WIFSIGNALED(s) && WTERMSIG(s) == ");
		sb_signame(&sb, st & 0x7f);
		if (st & 0x80)
			sb_puts(&sb, " && WCOREDUMP(s)");
	}
	sb_puts(&sb, "}]");
}

SYS_FUNC(wait4)
{
	if (!c->exiting) {
		arg_int(c, 0); /* pid */
		at_exit(c, 1); /* wstatus */
		arg_flags(c, 2, xlat_wait_options, NULL); /* options */
		arg_ptr(c, 3); /* rusage */
	} else {
		print_wstatus(c, 1);
	}
}

SYS_FUNC(pid_only)
{
	arg_int(c, 0); /* pid */
}

SYS_FUNC(prctl)
{
	unsigned int opt = (unsigned int)c->args[0];
	int i;

	if (c->exiting) {
		if (opt == 16) /* PR_GET_NAME */
			c->failed ? arg_ptr(c, 1) : arg_str(c, 1);
		return;
	}
	arg_xval(c, 0, xlat_prctl_options, "PR_???"); /* option */
	switch (opt) {
	case 15: /* PR_SET_NAME */
		arg_str(c, 1);
		show(c, 2);
		return;
	case 16: /* PR_GET_NAME */
		at_exit(c, 1);
		show(c, 2);
		return;
	case 3: /* PR_GET_DUMPABLE */
	case 39: /* PR_GET_NO_NEW_PRIVS */
	case 7: /* PR_GET_KEEPCAPS */
	case 21: /* PR_GET_SECCOMP */
	case 30: /* PR_GET_TIMERSLACK */
	case 37: /* PR_GET_CHILD_SUBREAPER */
		show(c, 1);
		return;
	case 1: /* PR_SET_PDEATHSIG */
		arg_signal(c, 1);
		show(c, 2);
		return;
	case 4: /* PR_SET_DUMPABLE */
	case 8: /* PR_SET_KEEPCAPS */
	case 36: /* PR_SET_CHILD_SUBREAPER */
	case 29: /* PR_SET_TIMERSLACK */
		arg_ulong(c, 1);
		show(c, 2);
		return;
	case 38: /* PR_SET_NO_NEW_PRIVS */
		for (i = 1; i < 5; i++)
			arg_ulong(c, i);
		return;
	default:
		for (i = 1; i < 5; i++)
			arg_hex(c, i);
	}
}

SYS_FUNC(arch_prctl)
{
	unsigned int code = (unsigned int)c->args[0];
	uint64_t v;

	if (c->exiting) {
		if (!c->failed && !umove(c, c->args[1], &v, sizeof(v)))
			arg_printf(c, 1, "[%#llx]", (unsigned long long)v);
		else
			arg_ptr(c, 1);
		return;
	}
	arg_xval(c, 0, xlat_arch_prctl_codes, "ARCH_???"); /* op */
	if (code == 0x1003 || code == 0x1004) /* ARCH_GET_FS/GS: addr */
		at_exit(c, 1);
	else
		arg_hex(c, 1);
}

SYS_FUNC(set_tid_address)
{
	arg_ptr(c, 0); /* tidptr */
}

SYS_FUNC(set_robust_list)
{
	arg_ptr(c, 0); /* head */
	arg_ulong(c, 1); /* len */
}

SYS_FUNC(rseq)
{
	arg_ptr(c, 0); /* rseq */
	arg_hex(c, 1); /* rseq_len */
	arg_int(c, 2); /* flags */
	arg_hex(c, 3); /* sig */
}

/* 8192*1024, RLIM64_INFINITY: strace's sprint_rlim64() */
static void sb_rlim(struct sbuf *sb, uint64_t v)
{
	if (sb_raw_begin(sb, v, "%llu"))
		return;
	if (v == ~0ULL)
		sb_puts(sb, "RLIM64_INFINITY");
	else if (v > 1024 && v % 1024 == 0)
		sb_printf(sb, "%llu*1024", (unsigned long long)(v / 1024));
	else
		sb_printf(sb, "%llu", (unsigned long long)v);
	sb_raw_end(sb);
}

static void print_rlimit(struct sysdec_call *c, int i)
{
	uint64_t r[2];
	struct sbuf sb;

	if (!c->args[i]) {
		arg_printf(c, i, "NULL");
		return;
	}
	if ((c->exiting && c->failed) || umove(c, c->args[i], r, sizeof(r))) {
		arg_ptr(c, i);
		return;
	}
	arg_sb(c, i, &sb);
	sb_puts(&sb, "{rlim_cur=");
	sb_rlim(&sb, r[0]);
	sb_puts(&sb, ", rlim_max=");
	sb_rlim(&sb, r[1]);
	sb_puts(&sb, "}");
}

SYS_FUNC(prlimit64)
{
	if (!c->exiting) {
		arg_int(c, 0); /* pid */
		arg_xval(c, 1, xlat_rlimits, "RLIMIT_???"); /* resource */
		print_rlimit(c, 2); /* new_limit */
		at_exit(c, 3); /* old_limit */
	} else {
		print_rlimit(c, 3);
	}
}

SYS_FUNC(getrandom)
{
	if (!c->exiting) {
		at_exit(c, 0); /* buf */
		arg_ulong(c, 1); /* buflen */
		arg_flags(c, 2, xlat_grnd_flags, NULL); /* flags */
	} else if (c->failed) {
		arg_ptr(c, 0);
	} else {
		arg_buf(c, 0, (uint64_t)c->ret, QUOTE_FORCE_HEX);
	}
}

/* [0 1 2 3]: the CPUs of a cpu_set_t of @len bytes. */
static void print_cpuset(struct sysdec_call *c, int i, uint64_t len)
{
	unsigned char set[128];
	struct sbuf sb;
	bool first = true;
	uint64_t b;

	if (len > sizeof(set))
		len = sizeof(set);
	if (umove(c, c->args[i], set, len)) {
		arg_ptr(c, i);
		return;
	}
	arg_sb(c, i, &sb);
	sb_puts(&sb, "[");
	for (b = 0; b < len * 8; b++) {
		if (set[b / 8] & (1U << (b % 8))) {
			sb_printf(&sb, "%s%llu", first ? "" : " ", (unsigned long long)b);
			first = false;
		}
	}
	sb_puts(&sb, "]");
}

SYS_FUNC(sched_getaffinity)
{
	if (!c->exiting) {
		arg_int(c, 0); /* pid */
		arg_ulong(c, 1); /* cpusetsize */
		at_exit(c, 2); /* mask */
	} else if (c->failed) {
		arg_ptr(c, 2);
	} else {
		print_cpuset(c, 2, (uint64_t)c->ret);
	}
}

SYS_FUNC(sched_setaffinity)
{
	arg_int(c, 0); /* pid */
	arg_ulong(c, 1); /* cpusetsize */
	print_cpuset(c, 2, c->args[1]); /* mask */
}

SYS_FUNC(uname)
{
	char u[6][65];
	static const char *const names[] = { "sysname", "nodename", "release",
					     "version", "machine",  "domainname" };
	struct sbuf sb;
	int k;

	if (!c->exiting) {
		at_exit(c, 0); /* buf */
		return;
	}
	if (c->failed || umove(c, c->args[0], u, sizeof(u))) {
		arg_ptr(c, 0);
		return;
	}
	arg_sb(c, 0, &sb);
	sb_puts(&sb, "{");
	for (k = 0; k < 2; k++) { /* strace's non-verbose view */
		u[k][64] = '\0';
		sb_printf(&sb, "%s%s=", k ? ", " : "", names[k]);
		sb_quote(&sb, (unsigned char *)u[k], strlen(u[k]), 0);
	}
	sb_puts(&sb, ", ...}");
}

/*
 * futex(uaddr, op, val, timeout|val2, uaddr2, val3): strace shows only the
 * arguments the operation uses.
 */
SYS_FUNC(futex)
{
	unsigned int op = (unsigned int)c->args[1];
	unsigned int cmd = op & 127;
	struct sbuf sb;

	arg_ptr(c, 0); /* uaddr */
	arg_sb(c, 1, &sb); /* futex_op */
	if (!sb_raw_begin(&sb, op, "%#llx")) {
		sb_xval(&sb, xlat_futex_cmds, cmd, "FUTEX_???");
		if (op & 128)
			sb_puts(&sb, "_PRIVATE");
		if (op & 256)
			sb_puts(&sb, "|FUTEX_CLOCK_REALTIME");
		sb_raw_end(&sb);
	}
	arg_int(c, 2); /* val */
	switch (cmd) {
	case 0: /* FUTEX_WAIT */
	case 6: /* FUTEX_LOCK_PI */
	case 13: /* FUTEX_LOCK_PI2 */
		arg_sb(c, 3, &sb);
		sb_timespec(&sb, c, c->args[3]);
		show(c, 4);
		break;
	case 9: /* FUTEX_WAIT_BITSET */
		arg_sb(c, 3, &sb);
		sb_timespec(&sb, c, c->args[3]);
		if ((uint32_t)c->args[5] == ~0U)
			arg_printf(c, 4, "FUTEX_BITSET_MATCH_ANY");
		else
			arg_printf(c, 4, "%#x", (uint32_t)c->args[5]);
		show(c, 5);
		break;
	case 10: /* FUTEX_WAKE_BITSET */
		arg_ptr(c, 3);
		if ((uint32_t)c->args[5] == ~0U)
			arg_printf(c, 4, "FUTEX_BITSET_MATCH_ANY");
		else
			arg_printf(c, 4, "%#x", (uint32_t)c->args[5]);
		show(c, 5);
		break;
	case 1: /* FUTEX_WAKE */
	case 7: /* FUTEX_UNLOCK_PI */
	case 8: /* FUTEX_TRYLOCK_PI */
		show(c, 3);
		break;
	case 3: /* FUTEX_REQUEUE */
		arg_int(c, 3);
		arg_ptr(c, 4);
		show(c, 5);
		break;
	default:
		arg_hex(c, 3);
		arg_ptr(c, 4);
		arg_hex(c, 5);
		break;
	}
}

/* The remaining time is shown only when the sleep was interrupted. */
static void print_rem(struct sysdec_call *c, int i)
{
	struct sbuf sb;

	if (c->failed && c->args[i])
		sb_timespec(arg_sb(c, i, &sb), c, c->args[i]);
	else
		arg_ptr(c, i);
}

SYS_FUNC(nanosleep)
{
	struct sbuf sb;

	if (!c->exiting) {
		sb_timespec(arg_sb(c, 0, &sb), c, c->args[0]); /* req */
		at_exit(c, 1); /* rem */
	} else {
		print_rem(c, 1);
	}
}

SYS_FUNC(clock_nanosleep)
{
	struct sbuf sb;

	if (!c->exiting) {
		arg_xval(c, 0, xlat_clocks, NULL); /* clockid */
		arg_flags(c, 1, xlat_timer_flags, NULL); /* flags */
		sb_timespec(arg_sb(c, 2, &sb), c, c->args[2]); /* request */
		at_exit(c, 3); /* remain */
	} else {
		print_rem(c, 3);
	}
}

SYS_FUNC(clock_gettime)
{
	struct sbuf sb;

	if (!c->exiting) {
		arg_xval(c, 0, xlat_clocks, NULL); /* clockid */
		at_exit(c, 1); /* tp */
	} else if (c->failed) {
		arg_ptr(c, 1);
	} else {
		sb_timespec(arg_sb(c, 1, &sb), c, c->args[1]);
	}
}

static const struct xlat xlat_itimers[] = {
	XLAT_PAIR(0, "ITIMER_REAL"),
	XLAT_PAIR(1, "ITIMER_VIRTUAL"),
	XLAT_PAIR(2, "ITIMER_PROF"),
	XLAT_END,
};

/* {it_interval={tv_sec=0, tv_usec=0}, it_value={tv_sec=0, tv_usec=150000}} */
static void print_itimerval(struct sysdec_call *c, int i)
{
	int64_t v[4];
	struct sbuf sb;

	if (!c->args[i]) {
		arg_printf(c, i, "NULL");
		return;
	}
	if ((c->exiting && c->failed) || umove(c, c->args[i], v, sizeof(v))) {
		arg_ptr(c, i);
		return;
	}
	arg_sb(c, i, &sb);
	sb_printf(&sb,
		  "{it_interval={tv_sec=%lld, tv_usec=%lld}, it_value={tv_sec=%lld, "
		  "tv_usec=%lld}}",
		  (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3]);
}

SYS_FUNC(getitimer)
{
	if (!c->exiting) {
		arg_xval(c, 0, xlat_itimers, NULL); /* which */
		at_exit(c, 1); /* curr_value */
	} else {
		print_itimerval(c, 1);
	}
}

SYS_FUNC(setitimer)
{
	if (!c->exiting) {
		arg_xval(c, 0, xlat_itimers, NULL); /* which */
		print_itimerval(c, 1); /* new_value */
		at_exit(c, 2); /* old_value */
	} else {
		print_itimerval(c, 2);
	}
}

/* [0, 4, 27]: @n gid_t values at @addr (strace shows at most -S of them). */
static void print_gids(struct sysdec_call *c, int i, uint64_t addr, long n)
{
	struct sbuf sb;
	long k;

	if (!addr) {
		arg_printf(c, i, "NULL");
		return;
	}
	arg_sb(c, i, &sb);
	sb_puts(&sb, "[");
	for (k = 0; k < n && !sb.trunc; k++) {
		uint32_t gid;

		if (k >= c->strsize) {
			sb_puts(&sb, ", ...");
			break;
		}
		if (umove(c, addr + k * 4, &gid, sizeof(gid))) {
			sb_init(&sb, c->out[i].text, sizeof(c->out[i].text));
			sb_ptr(&sb, addr);
			return;
		}
		sb_printf(&sb, "%s%u", k ? ", " : "", gid);
	}
	sb_puts(&sb, "]");
}

SYS_FUNC(getgroups)
{
	if (!c->exiting) {
		arg_int(c, 0); /* size */
		at_exit(c, 1); /* list */
	} else if (c->failed) {
		arg_ptr(c, 1);
	} else {
		/* size 0 asks for the count only: nothing was stored */
		print_gids(c, 1, c->args[1], (int)c->args[0] ? c->ret : 0);
	}
}

SYS_FUNC(setgroups)
{
	arg_int(c, 0); /* size */
	print_gids(c, 1, c->args[1], (int)c->args[0]); /* list */
}

/* pidfd_open(pid, flags): the flags are PIDFD_NONBLOCK (O_NONBLOCK) or 0 */
SYS_FUNC(pidfd_open)
{
	arg_int(c, 0); /* pid */
	if (!c->args[1])
		arg_printf(c, 1, "0");
	else if (c->args[1] == O_NONBLOCK)
		arg_printf(c, 1, "PIDFD_NONBLOCK");
	else
		arg_printf(c, 1, "%#llx", (unsigned long long)c->args[1]); /* flags */
}
