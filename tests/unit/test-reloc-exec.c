/* SPDX-License-Identifier: MIT */
/*
 * test-reloc-exec.c - execute and compare. Each victim function of
 * tests/reloc/funcs.c (built by gcc and clang, -O0 and -O2, with and
 * without -fcf-protection) is planned by the site planner, its displaced
 * bytes are relocated into a trampoline mapped near the object (placed with
 * reloc_find_slot()), and it is run twice per argument pair:
 *   - natively, and through the trampoline (relocated prologue, then a jmp
 *     back into the original code): same return value and same writes to
 *     the object's data;
 *   - with a jmp to exec_snapshot (exec-harness.S) planted at the first
 *     byte after the displaced ones: the complete register state, the
 *     arithmetic flags and the stack the prologue built must be identical
 *     at that join point, native or relocated.
 * Both the plan (jmp: several instructions) and the int3-mode XOL copy of
 * the first instruction are exercised.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch.h"
#include "harness.h"
#include "util.h"

struct snap {
	uint64_t r[16]; /* rax rbx rcx rdx rsi rdi rbp rsp r8..r15 */
	uint64_t flags;
	uint64_t stack_len;
	uint64_t taken;
	uint8_t stack[512];
	uint8_t xmm[16][16];
};

extern struct snap exec_snap;
extern long exec_call(void *fn, long a, long b);
extern char exec_snapshot[];

#define FLAGS_ARITH 0x8d5ULL /* CF PF AF ZF SF OF */
#define PAGE 4096ULL

static const char *const funcs[] = {
	"f_add",       "f_global",   "f_local",	   "f_early_jcc",  "f_loop",   "f_call",
	"f_call_plt",  "f_tail",     "f_switch",   "f_fib",	   "f_string", "f_stack",
	"f_float",     "f_regs",     "f_do_while", "f_cmp_global", "f_min",    "f_ext",
	"f_asm_jrcxz", "f_asm_loop", "f_asm_sse",  "f_asm_vex",
};

static const long args[][2] = { { 0, 0 }, { 1, 2 }, { 5, -3 }, { 100, 7 }, { -9, 40 } };

struct object {
	const char *want; /* file name to find */
	uint64_t text_lo, text_hi;
	uint64_t data_lo, data_hi; /* writable, not RELRO */
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object *o = arg;
	const ElfW(Phdr) *relro = NULL;
	int i;

	if (!info->dlpi_name || !strstr(info->dlpi_name, o->want))
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (ph->p_type == PT_GNU_RELRO)
			relro = ph;
		if (ph->p_type != PT_LOAD)
			continue;
		if (ph->p_flags & PF_X) {
			o->text_lo = lo;
			o->text_hi = hi;
		} else if (ph->p_flags & PF_W) {
			o->data_lo = lo;
			o->data_hi = hi;
		}
	}
	if (relro) {
		uint64_t end = (info->dlpi_addr + relro->p_vaddr + relro->p_memsz) & ~(PAGE - 1);

		if (end > o->data_lo)
			o->data_lo = end;
	}
	return 1;
}

struct ctx {
	struct object obj;
	struct branch_index *bti;
	uint8_t *page; /* near the object: snapshot stub at 0, trampoline at 64 */
	uint8_t *far; /* more than 2 GiB away: a far trampoline at 64 */
	uint8_t *data_saved;
	int jmp, int3, refused, snaps, skipped_snaps, far_ok, far_refused;
};

static void data_save(struct ctx *c)
{
	memcpy(c->data_saved, (void *)c->obj.data_lo, c->obj.data_hi - c->obj.data_lo);
}

static void data_restore(struct ctx *c)
{
	memcpy((void *)c->obj.data_lo, c->data_saved, c->obj.data_hi - c->obj.data_lo);
}

static void make_writable(uint64_t addr, size_t len)
{
	uint64_t lo = addr & ~(PAGE - 1), hi = (addr + len + PAGE - 1) & ~(PAGE - 1);

	CHECK(!mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC));
}

