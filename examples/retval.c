/* SPDX-License-Identifier: MIT */
/*
 * retval.c - the second example of the 2007 uprobes paper, on utrace's
 * API: report the return value of each call of a function.
 *
 *   retval FUNC PROG [ARGS...]
 *
 * Runs PROG with a return probe on FUNC (a SPEC: "work", "libc:malloc")
 * and prints "FUNC returned V" (decimal, and hex) at every return.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utrace/utrace.h"

static int on_return(struct utrace_probe_ctx *ctx, void *data)
{
	uint64_t v = utrace_probe_ctx__retval(ctx);

	(void)data;
	printf("%s returned %" PRId64 " (0x%" PRIx64 ")\n", ctx->point->name, (int64_t)v, v);
	return UTRACE_PROBE_OK;
}

int main(int argc, char **argv)
{
	UTRACE_OPTS(utrace_probe_opts, opts, .handler = on_return, .retprobe = true);
	/* the handler runs here, in the tracer: the ptrace backend */
	UTRACE_OPTS(utrace_uprobes_opts, uo, .backend = UTRACE_BACKEND_PTRACE);
	struct utrace_session *s;
	struct utrace_uprobes *up;
	pid_t pid;
	int st;

	if (argc < 3) {
		fprintf(stderr, "usage: %s FUNC PROG [ARGS...]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	s = utrace_session__new(NULL);
	up = s ? utrace_uprobes__new(s, &uo) : NULL;
	if (!up) {
		perror("utrace");
		return 1;
	}
	if (!utrace_probe__register_spec(up, argv[1], &opts)) {
		fprintf(stderr, "probe '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	pid = utrace_session__launch(s, argv + 2, NULL);
	if (pid < 0) {
		fprintf(stderr, "%s: %s\n", argv[2], strerror(-pid));
		return 1;
	}
	while (utrace_session__run(s, -1) == UTRACE_RUN_BREAK)
		;
	st = utrace_session__exit_status(s);
	utrace_uprobes__free(up);
	utrace_session__close(s);
	return st < 0 ? 1 : st;
}
