/* SPDX-License-Identifier: MIT */
/*
 * branch-index.c - per-module index of direct branch targets, for the site
 * planner's "no branch into the displaced bytes" rule. Tracer process.
 *
 * Built once per module by a linear sweep of its executable sections with
 * the Zydis decoder (length-only decode, no operands: a few tens of ms for
 * libc). Recorded:
 *   - targets of jmp/jcc/loop/jrcxz/call rel8/rel32 (calls too: a call to a
 *     mid-function address is rare but real, e.g. outlined code);
 *   - targets of lea reg, [rip + x] that fall inside an executable section
 *     (computed gotos, hand-written jump tables, addresses of local labels);
 *   - separately, addresses of indirect jmps through a register or non-RIP
 *     memory (the shape of a compiled switch), so the planner can refuse
 *     multi-instruction jmp patches in functions whose jump tables it cannot
 *     read. jmp [rip + x] (PLT-style tail calls) is not counted.
 *
 *   - the @sync points (symbol starts): entries that indirect calls reach.
 *
 * Known limits, all of which make the planner more conservative, never less:
 * a linear sweep can mis-decode data or padding as a branch (a spurious
 * target only turns a jmp into an int3). It can also lose sync after data
 * in .text; giving the symbol starts as @sync points re-synchronises it at
 * every function. Targets reached only through data (jump tables, exception
 * landing pads, function pointers) are invisible, which is why the planner
 * allows multi-instruction patches only at function entries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "arch.h"
#include "util.h"

struct u64_vec {
	uint64_t *v;
	size_t nr, cap;
};

struct branch_index {
	struct u64_vec targets; /* sorted, unique */
	struct u64_vec indirect; /* sorted */
	struct branch_index_stats st;
};

static int vec_push(struct u64_vec *a, uint64_t x)
{
	if (a->nr == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 1024;
		uint64_t *v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->nr++] = x;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void vec_sort_unique(struct u64_vec *a)
{
	size_t i, n = 0;

	if (!a->nr)
		return;
	qsort(a->v, a->nr, sizeof(*a->v), cmp_u64);
	for (i = 1; i < a->nr; i++)
		if (a->v[i] != a->v[n])
			a->v[++n] = a->v[i];
	a->nr = n + 1;
}

/* First index with v[i] >= x. */
static size_t lower_bound(const struct u64_vec *a, uint64_t x)
{
	size_t lo = 0, hi = a->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool in_sections(const struct utrace_elf_section *secs, size_t nr, uint64_t a)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (a >= secs[i].addr && a < secs[i].addr + secs[i].size)
			return true;
	return false;
}

static int sweep(struct branch_index *bti, const ZydisDecoder *dec,
		 const struct utrace_elf_section *secs, size_t nr_secs,
		 const struct utrace_elf_section *s, const uint64_t *sync, size_t nr_sync)
{
	size_t off = 0, si = 0;
	ZydisDecodedInstruction in;
	int err;

	if (!s->data)
		return 0;
	while (si < nr_sync && sync[si] <= s->addr)
		si++;
	while (off < s->size) {
		uint64_t addr = s->addr + off, target;

		if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(dec, NULL, s->data + off,
							      s->size - off, &in))) {
			bti->st.bad_bytes++;
			off++;
			continue;
		}
		/* an instruction that overlaps the next symbol start: resync there */
		while (si < nr_sync && sync[si] <= addr)
			si++;
		if (si < nr_sync && addr + in.length > sync[si]) {
			off = sync[si] - s->addr;
			continue;
		}
		bti->st.insns++;
		off += in.length;
		if (in.raw.imm[0].is_relative) {
			target = addr + in.length + in.raw.imm[0].value.s;
			err = vec_push(&bti->targets, target);
			if (err)
				return err;
		} else if (in.mnemonic == ZYDIS_MNEMONIC_LEA && in.raw.modrm.mod == 0 &&
			   in.raw.modrm.rm == 5) {
			/* lea reg, [rip + disp32] */
			target = addr + in.length + (int64_t)in.raw.disp.value;
			if (in_sections(secs, nr_secs, target)) {
				err = vec_push(&bti->targets, target);
				if (err)
					return err;
			}
		} else if (in.mnemonic == ZYDIS_MNEMONIC_JMP &&
			   in.meta.branch_type != ZYDIS_BRANCH_TYPE_FAR &&
			   !(in.raw.modrm.mod == 0 && in.raw.modrm.rm == 5)) {
			/* jmp reg / jmp [mem], not jmp [rip + x] */
			err = vec_push(&bti->indirect, addr);
			if (err)
				return err;
		}
	}
	return 0;
}

