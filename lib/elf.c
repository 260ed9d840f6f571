/* SPDX-License-Identifier: MIT */
/*
 * elf.c - ELF files and their function symbols, on libelf. Tracer process.
 *
 * Design
 * ------
 * The file is mmap()ed once (MAP_PRIVATE) and handed to elf_memory(), so
 * section data, string tables and the bytes that utrace_elf__read() and
 * utrace_elf__exec_sections() return all point into that one mapping: no
 * copies, and opening libc.so.6 costs a few hundred microseconds.
 *
 * Symbols are read eagerly at open time from .symtab and .dynsym: every
 * defined STT_FUNC and STT_GNU_IFUNC symbol. A "name@VERSION" or
 * "name@@VERSION" spelling (seen in .symtab of versioned libraries) is cut
 * at the '@'. Both tables are concatenated, sorted by (address, name, PLT
 * last) and merged: one entry per (name, address), with the flags of every
 * table it came from. Two versions of one name at two addresses stay two
 * entries (libc's memcpy@GLIBC_2.2.5 and memcpy@@GLIBC_2.14): both are entry
 * points somebody may call.
 *
 * Aliases: several names at one address (malloc and __libc_malloc) are all
 * kept, as nm does. Exactly one of them, the "primary", has no
 * UTRACE_SYM_ALIAS flag: an exported (global or weak) name before a local
 * one, then the one with fewer leading underscores (memalign rather than
 * __libc_memalign), then global before weak, then a name seen in .dynsym,
 * then the shorter, then the alphabetically first. Consumers
 * that place one probe per address (the tracer) skip the aliases; a listing
 * shows them all.
 *
 * PLT stubs: rather than assuming a layout, each 16-byte (or sh_entsize)
 * entry of .plt, .plt.sec and .plt.got is decoded: an optional endbr64
 * (f3 0f 1e fa), an optional bnd prefix (f2), then "jmp *disp32(%rip)"
 * (ff 25 disp32). The jump's GOT slot is looked up in the relocations
 * (R_X86_64_JUMP_SLOT in .rela.plt, R_X86_64_GLOB_DAT in .rela.dyn for
 * .plt.got) to name the stub. That covers the classic lazy .plt (PLT0,
 * which starts with "push GOT+8", simply does not decode), the IBT layout
 * where .plt holds "endbr64; push n; bnd jmp PLT0" (no GOT jump: skipped)
 * and .plt.sec holds the real stubs, -z now, and non-PIE executables.
 * If .plt.sec entries do not decode, they are named by position (entry i
 * = i-th JUMP_SLOT relocation), which is what the linker does.
 *
 * Not done: symbols from a separate debug file (.gnu_debuglink or
 * /usr/lib/debug/.build-id). On Debian, libc6-dbg's .symtab adds local
 * aliases such as memchr_ifunc that `nm -D` does not show; a listing of
 * "libc:mem*" must match `nm -D`, so debug files are left for the stack
 * symboliser, where they help and cannot surprise.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utrace/elf.h"
#include "internal.h"

struct utrace_elf {
	char *path;
	void *image;
	size_t size;
	Elf *elf;
	GElf_Ehdr ehdr;
	GElf_Phdr *phdrs;
	size_t nr_phdrs;
	struct utrace_sym *syms;
	size_t nr_syms;
	char **strs; /* names this object allocated (versions cut off) */
	size_t nr_strs;
	bool go; /* built by the Go toolchain */
};

const char *utrace_elf__path(const struct utrace_elf *elf)
{
	return elf ? elf->path : NULL;
}

bool utrace_elf__is_dyn(const struct utrace_elf *elf)
{
	return elf && elf->ehdr.e_type == ET_DYN;
}

bool utrace_elf__is_go(const struct utrace_elf *elf)
{
	return elf && elf->go;
}

size_t utrace_elf__sym_count(const struct utrace_elf *elf)
{
	return elf ? elf->nr_syms : 0;
}

const struct utrace_sym *utrace_elf__sym(const struct utrace_elf *elf, size_t i)
{
	if (!elf || i >= elf->nr_syms)
		return NULL;
	return &elf->syms[i];
}

static Elf_Scn *find_section(struct utrace_elf *elf, const char *name, GElf_Shdr *ret_shdr)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf->elf, scn))) {
		GElf_Shdr shdr;
		const char *n;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		n = elf_strptr(elf->elf, shstrndx, shdr.sh_name);
		if (n && !strcmp(n, name)) {
			*ret_shdr = shdr;
			return scn;
		}
	}
	return NULL;
}

