/* SPDX-License-Identifier: MIT */
/*
 * test-dwarf.c - DWARF prototypes whose debug information is not in the
 * traced file (docs/cli.md "Function arguments"): a copy of
 * tests/targets/s-dwarf stripped of its DWARF, the DWARF in a separate
 * file served by a debuginfod server (debuginfod -F, on a free port, with
 * its own database, HOME and client cache in a temporary directory), and
 * one that never answers. Suite e2e.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

HARNESS_JOBS(2)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A TCP socket listening on 127.0.0.1 at a port the kernel chose; its port in *@port. */
static int listen_any(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 16) ||
	    getsockname(s, (struct sockaddr *)&a, &len)) {
		if (s >= 0)
			close(s);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return s;
}

/*
 * The HTTP status of GET @path on 127.0.0.1:@port, 0 if there was no
 * answer (not listening yet, or none within 10 s).
 */
static int http_status(int port, const char *path)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 10 };
	char req[512], buf[64];
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), status = 0;
	ssize_t n, got = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0)
		return 0;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
	if (!connect(s, (struct sockaddr *)&a, sizeof(a)) &&
	    write(s, req, strlen(req)) == (ssize_t)strlen(req)) {
		/* "HTTP/1.1 200 OK": the status line is all we read */
		while (got < (ssize_t)sizeof(buf) - 1 &&
		       (n = read(s, buf + got, sizeof(buf) - 1 - got)) > 0)
			got += n;
		buf[got] = '\0';
		if (!strncmp(buf, "HTTP/", 5) && strchr(buf, ' '))
			status = atoi(strchr(buf, ' ') + 1);
	}
	close(s);
	return status;
}

struct server {
	pid_t pid;
	int port;
	char log[300];
};

/*
 * debuginfod -F @srv on a free port, HOME and its database in @dir, its
 * output in @dir/server.log; killed with us if we die (a failed CHECK).
 * Return: the pid, or -1 if it exited at once (the port was taken).
 */
