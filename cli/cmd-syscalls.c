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
#include <inttypes.h>
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
#include "aggr.h"
#include "chrome.h"
#include "cli.h"
#include "output.h"
#include "sysdec.h"
#include "unwind.h"

/* Per-thread state: the syscall in progress. */
#define SC_STACK_MAX 32

struct task {
	pid_t tid;
	pid_t pid;
	bool in_syscall;
	uint64_t entry_real_ns; /* timestamp printed */
	uint64_t entry_mono_ns; /* for durations */
	uint64_t ip; /* -i: the instruction pointer at the syscall (after its instruction) */
	long last_nr; /* -n: the number of its last syscall, shown on signal and exit lines */
	struct sysdec_call call;
	bool injected; /* the call in progress was tampered with: "(INJECTED)" */
	/* -k: the thread's frames at the call's stop, innermost (the libc wrapper) first */
	int nr_stack;
	uint64_t stack[SC_STACK_MAX];
	bool stack_act[SC_STACK_MAX];
	/*
	 * strace's live lines: the call's head ("read(0, ") was written at its
	 * entry, its first @split_k arguments (those decoded at the entry);
	 * the exit completes the line, or resumes it when another came between
	 */
	bool split;
	int split_k;
	/* -e inject=: this thread's invocations of each injected syscall (strace counts per tracee) */
	uint32_t *inject_calls;
	struct output *out; /* -ff -o FILE: this thread's FILE.TID; NULL = the tracer's output */
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
	struct aggr hist; /* -H: a log2 latency histogram per syscall ("syscall:NAME") */
	/* -k: libdw's CFI unwinder per traced process (unwind.c), made at its first call */
	struct sc_unwind {
		pid_t pid;
		struct utrace_unwind *u; /* NULL: libdw could not start on it */
		struct sc_unwind *next;
	} * unwinders;
	bool unwind_said; /* -v: a process without an unwinder, said once */
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
	/*
	 * -e inject=SET:error=E|retval=N[:when=EXPR], strace's: a rule per
	 * expression, and for each syscall the rule of the last expression
	 * naming it (as strace: a later one overrides)
	 */
	struct sc_rule {
		long ret; /* what the skipped call returns: -E or N */
		bool retval; /* retval=: a success, whatever the value */
		uint32_t first, last, step; /* when=first[..last][+[step]]; last 0 = no end */
	} rules[64];
	int nr_rules;
	uint8_t rule_of[SYSDEC_NR_MAX]; /* index + 1 into rules[]; 0 = none */
	struct sysdec_set filter_set; /* set plus injected syscalls: what stops */
	bool per_thread; /* -ff -o FILE: one file per thread, FILE.TID, as strace */
	bool embedded; /* syscalls_embed(): in cmd-trace.c's session and output */
	/* embedded: what is shown (th: at a syscall entry, si too: a signal) */
	bool (*want)(pid_t pid, struct utrace_thread *th, const siginfo_t *si);
	int64_t mono_to_real; /* -b kernel: add to a record's CLOCK_MONOTONIC ns */
	bool events; /* lines are printed: not -c, or -C (table and events) */
	bool exec_moving; /* on_task_exec(): the leader's task takes the thread's file */
	bool exec_seen; /* launch mode: the command's execve succeeded */
	uint64_t signals; /* -e signal=SET: bit N-1 for signal N shown */
	unsigned int status_mask; /* -e status=, -z, -Z: enum cli_status shown */
	/* -P PATH: the paths (and their realpath()s) a shown syscall must use */
	char *paths[32];
	int nr_paths;
	/*
	 * --format chrome: the calls as duration events on their thread's
	 * track, signals as instant ones. Embedded: the function tracer's
	 * writer (one file, one time line); alone: own_chrome.
	 */
	struct chrome *chrome;
	struct chrome own_chrome;
};

static struct tracer *the_tracer; /* for the signal handlers */
static struct tracer *the_embedded; /* syscalls_embed()'s */
static volatile sig_atomic_t last_signal; /* SIGINT/SIGTERM/SIGHUP/SIGALRM received */

/*
 * -ff -o FILE: strace writes each thread's lines to FILE.TID, created
 * when the thread is first seen. A file that cannot be created is said
 * once; that thread's lines then go to standard error.
 */
static void task_open_output(struct tracer *t, struct task *tk)
{
	static bool said;
	struct cli_opts o = *t->opts;
	/* kept to the end: output_error() may name it after utrace's last event */
	char *name;
	int err = -ENOMEM;

	if (asprintf(&name, "%s.%d", t->opts->output, (int)tk->tid) < 0)
		return;
	tk->out = calloc(1, sizeof(*tk->out));
	o.output = name;
	if (tk->out) {
		err = output_open(tk->out, &o);
		if (!err)
			return;
	}
	if (!said)
		cli_error("cannot create '%s': %s (its lines go to stderr)", name, strerror(-err));
	said = true;
	free(tk->out);
	tk->out = NULL;
	free(name);
}

static void task_close_output(struct task *tk)
{
	if (!tk->out)
		return;
	output_close(tk->out);
	free(tk->out);
	tk->out = NULL;
}

/* -ff: the live-output rule for every thread's file, as for the one output */
static void live_task_outputs(struct tracer *t)
{
	struct task *tk;
	int i;

	for (i = 0; t->per_thread && i < TASK_HASH; i++)
		for (tk = t->tasks[i]; tk; tk = tk->next)
			if (tk->out)
				output_live(tk->out);
}

/* where @tk's lines go */
static struct output *task_out(struct tracer *t, struct task *tk)
{
	return tk && tk->out ? tk->out : &t->out;
}

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
	if (t->per_thread && !t->exec_moving)
		task_open_output(t, tk);
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
			free(tk->inject_calls);
			task_close_output(tk);
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
	if (t->embedded)
		return true; /* as the function lines around */
	return t->nr_tasks > 1 && !t->per_thread; /* -ff: a file per thread, no prefix */
}

/* -1 for failures (errno says which), the raw value otherwise. */
static long user_ret(const struct sysdec_call *c)
{
	return c->failed ? -1 : c->ret;
}

static void print_json_args(FILE *f, const struct sysdec_call *c)
{
	int i, n;

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
	/* the strings cut at -s/-S bytes (text: "..." after the quote) */
	for (i = 0, n = 0; i < c->nr_out; i++)
		if (c->out[i].kind == SYSDEC_STR && c->out[i].raw && c->out[i].truncated)
			fprintf(f, "%s%d", n++ ? ", " : ", \"truncated\": [", i);
	if (n)
		fputc(']', f);
}

/* "name" of @c, or "syscall_0x1ff" */
static const char *sc_name(const struct sysdec_call *c, char *unk, size_t len)
{
	const char *name = sysdec_name(c->nr);

	if (name)
		return name;
	snprintf(unk, len, "syscall_%#lx", (unsigned long)c->nr);
	return unk;
}

/*
 * --format chrome: a finished call is one "B"/"E" pair on its thread's
 * track, from its entry to its exit (CLOCK_MONOTONIC, as the function
 * events), named as strace names it, with its decoded arguments and its
 * return value; exit and exit_group (no exit stop) and a call still
 * running at the end are instant events.
 */
static void print_chrome(struct tracer *t, struct task *tk, bool finished, uint64_t dur_ns)
{
	const struct sysdec_call *c = &tk->call;
	char unk[32], probe[64], *args = NULL, ret[160];
	const char *name = sc_name(c, unk, sizeof(unk));
	size_t len = 0;
	FILE *m;

	snprintf(probe, sizeof(probe), "syscall:%s", name);
	m = open_memstream(&args, &len);
	if (m) {
		print_json_args(m, c); /* ", \"args\": [...]" */
		fclose(m);
	}
	if (!finished) {
		chrome_instant(t->chrome, tk->pid, tk->tid, tk->entry_mono_ns, name, probe,
			       args && len > 2 ? args + 2 : NULL);
		free(args);
		return;
	}
	chrome_begin(t->chrome, tk->pid, tk->tid, tk->entry_mono_ns, name, probe,
		     args && len > 2 ? args + 2 : NULL);
	if (c->failed)
		snprintf(ret, sizeof(ret), "\"ret\": %ld, \"errno\": \"%s\"%s", user_ret(c),
			 c->errname ? c->errname : "?", tk->injected ? ", \"injected\": true" : "");
	else
		snprintf(ret, sizeof(ret), "\"ret\": %ld%s", user_ret(c),
			 tk->injected ? ", \"injected\": true" : "");
	chrome_end(t->chrome, tk->pid, tk->tid, tk->entry_mono_ns + dur_ns, name, probe, ret);
	free(args);
}

