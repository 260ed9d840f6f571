/* SPDX-License-Identifier: MIT */
/*
 * test-syscalls.c - `utrace -s` end to end, with strace as the oracle.
 *
 * Counts: per-syscall calls and errors of `utrace -F -c -s` must equal those
 * of `strace -f -c` on the same deterministic programs. Syscalls whose
 * count depends on scheduling are left out of the comparison, each with its
 * reason (IGNORE_* below). The programs check their own results, so a
 * tracer that changes their behaviour fails here too.
 *
 * Text: for a fixed set of syscalls, utrace's lines must equal strace's
 * after normalising addresses and strace's column padding.
 *
 * Attach: attach to a running multithreaded program and detach (SIGINT and
 * -d), 100 times; the program must run on and finish with correct output.
 *
 * Every test needing strace skips when it is missing. Suite 'e2e', not
 * parallel (they ptrace and measure nothing but counts).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *utrace(void)
{
	const char *u = getenv("UTRACE");

	return u ? u : harness_build_path("cli/utrace");
}

static void need_strace(void)
{
	char *argv[] = { "strace", "-V", NULL };

	if (harness_run(argv, NULL, NULL, 10) != 0)
		SKIP("strace is not installed");
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, n + 1);
	if (buf && fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

struct row {
	char name[64];
	long calls, errors;
};

struct table {
	struct row rows[512];
	int nr;
};

/*
 * Parse a strace -c table: "%time seconds usecs/call calls [errors] name";
 * the errors column is blank when 0. The "total" row is skipped.
 */
static int parse_table(const char *text, struct table *t)
{
	const char *line = text;

	t->nr = 0;
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		char buf[256], *tok[8];
		int n = 0;
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		line = nl ? nl + 1 : NULL;
		for (char *p = strtok(buf, " \t"); p && n < 8; p = strtok(NULL, " \t"))
			tok[n++] = p;
		if ((n != 5 && n != 6) || !isdigit((unsigned char)tok[0][0]))
			continue;
		if (!strcmp(tok[n - 1], "total"))
			continue;
		snprintf(t->rows[t->nr].name, sizeof(t->rows[0].name), "%s", tok[n - 1]);
		t->rows[t->nr].calls = atol(tok[3]);
		t->rows[t->nr].errors = n == 6 ? atol(tok[4]) : 0;
		if (++t->nr == 512)
			break;
	}
	return t->nr;
}

static const struct row *find_row(const struct table *t, const char *name)
{
	int i;

	for (i = 0; i < t->nr; i++)
		if (!strcmp(t->rows[i].name, name))
			return &t->rows[i];
	return NULL;
}

static bool ignored(const char *name, const char *const *ignore)
{
	for (; ignore && *ignore; ignore++)
		if (!strcmp(*ignore, name))
			return true;
	return false;
}

/*
 * Run @cmd under `strace -f -c` and `utrace -F -c -s`, and compare the
 * tables row by row (both ways), except the @ignore'd syscalls. With a
 * @set, both trace only it (strace -e trace=SET, utrace -s SET): utrace
 * then uses its seccomp filter, plain -s uses PTRACE_SYSCALL stops.
 */
