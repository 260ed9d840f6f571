/* SPDX-License-Identifier: MIT */
/*
 * aggr.h - aggregation of calls for -c (summary table) and -H (latency
 * histograms): per probe point or per syscall, calls, errors, total / min /
 * max time and a log2 histogram. Used by function tracing and reusable by
 * the syscall tracer. Tracer process; not thread-safe.
 *
 * Histogram buckets are powers of two within each unit, so that every edge
 * is a round number: [0, 1ns), [1ns, 2ns) ... [256ns, 512ns), [512ns, 1us),
 * [1us, 2us) ... [512us, 1ms), [1ms, 2ms) ... [512ms, 1s), [1s, 2s) ...
 * (bcc's funclatency and bpftrace's hist() read the same way).
 */
#ifndef __UTRACE_CLI_AGGR_H
#define __UTRACE_CLI_AGGR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define AGGR_BUCKETS 64

struct aggr_stat {
	char *probe; /* "libc.so.6:malloc", "syscall:openat" */
	char *name; /* "malloc", "openat" */
	uint64_t calls;
	uint64_t errors;
	uint64_t timed; /* calls with a duration (entry-only probes have none) */
	uint64_t total_ns;
	uint64_t min_ns;
	uint64_t max_ns;
	uint64_t hist[AGGR_BUCKETS];
	const void *priv; /* the user's (cmd-trace: the function's prototype) */
};

struct aggr {
	struct aggr_stat **stats;
	size_t nr, cap;
	struct aggr_stat **hash; /* open addressing on @probe, 2 * @cap slots */
};

/* aggr_init, aggr_clear - an empty set; free everything. */
void aggr_init(struct aggr *a);
void aggr_clear(struct aggr *a);

/*
 * aggr_get - the entry of @probe, created (with display name @name) if new.
 * Return: borrowed pointer, valid until aggr_clear(); NULL on ENOMEM.
 */
struct aggr_stat *aggr_get(struct aggr *a, const char *probe, const char *name);

/* aggr_add - count one call; @has_dur: @dur_ns is meaningful. */
void aggr_add(struct aggr_stat *st, bool has_dur, uint64_t dur_ns, bool error);

/*
 * aggr_time - the return of a call counted at its entry (aggr_count()):
 * its duration and error, without counting it again. Calls that never
 * return (unwound by an exception or longjmp, still running at exit) are
 * in @calls but not in @timed, the times or the histogram.
 */
void aggr_time(struct aggr_stat *st, uint64_t dur_ns, bool error);

/* aggr_count - count one call without a duration (entry-only probes, or at entry). */
static inline void aggr_count(struct aggr_stat *st, bool error)
{
	aggr_add(st, false, 0, error);
}

/* aggr_bucket - the histogram bucket of @ns; aggr_bucket_range - its edges. */
unsigned int aggr_bucket(uint64_t ns);
void aggr_bucket_range(unsigned int b, uint64_t *lo_ns, uint64_t *hi_ns);

/* aggr_fmt_ns - "512ns", "1us", "2ms", "4s": an edge as the histogram shows it. */
void aggr_fmt_ns(uint64_t ns, char *buf, size_t size);

/*
 * aggr_print_summary - the -c table, sorted by total time (then calls):
 * "% time  seconds  usecs/call  calls  errors  min usecs  max usecs  @what"
 * with a total line, like strace -c / ltrace -c plus min and max.
 * @what: the last column's title ("function", "syscall").
 */
void aggr_print_summary(FILE *f, struct aggr *a, const char *what);

/*
 * aggr_print_hist - one histogram per entry with timed calls, bpftrace's
 * look: "[1us, 2us)        12 |@@@@@@@@            |".
 */
void aggr_print_hist(FILE *f, struct aggr *a);

/*
 * aggr_json_summary, aggr_json_hist - the same as JSON objects, one per line
 * (docs/cli.md: "type": "summary" / "hist"), stamped @ts_ns, @pid.
 */
void aggr_json_summary(FILE *f, struct aggr *a, uint64_t ts_ns, pid_t pid);
void aggr_json_hist(FILE *f, struct aggr *a, uint64_t ts_ns, pid_t pid);

#endif /* __UTRACE_CLI_AGGR_H */
