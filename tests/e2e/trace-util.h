/* SPDX-License-Identifier: MIT */
/* trace-util.h - shared helpers of the function-tracing e2e tests. */
#ifndef __UTRACE_TRACE_UTIL_H
#define __UTRACE_TRACE_UTIL_H

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
/* python3 -c SCRIPT FILE; its stdout in *@out. */
int run_python(const char *script, const char *file, char **out);

#endif /* __UTRACE_TRACE_UTIL_H */
