/* SPDX-License-Identifier: MIT */
/*
 * harness.c - see harness.h. Runs each test in a forked child with a
 * timeout; the child reports failure or skip text through a pipe. With
 * HARNESS_JOBS(n) several children run at once; each one's stdout goes to
 * a memfd, copied out when it ends, so that TAP lines never interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MAX_TESTS 512

struct harness_test {
	const char *name;
	harness_fn_t fn;
	int timeout;
	bool alone;
};

static struct harness_test tests[MAX_TESTS];
static int nr_tests;
static int report_fd = -1;
static int jobs = 1;

void harness_register(const char *name, harness_fn_t fn, int timeout_sec, bool alone)
{
	if (nr_tests < MAX_TESTS)
		tests[nr_tests++] = (struct harness_test){ name, fn, timeout_sec, alone };
}

void harness_set_jobs(int n)
{
	jobs = n > 0 ? n : 1;
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

/* A test's process while it runs (the harness's own process keeps these). */
struct job {
	const struct harness_test *t;
	pid_t pid;
	int report; /* read end of the child's report pipe */
	int out; /* the child's stdout (a memfd) when tests run side by side, or -1 */
	double start, deadline;
	bool timed_out;
	int status;
};

static int nr_printed, nr_passed, nr_failed, nr_skipped;

static int start_job(struct job *j, const struct harness_test *t)
{
	int pfd[2];

	*j = (struct job){ .t = t, .pid = -1, .report = -1, .out = -1 };
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	if (jobs > 1) {
		/* its TAP comments come out whole, after it ends */
		j->out = memfd_create("harness-out", MFD_CLOEXEC);
		if (j->out < 0) {
			close(pfd[0]);
			close(pfd[1]);
			return -errno;
		}
	}
	fflush(stdout);
	fflush(stderr);
	j->start = now_sec();
	j->deadline = j->start + t->timeout;
	j->pid = fork();
	if (j->pid == 0) {
		close(pfd[0]);
		report_fd = pfd[1];
		if (j->out >= 0)
			dup2(j->out, 1);
		/* own process group, so a timeout kills what the test started */
		setpgid(0, 0);
		t->fn();
		fflush(stdout);
		_exit(0);
	}
	close(pfd[1]);
	if (j->pid < 0) {
		int err = -errno;

		close(pfd[0]);
		if (j->out >= 0)
			close(j->out);
		return err;
	}
	j->report = pfd[0];
	return 0;
}

/* The test in @j has ended (j->status): its output, its TAP line. */
static void finish_job(struct job *j)
{
	const struct harness_test *t = j->t;
	int status = j->status, idx = ++nr_printed;
	char msg[4096] = "";
	size_t len = 0;

	for (;;) {
		ssize_t n = read(j->report, msg + len, sizeof(msg) - 1 - len);

		if (n <= 0)
			break;
		len += n;
	}
	msg[len] = '\0';
	close(j->report);
	if (j->out >= 0) {
		char buf[8192], last = '\n';
		off_t off = 0;
		ssize_t n;

		while ((n = pread(j->out, buf, sizeof(buf), off)) > 0) {
			fwrite(buf, 1, n, stdout);
			off += n;
			last = buf[n - 1];
		}
		if (last != '\n')
			fputc('\n', stdout);
		close(j->out);
	}
	printf("# time %s %.2f s\n", t->name, now_sec() - j->start);
	if (j->timed_out) {
		printf("# FAIL %s: timed out after %d s\n", t->name, t->timeout);
		printf("not ok %d - %s\n", idx, t->name);
		nr_failed++;
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("ok %d - %s\n", idx, t->name);
		nr_passed++;
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		printf("ok %d - %s # SKIP %s\n", idx, t->name,
		       strncmp(msg, "SKIP ", 5) ? "" : msg + 5);
		nr_skipped++;
		return;
	}
	if (WIFSIGNALED(status))
		printf("# FAIL %s: killed by signal %d (%s)\n", t->name, WTERMSIG(status),
		       strsignal(WTERMSIG(status)));
	else
		printf("# FAIL %s: %s\n", t->name,
		       strncmp(msg, "FAIL ", 5) ? "exited with error" : msg + 5);
	printf("not ok %d - %s\n", idx, t->name);
	nr_failed++;
}

static bool selected(int argc, char **argv, const struct harness_test *t)
{
	int i;

	if (argc < 2)
		return true;
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], t->name))
			return true;
	return false;
}

/*
 * Run the selected tests, up to @jobs at a time: those that may share the
 * machine first, in their order, then the TEST_ALONE ones one by one.
 */
static void run_all(int argc, char **argv)
{
	struct job run[64];
	int order[MAX_TESTS], nr = 0, next = 0, nr_run = 0, i, pass;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < nr_tests; i++)
			if (tests[i].alone == pass && selected(argc, argv, &tests[i]))
				order[nr++] = i;
	printf("1..%d\n", nr);
	if (jobs > (int)(sizeof(run) / sizeof(run[0])))
		jobs = sizeof(run) / sizeof(run[0]);
	while (next < nr || nr_run) {
		while (next < nr && nr_run < jobs) {
			const struct harness_test *t = &tests[order[next]];
			int err;

			if (t->alone && nr_run)
				break;
			err = start_job(&run[nr_run], t);
			next++;
			if (err) {
				printf("not ok %d - %s # harness: %s\n", ++nr_printed, t->name,
				       strerror(-err));
				nr_failed++;
				continue;
			}
			nr_run++;
			if (t->alone)
				break;
		}
		for (i = 0; i < nr_run; i++) {
			struct job *j = &run[i];
			pid_t r = waitpid(j->pid, &j->status, WNOHANG);

			if (r == 0 && now_sec() > j->deadline) {
				j->timed_out = true;
				kill(-j->pid, SIGKILL);
				kill(j->pid, SIGKILL);
				r = waitpid(j->pid, &j->status, 0);
			}
			if (r == 0 || (r < 0 && errno == EINTR))
				continue;
			if (r < 0)
				j->status = -1;
			finish_job(j);
			run[i--] = run[--nr_run];
		}
		if (nr_run)
			usleep(2000);
	}
}

int main(int argc, char **argv)
{
	const char *env = getenv("UTRACE_TEST_JOBS");

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (env && *env)
		harness_set_jobs(atoi(env));
	run_all(argc, argv);
	printf("# %d passed, %d failed, %d skipped\n", nr_passed, nr_failed, nr_skipped);
	return nr_failed ? 1 : 0;
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

long harness_size(long normal, long slow)
{
	const char *env = getenv("UTRACE_SLOW");

	return env && *env && strcmp(env, "0") ? slow : normal;
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
