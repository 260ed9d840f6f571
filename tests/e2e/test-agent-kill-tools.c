/* SPDX-License-Identifier: MIT */
/*
 * test-agent-kill-tools.c - issue 10 item 7 on programs nobody here wrote:
 * `utrace -b agent -f HOT` SIGKILLed at random moments while it traces
 * `xz -T2` or `sort --parallel=2` (two threads each, ~0.3-1 s of work on
 * an input made here), attached (-p PID) or launching the command (--).
 * Every round: the program exits 0 and its output is byte for byte the
 * output of an untraced run.
 *
 * When the kill lands (a round's moment is in its diagnostics):
 *  - even rounds: uniformly over the first KILL_SPAN_US after utrace's
 *    start; on a quiet machine that covers its start-up, the injection
 *    (seize, remote calls: lib/inject.c), arming, the int3 -> jmp
 *    upgrades, draining and, with -d 0.1, the detach;
 *  - odd rounds: counted from the moment the session touched the target:
 *    in attach mode a thread of it shows utrace as its TracerPid (the
 *    injection has begun), then uniformly over KILL_EARLY_US, where the
 *    injection (a few ms) and the arming are; in launch mode the command
 *    has exec'ed, then over KILL_SPAN_US. On a loaded machine utrace's own
 *    start-up may take longer than the span, and these rounds still hit
 *    the phases that matter.
 * No assertion depends on the machine's speed: a round whose utrace was
 *  killed before the command existed (launch) or that never got to seize
 *  the target (it had finished) is counted and noted, not failed.
 *
 * UTRACE_KILL_TOOL_RUNS: rounds per combination (default 6; the 'slow'
 * suite runs 100). UTRACE_KILL_SEED replays the kill moments.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

#define KILL_SPAN_US 300000
#define KILL_EARLY_US 40000 /* from the seize: the injection, arming, the first upgrades */
#define SORT_BYTES (8u << 20)
#define XZ_BYTES (4u << 20)

struct tool {
	const char *name;
	const char *exe; /* /proc/PID/exe of the running command */
	const char *argv[12]; /* the input file is appended */
	const char *probes[8]; /* hot functions of its two threads */
};

static const struct tool tools[] = {
	{ "sort",
	  "/usr/bin/sort",
	  { "/usr/bin/sort", "--parallel=2", "-S", "64M", NULL },
	  { "-f", "libc:strcoll", "-f", "libc:pthread_mutex_lock", NULL } },
	{ "xz",
	  "/usr/bin/xz",
	  { "/usr/bin/xz", "-T2", "-0", "--block-size=1MiB", "-c", NULL },
	  { "-f", "liblzma:lzma_code", "-f", "liblzma:lzma_crc64", "-f", "libc:pthread_mutex_lock",
	    NULL } },
};

static char dir[64];

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static void msleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static unsigned int seed(void)
{
	const char *s = getenv("UTRACE_KILL_SEED");
	unsigned int v = s ? (unsigned int)strtoul(s, NULL, 0) : (unsigned int)time(NULL);

	harness_note("UTRACE_KILL_SEED=%u", v);
	return v;
}

static int runs(void)
{
	const char *s = getenv("UTRACE_KILL_TOOL_RUNS");

	return s && atoi(s) > 0 ? atoi(s) : 6;
}

/* Lines of hex keys and numbers from a fixed LCG: the same input every run. */
static void make_input(const char *path, size_t bytes)
{
	FILE *f = fopen(path, "we");
	uint64_t x = 0x9E3779B97F4A7C15ull;
	size_t n = 0;

	CHECK(f);
	while (n < bytes) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		n += (size_t)fprintf(f, "%08x %u line %u\n", (unsigned int)(x >> 32),
				     (unsigned int)(x >> 12) % 1000000u, (unsigned int)n);
	}
	CHECK(fclose(f) == 0);
}

static void input_of(const struct tool *tl, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s.in", dir, tl->name);
}

/* argv of @tl on its input; @buf holds the path. */
static void tool_argv(const struct tool *tl, const char **argv, char *buf, size_t size)
{
	int i;

	for (i = 0; tl->argv[i]; i++)
		argv[i] = tl->argv[i];
	input_of(tl, buf, size);
	argv[i++] = buf;
	argv[i] = NULL;
}

/*
 * Fork and exec @argv with stdin from @in (an fd; -1: /dev/null), stdout
 * to @out, stderr to @err (paths; NULL: /dev/null).
 */
static pid_t spawn(const char *const *argv, int in, const char *out, const char *err)
{
	pid_t p = fork();

	CHECK(p >= 0);
	if (p == 0) {
		int null = open("/dev/null", O_RDWR);
		int o = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : null;
		int e = err ? open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644) : null;

		signal(SIGPIPE, SIG_DFL); /* the test ignores it; the command must not */
		dup2(in >= 0 ? in : null, 0);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return p;
}

