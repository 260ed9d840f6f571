/* SPDX-License-Identifier: MIT */
/*
 * test-elf.c - lib/elf.c against binutils. Expected symbol sets, addresses,
 * PLT stubs and build-ids are computed at test time from nm, readelf and
 * objdump run on the same files (the test targets, libc, this binary), so
 * nothing here depends on a compiler version. No ptrace.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "harness.h"

/* One (name, address) pair from a tool's output. */
struct nsym {
	char name[512];
	unsigned long long addr;
};

struct nsyms {
	struct nsym *v;
	size_t nr;
};

static void nsyms_add(struct nsyms *s, const char *name, unsigned long long addr)
{
	s->v = realloc(s->v, (s->nr + 1) * sizeof(*s->v));
	CHECK(s->v);
	snprintf(s->v[s->nr].name, sizeof(s->v[0].name), "%s", name);
	s->v[s->nr].addr = addr;
	s->nr++;
}

static bool nsyms_has(const struct nsyms *s, const char *name, unsigned long long addr)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		if (s->v[i].addr == addr && !strcmp(s->v[i].name, name))
			return true;
	return false;
}

__attribute__((noinline)) static char *run_tool(const char *tool, const char *a1, const char *a2,
						const char *a3)
{
	char *argv[] = { (char *)tool, (char *)a1, (char *)a2, (char *)a3, NULL };
	char *out = NULL;
	int rc = harness_run(argv, &out, NULL, 30);

	if (rc == 127 || rc < 0)
		SKIP("%s is not available", tool);
	CHECK_MSG(rc == 0, "%s %s %s %s exited with %d", tool, a1, a2 ? a2 : "", a3 ? a3 : "", rc);
	return out;
}

/*
 * Function symbols readelf shows (FUNC/IFUNC, defined), "@VERSION" cut.
 * @dyn: --dyn-syms, else --syms (both tables).
 */
static void readelf_funcs(const char *path, bool dyn, struct nsyms *out)
{
	char *text = run_tool("readelf", "-W", dyn ? "--dyn-syms" : "--syms", path);
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char num[32], type[32], bind[32], vis[32], ndx[32], name[512] = "";
		unsigned long long addr, size;
		char *at;

		if (sscanf(line, " %31s %llx %llu %31s %31s %31s %31s %511s", num, &addr, &size,
			   type, bind, vis, ndx, name) < 8)
			continue;
		if (strcmp(type, "FUNC") && strcmp(type, "IFUNC"))
			continue;
		if (!strcmp(ndx, "UND") || !strcmp(ndx, "ABS"))
			continue;
		at = strchr(name, '@');
		if (at)
			*at = '\0';
		if (name[0])
			nsyms_add(out, name, addr);
	}
	free(text);
}

/* "<name@plt>:" labels of objdump -d. */
static void objdump_plt(const char *path, struct nsyms *out)
{
	char *text = run_tool("objdump", "-d", path, NULL);
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long addr;
		char name[512];
		char *p;

		if (sscanf(line, "%llx <%511[^>]>:", &addr, name) != 2)
			continue;
		p = strstr(name, "@plt");
		if (!p || p[4])
			continue;
		*p = '\0';
		nsyms_add(out, name, addr);
	}
	free(text);
}

static const char *target(const char *name)
{
	static char buf[4][4096];
	static int slot;
	char *b = buf[slot++ % 4];

	snprintf(b, sizeof(buf[0]), "%s", harness_build_path(name));
	if (access(b, R_OK))
		SKIP("%s not built", b);
	return b;
}

