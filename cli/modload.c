/* SPDX-License-Identifier: MIT */
/*
 * modload.c - utrace -m FILE.so: C probe modules, the command's side.
 * Tracer process. The library loads, checks and runs them (lib/module.c:
 * utrace_module__open(), utrace_uprobes__load_module(); the agent runs
 * their handlers in the target, the ptrace backend here); this file picks
 * where before the layer exists (-b auto: a module with SIMD code makes
 * it ptrace), names their probes for the trace command, and prints what
 * they report: UTRACE_REC_MODULE records and, at exit, their counters.
 * The author's header is include/utrace/module.h; the guide docs/modules.md.
 */
#define UTRACE_MODULE_LOADER /* we read descriptors: no redirecting macros */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "utrace/module.h"
#include "modload.h"

_Static_assert(UTRACE_MODULE_MAX_COUNTERS == 32, "struct cli_module counts[]");

struct cli_module *cli_modules;
int cli_nr_modules;

static char simd_why[2 * PATH_MAX + 512];
static struct {
	int mi, pi;
} * pbinds;

/* ---- loading -------------------------------------------------------------- */

const char *modules_simd_why(void)
{
	return simd_why[0] ? simd_why : NULL;
}

/* One module's open failure, in one line: its exit status. */
static int open_error(const char *arg, int err, const char *why)
{
	cli_error("module '%s': %s", arg, why[0] ? why : strerror(-err));
	return err == -EOPNOTSUPP ? EXIT_TRACE : EXIT_USAGE;
}

int modules_load(const struct cli_opts *o, enum modules_check check)
{
	char why[PATH_MAX + 256];
	int i, j, k, err;

	if (o->nr_modules > MODULES_MAX) {
		cli_error("at most %d modules (-m) at once", MODULES_MAX);
		return EXIT_USAGE;
	}
	cli_modules = calloc((size_t)o->nr_modules + 1, sizeof(*cli_modules));
	if (!cli_modules) {
		cli_error("out of memory");
		return EXIT_TRACE;
	}
	for (i = 0; i < o->nr_modules; i++) {
		struct cli_module *m = &cli_modules[i];
		const char *arg = o->modules[i];

		m->arg = arg;
		err = utrace_module__open(arg,
					  check == MODULES_IN_TRACER ? 0 : UTRACE_MODULE_IN_TARGET,
					  &m->desc, why, sizeof(why));
		if (err == -EOPNOTSUPP && check == MODULES_EITHER) {
			/* -b auto: its handlers run in the tracer (modules_simd_why()) */
			if (!simd_why[0])
				snprintf(simd_why, sizeof(simd_why), "module '%s': %s", arg, why);
			err = utrace_module__open(arg, 0, &m->desc, why, sizeof(why));
		}
		if (err)
			return open_error(arg, err, why);
		if (!realpath(arg, m->path))
			snprintf(m->path, sizeof(m->path), "%s", arg);
		for (j = 0; j < i; j++)
			if (!strcmp(cli_modules[j].path, m->path)) {
				cli_error("module '%s' is given twice", arg);
				return EXIT_USAGE;
			}
		m->name = m->desc->name;
		for (m->nr_probes = 0; m->desc->probes[m->nr_probes].spec; m->nr_probes++)
			;
		for (m->nr_counters = 0; m->desc->counters && m->desc->counters[m->nr_counters];
		     m->nr_counters++)
			;
		cli_nr_modules++;
	}
	pbinds = calloc((size_t)modules_nr_probes() + 1, sizeof(*pbinds));
	if (!pbinds) {
		cli_error("out of memory");
		return EXIT_TRACE;
	}
	for (k = 0, i = 0; i < cli_nr_modules; i++)
		for (j = 0; j < cli_modules[i].nr_probes; j++, k++) {
			pbinds[k].mi = i;
			pbinds[k].pi = j;
		}
	return 0;
}

int modules_attach(struct utrace_uprobes *up)
{
	char why[PATH_MAX + 256];
	int i, id;

	for (i = 0; i < cli_nr_modules; i++) {
		id = utrace_uprobes__load_module(up, cli_modules[i].arg, why, sizeof(why));
		if (id < 0) {
			cli_error("module '%s': %s", cli_modules[i].arg,
				  why[0] ? why : strerror(-id));
			return id == -ENOENT || id == -EPERM || id == -ENOEXEC || id == -EEXIST ?
				       EXIT_USAGE :
				       EXIT_TRACE;
		}
		cli_modules[i].id = id;
	}
	return 0;
}

void module_probe_opts(int mi, int pi, struct utrace_probe_opts *po)
{
	po->module = cli_modules[mi].id;
	po->module_probe = (unsigned int)pi;
}

