/* SPDX-License-Identifier: MIT */
/*
 * test-agent-behaviour.c - the uprobes behaviour scenarios of
 * tests/ptrace/test-uprobes.c, run against the in-process agent: through
 * the CLI (`utrace -b agent`, launch and -p attach modes) and, for what the
 * CLI does not expose (depth limit, foreign trap counter, arm/disarm cycles
 * on one process), through the host API (lib/agent-host.c). Same target
 * (tests/targets/s-uprobes, which prints the counts it expects and checks
 * its own results), same independently computed expectations. The
 * scenarios that need no CLI and no host API run on every backend through
 * the public API in tests/ptrace/test-backends.c; the table names them
 * there ("test-backends.c ..."), and the CLI tests kept here check what
 * the CLI adds (its output, -p sessions of their own).
 *
 * test-uprobes.c scenario              where (here, unless named)
 * ------------------------------------ -----------------------------------
 * mt_exact_counts                      test-backends.c mt_exact_counts (the
 *                                      API, every backend)
 * mt_bpftrace_agrees                   mt_bpftrace_agrees (bpftrace's count
 *                                      of the same workload = the agent's)
 * fib_recursion_and_order              test-backends.c fib_recursion_and_order
 *                                      (records: the exact entry/return
 *                                      sequence of the recursion; exact
 *                                      counts of fib 20 by two probes on one
 *                                      point). Handler order: ptrace only
 * longjmp_unwinds_return_instances     test-backends.c
 *                                      longjmp_unwinds_return_instances
 * cxx_exception_through_return_probes  test-backends.c
 *                                      cxx_exception_through_return_probes
 *                                      (launch); attached here:
 *                                      cxx_exceptions_*_attached
 * pthread_exit_through_return_probes   test-backends.c
 *                                      pthread_exit_through_return_probes
 *                                      (the agent: pthread_exit only; a
 *                                      cancelled thread: a bug, noted there)
 * signal_handler_calls_probed_function test-backends.c
 *                                      signal_handler_calls_probed_function
 * dlopen_pending_spec                  dlopen_pending_spec (launch),
 *                                      dlclose_drops_and_reload_rearms,
 *                                      dlopen_bare_name_keeps_runpath,
 *                                      dlopen_nested_in_constructor,
 *                                      attach_dlopen_pending_spec (-p)
 * fork_child_runs_without_probes       fork_child_runs_without_probes
 * exec_drops_and_rearms_spec           exec_drops_and_rearms_spec (launch:
 *                                      re-armed in the new image),
 *                                      attach_exec_drops_probes (-p: the
 *                                      injected agent goes with the image)
 * set_return_skips_function            set_return_skips_function (utrace
 *                                      --inject, decided in the target; the
 *                                      in-process handler API is
 *                                      test-agent.c handler_forces_return_*)
 * deferred_registration_from_handler   n/a: handlers that (un)register
 *                                      probes are tracer-side API; the
 *                                      agent's handlers are built in
 * example_retval                       example_retval (utrace -r work)
 * example_count_hits                   attach_detach_cycles (-p PID -c -d:
 *                                      hits counted)
 * attach_probe_detach_restores_code    test-backends.c
 *                                      attach_probe_detach_restores_code
 *                                      (the agent's XOL area stays mapped
 *                                      by design, docs/agent.md: not checked)
 * fork_followed_child_is_probed        fork_followed_child_is_probed (-F:
 *                                      the child's own arena)
 * depth_overflow_is_counted            depth_overflow_is_counted (host API:
 *                                      the CLI has no depth option)
 * tail_call_chains_return_instances    test-backends.c
 *                                      tail_call_chains_return_instances
 * foreign_sigtraps_pass_through        foreign_sigtraps_pass_through (host
 *                                      API: the counter) + the CLI run
 * refused_site_fails_registration      test-backends.c
 *                                      refused_site_fails_registration (the
 *                                      API); the CLI's one-line reason here:
 *                                      refused_site_fails_with_reason
 *                                      (launch and -p)
 * unregister_while_running             unregister_while_running (host API)
 * register_before_attach_then_sync     n/a: the CLI resolves the SPECs after
 *                                      the injection; attach is covered by
 *                                      the attach_* tests
 * riprel_slot_near_code                riprel_slot_near_code (host API)
 * vfork_exec_keeps_parent_probes       test-backends.c
 *                                      vfork_exec_keeps_parent_probes (the
 *                                      session following forks or not)
 * coroutine_stack_switch_survives      test-backends.c
 *                                      coroutine_stack_switch_survives
 * attach_detach_cycles                 test-backends.c attach_detach_cycles
 *                                      (the API, every backend);
 *                                      here: attach_detach_cycles (utrace
 *                                      -p, 5 sessions on one process: the
 *                                      dormant agent is reused) +
 *                                      arm_disarm_cycles (host API)
 * deferred_registration_multithreaded  n/a (as deferred_registration_*)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utrace/elf.h"
#include "utrace/proc.h"
#include "utrace/spec.h"
#include "agent-host.h"
#include "../ptrace/ptrace-util.h"

/* Each test has its own targets and files; bpftrace probes a private copy. */
HARNESS_JOBS(3)

static const char *utrace(void)
{
	const char *u = getenv("UTRACE");

	return u && *u ? u : harness_build_path("cli/utrace");
}

static const char *s_uprobes(void)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s", target_path("s-uprobes"));
	return buf;
}

static const char *dl_lib(void)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s", target_path("libuprobe-dl.so"));
	return buf;
}

/* Newline-terminated lines in @s. */
static int count_lines_of(const char *s)
{
	int n = 0;

	while (s && (s = strchr(s, '\n'))) {
		n++;
		s++;
	}
	return n;
}

/* Parse "KEY=N" from the target's output. */
static long expect(const char *out, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "%s=", key);
	p = out ? strstr(out, pat) : NULL;
	return p ? atol(p + strlen(pat)) : -1;
}

