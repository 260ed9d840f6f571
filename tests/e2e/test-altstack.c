/* SPDX-License-Identifier: MIT */
/*
 * test-altstack.c - return probes and -k against signal handlers on an
 * alternate stack (tests/targets/s-altstack: SIGALRM handlers on
 * sigaltstacks below, above, near and far from the interrupted stack, on
 * the main thread and on threads, that interrupt hot(), call it, and leave
 * with siglongjmp()). Each combination (-f hot, -r hot, -f hot -f handler,
 * the same with -k) runs N times (UTRACE_ALTSTACK_RUNS, default 10; the
 * 'slow' suite runs 100) with each backend; every run must exit 0 (no
 * crash, no hang: run_utrace()'s timeout), the target must find its own
 * results right, and the entry/return counts utrace prints must be the
 * target's. With -b agent they may be lower, never higher: a hit of the
 * handler while the thread is inside the agent runs no handler (counted
 * @nested, guard.c), and utrace says how many calls it did not show: the
 * entries shown plus those are the target's. The -c table's calls are
 * exact on both backends: the agent counts such a hit (agent/dispatch.c
 * nested_hit()).
 * Suite 'e2e' (and 'slow'); two combinations at a time (each run is a
 * launch of its own).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "trace-util.h"

HARNESS_JOBS(2)

struct counts {
	long hot_e, hot_r, h_e, h_r;
};

static int runs(void)
{
	const char *s = getenv("UTRACE_ALTSTACK_RUNS");

	return s && atoi(s) > 0 ? atoi(s) : 10;
}

static const char *altstack(void)
{
	return harness_build_path("tests/targets/s-altstack");
}

/* entries (lines "] f(" that are not returns) and returns ("] f() = ") */
static void events(const char *err, const char *f, long *e, long *r)
{
	char call[64], ret[64];

	snprintf(call, sizeof(call), "] %s(", f);
	snprintf(ret, sizeof(ret), "] %s() = ", f);
	*r = count(err, ret);
	*e = count(err, call) - *r;
}

static void combo(const char *backend, const char *const *opts, bool exact)
{
	bool ptrace = !strcmp(backend, "ptrace"), ret_only = !strcmp(opts[0], "-r");
	bool summary = !strcmp(opts[0], "-c");
	int i, n = runs(), bad = 0;

	for (i = 0; i < n; i++) {
		const char *args[16];
		char *out = NULL, *err = NULL;
		struct counts want = { 0 }, got = { 0 };
		int k = 0, rc, j;

		args[k++] = "-b";
		args[k++] = backend;
		for (j = 0; opts[j]; j++)
			args[k++] = opts[j];
		args[k++] = "--";
		args[k++] = altstack();
		args[k++] = ptrace ? "100" : "300";
		args[k++] = "01234";
		args[k++] = ptrace ? "20000" : "2000";
		args[k] = NULL;
		rc = run_utrace(args, &out, &err);
		if (rc || !out ||
		    sscanf(out, "hot=%ld/%ld handler=%ld/%ld", &want.hot_e, &want.hot_r, &want.h_e,
			   &want.h_r) != 4) {
			harness_note("run %d: exit %d, target said: %s; utrace's last words: %s", i,
				     rc, out ? out : "",
				     err ? err + (strlen(err) > 400 ? strlen(err) - 400 : 0) : "");
			bad++;
			goto next;
		}
		events(err, "hot", &got.hot_e, &got.hot_r);
		events(err, "handler", &got.h_e, &got.h_r);
		if (summary) {
			/* -c: the calls column (counted at entry), exact */
			got.hot_e = summary_calls(err, "hot");
			got.h_e = summary_calls(err, "handler");
			got.hot_r = got.h_r = want.hot_r = want.h_r = 0;
			if (got.h_e < 0)
				got.h_e = want.h_e = 0; /* handler not probed */
		} else if (!strstr(err, "] handler(")) {
			want.h_e = want.h_r = 0; /* handler not probed */
		}
		if (ret_only)
			want.hot_e = 0;
		/*
		 * the agent: the calls it did not show are said (a signal
		 * handler's hit while the thread was inside its dispatch), and
		 * with them the entries are exact
		 */
		if (!exact && !ret_only && !summary) {
			const char *u = strstr(err, "note: ");
			long unrec = 0;

			while (u && !strstr(u, " calls were made by signal handlers"))
				u = strstr(u + 1, "note: ");
			if (u)
				unrec = atol(u + 6);
			if (got.hot_e + got.h_e + unrec != want.hot_e + want.h_e) {
				harness_note("run %d: %ld + %ld entries shown, %ld said not shown; "
					     "the target made %ld + %ld",
					     i, got.hot_e, got.h_e, unrec, want.hot_e, want.h_e);
				bad++;
			}
		}
		if (exact ? memcmp(&got, &want, sizeof(got)) :
			    got.hot_e > want.hot_e || got.hot_r > want.hot_r ||
				    got.h_e > want.h_e || got.h_r > want.h_r ||
				    got.hot_r > got.hot_e + !!ret_only * got.hot_r) {
			harness_note("run %d: target hot=%ld/%ld handler=%ld/%ld, utrace "
				     "hot=%ld/%ld handler=%ld/%ld",
				     i, want.hot_e, want.hot_r, want.h_e, want.h_r, got.hot_e,
				     got.hot_r, got.h_e, got.h_r);
			bad++;
		}
next:
		free(out);
		free(err);
	}
	CHECK_MSG(bad == 0, "%d of %d runs failed", bad, n);
}

#define COMBO(name, backend, exact, ...)                    \
	TEST_TIMEOUT(name, 1500)                            \
	{                                                   \
		const char *opts[] = { __VA_ARGS__, NULL }; \
		combo(backend, opts, exact);                \
	}

COMBO(agent_entry_return, "agent", false, "-f", "hot")
COMBO(agent_return, "agent", false, "-r", "hot")
COMBO(agent_handler_too, "agent", false, "-f", "hot", "-f", "handler")
COMBO(agent_handler_stack, "agent", false, "-f", "hot", "-f", "handler", "-k")
COMBO(agent_return_stack, "agent", false, "-r", "hot", "-k")
/*
 * -c counts calls at their entry, also a hit of handler()'s hot() while
 * the thread was inside the agent's dispatch (agent/dispatch.c
 * nested_hit()): exact on both backends
 */
COMBO(agent_summary, "agent", true, "-c", "-f", "hot", "-f", "handler")
COMBO(ptrace_summary, "ptrace", true, "-c", "-f", "hot", "-f", "handler")
COMBO(ptrace_entry_return, "ptrace", true, "-f", "hot")
COMBO(ptrace_return, "ptrace", true, "-r", "hot")
COMBO(ptrace_handler_too, "ptrace", true, "-f", "hot", "-f", "handler")
COMBO(ptrace_handler_stack, "ptrace", true, "-f", "hot", "-f", "handler", "-k")
COMBO(ptrace_return_stack, "ptrace", true, "-r", "hot", "-k")
