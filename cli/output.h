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
#include <signal.h>
#include <sys/types.h>

#include "cli.h"

struct output {
	FILE *f;
	bool own; /* fclose() at the end */
	const char *name; /* -o FILE; NULL: stderr */
	enum cli_format format;
	int timestamps; /* 0, 1 (-t), 2 (-tt), 3 (-ttt) */
	bool durations; /* -T */
	bool color; /* --color, resolved: SGR sequences in text lines */
	bool demangle; /* -C with -f: C++ names demangled (output_name()) */
	uint64_t flushed_ns; /* CLOCK_MONOTONIC of the last flush (output_live()) */
	bool one_line; /* --one-line: a call's entry and return on one text line */
	struct output_call {
		bool open; /* an entry line waits for its return: "f(1, 2" */
		pid_t tid;
		uint64_t addr; /* the probe point's address */
		unsigned int depth; /* utrace_probe_ctx.depth: equal at entry and return */
		FILE *tail; /* lines that follow the open one (-k's stack), or NULL */
		char *tail_buf;
		size_t tail_len;
	} call;
};

/*
 * One line per call (--one-line, ltrace's layout). An entry's text line is
 * left open ("f(1, 2") by output_call_open(); if the next line written is
 * that call's return, it completes the line (") = 3 <0.000012>"); any other
 * line first ends the open one with " <unfinished ...>", and the return
 * then starts its own line, "<... f resumed> ) = 3". Every text line starts
 * with output_prefix() or output_break(), which end an open line.
 */
void output_call_open(struct output *o, pid_t tid, uint64_t addr, unsigned int depth);

/*
 * output_call_close - is the open line the call of (@tid, @addr, @depth)?
 * Then true: the caller writes ") = ..." on it and output_line_end() after
 * its newline. Else false, the open line (if any) ended as unfinished.
 */
bool output_call_close(struct output *o, pid_t tid, uint64_t addr, unsigned int depth);

/* output_line_end - after the newline of a completed call line: its tail lines. */
void output_line_end(struct output *o);

/*
 * output_call_tail - where the lines that follow the open line go (-k's
 * stack): they come out after it, once it is complete or unfinished.
 * NULL if no line is open (write to @o->f then).
 */
FILE *output_call_tail(struct output *o);

/* output_break - end an open line " <unfinished ...>" (before another line). */
void output_break(struct output *o);

/*
 * output_break_stderr - output_break() of the output that writes to stderr,
 * if it has an open line: a message (cli_error()) is about to be written.
 */
void output_break_stderr(void);

/*
 * Live output: a line reaches the terminal, pipe or -o FILE within
 * OUTPUT_LIVE_MS of its event. Event loops wait at most OUTPUT_LIVE_MS
 * (output_live_wait()) and call output_live() each round: the buffer goes
 * out in one write(2) per round at most, never one per event.
 */
#define OUTPUT_LIVE_MS 50

/* output_live - flush if something is pending and the last flush is OUTPUT_LIVE_MS old. */
void output_live(struct output *o);

/*
 * output_live_wait - how long (ms) an event loop may wait before its next
 * output_live(), bounded by @timeout_ms (-1: no bound of the caller's own).
 */
int output_live_wait(const struct output *o, int timeout_ms);

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

/*
 * output_json_exit - the "exit" record of @tid (of process @pid), whose
 * wait status is @status: "exit_code": N, or "signal": "SIGSEGV" and
 * "core_dumped": true|false (docs/json.md). JSON output only.
 */
void output_json_exit(struct output *o, uint64_t ts_ns, pid_t pid, pid_t tid, int status);

/*
 * output_json_signal - the "signal" record of a signal @si delivered to
 * @tid: "signal": "SIGCHLD", "si_code", and the sender (si_pid, si_uid)
 * or the child's si_status where the code has them. JSON output only.
 */
void output_json_signal(struct output *o, uint64_t ts_ns, pid_t pid, pid_t tid,
			const siginfo_t *si);

/* output_duration - " <0.000009>" when -T. */
void output_duration(struct output *o, uint64_t dur_ns);

/*
 * json_str - @len bytes of @s as a JSON string literal (quotes included).
 * Valid UTF-8 is passed through as it is; a byte that is not part of a
 * valid sequence is written as \u00XX (its value as a code point), so that
 * the output is always valid JSON (docs/json.md).
 */
void json_str(FILE *f, const char *s, size_t len);

/*
 * json_ts - the timestamp fields of a JSON record: "ts_ns": N (exact for
 * parsers with 64-bit integers), "ts": "SEC.NNNNNNNNN" (a string: jq 1.6
 * reads numbers as doubles, which round N beyond 2^53), "ts_sec": SEC and
 * "ts_nsec": NS (numbers every parser keeps exact). Preceded by "{".
 */
void json_ts(FILE *f, uint64_t ts_ns);

/*
 * Colours of the text output (--color; docs/cli.md). Each output_color()
 * is closed by output_color_end(); both write nothing unless @o->color.
 */
enum output_color {
	OC_NAME, /* function or syscall name: bold */
	OC_ERROR, /* an error return, errno: red */
	OC_DURATION, /* -T's <0.000012>: yellow */
	OC_SIGNAL, /* --- SIGCHLD ... ---, +++ killed by +++: magenta */
};
void output_color(struct output *o, enum output_color c);
void output_color_end(struct output *o);

/*
 * output_color_wanted - --color @mode for @f: always, never, or auto (a
 * terminal, NO_COLOR unset or empty, TERM not "dumb").
 */
bool output_color_wanted(enum cli_color mode, FILE *f);

/*
 * output_name - @name as it is shown: demangled when @o->demangle and it
 * is a C++ name (libstdc++'s __cxa_demangle, when the program links it);
 * the string lives until output_names_clear().
 */
const char *output_name(struct output *o, const char *name);
void output_names_clear(void);

/* output_demangle - @name demangled (malloc'ed), or NULL if it is no C++ name. */
char *output_demangle(const char *name);

/* now_realtime_ns, now_mono_ns - clock readings in nanoseconds. */
uint64_t now_realtime_ns(void);
uint64_t now_mono_ns(void);

#endif /* __UTRACE_CLI_OUTPUT_H */
