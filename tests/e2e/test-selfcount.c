/* SPDX-License-Identifier: MIT */
/*
 * test-selfcount.c - no call the agent makes itself is counted as the
 * program's (issue 10, item 5). The ptrace backend loads nothing into the
 * target and counts exactly: on real programs (gawk, lua5.4, python3, xz
 * -T2) every hot libc function we probe has the same count with -b agent,
 * in launch mode and in attach mode. And the int3 -> jmp upgrade handler,
 * which runs in the program's busy threads while probes are armed, makes
 * no call that a probe sees (tests/targets/s-spin).
 *
 * Before: the interposers of sigprocmask()/pthread_sigmask() called
 * sigismember() (xz -T2: 5 calls more, python3: 56), signal() went
 * through our sigaction() and a sigemptyset() (gawk: 3 sigemptyset more,
 * libc's signal() never seen), a dlopen() waiting for the host called
 * getpid(), syscall() and clock_gettime() (16, 23, 13 more in a python3
 * started from a shell), execve() getpid() and errno, the upgrade handler
 * getpid(), syscall() and __errno_location() once per signalled thread,
 * a sigaction(SIGTRAP, ...) answered by the agent was never seen
 * (python3: one sigaction less), and the agent's own destructor called
 * __cxa_finalize() at exit (one more on every program).
 * gawk and lua5.4 are optional packages (scripts/deps.sh): skipped if
 * missing. Suite 'e2e', not parallel.
 */
#include <dlfcn.h>
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

/* independent programs, each compared with itself across backends */
HARNESS_JOBS(3)

/*
 * Hot libc functions, and ones the agent's own code used to call; a test
 * may add more (the fork child's) after the NULL.
 */
#define NR_FNS 20
static const char *fns[NR_FNS + 1] = {
	"malloc",      "free",	  "calloc",	    "realloc",	 "__errno_location",
	"getpid",      "syscall", "clock_gettime",  "sigaction", "sigemptyset",
	"sigismember", "strtol",  "__cxa_finalize", NULL
};

