/* SPDX-License-Identifier: MIT */
/* cmd-trace.c - utrace -f/-u/-r: function tracing. Tracer process. */
#include "utrace/utrace.h"
#include "cli.h"

int cmd_trace(struct cli_opts *opts)
{
	cli_error("function probes (-f/-u/-r/--inject/-m) are not implemented yet");
	return EXIT_TRACE;
}