/**
 * branch_index__new - sweep @secs and index their direct branch targets
 * @secs: executable sections (utrace_elf__exec_sections()); all addresses in
 * one address space (file addresses, or runtime addresses of one mapping)
 * @nr: number of sections
 * @sync: optional sorted instruction starts known to be exact (function
 * symbols), where the sweep re-synchronises; they are also recorded as
 * targets (entry points); may be NULL
 * @nr_sync: number of @sync entries
 *
 * Tracer process; allocates.
 *
 * Return: a new index to free with branch_index__free(); NULL with errno set
 * (ENOMEM) on failure.
 */
struct branch_index *branch_index__new(const struct utrace_elf_section *secs, size_t nr,
				       const uint64_t *sync, size_t nr_sync)
{
	struct branch_index *bti = calloc(1, sizeof(*bti));
	ZydisDecoder dec;
	size_t i;
	int err = 0;

	if (!bti)
		return NULL;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	for (i = 0; i < nr && !err; i++)
		err = sweep(bti, &dec, secs, nr, &secs[i], sync, nr_sync);
	/*
	 * Every symbol is an entry point that indirect calls (PLT, GOT, function
	 * pointers) reach: asm functions with a second entry a few bytes in
	 * (memcpy inside memmove) must not be displaced.
	 */
	for (i = 0; i < nr_sync && !err; i++)
		err = vec_push(&bti->targets, sync[i]);
	if (err) {
		branch_index__free(bti);
		errno = -err;
		return NULL;
	}
	vec_sort_unique(&bti->targets);
	vec_sort_unique(&bti->indirect);
	bti->st.targets = bti->targets.nr;
	bti->st.indirect_jmps = bti->indirect.nr;
	return bti;
}

/** branch_index__free - free @bti; accepts NULL. */
void branch_index__free(struct branch_index *bti)
{
	if (!bti)
		return;
	free(bti->targets.v);
	free(bti->indirect.v);
	free(bti);
}

/**
 * branch_index__any_target - is any direct branch target in [@lo, @hi)?
 *
 * O(log n), no allocation. Return: true if one is.
 */
bool branch_index__any_target(const struct branch_index *bti, uint64_t lo, uint64_t hi)
{
	size_t i = lower_bound(&bti->targets, lo);

	return i < bti->targets.nr && bti->targets.v[i] < hi;
}

/**
 * branch_index__first_target - the lowest branch target in [@lo, @hi), or 0
 */
uint64_t branch_index__first_target(const struct branch_index *bti, uint64_t lo, uint64_t hi)
{
	size_t i = lower_bound(&bti->targets, lo);

	return i < bti->targets.nr && bti->targets.v[i] < hi ? bti->targets.v[i] : 0;
}

/**
 * branch_index__any_indirect - is there an indirect jmp (not through
 * [rip + x]) in [@lo, @hi)? Return: true if there is.
 */
bool branch_index__any_indirect(const struct branch_index *bti, uint64_t lo, uint64_t hi)
{
	size_t i = lower_bound(&bti->indirect, lo);

	return i < bti->indirect.nr && bti->indirect.v[i] < hi;
}

/** branch_index__stats - copy what the sweep saw into @st. */
void branch_index__stats(const struct branch_index *bti, struct branch_index_stats *st)
{
	*st = bti->st;
}
