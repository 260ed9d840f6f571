/* SPDX-License-Identifier: MIT */
/*
 * harness.c - see harness.h. Runs each test in a forked child with a
 * timeout; the child reports failure or skip text through a pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MAX_TESTS 512

struct harness_test {
	const char *name;
	harness_fn_t fn;
	int timeout;
};

static struct harness_test tests[MAX_TESTS];
static int nr_tests;
static int report_fd = -1;

void harness_register(const char *name, harness_fn_t fn, int timeout_sec)
{
	if (nr_tests < MAX_TESTS)
		tests[nr_tests++] = (struct harness_test){ name, fn, timeout_sec };
}

static void report(const char *kind, const char *fmt, va_list ap)
{
	char buf[2048];
	int n = snprintf(buf, sizeof(buf), "%s ", kind);

	vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (report_fd >= 0 && write(report_fd, buf, strlen(buf)) < 0)
		perror("harness: write");
}

void harness_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	char where[512];

	snprintf(where, sizeof(where), "%s:%d: ", file, line);
	if (report_fd >= 0 && write(report_fd, "FAIL ", 5) < 0)
		_exit(1);
	if (report_fd >= 0 && write(report_fd, where, strlen(where)) < 0)
		_exit(1);
	va_start(ap, fmt);
	if (report_fd >= 0) {
		char buf[2048];

		vsnprintf(buf, sizeof(buf), fmt, ap);
		if (write(report_fd, buf, strlen(buf)) < 0)
			_exit(1);
	}
	va_end(ap);
	_exit(1);
}

void harness_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report("SKIP", fmt, ap);
	va_end(ap);
	_exit(77);
}

void harness_note(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait for @pid, killing its process group after @timeout seconds. */
static int wait_timeout(pid_t pid, int timeout, bool *timed_out)
{
	double deadline = now_sec() + timeout;
	int status;

	*timed_out = false;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (now_sec() > deadline) {
			*timed_out = true;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return status;
		}
		usleep(2000);
	}
}

static int run_one(int idx, const struct harness_test *t)
{
	char msg[4096] = "";
	int pfd[2], status;
	size_t len = 0;
	bool timed_out;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC)) {
		printf("not ok %d - %s # harness: pipe: %s\n", idx, t->name, strerror(errno));
		return 1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		report_fd = pfd[1];
		/* own process group, so a timeout kills what the test started */
		setpgid(0, 0);
		t->fn();
		fflush(stdout);
		_exit(0);
	}
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		printf("not ok %d - %s # harness: fork: %s\n", idx, t->name, strerror(errno));
		return 1;
	}
	status = wait_timeout(pid, t->timeout, &timed_out);
	for (;;) {
		ssize_t n = read(pfd[0], msg + len, sizeof(msg) - 1 - len);

		if (n <= 0)
			break;
		len += n;
	}
	msg[len] = '\0';
	close(pfd[0]);
	if (timed_out) {
		printf("# FAIL %s: timed out after %d s\n", t->name, t->timeout);
		printf("not ok %d - %s\n", idx, t->name);
		return 1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("ok %d - %s\n", idx, t->name);
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		printf("ok %d - %s # SKIP %s\n", idx, t->name,
		       strncmp(msg, "SKIP ", 5) ? "" : msg + 5);
		return 2;
	}
	if (WIFSIGNALED(status))
		printf("# FAIL %s: killed by signal %d (%s)\n", t->name, WTERMSIG(status),
		       strsignal(WTERMSIG(status)));
	else
		printf("# FAIL %s: %s\n", t->name,
		       strncmp(msg, "FAIL ", 5) ? "exited with error" : msg + 5);
	printf("not ok %d - %s\n", idx, t->name);
	return 1;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0, i, n = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < nr_tests; i++)
		if (argc < 2 || !strcmp(argv[1], tests[i].name))
			n++;
	printf("1..%d\n", n);
	n = 0;
	for (i = 0; i < nr_tests; i++) {
		if (argc >= 2 && strcmp(argv[1], tests[i].name))
			continue;
		switch (run_one(++n, &tests[i])) {
		case 0:
			passed++;
			break;
		case 2:
			skipped++;
			break;
		default:
			failed++;
		}
	}
	printf("# %d passed, %d failed, %d skipped\n", passed, failed, skipped);
	return failed ? 1 : 0;
}

int harness_run(char *const argv[], char **out, char **err, int timeout_sec)
{
	int opipe[2], epipe[2], status;
	char *bufs[2] = { NULL, NULL };
	size_t lens[2] = { 0, 0 }, caps[2] = { 0, 0 };
	struct pollfd pfds[2];
	double deadline = now_sec() + timeout_sec;
	int open_fds = 2, i;
	pid_t pid;

	if (pipe2(opipe, O_CLOEXEC) || pipe2(epipe, O_CLOEXEC))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(opipe[1], 1);
		dup2(epipe[1], 2);
		execvp(argv[0], argv);
		fprintf(stderr, "harness: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(opipe[1]);
	close(epipe[1]);
	pfds[0] = (struct pollfd){ .fd = opipe[0], .events = POLLIN };
	pfds[1] = (struct pollfd){ .fd = epipe[0], .events = POLLIN };
	while (open_fds > 0) {
		int left = (int)((deadline - now_sec()) * 1000);

		if (left <= 0 || poll(pfds, 2, left) <= 0) {
			if (errno == EINTR)
				continue;
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			close(opipe[0]);
			close(epipe[0]);
			free(bufs[0]);
			free(bufs[1]);
			return -1;
		}
		for (i = 0; i < 2; i++) {
			ssize_t n;

			if (pfds[i].fd < 0 || !(pfds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (caps[i] - lens[i] < 4097) {
				caps[i] = caps[i] ? caps[i] * 2 : 8192;
				bufs[i] = realloc(bufs[i], caps[i]);
			}
			n = read(pfds[i].fd, bufs[i] + lens[i], caps[i] - lens[i] - 1);
			if (n <= 0) {
				close(pfds[i].fd);
				pfds[i].fd = -1;
				open_fds--;
			} else {
				lens[i] += n;
			}
		}
	}
	waitpid(pid, &status, 0);
	for (i = 0; i < 2; i++) {
		if (!bufs[i])
			bufs[i] = calloc(1, 1);
		else
			bufs[i][lens[i]] = '\0';
	}
	if (out)
		*out = bufs[0];
	else
		free(bufs[0]);
	if (err)
		*err = bufs[1];
	else
		free(bufs[1]);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

const char *harness_build_path(const char *rel)
{
	static char buf[8][4096];
	static int slot;
	const char *dir = getenv("UTRACE_BUILD_DIR");
	char *b = buf[slot++ % 8];

	snprintf(b, sizeof(buf[0]), "%s/%s", dir ? dir : ".", rel);
	return b;
}
