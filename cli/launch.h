/* SPDX-License-Identifier: MIT */
/*
 * launch.h - before COMMAND starts (launch.c): find it as execvp() does,
 * and decide whether the agent can be preloaded into it. Tracer process.
 */
#ifndef __UTRACE_CLI_LAUNCH_H
#define __UTRACE_CLI_LAUNCH_H

#include <stddef.h>

/*
 * launch_resolve - find @cmd as execvp() would (through PATH when it has no
 * '/'), into @path (@size bytes). When it cannot be run, one line says why,
 * as a shell would: missing (exit status 127), a directory or not
 * executable (126).
 * Return: 0, or the exit status.
 */
int launch_resolve(const char *cmd, char *path, size_t size);

/*
 * launch_agent_why - can the agent be preloaded into the program @path?
 * ld.so is what loads it (LD_PRELOAD): not into a static program, and not
 * in secure-execution mode (setuid/setgid to someone else, file
 * capabilities for a non-root user), where ld.so ignores LD_PRELOAD. A #!
 * script is decided on its interpreter. Nothing is run.
 * Return: NULL if it can; else why not ("'/x' is statically linked"), in
 * @why (@size bytes).
 */
const char *launch_agent_why(const char *path, char *why, size_t size);

/*
 * trace_agent_path - the libutrace-agent.so to load: $UTRACE_AGENT, else
 * the build tree's next to this utrace (build/agent/), else the installed
 * one; only a file that nobody but its owner or root can change, in
 * directories only they can change (utrace_session__inject()'s rule).
 * Return: its path, or NULL (trace_agent_unsafe() then says why, or "").
 */
const char *trace_agent_path(void);
/* Why trace_agent_path() refused $UTRACE_AGENT ("UTRACE_AGENT '/x' is not safe: ..."), or "". */
const char *trace_agent_unsafe(void);

#endif /* __UTRACE_CLI_LAUNCH_H */
