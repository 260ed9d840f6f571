/* SPDX-License-Identifier: MIT */
/*
 * test-trace.c - `utrace -f/-u/-r/--inject` end to end. The oracle is the
 * target itself: tests/targets/s-trace counts its own calls and prints the
 * counts, and the tracer's events (text, JSON, -c, -H, Chrome trace) must
 * agree with them exactly. JSON and Chrome files are checked with python3's
 * json module. Then bad input (one line, the right exit status), attach and
 * detach leaving the target working, and two programs a new user would
 * try: python3 and the sqlite3 shell (skipped when not installed).
 * Suite 'e2e', not parallel (ptrace).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

/* Each test has its own targets and files. */
HARNESS_JOBS(3)

TEST_TIMEOUT(text_counts_match_target, 120)
{
	const char *args[] = { "-f",	 "work",  "-f", "leaf", "-f", "answer", "--",
			       target(), "calls", "20", "3",	"10", NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(target_count(out, "work"), 50);
	CHECK_EQ(target_count(out, "leaf"), 50);
	CHECK_EQ(count(err, "] work(") - count(err, "] work() = "), 50); /* ( matches () */
	CHECK_EQ(count(err, "] work() = "), 50);
	CHECK_EQ(count(err, "] leaf(\"hello\")\n"), 50); /* DWARF: a char * is a string */
	CHECK_EQ(count(err, "] leaf() = 5\n"), 50);
	CHECK_EQ(count(err, "] answer()\n"), 4);
	CHECK_EQ(count(err, "] answer() = 7\n"), 4);
	CHECK(strstr(err, "] work(19)\n"));
	free(out);
	free(err);
}

/*
 * -v's last line on both backends: the probes' own hits (not the dynamic
 * linker's r_brk that ptrace also stops at), the points made in all (also
 * after the process is gone), and with -m the module's probes.
 */
TEST_TIMEOUT(verbose_counts_every_backend, 120)
{
	static const char *const backends[] = { "ptrace", "agent" };
	const char *mod = built_path("examples/modules/slowcalls.so");
	int b;

	for (b = 0; b < 2; b++) {
		const char *args[] = { "-b",   backends[b], "-v",     "-f",    "work", "-f",
				       "leaf", "--",	    target(), "calls", "3",    NULL };
		const char *margs[] = { "-b", backends[b], "-v",    "-m", mod,
					"--", target(),	   "calls", "3",  NULL };
		char *out = NULL, *err = NULL;

		CHECK_EQ(run_utrace(args, &out, &err), 0);
		CHECK_MSG(err && strstr(err, "utrace: 6 entry hits, 6 returns, 0 returns missed, 2 "
					     "probe points\n"),
			  "-b %s: %s", backends[b], err ? err : "");
		free(out);
		free(err);
		out = err = NULL;
		CHECK_EQ(run_utrace(margs, &out, &err), 0);
		CHECK_MSG(err && strstr(err, "utrace: 3 entry hits, "), "-b %s -m: %s", backends[b],
			  err ? err : "");
		free(out);
		free(err);
	}
}

TEST(text_format_timestamps_durations)
{
	const char *args[] = { "-tt", "-T", "-f", "work", "--", target(), "calls", "1", NULL };
	char *out = NULL, *err = NULL, *line;
	int hh, mm, ss, us, pid, pid2, x;
	unsigned int s0, us0;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	line = strstr(err, "work(0)");
	CHECK(line);
	while (line > err && line[-1] != '\n')
		line--;
	/* 12:00:01.000123 [4242] work(0) */
	CHECK_EQ(sscanf(line, "%2d:%2d:%2d.%6d [%d] work(%d)", &hh, &mm, &ss, &us, &pid, &x), 6);
	line = strchr(line, '\n') + 1;
	/* 12:00:01.000125 [4242] work() = 5 <0.000002> */
	CHECK_EQ(sscanf(line, "%2d:%2d:%2d.%6d [%d] work() = %d <%u.%6u>", &hh, &mm, &ss, &us,
			&pid2, &x, &s0, &us0),
		 8);
	CHECK_EQ(pid, pid2);
	CHECK_EQ(x, 5);
	free(out);
	free(err);
}

static const char *json_check =
	"import json, sys, collections\n"
	"ent = collections.Counter(); ret = collections.Counter(); probes = set()\n"
	"for line in open(sys.argv[1]):\n"
	"    e = json.loads(line)\n"
	"    for k in ('ts_ns', 'pid', 'tid', 'type', 'probe', 'name'):\n"
	"        assert k in e, (k, e)\n"
	"    if e['type'] in ('entry', 'return'): probes.add(e['probe'])\n"
	"    if e['type'] == 'entry':\n"
	"        assert isinstance(e['args'], list); ent[e['name']] += 1\n"
	"        if e['name'] == 'leaf': assert e['args'] == ['hello'], e\n"
	"    elif e['type'] == 'return':\n"
	"        assert 'ret' in e and isinstance(e['dur_ns'], int), e; ret[e['name']] += 1\n"
	"        if e['name'] == 'answer': assert e['ret'] == 7 and e['dur_ns'] > 0, e\n"
	"print('work', ent['work'], ret['work'], 'leaf', ent['leaf'], ret['leaf'],\n"
	"      'answer', ent['answer'], ret['answer'], 'probes', ' '.join(sorted(probes)))\n";

TEST_TIMEOUT(json_counts_match_target, 120)
{
	char file[] = "/tmp/utrace-e2e-trace-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "--format", "json", "-o", file,	   "-f", "work",
			       "-f",	   "leaf", "-r", "answer", "--", target(),
			       "calls",	   "20",   "3",	 "10",	   NULL };
	char *out = NULL, *err = NULL, *py = NULL;

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(target_count(out, "work"), 50);
	CHECK_EQ(run_python(json_check, file, &py), 0);
	note_lines(py);
	CHECK(strstr(py, "work 50 50 leaf 50 50 answer 0 4 probes s-trace:answer s-trace:leaf "
			 "s-trace:work\n"));
	unlink(file);
	free(out);
	free(err);
	free(py);
}

/* the -c table's row for @name: calls and errors columns */
static bool table_row(const char *text, const char *name, long *calls, long *errors)
{
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[256], *tok[10];
		int n = 0;

		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			for (char *p = strtok(buf, " "); p && n < 10; p = strtok(NULL, " "))
				tok[n++] = p;
		}
		line = nl ? nl + 1 : NULL;
		/* % seconds usecs/call calls [errors] min max name */
		if ((n != 7 && n != 8) || !isdigit((unsigned char)tok[0][0]) ||
		    strcmp(tok[n - 1], name))
			continue;
		*calls = atol(tok[3]);
		*errors = n == 8 ? atol(tok[4]) : 0;
		return true;
	}
	return false;
}

