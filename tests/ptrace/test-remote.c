/* SPDX-License-Identifier: MIT */
/*
 * test-remote.c - remote syscalls in a stopped thread: the target is
 * blocked in read() on a pipe, in nanosleep(), or in a busy loop; we run
 * getpid and mmap/munmap in it, detach, and the target (s-blocked) checks
 * that it carried on correctly: the read returns the data written later,
 * the sleep lasts its full time, the loop's registers are intact. Also from
 * inside syscall-entry and syscall-exit callbacks.
 */
#include <sys/mman.h>
#include <sys/syscall.h>

#include "utrace/utrace.h"
#include "ptrace-util.h"

static bool mapped(pid_t pid, uint64_t addr)
{
	struct utrace_maps *m = utrace_maps__read(pid);
	bool r = m && utrace_maps__find(m, addr);

	utrace_maps__free(m);
	return r;
}

/* getpid, mmap, write into it, munmap, on a stopped thread. */
static void remote_ops(struct utrace_thread *th, pid_t pid)
{
	uint64_t args[6] = { 0 };
	struct user_regs_struct before, after;
	long ret = 0;
	char buf[8] = "";

	CHECK_EQ(utrace_thread__get_regs(th, &before), 0);
	CHECK_EQ(utrace_thread__remote_syscall(th, SYS_getpid, args, &ret), 0);
	CHECK_EQ(ret, pid);
	args[0] = 0;
	args[1] = 4096;
	args[2] = PROT_READ | PROT_WRITE;
	args[3] = MAP_PRIVATE | MAP_ANONYMOUS;
	args[4] = (uint64_t)-1;
	args[5] = 0;
	CHECK_EQ(utrace_thread__remote_syscall(th, SYS_mmap, args, &ret), 0);
	CHECK(ret > 0 && (ret & 4095) == 0);
	CHECK(mapped(pid, (uint64_t)ret));
	CHECK_EQ(utrace_thread__write_mem(th, (uint64_t)ret, "remote", 7), 7);
	CHECK_EQ(utrace_thread__read_mem(th, (uint64_t)ret, buf, 7), 7);
	CHECK_STREQ(buf, "remote");
	args[0] = (uint64_t)ret;
	args[1] = 4096;
	CHECK_EQ(utrace_thread__remote_syscall(th, SYS_munmap, args, &ret), 0);
	CHECK_EQ(ret, 0);
	CHECK(!mapped(pid, args[0]));
	/* A failing syscall reports its errno, not an error of ours. */
	args[0] = (uint64_t)-1;
	CHECK_EQ(utrace_thread__remote_syscall(th, SYS_close, args, &ret), 0);
	CHECK_EQ(ret, -EBADF);
	CHECK_EQ(utrace_thread__get_regs(th, &after), 0);
	CHECK_MEMEQ(&before, &after, sizeof(before));
	CHECK(utrace_thread__is_stopped(th));
}

/*
 * @resume_first: resume the thread and let it run traced for a while before
 * detaching. PTRACE_DETACH wakes the thread with TIF_SIGPENDING set
 * (__ptrace_unlink()), which would run the restart code even if the remote
 * call had left the thread in the wrong kind of stop; a plain resume does
 * not, so this variant catches that.
 */
/*
 * Until @pid's main thread sits in system call @nr or @nr2 (/proc/PID/syscall
 * starts with its number, not "running"), 5 s at most: a fixed sleep was not
 * enough on a loaded machine (CI: read not entered yet after 150 ms), and
 * any syscall was not either (CI: seen in the write of its "ready" line,
 * then attached between that and the read: orig_rax -1).
 */
static void wait_in_syscall(pid_t pid, long nr, long nr2)
{
	char path[64], buf[128];
	int i;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		bool in = false;

		if (f) {
			in = fgets(buf, sizeof(buf), f) && buf[0] >= '0' && buf[0] <= '9' &&
			     (atol(buf) == nr || atol(buf) == nr2);
			fclose(f);
		}
		if (in)
			return;
		msleep(10);
	}
}

