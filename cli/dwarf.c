/* SPDX-License-Identifier: MIT */
/*
 * dwarf.c - prototypes from debug information (libdw), for functions the
 * table in protos.c does not know: a program built with -g shows
 * work(21) and leaf("hello") instead of three hex registers. Tracer
 * process; not thread-safe.
 *
 * Types map onto the display kinds: char pointers are strings, other
 * pointers hex, integers by size and signedness, enums as int shown by
 * their enumerators' names, bool as unsigned; float and double arguments
 * travel in xmm registers (shown when the writer could read them, else
 * '?'; they take no integer register), long double and complex ones are
 * not shown (nor float ones after them); structs and unions passed by value
 * show as {...} and take the registers the SysV ABI gives them (one or two
 * up to 16 bytes, none above: they are copied to the stack). Variadic
 * functions show their fixed arguments.
 *
 * Each object file is opened once; a file with no DWARF (or no separate
 * /usr/lib/debug/.build-id/xx/yyyy.debug file) is remembered as such.
 * With libdebuginfod and $DEBUGINFOD_URLS set, the debug file of a
 * build-id that neither has is fetched from those servers, once per
 * build-id and run (a miss too): DWARF read with libdw, nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "protos.h"

#ifdef HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "utrace/elf.h"

#ifdef HAVE_DEBUGINFOD
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#endif

struct dw_func {
	struct dw_func *next;
	char *name;
	struct proto proto; /* its enums are malloc'ed, names in the DWARF */
	bool found;
};

/*
 * The enumerators of @type if it is (a typedef of) an enum, malloc'ed;
 * their names point into the DWARF, open until proto_dwarf_clear().
 */
static const struct proto_enum *enum_of(Dwarf_Die *type_die)
{
	struct proto_enum *e;
	Dwarf_Die t, child;
	unsigned int n = 0;

	if (dwarf_peel_type(type_die, &t) != 0 || dwarf_tag(&t) != DW_TAG_enumeration_type ||
	    dwarf_child(&t, &child) != 0)
		return NULL;
	do
		n += dwarf_tag(&child) == DW_TAG_enumerator;
	while (dwarf_siblingof(&child, &child) == 0);
	e = calloc(1, sizeof(*e) + n * sizeof(e->v[0]));
	if (!e || dwarf_child(&t, &child) != 0) {
		free(e);
		return NULL;
	}
	do {
		Dwarf_Attribute attr;
		Dwarf_Sword sv;
		Dwarf_Word uv;

		if (dwarf_tag(&child) != DW_TAG_enumerator || !dwarf_diename(&child) ||
		    !dwarf_attr(&child, DW_AT_const_value, &attr))
			continue;
		/* DW_FORM_data4 of -1 reads as 0xffffffff unsigned: signed where it can */
		if (dwarf_formsdata(&attr, &sv) == 0)
			e->v[e->nr].value = sv;
		else if (dwarf_formudata(&attr, &uv) == 0)
			e->v[e->nr].value = (int64_t)uv;
		else
			continue;
		e->v[e->nr++].name = dwarf_diename(&child);
	} while (dwarf_siblingof(&child, &child) == 0 && e->nr < n);
	return e;
}

static void proto_enums_free(struct proto *p)
{
	unsigned int i;

	for (i = 0; i < PROTO_MAX_ARGS; i++)
		free((void *)p->enums[i]);
	free((void *)p->ret_enum);
}

/* name -> DIE offset of its first definition; names point into the DWARF */
struct dw_index_ent {
	const char *name;
	Dwarf_Off die;
};

struct dw_file {
	struct dw_file *next;
	char *path;
	int fd;
	Dwarf *dw; /* NULL: no debug information */
	struct dw_func *funcs;
	struct dw_index_ent *index; /* open addressing, index_size a power of two */
	size_t index_size, index_used;
	bool indexed, index_ok; /* index tried; built (else lookup() scans) */
};

static struct dw_file *files;

static void (*dwarf_note)(const char *object, const char *debug_file);

void proto_dwarf_set_note(void (*note)(const char *object, const char *debug_file))
{
	dwarf_note = note;
}

#ifdef HAVE_DEBUGINFOD
/*
 * debuginfod through libdebuginfod itself, not libdwfl's
 * dwfl_standard_find_debuginfo() (which reaches the same client): we
 * already have the build-id and a plain Dwarf, and only the client lets us
 * bound the wait (debuginfod_set_progressfn()), keep one client (its
 * connection cache) for the run, and know which file came from a server.
 * dlopen()ed at the first fetch, as libdwfl does: the client brings
 * libcurl and some 30 libraries with it, which a run without
 * $DEBUGINFOD_URLS (most) should not load (about 5 ms at each start).
 */

