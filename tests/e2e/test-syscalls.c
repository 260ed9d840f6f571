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

/* Each test has its own targets and files. */
HARNESS_JOBS(3)

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
	buf = calloc(1, 2 * n + 1); /* room for normalise(): "0x3" becomes "ADDR" */
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
 * digits of tv_nsec (the time left of an interrupted sleep) by N. In place:
 * "0x3" becomes "ADDR", so @s needs room to grow (slurp() allocates twice).
 */
static int count_str(const char *hay, const char *needle)
{
	int n = 0;

	for (; hay && (hay = strstr(hay, needle)); hay += strlen(needle))
		n++;
	return n;
}

static bool norm_numbers; /* -y/-yy tests: inodes, ports, pids too (normalise()) */

static void normalise(char *s)
{
	char *copy = strdup(s), *r = copy, *w = s;

	while (*r) {
		/*
		 * -yy: inodes ("[2678190", "->2678191"), ports (":46503",
		 * "htons(46503)") and pids ("pid:3375", "pidfd_open(3375")
		 * differ from run to run: every number of 4 digits or more
		 */
		if (norm_numbers && isdigit((unsigned char)*r) && r > copy &&
		    !isalnum((unsigned char)r[-1]) && isdigit((unsigned char)r[1]) &&
		    isdigit((unsigned char)r[2]) && isdigit((unsigned char)r[3])) {
			while (isdigit((unsigned char)*r))
				r++;
			*w++ = 'N';
			continue;
		}
		/* pids of any length (a fresh machine's are short): after getpid() and pidfd_open( */
		if (norm_numbers &&
		    ((r - copy >= 11 && !strncmp(r - 11, "getpid() = ", 11)) ||
		     (r - copy >= 11 && !strncmp(r - 11, "pidfd_open(", 11))) &&
		    isdigit((unsigned char)*r)) {
			while (isdigit((unsigned char)*r))
				r++;
			*w++ = 'N';
			continue;
		}
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
		if (!strncmp(r, "si_pid=", 7)) { /* the shell's pid */
			memcpy(w, "si_pid=N", 8);
			w += 8;
			r += 7;
			while (isdigit((unsigned char)*r))
				r++;
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
	free(copy);
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
	/* /usr, not /: the other tests change /tmp (links, size, time) between the two runs */
	char *sargv[] = { "strace", "-o", sfile, "ls", "-la", "/usr", NULL };
	char *uargv[] = { (char *)utrace(), "-s", "-o", ufile, "--", "ls", "-la", "/usr", NULL };
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
	int n = 0, found_ok = 0, found_err = 0, exits = 0;

	close(mkstemp(file));
	/* cat fails on the missing file: the exit status is cat's */
	CHECK_EQ(harness_run(argv, NULL, NULL, 30), 1);
	text = slurp(file);
	CHECK(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		n++;
		CHECK_MSG(!strncmp(line, "{\"ts_ns\": ", 10), "%s", line);
		CHECK_MSG(line[strlen(line) - 1] == '}', "%s", line);
		if (strstr(line, "\"type\": \"exit\"")) { /* cat's end, last */
			CHECK_MSG(strstr(line, "\"exit_code\": 1}") && !save[0], "%s", line);
			exits++;
			continue;
		}
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
	CHECK_EQ(exits, 1);
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
	int out[2], in[2], st, round;
	char buf[4096] = "", pidstr[32];
	pid_t target, tpid = 0;
	FILE *f;
	size_t len;

	CHECK(pipe(out) == 0 && pipe2(in, O_CLOEXEC) == 0);
	target = fork();
	if (target == 0) {
		dup2(out[1], 1);
		dup2(in[0], 0);
		close(out[0]);
		/* it runs until we close its stdin: no lifetime to wait out or outlive */
		execl(prog, prog, "8", "0", "stdin", NULL);
		_exit(127);
	}
	close(out[1]);
	close(in[0]);
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
	close(in[1]);
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

/*
 * strace's spellings (docs/cli.md "strace spellings"): strace with
 * @sargs and utrace with @uargs on the same @cmd must print the same
 * lines, normalised as above. Return: the number of lines (each test
 * checks that it saw what it filters for).
 */
static int compare_text(char *const sargs[], char *const uargs[], char *const cmd[])
{
	char sfile[] = "/tmp/utrace-e2e-strace-XXXXXX", ufile[] = "/tmp/utrace-e2e-utrace-XXXXXX";
	char *sargv[48], *uargv[48], *stext, *utext;
	int n = 0, m = 0, i, rs, ru, lines;

	close(mkstemp(sfile));
	close(mkstemp(ufile));
	sargv[n++] = "strace";
	uargv[m++] = (char *)utrace();
	for (i = 0; sargs[i]; i++)
		sargv[n++] = sargs[i];
	for (i = 0; uargs[i]; i++)
		uargv[m++] = uargs[i];
	sargv[n++] = "-o";
	sargv[n++] = sfile;
	uargv[m++] = "-o";
	uargv[m++] = ufile;
	uargv[m++] = "--";
	for (i = 0; cmd[i]; i++) {
		sargv[n++] = cmd[i];
		uargv[m++] = cmd[i];
	}
	sargv[n] = NULL;
	uargv[m] = NULL;
	rs = harness_run(sargv, NULL, NULL, 60);
	ru = harness_run(uargv, NULL, NULL, 60);
	CHECK_MSG(rs == ru, "exit status: strace %d, utrace %d", rs, ru);
	stext = slurp(sfile);
	utext = slurp(ufile);
	CHECK(stext && utext);
	normalise(stext);
	normalise(utext);
	if (strcmp(stext, utext))
		harness_note("strace:\n%s\nutrace:\n%s", stext, utext);
	CHECK(!strcmp(stext, utext));
	lines = count_lines(utext);
	unlink(sfile);
	unlink(ufile);
	free(stext);
	free(utext);
	return lines;
}

/* head: every syscall it makes is decoded (cat's copy_file_range is not yet) */
static char *const CAT_TWO[] = {
	"head", "-c", "100", "/etc/hostname", "/nonexistent-utrace", NULL
};

/* -e trace=SET, --trace=SET with a /regex and a class, -e SET */
TEST_TIMEOUT(strace_trace_sets, 120)
{
	char *s1[] = { "-e", "trace=%file", NULL };
	char *s2[] = { "--trace=/^(openat|close)$,read", NULL };
	char *s3[] = { "-e", "openat", NULL };
	/* the last -e trace= wins, as in strace */
	char *s4[] = { "-e", "trace=openat", "-e", "trace=!%memory,%signal,/^(newfstatat|fstat)$",
		       NULL };

	need_strace();
	CHECK(compare_text(s1, s1, CAT_TWO) > 3);
	CHECK(compare_text(s2, s2, CAT_TWO) > 6);
	CHECK(compare_text(s3, s3, CAT_TWO) > 3);
	CHECK(compare_text(s4, s4, CAT_TWO) > 10);
}

/* -z, -Z, -e status=: the same lines kept as strace keeps */
TEST_TIMEOUT(strace_status, 120)
{
	char *z[] = { "-z", "-e", "trace=openat,close,read,exit_group", NULL };
	char *zz[] = { "-Z", "-e", "trace=openat,close,read,exit_group", NULL };
	char *sf[] = { "-e", "status=failed,unfinished", "-e", "trace=openat,exit_group", NULL };
	char *ns[] = { "--status=!successful", "-e", "trace=openat,exit_group", NULL };
	char *zl[] = { "--successful-only", "-e", "trace=openat", NULL };
	char *zs[] = { "--failed-only", "-e", "trace=openat", NULL };

	need_strace();
	CHECK(compare_text(z, z, CAT_TWO) > 5);
	CHECK(compare_text(zz, zz, CAT_TWO) > 2); /* the locale files, the missing file */
	CHECK(compare_text(sf, sf, CAT_TWO) >= 3);
	CHECK(compare_text(ns, ns, CAT_TWO) >= 3);
	CHECK(compare_text(zl, zl, CAT_TWO) > 2);
	CHECK(compare_text(zs, zs, CAT_TWO) > 1);
}

/* -P PATH: by name (openat) and through the descriptor (read, fstat, close) */
TEST_TIMEOUT(strace_trace_path, 120)
{
	char *p[] = { "-P", "/etc/hostname", NULL };
	char *pp[] = { "--trace-path=/etc/hostname", "-P", "/nonexistent-utrace", NULL };
	char *pl[] = { "-P", "/etc/hostname", NULL };
	char *cat[] = { "head", "-c", "3", "/etc/hostname", NULL };

	need_strace();
	CHECK(compare_text(p, p, cat) >= 4);
	CHECK(compare_text(pp, pp, cat) >= 4);
	CHECK(compare_text(pl, pl, cat) >= 4);
}

/* -X raw and -X verbose: numbers, and numbers with the names in a comment */
TEST_TIMEOUT(strace_const_style, 120)
{
	char *raw[] = { "-X", "raw", "-e", "trace=openat,mmap,newfstatat,read,close", NULL };
	char *verbose[] = { "--const-print-style=verbose", "-e",
			    "trace=openat,mmap,newfstatat,read,close", NULL };
	char *abbrev[] = { "-X", "abbrev", "-e", "trace=openat", NULL };
	/*
	 * every syscall of ls: stat modes, devices, futex ops, ioctls, rlimits,
	 * sockets; /usr, not /, whose /tmp (link count, size, time) the other
	 * tests change between the two runs
	 */
	char *verbose_all[] = { "-X", "verbose", NULL };
	char *ls[] = { "ls", "-la", "/usr", "/dev/null", NULL };

	need_strace();
	CHECK(compare_text(verbose_all, verbose_all, ls) > 100);
	CHECK(compare_text(raw, raw, CAT_TWO) > 10);
	CHECK(compare_text(verbose, verbose, CAT_TWO) > 10);
	CHECK(compare_text(abbrev, abbrev, CAT_TWO) > 3);
}

/* -e signal=SET: delivered, only the chosen ones shown */
TEST_TIMEOUT(strace_signal_set, 120)
{
	char *cmd[] = { "sh", "-c",
			"trap : USR1 USR2 HUP; kill -USR1 $$; kill -USR2 $$; kill -HUP $$", NULL };
	char *only[] = { "-e", "trace=none", "-e", "signal=SIGUSR2", NULL };
	char *neg[] = { "-e", "trace=none", "--signal=!USR1,HUP", NULL };
	char *num[] = { "-e", "trace=none", "-e", "signal=1,10", NULL };
	char *none[] = { "-e", "trace=none", "-e", "signal=none", NULL };

	need_strace();
	CHECK_EQ(compare_text(only, only, cmd), 2);
	CHECK_EQ(compare_text(neg, neg, cmd), 2);
	CHECK_EQ(compare_text(num, num, cmd), 3);
	CHECK_EQ(compare_text(none, none, cmd), 1);
}

/*
 * strace's -s N is a string size (no syscall is a number), --string-limit
 * too; -w and --seccomp-bpf are accepted. -S N is utrace's own spelling.
 */
TEST_TIMEOUT(strace_string_size, 120)
{
	char file[] = "/tmp/utrace-e2e-strsize-XXXXXX";
	char *s[] = { "-s", "5", "-e", "trace=read", NULL };
	char *us[] = { "-S", "5", "-e", "trace=read", NULL };
	char *sl[] = { "--string-limit=7", "-e", "trace=read", NULL };
	char *su[] = { "--string-limit", "7", "-e", "trace=read", NULL };
	/*
	 * strace wants -c with -w, and -f with --seccomp-bpf (then prefixes
	 * pids): utrace takes both as they are, and prints the same lines
	 */
	char *sw[] = { "-s", "64", "-e", "trace=read", NULL };
	char *w[] = { "-w", "--seccomp-bpf", "-s", "64", "-e", "trace=read", NULL };
	char *cmd[] = { "cat", file, NULL };
	int fd = mkstemp(file);

	need_strace();
	CHECK(fd >= 0);
	CHECK_EQ(write(fd,
		       "0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ\n",
		       73),
		 73);
	close(fd);
	CHECK(compare_text(s, s, cmd) > 3);
	CHECK(compare_text(s, us, cmd) > 3);
	CHECK(compare_text(sl, su, cmd) > 3);
	CHECK(compare_text(sw, w, cmd) > 3);
	unlink(file);
}

/*
 * Alone, a strace spelling traces syscalls (as strace would); with -f it
 * applies to nothing and says so. The clashing short options keep
 * utrace's meaning and name the utrace spelling on misuse, in one line,
 * exit status 2. Unknown options name utrace, not the build path.
 */
TEST(strace_misuse)
{
	static const struct {
		const char *args[6];
		const char *says;
	} cases[] = {
		{ { "-S", "calls", "--", "true" }, "-S is utrace's string size" },
		{ { "-r", "-c", "--", "true" }, "strace's -r (relative timestamps)" },
		{ { "-C", "-s", "-f", "main", "--", "true" },
		  "-C is strace's (the -c table and the events) with -s alone" },
		{ { "-ff", "-f", "main", "--", "true" },
		  "-ff (a file per thread) is for system calls" },
		{ { "-e", "inject=openat:signal=SIGUSR1", "--", "true" },
		  "-e inject= with signal= is not supported yet" },
		{ { "-e", "inject=openat", "--", "true" }, "give error=ERRNO or retval=N" },
		{ { "-e", "inject=openat:error=EFOO", "--", "true" },
		  "error= wants an errno name" },
		{ { "-e", "inject=openat:error=EIO:retval=1", "--", "true" },
		  "one error= or retval= only" },
		{ { "-e", "inject=openat:error=EIO:when=0", "--", "true" }, "when= wants first" },
		{ { "-e", "inject=openat:error=EIO:when=5..3", "--", "true" },
		  "when= wants first" },
		{ { "-e", "inject=opn:error=EIO", "--", "true" }, "unknown syscall 'opn'" },
		{ { "-e", "fault=openat:retval=1", "--", "true" }, "unknown 'retval='" },
		{ { "--decode-fds=socket", "--", "true" },
		  "--decode-fds=socket is not supported yet" },
		{ { "-y", "-f", "main", "--", "true" }, "add -s" },
		{ { "-e", "inject=openat:error=EIO", "-f", "main", "--", "true" },
		  "-e inject= applies to system calls" },
		{ { "-e", "abbrev=all", "--", "true" }, "-e abbrev= is not supported" },
		{ { "-e", "bogus=1", "--", "true" }, "unknown qualifier 'bogus'" },
		{ { "-e", "status=fine", "--", "true" }, "'fine' is not one of" },
		{ { "-e", "signal=SIGFOO", "--", "true" }, "unknown signal 'SIGFOO'" },
		{ { "-e", "trace=/^nosuch", "--", "true" }, "matches no syscall" },
		{ { "-X", "fancy", "--", "true" }, "expected raw, abbrev or verbose" },
		{ { "-b", "execve", "--", "true" }, "strace's -b execve" },
		{ { "-d", "-s", "--", "true" }, "UTRACE_LOG_LEVEL=debug" },
		{ { "-z", "-f", "main", "--", "true" }, "add -s" },
		{ { "-j", "--", "true" }, "utrace: invalid option -- 'j'" },
		{ { "--bogus", "--", "true" }, "utrace: unrecognized option '--bogus'" },
		/* strace's and ltrace's options utrace lacks: what they are, what to use */
		{ { "-D", "--", "true" },
		  "utrace: invalid option -- 'D': strace's -D (the tracer as a detached" },
		{ { "-E", "X=1", "--", "true" }, "use env VAR=VAL COMMAND" },
		{ { "--library=libm.so.6", "--", "true" },
		  "ltrace's --library LIB: use -f 'LIB:*'" },
		{ { "--relative-timestamps", "--", "true" }, "use -ttt or -T" },
		{ { "-p" }, "utrace: option requires an argument -- 'p'" },
		/* -k and -H with -s: refused, not ignored */
		{ { "-k", "-b", "kernel", "-s", "--", "true" },
		  "-k with -s is not available on the kernel backend yet" },
		{ { "-H", "-b", "kernel", "-s", "--", "true" },
		  "-H with -s is not available on the kernel backend yet" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[8] = { (char *)utrace() };
		char *err = NULL;
		int j;

		for (j = 0; j < 6 && cases[i].args[j]; j++)
			argv[j + 1] = (char *)cases[i].args[j];
		CHECK_MSG(harness_run(argv, NULL, &err, 30) == 2, "%s: %s", cases[i].args[0], err);
		/* getopt errors add "Try 'utrace --help'": our line is the first */
		CHECK_MSG(err && strstr(err, cases[i].says) && strncmp(err, "utrace: ", 8) == 0 &&
				  (count_lines(err) == 1 || strstr(err, "Try 'utrace --help'")),
			  "%s %s: %s", cases[i].args[0], cases[i].args[1] ? cases[i].args[1] : "",
			  err ? err : "");
		free(err);
	}
}

/* strace's long names of utrace's -c, -T, -k, -i, -ff, -p: the same */
TEST_TIMEOUT(strace_long_aliases, 60)
{
	char *argv[] = { (char *)utrace(),
			 "--summary-only",
			 "-e",
			 "trace=openat",
			 "--",
			 "cat",
			 "/etc/hostname",
			 NULL };
	char *targv[] = { (char *)utrace(),
			  "--syscall-times",
			  "-e",
			  "trace=openat",
			  "--",
			  "cat",
			  "/etc/hostname",
			  NULL };
	char *err = NULL;

	CHECK_EQ(harness_run(argv, NULL, &err, 30), 0);
	CHECK_MSG(err && strstr(err, "% time") && strstr(err, " openat\n") &&
			  !strstr(err, "openat(AT_FDCWD"),
		  "%s", err ? err : "");
	free(err);
	err = NULL;
	CHECK_EQ(harness_run(targv, NULL, &err, 30), 0);
	CHECK_MSG(err && strstr(err, "openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY) = 3 <0."), "%s",
		  err ? err : "");
	free(err);
}

/* -s 64 alone, like strace -s 64: every syscall, 64-byte strings */
TEST_TIMEOUT(strace_implies_syscalls, 60)
{
	char *argv[] = { (char *)utrace(), "-s", "64", "-z", "--", "cat", "/etc/hostname", NULL };
	char *err = NULL;

	CHECK_EQ(harness_run(argv, NULL, &err, 30), 0);
	CHECK_MSG(err && strstr(err, "openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY) = 3") &&
			  strstr(err, "+++ exited with 0 +++"),
		  "%s", err ? err : "");
	free(err);
}

/*
 * -e inject= and -e fault=, strace's: the same lines as strace's, the
 * injected calls marked "(INJECTED)", on a program that checks what it
 * gets (head's exit status and messages are compared too). --inject= in
 * strace's form is strace's, and a later expression overrides an earlier
 * one for the syscalls both name.
 */
TEST_TIMEOUT(strace_inject, 180)
{
	char *from3[] = { "-e", "inject=openat:error=EACCES:when=3+", NULL };
	char *read0[] = { "-e", "inject=read:retval=0:when=2", "-e", "trace=read,openat,close",
			  NULL };
	char *fault[] = { "-e", "fault=openat:when=2..3", "-e", "trace=openat", NULL };
	char *over[] = { "--inject=close:error=EIO", "-e", "inject=openat,close:retval=7:when=4",
			 NULL };
	char *cls[] = { "-e", "inject=%file:error=EPERM:when=2+3", "-e", "trace=%file", NULL };
	/*
	 * a retval= in the error range is a success to strace's decoder:
	 * "= -1 (INJECTED)" (close's is unsigned in strace: not compared)
	 */
	char *neg[] = { "-e", "inject=getppid:retval=-1", "-e", "trace=getppid", NULL };
	char *getppid3[] = { (char *)harness_build_path("tests/targets/s-getppid"), "3", NULL };
	char *num[] = { "-e", "inject=openat:error=4095:when=4", "-e", "trace=openat", NULL };
	/* only what is traced is tampered with, and counted: -e trace=, -P */
	char *untraced[] = { "-e", "trace=openat", "-e", "inject=read:error=EIO", NULL };
	char *path[] = { "-P", "/etc/hostname", "-e", "inject=read,fstat:error=EIO:when=1", NULL };

	need_strace();
	CHECK(compare_text(from3, from3, CAT_TWO) > 10);
	CHECK(compare_text(read0, read0, CAT_TWO) > 5);
	CHECK(compare_text(fault, fault, CAT_TWO) > 10); /* ld.so fails: 127 */
	CHECK(compare_text(over, over, CAT_TWO) > 10);
	CHECK(compare_text(cls, cls, CAT_TWO) > 3);
	CHECK_EQ(compare_text(neg, neg, getppid3), 4);
	CHECK(compare_text(num, num, CAT_TWO) >= 4);
	CHECK(compare_text(untraced, untraced, CAT_TWO) >= 4);
	CHECK(compare_text(path, path, CAT_TWO) >= 3);
}

/*
 * The calls of @expr (an -e inject= on getppid, shown alone) that strace
 * and utrace inject in s-getppid's @n getppid() calls: one character per
 * call, 'I' injected or '.', in *@s and *@u (static buffers).
 */
static void inject_pattern(const char *expr, int n, char **s, char **u)
{
	static char pat[2][256];
	char file[2][40] = { "/tmp/utrace-e2e-inj-s-XXXXXX", "/tmp/utrace-e2e-inj-u-XXXXXX" };
	char count[16], inject[128];
	const char *prog = harness_build_path("tests/targets/s-getppid");
	int k;

	snprintf(count, sizeof(count), "%d", n);
	snprintf(inject, sizeof(inject), "inject=getppid:%s", expr);
	for (k = 0; k < 2; k++) {
		char *argv[12], *text, *line;
		int a = 0, m = 0;

		argv[a++] = k ? (char *)utrace() : "strace";
		argv[a++] = "-e";
		argv[a++] = "trace=getppid";
		argv[a++] = "-e";
		argv[a++] = inject;
		argv[a++] = "-o";
		argv[a++] = file[k];
		if (k)
			argv[a++] = "--";
		argv[a++] = (char *)prog;
		argv[a++] = count;
		argv[a] = NULL;
		close(mkstemp(file[k]));
		CHECK_EQ(harness_run(argv, NULL, NULL, 60), 0);
		text = slurp(file[k]);
		CHECK(text);
		for (line = text; line && *line && m < 255; line = strchr(line, '\n')) {
			line += *line == '\n';
			if (strncmp(line, "getppid()", 9))
				continue;
			pat[k][m++] =
				strncmp(strchr(line, '\n') - 11, " (INJECTED)", 11) ? '.' : 'I';
		}
		pat[k][m] = '\0';
		free(text);
		unlink(file[k]);
	}
	*s = pat[0];
	*u = pat[1];
}

/* when=first[..last][+[step]]: the same calls as strace's, man strace's every form */
TEST_TIMEOUT(strace_inject_when, 180)
{
	static const struct {
		const char *expr, *want;
	} cases[] = {
		{ "retval=42", "IIIIIIIIII" },
		{ "retval=42:when=3", "..I......." },
		{ "retval=42:when=3+", "..IIIIIIII" },
		{ "retval=42:when=3+2", "..I.I.I.I." },
		{ "retval=42:when=3..5", "..III....." },
		{ "retval=42:when=3..5+", "..III....." },
		{ "retval=42:when=3..8+2", "..I.I.I..." },
		{ "error=EPERM:when=2..2", ".I........" },
		{ "error=EPERM:when=1+4:when=9", "........I." }, /* the last when= wins */
	};
	size_t i;

	need_strace();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s, *u;

		inject_pattern(cases[i].expr, 10, &s, &u);
		CHECK_MSG(!strcmp(s, cases[i].want), "%s: strace %s", cases[i].expr, s);
		CHECK_MSG(!strcmp(u, s), "%s: strace %s, utrace %s", cases[i].expr, s, u);
	}
}

/* JSON: "injected": true on the injected calls only; -c counts an injected error */
TEST_TIMEOUT(inject_json_summary, 60)
{
	char count[] = "6";
	const char *prog = harness_build_path("tests/targets/s-getppid");
	char *json[] = { (char *)utrace(),
			 "--format",
			 "json",
			 "-e",
			 "trace=getppid",
			 "-e",
			 "inject=getppid:error=EPERM:when=2+2",
			 "--",
			 (char *)prog,
			 count,
			 NULL };
	char *sum[] = { (char *)utrace(),
			"-c",
			"-e",
			"trace=getppid",
			"-e",
			"inject=getppid:error=EPERM:when=2+2",
			"--",
			(char *)prog,
			count,
			NULL };
	char *err = NULL;

	CHECK_EQ(harness_run(json, NULL, &err, 30), 0);
	CHECK_MSG(err && count_lines(err) == 7 && count_str(err, "\"type\": \"syscall\"") == 6 &&
			  count_str(err, "\"type\": \"exit\"") == 1,
		  "%s", err ? err : "");
	CHECK_EQ(count_str(err, "\"injected\": true"), 3);
	CHECK_EQ(count_str(err, "\"errno\": \"EPERM\", \"injected\": true"), 3);
	free(err);
	err = NULL;
	CHECK_EQ(harness_run(sum, NULL, &err, 30), 0);
	CHECK_MSG(err && strstr(err, " 6         3 getppid"), "%s", err ? err : "");
	free(err);
}

/*
 * -y, -yy, --decode-fds: every descriptor as strace decorates it, on
 * s-fds (a file, a pipe, /dev/null, Unix stream, datagram and abstract
 * sockets, TCP listener and connection, UDP, a pidfd); AT_FDCWD with the
 * working directory. A socket looked up once keeps its first details
 * (the UDP socket after connect()), as in strace.
 */
TEST_TIMEOUT(strace_decode_fds, 120)
{
	char sock[64];
	char *cmd[] = { (char *)harness_build_path("tests/targets/s-fds"), sock, NULL };
	char *ls[] = { "ls", "-d", "/", NULL };
	char *y[] = { "-y", NULL };
	char *yy[] = { "-yy", NULL };
	char *ly[] = { "--decode-fds=path", NULL };
	char *lyy[] = { "--decode-fds=all", NULL };
	char *ey[] = { "-e", "decode-fds=path", NULL };
	char *fy[] = { "-y", "-e", "trace=openat,newfstatat,getdents64", NULL };

	need_strace();
	/* absent before each run: s-fds creates it (bind) and removes it */
	snprintf(sock, sizeof(sock), "/tmp/utrace-e2e-fds-%d", (int)getpid());
	unlink(sock);
	norm_numbers = true;
	CHECK(compare_text(y, y, cmd) > 60);
	CHECK(compare_text(yy, yy, cmd) > 60);
	CHECK(compare_text(y, ly, cmd) > 60);
	CHECK(compare_text(yy, lyy, cmd) > 60);
	CHECK(compare_text(ey, y, cmd) > 60);
	CHECK(compare_text(fy, fy, ls) > 3);
	unlink(sock);
}

/* The lines of every @dir/@base.* file, normalised, sorted by file content, joined. */
static char *ff_files(const char *dir, const char *base, int *nr)
{
	char *texts[64], *all;
	size_t total = 1;
	int n = 0, i, j;
	char cmd[4200];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls %s | grep '^%s\\.[0-9]*$'", dir, base);
	p = popen(cmd, "r");
	CHECK(p);
	while (n < 64 && fgets(cmd, sizeof(cmd), p)) {
		char path[4400];

		cmd[strcspn(cmd, "\n")] = '\0';
		snprintf(path, sizeof(path), "%s/%s", dir, cmd);
		texts[n] = slurp(path);
		CHECK(texts[n]);
		normalise(texts[n]);
		total += strlen(texts[n]) + 8;
		n++;
	}
	pclose(p);
	for (i = 0; i < n; i++) /* the order of the tids is not the point */
		for (j = i + 1; j < n; j++)
			if (strcmp(texts[i], texts[j]) > 0) {
				char *x = texts[i];

				texts[i] = texts[j];
				texts[j] = x;
			}
	all = calloc(1, total);
	for (i = 0; i < n; i++) {
		strcat(all, texts[i]);
		strcat(all, "\n====\n");
		free(texts[i]);
	}
	*nr = n;
	return all;
}

/*
 * -ff -o FILE: a file per thread, FILE.TID, each with the lines strace's
 * has (s-threads-write: 8 threads and the main one); FILE itself is not
 * written. -ff without -o is -F: one output.
 */
TEST_TIMEOUT(strace_ff, 120)
{
	char sdir[] = "/tmp/utrace-e2e-ffs-XXXXXX", udir[] = "/tmp/utrace-e2e-ffu-XXXXXX";
	char sout[4200], uout[4200], cmd[8600];
	const char *prog = harness_build_path("tests/targets/s-threads-write");
	char *sargv[] = { "strace",	"-ff", "-o", sout, "-e", "trace=write,exit,exit_group",
			  (char *)prog, NULL };
	char *uargv[] = {
		(char *)utrace(), "-ff", "-o", uout, "-e", "trace=write,exit,exit_group", "--",
		(char *)prog,	  NULL
	};
	char *nargv[] = { (char *)utrace(),	  "-ff", "-e", "trace=exit_group", "--", "sh", "-c",
			  "sh -c 'exit 3'; true", NULL };
	char *stext, *utext, *err = NULL;
	int sn, un;

	need_strace();
	CHECK(mkdtemp(sdir) && mkdtemp(udir));
	snprintf(sout, sizeof(sout), "%s/t", sdir);
	snprintf(uout, sizeof(uout), "%s/t", udir);
	CHECK_EQ(harness_run(sargv, NULL, NULL, 60), 0);
	CHECK_EQ(harness_run(uargv, NULL, NULL, 60), 0);
	stext = ff_files(sdir, "t", &sn);
	utext = ff_files(udir, "t", &un);
	CHECK_EQ(sn, 9);
	CHECK_EQ(un, sn);
	if (strcmp(stext, utext))
		harness_note("strace:\n%s\nutrace:\n%s", stext, utext);
	CHECK(!strcmp(stext, utext));
	CHECK_MSG(access(uout, F_OK) != 0, "%s was created", uout);
	free(stext);
	free(utext);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", sdir, udir);
	CHECK_EQ(system(cmd), 0);
	/* no -o: -F, one output */
	CHECK_EQ(harness_run(nargv, NULL, &err, 30), 0);
	CHECK_MSG(err && count_str(err, "exit_group(3) = ?\n") == 1 &&
			  count_str(err, "exit_group(0) = ?\n") == 1,
		  "%s", err ? err : "");
	free(err);
}

/* strace's -C: the events and, at the end, the -c table */
TEST_TIMEOUT(strace_C, 60)
{
	char *argv[] = { (char *)utrace(), "-C", "-e", "trace=openat,read,close", "--",
			 "head",	   "-c", "3",  "/etc/hostname",		  NULL };
	char *err = NULL;
	const char *table;

	CHECK_EQ(harness_run(argv, NULL, &err, 30), 0);
	table = err ? strstr(err, "% time") : NULL;
	CHECK_MSG(table && strstr(err, "openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY) = 3\n") &&
			  strstr(err, "openat(AT_FDCWD, \"/etc/hostname\"") < table &&
			  strstr(table, " openat\n") && strstr(table, " read\n") &&
			  strstr(table, " total\n"),
		  "%s", err ? err : "");
	free(err);
}

/* @s without its SGR colour sequences ("\033[1m" ... "\033[0m"), in place */
static void strip_sgr(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == '\033' && s[1] == '[') {
			s += 2;
			while (*s && *s != 'm')
				s++;
			s += *s == 'm';
			continue;
		}
		*w++ = *s++;
	}
	*w = '\0';
}

/* "kill(1234, " becomes "kill(N, ": the shell's pid differs between runs */
static void kill_pid(char *s)
{
	char *p = strstr(s, "kill("), *d;

	if (!p)
		return;
	p += 5;
	for (d = p; isdigit((unsigned char)*d); d++)
		;
	if (d > p) {
		*p = 'N';
		memmove(p + 1, d, strlen(d) + 1);
	}
}

/*
 * --color always: names bold, a failure's "-1 ENOENT (...)" red, -T's
 * durations yellow, signals and exits magenta; without its colours the
 * text is strace's on the same command (and --color never has none).
 */
TEST_TIMEOUT(color_text, 120)
{
	char sfile[] = "/tmp/utrace-e2e-strace-XXXXXX", ufile[] = "/tmp/utrace-e2e-color-XXXXXX";
	char *cmd_sh = "kill -USR1 $$";
	char *sargv[] = { "strace", "-e",  "trace=openat,kill",
			  "-o",	    sfile, "--",
			  "sh",	    "-c",  "{ true; } </nonexistent-utrace; kill -USR1 $$",
			  NULL };
	char *uargv[] = { (char *)utrace(),
			  "--color",
			  "always",
			  "-e",
			  "trace=openat,kill",
			  "-o",
			  ufile,
			  "--",
			  "sh",
			  "-c",
			  "{ true; } </nonexistent-utrace; kill -USR1 $$",
			  NULL };
	char *targv[] = { (char *)utrace(),
			  "--color",
			  "always",
			  "-T",
			  "-e",
			  "trace=kill",
			  "-o",
			  ufile,
			  "--",
			  "sh",
			  "-c",
			  cmd_sh,
			  NULL };
	char *nargv[] = { (char *)utrace(),
			  "--color",
			  "never",
			  "-T",
			  "-e",
			  "trace=kill",
			  "-o",
			  ufile,
			  "--",
			  "sh",
			  "-c",
			  cmd_sh,
			  NULL };
	char *s, *u;

	need_strace();
	close(mkstemp(sfile));
	close(mkstemp(ufile));
	CHECK_EQ(harness_run(sargv, NULL, NULL, 60), 128 + SIGUSR1);
	CHECK_EQ(harness_run(uargv, NULL, NULL, 60), 128 + SIGUSR1);
	s = slurp(sfile);
	u = slurp(ufile);
	CHECK(s && u);
	CHECK_EQ(count_str(u, "\033[1mopenat\033[0m("), count_str(s, "openat("));
	CHECK_EQ(count_str(u, "\033[1mkill\033[0m("), 1);
	CHECK_EQ(count_str(u, "= \033[31m-1 ENOENT (No such file or directory)\033[0m"),
		 count_str(s, "= -1 ENOENT (No such file or directory)"));
	CHECK(count_str(s, "\"/nonexistent-utrace\", O_RDONLY) = -1 ENOENT") == 1);
	CHECK_EQ(count_str(u, "\033[35m--- SIGUSR1 {"), 1);
	CHECK_EQ(count_str(u, "\033[35m+++ killed by SIGUSR1 +++\n\033[0m"), 1);
	strip_sgr(u);
	normalise(s);
	normalise(u);
	kill_pid(s);
	kill_pid(u);
	if (strcmp(s, u))
		harness_note("strace:\n%s\nutrace:\n%s", s, u);
	CHECK_STREQ(u, s);
	free(s);
	free(u);
	CHECK_EQ(harness_run(targv, NULL, NULL, 60), 128 + SIGUSR1);
	u = slurp(ufile);
	CHECK_MSG(count_str(u, " \033[33m<0.") == 1, "%s", u);
	free(u);
	CHECK_EQ(harness_run(nargv, NULL, NULL, 60), 128 + SIGUSR1);
	u = slurp(ufile);
	CHECK_MSG(u && !strchr(u, '\033') && count_str(u, " <0.") == 1, "%s", u);
	free(u);
	unlink(sfile);
	unlink(ufile);
}

/*
 * JSON records (docs/json.md) against strace's text on the same command:
 * UTF-8 passed through and a string cut at -s bytes marked in
 * "truncated" (strace: "..."), the signal and the exit records, dur_ns on
 * every call that returned, and timestamps that jq 1.6 keeps exact ("ts",
 * ts_sec/ts_nsec: ts_ns itself is beyond 2^53).
 */
static const char *json_records_py =
	"import json, sys\n"
	"recs = [json.loads(l) for l in open(sys.argv[1])]\n"
	"raw = [l for l in open(sys.argv[1], encoding='utf-8')]\n"
	"w = [r for r in recs if r['type'] == 'syscall' and r['name'] == 'write']\n"
	"assert len(w) == 2, w\n"
	"assert w[0]['args'][1] == 'h\\u00e9llo w', w[0]\n"
	"assert w[0]['truncated'] == [1], w[0]\n"
	"assert w[1]['args'][1] == 'ok\\n' and 'truncated' not in w[1], w[1]\n"
	"for r in recs:\n"
	"    assert r['ts_ns'] == r['ts_sec'] * 10**9 + r['ts_nsec'], r\n"
	"    assert r['ts'] == '%d.%09d' % (r['ts_sec'], r['ts_nsec']), r\n"
	"    if r['type'] == 'syscall' and r['ret'] is not None:\n"
	"        assert isinstance(r['dur_ns'], int), r\n"
	"sig = [r for r in recs if r['type'] == 'signal']\n"
	"assert len(sig) == 1 and sig[0]['signal'] == 'SIGUSR1' and sig[0]['si_code'] == 'SI_USER', sig\n"
	"assert sig[0]['si_pid'] == sig[0]['pid'], sig\n"
	"ex = [r for r in recs if r['type'] == 'exit']\n"
	"assert len(ex) == 1 and ex[0]['signal'] == 'SIGUSR1' and ex[0]['core_dumped'] is False, ex\n"
	"assert recs[-1] is ex[0]\n"
	"assert '\\u00e9' in raw[[i for i, r in enumerate(recs) if r is w[0]][0]]\n"
	"print('ok', len(recs))\n";

TEST_TIMEOUT(json_records, 120)
{
	char sfile[] = "/tmp/utrace-e2e-strace-XXXXXX", ufile[] = "/tmp/utrace-e2e-json-XXXXXX";
	char *sh = "printf 'h\\303\\251llo w\\303\\266rld\\n'; printf 'ok\\n'; kill -USR1 $$";
	char *sargv[] = { "strace", "-e", "trace=write,kill",
			  "-s",	    "8",  "-o",
			  sfile,    "--", "sh",
			  "-c",	    sh,	  NULL };
	char *uargv[] = { (char *)utrace(),
			  "--format",
			  "json",
			  "-e",
			  "trace=write,kill",
			  "-s",
			  "8",
			  "-o",
			  ufile,
			  "--",
			  "sh",
			  "-c",
			  sh,
			  NULL };
	char *pyargv[] = { "python3", "-c", (char *)json_records_py, ufile, NULL };
	char *jqargv[] = { "jq", "-r",
			   "select(.type == \"syscall\") | \"\\(.ts) \\(.ts_sec) "
			   "\\(.ts_nsec) \\(.args[1])\"",
			   ufile, NULL };
	char *s, *u, *py = NULL, *jq = NULL, *line, *save = NULL;
	int lines = 0;

	need_strace();
	close(mkstemp(sfile));
	close(mkstemp(ufile));
	CHECK_EQ(harness_run(sargv, NULL, NULL, 60), 128 + SIGUSR1);
	CHECK_EQ(harness_run(uargv, NULL, NULL, 60), 128 + SIGUSR1);
	s = slurp(sfile);
	u = slurp(ufile);
	CHECK(s && u);
	/* what strace shows of the same calls: the first string cut, the signal */
	CHECK_MSG(strstr(s, "write(1, \"h\\303\\251llo w\"..., 14)") &&
			  strstr(s, "--- SIGUSR1 {si_signo=SIGUSR1, si_code=SI_USER, ") &&
			  strstr(s, "+++ killed by SIGUSR1 +++"),
		  "%s", s);
	CHECK_MSG(strstr(u, "\"args\": [1, \"h\xc3\xa9llo w\", 14], \"truncated\": [1], "
			    "\"ret\": 14, \"dur_ns\": "),
		  "%s", u);
	CHECK_EQ(harness_run(pyargv, &py, NULL, 60), 0);
	CHECK_MSG(py && !strncmp(py, "ok ", 3), "%s", py ? py : "");
	/* jq (1.6 here) reads "ts" as it is, and ts_sec, ts_nsec exactly */
	if (harness_run((char *[]){ "jq", "--version", NULL }, NULL, NULL, 10) == 0) {
		CHECK_EQ(harness_run(jqargv, &jq, NULL, 60), 0);
		for (line = strtok_r(jq, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			unsigned long long sec, nsec;
			char ts[64], want[160], *hit;

			CHECK_EQ(sscanf(line, "%63s %llu %llu", ts, &sec, &nsec), 3);
			snprintf(want, sizeof(want), "%llu.%09llu", sec, nsec);
			CHECK_STREQ(ts, want);
			/* the record's own ts_ns, digit for digit */
			snprintf(want, sizeof(want), "{\"ts_ns\": %llu%09llu, \"ts\": \"%s\"", sec,
				 nsec, ts);
			hit = strstr(u, want);
			CHECK_MSG(hit, "%s not in\n%s", want, u);
			lines++;
		}
		CHECK_EQ(lines, 3); /* two writes, the kill */
	}
	free(s);
	free(u);
	free(py);
	free(jq);
	unlink(sfile);
	unlink(ufile);
}

/* "[00007f367b685b1d] " becomes "[...b1d] ": the page offset, the same whatever ASLR did */
static void ip_norm(char *s)
{
	char *r = s, *w = s;

	while (*r) {
		size_t n = 0;

		if (r[0] == '[')
			while (n < 16 && isxdigit((unsigned char)r[1 + n]))
				n++;
		if (n == 16 && r[17] == ']') {
			w += sprintf(w, "[...%.3s]", r + 14);
			r += 18;
			continue;
		}
		*w++ = *r++;
	}
	*w = '\0';
}

/*
 * strace's -i: each syscall's instruction pointer, the signal's, none
 * after the end; -n: the syscall numbers (the last one on signal and exit
 * lines); the same lines as strace -n -i on the same command (the
 * addresses' page offsets).
 */
TEST_TIMEOUT(strace_instruction_pointer, 120)
{
	char sfile[] = "/tmp/utrace-e2e-strace-XXXXXX", ufile[] = "/tmp/utrace-e2e-ip-XXXXXX";
	char *sh = "{ true; } </nonexistent-utrace; kill -USR1 $$";
	char *sargv[] = { "strace", "-n", "-i", "-e", "trace=openat,kill", "-o", sfile, "--",
			  "sh",	    "-c", sh,	NULL };
	char *uargv[] = { (char *)utrace(),
			  "-n",
			  "-i",
			  "-e",
			  "trace=openat,kill",
			  "-o",
			  ufile,
			  "--",
			  "sh",
			  "-c",
			  sh,
			  NULL };
	char *s, *u;

	need_strace();
	close(mkstemp(sfile));
	close(mkstemp(ufile));
	CHECK_EQ(harness_run(sargv, NULL, NULL, 60), 128 + SIGUSR1);
	CHECK_EQ(harness_run(uargv, NULL, NULL, 60), 128 + SIGUSR1);
	s = slurp(sfile);
	u = slurp(ufile);
	CHECK(s && u);
	CHECK_MSG(count_str(u, "] openat(") >= 2 && count_str(u, "[ 257] [0000") >= 2 &&
			  count_str(u, "[  62] [0000") == 2 && count_str(u, "] kill(") == 1 &&
			  count_str(u, "] --- SIGUSR1 {") == 1 &&
			  count_str(u, "[  62] [????????????????] +++ killed by SIGUSR1 +++") == 1,
		  "%s", u);
	ip_norm(s);
	ip_norm(u);
	normalise(s);
	normalise(u);
	kill_pid(s);
	kill_pid(u);
	if (strcmp(s, u))
		harness_note("strace:\n%s\nutrace:\n%s", s, u);
	CHECK_STREQ(u, s);
	free(s);
	free(u);
	unlink(sfile);
	unlink(ufile);
}

/* utrace with @args (NULL-terminated): its status, stdout and stderr */
static int run_u(const char *const *args, char **out, char **err)
{
	char *argv[24] = { (char *)utrace() };
	int i;

	for (i = 0; args[i] && i < 22; i++)
		argv[i + 1] = (char *)args[i];
	return harness_run(argv, out, err, 60);
}

/* The calls column of -c's row for @name, -1 if there is none. */
static long row_calls(const char *text, const char *name)
{
	const char *line;
	size_t len = strlen(name);

	for (line = text; line && *line; line = strchr(line, '\n'), line += line ? 1 : 0) {
		const char *end = strchr(line, '\n');
		size_t l = end ? (size_t)(end - line) : strlen(line);
		double pct, secs;
		long usecs, calls;

		if (l > len && !strncmp(line + l - len, name, len) && line[l - len - 1] == ' ' &&
		    sscanf(line, "%lf %lf %ld %ld", &pct, &secs, &usecs, &calls) == 4)
			return calls;
	}
	return -1;
}

/* "@NAME [syscall:NAME]: N calls" of -H's text, and the sum of its bucket counts */
static long hist_calls(const char *text, const char *name, long *ret_sum)
{
	char head[96];
	const char *p, *line;
	long n = -1, sum = 0;

	snprintf(head, sizeof(head), "@%s [syscall:%s]: ", name, name);
	p = strstr(text, head);
	if (!p)
		return -1;
	n = atol(p + strlen(head));
	for (line = strchr(p, '\n'); line && line[1] == '['; line = strchr(line + 1, '\n')) {
		const char *c = strchr(line + 1, ')');

		if (c)
			sum += atol(c + 1);
	}
	*ret_sum = sum;
	return n;
}

/*
 * -s -H: a log2 latency histogram per syscall, as -H for functions; with
 * -c on the same run, each histogram holds the calls of the table's row,
 * its buckets add up to them; JSON "hist" records; the same with -f (one
 * stream: the functions' histograms, then the syscalls').
 */
TEST_TIMEOUT(syscall_histograms, 120)
{
	const char *args[] = { "-c", "-H", "-s", "openat,close,read", "--", "ls", "/", NULL };
	const char *json[] = {
		"--format", "json", "-H", "-e", "trace=openat", "--", "ls", "/", NULL
	};
	const char *mixed[] = { "-H", "-s", "close", "-f", "libc:opendir", "--", "ls", "/", NULL };
	static const char *const names[] = { "openat", "close", "read" };
	char *out = NULL, *err = NULL;
	long sum = 0, n;
	size_t i;

	CHECK_EQ(run_u(args, &out, &err), 0);
	for (i = 0; i < 3; i++) {
		n = hist_calls(err, names[i], &sum);
		CHECK_MSG(n > 0 && n == row_calls(err, names[i]) && sum == n,
			  "%s: -H says %ld calls (buckets %ld), -c %ld:\n%s", names[i], n, sum,
			  row_calls(err, names[i]), err);
	}
	CHECK(!strstr(err, "] openat(")); /* tables instead of the lines, as -c */
	free(out);
	free(err);

	out = err = NULL;
	CHECK_EQ(run_u(json, &out, &err), 0);
	CHECK_MSG(err && strstr(err, "\"type\": \"hist\"") && strstr(err, "\"syscall:openat\""),
		  "%s", err ? err : "");
	free(out);
	free(err);

	out = err = NULL;
	CHECK_EQ(run_u(mixed, &out, &err), 0);
	CHECK_MSG(hist_calls(err, "close", &sum) > 0 && strstr(err, "@opendir ["), "%s",
		  err ? err : "");
	free(out);
	free(err);
}

/*
 * The modules of -k's frame lines in @text, after the first line holding
 * @call, one basename per line: utrace's " > sym (obj) [0x...]" or
 * strace's " > /path/obj(sym+off) [0x...]". Malloc'ed.
 */
static char *stack_modules(const char *text, const char *call)
{
	const char *p = text ? strstr(text, call) : NULL, *line;
	char *out = calloc(1, 4096);
	size_t n = 0;

	if (!p || !out)
		return out;
	for (line = strchr(p, '\n'); line && !strncmp(line + 1, " > ", 3);
	     line = strchr(line + 1, '\n')) {
		const char *b = line + 4, *e = strchr(b, '\n'), *o, *c, *slash;

		if (!e)
			e = b + strlen(b);
		o = memchr(b, '(', (size_t)(e - b));
		if (o && o > b && o[-1] == ' ') { /* utrace: (obj) */
			c = memchr(o, ')', (size_t)(e - o));
			if (c && n + (size_t)(c - o) + 2 < 4096)
				n += (size_t)snprintf(out + n, 4096 - n, "%.*s\n", (int)(c - o - 1),
						      o + 1);
		} else if (o) { /* strace: /path/obj(...) */
			for (slash = o; slash > b && slash[-1] != '/'; slash--)
				;
			if (n + (size_t)(o - slash) + 2 < 4096)
				n += (size_t)snprintf(out + n, 4096 - n, "%.*s\n", (int)(o - slash),
						      slash);
		}
	}
	return out;
}

/*
 * -k with -s (strace -k): each call's stack, unwound by the CFI from the
 * stop (the libc wrapper first); the same frames, module by module, as
 * strace -k on the same program; JSON's "stack" array.
 */
TEST_TIMEOUT(strace_stack_k, 120)
{
	const char *args[] = { "-b", "ptrace", "-k", "-s", "write", "--", "/bin/echo", "hi", NULL };
	const char *json[] = { "--format", "json",	"-k", "-e", "trace=write",
			       "--",	   "/bin/echo", "hi", NULL };
	char *sargv[] = { "strace", "-k", "-e", "trace=write", "/bin/echo", "hi", NULL };
	char *out = NULL, *err = NULL, *sout = NULL, *serr = NULL, *um, *sm;

	CHECK_EQ(run_u(args, &out, &err), 0);
	CHECK_MSG(err && strstr(err, "write(1, \"hi\\n\", 3) = 3\n > __write+0x"), "%s",
		  err ? err : "");
	um = stack_modules(err, "write(1, ");
	CHECK_MSG(count_lines(um) >= 5, "%s", err ? err : "");
	if (harness_run(sargv, &sout, &serr, 60) == 0 && serr && strstr(serr, " > ")) {
		sm = stack_modules(serr, "write(1, ");
		CHECK_MSG(!strcmp(um, sm), "utrace:\n%s\nstrace -k:\n%s", um, sm);
		free(sm);
	} else {
		harness_note("strace -k gives no stacks here: utrace checked alone");
	}
	free(um);
	free(out);
	free(err);
	free(sout);
	free(serr);

	out = err = NULL;
	CHECK_EQ(run_u(json, &out, &err), 0);
	CHECK_MSG(err && strstr(err, "\"stack\": [\"libc.so.6:__write+0x"), "%s", err ? err : "");
	free(out);
	free(err);
}

/*
 * strace's live lines: a call another thread's lines come into is written
 * at its entry with " <unfinished ...>" and completed by "<... read
 * resumed>" at its exit, the arguments decoded at the exit after it (the
 * read buffer); one that nothing interrupts is one line. The same pieces
 * as strace -f on the same program.
 */
TEST_TIMEOUT(strace_unfinished_resumed, 120)
{
	char tgt[4096];
	const char *args[] = { "-b", "ptrace", "-s", "read,getppid,write", "--", tgt, NULL };
	char *sargv[] = { "strace", "-f", "-qq", "-e", "trace=read,getppid,write", tgt, NULL };
	/*
	 * in this order; the write's line may itself be cut by the read's
	 * resumption (the reader can be woken before the writer's exit stop)
	 */
	static const char *const pieces[] = { "read(3,  <unfinished ...>\n",
					      "] getppid() = ", "] write(4, \"x\", 1",
					      "<... read resumed>\"x\", 1) = 1\n" };
	char *out = NULL, *err = NULL, *sout = NULL, *serr = NULL;
	const char *p;
	size_t i;

	snprintf(tgt, sizeof(tgt), "%s/tests/targets/s-unfinished",
		 getenv("UTRACE_BUILD_DIR") ? getenv("UTRACE_BUILD_DIR") : "build");
	CHECK_EQ(run_u(args, &out, &err), 0);
	CHECK_MSG(err && (strstr(err, "] write(4, \"x\", 1) = 1\n") ||
			  (strstr(err, "] write(4, \"x\", 1 <unfinished ...>\n") &&
			   strstr(err, "<... write resumed>) = 1\n"))),
		  "%s", err ? err : "");
	for (i = 0, p = err; p && i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		p = strstr(p, pieces[i]);
		CHECK_MSG(p, "'%s' not after the one before it:\n%s", pieces[i], err ? err : "");
	}
	if (harness_run(sargv, &sout, &serr, 60) == 0) {
		/* strace pads " = " to a column: compare the pieces it writes the same */
		CHECK_MSG(serr && strstr(serr, "read(3,  <unfinished ...>") &&
				  strstr(serr, "<... read resumed>\"x\", 1)"),
			  "strace -f:\n%s", serr ? serr : "");
	}
	free(out);
	free(err);
	free(sout);
	free(serr);
}