/* -k: @pid's unwinder, made at its first call (NULL: none, said once with -v). */
static struct utrace_unwind *sc_unwinder(struct tracer *t, pid_t pid)
{
	struct sc_unwind *w;
	char why[256];

	for (w = t->unwinders; w; w = w->next)
		if (w->pid == pid)
			return w->u;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->pid = pid;
	w->u = utrace_unwind__new(pid, NULL, why, sizeof(why));
	w->next = t->unwinders;
	t->unwinders = w;
	if (!w->u && t->opts->verbose > 0 && !t->unwind_said) {
		t->unwind_said = true;
		cli_error("-k: no stack for the syscalls of pid %d: %s", (int)pid, why);
	}
	return w->u;
}

/* -k: @pid's unwinder goes (its exec, its end): the next call makes a new one. */
static void sc_unwinder_drop(struct tracer *t, pid_t pid)
{
	struct sc_unwind **l, *w;

	for (l = &t->unwinders; (w = *l); l = &w->next) {
		if (w->pid != pid)
			continue;
		*l = w->next;
		utrace_unwind__free(w->u);
		free(w);
		return;
	}
}

/*
 * -k (strace -k): the frames of @th, stopped at its syscall, into @tk, by
 * the CFI unwinder from its registers: the libc wrapper first, its callers
 * then. A frame outside the modules (a library mapped since they were
 * read): the maps again, once.
 */
static void sc_take_stack(struct tracer *t, struct task *tk, struct utrace_thread *th)
{
	struct user_regs_struct regs;
	struct utrace_unwind *u;
	int pass, i;

	tk->nr_stack = 0;
	if (!t->opts->stack || !t->events || t->chrome)
		return;
	u = sc_unwinder(t, tk->pid);
	if (!u || utrace_thread__get_regs(th, &regs))
		return;
	for (pass = 0; pass < 2; pass++) {
		tk->nr_stack = utrace_unwind__stack(u, tk->tid, &regs, NULL, NULL, tk->stack,
						    tk->stack_act, SC_STACK_MAX);
		for (i = 0; i < tk->nr_stack &&
			    utrace_unwind__has_module(u, tk->stack[i] - !tk->stack_act[i]);
		     i++)
			;
		if (i == tk->nr_stack || pass || utrace_unwind__report(u, NULL))
			break;
	}
	if (t->opts->stack_max && tk->nr_stack > t->opts->stack_max)
		tk->nr_stack = t->opts->stack_max; /* ltrace's -w N */
}

/* -k's frames of @tk: " > sym+0xoff (obj) [0xADDR]" lines, or a JSON "stack" array. */
static void print_sc_stack(struct tracer *t, struct task *tk, FILE *f, bool json)
{
	struct utrace_unwind *u = tk->nr_stack ? sc_unwinder(t, tk->pid) : NULL;
	int i;

	if (json && tk->nr_stack)
		fputs(", \"stack\": [", f);
	for (i = 0; i < tk->nr_stack; i++) {
		uint64_t pc = tk->stack[i], off = 0;
		const char *name = utrace_unwind__name(u, pc, tk->stack_act[i], &off);
		const char *obj = utrace_unwind__module(u, pc - !tk->stack_act[i]);
		char sym[320], buf[400];

		if (name)
			snprintf(sym, sizeof(sym), "%.*s+0x%" PRIx64, unwind_name_len(name), name,
				 off);
		else
			snprintf(sym, sizeof(sym), "0x%" PRIx64, pc);
		if (json) {
			snprintf(buf, sizeof(buf), "%s:%s", obj ? obj : "?", sym);
			fputs(i ? ", " : "", f);
			json_str(f, buf, strlen(buf));
		} else {
			fprintf(f, " > %s (%s) [0x%" PRIx64 "]\n", sym, obj ? obj : "?", pc);
		}
	}
	if (json && tk->nr_stack)
		fputc(']', f);
}

static bool never_returns(long nr);

/* output_call_open()'s key of a syscall's head: no function's address */
#define SC_LINE_KEY(nr) (0xffffffffffff0000ull | (uint64_t)(nr))

/*
 * Can @tk's call be written as strace writes it, its head at the entry?
 * Text to the tracer's one output, each call shown whatever it returns
 * (-z, -Z and -e status= wait for the result), not the launcher's execve
 * attempts along $PATH (hidden when they fail).
 */
static bool sc_split_ok(struct tracer *t, const struct task *tk)
{
	/*
	 * Not beside -f (t->embedded): that stream is ordered at the exits, and
	 * a thread the agent's layer only later knows for its own (its control
	 * thread starting up) would have shown a head
	 */
	return !t->embedded && t->events && !t->chrome && !t->per_thread &&
	       t->out.format == CLI_FMT_TEXT && t->status_mask == CLI_STATUS_ALL &&
	       !never_returns(tk->call.nr) && !(t->launch_pending && tk->call.nr == SYS_execve);
}

/*
 * At the entry: "[tid] read(0, " -- the arguments decoded at the entry, up
 * to the first one decoded at the exit -- left open for the exit
 * (output_call_open()), as strace prints a call it waits in.
 */
static void print_call_head(struct tracer *t, struct task *tk)
{
	struct output *o = task_out(t, tk);
	const struct sysdec_call *c = &tk->call;
	char unk[32];
	int i, k;

	for (k = 0; k < c->nr_out && !c->decoded_at_exit[k]; k++)
		;
	output_prefix(o, tk->entry_real_ns, tk->tid, show_pid(t));
	if (t->opts->syscall_numbers) /* strace's -n */
		fprintf(o->f, "[%4ld] ", c->nr);
	if (t->opts->call_site) /* strace's -i */
		fprintf(o->f, "[%016llx] ", (unsigned long long)tk->ip);
	output_color(o, OC_NAME);
	fputs(sc_name(c, unk, sizeof(unk)), o->f);
	output_color_end(o);
	fputc('(', o->f);
	for (i = 0; i < k; i++)
		fprintf(o->f, "%s%s", i ? ", " : "", c->out[i].text);
	if (k && k < c->nr_out)
		fputs(", ", o->f);
	tk->split = true;
	tk->split_k = k;
	output_call_open(o, tk->tid, SC_LINE_KEY(c->nr), 0);
}

