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

static const char *json_check =
	"import json, sys, collections\n"
	"ent = collections.Counter(); ret = collections.Counter(); probes = set()\n"
	"for line in open(sys.argv[1]):\n"
	"    e = json.loads(line)\n"
	"    for k in ('ts_ns', 'pid', 'tid', 'type', 'probe', 'name'):\n"
	"        assert k in e, (k, e)\n"
	"    probes.add(e['probe'])\n"
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

TEST_TIMEOUT(agent_drops_are_counted, 120)
{
	char file[] = "/tmp/utrace-e2e-agent-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-b",   "agent", "--format", "json",  "-o",     file, "-f",
			       "work", "--",	target(),   "calls", "200000", NULL };
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
	setenv("UTRACE_AGENT_RING", "16", 1);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	unsetenv("UTRACE_AGENT_RING");
	CHECK(strstr(err, "events were lost"));
	CHECK_EQ(run_python(py_lost, file, &py), 0);
	note_lines(py);
	CHECK(strstr(py, "events+lost 400000 lost>0 True"));
	unlink(file);
	free(out);
	free(err);
	free(py);
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
	const char *k[] = { "-v", "-k", "-f", "work", "--", target(), "exit", "3", NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(a, &out, &err), 3);
	CHECK(strstr(err, "utrace: backend: agent\n"));
	free(out);
	free(err);
	CHECK_EQ(run_utrace(p, &out, &err), 3);
	CHECK(strstr(err, "utrace: backend: ptrace"));
	free(out);
	free(err);
	/* -k: the agent cannot, auto takes ptrace */
	CHECK_EQ(run_utrace(k, &out, &err), 3);
	CHECK(strstr(err, "utrace: backend: ptrace"));
	free(out);
	free(err);
}

/* s-trace loop in the background; its stdin is our pipe */
struct bg {
	pid_t pid;
	int in, out;
};

static struct bg bg_start(void)
{
	int pin[2], pout[2];
	struct bg b;
	char line[64] = "";
	ssize_t n;

	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	b.pid = fork();
	CHECK(b.pid >= 0);
	if (b.pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execl(target(), "s-trace", "loop", (char *)NULL);
		_exit(99);
	}
	close(pin[0]);
	close(pout[1]);
	b.in = pin[1];
	b.out = pout[0];
	n = read(b.out, line, sizeof(line) - 1);
	CHECK_MSG(n > 0 && !strncmp(line, "ready ", 6), "target said '%s'", line);
	return b;
}

/* close the target's stdin: it checks work() still computes, prints ok */
static void bg_finish(struct bg *b)
{
	char buf[256] = "";
	ssize_t n, len = 0;
	int status;

	close(b->in);
	while ((n = read(b->out, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	CHECK(waitpid(b->pid, &status, 0) == b->pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "target status %#x", status);
	CHECK(strstr(buf, "ok\n"));
	close(b->out);
}

/*
 * Every executable mapping of the target's main program holds exactly the
 * file's bytes: no int3, no jmp left behind. Return: mappings compared, or
 * -1 on a difference.
 */
static int code_matches_file(pid_t pid)
{
	char path[64], line[512], exe[256];
	FILE *maps;
	int mem, fd, n = 0;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	len = readlink(path, exe, sizeof(exe) - 1);
	if (len <= 0)
		return -1;
	exe[len] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "r");
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	mem = open(path, O_RDONLY);
	fd = open(exe, O_RDONLY);
	if (!maps || mem < 0 || fd < 0)
		return -1;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long start, end, off;
		char perms[8], file[256] = "";

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255s", &start, &end, perms, &off, file) <
			    4 ||
		    strcmp(perms, "r-xp") || strcmp(file, exe))
			continue;
		{
			size_t sz = end - start;
			char *a = malloc(sz), *b = calloc(1, sz);

			if (pread(mem, a, sz, (off_t)start) != (ssize_t)sz ||
			    pread(fd, b, sz, (off_t)off) <= 0 || memcmp(a, b, sz)) {
				/* the file's tail past EOF reads as zeros in both */
				n = -1;
			} else if (n >= 0) {
				n++;
			}
			free(a);
			free(b);
		}
	}
	fclose(maps);
	close(mem);
	close(fd);
	return n;
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

TEST(agent_unsupported_one_line)
{
	const char *pid[] = { "-b", "agent", "-f", "work", "-p", "1,2", NULL };
	const char *inj[] = {
		"-b", "agent", "--inject", "answer=1", "--", target(), "calls", NULL
	};
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(pid, &out, &err), 1);
	CHECK_MSG(count_lines(err) == 1 &&
			  strstr(err, "several processes (-p PID,PID) is not available with "
				      "the agent backend"),
		  "stderr: %s", err);
	free(out);
	free(err);
	CHECK_EQ(run_utrace(inj, &out, &err), 1);
	CHECK_MSG(count_lines(err) == 1 && strstr(err, "--inject is not available"), "stderr: %s",
		  err);
	free(out);
	free(err);
}
