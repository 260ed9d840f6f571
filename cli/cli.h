/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the utrace command: parsed options and the sub-commands.
 * Everything here runs in the tracer process.
 */
#ifndef __UTRACE_CLI_H
#define __UTRACE_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit statuses of docs/cli.md. */
#define EXIT_USAGE 2 /* bad usage or unresolvable SPEC */
#define EXIT_TRACE 1 /* any other failure to trace */

enum cli_probe_kind {
	CLI_PROBE_FUNC, /* -f: entry + return */
	CLI_PROBE_ENTRY, /* -u */
	CLI_PROBE_RET, /* -r */
	CLI_PROBE_INJECT, /* --inject SPEC=VALUE[@EVERY], parsed (cmd-trace.c to the agent) */
	CLI_PROBE_MODULE, /* a -m module's probe: its handlers only, no event lines */
};

struct cli_probe {
	enum cli_probe_kind kind;
	const char *spec;
	uint64_t value, every; /* CLI_PROBE_INJECT */
	int module, mprobe; /* CLI_PROBE_MODULE: cli_modules[module], its probe table's entry */
};

enum cli_format { CLI_FMT_TEXT, CLI_FMT_JSON, CLI_FMT_CHROME };
enum cli_backend { CLI_BACKEND_AUTO, CLI_BACKEND_AGENT, CLI_BACKEND_PTRACE, CLI_BACKEND_KERNEL };
enum cli_color { CLI_COLOR_AUTO, CLI_COLOR_ALWAYS, CLI_COLOR_NEVER };

struct cli_opts {
	/* what */
	struct cli_probe *probes;
	int nr_probes;
	bool syscalls; /* -s given */
	const char *syscall_set; /* -sSET / --syscalls=SET; NULL = all */
	const char *list_spec; /* -l SPEC */
	bool list_why; /* --why */
	/* how */
	bool summary; /* -c */
	bool hist; /* -H */
	bool stack; /* -k */
	int strsize; /* -S N */
	const char **injects; /* --inject SPEC=VALUE[@EVERY] */
	int nr_injects;
	const char **modules; /* -m */
	int nr_modules;
	const char *output; /* -o */
	enum cli_format format;
	bool follow_forks; /* -F */
	enum cli_backend backend;
	double duration; /* -d SEC, 0 = none */
	int timestamps; /* 0, 1 (-t), 2 (-tt), 3 (-ttt) */
	bool durations; /* -T */
	int verbose; /* -v count; -q sets -1 */
	enum cli_color color;
	/* whom */
	pid_t *pids;
	int nr_pids;
	char **argv; /* COMMAND [ARG...] after '--', NULL-terminated */
	const char *exe; /* COMMAND as execvp() finds it (launch mode) */
	int argc;
};

/* Print one line "utrace: <msg>" to stderr. */
__attribute__((format(printf, 1, 2))) void cli_error(const char *fmt, ...);

/*
 * cli_parse_every - the EVERY of --inject SPEC=VALUE@EVERY: a positive
 * decimal integer, nothing else. Return: 0, or -EINVAL (*@ret_every untouched).
 */
int cli_parse_every(const char *s, uint64_t *ret_every);

/* Print "utrace: <what>: <utrace_strerror(err)>". */
void cli_lib_error(const char *what, int err);
/*
 * Hold the library's warnings back (while attaching or injecting), then
 * restore the printer and, if @print, show what was held.
 */
void cli_hold_warnings(void);
void cli_release_warnings(bool print);

struct utrace_session;
/*
 * cli_attach_pids - attach @s to each of @pids; on the first failure, one
 * line saying why and what to do. Return: 0 or the negative error.
 */
int cli_attach_pids(struct utrace_session *s, const pid_t *pids, int nr);

/* Sub-commands: each returns the process exit status. */
int cmd_list(struct cli_opts *opts);
int cmd_syscalls(struct cli_opts *opts);
int cmd_trace(struct cli_opts *opts);

#endif /* __UTRACE_CLI_H */