/* One finished (or never-finishing) syscall. */
static void print_call(struct tracer *t, struct task *tk, bool finished, uint64_t dur_ns)
{
	struct output *o = task_out(t, tk);
	const struct sysdec_call *c = &tk->call;
	const char *name = sysdec_name(c->nr);
	char line[8192];
	unsigned int status = !finished ? CLI_STATUS_UNFINISHED :
			      c->failed ? CLI_STATUS_FAILED :
					  CLI_STATUS_SUCCESSFUL;

	if (!(t->status_mask & status))
		return; /* -z, -Z, -e status= */
	if (t->chrome) {
		if (t->chrome->f) /* (closed: the session's last exits come after the file) */
			print_chrome(t, tk, finished, dur_ns);
		return;
	}
	if (o->format == CLI_FMT_JSON) {
		char unk[32];

		name = sc_name(c, unk, sizeof(unk));
		fputc('{', o->f);
		json_ts(o->f, tk->entry_real_ns);
		fprintf(o->f,
			", \"pid\": %d, \"tid\": %d, \"type\": \"syscall\", "
			"\"probe\": \"syscall:%s\", \"name\": \"%s\"",
			(int)tk->pid, (int)tk->tid, name, name);
		print_json_args(o->f, c);
		if (finished) {
			fprintf(o->f, ", \"ret\": %ld", user_ret(c));
			if (c->failed)
				fprintf(o->f, ", \"errno\": \"%s\"", c->errname ? c->errname : "?");
			if (tk->injected)
				fputs(", \"injected\": true", o->f);
			fprintf(o->f, ", \"dur_ns\": %llu", (unsigned long long)dur_ns);
		} else {
			fputs(", \"ret\": null", o->f);
		}
		print_sc_stack(t, tk, o->f, true);
		fputs("}\n", o->f);
		return;
	}
	if (tk->split) {
		/* the head is out: the rest on its line, or strace's "<... read resumed>" */
		int i;

		tk->split = false;
		if (!output_call_close(o, tk->tid, SC_LINE_KEY(c->nr), 0)) {
			char unk[32];

			output_prefix(o, t->opts->timestamps ? now_realtime_ns() : 0, tk->tid,
				      show_pid(t));
			if (t->opts->syscall_numbers)
				fprintf(o->f, "[%4ld] ", c->nr);
			if (t->opts->call_site)
				fprintf(o->f, "[%016llx] ", (unsigned long long)tk->ip);
			fprintf(o->f, "<... %s resumed>", sc_name(c, unk, sizeof(unk)));
		}
		for (i = tk->split_k; i < c->nr_out; i++)
			fprintf(o->f, "%s%s", i > tk->split_k ? ", " : "", c->out[i].text);
		fputs(") = ", o->f);
		if (finished && c->failed)
			output_color(o, OC_ERROR);
		fputs(finished ? c->retval.text : "?", o->f);
		if (finished && c->failed)
			output_color_end(o);
		goto tail;
	}
	output_prefix(o, tk->entry_real_ns, tk->tid, show_pid(t));
	if (t->opts->syscall_numbers) /* strace's -n */
		fprintf(o->f, "[%4ld] ", c->nr);
	if (t->opts->call_site) /* strace's -i */
		fprintf(o->f, "[%016llx] ", (unsigned long long)tk->ip);
	if (o->color) {
		/* sysdec_format()'s line, coloured: the name, a failure's "-1 ENOENT (...)" */
		output_color(o, OC_NAME);
		fputs(name ? name : "syscall", o->f);
		output_color_end(o);
		if (!name)
			fprintf(o->f, "_%#lx", (unsigned long)c->nr);
		sysdec_format_args(c, line, sizeof(line));
		fprintf(o->f, "(%s) = ", line);
		if (finished && c->failed)
			output_color(o, OC_ERROR);
		fputs(finished ? c->retval.text : "?", o->f);
		if (finished && c->failed)
			output_color_end(o);
	} else {
		sysdec_format(c, finished, line, sizeof(line));
		fputs(line, o->f);
	}
tail:
	if (finished && tk->injected)
		fputs(" (INJECTED)", o->f); /* strace's mark, before -T's duration */
	if (finished)
		output_duration(o, dur_ns);
	fputc('\n', o->f);
	print_sc_stack(t, tk, o->f, false);
}

static void count_call(struct tracer *t, long nr, bool failed, uint64_t dur_ns)
{
	struct sc_stats *st;

	if (nr < 0 || nr >= SYSDEC_NR_MAX)
		return;
	if (t->opts->hist) {
		char probe[80];
		struct aggr_stat *h;

		snprintf(probe, sizeof(probe), "syscall:%s", sysdec_name(nr));
		h = aggr_get(&t->hist, probe, sysdec_name(nr));
		if (h)
			aggr_add(h, true, dur_ns, failed);
	}
	st = &t->stats[nr];
	if (!st->calls || dur_ns < st->min_ns)
		st->min_ns = dur_ns;
	if (dur_ns > st->max_ns)
		st->max_ns = dur_ns;
	st->calls++;
	st->errors += failed;
	st->total_ns += dur_ns;
}

/*
 * -P PATH, as strace's pathtrace.c: which arguments of a syscall are file
 * descriptors ('f') or path names ('p'). Syscalls not listed: a %file one
 * takes its path first ("p"), with a descriptor too ("fp": the *at
 * family), a %desc or %network one its descriptor first ("f"). Listed with
 * "" take neither (they create descriptors). Not checked, unlike strace:
 * the descriptor sets of select/poll.
 */
static const struct {
	const char *name, *roles;
} path_roles[] = {
	{ "rename", "pp" },
	{ "link", "pp" },
	{ "symlink", "pp" },
	{ "renameat", "fpfp" },
	{ "renameat2", "fpfp" },
	{ "linkat", "fpfp" },
	{ "move_mount", "fpfp" },
	{ "symlinkat", "pfp" },
	{ "fanotify_mark", "f--fp" },
	{ "dup2", "ff" },
	{ "dup3", "ff" },
	{ "sendfile", "ff" },
	{ "tee", "ff" },
	{ "kexec_file_load", "ff" },
	{ "splice", "f-f" },
	{ "copy_file_range", "f-f" },
	{ "epoll_ctl", "f-f" },
	{ "mmap", "----f" },
	{ "execve", "p" },
	{ "pipe", "" },
	{ "pipe2", "" },
	{ "socket", "" },
	{ "socketpair", "" },
	{ "eventfd", "" },
	{ "eventfd2", "" },
	{ "epoll_create", "" },
	{ "epoll_create1", "" },
	{ "inotify_init", "" },
	{ "inotify_init1", "" },
	{ "memfd_create", "" },
	{ "memfd_secret", "" },
	{ "perf_event_open", "" },
	{ "timerfd_create", "" },
	{ "userfaultfd", "" },
	{ "fanotify_init", "" },
	{ "pidfd_open", "" },
	{ "fsopen", "" },
	{ "fsmount", "" },
	{ "bpf", "" },
	{ "io_uring_setup", "" },
	{ "landlock_create_ruleset", "" },
	{ "signalfd", "" },
	{ "signalfd4", "" },
	{ "select", "" },
	{ "pselect6", "" },
	{ "poll", "" },
	{ "ppoll", "" },
};

static const char *syscall_path_roles(long nr)
{
	const char *name = sysdec_name(nr);
	uint32_t cls = sysdec_classes(nr);
	size_t i;

	for (i = 0; name && i < sizeof(path_roles) / sizeof(path_roles[0]); i++)
		if (!strcmp(path_roles[i].name, name))
			return path_roles[i].roles;
	if ((cls & SYSDEC_TRACE_FILE) && (cls & SYSDEC_TRACE_DESC))
		return "fp";
	if (cls & SYSDEC_TRACE_FILE)
		return "p";
	if (cls & (SYSDEC_TRACE_DESC | SYSDEC_TRACE_NETWORK))
		return "f";
	return "";
}

/*
 * A NUL-terminated path from the tracee, read page by page: a string near
 * the end of a mapping (the stack's top) must not fail for the bytes
 * after it. Return: its length, or -1 (unreadable, or no NUL in @size).
 */
static ssize_t read_path(struct utrace_thread *th, uint64_t addr, char *buf, size_t size)
{
	size_t len = 0;

	while (len < size) {
		size_t chunk = 4096 - ((addr + len) & 4095);
		ssize_t n;
		char *nul;

		if (chunk > size - len)
			chunk = size - len;
		n = utrace_thread__read_mem(th, addr + len, buf + len, chunk);
		if (n <= 0)
			return -1;
		nul = memchr(buf + len, '\0', n);
		if (nul)
			return nul - buf;
		len += n;
	}
	return -1;
}

static bool path_listed(const struct tracer *t, const char *path)
{
	int i;

	for (i = 0; i < t->nr_paths; i++)
		if (!strcmp(t->paths[i], path))
			return true;
	return false;
}

/*
 * Tracer, at the syscall-entry stop: does this call use a -P path? A
 * descriptor is resolved through /proc/TID/fd (while the thread is stopped,
 * before the call can close it), a path read from the tracee as given.
 */
