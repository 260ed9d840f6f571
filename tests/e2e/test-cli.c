/* SPDX-License-Identifier: MIT */
/*
 * test-cli.c - option spellings of the utrace command that users carry over
 * from strace, and usage errors. Runs $UTRACE.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

/* Calls of @name in a -c table, or -1 if absent. */
static long calls_of(const char *table, const char *name)
{
	const char *line = table;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[256];
		double pct, secs;
		long usecs, calls;
		char sys[64];

		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			/* "% time seconds usecs/call calls [errors] syscall" */
			if (sscanf(buf, "%lf %lf %ld %ld %*s %63s", &pct, &secs, &usecs, &calls,
				   sys) == 5 ||
			    sscanf(buf, "%lf %lf %ld %ld %63s", &pct, &secs, &usecs, &calls, sys) ==
				    5) {
				if (!strcmp(sys, name))
					return calls;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}

TEST(dash_f_before_option_means_follow_forks)
{
	char *a[] = { (char *)utrace(),	      "-c", "-f", "-s", "--", "sh", "-c",
		      "/bin/true; /bin/true", NULL };
	char *b[] = { (char *)utrace(),	      "-c", "-F", "-s", "--", "sh", "-c",
		      "/bin/true; /bin/true", NULL };
	char *c[] = {
		(char *)utrace(), "-c", "-s", "--", "sh", "-c", "/bin/true; /bin/true", NULL
	};
	char *ea = NULL, *eb = NULL, *ec = NULL;

	CHECK_EQ(harness_run(a, NULL, &ea, 60), 0);
	CHECK_EQ(harness_run(b, NULL, &eb, 60), 0);
	CHECK_EQ(harness_run(c, NULL, &ec, 60), 0);
	/* sh, the forked /bin/true and the last one: every execve is seen with -f as with -F */
	CHECK_MSG(calls_of(ea, "execve") == calls_of(eb, "execve"), "-f:\n%s\n-F:\n%s", ea, eb);
	CHECK_MSG(calls_of(ea, "execve") > calls_of(ec, "execve"), "-f:\n%s\nnone:\n%s", ea, ec);
	free(ea);
	free(eb);
	free(ec);
}

TEST(usage_errors_exit_2_with_one_line)
{
	/* each NULL-terminated: 7 slots for the 6-word cases (6 left execvp reading past) */
	char *cases[][7] = {
		{ (char *)utrace(), "-s", NULL }, /* nothing to trace */
		{ (char *)utrace(), "-p", "12x", "-s", NULL }, /* bad pid */
		{ (char *)utrace(), "--format", "xml", "-s", "--", "true" }, /* bad format */
		{ (char *)utrace(), "-d", "-1", "-s", "--", "true" }, /* bad duration */
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *err = NULL;
		int rc = harness_run(cases[i], NULL, &err, 20);
		const char *nl;

		CHECK_MSG(rc == 2, "case %zu: rc %d: %s", i, rc, err);
		CHECK_MSG(!strncmp(err, "utrace: ", 8), "case %zu: %s", i, err);
		nl = strchr(err, '\n');
		/* one line, optionally followed by the "Try 'utrace --help'" hint */
		CHECK_MSG(nl && (!nl[1] || !strncmp(nl + 1, "Try ", 4)), "case %zu: %s", i, err);
		free(err);
	}
}

/* Run utrace with @args; its stderr must be exactly @line; return the status. */
static int run_line(const char *const *args, const char *line)
{
	char *err = NULL;
	int rc = run_utrace(args, NULL, &err);

	CHECK_MSG(err && !strcmp(err, line), "%s: got \"%s\", want \"%s\"", args[0], err ? err : "",
		  line);
	free(err);
	return rc;
}

TEST(write_error_on_output_exits_1_with_one_line)
{
	static const char *const backends[] = { "agent", "ptrace" };
	static const char *const formats[] = { "text", "json", "chrome" };
	const char *full = "utrace: cannot write to '/dev/full': No space left on device (output "
			   "was lost; free space or choose another -o FILE)\n";
	char *sh[16] = { "sh", "-c", "exec \"$@\" 2>/dev/full", "sh", (char *)utrace() };
	size_t b, f;

	for (b = 0; b < 2; b++) {
		for (f = 0; f < 3; f++) {
			const char *a[] = { "-b", backends[b], "--format", formats[f],
					    "-o", "/dev/full", "-f",	   "work",
					    "--", target(),    "calls",	   "3",
					    "0",  "0",	       NULL };

			CHECK_MSG(run_line(a, full) == 1, "-b %s --format %s", backends[b],
				  formats[f]);
		}
		{
			/* the -c table */
			const char *a[] = { "-b", backends[b], "-c", "-o",     "/dev/full",
					    "-f", "work",      "--", target(), "calls",
					    "3",  "0",	       "0",  NULL };

			CHECK_MSG(run_line(a, full) == 1, "-b %s -c", backends[b]);
		}
	}
	{
		const char *a[] = { "-s", "-o", "/dev/full", "--", "true", NULL };
		const char *c[] = { "-s", "-c", "-o", "/dev/full", "--", "true", NULL };

		CHECK_EQ(run_line(a, full), 1);
		CHECK_EQ(run_line(c, full), 1);
	}
	/* events, or the -c table, on a stderr that cannot be written */
	sh[5] = "-s";
	sh[6] = "--";
	sh[7] = "true";
	CHECK_EQ(harness_run(sh, NULL, NULL, 60), 1);
	sh[5] = "-c";
	sh[6] = "-f";
	sh[7] = "work";
	sh[8] = "--";
	sh[9] = (char *)target();
	sh[10] = "exit";
	sh[11] = "0";
	CHECK_EQ(harness_run(sh, NULL, NULL, 60), 1);
	{
		/* -l lists on stdout */
		char *l[] = { "sh",   "-c", "exec \"$@\" >/dev/full", "sh", (char *)utrace(), "-l",
			      "work", "--", (char *)target(),	      NULL };
		char *err = NULL;

		CHECK_EQ(harness_run(l, NULL, &err, 60), 1);
		CHECK_STREQ(err, "utrace: cannot write to stdout: No space left on device (output "
				 "was lost)\n");
		free(err);
	}
}

TEST(inject_every_not_a_positive_integer_is_a_usage_error)
{
	static const char *const bad[] = { "libc:malloc=0@-1", "work=0@ 2", "openat=ENOENT@-1",
					   "openat=ENOENT@+1" };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a[] = {
			"--inject", bad[i], "--", target(), "calls", "1", "0", "0", NULL
		};
		char line[256];

		snprintf(line, sizeof(line),
			 "utrace: bad --inject '%s': @EVERY must be a positive integer\n", bad[i]);
		CHECK_MSG(run_line(a, line) == 2, "%s", bad[i]);
	}
}

