/* SPDX-License-Identifier: MIT */
/*
 * modload.h - utrace -m FILE.so: C probe modules on the command's side
 * (tracer process). The module author's header is include/utrace/module.h;
 * the design is in docs/modules.md and at the top of modload.c.
 */
#ifndef __UTRACE_CLI_MODLOAD_H
#define __UTRACE_CLI_MODLOAD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "utrace/event.h"
#include "utrace/probe.h"
#include "cli.h"
#include "output.h"

struct utrace_module;

#define MODULES_MAX 8 /* -m given at most this often (the agent's table) */

struct cli_module {
	const char *arg; /* as given to -m */
	char path[PATH_MAX]; /* canonical (-m given twice) */
	const struct utrace_module *desc; /* utrace_module__open()'s */
	const char *name;
	int nr_probes, nr_counters;
	int id; /* utrace_uprobes__load_module()'s */
	uint64_t counts[32]; /* UTRACE_MODULE_MAX_COUNTERS: modules_fetch_counters() */
};

extern struct cli_module *cli_modules;
extern int cli_nr_modules;

/* Where the handlers will run: the agent needs code without SIMD/x87 registers. */
enum modules_check {
	MODULES_IN_TRACER, /* -b ptrace: no check */
	MODULES_IN_TARGET, /* -b agent: a module with SIMD code is refused */
	MODULES_EITHER, /* -b auto: checked; modules_simd_why() sends it to ptrace */
};

/*
 * modules_load - check every -m FILE.so (utrace_module__open(): loaded in
 * the tracer, its descriptor read), one line on failure.
 * Return: 0, EXIT_USAGE (no such file, unsafe path, not a module, bad
 * descriptor) or EXIT_TRACE (SIMD code with MODULES_IN_TARGET).
 */
int modules_load(const struct cli_opts *o, enum modules_check check);

/* -b auto: why a module cannot run in the target (SIMD code), else NULL. */
const char *modules_simd_why(void);
void modules_free(void);

/* Number of module probes (table entries of every module). */
int modules_nr_probes(void);

/* The @k-th module probe overall: its module and index in its table. */
void modules_probe_at(int k, int *mi, int *pi);

/* The SPEC, entry and return handlers of module probe (@mi, @pi). */
const char *module_spec(int mi, int pi);
bool module_has_entry(int mi, int pi);
bool module_has_return(int mi, int pi);

/*
 * modules_attach - load every module into the layer (the agent: into its
 * processes too). Return: 0, EXIT_USAGE or EXIT_TRACE (one line said why).
 */
int modules_attach(struct utrace_uprobes *up);

/* @po runs module probe (@mi, @pi) on any backend (utrace_probe_opts.module). */
void module_probe_opts(int mi, int pi, struct utrace_probe_opts *po);

/* cli_modules[].counts from the library (summed over the processes). */
void modules_fetch_counters(struct utrace_uprobes *up);

/* A UTRACE_REC_MODULE record: a text line or a JSON object. */
void module_print(struct output *out, int64_t mono_to_real, const struct utrace_record *r);

/* One record of module probe (@mi, @pi): a text line or a JSON object. */
void module_print_record(struct output *out, int64_t mono_to_real, pid_t pid, pid_t tid,
			 uint64_t ts_mono, int mi, int pi, const uint64_t *v, unsigned int n);

/* At exit: each module's counters (cli_modules[].counts). */
void modules_print_counters(FILE *f, bool json, uint64_t ts_real, pid_t pid);

#endif /* __UTRACE_CLI_MODLOAD_H */