/* Keep @name, cutting a "@VERSION" suffix (copying only when there is one). */
static int sym_name(struct utrace_elf *elf, const char *name, const char **ret)
{
	const char *at = strchr(name, '@');
	char **ns, *s;

	if (!at) {
		*ret = name;
		return 0;
	}
	ns = realloc(elf->strs, (elf->nr_strs + 1) * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	elf->strs = ns;
	s = strndup(name, at - name);
	if (!s)
		return -ENOMEM;
	elf->strs[elf->nr_strs++] = s;
	*ret = s;
	return 0;
}

struct sym_vec {
	struct utrace_sym *v;
	size_t nr, cap;
};

static int sym_push(struct sym_vec *sv, const struct utrace_sym *s)
{
	if (sv->nr == sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 1024;
		struct utrace_sym *nv = realloc(sv->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		sv->v = nv;
		sv->cap = cap;
	}
	sv->v[sv->nr++] = *s;
	return 0;
}

static int read_symtab(struct utrace_elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr,
		       uint32_t table_flag, struct sym_vec *sv)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n;

	if (!data || !shdr->sh_entsize)
		return 0;
	n = shdr->sh_size / shdr->sh_entsize;
	for (i = 1; i < n; i++) {
		struct utrace_sym s = { 0 };
		const char *name;
		GElf_Sym sym;
		int type, bind, err;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS)
			continue;
		name = elf_strptr(elf->elf, shdr->sh_link, sym.st_name);
		if (!name || !*name || *name == '@')
			continue;
		err = sym_name(elf, name, &s.name);
		if (err)
			return err;
		s.addr = sym.st_value;
		s.size = sym.st_size;
		s.flags = table_flag;
		if (bind == STB_GLOBAL || bind == STB_GNU_UNIQUE)
			s.flags |= UTRACE_SYM_GLOBAL;
		else if (bind == STB_WEAK)
			s.flags |= UTRACE_SYM_WEAK;
		if (type == STT_GNU_IFUNC)
			s.flags |= UTRACE_SYM_IFUNC;
		err = sym_push(sv, &s);
		if (err)
			return err;
	}
	return 0;
}

/* GOT slot -> symbol name, from the relocations of one SHT_RELA section. */
struct got_name {
	uint64_t got;
	const char *name;
};

struct got_vec {
	struct got_name *v; /* relocation order (.plt.sec by index) */
	struct got_name *sorted; /* by GOT address, for got_lookup() */
	size_t nr, cap;
};