static void blocked_case(const char *mode, const char *ms, bool resume_first)
{
	const char *args[] = { mode, ms, NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_session *s;
	struct utrace_thread *th;
	struct user_regs_struct regs;

	target_wait_ready(&t);
	msleep(150); /* let it block (or spin) */
	if (!strcmp(mode, "read"))
		wait_in_syscall(t.pid, SYS_read, SYS_read);
	if (!strcmp(mode, "sleep"))
		wait_in_syscall(t.pid, SYS_nanosleep, SYS_clock_nanosleep);
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	th = utrace_session__find_thread(s, t.pid);
	CHECK(th);
	CHECK_EQ(utrace_thread__quiesce(th, true), 0);
	CHECK_EQ(utrace_thread__get_regs(th, &regs), 0);
	if (!strcmp(mode, "read"))
		CHECK_EQ((long)regs.orig_rax, SYS_read);
	if (!strcmp(mode, "sleep"))
		/* After the attach's interrupt, the sleep goes on in restart_syscall. */
		CHECK_MSG((long)regs.orig_rax == SYS_nanosleep ||
				  (long)regs.orig_rax == SYS_clock_nanosleep ||
				  (long)regs.orig_rax == SYS_restart_syscall,
			  "orig_rax %lld", (long long)regs.orig_rax);
	remote_ops(th, t.pid);
	/* Twice, to be sure the restart state survives repeated calls. */
	remote_ops(th, t.pid);
	if (resume_first) {
		CHECK_EQ(utrace_session__resume(s, t.pid), 0);
		CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	}
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	if (!strcmp(mode, "read")) {
		msleep(100);
		CHECK_EQ(write(t.in, "hello\n", 6), 6);
	}
	CHECK_EQ(target_reap(&t, 10000), 0);
}

TEST(remote_in_blocked_read)
{
	blocked_case("read", "0", false);
}

TEST(remote_in_blocked_read_then_resume)
{
	blocked_case("read", "0", true);
}

TEST(remote_in_nanosleep)
{
	blocked_case("sleep", "2000", false);
}

TEST(remote_in_nanosleep_then_resume)
{
	blocked_case("sleep", "2000", true);
}

TEST(remote_in_busy_loop)
{
	blocked_case("spin", "0", false); /* until EOF: it spins whenever we attach */
}

TEST(remote_in_group_stop)
{
	const char *args[] = { "sleep", "800", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_session *s;
	struct utrace_thread *th;

	target_wait_ready(&t);
	msleep(100);
	kill(t.pid, SIGSTOP);
	CHECK(wait_state(t.pid, "T", 5000));
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	th = utrace_session__find_thread(s, t.pid);
	CHECK_EQ(utrace_thread__quiesce(th, true), 0);
	remote_ops(th, t.pid);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	msleep(50);
	CHECK_EQ(proc_state(t.pid), 'T');
	kill(t.pid, SIGCONT);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

struct cb_state {
	pid_t pid;
	int at_entry, at_exit;
	int fail;
};

static int cb_check(struct utrace_thread *th, struct cb_state *st)
{
	uint64_t args[6] = { 0 };
	long ret = 0;

	if (utrace_thread__remote_syscall(th, SYS_getpid, args, &ret) || ret != st->pid)
		st->fail++;
	return UTRACE_RESUME;
}

static int cb_entry(struct utrace_engine *e, struct utrace_thread *th, struct utrace_syscall *sc)
{
	struct cb_state *st = utrace_engine__ctx(e);

	if (sc->nr != SYS_read)
		return UTRACE_RESUME;
	st->at_entry++;
	return cb_check(th, st);
}

static int cb_exit(struct utrace_engine *e, struct utrace_thread *th, struct utrace_syscall *sc)
{
	struct cb_state *st = utrace_engine__ctx(e);

	if (sc->nr != SYS_read)
		return UTRACE_RESUME;
	st->at_exit++;
	return cb_check(th, st);
}

TEST(remote_from_syscall_callbacks)
{
	const char *args[] = { "read", "0", NULL };
	struct target t = target_start("s-blocked", args, -1);
	const struct utrace_engine_ops ops = {
		.sz = sizeof(ops),
		.syscall_entry = cb_entry,
		.syscall_exit = cb_exit,
	};
	struct cb_state st = { 0 };
	struct utrace_session *s;
	int i;

	target_wait_ready(&t);
	st.pid = t.pid;
	msleep(100);
	s = utrace_session__new(NULL);
	CHECK(s);
	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL, &st));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	/*
	 * The attach interrupted the read: it restarts, and the entry stop of
	 * the restarted read calls cb_entry.
	 */
	CHECK_EQ(utrace_session__run(s, 200), UTRACE_RUN_TIMEOUT);
	CHECK(st.at_entry >= 1);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	for (i = 0; i < 50 && !st.at_exit; i++)
		utrace_session__run(s, 20);
	CHECK_EQ(st.at_exit, 1);
	CHECK_EQ(st.fail, 0);
	/* The process exits while traced: the session reaps it. */
	while (utrace_session__run(s, 5000) == UTRACE_RUN_BREAK)
		;
	utrace_session__close(s);
}

TEST(remote_syscall_that_blocks_times_out)
{
	const char *args[] = { "read", "0", NULL };
	struct target t = target_start("s-blocked", args, -1);
	UTRACE_OPTS(utrace_session_opts, so, .remote_timeout_ms = 300);
	struct utrace_session *s;
	struct utrace_thread *th;
	struct user_regs_struct before, after;
	uint64_t rargs[6] = { 0 };
	long ret = 12345;

	target_wait_ready(&t);
	msleep(100);
	s = utrace_session__new(&so);
	CHECK(s);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	th = utrace_session__find_thread(s, t.pid);
	CHECK_EQ(utrace_thread__quiesce(th, true), 0);
	CHECK_EQ(utrace_thread__get_regs(th, &before), 0);
	/* read(0, some stack address, 1) on an empty pipe: blocks. */
	rargs[0] = 0;
	rargs[1] = before.rsp - 4096;
	rargs[2] = 1;
	CHECK_EQ(utrace_thread__remote_syscall(th, SYS_read, rargs, &ret), -ETIMEDOUT);
	CHECK_EQ(ret, 12345);
	CHECK_EQ(utrace_thread__get_regs(th, &after), 0);
	CHECK_MEMEQ(&before, &after, sizeof(before));
	/* The thread is usable again. */
	remote_ops(th, t.pid);
	CHECK_EQ(utrace_session__resume(s, t.pid), 0);
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	/* Its own read still gets the data, all of it. */
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

struct block_state {
	int calls, timeouts;
};

static int entry_blocking_remote(struct utrace_engine *e, struct utrace_thread *th,
				 struct utrace_syscall *sc)
{
	struct block_state *bs = utrace_engine__ctx(e);
	uint64_t rargs[6] = { 0, sc->stack_pointer - 4096, 1, 0, 0, 0 };
	long ret;

	if (sc->nr != SYS_read || bs->calls++)
		return UTRACE_RESUME;
	/* At the entry of the target's read(0): our own read(0) blocks too. */
	if (utrace_thread__remote_syscall(th, SYS_read, rargs, &ret) == -ETIMEDOUT)
		bs->timeouts++;
	return UTRACE_RESUME;
}

TEST(remote_timeout_at_syscall_entry)
{
	const char *args[] = { "read", "0", NULL };
	struct target t = target_start("s-blocked", args, -1);
	UTRACE_OPTS(utrace_session_opts, so, .remote_timeout_ms = 200);
	const struct utrace_engine_ops ops = { .sz = sizeof(ops),
					       .syscall_entry = entry_blocking_remote };
	struct block_state bs = { 0 };
	struct utrace_session *s;

	target_wait_ready(&t);
	msleep(100);
	s = utrace_session__new(&so);
	CHECK(s);
	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL_ENTRY, &bs));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK_EQ(utrace_session__run(s, 600), UTRACE_RUN_TIMEOUT);
	CHECK_EQ(bs.timeouts, 1);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_EQ(write(t.in, "hello\n", 6), 6);
	CHECK_EQ(target_reap(&t, 10000), 0);
}