void modules_fetch_counters(struct utrace_uprobes *up)
{
	int i;

	for (i = 0; i < cli_nr_modules; i++)
		if (cli_modules[i].id)
			utrace_uprobes__module_counters(up, cli_modules[i].id,
							cli_modules[i].counts, 32);
}

void modules_free(void)
{
	/* never dlclose(): a module's strings are printed up to the very end */
	free(cli_modules);
	free(pbinds);
	cli_modules = NULL;
	pbinds = NULL;
	cli_nr_modules = 0;
	simd_why[0] = '\0';
}

int modules_nr_probes(void)
{
	int i, n = 0;

	for (i = 0; i < cli_nr_modules; i++)
		n += cli_modules[i].nr_probes;
	return n;
}

void modules_probe_at(int k, int *mi, int *pi)
{
	*mi = pbinds[k].mi;
	*pi = pbinds[k].pi;
}

const char *module_spec(int mi, int pi)
{
	return cli_modules[mi].desc->probes[pi].spec;
}

bool module_has_entry(int mi, int pi)
{
	return cli_modules[mi].desc->probes[pi].handler != NULL;
}

bool module_has_return(int mi, int pi)
{
	return cli_modules[mi].desc->probes[pi].ret_handler != NULL;
}

/* ---- output --------------------------------------------------------------- */

static const char *field(const struct utrace_module_probe *mp, unsigned int i, char *buf,
			 size_t size)
{
	if (i < UTRACE_MODULE_MAX_VALUES && mp->fields[i])
		return mp->fields[i];
	snprintf(buf, size, "v%u", i);
	return buf;
}

void module_print(struct output *out, int64_t mono_to_real, const struct utrace_record *r)
{
	int mi;

	for (mi = 0; mi < cli_nr_modules; mi++)
		if (cli_modules[mi].id == r->module)
			module_print_record(out, mono_to_real, r->pid, r->tid, r->ts_ns, mi,
					    (int)r->module_probe, r->args, r->nargs);
}

void module_print_record(struct output *out, int64_t mono_to_real, pid_t pid, pid_t tid,
			 uint64_t ts_mono, int mi, int pi, const uint64_t *v, unsigned int n)
{
	const struct cli_module *m;
	const struct utrace_module_probe *mp;
	uint64_t ts = (uint64_t)((int64_t)ts_mono + mono_to_real);
	FILE *f = out->f;
	unsigned int i;
	char buf[16];

	if (mi < 0 || mi >= cli_nr_modules || pi < 0 || pi >= cli_modules[mi].nr_probes ||
	    out->format == CLI_FMT_CHROME)
		return;
	m = &cli_modules[mi];
	mp = &m->desc->probes[pi];
	if (out->format == CLI_FMT_JSON) {
		fputc('{', f);
		json_ts(f, ts);
		fprintf(f,
			", \"pid\": %d, \"tid\": %d, \"type\": \"module\", \"module\": ", (int)pid,
			(int)tid);
		json_str(f, m->name, strlen(m->name));
		fputs(", \"probe\": ", f);
		json_str(f, mp->spec, strlen(mp->spec));
		fputs(", \"values\": {", f);
		for (i = 0; i < n; i++) {
			const char *name = field(mp, i, buf, sizeof(buf));

			fputs(i ? ", " : "", f);
			json_str(f, name, strlen(name));
			fprintf(f, ": %" PRId64, (int64_t)v[i]);
		}
		fputs("}}\n", f);
		return;
	}
	output_prefix(out, ts, tid, true);
	fprintf(f, "%s:%s", m->name, mp->spec);
	for (i = 0; i < n; i++)
		fprintf(f, " %s=%" PRId64, field(mp, i, buf, sizeof(buf)), (int64_t)v[i]);
	fputc('\n', f);
}

void modules_print_counters(FILE *f, bool json, uint64_t ts_real, pid_t pid)
{
	int i, j;

	for (i = 0; i < cli_nr_modules; i++) {
		const struct cli_module *m = &cli_modules[i];

		if (!m->nr_counters)
			continue;
		if (json) {
			fputc('{', f);
			json_ts(f, ts_real);
			fprintf(f, ", \"pid\": %d, \"type\": \"module_counters\", \"module\": ",
				(int)pid);
			json_str(f, m->name, strlen(m->name));
			fputs(", \"counters\": {", f);
		} else {
			fprintf(f, "module %s:", m->name);
		}
		for (j = 0; j < m->nr_counters; j++) {
			const char *name = m->desc->counters[j];

			if (json) {
				fputs(j ? ", " : "", f);
				json_str(f, name, strlen(name));
				fprintf(f, ": %" PRIu64, m->counts[j]);
			} else {
				fprintf(f, " %s=%" PRIu64, name, m->counts[j]);
			}
		}
		fputs(json ? "}}\n" : "\n", f);
	}
}
