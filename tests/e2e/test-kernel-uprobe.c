/* SPDX-License-Identifier: MIT */
/*
 * test-kernel-uprobe.c - a kernel uprobe (bpftrace) on a function the
 * agent has patched, in both orders. The kernel writes its int3 over the
 * entry, runs the file's first instruction out of line and resumes after
 * it: before planner.c rule 5 that was the middle of our jmp, and the
 * target died at its next call (s-life: SIGSEGV at life_work+1, every
 * time). Now the entry's first instruction (push %rbx) stays in place and
 * our jmp follows it: the target computes the right sum, and bpftrace and
 * utrace each count every call. Skipped without bpftrace (or without the
 * privileges it needs). Suite 'e2e', not parallel.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

#define BATCH 200 /* s-life's */
#define THREADS 4
#define BATCHES 100

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* @argv in the background, stdout and stderr to @file (if any); stdin @in. */
static pid_t spawn(const char *const *argv, int in, int out, const char *file)
{
	pid_t p = fork();

	CHECK(p >= 0);
	if (!p) {
		/* a failed CHECK leaves no bpftrace (its uprobe) nor target behind */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (file) {
			int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);

			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (in >= 0)
			dup2(in, 0);
		if (out >= 0)
			dup2(out, 1);
		execvp(argv[0], (char **)argv);
		_exit(127);
	}
	return p;
}

static char *slurp(const char *file)
{
	char *buf = calloc(1, 65536);
	int fd = open(file, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, 65535) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static bool wait_for(const char *file, const char *what, int sec)
{
	int i;

	for (i = 0; i < sec * 50; i++) {
		char *s = slurp(file);
		bool yes = strstr(s, what) != NULL;

		free(s);
		if (yes)
			return true;
		msleep(20);
	}
	return false;
}

static long row_calls(const char *err, const char *name)
{
	const char *l = strstr(err, name);
	long calls = -1;

	while (l && l > err && l[-1] != '\n')
		l--;
	if (!l || sscanf(l, "%*s %*s %*s %ld", &calls) != 1)
		return -1;
	return calls;
}

static void both_orders(bool utrace_first)
{
	char pidarg[16], prog[1100], line[128] = "", want[64], *bt, *ut;
	char btfile[] = "/tmp/utrace-kup-bt-XXXXXX", utfile[] = "/tmp/utrace-kup-ut-XXXXXX";
	const char *targv[] = { life(), "serve", NULL };
	const char *uargv[] = { utrace(), "-b",	       "agent", "-c",	"-v",
				"-f",	  "life_work", "-p",	pidarg, NULL };
	const char *bargv[] = { "bpftrace", "-e", prog, NULL };
	int pin[2], pout[2], st, fd;
	pid_t t, u = -1, b = -1;
	long n = -1;
	ssize_t got;

	if (access("/usr/bin/bpftrace", X_OK) || geteuid())
		SKIP("bpftrace as root is needed");
	CHECK((fd = mkstemp(btfile)) >= 0);
	close(fd);
	CHECK((fd = mkstemp(utfile)) >= 0);
	close(fd);
	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	t = spawn(targv, pin[0], pout[1], NULL);
	close(pin[0]);
	close(pout[1]);
	got = read(pout[0], line, sizeof(line) - 1);
	CHECK(got > 4 && !strncmp(line, "pid=", 4));
	snprintf(pidarg, sizeof(pidarg), "%d", (int)t);
	snprintf(prog, sizeof(prog),
		 "uprobe:%s:life_work { @n = count(); } "
		 "BEGIN { printf(\"bpftrace attached\\n\"); }",
		 life());
	if (utrace_first) {
		u = spawn(uargv, -1, -1, utfile);
		CHECK_MSG(wait_for(utfile, "backend: agent", 30), "utrace did not attach");
		msleep(300); /* armed after the line: the SYNC */
	}
	b = spawn(bargv, -1, -1, btfile);
	if (!wait_for(btfile, "bpftrace attached", 30)) {
		bt = slurp(btfile);
		note_lines(bt);
		kill(b, SIGKILL);
		SKIP("bpftrace could not attach");
	}
	if (!utrace_first) {
		u = spawn(uargv, -1, -1, utfile);
		CHECK_MSG(wait_for(utfile, "backend: agent", 30), "utrace did not attach");
		msleep(300);
	}
	/* every call under both probes */
	snprintf(line, sizeof(line), "run %d %d 1\n", THREADS, BATCHES);
	CHECK(write(pin[1], line, strlen(line)) == (ssize_t)strlen(line));
	got = read(pout[0], line, sizeof(line) - 1);
	line[got > 0 ? got : 0] = '\0';
	snprintf(want, sizeof(want), "done sum=%llx",
		 (unsigned long long)life_sum(THREADS, BATCHES));
	CHECK_MSG(!strncmp(line, want, strlen(want)), "target said '%s', want '%s'", line, want);
	/* Ctrl-C ends both: bpftrace prints its map */
	kill(b, SIGINT);
	CHECK(waitpid(b, &st, 0) == b);
	kill(u, SIGINT);
	CHECK(waitpid(u, &st, 0) == u);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "utrace status 0x%x", st);
	bt = slurp(btfile);
	ut = slurp(utfile);
	note_lines(bt);
	note_lines(ut);
	CHECK(sscanf(strstr(bt, "@n: ") ? strstr(bt, "@n: ") : "", "@n: %ld", &n) == 1);
	CHECK_EQ(n, THREADS * BATCHES * BATCH);
	CHECK_EQ(row_calls(ut, "life_work\n"), THREADS * BATCHES * BATCH);
	CHECK(!strstr(ut, "warning"));
	close(pin[1]);
	CHECK(waitpid(t, &st, 0) == t);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target status 0x%x", st);
	close(pout[0]);
	unlink(btfile);
	unlink(utfile);
	free(bt);
	free(ut);
}

TEST_TIMEOUT(kernel_uprobe_after_agent_jmp, 120)
{
	both_orders(true);
}

TEST_TIMEOUT(agent_after_kernel_uprobe, 120)
{
	both_orders(false);
}
