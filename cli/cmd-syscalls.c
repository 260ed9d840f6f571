/* SPDX-License-Identifier: MIT */
/*
 * cmd-syscalls.c - utrace -s: system-call tracing, strace style, on the
 * engine layer (include/utrace/session.h). Tracer process.
 *
 * How syscalls are intercepted
 * ----------------------------
 * Launch mode (-- COMMAND) uses a seccomp-bpf filter, as strace
 * --seccomp-bpf does: the command, between its fork and its execve (the
 * engine's pre-exec hook), installs a classic BPF program that returns
 * SECCOMP_RET_TRACE for the selected syscall numbers and SECCOMP_RET_ALLOW
 * for everything else. Untraced syscalls then never stop the tracee; each
 * traced one costs a seccomp stop plus one syscall-exit stop.
 *
 * The filter cannot be removed. Once no tracer is attached, every
 * SECCOMP_RET_TRACE syscall fails with ENOSYS, so a process carrying the
 * filter must never run on untraced. Hence, in seccomp mode:
 *   - the launch sets PTRACE_O_EXITKILL (kill_on_exit): if utrace dies
 *     (even by SIGKILL) the kernel kills the command rather than leave it
 *     broken;
 *   - children that are not followed (no -F) stay silently traced by the
 *     session instead of being detached;
 *   - Ctrl-C ends the trace and the command is killed, like strace
 *     --seccomp-bpf (which implies --kill-on-exit).
 * When the user asks for a detach that must leave the command running
 * (launch mode with -d SEC), utrace does not install the filter and traces
 * with PTRACE_SYSCALL stops instead, which it can leave cleanly. Nor does
 * it when every syscall is selected (plain -s): the filter would stop the
 * same syscalls as PTRACE_SYSCALL does, and only add its own cost to each.
 *
 * Attach mode (-p PID) always uses PTRACE_SYSCALL stops (a filter can only
 * be installed by the task itself); the -s SET then only filters what is
 * shown. -d SEC and SIGINT/SIGTERM detach every thread; the target runs on.
 *
 * Output
 * ------
 * A syscall is printed as one line when it returns (strace would print
 * "<unfinished ...>"/"resumed" pairs when tracees interleave; a single line
 * per call is easier to read and to parse). Syscalls that never return
 * (exit_group, or a task killed inside one) end with " = ?". With -c
 * nothing is decoded: only counts and times are kept, and strace's -c table
 * is printed at the end (times are wall-clock between the entry and exit
 * stops, like strace -c -w).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "utrace/session.h"
#include "cli.h"
#include "output.h"
#include "sysdec.h"

/* Per-thread state: the syscall in progress. */
struct task {
	pid_t tid;
	pid_t pid;
	bool in_syscall;
	uint64_t entry_real_ns; /* timestamp printed */
	uint64_t entry_mono_ns; /* for durations */
	struct sysdec_call call;
	struct task *next; /* hash chain */
};

struct sc_stats {
	uint64_t calls;
	uint64_t errors;
	uint64_t total_ns;
	uint64_t min_ns;
	uint64_t max_ns;
};

#define TASK_HASH 1024

struct tracer {
	struct cli_opts *opts;
	struct utrace_session *s;
	struct output out;
	struct sysdec_set set;
	bool seccomp;
	int nr_tasks; /* live threads in tasks[], for the [pid] prefix */
	struct task *tasks[TASK_HASH];
	struct sc_stats stats[SYSDEC_NR_MAX];
	pid_t main_pid; /* launched command, or the first -p pid */
	/*
	 * The engine launches with execvp(): until the command's first
	 * successful execve, the failed attempts along $PATH are the
	 * launcher's, not the command's. strace resolves the path in the
	 * tracer and never shows them; neither do we.
	 */
	bool launch_pending;
	/* --inject NAME=ERRNO[@EVERY]: fail syscall NAME with -ERRNO, strace -e inject style */
	struct sc_inject {
		long nr;
		int err;
		uint64_t every, hits;
	} injects[64];
	int nr_injects;
	struct sysdec_set filter_set; /* set plus injected syscalls: what stops */
	bool exec_seen; /* launch mode: the command's execve succeeded */
};

static struct tracer *the_tracer; /* for the signal handlers */
static volatile sig_atomic_t last_signal; /* SIGINT/SIGTERM/SIGHUP/SIGALRM received */

