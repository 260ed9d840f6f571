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
 *
 * s-kuprobe's kup_short starts with an instruction rule 5 cannot keep
 * (mov rdx, rdi: an argument register), so the agent's jmp stays on its
 * first byte. A kernel uprobe put there later is seen by the agent's
 * control thread (agent/patch.c, patch_check_taken()), which gives the
 * site back under the kernel's int3: the target survives bpftrace
 * attaching and detaching, utrace says so once and counts the other
 * functions exactly. The other order, and the one rule both backends
 * follow: a site that already holds a foreign int3 is one warning, the
 * rest is traced, exit 1 only when nothing at all could be armed.
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

/*
 * A "serve" target (s-life, s-kuprobe) on our pipes: pin[1] writes its
 * stdin, pout[0] reads its stdout; its "pid=N" line read, N in @pidarg.
 */
static pid_t serve_start(const char *const *targv, int pin[2], int pout[2], char *pidarg,
			 size_t size)
{
	char line[128] = "";
	ssize_t got;
	pid_t t;

	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	t = spawn(targv, pin[0], pout[1], NULL);
	close(pin[0]);
	close(pout[1]);
	got = read(pout[0], line, sizeof(line) - 1);
	CHECK(got > 4 && !strncmp(line, "pid=", 4));
	snprintf(pidarg, size, "%d", (int)t);
	return t;
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
	t = serve_start(targv, pin, pout, pidarg, sizeof(pidarg));
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

static const char *kup(void)
{
	return harness_build_path("tests/targets/s-kuprobe");
}

/* Send @cmd to the s-kuprobe server, read one line into @line. */
static void ask(int in, int out, const char *cmd, char *line, size_t size)
{
	ssize_t got;

	CHECK(write(in, cmd, strlen(cmd)) == (ssize_t)strlen(cmd));
	got = read(out, line, size - 1);
	line[got > 0 ? got : 0] = '\0';
}

/* bpftrace counting the kup_* functions of @fns (comma-separated letters s, p, m). */
static pid_t bpftrace_kup(const char *which, const char *file, char *prog, size_t size)
{
	const char *bargv[] = { "bpftrace", "-e", prog, NULL };
	size_t n;
	pid_t b;

	n = (size_t)snprintf(prog, size, "BEGIN { printf(\"bpftrace attached\\n\"); } ");
	if (strchr(which, 's'))
		n += (size_t)snprintf(prog + n, size - n, "uprobe:%s:kup_short { @s = count(); } ",
				      kup());
	if (strchr(which, 'm'))
		n += (size_t)snprintf(prog + n, size - n, "uprobe:%s:kup_mov { @m = count(); } ",
				      kup());
	b = spawn(bargv, -1, -1, file);
	if (!wait_for(file, "bpftrace attached", 30)) {
		char *bt = slurp(file);

		note_lines(bt);
		free(bt);
		kill(b, SIGKILL);
		waitpid(b, NULL, 0);
		SKIP("bpftrace could not attach");
	}
	return b;
}

static long bt_count(const char *bt, const char *key)
{
	const char *p = strstr(bt, key);
	long n = -1;

	if (p)
		sscanf(p + strlen(key), "%ld", &n);
	return n;
}

#define KUP_THREADS 2
#define KUP_CALLS 20000

/*
 * Item 2: bpftrace attaches to kup_short (the agent's jmp on its first
 * byte) and to kup_mov (kept first instruction) while utrace -b agent is
 * attached, then detaches; the target keeps computing right throughout.
 */
TEST_TIMEOUT(kernel_uprobe_on_agent_jmp_at_entry, 120)
{
	char pidarg[16], prog[2048], line[256], before[128], cmd[64], *bt, *ut;
	char btfile[] = "/tmp/utrace-kup-bt-XXXXXX", utfile[] = "/tmp/utrace-kup-ut-XXXXXX";
	const char *targv[] = { kup(), "serve", NULL };
	const char *uargv[] = { utrace(), "-b",	     "agent",	  "-c",	  "-v",
				"-v",	  "-f",	     "kup_short", "-f",	  "kup_push",
				"-f",	  "kup_mov", "-p",	  pidarg, NULL };
	const char *msg = "probe 'kup_short': a kernel uprobe was placed on it; utrace's probe "
			  "there is off";
	long each = KUP_THREADS * KUP_CALLS;
	int pin[2], pout[2], st, fd;
	pid_t t, u, b;

	if (access("/usr/bin/bpftrace", X_OK) || geteuid())
		SKIP("bpftrace as root is needed");
	CHECK((fd = mkstemp(btfile)) >= 0);
	close(fd);
	CHECK((fd = mkstemp(utfile)) >= 0);
	close(fd);
	t = serve_start(targv, pin, pout, pidarg, sizeof(pidarg));
	ask(pin[1], pout[0], "code\n", before, sizeof(before));
	snprintf(cmd, sizeof(cmd), "run %d %d\n", KUP_THREADS, KUP_CALLS);

	u = spawn(uargv, -1, -1, utfile);
	/* -v -v: one line per point once the SYNC armed it */
	CHECK_MSG(wait_for(utfile, "kup_mov armed (jmp)", 30), "utrace did not arm");
	ut = slurp(utfile);
	CHECK_MSG(strstr(ut, "kup_short armed (jmp)") && strstr(ut, "kup_push armed (jmp)"),
		  "not all jmp: %s", ut);
	free(ut);
	ask(pin[1], pout[0], cmd, line, sizeof(line));
	CHECK_STREQ(line, "done ok\n");

	b = bpftrace_kup("sm", btfile, prog, sizeof(prog));
	/* the agent gives kup_short back: the kernel's int3 over the file's bytes */
	CHECK_MSG(wait_for(utfile, msg, 30), "utrace did not notice the kernel uprobe");
	ask(pin[1], pout[0], cmd, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "done ok\n"), "target said '%s' under bpftrace", line);
	kill(b, SIGINT);
	CHECK(waitpid(b, &st, 0) == b);
	/* bpftrace gone: the kernel put the file's first byte back */
	ask(pin[1], pout[0], cmd, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "done ok\n"), "target said '%s' after bpftrace", line);

	kill(u, SIGINT);
	CHECK(waitpid(u, &st, 0) == u);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "utrace status 0x%x", st);
	bt = slurp(btfile);
	ut = slurp(utfile);
	note_lines(bt);
	note_lines(ut);
	CHECK_EQ(bt_count(bt, "@s: "), each);
	CHECK_EQ(bt_count(bt, "@m: "), each);
	CHECK_EQ(count(ut, msg), 1);
	CHECK_EQ(count(ut, "kernel uprobe"), 1);
	CHECK_EQ(row_calls(ut, "kup_push\n"), 3 * each);
	CHECK_EQ(row_calls(ut, "kup_mov\n"), 3 * each);
	CHECK_EQ(row_calls(ut, "kup_short\n"), each); /* the first round only */
	CHECK(!strstr(ut, "warning"));
	/* every byte as in the file, and as before */
	ask(pin[1], pout[0], "code\n", line, sizeof(line));
	CHECK_STREQ(line, before);
	CHECK(code_matches_file(t) > 0);
	close(pin[1]);
	CHECK(waitpid(t, &st, 0) == t);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target status 0x%x", st);
	close(pout[0]);
	unlink(btfile);
	unlink(utfile);
	free(bt);
	free(ut);
}