static void compare_counts(char *const cmd[], const char *const *ignore, const char *set)
{
	char trace_set[256];
	char sfile[] = "/tmp/utrace-e2e-strace-XXXXXX", ufile[] = "/tmp/utrace-e2e-utrace-XXXXXX";
	char *sargv[32], *uargv[32], *sout = NULL, *uout = NULL, *stab, *utab;
	struct table *st = calloc(1, sizeof(*st)), *ut = calloc(1, sizeof(*ut));
	int n = 0, m = 0, i, rs, ru, mismatches = 0;

	CHECK(st && ut);
	close(mkstemp(sfile));
	close(mkstemp(ufile));
	sargv[n++] = "strace";
	sargv[n++] = "-f";
	sargv[n++] = "-c";
	sargv[n++] = "-o";
	sargv[n++] = sfile;
	if (set) {
		snprintf(trace_set, sizeof(trace_set), "trace=%s", set);
		sargv[n++] = "-e";
		sargv[n++] = trace_set;
	}
	uargv[m++] = (char *)utrace();
	uargv[m++] = "-F";
	uargv[m++] = "-c";
	uargv[m++] = "-s";
	if (set)
		uargv[m++] = (char *)set;
	uargv[m++] = "-o";
	uargv[m++] = ufile;
	uargv[m++] = "--";
	for (i = 0; cmd[i]; i++) {
		sargv[n++] = cmd[i];
		uargv[m++] = cmd[i];
	}
	sargv[n] = NULL;
	uargv[m] = NULL;

	rs = harness_run(sargv, &sout, NULL, 120);
	ru = harness_run(uargv, &uout, NULL, 120);
	CHECK_MSG(rs == ru, "exit status: strace %d, utrace %d", rs, ru);
	CHECK_MSG(sout && uout && !strcmp(sout, uout), "the program's output differs:\n%s---\n%s",
		  sout ? sout : "", uout ? uout : "");
	stab = slurp(sfile);
	utab = slurp(ufile);
	CHECK(stab && utab);
	CHECK_MSG(parse_table(stab, st) > 5, "strace table:\n%s", stab);
	CHECK_MSG(parse_table(utab, ut) > 5, "utrace table:\n%s", utab);
	for (i = 0; i < st->nr; i++) {
		const struct row *s = &st->rows[i], *u = find_row(ut, s->name);

		if (ignored(s->name, ignore))
			continue;
		if (!u || u->calls != s->calls || u->errors != s->errors) {
			harness_note(
				"%-20s strace %ld calls %ld errors, utrace %ld calls %ld errors",
				s->name, s->calls, s->errors, u ? u->calls : 0, u ? u->errors : 0);
			mismatches++;
		}
	}
	for (i = 0; i < ut->nr; i++) {
		if (!ignored(ut->rows[i].name, ignore) && !find_row(st, ut->rows[i].name)) {
			harness_note("%-20s only utrace saw it (%ld calls)", ut->rows[i].name,
				     ut->rows[i].calls);
			mismatches++;
		}
	}
	if (mismatches)
		harness_note("strace:\n%s\nutrace:\n%s", stab, utab);
	CHECK_EQ(mismatches, 0);
	harness_note("%d syscalls compared", st->nr);
	unlink(sfile);
	unlink(ufile);
	free(stab);
	free(utab);
	free(sout);
	free(uout);
	free(st);
	free(ut);
}

/*
 * futex: how often threads contend on locks (and pthread_join's wait)
 * depends on scheduling. Everything else the 8 threads do is fixed.
 */
static const char *const IGNORE_THREADS[] = { "futex", NULL };

TEST_TIMEOUT(counts_threads, 240)
{
	char *cmd[] = { (char *)harness_build_path("tests/targets/s-threads-write"), "8", "2000",
			NULL };

	need_strace();
	compare_counts(cmd, IGNORE_THREADS, NULL);
}

/* The same through the seccomp filter: everything but futex. */
TEST_TIMEOUT(counts_threads_seccomp, 240)
{
	char *cmd[] = { (char *)harness_build_path("tests/targets/s-threads-write"), "8", "2000",
			NULL };

	need_strace();
	compare_counts(cmd, IGNORE_THREADS, "!futex");
}

/*
 * rt_sigreturn: sh gets SIGCHLD for each of its two children; when both
 * exit close together the kernel merges them into one delivery, so the
 * handler (and its rt_sigreturn) runs once or twice. wait4: its errors
 * (ECHILD once both are reaped) follow the same race in principle; in
 * practice dash reaps in a fixed order, so it is compared.
 */
static const char *const IGNORE_SH[] = { "rt_sigreturn", "futex", NULL };