TEST_TIMEOUT(summary_matches_target, 120)
{
	const char *args[] = { "-c", "-f",     "work",	"-f", "leaf", "-f", "recurse",
			       "--", target(), "calls", "20", "3",    "10", NULL };
	char *out = NULL, *err = NULL;
	long calls = -1, errors = -1;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	note_lines(err);
	CHECK(!strstr(err, "work(")); /* no per-event lines */
	CHECK(strstr(err, "% time     seconds  usecs/call     calls    errors   min usecs   max "
			  "usecs function\n"));
	CHECK(table_row(err, "work", &calls, &errors));
	CHECK_EQ(calls, target_count(out, "work"));
	CHECK_EQ(errors, 0);
	CHECK(table_row(err, "leaf", &calls, &errors));
	CHECK_EQ(calls, target_count(out, "leaf"));
	CHECK(table_row(err, "recurse", &calls, &errors));
	CHECK_EQ(calls, 6);
	CHECK(table_row(err, "total", &calls, &errors));
	CHECK_EQ(calls, 106);
	free(out);
	free(err);
}

/*
 * A C++ exception thrown through frames whose return addresses -f hijacked
 * (tests/agent/s-agent-cxx): the unwind guards of the ptrace backend put
 * them back before the unwinder walks; without them: std::terminate, 134.
 */
TEST_TIMEOUT(cxx_exception_through_traced_frames, 120)
{
	char prog[4096];
	const char *args[] = { "-b", "ptrace", "-c", "-f", "probed_throw",
			       "--", prog,     "10", "10", NULL };
	char *out = NULL, *err = NULL;
	long calls = -1, errors = -1;

	snprintf(prog, sizeof(prog), "%s", harness_build_path("tests/agent/s-agent-cxx"));
	if (access(prog, X_OK))
		SKIP("no C++ compiler: %s not built", prog);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	note_lines(err);
	CHECK(!strstr(err, "terminate called"));
	CHECK(table_row(err, "probed_throw", &calls, &errors));
	/* every frame is unwound by the exception: 10 x 11 returns not seen */
	CHECK_MSG(strstr(err, "110 returns were not seen"), "%s", err);
	free(out);
	free(err);
}

static const char *hist_check =
	"import json, sys\n"
	"s = {}; h = {}\n"
	"for line in open(sys.argv[1]):\n"
	"    e = json.loads(line)\n"
	"    if e['type'] == 'summary':\n"
	"        assert e['min_ns'] <= e['max_ns'] <= e['total_ns'], e\n"
	"        s[e['name']] = e['calls']\n"
	"    elif e['type'] == 'hist':\n"
	"        b = e['buckets']\n"
	"        assert all(x['lo_ns'] < x['hi_ns'] and x['count'] > 0 for x in b), e\n"
	"        assert all(b[i]['hi_ns'] <= b[i+1]['lo_ns'] for i in range(len(b) - 1)), e\n"
	"        h[e['name']] = sum(x['count'] for x in b)\n"
	"    else:\n"
	"        raise Exception('event line with -c -H: %r' % e)\n"
	"print('summary', s.get('work'), s.get('leaf'), 'hist', h.get('work'), h.get('leaf'))\n";

TEST_TIMEOUT(hist_buckets_sum_to_calls, 120)
{
	char file[] = "/tmp/utrace-e2e-trace-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-c",   "-H", "--format", "json",  "-o", file, "-f", "work", "-f",
			       "leaf", "--", target(),	 "calls", "20", "3",  "10", NULL };
	const char *targs[] = {
		"-H", "-f", "work", "--", target(), "calls", "20", "3", "10", NULL
	};
	char *out = NULL, *err = NULL, *py = NULL;
	const char *p;
	long sum = 0;

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(run_python(hist_check, file, &py), 0);
	CHECK_STREQ(py, "summary 50 50 hist 50 50\n");
	free(out);
	free(err);
	free(py);
	unlink(file);

	/* text: "[1us, 2us)   12 |@@@@ |" rows under "@work [s-trace:work]: 50 calls" */
	CHECK_EQ(run_utrace(targs, &out, &err), 0);
	note_lines(err);
	CHECK(strstr(err, "@work [s-trace:work]: 50 calls"));
	for (p = strstr(err, "@work"); p && (p = strchr(p, '\n')) && p[1] == '['; p++) {
		const char *bar = strchr(p, ')');

		CHECK(bar && strchr(bar, '|'));
		sum += atol(bar + 1);
	}
	CHECK_EQ(sum, 50);
	free(out);
	free(err);
}

static const char *chrome_check =
	"import json, sys, collections\n"
	"d = json.load(open(sys.argv[1]))\n"
	"stacks = collections.defaultdict(list); b = collections.Counter()\n"
	"for e in d['traceEvents']:\n"
	"    assert {'ph', 'pid', 'tid'} <= set(e), e\n"
	"    if e['ph'] == 'B':\n"
	"        stacks[e['tid']].append((e['name'], e['ts'])); b[e['name']] += 1\n"
	"    elif e['ph'] == 'E':\n"
	"        n, ts = stacks[e['tid']].pop()\n"
	"        assert n == e['name'] and ts <= e['ts'], (n, e)\n"
	"assert not any(stacks.values()), stacks\n"
	"print('B/E pairs', b['work'], b['leaf'], b['recurse'])\n";

TEST_TIMEOUT(chrome_trace_is_valid, 120)
{
	char file[] = "/tmp/utrace-e2e-trace-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "--format", "chrome", "-o", file,      "-f", "work",
			       "-f",	   "leaf",   "-f", "recurse", "--", target(),
			       "calls",	   "5",	     "2",  "3",	      NULL };
	char *out = NULL, *err = NULL, *py = NULL;

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(run_python(chrome_check, file, &py), 0);
	CHECK_STREQ(py, "B/E pairs 11 11 6\n");
	unlink(file);
	free(out);
	free(err);
	free(py);
}

/* -s in a Chrome trace: syscalls are B/E pairs inside the function calls of their thread */
static const char *chrome_sc_check =
	"import json, sys, collections\n"
	"d = json.load(open(sys.argv[1]))\n"
	"stacks = collections.defaultdict(list); n = collections.Counter()\n"
	"for e in d['traceEvents']:\n"
	"    if e['ph'] == 'B':\n"
	"        stacks[e['tid']].append(e['name']); n[e['name']] += 1\n"
	"        if e['name'] == 'write': assert e['cat'] == 'syscall:write' and "
	"len(e['args']['args']) == 3, e\n"
	"    elif e['ph'] == 'E':\n"
	"        assert stacks[e['tid']].pop() == e['name'], e\n"
	"        if e['name'] == 'write': assert e['args']['ret'] > 0, e\n"
	"    elif e['ph'] == 'i':\n"
	"        n['i:' + e['name']] += 1\n"
	"assert not any(stacks.values()), stacks\n"
	"print('work', n['work'], 'write', n['write'], 'clone3', n['clone3'], 'exit_group', "
	"n['i:exit_group'])\n";