/*
 * No byte for this long, the server is given up (the client's own bound,
 * DEBUGINFOD_TIMEOUT, is 90 s per try and 3 tries): unless the environment
 * sets DEBUGINFOD_TIMEOUT or DEBUGINFOD_MAXTIME. The client's cache then
 * keeps the miss (cache_miss_s, 10 minutes): the next runs do not wait.
 */
#define DBGD_STALL_SEC 15

/* One fetch per build-id per run: @path NULL is a miss. */
struct dbgd_ent {
	struct dbgd_ent *next;
	char *path;
	char id[];
};

static struct dbgd_ent *dbgd_ents;
static debuginfod_client *dbgd;
static bool dbgd_failed; /* no libdebuginfod.so.1, or debuginfod_begin() failed */

/* the client's functions, type-checked against its header; never dlclose()d */
static struct {
	__typeof__(debuginfod_begin) *begin;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
	__typeof__(debuginfod_set_progressfn) *set_progressfn;
	__typeof__(debuginfod_get_url) *get_url;
	__typeof__(debuginfod_end) *end;
} dbgd_fn;

/* the fetch in progress */
static struct dbgd_wait {
	struct timespec last; /* of the start or the last byte */
	long bytes;
	bool bounded;
} dbgd_wait;

static bool dbgd_load(void)
{
	void *so = dlopen(DEBUGINFOD_SONAME, RTLD_LAZY | RTLD_LOCAL);

	if (!so)
		return false;
	dbgd_fn.begin = (__typeof__(dbgd_fn.begin))dlsym(so, "debuginfod_begin");
	dbgd_fn.find_debuginfo =
		(__typeof__(dbgd_fn.find_debuginfo))dlsym(so, "debuginfod_find_debuginfo");
	dbgd_fn.set_progressfn =
		(__typeof__(dbgd_fn.set_progressfn))dlsym(so, "debuginfod_set_progressfn");
	dbgd_fn.get_url = (__typeof__(dbgd_fn.get_url))dlsym(so, "debuginfod_get_url");
	dbgd_fn.end = (__typeof__(dbgd_fn.end))dlsym(so, "debuginfod_end");
	return dbgd_fn.begin && dbgd_fn.find_debuginfo && dbgd_fn.set_progressfn &&
	       dbgd_fn.get_url && dbgd_fn.end;
}

static double since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (now.tv_nsec - t->tv_nsec) / 1e9;
}

/*
 * Called about once a second while the client waits; non-zero cancels.
 * @got is bytes once a server sends the file (debuginfod_get_url() is set
 * from its first byte), a count of calls before: nothing for
 * DBGD_STALL_SEC from the start or since the last byte gives up. It
 * replaces the client's own DEBUGINFOD_PROGRESS printer: no output from
 * here.
 */
static int dbgd_progress(debuginfod_client *c, long got, long total)
{
	struct dbgd_wait *w = &dbgd_wait;

	(void)total;
	if (!w->bounded)
		return 0;
	if (dbgd_fn.get_url(c) && got != w->bytes) {
		w->bytes = got;
		clock_gettime(CLOCK_MONOTONIC, &w->last);
	}
	return since(&w->last) > DBGD_STALL_SEC;
}

/* @dw's GNU build-id is @id (hex): the server sent the file asked for */
static bool same_build_id(Dwarf *dw, const char *id)
{
	const unsigned char *p;
	const void *bits;
	ssize_t n = dwelf_elf_gnu_build_id(dwarf_getelf(dw), &bits), i;

	if (n <= 0 || (size_t)n * 2 != strlen(id))
		return false;
	p = bits;
	for (i = 0; i < n; i++) {
		char hex[3];

		snprintf(hex, sizeof(hex), "%02x", p[i]);
		if (memcmp(hex, id + 2 * i, 2))
			return false;
	}
	return true;
}

/*
 * The DWARF of build-id @id (hex) from $DEBUGINFOD_URLS, for @object:
 * its file in the client's cache (owned by the user), read by libdw only.
 * Return: the Dwarf (its fd in *@ret_fd), or NULL.
 */