TEST_TIMEOUT(counts_fork_exec_pipe, 240)
{
	char *cmd[] = { "sh", "-c", "ls -la / | wc -l", NULL };

	need_strace();
	compare_counts(cmd, IGNORE_SH, NULL);
}

/* Forks inherit the filter: their syscalls must still all be seen. */
TEST_TIMEOUT(counts_fork_exec_pipe_seccomp, 240)
{
	char *cmd[] = { "sh", "-c", "ls -la / | wc -l", NULL };

	need_strace();
	compare_counts(cmd, IGNORE_SH, "%file,%desc,%process");
}

/* s-sigrestart orders its signals after the blocking calls: nothing ignored. */
TEST_TIMEOUT(counts_signal_restarts, 240)
{
	char *cmd[] = { (char *)harness_build_path("tests/targets/s-sigrestart"), "150", NULL };

	need_strace();
	compare_counts(cmd, NULL, NULL);
}

/* A class, names and the restart of a filtered read through seccomp stops. */
TEST_TIMEOUT(counts_signal_restarts_seccomp, 240)
{
	char *cmd[] = { (char *)harness_build_path("tests/targets/s-sigrestart"), "150", NULL };

	need_strace();
	compare_counts(cmd, NULL, "%signal,read,write,clock_nanosleep,setitimer");
}

/*
 * Collapse strace's padding before " = ", replace 0x... by ADDR and the
 * digits of tv_nsec (the time left of an interrupted sleep) by N.
 */
static void normalise(char *s)
{
	char *r = s, *w = s;

	while (*r) {
		if (!strncmp(r, "getrandom(\"", 11)) { /* random bytes */
			memcpy(w, "getrandom(RANDOM", 16);
			w += 16;
			r += 11;
			while (*r && *r != '"')
				r++;
			r += *r == '"';
			continue;
		}
		if (!strncmp(r, "set_tid_address(", 16)) { /* returns the tid */
			while (*r && *r != '\n')
				r++;
			memcpy(w, "set_tid_address", 15);
			w += 15;
			continue;
		}
		if (!strncmp(r, "tv_nsec=", 8)) {
			memcpy(w, "tv_nsec=N", 9);
			w += 9;
			r += 8;
			while (isdigit((unsigned char)*r))
				r++;
			continue;
		}
		if (r[0] == '0' && r[1] == 'x') {
			r += 2;
			while (isxdigit((unsigned char)*r))
				r++;
			memcpy(w, "ADDR", 4);
			w += 4;
			continue;
		}
		if (*r == ' ' && r[1] == ' ') {
			while (*r == ' ')
				r++;
			*w++ = ' ';
			continue;
		}
		*w++ = *r++;
	}
	*w = '\0';
}

TEST_TIMEOUT(text_matches_strace, 120)
{
	const char *set = "read,write,pipe2,setitimer,clock_nanosleep,rt_sigprocmask,rt_sigreturn,"
			  "rt_sigaction";
	char sfile[] = "/tmp/utrace-e2e-strace-XXXXXX", ufile[] = "/tmp/utrace-e2e-utrace-XXXXXX";
	char strace_set[128], *stext, *utext;
	char *prog = (char *)harness_build_path("tests/targets/s-sigrestart");
	char *sargv[] = { "strace", "-e", strace_set, "-o", sfile, prog, "150", NULL };
	char *uargv[] = {
		(char *)utrace(), "-s", (char *)set, "-o", ufile, "--", prog, "150", NULL
	};

	need_strace();
	snprintf(strace_set, sizeof(strace_set), "trace=%s", set);
	close(mkstemp(sfile));
	close(mkstemp(ufile));
	CHECK_EQ(harness_run(sargv, NULL, NULL, 60), 0);
	CHECK_EQ(harness_run(uargv, NULL, NULL, 60), 0);
	stext = slurp(sfile);
	utext = slurp(ufile);
	CHECK(stext && utext);
	normalise(stext);
	normalise(utext);
	if (strcmp(stext, utext))
		harness_note("strace:\n%s\nutrace:\n%s", stext, utext);
	CHECK(!strcmp(stext, utext));
	unlink(sfile);
	unlink(ufile);
	free(stext);
	free(utext);
}

