/* SPDX-License-Identifier: MIT */
/*
 * aggr.c - per-probe counters, times and log2 histograms for -c and -H.
 * Tracer process. Entries live in an array (printing order is decided at
 * exit) indexed by an open-addressing hash on the probe name, so the hot
 * path (one lookup per event) does not scan.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "utrace/probe.h"
#include "aggr.h"
#include "output.h"

void aggr_init(struct aggr *a)
{
	memset(a, 0, sizeof(*a));
}

void aggr_clear(struct aggr *a)
{
	size_t i;

	for (i = 0; i < a->nr; i++) {
		free(a->stats[i]->probe);
		free(a->stats[i]->name);
		free(a->stats[i]);
	}
	free(a->stats);
	free(a->hash);
	memset(a, 0, sizeof(*a));
}

static size_t hash_str(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static void hash_insert(struct aggr_stat **hash, size_t slots, struct aggr_stat *st)
{
	size_t i = hash_str(st->probe) & (slots - 1);

	while (hash[i])
		i = (i + 1) & (slots - 1);
	hash[i] = st;
}

static int grow(struct aggr *a)
{
	size_t cap = a->cap ? a->cap * 2 : 16, i;
	struct aggr_stat **stats = realloc(a->stats, cap * sizeof(*stats));
	struct aggr_stat **hash;

	if (!stats)
		return -ENOMEM;
	a->stats = stats;
	hash = calloc(cap * 2, sizeof(*hash));
	if (!hash)
		return -ENOMEM;
	for (i = 0; i < a->nr; i++)
		hash_insert(hash, cap * 2, a->stats[i]);
	free(a->hash);
	a->hash = hash;
	a->cap = cap;
	return 0;
}

struct aggr_stat *aggr_get(struct aggr *a, const char *probe, const char *name)
{
	struct aggr_stat *st;
	size_t i;

	if (a->cap) {
		for (i = hash_str(probe) & (a->cap * 2 - 1); a->hash[i];
		     i = (i + 1) & (a->cap * 2 - 1))
			if (!strcmp(a->hash[i]->probe, probe))
				return a->hash[i];
	}
	if (a->nr == a->cap && grow(a))
		return NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->probe = strdup(probe);
	st->name = strdup(name ? name : probe);
	if (!st->probe || !st->name) {
		free(st->probe);
		free(st->name);
		free(st);
		return NULL;
	}
	a->stats[a->nr++] = st;
	hash_insert(a->hash, a->cap * 2, st);
	return st;
}

/* The library's scheme (one for every backend: exact labels). */
unsigned int aggr_bucket(uint64_t ns)
{
	return utrace_hist_bucket(ns);
}

void aggr_bucket_range(unsigned int b, uint64_t *lo_ns, uint64_t *hi_ns)
{
	utrace_hist_bucket_range(b, lo_ns, hi_ns);
}

static const uint64_t units[] = { 1, 1000, 1000000, 1000000000 };

void aggr_fmt_ns(uint64_t ns, char *buf, size_t size)
{
	static const char *const names[] = { "ns", "us", "ms", "s" };
	int u;

	if (ns == UINT64_MAX) {
		snprintf(buf, size, "inf");
		return;
	}
	for (u = 3; u > 0; u--)
		if (ns >= units[u] && ns % units[u] == 0)
			break;
	snprintf(buf, size, "%" PRIu64 "%s", ns / units[u], names[u]);
}

void aggr_add(struct aggr_stat *st, bool has_dur, uint64_t dur_ns, bool error)
{
	st->calls++;
	if (error)
		st->errors++;
	if (has_dur)
		aggr_time(st, dur_ns, false);
}

void aggr_time(struct aggr_stat *st, uint64_t dur_ns, bool error)
{
	if (error)
		st->errors++;
	if (!st->timed || dur_ns < st->min_ns)
		st->min_ns = dur_ns;
	if (dur_ns > st->max_ns)
		st->max_ns = dur_ns;
	st->timed++;
	st->total_ns += dur_ns;
	st->hist[aggr_bucket(dur_ns)]++;
}

static int cmp_stat(const void *x, const void *y)
{
	const struct aggr_stat *a = *(struct aggr_stat *const *)x;
	const struct aggr_stat *b = *(struct aggr_stat *const *)y;

	if (a->total_ns != b->total_ns)
		return a->total_ns < b->total_ns ? 1 : -1;
	if (a->calls != b->calls)
		return a->calls < b->calls ? 1 : -1;
	return strcmp(a->probe, b->probe);
}

static struct aggr_stat **sorted(struct aggr *a)
{
	struct aggr_stat **v = malloc((a->nr ? a->nr : 1) * sizeof(*v));

	if (!v)
		return NULL;
	memcpy(v, a->stats, a->nr * sizeof(*v));
	qsort(v, a->nr, sizeof(*v), cmp_stat);
	return v;
}

/* the name column: the bare name, or the probe name when two entries share it */
static const char *label(struct aggr *a, const struct aggr_stat *st)
{
	size_t i;

	for (i = 0; i < a->nr; i++)
		if (a->stats[i] != st && !strcmp(a->stats[i]->name, st->name))
			return st->probe;
	return st->name;
}

static void summary_line(FILE *f, double pct, uint64_t total_ns, uint64_t timed, uint64_t calls,
			 uint64_t errors, uint64_t min_ns, uint64_t max_ns, const char *name)
{
	char err[24] = "";

	if (errors)
		snprintf(err, sizeof(err), "%" PRIu64, errors);
	fprintf(f, "%6.2f %11.6f %11" PRIu64 " %9" PRIu64 " %9s %11.3f %11.3f %s\n", pct,
		total_ns / 1e9, timed ? total_ns / 1000 / timed : 0, calls, err, min_ns / 1e3,
		max_ns / 1e3, name);
}

