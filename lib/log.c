/* SPDX-License-Identifier: MIT */
/*
 * log.c - the logging callback. Runs in the tracer process only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "utrace/common.h"
#include "log.h"

static int default_print(enum utrace_print_level level, const char *fmt, va_list ap)
{
	static int max_level = -1;

	if (max_level < 0) {
		const char *s = getenv("UTRACE_LOG_LEVEL");

		max_level = UTRACE_WARN;
		if (s && !strcmp(s, "info"))
			max_level = UTRACE_INFO;
		else if (s && !strcmp(s, "debug"))
			max_level = UTRACE_DEBUG;
	}
	if ((int)level > max_level)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static utrace_print_fn_t print_fn = default_print;

utrace_print_fn_t utrace_set_print(utrace_print_fn_t fn)
{
	utrace_print_fn_t old = print_fn;

	print_fn = fn;
	return old;
}

void utrace_log(enum utrace_print_level level, const char *fmt, ...)
{
	va_list ap;
	int saved_errno = errno;

	if (!print_fn)
		return;
	va_start(ap, fmt);
	print_fn(level, fmt, ap);
	va_end(ap);
	errno = saved_errno;
}
