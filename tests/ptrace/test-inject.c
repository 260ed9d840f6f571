/* SPDX-License-Identifier: MIT */
/*
 * test-inject.c - remote function calls and .so injection into live
 * targets. Each target checks itself afterwards (s-blocked: the read gets
 * the bytes written later, the sleep lasts its full time, the busy loop's
 * registers are intact; s-inject-mt: eight threads' register and stack
 * state intact and progressing). The injected libinject-test.so writes a
 * marker into the memfd arena, which we read through our own mapping: its
 * init ran exactly once, with our argument, in the target. The code bytes
 * of every executable mapping are compared before and after: no stray
 * patch is left behind.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "utrace/utrace.h"
#include "ptrace-util.h"
#include "../targets/inject-test.h"

static const char *so_path(void)
{
	static char buf[4096];

	if (!realpath(target_path("libinject-test.so"), buf))
		snprintf(buf, sizeof(buf), "%s", target_path("libinject-test.so"));
	return buf;
}

/* ---- code bytes of the executable mappings, before and after ---- */

struct code_snap {
	size_t nr;
	uint64_t start[64], len[64];
	unsigned char *bytes[64];
};

static void code_snap_take(pid_t pid, struct code_snap *c)
{
	struct utrace_maps *m = utrace_maps__read(pid);
	size_t i;

	CHECK(m);
	c->nr = 0;
	for (i = 0; i < m->nr && c->nr < 64; i++) {
		const struct utrace_map *e = &m->maps[i];

		if (!(e->prot & UTRACE_MAP_EXEC) || (e->path && !strcmp(e->path, "[vsyscall]")))
			continue;
		c->start[c->nr] = e->start;
		c->len[c->nr] = e->end - e->start;
		c->bytes[c->nr] = malloc(c->len[c->nr]);
		CHECK(c->bytes[c->nr]);
		CHECK_EQ(utrace_mem__read(pid, e->start, c->bytes[c->nr], c->len[c->nr]),
			 (ssize_t)c->len[c->nr]);
		c->nr++;
	}
	utrace_maps__free(m);
}

static void code_snap_compare(pid_t pid, struct code_snap *c)
{
	size_t i;

	for (i = 0; i < c->nr; i++) {
		unsigned char *now = malloc(c->len[i]);

		CHECK(now);
		CHECK_EQ(utrace_mem__read(pid, c->start[i], now, c->len[i]), (ssize_t)c->len[i]);
		CHECK_MSG(!memcmp(now, c->bytes[i], c->len[i]), "code at 0x%llx changed",
			  (unsigned long long)c->start[i]);
		free(now);
		free(c->bytes[i]);
	}
	c->nr = 0;
}

/* ---- what the target holds ---- */

