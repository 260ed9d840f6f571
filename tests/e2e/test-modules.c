/* SPDX-License-Identifier: MIT */
/*
 * test-modules.c - `utrace -m FILE.so` end to end: the example C probe
 * modules (examples/modules/slowcalls.c and fault.c) run by the agent
 * (inside the target, launch and attach mode) and by the ptrace backend
 * (in the tracer), the same .so for both. The oracle is
 * tests/targets/s-trace, which counts its own calls: `calls 20 3 10` makes
 * 50 calls of work(x), x = 0..19 in main and 0..9 in each of 3 threads, so
 * slowcalls counts calls=50 and big=10 (x >= 10) and logs x = 15..19; fault
 * makes every second answer() return 42 (the target prints
 * "answers=7,42,7,42"), logs the 50 returns of leaf() (5), reads leaf()'s
 * string ("hello", 50) and a bad address (-EFAULT, 50, no crash). An exec
 * (launch mode) re-loads the module in the new image. Then the
 * refusals: no such file, a group-writable module, a .so with no
 * descriptor, a module whose code uses SSE (-b agent only): one line each,
 * exit status 2 or 1, and the command never runs.
 * Suite 'e2e', not parallel.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

static const char *slowcalls(void)
{
	return harness_build_path("examples/modules/slowcalls.so");
}

static const char *fault(void)
{
	return harness_build_path("examples/modules/fault.so");
}

/* Both modules on `s-trace calls 20 3 10`: exact results, either backend. */
static void check_both(const char *backend)
{
	char *fault_path = strdup(fault());
	const char *args[] = { "-b",	 backend, "-m", slowcalls(), "-m", fault_path, "--",
			       target(), "calls", "20", "3",	     "10", NULL };
	char *out = NULL, *err = NULL;
	int x;

	CHECK_MSG(run_utrace(args, &out, &err) == 0, "%s", err);
	CHECK_EQ(target_count(out, "work"), 50);
	CHECK(strstr(out, "answers=7,42,7,42\n"));
	CHECK(strstr(err, "module slowcalls: calls=50 big=10 slow="));
	CHECK_MSG(strstr(err, "module fault: injected=2 hello=50 efault=50\n"), "%s", err);
	CHECK_EQ(count(err, "] slowcalls:work x="), 5);
	for (x = 15; x < 20; x++) {
		char line[64];

		snprintf(line, sizeof(line), "] slowcalls:work x=%d\n", x);
		CHECK_EQ(count(err, line), 1);
	}
	CHECK_EQ(count(err, "] fault:leaf ret=5 depth="), 50);
	CHECK(!strstr(err, "lost"));
	free(out);
	free(err);
	free(fault_path);
}

TEST_TIMEOUT(agent_modules_exact, 120)
{
	const char *args[] = { "-b",	 "agent", "-v", "-m", slowcalls(), "--",
			       target(), "calls", "20", "3",  "10",	   NULL };
	char *out = NULL, *err = NULL;

	check_both("agent");
	/* -v's last line counts a module's probe hits too (it said 0 entry hits) */
	CHECK_MSG(run_utrace(args, &out, &err) == 0, "%s", err);
	CHECK_MSG(strstr(err, "utrace: 50 entry hits, "), "%s", err);
	free(out);
	free(err);
}

TEST_TIMEOUT(ptrace_modules_exact, 120)
{
	check_both("ptrace");
}

/* JSON: one "module" object per record, one "module_counters" per module. */
TEST_TIMEOUT(agent_modules_json, 120)
{
	static const char *py =
		"import json, sys, collections\n"
		"n = collections.Counter(); xs = []\n"
		"for line in open(sys.argv[1]):\n"
		"    e = json.loads(line)\n"
		"    if e['type'] == 'module':\n"
		"        assert e['module'] == 'slowcalls' and e['probe'] == 'work', e\n"
		"        xs.append(e['values']['x']); n['rec'] += 1\n"
		"    elif e['type'] == 'module_counters':\n"
		"        c = e['counters']; n['calls'] += c['calls']; n['big'] += c['big']\n"
		"print(n['rec'], sorted(xs) == list(range(15, 20)), n['calls'], n['big'])\n";
	char file[] = "/tmp/utrace-mod-XXXXXX";
	int fd = mkstemp(file);
	const char *args[] = { "-b", "agent",  "--format", "json", "-o", file, "-m", slowcalls(),
			       "--", target(), "calls",	   "20",   "3",	 "10", NULL };
	char *out = NULL, *err = NULL, *py_out = NULL;

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(run_python(py, file, &py_out), 0);
	CHECK_STREQ(py_out, "5 True 50 10\n");
	unlink(file);
	free(out);
	free(err);
	free(py_out);
}