static void msleep_(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static char *slurp(const char *path)
{
	static char buf[1 << 16];
	ssize_t n = 0, r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	buf[0] = '\0';
	if (fd < 0)
		return buf;
	while (n < (ssize_t)sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += r;
	buf[n] = '\0';
	close(fd);
	return buf;
}

/* The -c row of @fn: its calls column. */
static long calls_of(const char *err, const char *fn)
{
	char want[64];
	const char *l;
	long calls = -1;

	snprintf(want, sizeof(want), " %s\n", fn);
	l = strstr(err, want);
	while (l && l > err && l[-1] != '\n')
		l--;
	if (!l || sscanf(l, "%*s %*s %*s %ld", &calls) != 1)
		return 0; /* -b ptrace leaves out a function never called */
	return calls;
}

/* -f libc:FN for each of fns[] after @args[0..n), then @tail. */
static int with_probes(const char **args, int n, const char *const *tail)
{
	static char specs[NR_FNS][64];
	unsigned int i;

	for (i = 0; fns[i]; i++) {
		snprintf(specs[i], sizeof(specs[i]), "libc:%s", fns[i]);
		args[n++] = "-f";
		args[n++] = specs[i];
	}
	for (i = 0; tail && tail[i]; i++)
		args[n++] = tail[i];
	args[n] = NULL;
	return n;
}

/*
 * Compare the counts of the two backends, but those of the functions in
 * @skip (space-separated names, each followed by a space), whose calls
 * depend on time, not on the tracer (xz: see XZ_TIMED).
 */
static void compare(long c[2][NR_FNS], const char *skip)
{
	char word[64];
	unsigned int i;

	CHECK(c[0][0] > 0 && c[1][0] > 0); /* malloc */
	for (i = 0; fns[i]; i++) {
		harness_note("%-16s agent %6ld ptrace %6ld", fns[i], c[0][i], c[1][i]);
		snprintf(word, sizeof(word), "%s ", fns[i]);
		if (skip && strstr(skip, word))
			continue;
		CHECK_MSG(c[0][i] == c[1][i], "%s: agent %ld, ptrace %ld", fns[i], c[0][i],
			  c[1][i]);
	}
}

/*
 * Launch mode: `utrace -b B -c [@opt] -f libc:FN... -- CMD` with both
 * backends.
 */
static void same_counts_launch_opt(const char *opt, const char *const *cmd, const char *skip)
{
	const char *args[80] = { "-b", NULL, "-c", opt };
	long c[2][NR_FNS];
	unsigned int i;
	int b, n, r;

	n = with_probes(args, opt ? 4 : 3, NULL);
	args[n++] = "--";
	for (i = 0; cmd[i]; i++)
		args[n++] = cmd[i];
	args[n] = NULL;
	for (b = 0; b < 2; b++) {
		char *out = NULL, *err = NULL;

		args[1] = b ? "ptrace" : "agent";
		r = run_utrace(args, &out, &err);
		if (r)
			note_lines(err);
		CHECK_EQ(r, 0);
		for (i = 0; fns[i]; i++)
			c[b][i] = calls_of(err, fns[i]);
		free(out);
		free(err);
	}
	compare(c, skip);
}

static void same_counts_launch(const char *const *cmd, const char *skip)
{
	same_counts_launch_opt(NULL, cmd, skip);
}

/* libc's own address of @fn in this process, and the base of its object. */
static uintptr_t libc_offset(const char *fn)
{
	void *h = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
	void *a = h ? dlsym(h, fn) : NULL;
	Dl_info info;

	CHECK_MSG(a && dladdr(a, &info) && info.dli_fbase, "libc's %s", fn);
	return (uintptr_t)a - (uintptr_t)info.dli_fbase;
}

/* Where libc is mapped in @pid (its offset-0 mapping); 0 if not (yet). */
static uintptr_t libc_base(pid_t pid)
{
	char path[64], line[512];
	uintptr_t base = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!base && fgets(line, sizeof(line), f)) {
		unsigned long lo, off;
		char *name = strchr(line, '/');

		if (name && strstr(name, "/libc.so.6\n") &&
		    sscanf(line, "%lx-%*x %*s %lx", &lo, &off) == 2 && off == 0)
			base = lo;
	}
	fclose(f);
	return base;
}

/*
 * Is every function of fns[] probed in @pid: do its first 16 bytes differ
 * from our own (unprobed) libc's? Works for both backends: an int3, a jmp,
 * or a jmp after a kept first instruction.
 */
static bool all_armed(pid_t pid)
{
	uintptr_t base = libc_base(pid);
	char path[64];
	bool all = base != 0;
	unsigned int i;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	for (i = 0; all && fns[i]; i++) {
		uintptr_t off = libc_offset(fns[i]);
		void *h = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
		unsigned char there[16];

		all = pread(fd, there, sizeof(there), (off_t)(base + off)) == sizeof(there) &&
		      memcmp(there, (char *)dlsym(h, fns[i]), sizeof(there)) != 0;
	}
	close(fd);
	return all;
}

/*
 * Is @pid blocked waiting for its stdin: /proc/PID/syscall says read(0,
 * ...) ("0 0x0 ") or poll() (7; xz polls stdin and its signal pipe).
 */
static bool blocked_reading_stdin(pid_t pid)
{
	char path[64];
	const char *s;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	s = slurp(path);
	return !strncmp(s, "0 0x0 ", 6) || !strncmp(s, "7 ", 2);
}

/*
 * Attach mode: @cmd starts, blocks reading its stdin (nothing it does
 * before is traced); `utrace -b B -c -f libc:FN... -p PID` attaches and
 * arms every probe; then @cmd gets @input (@reps times) and EOF, works and
 * exits, and utrace with it. Its counts are those of the same work.
 */
static void counts_attached(const char *const *cmd, const char *input, int reps,
			    const char *backend, long *c)
{
	char pidbuf[16], errpath[64];
	const char *args[80] = { "utrace", "-b", backend, "-c" };
	const char *tail[] = { "-p", pidbuf, NULL };
	int pin[2], st, i;
	pid_t pid, u;

	CHECK(pipe2(pin, O_CLOEXEC) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(pin[0], 0);
		dup2(null, 1);
		execv(cmd[0], (char *const *)cmd);
		_exit(127);
	}
	close(pin[0]);
	for (i = 0; i < 1000 && !blocked_reading_stdin(pid); i++)
		msleep_(10);
	CHECK_MSG(blocked_reading_stdin(pid), "%s never read its stdin", cmd[0]);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(errpath, sizeof(errpath), "/tmp/utrace-selfcount-%d.err", (int)getpid());
	with_probes(args, 4, tail);
	u = fork();
	CHECK(u >= 0);
	if (u == 0) {
		int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		dup2(e, 2);
		execv(utrace(), (char *const *)args);
		_exit(127);
	}
	for (i = 0; i < 3000 && !all_armed(pid); i++) {
		CHECK_MSG(waitpid(u, &st, WNOHANG) == 0, "utrace -b %s ended: %s", backend,
			  slurp(errpath));
		msleep_(10);
	}
	CHECK_MSG(all_armed(pid), "utrace -b %s: not armed: %s", backend, slurp(errpath));
	for (i = 0; i < reps; i++)
		CHECK(write(pin[1], input, strlen(input)) == (ssize_t)strlen(input));
	close(pin[1]);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %#x", cmd[0], st);
	CHECK_EQ(waitpid(u, &st, 0), u);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "utrace -b %s: status %#x: %s", backend,
		  st, slurp(errpath));
	for (i = 0; fns[i]; i++)
		c[i] = calls_of(slurp(errpath), fns[i]);
	unlink(errpath);
}