static struct task *task_get(struct tracer *t, pid_t tid, pid_t pid, bool create)
{
	struct task **pp = &t->tasks[(unsigned int)tid % TASK_HASH];
	struct task *tk;

	for (tk = *pp; tk; tk = tk->next)
		if (tk->tid == tid)
			return tk;
	if (!create)
		return NULL;
	tk = calloc(1, sizeof(*tk));
	if (!tk)
		return NULL;
	tk->tid = tid;
	tk->pid = pid;
	tk->call.strsize = t->opts->strsize;
	tk->next = *pp;
	*pp = tk;
	t->nr_tasks++;
	return tk;
}

static void task_free(struct tracer *t, pid_t tid)
{
	struct task **pp = &t->tasks[(unsigned int)tid % TASK_HASH];
	struct task *tk;

	for (; (tk = *pp); pp = &tk->next) {
		if (tk->tid == tid) {
			*pp = tk->next;
			sysdec_call_clear(&tk->call);
			free(tk);
			t->nr_tasks--;
			return;
		}
	}
}

static ssize_t read_tracee(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return utrace_thread__read_mem(ctx, addr, buf, len);
}

static bool show_pid(struct tracer *t)
{
	return t->nr_tasks > 1;
}

/* -1 for failures (errno says which), the raw value otherwise. */
static long user_ret(const struct sysdec_call *c)
{
	return c->failed ? -1 : c->ret;
}

static void print_json_args(FILE *f, const struct sysdec_call *c)
{
	int i;

	fputs(", \"args\": [", f);
	for (i = 0; i < c->nr_out; i++) {
		const struct sysdec_arg *a = &c->out[i];

		if (i)
			fputs(", ", f);
		if (a->kind == SYSDEC_INT)
			fputs(a->text, f);
		else if (a->kind == SYSDEC_STR && a->raw)
			json_str(f, a->raw, a->raw_len);
		else
			json_str(f, a->text, strlen(a->text));
	}
	fputc(']', f);
}

/* One finished (or never-finishing) syscall. */
static void print_call(struct tracer *t, struct task *tk, bool finished, uint64_t dur_ns)
{
	struct output *o = &t->out;
	const struct sysdec_call *c = &tk->call;
	const char *name = sysdec_name(c->nr);
	char line[8192];

	if (o->format == CLI_FMT_JSON) {
		char unk[32];

		if (!name) {
			snprintf(unk, sizeof(unk), "syscall_%#lx", (unsigned long)c->nr);
			name = unk;
		}
		fprintf(o->f,
			"{\"ts_ns\": %llu, \"pid\": %d, \"tid\": %d, \"type\": \"syscall\", "
			"\"probe\": \"syscall:%s\", \"name\": \"%s\"",
			(unsigned long long)tk->entry_real_ns, (int)tk->pid, (int)tk->tid, name,
			name);
		print_json_args(o->f, c);
		if (finished) {
			fprintf(o->f, ", \"ret\": %ld", user_ret(c));
			if (c->failed)
				fprintf(o->f, ", \"errno\": \"%s\"", c->errname ? c->errname : "?");
			fprintf(o->f, ", \"dur_ns\": %llu}\n", (unsigned long long)dur_ns);
		} else {
			fputs(", \"ret\": null}\n", o->f);
		}
		return;
	}
	output_prefix(o, tk->entry_real_ns, tk->tid, show_pid(t));
	sysdec_format(c, finished, line, sizeof(line));
	fputs(line, o->f);
	if (finished)
		output_duration(o, dur_ns);
	fputc('\n', o->f);
}

static void count_call(struct tracer *t, long nr, bool failed, uint64_t dur_ns)
{
	struct sc_stats *st;

	if (nr < 0 || nr >= SYSDEC_NR_MAX)
		return;
	st = &t->stats[nr];
	if (!st->calls || dur_ns < st->min_ns)
		st->min_ns = dur_ns;
	if (dur_ns > st->max_ns)
		st->max_ns = dur_ns;
	st->calls++;
	st->errors += failed;
	st->total_ns += dur_ns;
}

/* exit and exit_group never reach their exit stop: print them at entry. */
static bool never_returns(long nr)
{
	return nr == SYS_exit || nr == SYS_exit_group;
}

static int on_syscall_entry(struct utrace_engine *e, struct utrace_thread *th,
			    struct utrace_syscall *sc)
{
	struct tracer *t = utrace_engine__ctx(e);
	struct task *tk;
	int i;

