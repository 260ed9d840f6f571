/* SPDX-License-Identifier: MIT */
/*
 * ptrace-util.h - helpers for the ptrace suite: start a target from
 * tests/targets with pipes, read its "ready" line, look at /proc.
 * Header-only (static functions), included by each test-*.c of the suite.
 */
#ifndef __UTRACE_TEST_PTRACE_UTIL_H
#define __UTRACE_TEST_PTRACE_UTIL_H

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

struct target {
	pid_t pid;
	int in; /* write end of its stdin, or -1 */
	int out; /* read end of its stdout, or -1 */
};

static inline const char *target_path(const char *name)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s", harness_build_path("tests/targets"));
	strncat(buf, "/", sizeof(buf) - strlen(buf) - 1);
	strncat(buf, name, sizeof(buf) - strlen(buf) - 1);
	return buf;
}

static inline void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Start tests/targets/@name with @args (NULL-terminated, without argv[0]);
 * stdin from a pipe, stdout to a pipe (or to @out_fd if >= 0).
 */
static inline struct target target_start(const char *name, const char *const *args, int out_fd)
{
	struct target t = { -1, -1, -1 };
	int pin[2], pout[2] = { -1, -1 };
	char *argv[16];
	int i = 0;
	static char path[4096];

	CHECK(pipe2(pin, O_CLOEXEC) == 0);
	if (out_fd < 0)
		CHECK(pipe2(pout, O_CLOEXEC) == 0);
	snprintf(path, sizeof(path), "%s", target_path(name));
	argv[i++] = path;
	while (args && *args && i < 15)
		argv[i++] = (char *)*args++;
	argv[i] = NULL;
	t.pid = fork();
	CHECK(t.pid >= 0);
	if (t.pid == 0) {
		dup2(pin[0], 0);
		dup2(out_fd >= 0 ? out_fd : pout[1], 1);
		execv(argv[0], argv);
		_exit(99);
	}
	close(pin[0]);
	t.in = pin[1];
	if (out_fd < 0) {
		close(pout[1]);
		t.out = pout[0];
	}
	return t;
}

/* Read one line from @fd (at most @size-1 bytes), waiting @timeout_ms. */
static inline int read_line(int fd, char *buf, size_t size, int timeout_ms)
{
	size_t n = 0;

	while (n + 1 < size) {
		struct pollfd p = { fd, POLLIN, 0 };
		char c;

		if (poll(&p, 1, timeout_ms) <= 0)
			return -ETIMEDOUT;
		if (read(fd, &c, 1) != 1)
			return -EIO;
		if (c == '\n')
			break;
		buf[n++] = c;
	}
	buf[n] = 0;
	return (int)n;
}

static inline void target_wait_ready(struct target *t)
{
	char line[128];

	CHECK(read_line(t->out, line, sizeof(line), 10000) > 0);
	CHECK_MSG(!strncmp(line, "ready", 5), "got '%s'", line);
}

/*
 * Close the target's stdin (targets started with "eof" end at EOF), wait
 * for its exit; returns its status as a shell gives it.
 */
static inline int target_reap(struct target *t, int timeout_ms)
{
	int status, waited = 0;
	pid_t r;

	/* EOF on stdin tells targets that support it to finish now. */
	if (t->in >= 0)
		close(t->in);
	t->in = -1;
	for (;;) {
		r = waitpid(t->pid, &status, WNOHANG);
		if (r == t->pid)
			break;
		if (r < 0 || waited >= timeout_ms) {
			kill(t->pid, SIGKILL);
			waitpid(t->pid, &status, 0);
			return -1;
		}
		msleep(5);
		waited += 5;
	}
	if (t->in >= 0)
		close(t->in);
	if (t->out >= 0)
		close(t->out);
	t->in = t->out = -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The state letter of /proc/@pid/stat ('R', 'S', 'T', 't', 'Z' ...). */
static inline char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return '?';
	}
	fclose(f);
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : '?';
}

/* A field of /proc/@pid/status as a number (hex if @hex). */
static inline unsigned long long proc_status_num(pid_t pid, const char *key, bool hex)
{
	char path[64], line[256];
	unsigned long long v = 0;
	size_t kl = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtoull(line + kl + 1, NULL, hex ? 16 : 10);
			break;
		}
	}
	if (f)
		fclose(f);
	return v;
}

/* Wait until @pid is in one of the @states (e.g. "Tt"), at most @ms. */
static inline bool wait_state(pid_t pid, const char *states, int ms)
{
	int i;

	for (i = 0; i < ms; i += 2) {
		if (strchr(states, proc_state(pid)))
			return true;
		msleep(2);
	}
	return false;
}

/*
 * A copy of the executable @path in a new directory under /tmp (in @buf),
 * for a tool that puts kernel uprobes on a file (bpftrace): they hit every
 * process that maps that inode, so on the shared build tree they would
 * reach the tests that run beside it. private_copy_remove() deletes it.
 */
static inline const char *private_copy(const char *path, char *buf, size_t size)
{
	char dir[] = "/tmp/utrace-copy-XXXXXX", data[65536];
	const char *base = strrchr(path, '/');
	int in, out;
	ssize_t n;

	CHECK(mkdtemp(dir));
	snprintf(buf, size, "%s/%s", dir, base ? base + 1 : path);
	in = open(path, O_RDONLY | O_CLOEXEC);
	out = open(buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	CHECK_MSG(in >= 0 && out >= 0, "copy %s to %s: %s", path, buf, strerror(errno));
	while ((n = read(in, data, sizeof(data))) > 0)
		CHECK(write(out, data, (size_t)n) == n);
	CHECK(n == 0);
	close(in);
	CHECK(close(out) == 0);
	return buf;
}

static inline void private_copy_remove(const char *copy)
{
	char dir[4096], *slash;

	snprintf(dir, sizeof(dir), "%s", copy);
	unlink(copy);
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = 0;
		rmdir(dir);
	}
}

#endif /* __UTRACE_TEST_PTRACE_UTIL_H */