/*
 * --format chrome with -s: alone (strace's calls as duration events), and
 * with -f on each backend (one time line: the syscalls nested in the
 * calls). s-trace calls 5 2 3: 11 work() calls, 2 threads (clone3), its
 * two lines written at exit (2 writes), exit_group (an instant: no exit).
 */
TEST_TIMEOUT(chrome_with_syscalls, 120)
{
	static const char *const backends[] = { "ptrace", "agent" };
	char file[] = "/tmp/utrace-e2e-trace-XXXXXX";
	int fd = mkstemp(file), b;
	char *out = NULL, *err = NULL, *py = NULL;

	CHECK(fd >= 0);
	close(fd);
	{
		const char *args[] = { "--format", "chrome", "-o",
				       file,	   "-s",     "write,clone3,exit_group",
				       "--",	   target(), "calls",
				       "5",	   "2",	     "3",
				       NULL };

		CHECK_EQ(run_utrace(args, &out, &err), 0);
		CHECK_EQ(run_python(chrome_sc_check, file, &py), 0);
		CHECK_STREQ(py, "work 0 write 2 clone3 2 exit_group 1\n");
		free(out);
		free(err);
		free(py);
	}
	for (b = 0; b < 2; b++) {
		const char *args[] = { "-b",	backends[b], "--format", "chrome",
				       "-o",	file,	     "-s",	 "write,clone3,exit_group",
				       "-f",	"work",	     "--",	 target(),
				       "calls", "5",	     "2",	 "3",
				       NULL };

		CHECK_MSG(run_utrace(args, &out, &err) == 0, "%s: %s", backends[b], err);
		CHECK_EQ(run_python(chrome_sc_check, file, &py), 0);
		CHECK_MSG(py && !strcmp(py, "work 11 write 2 clone3 2 exit_group 1\n"), "%s: %s",
			  backends[b], py ? py : "");
		free(out);
		free(err);
		free(py);
	}
	unlink(file);
}

TEST_TIMEOUT(inject_return_value, 120)
{
	const char *args[] = { "--inject", "answer=42@2", "-f", "answer", "--",
			       target(),   "calls",	  "1",	NULL };
	const char *args2[] = { "--inject", "answer=-1", "--", target(), "calls", "1", NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK(strstr(out, "answers=7,42,7,42\n"));
	CHECK_EQ(count(err, "] answer()\n"), 4);
	CHECK_EQ(count(err, "] answer() = 42 (injected)\n"), 2);
	CHECK_EQ(count(err, "] answer() = 7\n"), 2);
	free(out);
	free(err);
	/* without -f: the injected calls are shown anyway */
	CHECK_EQ(run_utrace(args2, &out, &err), 0);
	CHECK(strstr(out, "answers=-1,-1,-1,-1\n"));
	CHECK_EQ(count(err, "] answer() = -1 (injected)\n"), 4);
	free(out);
	free(err);
}

TEST(exit_status_of_command)
{
	const char *args[] = { "-f", "work", "--", target(), "exit", "7", NULL };
	const char *args2[] = { "-f", "libc:malloc", "--", "sh", "-c", "kill -TERM $$", NULL };
	const char *args3[] = { "-f", "libc:malloc",	   "-d", "0.2", "--", "sh",
				"-c", "sleep 0.6; exit 9", NULL };
	const char *args4[] = { "-b", "agent", "-f", "libc:malloc", "-d", "0.001",
				"--", "sh",    "-c", "exit 9",	    NULL };
	char *err = NULL;
	int i, rc;

	CHECK_EQ(run_utrace(args, NULL, &err), 7);
	CHECK(strstr(err, "] work(1)\n"));
	free(err);
	/* killed by a signal: 128 + signo */
	CHECK_EQ(run_utrace(args2, NULL, &err), 128 + SIGTERM);
	free(err);
	/* detached by -d: the command runs on, utrace waits and exits with its status */
	CHECK_EQ(run_utrace(args3, NULL, &err), 9);
	free(err);
	/*
	 * -d over before the command ends, on a loaded machine even before it
	 * ran: with the agent the command could end during the DETACH, reaped
	 * there, and utrace said 0 (9 times in 10 with -d 0.001).
	 */
	for (i = 0; i < 5; i++) {
		CHECK_MSG((rc = run_utrace(args4, NULL, &err)) == 9, "run %d: exit %d: %s", i, rc,
			  err);
		free(err);
	}
}

/* one line on stderr, starting with "utrace: " and containing @what */
static void one_line_error(const char *const *args, int status, const char *what)
{
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), status);
	CHECK_MSG(count_lines(err) == 1 && !strncmp(err, "utrace: ", 8) && strstr(err, what),
		  "stderr: %s", err);
	CHECK_STREQ(out, "");
	free(out);
	free(err);
}

TEST(bad_input_one_line)
{
	const char *nosuch[] = { "-f", "no_such_function", "--", target(), "calls", NULL };
	const char *nolib[] = { "-f", "libc:no_such_function", "--", target(), "calls", NULL };
	const char *bad[] = { "-f", "libc:", "--", target(), "calls", NULL };
	const char *agent[] = { "-b", "agent", "-f", "work", "-p", "1", NULL };
	const char *kernel[] = { "-b",	 "kernel", "--format", "chrome", "-f",
				 "work", "--",	   target(),   "calls",	 NULL };
	const char *inj[] = { "--inject", "answer=forty", "--", target(), "calls", NULL };
	const char *cmd[] = { "-f", "work", "--", "/no/such/program", NULL };
	const char *mod[] = { "-m", "x.so", "--", target(), "calls", NULL };

	one_line_error(nosuch, 2, "probe 'no_such_function': no such function in");
	one_line_error(nolib, 2, "probe 'libc:no_such_function': matches nothing in 'libc'");
	one_line_error(bad, 2, "bad spec 'libc:'");
	one_line_error(agent, 1, "cannot load the agent into pid 1: ");
	/* -b kernel does not do everything yet */
	one_line_error(kernel, 1, "--format chrome is not supported with -b kernel yet");
	one_line_error(inj, 2, "bad --inject 'answer=forty'");
	one_line_error(cmd, 127, "cannot run '/no/such/program'"); /* a shell's 127 */
	one_line_error(mod, 2, "module 'x.so': No such file"); /* tests/e2e/test-modules.c */
}

TEST(gone_pid_one_line)
{
	pid_t pid = fork();
	char p[16];
	const char *args[] = { "-f", "work", "-p", p, NULL };

	CHECK(pid >= 0);
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0); /* reaped: the pid is gone */
	snprintf(p, sizeof(p), "%d", (int)pid);
	one_line_error(args, 1, "no such process");
}