/*
 * A whole single-process trace, every syscall decoded: `ls -la /` (file,
 * directory, socket, xattr, statx, mmap, signal... calls) must read the
 * same as under strace, addresses, random bytes and the tid aside.
 */
TEST_TIMEOUT(text_matches_strace_ls, 120)
{
	char sfile[] = "/tmp/utrace-e2e-strace-XXXXXX", ufile[] = "/tmp/utrace-e2e-utrace-XXXXXX";
	char *sargv[] = { "strace", "-o", sfile, "ls", "-la", "/", NULL };
	char *uargv[] = { (char *)utrace(), "-s", "-o", ufile, "--", "ls", "-la", "/", NULL };
	char *stext, *utext;

	need_strace();
	close(mkstemp(sfile));
	close(mkstemp(ufile));
	CHECK_EQ(harness_run(sargv, NULL, NULL, 60), 0);
	CHECK_EQ(harness_run(uargv, NULL, NULL, 60), 0);
	stext = slurp(sfile);
	utext = slurp(ufile);
	CHECK(stext && utext);
	normalise(stext);
	normalise(utext);
	if (strcmp(stext, utext))
		harness_note("strace:\n%s\nutrace:\n%s", stext, utext);
	CHECK(!strcmp(stext, utext));
	unlink(sfile);
	unlink(ufile);
	free(stext);
	free(utext);
}

TEST_TIMEOUT(json_output, 60)
{
	char file[] = "/tmp/utrace-e2e-json-XXXXXX";
	char *argv[] = { (char *)utrace(),
			 "-s",
			 "openat,close,read",
			 "--format",
			 "json",
			 "-o",
			 file,
			 "--",
			 "cat",
			 "/nonexistent-utrace",
			 "/etc/hostname",
			 NULL };
	char *text, *line, *save = NULL;
	int n = 0, found_ok = 0, found_err = 0;

	close(mkstemp(file));
	/* cat fails on the missing file: the exit status is cat's */
	CHECK_EQ(harness_run(argv, NULL, NULL, 30), 1);
	text = slurp(file);
	CHECK(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		n++;
		CHECK_MSG(!strncmp(line, "{\"ts_ns\": ", 10), "%s", line);
		CHECK_MSG(line[strlen(line) - 1] == '}', "%s", line);
		CHECK(strstr(line, "\"type\": \"syscall\""));
		CHECK(strstr(line, "\"pid\": ") && strstr(line, "\"tid\": "));
		CHECK(strstr(line, "\"args\": ["));
		if (strstr(line, "\"probe\": \"syscall:openat\", \"name\": \"openat\", "
				 "\"args\": [\"AT_FDCWD\", \"/etc/hostname\", \"O_RDONLY\"], "
				 "\"ret\": 3, \"dur_ns\": "))
			found_ok++;
		if (strstr(line, "\"args\": [\"AT_FDCWD\", \"/nonexistent-utrace\", \"O_RDONLY\"], "
				 "\"ret\": -1, \"errno\": \"ENOENT\", \"dur_ns\": "))
			found_err++;
		if (strstr(line, "\"name\": \"close\""))
			CHECK_MSG(strstr(line, "\"args\": [3]") || strstr(line, "\"args\": [1]") ||
					  strstr(line, "\"args\": [2]"),
				  "%s", line);
	}
	CHECK_EQ(found_ok, 1);
	CHECK_EQ(found_err, 1);
	CHECK(n > 3);
	unlink(file);
	free(text);
}

