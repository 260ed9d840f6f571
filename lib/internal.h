/* SPDX-License-Identifier: MIT */
/*
 * internal.h - declarations shared by the files of libutrace. Not installed.
 */
#ifndef __UTRACE_INTERNAL_H
#define __UTRACE_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

#include "util.h"
#include "log.h"

/**
 * proc_status_field - read one "Key: value" field of /proc/@pid/status
 * @pid: process or thread id
 * @key: field name without the colon, e.g. "TracerPid"
 * @buf: receives the value, leading blanks stripped
 * @size: size of @buf
 *
 * Runs in the tracer. Return: 0 on success; -ESRCH if the process is gone;
 * -ENOENT if the field does not exist.
 */
int proc_status_field(pid_t pid, const char *key, char *buf, size_t size);

#endif /* __UTRACE_INTERNAL_H */
