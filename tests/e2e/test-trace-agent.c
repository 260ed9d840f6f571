/* SPDX-License-Identifier: MIT */
/*
 * test-trace-agent.c - `utrace -b agent -f/-u/-r` end to end (launch mode):
 * the in-process agent must give the same events as the ptrace backend.
 * The oracle is tests/targets/s-trace, which counts its own calls: exact
 * entry / return counts in text, JSON and -c output with several threads,
 * the text lines identical to -b ptrace's (pids aside), drops reported as
 * "lost" records that add up exactly, the command's exit status passed
 * through, and -b auto saying which backend it chose.
 * Suite 'e2e', not parallel.
 */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

/* Each test has its own targets and files. */
HARNESS_JOBS(3)

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

TEST_TIMEOUT(agent_text_counts_match_target, 120)
{
	const char *args[] = { "-b", "agent",  "-f",	"work", "-f", "leaf", "-f", "answer",
			       "--", target(), "calls", "20",	"3",  "10",   NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(target_count(out, "work"), 50);
	CHECK_EQ(count(err, "] work(") - count(err, "] work() = "), 50);
	CHECK_EQ(count(err, "] work() = "), 50);
	CHECK_EQ(count(err, "] leaf(\"hello\")\n"), 50);
	CHECK_EQ(count(err, "] leaf() = 5\n"), 50);
	CHECK_EQ(count(err, "] answer()\n"), 4);
	CHECK_EQ(count(err, "] answer() = 7\n"), 4);
	CHECK(strstr(err, "] work(19)\n"));
	CHECK(!strstr(err, "lost"));
	free(out);
	free(err);
}

/* the event lines without their "[tid] " prefixes */
static char *strip_tids(const char *s)
{
	char *r = calloc(1, strlen(s) + 1), *w = r;
	bool bol = true;

	while (r && *s) {
		const char *e = bol && *s == '[' ? strstr(s, "] ") : NULL;

		if (e && e - s < 12) {
			s = e + 2;
			bol = false;
			continue;
		}
		bol = *s == '\n';
		*w++ = *s++;
	}
	return r;
}

TEST_TIMEOUT(agent_text_same_as_ptrace, 120)
{
	const char *a[] = { "-b", "agent",   "-f", "work",   "-f",    "leaf", "-f", "answer",
			    "-f", "recurse", "--", target(), "calls", "3",    NULL };
	const char *p[] = { "-b", "ptrace",  "-f", "work",   "-f",    "leaf", "-f", "answer",
			    "-f", "recurse", "--", target(), "calls", "3",    NULL };
	char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL, *x, *y;

	CHECK_EQ(run_utrace(a, &out, &err), 0);
	CHECK_EQ(run_utrace(p, &out2, &err2), 0);
	CHECK_STREQ(out, out2);
	x = strip_tids(err);
	y = strip_tids(err2);
	CHECK(x && y);
	CHECK_MSG(!strcmp(x, y), "agent:\n%s\nptrace:\n%s", x, y);
	CHECK(strstr(x, "recurse(5)\nrecurse(4)\n"));
	free(x);
	free(y);
	free(out);
	free(err);
	free(out2);
	free(err2);
}

TEST_TIMEOUT(agent_json_counts_match_target, 120)
{
	char file[] = "/tmp/utrace-e2e-agent-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-b",	"agent", "--format", "json", "-o",     file, "-f",
			       "work",	"-f",	 "leaf",     "-r",   "answer", "--", target(),
			       "calls", "20",	 "3",	     "10",   NULL };
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

/* the -c table's row for @name: the calls column */
static long table_calls(const char *text, const char *name)
{
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		char line[256], last[64] = "";
		char tok[8][64];
		int n;

		snprintf(line, sizeof(line), "%.*s", nl ? (int)(nl - p) : (int)strlen(p), p);
		n = sscanf(line, "%63s %63s %63s %63s %63s %63s %63s %63s", tok[0], tok[1], tok[2],
			   tok[3], tok[4], tok[5], tok[6], tok[7]);
		if (n >= 5) {
			snprintf(last, sizeof(last), "%s", tok[n - 1]);
			if (!strcmp(last, name) && isdigit((unsigned char)tok[0][0]))
				return atol(tok[3]);
		}
		p = nl ? nl + 1 : NULL;
	}
	return -1;
}