TEST_TIMEOUT(text_decorations, 60)
{
	char file[] = "/tmp/utrace-e2e-text-XXXXXX";
	char *argv[] = { (char *)utrace(), "-tt", "-T", "-s", "openat", "-o", file, "--", "cat",
			 "/etc/hostname",  NULL };
	char *text, *p;
	int hh, mm, ss, us;
	double dur;

	close(mkstemp(file));
	CHECK_EQ(harness_run(argv, NULL, NULL, 30), 0);
	text = slurp(file);
	CHECK(text);
	p = strstr(text, "openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY) = 3 <");
	CHECK_MSG(p, "%s", text);
	/* the line starts with HH:MM:SS.uuuuuu and ends with <S.uuuuuu> */
	while (p > text && p[-1] != '\n')
		p--;
	CHECK_EQ(sscanf(p, "%d:%d:%d.%d openat", &hh, &mm, &ss, &us), 4);
	p = strstr(p, "= 3 <");
	CHECK(p && sscanf(p, "= 3 <%lf>", &dur) == 1 && dur >= 0 && dur < 5);
	CHECK(strstr(text, "+++ exited with 0 +++"));
	unlink(file);
	free(text);
}

TEST(exit_status)
{
	char *a[] = { (char *)utrace(), "-s", "-o", "/dev/null", "--", "sh", "-c", "exit 7", NULL };
	char *b[] = { (char *)utrace(), "-s", "-o", "/dev/null", "--", "sh", "-c",
		      "kill -9 $$",	NULL };

	CHECK_EQ(harness_run(a, NULL, NULL, 30), 7);
	CHECK_EQ(harness_run(b, NULL, NULL, 30), 128 + 9);
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

TEST(bad_input)
{
	char *a[] = { (char *)utrace(), "-s", "opn", "--", "true", NULL };
	char *b[] = { (char *)utrace(), "-s", "read,%bogus", "--", "true", NULL };
	char *c[] = { (char *)utrace(), "-s", "-p", "999999999", NULL };
	char *d[] = { (char *)utrace(), "-s", "--", "/nonexistent/program", NULL };
	char *err = NULL;

	CHECK_EQ(harness_run(a, NULL, &err, 30), 2);
	CHECK_MSG(strstr(err, "unknown syscall 'opn'") && count_lines(err) == 1, "%s", err);
	free(err);
	CHECK_EQ(harness_run(b, NULL, &err, 30), 2);
	CHECK_MSG(strstr(err, "unknown syscall class '%bogus'") && count_lines(err) == 1, "%s",
		  err);
	free(err);
	CHECK_EQ(harness_run(c, NULL, &err, 30), 1);
	CHECK_MSG(strstr(err, "no such process") && count_lines(err) == 1, "%s", err);
	free(err);
	CHECK(harness_run(d, NULL, &err, 30) != 0);
	CHECK_MSG(count_lines(err) == 1, "%s", err);
	free(err);
}

/* A process traced by strace cannot be attached to: one line, exit 1, untouched. */
TEST_TIMEOUT(already_traced, 60)
{
	char *sleeper = (char *)harness_build_path("tests/targets/s-sleeper");
	int out[2], st;
	char buf[128] = "", pidstr[32];
	pid_t spid, target = 0;
	char *err = NULL;
	FILE *f;

	need_strace();
	CHECK(pipe(out) == 0);
	spid = fork();
	if (spid == 0) {
		dup2(out[1], 1);
		execlp("strace", "strace", "-o", "/dev/null", sleeper, "1", "20", NULL);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	CHECK(fgets(buf, sizeof(buf), f));
	CHECK(sscanf(buf, "ready %d", &target) == 1);
	snprintf(pidstr, sizeof(pidstr), "%d", target);
	{
		char *argv[] = { (char *)utrace(), "-s", "-p", pidstr, NULL };

		CHECK_EQ(harness_run(argv, NULL, &err, 30), 1);
	}
	CHECK_MSG(strstr(err, "already traced") && count_lines(err) == 1, "%s", err);
	CHECK_EQ(kill(target, 0), 0);
	kill(target, SIGKILL);
	waitpid(spid, &st, 0);
	fclose(f);
	free(err);
}

static int tracer_pid(pid_t pid)
{
	char path[64], line[256];
	FILE *f;
	int t = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &t) == 1)
			break;
	fclose(f);
	return t;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * 100 rounds of attach + trace + detach on one multithreaded process:
 * even rounds detach with -d, odd ones with SIGINT. After each round the
 * process must be running and untraced; at the end it must finish and
 * report that none of its syscalls failed or returned a wrong value.
 */
TEST_TIMEOUT(attach_detach_100, 600)
{
	char *prog = (char *)harness_build_path("tests/targets/s-threads-write");
	int out[2], st, round;
	char buf[4096] = "", pidstr[32];
	pid_t target, tpid = 0;
	FILE *f;
	size_t len;

	CHECK(pipe(out) == 0);
	target = fork();
	if (target == 0) {
		dup2(out[1], 1);
		close(out[0]);
		execl(prog, prog, "8", "0", "40", NULL);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	CHECK(fgets(buf, sizeof(buf), f));
	CHECK(sscanf(buf, "ready %d", &tpid) == 1 && tpid == target);
	snprintf(pidstr, sizeof(pidstr), "%d", target);
	for (round = 0; round < 100; round++) {
		pid_t u;
		int ust;

		u = fork();
		if (u == 0) {
			int null = open("/dev/null", O_WRONLY);

			dup2(null, 1);
			if (round % 2 == 0)
				execl(utrace(), utrace(), "-s", "-o", "/dev/null", "-d", "0.05",
				      "-p", pidstr, NULL);
			else
				execl(utrace(), utrace(), "-s", "-o", "/dev/null", "-p", pidstr,
				      NULL);
			_exit(127);
		}
		if (round % 2) {
			int waited;

			/* SIGINT once utrace holds the target (before, it would kill utrace) */
			for (waited = 0; tracer_pid(target) != u && waited < 10000; waited++)
				sleep_ms(1);
			CHECK_MSG(tracer_pid(target) == u, "round %d: utrace never attached",
				  round);
			sleep_ms(20 + round % 7 * 5);
			kill(u, SIGINT);
		}
		CHECK(waitpid(u, &ust, 0) == u);
		CHECK_MSG(WIFEXITED(ust) && WEXITSTATUS(ust) == 0, "round %d: utrace status %#x",
			  round, ust);
		CHECK_MSG(kill(target, 0) == 0, "round %d: the target died", round);
		CHECK_MSG(tracer_pid(target) == 0, "round %d: still traced by %d", round,
			  tracer_pid(target));
	}
	CHECK(waitpid(target, &st, 0) == target);
	len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	fclose(f);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target status %#x: %s", st, buf);
	CHECK_MSG(!strncmp(buf, "ok threads=8", 12), "%s", buf);
}

/*
 * Launch mode with -d: no seccomp filter, so the detached command runs on
 * untraced and unharmed; utrace waits for it and exits with its status.
 */
TEST_TIMEOUT(launch_detach, 60)
{
	char file[] = "/tmp/utrace-e2e-detach-XXXXXX";
	char *argv[] = { (char *)utrace(),
			 "-s",
			 "-d",
			 "0.3",
			 "-o",
			 file,
			 "--",
			 "sh",
			 "-c",
			 "sleep 1; echo done; exit 3",
			 NULL };
	char *out = NULL, *text;

	close(mkstemp(file));
	CHECK_EQ(harness_run(argv, &out, NULL, 30), 3);
	CHECK_MSG(out && !strcmp(out, "done\n"), "%s", out ? out : "(null)");
	text = slurp(file);
	CHECK(text && strstr(text, "execve(\""));
	CHECK(!strstr(text, "+++ exited")); /* detached before the end */
	unlink(file);
	free(text);
	free(out);
}