/* Lines of @err that name kup_short. */
static int lines_naming(const char *err, const char *what)
{
	const char *l = err;
	int n = 0;

	while (l && *l) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);

		if (memmem(l, len, what, strlen(what)))
			n++;
		l = e ? e + 1 : NULL;
	}
	return n;
}

/*
 * Item 3, the other order: kup_short holds bpftrace's int3 before utrace
 * comes. Both backends, launch and attach mode: one line about kup_short,
 * the rest traced exactly, exit 0; exit 1 (and one more line) only when no
 * probe at all could be armed. The target is never harmed.
 */
TEST_TIMEOUT(foreign_int3_one_rule, 240)
{
	static const char *const backends[] = { "agent", "ptrace" };
	char pidarg[16], prog[2048], line[256], before[128];
	char btfile[] = "/tmp/utrace-kup-bt-XXXXXX", utfile[] = "/tmp/utrace-kup-ut-XXXXXX";
	char tabfile[] = "/tmp/utrace-kup-tab-XXXXXX";
	const char *targv[] = { kup(), "serve", NULL };
	int pin[2], pout[2], st, fd, rc;
	size_t k;
	pid_t t, b;

	if (access("/usr/bin/bpftrace", X_OK) || geteuid())
		SKIP("bpftrace as root is needed");
	CHECK((fd = mkstemp(btfile)) >= 0);
	close(fd);
	CHECK((fd = mkstemp(utfile)) >= 0);
	close(fd);
	CHECK((fd = mkstemp(tabfile)) >= 0);
	close(fd);
	t = serve_start(targv, pin, pout, pidarg, sizeof(pidarg));
	ask(pin[1], pout[0], "code\n", before, sizeof(before));
	b = bpftrace_kup("s", btfile, prog, sizeof(prog));

	for (k = 0; k < 2; k++) {
		const char *be = backends[k];
		const char *both[] = { "-b", be,    "-c",  "-f", "kup_push", "-f", "kup_short",
				       "--", kup(), "run", "2",	 "1000",     NULL };
		const char *one[] = { "-b",  be,    "-c", "-f",	  "kup_short", "--",
				      kup(), "run", "2",  "1000", NULL };
		const char *aone[] = { "-b", be, "-c", "-f", "kup_short", "-p", pidarg, NULL };
		/* -v -v: the agent says when its points are armed; ptrace arms in order */
		/* -o: the table goes there, stderr stays unbuffered (the handshake) */
		const char *aboth[] = { utrace(), "-b",	       be,	"-c",	"-v",
					"-v",	  "-o",	       tabfile, "-f",	"kup_push",
					"-f",	  "kup_short", "-p",	pidarg, NULL };
		char *out = NULL, *err = NULL, *ut;
		pid_t u;

		/* launch mode, one probe refused: warned once, the rest counted, the command's status */
		rc = run_utrace(both, &out, &err);
		note_lines(err);
		CHECK_MSG(rc == 0, "-b %s launch: status %d", be, rc);
		CHECK(out && strstr(out, "done ok"));
		CHECK_EQ(lines_naming(err, "kup_short"), 1);
		CHECK(strstr(err, "kernel uprobe"));
		CHECK_EQ(row_calls(err, "kup_push\n"), 2000);
		free(out);
		free(err);
		/* launch mode, nothing could be armed: exit 1, the command never ran */
		out = err = NULL;
		rc = run_utrace(one, &out, &err);
		note_lines(err);
		CHECK_MSG(rc == 1, "-b %s launch, nothing armed: status %d", be, rc);
		CHECK(!out || !strstr(out, "done"));
		/* one SPEC: its one line is the error */
		CHECK_EQ(count_lines(err), 1);
		CHECK(strstr(err, "kup_short") && strstr(err, "kernel uprobe"));
		free(out);
		free(err);

		/* attach mode, one probe refused */
		/* emptied here: the child's O_TRUNC may come after our first look */
		CHECK(truncate(utfile, 0) == 0);
		u = spawn(aboth, -1, -1, utfile);
		if (!wait_for(utfile, k ? "kup_short" : "kup_push armed", 30)) {
			ut = slurp(utfile);
			note_lines(ut);
			free(ut);
			CHECK_MSG(false, "-b %s did not arm", be);
		}
		ask(pin[1], pout[0], "run 2 1000\n", line, sizeof(line));
		CHECK_STREQ(line, "done ok\n");
		kill(u, SIGINT);
		CHECK(waitpid(u, &st, 0) == u);
		ut = slurp(utfile);
		note_lines(ut);
		CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "-b %s attach: status 0x%x", be,
			  st);
		CHECK_EQ(lines_naming(ut, "kup_short"), 1);
		free(ut);
		ut = slurp(tabfile);
		note_lines(ut);
		CHECK_EQ(row_calls(ut, "kup_push\n"), 2000);
		CHECK(!strstr(ut, "kup_short"));
		free(ut);
		/* attach mode, nothing could be armed: exit 1, the process untouched */
		out = err = NULL;
		rc = run_utrace(aone, &out, &err);
		note_lines(err);
		CHECK_MSG(rc == 1, "-b %s attach, nothing armed: status %d", be, rc);
		CHECK_EQ(count_lines(err), 1);
		CHECK(strstr(err, "kup_short") && strstr(err, "kernel uprobe"));
		free(out);
		free(err);
		ask(pin[1], pout[0], "run 2 1000\n", line, sizeof(line));
		CHECK_STREQ(line, "done ok\n");
	}
	kill(b, SIGINT);
	CHECK(waitpid(b, &st, 0) == b);
	/* bpftrace gone: every byte as in the file */
	ask(pin[1], pout[0], "code\n", line, sizeof(line));
	CHECK_STREQ(line, before);
	CHECK(code_matches_file(t) > 0);
	close(pin[1]);
	CHECK(waitpid(t, &st, 0) == t);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target status 0x%x", st);
	close(pout[0]);
	unlink(btfile);
	unlink(utfile);
	unlink(tabfile);
}