static pid_t server_start(struct server *sv, const char *dir, const char *srv)
{
	char port[16], db[300], home[300];
	int s = listen_any(&sv->port);

	if (s < 0)
		return -1;
	close(s); /* free again: debuginfod binds it (a race we retry) */
	snprintf(port, sizeof(port), "%d", sv->port);
	snprintf(db, sizeof(db), "%s/server.sqlite", dir);
	snprintf(home, sizeof(home), "%s/home", dir);
	snprintf(sv->log, sizeof(sv->log), "%s/server.log", dir);
	sv->pid = fork();
	if (sv->pid == 0) {
		int fd = open(sv->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		setenv("HOME", home, 1);
		/* one scanner thread: the machine is shared */
		execlp("debuginfod", "debuginfod", "-p", port, "-d", db, "-c", "1", "-F", srv,
		       (char *)NULL);
		_exit(127);
	}
	return sv->pid;
}

static void server_stop(struct server *sv)
{
	double end = now_s() + 30;
	int st;

	if (sv->pid <= 0)
		return;
	kill(sv->pid, SIGTERM);
	while (waitpid(sv->pid, &st, WNOHANG) == 0) {
		if (now_s() > end) {
			kill(sv->pid, SIGKILL);
			waitpid(sv->pid, &st, 0);
			break;
		}
		usleep(50 * 1000);
	}
	sv->pid = 0;
}

/*
 * Until the server serves @id's debuginfo (it has scanned @srv), at most
 * 120 s. Return: true, or false if it exited or never did.
 */
static bool server_ready(struct server *sv, const char *id)
{
	char path[256];
	double end = now_s() + 120;
	int st;

	snprintf(path, sizeof(path), "/buildid/%s/debuginfo", id);
	while (now_s() < end) {
		if (waitpid(sv->pid, &st, WNOHANG) == sv->pid) {
			sv->pid = 0;
			return false;
		}
		if (http_status(sv->port, path) == 200)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

static void run_sh(const char *cmd)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	char *err = NULL;

	CHECK_MSG(harness_run(argv, NULL, &err, 120) == 0, "%s: %s", cmd, err ? err : "");
	free(err);
}

/*
 * In @dir: s-dwarf stripped of its DWARF (@dir/s-dwarf) and that DWARF
 * alone (@dir/srv/s-dwarf.debug, as objcopy --only-keep-debug makes it:
 * the build-id note kept). Its build-id in @id.
 */
static void make_stripped(const char *dir, char *id, size_t size)
{
	const char *full = built_path("tests/targets/s-dwarf");
	char cmd[2048], *out = NULL;
	char *argv[] = { "sh", "-c", cmd, NULL };

	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/srv %s/home && objcopy --only-keep-debug %s %s/srv/s-dwarf.debug && "
		 "strip --strip-debug -o %s/s-dwarf %s",
		 dir, dir, full, dir, dir, full);
	run_sh(cmd);
	snprintf(cmd, sizeof(cmd),
		 "readelf -n %s/s-dwarf | sed -n 's/^ *Build ID: *\\([0-9a-f]*\\)$/\\1/p'", dir);
	CHECK_EQ(harness_run(argv, &out, NULL, 60), 0);
	CHECK_MSG(out && strlen(out) > 8, "no build-id in the stripped s-dwarf: '%s'", out);
	out[strcspn(out, "\n")] = '\0';
	snprintf(id, size, "%s", out);
	free(out);
	/* no .debug_info left: without a server it has no DWARF */
	snprintf(cmd, sizeof(cmd), "! readelf -S %s/s-dwarf | grep -q debug_info", dir);
	run_sh(cmd);
}

/* The call lines of @err ("[tid] " dropped), in order: what the two runs compare. */
static char *calls(const char *err)
{
	char *out = calloc(1, strlen(err) + 1), *o = out;
	const char *line = err;

	for (; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
		const char *p = line, *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (*p != '[' || !strchr(p, ']') || strchr(p, ']') > line + len)
			continue;
		p = strchr(p, ']') + 2;
		memcpy(o, p, line + len - p);
		o += line + len - p;
		*o++ = '\n';
	}
	*o = '\0';
	return out;
}

static void rm_rf(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	run_sh(cmd);
}

static bool have_debuginfod(void)
{
	char *argv[] = { "debuginfod", "--version", NULL };

	return harness_run(argv, NULL, NULL, 30) == 0;
}

/*
 * The stripped s-dwarf shows the arguments and returns as the one built
 * with -g does (enums by name, floats) when DEBUGINFOD_URLS names a
 * server that has its DWARF, on ptrace and the agent; -v says once which
 * file came from the server; without DEBUGINFOD_URLS, hex registers.
 */
TEST_TIMEOUT(debuginfod_fetches_dwarf, 300)
{
	const char *full = built_path("tests/targets/s-dwarf");
	char dir[] = "/tmp/utrace-dwarf-XXXXXX", prog[64], srv[64], cache[64], url[64], id[130];
	const char *args[] = { "-v",   "-b", "ptrace",	 "-f", "paint", "-f", "scale", "-f",
			       "half", "-f", "level_of", "--", full,	"1",  NULL };
	struct server sv = { 0 };
	char *out = NULL, *err = NULL, *want, *got;
	int tries;

	if (!have_debuginfod())
		SKIP("no debuginfod server (Debian package debuginfod)");
	CHECK(mkdtemp(dir));
	make_stripped(dir, id, sizeof(id));
	snprintf(prog, sizeof(prog), "%s/s-dwarf", dir);
	snprintf(srv, sizeof(srv), "%s/srv", dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	/* the client's cache, and the XDG fallback, both in @dir */
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	setenv("XDG_CACHE_HOME", cache, 1);
	unsetenv("DEBUGINFOD_URLS");

	/* what the DWARF gives, from the file built with -g */
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	want = calls(err);
	CHECK_MSG(strstr(want, "paint(COLOR_GREEN, 2)\n") && strstr(want, "scale() = 5.5\n") &&
			  strstr(want, "level_of() = LEVEL_HIGH\n"),
		  "%s", err);
	CHECK_MSG(!strstr(err, "debuginfod"), "%s", err);
	free(out);
	free(err);

	/* the stripped copy, no server: registers in hex */
	args[12] = prog;
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_STREQ(out, "ok 1\n");
	CHECK_MSG(strstr(err, "] paint(0x1, 0x2") && !strstr(err, "COLOR_GREEN") &&
			  !strstr(err, "debuginfod"),
		  "%s", err);
	free(out);
	free(err);

	for (tries = 0; tries < 3; tries++) {
		if (server_start(&sv, dir, srv) < 0)
			continue;
		if (server_ready(&sv, id))
			break;
		server_stop(&sv);
	}
	if (tries == 3) {
		char *log = read_file(sv.log);

		note_lines(log ? log : "(no server log)");
		free(log);
		rm_rf(dir);
		CHECK_MSG(0, "debuginfod never served %s", id);
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", sv.port);
	setenv("DEBUGINFOD_URLS", url, 1);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_STREQ(out, "ok 1\n");
	got = calls(err);
	CHECK_MSG(!strcmp(got, want), "stripped + debuginfod:\n%s\nwith -g:\n%s", got, want);
	/* four functions, one fetch: one note, naming the file in the cache */
	CHECK_MSG(count(err, "DWARF from debuginfod") == 1 &&
			  count(err, "s-dwarf: DWARF from debuginfod (") == 1 && strstr(err, cache),
		  "%s", err);
	free(got);
	free(out);
	free(err);

	/* the agent (prototypes looked up as the probes are placed); from the cache now */
	args[2] = "agent";
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_MSG(strstr(err, "] paint(COLOR_GREEN, 2)\n") &&
			  strstr(err, "] level_of() = LEVEL_HIGH\n") &&
			  count(err, "DWARF from debuginfod") == 1,
		  "%s", err);
	free(out);
	free(err);

	/* without -v: the same calls, no note */
	args[0] = "-q";
	args[2] = "ptrace";
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_MSG(strstr(err, "] paint(COLOR_GREEN, 2)\n") && !strstr(err, "debuginfod"), "%s",
		  err);
	free(out);
	free(err);

	/* an empty DEBUGINFOD_URLS is none */
	setenv("DEBUGINFOD_URLS", "", 1);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_MSG(strstr(err, "] paint(0x1, 0x2") && !strstr(err, "COLOR_GREEN"), "%s", err);
	free(out);
	free(err);

	server_stop(&sv);
	free(want);
	rm_rf(dir);
}

/*
 * A server that accepts the connection and never answers (a socket
 * listening, never read), DEBUGINFOD_TIMEOUT unset (the client's own is
 * 90 s per try): utrace gives up and traces on with registers in hex, in
 * much less than that. One that refuses: at once.
 */
TEST_TIMEOUT(debuginfod_dead_server, 240)
{
	char dir[] = "/tmp/utrace-dwarf-XXXXXX", prog[64], cache[64], url[64], id[130];
	const char *args[] = { "-b",	   "ptrace", "-f", "paint", "-f",
			       "level_of", "--",     prog, "1",	    NULL };
	char *out = NULL, *err = NULL;
	int port, s;
	double t0, took;

	CHECK(mkdtemp(dir));
	make_stripped(dir, id, sizeof(id));
	snprintf(prog, sizeof(prog), "%s/s-dwarf", dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	setenv("XDG_CACHE_HOME", cache, 1);
	unsetenv("DEBUGINFOD_TIMEOUT");
	unsetenv("DEBUGINFOD_MAXTIME");
	unsetenv("DEBUGINFOD_RETRY_LIMIT");

	s = listen_any(&port);
	CHECK(s >= 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	setenv("DEBUGINFOD_URLS", url, 1);
	t0 = now_s();
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	took = now_s() - t0;
	CHECK_STREQ(out, "ok 1\n");
	CHECK_MSG(strstr(err, "] paint(0x1, 0x2") && strstr(err, "] level_of() = 0x1\n"), "%s",
		  err);
	/* utrace's bound is 15 s without a byte; 60 leaves room for a loaded machine */
	CHECK_MSG(took < 60, "%.1f s with a server that never answers", took);
	harness_note("a server that never answers: %.1f s", took);
	free(out);
	free(err);
	close(s); /* now nothing listens there: refused */

	rm_rf(cache);
	t0 = now_s();
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	took = now_s() - t0;
	CHECK_MSG(strstr(err, "] paint(0x1, 0x2"), "%s", err);
	CHECK_MSG(took < 30, "%.1f s with a server that refuses", took);
	free(out);
	free(err);
	rm_rf(dir);
}
