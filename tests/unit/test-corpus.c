/* SPDX-License-Identifier: MIT */
/*
 * test-corpus.c - plan every function symbol of real binaries (libc.so.6,
 * libstdc++.so.6, python3.11, utrace's own) and relocate each plan near
 * (1 MiB) and far (16 GiB) from the site: no crash, no decoder error, and
 * refusals under 5%. Prints the jmp / int3 / refused shares, the most
 * common reasons, and the time of the branch-index sweep and the planning.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#include "utrace/utrace.h"
#include "arch.h"
#include "harness.h"
#include "util.h"

struct corpus_stats {
	size_t sites, modes[3], reasons[3][__SITE_FAIL_MAX];
	size_t decode_errors, far_ok, far_riprel, checked;
	double sweep_ms, plan_ms;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const struct utrace_elf_section *find_sec(const struct utrace_elf_section *secs, int nr,
						 uint64_t addr)
{
	int i;

	for (i = 0; i < nr; i++)
		if (addr >= secs[i].addr && addr < secs[i].addr + secs[i].size)
			return &secs[i];
	return NULL;
}

/*
 * Semantic check of a relocation: the set of absolute addresses the code
 * refers to (branch targets, RIP-relative effective addresses, pushed
 * return addresses, the jump back) must be the same before and after.
 * The relocated side understands the writer's idioms: jmp [rip+0]; dq X,
 * push imm32 + mov dword [rsp+4], imm32, and movabs reg, X before [reg+d].
 * Branches inside the emitted code itself (the label dance) are skipped.
 */
struct refs {
	uint64_t v[64];
	int n;
};

static void refs_add(struct refs *r, uint64_t v)
{
	int i;

	for (i = 0; i < r->n; i++)
		if (r->v[i] == v)
			return;
	if (r->n < 64)
		r->v[r->n++] = v;
}

static ZydisDecoder dec;

static bool mem_riprel(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
		       uint64_t pc, uint64_t *ea)
{
	int i;

	for (i = 0; i < in->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    ops[i].mem.base == ZYDIS_REGISTER_RIP)
			return ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(in, &ops[i], pc, ea));
	return false;
}

static void orig_refs(const uint8_t *b, size_t len, uint64_t addr, struct refs *r)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	size_t off = 0;
	bool falls = true;
	uint64_t ea;

	while (off < len) {
		CHECK(ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, b + off, len - off, &in, ops)));
		if (in.raw.imm[0].is_relative)
			refs_add(r, addr + off + in.length + in.raw.imm[0].value.s);
		if (mem_riprel(&in, ops, addr + off, &ea))
			refs_add(r, ea);
		falls = true;
		if (in.mnemonic == ZYDIS_MNEMONIC_CALL)
			refs_add(r, addr + off + in.length); /* the return address */
		if (in.mnemonic == ZYDIS_MNEMONIC_CALL || in.mnemonic == ZYDIS_MNEMONIC_JMP ||
		    in.mnemonic == ZYDIS_MNEMONIC_RET)
			falls = false;
		off += in.length;
	}
	if (falls)
		refs_add(r, addr + len); /* the jump back */
}

static void out_refs(const uint8_t *b, size_t len, uint64_t pc, struct refs *r)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t push = 0, ea, base_val = 0;
	ZydisRegister base_reg = ZYDIS_REGISTER_NONE;
	bool pushed = false;
	size_t off = 0;
	int i;

	while (off < len) {
		const uint8_t *p = b + off;
		uint64_t at = pc + off;

		CHECK_MSG(ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, p, len - off, &in, ops)),
			  "relocated code does not decode at +%zu", off);
		if (in.length == 6 && p[0] == 0xff && p[1] == 0x25 && !memcmp(p + 2, "\0\0\0", 4)) {
			uint64_t lit;

			memcpy(&lit, p + 6, 8); /* jmp [rip+0]; dq lit */
			refs_add(r, lit);
			off += 14;
			continue;
		}
		if (pushed && !(p[0] == 0xc7 && p[1] == 0x44 && p[2] == 0x24 && p[3] == 0x04)) {
			refs_add(r, push); /* push imm32 alone: sign-extended */
			pushed = false;
		}
		if (p[0] == 0x68) { /* push imm32 */
			push = (uint64_t)(int64_t)in.raw.imm[0].value.s;
			pushed = true;
		} else if (p[0] == 0xc7 && p[1] == 0x44 && p[2] == 0x24 && p[3] == 0x04 && pushed) {
			push = (push & 0xffffffffULL) | ((uint64_t)in.raw.imm[0].value.u << 32);
			refs_add(r, push);
			pushed = false;
		} else if (in.mnemonic == ZYDIS_MNEMONIC_MOV && in.raw.imm[0].size == 64) {
			base_reg = ops[0].reg.value; /* movabs scratch, next */
			base_val = in.raw.imm[0].value.u;
		} else if (in.raw.imm[0].is_relative) {
			uint64_t t = at + in.length + in.raw.imm[0].value.s;

			if (t < pc || t > pc + len) /* not the label dance */
				refs_add(r, t);
		} else if (mem_riprel(&in, ops, at, &ea)) {
			refs_add(r, ea);
		} else if (base_reg != ZYDIS_REGISTER_NONE) {
			for (i = 0; i < in.operand_count; i++)
				if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
				    ops[i].mem.base == base_reg &&
				    ops[i].visibility == ZYDIS_OPERAND_VISIBILITY_EXPLICIT) {
					refs_add(r, base_val + ops[i].mem.disp.value);
					base_reg = ZYDIS_REGISTER_NONE;
				}
		}
		off += in.length;
	}
	if (pushed)
		refs_add(r, push);
}

