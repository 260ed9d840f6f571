/* SPDX-License-Identifier: MIT */
/*
 * test-live - events reach the user while the program still runs: into a
 * pipe (stderr) and into -o FILE, on both backends, for function and
 * syscall tracing. The target (s-list-pie) calls list_target_fn() once,
 * writes once, then blocks reading stdin: we read utrace's output until the
 * event's line shows up, and only then close the target's stdin. A tracer
 * that keeps its lines in a buffer until the program exits never shows the
 * line, and the test fails at its deadline (no timing is asserted beyond
 * that: the deadline is 20 s; the time to the first line is a note).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

#define DEADLINE_MS 20000

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Run utrace @args (NULL-terminated, "--" and the target appended) with
 * the target's stdin a pipe of ours; wait until @needle appears on utrace's
 * stderr (or in @file, with -o); then close the target's stdin.
 * Return: ms to the line, or -1 if it never came before the deadline.
 */
static long live(const char *const *args, const char *needle, const char *file)
{
	const char *argv[32];
	char buf[65536];
	size_t len = 0;
	int in[2], err[2], n = 0, status;
	long t0, found = -1;
	pid_t pid;

	argv[n++] = utrace();
	while (*args)
		argv[n++] = *args++;
	argv[n++] = "--";
	argv[n++] = built_path("tests/targets/s-list-pie");
	argv[n] = NULL;
	if (pipe2(in, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return -1;
	t0 = now_ms();
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(in[0], 0);
		dup2(err[1], 2);
		if (null >= 0)
			dup2(null, 1); /* the target's own stdout is not what we read */
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(err[1]);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	while (found < 0 && now_ms() - t0 < DEADLINE_MS) {
		struct pollfd pfd = { .fd = err[0], .events = POLLIN };
		ssize_t r;

		poll(&pfd, 1, 50);
		r = read(err[0], buf + len, sizeof(buf) - 1 - len);
		if (r > 0)
			len += (size_t)r;
		buf[len] = 0;
		if (file) {
			char *s = read_file(file);

			if (s && strstr(s, needle))
				found = now_ms() - t0;
			free(s);
		} else if (strstr(buf, needle)) {
			found = now_ms() - t0;
		}
		if (r == 0 && !file)
			break; /* utrace exited: too late */
	}
	close(in[1]); /* the target reads EOF and exits */
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		harness_note("utrace exited with status 0x%x", status);
		found = found < 0 ? found : -2;
	}
	if (found < 0)
		note_lines(buf);
	close(err[0]);
	return found;
}

static void check_live(const char *const *args, const char *needle, const char *file)
{
	long ms = live(args, needle, file);

	harness_note("first line after %ld ms", ms);
	CHECK_MSG(ms >= 0, "'%s' did not reach the %s while the program ran", needle,
		  file ? "output file" : "pipe");
}

TEST(agent_function_lines_reach_a_pipe_while_the_program_runs)
{
	const char *args[] = { "-b", "agent", "-f", "list_target_fn", NULL };

	check_live(args, "list_target_fn(", NULL);
}

TEST(ptrace_function_lines_reach_a_pipe_while_the_program_runs)
{
	const char *args[] = { "-b", "ptrace", "-f", "list_target_fn", NULL };

	check_live(args, "list_target_fn(", NULL);
}

TEST(syscall_lines_reach_a_pipe_while_the_program_runs)
{
	const char *args[] = { "-s", "write", NULL };

	check_live(args, "write(1, \"s-list: started", NULL);
}

TEST(agent_json_reaches_output_file_while_the_program_runs)
{
	char file[] = "/tmp/utrace-live-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-b", "agent", "--format", "json", "-f", "list_target_fn",
			       "-o", file,    NULL };

	CHECK(fd >= 0);
	close(fd);
	check_live(args, "list_target_fn", file);
	unlink(file);
}

TEST(ptrace_lines_reach_output_file_while_the_program_runs)
{
	char file[] = "/tmp/utrace-live-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-b", "ptrace", "-f", "list_target_fn", "-o", file, NULL };

	CHECK(fd >= 0);
	close(fd);
	check_live(args, "list_target_fn(", file);
	unlink(file);
}
