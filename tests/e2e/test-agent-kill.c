/* SPDX-License-Identifier: MIT */
/*
 * test-agent-kill.c - the acceptance item "the tracer killed with SIGKILL
 * at random moments, 100 times: the target always finishes with correct
 * output, and its code bytes equal the file's afterwards".
 *
 * s-life runs four threads calling life_work() and life_leaf() and prints
 * the sum of the results, which we compute here from the same formula.
 * `utrace -b agent -f life_work -f life_leaf` traces it, attached (-p) or
 * launching it (--), with -d 0.25 so that one life holds every phase:
 * injection (seize, remote mmap, dlopen, init: lib/inject.c), arming,
 * events streaming (or counting with -c), the detach, the wait. A SIGKILL
 * lands at a random moment: in every other round anywhere in the first
 * 450 ms, in the others in the first 40 ms, where the short phases that
 * matter most (injection: ~4 ms, arming) are. Then, for every round:
 *  - the target prints the right sum and exits 0 when told to;
 *  - no thread of it is traced;
 *  - every executable mapping of its program holds the file's bytes
 *    (read from the live process: it waits on stdin before exiting): the
 *    agent saw its host die and took every probe out.
 * The seed of the kill times is printed (as a note) so a failure can be
 * replayed with UTRACE_KILL_SEED. A third test kills 20 sessions in a row
 * on one long-lived target (s-life serve): each new session re-attaches
 * to the agent the killed one left (dormant, or still busy: then a copy).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

#define THREADS 4
#define BATCHES 150
#define BATCH 200
#define KILL_SPAN_US 450000 /* the whole life: -d 0.25, then the wait */
#define KILL_EARLY_US 40000 /* start-up, injection, arming: a few ms each */

/* What s-life must print. */
static uint64_t expected_sum(void)
{
	return life_sum(THREADS, BATCHES);
}

static void msleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Read from @fd until @buf holds @needle (or EOF, or @ms pass). */
static bool read_until(int fd, char *buf, size_t size, size_t *len, const char *needle, int ms)
{
	while (!strstr(buf, needle)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (*len + 1 >= size || poll(&p, 1, ms) <= 0)
			return false;
		n = read(fd, buf + *len, size - 1 - *len);
		if (n <= 0)
			return false;
		*len += (size_t)n;
		buf[*len] = 0;
	}
	return true;
}

/* After the kill: the target's sum, nobody tracing it, its code as the file's. */
static void check_target(pid_t pid, int out, char *buf, size_t size, size_t *len, int round)
{
	char want[64];
	int i, code = -1;

	snprintf(want, sizeof(want), "sum=%llx calls=%d\n", (unsigned long long)expected_sum(),
		 THREADS * BATCHES * BATCH);
	CHECK_MSG(read_until(out, buf, size, len, "\n", 20000) &&
			  read_until(out, buf, size, len, "calls=", 20000) &&
			  read_until(out, buf, size, len, want, 2000),
		  "round %d: target said '%s', want '%s'", round, buf, want);
	CHECK_MSG(traced_threads(pid) == 0, "round %d: a thread of %d is still traced", round,
		  (int)pid);
	/* The agent notices its host's death within ~100 ms. */
	for (i = 0; i < 300 && code <= 0; i++) {
		code = code_matches_file(pid);
		if (code <= 0)
			msleep_us(10000);
	}
	CHECK_MSG(code > 0, "round %d: the code of %d still differs from the file", round,
		  (int)pid);
}

static unsigned int seed(void)
{
	const char *s = getenv("UTRACE_KILL_SEED");
	unsigned int v = s ? (unsigned int)strtoul(s, NULL, 0) : (unsigned int)time(NULL);

	harness_note("UTRACE_KILL_SEED=%u", v);
	return v;
}