static void refs_check(const struct site_plan *p, const uint8_t *bytes, const uint8_t *out, int n,
		       uint64_t dst)
{
	struct refs a = { .n = 0 }, b = { .n = 0 };
	int i, j;

	orig_refs(bytes, p->len, p->addr, &a);
	out_refs(out, n, dst, &b);
	for (i = 0; i < a.n; i++) {
		for (j = 0; j < b.n && b.v[j] != a.v[i]; j++)
			;
		CHECK_MSG(j < b.n, "relocating %#llx to %#llx loses a reference to %#llx",
			  (unsigned long long)p->addr, (unsigned long long)dst,
			  (unsigned long long)a.v[i]);
	}
	for (j = 0; j < b.n; j++) {
		for (i = 0; i < a.n && a.v[i] != b.v[j]; i++)
			;
		CHECK_MSG(i < a.n, "relocating %#llx to %#llx adds a reference to %#llx",
			  (unsigned long long)p->addr, (unsigned long long)dst,
			  (unsigned long long)b.v[j]);
	}
}

/* Relocate the plan's bytes to @dst; only a far RIP-relative operand may fail. */
static void relocate_check(const struct site_plan *p, const uint8_t *bytes, uint64_t dst,
			   struct corpus_stats *st, bool far)
{
	uint8_t out[RELOC_MAX_OUT(RELOC_MAX_INSNS)];
	struct writer w;
	struct reloc r;
	int n;

	writer_init(&w, out, sizeof(out), dst);
	reloc_init(&r, bytes, p->len, p->addr);
	n = reloc_relocate(&r, &w, true);
	if (n > 0) {
		refs_check(p, bytes, out, n, dst);
		st->far_ok += far;
		st->checked++;
		return;
	}
	CHECK_MSG(far && r.fail == SITE_FAIL_RIPREL_FAR,
		  "relocating %#llx (%d bytes) to %#llx: %d, fail %d '%s'",
		  (unsigned long long)p->addr, p->len, (unsigned long long)dst, n, r.fail,
		  r.fail_insn);
	st->far_riprel++;
}

static void top_reasons(const char *what, const size_t *reasons, size_t total)
{
	char buf[1024];
	size_t o = 0;
	int i, k;
	bool used[__SITE_FAIL_MAX] = { 0 };

	for (k = 0; k < 4; k++) {
		int best = -1;

		for (i = 1; i < __SITE_FAIL_MAX; i++)
			if (!used[i] && reasons[i] && (best < 0 || reasons[i] > reasons[best]))
				best = i;
		if (best < 0)
			break;
		used[best] = true;
		o += snprintf(buf + o, sizeof(buf) - o, "%s%.1f%% ", k ? "; " : "",
			      100.0 * reasons[best] / total);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		o += snprintf(buf + o, sizeof(buf) - o, site_fail_str(best), "<insn>");
#pragma GCC diagnostic pop
	}
	if (o)
		harness_note("  %s: %s", what, buf);
}

