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
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protos.h"

#ifdef HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "utrace/elf.h"

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
		return NULL;
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return NULL;
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

static int find_cb(Dwarf_Die *die, void *arg)
{
	struct find_ctx *fc = arg;
	const char *n = dwarf_diename(die);
	Dwarf_Attribute attr;

	if (!n || strcmp(n, fc->name))
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

	fc.name = dwarf_diename(die);
	fc.found = false;
	if (!fc.name)
		return DWARF_CB_OK;
	find_cb(die, &fc); /* a definition? */
	if (fc.found && !index_add(ic->f, fc.name, dwarf_dieoffset(die))) {
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
}

#else /* !HAVE_LIBDW */

const struct proto *proto_dwarf(const char *path, const char *name)
{
	return NULL;
}

void proto_dwarf_clear(void)
{
}

#endif /* HAVE_LIBDW */