TEST(command_that_cannot_run_says_why_with_a_shells_status)
{
	static const char *const modes[][4] = { { "-s", NULL },
						{ "-f", "work", NULL },
						{ "-b", "ptrace", "-f", "work" } };
	char dir[] = "/tmp/utrace-cli-XXXXXX", file[64], line[512];
	size_t m;
	FILE *f;

	CHECK(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/not-exec", dir);
	f = fopen(file, "w");
	CHECK(f);
	fputs("#!/bin/sh\necho ran\n", f);
	fclose(f);
	for (m = 0; m < 3; m++) {
		const char *a[8] = { 0 };
		int n = 0, k;

		for (k = 0; k < 4 && modes[m][k]; k++)
			a[n++] = modes[m][k];
		a[n++] = "--";
		a[n] = dir;
		snprintf(line, sizeof(line),
			 "utrace: cannot run '%s': Is a directory (give the program to run)\n",
			 dir);
		CHECK_MSG(run_line(a, line) == 126, "%s", modes[m][0]);
		a[n] = file;
		snprintf(line, sizeof(line),
			 "utrace: cannot run '%s': Permission denied (not an executable file: "
			 "check its mode and the name)\n",
			 file);
		CHECK_MSG(run_line(a, line) == 126, "%s", modes[m][0]);
		a[n] = "utrace-no-such-command";
		CHECK_MSG(run_line(a, "utrace: cannot run 'utrace-no-such-command': command not "
				      "found (check the name and PATH)\n") == 127,
			  "%s", modes[m][0]);
		a[n] = "/no/such/program";
		CHECK_MSG(run_line(a, "utrace: cannot run '/no/such/program': No such file or "
				      "directory (check the name)\n") == 127,
			  "%s", modes[m][0]);
	}
	unlink(file);
	rmdir(dir);
}

/* Lines in @path, -1 if it cannot be read. */
static int file_lines(const char *path)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f))
		n++;
	fclose(f);
	return n;
}

