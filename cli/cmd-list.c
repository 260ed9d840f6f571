/* SPDX-License-Identifier: MIT */
/* cmd-list.c - utrace -l SPEC: list matching probe points. Tracer process. */
#include "utrace/utrace.h"
#include "cli.h"

int cmd_list(struct cli_opts *opts)
{
	cli_error("-l is not implemented yet");
	return EXIT_TRACE;
}
