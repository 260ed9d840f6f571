/* SPDX-License-Identifier: MIT */
/*
 * test-backends.c - one behaviour suite of the uprobes layer, written
 * against the public API (include/utrace/) and run once per backend with
 * the same expectations: the built-in actions (probe.h) must give the same
 * figures whether they run in the tracer at each ptrace stop, inside the
 * target (the agent) or in BPF (the kernel, where it is built and allowed;
 * it cannot inject: refused). Each scenario runs on every backend in turn;
 * where a backend cannot do what a scenario asks, or has a bug there, its
 * turn says so (harness_note) and the others keep the full expectation.
 * The scenarios of test-uprobes.c that need no tracer-side handler live
 * here (test-agent-behaviour.c's table says where each went):
 *  - count_exact_threads: launch, COUNT of work() in 4 threads x 5,000
 *    calls: exactly 20,000 on every backend.
 *  - mt_exact_counts: 8 threads x 20,000 calls of work() (3 x 8 x 100,000
 *    in the slow suite), COUNT and HIST: every entry and return counted
 *    and timed, as the target's "expect" line says; none missed.
 *  - fib_recursion_and_order: RECORD of fib(6): the exact entry/return
 *    sequence of the recursion (arguments, return values) from
 *    utrace_uprobes__poll(); fib(20) counted by two probes on the one
 *    point: both 21,891 calls, every return seen.
 *  - longjmp_unwinds_return_instances: longjmp out of 5 of 10 calls of
 *    jumper(): 5 returns, 5 missed; work() afterwards returns (1 and 1);
 *    the records say the same.
 *  - cxx_exception_through_return_probes: s-agent-cxx throws C++
 *    exceptions through 11 return-probed frames, 50 times: the program's
 *    own checks pass (the unwinder never meets a trampoline), every
 *    thrown-through return is seen or missed, the 8,850 calls of
 *    probed_fib() afterwards all return. The kernel: skipped (a bug: the
 *    program dies in std::terminate).
 *  - pthread_exit_through_return_probes: 20 threads leave by
 *    pthread_exit() or cancellation from under 6 return-probed frames:
 *    the cleanup handlers run (the target checks), 120 calls, 120 missed;
 *    work() afterwards returns, on ptrace and the agent (its guard on
 *    libgcc_s's _Unwind_ForcedUnwind in launch mode too); the kernel:
 *    skipped (no unwind info at its uretprobe trampoline, as for C++
 *    exceptions).
 *  - cancellation_through_return_probes: 3 threads cancelled from under 6
 *    return-probed frames in a program that never loads libgcc_s itself:
 *    the cleanup handlers run, 18 calls, 18 missed (the agent guards
 *    glibc's own path to the forced unwind); the kernel: skipped.
 *  - signal_handler_calls_probed_function: work() 200 times in main and
 *    200 times in a signal handler: 400 calls and returns, counted and
 *    recorded.
 *  - tail_call_chains_return_instances: tail_a() tail-calls tail_b(), both
 *    return-probed: 100 calls and returns of each, and the records in
 *    order (a's entry, b's entry, b's return, a's return, the values).
 *  - coroutine_stack_switch_survives: co_func() yields to main on another
 *    stack (swapcontext), main calls work(), co_func() resumes: the right
 *    result, work() 1 call and 1 return; co_func() 1 call, its return
 *    reported or not (noted). The kernel: skipped (its uretprobes kill
 *    the program, SIGILL).
 *  - vfork_exec_keeps_parent_probes: 40 calls, vfork() + exec, 40 calls:
 *    80 counted and recorded, the session following forks or not.
 *  - hist_and_errors: launch s-timed: timed() 3 calls of >= 2, 3 and
 *    5 ms, timed exactly (sum >= 10 ms, min >= 2 ms, max >= 5 ms, the
 *    histogram's buckets hold the 3 calls); close() 4 calls, 3 errors
 *    (EBADF: the prototype's NEG32 rule).
 *  - record_strings_at_the_hit: s-strings: strtol()'s string argument and
 *    name_of()'s returned string, copied at the hit (the target overwrites
 *    both at once), delivered by utrace_uprobes__poll() as struct
 *    utrace_record in order; bad_str()'s bad pointer is a FAULT flag;
 *    name_of() and bad_str() are points of one SPEC whose strings differ
 *    (utrace_probe_opts.point_opts); name_of()'s stacks start in main().
 *  - attach_counts_live: attach to a running loop, COUNT read twice while
 *    it runs (the second read is larger), unregister, free, detach: the
 *    code bytes are the file's again and the program goes on.
 *  - inject_every_nth: get_value() returns 7 at every 2nd call: the sum
 *    the program prints and the injected count agree.
 *  - dlopen_pending_spec: a SPEC on a library the program dlopen()s
 *    later stays pending and is armed when it is loaded, before its first
 *    call: every call counted; the session is run with
 *    utrace_session__run() only (no poll): the agent's dlopen() is one
 *    stop in which the tracer re-plans, not a wait for a poll that never
 *    comes (without it lib_func() ran unprobed: 0 counted).
 *  - attach_then_dlopen: attached first, a SPEC pending on a library the
 *    program dlopen()s afterwards is armed before its first call (the
 *    agent, injected, does not see the dlopen: its maps are watched).
 *  - exec_rearms: N calls, execve of the same program, M calls: the SPEC
 *    is armed again in the new image, N + M counted.
 *  - fork_child_is_clean: a fork child (not followed) runs without the
 *    parent's probes: its work() bytes are the file's, the parent's 2 x N
 *    calls are counted, none of the child's M.
 *  - attach_probe_detach_restores_code: attached to 4 threads, two probes
 *    on work() (one timing returns) until 2,000 calls, then free and
 *    detach: the code bytes are the file's, no XOL area is left (ptrace),
 *    and the program's own checks pass.
 *  - refused_site_fails_registration: a probe on a ud2 is refused
 *    (UTRACE_ERRNO__NOT_PATCHABLE), by SPEC and by address, its bytes
 *    untouched; a bad address is EFAULT, a pid not traced ESRCH.
 *  - attach_detach_cycles: 5 sessions one after the other on one process
 *    of 8 threads, each counting 500 calls and detaching with the code
 *    bytes the file's; the process runs on to its own checks, on every
 *    backend (the agent's late traps across sessions: agent/patch.c).
 *  - session_detach_before_uprobes_free, session_close_before_uprobes_free:
 *    the session let go while probes are armed, before the free: the code
 *    is the file's, the process runs on, the free touches nothing.
 *  - agent_refuses_tracer_handlers: a handler on the agent backend is
 *    EOPNOTSUPP; AUTO says why it chose what it chose.
 *  - module_through_the_api: a C probe module loaded by the library runs
 *    its handlers on ptrace and the agent with the same counters and
 *    records; the kernel refuses it. module_refused_by_the_api: the
 *    checks of utrace_module__open().
 * Suite 'ptrace'.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define UTRACE_MODULE_LOADER /* the descriptor is read here, nothing redirected */
#include "utrace/utrace.h"
#include "utrace/module.h"
#include "ptrace-util.h"

static const enum utrace_backend backends[] = { UTRACE_BACKEND_PTRACE, UTRACE_BACKEND_AGENT,
						UTRACE_BACKEND_KERNEL };

/*
 * The kernel backend runs where it is built and allowed (root or
 * CAP_BPF + CAP_PERFMON, BTF); elsewhere its turn is skipped with a note.
 */
static bool backend_here(enum utrace_backend b)
{
	static int kernel = -1;

	if (b != UTRACE_BACKEND_KERNEL)
		return true;
	if (kernel < 0) {
		UTRACE_OPTS(utrace_uprobes_opts, uo, .backend = b);
		struct utrace_session *s = utrace_session__new(NULL);
		struct utrace_uprobes *up = s ? utrace_uprobes__new(s, &uo) : NULL;

		kernel = up != NULL;
		if (!up)
			harness_note("the kernel backend is not here (%s): its turns are skipped",
				     strerror(errno));
		utrace_uprobes__free(up);
		utrace_session__close(s);
	}
	return kernel;
}

#define FOR_EACH_BACKEND(b)                                                                \
	for (unsigned int b##_i = 0;                                                       \
	     b##_i < sizeof(backends) / sizeof(backends[0]) && ((b) = backends[b##_i], 1); \
	     b##_i++)                                                                      \
		if (backend_here(b))

static int out_fd = -1;

static uint64_t sym_addr(pid_t pid, const char *sym)
{
	struct utrace_image *img = utrace_image__open_pid(pid);
	struct utrace_spec spec;
	struct utrace_match *m = NULL;
	size_t nr = 0;
	uint64_t addr;

	CHECK(img);
	CHECK_EQ(utrace_spec__parse(sym, &spec, NULL, 0), 0);
	CHECK_EQ(utrace_image__resolve(img, &spec, &m, &nr, NULL), 0);
	CHECK(nr >= 1);
	addr = m[0].addr;
	free(m);
	utrace_spec__clear(&spec);
	utrace_image__close(img);
	return addr;
}

/* the launched command's stdout into a pipe the test reads (not the TAP stream) */
static int pre_exec(void *ctx)
{
	(void)ctx;
	return out_fd >= 0 && dup2(out_fd, 1) < 0;
}

struct run {
	struct utrace_session *s;
	struct utrace_uprobes *up;
	pid_t pid;
	int out; /* read end of the command's stdout */
};

/*
 * A session (@so: NULL, or following forks) and a layer with @uo
 * (agent_untraced, flags: the agent's own tests).
 */
static struct run run_new_sess(const struct utrace_session_opts *so,
			       const struct utrace_uprobes_opts *uo)
{
	struct run r = { 0 };

	r.s = utrace_session__new(so);
	CHECK(r.s);
	r.up = utrace_uprobes__new(r.s, uo);
	CHECK_MSG(r.up, "backend %s: %s", utrace_backend_str(uo->backend), strerror(errno));
	CHECK_EQ(utrace_uprobes__backend(r.up), uo->backend);
	return r;
}

static struct run run_new_opts(const struct utrace_uprobes_opts *uo)
{
	return run_new_sess(NULL, uo);
}

static struct run run_new(enum utrace_backend b)
{
	UTRACE_OPTS(utrace_uprobes_opts, uo, .backend = b);

	return run_new_opts(&uo);
}

static void run_launch(struct run *r, const char *target, const char *const *args)
{
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = pre_exec);
	char *argv[12];
	int p[2], i = 0;

	CHECK(pipe2(p, O_CLOEXEC) == 0);
	argv[i++] = (char *)(target[0] == '/' ? target : target_path(target)); /* or a path */
	while (args && *args && i < 11)
		argv[i++] = (char *)*args++;
	argv[i] = NULL;
	out_fd = p[1];
	r->pid = utrace_session__launch(r->s, argv, &lo);
	out_fd = -1;
	close(p[1]);
	r->out = p[0];
	CHECK_MSG(r->pid > 0, "launch %s: %s", target, strerror(-r->pid));
}

