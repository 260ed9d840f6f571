/* SPDX-License-Identifier: MIT */
/*
 * test-plan.c - the plan column of `utrace -l` against real binaries: the
 * hand-written prologues of tests/targets/s-prologues (each planner
 * decision and its --why text), libc, and a live process (-p: runtime
 * addresses).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The public API and the `utrace -l` plan column on the real libc. */
TEST(cli_list_plan_column)
{
	char *argv[] = { (char *)getenv("UTRACE"),
			 "-l",
			 "libc:__read_nocancel",
			 "--why",
			 "--",
			 "/bin/true",
			 NULL };
	char *out = NULL;
	int rc;

	if (!argv[0])
		SKIP("UTRACE not set");
	rc = harness_run(argv, &out, NULL, 30);
	CHECK_EQ(rc, 0);
	CHECK(out);
	harness_note("%s", out);
	if (!strstr(out, "__read_nocancel"))
		SKIP("this libc has no __read_nocancel");
	CHECK(strstr(out, "int3: not a jmp: 'syscall' within 5 bytes cannot be displaced"));
	free(out);
}

/* The plan column on hand-written prologues: every decision and its reason. */
TEST(cli_list_why_prologues)
{
	static const char *const want[] = {
		"p_classic  ",
		"jmp: 7 bytes displaced, at 0x",
		"p_classic  ",
		" after the first, a 1-byte instruction kept in place",
		"p_endbr  ",
		"jmp: 5 bytes displaced, at 0x",
		"p_endbr  ",
		" after endbr64\n",
		"p_kept  ",
		"jmp: 6 bytes displaced, at 0x",
		"p_kept  ",
		" after the first, a 2-byte instruction kept in place (a kernel uprobe on the "
		"entry stays safe)\n",
		"p_syscall  ",
		"refused: instruction 'syscall' cannot run out of line (a thread blocked",
		"p_pre_syscall  ",
		"'syscall' within 5 bytes cannot be displaced in a live process\n",
		"p_loop_head  ",
		"int3: not a jmp: a branch targets the middle of the displaced bytes",
		"p_ud2  ",
		"refused: instruction 'ud2' cannot run out of line (deliberate #UD",
		"p_short  ",
		"int3: not a jmp: 'ret' ends the code within 5 bytes\n",
	};
	char spec[4096];
	char *argv[] = { (char *)getenv("UTRACE"), "-l", spec, "--why", NULL };
	char *out = NULL;
	size_t i;

	if (!argv[0])
		SKIP("UTRACE not set");
	snprintf(spec, sizeof(spec), "%s:p_*", harness_build_path("tests/targets/s-prologues"));
	CHECK_EQ(harness_run(argv, &out, NULL, 30), 0);
	harness_note("%s", out);
	for (i = 0; i < ARRAY_SIZE(want); i += 2) {
		const char *line = strstr(out, want[i]);

		CHECK_MSG(line, "no line for %s", want[i]);
		line = strstr(line, "  ");
		CHECK_MSG(line && strstr(line, want[i + 1]) &&
				  strstr(line, want[i + 1]) < strchr(line, '\n') + 1,
			  "%s: want '%s'", want[i], want[i + 1]);
	}
	free(out);
}

/* With -p the plan speaks runtime addresses: the probe after endbr64 is at +4. */
TEST(cli_list_why_live)
{
	char spec[64], pidstr[32], line[64];
	char *argv[] = { (char *)getenv("UTRACE"), "-l", spec, "--why", "-p", pidstr, NULL };
	const char *prog = harness_build_path("tests/targets/s-prologues");
	unsigned long long addr = 0, after = 0;
	char *out = NULL, *p;
	int fds[2], rc;
	FILE *f;
	pid_t pid;

	if (!argv[0])
		SKIP("UTRACE not set");
	CHECK(!pipe(fds));
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a failed test */
		dup2(fds[1], 1);
		execl(prog, prog, "wait", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	snprintf(spec, sizeof(spec), "s-prologues:p_endbr");
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	rc = f && fgets(line, sizeof(line), f) && !strcmp(line, "ready\n") ?
		     harness_run(argv, &out, NULL, 30) :
		     -1;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK_EQ(rc, 0);
	harness_note("%s", out);
	p = strstr(out, "p_endbr");
	CHECK(p && sscanf(p, "p_endbr %llx", &addr) == 1);
	p = strstr(out, " at 0x");
	CHECK(p && sscanf(p, " at %llx after endbr64", &after) == 1);
	CHECK(addr > 0x10000); /* a runtime address, not the file's 0x1xxx */
	CHECK_EQ(after, addr + 4);
	free(out);
}