/* utrace ARGS (NULL-terminated); both streams captured. */
static int run_utrace(const char *const *args, char **out, char **err)
{
	char *argv[64];
	int i = 0;

	argv[i++] = (char *)utrace();
	while (*args && i < 63)
		argv[i++] = (char *)*args++;
	argv[i] = NULL;
	return harness_run(argv, out, err, 240);
}

struct vline {
	long hits, returns, missed, points;
};

/* utrace -v's last line: "N entry hits, N returns, N returns missed, N probe points". */
static struct vline vline(const char *err)
{
	struct vline v = { -1, -1, -1, -1 };
	const char *p = err ? strstr(err, " entry hits, ") : NULL;

	CHECK_MSG(p, "no -v totals in:\n%s", err ? err : "");
	while (p > err && p[-1] != ' ')
		p--;
	CHECK_EQ(sscanf(p, "%ld entry hits, %ld returns, %ld returns missed, %ld probe points",
			&v.hits, &v.returns, &v.missed, &v.points),
		 4);
	return v;
}

/* Run utrace --format json with @args after the options; the events file's text. */
static char *run_json(const char *const *args, char **out, char **err)
{
	char file[] = "/tmp/utrace-behaviour-XXXXXX";
	const char *argv[40] = { "-b", "agent", "--format", "json", "-o", file };
	int fd = mkstemp(file), i = 6, rc;
	char *text = calloc(1, 1 << 20);
	ssize_t n;

	CHECK(fd >= 0 && text);
	while (*args && i < 39)
		argv[i++] = *args++;
	argv[i] = NULL;
	rc = run_utrace(argv, out, err);
	CHECK_MSG(rc == 0, "utrace exit %d:\n%s", rc, *err ? *err : "");
	n = read(fd, text, (1 << 20) - 1);
	CHECK(n >= 0);
	close(fd);
	unlink(file);
	return text;
}

/* JSON events of @type ("entry", "return") for function @name. */
static long events(const char *text, const char *type, const char *name)
{
	char t[64], nm[128];
	const char *line = text;
	long n = 0;

	snprintf(t, sizeof(t), "\"type\": \"%s\"", type);
	snprintf(nm, sizeof(nm), "\"name\": \"%s\"", name);
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[1024];

		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) ? len : sizeof(buf) - 1),
			 line);
		if (strstr(buf, t) && strstr(buf, nm))
			n++;
		line = nl ? nl + 1 : NULL;
	}
	return n;
}

/* Runtime address of @spec in live process @pid. */
static uint64_t sym_addr(pid_t pid, const char *text)
{
	struct utrace_image *img = utrace_image__open_pid(pid);
	struct utrace_spec spec;
	struct utrace_match *m = NULL;
	size_t nr = 0;
	uint64_t addr;

	CHECK(img);
	CHECK_EQ(utrace_spec__parse(text, &spec, NULL, 0), 0);
	CHECK_EQ(utrace_image__resolve(img, &spec, &m, &nr, NULL), 0);
	CHECK(nr >= 1);
	addr = m[0].addr;
	free(m);
	utrace_spec__clear(&spec);
	utrace_image__close(img);
	return addr;
}

/* The first @n code bytes of @sym in the file @path, as hex. */
static void file_bytes_hex(const char *path, const char *sym, char *hex, size_t n)
{
	struct utrace_elf *elf = utrace_elf__open(path);
	uint8_t b[32];
	size_t i, k;

	CHECK(elf);
	for (i = 0; i < utrace_elf__sym_count(elf); i++) {
		const struct utrace_sym *s = utrace_elf__sym(elf, i);

		if (!strcmp(s->name, sym) && !(s->flags & UTRACE_SYM_PLT)) {
			CHECK_EQ(utrace_elf__read(elf, s->addr, b, n), (long)n);
			for (k = 0; k < n; k++)
				sprintf(hex + 2 * k, "%02x", b[k]);
			utrace_elf__close(elf);
			return;
		}
	}
	CHECK(!"symbol not found");
}

/* The 16 code bytes of @spec (symbol @sym of file @path) in @pid equal the file's. */
static void check_code_restored(pid_t pid, const char *path, const char *spec, const char *sym)
{
	char hex[40], mem[40];
	uint8_t b[16];
	size_t i;

	CHECK_EQ(utrace_mem__read(pid, sym_addr(pid, spec), b, 16), 16);
	for (i = 0; i < 16; i++)
		sprintf(mem + 2 * i, "%02x", b[i]);
	file_bytes_hex(path, sym, hex, 16);
	CHECK_STREQ(mem, hex);
}