TEST_TIMEOUT(agent_summary_threads_exact, 120)
{
	/* 8 threads x 5000 calls + 1000 in main: counted in the target, no events */
	const char *args[] = { "-b",	  "agent", "-c",     "-f",    "work", "-f", "leaf", "-f",
			       "recurse", "--",	   target(), "calls", "1000", "8",  "5000", NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	note_lines(err);
	CHECK_EQ(target_count(out, "work"), 41000);
	CHECK(strstr(err, "% time     seconds  usecs/call     calls"));
	CHECK_EQ(table_calls(err, "work"), 41000);
	CHECK_EQ(table_calls(err, "leaf"), 41000);
	CHECK_EQ(table_calls(err, "recurse"), 6);
	CHECK_EQ(table_calls(err, "total"), 82006);
	CHECK(!strstr(err, "] work("));
	free(out);
	free(err);
}

/*
 * The issue's own words: a malloc-heavy multithreaded program with
 * -f 'libc:malloc' -f 'libc:free' runs to the end with exact counts.
 * s-agent malloc T N: T threads x N malloc + free. The C library calls
 * both besides (start-up, and free() of each thread's cached chunks at its
 * exit; a preloaded agent also changes how many TLS blocks are freed), so
 * the runs are compared by difference with the same run at N = 0: malloc
 * must grow by exactly T x N; free by the same amount as the ptrace
 * backend (one trap per call, exact) sees on the same program.
 */
static long malloc_run(const char *backend, const char *n, long *frees)
{
	const char *args[] = {
		"-b",	     backend,	    "-c",
		"-f",	     "libc:malloc", "-f",
		"libc:free", "--",	    harness_build_path("tests/agent/s-agent"),
		"malloc",    "8",	    n,
		NULL
	};
	char *out = NULL, *err = NULL;
	long mallocs;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	mallocs = table_calls(err, "malloc");
	*frees = table_calls(err, "free");
	CHECK_MSG(mallocs >= 0 && *frees >= 0, "%s", err);
	free(out);
	free(err);
	return mallocs;
}

TEST_TIMEOUT(agent_malloc_free_exact_counts, 300)
{
	long f0, f1, f2, pf0, pf1;
	long m0 = malloc_run("agent", "0", &f0), m1 = malloc_run("agent", "3000", &f1);
	long m2 = malloc_run("agent", "100000", &f2);
	long pm0 = malloc_run("ptrace", "0", &pf0), pm1 = malloc_run("ptrace", "3000", &pf1);

	harness_note("agent: malloc %ld %ld %ld, free %ld %ld %ld (N = 0, 3000, 100000)", m0, m1,
		     m2, f0, f1, f2);
	harness_note("ptrace: malloc %ld %ld, free %ld %ld (N = 0, 3000)", pm0, pm1, pf0, pf1);
	CHECK_EQ(m1 - m0, 8 * 3000);
	CHECK_EQ(pm1 - pm0, 8 * 3000);
	CHECK_EQ(f1 - f0, pf1 - pf0);
	CHECK_EQ(m2 - m0, 8 * 100000);
	/* the chunks cached at exit are the same for any N past a few hundred */
	CHECK_EQ(f2 - f0 - 8 * 100000, f1 - f0 - 8 * 3000);
}

/*
 * Issue 10 item 6: every function of the C library at once (-c -f
 * 'libc:*', ~2,200 probe points). The program must run as it does
 * untraced, with no warning; the counts are the target's own: s-trace
 * locks a mutex twice per work() (in work and leaf) and does N malloc/free
 * pairs, and the C library calls these itself besides (start-up, threads,
 * stdio), so two runs that differ in N only are compared by difference.
 */
static void libc_glob_run(const char *spec, const char *n, long *locks, long *unlocks,
			  long *mallocs, long *frees)
{
	const char *args[] = { "-b",	 "agent", "-c", "-f", spec,  "--",
			       target(), "calls", n,	"2",  "300", NULL };
	char *out = NULL, *err = NULL, want[128];

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_MSG(!strstr(err, "warning") && !strstr(err, "Bad address"), "%s", err);
	CHECK(strstr(out, "answers=7,7,7,7\n"));
	snprintf(want, sizeof(want), "work=%d leaf=%d answer=4 recurse=6 malloc=%s\n",
		 atoi(n) + 600, atoi(n) + 600, n);
	CHECK_MSG(strstr(out, want), "%s", out);
	*locks = table_calls(err, "pthread_mutex_lock");
	*unlocks = table_calls(err, "pthread_mutex_unlock");
	*mallocs = table_calls(err, "malloc");
	*frees = table_calls(err, "free");
	free(out);
	free(err);
}

TEST_TIMEOUT(agent_summary_all_of_libc, 300)
{
	long l0, u0, m0, f0, l1, u1, m1, f1;

	libc_glob_run("libc:*", "0", &l0, &u0, &m0, &f0);
	libc_glob_run("libc:*", "2000", &l1, &u1, &m1, &f1);
	harness_note("libc:*: mutex_lock %ld %ld, malloc %ld %ld, free %ld %ld (N = 0, 2000)", l0,
		     l1, m0, m1, f0, f1);
	CHECK(l0 >= 2 * 600 && m0 >= 0 && f0 >= 0);
	CHECK_EQ(l1 - l0, 2 * 2000);
	CHECK_EQ(u1 - u0, 2 * 2000);
	CHECK_EQ(m1 - m0, 2000);
	CHECK_EQ(f1 - f0, 2000);
	/* a smaller glob with IFUNCs (strlen, strcmp ...) among its matches: no warning */
	libc_glob_run("libc:str*", "10", &l0, &u0, &m0, &f0);
}

TEST_TIMEOUT(agent_hist_sums_to_calls, 120)
{
	const char *args[] = { "-b",	 "agent", "-H", "-f", "work", "--",
			       target(), "calls", "20", "3",  "10",   NULL };
	char *out = NULL, *err = NULL, *p;
	long sum = 0;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK(strstr(err, "@work [s-trace:work]: 50 calls"));
	/* rows "[64ns, 128ns)    29 |@@@@ |" */
	for (p = err; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		char *q = strchr(p, ')'), *nl = strchr(p, '\n');
		long n;

		if (*p == '[' && q && (!nl || q < nl) && sscanf(q + 1, "%ld", &n) == 1)
			sum += n;
	}
	CHECK_EQ(sum, 50);
	free(out);
	free(err);
}

/*
 * -c counts calls at their entry with both backends, also those that never
 * return: s-agent-cxx 50 10 throws from probed_throw(10) through 11 frames
 * (550 calls, none returns; __cxa_throw: 50, never returns), then
 * probed_fib(10) = 177 calls per round, all returning (8850). -H shows
 * the calls that returned, and says how many did not. (The ptrace
 * backend used to count at the return: probed_throw 0, __cxa_throw 0.)
 */
static void cxx_counts(const char *backend, long *thr, long *cxa, long *fib, char **err)
{
	const char *args[] = { "-b", backend,
			       "-c", "-H",
			       "-f", "probed_throw",
			       "-f", "probed_fib",
			       "-f", "libstdc++:__cxa_throw",
			       "--", harness_build_path("tests/agent/s-agent-cxx"),
			       "50", "10",
			       NULL };
	char *out = NULL;

	CHECK_EQ(run_utrace(args, &out, err), 0);
	note_lines(*err);
	*thr = table_calls(*err, "probed_throw");
	*cxa = table_calls(*err, "__cxa_throw");
	*fib = table_calls(*err, "probed_fib");
	free(out);
}

TEST_TIMEOUT(summary_counts_calls_at_entry, 120)
{
	long thr, cxa, fib, athr, acxa, afib;
	char *err = NULL, *aerr = NULL;

	if (access(harness_build_path("tests/agent/s-agent-cxx"), X_OK))
		SKIP("no C++ compiler: s-agent-cxx not built");
	cxx_counts("ptrace", &thr, &cxa, &fib, &err);
	cxx_counts("agent", &athr, &acxa, &afib, &aerr);
	CHECK_EQ(thr, 550);
	CHECK_EQ(cxa, 50);
	CHECK_EQ(fib, 8850);
	CHECK_EQ(athr, thr);
	CHECK_EQ(acxa, cxa);
	CHECK_EQ(afib, fib);
	/* -H: the returned calls only; none of probed_throw's returned */
	CHECK(strstr(err, "@probed_fib [s-agent-cxx:probed_fib]: 8850 calls, latency\n"));
	CHECK(!strstr(err, "@probed_throw ["));
	CHECK(strstr(aerr, "@probed_fib [s-agent-cxx:probed_fib]: 8850 calls, latency\n"));
	free(err);
	free(aerr);
}

/*
 * --lossy: a full ring drops and counts (rings of 16 records); what was
 * delivered plus what was lost is every event.
 */
TEST_TIMEOUT(agent_drops_are_counted, 120)
{
	char file[] = "/tmp/utrace-e2e-agent-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-b", "agent", "--lossy", "--format", "json",  "-o",	file,
			       "-f", "work",  "--",	 target(),   "calls", "200000", NULL };
	const char *py_lost = "import json, sys\n"
			      "ev = 0; lost = 0\n"
			      "for line in open(sys.argv[1]):\n"
			      "    e = json.loads(line)\n"
			      "    if e['type'] == 'lost': lost += e['count']\n"
			      "    elif e['type'] in ('entry', 'return'): ev += 1\n"
			      "print('events+lost', ev + lost, 'lost>0', lost > 0)\n";
	char *out = NULL, *err = NULL, *py = NULL;

	CHECK(fd >= 0);
	close(fd);
	{
		setenv("UTRACE_AGENT_RING", "16", 1);
		CHECK_EQ(run_utrace(args, &out, &err), 0);
		unsetenv("UTRACE_AGENT_RING");
		CHECK(strstr(err, "events were lost"));
		CHECK_EQ(run_python(py_lost, file, &py), 0);
		note_lines(py);
		CHECK_MSG(strstr(py, "events+lost 400000 lost>0 True"), "%s", py);
		free(out);
		free(err);
		free(py);
	}
	unlink(file);
}