/* Attach mode: the agent loads the module into a running process. */
TEST_TIMEOUT(agent_module_attach, 120)
{
	int in[2], outp[2], st;
	char buf[256] = "", pidbuf[32];
	ssize_t n;
	pid_t pid;

	CHECK(pipe(in) == 0 && pipe(outp) == 0);
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(outp[1], 1);
		close(in[1]);
		close(outp[0]);
		execl(target(), target(), "loop", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	n = read(outp[0], buf, sizeof(buf) - 1);
	CHECK(n > 0 && !strncmp(buf, "ready ", 6));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	{
		const char *args[] = { "-b",	    "agent", "-d",   "1", "-m",
				       slowcalls(), "-p",    pidbuf, NULL };
		char *out = NULL, *err = NULL;
		const char *c;

		CHECK_MSG(run_utrace(args, &out, &err) == 0, "%s", err);
		c = strstr(err, "module slowcalls: calls=");
		CHECK(c && atol(c + strlen("module slowcalls: calls=")) > 100);
		free(out);
		free(err);
	}
	close(in[1]); /* the target checks work() still computes right, and exits */
	memset(buf, 0, sizeof(buf));
	n = read(outp[0], buf, sizeof(buf) - 1);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(buf, "ok"));
	close(outp[0]);
}

/*
 * Attach mode, a target in another mount namespace that has another file at
 * the module's path: refused in one line (exit 1), the target runs on.
 * Needs unshare -m (root): skipped otherwise.
 */
TEST_TIMEOUT(agent_module_other_namespace, 120)
{
	char dir[] = "/tmp/utrace-mod-XXXXXX", path[128], script[1024], pidbuf[32], buf[256] = "";
	int in[2], outp[2], st;
	ssize_t n;
	pid_t sh, pid;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/slowcalls.so", dir);
	snprintf(script, sizeof(script), "cp '%s' '%s'", slowcalls(), path);
	CHECK_EQ(system(script), 0);
	/* in the new namespace, a tmpfs over @dir holds fault.so under the same name */
	snprintf(script, sizeof(script),
		 "mount -t tmpfs none '%s' && cp '%s' '%s' && exec '%s' loop || echo fail", dir,
		 fault(), path, target());
	CHECK(pipe(in) == 0 && pipe(outp) == 0);
	sh = fork();
	if (sh == 0) {
		dup2(in[0], 0);
		dup2(outp[1], 1);
		dup2(outp[1], 2);
		close(in[1]);
		close(outp[0]);
		execlp("unshare", "unshare", "-m", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	n = read(outp[0], buf, sizeof(buf) - 1);
	if (n <= 0 || strncmp(buf, "ready ", 6)) {
		close(in[1]);
		waitpid(sh, &st, 0);
		unlink(path);
		rmdir(dir);
		SKIP("unshare -m not permitted here");
	}
	pid = (pid_t)atoi(buf + 6);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	{
		const char *args[] = { "-b", "agent", "-d", "1", "-m", path, "-p", pidbuf, NULL };
		char *out = NULL, *err = NULL;

		CHECK_MSG(run_utrace(args, &out, &err) == 1, "%s", err);
		CHECK_MSG(count_lines(err) == 1 && strstr(err, "another file at that path"), "%s",
			  err);
		free(out);
		free(err);
	}
	close(in[1]);
	memset(buf, 0, sizeof(buf));
	n = read(outp[0], buf, sizeof(buf) - 1);
	CHECK(waitpid(sh, &st, 0) == sh);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(buf, "ok"));
	close(outp[0]);
	unlink(path);
	rmdir(dir);
}

/* One line on stderr, the given status, and the command never ran. */
static void check_refused(const char *backend, const char *module, int status, const char *what)
{
	const char *args[] = { "-b",	backend, "-m", module, "--", target(),
			       "calls", "1",	 "0",  "0",    NULL };
	char *out = NULL, *err = NULL;

	CHECK_MSG(run_utrace(args, &out, &err) == status, "%s", err);
	CHECK_MSG(count_lines(err) == 1, "%s", err);
	CHECK_MSG(strstr(err, what), "%s", err);
	CHECK(!strstr(out, "work="));
	free(out);
	free(err);
}

TEST_TIMEOUT(module_refusals, 120)
{
	char dir[] = "/tmp/utrace-mod-XXXXXX", path[128], cmd[512];

	check_refused("agent", "/nonexistent/x.so", 2, "No such file");
	check_refused("ptrace", "/nonexistent/x.so", 2, "No such file");
	check_refused("agent", harness_build_path("tests/targets/m-nodesc.so"), 2,
		      "no 'utrace_module' descriptor");
	check_refused("agent", harness_build_path("tests/targets/m-simd.so"), 1,
		      "rebuild it with -mgeneral-regs-only");
	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/slowcalls.so", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0664 '%s'", slowcalls(), path, path);
	CHECK_EQ(system(cmd), 0);
	check_refused("agent", path, 2, "is writable by its group");
	check_refused("ptrace", path, 2, "is writable by its group");
	unlink(path);
	rmdir(dir);
}