/* Run the session until the command exits; its exit status. */
static int run_to_exit(struct run *r, utrace_record_fn_t fn, void *ctx)
{
	int st, rounds;

	for (rounds = 0; rounds < 600; rounds++) { /* 60 s */
		int n = fn ? utrace_uprobes__poll(r->up, fn, ctx, 100) :
			     utrace_session__run(r->s, 100);

		CHECK_MSG(n >= 0, "poll/run: %s", strerror(-n));
		st = utrace_session__exit_status(r->s);
		if (st != -EAGAIN) {
			while (fn && utrace_uprobes__poll(r->up, fn, ctx, 0) > 0)
				; /* what the rings still hold */
			return st;
		}
	}
	CHECK_MSG(0, "the command did not exit in 60 s");
	return -1;
}

/* What the exited command printed (its stdout to EOF), in @buf. */
static const char *run_output(struct run *r, char *buf, size_t size)
{
	size_t n = 0;

	while (n + 1 < size) {
		struct pollfd pf = { r->out, POLLIN, 0 };
		ssize_t k;

		CHECK_MSG(poll(&pf, 1, 10000) == 1, "no EOF from the command's stdout");
		k = read(r->out, buf + n, size - 1 - n);
		CHECK(k >= 0);
		if (!k)
			break;
		n += (size_t)k;
	}
	buf[n] = 0;
	return buf;
}

/* "KEY=N" in the target's output (its "expect ..." line), -1 if not there. */
static long expect(const char *out, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = out ? strstr(out, pat) : NULL;
	return p ? atol(p + strlen(pat)) : -1;
}

static void run_free(struct run *r)
{
	utrace_uprobes__free(r->up);
	utrace_session__close(r->s);
	if (r->out >= 0)
		close(r->out);
}

static struct utrace_probe *probe(struct run *r, const char *spec, unsigned int actions,
				  int err_kind)
{
	UTRACE_OPTS(utrace_probe_opts, o, .actions = actions, .err_kind = err_kind);
	struct utrace_probe *p = utrace_probe__register_spec(r->up, spec, &o);

	CHECK_MSG(p, "register %s on %s: %s", spec,
		  utrace_backend_str(utrace_uprobes__backend(r->up)), strerror(errno));
	return p;
}

TEST(count_exact_threads)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "mt", "5000", "4", NULL };
		struct run r = run_new(b);
		struct utrace_probe *p = probe(&r, "work", UTRACE_ACT_COUNT | UTRACE_ACT_NORET, 0);
		struct utrace_probe_counts c;

		run_launch(&r, "s-uprobes", args);
		CHECK_EQ(run_to_exit(&r, NULL, NULL), 0);
		CHECK_EQ(utrace_probe__counts(p, &c), 0);
		CHECK_MSG(c.calls == 20000, "%s: %llu calls of work(), want 20000",
			  utrace_backend_str(b), (unsigned long long)c.calls);
		CHECK_EQ(c.returns, 0);
		run_free(&r);
	}
}

/*
 * 8 threads x 20,000 calls of work() (8 x 100,000, 3 runs, in the slow
 * suite): every entry and every return counted and timed, exactly, as the
 * target's "expect" line says; none missed.
 */
static void mt_once(enum utrace_backend b, long calls, int run)
{
	char n[32], out[256];
	const char *args[] = { "mt", n, "8", NULL };
	struct run r = run_new(b);
	struct utrace_probe *p = probe(&r, "work", UTRACE_ACT_COUNT | UTRACE_ACT_HIST, 0);
	struct utrace_probe_counts c;
	struct utrace_uprobes_stats ust;
	const char *bn = utrace_backend_str(b);
	long want = 8 * calls;

	snprintf(n, sizeof(n), "%ld", calls);
	run_launch(&r, "s-uprobes", args);
	CHECK_EQ(run_to_exit(&r, NULL, NULL), 0);
	CHECK_EQ(expect(run_output(&r, out, sizeof(out)), "entries"), want);
	CHECK_EQ(expect(out, "returns"), want);
	CHECK_EQ(utrace_probe__counts(p, &c), 0);
	CHECK_MSG(c.calls == (uint64_t)want && c.returns == (uint64_t)want &&
			  c.timed == (uint64_t)want && !c.missed_returns,
		  "%s: %llu calls %llu returns %llu timed %llu missed, want %ld", bn,
		  (unsigned long long)c.calls, (unsigned long long)c.returns,
		  (unsigned long long)c.timed, (unsigned long long)c.missed_returns, want);
	/* every return had its entry's time: none came before it */
	CHECK_MSG(c.min_ns <= c.max_ns && c.sum_ns >= c.max_ns, "%s: min %llu max %llu sum %llu",
		  bn, (unsigned long long)c.min_ns, (unsigned long long)c.max_ns,
		  (unsigned long long)c.sum_ns);
	CHECK_EQ(utrace_uprobes__stats(r.up, &ust), 0);
	CHECK_EQ(ust.foreign_traps, 0);
	harness_note("%s run %d: %llu entries, %llu returns", bn, run, (unsigned long long)c.calls,
		     (unsigned long long)c.returns);
	run_free(&r);
}

TEST_TIMEOUT(mt_exact_counts, 400)
{
	enum utrace_backend b;
	int run, runs = (int)harness_size(1, 3);

	FOR_EACH_BACKEND(b)
	{
		for (run = 0; run < runs; run++)
			mt_once(b, harness_size(20000, 100000), run);
	}
}

/* The entry/return sequence of fib(@n), computed from the recursion. */
static long fib_lines(long n, char *buf, size_t size, size_t *len)
{
	long r;

	*len += (size_t)snprintf(buf + *len, size - *len, "fib(%ld)\n", n);
	r = n < 2 ? n : fib_lines(n - 1, buf, size, len) + fib_lines(n - 2, buf, size, len);
	*len += (size_t)snprintf(buf + *len, size - *len, "fib() = %ld\n", r);
	return r;
}

struct seq {
	char buf[8192];
	size_t len;
	int other; /* records that are no fib() entry or return */
};

static int seq_rec(const struct utrace_record *rec, void *ctx)
{
	struct seq *q = ctx;

	if (rec->type == UTRACE_REC_ENTRY && rec->symbol && !strcmp(rec->symbol, "fib") &&
	    rec->nargs >= 1)
		q->len += (size_t)snprintf(q->buf + q->len, sizeof(q->buf) - q->len, "fib(%ld)\n",
					   (long)rec->args[0]);
	else if (rec->type == UTRACE_REC_RETURN && rec->symbol && !strcmp(rec->symbol, "fib"))
		q->len += (size_t)snprintf(q->buf + q->len, sizeof(q->buf) - q->len,
					   "fib() = %ld\n", (long)rec->retval);
	else
		q->other++;
	CHECK(q->len < sizeof(q->buf));
	return 0;
}

/*
 * fib(6) recorded: the exact entry/return sequence of the recursion, with
 * each call's argument and return value; fib(20) counted: 21,891 calls
 * and returns (the target's "expect" line), by two probes on the one point.
 */
TEST(fib_recursion_and_order)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *seq6[] = { "fib", "6", NULL }, *big[] = { "fib", "20", NULL };
		UTRACE_OPTS(utrace_probe_opts, o, .actions = UTRACE_ACT_RECORD, .nargs = 1);
		struct run r = run_new(b);
		struct seq *q = calloc(1, sizeof(*q));
		char want[8192], out[256];
		size_t len = 0;
		struct utrace_probe *p1, *p2;
		struct utrace_probe_counts c1, c2;
		const char *bn = utrace_backend_str(b);

		CHECK(q && utrace_probe__register_spec(r.up, "fib", &o));
		run_launch(&r, "s-uprobes", seq6);
		CHECK_EQ(run_to_exit(&r, seq_rec, q), 0);
		CHECK_EQ(expect(run_output(&r, out, sizeof(out)), "result"), 8);
		fib_lines(6, want, sizeof(want), &len);
		CHECK_MSG(!strcmp(q->buf, want) && !q->other,
			  "%s: %d other records, got:\n%s\nwant:\n%s", bn, q->other, q->buf, want);
		free(q);
		run_free(&r);

		r = run_new(b);
		p1 = probe(&r, "fib", UTRACE_ACT_COUNT | UTRACE_ACT_HIST, 0);
		p2 = probe(&r, "fib", UTRACE_ACT_COUNT | UTRACE_ACT_NORET, 0); /* the same point */
		run_launch(&r, "s-uprobes", big);
		CHECK_EQ(run_to_exit(&r, NULL, NULL), 0);
		CHECK_EQ(expect(run_output(&r, out, sizeof(out)), "result"), 6765);
		CHECK_EQ(utrace_probe__counts(p1, &c1), 0);
		CHECK_EQ(utrace_probe__counts(p2, &c2), 0);
		CHECK_MSG((long)c1.calls == expect(out, "entries") &&
				  (long)c1.returns == expect(out, "returns") &&
				  !c1.missed_returns && c2.calls == c1.calls && !c2.returns,
			  "%s: %llu calls %llu returns %llu missed, the second probe %llu calls "
			  "%llu returns; want %ld",
			  bn, (unsigned long long)c1.calls, (unsigned long long)c1.returns,
			  (unsigned long long)c1.missed_returns, (unsigned long long)c2.calls,
			  (unsigned long long)c2.returns, expect(out, "entries"));
		run_free(&r);
	}
}

