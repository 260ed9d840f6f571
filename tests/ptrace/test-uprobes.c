/* SPDX-License-Identifier: MIT */
/*
 * test-uprobes.c - the uprobes API with the ptrace backend against
 * tests/targets/s-uprobes, which prints the counts it expects
 * ("expect entries=N returns=N ...") and checks its own results. What
 * needs tracer-side handlers (their order, two on one point, deferred
 * (un)registration, set_return, the return context) is here; the
 * scenarios that built-in actions can check run on every backend in
 * test-backends.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "ptrace-util.h"

/* handlers run in the tracer: the ptrace backend (AUTO would pick the agent) */
static const struct utrace_uprobes_opts ptrace_only = { .sz = sizeof(ptrace_only),
							.backend = UTRACE_BACKEND_PTRACE };

/* Each test has its own targets; bpftrace probes a private copy. */
HARNESS_JOBS(3)

struct counts {
	long entries, returns, order_bad, dropped_exec, dropped_other;
	long ret_bad;
	struct counts *first; /* ordering check: the earlier probe at the same point */
};

static int on_entry(struct utrace_probe_ctx *ctx, void *data)
{
	struct counts *c = data;

	if (c->first && c->first->entries != c->entries + 1)
		c->order_bad++;
	c->entries++;
	(void)ctx;
	return UTRACE_PROBE_OK;
}

static int on_return(struct utrace_probe_ctx *ctx, void *data)
{
	struct counts *c = data;

	/* work(x) returns 2x+1, fib() >= 0: an odd/even sanity check is enough */
	if (!ctx->is_return || !ctx->entry_ns || ctx->now_ns < ctx->entry_ns)
		c->ret_bad++;
	c->returns++;
	return UTRACE_PROBE_OK;
}

static void on_dropped(struct utrace_probe *p, pid_t pid, enum utrace_drop_reason why, void *data)
{
	struct counts *c = data;

	(void)p;
	(void)pid;
	if (why == UTRACE_DROP_EXEC)
		c->dropped_exec++;
	else
		c->dropped_other++;
}

/* Parse "KEY=N" from the target's output. */
static long expect(const char *out, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "%s=", key);
	p = out ? strstr(out, pat) : NULL;
	return p ? atol(p + strlen(pat)) : -1;
}

struct run {
	struct utrace_session *s;
	struct utrace_uprobes *up;
	pid_t pid;
	int out_fd;
};

/* Launch program @prog with @args; its stdout goes to a pipe. */
static void run_start_prog(struct run *r, const char *prog, const char *const *args, bool follow,
			   unsigned int depth)
{
	UTRACE_OPTS(utrace_session_opts, so, .follow_forks = follow);
	UTRACE_OPTS(utrace_uprobes_opts, uo, .backend = UTRACE_BACKEND_PTRACE, .max_depth = depth);
	char *argv[16];
	int p[2], saved, i = 0;

	r->s = utrace_session__new(&so);
	CHECK(r->s);
	r->up = utrace_uprobes__new(r->s, &uo);
	CHECK(r->up);
	CHECK_EQ(utrace_uprobes__backend(r->up), UTRACE_BACKEND_PTRACE);
	argv[i++] = strdup(prog);
	while (*args && i < 15)
		argv[i++] = (char *)*args++;
	argv[i] = NULL;
	CHECK(pipe2(p, O_CLOEXEC) == 0);
	r->out_fd = p[0];
	saved = dup(1);
	fflush(stdout);
	dup2(p[1], 1);
	close(p[1]);
	r->pid = 0;
	(void)r->pid;
	/* the child gets the pipe as stdout (dup2 clears O_CLOEXEC on fd 1) */
	r->pid = utrace_session__launch(r->s, argv, NULL);
	dup2(saved, 1);
	close(saved);
	CHECK(r->pid > 0);
}

/* Launch s-uprobes with @args. */
static void run_start_opts(struct run *r, const char *const *args, bool follow, unsigned int depth)
{
	run_start_prog(r, target_path("s-uprobes"), args, follow, depth);
}