/*
 * Without --lossy a live trace loses nothing: a full ring (16 records
 * here) makes the probed thread wait for the tracer's drain. Every one
 * of the 2 x 20000 events is in the JSON, none lost, on the CLI's agent
 * path and the library's.
 */
TEST_TIMEOUT(agent_live_is_lossless, 120)
{
	char file[] = "/tmp/utrace-e2e-agent-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-b",   "agent", "--format", "json",  "-o",    file, "-f",
			       "work", "--",	target(),   "calls", "20000", NULL };
	const char *py_count = "import json, sys\n"
			       "n = {}\n"
			       "for line in open(sys.argv[1]):\n"
			       "    t = json.loads(line)['type']\n"
			       "    n[t] = n.get(t, 0) + 1\n"
			       "print('entry', n.get('entry'), 'return', n.get('return'),"
			       " 'lost', n.get('lost', 0))\n";
	char *out = NULL, *err = NULL, *py = NULL;

	CHECK(fd >= 0);
	close(fd);
	{
		setenv("UTRACE_AGENT_RING", "16", 1);
		CHECK_EQ(run_utrace(args, &out, &err), 0);
		unsetenv("UTRACE_AGENT_RING");
		CHECK_MSG(!strstr(err, "lost"), "%s", err);
		CHECK_EQ(run_python(py_count, file, &py), 0);
		CHECK_MSG(strstr(py, "entry 20000 return 20000 lost 0\n"), "%s", py);
		free(out);
		free(err);
		free(py);
	}
	unlink(file);
}

TEST_TIMEOUT(agent_exit_status_passthrough, 60)
{
	const char *args[] = { "-b", "agent", "-f", "work", "--", target(), "exit", "7", NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 7);
	CHECK(strstr(err, "] work(1)\n"));
	free(out);
	free(err);
}

TEST_TIMEOUT(auto_says_backend, 60)
{
	const char *a[] = { "-v", "-f", "work", "--", target(), "exit", "3", NULL };
	const char *p[] = { "-v", "-b", "ptrace", "-f", "work", "--", target(), "exit", "3", NULL };
	const char *k[] = { "-v", "-f",	    "work", "-f", "libzz:nothing",
			    "--", target(), "exit", "3",  NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(a, &out, &err), 3);
	CHECK(strstr(err, "utrace: backend: agent (auto: the agent could be loaded"));
	free(out);
	free(err);
	CHECK_EQ(run_utrace(p, &out, &err), 3);
	CHECK(strstr(err, "utrace: backend: ptrace"));
	free(out);
	free(err);
	/* a SPEC waiting for a library: the agent arms it when it is loaded */
	CHECK_EQ(run_utrace(k, &out, &err), 3);
	CHECK_MSG(strstr(err, "utrace: backend: agent (auto:"), "stderr: %s", err);
	CHECK_MSG(strstr(err, "'libzz' is not loaded yet"), "stderr: %s", err);
	free(out);
	free(err);
}

TEST_TIMEOUT(agent_attach_detach_restores_code, 120)
{
	struct bg a = bg_start();
	char pid[16];
	const char *args[] = { "-v",   "-b", "agent", "-f", "work", "-f",
			       "leaf", "-p", pid,     "-d", "1",    NULL };
	char *out = NULL, *err = NULL;

	snprintf(pid, sizeof(pid), "%d", (int)a.pid);
	CHECK_EQ(code_matches_file(a.pid), 1);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK(strstr(err, "utrace: backend: agent\n"));
	CHECK(count(err, "] leaf(\"hello\")\n") > 10);
	CHECK(count(err, "] work() = ") > 10);
	CHECK(strstr(err, "(detached)"));
	CHECK_EQ(code_matches_file(a.pid), 1);
	free(out);
	free(err);
	/* the agent stays loaded, dormant: a second attach reuses it */
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK(count(err, "] leaf(\"hello\")\n") > 10);
	CHECK(strstr(err, "(detached)"));
	CHECK_EQ(code_matches_file(a.pid), 1);
	bg_finish(&a);
	free(out);
	free(err);
}