/*
 * Injected, the agent loads libgcc_s.so.1 (agent.c __utrace_agent_init():
 * the unwinder's guards), a program change of its own: one more object,
 * whose destructor calls __cxa_finalize() once at exit (docs/agent.md).
 */
#define ATTACH_CHANGED "__cxa_finalize "

static void same_counts_attach(const char *const *cmd, const char *input, int reps,
			       const char *skip)
{
	char skips[256];
	long c[2][NR_FNS];

	snprintf(skips, sizeof(skips), "%s%s", ATTACH_CHANGED, skip ? skip : "");
	counts_attached(cmd, input, reps, "agent", c[0]);
	counts_attached(cmd, input, reps, "ptrace", c[1]);
	compare(c, skips);
}

static void need(const char *path)
{
	if (access(path, X_OK))
		SKIP("no %s (scripts/deps.sh --with-optional)", path);
}

/*
 * xz polls and reads/writes its pipes non-blocking: how often it sees
 * EAGAIN (and asks errno) depends on the other end's timing, as do its
 * clock_gettime() calls; the other counts are exact.
 */
#define XZ_TIMED "clock_gettime __errno_location "
#define GAWK_WORK "for(i=0;i<3000;i++) a[i]=i \"x\"; s=0; for(k in a) s+=length(a[k]); print s"
#define LUA_WORK "local t={} for i=1,3000 do t[i]=tostring(i)..'x' end print(#t)"
#define PY_WORK "d={str(i):[i] for i in range(3000)}; print(len(d))"

TEST_TIMEOUT(launch_gawk, 120)
{
	const char *cmd[] = { "/usr/bin/gawk", "BEGIN{" GAWK_WORK "}", NULL };

	need(cmd[0]);
	same_counts_launch(cmd, NULL);
}

TEST_TIMEOUT(launch_lua, 120)
{
	const char *cmd[] = { "/usr/bin/lua5.4", "-e", LUA_WORK, NULL };

	need(cmd[0]);
	same_counts_launch(cmd, NULL);
}

TEST_TIMEOUT(launch_python3, 120)
{
	const char *cmd[] = { "/usr/bin/python3", "-c", "pass", NULL };

	need(cmd[0]);
	same_counts_launch(cmd, NULL);
}

TEST_TIMEOUT(launch_xz_threads, 120)
{
	const char *cmd[] = { "/usr/bin/xz", "-T2", "-c", harness_build_path("cli/utrace"), NULL };

	need(cmd[0]);
	same_counts_launch(cmd, XZ_TIMED);
}

/*
 * -F: the fork child's handler makes the child's arena with probes in
 * place (memfd, mmap, getpid, pthread_create...), and the child's control
 * thread starts: none of it is the child's call. Before: getpid 2 calls
 * more, sigaction 31 (the new control thread's, before it was cloaked).
 */
