/* SPDX-License-Identifier: MIT */
/*
 * test-summary - the -c table gives the same figures on both backends:
 * exact calls, errors from the prototypes, and measured times (total, min,
 * max), not the edges of log2 buckets. The target s-timed makes three
 * calls of timed() that sleep 2, 3 and 5 ms (nanosleep never returns
 * early, so each figure has a floor), and four close() calls of which
 * three fail with EBADF.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "trace-util.h"

struct row {
	bool found;
	double seconds, usecs_call, min_us, max_us;
	long calls, errors;
};

/* The -c row of @name in @text. */
static struct row row_of(const char *text, const char *name)
{
	struct row r = { 0 };
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[512], *f[16], *save = NULL, *tok;
		int n = 0;

		snprintf(buf, sizeof(buf), "%.*s", (int)len, line);
		for (tok = strtok_r(buf, " ", &save); tok && n < 16;
		     tok = strtok_r(NULL, " ", &save))
			f[n++] = tok;
		if ((n == 7 || n == 8) && !strcmp(f[n - 1], name) && strchr(f[0], '.')) {
			r.found = true;
			r.seconds = atof(f[1]);
			r.usecs_call = atof(f[2]);
			r.calls = atol(f[3]);
			r.errors = n == 8 ? atol(f[4]) : 0;
			r.min_us = atof(f[n - 3]);
			r.max_us = atof(f[n - 2]);
		}
		line = nl ? nl + 1 : NULL;
	}
	return r;
}

static void summary(const char *backend, struct row *timed, struct row *cl)
{
	const char *args[] = { "-b",	     backend, "-c",
			       "-f",	     "timed", "-f",
			       "libc:close", "--",    built_path("tests/targets/s-timed"),
			       NULL };
	char *out = NULL, *err = NULL;
	int rc = run_utrace(args, &out, &err);

	CHECK_EQ(rc, 0);
	CHECK(out && strstr(out, "timed=3 close=4"));
	*timed = row_of(err ? err : "", "timed");
	*cl = row_of(err ? err : "", "close");
	if (!timed->found || !cl->found)
		note_lines(err ? err : "(no stderr)");
	free(out);
	free(err);
}

static void check_rows(const char *backend)
{
	struct row t, c;

	summary(backend, &t, &c);
	CHECK(t.found);
	CHECK(c.found);
	CHECK_EQ(t.calls, 3);
	CHECK_EQ(t.errors, 0);
	/* measured: each call at least as long as its sleep */
	CHECK_MSG(t.min_us >= 2000.0 && t.min_us < 5000.0, "min %.3f us", t.min_us);
	CHECK_MSG(t.max_us >= 5000.0, "max %.3f us", t.max_us);
	CHECK_MSG(t.seconds >= 0.010, "total %.6f s", t.seconds);
	CHECK_MSG(t.max_us <= t.seconds * 1e6 && t.min_us <= t.max_us,
		  "min %.3f max %.3f total %.6f", t.min_us, t.max_us, t.seconds);
	/* the old agent summed bucket midpoints and printed bucket edges: 2^21 - 1 ns */
	CHECK_MSG(t.max_us != 8388.607 && t.max_us != 4194.303, "max %.3f is a bucket edge",
		  t.max_us);
	/* errors from close()'s prototype (-1 and errno): three EBADF */
	CHECK_MSG(c.calls >= 4, "close calls %ld", c.calls);
	CHECK_EQ(c.errors, 3);
}

TEST(agent_summary_is_measured_with_errors)
{
	check_rows("agent");
}

TEST(ptrace_summary_is_measured_with_errors)
{
	check_rows("ptrace");
}

/* The agent through the library (utrace_probe__point_counts() rows). */
TEST(library_agent_summary_is_measured_with_errors)
{
	check_rows("agent");
}

TEST(backends_agree_on_calls_and_errors)
{
	struct row ta, ca, tp, cp;

	summary("agent", &ta, &ca);
	summary("ptrace", &tp, &cp);
	CHECK_EQ(ta.calls, tp.calls);
	CHECK_EQ(ta.errors, tp.errors);
	CHECK_EQ(ca.calls, cp.calls);
	CHECK_EQ(ca.errors, cp.errors);
}
