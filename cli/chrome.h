/* SPDX-License-Identifier: MIT */
/*
 * chrome.h - --format chrome: a Chrome Trace Event file (the JSON object
 * form, {"traceEvents": [...]}) that opens in Perfetto UI and
 * chrome://tracing. Function calls are "B"/"E" duration events on their
 * thread's track, entry-only and return-only probes "i" instant events,
 * processes and threads are named with "M" metadata events. Timestamps
 * are microseconds (fractional) of CLOCK_MONOTONIC.
 *
 * Every "B" gets its "E": a call that never returned as far as the tracer
 * could see (longjmp past it, thread exit, end of tracing) is closed when
 * its thread's stack is unwound past it or when the file is closed.
 * Tracer process; not thread-safe.
 */
#ifndef __UTRACE_CLI_CHROME_H
#define __UTRACE_CLI_CHROME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct chrome_thread;

struct chrome {
	FILE *f;
	bool first; /* no event written yet (comma placement) */
	uint64_t last_ns; /* latest timestamp seen, closes open calls at the end */
	struct chrome_thread *threads; /* per-thread stacks of open calls */
};

/* chrome_open - start the file on @f (not owned). */
void chrome_open(struct chrome *c, FILE *f);

/*
 * chrome_close - close every call still open (at the latest timestamp seen)
 * and end the JSON document. Frees the per-thread state.
 */
void chrome_close(struct chrome *c);

/* chrome_name_process, chrome_name_thread - "M" metadata: track names. */
void chrome_name_process(struct chrome *c, pid_t pid, const char *name);
void chrome_name_thread(struct chrome *c, pid_t pid, pid_t tid, const char *name);

/*
 * chrome_begin - a call of @name (@probe: its probe point) starts on @tid
 * at @ts_ns; @args_json is the body of the event's "args" object (already
 * JSON, e.g. "\"args\": [32]"), or NULL.
 * Return: 0; -ENOMEM (the event is still written, its stack entry lost).
 */
int chrome_begin(struct chrome *c, pid_t pid, pid_t tid, uint64_t ts_ns, const char *name,
		 const char *probe, const char *args_json);

/*
 * chrome_end - the innermost open call of @probe on @tid returns at @ts_ns.
 * Calls opened after it on that thread are closed first. A return with no
 * open call (its entry was not seen) becomes an instant event.
 */
void chrome_end(struct chrome *c, pid_t pid, pid_t tid, uint64_t ts_ns, const char *name,
		const char *probe, const char *args_json);

/* chrome_instant - an "i" event (entry-only probe hit, return-only probe). */
void chrome_instant(struct chrome *c, pid_t pid, pid_t tid, uint64_t ts_ns, const char *name,
		    const char *probe, const char *args_json);

/* chrome_thread_exit - @tid is gone: close its open calls at @ts_ns. */
void chrome_thread_exit(struct chrome *c, pid_t tid, uint64_t ts_ns);

struct proto_vals;
struct proto_val;

/*
 * chrome_call_args - the JSON members of a call event's "args" object:
 * "args": [...] from @vals and/or "ret": v from @ret, and "injected": true.
 * Return: a malloc()ed string (the caller frees it), or NULL.
 */
char *chrome_call_args(const struct proto_vals *vals, const struct proto_val *ret, bool injected);

#endif /* __UTRACE_CLI_CHROME_H */