void aggr_print_summary(FILE *f, struct aggr *a, const char *what)
{
	const char *dashes = "------ ----------- ----------- --------- --------- ----------- "
			     "----------- ----------------\n";
	struct aggr_stat **v = sorted(a);
	uint64_t total = 0, calls = 0, errors = 0, timed = 0, min = 0, max = 0;
	size_t i;

	if (!v)
		return;
	for (i = 0; i < a->nr; i++) {
		total += v[i]->total_ns;
		calls += v[i]->calls;
		errors += v[i]->errors;
		if (v[i]->timed && (!timed || v[i]->min_ns < min))
			min = v[i]->min_ns;
		if (v[i]->max_ns > max)
			max = v[i]->max_ns;
		timed += v[i]->timed;
	}
	fprintf(f, "%6.6s %11.11s %11.11s %9.9s %9.9s %11.11s %11.11s %s\n", "% time", "seconds",
		"usecs/call", "calls", "errors", "min usecs", "max usecs", what);
	fputs(dashes, f);
	for (i = 0; i < a->nr; i++)
		summary_line(f, total ? 100.0 * v[i]->total_ns / total : 0.0, v[i]->total_ns,
			     v[i]->timed, v[i]->calls, v[i]->errors, v[i]->min_ns, v[i]->max_ns,
			     label(a, v[i]));
	fputs(dashes, f);
	summary_line(f, 100.0, total, timed, calls, errors, min, max, "total");
	free(v);
}

#define BAR_WIDTH 52

void aggr_print_hist(FILE *f, struct aggr *a)
{
	struct aggr_stat **v = sorted(a);
	size_t i;

	if (!v)
		return;
	for (i = 0; i < a->nr; i++) {
		const struct aggr_stat *st = v[i];
		unsigned int b, first = AGGR_BUCKETS, last = 0;
		uint64_t peak = 0;

		if (!st->timed)
			continue;
		for (b = 0; b < AGGR_BUCKETS; b++) {
			if (!st->hist[b])
				continue;
			if (first == AGGR_BUCKETS)
				first = b;
			last = b;
			if (st->hist[b] > peak)
				peak = st->hist[b];
		}
		fprintf(f, "@%s [%s]: %" PRIu64 " calls, latency", st->name, st->probe, st->timed);
		if (st->calls > st->timed) /* counted at entry: some never returned */
			fprintf(f, " (of %" PRIu64 " calls, %" PRIu64 " did not return)", st->calls,
				st->calls - st->timed);
		fputc('\n', f);
		for (b = first; b <= last; b++) {
			char lo[24], hi[24], range[56];
			uint64_t l, h;
			int n = (int)(peak ? st->hist[b] * BAR_WIDTH / peak : 0);

			if (st->hist[b] && !n)
				n = 1;
			aggr_bucket_range(b, &l, &h);
			aggr_fmt_ns(l, lo, sizeof(lo));
			aggr_fmt_ns(h, hi, sizeof(hi));
			snprintf(range, sizeof(range), "[%s, %s)", lo, hi);
			fprintf(f, "%-16s %8" PRIu64 " |%.*s%*s|\n", range, st->hist[b], n,
				"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@",
				BAR_WIDTH - n, "");
		}
		fputc('\n', f);
	}
	free(v);
}

static void json_head(FILE *f, const char *type, const struct aggr_stat *st, uint64_t ts_ns,
		      pid_t pid)
{
	fputc('{', f);
	json_ts(f, ts_ns);
	fprintf(f, ", \"pid\": %d, \"tid\": %d, \"type\": \"%s\", \"probe\": ", (int)pid, (int)pid,
		type);
	json_str(f, st->probe, strlen(st->probe));
	fputs(", \"name\": ", f);
	json_str(f, st->name, strlen(st->name));
}

void aggr_json_summary(FILE *f, struct aggr *a, uint64_t ts_ns, pid_t pid)
{
	struct aggr_stat **v = sorted(a);
	size_t i;

	if (!v)
		return;
	for (i = 0; i < a->nr; i++) {
		json_head(f, "summary", v[i], ts_ns, pid);
		fprintf(f,
			", \"calls\": %" PRIu64 ", \"errors\": %" PRIu64 ", \"total_ns\": %" PRIu64
			", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 "}\n",
			v[i]->calls, v[i]->errors, v[i]->total_ns, v[i]->min_ns, v[i]->max_ns);
	}
	free(v);
}

void aggr_json_hist(FILE *f, struct aggr *a, uint64_t ts_ns, pid_t pid)
{
	struct aggr_stat **v = sorted(a);
	size_t i;

	if (!v)
		return;
	for (i = 0; i < a->nr; i++) {
		unsigned int b;
		bool first = true;

		if (!v[i]->timed)
			continue;
		json_head(f, "hist", v[i], ts_ns, pid);
		fputs(", \"buckets\": [", f);
		for (b = 0; b < AGGR_BUCKETS; b++) {
			uint64_t lo, hi;

			if (!v[i]->hist[b])
				continue;
			aggr_bucket_range(b, &lo, &hi);
			fprintf(f,
				"%s{\"lo_ns\": %" PRIu64 ", \"hi_ns\": %" PRIu64
				", \"count\": %" PRIu64 "}",
				first ? "" : ", ", lo, hi, v[i]->hist[b]);
			first = false;
		}
		fputs("]}\n", f);
	}
	free(v);
}