/*
 * -p A,B: one agent per process, one output; the events carry each
 * process's own tids, both processes' code is the file's again after the
 * detach, and both still compute right (bg_finish).
 */
TEST_TIMEOUT(agent_several_pids, 120)
{
	struct bg a = bg_start(), b = bg_start();
	char pids[32], ap[40], bp[40];
	const char *args[] = { "-v", "-b", "agent", "-f", "work", "-p", pids, "-d", "1", NULL };
	char *out = NULL, *err = NULL;

	snprintf(pids, sizeof(pids), "%d,%d", (int)a.pid, (int)b.pid);
	CHECK_EQ(code_matches_file(a.pid), 1);
	/* utrace_uprobes__pid_stats(): one line per process */
	{
		CHECK_EQ(run_utrace(args, &out, &err), 0);
		CHECK_MSG(strstr(err, "utrace: backend: agent (2 processes)\n"), "%s", err);
		snprintf(ap, sizeof(ap), "[%d] work(", (int)a.pid);
		snprintf(bp, sizeof(bp), "[%d] work(", (int)b.pid);
		CHECK(count(err, ap) > 10);
		CHECK(count(err, bp) > 10);
		snprintf(ap, sizeof(ap), "pid %d: ", (int)a.pid);
		snprintf(bp, sizeof(bp), "pid %d: ", (int)b.pid);
		CHECK_MSG(strstr(err, ap) && strstr(err, bp), "%s", err);
		CHECK_EQ(count(err, "probe points (detached)\n"), 2);
		CHECK_EQ(code_matches_file(a.pid), 1);
		CHECK_EQ(code_matches_file(b.pid), 1);
		free(out);
		free(err);
	}
	bg_finish(&a);
	bg_finish(&b);
}

TEST(agent_bad_input_one_line)
{
	const char *pid[] = { "-b", "agent", "-f", "work", "-p", "1", NULL };
	const char *inj[] = {
		"-b", "agent", "--inject", "work+4=1", "--", target(), "calls", NULL
	};
	char *out = NULL, *err = NULL;

	/* init: not ours to load anything into */
	CHECK_EQ(run_utrace(pid, &out, &err), 1);
	CHECK_MSG(count_lines(err) == 1 && strstr(err, "cannot load the agent into pid 1: "),
		  "stderr: %s", err);
	free(out);
	free(err);
	/* inside a function: nothing to return from */
	CHECK_EQ(run_utrace(inj, &out, &err), 2);
	CHECK_MSG(count_lines(err) == 1 && strstr(err, "--inject 'work+4': work+0x4 is not a "
						       "function entry"),
		  "stderr: %s", err);
	CHECK_STREQ(out, ""); /* the command never ran main() */
	free(out);
	free(err);
}

/* Chrome: every "B" has its "E" on the same thread, as many as the calls */
static const char *chrome_check =
	"import json, sys, collections\n"
	"d = json.load(open(sys.argv[1]))\n"
	"stacks = collections.defaultdict(list); b = collections.Counter(); names = set()\n"
	"for e in d['traceEvents']:\n"
	"    assert {'ph', 'pid', 'tid'} <= set(e), e\n"
	"    if e['ph'] == 'M': names.add(e['args']['name'])\n"
	"    if e['ph'] == 'B':\n"
	"        stacks[e['tid']].append((e['name'], e['ts'])); b[e['name']] += 1\n"
	"    elif e['ph'] == 'E':\n"
	"        n, ts = stacks[e['tid']].pop()\n"
	"        assert n == e['name'] and ts <= e['ts'], (n, e)\n"
	"        if n == 'leaf': assert e['args']['ret'] == 5, e\n"
	"assert not any(stacks.values()), stacks\n"
	"print('B/E pairs', b['work'], b['leaf'], b['recurse'], 'tids', len(stacks),\n"
	"      'named', sorted(names))\n";

TEST_TIMEOUT(agent_chrome_trace_is_valid, 120)
{
	char file[] = "/tmp/utrace-e2e-agent-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-b",	"agent", "--format", "chrome", "-o",	  file, "-f",
			       "work",	"-f",	 "leaf",     "-f",     "recurse", "--", target(),
			       "calls", "5",	 "2",	     "3",      NULL };
	char *out = NULL, *err = NULL, *py = NULL;

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	/* the target's own counts: 5 + 2 x 3 calls of work and leaf, recurse(5) */
	CHECK(strstr(out, "work=11 leaf=11 answer=4 recurse=6"));
	CHECK_EQ(run_python(chrome_check, file, &py), 0);
	CHECK_STREQ(py, "B/E pairs 11 11 6 tids 3 named ['s-trace']\n");
	unlink(file);
	free(out);
	free(err);
	free(py);
}

/* -c with Chrome: the events go to the file, the table to stderr */
TEST_TIMEOUT(agent_chrome_with_summary, 120)
{
	char file[] = "/tmp/utrace-e2e-agent-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-b",   "agent", "-c",	  "--format", "chrome", "-o", file, "-f",
			       "work", "--",	target(), "calls",    "7",	"2",  "4",  NULL };
	char *out = NULL, *err = NULL, *py = NULL;

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(table_calls(err, "work"), 15);
	CHECK_EQ(run_python(chrome_check, file, &py), 0);
	CHECK(py && !strncmp(py, "B/E pairs 15 0 0 tids 3", 23));
	unlink(file);
	free(out);
	free(err);
	free(py);
}

