/* SPDX-License-Identifier: MIT */
/*
 * test-cli.c - option spellings of the utrace command that users carry over
 * from strace, and usage errors. Runs $UTRACE.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *utrace(void)
{
	const char *u = getenv("UTRACE");

	if (!u)
		SKIP("UTRACE is not set");
	return u;
}

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
	char *cases[][6] = {
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