TEST_TIMEOUT(attach_detach_target_runs_on, 120)
{
	struct bg a = bg_start(), b = bg_start();
	char pids[32], ap[40], bp[40];
	const char *args[] = { "-f", "work", "-p", pids, "-d", "1", NULL };
	char *out = NULL, *err = NULL;

	snprintf(pids, sizeof(pids), "%d,%d", (int)a.pid, (int)b.pid);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	snprintf(ap, sizeof(ap), "[%d] work(", (int)a.pid);
	snprintf(bp, sizeof(bp), "[%d] work(", (int)b.pid);
	CHECK(count(err, ap) > 10);
	CHECK(count(err, bp) > 10);
	bg_finish(&a);
	bg_finish(&b);
	free(out);
	free(err);
}

TEST_TIMEOUT(sigint_detaches, 120)
{
	struct bg a = bg_start();
	char pid[16], file[] = "/tmp/utrace-e2e-trace-XXXXXX";
	int fd = mkstemp(file), status;
	pid_t u;
	char *text;

	CHECK(fd >= 0);
	snprintf(pid, sizeof(pid), "%d", (int)a.pid);
	u = fork();
	CHECK(u >= 0);
	if (u == 0) {
		dup2(fd, 2);
		execl(utrace(), "utrace", "-f", "work", "-f", "leaf", "-p", pid, (char *)NULL);
		_exit(99);
	}
	/* SIGINT once it traces: its events are in the file (however slow the machine) */
	for (;;) {
		text = read_file(file);
		if (text && count(text, "] leaf(\"hello\")\n") > 10)
			break;
		free(text);
		CHECK_MSG(waitpid(u, &status, WNOHANG) == 0, "utrace ended: %#x", status);
		usleep(10 * 1000);
	}
	free(text);
	kill(u, SIGINT);
	CHECK(waitpid(u, &status, 0) == u);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "utrace status %#x", status);
	text = read_file(file);
	CHECK(text && count(text, "] leaf(\"hello\")\n") > 10);
	bg_finish(&a);
	unlink(file);
	free(text);
}

TEST_TIMEOUT(stack_with_k, 60)
{
	const char *args[] = { "-k", "-f", "leaf", "--", target(), "calls", "1", NULL };
	char *out = NULL, *err = NULL;
	const char *p;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	note_lines(err);
	p = strstr(err, "] leaf(\"hello\")\n");
	CHECK(p);
	p = strchr(p, '\n') + 1;
	CHECK(!strncmp(p, " > work+0x", 10));
	CHECK(strstr(p, " > do_calls+0x"));
	CHECK(strstr(p, " > main+0x"));
	free(out);
	free(err);
}

/*
 * -k with the callers probed too (ptrace): their return addresses are the
 * return probes' trampoline in the stack, which has no unwind info; the
 * unwinder reads the real ones (utrace_probe_ctx__real_return())
 */
TEST_TIMEOUT(stack_through_return_probes, 60)
{
	const char *args[] = { "-b", "ptrace", "-k", "-f",     "recurse", "-f", "work",
			       "-f", "leaf",   "--", target(), "calls",	  "1",	NULL };
	char *out = NULL, *err = NULL;
	const char *p;
	int i;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	/* recurse(0) called by recurse(1) ... recurse(5) called by do_calls */
	p = strstr(err, "] recurse(0)\n");
	CHECK(p);
	p = strchr(p, '\n');
	for (i = 0; i < 5 && p; i++, p = strchr(p + 1, '\n'))
		CHECK_MSG(!strncmp(p + 1, " > recurse+0x", 13), "frame %d: %.60s", i, p + 1);
	CHECK(p && !strncmp(p + 1, " > do_calls+0x", 14));
	p = strstr(err, "] leaf(\"hello\")\n > work+0x");
	CHECK(p);
	p = strchr(p + 18, '\n');
	CHECK(p && !strncmp(p + 1, " > do_calls+0x", 14));
	free(out);
	free(err);
}

/*
 * The function names of the frames in @text: utrace's -k lines after the
 * first line that has @after (" > c+0x10 (s-nofp) [0x...]": "c"), or
 * gdb's bt from frame #1 on ("#1  0x... in c (s=...) at ...": "c"); one
 * per line, malloc'ed.
 */
static char *frame_names(const char *text, const char *after, bool gdb)
{
	const char *p = text ? strstr(text, after) : NULL;
	size_t cap = 4096, len = 0;
	char *names = calloc(1, cap);

	if (!p || !names)
		return names;
	p = strchr(p, '\n');
	while (p && *++p) {
		const char *name, *end;

		if (gdb) {
			if (*p != '#' || !strncmp(p, "#0 ", 3)) {
				p = strchr(p, '\n');
				continue;
			}
			name = strstr(p, " in ");
			if (!name || name > strchr(p, '\n'))
				break;
			name += 4;
			end = name + strcspn(name, " \n");
		} else {
			if (strncmp(p, " > ", 3))
				break;
			name = p + 3;
			end = name + strcspn(name, "+ \n");
		}
		if (len + (size_t)(end - name) + 2 > cap)
			break;
		memcpy(names + len, name, (size_t)(end - name));
		len += (size_t)(end - name);
		names[len++] = '\n';
		p = strchr(p, '\n');
	}
	return names;
}

/* libc's separate debug file is installed (its local symbols: __libc_start_call_main) */
static bool have_libc_dbg(void)
{
	char *argv[] = { "dpkg-query", "-W", "-f=${Status}", "libc6-dbg", NULL };
	char *out = NULL;
	bool ok = harness_run(argv, &out, NULL, 10) == 0 && out && strstr(out, "ok installed");

	free(out);
	return ok;
}

/*
 * -k through code built without frame pointers (s-nofp: -O2
 * -fomit-frame-pointer, like Debian's libc): the CFI unwinder gives every
 * caller of libc's strtol(), c b a main and on through libc, where a
 * frame-pointer walk stopped after c. gdb's bt (when installed) names the
 * same frames in the same order. glibc exports __libc_start_main_impl as
 * __libc_start_main: gdb names the DWARF function, utrace the symbol.
 */