static const char *libc_path(void)
{
	static const char *const cands[] = { "/lib/x86_64-linux-gnu/libc.so.6",
					     "/usr/lib/x86_64-linux-gnu/libc.so.6",
					     "/lib64/libc.so.6", "/usr/lib64/libc.so.6" };
	size_t i;

	for (i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (!access(cands[i], R_OK))
			return cands[i];
	SKIP("no libc.so.6 found");
}

/* Every readelf function symbol is in @elf, and every non-PLT symbol of @elf in readelf. */
static void check_same_funcs(struct utrace_elf *elf, const struct nsyms *want)
{
	size_t i, n = utrace_elf__sym_count(elf), nr_plain = 0;

	for (i = 0; i < want->nr; i++) {
		bool found = false;
		size_t j;

		for (j = 0; j < n && !found; j++) {
			const struct utrace_sym *s = utrace_elf__sym(elf, j);

			found = !(s->flags & UTRACE_SYM_PLT) && s->addr == want->v[i].addr &&
				!strcmp(s->name, want->v[i].name);
		}
		CHECK_MSG(found, "%s at %#llx missing", want->v[i].name, want->v[i].addr);
	}
	for (i = 0; i < n; i++) {
		const struct utrace_sym *s = utrace_elf__sym(elf, i);

		if (s->flags & UTRACE_SYM_PLT)
			continue;
		nr_plain++;
		CHECK_MSG(nsyms_has(want, s->name, s->addr), "%s at %#llx is not in readelf",
			  s->name, (unsigned long long)s->addr);
	}
	CHECK(nr_plain > 0);
}

TEST(open_errors)
{
	char tmp[] = "/tmp/utrace-test-elf-XXXXXX";
	int fd;

	errno = 0;
	CHECK(utrace_elf__open("/nonexistent/file") == NULL);
	CHECK_EQ(errno, ENOENT);
	CHECK(utrace_elf__open("/") == NULL);
	CHECK_EQ(errno, EISDIR);
	CHECK(utrace_elf__open(NULL) == NULL);
	CHECK_EQ(errno, EINVAL);
	fd = mkstemp(tmp);
	CHECK(fd >= 0);
	CHECK(utrace_elf__open(tmp) == NULL); /* empty */
	CHECK_EQ(errno, UTRACE_ERRNO__ELF);
	CHECK(write(fd, "#!/bin/sh\necho not an ELF file at all\n", 38) == 38);
	CHECK(utrace_elf__open(tmp) == NULL);
	CHECK_EQ(errno, UTRACE_ERRNO__ELF);
	/* a truncated ELF header */
	CHECK(ftruncate(fd, 0) == 0);
	CHECK(pwrite(fd, "\177ELF\2\1\1\0\0\0\0\0\0\0\0\0\3\0", 18, 0) == 18);
	CHECK(utrace_elf__open(tmp) == NULL);
	CHECK_EQ(errno, UTRACE_ERRNO__ELF);
	close(fd);
	unlink(tmp);
	utrace_elf__close(NULL);
	CHECK(utrace_elf__sym(NULL, 0) == NULL);
	CHECK_EQ(utrace_elf__sym_count(NULL), 0);
}

TEST(symtab_matches_readelf)
{
	const char *path = target("tests/targets/s-list-pie");
	struct utrace_elf *elf = utrace_elf__open(path);
	struct nsyms want = { 0 };
	const struct utrace_sym *s;
	size_t i;

	CHECK(elf);
	CHECK(utrace_elf__is_dyn(elf));
	CHECK_STREQ(utrace_elf__path(elf), path);
	readelf_funcs(path, false, &want);
	check_same_funcs(elf, &want);
	/* sorted by address, then name */
	for (i = 1; i < utrace_elf__sym_count(elf); i++) {
		const struct utrace_sym *a = utrace_elf__sym(elf, i - 1),
					*b = utrace_elf__sym(elf, i);

		CHECK(a->addr < b->addr || (a->addr == b->addr && strcmp(a->name, b->name) <= 0));
	}
	CHECK(utrace_elf__sym(elf, utrace_elf__sym_count(elf)) == NULL);
	/* main: from .symtab, a global with a size */
	for (i = 0; i < want.nr; i++)
		if (!strcmp(want.v[i].name, "main"))
			break;
	CHECK(i < want.nr);
	s = utrace_elf__find_sym(elf, want.v[i].addr + 1);
	CHECK(s);
	CHECK_STREQ(s->name, "main");
	CHECK(s->flags & UTRACE_SYM_SYMTAB);
	CHECK(s->flags & UTRACE_SYM_GLOBAL);
	CHECK(s->size > 1);
	free(want.v);
	utrace_elf__close(elf);
}

static void check_plt(const char *rel)
{
	const char *path = target(rel);
	struct utrace_elf *elf = utrace_elf__open(path);
	struct nsyms want = { 0 };
	size_t i, nr_plt = 0;
	bool puts_seen = false;

	CHECK(elf);
	objdump_plt(path, &want);
	CHECK_MSG(want.nr > 0, "objdump shows no PLT stub in %s", path);
	for (i = 0; i < utrace_elf__sym_count(elf); i++) {
		const struct utrace_sym *s = utrace_elf__sym(elf, i);

		if (!(s->flags & UTRACE_SYM_PLT))
			continue;
		nr_plt++;
		CHECK_MSG(nsyms_has(&want, s->name, s->addr), "%s@plt at %#llx not in objdump",
			  s->name, (unsigned long long)s->addr);
		puts_seen |= !strcmp(s->name, "puts");
	}
	CHECK_EQ(nr_plt, want.nr);
	CHECK(puts_seen);
	free(want.v);
	utrace_elf__close(elf);
}

TEST(plt_pie)
{
	check_plt("tests/targets/s-list-pie");
}

TEST(plt_nopie)
{
	struct utrace_elf *elf;

	check_plt("tests/targets/s-list-nopie");
	elf = utrace_elf__open(target("tests/targets/s-list-nopie"));
	CHECK(elf);
	CHECK(!utrace_elf__is_dyn(elf));
	utrace_elf__close(elf);
}

TEST(plt_ibt_plt_sec)
{
	check_plt("tests/targets/s-list-ibt");
}

TEST(stripped_dynsym)
{
	const char *path = target("tests/targets/libfoo.so");
	struct utrace_elf *elf = utrace_elf__open(path);
	struct nsyms want = { 0 };
	size_t i;
	bool found = false, hidden = false;

	CHECK(elf);
	readelf_funcs(path, true, &want);
	check_same_funcs(elf, &want);
	for (i = 0; i < utrace_elf__sym_count(elf); i++) {
		const struct utrace_sym *s = utrace_elf__sym(elf, i);

		if (!strcmp(s->name, "exported_fn") && !(s->flags & UTRACE_SYM_PLT)) {
			found = true;
			CHECK(s->flags & UTRACE_SYM_DYNSYM);
			CHECK(!(s->flags & UTRACE_SYM_SYMTAB));
		}
		hidden |= !strcmp(s->name, "hidden_fn");
	}
	CHECK(found);
	CHECK(!hidden); /* stripped: .symtab is gone */
	free(want.v);
	utrace_elf__close(elf);
}

TEST(libc_dynsym_and_aliases)
{
	const char *path = libc_path();
	struct utrace_elf *elf = utrace_elf__open(path);
	struct nsyms want = { 0 };
	size_t i, j, n;

	CHECK(elf);
	readelf_funcs(path, true, &want);
	check_same_funcs(elf, &want);
	/* exactly one primary name per address */
	n = utrace_elf__sym_count(elf);
	for (i = 0; i < n; i = j) {
		int primaries = 0;

		for (j = i; j < n && utrace_elf__sym(elf, j)->addr == utrace_elf__sym(elf, i)->addr;
		     j++)
			if (!(utrace_elf__sym(elf, j)->flags & (UTRACE_SYM_ALIAS | UTRACE_SYM_PLT)))
				primaries++;
		if (!(utrace_elf__sym(elf, i)->flags & UTRACE_SYM_PLT))
			CHECK_MSG(primaries == 1, "%d primaries at %#llx", primaries,
				  (unsigned long long)utrace_elf__sym(elf, i)->addr);
		/* the primary has the fewest leading underscores (memalign, not __libc_memalign) */
		for (size_t k = i; k < j; k++) {
			const struct utrace_sym *p = utrace_elf__sym(elf, k);

			if (p->flags & (UTRACE_SYM_ALIAS | UTRACE_SYM_PLT))
				continue;
			for (size_t q = i; q < j; q++) {
				const struct utrace_sym *o = utrace_elf__sym(elf, q);

				if (!(o->flags & (UTRACE_SYM_GLOBAL | UTRACE_SYM_WEAK)))
					continue; /* exported names win over local ones */
				CHECK_MSG(strspn(o->name, "_") >= strspn(p->name, "_"),
					  "primary %s, but %s", p->name, o->name);
			}
		}
	}
	/* find_sym gives the primary name: malloc, not __libc_malloc */
	for (i = 0; i < n; i++)
		if (!strcmp(utrace_elf__sym(elf, i)->name, "malloc"))
			break;
	CHECK(i < n);
	CHECK_STREQ(utrace_elf__find_sym(elf, utrace_elf__sym(elf, i)->addr + 2)->name, "malloc");
	free(want.v);
	utrace_elf__close(elf);
}

/* Bytes read through PT_LOAD are the bytes running in this very process. */
TEST(read_matches_memory)
{
	struct utrace_elf *elf = utrace_elf__open("/proc/self/exe");
	const struct utrace_sym *s = NULL;
	struct utrace_maps *maps;
	uint8_t file[32];
	uint64_t bias = 0, off;
	size_t i;

	CHECK(elf);
	for (i = 0; i < utrace_elf__sym_count(elf); i++)
		if (!strcmp(utrace_elf__sym(elf, i)->name, "harness_run"))
			s = utrace_elf__sym(elf, i);
	CHECK(s);
	maps = utrace_maps__read(getpid());
	CHECK(maps);
	/* bias of this PIE: runtime address of harness_run minus its file address */
	bias = (uint64_t)(uintptr_t)&harness_run - s->addr;
	CHECK_EQ(bias & 0xfff, 0);
	CHECK_EQ(utrace_elf__read(elf, s->addr, file, sizeof(file)), sizeof(file));
	CHECK_MEMEQ(file, (void *)(uintptr_t)(s->addr + bias), sizeof(file));
	CHECK_EQ(utrace_elf__file_offset(elf, s->addr, &off), 0);
	CHECK(off > 0);
	CHECK_EQ(utrace_elf__file_offset(elf, 0xffffffffff000000ULL, &off), -ENOENT);
	CHECK(utrace_elf__read(elf, 0xffffffffff000000ULL, file, 1) == -ENOENT);
	utrace_maps__free(maps);
	utrace_elf__close(elf);
}

TEST(exec_sections)
{
	struct utrace_elf *elf = utrace_elf__open(target("tests/targets/s-list-pie"));
	struct utrace_elf_section secs[32];
	int n, i;
	bool text = false;

	CHECK(elf);
	n = utrace_elf__exec_sections(elf, NULL, 0);
	CHECK(n >= 2 && n <= 32);
	CHECK_EQ(utrace_elf__exec_sections(elf, secs, 32), n);
	for (i = 0; i < n; i++) {
		CHECK(secs[i].data && secs[i].size);
		if (!strcmp(secs[i].name, ".text")) {
			uint8_t b[8];

			text = true;
			CHECK_EQ(utrace_elf__read(elf, secs[i].addr, b, sizeof(b)), sizeof(b));
			CHECK_MEMEQ(b, secs[i].data, sizeof(b));
		}
	}
	CHECK(text);
	utrace_elf__close(elf);
}

TEST(build_id)
{
	const char *path = libc_path();
	struct utrace_elf *elf = utrace_elf__open(path);
	char *text = run_tool("readelf", "-n", path, NULL);
	char want[128] = "", got[128], *p = strstr(text, "Build ID: ");
	int n;

	CHECK(elf);
	if (!p)
		SKIP("%s has no build-id", path);
	sscanf(p + 10, "%127s", want);
	n = utrace_elf__build_id(elf, got, sizeof(got));
	CHECK_EQ(n, strlen(want));
	CHECK_STREQ(got, want);
	CHECK_EQ(utrace_elf__build_id(elf, got, 4), -ERANGE);
	free(text);
	utrace_elf__close(elf);
}