static void run_start(struct run *r, const char *const *args)
{
	run_start_opts(r, args, false, 0);
}

/* Run to the end; return the exit status, the output in *out (malloc'ed). */
static int run_finish(struct run *r, char **out)
{
	char *buf = calloc(1, 65536);
	size_t n = 0;
	ssize_t k;
	int res, st;

	while ((res = utrace_session__run(r->s, 120000)) == UTRACE_RUN_BREAK)
		;
	CHECK_EQ(res, UTRACE_RUN_DONE);
	while (n < 65535 && (k = read(r->out_fd, buf + n, 65535 - n)) > 0)
		n += (size_t)k;
	close(r->out_fd);
	st = utrace_session__exit_status(r->s);
	*out = buf;
	return st;
}

static void run_close(struct run *r)
{
	utrace_uprobes__free(r->up);
	utrace_session__close(r->s);
}

static struct utrace_probe *probe_spec(struct utrace_uprobes *up, const char *spec,
				       struct counts *c, bool entry, bool ret)
{
	UTRACE_OPTS(utrace_probe_opts, o, .handler = entry ? on_entry : NULL,
		    .ret_handler = ret ? on_return : NULL, .data = c, .dropped = on_dropped);
	struct utrace_probe *p = utrace_probe__register_spec(up, spec, &o);

	CHECK_MSG(p, "register '%s': %s", spec, strerror(errno));
	return p;
}

/*
 * bpftrace's count of calls of work() for the same workload, or -1 if
 * bpftrace is missing or does not work here. bpftrace dies with us
 * (PR_SET_PDEATHSIG): its kernel uprobes on s-uprobes would otherwise
 * outlive a killed test and put their int3 into every later s-uprobes.
 */