TEST_TIMEOUT(stack_without_frame_pointers, 120)
{
	const char *prog = built_path("tests/targets/s-nofp");
	const char *args[] = { "-b", "ptrace", "-k", "-f", "libc:strtol", "--", prog, "1", NULL };
	const char *two[] = { "-b",	     "ptrace", "-k", "-w", "2", "-f",
			      "libc:strtol", "--",     prog, "1",  NULL };
	char *gargv[] = { "gdb",
			  "-nx",
			  "-batch",
			  "-ex",
			  "set debuginfod enabled off",
			  "-ex",
			  "set breakpoint pending on",
			  "-ex",
			  "set backtrace past-main on",
			  "-ex",
			  "break strtol",
			  "-ex",
			  "run",
			  "-ex",
			  "bt",
			  "--args",
			  (char *)prog,
			  "1",
			  NULL };
	char *gversion[] = { "gdb", "--version", NULL };
	char *out = NULL, *err = NULL, *names, *gout = NULL, *gnames;
	const char *hit = "] strtol(\"42\", NULL, 10)\n";
	bool dbg = have_libc_dbg();

	unsetenv("DEBUGINFOD_URLS"); /* no network: libdw would ask a debuginfod server */
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK(strstr(out, "sum 48\n"));
	names = frame_names(err, hit, false);
	CHECK(names);
	note_lines(names);
	CHECK_MSG(!strncmp(names, "c\nb\na\nmain\n", 11), "frames:\n%s", names);
	if (dbg)
		CHECK_MSG(!strncmp(names, "c\nb\na\nmain\n__libc_start_call_main\n", 34),
			  "frames:\n%s", names);
	else
		harness_note("libc6-dbg is not installed: libc's local symbols are not checked");
	free(out);
	free(err);
	/* ltrace's -w N: N frames */
	CHECK_EQ(run_utrace(two, &out, &err), 0);
	free(names);
	names = frame_names(err, hit, false);
	CHECK_STREQ(names, "c\nb\n");
	free(out);
	free(err);
	free(names);
	if (harness_run(gversion, NULL, NULL, 30) != 0) {
		harness_note("gdb is not installed: no comparison with its bt");
		return;
	}
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(harness_run(gargv, &gout, NULL, 60), 0);
	names = frame_names(err, hit, false);
	gnames = frame_names(gout, "\n#0 ", true);
	CHECK(names && gnames && *gnames);
	if (!dbg) { /* libc's frames unnamed on one side or both: the program's */
		char *cut = strstr(gnames, "main\n");

		if (cut)
			cut[5] = '\0';
		names[strlen(gnames) < strlen(names) ? strlen(gnames) : strlen(names)] = '\0';
	} else {
		char *impl = strstr(gnames, "__libc_start_main_impl\n");

		if (impl) /* the same function: "__libc_start_main\n" */
			memmove(impl + 17, impl + 22, strlen(impl + 22) + 1);
	}
	CHECK_MSG(!strcmp(names, gnames), "utrace:\n%sgdb:\n%s", names, gnames);
	free(out);
	free(err);
	free(gout);
	free(names);
	free(gnames);
}

/*
 * -k on the agent (ABI 12): the registers and the top of the stack copied
 * at the hit, unwound on the host by the same CFI unwinder, give the
 * frames the ptrace backend gives: for a run that exits before its
 * records are read (s-nofp 1: the modules are those reported while it
 * lived), at every hit of a longer one, and with return probes on the
 * callers (their hijacked return addresses put back in the copy).
 */
TEST_TIMEOUT(stack_without_frame_pointers_agent, 120)
{
	const char *prog = built_path("tests/targets/s-nofp");
	const char *pt[] = { "-b", "ptrace", "-k", "-f", "libc:strtol", "--", prog, "1", NULL };
	const char *ag[] = { "-b", "agent", "-k", "-f", "libc:strtol", "--", prog, "1", NULL };
	const char *many[] = { "-b", "agent", "-k", "-f", "libc:strtol", "--", prog, "300", NULL };
	const char *rets[] = { "-b", "agent", "-k", "-f", "libc:strtol", "-f", "b",
			       "-f", "c",     "--", prog, "1",		 NULL };
	const char *hit = "] strtol(\"42\", NULL, 10)\n";
	char *out = NULL, *err = NULL, *want, *names;

	unsetenv("DEBUGINFOD_URLS");
	CHECK_EQ(run_utrace(pt, &out, &err), 0);
	want = frame_names(err, hit, false);
	CHECK_MSG(want && !strncmp(want, "c\nb\na\nmain\n", 11), "ptrace:\n%s", want);
	free(out);
	free(err);
	CHECK_EQ(run_utrace(ag, &out, &err), 0);
	CHECK(strstr(out, "sum 48\n"));
	names = frame_names(err, hit, false);
	note_lines(names);
	CHECK_MSG(names && !strcmp(names, want), "agent:\n%sptrace:\n%s", names, want);
	free(out);
	free(err);
	free(names);
	CHECK_EQ(run_utrace(many, &out, &err), 0);
	CHECK_EQ(count(err, hit), 300);
	CHECK_EQ(count(err, " > main+"), 300);
	CHECK_EQ(count(err, " > a+"), 300);
	free(out);
	free(err);
	CHECK_EQ(run_utrace(rets, &out, &err), 0);
	names = frame_names(err, hit, false);
	CHECK_MSG(names && !strcmp(names, want), "agent, c and b probed:\n%sptrace:\n%s", names,
		  want);
	free(out);
	free(err);
	free(names);
	free(want);
}

/*
 * -k on the agent with hits on a sigaltstack (s-altstack's handler calls
 * hot() there), on the main thread and on threads: the copy is of the
 * stack the hit runs on, and the unwind goes through the signal frame
 * (handler, then the kernel's __restore_rt); every hit of the program's
 * own loop has its callers (phase and main on the main thread,
 * thread_main and start_thread on the threads).
 */
TEST_TIMEOUT(stack_agent_altstack_threads, 120)
{
	const char *prog = built_path("tests/targets/s-altstack");
	const char *args[] = { "-b", "agent", "-k",    "-f",   "hot", "--",
			       prog, "300",   "01234", "2000", NULL };
	char *out = NULL, *err = NULL;
	long calls;

	unsetenv("DEBUGINFOD_URLS");
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK(out && strstr(out, "hot="));
	calls = count(err, "] hot(2000, ");
	CHECK_EQ(calls, 5 * 300);
	/* (more: a handler's hits that unwound through to the interrupted loop) */
	CHECK(count(err, " > loop+") >= calls);
	CHECK(count(err, " > phase+") + count(err, " > thread_main+") >= calls);
	CHECK(count(err, " > start_thread+") >= 3 * 300);
	if (count(err, "] hot(50, ") + count(err, "] hot(100, ")) {
		CHECK(strstr(err, " > handler+"));
		CHECK(strstr(err, " > __restore_rt+"));
	} else {
		harness_note("no hit from a signal handler in this run");
	}
	free(out);
	free(err);
}