/* utrace in the background, stderr to @errfile (attach mode). */
static pid_t spawn_utrace(const char *const *args, const char *errfile)
{
	char *argv[64];
	pid_t pid;
	int i = 0;

	argv[i++] = (char *)utrace();
	while (*args && i < 63)
		argv[i++] = (char *)*args++;
	argv[i] = NULL;
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int null = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* Exit status of @pid within @sec seconds (killed and failed after). */
static int wait_exit(pid_t pid, int sec)
{
	int st, i;

	for (i = 0; i < sec * 100; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		msleep(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK_MSG(0, "pid %d still running after %d s", (int)pid, sec);
	return -1;
}

static char *slurp(const char *file)
{
	char *buf = calloc(1, 65536);
	int fd = open(file, O_RDONLY);
	ssize_t n;

	CHECK(buf && fd >= 0);
	n = read(fd, buf, 65535);
	CHECK(n >= 0);
	close(fd);
	return buf;
}

/* Wait until a probe is in at @addr of @pid: int3 or jmp as the first byte. */
/*
 * The probe's int3 or jmp is at the entry, or after a kept first
 * instruction (planner.c rule 5: push r64 is 1 or 2 bytes, sub rsp imm8 4).
 */
static void wait_armed(pid_t pid, uint64_t addr, int sec)
{
	static const int at[] = { 0, 1, 2, 4 };
	uint8_t c[8] = { 0 }, b = 0;
	int i, k;

	for (i = 0; i < sec * 100; i++) {
		if (utrace_mem__read(pid, addr, c, sizeof(c)) == sizeof(c))
			for (k = 0; k < 4; k++)
				if (c[at[k]] == 0xcc || c[at[k]] == 0xe9)
					return;
		b = c[0];
		msleep(10);
	}
	CHECK_MSG(0, "no probe at 0x%llx after %d s (byte %02x)", (unsigned long long)addr, sec, b);
}

/* ---- the CLI, launch mode ------------------------------------------------- */

/*
 * bpftrace's count of calls of work() for the same workload, or -1 if
 * bpftrace is missing or does not work here (as test-uprobes.c).
 */
static long bpftrace_count(const char *n)
{
	char prog[8192], cmd[8192], copy[4096], *out = NULL, *at;
	char *argv[] = { "/usr/bin/bpftrace", "-q", "-e", prog, "-c", cmd, NULL };
	long count = -1;

	if (access("/usr/bin/bpftrace", X_OK) || geteuid() != 0)
		return -1;
	/* its own copy: the tests beside this one trace s-uprobes too */
	private_copy(s_uprobes(), copy, sizeof(copy));
	snprintf(prog, sizeof(prog), "uprobe:%s:work { @ = count(); }", copy);
	snprintf(cmd, sizeof(cmd), "%s mt %s 8", copy, n);
	if (harness_run(argv, &out, NULL, 90) == 0 && out && (at = strstr(out, "@: ")))
		count = atol(at + 3);
	private_copy_remove(copy);
	free(out);
	return count;
}

/* 8 x 20,000 calls (kernel uprobes are slow: 8 x 100,000 took 85 s here) */
TEST_TIMEOUT(mt_bpftrace_agrees, 200)
{
	const char *args[] = { "-b", "agent",	  "-c", "-v",	 "-f", "work",
			       "--", s_uprobes(), "mt", "20000", "8",  NULL };
	char *out = NULL, *err = NULL;
	long bt = bpftrace_count("20000");

	if (bt < 0)
		SKIP("bpftrace is not usable here (needs root and kernel uprobes)");
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(bt, vline(err).hits);
	CHECK_EQ(bt, 160000);
	free(out);
	free(err);
}

TEST_TIMEOUT(dlopen_pending_spec, 120)
{
	const char *args[] = { "-v",	    "-f",     "libuprobe-dl:lib_func",
			       "-f",	    "work",   "--",
			       s_uprobes(), "dlopen", dl_lib(),
			       "300",	    NULL };
	char *out = NULL, *err = NULL, *ev = run_json(args, &out, &err);

	CHECK_MSG(strstr(err, "'libuprobe-dl:lib_func'") && strstr(err, "not loaded yet"), "%s",
		  err);
	CHECK_EQ(expect(out, "entries"), 300);
	CHECK_EQ(events(ev, "entry", "lib_func"), expect(out, "entries"));
	CHECK_EQ(events(ev, "return", "lib_func"), expect(out, "returns"));
	/* work(1) ran before the library existed, with the library SPEC pending */
	CHECK_EQ(events(ev, "entry", "work"), 1);
	CHECK(strstr(ev, "\"probe\": \"libuprobe-dl.so:lib_func\""));
	free(ev);
	free(out);
	free(err);
}

/*
 * dlopen("libuprobe-dl.so"), a bare name found through s-uprobes's RUNPATH
 * ($ORIGIN): glibc takes the search path from dlopen's caller, so the
 * agent's interposer passes such calls to libc untouched (the library is
 * then armed by the maps poll, a few ms late: counts are a lower bound).
 * It must load, and the program's own checks pass.
 */
TEST_TIMEOUT(dlopen_bare_name_keeps_runpath, 120)
{
	const char *args[] = { "-b",	 "agent",
			       "-c",	 "-v",
			       "-f",	 "libuprobe-dl:lib_func",
			       "--",	 s_uprobes(),
			       "dlopen", "libuprobe-dl.so",
			       "300",	 NULL };
	char *out = NULL, *err = NULL;
	struct vline v;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_MSG(expect(out, "entries") == 300, "%s\n%s", out, err);
	v = vline(err);
	CHECK(v.hits <= 300 && v.returns <= v.hits);
	harness_note("lib_func hits seen: %ld of 300", v.hits);
	free(out);
	free(err);
}

/*
 * A dlopen() inside a library constructor: the loader's lock is held while
 * the thread waits for the host in the agent's interposer, so the agent's
 * SYNC must not need that lock (it did: each such load stalled 2 s, the
 * interposer's time limit, before the probes went in). Exact counts, and
 * well under those 2 s.
 */
TEST_ALONE(dlopen_nested_in_constructor, 120) /* alone: it measures a time */
{
	char nest[4096];
	const char *args[] = { "-b", "agent",	  "-c",	    "-v", "-f",	    "libuprobe-dl:lib_func",
			       "--", s_uprobes(), "dlnest", nest, dl_lib(), "300",
			       NULL };
	char *out = NULL, *err = NULL;
	struct timespec t0, t1;
	struct vline v;
	double secs;

	snprintf(nest, sizeof(nest), "%s", target_path("libuprobe-nest.so"));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	CHECK_EQ(expect(out, "entries"), 300);
	v = vline(err);
	CHECK_EQ(v.hits, 300);
	CHECK_EQ(v.returns, 300);
	harness_note("nested dlopen run: %.3f s", secs);
	CHECK_MSG(secs < 1.5, "%.3f s: a dlopen() waited for the host to time out", secs);
	free(out);
	free(err);
}

TEST_TIMEOUT(dlclose_drops_and_reload_rearms, 120)
{
	const char *args[] = {
		"-b",	   "agent",  "-c",  "-v", "-f", "libuprobe-dl:lib_func", "--", s_uprobes(),
		"dlcycle", dl_lib(), "100", "5",  NULL
	};
	char *out = NULL, *err = NULL;
	struct vline v;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(expect(out, "entries"), 500);
	v = vline(err);
	/* one point per load: each dlclose dropped it, each dlopen armed a new one */
	CHECK_EQ(v.points, 5);
	CHECK_EQ(v.hits, expect(out, "entries"));
	CHECK_EQ(v.returns, expect(out, "returns"));
	free(out);
	free(err);
}

TEST_TIMEOUT(fork_child_runs_without_probes, 120)
{
	const char *args[] = { "-f", "work", "--", s_uprobes(), "fork", "50", "30", NULL };
	char *out = NULL, *err = NULL, *ev = run_json(args, &out, &err), hex[40], *p;

	CHECK_EQ(expect(out, "entries"), 100);
	CHECK_EQ(events(ev, "entry", "work"), expect(out, "entries"));
	CHECK_EQ(events(ev, "return", "work"), expect(out, "returns"));
	file_bytes_hex(s_uprobes(), "work", hex, 8);
	p = strstr(out, "child bytes=");
	CHECK(p);
	CHECK_MSG(!strncmp(p + 12, hex, 16), "child %.16s file %s", p + 12, hex);
	free(ev);
	free(out);
	free(err);
}

TEST_TIMEOUT(exec_drops_and_rearms_spec, 120)
{
	const char *args[] = { "-b", "agent",	  "-c",	  "-v", "-f", "work",
			       "--", s_uprobes(), "exec", "20", "30", NULL };
	const char *json[] = { "-f", "work", "--", s_uprobes(), "exec", "20", "30", NULL };
	char *out = NULL, *err = NULL, *ev;
	struct vline v;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(expect(out, "before_exec"), 20);
	CHECK_EQ(expect(out, "entries"), 30); /* the new image's own count */
	v = vline(err);
	CHECK_EQ(v.hits, 20 + 30);
	CHECK_EQ(v.returns, 20 + 30);
	CHECK_EQ(v.points, 2); /* dropped with the old image, armed again in the new */
	free(out);
	free(err);

	ev = run_json(json, &out, &err);
	CHECK_EQ(events(ev, "entry", "work"), 50);
	CHECK_EQ(events(ev, "return", "work"), 50);
	free(ev);
	free(out);
	free(err);
}

TEST_TIMEOUT(example_retval, 60)
{
	const char *args[] = {
		"-b", "agent", "-r", "work", "--", s_uprobes(), "mt", "5", "1", NULL
	};
	char *out = NULL, *err = NULL;
	long v;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	for (v = 1; v <= 9; v += 2) {
		char line[64];

		snprintf(line, sizeof(line), "] work() = %ld\n", v);
		CHECK_MSG(strstr(err, line), "no '%s' in:\n%s", line, err);
	}
	CHECK(!strstr(err, "] work(0)"));
	free(out);
	free(err);
}

TEST_TIMEOUT(fork_followed_child_is_probed, 60)
{
	const char *args[] = { "-F", "-f", "work", "--", s_uprobes(), "fork", "50", "30", NULL };
	char *out = NULL, *err = NULL, *ev = run_json(args, &out, &err);

	/* parent 2 x 50, child 30: with -F the child keeps its probes (own arena) */
	CHECK_EQ(events(ev, "entry", "work"), 2 * 50 + 30);
	CHECK_EQ(events(ev, "return", "work"), 2 * 50 + 30);
	free(ev);
	free(out);
	free(err);
}

TEST_TIMEOUT(foreign_sigtraps_pass_through_cli, 60)
{
	const char *args[] = { "-b", "agent",	  "-c",	     "-v", "-f", "work",
			       "--", s_uprobes(), "sigtrap", "50", NULL };
	char *out = NULL, *err = NULL;
	struct vline v;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(expect(out, "traps"), 100);
	v = vline(err);
	CHECK_EQ(v.hits, 50);
	CHECK_EQ(v.returns, 50);
	free(out);
	free(err);
}

TEST_TIMEOUT(refused_site_fails_with_reason, 60)
{
	const char *args[] = {
		"-b", "agent", "-f", "trap_fn", "--", s_uprobes(), "fib", "3", NULL
	};
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 1);
	/* the planner's reason, in one line; the command never ran */
	CHECK_MSG(strstr(err, "trap_fn") && strstr(err, "'ud2' cannot run out of line"), "%s", err);
	CHECK_EQ(count_lines_of(err), 1);
	CHECK(!strstr(out, "expect"));
	free(out);
	free(err);
}

/* ---- the CLI, attach mode (-p) --------------------------------------------- */

/*
 * set_return: get_value() returns 42 unless injected; --inject 'get_value=7'
 * makes every call return 7 without running it, @3 every third call.
 */
TEST_TIMEOUT(set_return_skips_function, 60)
{
	const char *all[] = { "-b", "agent",	 "-c",	  "--inject", "get_value=7",
			      "--", s_uprobes(), "value", "10",	      NULL };
	const char *third[] = { "-b", "agent",	   "-c",    "--inject", "get_value=7@3",
				"--", s_uprobes(), "value", "10",	NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(all, &out, &err), 0);
	CHECK_MSG(strstr(out, "sum=70\n"), "%s%s", out, err);
	free(out);
	free(err);
	CHECK_EQ(run_utrace(third, &out, &err), 0);
	/* calls 3, 6, 9 injected: 3 x 7 + 7 x 42 */
	CHECK_MSG(strstr(out, "sum=315\n"), "%s%s", out, err);
	free(out);
	free(err);
}

/*
 * Five utrace -p sessions one after the other on one process: each counts
 * calls, detaches with the code bytes equal to the file's; the target's own
 * check says ok at the end (the agent stays, dormant between sessions).
 */
TEST_TIMEOUT(attach_detach_cycles, 180)
{
	const char *args[] = { "loop", "8", NULL };
	struct target t = target_start("s-uprobes", args, -1);
	char pid[16], errfile[] = "/tmp/utrace-behaviour-err-XXXXXX", line[128], *err;
	const char *uargs[] = { "-b", "agent", "-c", "-v",  "-f", "work",
				"-p", pid,     "-d", "0.5", NULL };
	int fd = mkstemp(errfile), cycle;
	long total = 0;

	CHECK(fd >= 0);
	close(fd);
	target_wait_ready(&t);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	for (cycle = 0; cycle < 5; cycle++) {
		struct vline v;
		pid_t u = spawn_utrace(uargs, errfile);
		int rc = wait_exit(u, 60);

		err = slurp(errfile);
		CHECK_MSG(rc == 0, "cycle %d: utrace exit %d:\n%s", cycle, rc, err);
		v = vline(err);
		CHECK_MSG(v.hits > 0 && v.points == 1, "cycle %d: %s", cycle, err);
		total += v.hits;
		check_code_restored(t.pid, s_uprobes(), "work", "work");
		free(err);
	}
	unlink(errfile);
	harness_note("5 sessions: %ld entries", total);
	CHECK(write(t.in, "x\n", 2) == 2);
	close(t.in);
	t.in = -1;
	CHECK(read_line(t.out, line, sizeof(line), 10000) > 0);
	CHECK_MSG(strstr(line, " ok"), "%s", line);
	CHECK(total <= atol(strstr(line, "calls=") + 6));
	CHECK_EQ(target_reap(&t, 10000), 0);
}

/*
 * Wait until utrace @u's @errfile holds @key, however long a loaded
 * machine takes (the test's timeout is the bound); fail with what it said
 * if it ends first. The file's text, malloc'ed.
 */
static char *wait_said(pid_t u, const char *errfile, const char *key)
{
	for (;;) {
		char *err = slurp(errfile);
		int st;

		if (strstr(err, key))
			return err;
		if (waitpid(u, &st, WNOHANG) == u) {
			free(err);
			err = slurp(errfile);
			if (strstr(err, key))
				return err;
			CHECK_MSG(0, "utrace ended (status %#x) before saying '%s':\n%s", st, key,
				  err);
		}
		free(err);
		msleep(10);
	}
}

/* Wait until @errfile says "@what armed (". */
static void wait_said_armed(const char *errfile, const char *what)
{
	char key[128];
	int i;

	snprintf(key, sizeof(key), "%s armed (", what);
	for (i = 0; i < 1000; i++) {
		char *err = slurp(errfile);
		bool ok = strstr(err, key) != NULL;

		free(err);
		if (ok)
			return;
		usleep(10000);
	}
	CHECK_MSG(0, "never armed: %s", what);
}

/*
 * C++ exceptions through frames hijacked by return probes of an INJECTED
 * agent (not preloaded: its interposers of the unwinder are not bound): the
 * host guards the unwinder's entry points with internal probes. Without
 * them std::terminate() ends the target at its first throw.
 */
TEST_TIMEOUT(cxx_exceptions_through_hijacked_frames_attached, 120)
{
	const char *args[] = { "200", "10", "wait", NULL };
	struct target t;
	char pid[16], errfile[] = "/tmp/utrace-behaviour-err-XXXXXX", line[128], *err;
	const char *uargs[] = { "-b", "agent",	    "-c", "-v", "-v", "-f", "probed_throw",
				"-f", "probed_fib", "-p", pid,	"-d", "3",  NULL };
	int fd = mkstemp(errfile);
	struct vline v;
	pid_t u;

	if (access(harness_build_path("tests/agent/s-agent-cxx"), X_OK))
		SKIP("no C++ compiler: s-agent-cxx not built");
	CHECK(fd >= 0);
	close(fd);
	t = target_start("../agent/s-agent-cxx", args, -1);
	target_wait_ready(&t);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	u = spawn_utrace(uargs, errfile);
	wait_said_armed(errfile, "probed_fib");
	CHECK(write(t.in, "go\n", 3) == 3);
	CHECK(read_line(t.out, line, sizeof(line), 20000) > 0);
	CHECK_MSG(!strcmp(line, "ok 200") || !strcmp(line, "ok 200\n"), "target said '%s'", line);
	CHECK_EQ(target_reap(&t, 10000), 0);
	CHECK_EQ(wait_exit(u, 60), 0);
	err = slurp(errfile);
	unlink(errfile);
	v = vline(err);
	/* 200 rounds: 11 probed_throw calls, none returns; fib(10) = 177 calls */
	CHECK_MSG(v.hits == 200 * (11 + 177), "%s", err);
	CHECK_MSG(v.returns == 200 * 177, "%s", err);
	free(err);
}

/*
 * The same with two sessions at once, each with return probes (the second
 * one's agent is a private copy with its own return instances): each
 * guards the unwinder on its own instruction of the prologue.
 */
TEST_TIMEOUT(cxx_exceptions_two_sessions_attached, 120)
{
	const char *args[] = { "200", "10", "wait", NULL };
	struct target t;
	char pid[16], e1[] = "/tmp/utrace-behaviour-err-XXXXXX",
		      e2[] = "/tmp/utrace-behaviour-err-XXXXXX", line[128], *err;
	const char *a1[] = {
		"-b", "agent", "-c", "-v", "-v", "-f", "probed_throw", "-p", pid, NULL
	};
	const char *a2[] = { "-b", "agent", "-c", "-v", "-v", "-f", "probed_fib", "-p", pid, NULL };
	int f1 = mkstemp(e1), f2 = mkstemp(e2);
	struct vline v1, v2;
	pid_t u1, u2;

	if (access(harness_build_path("tests/agent/s-agent-cxx"), X_OK))
		SKIP("no C++ compiler: s-agent-cxx not built");
	CHECK(f1 >= 0 && f2 >= 0);
	close(f1);
	close(f2);
	t = target_start("../agent/s-agent-cxx", args, -1);
	target_wait_ready(&t);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	u1 = spawn_utrace(a1, e1);
	wait_said_armed(e1, "probed_throw");
	u2 = spawn_utrace(a2, e2);
	wait_said_armed(e2, "probed_fib");
	CHECK(write(t.in, "go\n", 3) == 3);
	CHECK(read_line(t.out, line, sizeof(line), 20000) > 0);
	CHECK_MSG(!strncmp(line, "ok 200", 6), "target said '%s'", line);
	CHECK_EQ(target_reap(&t, 10000), 0);
	/* the target has exited: each session sees it gone and prints its table */
	CHECK_EQ(wait_exit(u2, 60), 0);
	CHECK_EQ(wait_exit(u1, 60), 0);
	err = slurp(e1);
	v1 = vline(err);
	CHECK_MSG(v1.hits == 200 * 11 && v1.returns == 0, "%s", err);
	free(err);
	err = slurp(e2);
	v2 = vline(err);
	CHECK_MSG(v2.hits == 200 * 177 && v2.returns == 200 * 177, "%s", err);
	free(err);
	unlink(e1);
	unlink(e2);
}

TEST_TIMEOUT(attach_dlopen_pending_spec, 120)
{
	const char *args[] = { "dlwait", dl_lib(), "100", NULL };
	struct target t = target_start("s-uprobes", args, -1);
	char pid[16], errfile[] = "/tmp/utrace-behaviour-err-XXXXXX", line[128], *err;
	const char *uargs[] = { "-b", "agent", "-c", "-v", "-v", "-f", "libuprobe-dl:lib_func",
				"-p", pid,     NULL };
	int fd = mkstemp(errfile), rc;
	struct vline v;
	pid_t u;

	CHECK(fd >= 0);
	close(fd);
	target_wait_ready(&t);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	u = spawn_utrace(uargs, errfile);
	/* the agent is in and the SPEC pending: its warning is out */
	free(wait_said(u, errfile, "not loaded yet"));
	CHECK(write(t.in, "x\n", 2) == 2);
	CHECK(read_line(t.out, line, sizeof(line), 10000) > 0);
	CHECK_MSG(strstr(line, "loaded"), "%s", line);
	/*
	 * An injected agent does not see dlopen(): utrace polls the maps and
	 * arms; -v -v says so once the agent acknowledged the SYNC. (The int3
	 * in the code comes earlier, within the SYNC: calls made then raced
	 * with the rest of it under load.)
	 */
	free(wait_said(u, errfile, ":lib_func armed ("));
	wait_armed(t.pid, sym_addr(t.pid, "libuprobe-dl:lib_func"), 10);
	CHECK(write(t.in, "y\n", 2) == 2);
	CHECK(read_line(t.out, line, sizeof(line), 10000) > 0);
	CHECK_EQ(expect(line, "entries"), 100);
	kill(u, SIGINT);
	rc = wait_exit(u, 60);
	err = slurp(errfile);
	unlink(errfile);
	CHECK_MSG(rc == 0, "utrace exit %d:\n%s", rc, err);
	/* the library's bytes are the file's again */
	check_code_restored(t.pid, dl_lib(), "libuprobe-dl:lib_func", "lib_func");
	v = vline(err);
	CHECK_EQ(v.hits, 100);
	CHECK_EQ(v.returns, 100);
	close(t.in);
	t.in = -1;
	CHECK_EQ(target_reap(&t, 10000), 0);
	free(err);
}

/*
 * exec in attach mode: the injected agent goes with the old image (the
 * design's lifecycle: probes dropped). utrace says so in one line, does
 * not wait for an agent that is gone, and exits 0 when the program does;
 * the new image runs unprobed and correct (its own check: exit 0).
 */
TEST_TIMEOUT(attach_exec_drops_probes, 120)
{
	const char *args[] = { "execwait", NULL };
	struct target t = target_start("s-uprobes", args, -1);
	char pid[16], errfile[] = "/tmp/utrace-behaviour-err-XXXXXX", line[128], *err = NULL;
	const char *uargs[] = { "-b", "agent", "-c", "-v", "-v", "-f", "work", "-p", pid, NULL };
	int fd = mkstemp(errfile), rc;
	struct vline v;
	pid_t u;

	CHECK(fd >= 0);
	close(fd);
	target_wait_ready(&t);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	u = spawn_utrace(uargs, errfile);
	/*
	 * The exec only once utrace's SYNC is over (-v -v: "armed"): the int3
	 * is in the code earlier, within the SYNC, and an exec then made the
	 * SYNC fail ("the program ran execve()", exit 1) under load.
	 */
	free(wait_said(u, errfile, "work armed ("));
	wait_armed(t.pid, sym_addr(t.pid, "work"), 10);
	CHECK(write(t.in, "x\n", 2) == 2);
	target_wait_ready(&t); /* the new image's "ready": it calls work() now */
	err = wait_said(u, errfile, "ran execve()");
	CHECK_MSG(strstr(err, "attach again"), "%s", err);
	free(err);
	/* no probe leaked into the new image */
	check_code_restored(t.pid, s_uprobes(), "work", "work");
	close(t.in);
	t.in = -1;
	CHECK(read_line(t.out, line, sizeof(line), 10000) > 0);
	CHECK_MSG(strstr(line, " ok"), "%s", line);
	rc = wait_exit(u, 30);
	err = slurp(errfile);
	unlink(errfile);
	CHECK_MSG(rc == 0, "utrace exit %d:\n%s", rc, err);
	v = vline(err);
	CHECK_EQ(v.hits, 0); /* the old image never called work() while attached */
	CHECK_EQ(target_reap(&t, 10000), 0);
	free(err);
}

TEST_TIMEOUT(refused_site_fails_with_reason_attached, 120)
{
	const char *args[] = { "loop", "1", NULL };
	struct target t = target_start("s-uprobes", args, -1);
	char pid[16], *out = NULL, *err = NULL, line[128];
	const char *uargs[] = { "-b", "agent", "-f", "trap_fn", "-p", pid, NULL };

	target_wait_ready(&t);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	CHECK_EQ(run_utrace(uargs, &out, &err), 1);
	CHECK_MSG(strstr(err, "trap_fn") && strstr(err, "'ud2' cannot run out of line"), "%s", err);
	check_code_restored(t.pid, s_uprobes(), "trap_fn", "trap_fn");
	close(t.in);
	t.in = -1;
	CHECK(read_line(t.out, line, sizeof(line), 10000) > 0);
	CHECK_MSG(strstr(line, " ok"), "%s", line);
	CHECK_EQ(target_reap(&t, 10000), 0);
	free(out);
	free(err);
}

/* ---- the host API (what the CLI does not expose) --------------------------- */

#define ENTRY_RET (UTRACE_PF_COUNT | UTRACE_PF_ENTRY | UTRACE_PF_RETPROBE)

static void launch(struct ahost *h, const struct ahost_opts *o, const char *a, const char *b,
		   const char *c)
{
	char *argv[] = { (char *)s_uprobes(), (char *)a, (char *)b, (char *)c, NULL };
	int err = ahost_launch(h, o, argv);

	CHECK_MSG(err == 0, "launch: %d %s", err, h->why);
}

static int probe(struct ahost *h, const char *spec, uint32_t flags)
{
	int id = ahost_probe(h, spec, flags, false);

	CHECK_MSG(id >= 0, "probe %s: %d %s", spec, id, h->why);
	ahost_set_want(h, id,
		       ahost_abi(h, id)->mode == UTRACE_PM_JMP ? UTRACE_PS_JMP : UTRACE_PS_INT3);
	return id;
}

static void sync_ok(struct ahost *h)
{
	int r = ahost_sync(h);

	CHECK_MSG(r >= 0, "sync: %d %s", r, h->why);
}

/* The target's whole stdout (after it exited). */
static char *read_all(int fd)
{
	char *buf = calloc(1, 65536);
	size_t n = 0;
	ssize_t k;

	while (n < 65535 && (k = read(fd, buf + n, 65535 - n)) > 0)
		n += (size_t)k;
	return buf;
}

TEST_TIMEOUT(depth_overflow_is_counted, 60)
{
	struct ahost h;
	struct ahost_opts o = { .max_depth = 4, .pipe_stdout = true };
	struct utrace_abi_probe *a;
	char *out;
	int id;

	launch(&h, &o, "fib", "12", NULL);
	id = probe(&h, "fib", ENTRY_RET);
	sync_ok(&h);
	CHECK_EQ(ahost_start(&h), 0);
	CHECK_EQ(ahost_wait(&h), 0);
	out = read_all(h.stdout_fd);
	a = ahost_abi(&h, id);
	CHECK_EQ(ahost_hits(&h, id), expect(out, "entries"));
	CHECK(a->missed_ret > 0);
	CHECK_EQ(ahost_returns(&h, id) + a->missed_ret, ahost_hits(&h, id));
	harness_note("fib 12, depth 4: %llu hits, %llu returns, %llu missed",
		     (unsigned long long)ahost_hits(&h, id),
		     (unsigned long long)ahost_returns(&h, id), (unsigned long long)a->missed_ret);
	free(out);
	ahost_close(&h);
}

TEST_TIMEOUT(foreign_sigtraps_pass_through, 60)
{
	struct ahost h;
	struct ahost_opts o = { .pipe_stdout = true };
	char *out;
	int id;

	launch(&h, &o, "sigtrap", "50", NULL);
	id = probe(&h, "work", ENTRY_RET);
	sync_ok(&h);
	CHECK_EQ(ahost_start(&h), 0);
	CHECK_EQ(ahost_wait(&h), 0);
	out = read_all(h.stdout_fd);
	CHECK_EQ(expect(out, "traps"), 100);
	CHECK_EQ(ahost_hits(&h, id), 50);
	CHECK_EQ(ahost_returns(&h, id), 50);
	CHECK_EQ(h.hdr->foreign_traps, 100);
	free(out);
	ahost_close(&h);
}

TEST_TIMEOUT(riprel_slot_near_code, 60)
{
	struct ahost h;
	struct ahost_opts o = { .pipe_stdout = true };
	struct utrace_abi_probe *a;
	int64_t d;
	char *out;
	int id;

	launch(&h, &o, "riprel", "100", NULL);
	id = probe(&h, "rip_push", ENTRY_RET);
	sync_ok(&h);
	a = ahost_abi(&h, id);
	CHECK_MSG(a->state == UTRACE_PS_JMP || a->state == UTRACE_PS_INT3, "state %u err %d",
		  a->state, a->err);
	/* push [rip + sink] runs out of line only within rel32 reach of sink */
	d = (int64_t)(a->slot - a->addr);
	CHECK(d == (int32_t)d);
	CHECK_EQ(ahost_start(&h), 0);
	CHECK_EQ(ahost_wait(&h), 0);
	out = read_all(h.stdout_fd);
	CHECK_EQ(expect(out, "entries"), 100);
	CHECK_EQ(ahost_hits(&h, id), 100);
	CHECK_EQ(ahost_returns(&h, id), 100);
	free(out);
	ahost_close(&h);
}

/* Read the target's lines until one contains @what. */
static void wait_line(struct ahost *h, const char *what, char *line, size_t size)
{
	int i;

	for (i = 0; i < 10; i++) {
		CHECK(read_line(h->stdout_fd, line, size, 10000) > 0);
		if (strstr(line, what))
			return;
	}
	CHECK_MSG(0, "no '%s' from the target", what);
}

/* Wait (10 s at most) until probe @id counted @n more hits than @from. */
static uint64_t wait_hits(struct ahost *h, int id, uint64_t from, uint64_t n)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 1000; i++) {
		v = ahost_hits(h, id);
		if (v >= from + n)
			return v;
		msleep(10);
	}
	CHECK_MSG(0, "%llu hits, wanted %llu", (unsigned long long)v,
		  (unsigned long long)(from + n));
	return v;
}