TEST_TIMEOUT(launch_python3_follow_fork, 120)
{
	const char *cmd[] = { "/usr/bin/python3", "-c",
			      "import os\nif os.fork() == 0: os._exit(0)\nos.wait()", NULL };
	static const char *const more[] = { "mmap",	 "munmap",	   "close", "fchmod",
					    "ftruncate", "pthread_create", NULL };
	unsigned int i, n;

	need(cmd[0]);
	for (n = 0; fns[n]; n++)
		;
	for (i = 0; more[i]; i++)
		fns[n + i] = more[i];
	same_counts_launch_opt("-F", cmd, NULL);
	fns[n] = NULL;
}

TEST_TIMEOUT(attach_gawk, 120)
{
	const char *cmd[] = { "/usr/bin/gawk", "BEGIN{getline l; " GAWK_WORK "}", NULL };

	need(cmd[0]);
	same_counts_attach(cmd, "go\n", 1, NULL);
}

TEST_TIMEOUT(attach_lua, 120)
{
	const char *cmd[] = { "/usr/bin/lua5.4", "-e", "io.read() " LUA_WORK, NULL };

	need(cmd[0]);
	same_counts_attach(cmd, "go\n", 1, NULL);
}

TEST_TIMEOUT(attach_python3, 120)
{
	const char *cmd[] = { "/usr/bin/python3", "-c",
			      "import sys; sys.stdin.readline(); " PY_WORK, NULL };

	need(cmd[0]);
	same_counts_attach(cmd, "go\n", 1, NULL);
}

TEST_TIMEOUT(attach_xz_threads, 120)
{
	const char *cmd[] = { "/usr/bin/xz", "-T2", "-c", NULL };
	static char line[4097];
	int i;

	need(cmd[0]);
	for (i = 0; i < 4096; i++)
		line[i] = (char)('a' + (i * 7 + i / 13) % 26);
	/*
	 * 1 MiB, one block of xz's multithreaded encoder: with more blocks
	 * than workers, how many output buffers it mallocs depends on how
	 * far its threads get ahead of each other (23 or 24 with either
	 * backend).
	 */
	same_counts_attach(cmd, line, 256, XZ_TIMED);
}

/*
 * The upgrade handler's own calls: a thread of tests/targets/s-spin spins
 * in user space, calling nothing, while utrace attaches three times with
 * probes on the libc functions the handler used to call (its main thread
 * is blocked in read(), which is not interrupted). The spinning thread is signalled to
 * move the int3 sites to jmps ("armed (jmp)" says the upgrade happened,
 * which takes the thread's answer from its handler); nothing is counted.
 * Before: getpid, syscall and __errno_location 1..2 calls a session.
 */
TEST_TIMEOUT(upgrade_handler_calls_not_counted, 120)
{
	const char *spin = harness_build_path("tests/targets/s-spin");
	static const char *const hfns[] = { "getpid", "syscall", "__errno_location" };
	int pin[2], pout[2], round, st;
	char line[64] = "", pid[16];
	pid_t t;

	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	t = fork();
	CHECK(t >= 0);
	if (t == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execl(spin, "s-spin", (char *)NULL);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	CHECK(read(pout[0], line, sizeof(line) - 1) > 0 && !strncmp(line, "ready ", 6));
	snprintf(pid, sizeof(pid), "%d", (int)t);
	for (round = 0; round < 3; round++) {
		const char *args[] = {
			"-vv",	       "-b", "agent",	     "-c",  "-f",
			"libc:getpid", "-f", "libc:syscall", "-f",  "libc:__errno_location",
			"-p",	       pid,  "-d",	     "0.3", NULL
		};
		char *out = NULL, *err = NULL;
		unsigned int i;

		CHECK_EQ(run_utrace(args, &out, &err), 0);
		CHECK_MSG(count(err, "armed (jmp)") >= 3, "round %d: %s", round, err);
		for (i = 0; i < 3; i++) {
			long c = calls_of(err, hfns[i]);

			harness_note("round %d: %s %ld", round, hfns[i], c);
			CHECK_MSG(c == 0, "round %d: %s counted %ld calls the program never made",
				  round, hfns[i], c);
		}
		free(out);
		free(err);
	}
	close(pin[1]); /* EOF: the spinner stops, checks its sum */
	CHECK_EQ(waitpid(t, &st, 0), t);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "s-spin: status %#x", st);
	close(pout[0]);
}
