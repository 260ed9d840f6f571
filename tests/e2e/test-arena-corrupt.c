/* SPDX-License-Identifier: MIT */
/*
 * test-arena-corrupt.c - a traced program cannot take over the tracer.
 *
 * The agent's arena is shared memory the target can write; utrace may run
 * as root. tests/targets/s-scribble overwrites its own arena in several
 * ways (layout fields, ring heads, malformed records and stack copies, a fork announcement
 * naming pid 1, random bytes) while utrace -b agent traces it, in attach
 * and launch mode. utrace must never be killed by a signal, must say "the
 * agent's arena in pid N is corrupt" when it is, take the probes out and
 * exit 1 in attach mode (the command's status in launch mode), and must
 * never follow a "fork child" that is not one. Before the host kept its
 * own layout, the header mode crashed utrace with SIGSEGV every time.
 * Suite 'e2e', not parallel.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

/* Each test has its own targets and files. */
HARNESS_JOBS(3)

static const char *scribbler(void)
{
	return harness_build_path("tests/targets/s-scribble");
}

struct victim {
	pid_t pid;
	int out;
};

/* s-scribble MODE SECS in the background, once it said "ready PID". */
static struct victim victim_start(const char *mode, const char *secs)
{
	struct victim v;
	char line[64] = "";
	int p[2];
	ssize_t n;

	CHECK(pipe2(p, O_CLOEXEC) == 0);
	v.pid = fork();
	CHECK(v.pid >= 0);
	if (!v.pid) {
		dup2(p[1], 1);
		execl(scribbler(), "s-scribble", mode, secs, (char *)NULL);
		_exit(99);
	}
	close(p[1]);
	v.out = p[0];
	n = read(v.out, line, sizeof(line) - 1);
	CHECK_MSG(n > 0 && !strncmp(line, "ready ", 6), "target said '%s'", line);
	return v;
}

/* Its exit status (128+sig when killed), and what it printed after "ready". */
static int victim_end(struct victim *v, char *buf, size_t len)
{
	ssize_t n, got = 0;
	int st;

	while (got + 1 < (ssize_t)len && (n = read(v->out, buf + got, len - 1 - got)) > 0)
		got += n;
	buf[got] = '\0';
	close(v->out);
	CHECK(waitpid(v->pid, &st, 0) == v->pid);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

/*
 * -c for the records mode: the agent then only counts, its rings stay empty
 * and the scribbled records are the only ones (no race with the producer).
 */
static const char *how(const char *mode)
{
	return strcmp(mode, "records") && strcmp(mode, "stackdata") ? "-v" : "-c";
}

static void attach_mode(const char *mode)
{
	struct victim v = victim_start(mode, "2");
	char pid[16], msg[96], out[256];
	const char *args[] = { how(mode), "-b", "agent", "-f", "scribble_work",
			       "-p",	  pid,	"-d",	 "8",  NULL };
	char *err = NULL;
	int rc;

	snprintf(pid, sizeof(pid), "%d", (int)v.pid);
	snprintf(msg, sizeof(msg), "the agent's arena in pid %d is corrupt", (int)v.pid);
	rc = run_utrace(args, NULL, &err);
	note_lines(err);
	CHECK_MSG(rc == 1, "utrace exited %d (1: said and detached; >= 128: it crashed)", rc);
	CHECK_EQ(count(err, msg), 1);
	CHECK_EQ(victim_end(&v, out, sizeof(out)), 0);
	CHECK_MSG(strstr(out, "done calls="), "target: %s", out);
	free(err);
}

static void launch_mode(const char *mode)
{
	const char *args[] = { how(mode), "-b",	       "agent", "-f", "scribble_work",
			       "--",	  scribbler(), mode,	"1",  NULL };
	char *out = NULL, *err = NULL;
	int rc;

	rc = run_utrace(args, &out, &err);
	note_lines(err);
	CHECK_MSG(rc == 0, "utrace exited %d (the command's status is 0)", rc);
	CHECK(strstr(err, "is corrupt ("));
	CHECK(strstr(out, "done calls="));
	free(out);
	free(err);
}

TEST_TIMEOUT(attach_header_layout_overwritten, 60)
{
	attach_mode("header");
}

TEST_TIMEOUT(attach_ring_head_far_ahead, 60)
{
	attach_mode("ring");
}

TEST_TIMEOUT(attach_malformed_records, 60)
{
	attach_mode("records");
}

/* -k's copy (ABI 12): a STACKDATA record longer than a record is refused */
TEST_TIMEOUT(attach_malformed_stack_copy, 60)
{
	attach_mode("stackdata");
}

TEST_TIMEOUT(launch_header_layout_overwritten, 60)
{
	launch_mode("header");
}

TEST_TIMEOUT(launch_malformed_records, 60)
{
	launch_mode("records");
}

/*
 * The same on the library's agent (lib/backend-agent.c): the poll says it
 * (-EBADMSG), the process is detached, the CLI exits 1 in attach mode.
 */
TEST_TIMEOUT(library_agent_attach_and_launch, 120)
{
	attach_mode("records");
	attach_mode("header");
	launch_mode("records");
}

/* A fork announcement for pid 1 (not a child): ignored, not opened. */
TEST_TIMEOUT(attach_fork_entry_naming_pid_1_is_ignored, 60)
{
	struct victim v = victim_start("fork", "1");
	char pid[16], out[256];
	const char *args[] = { "-v", "-F", "-b", "agent", "-f", "scribble_work", "-p", pid, NULL };
	char *err = NULL;
	int rc;

	snprintf(pid, sizeof(pid), "%d", (int)v.pid);
	rc = run_utrace(args, NULL, &err);
	note_lines(err);
	CHECK_EQ(rc, 0);
	CHECK(!strstr(err, "following pid 1,"));
	CHECK(!strstr(err, "corrupt"));
	CHECK_EQ(victim_end(&v, out, sizeof(out)), 0);
	free(err);
}

/*
 * Random bytes over the whole arena, again and again: the agent in the
 * target may well die of it (its own memory), utrace may not.
 */
TEST_TIMEOUT(attach_random_bytes_10_runs, 200)
{
	int i, said = 0;

	for (i = 0; i < 10; i++) {
		struct victim v = victim_start("random", "1");
		char pid[16], out[256];
		const char *args[] = { "-b", "agent", "-f", "scribble_work", "-p", pid,
				       "-d", "8",     NULL };
		char *err = NULL;
		int rc;

		snprintf(pid, sizeof(pid), "%d", (int)v.pid);
		rc = run_utrace(args, NULL, &err);
		CHECK_MSG(rc >= 0 && rc < 128, "run %d: utrace exited %d", i, rc);
		said += !!strstr(err, "is corrupt (");
		victim_end(&v, out, sizeof(out));
		free(err);
	}
	harness_note("%d of 10 runs said the arena is corrupt", said);
	CHECK(said >= 1);
}
