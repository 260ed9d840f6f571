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
 * untraced), and libctor's 7 constructor calls were missed. (That real
 * programs' malloc and free counts are the same with the agent, with
 * ptrace and with bpftrace: test-self-count.c.)
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