static int got_cmp(const void *a, const void *b)
{
	const struct got_name *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

static int read_relocs(struct utrace_elf *elf, const char *secname, unsigned int want_type,
		       struct got_vec *gv)
{
	GElf_Shdr shdr, symshdr;
	Elf_Scn *scn = find_section(elf, secname, &shdr), *symscn;
	Elf_Data *data, *symdata;
	size_t i, n;

	if (!scn || shdr.sh_type != SHT_RELA || !shdr.sh_entsize)
		return 0;
	symscn = elf_getscn(elf->elf, shdr.sh_link);
	if (!symscn || !gelf_getshdr(symscn, &symshdr))
		return 0;
	data = elf_getdata(scn, NULL);
	symdata = elf_getdata(symscn, NULL);
	if (!data || !symdata)
		return 0;
	n = shdr.sh_size / shdr.sh_entsize;
	for (i = 0; i < n; i++) {
		struct got_name *nv;
		const char *name = NULL;
		GElf_Rela rela;
		GElf_Sym sym;

		if (!gelf_getrela(data, (int)i, &rela))
			break;
		if (GELF_R_TYPE(rela.r_info) != want_type)
			continue;
		if (GELF_R_SYM(rela.r_info) &&
		    gelf_getsym(symdata, (int)GELF_R_SYM(rela.r_info), &sym))
			name = elf_strptr(elf->elf, symshdr.sh_link, sym.st_name);
		/* a NULL name keeps the slot's position for .plt.sec by index */
		if (gv->nr == gv->cap) {
			gv->cap = gv->cap ? gv->cap * 2 : 256;
			nv = realloc(gv->v, gv->cap * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			gv->v = nv;
		}
		gv->v[gv->nr++] = (struct got_name){ rela.r_offset, name && *name ? name : NULL };
	}
	if (!gv->nr)
		return 0;
	gv->sorted = malloc(gv->nr * sizeof(*gv->sorted));
	if (!gv->sorted)
		return -ENOMEM;
	memcpy(gv->sorted, gv->v, gv->nr * sizeof(*gv->sorted));
	qsort(gv->sorted, gv->nr, sizeof(*gv->sorted), got_cmp);
	return 0;
}

static const char *got_lookup(const struct got_vec *gv, uint64_t got)
{
	struct got_name key = { got, NULL }, *hit;

	if (!gv->nr)
		return NULL;
	hit = bsearch(&key, gv->sorted, gv->nr, sizeof(key), got_cmp);
	return hit ? hit->name : NULL;
}

/*
 * Decode "[endbr64] [bnd] jmp *disp32(%rip)" at the start of a PLT entry.
 * Returns true and the GOT slot address on success.
 */
static bool decode_plt_jmp(const uint8_t *p, size_t len, uint64_t addr, uint64_t *ret_got)
{
	size_t i = 0;
	int32_t disp;

	if (len >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		i = 4; /* endbr64 */
	if (i < len && p[i] == 0xf2)
		i++; /* bnd */
	if (i + 6 > len || p[i] != 0xff || p[i + 1] != 0x25)
		return false; /* jmp *disp32(%rip) */
	memcpy(&disp, p + i + 2, 4);
	*ret_got = addr + i + 6 + (int64_t)disp;
	return true;
}

static int read_plt_section(struct utrace_elf *elf, const char *secname,
			    const struct got_vec *slots, const struct got_vec *globdat,
			    struct sym_vec *sv)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_section(elf, secname, &shdr);
	uint64_t ent, off;
	size_t idx = 0;
	bool is_sec = !strcmp(secname, ".plt.sec");

	if (!scn || shdr.sh_type != SHT_PROGBITS || shdr.sh_offset + shdr.sh_size > elf->size)
		return 0;
	ent = shdr.sh_entsize >= 8 ? shdr.sh_entsize : 16;
	if (!strcmp(secname, ".plt") && ent < 16)
		ent = 16;
	for (off = 0; off + ent <= shdr.sh_size; off += ent, idx++) {
		const uint8_t *p = (const uint8_t *)elf->image + shdr.sh_offset + off;
		uint64_t addr = shdr.sh_addr + off, got;
		struct utrace_sym s = { 0 };
		const char *name = NULL;
		int err;

		if (decode_plt_jmp(p, ent, addr, &got)) {
			name = got_lookup(slots, got);
			if (!name)
				name = got_lookup(globdat, got);
		} else if (is_sec && idx < slots->nr) {
			name = slots->v[idx].name; /* linker order: entry i = reloc i */
		}
		if (!name)
			continue;
		err = sym_name(elf, name, &s.name);
		if (err)
			return err;
		s.addr = addr;
		s.size = ent;
		s.flags = UTRACE_SYM_PLT;
		err = sym_push(sv, &s);
		if (err)
			return err;
	}
	return 0;
}

static int read_plt(struct utrace_elf *elf, struct sym_vec *sv)
{
	struct got_vec slots = { 0 }, globdat = { 0 };
	int err;

	if (elf->ehdr.e_machine != EM_X86_64)
		return 0;
	err = read_relocs(elf, ".rela.plt", R_X86_64_JUMP_SLOT, &slots);
	if (!err)
		err = read_relocs(elf, ".rela.dyn", R_X86_64_GLOB_DAT, &globdat);
	if (!err)
		err = read_plt_section(elf, ".plt", &slots, &globdat, sv);
	if (!err)
		err = read_plt_section(elf, ".plt.sec", &slots, &globdat, sv);
	if (!err)
		err = read_plt_section(elf, ".plt.got", &slots, &globdat, sv);
	free(slots.v);
	free(slots.sorted);
	free(globdat.v);
	free(globdat.sorted);
	return err;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct utrace_sym *x = a, *y = b;
	int c;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return (int)(x->flags & UTRACE_SYM_PLT) - (int)(y->flags & UTRACE_SYM_PLT);
}

static int underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/*
 * Is @a a better primary name than @b for their shared address? Exported
 * (global or weak) before local, then fewer leading underscores (puts, not
 * _IO_puts; memalign, not __libc_memalign), then global before weak, then
 * seen in .dynsym, then shorter, then alphabetical.
 */
static bool better_primary(const struct utrace_sym *a, const struct utrace_sym *b)
{
	const uint32_t exported = UTRACE_SYM_GLOBAL | UTRACE_SYM_WEAK;
	size_t la, lb;

	if (!!(a->flags & exported) != !!(b->flags & exported))
		return a->flags & exported;
	if (underscores(a->name) != underscores(b->name))
		return underscores(a->name) < underscores(b->name);
	if (!!(a->flags & UTRACE_SYM_GLOBAL) != !!(b->flags & UTRACE_SYM_GLOBAL))
		return a->flags & UTRACE_SYM_GLOBAL;
	if (!!(a->flags & UTRACE_SYM_DYNSYM) != !!(b->flags & UTRACE_SYM_DYNSYM))
		return a->flags & UTRACE_SYM_DYNSYM;
	la = strlen(a->name);
	lb = strlen(b->name);
	if (la != lb)
		return la < lb;
	return strcmp(a->name, b->name) < 0;
}

/* Sort, merge duplicates, flag aliases. */
static void finish_syms(struct sym_vec *sv)
{
	size_t i, j, n = 0;

	if (!sv->nr)
		return;
	qsort(sv->v, sv->nr, sizeof(*sv->v), sym_cmp);
	for (i = 0; i < sv->nr; i++) {
		struct utrace_sym *last = n ? &sv->v[n - 1] : NULL;
		struct utrace_sym *s = &sv->v[i];

		if (last && last->addr == s->addr && !strcmp(last->name, s->name) &&
		    (last->flags & UTRACE_SYM_PLT) == (s->flags & UTRACE_SYM_PLT)) {
			last->flags |= s->flags;
			if (s->size > last->size)
				last->size = s->size;
			continue;
		}
		sv->v[n++] = *s;
	}
	sv->nr = n;
	/* aliases: groups of non-PLT symbols sharing an address */
	for (i = 0; i < n; i = j) {
		size_t best = i;

		for (j = i + 1; j < n && sv->v[j].addr == sv->v[i].addr; j++)
			;
		if (j - i < 2)
			continue;
		for (size_t k = i; k < j; k++) {
			if (sv->v[k].flags & UTRACE_SYM_PLT)
				continue;
			if ((sv->v[best].flags & UTRACE_SYM_PLT) ||
			    better_primary(&sv->v[k], &sv->v[best]))
				best = k;
		}
		for (size_t k = i; k < j; k++)
			if (k != best && !(sv->v[k].flags & UTRACE_SYM_PLT))
				sv->v[k].flags |= UTRACE_SYM_ALIAS;
	}
}

static int read_syms(struct utrace_elf *elf)
{
	struct sym_vec sv = { 0 };
	Elf_Scn *scn = NULL;
	int err = 0;

	while (!err && (scn = elf_nextscn(elf->elf, scn))) {
		GElf_Shdr shdr;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		if (shdr.sh_type == SHT_SYMTAB)
			err = read_symtab(elf, scn, &shdr, UTRACE_SYM_SYMTAB, &sv);
		else if (shdr.sh_type == SHT_DYNSYM)
			err = read_symtab(elf, scn, &shdr, UTRACE_SYM_DYNSYM, &sv);
	}
	if (!err)
		err = read_plt(elf, &sv);
	if (err) {
		free(sv.v);
		return err;
	}
	finish_syms(&sv);
	elf->syms = sv.v;
	elf->nr_syms = sv.nr;
	return 0;
}

void utrace_elf__close(struct utrace_elf *elf)
{
	size_t i;

	if (!elf)
		return;
	if (elf->elf)
		elf_end(elf->elf);
	if (elf->image)
		munmap(elf->image, elf->size);
	for (i = 0; i < elf->nr_strs; i++)
		free(elf->strs[i]);
	free(elf->strs);
	free(elf->syms);
	free(elf->phdrs);
	free(elf->path);
	free(elf);
}

#define NT_GO_BUILDID 4

/* A "Go" note of type NT_GO_BUILDID in any note section. */
static bool has_go_note(struct utrace_elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf->elf, scn))) {
		GElf_Shdr shdr;
		GElf_Nhdr nhdr;
		size_t off = 0, name_off, desc_off;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0)
			if (nhdr.n_type == NT_GO_BUILDID && nhdr.n_namesz == 3 &&
			    !memcmp((const char *)data->d_buf + name_off, "Go", 3))
				return true;
	}
	return false;
}