TEST_TIMEOUT(agent_inject_same_as_ptrace, 120)
{
	const char *a[] = { "-b", "agent",  "--inject", "answer=42@2", "-f", "answer",
			    "--", target(), "calls",	"1",	       NULL };
	const char *p[] = { "-b", "ptrace", "--inject", "answer=42@2", "-f", "answer",
			    "--", target(), "calls",	"1",	       NULL };
	const char *a2[] = { "-b",     "agent", "--inject", "answer=-1", "--",
			     target(), "calls", "1",	    NULL };
	char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL, *x, *y;

	CHECK_EQ(run_utrace(a, &out, &err), 0);
	CHECK(strstr(out, "answers=7,42,7,42\n")); /* what the program got */
	CHECK_EQ(count(err, "] answer()\n"), 4);
	CHECK_EQ(count(err, "] answer() = 42 (injected)\n"), 2);
	CHECK_EQ(count(err, "] answer() = 7\n"), 2);
	CHECK_EQ(run_utrace(p, &out2, &err2), 0);
	CHECK_STREQ(out, out2);
	x = strip_tids(err);
	y = strip_tids(err2);
	CHECK(x && y);
	CHECK_MSG(!strcmp(x, y), "agent:\n%s\nptrace:\n%s", x, y);
	free(x);
	free(y);
	free(out);
	free(err);
	free(out2);
	free(err2);
	/* without -f: the injected calls are shown anyway */
	CHECK_EQ(run_utrace(a2, &out, &err), 0);
	CHECK(strstr(out, "answers=-1,-1,-1,-1\n"));
	CHECK_EQ(count(err, "] answer()\n"), 4);
	CHECK_EQ(count(err, "] answer() = -1 (injected)\n"), 4);
	free(out);
	free(err);
}

/*
 * Every 3rd call of work() over 8 threads x 1000 calls: the agent counts
 * the calls with one atomic add per probe, so exactly 2666 of 8000 are
 * injected; the target counts the bodies that ran (work=, and leaf=, which
 * only work calls).
 */
TEST_TIMEOUT(agent_inject_every_nth_exact_across_threads, 120)
{
	const char *args[] = { "-v", "-b",     "agent", "-c", "--inject", "work=0@3", "-f", "work",
			       "--", target(), "calls", "0",  "8",	  "1000",     NULL };
	const char *json[] = { "-b",	 "agent", "--format", "json", "--inject", "work=0@3", "--",
			       target(), "calls", "0",	      "8",    "1000",	  NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	note_lines(err);
	CHECK(strstr(out, "work=5334 leaf=5334 "));
	CHECK_EQ(table_calls(err, "work"), 8000);
	CHECK(strstr(err, "--inject 'work': 2666 of 8000 calls injected"));
	free(out);
	free(err);
	/* JSON, no -f: only the injected calls, each an entry and an injected return */
	CHECK_EQ(run_utrace(json, &out, &err), 0);
	CHECK(strstr(out, "work=5334 leaf=5334 "));
	CHECK_EQ(count(err, "\"type\": \"entry\""), 2666);
	CHECK_EQ(count(err, "\"ret\": 0, \"dur_ns\": 0, \"injected\": true}"), 2666);
	free(out);
	free(err);
}

/* the event lines with tids, code addresses and libc offsets blanked */
static char *strip_addrs(const char *s)
{
	char *t = strip_tids(s), *r, *w;

	for (r = w = t; t && *r;) {
		if (r[0] == '0' && r[1] == 'x') {
			r += 2;
			while (isxdigit((unsigned char)*r))
				r++;
			*w++ = '#';
			continue;
		}
		*w++ = *r++;
	}
	if (t)
		*w = '\0';
	return t;
}

/*
 * @s with each -k stack cut at its first frame outside @prog: the agent's
 * capture walks frame pointers and ends in libc (built without them),
 * where the ptrace backend's CFI unwinder goes on through libc to _start
 */
static char *program_frames(char *s, const char *prog)
{
	char *r, *w, *nl;
	bool cut = false;

	for (r = w = s; s && *r; r = nl) {
		nl = strchr(r, '\n');
		nl = nl ? nl + 1 : r + strlen(r);
		if (strncmp(r, " > ", 3))
			cut = false; /* an event line: a stack may follow */
		else if (cut || !memmem(r, (size_t)(nl - r), prog, strlen(prog)))
			cut = true;
		if (cut)
			continue;
		memmove(w, r, (size_t)(nl - r));
		w += nl - r;
	}
	if (s)
		*w = '\0';
	return s;
}

/* the program's frames: the same on both backends */
TEST_TIMEOUT(agent_stack_same_as_ptrace, 120)
{
	const char *a[] = { "-b",     "agent", "-k", "-f", "leaf", "--",
			    target(), "calls", "2",  "1",  "1",	   NULL };
	const char *p[] = { "-b",     "ptrace", "-k", "-f", "leaf", "--",
			    target(), "calls",	"2",  "1",  "1",    NULL };
	char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL, *x, *y;

	CHECK_EQ(run_utrace(a, &out, &err), 0);
	CHECK_EQ(run_utrace(p, &out2, &err2), 0);
	x = program_frames(strip_addrs(err), " (s-trace) ");
	y = program_frames(strip_addrs(err2), " (s-trace) ");
	CHECK(x && y);
	CHECK_MSG(!strcmp(x, y), "agent:\n%s\nptrace:\n%s", x, y);
	/* main thread twice, the worker thread once (target: leaf=3) */
	CHECK(strstr(out, "leaf=3 "));
	CHECK_EQ(count(x, "leaf(\"hello\")\n > work+# (s-trace) [#]\n"), 3);
	CHECK_EQ(count(x, " > work+# (s-trace) [#]\n > do_calls+# (s-trace) [#]\n > main+#"), 2);
	CHECK_EQ(count(x, " > work+# (s-trace) [#]\n > worker+# (s-trace) [#]\n"), 1);
	free(x);
	free(y);
	free(out);
	free(err);
	free(out2);
	free(err2);
}

/*
 * -k with the callers probed too: their return addresses are hijacked by
 * the return probes; the stack shows the real callers, and JSON has them
 * in "stack".
 */
TEST_TIMEOUT(agent_stack_through_return_probes, 120)
{
	char file[] = "/tmp/utrace-e2e-agent-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-b", "agent", "-k", "-f",     "recurse", "-f", "work",
			       "-f", "leaf",  "--", target(), "calls",	 "1",  NULL };
	const char *json[] = { "-b",   "agent", "-k",	"--format", "json",   "-o",    file, "-f",
			       "leaf", "-f",	"work", "--",	    target(), "calls", "1",  NULL };
	const char *py_stack = "import json, sys\n"
			       "for line in open(sys.argv[1]):\n"
			       "    e = json.loads(line)\n"
			       "    if e['type'] == 'entry' and e['name'] == 'leaf':\n"
			       "        print(' '.join(s.split('+')[0] for s in e['stack'][:3]))\n";
	char *out = NULL, *err = NULL, *x, *py = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	x = strip_addrs(err);
	CHECK(x);
	/* recurse(0) called by recurse(1) ... recurse(5) called by do_calls */
	CHECK(strstr(x, "recurse(0)\n > recurse+# (s-trace) [#]\n > recurse+# (s-trace) [#]\n"
			" > recurse+# (s-trace) [#]\n > recurse+# (s-trace) [#]\n"
			" > recurse+# (s-trace) [#]\n > do_calls+# (s-trace) [#]\n"
			" > main+# (s-trace) [#]\n"));
	CHECK(strstr(x, "leaf(\"hello\")\n > work+# (s-trace) [#]\n > do_calls+# (s-trace) [#]\n"));
	free(x);
	free(out);
	free(err);
	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(run_utrace(json, &out, &err), 0);
	CHECK_EQ(run_python(py_stack, file, &py), 0);
	CHECK_STREQ(py, "s-trace:work s-trace:do_calls s-trace:main\n");
	unlink(file);
	free(out);
	free(err);
	free(py);
}