/*
 * @p's figures are @calls entries, @returns returns and @missed returns
 * missed (< 0: not checked).
 */
static void check_counts(enum utrace_backend b, struct utrace_probe *p, long calls, long returns,
			 long missed)
{
	struct utrace_probe_counts c;

	CHECK_EQ(utrace_probe__counts(p, &c), 0);
	CHECK_MSG((long)c.calls == calls && (long)c.returns == returns &&
			  ((long)c.missed_returns == missed || missed < 0),
		  "%s: %s: %llu calls %llu returns %llu missed, want %ld %ld %ld",
		  utrace_backend_str(b), utrace_probe__name(p), (unsigned long long)c.calls,
		  (unsigned long long)c.returns, (unsigned long long)c.missed_returns, calls,
		  returns, missed);
}

/*
 * Launch @target @args, run it to its exit (status 0), its records to @fn
 * (NULL: none polled); its stdout in @out.
 */
static const char *run_all(struct run *r, const char *target, const char *const *args,
			   utrace_record_fn_t fn, void *ctx, char *out, size_t size)
{
	int st;

	run_launch(r, target, args);
	st = run_to_exit(r, fn, ctx);
	CHECK_MSG(st == 0, "%s: %s exited with %d",
		  utrace_backend_str(utrace_uprobes__backend(r->up)), target, st);
	return run_output(r, out, size);
}

#define CALLS (UTRACE_ACT_COUNT | UTRACE_ACT_HIST) /* calls and returns */
#define CALLS_REC (CALLS | UTRACE_ACT_RECORD) /* and their records */

/* ENTRY and RETURN records of up to 4 functions, by name */
struct tally {
	const char *fn[4];
	long entries[4], returns[4], other;
};

static int tally_rec(const struct utrace_record *rec, void *ctx)
{
	struct tally *t = ctx;
	int i;

	for (i = 0; i < 4 && t->fn[i]; i++)
		if (rec->symbol && !strcmp(rec->symbol, t->fn[i])) {
			if (rec->type == UTRACE_REC_ENTRY)
				t->entries[i]++;
			else if (rec->type == UTRACE_REC_RETURN)
				t->returns[i]++;
			else
				break;
			return 0;
		}
	t->other++;
	return 0;
}

/* @t's records of function @i: @entries entries and @returns returns */
static void check_tally(enum utrace_backend b, const struct tally *t, int i, long entries,
			long returns)
{
	CHECK_MSG(t->entries[i] == entries && t->returns[i] == returns && !t->other,
		  "%s: %s: %ld entry and %ld return records (%ld others), want %ld and %ld",
		  utrace_backend_str(b), t->fn[i], t->entries[i], t->returns[i], t->other, entries,
		  returns);
}

/*
 * longjmp out of jumper() at odd i: its return instances are unwound
 * past (missed, as the target counts), the 5 others return; work(1)
 * after the last longjmp returns normally (no stale instance taken).
 */
TEST(longjmp_unwinds_return_instances)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "longjmp", "10", NULL };
		struct run r = run_new(b);
		struct utrace_probe *pj = probe(&r, "jumper", CALLS_REC, 0),
				    *pw = probe(&r, "work", CALLS_REC, 0);
		struct tally t = { { "jumper", "work" } };
		char out[256];

		run_all(&r, "s-uprobes", args, tally_rec, &t, out, sizeof(out));
		check_tally(b, &t, 0, expect(out, "entries"), expect(out, "returns"));
		check_tally(b, &t, 1, 1, 1);
		CHECK_EQ(expect(out, "entries"), 10);
		check_counts(b, pj, expect(out, "entries"), expect(out, "returns"),
			     b == UTRACE_BACKEND_KERNEL ? -1 : expect(out, "missed"));
		if (b == UTRACE_BACKEND_KERNEL)
			harness_note("kernel: missed returns not checked (the kernel drops the "
				     "uretprobe instances unwound past silently: none counted)");
		check_counts(b, pw, 1, 1, 0);
		run_free(&r);
	}
}

/*
 * s-agent-cxx ROUNDS DEPTH throws from DEPTH + 1 probed_throw() frames whose
 * return addresses are hijacked; the unwinder finds no unwind info for the
 * trampoline unless the unwind guard on _Unwind_RaiseException put the real
 * ones back first (std::terminate, exit 134, without it). 50 rounds:
 * probed_throw(0..10) throws from depth 10, fib(10) is 177 calls that all
 * return.
 */
TEST(cxx_exception_through_return_probes)
{
	enum utrace_backend b;
	char prog[4096];

	snprintf(prog, sizeof(prog), "%s", harness_build_path("tests/agent/s-agent-cxx"));
	if (access(prog, X_OK))
		SKIP("no C++ compiler: %s not built", prog);
	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "50", "10", NULL };
		struct run r;
		struct utrace_probe *pt, *pf;
		struct tally t = { { "probed_throw" } };
		struct utrace_probe_counts c;
		char out[256];

		if (b == UTRACE_BACKEND_KERNEL) {
			/*
			 * BUG (kernel backend): it has no unwind guard, so the
			 * unwinder meets the uretprobe trampoline ([uprobes], no
			 * unwind info) and the traced program dies in std::terminate
			 * (exit 134: `utrace -b kernel -c -f probed_throw --
			 * s-agent-cxx 50 10`). backend-kernel.c says the kernel's
			 * uretprobes handle unwinding themselves: they do for
			 * longjmp, not for an unwinder that reads the frames
			 */
			harness_note("kernel: skipped: BUG: a C++ throw through a return-probed "
				     "frame kills the program (std::terminate, exit 134)");
			continue;
		}
		r = run_new(b);
		pt = probe(&r, "probed_throw", CALLS_REC, 0);
		pf = probe(&r, "probed_fib", CALLS, 0);
		run_all(&r, prog, args, tally_rec, &t, out, sizeof(out));
		check_counts(b, pf, 50 * 177, 50 * 177, 0);
		/* the thrown-through frames: returns seen or missed, never both, never lost */
		CHECK_EQ(utrace_probe__counts(pt, &c), 0);
		CHECK_MSG(
			c.calls == 50 * 11 && c.returns + c.missed_returns == c.calls &&
				(long)c.returns == t.returns[0] && t.entries[0] == 50 * 11,
			"%s: probed_throw %llu calls %llu returns %llu missed, %ld and %ld records",
			utrace_backend_str(b), (unsigned long long)c.calls,
			(unsigned long long)c.returns, (unsigned long long)c.missed_returns,
			t.entries[0], t.returns[0]);
		harness_note("%s: probed_throw: %llu returns, %llu missed", utrace_backend_str(b),
			     (unsigned long long)c.returns, (unsigned long long)c.missed_returns);
		run_free(&r);
	}
}

/*
 * pthread_exit() and cancellation from the callee of 6 return-probed
 * exiter() frames, in 20 threads: glibc's forced unwind must find the
 * thread function's cleanup handler (in a library that loads libgcc_s at
 * its dlopen: the unwinder's guards are armed then); s-uprobes exits 1 if
 * it does not. Every exiter() return is missed, work() afterwards returns.
 */
TEST(pthread_exit_through_return_probes)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		char lib[4096], out[256];
		/*
		 * The agent in launch mode: a cancellation acted upon inside libc
		 * reaches _Unwind_ForcedUnwind through a pointer libc took from
		 * libgcc_s, past the agent's interposer: the host guards it with
		 * a probe once libgcc_s is loaded, as for an injected agent
		 * (before: the cleanup handler was skipped, s-uprobes exited 1).
		 */
		const char *args[] = { "pexit", lib, "20", "5", NULL };
		struct tally t = { { "exiter", "work" } };
		struct utrace_probe *pe, *pw;
		struct run r;

		if (b == UTRACE_BACKEND_KERNEL) {
			/* the bug of cxx_exception_through_return_probes: no unwind guard */
			harness_note("kernel: skipped: BUG: a forced unwind through a "
				     "return-probed frame skips the cleanup handler (s-uprobes "
				     "exits 1, even with 1 thread: no unwind guard)");
			continue;
		}
		snprintf(lib, sizeof(lib), "%s", target_path("libuprobe-unwind.so"));
		r = run_new(b);
		pe = probe(&r, "exiter", CALLS_REC, 0);
		pw = probe(&r, "work", CALLS_REC, 0);
		run_all(&r, "s-uprobes", args, tally_rec, &t, out, sizeof(out));
		CHECK_EQ(expect(out, "entries"), 20 * 6);
		check_counts(b, pe, expect(out, "entries"), expect(out, "returns"),
			     expect(out, "missed"));
		check_counts(b, pw, 1, 1, 0);
		check_tally(b, &t, 0, expect(out, "entries"), expect(out, "returns"));
		check_tally(b, &t, 1, 1, 1);
		run_free(&r);
	}
}

/*
 * Cancellation in a program that never loads libgcc_s itself (glibc does,
 * at the first one, and unwinds through its own pointer to
 * _Unwind_ForcedUnwind, past the agent's interposer): 3 threads cancelled
 * from under 6 return-probed deep() frames; their cleanup handlers (found
 * by the unwind info, -fexceptions) run, s-cancel checks. The agent loads
 * libgcc_s at the program's pthread_cancel() (agent/interpose.c) and the
 * host guards it before the cancellation is sent (before: cleanups=0, the
 * program exited 1).
 */