	/* created at first sight: the count of live tasks drives the [pid] prefix */
	tk = task_get(t, utrace_thread__tid(th), utrace_thread__pid(th), true);
	for (i = 0; i < t->nr_injects; i++) {
		struct sc_inject *in = &t->injects[i];

		if (in->nr == sc->nr && t->exec_seen && ++in->hits % in->every == 0) {
			utrace_thread__skip_syscall(th, -in->err);
			break;
		}
	}
	if (!tk || !sysdec_set_has(&t->set, sc->nr))
		return UTRACE_RESUME;
	tk->in_syscall = true;
	tk->call.nr = sc->nr;
	tk->entry_mono_ns = now_mono_ns();
	if (t->opts->summary)
		return UTRACE_RESUME;
	tk->entry_real_ns =
		t->opts->timestamps || t->out.format == CLI_FMT_JSON ? now_realtime_ns() : 0;
	for (i = 0; i < 6; i++)
		tk->call.args[i] = sc->args[i];
	tk->call.sp = sc->stack_pointer;
	tk->call.read = read_tracee;
	tk->call.ctx = th;
	sysdec_decode_entry(&tk->call);
	if (never_returns(sc->nr)) {
		print_call(t, tk, false, 0);
		tk->in_syscall = false;
	}
	return UTRACE_RESUME;
}

static int on_syscall_exit(struct utrace_engine *e, struct utrace_thread *th,
			   struct utrace_syscall *sc)
{
	struct tracer *t = utrace_engine__ctx(e);
	struct task *tk = task_get(t, utrace_thread__tid(th), 0, false);
	uint64_t dur;

	if (!tk || !tk->in_syscall)
		return UTRACE_RESUME; /* entry not seen (attached mid-call) or not selected */
	tk->in_syscall = false;
	if (t->launch_pending && tk->pid == t->main_pid && tk->call.nr == SYS_execve) {
		if (sysdec_is_error(SYS_execve, sc->ret)) {
			sysdec_call_clear(&tk->call);
			return UTRACE_RESUME;
		}
		t->launch_pending = false;
	}
	dur = now_mono_ns() - tk->entry_mono_ns;
	if (t->opts->summary) {
		count_call(t, tk->call.nr, sysdec_is_error(tk->call.nr, sc->ret) != 0, dur);
		return UTRACE_RESUME;
	}
	tk->call.ctx = th;
	sysdec_decode_exit(&tk->call, sc->ret);
	print_call(t, tk, true, dur);
	sysdec_call_clear(&tk->call);
	return UTRACE_RESUME;
}

static int on_attach(struct utrace_engine *e, struct utrace_thread *th)
{
	struct tracer *t = utrace_engine__ctx(e);

	task_get(t, utrace_thread__tid(th), utrace_thread__pid(th), true);
	return UTRACE_RESUME;
}

/* A non-leader thread called execve: its state moves to the leader's tid. */
static int on_task_exec(struct utrace_engine *e, struct utrace_thread *th, pid_t former_tid)
{
	struct tracer *t = utrace_engine__ctx(e);
	pid_t tid = utrace_thread__tid(th);
	struct task *old, *tk;

	t->exec_seen = true; /* the command runs: injections start */
	if (former_tid == tid)
		return UTRACE_RESUME;
	old = task_get(t, former_tid, 0, false);
	tk = task_get(t, tid, utrace_thread__pid(th), true);
	if (old && tk) {
		sysdec_call_clear(&tk->call);
		tk->in_syscall = old->in_syscall;
		tk->entry_real_ns = old->entry_real_ns;
		tk->entry_mono_ns = old->entry_mono_ns;
		tk->call = old->call;
		memset(&old->call, 0, sizeof(old->call));
		task_free(t, former_tid);
	}
	return UTRACE_RESUME;
}

