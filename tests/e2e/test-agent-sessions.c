/* SPDX-License-Identifier: MIT */
/*
 * test-agent-sessions.c - re-attaching to a process that holds a dormant
 * agent, and two utrace -b agent sessions on one process at once, each
 * with its own agent instance (lib/inject.c "COPIES"), arena, probes and
 * counts.
 *
 * s-life serve runs "run T B" on demand: T new threads, B batches of 200
 * calls of life_work() (each calling life_leaf() once), so the exact
 * number of calls made while a session was armed is known here. Every
 * session is `utrace -c -b agent -f FN -p PID`, armed before the calls
 * ("armed" on its -vv stderr) and stopped with SIGINT after them; its
 * summary must give exactly those calls. After each detach no thread is
 * traced and the program's code equals the file again.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

/* Each test has its own target and files (named by its pid). */
HARNESS_JOBS(3)

#define BATCH 200

struct srv {
	pid_t pid;
	int in, out;
	char buf[4096];
	size_t len;
};

struct sess {
	pid_t pid;
	char out[64], err[64];
};

static void msleep_(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The next line of the target's output (without the newline). */
static void srv_line(struct srv *s, char *line, size_t size)
{
	char *nl;

	while (!(nl = memchr(s->buf, '\n', s->len))) {
		struct pollfd p = { .fd = s->out, .events = POLLIN };
		ssize_t n;

		CHECK_MSG(poll(&p, 1, 30000) > 0, "the target is silent");
		n = read(s->out, s->buf + s->len, sizeof(s->buf) - 1 - s->len);
		CHECK_MSG(n > 0, "the target closed its output");
		s->len += (size_t)n;
	}
	*nl = 0;
	{
		size_t l = (size_t)(nl - s->buf);

		if (l >= size)
			l = size - 1;
		memcpy(line, s->buf, l);
		line[l] = 0;
	}
	s->len -= (size_t)(nl + 1 - s->buf);
	memmove(s->buf, nl + 1, s->len);
}

static struct srv srv_start(void)
{
	int pin[2], pout[2];
	struct srv s = { 0 };
	char line[64];

	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	s.pid = fork();
	CHECK(s.pid >= 0);
	if (s.pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execl(life(), "s-life", "serve", (char *)NULL);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	s.in = pin[1];
	s.out = pout[0];
	srv_line(&s, line, sizeof(line));
	CHECK_MSG(atoi(line + 4) == s.pid, "target said '%s'", line);
	return s;
}

/* What "run T B" must print, from the same formula as s-life. */
static uint64_t expected_sum(long threads, long batches)
{
	uint64_t sum = 0, t, x;

	for (t = 0; t < (uint64_t)threads; t++)
		for (x = 0; x < (uint64_t)batches * BATCH; x++) {
			uint64_t a = t * 1000003ULL + x;

			sum += ((a * 2654435761ULL) * 31 + 7) ^ (a >> 3);
		}
	return sum;
}

/* T threads x B batches of calls; returns the number of life_work() calls. */
static long srv_run(struct srv *s, long threads, long batches)
{
	char cmd[64], line[128], want[64];
	int n = snprintf(cmd, sizeof(cmd), "run %ld %ld\n", threads, batches);

	CHECK_EQ(write(s->in, cmd, (size_t)n), n);
	srv_line(s, line, sizeof(line));
	snprintf(want, sizeof(want), "done sum=%llx",
		 (unsigned long long)expected_sum(threads, batches));
	CHECK_MSG(!strcmp(line, want), "target said '%s', want '%s'", line, want);
	return threads * batches * BATCH;
}

static void srv_stop(struct srv *s)
{
	int st;

	CHECK_EQ(write(s->in, "quit\n", 5), 5);
	CHECK_EQ(waitpid(s->pid, &st, 0), s->pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target status %#x", st);
	close(s->in);
	close(s->out);
}

static char *slurp(const char *path)
{
	static char buf[16384];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	return buf;
}

/* `utrace -vv -c -b agent -f FN -p PID`, returned once its probe is armed. */
static struct sess sess_start(const struct srv *s, const char *fn, int k)
{
	struct sess u;
	char pid[16];
	int i;

	snprintf(pid, sizeof(pid), "%d", (int)s->pid);
	snprintf(u.out, sizeof(u.out), "/tmp/utrace-sess-%d-%d.out", (int)getpid(), k);
	snprintf(u.err, sizeof(u.err), "/tmp/utrace-sess-%d-%d.err", (int)getpid(), k);
	unlink(u.out);
	unlink(u.err);
	u.pid = fork();
	CHECK(u.pid >= 0);
	if (u.pid == 0) {
		int e = open(u.err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		dup2(e, 2);
		execl(utrace(), "utrace", "-v", "-v", "-c", "-b", "agent", "-f", fn, "-p", pid,
		      "-o", u.out, (char *)NULL);
		_exit(127);
	}
	/* however long a loaded machine takes: the test's timeout is the bound */
	for (i = 0; !strstr(slurp(u.err), "armed ("); i++) {
		int st;

		CHECK_MSG(waitpid(u.pid, &st, WNOHANG) == 0, "utrace -f %s ended: %s", fn,
			  slurp(u.err));
		msleep_(10);
	}
	/* jmp: an upgrade that timed out (a thread not answering) would leave int3 */
	CHECK_MSG(strstr(slurp(u.err), "armed (jmp)"), "utrace -f %s: %s", fn, slurp(u.err));
	return u;
}

/* SIGINT, exit 0, and the calls its summary counted for @fn. */
static long sess_stop(struct sess *u, const char *fn)
{
	long calls;
	int st;

	CHECK_EQ(kill(u->pid, SIGINT), 0);
	CHECK_EQ(waitpid(u->pid, &st, 0), u->pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "utrace -f %s: status %#x: %s", fn, st,
		  slurp(u->err));
	/* a function never called has no row (as with -b ptrace and strace -c): 0 */
	calls = summary_calls(slurp(u->out), fn);
	unlink(u->out);
	unlink(u->err);
	return calls;
}

static void check_clean(const struct srv *s)
{
	CHECK_EQ(traced_threads(s->pid), 0);
	CHECK_MSG(code_matches_file(s->pid) > 0, "the code of %d differs from its file",
		  (int)s->pid);
}

/*
 * Three sessions one after the other on one process: the second and third
 * reuse the agent the first left dormant, with a new arena each, and count
 * exactly their own calls (none of the earlier sessions').
 */
TEST_TIMEOUT(reattach_dormant_agent_exact_counts, 120)
{
	struct srv s = srv_start();
	long before = srv_run(&s, 4, 3), n;
	int k;

	(void)before; /* made with no session: counted by nobody */
	for (k = 0; k < 3; k++) {
		struct sess u = sess_start(&s, "life_work", k);

		n = srv_run(&s, 4, 5 + k);
		CHECK_EQ(sess_stop(&u, "life_work"), n);
		check_clean(&s);
		srv_run(&s, 2, 2); /* between sessions: counted by nobody */
	}
	srv_stop(&s);
}

/*
 * Two sessions at once (life_work and life_leaf: every life_work call
 * makes one life_leaf call), each detaching while the other counts on,
 * then re-attaching; a session that wants a function another one probes
 * gets one line saying so.
 */
TEST_TIMEOUT(two_sessions_independent, 180)
{
	struct srv s = srv_start();
	struct sess a, b, c;
	long n1, n2, n3, n4;
	const char *dup[] = { "-b", "agent", "-c", "-f", "life_work", "-p", NULL, NULL };
	char pid[16], *out = NULL, *err = NULL;

	a = sess_start(&s, "life_work", 0);
	b = sess_start(&s, "life_leaf", 1);
	n1 = srv_run(&s, 4, 5);

	/* The same function in a second session: refused, in one line. */
	snprintf(pid, sizeof(pid), "%d", (int)s.pid);
	dup[6] = pid;
	CHECK_EQ(run_utrace(dup, &out, &err), 1);
	CHECK_MSG(strstr(err, "patched already") && strstr(err, "another utrace session"),
		  "stderr: %s", err);
	free(out);
	free(err);

	CHECK_EQ(sess_stop(&a, "life_work"), n1); /* a detaches, b counts on */
	n2 = srv_run(&s, 3, 4);
	a = sess_start(&s, "life_work", 2); /* a again: the dormant instance */
	n3 = srv_run(&s, 4, 3);
	CHECK_EQ(sess_stop(&b, "life_leaf"), n1 + n2 + n3); /* b detaches, a counts on */
	n4 = srv_run(&s, 2, 6);
	c = sess_start(&s, "life_leaf", 3);
	CHECK_EQ(sess_stop(&c, "life_leaf"), 0);
	CHECK_EQ(sess_stop(&a, "life_work"), n3 + n4);
	check_clean(&s);
	srv_stop(&s);
}

/*
 * A process launched with the agent preloaded, and a second session
 * attached to it: the copy of the agent must use its own trampolines,
 * although the preloaded instance exports the same names first in the
 * global scope (agent/meson.build: -Bsymbolic; before, the copy's return
 * probes returned to address 0).
 */
TEST_TIMEOUT(launched_then_attached_session, 120)
{
	int pin[2], pout[2], st;
	struct srv s = { 0 };
	struct sess b, l;
	char line[64];
	long n;

	snprintf(l.out, sizeof(l.out), "/tmp/utrace-sess-%d-l.out", (int)getpid());
	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	l.pid = fork();
	CHECK(l.pid >= 0);
	if (l.pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execl(utrace(), "utrace", "-c", "-b", "agent", "-f", "life_work", "-o", l.out, "--",
		      life(), "serve", (char *)NULL);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	s.in = pin[1];
	s.out = pout[0];
	srv_line(&s, line, sizeof(line));
	s.pid = (pid_t)atoi(line + 4);
	CHECK(s.pid > 0);
	b = sess_start(&s, "life_leaf", 0);
	n = srv_run(&s, 4, 5);
	CHECK_EQ(sess_stop(&b, "life_leaf"), n);
	n += srv_run(&s, 2, 3); /* the launch session counts on alone */
	CHECK_EQ(write(s.in, "quit\n", 5), 5);
	CHECK_EQ(waitpid(l.pid, &st, 0), l.pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "utrace status %#x", st);
	snprintf(l.err, sizeof(l.err), "/dev/null");
	{
		char *text = slurp(l.out), *p = strstr(text, " life_work");
		long calls = -1;

		/* the line before " life_work": "% secs usecs calls [errors] min max" */
		while (p && p > text && p[-1] != '\n')
			p--;
		if (p) {
			double pct, secs;
			long usecs;

			if (sscanf(p, "%lf %lf %ld %ld", &pct, &secs, &usecs, &calls) != 4)
				calls = -1;
		}
		CHECK_MSG(calls == n, "launch session: %ld calls, want %ld: %s", calls, n, text);
	}
	unlink(l.out);
	close(s.in);
	close(s.out);
}
