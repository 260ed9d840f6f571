/* SPDX-License-Identifier: MIT */
/*
 * internal.h - declarations shared by the files of libutrace. Not installed.
 */
#ifndef __UTRACE_INTERNAL_H
#define __UTRACE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "utrace/elf.h"

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

/* elf.c: see the kernel-doc comments there. */
struct elf_dyninfo {
	const char *interp; /* PT_INTERP, or NULL */
	const char **needed; /* DT_NEEDED names (array allocated, strings borrowed) */
	size_t nr_needed;
	const char *rpath; /* DT_RPATH, or NULL */
	const char *runpath; /* DT_RUNPATH, or NULL */
};

int elf_dyninfo_get(struct utrace_elf *elf, struct elf_dyninfo *ret);
void elf_dyninfo_clear(struct elf_dyninfo *di);
int elf_load_bias(const struct utrace_elf *elf, uint64_t map_start, uint64_t map_offset,
		  uint64_t *ret_bias);
bool elf_addr_is_code(const struct utrace_elf *elf, uint64_t addr);
void elf_ident(const struct utrace_elf *elf, int *ret_class, int *ret_machine);

/* spec.c */
bool spec_object_is_path(const char *object);
bool spec_name_matches(const char *object, const char *base);

#endif /* __UTRACE_INTERNAL_H */