TEST(cancellation_through_return_probes)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "3", "5", NULL };
		struct utrace_probe *p;
		struct run r;
		char out[256];

		if (b == UTRACE_BACKEND_KERNEL) {
			harness_note("kernel: skipped: a forced unwind through a kernel return "
				     "probe skips the cleanup handlers (no unwind info at the "
				     "uretprobe trampoline; said at the first return probe)");
			continue;
		}
		r = run_new(b);
		p = probe(&r, "deep", CALLS, 0);
		run_all(&r, "s-cancel", args, NULL, NULL, out, sizeof(out));
		CHECK_MSG(strstr(out, "cancelled=3 cleanups=3"), "%s: s-cancel said '%s'",
			  utrace_backend_str(b), out);
		check_counts(b, p, 18, 0, 18);
		run_free(&r);
	}
}

/* 200 calls of work() in main, 200 in a SIGUSR1 handler raised right after each */
TEST(signal_handler_calls_probed_function)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "signal", "200", NULL };
		struct run r = run_new(b);
		struct utrace_probe *p = probe(&r, "work", CALLS_REC, 0);
		struct tally t = { { "work" } };
		char out[256];

		run_all(&r, "s-uprobes", args, tally_rec, &t, out, sizeof(out));
		CHECK_EQ(expect(out, "entries"), 400);
		check_counts(b, p, expect(out, "entries"), expect(out, "returns"), 0);
		check_tally(b, &t, 0, expect(out, "entries"), expect(out, "returns"));
		run_free(&r);
	}
}

/*
 * tail_a() jumps into tail_b(), both return-probed: tail_b()'s return
 * returns from both (chained return instances), in order: tail_a's entry,
 * tail_b's entry, tail_b's return, tail_a's return, with the value.
 */
struct tail_seq {
	int n, bad;
	char why[160];
};

static int tail_rec(const struct utrace_record *rec, void *ctx)
{
	static const char *const want[] = { "E tail_a", "E tail_b", "R tail_b", "R tail_a" };
	struct tail_seq *q = ctx;
	char got[64];
	long i = q->n / 4;

	if (rec->type != UTRACE_REC_ENTRY && rec->type != UTRACE_REC_RETURN) {
		q->bad++;
		return 0;
	}
	snprintf(got, sizeof(got), "%c %s", rec->type == UTRACE_REC_ENTRY ? 'E' : 'R',
		 rec->symbol ? rec->symbol : "?");
	if (strcmp(got, want[q->n % 4]) ||
	    (rec->type == UTRACE_REC_RETURN && (long)rec->retval != (i + 1) * 3) ||
	    (rec->type == UTRACE_REC_ENTRY && rec->nargs && (long)rec->args[0] != i + (q->n % 4)))
		if (!q->bad++)
			snprintf(q->why, sizeof(q->why),
				 "record %d: '%s' retval %ld arg %ld, want '%s'", q->n, got,
				 (long)rec->retval, (long)rec->args[0], want[q->n % 4]);
	q->n++;
	return 0;
}

TEST(tail_call_chains_return_instances)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "tail", "100", NULL };
		UTRACE_OPTS(utrace_probe_opts, o, .actions = CALLS_REC, .nargs = 1);
		struct run r = run_new(b);
		struct utrace_probe *pa = utrace_probe__register_spec(r.up, "tail_a", &o),
				    *pb = utrace_probe__register_spec(r.up, "tail_b", &o);
		struct tail_seq q = { 0 };
		char out[256];

		CHECK(pa && pb);
		run_all(&r, "s-uprobes", args, tail_rec, &q, out, sizeof(out));
		CHECK_EQ(expect(out, "entries"), 100);
		check_counts(b, pa, 100, 100, 0);
		check_counts(b, pb, 100, 100, 0);
		CHECK_MSG(q.n == 400 && !q.bad, "%s: %d records, %d wrong: %s",
			  utrace_backend_str(b), q.n, q.bad, q.why);
		run_free(&r);
	}
}

/*
 * co_func() yields (swapcontext) to main, which calls work() on the main
 * stack, then resumes it: the program's result is right, work()'s return
 * is seen; co_func()'s return, on the other stack, may or may not be.
 */
TEST(coroutine_stack_switch_survives)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "coro", NULL };
		struct utrace_probe *pc, *pw;
		struct tally t = { { "co_func", "work" } };
		struct utrace_probe_counts c;
		struct run r;
		char out[256];

		if (b == UTRACE_BACKEND_KERNEL) {
			/*
			 * the kernel's uretprobes keep one stack of return instances
			 * per thread, pruned by the stack pointer: work()'s, pushed on
			 * the higher main stack, drops co_func()'s (on the coroutine's
			 * stack), whose return then finds none: "uprobe: s-uprobes:PID
			 * failed to handle uretprobe, sending SIGILL" (exit 132)
			 */
			harness_note("kernel: skipped: the kernel kills a stack switch under a "
				     "uretprobe (SIGILL: 'failed to handle uretprobe')");
			continue;
		}
		r = run_new(b);
		pc = probe(&r, "co_func", CALLS_REC, 0);
		pw = probe(&r, "work", CALLS_REC, 0);
		run_all(&r, "s-uprobes", args, tally_rec, &t, out, sizeof(out));
		CHECK_MSG(strstr(out, "coro result=15"), "%s: %s", utrace_backend_str(b), out);
		check_counts(b, pw, 1, 1, 0);
		check_tally(b, &t, 1, 1, 1);
		CHECK_EQ(utrace_probe__counts(pc, &c), 0);
		CHECK_MSG(c.calls == 1 && t.entries[0] == 1 && c.returns <= 1 &&
				  (long)c.returns == t.returns[0],
			  "%s: co_func %llu calls %llu returns, %ld and %ld records",
			  utrace_backend_str(b), (unsigned long long)c.calls,
			  (unsigned long long)c.returns, t.entries[0], t.returns[0]);
		harness_note("%s: co_func returns reported: %llu", utrace_backend_str(b),
			     (unsigned long long)c.returns);
		run_free(&r);
	}
}

/*
 * 40 calls of work(), vfork() + exec of /bin/true, 40 calls: the parent's
 * probes survive its child's exec (the child shares the memory until
 * then), with the session following forks and without.
 */
static void vfork_once(enum utrace_backend b, bool follow)
{
	UTRACE_OPTS(utrace_session_opts, so, .follow_forks = follow);
	UTRACE_OPTS(utrace_uprobes_opts, uo, .backend = b);
	const char *args[] = { "vfork", "40", NULL };
	struct run r = run_new_sess(&so, &uo);
	struct utrace_probe *p = probe(&r, "work", CALLS_REC, 0);
	struct tally t = { { "work" } };
	char out[256];

	run_all(&r, "s-uprobes", args, tally_rec, &t, out, sizeof(out));
	CHECK_EQ(expect(out, "entries"), 80);
	check_counts(b, p, 80, 80, 0);
	check_tally(b, &t, 0, 80, 80);
	run_free(&r);
}

TEST(vfork_exec_keeps_parent_probes)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		vfork_once(b, false);
		vfork_once(b, true); /* the session follows the child */
	}
}

struct rows {
	int n;
	char name[128];
	uint64_t calls, errors;
};

static int row_cb(const char *name, const char *symbol, const char *object,
		  const struct utrace_probe_counts *c, void *ctx)
{
	struct rows *rw = ctx;

	(void)symbol;
	(void)object;
	rw->n++;
	snprintf(rw->name, sizeof(rw->name), "%s", name);
	rw->calls += c->calls;
	rw->errors += c->errors;
	return 0;
}

TEST(hist_and_errors)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		struct run r = run_new(b);
		struct utrace_probe *pt = probe(&r, "timed", UTRACE_ACT_COUNT | UTRACE_ACT_HIST, 0);
		struct utrace_probe *pc =
			probe(&r, "libc:close", UTRACE_ACT_COUNT, UTRACE_ERRK_NEG32);
		struct utrace_probe_counts c;
		uint64_t in_buckets = 0;
		const char *n = utrace_backend_str(b);
		unsigned int i;

		run_launch(&r, "s-timed", NULL);
		CHECK_EQ(run_to_exit(&r, NULL, NULL), 0);
		CHECK_EQ(utrace_probe__counts(pt, &c), 0);
		CHECK_MSG(c.calls == 3 && c.returns == 3 && c.timed == 3,
			  "%s: timed() calls %llu returns %llu timed %llu, want 3", n,
			  (unsigned long long)c.calls, (unsigned long long)c.returns,
			  (unsigned long long)c.timed);
		CHECK_MSG(c.sum_ns >= 10000000 && c.min_ns >= 2000000 && c.max_ns >= 5000000 &&
				  c.max_ns < c.sum_ns && c.min_ns <= c.max_ns,
			  "%s: sum %llu min %llu max %llu ns", n, (unsigned long long)c.sum_ns,
			  (unsigned long long)c.min_ns, (unsigned long long)c.max_ns);
		for (i = 0; i < UTRACE_HIST_BUCKETS; i++)
			in_buckets += c.hist[i];
		CHECK_EQ(in_buckets, 3);
		/* every bucket holding a call has room for >= 2 ms; [1ms, 2ms) is empty */
		for (i = 0; i < UTRACE_HIST_BUCKETS; i++) {
			uint64_t lo, hi;

			utrace_hist_bucket_range(i, &lo, &hi);
			CHECK_MSG(!c.hist[i] || hi > 2000000, "%s: a call in [%llu, %llu) ns", n,
				  (unsigned long long)lo, (unsigned long long)hi);
			if (lo == 1000000)
				CHECK_MSG(hi == 2000000 && !c.hist[i], "%s: [1ms, 2ms)", n);
		}
		CHECK_EQ(utrace_probe__counts(pc, &c), 0);
		CHECK_MSG(c.calls == 4 && c.errors == 3, "%s: close() calls %llu errors %llu", n,
			  (unsigned long long)c.calls, (unsigned long long)c.errors);
		/* point by point, after the exit: the one row, under its name */
		{
			struct rows rw = { 0 };

			CHECK_EQ(utrace_probe__point_counts(pc, row_cb, &rw), 0);
			CHECK_MSG(rw.n == 1 && strstr(rw.name, ":close") && rw.calls == 4 &&
					  rw.errors == 3,
				  "%s: %d rows, '%s' %llu calls %llu errors", n, rw.n, rw.name,
				  (unsigned long long)rw.calls, (unsigned long long)rw.errors);
		}
		run_free(&r);
	}
}

