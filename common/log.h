/* SPDX-License-Identifier: MIT */
/*
 * log.h - internal logging: pr_warn/pr_info/pr_debug go through the callback
 * installed with utrace_set_print(). Never writes to stdio directly.
 */
#ifndef __UTRACE_LOG_H
#define __UTRACE_LOG_H

#include "utrace/common.h"

__attribute__((format(printf, 2, 3))) void utrace_log(enum utrace_print_level level,
						      const char *fmt, ...);

#define pr_warn(fmt, ...) utrace_log(UTRACE_WARN, fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...) utrace_log(UTRACE_INFO, fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...) utrace_log(UTRACE_DEBUG, fmt, ##__VA_ARGS__)

#endif /* __UTRACE_LOG_H */