TEST_TIMEOUT(libc_malloc_args, 60)
{
	const char *args[] = { "-f",	"libc:malloc", "-f", "libzz:nothing", "--", target(),
			       "calls", "5",	       NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK(strstr(err, "utrace: warning: probe 'libzz:nothing': 'libzz' is not loaded yet"));
	CHECK(strstr(err, "] malloc(100)\n"));
	CHECK(strstr(err, "] malloc(104)\n"));
	CHECK(count(err, "] malloc(") == 2 * count(err, "] malloc() = 0x")); /* ( matches () too */
	free(out);
	free(err);
}

TEST_TIMEOUT(new_user_python3, 120)
{
	const char *args[] = { "-f", "libc:malloc", "-c", "--", python3(), "-c", "pass", NULL };
	char *out = NULL, *err = NULL;
	long calls = 0, errors = 0;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	note_lines(err);
	CHECK(table_row(err, "malloc", &calls, &errors));
	CHECK(calls > 100);
	CHECK_EQ(errors, 0);
	free(out);
	free(err);
}

/*
 * The code of @lib's executable mapping in @pid (malloc'ed, *@len bytes),
 * or NULL while it is not mapped.
 */
static char *lib_code(pid_t pid, const char *lib, size_t *len)
{
	char path[64], line[4096], *buf = NULL;
	unsigned long long a, b;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char prot[8];

		if (sscanf(line, "%llx-%llx %7s", &a, &b, prot) != 3 || prot[2] != 'x' ||
		    !strstr(line, lib))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		fd = open(path, O_RDONLY);
		*len = (size_t)(b - a);
		buf = malloc(*len);
		if (fd < 0 || !buf || pread(fd, buf, *len, (off_t)a) != (ssize_t)*len) {
			free(buf);
			buf = NULL;
		}
		if (fd >= 0)
			close(fd);
		break;
	}
	if (f)
		fclose(f);
	return buf;
}

