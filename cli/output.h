/* SPDX-License-Identifier: MIT */
/*
 * output.h - event writers of the utrace command (docs/cli.md "Output"):
 * text lines with strace's timestamp/duration decorations, JSON objects
 * one per line. Tracer process; not thread-safe (one event loop).
 */
#ifndef __UTRACE_CLI_OUTPUT_H
#define __UTRACE_CLI_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"

struct output {
	FILE *f;
	bool own; /* fclose() at the end */
	const char *name; /* -o FILE; NULL: stderr */
	enum cli_format format;
	int timestamps; /* 0, 1 (-t), 2 (-tt), 3 (-ttt) */
	bool durations; /* -T */
};

/*
 * output_open - open -o @path (NULL: stderr) for events of @opts.
 * Return: 0; negative errno if the file cannot be created.
 */
int output_open(struct output *o, const struct cli_opts *opts);

/* output_flush - fflush(); a failure is kept for output_error(). Return: 0 or -errno. */
int output_flush(struct output *o);

/*
 * output_close - flush and close; accepts a never-opened @o.
 * Return: 0; negative errno if some output could not be written (kept for
 * output_error()).
 */
int output_close(struct output *o);

/*
 * output_error - the first write error of the run: on an output_close()d
 * output, on stderr or on stdout (both flushed here).
 * Return: 0, or the negative errno with *@ret_name set to the file's
 * name (NULL: stderr; "stdout").
 */
int output_error(const char **ret_name);

/* output_prefix - "12:00:01.000130 [4243] " (text), per -t/-tt/-ttt and @show_pid. */
void output_prefix(struct output *o, uint64_t ts_ns, pid_t tid, bool show_pid);

/*
 * output_killed - "[PID] +++ killed by SIGSEGV +++" (text) when the wait
 * status @status says @pid was killed by a signal, as strace -p says it.
 */
void output_killed(struct output *o, pid_t pid, int status);

/* output_duration - " <0.000009>" when -T. */
void output_duration(struct output *o, uint64_t dur_ns);

/* json_str - @len bytes of @s as a JSON string literal (quotes included). */
void json_str(FILE *f, const char *s, size_t len);

/* now_realtime_ns, now_mono_ns - clock readings in nanoseconds. */
uint64_t now_realtime_ns(void);
uint64_t now_mono_ns(void);

#endif /* __UTRACE_CLI_OUTPUT_H */