static bool path_match(struct tracer *t, struct utrace_thread *th, const struct utrace_syscall *sc)
{
	const char *roles = syscall_path_roles(sc->nr);
	int i;

	for (i = 0; roles[i] && i < 6; i++) {
		char buf[4096], link[64];
		ssize_t n;

		if (roles[i] == 'f') {
			if ((int)sc->args[i] < 0)
				continue;
			snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)utrace_thread__tid(th),
				 (int)sc->args[i]);
			n = readlink(link, buf, sizeof(buf) - 1);
		} else if (roles[i] == 'p' && sc->args[i]) {
			n = read_path(th, sc->args[i], buf, sizeof(buf));
		} else {
			continue;
		}
		if (n <= 0)
			continue;
		buf[n] = '\0';
		if (path_listed(t, buf))
			return true;
	}
	return false;
}

static int add_path(struct tracer *t, const char *path)
{
	if (path_listed(t, path))
		return 0;
	if (t->nr_paths == (int)(sizeof(t->paths) / sizeof(t->paths[0]))) {
		cli_error("too many -P paths (at most %d)",
			  (int)(sizeof(t->paths) / sizeof(t->paths[0])));
		return -E2BIG;
	}
	t->paths[t->nr_paths] = strdup(path);
	if (!t->paths[t->nr_paths])
		return -ENOMEM;
	t->nr_paths++;
	return 0;
}

/* -P PATH...: each path, and what it resolves to if that differs (strace's rule). */
static int parse_paths(struct tracer *t)
{
	int i;

	for (i = 0; i < t->opts->nr_paths; i++) {
		char *real = realpath(t->opts->paths[i], NULL);
		int err = add_path(t, t->opts->paths[i]);

		if (!err && real)
			err = add_path(t, real);
		free(real);
		if (err)
			return err;
	}
	return 0;
}

/*
 * -e signal=SET: comma list of names (SIGINT or INT) or numbers, "all",
 * "none", each optionally with '!'; a leading '!' negates the list.
 */
static int parse_signals(struct tracer *t, const char *arg)
{
	const char *p = arg;
	bool neg_all, first = true;
	uint64_t set = 0;

	if (!arg) {
		t->signals = ~0ULL;
		return 0;
	}
	/* "!a,b" negates the list; "!a" alone is one negated item */
	neg_all = *p == '!' && strchr(p, ',');
	p += neg_all;
	while (*p) {
		size_t len = strcspn(p, ",");
		bool neg = neg_all;
		char tok[32];
		int sig = 0, n;

		if (*p == '!') {
			neg = !neg;
			p++;
			len--;
		}
		if (first && neg)
			set = ~0ULL;
		first = false;
		snprintf(tok, sizeof(tok), "%.*s", (int)len, p);
		if (!strcmp(tok, "all") || !strcmp(tok, "none")) {
			set = (tok[0] == 'a') != neg ? ~0ULL : 0;
			p += len + (p[len] == ',');
			continue;
		}
		for (n = 1; n <= 64 && !sig; n++) {
			const char *name = sysdec_signal_name(n);

			if (name && (!strcasecmp(name, tok) || !strcasecmp(name + 3, tok)))
				sig = n;
		}
		if (!sig && tok[0] >= '0' && tok[0] <= '9') {
			char *end;
			long v = strtol(tok, &end, 10);

			if (!*end && v >= 1 && v <= 64)
				sig = (int)v;
		}
		if (!sig) {
			cli_error("bad -e signal='%s': unknown signal '%s'", arg, tok);
			return -EINVAL;
		}
		if (neg)
			set &= ~(1ULL << (sig - 1));
		else
			set |= 1ULL << (sig - 1);
		p += len + (p[len] == ',');
	}
	t->signals = set;
	return 0;
}

/* exit and exit_group never reach their exit stop: print them at entry. */
static bool never_returns(long nr)
{
	return nr == SYS_exit || nr == SYS_exit_group;
}

/*
 * Tracer, at a syscall-entry (or seccomp) stop of @tk, for a call that
 * -e trace= and -P select (strace tampers with nothing it does not trace):
 * strace's -e inject= rule for @nr, if any. The invocations are counted
 * per thread and per syscall, from the first one the thread makes after
 * the command's execve (strace's "per syscall and per tracee"); the call is skipped and
 * returns the rule's value when its number is first, first + step, ...
 * up to last.
 */
static void inject_rule(struct tracer *t, struct task *tk, struct utrace_thread *th, long nr)
{
	const struct sc_rule *r;
	uint32_t n;

	if (nr < 0 || nr >= SYSDEC_NR_MAX || !t->rule_of[nr])
		return;
	if (!tk->inject_calls) {
		tk->inject_calls = calloc(SYSDEC_NR_MAX, sizeof(*tk->inject_calls));
		if (!tk->inject_calls)
			return;
	}
	r = &t->rules[t->rule_of[nr] - 1];
	n = ++tk->inject_calls[nr];
	if (n < r->first || (r->last && n > r->last))
		return;
	if (r->step ? (n - r->first) % r->step : n != r->first)
		return;
	if (utrace_thread__skip_syscall(th, r->ret))
		return;
	tk->injected = true;
	tk->call.success = r->retval;
}

static int on_syscall_entry(struct utrace_engine *e, struct utrace_thread *th,
			    struct utrace_syscall *sc)
{
	struct tracer *t = utrace_engine__ctx(e);
	struct task *tk;
	int i;