TEST(auto_starts_a_static_program_once_with_ptrace)
{
	const char *st = harness_build_path("tests/targets/s-static");
	char dir[] = "/tmp/utrace-cli-XXXXXX", log[64], script[64], line[1024];
	char *out = NULL, *err = NULL;
	FILE *f;

	if (access(st, X_OK))
		SKIP("no s-static (no libc.a to link it)");
	CHECK(mkdtemp(dir));
	snprintf(log, sizeof(log), "%s/log", dir);
	{
		const char *a[] = { "-v", "-f", "work", "--", st, log, NULL };

		CHECK_EQ(run_utrace(a, &out, &err), 0);
		CHECK_MSG(file_lines(log) == 1, "it ran %d times: %s", file_lines(log), err);
		snprintf(line, sizeof(line),
			 "utrace: backend: ptrace (auto: the agent cannot be preloaded: '%s' is "
			 "statically linked)\n",
			 st);
		CHECK_MSG(strstr(err, line), "%s", err);
		CHECK_MSG(strstr(err, "work() = 3\n"), "%s", err);
		free(out);
		free(err);
	}
	{
		const char *a[] = { "-b", "agent", "-f", "work", "--", st, log, NULL };

		snprintf(line, sizeof(line),
			 "utrace: cannot preload the agent: '%s' is statically linked (use -b "
			 "ptrace)\n",
			 st);
		CHECK_EQ(run_line(a, line), 1);
		CHECK_EQ(file_lines(log), 1); /* not run */
	}
	/* a #! script: decided on its interpreter */
	snprintf(script, sizeof(script), "%s/script", dir);
	f = fopen(script, "w");
	CHECK(f);
	fprintf(f, "#!%s %s\n", st, log);
	fclose(f);
	CHECK(!chmod(script, 0755));
	{
		const char *a[] = { "-b", "agent", "-f", "work", "--", script, NULL };

		CHECK_EQ(run_line(a, line), 1);
		CHECK_EQ(file_lines(log), 1);
	}
	unlink(script);
	unlink(log);
	rmdir(dir);
}