struct strs {
	int strtol_seen, heap_seen, name_seen, bad_fault, stacks_in_main;
	char why[256];
};

/*
 * Is @ret inside main() of s-strings, whose name_of() was hit at runtime
 * address @name_of_at? (The load bias from the hit: the process is gone.)
 */
static bool in_main(uint64_t name_of_at, uint64_t ret)
{
	struct utrace_elf *elf = utrace_elf__open(target_path("s-strings"));
	uint64_t bias = 0, lo = 0, hi = 0;
	size_t i;

	CHECK(elf);
	for (i = 0; i < utrace_elf__sym_count(elf); i++) {
		const struct utrace_sym *y = utrace_elf__sym(elf, i);

		if (!strcmp(y->name, "name_of"))
			bias = name_of_at - y->addr;
		if (!strcmp(y->name, "main")) {
			lo = y->addr;
			hi = y->addr + y->size;
		}
	}
	utrace_elf__close(elf);
	return ret > lo + bias && ret < hi + bias;
}

static int on_rec(const struct utrace_record *rec, void *ctx)
{
	struct strs *s = ctx;
	char want[32];

	if (!rec->probe || !rec->name)
		return 0;
	if (rec->type == UTRACE_REC_ENTRY && strstr(rec->name, ":strtol") && rec->str[0] &&
	    !strncmp(rec->str[0], "heap-", 5)) {
		/* atoi("heap-i") calls strtol() inside libc: probed too */
		snprintf(want, sizeof(want), "heap-%d", s->heap_seen);
		if (strcmp(rec->str[0], want) && !s->why[0])
			snprintf(s->why, sizeof(s->why), "strtol via atoi #%d got '%s'",
				 s->heap_seen, rec->str[0]);
		s->heap_seen++;
	} else if (rec->type == UTRACE_REC_ENTRY && strstr(rec->name, ":strtol")) {
		/* main's atoi(argv[1]) first ("5"), then the rounds' "0" .. "4" */
		snprintf(want, sizeof(want), "%d", s->strtol_seen ? s->strtol_seen - 1 : 5);
		if ((!rec->str[0] || strcmp(rec->str[0], want)) && !s->why[0])
			snprintf(s->why, sizeof(s->why), "strtol #%d got '%s'", s->strtol_seen,
				 rec->str[0] ? rec->str[0] : "(null)");
		s->strtol_seen++;
	} else if (rec->type == UTRACE_REC_RETURN && strstr(rec->name, ":name_of")) {
		snprintf(want, sizeof(want), "name-%d", s->name_seen);
		if ((!rec->ret_str || strcmp(rec->ret_str, want)) && !s->why[0])
			snprintf(s->why, sizeof(s->why), "name_of #%d returned '%s'", s->name_seen,
				 rec->ret_str ? rec->ret_str : "(null)");
		s->name_seen++;
	} else if (rec->type == UTRACE_REC_ENTRY && strstr(rec->name, ":name_of")) {
		/* ACT_STACK: the caller first */
		s->stacks_in_main += rec->nr_stack >= 1 && in_main(rec->addr, rec->stack[0]);
	} else if (rec->type == UTRACE_REC_ENTRY && strstr(rec->name, ":bad_str")) {
		s->bad_fault += !!(rec->str_flags[0] & UTRACE_REC_STR_FAULT);
	}
	return 0;
}

/* name_of() returns a string; bad_str() takes one; the rest of the glob: nothing */
static void strings_per_point(struct utrace_probe *p, const struct utrace_probe_point_info *pt,
			      struct utrace_point_opts *po, void *data)
{
	(void)p;
	(void)data;
	po->nargs = 1;
	po->str_args = !pt->symbol		      ? 0 :
		       !strcmp(pt->symbol, "name_of") ? 1U << 6 :
		       !strcmp(pt->symbol, "bad_str") ? 1 :
							0;
}

TEST(record_strings_at_the_hit)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "5", NULL };
		UTRACE_OPTS(utrace_probe_opts, os, .actions = UTRACE_ACT_RECORD | UTRACE_ACT_NORET,
			    .nargs = 3, .str_args = 1);
		/* one SPEC, two functions with other strings: set per point */
		UTRACE_OPTS(utrace_probe_opts, on, .actions = UTRACE_ACT_RECORD | UTRACE_ACT_STACK,
			    .point_opts = strings_per_point);
		struct run r = run_new(b);
		struct strs s = { 0 };
		const char *n = utrace_backend_str(b);

		CHECK(utrace_probe__register_spec(r.up, "libc:strtol", &os));
		CHECK(utrace_probe__register_spec(r.up, "*a*_*", &on)); /* name_of, bad_str ... */
		run_launch(&r, "s-strings", args);
		CHECK_EQ(run_to_exit(&r, on_rec, &s), 0);
		CHECK_MSG(!s.why[0], "%s: %s", n, s.why);
		CHECK_MSG(s.strtol_seen == 6 && s.heap_seen == 5 && s.name_seen == 5,
			  "%s: %d strtol, %d through atoi, %d name_of", n, s.strtol_seen,
			  s.heap_seen, s.name_seen);
		CHECK_MSG(s.bad_fault >= 5, "%s: %d bad_str() faults flagged", n, s.bad_fault);
		CHECK_MSG(s.stacks_in_main == 5, "%s: %d of 5 stacks start in main()", n,
			  s.stacks_in_main);
		run_free(&r);
	}
}

struct sites {
	int n;
	pid_t pid;
	enum utrace_site site;
	bool named_work;
};

static int one_site(const struct utrace_point_site *ps, void *ctx)
{
	struct sites *si = ctx;

	si->n++;
	si->pid = ps->pid;
	si->site = ps->site;
	si->named_work = ps->symbol && !strcmp(ps->symbol, "work") && ps->addr;
	return 0;
}

/* counts while it runs; utrace_probe__sites() says how the point is placed */
TEST(attach_counts_live)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "loop", "2", NULL };
		struct target t = target_start("s-uprobes", args, -1);
		struct run r = run_new(b);
		struct utrace_probe_counts c1, c2;
		struct utrace_probe *p;
		char line[128];
		uint8_t before[16], after[16];
		uint64_t addr;

		r.out = -1;
		target_wait_ready(&t);
		addr = sym_addr(t.pid, "work");
		CHECK(utrace_mem__read(t.pid, addr, before, sizeof(before)) == sizeof(before));
		CHECK_EQ(utrace_session__attach(r.s, t.pid), 0);
		p = probe(&r, "work", UTRACE_ACT_COUNT | UTRACE_ACT_NORET, 0);
		CHECK_EQ(utrace_session__run(r.s, 200), UTRACE_RUN_TIMEOUT);
		CHECK_EQ(utrace_probe__counts(p, &c1), 0);
		CHECK_EQ(utrace_session__run(r.s, 200), UTRACE_RUN_TIMEOUT);
		CHECK_EQ(utrace_probe__counts(p, &c2), 0);
		CHECK_MSG(c1.calls > 0 && c2.calls > c1.calls, "%s: %llu then %llu calls",
			  utrace_backend_str(b), (unsigned long long)c1.calls,
			  (unsigned long long)c2.calls);
		/* how it is placed: ptrace's int3, the agent's jmp, the kernel's uprobe */
		{
			struct sites si = { 0 };
			enum utrace_site want = b == UTRACE_BACKEND_PTRACE ? UTRACE_SITE_INT3 :
						b == UTRACE_BACKEND_AGENT  ? UTRACE_SITE_JMP :
									     UTRACE_SITE_KERNEL;

			CHECK_EQ(utrace_probe__sites(p, one_site, &si), 0);
			/* (the agent's jmp comes once every thread took the upgrade signal) */
			if (b == UTRACE_BACKEND_AGENT && si.site == UTRACE_SITE_INT3)
				want = UTRACE_SITE_INT3;
			CHECK_MSG(si.n == 1 && si.pid == t.pid && si.site == want && si.named_work,
				  "%s: %d sites, pid %d, %s", utrace_backend_str(b), si.n,
				  (int)si.pid, utrace_site_str(si.site));
		}
		CHECK_EQ(utrace_probe__unregister(p), 0);
		utrace_uprobes__free(r.up);
		CHECK_EQ(utrace_session__detach(r.s), 0);
		utrace_session__close(r.s);
		CHECK(utrace_mem__read(t.pid, addr, after, sizeof(after)) == sizeof(after));
		CHECK_MSG(!memcmp(before, after, sizeof(before)), "%s: work() differs after",
			  utrace_backend_str(b));
		CHECK(write(t.in, "x\n", 2) == 2);
		close(t.in);
		t.in = -1;
		CHECK(read_line(t.out, line, sizeof(line), 10000) > 0);
		CHECK_MSG(strstr(line, " ok"), "%s", line);
		CHECK_EQ(target_reap(&t, 10000), 0);
	}
}