	if (t->want && !t->want(utrace_thread__pid(th), th, NULL))
		return UTRACE_RESUME; /* followed by the session only (no -F), or the agent's */
	/* created at first sight: the count of live tasks drives the [pid] prefix */
	tk = task_get(t, utrace_thread__tid(th), utrace_thread__pid(th), true);
	if (tk) {
		tk->injected = false;
		tk->call.success = false;
	}
	for (i = 0; i < t->nr_injects; i++) {
		struct sc_inject *in = &t->injects[i];

		if (in->nr == sc->nr && t->exec_seen && ++in->hits % in->every == 0) {
			if (utrace_thread__skip_syscall(th, -in->err) == 0 && tk)
				tk->injected = true;
			break;
		}
	}
	if (!tk || !sysdec_set_has(&t->set, sc->nr))
		return UTRACE_RESUME;
	if (t->nr_paths && !path_match(t, th, sc))
		return UTRACE_RESUME; /* -P: it uses none of the paths */
	/* strace tampers with (and counts) only the calls it traces: -e trace=, -P */
	if (!tk->injected && t->exec_seen)
		inject_rule(t, tk, th, sc->nr);
	tk->in_syscall = true;
	tk->call.nr = sc->nr;
	tk->entry_mono_ns = now_mono_ns();
	if (!t->events)
		return UTRACE_RESUME;
	tk->entry_real_ns =
		t->opts->timestamps || t->out.format == CLI_FMT_JSON ? now_realtime_ns() : 0;
	for (i = 0; i < 6; i++)
		tk->call.args[i] = sc->args[i];
	tk->call.sp = sc->stack_pointer;
	tk->ip = sc->instruction_pointer;
	tk->last_nr = sc->nr;
	tk->call.read = read_tracee;
	tk->call.ctx = th;
	tk->call.tid = utrace_thread__tid(th); /* -y: its /proc/TID/fd */
	sysdec_decode_entry(&tk->call);
	tk->split = false;
	if (sc_split_ok(t, tk))
		print_call_head(t, tk);
	if (never_returns(sc->nr)) {
		sc_take_stack(t, tk, th);
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
	if (t->opts->summary || t->opts->hist) {
		count_call(t, tk->call.nr,
			   !tk->call.success && sysdec_is_error(tk->call.nr, sc->ret) != 0, dur);
		if (!t->events)
			return UTRACE_RESUME;
	}
	tk->call.ctx = th;
	sysdec_decode_exit(&tk->call, sc->ret);
	sc_take_stack(t, tk, th);
	print_call(t, tk, true, dur);
	sysdec_call_clear(&tk->call);
	return UTRACE_RESUME;
}

static int on_attach(struct utrace_engine *e, struct utrace_thread *th)
{
	struct tracer *t = utrace_engine__ctx(e);

	if (t->want && !t->want(utrace_thread__pid(th), NULL, NULL))
		return UTRACE_RESUME; /* followed by the session only (no -F) */
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
	sc_unwinder_drop(t, utrace_thread__pid(th)); /* a new image */
	if (former_tid == tid)
		return UTRACE_RESUME;
	old = task_get(t, former_tid, 0, false);
	t->exec_moving = old != NULL;
	tk = task_get(t, tid, utrace_thread__pid(th), true);
	t->exec_moving = false;
	if (old && tk) {
		/* -ff: the thread's file goes on, as its counts do */
		if (old->out) {
			task_close_output(tk);
			tk->out = old->out;
			old->out = NULL;
		}
		sysdec_call_clear(&tk->call);
		tk->in_syscall = old->in_syscall;
		tk->entry_real_ns = old->entry_real_ns;
		tk->ip = old->ip;
		tk->last_nr = old->last_nr;
		tk->entry_mono_ns = old->entry_mono_ns;
		tk->call = old->call;
		tk->injected = old->injected;
		/* strace's tracee is the process here: its counts go on */
		free(tk->inject_calls);
		tk->inject_calls = old->inject_calls;
		old->inject_calls = NULL;
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
	struct output *o = task_out(t, tk);

	if (tk && tk->in_syscall && t->events) {
		tk->nr_stack = 0; /* (its stack is gone) */
		print_call(t, tk, false, 0); /* killed inside a syscall */
	}
	if (tid == pid)
		sc_unwinder_drop(t, pid);
	if (t->chrome && t->chrome->f && !t->embedded && t->events)
		chrome_thread_exit(t->chrome, tid, now_mono_ns());
	if ((tid == pid || (tk && tk->out)) && t->events)
		output_json_exit(o, now_realtime_ns(), pid, tid, status);
	/* -ff: every thread's file ends so, as strace's */
	if ((tid == pid || (tk && tk->out)) && t->events && o->format == CLI_FMT_TEXT &&
	    (!t->want || t->want(pid, NULL, NULL))) {
		output_prefix(o, t->opts->timestamps ? now_realtime_ns() : 0, tid, show_pid(t));
		if (t->opts->syscall_numbers)
			fprintf(o->f, "[%4ld] ", tk ? tk->last_nr : 0L);
		if (t->opts->call_site) /* no instruction pointer after the end, as strace */
			fputs("[????????????????] ", o->f);
		output_color(o, OC_SIGNAL);
		if (WIFSIGNALED(status))
			fprintf(o->f, "+++ killed by %s%s +++\n",
				sysdec_signal_name(WTERMSIG(status)) ?
					sysdec_signal_name(WTERMSIG(status)) :
					"?",
				WCOREDUMP(status) ? " (core dumped)" : "");
		else
			fprintf(o->f, "+++ exited with %d +++\n", WEXITSTATUS(status));
		output_color_end(o);
	}
	task_free(t, tid);
	return UTRACE_RESUME;
}

static int on_signal(struct utrace_engine *e, struct utrace_thread *th, siginfo_t *si)
{
	struct tracer *t = utrace_engine__ctx(e);
	struct output *o = task_out(t, task_get(t, utrace_thread__tid(th), 0, false));
	const char *name = sysdec_signal_name(si->si_signo);

	if (t->want && !t->want(utrace_thread__pid(th), th, si))
		return UTRACE_RESUME; /* followed by the session only (no -F) */
	if (!t->events || (o->format == CLI_FMT_CHROME && !t->chrome))
		return UTRACE_RESUME;
	if (si->si_signo < 1 || si->si_signo > 64 || !(t->signals >> (si->si_signo - 1) & 1))
		return UTRACE_RESUME; /* -e signal=SET: delivered, just not shown */
	if (t->chrome) {
		char args[96];

		if (!t->chrome->f)
			return UTRACE_RESUME;
		snprintf(args, sizeof(args), "\"si_code\": %d, \"si_pid\": %d", si->si_code,
			 (int)si->si_pid);
		chrome_instant(t->chrome, utrace_thread__pid(th), utrace_thread__tid(th),
			       now_mono_ns(), name ? name : "signal", "signal", args);
		return UTRACE_RESUME;
	}
	if (o->format == CLI_FMT_JSON) {
		output_json_signal(o, now_realtime_ns(), utrace_thread__pid(th),
				   utrace_thread__tid(th), si);
		return UTRACE_RESUME;
	}
	output_prefix(o, t->opts->timestamps ? now_realtime_ns() : 0, utrace_thread__tid(th),
		      show_pid(t));
	if (t->opts->syscall_numbers) {
		struct task *tk = task_get(t, utrace_thread__tid(th), 0, false);

		fprintf(o->f, "[%4ld] ", tk ? tk->last_nr : 0L);
	}
	if (t->opts->call_site) { /* strace's -i: where the signal interrupted the thread */
		struct user_regs_struct regs;

		if (utrace_thread__get_regs(th, &regs) == 0)
			fprintf(o->f, "[%016llx] ", (unsigned long long)regs.rip);
		else
			fputs("[????????????????] ", o->f);
	}
	output_color(o, OC_SIGNAL);
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
	output_color_end(o);
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

static void print_summary(struct tracer *t);

/* At the end: -c's table, -H's histograms (text, or JSON "hist" records). */
static void print_tables(struct tracer *t)
{
	FILE *f = t->chrome ? stderr : t->out.f; /* the tables are no trace events */

	if (t->opts->summary)
		print_summary(t);
	if (!t->opts->hist)
		return;
	output_break(&t->out);
	if (t->out.format == CLI_FMT_JSON)
		aggr_json_hist(f, &t->hist, now_realtime_ns(), t->main_pid);
	else
		aggr_print_hist(f, &t->hist);
}

/* strace -c's table, sorted by time; errors left blank when 0, like strace. */
static void print_summary(struct tracer *t)
{
	FILE *f = t->chrome ? stderr : t->out.f; /* the table is not a trace event */
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
	output_break(&t->out); /* --one-line: a call still open is unfinished */
	qsort_r(order, n, sizeof(order[0]), cmp_time, t->stats);
	if (t->out.format == CLI_FMT_JSON) {
		uint64_t ts = now_realtime_ns();

		for (i = 0; i < n; i++) {
			const struct sc_stats *st = &t->stats[order[i]];
			const char *name = sysdec_name(order[i]);

			fputc('{', f);
			json_ts(f, ts);
			fprintf(f,
				", \"pid\": %d, \"tid\": %d, \"type\": \"summary\", "
				"\"probe\": \"syscall:%s\", \"name\": \"%s\", \"calls\": %llu, "
				"\"errors\": %llu, \"total_ns\": %llu, \"min_ns\": %llu, "
				"\"max_ns\": %llu}\n",
				(int)t->main_pid, (int)t->main_pid, name, name,
				(unsigned long long)st->calls, (unsigned long long)st->errors,
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
 * The event loop: utrace_session__run() takes the library's fast path
 * (SIGCHLD blocked in this thread and taken with sigtimedwait(), no
 * handler, no pipe: see run_fast() in lib/session.c), bounded by
 * OUTPUT_LIVE_MS so that pending lines go out while events keep coming. SIGINT, SIGTERM,
 * SIGHUP and the -d timer (SIGALRM) are not blocked: their handler calls
 * utrace_session__interrupt(), which wakes run() even while it sleeps and
 * is reported even when events never stop coming.
 * Return: 0 when done or interrupted (*interrupted says which); negative
 * error code from the session otherwise.
 */
static int event_loop(struct tracer *t, bool *interrupted)
{
	for (;;) {
		int r = utrace_session__run(t->s, output_live_wait(&t->out, -1));

		output_live(&t->out);
		live_task_outputs(t);
		switch (r) {
		case UTRACE_RUN_BREAK:
		case UTRACE_RUN_TIMEOUT: /* the live-output bound: -d interrupts */
			break;
		case UTRACE_RUN_DONE:
			return 0;
		case UTRACE_RUN_INTERRUPTED:
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

/* an errno name (ENOENT) or number in 1..4095, as strace's error=; 0 if neither */
static int parse_errno(const char *val)
{
	char *end;
	long v;
	int e;

	for (e = 1; e < 4096; e++) {
		const char *n = sysdec_errno_name(e);

		if (n && !strcmp(n, val))
			return e;
	}
	errno = 0;
	v = strtol(val, &end, 10);
	return errno || end == val || *end || v < 1 || v > 4095 ? 0 : (int)v;
}

/* an unsigned decimal number in [lo, hi] ending at one of @stops (or the end); 0 if not */
static uint32_t when_number(const char *s, const char **endp, uint32_t lo, uint32_t hi)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	*endp = end;
	return errno || v < lo || v > hi ? 0 : (uint32_t)v;
}

/*
 * strace's when=first[..last][+[step]] (man strace: first and step in
 * 1..65535, last in first..65534): "first" alone is that call only,
 * "first..last" every call from first to last, "+" every call from first
 * on, "+step" every step-th. Return: 0, or -EINVAL.
 */
static int parse_when(const char *val, struct sc_rule *r)
{
	const char *p;

	r->first = when_number(val, &p, 1, 65535);
	if (!r->first)
		return -EINVAL;
	r->last = 0;
	r->step = 0;
	if (p[0] == '.' && p[1] == '.') {
		r->last = when_number(p + 2, &p, r->first, 65534);
		if (!r->last)
			return -EINVAL;
		r->step = 1;
	}
	if (*p == '+') {
		p++;
		r->step = 1;
		if (*p) {
			r->step = when_number(p, &p, 1, 65535);
			if (!r->step)
				return -EINVAL;
		}
	}
	return *p ? -EINVAL : 0;
}

/*
 * strace's -e inject=SET:error=E|retval=N[:when=EXPR] and -e fault=SET
 * [:error=E][:when=EXPR] (error=ENOSYS by default), SET as in -e trace=.
 * A later expression overrides an earlier one for the syscalls both name.
 * strace's signal=, syscall=, delay_*= and poke_*= are refused in one line.
 */
static int parse_sc_injects(struct tracer *t)
{
	int i;

	for (i = 0; i < t->opts->nr_sc_injects; i++) {
		const struct cli_sc_inject *ci = &t->opts->sc_injects[i];
		const char *q = ci->fault ? "fault" : "inject";
		struct sc_rule *r = &t->rules[t->nr_rules];
		struct sysdec_set set;
		char buf[1024], errbuf[256], *tok, *save = NULL, *cut;
		bool have_err = false, have_ret = false;
		long nr;

		if (t->nr_rules == (int)(sizeof(t->rules) / sizeof(t->rules[0]))) {
			cli_error("too many -e inject= expressions (at most %d)", t->nr_rules);
			return -E2BIG;
		}
		if (snprintf(buf, sizeof(buf), "%s", ci->expr) >= (int)sizeof(buf)) {
			cli_error("bad -e %s=: the expression is too long", q);
			return -EINVAL;
		}
		*r = (struct sc_rule){ .first = 1, .step = 1 };
		tok = strtok_r(buf, ":", &save);
		if (!tok || buf[0] == ':') {
			cli_error("bad -e %s='%s': expected SET:error=ERRNO or SET:retval=N", q,
				  ci->expr);
			return -EINVAL;
		}
		if (sysdec_parse_set(tok, &set, errbuf, sizeof(errbuf))) {
			cut = strstr(errbuf, " in -s '");
			if (cut)
				*cut = '\0';
			cli_error("bad -e %s='%s': %s", q, ci->expr, errbuf);
			return -EINVAL;
		}
		while ((tok = strtok_r(NULL, ":", &save))) {
			char *val = strchr(tok, '=');
			int e;

			if (val)
				*val++ = '\0';
			if (val && !strcmp(tok, "error")) {
				e = parse_errno(val);
				if (!e || have_err || have_ret) {
					cli_error("bad -e %s='%s': %s", q, ci->expr,
						  !e ? "error= wants an errno name (ENOENT) or a "
						       "number in 1..4095" :
						       "one error= or retval= only");
					return -EINVAL;
				}
				r->ret = -e;
				have_err = true;
			} else if (val && !strcmp(tok, "retval") && !ci->fault) {
				char *end;

				errno = 0;
				r->ret = strtol(val, &end, 0);
				if (errno == ERANGE && val[0] != '-') {
					errno = 0;
					r->ret = (long)strtoul(val, &end, 0);
				}
				if (errno || end == val || *end || have_err || have_ret) {
					cli_error("bad -e %s='%s': %s", q, ci->expr,
						  have_err || have_ret ?
							  "one error= or retval= only" :
							  "retval= wants a number");
					return -EINVAL;
				}
				if (r->ret >= -4095 && r->ret < 0)
					cli_error(
						"warning: retval=%s is also error %ld to the program "
						"(libc sets errno)",
						val, -r->ret);
				r->retval = true;
				have_ret = true;
			} else if (val && !strcmp(tok, "when")) {
				if (parse_when(val, r)) {
					cli_error(
						"bad -e %s='%s': when= wants first[..last][+[step]] "
						"(first, step in 1..65535, last in first..65534)",
						q, ci->expr);
					return -EINVAL;
				}
			} else if (val &&
				   (!strcmp(tok, "signal") || !strcmp(tok, "syscall") ||
				    !strcmp(tok, "delay_enter") || !strcmp(tok, "delay_exit") ||
				    !strcmp(tok, "poke_enter") || !strcmp(tok, "poke_exit"))) {
				cli_error("-e %s= with %s= is not supported yet (utrace injects "
					  "error= and retval=)",
					  q, tok);
				return -EINVAL;
			} else {
				cli_error(
					"bad -e %s='%s': unknown '%s%s' (expected error=, %swhen=)",
					q, ci->expr, tok, val ? "=" : "",
					ci->fault ? "" : "retval=, ");
				return -EINVAL;
			}
		}
		if (!have_err && !have_ret) {
			if (!ci->fault) {
				cli_error("bad -e inject='%s': give error=ERRNO or retval=N",
					  ci->expr);
				return -EINVAL;
			}
			r->ret = -ENOSYS;
		}
		t->nr_rules++;
		for (nr = 0; nr < SYSDEC_NR_MAX; nr++) {
			if (!sysdec_set_has(&set, nr))
				continue;
			t->rule_of[nr] = (uint8_t)t->nr_rules;
		}
	}
	return 0;
}

/*
 * -b kernel: the process never stops, so nothing of it is read here: the
 * decoders' reads are answered from the memory BPF copied with the record
 * (bpf/uprobe-sc.h), as it was at the entry (sysdec_decode_entry()) or at
 * the return (sysdec_decode_exit(): what was copied there first). A read
 * in no region, or past the end of a cut string, fails: the decoder
 * prints the address, as without the copy.
 */
#define KERNEL_STR_MAX 511 /* bpf/uprobe-abi.h UK_SC_CAP_MAX - 1 */

struct kmem {
	const struct utrace_record *r;
	bool exiting;
};

static ssize_t read_kernel_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct kmem *km = ctx;
	const struct utrace_record *r = km->r;
	const struct utrace_mem *m = NULL;
	unsigned int i, pass, want;
	size_t avail;

	if (r->sz <= offsetof(struct utrace_record, mem) || !r->mem)
		return -EFAULT;
	for (pass = 0; pass < 2 && !m; pass++) {
		want = pass == 0 && km->exiting ? UTRACE_MEM_EXIT : 0;
		if (pass == 1 && !km->exiting)
			break; /* at the entry, only what the entry saw */
		for (i = 0; i < r->nr_mem && !m; i++)
			if ((r->mem[i].flags & UTRACE_MEM_EXIT) == want && addr >= r->mem[i].addr &&
			    addr - r->mem[i].addr < r->mem[i].len)
				m = &r->mem[i];
	}
	if (!m)
		return -EFAULT;
	avail = m->len - (size_t)(addr - m->addr);
	if (len > avail && (m->flags & UTRACE_MEM_TRUNC))
		return -EFAULT; /* what follows was not copied */
	if (len > avail)
		len = avail;
	memcpy(buf, (const char *)m->data + (addr - m->addr), len);
	return (ssize_t)len;
}

/*
 * -b kernel -s: one syscall's record from BPF at its return, written by
 * the ptrace path's decoders and writer from its number, arguments,
 * return value and the memory copied with it.
 */
static int on_kernel_record(const struct utrace_record *r, void *data)
{
	struct tracer *t = data;
	struct kmem km = { .r = r };
	struct task tk;

	if (r->type == UTRACE_REC_LOST) {
		cli_error("%llu syscall records were lost (ring buffer full)",
			  (unsigned long long)r->lost);
		return 0;
	}
	if ((r->type != UTRACE_REC_SYSCALL_EXIT && r->type != UTRACE_REC_SYSCALL_ENTER) ||
	    !sysdec_set_has(&t->set, r->sysno))
		return 0;
	memset(&tk, 0, sizeof(tk));
	tk.tid = r->tid;
	tk.pid = r->pid;
	tk.entry_real_ns = r->ts_ns + (uint64_t)t->mono_to_real;
	tk.entry_mono_ns = r->ts_ns; /* --format chrome */
	tk.call.nr = r->sysno;
	memcpy(tk.call.args, r->args, sizeof(tk.call.args));
	tk.call.read = read_kernel_mem;
	tk.call.ctx = &km;
	/* the buffers were copied up to UK_SC_CAP_MAX - 1 bytes (utrace_uprobes_opts.sc_str_max) */
	tk.call.strsize = t->opts->strsize > KERNEL_STR_MAX ? KERNEL_STR_MAX : t->opts->strsize;
	tk.call.tid = t->opts->decode_fds ? r->tid : 0; /* -y: its /proc/TID/fd, if still there */
	sysdec_decode_entry(&tk.call);
	km.exiting = true;
	if (r->type == UTRACE_REC_SYSCALL_EXIT)
		sysdec_decode_exit(&tk.call, (long)r->retval);
	print_call(t, &tk, r->type == UTRACE_REC_SYSCALL_EXIT, r->dur_ns); /* exit: " = ?" */
	sysdec_call_clear(&tk.call);
	return 0;
}

static struct utrace_uprobes *kernel_up; /* for on_kernel_exit() */

/* -b kernel -s: a process's end, after the records before it, as the ptrace path says it */
static int on_kernel_exit(struct utrace_engine *e, struct utrace_thread *th, int status)
{
	struct tracer *t = utrace_engine__ctx(e);
	pid_t tid = utrace_thread__tid(th), pid = utrace_thread__pid(th);

	if (!t->events || tid != pid)
		return UTRACE_RESUME;
	if (kernel_up)
		utrace_uprobes__poll(kernel_up, on_kernel_record, t, 0);
	if (t->chrome) {
		if (t->chrome->f)
			chrome_thread_exit(t->chrome, tid, now_mono_ns());
		return UTRACE_RESUME;
	}
	if (t->out.format == CLI_FMT_JSON) {
		output_json_exit(&t->out, now_realtime_ns(), pid, tid, status);
		return UTRACE_RESUME;
	}
	output_prefix(&t->out, t->opts->timestamps ? now_realtime_ns() : 0, tid, show_pid(t));
	if (WIFSIGNALED(status))
		fprintf(t->out.f, "+++ killed by %s%s +++\n",
			sysdec_signal_name(WTERMSIG(status)) ?
				sysdec_signal_name(WTERMSIG(status)) :
				"?",
			WCOREDUMP(status) ? " (core dumped)" : "");
	else
		fprintf(t->out.f, "+++ exited with %d +++\n", WEXITSTATUS(status));
	return UTRACE_RESUME;
}

/*
 * -b kernel -c -s: the syscalls of the command (with -F, of its children
 * too) counted in BPF at the raw_syscalls tracepoints
 * (utrace_uprobes__count_syscalls(), lib/backend-kernel.c): no process
 * ever stops for a syscall; the session sees only the exec, the forks it
 * follows and the exits. The table is the ptrace path's (print_summary()),
 * for the numbers in -s SET; times are wall clock from entry to return.
 * Event lines (text, JSON, chrome): on_kernel_record(), from the records
 * and the memory BPF copied with them. Return: the exit status.
 */
static int kernel_summary(struct tracer *t, bool launched)
{
	struct cli_opts *o = t->opts;
	UTRACE_OPTS(utrace_uprobes_opts, uo, .backend = UTRACE_BACKEND_KERNEL,
		    .sc_str_max = o->strsize > 0 ? (unsigned int)o->strsize : 1);
	struct utrace_session_opts sopts = { .sz = sizeof(sopts), .follow_forks = o->follow_forks };
	struct utrace_launch_opts lopts = { .sz = sizeof(lopts), .kill_if_tracer_dies = true };
	struct sigaction sa = { .sa_handler = on_interrupt };
	unsigned int flags = o->follow_forks ? UTRACE_SC_FOLLOW : 0;
	struct utrace_uprobes *up = NULL;
	bool interrupted = false;
	uint64_t deadline = 0;
	int ret = EXIT_TRACE, err = 0, i, r;
	long nr;

	if (t->events && t->per_thread) {
		cli_error("-ff with -b kernel -s is not supported yet (use -b ptrace)");
		return EXIT_TRACE;
	}
	if (t->events)
		flags |= UTRACE_SC_RECORD;
	t->mono_to_real = (int64_t)now_realtime_ns() - (int64_t)now_mono_ns();
	t->nr_tasks = o->follow_forks ? 2 : 1; /* [pid] on the lines of several processes */
	if (t->nr_injects || t->nr_rules || t->nr_paths || t->status_mask != CLI_STATUS_ALL) {
		cli_error("%s is not supported with -b kernel -s yet (use -b ptrace)",
			  t->nr_injects || t->nr_rules ? "syscall injection" :
			  t->nr_paths		       ? "-P" :
							 "-z/-Z/-e status=");
		return EXIT_TRACE;
	}
	t->s = utrace_session__new(&sopts);
	if (!t->s) {
		cli_lib_error("cannot create a tracing session", -errno);
		return EXIT_TRACE;
	}
	if (o->format == CLI_FMT_CHROME && t->events) {
		chrome_open(&t->own_chrome, t->out.f);
		t->chrome = &t->own_chrome;
	}
	the_tracer = t;
	up = utrace_uprobes__new(t->s, &uo);
	if (!up) {
		if (errno == EOPNOTSUPP)
			cli_error(
				"the kernel backend is not built in (libbpf, bpftool or clang were "
				"missing at build time)");
		else if (errno == EPERM)
			cli_error("the kernel backend needs root, or CAP_BPF and CAP_PERFMON");
		else
			cli_lib_error("cannot set up the kernel backend", -errno);
		goto out;
	}
	kernel_up = up;
	{
		UTRACE_OPTS(utrace_engine_ops, eops, .exit = on_kernel_exit);

		if (!utrace_engine__attach(t->s, &eops, UTRACE_EV_EXIT, t)) {
			cli_lib_error("cannot set up the tracing engine", -errno);
			goto out;
		}
	}
	if (o->verbose > 0)
		cli_error("backend: kernel (asked for): syscalls counted in BPF at the "
			  "raw_syscalls tracepoints, no stop%s",
			  o->follow_forks ? "; children added at sched_process_fork" : "");
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (launched) {
		pid_t pid = utrace_session__launch(t->s, o->argv, &lopts);

		if (pid < 0) {
			if (pid == -ENOENT || pid == -EACCES)
				cli_error("cannot run '%s': %s", o->argv[0], strerror(-pid));
			else
				cli_lib_error("cannot launch the command", pid);
			ret = pid == -ENOENT ? 127 : pid == -EACCES ? 126 : EXIT_TRACE;
			goto out;
		}
		t->main_pid = pid;
		/* it waits in the session until the first run: nothing of it is missed */
		err = utrace_uprobes__count_syscalls(up, pid, flags | UTRACE_SC_AT_EXEC);
	} else {
		if (cli_attach_pids(t->s, o->pids, o->nr_pids))
			goto out;
		t->main_pid = o->pids[0];
		for (i = 0; i < o->nr_pids && !err; i++)
			err = utrace_uprobes__count_syscalls(up, o->pids[i], flags);
	}
	if (err) {
		cli_lib_error("cannot count system calls in the kernel", err);
		goto out;
	}
	if (o->duration > 0)
		deadline = now_mono_ns() + (uint64_t)(o->duration * 1e9);
	for (;;) {
		int64_t left = deadline ? (int64_t)(deadline - now_mono_ns()) / 1000000 : -1;

		if (deadline && left <= 0) {
			interrupted = true;
			break;
		}
		r = utrace_session__run(t->s, t->events ? 20 : deadline ? (int)left + 1 : -1);
		if (t->events)
			utrace_uprobes__poll(up, on_kernel_record, t, 0);
		if (r == UTRACE_RUN_TIMEOUT)
			continue;
		if (r == UTRACE_RUN_DONE)
			break;
		if (r == UTRACE_RUN_INTERRUPTED) {
			interrupted = true;
			break;
		}
		if (r < 0) {
			cli_lib_error("tracing failed", r);
			goto out;
		}
	}
	/* what the ring still holds */
	while (t->events && utrace_uprobes__poll(up, on_kernel_record, t, 0) > 0)
		;
	for (nr = 0; nr < SYSDEC_NR_MAX; nr++) {
		struct utrace_syscall_counts c;

		if (!sysdec_set_has(&t->set, nr) || utrace_uprobes__syscall_counts(up, nr, &c))
			continue;
		t->stats[nr].calls = c.calls;
		t->stats[nr].errors = c.errors;
		t->stats[nr].total_ns = c.total_ns;
		t->stats[nr].min_ns = c.min_ns;
		t->stats[nr].max_ns = c.max_ns;
	}
	utrace_uprobes__free(up);
	up = NULL;
	if (interrupted) {
		err = utrace_session__detach(t->s);
		if (err && err != -ESRCH)
			cli_lib_error("detach failed", err);
	}
	if (t->chrome)
		chrome_close(t->chrome); /* complete before the -c table */
	print_tables(t);
	output_flush(&t->out);
	if (launched && !interrupted) {
		ret = utrace_session__exit_status(t->s);
		if (ret < 0)
			ret = EXIT_TRACE;
	} else if (launched) {
		int st;

		ret = 0;
		if (waitpid(t->main_pid, &st, 0) == t->main_pid)
			ret = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	} else {
		ret = 0;
	}
out:
	kernel_up = NULL;
	utrace_uprobes__free(up);
	utrace_session__close(t->s);
	t->s = NULL;
	the_tracer = NULL;
	if (t->chrome) {
		chrome_close(t->chrome);
		t->chrome = NULL;
	}
	output_close(&t->out);
	return ret;
}

/*
 * The options of -s, checked before anything runs: sets, injections,
 * signals, paths. Return: 0, or the exit status after one line.
 */
static int sc_prepare(struct tracer *t, struct cli_opts *opts, bool embedded)
{
	char errbuf[256];

	t->opts = opts;
	/* not ignored silently: said before anything runs (embedded: the functions') */
	if (opts->stack && opts->backend == CLI_BACKEND_KERNEL) {
		cli_error("-k with -s is not available on the kernel backend yet: -b ptrace -k "
			  "(the stack of each syscall, as strace -k)");
		return EXIT_USAGE;
	}
	if (opts->hist && opts->backend == CLI_BACKEND_KERNEL) {
		cli_error("-H with -s is not available on the kernel backend yet: -c gives the "
			  "calls, errors and times of each syscall (or -b ptrace -H)");
		return EXIT_USAGE;
	}
	aggr_init(&t->hist);
	if (opts->format == CLI_FMT_CHROME && opts->per_thread_files && opts->output) {
		cli_error("-ff writes one text file per thread: not with --format chrome");
		return EXIT_USAGE;
	}
	if (sysdec_parse_set(opts->syscalls ? opts->syscall_set : "none", &t->set, errbuf,
			     sizeof(errbuf))) {
		cli_error("%s", errbuf);
		return EXIT_USAGE;
	}
	t->filter_set = t->set;
	if (parse_injects(t) || parse_sc_injects(t))
		return EXIT_USAGE;
	t->status_mask = opts->status_mask ? opts->status_mask : CLI_STATUS_ALL;
	if (parse_signals(t, opts->signal_set) || parse_paths(t))
		return EXIT_USAGE;
	sysdec_set_xlat_style(opts->xlat_style);
	sysdec_set_decode_fds(opts->decode_fds);
	t->per_thread = opts->per_thread_files && opts->output;
	/* -H, as -c: the tables at the end instead of the lines (-C: both) */
	t->events = !(opts->summary || opts->hist) || opts->summary_events;
	return 0;
}

/*
 * -s with -f/-u/-r (ltrace -S): this engine in the function tracer's
 * session (cmd-trace.c, ptrace backend), writing into its output: both
 * engines see the stops in the order they happen, so the lines are in time
 * order. PTRACE_SYSCALL stops (no seccomp filter: the session is the
 * function tracer's, and -d must leave the command running). Each line has
 * the function lines' "[tid] " prefix. Return: 0, or an exit status after
 * one line.
 */
int syscalls_embed(struct cli_opts *opts, struct utrace_session *s, const struct output *out,
		   struct chrome *chrome,
		   bool (*want)(pid_t pid, struct utrace_thread *th, const siginfo_t *si))
{
	static struct tracer tr;
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
	int ret = sc_prepare(t, opts, true);

	if (ret)
		return ret;
	if (t->per_thread) {
		cli_error("-ff -o FILE is not supported with -s and -f/-u/-r yet");
		return EXIT_USAGE;
	}
	t->embedded = true;
	t->want = want;
	t->chrome = chrome; /* the function tracer's writer: one time line */
	t->out = *out;
	t->out.own = false;
	t->s = s;
	t->exec_seen = !opts->argc; /* attached: the program runs already */
	if (!utrace_engine__attach(s, &ops,
				   UTRACE_EV_SYSCALL | UTRACE_EV_ATTACH | UTRACE_EV_EXEC |
					   UTRACE_EV_EXIT | UTRACE_EV_SIGNAL,
				   t)) {
		cli_lib_error("cannot set up the syscall engine", -errno);
		return EXIT_TRACE;
	}
	the_embedded = t;
	return 0;
}

/* The end of an embedded trace: -c's syscall table, after the function one. */
void syscalls_embed_end(void)
{
	struct tracer *t = the_embedded;

	if (!t)
		return;
	print_tables(t);
	aggr_clear(&t->hist);
	while (t->unwinders)
		sc_unwinder_drop(t, t->unwinders->pid);
	the_embedded = NULL;
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
	bool launched = opts->argc > 0, interrupted = false;
	int ret, err, r;

	ret = sc_prepare(t, opts, false);
	if (ret)
		return ret;
	ret = EXIT_TRACE;
	{
		/* -ff -o FILE: FILE itself is not written (the -c table goes to stderr) */
		struct cli_opts o = *opts;

		if (t->per_thread)
			o.output = NULL;
		err = output_open(&t->out, &o);
	}
	if (err) {
		cli_error("cannot open output file '%s': %s", opts->output, strerror(-err));
		return EXIT_USAGE;
	}
	if (opts->backend == CLI_BACKEND_KERNEL)
		return kernel_summary(t, launched); /* never the ptrace engine behind -b kernel */
	if (opts->format == CLI_FMT_CHROME && t->events) {
		chrome_open(&t->own_chrome, t->out.f);
		t->chrome = &t->own_chrome;
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
	if (t->chrome)
		chrome_close(t->chrome); /* complete before the -c table (stderr, maybe its file) */
	print_tables(t);
	aggr_clear(&t->hist);
	while (t->unwinders)
		sc_unwinder_drop(t, t->unwinders->pid);
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
	for (r = 0; r < TASK_HASH; r++) /* -ff: threads still traced at the end (-d, -p) */
		for (struct task *tk = t->tasks[r]; tk; tk = tk->next)
			task_close_output(tk);
	if (t->chrome) {
		chrome_close(t->chrome); /* the calls still open end at the last event */
		t->chrome = NULL;
	}
	output_close(&t->out);
	free(filter);
	while (t->nr_paths)
		free(t->paths[--t->nr_paths]);
	return ret;
}