static Dwarf *dbgd_dwarf(const char *object, const char *id, int *ret_fd)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	struct dbgd_ent *e;
	char *path = NULL;
	Dwarf *dw;
	int fd;

	if (!urls || !*urls)
		return NULL;
	for (e = dbgd_ents; e; e = e->next)
		if (!strcmp(e->id, id))
			break;
	if (e) {
		/* another object of the same build-id: the file fetched already */
		fd = e->path ? open(e->path, O_RDONLY | O_CLOEXEC) : -1;
		dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
		if (!dw) {
			if (fd >= 0)
				close(fd);
			return NULL;
		}
		*ret_fd = fd;
		return dw;
	}
	e = calloc(1, sizeof(*e) + strlen(id) + 1);
	if (!e)
		return NULL;
	strcpy(e->id, id);
	e->next = dbgd_ents;
	dbgd_ents = e;
	if (!dbgd && !dbgd_failed) {
		dbgd = dbgd_load() ? dbgd_fn.begin() : NULL;
		dbgd_failed = !dbgd;
		if (dbgd)
			dbgd_fn.set_progressfn(dbgd, dbgd_progress);
	}
	if (!dbgd)
		return NULL;
	/* the client's own bounds if the environment sets one, else ours */
	dbgd_wait = (struct dbgd_wait){ .bounded = !getenv("DEBUGINFOD_TIMEOUT") &&
						   !getenv("DEBUGINFOD_MAXTIME") };
	clock_gettime(CLOCK_MONOTONIC, &dbgd_wait.last);
	/* build_id_len 0: @id is hex */
	fd = dbgd_fn.find_debuginfo(dbgd, (const unsigned char *)id, 0, &path);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw || !same_build_id(dw, id)) {
		if (dw)
			dwarf_end(dw);
		close(fd);
		free(path);
		return NULL;
	}
	e->path = path;
	if (dwarf_note)
		dwarf_note(object, path);
	*ret_fd = fd;
	return dw;
}

static void dbgd_clear(void)
{
	while (dbgd_ents) {
		struct dbgd_ent *e = dbgd_ents;

		dbgd_ents = e->next;
		free(e->path);
		free(e);
	}
	if (dbgd)
		dbgd_fn.end(dbgd);
	dbgd = NULL;
	dbgd_failed = false;
}
#else
static Dwarf *dbgd_dwarf(const char *object, const char *id, int *ret_fd)
{
	return NULL;
}

static void dbgd_clear(void)
{
}
#endif /* HAVE_DEBUGINFOD */

static Dwarf *open_dwarf(const char *path, int *ret_fd)
{
	struct utrace_elf *elf;
	char id[128], dbg[256];
	Dwarf *dw;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		dw = dwarf_begin(fd, DWARF_C_READ);
		if (dw) {
			*ret_fd = fd;
			return dw;
		}
		close(fd);
	}
	/* a separate debug file, found by build-id */
	elf = utrace_elf__open(path);
	if (!elf)
		return NULL;
	if (utrace_elf__build_id(elf, id, sizeof(id)) <= 2) {
		utrace_elf__close(elf);
		return NULL;
	}
	utrace_elf__close(elf);
	snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
	fd = open(dbg, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dbgd_dwarf(path, id, ret_fd);
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return dbgd_dwarf(path, id, ret_fd);
	}
	*ret_fd = fd;
	return dw;
}

static int type_kind(Dwarf_Die *type_die, bool is_ret)
{
	Dwarf_Die t, pointee;
	Dwarf_Attribute attr;
	Dwarf_Word size = 0, enc = 0;

	if (dwarf_peel_type(type_die, &t) != 0)
		return PK_HEX;
	switch (dwarf_tag(&t)) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		if (dwarf_formref_die(dwarf_attr_integrate(&t, DW_AT_type, &attr), &pointee) &&
		    dwarf_peel_type(&pointee, &pointee) == 0 &&
		    dwarf_tag(&pointee) == DW_TAG_base_type &&
		    dwarf_formudata(dwarf_attr_integrate(&pointee, DW_AT_encoding, &attr), &enc) ==
			    0 &&
		    (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char ||
		     (enc == DW_ATE_signed && dwarf_bytesize(&pointee) == 1)))
			return PK_STR;
		return PK_PTR;
	case DW_TAG_enumeration_type:
		return dwarf_bytesize(&t) == 8 ? PK_LONG : PK_INT;
	case DW_TAG_base_type:
		if (dwarf_formudata(dwarf_attr_integrate(&t, DW_AT_encoding, &attr), &enc))
			return PK_HEX;
		size = (Dwarf_Word)dwarf_bytesize(&t);
		switch (enc) {
		case DW_ATE_float:
			return size == 4 ? PK_FLOAT32 : size == 8 ? PK_FLOAT : PK_FLOATX;
		case DW_ATE_complex_float:
			return PK_FLOATX;
		case DW_ATE_boolean:
			return PK_UINT;
		case DW_ATE_signed_char:
		case DW_ATE_unsigned_char:
			return size == 1 ? PK_CHAR : PK_INT;
		case DW_ATE_signed:
			return size == 8 ? PK_LONG : size > 8 ? PK_AGGR16 : PK_INT;
		case DW_ATE_unsigned:
			return size == 8 ? PK_ULONG : size > 8 ? PK_AGGR16 : PK_UINT;
		default:
			return PK_HEX;
		}
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
		if (dwarf_aggregate_size(&t, &size))
			return PK_AGGRMEM;
		/* returned aggregates: rax holds the first eightbyte or the address */
		if (is_ret)
			return PK_HEX;
		return size > 16 ? PK_AGGRMEM : size > 8 ? PK_AGGR16 : PK_AGGR8;
	default:
		return PK_HEX;
	}
}

