/* SPDX-License-Identifier: MIT */
/* cmd-syscalls.c - utrace -s: system-call tracing. Tracer process. */
#include "utrace/utrace.h"
#include "cli.h"

int cmd_syscalls(struct cli_opts *opts)
{
	cli_error("system-call tracing (-s) is not implemented yet");
	return EXIT_TRACE;
}
