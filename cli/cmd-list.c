/* SPDX-License-Identifier: MIT */
/*
 * cmd-list.c - utrace -l SPEC [-p PID[,PID...] | -- COMMAND]: list the probe
 * points SPEC matches. Tracer process; touches no target (reads /proc and
 * files only).
 *
 * Output, to stdout, one line per match, columns aligned:
 *
 *   OBJECT-PATH  SYMBOL[+0xOFF|@plt]  ADDRESS  SIZE
 *
 * ADDRESS is the runtime address with -p, the file address otherwise; SIZE
 * is the symbol's size in bytes ('-' if unknown). Several names at one
 * address (aliases) are all listed, primary name first; with -v, each alias
 * line ends with "(alias of PRIMARY)". With several pids, each line starts
 * with "[PID]". The column after SIZE is the site planner's decision
 * (include/utrace/plan.h): "jmp" (a 5-byte jmp to a trampoline), "int3" (a
 * breakpoint, the instruction run out of line) or "refused: WHY". With
 * --why, jmp says how many bytes it displaces (and where the probe moved
 * past endbr64, or past a first instruction kept in place: planner.c rule
 * 5), and int3 says why it is not a jmp. Where return probes
 * are refused (Go code) while the entry is not, the column goes on with
 * "; -f/-r refused: WHY".
 *
 * Exit status: 0 with matches, or when the SPEC is pending on an object
 * that is not loaded (a warning on stderr); 2 for a malformed SPEC or one
 * that matches nothing; 1 when a process cannot be examined. Every error is
 * one line on stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utrace/utrace.h"
#include "cli.h"

#define NR_COLS 6

struct row {
	char *col[NR_COLS];
	char *note; /* -v: "(alias of NAME)", printed last */
};

struct table {
	struct row *rows;
	size_t nr;
	bool why; /* --why: explain every plan */
	bool verbose;
	bool demangle; /* -C: C++ names demangled, as ltrace -C */
};

#ifdef HAVE_CXA_DEMANGLE
/* libstdc++'s demangler: this reference makes the command link libstdc++ */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);
#else
static char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status)
{
	*status = -1; /* built without libstdc++: names stay as they are */
	return NULL;
}
#endif

/* -C: @name demangled (malloc'ed) if it is a C++ name, else NULL */
static char *demangle(const char *name)
{
	int st = -1;
	char *d;

	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	d = __cxa_demangle(name, NULL, NULL, &st);
	if (st) {
		free(d);
		return NULL;
	}
	return d;
}

static int table_add(struct table *t, const char *pid, const char *obj, const char *sym,
		     uint64_t addr, uint64_t size, const char *plan, const char *alias_of)
{
	struct row *nr = realloc(t->rows, (t->nr + 1) * sizeof(*nr));
	struct row *r;

	if (!nr)
		return -ENOMEM;
	t->rows = nr;
	r = &t->rows[t->nr++];
	memset(r, 0, sizeof(*r));
	if (asprintf(&r->col[0], "%s", pid) < 0 || asprintf(&r->col[1], "%s", obj) < 0 ||
	    asprintf(&r->col[2], "%s", sym) < 0 || asprintf(&r->col[3], "0x%" PRIx64, addr) < 0 ||
	    (size ? asprintf(&r->col[4], "%" PRIu64, size) : asprintf(&r->col[4], "-")) < 0 ||
	    asprintf(&r->col[5], "%s", plan) < 0 ||
	    (alias_of && asprintf(&r->note, "(alias of %s)", alias_of) < 0))
		return -ENOMEM;
	return 0;
}