/*
 * Arm, let 4 threads hit, disarm while they run, @cycles times: no hit
 * after a disarm, the code bytes equal the file's each time; the last
 * round is left armed for DETACH to remove.
 *
 * The agent never stops threads: a hit whose handler had passed its
 * "armed?" test when the disarm was acknowledged still adds its count a
 * moment later (seen once in ~20 disarms on 2 busy cores). Unlike
 * ptrace's, the guarantee is "no new hit": counted from SETTLE_MS after
 * the acknowledgement.
 */
#define SETTLE_MS 20

/*
 * The hits once no count came in for SETTLE_MS: a thread preempted inside
 * its handler on a loaded machine adds its count later than SETTLE_MS
 * after the acknowledgement (seen in a parallel run); it is no new hit.
 */
/* Is thread @tid of @pid running or runnable (state R)? */
static bool runnable(pid_t pid, const char *tid)
{
	char path[128], buf[512], *p;
	bool r = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%.15s/stat", (int)pid, tid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f)) {
			p = strrchr(buf, ')');
			r = p && p[1] == ' ' && p[2] == 'R';
		}
		fclose(f);
	}
	return r;
}

/* CPU time (ns) thread @tid of @pid has run, from its schedstat; -1 when gone. */
static long long run_ns(pid_t pid, const char *tid)
{
	char path[128], buf[128];
	long long ns = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%.15s/schedstat", (int)pid, tid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			ns = atoll(buf);
		fclose(f);
	}
	return ns;
}

