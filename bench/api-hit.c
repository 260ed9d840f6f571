/* SPDX-License-Identifier: MIT */
/*
 * api-hit.c - ns per probe hit of the agent through the library's public
 * API (include/utrace/: utrace_uprobes__new(s, {.backend = AGENT}), built-in
 * actions), on the same loop as agent-bench: s-agent's "bench" mode makes
 * N calls of probed_nop() and prints its own ns/call. Launched under a
 * ptrace session with the agent preloaded (lib/backend-agent.c); a jmp
 * site never stops, so the figure is the agent's hit cost, whatever the
 * layer above it. Median of RUNS runs per configuration.
 *
 *   api-hit [N] [RUNS]      (UTRACE_BUILD_DIR must point at the build)
 *
 * Output: one line per configuration, "name median_ns_per_call runs...".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "utrace/utrace.h"

static int out_fd = -1;

static int pre_exec(void *ctx)
{
	(void)ctx;
	return dup2(out_fd, 1) < 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One run with @actions (0: no probe). Returns ns/call from the target, or < 0. */
static double run(const char *n, unsigned int actions)
{
	char path[4096], buf[256] = "";
	char *argv[] = { path, "bench", (char *)n, NULL };
	UTRACE_OPTS(utrace_uprobes_opts, uo, .backend = UTRACE_BACKEND_AGENT);
	UTRACE_OPTS(utrace_probe_opts, po, .actions = actions);
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = pre_exec);
	struct utrace_session *s = utrace_session__new(NULL);
	struct utrace_uprobes *up = s ? utrace_uprobes__new(s, &uo) : NULL;
	int p[2];
	ssize_t len;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/tests/agent/s-agent",
		 getenv("UTRACE_BUILD_DIR") ?: "build");
	if (!up || pipe2(p, O_CLOEXEC)) {
		perror("api-hit");
		return -1;
	}
	if (actions && !utrace_probe__register_spec(up, "probed_nop", &po)) {
		perror("probe");
		return -1;
	}
	out_fd = p[1];
	pid = utrace_session__launch(s, argv, &lo);
	close(p[1]);
	if (pid < 0) {
		fprintf(stderr, "launch: %s\n", strerror(-pid));
		return -1;
	}
	while (utrace_session__exit_status(s) == -EAGAIN &&
	       utrace_session__run(s, 100) >= UTRACE_RUN_BREAK)
		;
	len = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	buf[len > 0 ? len : 0] = 0;
	utrace_uprobes__free(up);
	utrace_session__close(s);
	return buf[0] ? atof(buf) : -1;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		unsigned int actions;
	} cfg[] = {
		{ "untraced", 0 },
		{ "api entry+count (agent)", UTRACE_ACT_COUNT | UTRACE_ACT_NORET },
		{ "api entry+return+hist (agent)", UTRACE_ACT_COUNT | UTRACE_ACT_HIST },
	};
	const char *n = argc > 1 ? argv[1] : "10000000";
	int runs = argc > 2 ? atoi(argv[2]) : 5, i, k;

	if (runs < 1 || runs > 99)
		runs = 5;
	for (i = 0; i < (int)(sizeof(cfg) / sizeof(cfg[0])); i++) {
		double v[99];

		for (k = 0; k < runs; k++)
			v[k] = run(n, cfg[i].actions);
		qsort(v, (size_t)runs, sizeof(v[0]), cmp);
		printf("%s %.2f", cfg[i].name, v[runs / 2]);
		for (k = 0; k < runs; k++)
			printf(" %.2f", v[k]);
		printf("\n");
	}
	return 0;
}