static int on_task_exit(struct utrace_engine *e, struct utrace_thread *th, int status)
{
	struct tracer *t = utrace_engine__ctx(e);
	pid_t tid = utrace_thread__tid(th), pid = utrace_thread__pid(th);
	struct task *tk = task_get(t, tid, pid, false);
	struct output *o = &t->out;

	if (tk && tk->in_syscall && !t->opts->summary)
		print_call(t, tk, false, 0); /* killed inside a syscall */
	if (tid == pid && !t->opts->summary && o->format == CLI_FMT_TEXT) {
		output_prefix(o, t->opts->timestamps ? now_realtime_ns() : 0, tid, show_pid(t));
		if (WIFSIGNALED(status))
			fprintf(o->f, "+++ killed by %s%s +++\n",
				sysdec_signal_name(WTERMSIG(status)) ?
					sysdec_signal_name(WTERMSIG(status)) :
					"?",
				WCOREDUMP(status) ? " (core dumped)" : "");
		else
			fprintf(o->f, "+++ exited with %d +++\n", WEXITSTATUS(status));
	}
	task_free(t, tid);
	return UTRACE_RESUME;
}

static int on_signal(struct utrace_engine *e, struct utrace_thread *th, siginfo_t *si)
{
	struct tracer *t = utrace_engine__ctx(e);
	struct output *o = &t->out;
	const char *name = sysdec_signal_name(si->si_signo);

	if (t->opts->summary || o->format != CLI_FMT_TEXT)
		return UTRACE_RESUME;
	output_prefix(o, t->opts->timestamps ? now_realtime_ns() : 0, utrace_thread__tid(th),
		      show_pid(t));
	if (!name)
		name = "?";
	if (si->si_code == SI_USER || si->si_code == SI_TKILL)
		fprintf(o->f, "--- %s {si_signo=%s, si_code=%s, si_pid=%d, si_uid=%u} ---\n", name,
			name, si->si_code == SI_USER ? "SI_USER" : "SI_TKILL", (int)si->si_pid,
			(unsigned int)si->si_uid);
	else if (si->si_signo == SIGCHLD && si->si_code >= CLD_EXITED &&
		 si->si_code <= CLD_CONTINUED) {
		static const char *const cld[] = { "",
						   "CLD_EXITED",
						   "CLD_KILLED",
						   "CLD_DUMPED",
						   "CLD_TRAPPED",
						   "CLD_STOPPED",
						   "CLD_CONTINUED" };
		const char *st =
			si->si_code == CLD_EXITED ? NULL : sysdec_signal_name(si->si_status);
		char num[16];

		if (!st) {
			snprintf(num, sizeof(num), "%d", si->si_status);
			st = num;
		}
		fprintf(o->f,
			"--- %s {si_signo=%s, si_code=%s, si_pid=%d, si_uid=%u, si_status=%s, "
			"si_utime=%ld, si_stime=%ld} ---\n",
			name, name, cld[si->si_code], (int)si->si_pid, (unsigned int)si->si_uid, st,
			(long)si->si_utime, (long)si->si_stime);
	} else if (si->si_code == SI_KERNEL)
		fprintf(o->f, "--- %s {si_signo=%s, si_code=SI_KERNEL} ---\n", name, name);
	else
		fprintf(o->f, "--- %s {si_signo=%s, si_code=%d} ---\n", name, name, si->si_code);
	return UTRACE_RESUME;
}

/*
 * The seccomp filter: for each run [lo, hi] of selected syscall numbers, in
 * ascending order,
 *	jgt hi  -> next run          (jt = 3)
 *	jge lo  -> RET_TRACE : RET_ALLOW
 * with the returns inline so that every jump is short whatever the number
 * of runs (cBPF jumps are 8-bit). A non-x86-64 syscall (int 0x80 from a
 * 64-bit process) or an x32 one (bit 30) is allowed: the decoders only
 * know the x86-64 table.
 */
struct filter {
	struct sock_filter insns[4 + 4 * SYSDEC_NR_MAX / 2 + 2];
	struct sock_fprog prog;
};

static void build_filter(struct filter *f, const struct sysdec_set *set)
{
	struct sock_filter *p = f->insns;
	long nr = 0;

	*p++ = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					    offsetof(struct seccomp_data, arch));
	*p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	*p++ = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	*p++ = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					    offsetof(struct seccomp_data, nr));
	while (nr < SYSDEC_NR_MAX) {
		long lo, hi;

		if (!sysdec_set_has(set, nr)) {
			nr++;
			continue;
		}
		lo = nr;
		while (nr < SYSDEC_NR_MAX && sysdec_set_has(set, nr))
			nr++;
		hi = nr - 1;
		*p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, hi, 3, 0);
		*p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lo, 0, 1);
		*p++ = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE);
		*p++ = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	*p++ = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f->prog.len = (unsigned short)(p - f->insns);
	f->prog.filter = f->insns;
}