/*
 * -b auto in attach mode: the agent when it loads (the target's code bytes
 * are the file's again after the detach); a second attach reuses the dormant
 * agent. Both trace every call the target makes meanwhile.
 */
TEST_TIMEOUT(auto_attach_picks_agent_again, 120)
{
	struct bg a = bg_start();
	char pid[16];
	const char *args[] = { "-v", "-f", "work", "-p", pid, "-d", "1", NULL };
	char *out = NULL, *err = NULL;

	snprintf(pid, sizeof(pid), "%d", (int)a.pid);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_MSG(strstr(err, "utrace: backend: agent (auto: the agent could be loaded"),
		  "stderr: %s", err);
	CHECK(count(err, "] work() = ") > 10);
	CHECK(strstr(err, "(detached)"));
	CHECK_EQ(code_matches_file(a.pid), 1);
	free(out);
	free(err);
	/* again: the dormant agent takes a new session */
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_MSG(strstr(err, "utrace: backend: agent (auto: the agent could be loaded"),
		  "stderr: %s", err);
	CHECK(count(err, "] work() = ") > 10);
	free(out);
	free(err);
	/* a process that cannot be attached: auto falls back, -v says why, one line */
	{
		const char *bad[] = { "-v", "-f", "work", "-p", "1", "-d", "1", NULL };

		CHECK(run_utrace(bad, &out, &err) != 0);
		CHECK_MSG(
			strstr(err, "utrace: backend: ptrace (auto: the agent could not be loaded"),
			"stderr: %s", err);
	}
	CHECK_EQ(code_matches_file(a.pid), 1);
	bg_finish(&a);
	free(out);
	free(err);
}

/*
 * -F: the fork children keep their probes, each with an arena of its own:
 * every process's work() calls come back under its own pid, as the target
 * counts them ("child PID work=M", "parent work=M"), the same per-process
 * counts as -b ptrace -F; the children's return from spawn() (a probed
 * function that forked them, so a hijacked return address inherited with
 * the fork) returns 0 in each child. Without -F only the parent is traced
 * and the children, disarmed at the fork, still compute right.
 */
static const char *fork_check =
	"import json, sys, collections\n"
	"ent = collections.Counter(); ret = collections.Counter(); sp = []; spe = []\n"
	"for line in open(sys.argv[1]):\n"
	"    e = json.loads(line)\n"
	"    if e['name'] == 'work' and e['type'] == 'entry': ent[e['pid']] += 1\n"
	"    if e['name'] == 'work' and e['type'] == 'return':\n"
	"        assert e['tid'] == e['pid'], e; ret[e['pid']] += 1\n"
	"    if e['name'] == 'spawn' and e['type'] == 'return': sp.append((e['pid'], e['ret']))\n"
	"    if e['name'] == 'spawn' and e['type'] == 'entry': spe.append(e['pid'])\n"
	"assert ent == ret, (ent, ret)\n"
	"kids = sorted(p for p, r in sp if r == 0)\n"
	"parent = sorted(set(spe))\n"
	"print('pids', len(ent), 'work', ' '.join(str(ent[p]) for p in sorted(ent)),\n"
	"      'spawn-entries', len(spe), 'in-parent', len(parent),\n"
	"      'children', ' '.join(str(p) for p in kids))\n";

/* "child PID work=" lines of the target, sorted pids as "p1 p2 p3" */
static void child_pids(const char *out, char *buf, size_t size)
{
	long pids[16];
	int n = 0, i, j;
	const char *p = out;
	size_t len = 0;

	while (p && (p = strstr(p, "child ")) && n < 16) {
		pids[n++] = atol(p + 6);
		p += 6;
	}
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (pids[j] < pids[i]) {
				long x = pids[i];

				pids[i] = pids[j];
				pids[j] = x;
			}
	buf[0] = '\0';
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%ld", i ? " " : "", pids[i]);
}

static void run_fork(const char *backend, bool follow, char **py, char *kids, size_t size)
{
	char file[] = "/tmp/utrace-e2e-agent-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-b",	 backend, "--format", "json",  "-o", file,
			       "-f",	 "work",  "-f",	      "spawn", "-F", "--",
			       target(), "fork",  "3",	      "100",   NULL };
	char *out = NULL, *err = NULL;

	if (!follow) {
		args[10] = "--"; /* drop -F */
		args[11] = target();
		args[12] = "fork";
		args[13] = "3";
		args[14] = "100";
		args[15] = NULL;
	}
	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	note_lines(err);
	CHECK(strstr(out, "parent work=100 children=3\n"));
	CHECK_EQ(count(out, " work=100\n"), 3); /* the children */
	child_pids(out, kids, size);
	CHECK_EQ(run_python(fork_check, file, py), 0);
	unlink(file);
	free(out);
	free(err);
}