TEST(auto_starts_a_setuid_program_once_for_a_user)
{
	char dir[] = "/tmp/utrace-cli-XXXXXX", prog[64], line[1024], cmd[4096];
	char *as_nobody[] = { "setpriv",
			      "--reuid=65534",
			      "--regid=65534",
			      "--clear-groups",
			      (char *)utrace(),
			      "-v",
			      "-f",
			      "work",
			      "--",
			      prog,
			      "calls",
			      "1",
			      "0",
			      "0",
			      NULL };
	char *probe[] = { "setpriv",
			  "--reuid=65534",
			  "--regid=65534",
			  "--clear-groups",
			  (char *)utrace(),
			  "--version",
			  NULL };
	char *out = NULL, *err = NULL;

	if (geteuid() != 0)
		SKIP("needs root to make a setuid copy owned by another user");
	if (harness_run(probe, NULL, NULL, 20) != 0)
		SKIP("setpriv cannot run utrace as nobody");
	CHECK(mkdtemp(dir));
	CHECK(!chmod(dir, 0755));
	snprintf(prog, sizeof(prog), "%s/s-suid", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 4755 '%s'", target(), prog, prog);
	CHECK(!system(cmd));
	CHECK_EQ(harness_run(as_nobody, &out, &err, 60), 0);
	CHECK_MSG(count(out, "answers=") == 1, "it ran %d times:\n%s", count(out, "answers="), out);
	snprintf(line, sizeof(line),
		 "utrace: backend: ptrace (auto: the agent cannot be preloaded: '%s' is setuid, "
		 "setgid or has file capabilities (ld.so ignores LD_PRELOAD there))\n",
		 prog);
	CHECK_MSG(strstr(err, line), "%s", err);
	free(out);
	free(err);
	unlink(prog);
	rmdir(dir);
}

TEST(unsafe_utrace_agent_is_refused_in_both_modes)
{
	char dir[] = "/tmp/utrace-cli-XXXXXX", so[64], line[1024], cmd[4096], pid[16];
	char *out = NULL, *err = NULL;
	struct bg b;

	CHECK(mkdtemp(dir));
	CHECK(!chmod(dir, 0777)); /* writable by others, not sticky */
	snprintf(so, sizeof(so), "%s/libutrace-agent.so", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0755 '%s'",
		 harness_build_path("agent/libutrace-agent.so"), so, so);
	CHECK(!system(cmd));
	setenv("UTRACE_AGENT", so, 1);
	snprintf(line, sizeof(line),
		 "utrace: UTRACE_AGENT '%s' is not safe: '%s' is writable by others (mode 0777) "
		 "and not sticky (only its owner may write it and the directories above, or use "
		 "-b ptrace)\n",
		 so, dir);
	{
		const char *a[] = {
			"-b", "agent", "-f", "work", "--", target(), "exit", "0", NULL
		};

		CHECK_EQ(run_line(a, line), 1);
	}
	b = bg_start();
	snprintf(pid, sizeof(pid), "%d", (int)b.pid);
	{
		const char *a[] = { "-b", "agent", "-f", "work", "-p", pid, NULL };

		CHECK_EQ(run_line(a, line), 1);
	}
	bg_finish(&b);
	{
		/* -b auto: ptrace, and -v says why */
		const char *a[] = { "-v", "-f", "work", "--", target(), "exit", "0", NULL };

		CHECK_EQ(run_utrace(a, &out, &err), 0);
		snprintf(line, sizeof(line),
			 "utrace: backend: ptrace (auto: UTRACE_AGENT '%s' is not safe: '%s' is "
			 "writable by others (mode 0777) and not sticky)\n",
			 so, dir);
		CHECK_MSG(strstr(err, line), "%s", err);
		free(out);
		free(err);
	}
	unlink(so);
	rmdir(dir);
}

/* Has @pid a tracer, or the agent mapped? */
static bool attached_to(pid_t pid, bool agent)
{
	char path[64], buf[512];
	bool yes = false;
	FILE *f;

	snprintf(path, sizeof(path), agent ? "/proc/%d/maps" : "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!yes && fgets(buf, sizeof(buf), f))
		yes = agent ? strstr(buf, "libutrace-agent.so") != NULL :
			      !strncmp(buf, "TracerPid:", 10) && atoi(buf + 10) > 0;
	fclose(f);
	return yes;
}

TEST(attach_target_killed_by_a_signal_says_so)
{
	/* the agent, ptrace, and the agent in two processes (one loop each) */
	static const char *const backends[] = { "agent", "ptrace", "agent" };
	struct rlimit nocore = { 0, 0 };
	size_t i;

	setrlimit(RLIMIT_CORE, &nocore); /* no "(core dumped)" */
	for (i = 0; i < 3; i++) {
		char log[] = "/tmp/utrace-cli-XXXXXX", pids[40], line[128], buf[65536];
		struct bg b = bg_start(), b2 = { 0 };
		int fd = mkstemp(log), st, k;
		ssize_t n;
		pid_t u;

		CHECK(fd >= 0);
		snprintf(pids, sizeof(pids), "%d", (int)b.pid);
		if (i == 2) {
			b2 = bg_start();
			snprintf(pids, sizeof(pids), "%d,%d", (int)b.pid, (int)b2.pid);
		}
		u = fork();
		CHECK(u >= 0);
		if (u == 0) {
			dup2(fd, 2);
			execl(utrace(), "utrace", "-b", backends[i], "-f", "work", "-p", pids,
			      (char *)NULL);
			_exit(99);
		}
		for (k = 0; k < 1000 && !attached_to(i == 2 ? b2.pid : b.pid, i != 1); k++)
			usleep(10000);
		CHECK_MSG(attached_to(b.pid, i != 1), "-b %s did not attach", backends[i]);
		/*
		 * armed: its hits are being written (a mapped agent may still
		 * be starting: on a loaded machine 300 ms were not enough, and
		 * a kill then is an attach failure, not this test's case)
		 */
		snprintf(line, sizeof(line), "[%d] work(", (int)(i == 2 ? b2.pid : b.pid));
		for (k = 0; k < 1000; k++) {
			n = pread(fd, buf, sizeof(buf) - 1, 0);
			buf[n > 0 ? n : 0] = '\0';
			if (strstr(buf, line))
				break;
			usleep(10000);
		}
		CHECK_MSG(strstr(buf, line), "-b %s: no hit in 10 s: %s", backends[i], buf);
		/* we are its parent and reap it only afterwards: utrace sees the zombie */
		kill(b.pid, SIGSEGV);
		if (i == 2) {
			usleep(300000);
			bg_finish(&b2); /* then utrace has nothing left to trace */
		}
		CHECK(waitpid(u, &st, 0) == u);
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "-b %s -p %s: status %#x: %s",
			  backends[i], pids, st, buf); /* strace -p: 0 */
		snprintf(line, sizeof(line), "[%d] +++ killed by SIGSEGV +++\n", (int)b.pid);
		CHECK_MSG(strstr(buf, line), "-b %s -p %s: %s", backends[i], pids, buf);
		CHECK(waitpid(b.pid, &st, 0) == b.pid && WIFSIGNALED(st));
		close(b.in);
		close(b.out);
		close(fd);
		unlink(log);
	}
}

/* A kernel thread's pid (kthreadd is 2 outside a pid namespace), or 0. */
static pid_t kernel_thread(void)
{
	pid_t pid;

	for (pid = 2; pid < 200; pid++) {
		char path[64], buf[1024], *p;
		unsigned long flags;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
		    (flags & 0x00200000))
			return pid;
	}
	return 0;
}