/* a kernel uprobe cannot change a user function's return: refused */
static void kernel_refuses_inject(void)
{
	UTRACE_OPTS(utrace_probe_opts, ko, .actions = UTRACE_ACT_INJECT, .inject_value = 7);
	struct run kr = run_new(UTRACE_BACKEND_KERNEL);

	errno = 0;
	CHECK(!utrace_probe__register_spec(kr.up, "get_value", &ko));
	CHECK_EQ(errno, EOPNOTSUPP);
	run_free(&kr);
}

static void inject_on(enum utrace_backend b)
{
	const char *args[] = { "value", "10", NULL };
	UTRACE_OPTS(utrace_probe_opts, o, .actions = UTRACE_ACT_INJECT | UTRACE_ACT_COUNT,
		    .inject_value = 7, .inject_every = 2);
	struct run r = run_new(b);
	struct utrace_probe *p = utrace_probe__register_spec(r.up, "get_value", &o);
	struct utrace_probe_counts c;
	char line[64];

	CHECK(p);
	run_launch(&r, "s-uprobes", args);
	CHECK_EQ(run_to_exit(&r, NULL, NULL), 0);
	CHECK(read_line(r.out, line, sizeof(line), 5000) > 0);
	CHECK_EQ(utrace_probe__counts(p, &c), 0);
	CHECK_MSG(c.calls == 10 && c.injected == 5, "%s: %llu calls, %llu injected",
		  utrace_backend_str(b), (unsigned long long)c.calls,
		  (unsigned long long)c.injected);
	/* get_value() returns 42 (s-uprobes): 5 x 42 + 5 x 7 */
	CHECK_MSG(!strcmp(line, "sum=245"), "%s: the program said '%s'", utrace_backend_str(b),
		  line);
	run_free(&r);
}

TEST(inject_every_nth)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		if (b == UTRACE_BACKEND_KERNEL)
			kernel_refuses_inject();
		else
			inject_on(b);
	}
}

TEST(dlopen_pending_spec)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		char lib[4096];
		const char *args[] = { "dlopen", lib, "300", NULL };
		struct run r = run_new(b);
		struct utrace_probe *p;
		struct utrace_probe_counts c;
		struct timespec t0, t1;
		double secs;

		snprintf(lib, sizeof(lib), "%s", target_path("libuprobe-dl.so"));
		p = probe(&r, "libuprobe-dl:lib_func", UTRACE_ACT_COUNT | UTRACE_ACT_HIST, 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		run_launch(&r, "s-uprobes", args);
		CHECK_EQ(run_to_exit(&r, NULL, NULL), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		CHECK_EQ(utrace_probe__counts(p, &c), 0);
		CHECK_MSG(c.calls == 300 && c.returns == 300,
			  "%s: lib_func %llu calls %llu returns", utrace_backend_str(b),
			  (unsigned long long)c.calls, (unsigned long long)c.returns);
		(void)secs; /* (a timing is no test: the counts say the rescan came in time) */
		run_free(&r);
	}
}

/*
 * utrace_probe_opts.exclude (ltrace's '-' rules): a match that an
 * exclusion names is not probed, in the objects there at registration and
 * in one dlopen()ed later.
 */
TEST(exclude_leaves_out_matches)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		char lib[4096];
		const char *args[] = { "dlopen", lib, "300", NULL };
		const char *libc_only[] = { "libc:*", NULL };
		const char *the_lib[] = { "libuprobe-dl:lib_f*", NULL };
		const char *work[] = { "work", NULL };
		struct run r = run_new(b);
		UTRACE_OPTS(utrace_probe_opts, o1, .actions = UTRACE_ACT_COUNT | UTRACE_ACT_NORET,
			    .exclude = libc_only);
		UTRACE_OPTS(utrace_probe_opts, o2, .actions = UTRACE_ACT_COUNT | UTRACE_ACT_NORET,
			    .exclude = the_lib);
		UTRACE_OPTS(utrace_probe_opts, o3, .actions = UTRACE_ACT_COUNT | UTRACE_ACT_NORET,
			    .exclude = work);
		struct utrace_probe *kept, *gone, *none;
		struct utrace_probe_counts c;

		snprintf(lib, sizeof(lib), "%s", target_path("libuprobe-dl.so"));
		kept = utrace_probe__register_spec(r.up, "*:lib_func", &o1);
		gone = utrace_probe__register_spec(r.up, "*:lib_func", &o2);
		CHECK_MSG(kept && gone, "%s: %s", utrace_backend_str(b), strerror(errno));
		none = utrace_probe__register_spec(r.up, "wor[k]", &o3);
		CHECK(none);
		run_launch(&r, "s-uprobes", args);
		CHECK_EQ(run_to_exit(&r, NULL, NULL), 0);
		CHECK_EQ(utrace_probe__counts(kept, &c), 0);
		CHECK_MSG(c.calls == 300, "%s: lib_func %llu calls, want 300",
			  utrace_backend_str(b), (unsigned long long)c.calls);
		CHECK_EQ(utrace_probe__counts(gone, &c), 0);
		CHECK_MSG(c.calls == 0, "%s: excluded lib_func %llu calls, want 0",
			  utrace_backend_str(b), (unsigned long long)c.calls);
		if (none) {
			CHECK_EQ(utrace_probe__counts(none, &c), 0);
			CHECK_EQ(c.calls, 0);
		}
		run_free(&r);
	}
}

static int ignore_rec(const struct utrace_record *rec, void *ctx)
{
	(void)rec;
	(void)ctx;
	return 0;
}

TEST(attach_then_dlopen)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		char lib[4096], line[128];
		const char *args[] = { "dlwait", lib, "200", NULL };
		struct target t;
		struct run r = run_new(b);
		struct utrace_probe *p;
		struct utrace_probe_counts c;
		int i;

		snprintf(lib, sizeof(lib), "%s", target_path("libuprobe-dl.so"));
		t = target_start("s-uprobes", args, -1);
		r.out = -1;
		target_wait_ready(&t);
		CHECK_EQ(utrace_session__attach(r.s, t.pid), 0);
		p = probe(&r, "libuprobe-dl:lib_func", UTRACE_ACT_COUNT | UTRACE_ACT_NORET, 0);
		CHECK(write(t.in, "x\n", 2) == 2);
		for (i = 0; i < 100; i++) { /* until "loaded" */
			struct pollfd pf = { t.out, POLLIN, 0 };

			CHECK(utrace_uprobes__poll(r.up, ignore_rec, NULL, 20) >= 0);
			if (poll(&pf, 1, 0) == 1)
				break;
		}
		CHECK(read_line(t.out, line, sizeof(line), 5000) > 0);
		CHECK_MSG(!strcmp(line, "loaded"), "%s", line);
		for (i = 0; i < 15; i++) /* 300 ms: the tracer notices the new object */
			CHECK(utrace_uprobes__poll(r.up, ignore_rec, NULL, 20) >= 0);
		CHECK(write(t.in, "x\n", 2) == 2);
		for (i = 0; i < 100; i++) {
			struct pollfd pf = { t.out, POLLIN, 0 };

			CHECK(utrace_uprobes__poll(r.up, ignore_rec, NULL, 20) >= 0);
			if (poll(&pf, 1, 0) == 1)
				break;
		}
		CHECK(read_line(t.out, line, sizeof(line), 5000) > 0);
		CHECK_EQ(utrace_probe__counts(p, &c), 0);
		CHECK_MSG(c.calls == 200, "%s: %llu calls of lib_func, want 200 ('%s')",
			  utrace_backend_str(b), (unsigned long long)c.calls, line);
		utrace_uprobes__free(r.up);
		CHECK_EQ(utrace_session__detach(r.s), 0);
		utrace_session__close(r.s);
		close(t.in);
		t.in = -1;
		CHECK_EQ(target_reap(&t, 10000), 0);
	}
}

TEST(exec_rearms)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "exec", "100", "250", NULL };
		struct run r = run_new(b);
		struct utrace_probe *p = probe(&r, "work", UTRACE_ACT_COUNT | UTRACE_ACT_NORET, 0);
		struct utrace_probe_counts c;

		run_launch(&r, "s-uprobes", args);
		CHECK_EQ(run_to_exit(&r, NULL, NULL), 0);
		CHECK_EQ(utrace_probe__counts(p, &c), 0);
		CHECK_MSG(c.calls == 350, "%s: %llu calls of work() across the exec, want 350",
			  utrace_backend_str(b), (unsigned long long)c.calls);
		run_free(&r);
	}
}

static int count_records(const struct utrace_record *rec, void *ctx)
{
	(void)rec;
	++*(int *)ctx;
	return 0;
}

/*
 * The agent with agent_untraced: only its control thread stays traced, and
 * execve() kills it; the new image's agent (preloaded again) is found and
 * armed, by the session's after hook (a user who only runs the session)
 * and by utrace_uprobes__poll(). Without the follow, the new image ran
 * unprobed: 100 of 350 counted, and the layer warned "an exec took its
 * probes".
 */
TEST(exec_rearms_agent_untraced)
{
	int round;

	for (round = 0; round < 2; round++) {
		UTRACE_OPTS(utrace_uprobes_opts, uo, .backend = UTRACE_BACKEND_AGENT,
			    .agent_untraced = true);
		const char *args[] = { "exec", "100", "250", NULL };
		struct run r = run_new_opts(&uo);
		struct utrace_probe *p = probe(&r, "work", UTRACE_ACT_COUNT | UTRACE_ACT_NORET, 0);
		struct utrace_probe_counts c;
		int recs = 0;

		run_launch(&r, "s-uprobes", args);
		CHECK_EQ(run_to_exit(&r, round ? count_records : NULL, &recs), 0);
		CHECK_EQ(utrace_probe__counts(p, &c), 0);
		CHECK_MSG(c.calls == 350,
			  "%s: %llu calls of work() across the exec, want 350 (100 + 250)",
			  round ? "polled" : "session run only", (unsigned long long)c.calls);
		run_free(&r);
	}
}

