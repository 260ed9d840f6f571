/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the utrace command: parsed options and the sub-commands.
 * Everything here runs in the tracer process.
 */
#ifndef __UTRACE_CLI_H
#define __UTRACE_CLI_H

#include <signal.h>
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

struct utrace_thread;

struct cli_probe {
	enum cli_probe_kind kind;
	const char *spec;
	uint64_t value, every; /* CLI_PROBE_INJECT */
	int module, mprobe; /* CLI_PROBE_MODULE: cli_modules[module], its probe table's entry */
	const char **exclude; /* ltrace's '-' rules after this one: SPECs left out, NULL-ended */
};

enum cli_format { CLI_FMT_TEXT, CLI_FMT_JSON, CLI_FMT_CHROME };
enum cli_backend { CLI_BACKEND_AUTO, CLI_BACKEND_AGENT, CLI_BACKEND_PTRACE, CLI_BACKEND_KERNEL };
enum cli_color { CLI_COLOR_AUTO, CLI_COLOR_ALWAYS, CLI_COLOR_NEVER };
/* strace's -e status=: which finished (or unfinished) syscalls are shown */
enum cli_status {
	CLI_STATUS_SUCCESSFUL = 1U << 0,
	CLI_STATUS_FAILED = 1U << 1,
	CLI_STATUS_UNFINISHED = 1U << 2,
	CLI_STATUS_UNAVAILABLE = 1U << 3,
	CLI_STATUS_DETACHED = 1U << 4,
	CLI_STATUS_ALL = (1U << 5) - 1,
};

/* strace's -e inject=SET:..., -e fault=SET:..., parsed by cmd-syscalls.c */
struct cli_sc_inject {
	const char *expr; /* "SET:error=E:when=N", after "inject=" */
	bool fault; /* -e fault=: error=ENOSYS unless said */
};

struct cli_opts {
	/* what */
	struct cli_probe *probes;
	int nr_probes;
	bool syscalls; /* -s given */
	const char *syscall_set; /* -sSET / --syscalls=SET; NULL = all */
	char *trace_sets; /* the last -s SET, -e trace=SET, --trace=SET (malloc'ed) */
	const char *signal_set; /* -e signal=SET: signals shown with -s; NULL = all */
	unsigned int status_mask; /* -e status=, -z, -Z: enum cli_status bits; 0 = all */
	const char **paths; /* -P PATH: only syscalls that touch these */
	int nr_paths;
	int xlat_style; /* -X: enum sysdec_xlat_style */
	int decode_fds; /* -y 1 (paths), -yy 2 (and sockets, devices, pidfds) */
	bool strace_style; /* an strace-only spelling was given: -s is implied */
	const char *list_spec; /* -l SPEC */
	bool list_why; /* --why */
	/* how */
	bool summary; /* -c; -C too (with -s) */
	bool summary_events; /* strace's -C: the -c table and the events */
	bool flag_C; /* -C given: strace's -C with -s, ltrace's demangling with -f */
	bool per_thread_files; /* strace's -ff: with -o FILE, FILE.TID per thread */
	bool hist; /* -H */
	bool stack; /* -k */
	int stack_max; /* ltrace's -w N: -k with at most N frames; 0 = STACK_MAX */
	int indent; /* ltrace's -n N: N spaces per nesting level of traced calls */
	bool call_site; /* ltrace's -i: the return address of each call; strace's -i */
	bool syscall_numbers; /* strace's -n: "[ 257] " before each line */
	int strsize; /* -S N */
	const char **injects; /* --inject SPEC=VALUE[@EVERY] */
	int nr_injects;
	struct cli_sc_inject *sc_injects; /* -e inject=, -e fault= */
	int nr_sc_injects;
	const char **modules; /* -m */
	int nr_modules;
	const char *output; /* -o */
	enum cli_format format;
	bool follow_forks; /* -F */
	bool one_line; /* --one-line: entry and return on one line (ltrace's layout) */
	bool lossy; /* --lossy: drop (and count) when a ring is full, never wait */
	bool all; /* -a: every process that runs the SPECs' files (the kernel backend) */
	enum cli_backend backend;
	double duration; /* -d SEC, 0 = none */
	int timestamps; /* 0, 1 (-t), 2 (-tt), 3 (-ttt) */
	bool durations; /* -T */
	int verbose; /* -v count; -q sets -1 */
	enum cli_color color;
	char **owned; /* SPECs made from ltrace's -e/-x filters (malloc'ed) */
	int nr_owned;
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
/* utrace record (cmd-record.c): -f/-u/-r into a trace file */
int cmd_record(struct cli_opts *opts);
/* utrace replay|report|dump ARGS... (argv[0]: the sub-command) */
int cmd_read(int argc, char **argv);

struct output;
struct utrace_session;
struct chrome;
/*
 * -s with -f/-u/-r: cmd-syscalls.c's engine in cmd-trace.c's session and
 * output (and, with --format chrome, its writer @chrome; else NULL)
 */
int syscalls_embed(struct cli_opts *opts, struct utrace_session *s, const struct output *out,
		   struct chrome *chrome,
		   bool (*want)(pid_t pid, struct utrace_thread *th, const siginfo_t *si));
void syscalls_embed_end(void);

#endif /* __UTRACE_CLI_H */