static int count_fds(pid_t pid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	CHECK(dir);
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

static bool maps_contain(pid_t pid, const char *needle)
{
	char path[64], line[4096];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	CHECK(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/*
 * No page like our scratch page (anonymous, rw, 4 KiB) appeared since
 * @before. Other new mappings are fine: a failed dlopen() may still have
 * grown the heap (with ASan, in new mappings).
 */
static void check_no_scratch_left(pid_t pid, const struct utrace_maps *before)
{
	struct utrace_maps *m = utrace_maps__read(pid);
	size_t i, j;

	CHECK(m);
	for (i = 0; i < m->nr; i++) {
		const struct utrace_map *e = &m->maps[i];
		bool old = false;

		for (j = 0; j < before->nr && !old; j++)
			old = before->maps[j].start == e->start && before->maps[j].end == e->end;
		CHECK_MSG(old || e->path || e->end - e->start != 4096 ||
				  e->prot != (UTRACE_MAP_READ | UTRACE_MAP_WRITE),
			  "new anonymous page at 0x%llx", (unsigned long long)e->start);
	}
	utrace_maps__free(m);
}

/* ---- injection with the checks every case shares ---- */

/* The tracer's part of the arena protocol: the init refuses an arena without it. */
static int prepare(void *arena, size_t size, void *ctx)
{
	struct inject_test_marker *m = arena;

	if (size < sizeof(*m))
		return -EINVAL;
	m->host_cookie = INJECT_TEST_COOKIE;
	return 0;
}

static void check_marker(const struct utrace_injection *inj, pid_t pid, uint64_t arg)
{
	const struct inject_test_marker *m = inj->arena;

	CHECK(m);
	CHECK(inj->arena_size >= 4096);
	CHECK_EQ(m->magic, INJECT_TEST_MAGIC);
	CHECK_EQ(m->flags, 0x5a);
	CHECK_EQ(m->arg, arg);
	CHECK_EQ(m->pid, pid);
	CHECK_EQ(m->tid, inj->tid);
	CHECK_EQ(m->init_calls, 1);
	CHECK_EQ(m->ctor_calls, 1);
	CHECK_EQ(m->arena_size, inj->arena_size);
	CHECK_EQ(inj->init_ret, 42);
	CHECK(inj->handle != 0);
	CHECK(inj->target_arena_fd >= 0);
}

static void inject_ok(pid_t pid, uint64_t arg, struct utrace_injection *inj)
{
	char err[512] = "";
	struct code_snap snap;
	UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
		    .init_symbol = "inject_test_init", .init_arg = arg, .arena_size = 8192,
		    .errbuf = err, .errlen = sizeof(err));
	int r;

	code_snap_take(pid, &snap);
	r = utrace_inject(pid, so_path(), &o, inj);
	CHECK_MSG(r == 0, "%d: %s", r, err);
	CHECK_EQ(err[0], 0);
	CHECK_EQ(utrace_proc__tracer(pid), 0); /* detached */
	CHECK(maps_contain(pid, "libinject-test.so"));
	CHECK(maps_contain(pid, "/memfd:utrace-arena"));
	check_marker(inj, pid, arg);
	code_snap_compare(pid, &snap);
}

/* ---- remote function calls ---- */

static uint64_t libc_fn(pid_t pid, const char *name, bool *ifunc)
{
	struct utrace_image *img = utrace_image__open_pid(pid);
	struct utrace_spec spec;
	struct utrace_match *m = NULL;
	char text[64];
	size_t nr = 0, i;
	uint64_t addr = 0;

	CHECK(img);
	snprintf(text, sizeof(text), "libc:%s", name);
	CHECK_EQ(utrace_spec__parse(text, &spec, NULL, 0), 0);
	CHECK_EQ(utrace_image__resolve(img, &spec, &m, &nr, NULL), 0);
	for (i = 0; i < nr && !addr; i++) {
		if (m[i].sym_flags & UTRACE_SYM_PLT)
			continue;
		addr = m[i].addr;
		*ifunc = m[i].sym_flags & UTRACE_SYM_IFUNC;
	}
	free(m);
	utrace_spec__clear(&spec);
	utrace_image__close(img);
	CHECK_MSG(addr, "libc:%s not found", name);
	return addr;
}

struct entry_call {
	uint64_t fn_getpid;
	pid_t pid;
	int calls, fail;
};

/* Called at the syscall-entry stop of the target's read(): a remote call there. */
static int entry_call_cb(struct utrace_engine *e, struct utrace_thread *th,
			 struct utrace_syscall *sc)
{
	struct entry_call *ec = utrace_engine__ctx(e);
	uint64_t a[6] = { 0 }, ret = 0;

	if (sc->nr != SYS_read || ec->calls)
		return UTRACE_RESUME;
	ec->calls++;
	if (utrace_thread__remote_call(th, ec->fn_getpid, a, NULL, &ret) ||
	    ret != (uint64_t)ec->pid)
		ec->fail++;
	return UTRACE_RESUME;
}

/*
 * A remote call at a syscall-entry stop: the syscall is skipped for the call
 * and entered again afterwards, with its arguments (the read still gets the
 * line written later, exactly once).
 */
TEST(remote_call_at_syscall_entry)
{
	char foo[4096];
	const char *args[] = { "read", "0", foo, NULL };
	struct target t;
	const struct utrace_engine_ops ops = { .sz = sizeof(ops), .syscall_entry = entry_call_cb };
	struct entry_call ec = { 0 };
	struct utrace_session *s;
	char line[128] = "";
	bool ifunc = false;
	int i;

	/* s-blocked: read() must return "hello\n", then it dlopen()s libfoo and says so */
	CHECK(realpath(target_path("libfoo.so"), foo));
	t = target_start("s-blocked", args, -1);
	target_wait_ready(&t);
	msleep(100);
	ec.pid = t.pid;
	ec.fn_getpid = libc_fn(t.pid, "getpid", &ifunc);
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL_ENTRY, &ec));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	/* the attach interrupted the read; its restart stops at entry: the call */
	for (i = 0; i < 50 && !ec.calls; i++)
		utrace_session__run(s, 20);
	CHECK_EQ(ec.calls, 1);
	CHECK_EQ(ec.fail, 0);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	for (i = 0; i < 200 && !line[0]; i++) {
		CHECK_EQ(utrace_session__run(s, 25), UTRACE_RUN_TIMEOUT);
		if (read_line(t.out, line, sizeof(line), 25) < 0)
			line[0] = 0;
	}
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_MSG(!strcmp(line, "dlopen ok"), "target said '%s'", line);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

TEST(remote_call_values)
{
	const char *args[] = { "read", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_session *s;
	struct utrace_thread *th;
	struct user_regs_struct before, after;
	uint64_t a[6] = { 0 }, ret = 0, fn_getpid, fn_strlen, fn_pause, page;
	bool ifunc = false;
	long sret;
	UTRACE_OPTS(utrace_call_opts, quick, .timeout_ms = 300);

	target_wait_ready(&t);
	msleep(100);
	fn_getpid = libc_fn(t.pid, "getpid", &ifunc);
	CHECK(!ifunc);
	fn_strlen = libc_fn(t.pid, "strlen", &ifunc);
	{
		bool dummy;

		fn_pause = libc_fn(t.pid, "pause", &dummy);
	}
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	th = utrace_session__find_thread(s, t.pid);
	CHECK(th);
	CHECK_EQ(utrace_thread__quiesce(th, true), 0);
	CHECK_EQ(utrace_thread__get_regs(th, &before), 0);
	CHECK_EQ((long)before.orig_rax, SYS_read);

	CHECK_EQ(utrace_thread__remote_call(th, fn_getpid, a, NULL, &ret), 0);
	CHECK_EQ(ret, t.pid);

	/* strlen is an IFUNC in glibc: call the resolver, then what it chose. */
	a[0] = 0;
	a[1] = 4096;
	a[2] = PROT_READ | PROT_WRITE;
	a[3] = MAP_PRIVATE | MAP_ANONYMOUS;
	a[4] = (uint64_t)-1;
	CHECK_EQ(utrace_thread__remote_syscall(th, SYS_mmap, a, &sret), 0);
	CHECK(sret > 0);
	page = (uint64_t)sret;
	CHECK_EQ(utrace_thread__write_mem(th, page, "seventeen letters", 18), 18);
	memset(a, 0, sizeof(a));
	if (ifunc) {
		CHECK_EQ(utrace_thread__remote_call(th, fn_strlen, a, NULL, &ret), 0);
		CHECK(ret != 0);
		fn_strlen = ret;
	}
	a[0] = page;
	CHECK_EQ(utrace_thread__remote_call(th, fn_strlen, a, NULL, &ret), 0);
	CHECK_EQ(ret, 17);

	/* A callee that crashes: reported, thread restored. */
	memset(a, 0, sizeof(a));
	CHECK_EQ(utrace_thread__remote_call(th, 0x10, a, NULL, &ret), -UTRACE_ERRNO__REMOTE_FAULT);
	/* One that never returns (pause with every signal blocked): timed out. */
	CHECK_EQ(utrace_thread__remote_call(th, fn_pause, a, &quick, &ret), -ETIMEDOUT);
	/* And the thread still works. */
	CHECK_EQ(utrace_thread__remote_call(th, fn_getpid, a, NULL, &ret), 0);
	CHECK_EQ(ret, t.pid);

	a[0] = page;
	a[1] = 4096;
	CHECK_EQ(utrace_thread__remote_syscall(th, SYS_munmap, a, &sret), 0);
	CHECK_EQ(sret, 0);
	CHECK_EQ(utrace_thread__get_regs(th, &after), 0);
	CHECK_MEMEQ(&before, &after, sizeof(before));
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	msleep(50);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

/*
 * During a long remote call (usleep in the target) a child of ours that is
 * not traced exits: its status is still ours to collect afterwards.
 */
TEST(remote_call_leaves_plain_children_alone)
{
	const char *args[] = { "read", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_session *s;
	struct utrace_thread *th;
	uint64_t a[6] = { 200000 }, ret = 1;
	bool ifunc;
	uint64_t fn_usleep;
	int status;
	pid_t child;

	target_wait_ready(&t);
	fn_usleep = libc_fn(t.pid, "usleep", &ifunc);
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	th = utrace_session__find_thread(s, t.pid);
	CHECK_EQ(utrace_thread__quiesce(th, true), 0);
	child = fork();
	if (child == 0) {
		msleep(30);
		_exit(7);
	}
	CHECK_EQ(utrace_thread__remote_call(th, fn_usleep, a, NULL, &ret), 0);
	CHECK_EQ(ret, 0);
	CHECK_EQ(waitpid(child, &status, WNOHANG), child);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

/*
 * 300 remote calls (getpid, and strlen, whose SSE/AVX2 code clobbers
 * vector registers) spread over the nine threads of a busy s-inject-mt
 * (computing with integer and SSE registers, sleeping, blocked in read):
 * general registers identical, each thread's invariants hold afterwards.
 */
TEST(remote_call_stress_threads)
{
	const char *args[] = { "8", NULL };
	struct target t = target_start("s-inject-mt", args, -1);
	struct utrace_session *s;
	struct utrace_thread *ths[16];
	uint64_t a[6] = { 0 }, ret, fn_getpid, fn_strlen;
	char text[1000];
	bool ifunc;
	long sret = 0;
	int n, i;

	target_wait_ready(&t);
	fn_getpid = libc_fn(t.pid, "getpid", &ifunc);
	fn_strlen = libc_fn(t.pid, "strlen", &ifunc);
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	n = utrace_session__threads(s, t.pid, ths, 16);
	CHECK_EQ(n, 9);
	/* A string for strlen, whose SSE/AVX2 code clobbers vector registers. */
	CHECK_EQ(utrace_thread__quiesce(ths[0], true), 0);
	a[1] = 4096;
	a[2] = PROT_READ | PROT_WRITE;
	a[3] = MAP_PRIVATE | MAP_ANONYMOUS;
	a[4] = (uint64_t)-1;
	CHECK_EQ(utrace_thread__remote_syscall(ths[0], SYS_mmap, a, &sret), 0);
	CHECK(sret > 0);
	memset(text, 'x', sizeof(text) - 1);
	text[sizeof(text) - 1] = 0;
	CHECK_EQ(utrace_mem__write(t.pid, (uint64_t)sret, text, sizeof(text)),
		 (ssize_t)sizeof(text));
	memset(a, 0, sizeof(a));
	if (ifunc) {
		CHECK_EQ(utrace_thread__remote_call(ths[0], fn_strlen, a, NULL, &ret), 0);
		fn_strlen = ret;
	}
	for (i = 0; i < 300; i++) {
		struct utrace_thread *th = ths[(i * 7) % n];
		struct user_regs_struct before, after;
		bool use_strlen = i % 2;

		CHECK_EQ(utrace_thread__quiesce(th, true), 0);
		CHECK_EQ(utrace_thread__get_regs(th, &before), 0);
		ret = 0;
		a[0] = use_strlen ? (uint64_t)sret : 0;
		CHECK_EQ(utrace_thread__remote_call(th, use_strlen ? fn_strlen : fn_getpid, a, NULL,
						    &ret),
			 0);
		CHECK_EQ(ret, use_strlen ? (uint64_t)sizeof(text) - 1 : (uint64_t)t.pid);
		CHECK_EQ(utrace_thread__get_regs(th, &after), 0);
		CHECK_MEMEQ(&before, &after, sizeof(before));
		CHECK_EQ(utrace_thread__resume(th), 0);
		if (i % 50 == 0)
			CHECK(utrace_session__run(s, 5) >= 0);
	}
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_EQ(write(t.in, "quit\n", 5), 5);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

/*
 * atof() returns its double in xmm0 and computes with the low xmm
 * registers (string functions do not do: on AVX-512 machines glibc picks
 * their EVEX versions, which use only ymm16-31). Called 40 times in a
 * thread whose loop keeps doubles in xmm0-5 (s-blocked spin): the loop's
 * result is still right, so NT_X86_XSTATE came back each time.
 */
TEST(remote_call_keeps_vector_state)
{
	const char *args[] = { "spin", "10000", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_session *s;
	struct utrace_thread *th;
	uint64_t a[6] = { 0 }, ret, fn_atof;
	bool ifunc;
	long sret = 0;
	int i;

	target_wait_ready(&t);
	fn_atof = libc_fn(t.pid, "atof", &ifunc);
	CHECK(!ifunc);
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	th = utrace_session__find_thread(s, t.pid);
	CHECK_EQ(utrace_thread__quiesce(th, true), 0);
	a[1] = 4096;
	a[2] = PROT_READ | PROT_WRITE;
	a[3] = MAP_PRIVATE | MAP_ANONYMOUS;
	a[4] = (uint64_t)-1;
	CHECK_EQ(utrace_thread__remote_syscall(th, SYS_mmap, a, &sret), 0);
	CHECK(sret > 0);
	CHECK_EQ(utrace_mem__write(t.pid, (uint64_t)sret, "12345.678e-3", 13), 13);
	memset(a, 0, sizeof(a));
	a[0] = (uint64_t)sret;
	for (i = 0; i < 40; i++) {
		/* The spin is calibrated: on a loaded machine it may end early. */
		th = utrace_session__find_thread(s, t.pid);
		if (!th)
			SKIP("the target finished its loop after %d calls", i);
		CHECK_EQ(utrace_thread__quiesce(th, true), 0);
		CHECK_EQ(utrace_thread__remote_call(th, fn_atof, a, NULL, &ret), 0);
		CHECK_EQ(utrace_thread__resume(th), 0);
		CHECK(utrace_session__run(s, 1) >= 0);
	}
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_EQ(target_reap(&t, 20000), 0);
}

struct exit_state {
	pid_t pid;
	uint64_t fn;
	int calls, fail;
};

static int cb_read_exit(struct utrace_engine *e, struct utrace_thread *th,
			struct utrace_syscall *sc)
{
	struct exit_state *st = utrace_engine__ctx(e);
	uint64_t a[6] = { 0 }, ret = 0;

	if (sc->nr != SYS_read)
		return UTRACE_RESUME;
	st->calls++;
	if (sc->ret != 6)
		st->fail++;
	if (utrace_thread__remote_call(th, st->fn, a, NULL, &ret) || ret != (uint64_t)st->pid)
		st->fail++;
	/* Keep it until we detach: the session would reap our child's exit. */
	return UTRACE_STOP | UTRACE_BREAK;
}

/* From a syscall-exit stop: the read's result (6 bytes) still reaches the program. */
TEST(remote_call_at_syscall_exit)
{
	const char *args[] = { "read", NULL };
	struct target t = target_start("s-blocked", args, -1);
	const struct utrace_engine_ops ops = { .sz = sizeof(ops), .syscall_exit = cb_read_exit };
	struct exit_state st = { 0 };
	struct utrace_session *s;
	bool ifunc;
	int i;

	target_wait_ready(&t);
	msleep(100);
	st.pid = t.pid;
	st.fn = libc_fn(t.pid, "getpid", &ifunc);
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL_EXIT, &st));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	for (i = 0; i < 100 && !st.calls; i++)
		CHECK(utrace_session__run(s, 20) >= 0);
	CHECK_EQ(st.calls, 1);
	CHECK_EQ(st.fail, 0);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

static unsigned long rseq_count(struct target *t)
{
	char line[64];

	CHECK_EQ(write(t->in, "count\n", 6), 6);
	CHECK(read_line(t->out, line, sizeof(line), 5000) > 0);
	return strtoul(line, NULL, 10);
}

/*
 * A thread stopped inside an rseq critical section must leave through the
 * section's abort handler after a remote call (see lib/remote-call.c);
 * resumed at its old rip it would spin forever.
 */
TEST(remote_call_rseq_abort)
{
	struct target t = target_start("s-rseq", NULL, -1);
	struct utrace_session *s;
	struct utrace_thread *th;
	uint64_t a[6] = { 0 }, ret = 0, fn_getpid;
	bool ifunc;
	char line[128];
	int pid, tid, i;
	unsigned long c0, c1;

	CHECK(read_line(t.out, line, sizeof(line), 10000) > 0);
	if (!strncmp(line, "norseq", 6)) {
		target_reap(&t, 5000);
		SKIP("glibc did not register rseq");
	}
	CHECK_EQ(sscanf(line, "ready %d %d", &pid, &tid), 2);
	fn_getpid = libc_fn(t.pid, "getpid", &ifunc);
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	th = utrace_session__find_thread(s, tid);
	CHECK(th);
	for (i = 0; i < 20; i++) {
		CHECK_EQ(utrace_thread__quiesce(th, true), 0);
		CHECK_EQ(utrace_thread__remote_call(th, fn_getpid, a, NULL, &ret), 0);
		CHECK_EQ(ret, t.pid);
		CHECK_EQ(utrace_thread__resume(th), 0);
	}
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	c0 = rseq_count(&t);
	for (i = 0, c1 = c0; i < 30 && c1 == c0; i++) {
		msleep(100);
		c1 = rseq_count(&t);
	}
	CHECK_MSG(c1 > c0, "the rseq thread stopped aborting (%lu -> %lu)", c0, c1);
	CHECK_EQ(write(t.in, "quit\n", 5), 5);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

/* ---- injection into targets in various states ---- */

TEST(inject_blocked_read)
{
	const char *args[] = { "read", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_injection inj;

	target_wait_ready(&t);
	msleep(100);
	inject_ok(t.pid, 0x1234567890abcdefULL, &inj);
	CHECK_EQ(inj.tid, t.pid);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 10000), 0);
	utrace_injection__clear(&inj);
}

TEST(inject_nanosleep)
{
	const char *args[] = { "sleep", "1500", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_injection inj;

	target_wait_ready(&t);
	msleep(200);
	inject_ok(t.pid, 7, &inj);
	CHECK_EQ(target_reap(&t, 10000), 0);
	utrace_injection__clear(&inj);
}

TEST(inject_busy_loop)
{
	/*
	 * About 2 s of busy loop after "ready" (calibrated by the target, so
	 * as long on a loaded machine): the injection, 0.2 s in, lands in it.
	 */
	const char *args[] = { "spin", "4000", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_injection inj;

	target_wait_ready(&t);
	msleep(200);
	inject_ok(t.pid, 99, &inj);
	CHECK_EQ(target_reap(&t, 20000), 0);
	utrace_injection__clear(&inj);
}

TEST(inject_multithreaded)
{
	const char *args[] = { "8", NULL };
	struct target t = target_start("s-inject-mt", args, -1);
	struct utrace_injection inj;

	target_wait_ready(&t);
	msleep(100);
	inject_ok(t.pid, 8, &inj);
	msleep(100);
	CHECK_EQ(write(t.in, "quit\n", 5), 5);
	CHECK_EQ(target_reap(&t, 10000), 0);
	utrace_injection__clear(&inj);
}

/*
 * An init that starts a thread and waits for it: the new thread's first
 * stop reaches the session while we are inside the remote call. The thread
 * must not keep SIGSETXID blocked (the target's setuid() at quit would
 * hang), and it must run on after we detach.
 */
TEST(inject_init_starts_thread)
{
	const char *args[] = { "2", NULL };
	struct target t = target_start("s-inject-mt", args, -1);
	struct utrace_injection inj;
	struct inject_test_marker *m;
	char err[512] = "";
	uint64_t ticks;
	int i;
	UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
		    .init_symbol = "inject_test_init_thread", .init_arg = 3, .arena_size = 4096,
		    .errbuf = err, .errlen = sizeof(err));

	target_wait_ready(&t);
	CHECK_MSG(utrace_inject(t.pid, so_path(), &o, &inj) == 0, "%s", err);
	m = inj.arena;
	CHECK_EQ(m->magic, INJECT_TEST_MAGIC);
	CHECK(m->thread_tid > 0 && m->thread_tid != m->tid);
	harness_note("agent thread %d, blocked signals %#llx", m->thread_tid,
		     (unsigned long long)m->thread_sigblk);
	CHECK(!(m->thread_sigblk & (1ULL << (33 - 1)))); /* SIGSETXID */
	CHECK(!(m->thread_sigblk & (1ULL << (SIGSEGV - 1))));
	CHECK_EQ(utrace_proc__tracer(m->thread_tid), 0);
	ticks = __atomic_load_n(&m->thread_ticks, __ATOMIC_RELAXED);
	/* It runs on (give it time: the test machines can be very loaded). */
	for (i = 0; i < 400 && __atomic_load_n(&m->thread_ticks, __ATOMIC_RELAXED) == ticks; i++)
		msleep(5);
	CHECK(__atomic_load_n(&m->thread_ticks, __ATOMIC_RELAXED) > ticks);
	CHECK_EQ(write(t.in, "quit\n", 5), 5);
	CHECK_EQ(target_reap(&t, 10000), 0);
	utrace_injection__clear(&inj);
}

static int cb_count_entry(struct utrace_engine *e, struct utrace_thread *th,
			  struct utrace_syscall *sc)
{
	(*(long *)utrace_engine__ctx(e))++;
	return UTRACE_RESUME;
}

/*
 * Into a process a session already traces, with a syscall engine: eight
 * threads keep making syscalls (each one a stop handled by the session)
 * while one thread runs dlopen. The process stays traced afterwards.
 */
TEST(inject_in_existing_session)
{
	const char *args[] = { "8", NULL };
	struct target t = target_start("s-inject-mt", args, -1);
	const struct utrace_engine_ops ops = { .sz = sizeof(ops), .syscall_entry = cb_count_entry };
	struct utrace_injection inj;
	struct utrace_session *s;
	char err[512] = "";
	long entries = 0, before;
	UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
		    .init_symbol = "inject_test_init", .init_arg = 77, .arena_size = 4096,
		    .errbuf = err, .errlen = sizeof(err));

	target_wait_ready(&t);
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL_ENTRY, &entries));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	CHECK(entries > 0);
	CHECK_MSG(utrace_session__inject(s, t.pid, so_path(), &o, &inj) == 0, "%s", err);
	check_marker(&inj, t.pid, 77);
	CHECK(utrace_proc__tracer(t.pid) > 0); /* still ours */
	before = entries;
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	CHECK(entries > before);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_EQ(write(t.in, "quit\n", 5), 5);
	CHECK_EQ(target_reap(&t, 10000), 0);
	utrace_injection__clear(&inj);
}

/* A stopped process (SIGSTOP) is injected and stays stopped until SIGCONT. */
TEST(inject_group_stopped)
{
	const char *args[] = { "read", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_injection inj;

	target_wait_ready(&t);
	CHECK_EQ(kill(t.pid, SIGSTOP), 0);
	CHECK(wait_state(t.pid, "T", 5000));
	inject_ok(t.pid, 11, &inj);
	msleep(50);
	CHECK_MSG(proc_state(t.pid) == 'T', "state %c", proc_state(t.pid));
	CHECK_EQ(kill(t.pid, SIGCONT), 0);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 10000), 0);
	utrace_injection__clear(&inj);
}

/* ---- failures leave the target as it was ---- */

/* Inject @path with @init into a blocked reader, expect @err, check the target. */
static void inject_fails(const char *path, const char *init, int want, const char *msg)
{
	const char *args[] = { "read", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_injection inj;
	struct code_snap snap;
	char err[512] = "", prefix[64];
	UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
		    .init_symbol = init, .init_arg = 1, .arena_size = 4096, .errbuf = err,
		    .errlen = sizeof(err));
	struct utrace_maps *maps_before;
	int fds, r;

	target_wait_ready(&t);
	msleep(100);
	fds = count_fds(t.pid);
	maps_before = utrace_maps__read(t.pid);
	CHECK(maps_before);
	code_snap_take(t.pid, &snap);
	memset(&inj, 0x5a, sizeof(inj));
	r = utrace_inject(t.pid, path, &o, &inj);
	CHECK_MSG(r == want, "%d != %d: %s", r, want, err);
	snprintf(prefix, sizeof(prefix), "pid %d: cannot inject '", t.pid);
	CHECK_MSG(!strncmp(err, prefix, strlen(prefix)), "message '%s'", err);
	CHECK_MSG(strstr(err, msg), "message '%s' lacks '%s'", err, msg);
	CHECK_MSG(!strchr(err, '\n'), "message '%s' has a newline", err);
	CHECK_EQ(((unsigned char *)&inj)[0], 0x5a); /* untouched */
	harness_note("%s", err);
	CHECK_EQ(utrace_proc__tracer(t.pid), 0);
	CHECK_EQ(count_fds(t.pid), fds);
	CHECK(!maps_contain(t.pid, "utrace-arena"));
	CHECK(!maps_contain(t.pid, "libinject-test"));
	check_no_scratch_left(t.pid, maps_before);
	utrace_maps__free(maps_before);
	code_snap_compare(t.pid, &snap);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

TEST(inject_missing_so)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s", so_path());
	strcpy(strrchr(path, '/') + 1, "libdoes-not-exist.so");
	/* realpath() fails on our side first: clean error, target untouched. */
	inject_fails(path, "inject_test_init", -ENOENT, "No such file or directory");
}

TEST(inject_not_an_elf)
{
	/* Exists and is safe, but dlopen refuses it: the dlerror text comes back. */
	char dir[] = "/tmp/utrace-inject-XXXXXX", path[4200];
	FILE *f;

	CHECK(mkdtemp(dir));
	CHECK_EQ(chmod(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/libjunk.so", dir);
	f = fopen(path, "w");
	CHECK(f);
	fputs("not an ELF file\n", f);
	fclose(f);
	CHECK_EQ(chmod(path, 0644), 0);
	inject_fails(path, "inject_test_init", -UTRACE_ERRNO__INJECT, "dlopen failed: ");
	unlink(path);
	rmdir(dir);
}

TEST(inject_missing_symbol)
{
	inject_fails(so_path(), "no_such_init", -UTRACE_ERRNO__INJECT, "dlsym failed: ");
}

TEST(inject_init_fails)
{
	inject_fails(so_path(), "inject_test_init_fail", -UTRACE_ERRNO__INJECT,
		     "inject_test_init_fail() failed: Operation not permitted");
}

TEST(inject_init_crashes)
{
	inject_fails(so_path(), "inject_test_init_crash", -UTRACE_ERRNO__REMOTE_FAULT,
		     "remote call of inject_test_init_crash");
}

/* Copy the test object to @dir/libinject-copy.so with @mode. */
static void copy_so(const char *dir, mode_t mode, char *out, size_t size)
{
	FILE *in = fopen(so_path(), "r"), *o;
	char buf[4096];
	size_t n;

	snprintf(out, size, "%s/libinject-copy.so", dir);
	CHECK(in);
	o = fopen(out, "w");
	CHECK(o);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		CHECK_EQ(fwrite(buf, 1, n, o), n);
	fclose(in);
	fclose(o);
	CHECK_EQ(chmod(out, mode), 0);
}

TEST(inject_refuses_writable_paths)
{
	char dir[] = "/tmp/utrace-inject-XXXXXX", path[4200];

	CHECK(mkdtemp(dir));
	/* A world-writable, non-sticky directory: anyone can swap the file. */
	CHECK_EQ(chmod(dir, 0777), 0);
	copy_so(dir, 0644, path, sizeof(path));
	inject_fails(path, "inject_test_init", -UTRACE_ERRNO__UNSAFE_PATH,
		     "is writable by others (mode 0777) and not sticky");
	/* A safe directory but a group-writable file. */
	CHECK_EQ(chmod(dir, 0755), 0);
	CHECK_EQ(chmod(path, 0664), 0);
	inject_fails(path, "inject_test_init", -UTRACE_ERRNO__UNSAFE_PATH,
		     "is writable by its group (mode 0664)");
	/* Sticky like /tmp, owned by us: fine. */
	CHECK_EQ(chmod(dir, 01777), 0);
	CHECK_EQ(chmod(path, 0644), 0);
	{
		const char *args[] = { "read", NULL };
		struct target t = target_start("s-blocked", args, -1);
		struct utrace_injection inj;
		UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
			    .init_symbol = "inject_test_init", .init_arg = 5, .arena_size = 4096);

		target_wait_ready(&t);
		CHECK_EQ(utrace_inject(t.pid, path, &o, &inj), 0);
		check_marker(&inj, t.pid, 5);
		utrace_injection__clear(&inj);
		CHECK_EQ(write(t.in, "hello\n", 6), 6);
		CHECK_EQ(target_reap(&t, 10000), 0);
	}
	/* A file of another user (its owner can rewrite it): refused. */
	if (geteuid() == 0 && chown(path, 65534, 65534) == 0) {
		inject_fails(path, "inject_test_init", -UTRACE_ERRNO__UNSAFE_PATH,
			     "belongs to uid 65534, neither us nor root");
		CHECK_EQ(chown(path, 0, 0), 0);
	}
	/* The tests-only override. */
	CHECK_EQ(chmod(dir, 0777), 0);
	{
		const char *args[] = { "read", NULL };
		struct target t = target_start("s-blocked", args, -1);
		struct utrace_injection inj;
		UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
			    .init_symbol = "inject_test_init", .init_arg = 6, .arena_size = 4096,
			    .allow_unsafe_path = true);

		target_wait_ready(&t);
		CHECK_EQ(utrace_inject(t.pid, path, &o, &inj), 0);
		check_marker(&inj, t.pid, 6);
		utrace_injection__clear(&inj);
		CHECK_EQ(write(t.in, "hello\n", 6), 6);
		CHECK_EQ(target_reap(&t, 10000), 0);
	}
	unlink(path);
	rmdir(dir);
}

TEST(inject_relative_path_refused)
{
	inject_fails("libinject-test.so", "inject_test_init", -EINVAL, "not an absolute path");
}

/* The target's _r_debug: ours, moved from our ld.so base to its ld.so base. */
static uint64_t target_r_debug(pid_t pid)
{
	void *mine = dlsym(RTLD_DEFAULT, "_r_debug");
	struct utrace_maps *m = utrace_maps__read(pid);
	uint64_t base = 0;
	Dl_info info;
	size_t i;

	CHECK(mine && m);
	CHECK(dladdr(mine, &info) && info.dli_fbase);
	for (i = 0; i < m->nr && !base; i++)
		if (m->maps[i].path && strstr(m->maps[i].path, "/ld-linux") && !m->maps[i].offset)
			base = m->maps[i].start;
	utrace_maps__free(m);
	CHECK(base);
	return base + ((uint64_t)mine - (uint64_t)info.dli_fbase);
}

/* While a dlopen is half done (r_state != RT_CONSISTENT), wait, then give up. */
TEST(inject_waits_for_busy_loader)
{
	const char *args[] = { "read", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_injection inj;
	char err[512] = "";
	UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
		    .init_symbol = "inject_test_init", .init_arg = 4, .arena_size = 4096,
		    .errbuf = err, .errlen = sizeof(err));
	uint64_t r_debug;
	int32_t state;

	target_wait_ready(&t);
	r_debug = target_r_debug(t.pid);
	CHECK_EQ(utrace_mem__read(t.pid, r_debug + 24, &state, 4), 4);
	CHECK_EQ(state, 0);
	state = 1; /* RT_ADD */
	CHECK_EQ(utrace_mem__write(t.pid, r_debug + 24, &state, 4), 4);
	CHECK_EQ(utrace_inject(t.pid, so_path(), &o, &inj), -EAGAIN);
	CHECK_MSG(strstr(err, "dynamic loader stays busy"), "%s", err);
	CHECK(!maps_contain(t.pid, "libinject-test"));
	state = 0;
	CHECK_EQ(utrace_mem__write(t.pid, r_debug + 24, &state, 4), 4);
	CHECK_EQ(utrace_inject(t.pid, so_path(), &o, &inj), 0);
	check_marker(&inj, t.pid, 4);
	utrace_injection__clear(&inj);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

/* ---- repetition ---- */

TEST_TIMEOUT(inject_50_fresh_targets, 180)
{
	int i;

	for (i = 0; i < 50; i++) {
		const char *args[] = { "read", NULL };
		struct target t = target_start("s-blocked", args, -1);
		struct utrace_injection inj;
		UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
			    .init_symbol = "inject_test_init", .init_arg = (uint64_t)i,
			    .arena_size = 4096);
		int r;

		target_wait_ready(&t);
		r = utrace_inject(t.pid, so_path(), &o, &inj);
		CHECK_MSG(r == 0, "round %d: %d", i, r);
		check_marker(&inj, t.pid, (uint64_t)i);
		utrace_injection__clear(&inj);
		CHECK_EQ(write(t.in, "hello\n", 6), 6);
		CHECK_MSG(target_reap(&t, 10000) == 0, "round %d", i);
	}
}

/* Threads of @pid with a tracer (TracerPid != 0), the first in *@tid. */
static int traced_threads(pid_t pid, pid_t *tid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	CHECK(dir);
	while ((d = readdir(dir))) {
		pid_t t = (pid_t)atoi(d->d_name);

		if (t > 0 && utrace_proc__tracer(t) > 0) {
			if (!n)
				*tid = t;
			n++;
		}
	}
	closedir(dir);
	return n;
}

/*
 * 50 injections into one process, each init starting a thread and
 * returning at once (as the agent does): after each, no thread of the
 * target is left traced (the new thread's clone event and first stop were
 * both handled before the detach; about 1 attach in 6 left it stopped
 * before), and every thread started so far keeps running.
 */
TEST_TIMEOUT(inject_50_times_no_thread_left_traced, 300)
{
	const char *args[] = { "read", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct inject_test_marker *m[50];
	struct utrace_injection inj[50];
	uint64_t ticks[50];
	int i, k, n;

	target_wait_ready(&t);
	for (i = 0; i < 50; i++) {
		char err[512] = "";
		pid_t tid = 0;
		UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
			    .init_symbol = "inject_test_init_thread_nowait",
			    .init_arg = (uint64_t)i, .arena_size = 4096, .errbuf = err,
			    .errlen = sizeof(err));

		CHECK_MSG(utrace_inject(t.pid, so_path(), &o, &inj[i]) == 0, "round %d: %s", i,
			  err);
		m[i] = inj[i].arena;
		CHECK_EQ(m[i]->arg, (uint64_t)i);
		n = traced_threads(t.pid, &tid);
		CHECK_MSG(n == 0, "round %d: %d threads still traced (thread %d)", i, n, tid);
	}
	/* Every thread the inits started runs (they tick every millisecond). */
	for (i = 0; i < 50; i++)
		ticks[i] = __atomic_load_n(&m[i]->thread_ticks, __ATOMIC_RELAXED);
	for (k = 0; k < 400; k++) {
		for (i = 0; i < 50; i++)
			if (__atomic_load_n(&m[i]->thread_ticks, __ATOMIC_RELAXED) == ticks[i])
				break;
		if (i == 50)
			break;
		msleep(5);
	}
	CHECK_MSG(i == 50, "the thread of round %d does not run", i);
	for (i = 0; i < 50; i++)
		utrace_injection__clear(&inj[i]);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

/*
 * Fails with how the target ended if it is no longer running: reading the
 * memory of a process that exited gives only -ESRCH, which says nothing.
 */
static void check_target_running(struct target *t)
{
	int st = 0;

	CHECK_MSG(waitpid(t->pid, &st, WNOHANG) == 0, "the target ended before the check: %s %d",
		  WIFEXITED(st) ? "exit status" : "signal",
		  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/*
 * s-blocked's arguments for @mode when the target must still run when we
 * look at it after a tracer was killed: "spin 1500" spins only some 0.2-0.4 s
 * after "ready" (its calibration aims low, and shorter still when it was
 * calibrated on a loaded CPU), so it often had finished - exit 0, its check
 * passed - before the code comparison (8 runs in 20 with 4 CPU hogs).
 * "spin 0" checks rounds of about 50 ms until EOF, which target_reap() gives.
 */
static const char *killed_tracer_ms(const char *mode)
{
	return strcmp(mode, "spin") ? "1500" : "0";
}

/*
 * Wait (at most @ms) until the injected init runs in @pid: its marker's
 * magic is in the arena (the memfd "utrace-arena" it mapped), written just
 * before inject_test_init_slow() starts its 400 ms loop.
 */
static bool wait_init_started(pid_t pid, int ms)
{
	int waited;

	for (waited = 0; waited < ms; waited += 2) {
		struct utrace_maps *m = utrace_maps__read(pid);
		uint64_t magic = 0;
		size_t i;

		for (i = 0; m && i < m->nr; i++)
			if (m->maps[i].path && strstr(m->maps[i].path, "utrace-arena") &&
			    utrace_mem__read(pid, m->maps[i].start, &magic, sizeof(magic)) ==
				    sizeof(magic) &&
			    magic == INJECT_TEST_MAGIC)
				break;
		if (m && i < m->nr) {
			utrace_maps__free(m);
			return true;
		}
		utrace_maps__free(m);
		msleep(2);
	}
	return false;
}

/*
 * The tracer is SIGKILLed while the target runs the (slow) init of the
 * injected object: the kernel detaches the thread with the call's
 * registers. It must return through the stub and the sigreturn frame by
 * itself (lib/arch/x86_64/call.c) and carry on exactly as if nothing had
 * happened: s-blocked checks its read (restarted, gets our bytes), its
 * nanosleep (run again: no EINTR, at least the full length) or its
 * vector registers (spin: the init clobbers xmm0-5). Nobody traces it
 * afterwards and its code is unchanged.
 */
static void kill_tracer_during_init(const char *mode)
{
	const char *args[] = { mode, killed_tracer_ms(mode), NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct code_snap snap;
	pid_t tracer, tid = 0;
	int st;

	target_wait_ready(&t);
	code_snap_take(t.pid, &snap);
	tracer = fork();
	CHECK(tracer >= 0);
	if (tracer == 0) {
		struct utrace_injection inj;
		UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
			    .init_symbol = "inject_test_init_slow", .init_arg = 9,
			    .arena_size = 4096);

		_exit(utrace_inject(t.pid, so_path(), &o, &inj) == 0 ? 0 : 3);
	}
	/*
	 * Kill as soon as the init runs: it lasts 400 ms from there, so this
	 * lands inside it. (A fixed 200 ms wait came before the dlopen had
	 * finished on a loaded machine: 5 runs in 20 with 4 CPU hogs.)
	 */
	CHECK_MSG(wait_init_started(t.pid, 10000), "the init did not start");
	CHECK(maps_contain(t.pid, "libinject-test.so"));
	CHECK_EQ(kill(tracer, SIGKILL), 0);
	CHECK_EQ(waitpid(tracer, &st, 0), tracer);
	CHECK(WIFSIGNALED(st)); /* it was still injecting */
	msleep(400); /* the init ends, the thread finds its way back */
	check_target_running(&t);
	CHECK_EQ(traced_threads(t.pid, &tid), 0);
	code_snap_compare(t.pid, &snap);
	if (!strcmp(mode, "read"))
		CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 20000), 0);
}

TEST(tracer_killed_during_call_read)
{
	kill_tracer_during_init("read");
}

TEST(tracer_killed_during_call_nanosleep)
{
	kill_tracer_during_init("sleep");
}

TEST(tracer_killed_during_call_vector_state)
{
	kill_tracer_during_init("spin");
}

/*
 * The same for a remote syscall (poll(NULL, 0, 300): 300 ms, no memory
 * needed): the thread is left at libc's "syscall; ret" with our registers,
 * returns into __restore_rt and our rt_sigreturn frame (lib/remote.c), and
 * carries on with its own registers, mask and vector state: the read
 * restarts and gets our bytes, the spin's doubles are intact.
 */
static void kill_tracer_during_syscall(const char *mode)
{
	const char *args[] = { mode, killed_tracer_ms(mode), NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct code_snap snap;
	pid_t tracer, tid = 0;
	int st;

	target_wait_ready(&t);
	code_snap_take(t.pid, &snap);
	tracer = fork();
	CHECK(tracer >= 0);
	if (tracer == 0) {
		struct utrace_session *s = utrace_session__new(NULL);
		struct utrace_thread *th;
		uint64_t a[6] = { 0, 0, 300, 0, 0, 0 };
		long ret = 0;

		if (!s || utrace_session__attach(s, t.pid) < 0)
			_exit(3);
		th = utrace_session__find_thread(s, t.pid);
		if (!th || utrace_thread__quiesce(th, true) < 0)
			_exit(4);
		utrace_thread__remote_syscall(th, SYS_poll, a, &ret);
		_exit(5);
	}
	msleep(150);
	CHECK_EQ(kill(tracer, SIGKILL), 0);
	CHECK_EQ(waitpid(tracer, &st, 0), tracer);
	CHECK_MSG(WIFSIGNALED(st), "the tracer ended first: status %#x", st);
	msleep(300); /* the poll ends, the thread finds its way back */
	check_target_running(&t);
	CHECK_EQ(traced_threads(t.pid, &tid), 0);
	code_snap_compare(t.pid, &snap);
	if (!strcmp(mode, "read"))
		CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 20000), 0);
}

TEST(tracer_killed_during_syscall_read)
{
	kill_tracer_during_syscall("read");
}

TEST(tracer_killed_during_syscall_vector_state)
{
	kill_tracer_during_syscall("spin");
}

/* Twice into the same process: one copy of the object, init called twice. */
TEST(inject_twice_same_target)
{
	const char *args[] = { "read", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_injection a, b;
	UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
		    .init_symbol = "inject_test_init", .init_arg = 1, .arena_size = 4096);

	target_wait_ready(&t);
	CHECK_EQ(utrace_inject(t.pid, so_path(), &o, &a), 0);
	o.init_arg = 2;
	CHECK_EQ(utrace_inject(t.pid, so_path(), &o, &b), 0);
	CHECK_EQ(a.handle, b.handle);
	CHECK_EQ(((struct inject_test_marker *)b.arena)->init_calls, 2);
	CHECK_EQ(((struct inject_test_marker *)b.arena)->ctor_calls, 1);
	CHECK(a.target_arena_fd >= 0 && b.target_arena_fd >= 0);
	utrace_injection__clear(&a);
	utrace_injection__clear(&b);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

/*
 * A remote call that does not return in time (lib/remote-call.c,
 * call_abandon()): the injection gives up with -ETIMEDOUT and one message,
 * but leaves the call to finish on its own instead of putting the thread
 * back mid-call, which would leave the loader lock taken forever. The
 * callee (@so's constructor inside dlopen, or @init) ends, the thread
 * returns through the stub with its own registers, xstate and mask, its
 * read restarted (mode "read") or its SSE loop intact (mode "spin"); the
 * target's own dlopen() of another object then works, nobody traces it
 * and its code is unchanged.
 */
/*
 * The marker in the arena of an injection that gave up: only the target
 * maps it then (the init closed the fd), read through /proc/PID/mem.
 */
static struct inject_test_marker late_marker(pid_t pid)
{
	struct inject_test_marker m = { 0 };
	struct utrace_maps *maps = utrace_maps__read(pid);
	bool found = false;
	size_t i;

	CHECK(maps);
	for (i = 0; i < maps->nr && !found; i++) {
		const struct utrace_map *e = &maps->maps[i];

		if (!e->path || !strstr(e->path, "memfd:utrace-arena"))
			continue;
		CHECK_EQ(utrace_mem__read(pid, e->start, &m, sizeof(m)), (ssize_t)sizeof(m));
		found = true;
	}
	utrace_maps__free(maps);
	CHECK_MSG(found, "no arena mapped in the target");
	return m;
}

static void inject_times_out(const char *mode, const char *so, const char *init, int timeout_ms,
			     const char *what, long finish_ms)
{
	char foo[4096], err[1024] = "", want[256], line[128];
	const char *args[] = { mode, "2500", foo, NULL };
	struct target t;
	struct code_snap snap;
	struct utrace_injection inj;
	struct timespec a, b;
	pid_t tid = 0;
	long ms;
	int r;
	UTRACE_OPTS(utrace_inject_opts, o, .prepare_arena = prepare, .init_flags = 0x5a,
		    .init_symbol = init, .init_arg = (uint64_t)finish_ms, .arena_size = 4096,
		    .timeout_ms = timeout_ms, .errbuf = err, .errlen = sizeof(err));

	CHECK(realpath(target_path("libfoo.so"), foo));
	t = target_start("s-blocked", args, -1);
	target_wait_ready(&t);
	msleep(100);
	code_snap_take(t.pid, &snap);
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = utrace_inject(t.pid, so, &o, &inj);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
	CHECK_MSG(r == -ETIMEDOUT, "inject: %d (%s)", r, err);
	snprintf(want, sizeof(want),
		 "the remote call of %s did not return in %.1f s; left to finish on its own, "
		 "the process was not stopped",
		 what, timeout_ms / 1000.0);
	CHECK_MSG(strstr(err, want), "message: '%s'", err);
	CHECK_MSG(ms < timeout_ms + 1000, "gave up after %ld ms", ms);
	/* Let go at once: no thread traced while the callee still runs. */
	CHECK_EQ(traced_threads(t.pid, &tid), 0);
	CHECK(maps_contain(t.pid, strrchr(so, '/') + 1));
	msleep(finish_ms + 300); /* the callee ends, the thread finds its way back */
	CHECK_EQ(traced_threads(t.pid, &tid), 0);
	code_snap_compare(t.pid, &snap);
	if (init)
		CHECK_EQ(late_marker(t.pid).late_done, (uint64_t)finish_ms); /* it ran to its end */
	if (!strcmp(mode, "read"))
		CHECK_EQ(write(t.in, "hello\n", 6), 6);
	/* The target's own dlopen(): the loader lock is free again. */
	CHECK_EQ(read_line(t.out, line, sizeof(line), 10000) > 0, 1);
	CHECK_MSG(!strcmp(line, "dlopen ok"), "target said '%s'", line);
	CHECK_EQ(target_reap(&t, 20000), 0);
}

static const char *slowctor_path(void)
{
	static char buf[4096];

	CHECK(realpath(target_path("libinject-slowctor.so"), buf));
	return buf;
}

TEST(inject_dlopen_timeout_read)
{
	inject_times_out("read", slowctor_path(), NULL, 300, "dlopen", 900);
}

TEST(inject_dlopen_timeout_spin)
{
	inject_times_out("spin", slowctor_path(), NULL, 300, "dlopen", 900);
}

/* The init times out the same way (it sleeps 1.2 s, we wait 0.5 s). */
TEST(inject_init_timeout_read)
{
	inject_times_out("read", so_path(), "inject_test_init_sleep", 500, "inject_test_init_sleep",
			 1200);
}

/*
 * The same in a session that traces the process already (and wants its
 * syscall stops): the thread stays traced, left running mid-call; the
 * session handles its stops (the stub's marker among them) while the
 * constructor ends, and the thread comes back by itself all the same.
 */
TEST(inject_dlopen_timeout_in_session)
{
	char foo[4096], err[1024] = "", line[128] = "";
	const char *args[] = { "read", "0", foo, NULL };
	const struct utrace_engine_ops ops = { .sz = sizeof(ops), .syscall_entry = cb_count_entry };
	struct utrace_injection inj;
	struct utrace_session *s;
	struct target t;
	long entries = 0;
	int i;
	UTRACE_OPTS(utrace_inject_opts, o, .timeout_ms = 300, .errbuf = err, .errlen = sizeof(err));

	CHECK(realpath(target_path("libfoo.so"), foo));
	t = target_start("s-blocked", args, -1);
	target_wait_ready(&t);
	msleep(100);
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL_ENTRY, &entries));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK_EQ(utrace_session__inject(s, t.pid, slowctor_path(), &o, &inj), -ETIMEDOUT);
	CHECK_MSG(strstr(err, "left to finish on its own"), "message: '%s'", err);
	CHECK(utrace_proc__tracer(t.pid) > 0); /* still ours */
	CHECK_EQ(utrace_session__run(s, 1200), UTRACE_RUN_TIMEOUT); /* the constructor ends */
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	for (i = 0; i < 200 && !line[0]; i++) {
		CHECK_EQ(utrace_session__run(s, 25), UTRACE_RUN_TIMEOUT);
		if (read_line(t.out, line, sizeof(line), 25) < 0)
			line[0] = 0;
	}
	CHECK_MSG(!strcmp(line, "dlopen ok"), "target said '%s'", line);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_EQ(target_reap(&t, 10000), 0);
}
