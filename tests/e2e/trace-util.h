/* SPDX-License-Identifier: MIT */
/* trace-util.h - shared helpers of the function-tracing e2e tests. */
#ifndef __UTRACE_TRACE_UTIL_H
#define __UTRACE_TRACE_UTIL_H

#include <stdint.h>
#include <sys/types.h>

/* The utrace binary ($UTRACE, else the build tree's). */
const char *utrace(void);
/* tests/targets/s-trace, the self-counting target. */
const char *target(void);
/* Occurrences of @needle in @hay. */
int count(const char *hay, const char *needle);
/* Number of newline-terminated lines in @s. */
int count_lines(const char *s);
/* "key=N" in the target's output; -1 if absent. */
long target_count(const char *out, const char *key);
/* harness_note() per line. */
void note_lines(const char *text);
/* Run utrace with @args (NULL-terminated), capture both streams. */
int run_utrace(const char *const *args, char **out, char **err);
/* /usr/bin/python3 if there is one, else "python3" (searched in PATH). */
const char *python3(void);
/* python3 -c SCRIPT FILE; its stdout in *@out. */
int run_python(const char *script, const char *file, char **out);
/* $UTRACE_BUILD_DIR/@rel (a static buffer, one of 8 in turn). */
const char *built_path(const char *rel);
/* The bytes of @path now, NUL-terminated (malloc'ed), or NULL. */
char *read_file(const char *path);
/* tests/targets/s-life. */
const char *life(void);
/* What s-life computes for @threads threads of @batches batches (its formula). */
uint64_t life_sum(uint64_t threads, uint64_t batches);
/* Threads of @pid that have a tracer. */
int traced_threads(pid_t pid);

/* A child of @u (any of its threads) running @exe, or 0. */
pid_t launched(pid_t u, const char *exe);
/*
 * Every r-xp mapping of @pid's program equals the file. Return: mappings
 * compared (> 0), or -1 on a difference or error.
 */
int code_matches_file(pid_t pid);

/* s-trace loop in the background; its stdin is our pipe */
struct bg {
	pid_t pid;
	int in, out;
};
struct bg bg_start(void);
/* the same with "s-trace loop MODE" */
struct bg bg_start_mode(const char *mode);
/* close the target's stdin: it checks work() still computes, prints ok */
void bg_finish(struct bg *b);

/* The calls of @fn in a -c summary: 0 if the table has no row for it, -1 if no table. */
long summary_calls(const char *summary, const char *fn);

#endif /* __UTRACE_TRACE_UTIL_H */