/*
 * Go code: its runtime walks goroutine stacks (the collector, panics,
 * tracebacks) and copies them when they grow, reading every return address
 * through its own tables; a hijacked one is "unexpected return pc", fatal.
 * Linkers may drop the note (external linking keeps it); the pcln table
 * and the runtime's symbols stay.
 */
static bool detect_go(struct utrace_elf *elf)
{
	GElf_Shdr shdr;
	size_t i;

	if (has_go_note(elf) || find_section(elf, ".gopclntab", &shdr))
		return true;
	for (i = 0; i < elf->nr_syms; i++)
		if (!strcmp(elf->syms[i].name, "runtime.goexit"))
			return true;
	return false;
}

static int elf_open(const char *path, struct utrace_elf **ret)
{
	struct utrace_elf *elf;
	struct stat st;
	size_t i;
	int fd, err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -UTRACE_ERRNO__ELF;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto err_close;
	}
	if (S_ISDIR(st.st_mode)) {
		err = -EISDIR;
		goto err_close;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < EI_NIDENT) {
		err = -UTRACE_ERRNO__ELF;
		goto err_close;
	}
	elf = calloc(1, sizeof(*elf));
	if (!elf) {
		err = -ENOMEM;
		goto err_close;
	}
	elf->path = strdup(path);
	elf->size = st.st_size;
	elf->image = mmap(NULL, elf->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	if (elf->image == MAP_FAILED) {
		elf->image = NULL;
		err = -errno;
		goto err_free;
	}
	if (!elf->path) {
		err = -ENOMEM;
		goto err_free;
	}
	if (memcmp(elf->image, ELFMAG, SELFMAG)) {
		err = -UTRACE_ERRNO__ELF;
		goto err_free;
	}
	elf->elf = elf_memory(elf->image, elf->size);
	if (!elf->elf || elf_kind(elf->elf) != ELF_K_ELF || !gelf_getehdr(elf->elf, &elf->ehdr) ||
	    elf_getphdrnum(elf->elf, &elf->nr_phdrs)) {
		err = -UTRACE_ERRNO__ELF;
		goto err_free;
	}
	if (elf->nr_phdrs) {
		elf->phdrs = calloc(elf->nr_phdrs, sizeof(*elf->phdrs));
		if (!elf->phdrs) {
			err = -ENOMEM;
			goto err_free;
		}
	}
	for (i = 0; i < elf->nr_phdrs; i++) {
		if (!gelf_getphdr(elf->elf, (int)i, &elf->phdrs[i])) {
			err = -UTRACE_ERRNO__ELF;
			goto err_free;
		}
	}
	err = read_syms(elf);
	if (err)
		goto err_free;
	elf->go = detect_go(elf);
	pr_debug("%s: %zu function symbols%s\n", path, elf->nr_syms, elf->go ? ", Go" : "");
	*ret = elf;
	return 0;

err_close:
	close(fd);
	return err;
err_free:
	utrace_elf__close(elf);
	return err;
}

