/* SPDX-License-Identifier: MIT */
/*
 * arena-fuzzer.c - libFuzzer target for the host's readers of the agent's
 * arena (lib/agent-arena.c), which a traced program can overwrite at will.
 * Built by fuzz/run.sh with clang -fsanitize=fuzzer,address,undefined
 * against lib/agent-arena.c, and driven by tests/unit/test-arena-fuzz.c
 * (a fixed-seed generator) in the unit suite and its ASan build.
 *
 * The input becomes the arena's contents: byte 0 chooses how. Even: the
 * rest is copied over the arena from offset 0 (the header, probe table and
 * the first thread slots). Odd: the rest is a list of 10-byte patches
 * (offset / 8 as u16, then a u64 value) over a true arena (a valid header,
 * rings with records), which reaches the slots and rings deep inside.
 *
 * Checks, beyond "no crash, no out-of-bounds access": ahost_check() fails
 * only with -EBADMSG, h->corrupt set and a reason in h->why, and passes
 * only if the layout fields are the host's; a corrupt arena stays corrupt
 * and a drain then consumes nothing; every record handed to the callback
 * has a probe id below max_probes and counts within their bounds; a drain
 * consumes at most a ring per thread slot; strings come out terminated,
 * bounded and printable; adopted XOL areas are ordered and of our size;
 * fork entries point into the header.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define F_PROBES 8
#define F_THREADS 4
#define F_RECORDS 16

/* A broken contract: say which (the line) and abort, for libFuzzer and the unit test. */
#define must(cond)                                                                   \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "arena-fuzzer.c:%d: %s\n", __LINE__, #cond); \
			abort();                                                     \
		}                                                                    \
	} while (0)

static void on_record(const struct utrace_abi_event *ev, void *data)
{
	unsigned int *n = data;

	must(ev->probe < F_PROBES);
	switch (ev->kind) {
	case UTRACE_EV_ENTRY:
	case UTRACE_EV_INJECT:
		/* six argument strings, then the stack, then -k's registers and copy (ABI 12) */
		must(ev->ext <=
		     6 * UTRACE_ABI_STR_RECS +
			     (UTRACE_ABI_STACK_MAX + UTRACE_ABI_ARGS - 1) / UTRACE_ABI_ARGS +
			     UTRACE_ABI_REGS_RECS + UTRACE_ABI_DUMP_RECS);
		break;
	case UTRACE_EV_STACK:
	case UTRACE_EV_REGS:
		must(ev->ext <= UTRACE_ABI_ARGS);
		break;
	case UTRACE_EV_STACKDATA:
		must(ev->ext <= UTRACE_ABI_DUMP_CHUNK);
		break;
	case UTRACE_EV_STR:
		must(UTRACE_STR_LEN(ev->ext) <= UTRACE_ABI_STR_CHUNK);
		must(UTRACE_STR_INDEX(ev->ext) <= UTRACE_STR_RET);
		break;
	case UTRACE_EV_MODULE:
		must((ev->dur & 0xff) <= UTRACE_ABI_ARGS);
		break;
	case UTRACE_EV_RETURN:
		must(ev->ext <= UTRACE_ABI_STR_RECS);
		break;
	case UTRACE_EV_LOST:
		break;
	default:
		must(0);
	}
	++*n;
}