/* exec: the new image's agent loads the module again (s-uprobes: 10 calls, exec, 20 calls). */
TEST_TIMEOUT(agent_module_exec_reload, 120)
{
	const char *args[] = { "-b",	    "agent", "-m",
			       slowcalls(), "--",    harness_build_path("tests/targets/s-uprobes"),
			       "exec",	    "10",    "20",
			       NULL };
	char *out = NULL, *err = NULL;

	CHECK_MSG(run_utrace(args, &out, &err) == 0, "%s", err);
	CHECK(strstr(out, "expect before_exec=10\n"));
	CHECK(strstr(out, "expect entries=20 "));
	CHECK_MSG(strstr(err, "module slowcalls: calls=30 big=10 slow="), "%s", err);
	free(out);
	free(err);
}

/* -F: fork children keep the module; their counters add up (2 children + parent, 5 each). */
TEST_TIMEOUT(agent_module_fork_children, 120)
{
	const char *args[] = { "-b",	 "agent", "-F", "-m", slowcalls(), "--",
			       target(), "fork",  "2",	"5",  NULL };
	char *out = NULL, *err = NULL;

	CHECK_MSG(run_utrace(args, &out, &err) == 0, "%s", err);
	CHECK(strstr(out, "parent work=5 children=2"));
	CHECK_MSG(strstr(err, "module slowcalls: calls=15 big=0 slow="), "%s", err);
	free(out);
	free(err);
}

/* The SSE module is fine where handlers run in the tracer; -b auto picks ptrace for it. */
TEST_TIMEOUT(ptrace_runs_simd_module, 120)
{
	const char *args[] = {
		"-b", "ptrace", "-m",	 harness_build_path("tests/targets/m-simd.so"),
		"--", target(), "calls", "20",
		"3",  "10",	NULL
	};
	char *out = NULL, *err = NULL;

	const char *auto_args[] = { "-v", "-m",	    harness_build_path("tests/targets/m-simd.so"),
				    "--", target(), "calls",
				    "20", "3",	    "10",
				    NULL };

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK(strstr(err, "module simd: calls=50\n"));
	free(out);
	free(err);
	/* -b auto: such a module sends the handlers to the tracer, and -v says why */
	CHECK_EQ(run_utrace(auto_args, &out, &err), 0);
	CHECK_MSG(strstr(err, "backend: ptrace (auto: module '"), "%s", err);
	CHECK(strstr(err, "module simd: calls=50\n"));
	free(out);
	free(err);
}