struct utrace_elf *utrace_elf__open(const char *path)
{
	struct utrace_elf *elf = NULL;
	int err;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	err = elf_open(path, &elf);
	if (err) {
		errno = -err;
		return NULL;
	}
	return elf;
}

static bool sym_covers(const struct utrace_elf *elf, size_t i, uint64_t addr, uint64_t nearest)
{
	const struct utrace_sym *s = &elf->syms[i];

	if (s->size)
		return addr < s->addr + s->size;
	return s->addr == nearest; /* unknown size: only the closest preceding address */
}

const struct utrace_sym *utrace_elf__find_sym(const struct utrace_elf *elf, uint64_t addr)
{
	size_t lo = 0, hi, i, first, scanned = 0;
	uint64_t nearest;

	if (!elf || !elf->nr_syms)
		return NULL;
	/* lo = first symbol with sym.addr > addr */
	hi = elf->nr_syms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (elf->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	nearest = elf->syms[lo - 1].addr;
	for (i = lo; i-- > 0 && scanned < 256; scanned++) {
		if (!sym_covers(elf, i, addr, nearest))
			continue;
		/* the primary name among the covering symbols at this address */
		for (first = i; first > 0 && elf->syms[first - 1].addr == elf->syms[i].addr;
		     first--)
			;
		for (hi = first; hi < elf->nr_syms && elf->syms[hi].addr == elf->syms[i].addr; hi++)
			if (!(elf->syms[hi].flags & UTRACE_SYM_ALIAS) &&
			    sym_covers(elf, hi, addr, nearest))
				return &elf->syms[hi];
		return &elf->syms[i];
	}
	return NULL;
}

static const GElf_Phdr *load_segment(const struct utrace_elf *elf, uint64_t addr, bool memsz)
{
	size_t i;

	for (i = 0; i < elf->nr_phdrs; i++) {
		const GElf_Phdr *ph = &elf->phdrs[i];
		uint64_t end = ph->p_vaddr + (memsz ? ph->p_memsz : ph->p_filesz);

		if (ph->p_type == PT_LOAD && addr >= ph->p_vaddr && addr < end)
			return ph;
	}
	return NULL;
}

int utrace_elf__file_offset(const struct utrace_elf *elf, uint64_t addr, uint64_t *ret_off)
{
	const GElf_Phdr *ph;

	if (!elf || !ret_off)
		return -EINVAL;
	ph = load_segment(elf, addr, false);
	if (!ph)
		return -ENOENT;
	*ret_off = ph->p_offset + (addr - ph->p_vaddr);
	return 0;
}

ssize_t utrace_elf__read(const struct utrace_elf *elf, uint64_t addr, void *buf, size_t len)
{
	const GElf_Phdr *ph;
	uint64_t off, in_file, n;

	if (!elf || (!buf && len))
		return -EINVAL;
	ph = load_segment(elf, addr, true);
	if (!ph)
		return -ENOENT;
	off = addr - ph->p_vaddr;
	n = MIN((uint64_t)len, ph->p_memsz - off);
	in_file = off < ph->p_filesz ? MIN(n, ph->p_filesz - off) : 0;
	if (in_file && ph->p_offset + off + in_file > elf->size)
		return -UTRACE_ERRNO__ELF;
	memcpy(buf, (const char *)elf->image + ph->p_offset + off, in_file);
	memset((char *)buf + in_file, 0, n - in_file); /* .bss */
	return (ssize_t)n;
}

int utrace_elf__build_id(const struct utrace_elf *elf, char *buf, size_t size)
{
	Elf_Scn *scn = NULL;

	if (!elf || !buf || !size)
		return -EINVAL;
	while ((scn = elf_nextscn(elf->elf, scn))) {
		GElf_Shdr shdr;
		GElf_Nhdr nhdr;
		size_t off = 0, name_off, desc_off;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
			const uint8_t *desc = (const uint8_t *)data->d_buf + desc_off;
			size_t i;

			if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4 ||
			    memcmp((const char *)data->d_buf + name_off, "GNU", 4))
				continue;
			if (size < nhdr.n_descsz * 2 + 1)
				return -ERANGE;
			for (i = 0; i < nhdr.n_descsz; i++)
				snprintf(buf + 2 * i, 3, "%02x", desc[i]);
			return (int)(nhdr.n_descsz * 2);
		}
	}
	return -ENOENT;
}

