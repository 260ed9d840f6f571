/* SPDX-License-Identifier: MIT */
/*
 * plan.c - the public face of site planning (include/utrace/plan.h): finds
 * a match's function and bytes in its ELF file, keeps one branch-target
 * index per object, and hands the decision to the arch planner (lib/arch.h).
 * Tracer process.
 *
 * Plans are made from the file's bytes, in file addresses, and reported in
 * runtime addresses. A live process may already be patched (by us or a
 * debugger); the file is the authority on what the code was.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "utrace/plan.h"
#include "arch.h"
#include "internal.h"

struct plan_obj {
	bool tried; /* the index was built, or failed */
	struct branch_index *bti;
	struct utrace_elf_section *secs;
	int nr_secs;
};

struct utrace_planner {
	struct utrace_image *img;
	struct plan_obj *objs;
	size_t nr;
	bool keep_first; /* utrace_planner__keep_first() */
};

struct utrace_planner *utrace_planner__new(struct utrace_image *img)
{
	struct utrace_planner *pl = calloc(1, sizeof(*pl));

	if (!pl)
		return NULL;
	pl->img = img;
	pl->nr = utrace_image__object_count(img);
	pl->objs = calloc(pl->nr ?: 1, sizeof(*pl->objs));
	if (!pl->objs) {
		free(pl);
		errno = ENOMEM;
		return NULL;
	}
	return pl;
}

void utrace_planner__free(struct utrace_planner *pl)
{
	size_t i;

	if (!pl)
		return;
	for (i = 0; i < pl->nr; i++) {
		branch_index__free(pl->objs[i].bti);
		free(pl->objs[i].secs);
	}
	free(pl->objs);
	free(pl);
}

const char *utrace_plan_mode_str(enum utrace_plan_mode mode)
{
	return site_mode_str((enum site_mode)mode);
}

/* Sweep the object's code once; symbol starts re-synchronise the sweep. */
static int obj_index(struct plan_obj *po, const struct utrace_elf *elf)
{
	size_t i, nsym = utrace_elf__sym_count(elf), nsync = 0;
	uint64_t *sync;
	int n;

	po->tried = true;
	n = utrace_elf__exec_sections(elf, NULL, 0);
	if (n <= 0)
		return n < 0 ? n : -ENOENT;
	po->secs = calloc(n, sizeof(*po->secs));
	sync = calloc(nsym + 1, sizeof(*sync));
	if (!po->secs || !sync) {
		free(sync);
		return -ENOMEM;
	}
	po->nr_secs = utrace_elf__exec_sections(elf, po->secs, n);
	for (i = 0; i < nsym; i++) {
		const struct utrace_sym *s = utrace_elf__sym(elf, i);

		if (!(s->flags & (UTRACE_SYM_ALIAS | UTRACE_SYM_PLT)) &&
		    (!nsync || sync[nsync - 1] != s->addr))
			sync[nsync++] = s->addr;
	}
	po->bti = branch_index__new(po->secs, po->nr_secs, sync, nsync);
	free(sync);
	return po->bti ? 0 : -errno;
}

void utrace_planner__keep_first(struct utrace_planner *pl, bool on)
{
	if (pl)
		pl->keep_first = on;
}

/**
 * utrace_planner__plan - see plan.h. Builds the object's index on first
 * use; afterwards O(log n) per call, no allocation.
 */
int utrace_planner__plan(struct utrace_planner *pl, const struct utrace_match *m,
			 struct utrace_plan *ret_plan)
{
	const struct utrace_elf_section *sec = NULL;
	struct site_input in = { .live = true };
	struct utrace_plan out = { 0 };
	struct site_plan p;
	struct plan_obj *po;
	struct utrace_elf *elf;
	uint64_t bias = m->addr - m->file_addr;
	int i, err;

	if (!pl || !m || m->object >= pl->nr)
		return -EINVAL;
	po = &pl->objs[m->object];
	elf = utrace_image__elf(pl->img, m->object);
	if (!elf)
		return -errno;
	if (!po->tried) {
		err = obj_index(po, elf);
		if (err && err != -ENOENT)
			return err;
	}
	for (i = 0; i < po->nr_secs; i++)
		if (m->file_addr >= po->secs[i].addr &&
		    m->file_addr < po->secs[i].addr + po->secs[i].size && po->secs[i].data)
			sec = &po->secs[i];
	if (!sec)
		return -ENOENT; /* not in the object's code */

	in.addr = m->file_addr;
	in.bytes = sec->data + (m->file_addr - sec->addr);
	in.len = MIN(64, sec->addr + sec->size - m->file_addr);
	in.bti = po->bti;
	in.keep_first = pl->keep_first;
	if (m->symbol) {
		in.func_addr = m->file_addr - m->offset;
		in.func_size = m->sym_size;
	} else {
		const struct utrace_sym *s = utrace_elf__find_sym(elf, m->file_addr);

		if (s) {
			in.func_addr = s->addr;
			in.func_size = s->size;
		}
	}
	if (in.func_addr >= sec->addr && in.func_addr <= m->file_addr)
		in.func_bytes = sec->data + (in.func_addr - sec->addr);
	err = site_plan(&in, &p);
	if (err && err != -UTRACE_ERRNO__RELOC)
		return err;
	out.mode = (enum utrace_plan_mode)p.mode;
	out.addr = p.addr + bias;
	out.len = p.len;
	out.nr_insns = p.nr_insns;
	out.pre_len = p.pre_len;
	out.undo = p.undo;
	site_plan__why(&p, out.why, sizeof(out.why));
	if (p.fail == SITE_FAIL_UNSAFE_INSN || p.fail == SITE_FAIL_FAR_BRANCH)
		out.detail = reloc_refuse_detail(p.fail_insn);
	*ret_plan = out;
	return err;
}