/*
 * Runs in the forked child just before execve: async-signal-safe only.
 * Without CAP_SYS_ADMIN the kernel wants no_new_privs first; it is only set
 * when needed, since it changes how setuid programs run.
 */
static int install_filter(void *ctx)
{
	struct filter *f = ctx;

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &f->prog) == 0)
		return 0;
	if (errno != EACCES)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &f->prog) ? -1 : 0;
}

static bool set_is_full(const struct sysdec_set *set)
{
	long nr;

	for (nr = 0; nr < SYSDEC_NR_MAX; nr++)
		if (sysdec_name(nr) && !sysdec_set_has(set, nr))
			return false;
	return true;
}

static void on_interrupt(int sig)
{
	last_signal = sig;
	if (the_tracer && the_tracer->s)
		utrace_session__interrupt(the_tracer->s);
}

static int cmp_time(const void *a, const void *b, void *ctx)
{
	const struct sc_stats *st = ctx;
	long x = *(const long *)a, y = *(const long *)b;

	if (st[x].total_ns != st[y].total_ns)
		return st[x].total_ns < st[y].total_ns ? 1 : -1;
	return x < y ? -1 : x > y;
}

/* strace -c's table, sorted by time; errors left blank when 0, like strace. */
static void print_summary(struct tracer *t)
{
	FILE *f = t->out.f;
	long order[SYSDEC_NR_MAX], n = 0, nr, i;
	uint64_t total_ns = 0, calls = 0, errors = 0;
	const char *dashes =
		"------ ----------- ----------- --------- --------- ----------------\n";

	for (nr = 0; nr < SYSDEC_NR_MAX; nr++) {
		if (!t->stats[nr].calls)
			continue;
		order[n++] = nr;
		total_ns += t->stats[nr].total_ns;
		calls += t->stats[nr].calls;
		errors += t->stats[nr].errors;
	}
	qsort_r(order, n, sizeof(order[0]), cmp_time, t->stats);
	if (t->out.format == CLI_FMT_JSON) {
		uint64_t ts = now_realtime_ns();

		for (i = 0; i < n; i++) {
			const struct sc_stats *st = &t->stats[order[i]];
			const char *name = sysdec_name(order[i]);

			fprintf(f,
				"{\"ts_ns\": %llu, \"pid\": %d, \"tid\": %d, \"type\": \"summary\", "
				"\"probe\": \"syscall:%s\", \"name\": \"%s\", \"calls\": %llu, "
				"\"errors\": %llu, \"total_ns\": %llu, \"min_ns\": %llu, "
				"\"max_ns\": %llu}\n",
				(unsigned long long)ts, (int)t->main_pid, (int)t->main_pid, name,
				name, (unsigned long long)st->calls, (unsigned long long)st->errors,
				(unsigned long long)st->total_ns, (unsigned long long)st->min_ns,
				(unsigned long long)st->max_ns);
		}
		return;
	}
	fprintf(f, "%6.6s %11.11s %11.11s %9.9s %9.9s %s\n", "% time", "seconds", "usecs/call",
		"calls", "errors", "syscall");
	fputs(dashes, f);
	for (i = 0; i < n; i++) {
		const struct sc_stats *st = &t->stats[order[i]];
		char err[24] = "";

		if (st->errors)
			snprintf(err, sizeof(err), "%llu", (unsigned long long)st->errors);
		fprintf(f, "%6.2f %11.6f %11llu %9llu %9s %s\n",
			total_ns ? 100.0 * st->total_ns / total_ns : 0.0, st->total_ns / 1e9,
			(unsigned long long)(st->total_ns / 1000 / st->calls),
			(unsigned long long)st->calls, err, sysdec_name(order[i]));
	}
	fputs(dashes, f);
	{
		char err[24] = "";

		if (errors)
			snprintf(err, sizeof(err), "%llu", (unsigned long long)errors);
		fprintf(f, "%6.2f %11.6f %11llu %9llu %9s %s\n", 100.0, total_ns / 1e9,
			(unsigned long long)(calls ? total_ns / 1000 / calls : 0),
			(unsigned long long)calls, err, "total");
	}
}