/* The two files have the same bytes. */
static bool same_file(const char *a, const char *b)
{
	FILE *fa = fopen(a, "re"), *fb = fopen(b, "re");
	bool same = fa && fb;
	char x[65536], y[65536];

	while (same) {
		size_t n = fread(x, 1, sizeof(x), fa), m = fread(y, 1, sizeof(y), fb);

		same = n == m && !memcmp(x, y, n);
		if (!n)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

static long file_size(const char *p)
{
	struct stat st;

	return stat(p, &st) ? -1 : (long)st.st_size;
}

/* The untraced output of every tool, once. */
static void make_refs(void)
{
	char in[96], ref[96];
	const char *argv[16];
	size_t i;
	int st;

	if (dir[0])
		return;
	snprintf(dir, sizeof(dir), "/tmp/utrace-kill-tools.XXXXXX");
	CHECK(mkdtemp(dir));
	for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		pid_t p;

		if (access(tools[i].exe, X_OK))
			harness_skip("%s is not installed", tools[i].exe);
		input_of(&tools[i], in, sizeof(in));
		make_input(in, !strcmp(tools[i].name, "xz") ? XZ_BYTES : SORT_BYTES);
		tool_argv(&tools[i], argv, in, sizeof(in));
		snprintf(ref, sizeof(ref), "%s/%s.ref", dir, tools[i].name);
		p = spawn(argv, -1, ref, NULL);
		CHECK_EQ(waitpid(p, &st, 0), p);
		CHECK_MSG(WIFEXITED(st) && !WEXITSTATUS(st), "untraced %s: status %#x",
			  tools[i].name, st);
	}
}

/* A child that writes the file @path into @fd, from @delay_us on. */
static pid_t feed(int fd, const char *path, long delay_us)
{
	pid_t p = fork();

	CHECK(p >= 0);
	if (p == 0) {
		char buf[65536];
		int in = open(path, O_RDONLY);
		ssize_t n;

		msleep_us(delay_us);
		while (in >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
			if (write(fd, buf, (size_t)n) != n)
				_exit(1);
		_exit(in < 0);
	}
	return p;
}

/* A thread of @pid is traced by @tracer. */
static bool traced_by(pid_t pid, pid_t tracer)
{
	char path[96], line[128];
	struct dirent *de;
	bool yes = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && !yes && (de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/status", (int)pid, de->d_name);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "TracerPid:", 10))
				yes = atoi(line + 10) == (int)tracer;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return yes;
}

/* The agent is mapped in @pid (the injection got as far as the dlopen). */
static bool agent_mapped(pid_t pid)
{
	char path[64], line[512];
	bool yes = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	while (f && !yes && fgets(line, sizeof(line), f))
		yes = strstr(line, "libutrace-agent") != NULL;
	if (f)
		fclose(f);
	return yes;
}

struct tally {
	int bad, ran, loaded, seized;
};

/*
 * One round: @launch or attach, kill after @us counted from utrace's start
 * (@from_touch false) or from its first touch of the target.
 */
static void round_one(const struct tool *tl, bool launch, int round, long us, long feed_us,
		      bool from_touch, struct tally *tally)
{
	char in[96], out[96], err[96], ref[96], pidarg[16];
	const char *targv[16], *uargv[40];
	long t0, t_kill = -1;
	pid_t t = 0, u, p, feeder = 0;
	int n = 0, i, st, tst = -1;
	bool loaded = false;

	tool_argv(tl, targv, in, sizeof(in));
	snprintf(out, sizeof(out), "%s/%s.out", dir, tl->name);
	snprintf(err, sizeof(err), "%s/%s.err", dir, tl->name);
	snprintf(ref, sizeof(ref), "%s/%s.ref", dir, tl->name);
	unlink(out);
	uargv[n++] = utrace();
	uargv[n++] = "-b";
	uargv[n++] = "agent";
	for (i = 0; tl->probes[i]; i++)
		uargv[n++] = tl->probes[i];
	uargv[n++] = "-d";
	uargv[n++] = "0.1";
	uargv[n++] = "-o";
	uargv[n++] = "/dev/null";
	uargv[n++] = round & 2 ? "-c" : "-q";
	if (launch) {
		uargv[n++] = "--";
		for (i = 0; targv[i]; i++)
			uargv[n++] = targv[i];
	} else {
		int pfd[2];

		/*
		 * Attached, the command reads its input from a pipe that a
		 * feeder fills from a random moment on: utrace finds it
		 * waiting in read() with one thread, or reading, or with its
		 * second thread at work. (xz -T2 on a file would have its
		 * workers, which block every signal, SIGTRAP included, before
		 * utrace is up: utrace -p refuses such a process untouched.)
		 */
		for (i = 0; targv[i + 1]; i++)
			;
		targv[i] = NULL; /* stdin, not the file */
		CHECK(pipe2(pfd, O_CLOEXEC) == 0);
		t = spawn(targv, pfd[0], out, err);
		close(pfd[0]);
		feeder = feed(pfd[1], in, feed_us);
		close(pfd[1]);
		snprintf(pidarg, sizeof(pidarg), "%d", (int)t);
		uargv[n++] = "-p";
		uargv[n++] = pidarg;
	}
	uargv[n] = NULL;
	/* launch: the command's stdout is utrace's */
	u = spawn(uargv, -1, launch ? out : NULL, NULL);
	t0 = now_us();
	if (from_touch) {
		/* at most 10 s for utrace to get that far; a busy poll, 0.2 ms */
		while (now_us() - t0 < 10000000 && waitpid(u, &st, WNOHANG) == 0) {
			pid_t c = launch ? launched(u, tl->exe) : (traced_by(t, u) ? t : 0);

			if (c) {
				t0 = now_us();
				break;
			}
			msleep_us(200);
		}
	}
	if (us > now_us() - t0)
		msleep_us(us - (now_us() - t0));
	if (waitpid(u, &st, WNOHANG) == 0) {
		/* in the middle of the injection (a thread of it is seized) */
		tally->seized += !launch && traced_by(t, u);
		t_kill = now_us() - t0;
		CHECK_EQ(kill(u, SIGKILL), 0);
		CHECK_EQ(waitpid(u, &st, 0), u);
	}
	if (t > 0) {
		loaded = agent_mapped(t);
		CHECK_EQ(waitpid(t, &tst, 0), t);
		CHECK_EQ(waitpid(feeder, &st, 0), feeder);
	} else {
		/*
		 * Launch mode: the command, if utrace had forked it, is ours
		 * now (PR_SET_CHILD_SUBREAPER). utrace -b agent forks nothing
		 * else.
		 */
		while ((p = wait(&st)) > 0) {
			CHECK_MSG(t == 0, "round %d: two orphans, %d and %d", round, (int)t,
				  (int)p);
			t = p;
			tst = st;
		}
	}
	if (t <= 0) {
		harness_note("launch %s round %d: utrace killed at %ld us, before it forked the "
			     "command",
			     tl->name, round, t_kill);
		return;
	}
	tally->loaded += loaded;
	tally->ran++;
	if (!(WIFEXITED(tst) && !WEXITSTATUS(tst) && same_file(out, ref))) {
		tally->bad++;
		harness_note(
			"%s %s round %d: FAILED: killed %ld us after %s (planned %ld us): "
			"input fed from %ld us; status %#x, output %ld bytes, %s the untraced one's %ld",
			launch ? "launch" : "attach", tl->name, round, t_kill,
			from_touch ? (launch ? "the command's exec" : "the seize") :
				     "utrace's start",
			us, launch ? 0 : feed_us, tst, file_size(out),
			same_file(out, ref) ? "same as" : "differs from", file_size(ref));
	}
}

/* Remove the inputs and outputs (a failed run keeps them, for a look). */
static void remove_dir(void)
{
	struct dirent *de;
	char path[160];
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%.64s", dir, de->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
	dir[0] = 0;
}

static void combination(const char *name, bool launch)
{
	const struct tool *tl = !strcmp(name, "xz") ? &tools[1] : &tools[0];
	unsigned int s = seed();
	struct tally tally = { 0 };
	int i, n = runs();

	make_refs();
	signal(SIGPIPE, SIG_IGN);
	CHECK_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	for (i = 0; i < n; i++) {
		long us = (long)(rand_r(&s) % (i & 1 && !launch ? KILL_EARLY_US : KILL_SPAN_US));

		/* attach: the input comes 0-600 ms after the command's start */
		round_one(tl, launch, i, us, (long)(rand_r(&s) % 600000), i & 1, &tally);
	}
	harness_note("%s %s: %d of %d rounds ran the command; attach: %d kills during the "
		     "injection, %d after the agent was loaded; %d bad",
		     launch ? "launch" : "attach", name, tally.ran, n, tally.seized, tally.loaded,
		     tally.bad);
	CHECK_MSG(tally.bad == 0, "%d of %d runs gave a wrong output or status", tally.bad,
		  tally.ran);
	remove_dir();
}

TEST_TIMEOUT(killed_tracer_sort_attach, 1800)
{
	combination("sort", false);
}

TEST_TIMEOUT(killed_tracer_sort_launch, 1800)
{
	combination("sort", true);
}

TEST_TIMEOUT(killed_tracer_xz_attach, 1800)
{
	combination("xz", false);
}

TEST_TIMEOUT(killed_tracer_xz_launch, 1800)
{
	combination("xz", true);
}