TEST_TIMEOUT(agent_follow_forks_same_as_ptrace, 120)
{
	char *py = NULL, kids[256], want[512];

	run_fork("agent", true, &py, kids, sizeof(kids));
	note_lines(py);
	snprintf(want, sizeof(want),
		 "pids 4 work 100 100 100 100 spawn-entries 3 in-parent 1 children %s\n", kids);
	CHECK_STREQ(py, want);
	free(py);
	/* the ptrace backend: the same per-process counts (it shows no return in the children) */
	run_fork("ptrace", true, &py, kids, sizeof(kids));
	CHECK(py && !strncmp(py, "pids 4 work 100 100 100 100 spawn-entries 3 in-parent 1", 55));
	free(py);
	/* without -F: the parent only */
	run_fork("agent", false, &py, kids, sizeof(kids));
	CHECK_STREQ(py, "pids 1 work 100 spawn-entries 3 in-parent 1 children \n");
	free(py);
}

TEST_TIMEOUT(agent_follow_forks_summary, 120)
{
	const char *args[] = { "-v", "-b",     "agent", "-F", "-c",  "-f", "work",
			       "--", target(), "fork",	"4",  "250", NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	note_lines(err);
	CHECK(strstr(out, "parent work=250 children=4\n"));
	CHECK_EQ(count(out, " work=250\n"), 4); /* the children */
	CHECK_EQ(table_calls(err, "work"), 1250); /* 5 processes x 250, as they counted */
	CHECK_EQ(count(err, ", a fork child of pid "), 4);
	free(out);
	free(err);
}

/*
 * The target's sleeps and polls are not touched by arming, upgrading and
 * disarming (issue 10): tests/targets/s-waits has a thread in each call
 * that signal(7) never restarts after a handler (nanosleep, clock_nanosleep,
 * poll, ppoll, epoll_wait, select, pselect, sigtimedwait, io_getevents,
 * semtimedop, semop), each checking its own timeout, and handlers that count.
 * 100 probes (libwaits.so, dlopen()ed while the threads sleep) are armed
 * and upgraded to jmps (s-waits sees the 0xe9s), then disarmed at exit or
 * detach. Its line must say no early return, no EINTR, no handler; also
 * with a thread that computes all along ("busy": the one thread that the
 * upgrade may interrupt).
 */
static const char *waits(void)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/tests/targets/s-waits",
		 getenv("UTRACE_BUILD_DIR") ?: "build");
	return path;
}

static const char *waits_lib(void)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/tests/targets/libwaits.so",
		 getenv("UTRACE_BUILD_DIR") ?: "build");
	return path;
}

/* s-waits' verdict line in @out: all zero, every call seen, jmps seen. */
static void check_waits(const char *out)
{
	const char *l = out ? strstr(out, "calls=") : NULL;
	int calls = 0, early = -1, eintr = -1, bad = -1, handlers = -1, jmp = -1, int3 = -1;

	CHECK_MSG(l, "no verdict from s-waits: %s", out ? out : "(none)");
	note_lines(out);
	CHECK(sscanf(l, "calls=%d early=%d eintr=%d bad=%d handlers=%d jmp=%d int3=%d", &calls,
		     &early, &eintr, &bad, &handlers, &jmp, &int3) == 7);
	CHECK(calls >= 11);
	CHECK_EQ(eintr, 0);
	CHECK_EQ(early, 0);
	CHECK_EQ(bad, 0);
	CHECK_EQ(handlers, 0);
	CHECK_MSG(jmp > 0, "no probe was ever seen upgraded (jmp=%d int3=%d)", jmp, int3);
}

/* alone: s-waits looks for the jmps for 1.5 s, arming must be done by then */
TEST_ALONE(agent_arming_leaves_sleeps_alone_launch, 120)
{
	const char *args[] = { "-b", "agent", "-c",  "-f",   "libwaits:waits_fn_*",
			       "--", waits(), "200", "1500", waits_lib(),
			       NULL, NULL };
	char *out = NULL, *err = NULL;
	int i;

	/* then with a thread that computes all along: the upgrade signals it alone */
	for (i = 0; i < 3; i++) {
		args[10] = i ? "busy" : NULL;
		CHECK_MSG(run_utrace(args, &out, &err) == 0, "s-waits said: %s", out);
		check_waits(out);
		CHECK_EQ(table_calls(err, "waits_fn_000") > 0, 1);
		free(out);
		free(err);
	}
	/*
	 * the library's agent (cmd-trace.c's library path, agent_untraced:
	 * only the agent's thread stays traced), detached by -d while the
	 * threads wait: no stop of ours reaches them at the detach either
	 */
	{
		const char *lib[] = {
			"-b", "agent", "-c",  "-d",   "1",	   "-f",   "libwaits:waits_fn_*",
			"--", waits(), "200", "1500", waits_lib(), "busy", NULL
		};

		for (i = 0; i < 2; i++) {
			CHECK_MSG(run_utrace(lib, &out, &err) == 0, "s-waits said: %s", out);
			check_waits(out);
			CHECK_EQ(table_calls(err, "waits_fn_000") > 0, 1);
			free(out);
			free(err);
		}
	}
}