TEST_TIMEOUT(kernel_uprobe_after_agent_jmp, 120)
{
	both_orders(true);
}

TEST_TIMEOUT(agent_after_kernel_uprobe, 120)
{
	both_orders(false);
}

/*
 * utrace's own kernel backend and the agent (issue 12, coexistence): with
 * utrace -b agent attached, `utrace -b kernel -a -c -f s-kuprobe:kup_*`
 * places no uprobe on kup_short (the agent's jmp on its first byte: the
 * kernel's int3 there would kill the process at its next call) and says so
 * in one line naming the process; kup_push and kup_mov (kept first
 * instructions, the jmp after them) are probed and counted. The target
 * computes right throughout and the agent keeps its three probes.
 */
TEST_TIMEOUT(kernel_backend_refuses_agent_jmp, 120)
{
	char pidarg[16], spec[4200], line[256], cmd[64], want[128], *ut, *kt;
	char utfile[] = "/tmp/utrace-kup-ut-XXXXXX", ktfile[] = "/tmp/utrace-kup-kt-XXXXXX";
	const char *targv[] = { kup(), "serve", NULL };
	const char *uargv[] = { utrace(), "-b",	     "agent",	  "-c",	  "-v",
				"-v",	  "-f",	     "kup_short", "-f",	  "kup_push",
				"-f",	  "kup_mov", "-p",	  pidarg, NULL };
	const char *kargv[] = { utrace(), "-b", "kernel", "-a", "-c", "-f", spec, NULL };
	long each = KUP_THREADS * KUP_CALLS;
	int pin[2], pout[2], st, fd;
	pid_t t, u, k;

	if (geteuid())
		SKIP("the kernel backend needs root here");
	CHECK((fd = mkstemp(utfile)) >= 0);
	close(fd);
	CHECK((fd = mkstemp(ktfile)) >= 0);
	close(fd);
	t = serve_start(targv, pin, pout, pidarg, sizeof(pidarg));
	snprintf(spec, sizeof(spec), "%s:kup_*", kup());
	snprintf(cmd, sizeof(cmd), "run %d %d\n", KUP_THREADS, KUP_CALLS);

	u = spawn(uargv, -1, -1, utfile);
	CHECK_MSG(wait_for(utfile, "kup_mov armed (jmp)", 30), "utrace did not arm");
	k = spawn(kargv, -1, -1, ktfile);
	if (!wait_for(ktfile, "kup_short", 30)) {
		kt = slurp(ktfile);
		note_lines(kt);
		free(kt);
		kill(k, SIGKILL);
		waitpid(k, NULL, 0);
		kill(u, SIGINT);
		waitpid(u, NULL, 0);
		close(pin[1]);
		waitpid(t, NULL, 0);
		SKIP("the kernel backend could not start");
	}
	msleep(300); /* the other points' links */
	ask(pin[1], pout[0], cmd, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "done ok\n"), "target said '%s' under both", line);
	kill(k, SIGINT);
	CHECK(waitpid(k, &st, 0) == k);
	kill(u, SIGINT);
	CHECK(waitpid(u, &st, 0) == u);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "utrace -b agent status 0x%x", st);
	ut = slurp(utfile);
	kt = slurp(ktfile);
	note_lines(kt);
	snprintf(want, sizeof(want), "utrace's agent has patched it with a jmp in process %d",
		 (int)t);
	CHECK_EQ(count(kt, want), 1);
	CHECK_EQ(lines_naming(kt, "kup_short"), 1);
	CHECK_EQ(row_calls(kt, "kup_push\n"), each);
	CHECK_EQ(row_calls(kt, "kup_mov\n"), each);
	CHECK_EQ(row_calls(ut, "kup_short\n"), each);
	CHECK_EQ(row_calls(ut, "kup_push\n"), each);
	CHECK(!strstr(ut, "kernel uprobe was placed"));
	close(pin[1]);
	CHECK(waitpid(t, &st, 0) == t);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target status 0x%x", st);
	close(pout[0]);
	unlink(utfile);
	unlink(ktfile);
	free(ut);
	free(kt);
}