int utrace_elf__exec_sections(const struct utrace_elf *elf, struct utrace_elf_section *out,
			      size_t max)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, n = 0;

	if (!elf)
		return -EINVAL;
	if (elf_getshdrstrndx(elf->elf, &shstrndx))
		return -UTRACE_ERRNO__ELF;
	while ((scn = elf_nextscn(elf->elf, scn))) {
		GElf_Shdr shdr;

		if (!gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_EXECINSTR) ||
		    shdr.sh_type != SHT_PROGBITS || shdr.sh_offset + shdr.sh_size > elf->size)
			continue;
		if (out && n < max)
			out[n] = (struct utrace_elf_section){
				.name = elf_strptr(elf->elf, shstrndx, shdr.sh_name),
				.addr = shdr.sh_addr,
				.size = shdr.sh_size,
				.data = (const uint8_t *)elf->image + shdr.sh_offset,
			};
		n++;
		if (out && n >= max)
			break;
	}
	return (int)n;
}

/**
 * elf_load_bias - the load bias of an object from one of its mappings
 * @elf: the object's ELF file
 * @map_start: start address of a mapping of the file
 * @map_offset: file offset of that mapping (page aligned)
 * @ret_bias: on success, runtime address minus file address
 *
 * The mapping must come from a PT_LOAD segment: the one whose page-aligned
 * file range contains @map_offset. Since p_vaddr and p_offset are congruent
 * modulo the page size, bias = start - offset - (p_vaddr - p_offset).
 * Tracer process; does not allocate.
 *
 * Return: 0 on success; -ENOENT if no PT_LOAD segment covers @map_offset.
 */