/*
 * The hits once every thread of the target has run 2 ms of CPU since the
 * acknowledgement (a thread preempted inside its hit, which a loaded
 * machine can keep off a CPU for longer than any fixed wait, has then
 * added its count: the hit path is nanoseconds), and no count came in
 * for SETTLE_MS after that.
 */
static uint64_t settle(struct ahost *h, int id)
{
	char path[64];
	struct {
		char tid[16];
		long long ns;
	} th[64];
	int n = 0, i, k;
	uint64_t v, w;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)h->pid);
	d = opendir(path);
	while (d && (e = readdir(d)) && n < 64) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(th[n].tid, sizeof(th[n].tid), "%.15s", e->d_name);
		th[n].ns = run_ns(h->pid, e->d_name);
		n++;
	}
	if (d)
		closedir(d);
	for (k = 0; k < 500; k++) { /* 10 s at most */
		bool all = true;

		for (i = 0; i < n && all; i++) {
			long long now = run_ns(h->pid, th[i].tid);

			/* a sleeping thread (stdin, the agent's) is in no hit: only runnable ones count */
			all = now < 0 || now >= th[i].ns + 2000000 || !runnable(h->pid, th[i].tid);
		}
		if (all && k)
			break;
		msleep(SETTLE_MS);
	}
	v = ahost_hits(h, id);
	for (;;) {
		msleep(SETTLE_MS);
		w = ahost_hits(h, id);
		if (w == v)
			return v;
		v = w;
	}
}