TEST(attach_errors_say_what_is_the_case)
{
	char pid[16], twice[40], line[256], state[512] = "";
	pid_t k = kernel_thread();
	struct bg b;
	int i;

	/* the same pid twice: a usage error, not "patched already" */
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(twice, sizeof(twice), "%s,%s", pid, pid);
	{
		const char *a[] = { "-f", "work", "-p", twice, NULL };
		const char *c[] = { "-s", "-p", pid, "-p", pid, NULL };

		snprintf(line, sizeof(line), "utrace: bad pid list '%s': pid %s is given twice\n",
			 twice, pid);
		CHECK_EQ(run_line(a, line), 2);
		snprintf(line, sizeof(line), "utrace: bad pid list '%s': pid %s is given twice\n",
			 pid, pid);
		CHECK_EQ(run_line(c, line), 2);
	}
	/* a kernel thread: nothing to trace, not ptrace_scope */
	if (k) {
		char kp[16];
		const char *s[] = { "-s", "-p", kp, NULL };
		const char *pt[] = { "-b", "ptrace", "-f", "work", "-p", kp, NULL };
		const char *ag[] = { "-b", "agent", "-f", "work", "-p", kp, NULL };

		snprintf(kp, sizeof(kp), "%d", (int)k);
		snprintf(line, sizeof(line),
			 "utrace: pid %d is a kernel thread; nothing to trace\n", (int)k);
		CHECK_EQ(run_line(s, line), 1);
		CHECK_EQ(run_line(pt, line), 1);
		CHECK_EQ(run_line(ag, line), 1);
	} else {
		harness_note("no kernel thread visible (pid namespace): that case is skipped");
	}
	/* a stopped process: say so, and load nothing into it */
	b = bg_start();
	snprintf(pid, sizeof(pid), "%d", (int)b.pid);
	kill(b.pid, SIGSTOP);
	for (i = 0; i < 500 && !strstr(state, ") T "); i++) {
		char path[64];
		FILE *f;

		usleep(10000);
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)b.pid);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(state, sizeof(state), f))
				state[0] = '\0';
			fclose(f);
		}
	}
	{
		const char *a[] = { "-b", "agent", "-f", "work", "-p", pid, NULL };

		snprintf(line, sizeof(line),
			 "utrace: pid %s is stopped (state T): continue it (kill -CONT %s), then "
			 "attach\n",
			 pid, pid);
		CHECK_EQ(run_line(a, line), 1);
		CHECK(!attached_to(b.pid, true));
	}
	kill(b.pid, SIGCONT);
	bg_finish(&b);
}

TEST(auto_never_starts_a_command_twice)
{
	/* an agent ld.so preloads but that never reports: the program runs without it */
	char dir[] = "/tmp/utrace-cli-XXXXXX", so[64], cmd[4096], line[1024];
	const char *a[] = { "-f", "work", "--", target(), "calls", "1", "0", "0", NULL };
	char *out = NULL, *err = NULL;

	CHECK(mkdtemp(dir));
	snprintf(so, sizeof(so), "%s/libfoo.so", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", harness_build_path("tests/targets/libfoo.so"),
		 so);
	CHECK(!system(cmd));
	setenv("UTRACE_AGENT", so, 1);
	CHECK_EQ(run_utrace(a, &out, &err), 1);
	CHECK_MSG(count(out, "answers=") == 1, "it ran %d times", count(out, "answers="));
	snprintf(line, sizeof(line),
		 "utrace: cannot start '%s' with the agent (%s): target exited before the agent "
		 "was ready (it is not started again; use -b ptrace)\n",
		 target(), so);
	CHECK_STREQ(err, line);
	free(out);
	free(err);
	unlink(so);
	rmdir(dir);
}