static void run_corpus(const char *path, struct corpus_stats *st)
{
	struct utrace_elf *elf = utrace_elf__open(path);
	struct utrace_elf_section *secs;
	struct branch_index *bti;
	uint64_t *sync;
	size_t i, nsym, nsync = 0;
	int nsec;
	double t0;

	if (!elf)
		SKIP("%s: %s", path, strerror(errno));
	nsym = utrace_elf__sym_count(elf);
	nsec = utrace_elf__exec_sections(elf, NULL, 0);
	CHECK(nsec > 0);
	secs = calloc(nsec, sizeof(*secs));
	sync = calloc(nsym + 1, sizeof(*sync));
	CHECK(secs && sync);
	CHECK_EQ(utrace_elf__exec_sections(elf, secs, nsec), nsec);
	for (i = 0; i < nsym; i++) {
		const struct utrace_sym *s = utrace_elf__sym(elf, i);

		if (!(s->flags & (UTRACE_SYM_ALIAS | UTRACE_SYM_PLT)) &&
		    (!nsync || sync[nsync - 1] != s->addr))
			sync[nsync++] = s->addr;
	}

	t0 = now_ms();
	bti = branch_index__new(secs, nsec, sync, nsync);
	st->sweep_ms += now_ms() - t0;
	CHECK(bti);

	t0 = now_ms();
	for (i = 0; i < nsym; i++) {
		const struct utrace_sym *s = utrace_elf__sym(elf, i);
		const struct utrace_elf_section *sec;
		struct site_input in;
		struct site_plan p;

		if (s->flags & UTRACE_SYM_ALIAS)
			continue; /* one probe per address */
		sec = find_sec(secs, nsec, s->addr);
		if (!sec || !sec->data)
			continue; /* e.g. an absolute or undefined-ish symbol */
		in = (struct site_input){
			.addr = s->addr,
			.bytes = sec->data + (s->addr - sec->addr),
			.len = MIN(64, sec->addr + sec->size - s->addr),
			.func_addr = s->addr,
			.func_size = s->size,
			.bti = bti,
			.live = true,
		};
		site_plan(&in, &p);
		st->sites++;
		st->modes[p.mode]++;
		st->reasons[p.mode][p.fail]++;
		if (p.fail == SITE_FAIL_DECODE || p.fail == SITE_FAIL_TRUNCATED) {
			st->decode_errors++;
			harness_note("  decode error at %s (%#llx)", s->name,
				     (unsigned long long)s->addr);
		}
		if (p.mode != SITE_REFUSED) {
			const uint8_t *b = in.bytes + (p.addr - s->addr);

			relocate_check(&p, b, p.addr + (1ULL << 20), st, false);
			relocate_check(&p, b, p.addr + (16ULL << 30), st, true);
		}
	}
	st->plan_ms += now_ms() - t0;
	branch_index__free(bti);
	free(sync);
	free(secs);
	utrace_elf__close(elf);
}

static void report(const char *name, const struct corpus_stats *st)
{
	size_t n = st->sites ?: 1;

	harness_note("%s: %zu sites: jmp %.1f%%, int3 %.1f%%, refused %.2f%%; "
		     "branch index %.1f ms, planning + relocating %.1f ms",
		     name, st->sites, 100.0 * st->modes[SITE_JMP] / n,
		     100.0 * st->modes[SITE_INT3] / n, 100.0 * st->modes[SITE_REFUSED] / n,
		     st->sweep_ms, st->plan_ms);
	top_reasons("int3 because", st->reasons[SITE_INT3], n);
	top_reasons("refused because", st->reasons[SITE_REFUSED], n);
	harness_note("  %zu relocations checked: same absolute references as the original",
		     st->checked);
	if (st->far_riprel)
		harness_note("  16 GiB away: %zu plans need a nearer trampoline (rip-relative)",
			     st->far_riprel);
}

static void corpus_test(const char *name, const char *path)
{
	struct corpus_stats st = { 0 };

	if (access(path, R_OK))
		SKIP("%s not found", path);
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	run_corpus(path, &st);
	report(name, &st);
	CHECK(st.sites > 0);
	CHECK_EQ(st.decode_errors, 0);
	CHECK_MSG(st.modes[SITE_REFUSED] * 100 < st.sites * 5, "%s: %zu of %zu refused", name,
		  st.modes[SITE_REFUSED], st.sites);
}

TEST_TIMEOUT(corpus_libc, 120)
{
	corpus_test("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6");
}

TEST_TIMEOUT(corpus_libstdcxx, 120)
{
	corpus_test("libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
}

TEST_TIMEOUT(corpus_python, 120)
{
	corpus_test("python3.11", "/usr/bin/python3.11");
}

TEST_TIMEOUT(corpus_own, 120)
{
	static const char *const own[] = { "cli/utrace", "lib/libutrace.so", "tests/test-corpus",
					   "tests/targets/s-sleeper" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(own); i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", getenv("UTRACE_BUILD_DIR") ?: ".", own[i]);
		corpus_test(own[i], path);
	}
}