static void arm_disarm(int cycles)
{
	struct ahost h;
	struct ahost_opts o = { .pipe_stdin = true, .pipe_stdout = true };
	char line[128];
	uint64_t before;
	int id, k;

	launch(&h, &o, "loop", "4", NULL);
	id = probe(&h, "work", ENTRY_RET);
	ahost_set_want(&h, id, UTRACE_PS_DISARMED);
	CHECK_EQ(ahost_start(&h), 0);
	wait_line(&h, "ready", line, sizeof(line));
	for (k = 0; k < cycles; k++) {
		ahost_set_want(&h, id, UTRACE_PS_JMP);
		sync_ok(&h);
		before = wait_hits(&h, id, ahost_hits(&h, id), 1000);
		ahost_set_want(&h, id, UTRACE_PS_DISARMED);
		sync_ok(&h);
		CHECK_EQ(ahost_abi(&h, id)->state, UTRACE_PS_DISARMED);
		before = settle(&h, id);
		msleep(100);
		CHECK_EQ(ahost_hits(&h, id), before);
		check_code_restored(h.pid, s_uprobes(), "work", "work");
	}
	ahost_set_want(&h, id, UTRACE_PS_JMP);
	sync_ok(&h);
	wait_hits(&h, id, ahost_hits(&h, id), 1000);
	CHECK_EQ(ahost_cmd(&h, UTRACE_CMD_DETACH, 0, 0), 0);
	CHECK_EQ(h.hdr->agent_state, UTRACE_AGENT_DORMANT);
	before = settle(&h, id);
	check_code_restored(h.pid, s_uprobes(), "work", "work");
	msleep(100);
	CHECK_EQ(ahost_hits(&h, id), before);
	close(h.stdin_fd);
	h.stdin_fd = -1;
	wait_line(&h, " ok", line, sizeof(line));
	CHECK_EQ(ahost_wait(&h), 0);
	harness_note("%d arm/disarm cycles, %llu hits in all", cycles,
		     (unsigned long long)ahost_hits(&h, id));
	ahost_close(&h);
}

/* alone: SETTLE_MS is a time (see above), kept clear of the other tests' load */
TEST_ALONE(unregister_while_running, 120)
{
	arm_disarm(3);
}

TEST_ALONE(arm_disarm_cycles, 200)
{
	arm_disarm(10);
}