static void table_print_free(struct table *t)
{
	size_t w[NR_COLS] = { 0 }, i, c;

	for (i = 0; i < t->nr; i++)
		for (c = 0; c < NR_COLS; c++)
			if (t->rows[i].col[c] && strlen(t->rows[i].col[c]) > w[c])
				w[c] = strlen(t->rows[i].col[c]);
	for (i = 0; i < t->nr; i++) {
		struct row *r = &t->rows[i];

		if (w[0])
			printf("%-*s  ", (int)w[0], r->col[0]);
		printf("%-*s  %-*s  %-*s  %-*s  ", (int)w[1], r->col[1], (int)w[2], r->col[2],
		       (int)w[3], r->col[3], (int)w[4], r->col[4]);
		/* the last column is not padded: the plan, or the -v note after it */
		if (r->note)
			printf("%-*s  %s\n", (int)w[5], r->col[5], r->note);
		else
			printf("%s\n", r->col[5]);
		for (c = 0; c < NR_COLS; c++)
			free(r->col[c]);
		free(r->note);
	}
	free(t->rows);
	t->rows = NULL;
	t->nr = 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static const char *main_name(const struct utrace_image *img)
{
	size_t i;

	for (i = 0; i < utrace_image__object_count(img); i++)
		if (utrace_image__object(img, i)->is_main)
			return base_name(utrace_image__object(img, i)->path);
	return "the main executable";
}

/* "libc:foo+0x100" past the end of foo: say how long foo is. */
static void report_range(struct utrace_image *img, const struct utrace_spec *spec)
{
	struct utrace_spec s = *spec;
	struct utrace_match *m = NULL;
	size_t nr = 0;

	s.flags &= ~UTRACE_SPEC_OFFSET;
	s.offset = 0;
	if (!utrace_image__resolve(img, &s, &m, &nr, NULL) && nr)
		cli_error("'%s': offset %#" PRIx64 " is past the end of %s (%" PRIu64 " bytes)",
			  spec->text, spec->offset, m[0].symbol, m[0].sym_size);
	else
		cli_error("'%s': offset %#" PRIx64 " is past the end of the function", spec->text,
			  spec->offset);
	free(m);
}

/* The plan column for match @m: "jmp", "int3" or "refused: WHY". */
static void plan_text(struct utrace_planner *pl, const struct utrace_match *m, bool why, char *buf,
		      size_t size)
{
	struct utrace_plan p;
	int err = pl ? utrace_planner__plan(pl, m, &p) : -ENOMEM;

	if (err && err != -UTRACE_ERRNO__RELOC) {
		snprintf(buf, size, "unknown: cannot plan: %s", strerror(-err));
		return;
	}
	switch (p.mode) {
	case UTRACE_PLAN_JMP:
		if (!why)
			snprintf(buf, size, "jmp");
		else if (p.pre_len)
			/* planner.c rule 5: the entry's first instruction runs in place */
			snprintf(buf, size,
				 "jmp: %u bytes displaced, at %#" PRIx64 " after %s%u-byte "
				 "instruction kept in place (a kernel uprobe on the entry stays "
				 "safe)",
				 p.len, p.addr,
				 p.addr - p.pre_len != m->addr ? "endbr64 and the next, a " :
								 "the first, a ",
				 p.pre_len);
		else if (p.addr != m->addr)
			snprintf(buf, size,
				 "jmp: %u bytes displaced, at %#" PRIx64 " after endbr64", p.len,
				 p.addr);
		else
			snprintf(buf, size, "jmp: %u bytes displaced", p.len);
		break;
	case UTRACE_PLAN_INT3:
		if (why && p.detail)
			snprintf(buf, size, "int3: not a jmp: %s (%s)", p.why, p.detail);
		else if (why)
			snprintf(buf, size, "int3: not a jmp: %s", p.why);
		else
			snprintf(buf, size, "int3");
		break;
	default:
		if (why && p.detail)
			snprintf(buf, size, "refused: %s (%s)", p.why, p.detail);
		else
			snprintf(buf, size, "refused: %s", p.why);
		break;
	}
}

/* Go code: the entry can be probed (-u), its returns cannot (-f, -r). */
static void ret_text(struct utrace_image *img, const struct utrace_match *m, char *buf, size_t size)
{
	const char *why = utrace_plan__ret_refused(img, m);
	size_t len = strlen(buf);

	if (why && !strncmp(buf, "refused", 7))
		return;
	if (why && len < size)
		snprintf(buf + len, size - len, "; -f/-r refused: %s", why);
}

/* With -v: the primary name of an alias (same address), else NULL. */
static const char *alias_of(struct utrace_image *img, const struct utrace_match *m)
{
	struct utrace_elf *elf;
	const struct utrace_sym *s;

	if (!m->symbol || !(m->sym_flags & UTRACE_SYM_ALIAS))
		return NULL;
	elf = utrace_image__elf(img, m->object);
	s = elf ? utrace_elf__find_sym(elf, m->file_addr - m->offset) : NULL;
	return s && strcmp(s->name, m->symbol) ? s->name : NULL;
}

/*
 * List @spec in @img. @where describes the image for messages ("pid 42",
 * "./prog"), @pid_col is the "[PID]" column or "". Returns an exit status.
 */
static int list_image(struct utrace_image *img, const struct utrace_spec *spec, const char *where,
		      bool live, const char *pid_col, struct table *t)
{
	struct utrace_match *m = NULL;
	char errbuf[256];
	struct utrace_planner *pl;
	bool pending = false;
	size_t nr = 0, i;
	int err;

	err = utrace_image__resolve(img, spec, &m, &nr, &pending);
	if (err == -ERANGE) {
		report_range(img, spec);
		return EXIT_USAGE;
	}
	if (err == -ENOENT || err == -ENOTDIR || err == -EACCES) {
		cli_error("'%s': %s: %s", spec->text, spec->object, strerror(-err));
		return EXIT_USAGE;
	}
	if (err) {
		utrace_strerror(err, errbuf, sizeof(errbuf));
		cli_error("'%s': cannot resolve in %s: %s", spec->text, where, errbuf);
		return EXIT_TRACE;
	}
	if (pending) {
		if (live)
			cli_error(
				"warning: '%s': no object '%s' is loaded in %s; the probe would stay pending until it is loaded",
				spec->text, spec->object, where);
		else
			cli_error(
				"warning: '%s': '%s' is not among the objects %s loads at start-up; the probe would stay pending until it is dlopen()ed",
				spec->text, spec->object, where);
		return 0;
	}
	if (!nr) {
		const char *obj = spec->object ? spec->object : main_name(img);

		if (spec->flags & UTRACE_SPEC_ADDR)
			cli_error("'%s': %#" PRIx64 " is not in the code of %s (%s)", spec->text,
				  spec->addr, obj, where);
		else if (spec->flags & UTRACE_SPEC_PLT)
			cli_error("'%s' matches no PLT stub of %s (%s)", spec->text, obj, where);
		else
			cli_error("'%s' matches no function in %s (%s)%s", spec->text,
				  !strcmp(obj, "*") ? "any object" : obj, where,
				  spec->object ?
					  "" :
					  "; is it stripped? try OBJECT:SYMBOL for a library");
		return EXIT_USAGE;
	}
	pl = utrace_planner__new(img);
	/* the plans of the agent (the default backend): its jmps keep a short first instruction */
	utrace_planner__keep_first(pl, true);
	for (i = 0; i < nr && !err; i++) {
		const struct utrace_object *o = utrace_image__object(img, m[i].object);
		char sym[1024], plan[256];
		char *dem = t->demangle ? demangle(m[i].symbol) : NULL;
		const char *name = dem ? dem : m[i].symbol;

		if (!m[i].symbol)
			snprintf(sym, sizeof(sym), "%#" PRIx64, m[i].file_addr);
		else if (m[i].sym_flags & UTRACE_SYM_PLT)
			snprintf(sym, sizeof(sym), "%s@plt", name);
		else if (m[i].offset)
			snprintf(sym, sizeof(sym), "%s+%#" PRIx64, name, m[i].offset);
		else
			snprintf(sym, sizeof(sym), "%s", name);
		free(dem);
		plan_text(pl, &m[i], t->why, plan, sizeof(plan));
		ret_text(img, &m[i], plan, sizeof(plan));
		err = table_add(t, pid_col, o->path, sym, m[i].addr, m[i].sym_size, plan,
				t->verbose ? alias_of(img, &m[i]) : NULL);
	}
	utrace_planner__free(pl);
	free(m);
	if (err) {
		cli_error("out of memory");
		return EXIT_TRACE;
	}
	return 0;
}

static int list_pid(const struct utrace_spec *spec, pid_t pid, bool many, struct table *t)
{
	struct utrace_image *img;
	char where[64], col[32] = "";
	int err, rc;

	err = utrace_proc__check_access(pid);
	if (err == -ESRCH) {
		cli_error("pid %d: no such process", (int)pid);
		return EXIT_TRACE;
	}
	if (err == -EPERM || err == -EACCES) {
		/*
		 * The probe opens /proc/PID/mem, which says EACCES; attaching
		 * (PTRACE_SEIZE) would say EPERM, and that is what users know.
		 */
		cli_error(
			"pid %d: not allowed to trace (EPERM): run utrace as the process's user or as root; see also /proc/sys/kernel/yama/ptrace_scope",
			(int)pid);
		return EXIT_TRACE;
	}
	if (err) {
		cli_error("pid %d: cannot check access: %s", (int)pid, strerror(-err));
		return EXIT_TRACE;
	}
	img = utrace_image__open_pid(pid);
	if (!img) {
		cli_error("pid %d: cannot read its memory maps: %s", (int)pid, strerror(errno));
		return EXIT_TRACE;
	}
	snprintf(where, sizeof(where), "pid %d", (int)pid);
	if (many)
		snprintf(col, sizeof(col), "[%d]", (int)pid);
	rc = list_image(img, spec, where, true, col, t);
	utrace_image__close(img);
	return rc;
}

static int list_exec(const struct utrace_spec *spec, const char *path, int bad_path_status,
		     struct table *t)
{
	struct utrace_image *img = utrace_image__open_exec(path);
	int rc;

	if (!img) {
		if (errno == UTRACE_ERRNO__ELF)
			cli_error("%s: not an ELF executable", path);
		else
			cli_error("%s: %s", path, strerror(errno));
		return bad_path_status;
	}
	rc = list_image(img, spec, path, false, "", t);
	utrace_image__close(img);
	return rc;
}

/**
 * cmd_list - the -l sub-command
 * @opts: parsed options: list_spec, and pids or argv (or neither, when the
 *	SPEC's OBJECT is a path)
 *
 * Tracer process; reads /proc and ELF files, never stops or writes to a
 * target. Prints the matches to stdout and every problem as one line on
 * stderr.
 *
 * Return: the exit status: 0, EXIT_USAGE (2: bad or unresolvable SPEC) or
 * EXIT_TRACE (1: a process or program that cannot be examined).
 */
int cmd_list(struct cli_opts *opts)
{
	struct utrace_spec spec;
	struct table t = { .why = opts->list_why,
			   .verbose = opts->verbose > 0,
			   .demangle = opts->flag_C };
	char errbuf[512];
	int err, rc = 0, i;

	err = utrace_spec__parse(opts->list_spec, &spec, errbuf, sizeof(errbuf));
	if (err == -UTRACE_ERRNO__SPEC) {
		cli_error("%s", errbuf);
		return EXIT_USAGE;
	}
	if (err) {
		cli_error("'%s': %s", opts->list_spec, strerror(-err));
		return EXIT_TRACE;
	}
	if (opts->nr_pids) {
		for (i = 0; i < opts->nr_pids; i++) {
			int r = list_pid(&spec, opts->pids[i], opts->nr_pids > 1, &t);

			rc = r > rc ? r : rc;
		}
	} else if (opts->argc) {
		rc = list_exec(&spec, opts->argv[0], EXIT_TRACE, &t);
	} else if (spec.object && strchr(spec.object, '/')) {
		rc = list_exec(&spec, spec.object, EXIT_USAGE, &t);
	} else {
		cli_error(
			"-l '%s': give -p PID or -- COMMAND, or a path as OBJECT (e.g. './prog:%s')",
			opts->list_spec, spec.pattern ? spec.pattern : "main");
		rc = EXIT_USAGE;
	}
	table_print_free(&t);
	utrace_spec__clear(&spec);
	return rc;
}