/* A true arena: header by the host, three records to read in each ring. */
static void true_arena(char *a, const struct utrace_arena_hdr *hd)
{
	uint32_t i, r;

	memset(a, 0, hd->arena_size);
	memcpy(a, hd, sizeof(*hd));
	((struct utrace_arena_hdr *)a)->nr_threads = F_THREADS;
	for (i = 0; i < F_THREADS; i++) {
		struct utrace_abi_thread *t = utrace_abi_thread(a, i);
		struct utrace_abi_event *ring = utrace_abi_ring(a, i);

		/* every record valid: only the head check bounds a drain */
		for (r = 0; r < F_RECORDS; r++) {
			ring[r].kind = UTRACE_EV_RETURN;
			ring[r].probe = r % F_PROBES;
		}
		t->head = 3;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct utrace_arena_hdr hd = { .max_probes = F_PROBES,
				       .max_threads = F_THREADS,
				       .ring_records = F_RECORDS };
	struct ahost h;
	char *a, s[600], small[8];
	unsigned int got = 0, k;
	uint32_t seen = 0, lost = 0, *acked;
	uint64_t n;
	pid_t pid;
	int fd, r, i;

	utrace_abi_layout(&hd);
	a = aligned_alloc(UTRACE_ABI_PAGE, hd.arena_size);
	if (!a)
		return 0;
	true_arena(a, &hd);
	if (size && !(data[0] & 1)) {
		memcpy(a, data + 1, size - 1 < hd.arena_size ? size - 1 : hd.arena_size);
	} else if (size) {
		size_t o;

		for (o = 1; o + 10 <= size; o += 10) {
			uint64_t off = ((uint64_t)data[o] | (uint64_t)data[o + 1] << 8) * 8, v;

			memcpy(&v, data + o + 2, 8);
			if (off + 8 <= hd.arena_size)
				memcpy(a + off, &v, 8);
		}
	}
	memset(&h, 0, sizeof(h));
	h.fd = -1;
	must(ahost_set_layout(&h, &hd) == 0);
	h.arena = a;
	h.hdr = (struct utrace_arena_hdr *)a;

	r = ahost_check(&h);
	if (r) {
		must(r == -EBADMSG && h.corrupt && h.why[0]);
	} else {
		struct utrace_arena_hdr *x = h.hdr;

		must(x->magic == UTRACE_ABI_MAGIC && x->version == UTRACE_ABI_VERSION &&
		     x->probes_off == hd.probes_off && x->threads_off == hd.threads_off &&
		     x->rings_off == hd.rings_off && x->thread_stride == hd.thread_stride &&
		     x->arena_size == hd.arena_size && x->ring_records == hd.ring_records &&
		     x->max_threads == hd.max_threads && x->max_probes == hd.max_probes);
	}
	n = ahost_drain(&h, on_record, &got);
	must(n == got && n <= (uint64_t)F_THREADS * F_RECORDS);
	if (h.corrupt) {
		must(h.why[0] != '\0');
		must(ahost_drain(&h, on_record, &got) == 0); /* sticky */
	} else {
		n = ahost_drain(&h, on_record, &got); /* the tails are ours: */
		must(n <= (uint64_t)F_THREADS * F_RECORDS);
	}
	for (i = -2; i < F_PROBES + 2; i++) {
		struct utrace_abi_probe *p = ahost_abi(&h, i);

		(void)ahost_hits(&h, i);
		(void)ahost_hits_tid(&h, i, 7);
		if (i >= 0 && i < F_PROBES)
			must((char *)p == a + hd.probes_off + (size_t)i * sizeof(*p));
		else
			must((char *)p < a || (char *)p >= a + hd.arena_size);
	}
	(void)ahost_drops(&h);
	for (k = 0; k < 2 * UTRACE_ABI_FORKS; k++) {
		if (ahost_next_fork(&h, &seen, &lost, &pid, &fd, &acked) != 1)
			break;
		must((char *)acked >= a &&
		     (char *)acked + 4 <= a + sizeof(struct utrace_arena_hdr));
	}
	ahost_agent_str(&h, s, sizeof(s));
	must(strlen(s) < sizeof(s) && strlen(s) < sizeof(h.hdr->cmd_str));
	for (k = 0; s[k]; k++)
		must(s[k] >= 0x20 && s[k] < 0x7f);
	ahost_agent_str(&h, small, sizeof(small));
	must(strlen(small) < sizeof(small));
	ahost_adopt_areas(&h);
	must(h.nr_areas <= 64);
	for (k = 0; k < h.nr_areas; k++)
		must(h.areas[k].base <= h.areas[k].next && h.areas[k].next < h.areas[k].end &&
		     h.areas[k].end - h.areas[k].base <= AHOST_XOL_SIZE);
	free(h.tails);
	free(a);
	return 0;
}