TEST_TIMEOUT(agent_attach_detach_leaves_sleeps_alone, 180)
{
	int pin[2], pout[2], status, i;
	char line[64] = "", pid[16], buf[8192] = "";
	const char *args[] = { "-v", "-b", "agent", "-c",  "-f", "libwaits:waits_fn_*",
			       "-p", pid,  "-d",    "0.5", NULL };
	ssize_t n, len = 0;
	pid_t p;

	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execl(waits(), "s-waits", "200", "0", waits_lib(), "busy", (char *)NULL);
		_exit(99);
	}
	close(pin[0]);
	close(pout[1]);
	n = read(pout[0], line, sizeof(line) - 1);
	CHECK_MSG(n > 0 && !strncmp(line, "ready ", 6), "target said '%s'", line);
	snprintf(pid, sizeof(pid), "%d", (int)p);
	/*
	 * attach (injection), arm, upgrade, detach; then three times into the
	 * dormant agent (utrace_uprobes__attach(): only the agent's thread is
	 * traced)
	 */
	for (i = 0; i < 4; i++) {
		char *out = NULL, *err = NULL;

		CHECK_MSG(run_utrace(args, &out, &err) == 0, "%s", err);
		CHECK(strstr(err, "100 probe points (detached)"));
		CHECK(table_calls(err, "waits_fn_000") > 0);
		free(out);
		free(err);
	}
	close(pin[1]); /* s-waits stops, reports */
	while ((n = read(pout[0], buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	buf[len] = 0;
	close(pout[0]);
	CHECK(waitpid(p, &status, 0) == p);
	check_waits(buf);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "s-waits status %#x", status);
}

/*
 * From the first line of main()'s calls on, the text of @err with the
 * "[tid] " prefixes and every hex number and size taken out: what both
 * backends must print alike (malloc'ed). But malloc's first use, which
 * the agent's constructor makes before main() (getrandom() for its tcache,
 * brk()): not the program's with the agent.
 */
static char *from_main(const char *err)
{
	const char *s = strstr(err, "work(");
	char *o, *p;

	while (s && s > err && s[-1] != '\n')
		s--;
	o = p = calloc(1, s ? strlen(s) + 1 : 1);
	CHECK(o);
	while (s && *s) {
		if (*s == '[' && (s == err || s[-1] == '\n')) {
			s = strchr(s, ']');
			s = s ? s + 1 + (s[1] == ' ') : NULL;
			if (s && (!strncmp(s, "getrandom(", 10) || !strncmp(s, "brk(", 4))) {
				s = strchr(s, '\n');
				s = s ? s + 1 : NULL;
			}
			continue;
		}
		if (s[0] == '0' && s[1] == 'x') {
			*p++ = 'X';
			for (s += 2; (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'); s++)
				;
			continue;
		}
		if (!strncmp(s, "st_size=", 8)) {
			memcpy(p, "st_size=N", 9);
			p += 9;
			for (s += 8; *s >= '0' && *s <= '9'; s++)
				;
			continue;
		}
		*p++ = *s++;
	}
	return o;
}

/*
 * -s with -f attached to a running program (-p): the agent injected then
 * starts a control thread, whose start-up (rseq, set_robust_list, ~30
 * rt_sigaction probes, /proc/self/mem...) came before it could publish its
 * tid and was shown as the program's (48 lines). The session marks a
 * thread cloned by the injected thread during the injection as the
 * injected code's (lib/inject.c): every line is the program's thread's.
 */
TEST_TIMEOUT(agent_attach_syscalls_are_the_programs, 60)
{
	struct bg b = bg_start();
	char pid[16], tag[24], *out = NULL, *err = NULL, *l;
	const char *args[] = { "-b", "agent", "-s", "-f", "work", "-p", pid, "-d", "0.3", NULL };
	int lines = 0, bad = 0;

	snprintf(pid, sizeof(pid), "%d", (int)b.pid);
	snprintf(tag, sizeof(tag), "[%d] ", (int)b.pid);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	for (l = err; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (*l != '[')
			continue;
		lines++;
		if (strncmp(l, tag, strlen(tag))) {
			if (bad++ < 3)
				harness_note("not the program's: %.100s", l);
		}
	}
	CHECK_MSG(bad == 0, "%d of %d lines from another thread", bad, lines);
	CHECK(strstr(err, "] poll(") && strstr(err, "] work("));
	CHECK(!strstr(err, "rt_sigaction(SIGRT_"));
	bg_finish(&b);
	free(out);
	free(err);
}

/*
 * -s with -f on the agent (ltrace -S): the functions run in the target,
 * the syscalls come from the session's stops, and they make one stream in
 * time order: from main() on, exactly what -b ptrace prints. None of the
 * agent's own calls (its control thread, its constructor), signals or
 * rt_sigreturns appear; in JSON both kinds of record are there.
 */
TEST_TIMEOUT(agent_syscalls_with_functions, 120)
{
	const char *args[] = { "-b",	 "agent", "-s", "-f", "work", "--",
			       target(), "calls", "3",	"0",  "0",    NULL };
	const char *mt[] = { "-b",     "agent", "-s", "-f", "work", "--",
			     target(), "calls", "20", "3",  "10",   NULL };
	const char *json[] = { "-b", "agent",  "--format", "json", "-s", "-f", "work",
			       "--", target(), "calls",	   "2",	   "0",	 "0",  NULL };
	char *out = NULL, *err = NULL, *a, *p;

	CHECK_MSG(run_utrace(args, &out, &err) == 0, "%s", err);
	a = from_main(err);
	CHECK(!strstr(err, "futex(") && !strstr(err, "gettid()") && !strstr(err, "--- SIG") &&
	      !strstr(err, "rt_sigreturn") && !strstr(err, "pidfd_open"));
	free(out);
	free(err);
	args[1] = "ptrace";
	CHECK_MSG(run_utrace(args, &out, &err) == 0, "%s", err);
	p = from_main(err);
	CHECK_MSG(!strcmp(a, p) && strstr(a, "work() = 9\n") && strstr(a, "write(1, \"answers="),
		  "agent:\n%s\nptrace:\n%s", a, p);
	free(a);
	free(p);
	free(out);
	free(err);
	/* threads: every call, and the agent's thread never shows */
	CHECK_MSG(run_utrace(mt, &out, &err) == 0, "%s", err);
	CHECK_EQ(count(err, "] work("), 100); /* 50 entries and 50 returns */
	CHECK_EQ(count(err, "clone3("), 3);
	CHECK(!strstr(err, "--- SIG") && !strstr(err, "rt_sigreturn"));
	free(out);
	free(err);
	/* the program's execve() goes through the agent's interposer: still the program's */
	{
		const char *ex[] = { "-b",
				     "agent",
				     "-s",
				     "-f",
				     "work",
				     "--",
				     built_path("tests/targets/s-uprobes"),
				     "exec",
				     "3",
				     "2",
				     NULL };

		CHECK_MSG(run_utrace(ex, &out, &err) == 0, "%s", err);
		CHECK_EQ(count(err, "] execve("), 2);
		CHECK_EQ(count(err, "] work("), 10); /* 3 + 2 calls, entry and return */
		/* the new image's agent constructor is hidden as the first one's */
		CHECK(!strstr(err, "pidfd_open("));
		free(out);
		free(err);
	}
	CHECK_MSG(run_utrace(json, &out, &err) == 0, "%s", err);
	CHECK_EQ(count(err, "\"type\": \"entry\""), 2);
	CHECK(count(err, "\"type\": \"syscall\"") > 10);
	free(out);
	free(err);
}