struct find_ctx {
	const char *name;
	Dwarf_Die die;
	bool found;
};

/*
 * A C++ function's symbol, its mangled name (DW_AT_linkage_name, on the
 * definition or the declaration in its class that DW_AT_specification
 * names), or NULL.
 */
static const char *linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ?:
					dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
}

static int find_cb(Dwarf_Die *die, void *arg)
{
	struct find_ctx *fc = arg;
	const char *n = dwarf_diename(die), *ln = linkage_name(die);
	Dwarf_Attribute attr;

	/* a symbol is the function's name in C, its linkage name in C++ */
	if ((!n || strcmp(n, fc->name)) && (!ln || strcmp(ln, fc->name)))
		return DWARF_CB_OK;
	/* a definition (with code), not a declaration */
	if (dwarf_hasattr(die, DW_AT_declaration) ||
	    (!dwarf_hasattr(die, DW_AT_low_pc) && !dwarf_hasattr(die, DW_AT_ranges) &&
	     !dwarf_attr(die, DW_AT_specification, &attr)))
		return DWARF_CB_OK;
	fc->die = *die;
	fc->found = true;
	return DWARF_CB_ABORT;
}

static bool build_proto(Dwarf_Die *fn, struct proto *p)
{
	Dwarf_Attribute attr;
	Dwarf_Die child, type, origin;

	/* an out-of-line copy refers to its abstract origin for types */
	if (!dwarf_hasattr(fn, DW_AT_type) &&
	    dwarf_formref_die(dwarf_attr(fn, DW_AT_abstract_origin, &attr), &origin))
		fn = &origin;
	p->ret = PK_VOID;
	if (dwarf_formref_die(dwarf_attr_integrate(fn, DW_AT_type, &attr), &type)) {
		p->ret = (unsigned char)type_kind(&type, true);
		p->ret_enum = enum_of(&type);
	}
	p->err = PE_NONE;
	p->nargs = 0;
	if (dwarf_child(fn, &child) != 0)
		return true;
	do {
		if (dwarf_tag(&child) != DW_TAG_formal_parameter)
			continue;
		if (p->nargs == PROTO_MAX_ARGS)
			break;
		if (dwarf_formref_die(dwarf_attr_integrate(&child, DW_AT_type, &attr), &type)) {
			p->enums[p->nargs] = enum_of(&type);
			p->args[p->nargs++] = (unsigned char)type_kind(&type, false);
		} else
			p->args[p->nargs++] = PK_HEX;
	} while (dwarf_siblingof(&child, &child) == 0);
	return true;
}