TEST_TIMEOUT(new_user_sqlite3, 120)
{
	char *ver[] = { "sqlite3", "-version", NULL };
	int pin[2], pout[2], status;
	char pid[16], buf[256] = "";
	const char *args[] = { "-f", "sqlite3_step", "-p", pid, "-d", "3", NULL };
	const char *sql = "create table t(a); insert into t values(1),(2),(3);"
			  " select * from t;\n";
	char *out = NULL, *err = NULL, *code;
	size_t code_len = 0;
	pid_t sq, u;
	ssize_t n, len = 0;

	if (harness_run(ver, NULL, NULL, 10) != 0)
		SKIP("sqlite3 is not installed");
	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	sq = fork();
	CHECK(sq >= 0);
	if (sq == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execlp("sqlite3", "sqlite3", ":memory:", (char *)NULL);
		_exit(99);
	}
	close(pin[0]);
	close(pout[1]);
	/* handshakes, not sleeps: libsqlite3 is loaded ... */
	while (!(code = lib_code(sq, "libsqlite3", &code_len)))
		usleep(10 * 1000);
	snprintf(pid, sizeof(pid), "%d", (int)sq);
	u = fork();
	CHECK(u >= 0);
	if (u == 0) {
		exit(run_utrace(args, &out, &err) == 0 &&
				     count(err, "] sqlite3_step() = 100\n") >= 3 &&
				     count(err, "] sqlite3_step(0x") ==
					     count(err, "] sqlite3_step() = ") ?
			     0 :
			     (fprintf(stderr, "%s", err ? err : "?"), 1));
	}
	/* ... and utrace's int3 is in its code (was: 1 s, too short on a loaded machine) */
	for (;;) {
		size_t l = 0;
		char *now = lib_code(sq, "libsqlite3", &l);
		bool armed = now && l == code_len && memcmp(now, code, l);

		free(now);
		if (armed)
			break;
		CHECK_MSG(waitpid(u, &status, WNOHANG) == 0, "utrace ended: %#x", status);
		usleep(10 * 1000);
	}
	free(code);
	CHECK(write(pin[1], sql, strlen(sql)) == (ssize_t)strlen(sql));
	CHECK(waitpid(u, &status, 0) == u);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "utrace check %#x", status);
	close(pin[1]);
	while ((n = read(pout[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	CHECK(waitpid(sq, &status, 0) == sq);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_STREQ(buf, "1\n2\n3\n");
}

/*
 * dash runs commands with vfork: the child shares the parent's memory, and
 * breakpoints in it, until it execs. Without -F the children must neither
 * die of a breakpoint nor be shown; with -F they are shown. The background
 * child sleeps 1 s: the shell is held at each fork while the tracer cleans
 * the child, and under a loaded CI 0.2 s was once not enough for "early".
 */
TEST_TIMEOUT(shell_children_unharmed, 120)
{
	const char *script = "/bin/true; /bin/true; (sleep 1; echo late) & echo early";
	const char *args[] = { "-f", "libc:malloc", "--", "sh", "-c", script, NULL };
	const char *fargs[] = { "-F", "-c", "-f", "libc:malloc", "--", "sh", "-c", script, NULL };
	char *out = NULL, *err = NULL, pidstr[32];
	const char *p;
	int i;

	for (i = 0; i < 5; i++) {
		CHECK_EQ(run_utrace(args, &out, &err), 0);
		CHECK_STREQ(out, "early\nlate\n");
		CHECK_MSG(!strstr(err, "Trace/breakpoint trap"), "%s", err);
		/* every event is from the shell itself */
		p = strchr(err, '[');
		CHECK(p);
		snprintf(pidstr, sizeof(pidstr), "[%d]", atoi(p + 1));
		CHECK_EQ(count(err, "\n["), count(err, pidstr) - (err[0] == '['));
		free(out);
		free(err);
	}
	CHECK_EQ(run_utrace(fargs, &out, &err), 0);
	CHECK_STREQ(out, "early\nlate\n");
	CHECK_MSG(!strstr(err, "Trace/breakpoint trap"), "%s", err);
	CHECK(strstr(err, " malloc\n"));
	free(out);
	free(err);
}

/*
 * Attach, trace entries and returns for a moment, detach: many times on
 * one process. A trap queued at the moment of the detach used to kill the
 * target about once in 250 rounds; it must run on and compute right. 30
 * rounds of 0.05 to 0.24 s here (the target traps all along: any moment
 * is one with traps queued), 250 in the slow suite.
 */
TEST_TIMEOUT(attach_detach_rounds, 300)
{
	struct bg a = bg_start();
	char pid[16], dur[16];
	const char *args[] = { "-f", "work", "-f", "leaf", "-o", "/dev/null",
			       "-p", pid,    "-d", dur,	   NULL };
	char *err = NULL;
	int i, rounds = (int)harness_size(30, 250);

	snprintf(pid, sizeof(pid), "%d", (int)a.pid);
	for (i = 0; i < rounds; i++) {
		snprintf(dur, sizeof(dur), "%.2f", 0.05 + (i % 20) * 0.01);
		CHECK_MSG(run_utrace(args, NULL, &err) == 0, "round %d: %s", i, err);
		free(err);
		CHECK_MSG(kill(a.pid, 0) == 0, "round %d: the target died", i);
	}
	bg_finish(&a);
}

/* --inject NAME=ERRNO: the syscall fails without running (cmd-syscalls.c) */
TEST(inject_syscall_errno)
{
	const char *args[] = { "--inject", "chdir=ENOENT", "--",
			       "sh",	   "-c",	   "cd /tmp && echo ok || echo failed",
			       NULL };
	const char *args2[] = { "-s", "chdir", "--inject", "chdir=EACCES@2",
				"--", "sh",    "-c",	   "cd /; cd /; cd /",
				NULL };
	const char *mixed[] = { "-f", "work",	"--inject", "chdir=ENOENT",
				"--", target(), "calls",    NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_STREQ(out, "failed\n");
	free(out);
	free(err);
	CHECK_EQ(run_utrace(args2, &out, &err), 0);
	CHECK_EQ(count(err, "chdir(\"/\") = 0\n"), 2);
	CHECK_EQ(count(err, "chdir(\"/\") = -1 EACCES (Permission denied) (INJECTED)\n"), 1);
	free(out);
	free(err);
	one_line_error(mixed, 1, "cannot be combined with -f/-u/-r yet");
}

/*
 * tests/targets/s-go.go, built once into the build tree with the Go
 * toolchain: @dynamic with -linkmode=external (so that the agent can be
 * preloaded), else as Go links by default (static). The test is skipped
 * when there is no `go`.
 */
static const char *go_target(bool dynamic)
{
	static char prog[2][4200], src[4096], dir[4000], cache[4200];
	char *argv[] = { "go", "build", "-ldflags=-linkmode=external", "-o", prog[dynamic],
			 src,  NULL };
	char *err = NULL;
	int rc;

	snprintf(dir, sizeof(dir), "%s", harness_build_path("tests/go"));
	snprintf(prog[dynamic], sizeof(prog[dynamic]), "%s/%s", dir, dynamic ? "s-go-dyn" : "s-go");
	if (!access(prog[dynamic], X_OK))
		return prog[dynamic];
	snprintf(src, sizeof(src), "%s/tests/targets/s-go.go", getenv("UTRACE_SOURCE_DIR") ?: "..");
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	mkdir(dir, 0755);
	setenv("GOCACHE", cache, 1);
	setenv("GOPATH", dir, 1);
	setenv("CGO_ENABLED", dynamic ? "1" : "0", 1);
	if (!dynamic)
		memmove(&argv[2], &argv[3], 4 * sizeof(argv[0]));
	rc = harness_run(argv, NULL, &err, 240);
	if (rc == 127 || rc == -1 || access(prog[dynamic], X_OK)) {
		if (rc != 127 && rc != -1)
			harness_note("go build: %d: %s", rc, err ? err : "");
		free(err);
		SKIP("no Go toolchain (go build: %d)", rc);
	}
	free(err);
	return prog[dynamic];
}

/*
 * Statically linked Go (no dynamic loader, no agent): -f refused, -u
 * exact with ptrace; -b agent says it cannot preload in one line before
 * the program runs, and -b auto takes ptrace, running it once.
 */
static void go_static(const char *prog)
{
	const char *f[] = { "-f", "main.work", "--", prog, "10", NULL };
	const char *u[] = { "-b", "ptrace", "-c", "-u", "main.work", "--", prog, "100000", NULL };
	const char *agent[] = { "-b", "agent", "-u", "main.work", "--", prog, "10", NULL };
	const char *autob[] = { "-v", "-c", "-u", "main.work", "--", prog, "10", NULL };
	char *out = NULL, *err = NULL;
	long calls = -1, errors = -1;

	one_line_error(f, 2, "probe 'main.work': refused: return probes on Go code");
	CHECK_EQ(run_utrace(u, &out, &err), 0);
	CHECK_EQ(target_count(out, "work"), 100000);
	CHECK(table_row(err, "main.work", &calls, &errors));
	CHECK_EQ(calls, 100000);
	free(out);
	free(err);
	one_line_error(agent, 1, "' is statically linked (use -b ptrace)");
	CHECK_EQ(run_utrace(autob, &out, &err), 0);
	note_lines(err);
	CHECK_EQ(count(out, "work="), 1);
	CHECK(strstr(err, "utrace: backend: ptrace (auto: the agent cannot be preloaded: '"));
	CHECK(table_row(err, "main.work", &calls, &errors));
	CHECK_EQ(calls, 10);
	free(out);
	free(err);
}

/*
 * Go code: return probes are refused in one line (the runtime walks and
 * copies goroutine stacks: a hijacked return address is "unexpected
 * return pc", fatal), before the program runs, with both backends; -u
 * counts main.work exactly; -l says so; -u and -f together: a warning,
 * and the entries are traced. Then the same program statically linked.
 */
TEST_TIMEOUT(go_return_probes_refused, 300)
{
	static const char *const backends[] = { "ptrace", "agent" };
	const char *prog = go_target(true);
	char *out = NULL, *err = NULL;
	long calls = -1, errors = -1;
	size_t i;

	for (i = 0; i < 2; i++) {
		const char *f[] = { "-b", backends[i], "-f", "main.work", "--", prog, "100", NULL };
		const char *r[] = { "-b", backends[i], "-r", "main.*", "--", prog, "100", NULL };
		const char *u[] = { "-b", backends[i], "-c",	 "-u", "main.work",
				    "--", prog,	       "100000", NULL };
		const char *uf[] = { "-b",	  backends[i], "-c", "-u",   "main.work", "-f",
				     "main.work", "--",	       prog, "1000", NULL };

		harness_note("backend %s", backends[i]);
		one_line_error(f, 2,
			       "probe 'main.work': refused: return probes on Go code (its runtime "
			       "walks and copies goroutine stacks); -u traces its entries");
		one_line_error(r, 2, "probe 'main.*': refused: return probes on Go code");
		CHECK_EQ(run_utrace(u, &out, &err), 0);
		note_lines(err);
		CHECK_EQ(target_count(out, "work"), 100000);
		CHECK(table_row(err, "main.work", &calls, &errors));
		CHECK_EQ(calls, 100000);
		free(out);
		free(err);
		CHECK_EQ(run_utrace(uf, &out, &err), 0);
		CHECK_EQ(target_count(out, "work"), 1000);
		CHECK(strstr(err, "utrace: warning: probe 'main.work': refused: return probes on "
				  "Go code"));
		CHECK(!strstr(err, "unexpected return pc"));
		free(out);
		free(err);
	}
	go_static(go_target(false));
	{
		const char *l[] = { "-l", "main.work", "--", prog, NULL };

		CHECK_EQ(run_utrace(l, &out, &err), 0);
		CHECK_MSG(strstr(out,
				 "; -f/-r refused: return probes on Go code (its runtime walks "
				 "and copies goroutine stacks)\n"),
			  "%s", out);
		free(out);
		free(err);
	}
}

/*
 * A thread that blocks SIGTRAP (here: every signal) cannot take a
 * breakpoint: -p refuses it in one line, exit 1, before touching the
 * process, with both backends (were: the agent "could not be armed",
 * exit 0; ptrace unblocked the target's SIGTRAP and reset its action).
 * The target's mask is the same afterwards and it runs on.
 */
static char *proc_status(pid_t pid)
{
	char path[64], *buf = calloc(1, 8192);
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0 || !buf || read(fd, buf, 8191) <= 0) {
		free(buf);
		buf = NULL;
	}
	if (fd >= 0)
		close(fd);
	return buf;
}

TEST_TIMEOUT(attach_refuses_sigtrap_blocked, 120)
{
	static const char *const backends[] = { "ptrace", "agent", "auto" };
	struct bg b = bg_start_mode("blocked");
	char pid[16], want[64], *status, *p;
	size_t i;

	snprintf(pid, sizeof(pid), "%d", (int)b.pid);
	status = proc_status(b.pid);
	CHECK(status && (p = strstr(status, "SigBlk:")));
	snprintf(want, sizeof(want), "%.*s", (int)strcspn(p, "\n"), p);
	free(status);
	for (i = 0; i < 3; i++) {
		const char *args[] = { "-b", backends[i], "-c", "-f", "work",
				       "-p", pid,	  "-d", "1",  NULL };
		char what[128];

		snprintf(what, sizeof(what), "cannot trace pid %s: its thread %s blocks SIGTRAP",
			 pid, pid);
		one_line_error(args, 1, what);
		status = proc_status(b.pid);
		CHECK_MSG(status && strstr(status, want), "%s: mask changed: %s", backends[i],
			  status);
		free(status);
		CHECK_EQ(traced_threads(b.pid), 0);
	}
	bg_finish(&b);
}

/* The lines of @text that contain @needle, in order (malloc'ed). */
static char *lines_with(const char *text, const char *needle, bool with)
{
	size_t n = strlen(text), len = 0;
	char *r = calloc(1, n + 1);
	const char *l = text;

	while (r && *l) {
		const char *e = strchr(l, '\n');
		size_t ll = e ? (size_t)(e - l) + 1 : strlen(l);
		char *line = strndup(l, ll);

		if (line && (strstr(line, needle) != NULL) == with) {
			memcpy(r + len, line, ll);
			len += ll;
		}
		free(line);
		l += ll;
	}
	return r;
}

/*
 * -s with -f (ltrace -S): one stream in time order. The function lines are
 * those of -f alone, the syscall lines those of -s alone (s-trace calls is
 * deterministic: the same syscalls run after run, addresses aside), and
 * each function line sits where it ran: work() before the write of the
 * answers, after the loader's last mprotect. No breakpoint shows as a
 * SIGTRAP. -c prints both tables; JSON has both record types, in order.
 */
TEST_TIMEOUT(syscalls_with_functions_one_stream, 120)
{
	const char *both[] = { "-b",   "ptrace", "-s",	   "-f",    "work", "-f",
			       "leaf", "--",	 target(), "calls", "2",    NULL };
	const char *funcs[] = { "-b", "ptrace", "-f",	 "work", "-f", "leaf",
				"--", target(), "calls", "2",	 NULL };
	const char *sys[] = { "-s", "--", target(), "calls", "2", NULL };
	const char *summ[] = { "-b", "ptrace", "-c",	"-s", "-f", "work",
			       "--", target(), "calls", "2",  NULL };
	const char *agent[] = { "-b", "agent",	"-s",	 "-f", "work",
				"--", target(), "calls", "1",  NULL };
	const char *autov[] = { "-v", "-s", "-f", "work", "--", target(), "calls", "1", NULL };
	char *out = NULL, *err = NULL, *fout = NULL, *ferr = NULL, *sout = NULL, *serr = NULL;
	char *a, *b, *c, *d;
	const char *w, *wr;

	CHECK_EQ(run_utrace(both, &out, &err), 0);
	CHECK_EQ(run_utrace(funcs, &fout, &ferr), 0);
	CHECK_EQ(run_utrace(sys, &sout, &serr), 0);
	CHECK_MSG(!strstr(err, "SIGTRAP"), "%s", err);
	/* function lines: the same as -f alone (pids aside: compare from "] ") */
	a = lines_with(err, "] work", true);
	b = lines_with(ferr, "] work", true);
	CHECK(a && b && count(a, "\n") == 4 && count(a, "\n") == count(b, "\n"));
	free(a);
	free(b);
	CHECK_EQ(count(err, "] leaf(\"hello\")\n"), 2);
	CHECK_EQ(count(err, "] leaf() = 5\n"), 2);
	/* syscall lines: as many as -s alone, the same names in the same order */
	a = lines_with(err, "] work", false);
	c = lines_with(a, "] leaf", false);
	d = lines_with(serr, "+++", false);
	CHECK(c && d);
	CHECK_MSG(count(c, "\n") == count(d, "\n") + 1, "both:\n%s\n-s:\n%s", c, d);
	CHECK_EQ(count(c, "write(1, \"answers="), 1);
	CHECK_EQ(count(c, "mprotect("), count(d, "mprotect("));
	CHECK_EQ(count(c, "mmap("), count(d, "mmap("));
	free(a);
	free(c);
	free(d);
	/* in time order */
	w = strstr(err, "] work(0)\n");
	wr = strstr(err, "write(1, \"answers=");
	CHECK(w && wr && w < wr);
	CHECK(strstr(err, "mprotect(") < w);
	CHECK(strstr(err, "+++ exited with 0 +++\n"));
	free(out);
	free(err);
	free(fout);
	free(ferr);
	free(sout);
	free(serr);

	CHECK_EQ(run_utrace(summ, &out, &err), 0);
	CHECK(strstr(err, " work\n"));
	CHECK(strstr(err, "errors syscall\n"));
	CHECK(strstr(err, " write\n"));
	free(out);
	free(err);

	/* the agent too (test-trace-agent agent_syscalls_with_functions); auto takes ptrace */
	CHECK_MSG(run_utrace(agent, &out, &err) == 0, "%s", err);
	CHECK(strstr(err, "] work(0)\n"));
	CHECK(strstr(err, "write(1, \"answers="));
	free(out);
	free(err);
	CHECK_EQ(run_utrace(autov, &out, &err), 0);
	CHECK_MSG(strstr(err, "utrace: backend: ptrace (auto: -s: the program stops at each "
			      "syscall anyway"),
		  "%s", err);
	CHECK(strstr(err, "] work(0)\n"));
	CHECK(strstr(err, "write(1, \"answers="));
	free(out);
	free(err);
}
