/* SPDX-License-Identifier: MIT */
/*
 * test-stress.c - attach and detach 100 times a program whose 8 threads
 * keep writing numbered lines (s-mtwrite), with syscall tracing on in half
 * of the rounds, and in a quarter of them the whole process quiesced and a
 * remote getpid run in one of its threads (stopped at a syscall entry or
 * exit, or in get_signal()). The program must finish with every line
 * present, in order, and no write or read disturbed.
 */
#include <sys/syscall.h>

#include "utrace/utrace.h"
#include "ptrace-util.h"

static int count_entry(struct utrace_engine *e, struct utrace_thread *th, struct utrace_syscall *sc)
{
	(*(long *)utrace_engine__ctx(e))++;
	return UTRACE_RESUME;
}

TEST_TIMEOUT(mt_attach_detach_100, 120)
{
	const char *args[] = { "8", NULL };
	char path[] = "/tmp/utrace-mtwrite-XXXXXX";
	int fd = mkstemp(path);
	const struct utrace_engine_ops ops = { .sz = sizeof(ops), .syscall_entry = count_entry };
	struct utrace_session *s;
	struct utrace_engine *e;
	struct target t;
	long syscalls = 0, next[8] = { 0 }, total[8], got, remotes = 0;
	char line[128];
	FILE *f;
	int i, k, bad = 0, totals = 0;

	CHECK(fd >= 0);
	unlink(path);
	t = target_start("s-mtwrite", args, fd);
	for (i = 0; i < 5000; i++) {
		pid_t *tids;
		size_t n = 0;

		if (utrace_proc__threads(t.pid, &tids, &n) == 0)
			free(tids);
		if (n == 9)
			break;
		msleep(1);
	}
	s = utrace_session__new(NULL);
	CHECK(s);
	for (i = 0; i < 100; i++) {
		e = (i & 1) ? utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL_ENTRY, &syscalls) :
			      NULL;
		CHECK_EQ(utrace_session__attach(s, t.pid), 0);
		CHECK_EQ(utrace_session__threads(s, t.pid, NULL, 0), 9);
		CHECK_EQ(utrace_session__run(s, 3), UTRACE_RUN_TIMEOUT);
		if (i % 4 == 1) {
			/* Stop the world, run a syscall in one thread, resume. */
			struct utrace_thread *ths[16];
			uint64_t sargs[6] = { 0 };
			long ret = 0;

			CHECK_EQ(utrace_session__quiesce(s, t.pid), 0);
			CHECK_EQ(utrace_session__threads(s, t.pid, ths, 16), 9);
			CHECK_EQ(utrace_thread__remote_syscall(ths[i % 9], SYS_getpid, sargs, &ret),
				 0);
			CHECK_EQ(ret, t.pid);
			remotes++;
			CHECK_EQ(utrace_session__resume(s, t.pid), 0);
			CHECK_EQ(utrace_session__run(s, 2), UTRACE_RUN_TIMEOUT);
		}
		CHECK_EQ(utrace_session__detach(s), 0);
		utrace_engine__detach(e);
	}
	CHECK(syscalls > 0);
	utrace_session__close(s);
	close(t.in);
	t.in = -1;
	CHECK_EQ(target_reap(&t, 20000), 0);
	f = fdopen(fd, "r");
	CHECK(f);
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "T%d %ld", &k, &got) == 2 && k >= 0 && k < 8) {
			if (got != next[k])
				bad++;
			next[k] = got + 1;
		} else if (sscanf(line, "total %d %ld", &k, &got) == 2 && k >= 0 && k < 8) {
			total[k] = got;
			totals++;
		} else {
			bad++;
		}
	}
	fclose(f);
	CHECK_EQ(bad, 0);
	CHECK_EQ(totals, 8);
	for (k = 0; k < 8; k++)
		CHECK_EQ(total[k], next[k]);
	CHECK_EQ(remotes, 25);
	harness_note("%ld syscall entries seen, %ld remote syscalls, %ld lines from thread 0",
		     syscalls, remotes, next[0]);
}