/*
 * UTRACE_UPROBES_FOLLOW_FORKS with agent_untraced: the fork child keeps its
 * probes (its own arena, found by utrace_uprobes__poll()), its calls are
 * counted as its own process's, a UTRACE_REC_FORK record names it. Without
 * the flag the child runs without probes (fork_child_is_clean).
 */
static int fork_records(const struct utrace_record *rec, void *ctx)
{
	int *forks = ctx;

	if (rec->type == UTRACE_REC_FORK && rec->child > 0)
		++*forks;
	return 0;
}

TEST(fork_followed_agent_untraced)
{
	UTRACE_OPTS(utrace_uprobes_opts, uo, .backend = UTRACE_BACKEND_AGENT,
		    .agent_untraced = true, .flags = UTRACE_UPROBES_FOLLOW_FORKS);
	const char *args[] = { "fork", "50", "30", NULL };
	struct run r = run_new_opts(&uo);
	struct utrace_probe *p = probe(&r, "work", UTRACE_ACT_COUNT | UTRACE_ACT_NORET, 0);
	struct utrace_probe_counts c;
	int forks = 0;

	run_launch(&r, "s-uprobes", args);
	CHECK_EQ(run_to_exit(&r, fork_records, &forks), 0);
	CHECK_EQ(utrace_probe__counts(p, &c), 0);
	/* the parent calls work() 2 x 50 times, the child 30 */
	CHECK_MSG(c.calls == 130, "%llu calls of work(), want 130 (100 + the child's 30)",
		  (unsigned long long)c.calls);
	CHECK_EQ(forks, 1);
	run_free(&r);
}

/* The first @n (<= 16) code bytes of @sym in s-uprobes' file (hex), as it prints them. */
static void file_bytes_hex(const char *sym, char *hex, size_t n)
{
	struct utrace_elf *elf = utrace_elf__open(target_path("s-uprobes"));
	uint8_t b[16];
	size_t i, k;

	CHECK(elf);
	for (i = 0; i < utrace_elf__sym_count(elf); i++) {
		const struct utrace_sym *s = utrace_elf__sym(elf, i);

		if (!strcmp(s->name, sym) && !(s->flags & UTRACE_SYM_PLT)) {
			CHECK(n <= sizeof(b));
			CHECK_EQ(utrace_elf__read(elf, s->addr, b, n), (long)n);
			for (k = 0; k < n; k++)
				sprintf(hex + 2 * k, "%02x", b[k]);
			utrace_elf__close(elf);
			return;
		}
	}
	CHECK(!"symbol not found");
}

TEST(fork_child_is_clean)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "fork", "40", "60", NULL };
		struct run r = run_new(b);
		struct utrace_probe *p = probe(&r, "work", UTRACE_ACT_COUNT | UTRACE_ACT_NORET, 0);
		struct utrace_probe_counts c;
		char line[128], want[40];

		run_launch(&r, "s-uprobes", args);
		file_bytes_hex("work", want, 8);
		CHECK_EQ(run_to_exit(&r, NULL, NULL), 0);
		CHECK(read_line(r.out, line, sizeof(line), 5000) > 0);
		CHECK_MSG(!strncmp(line, "child bytes=", 12) && !strcmp(line + 12, want),
			  "%s: '%s', the file has %s", utrace_backend_str(b), line, want);
		CHECK_EQ(utrace_probe__counts(p, &c), 0);
		CHECK_MSG(c.calls == 80, "%s: %llu calls, want the parent's 80",
			  utrace_backend_str(b), (unsigned long long)c.calls);
		run_free(&r);
	}
}

/* The 16 code bytes of @sym in @pid equal the file's. */
static void check_code_restored(enum utrace_backend b, pid_t pid, const char *sym)
{
	char hex[40], mem[40];
	uint8_t c[16];
	size_t i;

	CHECK_EQ(utrace_mem__read(pid, sym_addr(pid, sym), c, 16), 16);
	for (i = 0; i < 16; i++)
		sprintf(mem + 2 * i, "%02x", c[i]);
	file_bytes_hex(sym, hex, 16);
	CHECK_MSG(!strcmp(mem, hex), "%s: %s() is %s, the file has %s", utrace_backend_str(b), sym,
		  mem, hex);
}

/*
 * Run the session until @p has counted @n calls in attached process @pid
 * (the test's timeout is the bound), which must not die meanwhile.
 */
static void run_until_calls(struct run *r, struct utrace_probe *p, pid_t pid, uint64_t n)
{
	struct utrace_probe_counts c = { 0 };

	while (c.calls < n) {
		int res = utrace_session__run(r->s, 20);

		CHECK_MSG(res > 0 && kill(pid, 0) == 0, "%s: process %d: %s after %llu calls",
			  utrace_backend_str(utrace_uprobes__backend(r->up)), (int)pid,
			  res < 0 ? strerror(-res) : "gone", (unsigned long long)c.calls);
		CHECK_EQ(utrace_probe__counts(p, &c), 0);
	}
}

/* The program goes on once untraced: its own checks, and its count of calls. */
static long target_ends_ok(struct target *t)
{
	char line[128];
	const char *calls;

	CHECK(write(t->in, "x\n", 2) == 2);
	close(t->in);
	t->in = -1;
	CHECK(read_line(t->out, line, sizeof(line), 10000) > 0);
	CHECK_MSG(strstr(line, " ok") && (calls = strstr(line, "calls=")), "%s", line);
	CHECK_EQ(target_reap(t, 10000), 0);
	return atol(calls + 6);
}

/*
 * Attach to 4 threads calling work(), two probes on it (one timing
 * returns: trampolines in flight), until 2,000 calls; free and detach: the
 * code bytes are the file's, no XOL area is left (ptrace; the agent's
 * stays mapped by design, docs/agent.md; the kernel's [uprobes] page is
 * the kernel's), and the program runs on to its own checks.
 */
TEST(attach_probe_detach_restores_code)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "loop", "4", NULL };
		struct target t = target_start("s-uprobes", args, -1);
		struct run r = run_new(b);
		struct utrace_probe *p, *p2;
		struct utrace_probe_counts c, c2;
		struct sites si = { 0 };
		struct utrace_maps *maps;
		size_t i;

		r.out = -1;
		target_wait_ready(&t);
		CHECK_EQ(utrace_session__attach(r.s, t.pid), 0);
		p = probe(&r, "work", CALLS, 0);
		p2 = probe(&r, "work", UTRACE_ACT_COUNT | UTRACE_ACT_NORET, 0); /* the same point */
		run_until_calls(&r, p, t.pid, 2000);
		CHECK_EQ(utrace_probe__sites(p, one_site, &si), 0);
		CHECK_MSG(si.n == 1 && si.pid == t.pid && si.named_work, "%s: %d sites",
			  utrace_backend_str(b), si.n);
		CHECK_EQ(utrace_probe__counts(p, &c), 0);
		CHECK_EQ(utrace_probe__counts(p2, &c2), 0);
		CHECK_MSG(c.returns <= c.calls && c2.calls > 0, "%s: %llu calls %llu returns, %llu",
			  utrace_backend_str(b), (unsigned long long)c.calls,
			  (unsigned long long)c.returns, (unsigned long long)c2.calls);
		utrace_uprobes__free(r.up);
		check_code_restored(b, t.pid, "work");
		if (b == UTRACE_BACKEND_PTRACE) { /* no anonymous executable mapping left */
			maps = utrace_maps__read(t.pid);
			CHECK(maps);
			for (i = 0; i < maps->nr; i++)
				CHECK_MSG(maps->maps[i].path ||
						  !(maps->maps[i].prot & UTRACE_MAP_EXEC),
					  "anonymous r-x mapping at 0x%llx",
					  (unsigned long long)maps->maps[i].start);
			utrace_maps__free(maps);
		}
		CHECK_EQ(utrace_session__detach(r.s), 0);
		utrace_session__close(r.s);
		/* every call counted was one the program made */
		CHECK_MSG(c.calls <= (uint64_t)target_ends_ok(&t), "%s: %llu calls counted",
			  utrace_backend_str(b), (unsigned long long)c.calls);
		harness_note("%s: %llu calls, %llu returns while attached", utrace_backend_str(b),
			     (unsigned long long)c.calls, (unsigned long long)c.returns);
	}
}

/*
 * trap_fn() is a ud2, which cannot run out of line: a SPEC or an address
 * probe on it is refused (UTRACE_ERRNO__NOT_PATCHABLE) and leaves its
 * bytes alone; an address outside any object's code is EFAULT, a process
 * not traced ESRCH.
 */
TEST(refused_site_fails_registration)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "loop", "1", NULL };
		UTRACE_OPTS(utrace_probe_opts, o, .actions = UTRACE_ACT_COUNT);
		struct target t = target_start("s-uprobes", args, -1);
		struct run r = run_new(b);
		const char *bn = utrace_backend_str(b);

		r.out = -1;
		target_wait_ready(&t);
		CHECK_EQ(utrace_session__attach(r.s, t.pid), 0);
		errno = 0;
		CHECK_MSG(!utrace_probe__register_spec(r.up, "trap_fn", &o) &&
				  errno == UTRACE_ERRNO__NOT_PATCHABLE,
			  "%s: SPEC trap_fn: %s", bn, strerror(errno));
		errno = 0;
		CHECK_MSG(!utrace_probe__register(r.up, t.pid, sym_addr(t.pid, "trap_fn"), &o) &&
				  errno == UTRACE_ERRNO__NOT_PATCHABLE,
			  "%s: trap_fn's address: %s", bn, strerror(errno));
		errno = 0;
		CHECK_MSG(!utrace_probe__register(r.up, t.pid, 0x1000, &o) && errno == EFAULT,
			  "%s: 0x1000: %s", bn, strerror(errno));
		errno = 0;
		CHECK_MSG(!utrace_probe__register(r.up, t.pid + 100000, sym_addr(t.pid, "work"),
						  &o) &&
				  errno == ESRCH,
			  "%s: a pid not traced: %s", bn, strerror(errno));
		check_code_restored(b, t.pid, "trap_fn");
		utrace_uprobes__free(r.up);
		CHECK_EQ(utrace_session__detach(r.s), 0);
		utrace_session__close(r.s);
		target_ends_ok(&t);
	}
}

