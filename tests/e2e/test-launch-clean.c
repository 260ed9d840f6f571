/* SPDX-License-Identifier: MIT */
/*
 * test-launch-clean.c - launch mode is invisible to the program
 * (tests/targets/s-ctor reports what it sees): no utrace variable in its
 * environment or its children's, the user's own LD_PRELOAD kept, none of
 * its low fd numbers taken, fd 3 passed across its own execve() intact
 * with the new image traced again, and the calls a library constructor
 * makes before main() counted. Before: UTRACE_AGENT_FD and LD_PRELOAD
 * were left to the program and its children, the arena fd sat at 3 and
 * the agent's pidfd and /proc/self/mem at the next numbers, an fd the
 * program put on 3 was closed by the new image's agent (which then ran
 * untraced), and libctor's 7 constructor calls were missed.
 * Suite 'e2e', not parallel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

static const char *s_ctor(void)
{
	return harness_build_path("tests/targets/s-ctor");
}

TEST_TIMEOUT(environment_and_fds_untouched, 60)
{
	const char *args[] = { "-b", "agent",  "-f",  "libctor:ctor_probe",
			       "--", s_ctor(), "env", NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	note_lines(out);
	CHECK(strstr(out, "lowfd=3 env_bad=0 preload=(none)\n"));
	CHECK(strstr(out, "child_bad=0\n"));
	free(out);
	free(err);
}

TEST_TIMEOUT(library_constructor_calls_counted, 60)
{
	const char *args[] = { "-b", "agent",  "-f",  "libctor:ctor_probe",
			       "--", s_ctor(), "env", NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_EQ(count(err, "] ctor_probe("), 10 + count(err, "] ctor_probe() = "));
	CHECK_EQ(count(err, "] ctor_probe() = "), 10);
	CHECK(strstr(err, "] ctor_probe(6)\n")); /* the constructor's last */
	free(out);
	free(err);
}

TEST_TIMEOUT(fd3_across_exec_and_new_image_traced, 60)
{
	const char *args[] = { "-b", "agent",  "-c",  "-f", "libctor:ctor_probe",
			       "--", s_ctor(), "fd3", NULL };
	char *out = NULL, *err = NULL;
	const char *line;
	long calls = -1;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	note_lines(out);
	note_lines(err);
	CHECK(strstr(out, "fd3=fd3-data\n"));
	CHECK(!strstr(err, "warning"));
	/* the -c row: "% time seconds usecs/call calls ... ctor_probe" */
	line = strstr(err, "ctor_probe\n");
	while (line && line > err && line[-1] != '\n')
		line--;
	CHECK(line && sscanf(line, "%*s %*s %*s %ld", &calls) == 1);
	CHECK_EQ(calls, 20); /* both images, constructors included */
	free(out);
	free(err);
}

TEST_TIMEOUT(users_own_preload_kept, 60)
{
	char pre[4200];
	const char *args[] = { "-b", "agent",  "-f",  "libctor:ctor_probe",
			       "--", s_ctor(), "env", NULL };
	char *out = NULL, *err = NULL;

	snprintf(pre, sizeof(pre), "%s", harness_build_path("tests/targets/libfoo.so"));
	setenv("LD_PRELOAD", pre, 1);
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	unsetenv("LD_PRELOAD");
	note_lines(out);
	CHECK(strstr(out, "env_bad=0 preload="));
	CHECK(strstr(out, pre));
	CHECK(!strstr(out, "utrace-agent"));
	free(out);
	free(err);
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
		return -1;
	return calls;
}

/*
 * No call of the agent's own is counted as the program's, and launch mode
 * changes nothing the program does: malloc and free counts of real
 * programs are the same with the agent and with the ptrace backend (which
 * loads nothing into the target). Before, the agent's variables in the
 * environment made python3 copy two more strings into os.environ.
 */
static void same_counts(const char *const *cmd)
{
	const char *args[32] = { "-b", NULL, "-c", "-f", "libc:malloc", "-f", "libc:free", "--" };
	long m[2], f[2];
	int b, i;

	for (i = 0; cmd[i] && i < 20; i++)
		args[8 + i] = cmd[i];
	for (b = 0; b < 2; b++) {
		char *out = NULL, *err = NULL;

		args[1] = b ? "ptrace" : "agent";
		CHECK_EQ(run_utrace(args, &out, &err), 0);
		m[b] = calls_of(err, "malloc");
		f[b] = calls_of(err, "free");
		harness_note("%s: malloc %ld free %ld", args[1], m[b], f[b]);
		free(out);
		free(err);
	}
	CHECK(m[0] > 0 && f[0] > 0);
	CHECK_EQ(m[0], m[1]);
	CHECK_EQ(f[0], f[1]);
}

TEST_TIMEOUT(agent_counts_equal_ptrace_python3, 120)
{
	const char *cmd[] = { "/usr/bin/python3", "-c", "pass", NULL };

	if (access(cmd[0], X_OK))
		SKIP("no /usr/bin/python3");
	same_counts(cmd);
}

TEST_TIMEOUT(agent_counts_equal_ptrace_xz_threads, 120)
{
	const char *cmd[] = { "/usr/bin/xz", "-T2", "-c", harness_build_path("cli/utrace"), NULL };

	if (access(cmd[0], X_OK))
		SKIP("no /usr/bin/xz");
	same_counts(cmd);
}