int elf_load_bias(const struct utrace_elf *elf, uint64_t map_start, uint64_t map_offset,
		  uint64_t *ret_bias)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t i;

	for (i = 0; i < elf->nr_phdrs; i++) {
		const GElf_Phdr *ph = &elf->phdrs[i];
		uint64_t lo = ph->p_offset & ~(page - 1);

		if (ph->p_type != PT_LOAD || map_offset < lo ||
		    map_offset >= ph->p_offset + MAX(ph->p_filesz, 1))
			continue;
		*ret_bias = map_start - map_offset - (ph->p_vaddr - ph->p_offset);
		return 0;
	}
	return -ENOENT;
}

/**
 * elf_addr_is_code - is @addr inside an executable PT_LOAD segment of @elf?
 * @elf: the ELF file
 * @addr: file address
 *
 * Tracer process; does not allocate. Return: true or false.
 */
bool elf_addr_is_code(const struct utrace_elf *elf, uint64_t addr)
{
	const GElf_Phdr *ph = load_segment(elf, addr, false);

	return ph && (ph->p_flags & PF_X);
}

/**
 * elf_ident - class and machine of @elf
 * @elf: the ELF file
 * @ret_class: ELFCLASS32 or ELFCLASS64
 * @ret_machine: e_machine
 *
 * Used to skip libraries of another architecture in a library search path.
 * Tracer process. Return: nothing (cannot fail on an open object).
 */
void elf_ident(const struct utrace_elf *elf, int *ret_class, int *ret_machine)
{
	*ret_class = elf->image ? ((const unsigned char *)elf->image)[EI_CLASS] : ELFCLASSNONE;
	*ret_machine = elf->ehdr.e_machine;
}

/**
 * elf_dyninfo_get - the dynamic-linking facts of @elf
 * @elf: the ELF file
 * @ret: filled on success; strings are borrowed from @elf, the @needed
 *	array is allocated (elf_dyninfo_clear())
 *
 * Reads PT_INTERP and the DT_NEEDED, DT_RPATH and DT_RUNPATH entries of the
 * dynamic section. Tracer process; allocates.
 *
 * Return: 0 on success (a static executable has no entries); -ENOMEM;
 * -UTRACE_ERRNO__ELF if the dynamic section is malformed. @ret is untouched
 * on failure.
 */
int elf_dyninfo_get(struct utrace_elf *elf, struct elf_dyninfo *ret)
{
	struct elf_dyninfo di = { 0 };
	Elf_Scn *scn = NULL;
	size_t i;

	for (i = 0; i < elf->nr_phdrs; i++) {
		const GElf_Phdr *ph = &elf->phdrs[i];

		if (ph->p_type == PT_INTERP && ph->p_filesz &&
		    ph->p_offset + ph->p_filesz <= elf->size &&
		    ((const char *)elf->image)[ph->p_offset + ph->p_filesz - 1] == '\0')
			di.interp = (const char *)elf->image + ph->p_offset;
	}
	while ((scn = elf_nextscn(elf->elf, scn))) {
		GElf_Shdr shdr;
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNAMIC || !shdr.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			return -UTRACE_ERRNO__ELF;
		n = shdr.sh_size / shdr.sh_entsize;
		for (i = 0; i < n; i++) {
			const char *s;
			GElf_Dyn dyn;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH &&
			    dyn.d_tag != DT_RUNPATH)
				continue;
			s = elf_strptr(elf->elf, shdr.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_RPATH) {
				di.rpath = s;
			} else if (dyn.d_tag == DT_RUNPATH) {
				di.runpath = s;
			} else {
				const char **nn =
					realloc(di.needed, (di.nr_needed + 1) * sizeof(*nn));

				if (!nn) {
					free(di.needed);
					return -ENOMEM;
				}
				di.needed = nn;
				di.needed[di.nr_needed++] = s;
			}
		}
		break;
	}
	*ret = di;
	return 0;
}

/**
 * elf_dyninfo_clear - free what elf_dyninfo_get() allocated
 * @di: accepts a zeroed or filled struct
 *
 * Return: nothing.
 */
void elf_dyninfo_clear(struct elf_dyninfo *di)
{
	if (!di)
		return;
	free(di->needed);
	memset(di, 0, sizeof(*di));
}