/*
 * 5 sessions one after the other on one process of 8 threads calling
 * work(): each attaches, counts 500 calls with return trampolines in
 * flight, frees and detaches with the code bytes the file's; the process
 * lives on, and its own checks pass at the end. On the agent, a thread
 * whose int3 trap was still to be handled when its session ended (held in
 * that session's ptrace stop, or starved) met the next session's reset
 * probe table and was killed by SIGTRAP (1 run in 3 under load): a late
 * trap at a site the agent ever armed, its int3 gone, runs the
 * instruction again (agent/patch.c site_known()).
 */
TEST(attach_detach_cycles)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "loop", "8", NULL };
		struct target t;
		uint64_t total = 0, pending = 0;
		int cycle;

		t = target_start("s-uprobes", args, -1);
		target_wait_ready(&t);
		for (cycle = 0; cycle < 5; cycle++) {
			struct run r = run_new(b);
			struct utrace_probe *p;
			struct utrace_probe_counts c;

			r.out = -1;
			CHECK_EQ(utrace_session__attach(r.s, t.pid), 0);
			p = probe(&r, "work", CALLS, 0);
			run_until_calls(&r, p, t.pid, 500);
			CHECK_EQ(utrace_probe__counts(p, &c), 0);
			total += c.calls;
			pending += c.calls - c.returns;
			utrace_uprobes__free(r.up);
			check_code_restored(b, t.pid, "work");
			CHECK_EQ(utrace_session__detach(r.s), 0);
			utrace_session__close(r.s);
			CHECK_MSG(proc_state(t.pid) != 'Z' && proc_state(t.pid) != '?',
				  "%s: cycle %d: the process is gone", utrace_backend_str(b),
				  cycle);
		}
		CHECK_MSG(total <= (uint64_t)target_ends_ok(&t), "%s: %llu calls counted",
			  utrace_backend_str(b), (unsigned long long)total);
		harness_note("%s: 5 sessions, %llu calls; returns pending at the detaches: %llu",
			     utrace_backend_str(b), (unsigned long long)total,
			     (unsigned long long)pending);
	}
}

/*
 * The session let go before utrace_uprobes__free() (the paper's order
 * reversed): detached, or closed, while the probes are armed in a process
 * of 4 threads calling work(). The layer takes its probes out first (the
 * session's release hook): the code bytes are the file's, the process runs
 * on to its own checks, and the free afterwards touches nothing of the
 * session. On every backend (with ptrace the process died of SIGTRAP at
 * its next hit before the hook existed).
 */
static void let_go_first(bool closing)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "loop", "4", NULL };
		struct target t = target_start("s-uprobes", args, -1);
		struct run r = run_new(b);
		struct utrace_probe *p;

		target_wait_ready(&t);
		r.out = -1;
		CHECK_EQ(utrace_session__attach(r.s, t.pid), 0);
		p = probe(&r, "work", CALLS, 0);
		run_until_calls(&r, p, t.pid, 500);
		if (closing)
			utrace_session__close(r.s);
		else
			CHECK_EQ(utrace_session__detach(r.s), 0);
		check_code_restored(b, t.pid, "work");
		CHECK_MSG(proc_state(t.pid) != 'Z' && proc_state(t.pid) != '?',
			  "%s: the process is gone", utrace_backend_str(b));
		utrace_uprobes__free(r.up);
		if (!closing)
			utrace_session__close(r.s);
		CHECK(target_ends_ok(&t) > 0);
	}
}

TEST(session_detach_before_uprobes_free)
{
	let_go_first(false);
}

TEST(session_close_before_uprobes_free)
{
	let_go_first(true);
}

static int handler(struct utrace_probe_ctx *ctx, void *data)
{
	(void)ctx;
	(void)data;
	return 0;
}

TEST(agent_refuses_tracer_handlers)
{
	UTRACE_OPTS(utrace_probe_opts, o, .handler = handler);
	struct run r = run_new(UTRACE_BACKEND_AGENT);
	struct utrace_uprobes *up;

	errno = 0;
	CHECK(!utrace_probe__register_spec(r.up, "work", &o));
	CHECK_EQ(errno, EOPNOTSUPP);
	run_free(&r);
	r.s = utrace_session__new(NULL);
	up = utrace_uprobes__new(r.s, NULL);
	CHECK(up);
	CHECK_EQ(utrace_uprobes__backend(up), UTRACE_BACKEND_AGENT);
	CHECK_MSG(strstr(utrace_uprobes__backend_why(up), "agent: works"), "%s",
		  utrace_uprobes__backend_why(up));
	utrace_uprobes__free(up);
	utrace_session__close(r.s);
}

/*
 * A C probe module through the public API (utrace_uprobes__load_module(),
 * utrace_probe_opts.module): examples/modules/slowcalls.so on s-trace
 * `calls 20 3 10` (50 calls of work(x), x = 0..19 in main and 0..9 in each
 * of 3 threads): counters calls=50 big=10 on every backend that runs C
 * code, read while the program runs too, and 5 UTRACE_REC_MODULE records
 * x = 15..19; the kernel backend refuses the module (EOPNOTSUPP).
 */
struct mod_seen {
	int recs, id;
	uint64_t xs; /* bit x: a record of x */
};

static int module_records(const struct utrace_record *rec, void *ctx)
{
	struct mod_seen *ms = ctx;

	if (rec->type != UTRACE_REC_MODULE)
		return 0;
	CHECK_EQ(rec->module, ms->id);
	CHECK_EQ(rec->module_probe, 0);
	CHECK_EQ(rec->nargs, 1);
	CHECK(rec->probe != NULL);
	ms->recs++;
	if (rec->args[0] < 64)
		ms->xs |= 1ull << rec->args[0];
	return 0;
}

TEST(module_through_the_api)
{
	enum utrace_backend b;

	FOR_EACH_BACKEND(b)
	{
		const char *args[] = { "calls", "20", "3", "10", NULL };
		const struct utrace_module *m;
		struct run r = run_new(b);
		struct mod_seen ms = { 0 };
		uint64_t c[UTRACE_MODULE_MAX_COUNTERS] = { 0 };
		char why[512];
		int id = utrace_uprobes__load_module(
			r.up, harness_build_path("examples/modules/slowcalls.so"), why,
			sizeof(why));

		if (b == UTRACE_BACKEND_KERNEL) {
			CHECK_EQ(id, -EOPNOTSUPP);
			CHECK(strstr(why, "not possible with the kernel backend"));
			run_free(&r);
			continue;
		}
		CHECK_MSG(id > 0, "%s: %s", utrace_backend_str(b), why);
		/* twice is refused */
		CHECK_EQ(
			utrace_uprobes__load_module(
				r.up, harness_build_path("examples/modules/slowcalls.so"), NULL, 0),
			-EEXIST);
		m = utrace_uprobes__module(r.up, id);
		CHECK(m && !strcmp(m->name, "slowcalls") && !strcmp(m->probes[0].spec, "work"));
		{
			UTRACE_OPTS(utrace_probe_opts, po, .module = id, .module_probe = 0);

			CHECK(utrace_probe__register_spec(r.up, m->probes[0].spec, &po));
			/* a table entry the module does not have */
			po.module_probe = 7;
			CHECK(!utrace_probe__register_spec(r.up, "work", &po) && errno == EINVAL);
		}
		ms.id = id;
		run_launch(&r, "s-trace", args);
		CHECK_EQ(run_to_exit(&r, module_records, &ms), 0);
		CHECK_EQ(utrace_uprobes__module_counters(r.up, id, c, UTRACE_MODULE_MAX_COUNTERS),
			 3);
		CHECK_MSG(c[0] == 50 && c[1] == 10, "%s: calls=%llu big=%llu, want 50 and 10",
			  utrace_backend_str(b), (unsigned long long)c[0],
			  (unsigned long long)c[1]);
		CHECK_MSG(ms.recs == 5 && ms.xs == 0xf8000ull, "%s: %d records, x bits %#llx",
			  utrace_backend_str(b), ms.recs, (unsigned long long)ms.xs);
		run_free(&r);
	}
}

/* An unsafe or foreign file is refused before anything runs, one line why. */
TEST(module_refused_by_the_api)
{
	char dir[] = "/tmp/utrace-mod-XXXXXX", path[128], cmd[512], why[512];

	CHECK_EQ(utrace_module__open("/nonexistent/x.so", 0, NULL, why, sizeof(why)), -ENOENT);
	CHECK_EQ(utrace_module__open(harness_build_path("tests/targets/m-nodesc.so"), 0, NULL, why,
				     sizeof(why)),
		 -ENOEXEC);
	CHECK(strstr(why, "no 'utrace_module' descriptor"));
	CHECK_EQ(utrace_module__open(harness_build_path("tests/targets/m-simd.so"),
				     UTRACE_MODULE_IN_TARGET, NULL, why, sizeof(why)),
		 -EOPNOTSUPP);
	CHECK(strstr(why, "-mgeneral-regs-only"));
	CHECK_EQ(utrace_module__open(harness_build_path("tests/targets/m-simd.so"), 0, NULL, why,
				     sizeof(why)),
		 0);
	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/slowcalls.so", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0664 '%s'",
		 harness_build_path("examples/modules/slowcalls.so"), path, path);
	CHECK_EQ(system(cmd), 0);
	CHECK_EQ(utrace_module__open(path, 0, NULL, why, sizeof(why)), -EPERM);
	CHECK(strstr(why, "is writable by its group"));
	unlink(path);
	rmdir(dir);
}