static pid_t spawn(const char *const *argv, int in, int out)
{
	pid_t p = fork();

	CHECK(p >= 0);
	if (p == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(in >= 0 ? in : null, 0);
		dup2(out >= 0 ? out : null, 1);
		dup2(null, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return p;
}

/* Kill @tracer after @us (unless it is gone already). Return: true if killed. */
static bool kill_after(pid_t tracer, long us)
{
	int st;

	msleep_us(us);
	if (waitpid(tracer, &st, WNOHANG) == tracer)
		return false;
	CHECK_EQ(kill(tracer, SIGKILL), 0);
	CHECK_EQ(waitpid(tracer, &st, 0), tracer);
	return true;
}

static void round_attach(int round, long us)
{
	int pin[2], pout[2], st;
	char buf[512] = "", pidarg[16];
	size_t len = 0;
	const char *targv[] = { life(), "4", "150", NULL };
	const char *uargv[] = { utrace(),    "-b",
				"agent",     "-f",
				"life_work", "-f",
				"life_leaf", "-p",
				pidarg,	     "-d",
				"0.25",	     "-o",
				"/dev/null", round & 2 ? "-c" : "-q",
				NULL };
	pid_t t, u;

	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	t = spawn(targv, pin[0], pout[1]);
	close(pin[0]);
	close(pout[1]);
	CHECK_MSG(read_until(pout[0], buf, sizeof(buf), &len, "\n", 10000), "no pid line");
	snprintf(pidarg, sizeof(pidarg), "%d", (int)t);
	u = spawn(uargv, -1, -1);
	kill_after(u, us);
	check_target(t, pout[0], buf, sizeof(buf), &len, round);
	CHECK_EQ(write(pin[1], "q\n", 2), 2);
	CHECK_EQ(waitpid(t, &st, 0), t);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "round %d: target status %#x", round, st);
	close(pin[1]);
	close(pout[0]);
}

/*
 * Return: true if a target ran (the kill came after utrace started it).
 * @after_start: the delay counts from the command's first line (it runs,
 * probed or about to be), not from utrace's start: on a slow or loaded
 * machine early kills may all come before the command exists.
 */
static bool round_launch(int round, long us, bool after_start)
{
	int pin[2], pout[2], st;
	char buf[512] = "";
	size_t len = 0;
	const char *uargv[] = { utrace(),    "-b",   "agent",	  "-f",
				"life_work", "-f",   "life_leaf", "-d",
				"0.25",	     "-o",   "/dev/null", round & 2 ? "-c" : "-q",
				"--",	     life(), "4",	  "150",
				NULL };
	pid_t u, t;

	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	u = spawn(uargv, pin[0], pout[1]);
	close(pin[0]);
	close(pout[1]);
	if (!after_start)
		kill_after(u, us);
	/* EOF without a pid line: utrace died before its command existed. */
	if (!read_until(pout[0], buf, sizeof(buf), &len, "\n", 10000)) {
		close(pin[1]);
		close(pout[0]);
		return false;
	}
	t = (pid_t)atoi(strstr(buf, "pid=") ? strstr(buf, "pid=") + 4 : "0");
	CHECK_MSG(t > 0, "round %d: target said '%s'", round, buf);
	if (after_start)
		kill_after(u, us);
	check_target(t, pout[0], buf, sizeof(buf), &len, round);
	CHECK_EQ(write(pin[1], "q\n", 2), 2);
	/* Orphaned by the kill, it is ours (PR_SET_CHILD_SUBREAPER). */
	CHECK_EQ(waitpid(t, &st, 0), t);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "round %d: target status %#x", round, st);
	close(pin[1]);
	close(pout[0]);
	return true;
}

/* When to kill in round @i. */
static long kill_delay(unsigned int *s, int i)
{
	return (long)(rand_r(s) % (i & 1 ? KILL_SPAN_US : KILL_EARLY_US));
}

TEST_TIMEOUT(tracer_killed_50_times_attach, 300)
{
	unsigned int s = seed();
	int i;

	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < 50; i++) {
		long us = kill_delay(&s, i);

		round_attach(i, us);
	}
}

TEST_TIMEOUT(tracer_killed_50_times_launch, 300)
{
	unsigned int s = seed();
	int i, ran = 0;

	signal(SIGPIPE, SIG_IGN);
	CHECK_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	for (i = 0; i < 50; i++) {
		long us = kill_delay(&s, i);

		/* every 4th round: timed from the command's start, so that it ran */
		ran += round_launch(i, us, !(i % 4));
	}
	harness_note("%d of 50 kills came after the command started", ran);
	CHECK(ran >= 13); /* the 13 timed from its start, whatever the machine's speed */
}

