/* SPDX-License-Identifier: MIT */
/*
 * trace-agent.h - utrace -b agent (cmd-trace-agent.c), called by
 * cmd_trace() once the SPECs are checked. Tracer process.
 */
#ifndef __UTRACE_CLI_TRACE_AGENT_H
#define __UTRACE_CLI_TRACE_AGENT_H

#include <stdbool.h>

#include "cli.h"

/* cmd_trace_agent() could not load the agent and @fallback_ok: use ptrace. */
#define TRACE_AGENT_FALLBACK (-1)

/* The agent library to preload or inject, or NULL if none is found (or safe). */
const char *trace_agent_path(void);

/* Why trace_agent_path() refused $UTRACE_AGENT ("UTRACE_AGENT '/x' is not safe: ..."), or "". */
const char *trace_agent_unsafe(void);

/* What in @o the agent backend cannot do yet ("-k"), or NULL. */
const char *trace_agent_unsupported(const struct cli_opts *o);

/* Why the last cmd_trace_agent() returned TRACE_AGENT_FALLBACK in attach mode. */
const char *trace_agent_fallback_why(void);

/*
 * cmd_trace_agent - launch opts->argv with the agent, trace @probes.
 * Return: the exit status; TRACE_AGENT_FALLBACK if @fallback_ok and the
 * agent could not be loaded (the command has not run).
 */
int cmd_trace_agent(struct cli_opts *opts, const struct cli_probe *probes, int nr_probes,
		    bool fallback_ok);

#endif /* __UTRACE_CLI_TRACE_AGENT_H */