static size_t name_hash(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static bool index_add(struct dw_file *f, const char *name, Dwarf_Off die)
{
	size_t i, mask;

	if ((f->index_used + 1) * 2 > f->index_size) {
		size_t n = f->index_size ? f->index_size * 2 : 4096, k;
		struct dw_index_ent *t = calloc(n, sizeof(*t));

		if (!t)
			return false;
		for (k = 0; k < f->index_size; k++) {
			if (!f->index[k].name)
				continue;
			for (i = name_hash(f->index[k].name) & (n - 1); t[i].name;
			     i = (i + 1) & (n - 1))
				;
			t[i] = f->index[k];
		}
		free(f->index);
		f->index = t;
		f->index_size = n;
	}
	mask = f->index_size - 1;
	for (i = name_hash(name) & mask; f->index[i].name; i = (i + 1) & mask)
		if (!strcmp(f->index[i].name, name))
			return true; /* the first definition wins, as in a scan */
	f->index[i].name = name;
	f->index[i].die = die;
	f->index_used++;
	return true;
}

struct index_ctx {
	struct dw_file *f;
	bool ok;
};

static int index_cb(Dwarf_Die *die, void *arg)
{
	struct index_ctx *ic = arg;
	struct find_ctx fc;

	const char *ln;

	fc.name = dwarf_diename(die);
	fc.found = false;
	if (!fc.name)
		return DWARF_CB_OK;
	find_cb(die, &fc); /* a definition? */
	if (fc.found && !index_add(ic->f, fc.name, dwarf_dieoffset(die))) {
		ic->ok = false;
		return DWARF_CB_ABORT;
	}
	/* C++: by its symbol too (an overload's own; "area" is any of them) */
	ln = fc.found ? linkage_name(die) : NULL;
	if (ln && strcmp(ln, fc.name) && !index_add(ic->f, ln, dwarf_dieoffset(die))) {
		ic->ok = false;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

/*
 * Every function definition of @f by name, in one pass over its CUs: a
 * glob of thousands of functions looks each up in O(1) instead of
 * scanning the CUs once per name. Return: false when it failed (then
 * lookup() scans).
 */
static bool build_index(struct dw_file *f)
{
	struct index_ctx ic = { .f = f, .ok = true };
	Dwarf_Off off = 0, next;
	size_t hsize;

	f->indexed = true;
	while (ic.ok && dwarf_nextcu(f->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(f->dw, off + hsize, &cu) &&
		    dwarf_getfuncs(&cu, index_cb, &ic, 0) < 0)
			ic.ok = false;
		off = next;
	}
	if (!ic.ok) {
		free(f->index);
		f->index = NULL;
		f->index_size = f->index_used = 0;
	}
	f->index_ok = ic.ok;
	return ic.ok;
}

static bool lookup_indexed(struct dw_file *f, const char *name, struct proto *p)
{
	size_t i, mask;
	Dwarf_Die die;

	if (!f->index_size)
		return false;
	mask = f->index_size - 1;
	for (i = name_hash(name) & mask; f->index[i].name; i = (i + 1) & mask)
		if (!strcmp(f->index[i].name, name))
			return dwarf_offdie(f->dw, f->index[i].die, &die) && build_proto(&die, p);
	return false;
}

static bool lookup(Dwarf *dw, const char *name, struct proto *p)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	struct find_ctx fc = { .name = name };

	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu) &&
		    dwarf_getfuncs(&cu, find_cb, &fc, 0) >= 0 && fc.found)
			return build_proto(&fc.die, p);
		off = next;
	}
	return false;
}

const struct proto *proto_dwarf(const char *path, const char *name)
{
	struct dw_file *f;
	struct dw_func *fn;

	if (!path || !name)
		return NULL;
	for (f = files; f; f = f->next)
		if (!strcmp(f->path, path))
			break;
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return NULL;
		f->path = strdup(path);
		if (!f->path) {
			free(f);
			return NULL;
		}
		f->fd = -1;
		f->dw = open_dwarf(path, &f->fd);
		f->next = files;
		files = f;
	}
	if (!f->dw)
		return NULL;
	for (fn = f->funcs; fn; fn = fn->next)
		if (!strcmp(fn->name, name))
			return fn->found ? &fn->proto : NULL;
	fn = calloc(1, sizeof(*fn));
	if (!fn)
		return NULL;
	fn->name = strdup(name);
	if (!fn->name) {
		free(fn);
		return NULL;
	}
	fn->proto.name = fn->name;
	if (!f->indexed)
		build_index(f);
	fn->found =
		f->index_ok ? lookup_indexed(f, name, &fn->proto) : lookup(f->dw, name, &fn->proto);
	fn->next = f->funcs;
	f->funcs = fn;
	return fn->found ? &fn->proto : NULL;
}

void proto_dwarf_clear(void)
{
	while (files) {
		struct dw_file *f = files;

		files = f->next;
		while (f->funcs) {
			struct dw_func *fn = f->funcs;

			f->funcs = fn->next;
			proto_enums_free(&fn->proto);
			free(fn->name);
			free(fn);
		}
		free(f->index);
		if (f->dw)
			dwarf_end(f->dw);
		if (f->fd >= 0)
			close(f->fd);
		free(f->path);
		free(f);
	}
	dbgd_clear();
}

#else /* !HAVE_LIBDW */

void proto_dwarf_set_note(void (*note)(const char *object, const char *debug_file))
{
}

const struct proto *proto_dwarf(const char *path, const char *name)
{
	return NULL;
}

void proto_dwarf_clear(void)
{
}

#endif /* HAVE_LIBDW */