/* Read one line of @fd into @buf (without the newline); false on EOF/timeout. */
static bool read_line(int fd, char *buf, size_t size, char *acc, size_t *len)
{
	char *nl;

	while (!(nl = memchr(acc, '\n', *len))) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (*len + 1 >= 512 || poll(&p, 1, 30000) <= 0)
			return false;
		n = read(fd, acc + *len, 511 - *len);
		if (n <= 0)
			return false;
		*len += (size_t)n;
	}
	*nl = 0;
	snprintf(buf, size, "%.*s", (int)(size - 1), acc);
	*len -= (size_t)(nl + 1 - acc);
	memmove(acc, nl + 1, *len);
	return true;
}

/* What s-life serve prints for "run T B". */
static uint64_t expected_run(uint64_t threads, uint64_t batches)
{
	return life_sum(threads, batches);
}

TEST_TIMEOUT(tracer_killed_20_times_same_target, 300)
{
	unsigned int s = seed();
	const char *targv[] = { life(), "serve", NULL };
	char acc[512] = "", line[128], want[64], pidarg[16];
	size_t len = 0;
	int pin[2], pout[2], st, i, k;
	pid_t t;

	signal(SIGPIPE, SIG_IGN);
	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	t = spawn(targv, pin[0], pout[1]);
	close(pin[0]);
	close(pout[1]);
	CHECK(read_line(pout[0], line, sizeof(line), acc, &len));
	CHECK_EQ(atoi(line + 4), (int)t);
	snprintf(pidarg, sizeof(pidarg), "%d", (int)t);
	snprintf(want, sizeof(want), "done sum=%llx", (unsigned long long)expected_run(4, 60));
	for (i = 0; i < 20; i++) {
		const char *uargv[] = { utrace(),    "-b",
					"agent",     "-f",
					"life_work", "-f",
					"life_leaf", "-p",
					pidarg,	     "-d",
					"0.25",	     "-o",
					"/dev/null", i & 2 ? "-c" : "-q",
					NULL };
		long us = kill_delay(&s, i);
		pid_t u = spawn(uargv, -1, -1);
		int code = -1;

		/* Calls all through the session's life (and its death). */
		CHECK_EQ(write(pin[1], "run 4 60 4\n", 11), 11);
		kill_after(u, us);
		CHECK_MSG(read_line(pout[0], line, sizeof(line), acc, &len), "round %d: no answer",
			  i);
		CHECK_MSG(!strcmp(line, want), "round %d: '%s', want '%s'", i, line, want);
		CHECK_MSG(traced_threads(t) == 0, "round %d: a thread is still traced", i);
		for (k = 0; k < 300 && code <= 0; k++) {
			code = code_matches_file(t);
			if (code <= 0)
				msleep_us(10000);
		}
		CHECK_MSG(code > 0, "round %d: the code still differs from the file", i);
	}
	CHECK_EQ(write(pin[1], "quit\n", 5), 5);
	CHECK_EQ(waitpid(t, &st, 0), t);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target status %#x", st);
	close(pin[1]);
	close(pout[0]);
}

/*
 * -b ptrace in launch mode: a killed utrace takes its command with it,
 * always by SIGKILL (PTRACE_O_EXITKILL, as strace --kill-on-exit), never
 * by the SIGTRAP of an int3 nobody takes any more (before: SIGTRAP or
 * SIGKILL by chance). The command waits on stdin after its work, so it is
 * still there whenever the kill comes.
 */
TEST_TIMEOUT(ptrace_launch_tracer_killed_means_sigkill, 300)
{
	unsigned int s = seed();
	int i, st;

	signal(SIGPIPE, SIG_IGN);
	CHECK_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	for (i = 0; i < 10; i++) {
		const char *uargv[] = { utrace(),    "-b", "ptrace", "-f", "life_work", "-o",
					"/dev/null", "--", life(),   "2",  "20",	NULL };
		char buf[512] = "";
		size_t len = 0;
		int pin[2], pout[2];
		pid_t u, t;

		CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
		u = spawn(uargv, pin[0], pout[1]);
		close(pin[0]);
		close(pout[1]);
		CHECK_MSG(read_until(pout[0], buf, sizeof(buf), &len, "\n", 30000),
			  "round %d: no pid line", i);
		t = (pid_t)atoi(strstr(buf, "pid=") ? strstr(buf, "pid=") + 4 : "0");
		CHECK(t > 0);
		kill_after(u, (long)(rand_r(&s) % 100000));
		CHECK_EQ(waitpid(t, &st, 0), t);
		CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
			  "round %d: the command ended with status %#x, not by SIGKILL", i, st);
		close(pin[1]);
		close(pout[0]);
	}
}