/*
 * The event loop: utrace_session__run() with no timeout takes the library's
 * fast path (SIGCHLD blocked in this thread and taken with sigtimedwait(),
 * no handler, no pipe: see run_fast() in lib/session.c). SIGINT, SIGTERM,
 * SIGHUP and the -d timer (SIGALRM) are not blocked: their handler calls
 * utrace_session__interrupt(), which wakes run() even while it sleeps and
 * is reported even when events never stop coming.
 * Return: 0 when done or interrupted (*interrupted says which); negative
 * error code from the session otherwise.
 */
static int event_loop(struct tracer *t, bool *interrupted)
{
	for (;;) {
		int r = utrace_session__run(t->s, -1);

		switch (r) {
		case UTRACE_RUN_BREAK:
			break;
		case UTRACE_RUN_DONE:
			return 0;
		case UTRACE_RUN_INTERRUPTED:
		case UTRACE_RUN_TIMEOUT:
			*interrupted = true;
			return 0;
		default:
			return r < 0 ? r : -EINVAL;
		}
	}
}

/*
 * --inject NAME=ERRNO[@EVERY]: ERRNO is a name (ENOENT) or a number; the
 * syscall does not run and returns -ERRNO (the program sees -1 and errno),
 * every EVERY-th call (default: every call). Injected syscalls stop the
 * tracee even when -s does not show them.
 */
static int parse_injects(struct tracer *t)
{
	int i;

	for (i = 0; i < t->opts->nr_injects; i++) {
		const char *arg = t->opts->injects[i], *eq = strrchr(arg, '=');
		struct sc_inject *in = &t->injects[t->nr_injects];
		char name[64], val[64], *at, *end;
		int e;

		if (t->nr_injects == (int)(sizeof(t->injects) / sizeof(t->injects[0]))) {
			cli_error("too many --inject options");
			return -E2BIG;
		}
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : 0, arg);
		snprintf(val, sizeof(val), "%s", eq ? eq + 1 : "");
		in->every = 1;
		at = strchr(val, '@');
		if (at) {
			*at++ = '\0';
			if (cli_parse_every(at, &in->every)) {
				cli_error("bad --inject '%s': @EVERY must be a positive integer",
					  arg);
				return -EINVAL;
			}
		}
		in->nr = sysdec_nr(name);
		if (in->nr < 0) {
			cli_error("bad --inject '%s': '%s' is not a syscall name", arg, name);
			return -EINVAL;
		}
		in->err = 0;
		for (e = 1; e < 4096 && !in->err; e++) {
			const char *n = sysdec_errno_name(e);

			if (n && !strcmp(n, val))
				in->err = e;
		}
		if (!in->err) {
			errno = 0;
			in->err = (int)strtol(val, &end, 10);
			if (errno || end == val || *end || in->err <= 0 || in->err >= 4096) {
				cli_error(
					"bad --inject '%s': VALUE must be an errno name (ENOENT) or "
					"number for a syscall",
					arg);
				return -EINVAL;
			}
		}
		t->filter_set.bits[in->nr / 64] |= 1ULL << (in->nr % 64);
		t->nr_injects++;
	}
	return 0;
}

