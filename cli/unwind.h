/* SPDX-License-Identifier: MIT */
/*
 * unwind.h - what utrace -k adds to the library's CFI unwinder
 * (utrace/unwind.h): how a frame's name is printed. Tracer process.
 */
#ifndef __UTRACE_CLI_UNWIND_H
#define __UTRACE_CLI_UNWIND_H

#include "utrace/unwind.h"

/* unwind_name_len - @name's length without its symbol version ("@@GLIBC_2.2.5") */
static inline int unwind_name_len(const char *name)
{
	const char *at = __builtin_strchr(name, '@');

	return at && at > name ? (int)(at - name) : (int)__builtin_strlen(name);
}

#endif /* __UTRACE_CLI_UNWIND_H */