static long bpftrace_count(const char *const *args)
{
	char prog[8192], cmd[8192], buf[4096], copy[4096];
	size_t n = 0;
	long count = -1;
	int p[2], status;
	pid_t pid;
	char *at;

	if (access("/usr/bin/bpftrace", X_OK) || geteuid() != 0)
		return -1;
	/* its own copy: the tests beside this one trace s-uprobes too */
	private_copy(target_path("s-uprobes"), copy, sizeof(copy));
	snprintf(prog, sizeof(prog), "uprobe:%s:work { @ = count(); }", copy);
	snprintf(cmd, sizeof(cmd), "%s %s %s %s", copy, args[0], args[1], args[2]);
	if (pipe2(p, O_CLOEXEC)) {
		private_copy_remove(copy);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 1);
		dup2(null, 2);
		execl("/usr/bin/bpftrace", "bpftrace", "-q", "-e", prog, "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	while (n + 1 < sizeof(buf)) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		ssize_t k;

		if (poll(&pf, 1, 90000) <= 0)
			break;
		k = read(p[0], buf + n, sizeof(buf) - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	buf[n] = 0;
	close(p[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	private_copy_remove(copy);
	at = strstr(buf, "@: ");
	if (at)
		count = atol(at + 3);
	return count;
}

/*
 * 8 threads x 20,000 calls of work() (8 x 100,000 in the slow suite), as
 * test-backends.c mt_exact_counts counts them exactly on every backend:
 * bpftrace's count of the same workload agrees.
 */
static long mt_calls(void)
{
	return harness_size(20000, 100000);
}

TEST_TIMEOUT(mt_bpftrace_agrees, 120)
{
	char n[32];
	const char *args[] = { "mt", n, "8", NULL };
	long bt;

	snprintf(n, sizeof(n), "%ld", mt_calls());
	bt = bpftrace_count(args);
	if (bt < 0)
		SKIP("bpftrace is not usable here (needs root and kernel uprobes)");
	CHECK_EQ(bt, 8 * mt_calls());
}

TEST(fib_recursion_and_order)
{
	const char *args[] = { "fib", "20", NULL };
	struct counts c1 = { 0 }, c2 = { 0 };
	struct run r;
	char *out;

	run_start(&r, args);
	probe_spec(r.up, "fib", &c1, true, true);
	c2.first = &c1;
	probe_spec(r.up, "fib", &c2, true, false); /* same point, runs second */
	CHECK_EQ(run_finish(&r, &out), 0);
	CHECK_EQ(expect(out, "result"), 6765);
	CHECK_EQ(c1.entries, expect(out, "entries"));
	CHECK_EQ(c1.returns, expect(out, "returns"));
	CHECK_EQ(c2.entries, c1.entries);
	CHECK_EQ(c2.order_bad, 0);
	/* each return context has its entry's time (the counts: test-backends.c) */
	CHECK_EQ(c1.ret_bad, 0);
	free(out);
	run_close(&r);
}

/* At work(1), before the dlopen: the library probe is pending, unarmed. */
static struct utrace_probe_stats before_dlopen;

static int snapshot_stats(struct utrace_probe_ctx *ctx, void *data)
{
	(void)ctx;
	utrace_probe__stats(data, &before_dlopen);
	return UTRACE_PROBE_REMOVE;
}

TEST(dlopen_pending_spec)
{
	char lib[4096];
	const char *args[] = { "dlopen", lib, "300", NULL };
	struct counts c = { 0 };
	struct utrace_uprobes_stats ust;
	struct utrace_probe *p;
	struct run r;
	char *out;

	snprintf(lib, sizeof(lib), "%s", target_path("libuprobe-dl.so"));
	run_start(&r, args);
	p = probe_spec(r.up, "libuprobe-dl:lib_func", &c, true, true);
	{
		UTRACE_OPTS(utrace_probe_opts, o, .handler = snapshot_stats, .data = p);

		CHECK(utrace_probe__register_spec(r.up, "work", &o));
	}
	CHECK_EQ(run_finish(&r, &out), 0);
	CHECK_EQ(before_dlopen.pending, 1);
	CHECK_EQ(before_dlopen.points, 0);
	CHECK_EQ(c.entries, expect(out, "entries"));
	CHECK_EQ(c.returns, expect(out, "returns"));
	CHECK_EQ(utrace_uprobes__stats(r.up, &ust), 0);
	CHECK(ust.dl_events >= 2);
	free(out);
	run_close(&r);
}

/* The first @n code bytes of work() in the file, as hex. */
static void file_bytes_hex(const char *sym, char *hex, size_t n)
{
	struct utrace_elf *elf = utrace_elf__open(target_path("s-uprobes"));
	uint8_t b[32];
	size_t i, k;

	CHECK(elf);
	for (i = 0; i < utrace_elf__sym_count(elf); i++) {
		const struct utrace_sym *s = utrace_elf__sym(elf, i);

		if (!strcmp(s->name, sym) && !(s->flags & UTRACE_SYM_PLT)) {
			CHECK_EQ(utrace_elf__read(elf, s->addr, b, n), (long)n);
			for (k = 0; k < n; k++)
				sprintf(hex + 2 * k, "%02x", b[k]);
			utrace_elf__close(elf);
			return;
		}
	}
	CHECK(!"symbol not found");
}

TEST(fork_child_runs_without_probes)
{
	const char *args[] = { "fork", "50", "30", NULL };
	struct counts c = { 0 };
	char hex[40], *out, *p;
	struct run r;

	run_start(&r, args);
	probe_spec(r.up, "work", &c, true, true);
	CHECK_EQ(run_finish(&r, &out), 0);
	CHECK_EQ(c.entries, expect(out, "entries"));
	CHECK_EQ(c.returns, expect(out, "returns"));
	file_bytes_hex("work", hex, 8);
	p = strstr(out, "child bytes=");
	CHECK(p);
	CHECK_MSG(!strncmp(p + 12, hex, 16), "child %.16s file %s", p + 12, hex);
	free(out);
	run_close(&r);
}

TEST(exec_drops_and_rearms_spec)
{
	const char *args[] = { "exec", "20", "30", NULL };
	struct counts c = { 0 };
	struct run r;
	char *out;

	run_start(&r, args);
	probe_spec(r.up, "work", &c, true, true);
	CHECK_EQ(run_finish(&r, &out), 0);
	CHECK_EQ(expect(out, "before_exec"), 20);
	CHECK_EQ(c.entries, 20 + 30);
	CHECK_EQ(c.returns, 20 + 30);
	CHECK_EQ(c.dropped_exec, 1);
	free(out);
	run_close(&r);
}

static int inject(struct utrace_probe_ctx *ctx, void *data)
{
	(void)data;
	return utrace_probe_ctx__set_return(ctx, 7) ? UTRACE_PROBE_REMOVE : UTRACE_PROBE_OK;
}

TEST(set_return_skips_function)
{
	const char *args[] = { "value", "10", NULL };
	UTRACE_OPTS(utrace_probe_opts, o, .handler = inject);
	struct run r;
	char *out;

	run_start(&r, args);
	CHECK(utrace_probe__register_spec(r.up, "get_value", &o));
	CHECK_EQ(run_finish(&r, &out), 0);
	CHECK_MSG(strstr(out, "sum=70"), "%s", out);
	free(out);
	run_close(&r);
}

struct deferred {
	struct utrace_uprobes *up;
	struct counts later;
	long hits, done_calls, done_err;
	struct utrace_probe *added;
};

static void on_done(struct utrace_probe *p, int err, void *data)
{
	struct deferred *d = data;

	(void)p;
	d->done_calls++;
	if (err)
		d->done_err = err;
}

static int self_removing(struct utrace_probe_ctx *ctx, void *data)
{
	struct deferred *d = data;

	(void)ctx;
	if (++d->hits == 1) {
		UTRACE_OPTS(utrace_probe_opts, o, .handler = on_entry, .data = &d->later);

		d->added = utrace_probe__register_spec(d->up, "work", &o);
		/* deferred: nothing armed yet while we are in a handler */
	}
	return d->hits == 10 ? UTRACE_PROBE_REMOVE : UTRACE_PROBE_OK;
}

TEST(deferred_registration_from_handler)
{
	const char *args[] = { "mt", "1000", "1", NULL };
	struct deferred d = { 0 };
	UTRACE_OPTS(utrace_probe_opts, o, .handler = self_removing, .data = &d, .done = on_done);
	struct run r;
	char *out;

	run_start(&r, args);
	d.up = r.up;
	CHECK(utrace_probe__register_spec(r.up, "work", &o));
	CHECK_EQ(d.done_calls, 1); /* immediate registration */
	CHECK_EQ(run_finish(&r, &out), 0);
	CHECK_EQ(d.hits, 10);
	CHECK(d.added);
	/* the added probe sees every call from the one after its registration */
	CHECK_EQ(d.later.entries, 1000 - 1);
	CHECK_EQ(d.done_calls, 2); /* + the deferred unregistration */
	CHECK_EQ(d.done_err, 0);
	free(out);
	run_close(&r);
}

/* The paper's rule: a probe unregistered by another probe's handler still runs for that hit. */
struct other {
	struct utrace_probe *victim;
	long first_hits, victim_hits, victim_done, victim_err;
};

static int kills_other(struct utrace_probe_ctx *ctx, void *data)
{
	struct other *o = data;

	(void)ctx;
	if (++o->first_hits == 5)
		CHECK_EQ(utrace_probe__unregister(o->victim), 0); /* deferred */
	return UTRACE_PROBE_OK;
}

static int victim(struct utrace_probe_ctx *ctx, void *data)
{
	struct other *o = data;

	(void)ctx;
	o->victim_hits++;
	return UTRACE_PROBE_OK;
}

static void victim_done(struct utrace_probe *p, int err, void *data)
{
	struct other *o = data;

	(void)p;
	o->victim_done++;
	o->victim_err = err;
}

TEST(unregistered_by_another_handler_runs_for_that_hit)
{
	const char *args[] = { "mt", "100", "1", NULL };
	struct other d = { 0 };
	UTRACE_OPTS(utrace_probe_opts, o1, .handler = kills_other, .data = &d);
	UTRACE_OPTS(utrace_probe_opts, o2, .handler = victim, .data = &d, .done = victim_done);
	struct run r;
	char *out;

	run_start(&r, args);
	CHECK(utrace_probe__register_spec(r.up, "work", &o1)); /* runs first: registered first */
	d.victim = utrace_probe__register_spec(r.up, "work", &o2);
	CHECK(d.victim);
	CHECK_EQ(d.victim_done, 1); /* immediate registration */
	CHECK_EQ(run_finish(&r, &out), 0);
	CHECK_EQ(d.first_hits, 100);
	/* hits 1..5: the fifth is the one it was unregistered in; none after */
	CHECK_EQ(d.victim_hits, 5);
	CHECK_EQ(d.victim_done, 2); /* + the deferred unregistration */
	CHECK_EQ(d.victim_err, 0);
	free(out);
	run_close(&r);
}

/*
 * A session detached or closed while its probes are armed, before
 * utrace_uprobes__free(): the layer takes its probes out first (the
 * session's release hook), the program runs on to its normal end (it died
 * of SIGTRAP at its next hit before), and the free afterwards touches
 * nothing of the session.
 */
static void let_go_with_probes(bool closing)
{
	const char *args[] = { "mt", "400000", "2", NULL };
	struct counts c = { 0 };
	struct run r;
	int st = -1, res = 0;
	char buf[256];
	ssize_t n;

	run_start(&r, args);
	probe_spec(r.up, "work", &c, true, true);
	while (c.entries < 200 && (res = utrace_session__run(r.s, 100)) != UTRACE_RUN_DONE)
		;
	CHECK_MSG(c.entries >= 200 && res != UTRACE_RUN_DONE, "%ld hits, run() %d", c.entries, res);
	if (closing) {
		utrace_session__close(r.s); /* waits for the command it launched */
	} else {
		CHECK_EQ(utrace_session__detach(r.s), 0);
		CHECK_EQ(waitpid(r.pid, &st, 0), r.pid);
		CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "the program ended with status 0x%x", st);
	}
	/* it printed its line only if it ran to its normal end */
	n = read(r.out_fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	CHECK_MSG(strstr(buf, "expect entries=800000"), "the program said '%s'", buf);
	utrace_uprobes__free(r.up);
	if (!closing)
		utrace_session__close(r.s);
	close(r.out_fd);
}

TEST(session_detach_before_uprobes_free_takes_the_probes_out)
{
	let_go_with_probes(false);
}

TEST(session_close_before_uprobes_free_takes_the_probes_out)
{
	let_go_with_probes(true);
}

/*
 * Run the session until *@count reaches @n: however slowly a loaded
 * machine lets the target call (the test's timeout is the bound).
 */
static void run_until(struct utrace_session *s, const long *count, long n)
{
	while (*count < n)
		utrace_session__run(s, 20);
}

/* Runtime address of @sym in live process @pid. */
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

/* The code bytes of @sym in @pid equal the file's. */
static void check_code_restored(pid_t pid, const char *sym)
{
	char hex[40], mem[40];
	uint8_t b[16];
	size_t i;

	CHECK_EQ(utrace_mem__read(pid, sym_addr(pid, sym), b, 16), 16);
	for (i = 0; i < 16; i++)
		sprintf(mem + 2 * i, "%02x", b[i]);
	file_bytes_hex(sym, hex, 16);
	CHECK_STREQ(mem, hex);
}

TEST(example_retval)
{
	char *argv[] = { strdup(harness_build_path("examples/retval")),
			 "work",
			 strdup(target_path("s-uprobes")),
			 "mt",
			 "5",
			 "1",
			 NULL };
	char *out = NULL;
	long v;

	CHECK_EQ(harness_run(argv, &out, NULL, 30), 0);
	for (v = 1; v <= 9; v += 2) {
		char line[64];

		snprintf(line, sizeof(line), "s-uprobes:work returned %ld ", v);
		CHECK_MSG(strstr(out, line), "no '%s' in:\n%s", line, out);
	}
	free(out);
}

TEST(example_count_hits)
{
	const char *args[] = { "loop", "2", NULL };
	struct target t = target_start("s-uprobes", args, -1);
	char pid[16], addr[32], line[128], *out = NULL;
	char *argv[] = { strdup(harness_build_path("examples/count-hits")), pid, addr, "0.5",
			 NULL };

	target_wait_ready(&t);
	snprintf(pid, sizeof(pid), "%d", t.pid);
	snprintf(addr, sizeof(addr), "%llx", (unsigned long long)sym_addr(t.pid, "work"));
	CHECK_EQ(harness_run(argv, &out, NULL, 30), 0);
	CHECK_MSG(out && strstr(out, "hits=") && atol(strstr(out, "hits=") + 5) > 0, "%s", out);
	check_code_restored(t.pid, "work");
	CHECK(write(t.in, "x\n", 2) == 2);
	close(t.in);
	t.in = -1;
	CHECK(read_line(t.out, line, sizeof(line), 10000) > 0);
	CHECK_MSG(strstr(line, " ok"), "%s", line);
	CHECK_EQ(target_reap(&t, 10000), 0);
	free(out);
}

TEST(fork_followed_child_is_probed)
{
	const char *args[] = { "fork", "50", "30", NULL };
	struct counts c = { 0 };
	struct run r;
	char *out;

	run_start_opts(&r, args, true, 0);
	probe_spec(r.up, "work", &c, true, true);
	CHECK_EQ(run_finish(&r, &out), 0);
	/* parent 2 x 50, child 30: the SPEC is armed in the followed child */
	CHECK_EQ(c.entries, 2 * 50 + 30);
	CHECK_EQ(c.returns, 2 * 50 + 30);
	free(out);
	run_close(&r);
}

TEST(depth_overflow_is_counted)
{
	const char *args[] = { "fib", "12", NULL };
	struct counts c = { 0 };
	struct utrace_probe_stats st;
	struct utrace_probe *p;
	struct run r;
	char *out;

	run_start_opts(&r, args, false, 4);
	p = probe_spec(r.up, "fib", &c, true, true);
	CHECK_EQ(run_finish(&r, &out), 0);
	CHECK_EQ(c.entries, expect(out, "entries"));
	CHECK_EQ(utrace_probe__stats(p, &st), 0);
	CHECK(st.missed_returns > 0);
	CHECK_EQ(c.returns + (long)st.missed_returns, c.entries);
	free(out);
	run_close(&r);
}

TEST(foreign_sigtraps_pass_through)
{
	const char *args[] = { "sigtrap", "50", NULL };
	struct counts c = { 0 };
	struct utrace_uprobes_stats ust;
	struct run r;
	char *out;

	run_start(&r, args);
	probe_spec(r.up, "work", &c, true, true);
	CHECK_EQ(run_finish(&r, &out), 0);
	CHECK_EQ(expect(out, "traps"), 100);
	CHECK_EQ(c.entries, 50);
	CHECK_EQ(c.returns, 50);
	CHECK_EQ(utrace_uprobes__stats(r.up, &ust), 0);
	CHECK_EQ(ust.foreign_traps, 100);
	free(out);
	run_close(&r);
}

TEST(unregister_while_running)
{
	const char *args[] = { "loop", "4", NULL };
	struct target t = target_start("s-uprobes", args, -1);
	struct utrace_session *s;
	struct utrace_uprobes *up;
	struct counts c = { 0 }, d = { 0 };
	struct utrace_probe *p;
	char line[128];
	long before;
	int k;

	target_wait_ready(&t);
	s = utrace_session__new(NULL);
	up = utrace_uprobes__new(s, &ptrace_only);
	CHECK(s && up);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	for (k = 0; k < 3; k++) {
		memset(&c, 0, sizeof(c));
		p = probe_spec(up, "work", &c, true, true);
		run_until(s, &c.entries, 1000);
		CHECK_EQ(utrace_probe__unregister(p), 0);
		before = c.entries;
		utrace_session__run(s, 100);
		CHECK_EQ(c.entries, before);
		check_code_restored(t.pid, "work");
	}
	/* and a last one left for free() to remove */
	p = probe_spec(up, "work", &d, true, true);
	run_until(s, &d.entries, 1000);
	utrace_uprobes__free(up);
	check_code_restored(t.pid, "work");
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	close(t.in);
	t.in = -1;
	CHECK(read_line(t.out, line, sizeof(line), 10000) > 0);
	CHECK_MSG(strstr(line, " ok"), "%s", line);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

TEST(register_before_attach_then_sync)
{
	const char *args[] = { "loop", "2", NULL };
	struct target t = target_start("s-uprobes", args, -1);
	struct utrace_session *s;
	struct utrace_uprobes *up;
	struct counts c = { 0 };
	char line[128];
	long before;

	target_wait_ready(&t);
	s = utrace_session__new(NULL);
	up = utrace_uprobes__new(s, &ptrace_only);
	CHECK(s && up);
	/* no process yet: the SPEC waits */
	probe_spec(up, "work", &c, true, true);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK_EQ(utrace_uprobes__sync(up), 1);
	CHECK_EQ(utrace_uprobes__sync(up), 0);
	run_until(s, &c.entries, 1000);
	/* release this process only, then detach it from the session */
	CHECK_EQ(utrace_uprobes__detach_pid(up, t.pid), 0);
	CHECK_EQ(c.dropped_other, 1);
	check_code_restored(t.pid, "work");
	CHECK_EQ(utrace_session__detach_pid(s, t.pid), 0);
	before = c.entries;
	msleep(100);
	CHECK_EQ(c.entries, before);
	utrace_uprobes__free(up);
	utrace_session__close(s);
	close(t.in);
	t.in = -1;
	CHECK(read_line(t.out, line, sizeof(line), 10000) > 0);
	CHECK_MSG(strstr(line, " ok"), "%s", line);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

TEST(riprel_slot_near_code)
{
	const char *args[] = { "riprel", "100", NULL };
	struct counts c = { 0 };
	struct utrace_uprobes_stats ust;
	struct run r;
	char *out;

	run_start(&r, args);
	probe_spec(r.up, "rip_push", &c, true, true);
	CHECK_EQ(run_finish(&r, &out), 0);
	CHECK_EQ(c.entries, 100);
	CHECK_EQ(c.returns, 100);
	CHECK_EQ(utrace_uprobes__stats(r.up, &ust), 0);
	/* the dynamic linker's area, then one within reach of the executable */
	CHECK_EQ(ust.xol_areas, 2);
	free(out);
	run_close(&r);
}

TEST(deferred_registration_multithreaded)
{
	const char *args[] = { "mt", "2000", "4", NULL };
	struct deferred d = { 0 };
	UTRACE_OPTS(utrace_probe_opts, o, .handler = self_removing, .data = &d, .done = on_done);
	struct utrace_probe_stats st;
	struct run r;
	char *out;

	run_start(&r, args);
	d.up = r.up;
	CHECK(utrace_probe__register_spec(r.up, "work", &o));
	CHECK_EQ(run_finish(&r, &out), 0);
	/* other threads hit while the deferred work quiesces: nested hits */
	CHECK_EQ(d.hits, 10);
	CHECK(d.added);
	CHECK_EQ(utrace_probe__stats(d.added, &st), 0);
	CHECK(d.later.entries > 0 && d.later.entries <= 8000);
	CHECK_EQ((long)st.hits, d.later.entries);
	CHECK_EQ(d.done_calls, 2);
	CHECK_EQ(d.done_err, 0);
	harness_note("added probe saw %ld of 8000 calls", d.later.entries);
	free(out);
	run_close(&r);
}