int cmd_syscalls(struct cli_opts *opts)
{
	static struct tracer tr; /* large (stats, hash); one per process */
	struct tracer *t = &tr;
	struct utrace_engine_ops ops = {
		.sz = sizeof(ops),
		.syscall_entry = on_syscall_entry,
		.syscall_exit = on_syscall_exit,
		.attach = on_attach,
		.exec = on_task_exec,
		.exit = on_task_exit,
		.signal = on_signal,
	};
	struct utrace_session_opts sopts = { .sz = sizeof(sopts) };
	struct utrace_launch_opts lopts = { .sz = sizeof(lopts) };
	struct filter *filter = NULL;
	struct sigaction sa = { .sa_handler = on_interrupt };
	char errbuf[256];
	bool launched = opts->argc > 0, interrupted = false;
	int ret = EXIT_TRACE, err, r;

	t->opts = opts;
	if (opts->format == CLI_FMT_CHROME) {
		cli_error("--format chrome is not supported with -s yet; use text or json");
		return EXIT_USAGE;
	}
	if (sysdec_parse_set(opts->syscalls ? opts->syscall_set : "none", &t->set, errbuf,
			     sizeof(errbuf))) {
		cli_error("%s", errbuf);
		return EXIT_USAGE;
	}
	t->filter_set = t->set;
	if (parse_injects(t))
		return EXIT_USAGE;
	err = output_open(&t->out, opts);
	if (err) {
		cli_error("cannot open output file '%s': %s", opts->output, strerror(-err));
		return EXIT_USAGE;
	}

	/*
	 * seccomp only where it can never leave a filtered process untraced
	 * (not with -d), and where it saves stops: with every syscall
	 * selected it would only add the filter's cost to each one.
	 */
	t->seccomp = launched && opts->duration == 0 && !set_is_full(&t->set) &&
		     !getenv("UTRACE_NO_SECCOMP");
	sopts.follow_forks = opts->follow_forks;
	sopts.syscall_mode = t->seccomp ? UTRACE_SYSCALLS_SECCOMP : UTRACE_SYSCALLS_PTRACE;
	t->s = utrace_session__new(&sopts);
	if (!t->s) {
		cli_lib_error("cannot create a tracing session", -errno);
		goto out;
	}
	the_tracer = t;
	if (!utrace_engine__attach(t->s, &ops,
				   UTRACE_EV_SYSCALL | UTRACE_EV_ATTACH | UTRACE_EV_EXEC |
					   UTRACE_EV_EXIT | UTRACE_EV_SIGNAL,
				   t)) {
		cli_lib_error("cannot set up the syscall engine", -errno);
		goto out;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (launched) {
		pid_t pid;

		if (t->seccomp) {
			filter = calloc(1, sizeof(*filter));
			if (!filter) {
				cli_error("out of memory");
				goto out;
			}
			build_filter(filter, &t->filter_set);
			lopts.pre_exec = install_filter;
			lopts.pre_exec_ctx = filter;
			lopts.kill_on_exit = true;
		}
		pid = utrace_session__launch(t->s, opts->argv, &lopts);
		if (pid < 0) {
			if (pid == -ENOENT || pid == -EACCES)
				cli_error("cannot run '%s': %s", opts->argv[0], strerror(-pid));
			else
				cli_lib_error("cannot launch the command", pid);
			/* a shell's statuses */
			ret = pid == -ENOENT ? 127 : pid == -EACCES ? 126 : EXIT_TRACE;
			goto out;
		}
		t->main_pid = pid;
		t->launch_pending = !strchr(opts->argv[0], '/');
	} else if (cli_attach_pids(t->s, opts->pids, opts->nr_pids)) {
		goto out;
	} else {
		t->main_pid = opts->pids[0];
		t->exec_seen = true; /* attached: the program runs already */
	}
	if (opts->duration > 0) {
		struct itimerval it = {
			.it_value = { (time_t)opts->duration,
				      (suseconds_t)((opts->duration - (time_t)opts->duration) *
						    1e6) }
		};

		if (!it.it_value.tv_sec && !it.it_value.tv_usec)
			it.it_value.tv_usec = 1;
		sigaction(SIGALRM, &sa, NULL);
		setitimer(ITIMER_REAL, &it, NULL);
	}
	r = event_loop(t, &interrupted);
	if (r < 0) {
		cli_lib_error("tracing failed", r);
		goto out;
	}

	if (interrupted) {
		/* -d or Ctrl-C: leave every traced process running, untouched */
		if (!t->seccomp) {
			err = utrace_session__detach(t->s);
			if (err && err != -ESRCH)
				cli_lib_error("detach failed", err);
		}
		/*
		 * Attach mode: a clean detach is a success. In seccomp mode
		 * the command is killed by utrace_session__close() below:
		 * report the signal that ended the trace, as a shell would.
		 */
		ret = t->seccomp ? 128 + (last_signal && last_signal != SIGALRM ? last_signal :
										  SIGKILL) :
				   0;
	}
	if (opts->summary)
		print_summary(t);
	output_flush(&t->out);
	if (launched && !interrupted) {
		ret = utrace_session__exit_status(t->s);
		if (ret < 0)
			ret = EXIT_TRACE;
	} else if (launched && !t->seccomp) {
		/*
		 * A launched command detached by -d or a signal runs on as
		 * our child: wait for it, as strace does, so that its exit
		 * status is ours (the library would wait for it anyway).
		 */
		int st;

		if (waitpid(t->main_pid, &st, 0) == t->main_pid)
			ret = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	} else if (!launched) {
		ret = 0;
	}
out:
	utrace_session__close(t->s); /* seccomp + interrupted: kills the command */
	t->s = NULL;
	the_tracer = NULL;
	output_close(&t->out);
	free(filter);
	return ret;
}