/* Map the page for the stub and the trampolines near the object's text. */
static void map_page(struct ctx *c)
{
	struct utrace_maps *maps = utrace_maps__read(0);
	uint64_t near[2] = { c->obj.text_lo, c->obj.data_hi }, slot = 0;
	struct writer w;
	void *p;

	CHECK(maps);
	CHECK_EQ(reloc_find_slot(maps, near, 2, PAGE, &slot), 0);
	p = mmap((void *)slot, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK_MSG(p == (void *)slot, "mmap at %#llx: %s", (unsigned long long)slot,
		  strerror(errno));
	utrace_maps__free(maps);
	c->page = p;
	writer_init(&w, p, 64, slot);
	writer_put_jmp_abs(&w, (uint64_t)exec_snapshot);
	CHECK_EQ(w.err, 0);
}

static void snap_compare(const struct snap *a, const struct snap *b, const char *fn, long x, long y)
{
	int i;

	CHECK_MSG(a->taken == b->taken, "%s(%ld, %ld): snapshot taken %d vs %d", fn, x, y,
		  (int)a->taken, (int)b->taken);
	if (!a->taken)
		return;
	for (i = 0; i < 16; i++)
		CHECK_MSG(a->r[i] == b->r[i], "%s(%ld, %ld): register %d: %#llx vs %#llx", fn, x, y,
			  i, (unsigned long long)a->r[i], (unsigned long long)b->r[i]);
	CHECK_MSG((a->flags & FLAGS_ARITH) == (b->flags & FLAGS_ARITH),
		  "%s(%ld, %ld): flags %#llx vs %#llx", fn, x, y, (unsigned long long)a->flags,
		  (unsigned long long)b->flags);
	for (i = 0; i < 16; i++)
		CHECK_MSG(!memcmp(a->xmm[i], b->xmm[i], 16), "%s(%ld, %ld): xmm%d differs", fn, x,
			  y, i);
	CHECK_EQ(a->stack_len, b->stack_len);
	CHECK_MSG(!memcmp(a->stack, b->stack, a->stack_len), "%s(%ld, %ld): stack differs", fn, x,
		  y);
}

/* A page more than 2 GiB from the object: far trampolines. */
static void map_far(struct ctx *c)
{
	struct utrace_maps *maps = utrace_maps__read(0);
	uint64_t want[1], slot = 0;
	void *p;

	CHECK(maps);
	want[0] = c->obj.text_lo > (64ULL << 30) ? c->obj.text_lo - (16ULL << 30) :
						   c->obj.text_lo + (16ULL << 30);
	CHECK_EQ(reloc_find_slot(maps, want, 1, PAGE, &slot), 0);
	p = mmap((void *)slot, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(p == (void *)slot);
	CHECK(!writer_rel32_ok(slot, c->obj.text_lo) && !writer_rel32_ok(slot, c->obj.data_hi));
	utrace_maps__free(maps);
	c->far = p;
}

/*
 * Relocate [site, site + len) of @fn into a trampoline in @page (near the
 * object, or far: then RIP-relative data goes through the scratch-register
 * rewrite) and compare runs.
 */
static void exercise(struct ctx *c, const char *name, void *fn, uint64_t site, size_t len,
		     uint8_t *page)
{
	bool far = page == c->far;
	uint64_t tramp = (uint64_t)page + 64, end = site + len, targets[8], addrs[9];
	size_t data_len = c->obj.data_hi - c->obj.data_lo;
	uint8_t *d1 = malloc(data_len), saved[5];
	struct utrace_maps *maps;
	struct writer w;
	struct reloc r;
	struct snap s1;
	int n, i, k;
	uint64_t slot;

	CHECK(d1);
	/* the trampoline page must be a valid placement for these bytes */
	n = reloc_targets((void *)site, len, site, targets, 8);
	CHECK(n >= 0 && n <= 8);
	addrs[0] = site;
	for (i = 0; i < n; i++) {
		addrs[i + 1] = targets[i];
		CHECK(far || writer_rel32_ok(tramp, targets[i]));
	}
	maps = utrace_maps__read(0);
	CHECK(maps);
	CHECK_EQ(reloc_find_slot(maps, addrs, n + 1, PAGE, &slot), 0);
	for (i = 0; i <= n; i++)
		CHECK(writer_rel32_ok(slot, addrs[i]) && writer_rel32_ok(slot + PAGE, addrs[i]));
	utrace_maps__free(maps);

	memset(page + 64, 0xcc, PAGE - 64);
	writer_init(&w, page + 64, PAGE - 64, tramp);
	reloc_init(&r, (void *)site, len, site);
	n = reloc_relocate(&r, &w, true);
	if (far && n < 0 && r.fail == SITE_FAIL_RIPREL_FAR) {
		c->far_refused++; /* needs a near trampoline (VEX, push/jmp/call [rip]) */
		free(d1);
		return;
	}
	c->far_ok += far;
	CHECK_MSG(n > 0, "%s: relocate %zu bytes at %#llx: %d (fail %d '%s')", name, len,
		  (unsigned long long)site, n, r.fail, r.fail_insn);
	__builtin___clear_cache((char *)page, (char *)page + PAGE);

	/* 1: whole-function results and side effects */
	for (k = 0; k < (int)(sizeof(args) / sizeof(args[0])); k++) {
		long x = args[k][0], y = args[k][1], r1, r2;

		data_save(c);
		r1 = exec_call(fn, x, y);
		memcpy(d1, (void *)c->obj.data_lo, data_len);
		data_restore(c);
		r2 = exec_call((void *)tramp, x, y);
		CHECK_MSG(r1 == r2, "%s(%ld, %ld) = %ld natively, %ld relocated", name, x, y, r1,
			  r2);
		CHECK_MSG(!memcmp(d1, (void *)c->obj.data_lo, data_len), "%s: data differs", name);
		data_restore(c);
	}

	/* 2: register state at the join point */
	if (branch_index__any_target(c->bti, end + 1, end + 5)) {
		c->skipped_snaps++; /* a jmp planted at @end would be jumped into */
		free(d1);
		return;
	}
	make_writable(end, 5);
	memcpy(saved, (void *)end, 5);
	writer_init(&w, (void *)end, 5, end);
	writer_put_jmp(&w, (uint64_t)c->page); /* jmp stub (-> exec_snapshot) */
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.len, 5);
	for (k = 0; k < (int)(sizeof(args) / sizeof(args[0])); k++) {
		long x = args[k][0], y = args[k][1];

		data_save(c);
		exec_snap.taken = 0;
		exec_call(fn, x, y);
		s1 = exec_snap;
		data_restore(c);
		exec_snap.taken = 0;
		exec_call((void *)tramp, x, y);
		snap_compare(&s1, &exec_snap, name, x, y);
		c->snaps += s1.taken ? 1 : 0;
		data_restore(c);
	}
	memcpy((void *)end, saved, 5);
	free(d1);
}

static void run_variant(const char *variant)
{
	char path[4096], want[256];
	struct utrace_elf_section sec;
	struct ctx c = { 0 };
	size_t i;
	void *dl;

	snprintf(path, sizeof(path), "%s/tests/reloc/lib%s.so", getenv("UTRACE_BUILD_DIR") ?: ".",
		 variant);
	if (access(path, R_OK))
		SKIP("%s not built", path);
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	CHECK_MSG(dl, "dlopen: %s", dlerror());
	snprintf(want, sizeof(want), "lib%s.so", variant);
	c.obj.want = want;
	CHECK(dl_iterate_phdr(find_object, &c.obj) == 1);
	CHECK(c.obj.text_lo && c.obj.data_hi > c.obj.data_lo);
	c.data_saved = malloc(c.obj.data_hi - c.obj.data_lo);
	CHECK(c.data_saved);
	sec = (struct utrace_elf_section){ "text", c.obj.text_lo, c.obj.text_hi - c.obj.text_lo,
					   (const uint8_t *)c.obj.text_lo };
	c.bti = branch_index__new(&sec, 1, NULL, 0);
	CHECK(c.bti);
	map_page(&c);
	map_far(&c);

	for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		void *fn = dlsym(dl, funcs[i]);
		const ElfW(Sym) *sym = NULL;
		Dl_info info;
		struct site_plan p;
		struct site_input in;
		char why[256];

		CHECK_MSG(fn, "%s: no %s", variant, funcs[i]);
		CHECK(dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) && sym);
		in = (struct site_input){
			.addr = (uint64_t)fn,
			.bytes = fn,
			.len = MIN(64, c.obj.text_hi - (uint64_t)fn),
			.func_addr = (uint64_t)fn,
			.func_size = sym->st_size,
			.bti = c.bti,
			.live = true,
		};
		site_plan(&in, &p);
		site_plan__why(&p, why, sizeof(why));
		harness_note("%s %-12s +%d %-7s len %d%s%s", variant, funcs[i],
			     (int)(p.addr - (uint64_t)fn), site_mode_str(p.mode), p.len,
			     *why ? ": " : "", why);
		CHECK_MSG(p.mode != SITE_REFUSED, "%s: %s refused: %s", variant, funcs[i], why);
		if (p.mode == SITE_JMP)
			c.jmp++;
		else
			c.int3++;
		exercise(&c, funcs[i], fn, p.addr, p.len, c.page);
		exercise(&c, funcs[i], fn, p.addr, p.len, c.far);
		if (p.nr_insns > 1) {
			/* the int3-mode XOL copy of the first instruction alone */
			struct reloc r;
			uint8_t out[64];
			struct writer w;
			size_t first;

			/* the shortest prefix that relocates is the first instruction */
			for (first = 1; first <= p.len; first++) {
				writer_init(&w, out, sizeof(out), p.addr);
				reloc_init(&r, (void *)p.addr, first, p.addr);
				if (reloc_relocate(&r, &w, false) > 0)
					break;
			}
			CHECK(first < p.len);
			exercise(&c, funcs[i], fn, p.addr, first, c.page);
			exercise(&c, funcs[i], fn, p.addr, first, c.far);
		}
	}
	harness_note("%s: %d jmp, %d int3; %d register snapshots compared, %d skipped; "
		     "far trampolines: %d ran, %d need a near one",
		     variant, c.jmp, c.int3, c.snaps, c.skipped_snaps, c.far_ok, c.far_refused);
	CHECK(c.snaps > 0);
	branch_index__free(c.bti);
	free(c.data_saved);
}

TEST(exec_gcc_O0_nocet)
{
	run_variant("funcs-gcc-O0-nocet");
}

TEST(exec_gcc_O0_cet)
{
	run_variant("funcs-gcc-O0-cet");
}

TEST(exec_gcc_O2_nocet)
{
	run_variant("funcs-gcc-O2-nocet");
}

TEST(exec_gcc_O2_cet)
{
	run_variant("funcs-gcc-O2-cet");
}

TEST(exec_clang_O0_nocet)
{
	run_variant("funcs-clang-O0-nocet");
}

TEST(exec_clang_O0_cet)
{
	run_variant("funcs-clang-O0-cet");
}

TEST(exec_clang_O2_nocet)
{
	run_variant("funcs-clang-O2-nocet");
}

TEST(exec_clang_O2_cet)
{
	run_variant("funcs-clang-O2-cet");
}
