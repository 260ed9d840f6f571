/* SPDX-License-Identifier: MIT */
/*
 * agent-arena.c - the host's readers of the agent's arena (agent-host.h):
 * its layout, checks, counters, rings, fork announcements and strings.
 * Runs in the tracer process; no syscall, no process needed (the arena
 * fuzzer, fuzz/arena-fuzzer.c, runs these on random bytes).
 *
 * The arena is untrusted input. It is shared with the target, and the
 * target's own code (a bug, or a program that wants to take over a tracer
 * running as root) can write any byte of it at any moment. So:
 *  - offsets, sizes and counts that locate things come from h->lay, the
 *    host's own copy made at creation (ahost_set_layout()), never from the
 *    arena's header; ahost_check() compares the two once a drain round and
 *    a difference makes the arena corrupt;
 *  - every index read from the arena (a thread count, a ring's head, a
 *    record's probe id, kind and counts, a fork entry) is bounds-checked
 *    before it is used, and each ring's consumer index is ours (h->tails),
 *    the arena only gets a copy of it for the producer;
 *  - strings (cmd_str) are copied out bounded and made printable;
 *  - values (counters, histograms, argument words) are only numbers to
 *    print: wrong ones mislead, they cannot make the host misbehave.
 * A check that fails sets h->corrupt: every later drain consumes nothing,
 * and the caller says so once and detaches (fuzz/arena-fuzzer.c checks
 * this contract on random arenas).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "agent-host.h"

/* The arena's words the host reads: through volatile loads (the target may change them). */
#define ARENA_READ(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

int ahost_set_layout(struct ahost *h, const struct utrace_arena_hdr *hd)
{
	uint64_t *tails;

	if (!hd->max_threads || !hd->ring_records || (hd->ring_records & (hd->ring_records - 1)))
		return -EINVAL;
	tails = calloc(hd->max_threads, sizeof(*tails));
	if (!tails)
		return -ENOMEM;
	free(h->tails);
	h->tails = tails;
	h->lay.max_probes = hd->max_probes;
	h->lay.max_threads = hd->max_threads;
	h->lay.ring_records = hd->ring_records;
	h->lay.probes_off = hd->probes_off;
	h->lay.threads_off = hd->threads_off;
	h->lay.thread_stride = hd->thread_stride;
	h->lay.rings_off = hd->rings_off;
	h->lay.arena_size = hd->arena_size;
	h->corrupt = false;
	return 0;
}

/* Mark the arena corrupt; h->why says what was found. Return: -EBADMSG. */
__attribute__((format(printf, 2, 3))) static int corrupt(struct ahost *h, const char *fmt, ...)
{
	va_list ap;

	if (!h->corrupt) {
		va_start(ap, fmt);
		vsnprintf(h->why, sizeof(h->why), fmt, ap);
		va_end(ap);
	}
	h->corrupt = true;
	return -EBADMSG;
}

int ahost_check(struct ahost *h)
{
	struct utrace_arena_hdr *a = h->hdr;

	if (h->corrupt)
		return -EBADMSG;
	if (!a)
		return 0;
	if (ARENA_READ(a->magic) != UTRACE_ABI_MAGIC ||
	    ARENA_READ(a->version) != UTRACE_ABI_VERSION)
		return corrupt(h, "its header was overwritten (magic 0x%" PRIx64 ", version %u)",
			       (uint64_t)ARENA_READ(a->magic), ARENA_READ(a->version));
	if (ARENA_READ(a->max_probes) != h->lay.max_probes ||
	    ARENA_READ(a->max_threads) != h->lay.max_threads ||
	    ARENA_READ(a->ring_records) != h->lay.ring_records ||
	    ARENA_READ(a->probes_off) != h->lay.probes_off ||
	    ARENA_READ(a->threads_off) != h->lay.threads_off ||
	    ARENA_READ(a->thread_stride) != h->lay.thread_stride ||
	    ARENA_READ(a->rings_off) != h->lay.rings_off ||
	    ARENA_READ(a->arena_size) != h->lay.arena_size)
		return corrupt(h, "its layout differs from the one utrace made");
	return 0;
}

void ahost_agent_str(struct ahost *h, char *buf, size_t len)
{
	size_t i;

	if (!len)
		return;
	/* a field with no NUL in it is cut like a string that fills it */
	for (i = 0; i + 1 < len && i + 1 < sizeof(h->hdr->cmd_str); i++) {
		char c = ARENA_READ(h->hdr->cmd_str[i]);

		if (!c)
			break;
		buf[i] = c >= 0x20 && c < 0x7f ? c : '?';
	}
	buf[i] = '\0';
}

int ahost_next_fork(struct ahost *h, uint32_t *seen, uint32_t *lost, pid_t *pid, int *fd,
		    uint32_t **acked)
{
	uint32_t head = __atomic_load_n(&h->hdr->fork_head, __ATOMIC_ACQUIRE);
	struct utrace_abi_fork *e;

	if (*seen == head)
		return 0;
	if (head - *seen > UTRACE_ABI_FORKS) {
		*lost += head - *seen - UTRACE_ABI_FORKS;
		*seen = head - UTRACE_ABI_FORKS;
	}
	e = &h->hdr->forks[*seen % UTRACE_ABI_FORKS];
	if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != *seen + 1)
		return 0; /* being written */
	++*seen;
	*pid = (pid_t)ARENA_READ(e->pid);
	*fd = ARENA_READ(e->fd);
	*acked = &e->acked;
	return 1;
}

/* Where probe @id, thread slot @i and ring @i are: from h->lay only. */
static struct utrace_abi_probe *probe_at(struct ahost *h, uint32_t id)
{
	return (struct utrace_abi_probe *)((char *)h->arena + h->lay.probes_off) + id;
}

static struct utrace_abi_thread *thread_at(struct ahost *h, uint32_t i)
{
	return (struct utrace_abi_thread *)((char *)h->arena + h->lay.threads_off +
					    (uint64_t)i * h->lay.thread_stride);
}

static struct utrace_abi_event *ring_at(struct ahost *h, uint32_t i)
{
	return (struct utrace_abi_event *)((char *)h->arena + h->lay.rings_off) +
	       (uint64_t)i * h->lay.ring_records;
}

/* Thread slots in use: the agent's count, never more than there are. */
static uint32_t nr_slots(struct ahost *h)
{
	uint64_t n = ARENA_READ(h->hdr->nr_threads);

	return (uint32_t)MIN(n, (uint64_t)h->lay.max_threads);
}

struct utrace_abi_probe *ahost_abi(struct ahost *h, int id)
{
	/* ids are the host's (ahost_probe_match()); one out of range is a bug here */
	static struct utrace_abi_probe scratch;

	if (id < 0 || (uint32_t)id >= h->lay.max_probes) {
		memset(&scratch, 0, sizeof(scratch));
		return &scratch;
	}
	return probe_at(h, (uint32_t)id);
}

/* Re-attach: the XOL areas the agent offers (hdr->xol_prev). */
void ahost_adopt_areas(struct ahost *h)
{
	uint32_t i, n = ARENA_READ(h->hdr->nr_xol_prev);

	/*
	 * Addresses in the target, where the host relocates code for the
	 * target to write: a wrong one harms only the target itself. Still,
	 * an area must be sane (no wrap, the size of ours) to be filled.
	 */
	for (i = 0; i < n && i < UTRACE_ABI_XOL_PREV && h->nr_areas < 64; i++) {
		const struct utrace_abi_xol *x = &h->hdr->xol_prev[i];
		uint64_t vaddr = ARENA_READ(x->vaddr), size = ARENA_READ(x->size),
			 used = ARENA_READ(x->used);

		if (used >= size || used < UTRACE_XOL_HDR || size > AHOST_XOL_SIZE ||
		    vaddr + size < vaddr || (used - UTRACE_XOL_HDR) % UTRACE_TRAMP_SLOT)
			continue;
		h->areas[h->nr_areas].base = vaddr;
		h->areas[h->nr_areas].next = vaddr + used;
		h->areas[h->nr_areas].end = vaddr + size;
		h->nr_areas++;
	}
}

uint64_t ahost_hits_tid(struct ahost *h, int id, uint32_t tid)
{
	uint64_t n;
	uint32_t i, nt;

	if (id < 0 || (uint32_t)id >= h->lay.max_probes)
		return 0;
	n = tid ? 0 : ARENA_READ(probe_at(h, (uint32_t)id)->hits_shared);
	nt = nr_slots(h);
	for (i = 0; i < nt; i++) {
		struct utrace_abi_thread *t = thread_at(h, i);

		if (tid && ARENA_READ(t->tid) != tid)
			continue;
		n += ARENA_READ(utrace_abi_hits(t)[id]);
	}
	return n;
}

uint64_t ahost_hits(struct ahost *h, int id)
{
	return ahost_hits_tid(h, id, 0);
}

/* One set of return figures (shared, or a cell's) into @out. */
static void timing_add(struct ahost_timing *out, const uint64_t *returns, const uint64_t *sum,
		       const uint64_t *min_inv, const uint64_t *max, const uint64_t *errors,
		       const uint64_t *hist)
{
	uint64_t min = ~ARENA_READ(*min_inv), max_ns = ARENA_READ(*max);
	unsigned int b;

	out->returns += ARENA_READ(*returns);
	out->sum_ns += ARENA_READ(*sum);
	out->errors += ARENA_READ(*errors);
	if (min < out->min_ns)
		out->min_ns = min;
	if (max_ns > out->max_ns)
		out->max_ns = max_ns;
	for (b = 0; b < UTRACE_ABI_HIST_BUCKETS; b++)
		out->hist[b] += ARENA_READ(hist[b]);
}

void ahost_timing(struct ahost *h, int id, struct ahost_timing *out)
{
	const struct utrace_abi_probe *a;
	uint32_t i, nt;

	memset(out, 0, sizeof(*out));
	out->min_ns = UINT64_MAX;
	if (id < 0 || (uint32_t)id >= h->lay.max_probes)
		return;
	a = probe_at(h, (uint32_t)id);
	timing_add(out, &a->returns, &a->sum_ns, &a->min_inv, &a->max_ns, &a->errors, a->hist);
	nt = nr_slots(h);
	for (i = 0; i < nt; i++) {
		struct utrace_abi_cell *c = utrace_abi_cells(thread_at(h, i), h->lay.max_probes) +
					    ((uint32_t)id & (UTRACE_ABI_CELLS - 1));

		if (__atomic_load_n(&c->probe, __ATOMIC_ACQUIRE) == (uint32_t)id + 1)
			timing_add(out, &c->returns, &c->sum_ns, &c->min_inv, &c->max_ns,
				   &c->errors, c->hist);
	}
}

uint64_t ahost_returns(struct ahost *h, int id)
{
	struct ahost_timing tm;

	ahost_timing(h, id, &tm);
	return tm.returns;
}

uint64_t ahost_drops(struct ahost *h)
{
	uint32_t i, nt = nr_slots(h);
	uint64_t n = 0;

	for (i = 0; i < nt; i++)
		n += ARENA_READ(thread_at(h, i)->drops);
	return n;
}

/*
 * Can the consumers take @ev as it is? Only its shape is checked (the
 * fields that index or count something); what a record means is the
 * caller's to check (an unknown probe id is skipped by the CLI).
 */
static bool record_ok(struct ahost *h, const struct utrace_abi_event *ev)
{
	if (ev->probe >= h->lay.max_probes)
		return false;
	switch (ev->kind) {
	case UTRACE_EV_ENTRY:
	case UTRACE_EV_INJECT:
		/*
		 * The records that follow: six argument strings at most, then
		 * UTRACE_ABI_STACK_MAX addresses at most, then -k's copy.
		 */
		return ev->ext <=
		       6 * UTRACE_ABI_STR_RECS +
			       (UTRACE_ABI_STACK_MAX + UTRACE_ABI_ARGS - 1) / UTRACE_ABI_ARGS +
			       UTRACE_ABI_REGS_RECS + UTRACE_ABI_DUMP_RECS;
	case UTRACE_EV_RETURN:
		return ev->ext <= UTRACE_ABI_STR_RECS; /* the returned string's */
	case UTRACE_EV_STACK:
	case UTRACE_EV_REGS:
		return ev->ext <= UTRACE_ABI_ARGS;
	case UTRACE_EV_STACKDATA:
		return ev->ext <= UTRACE_ABI_DUMP_CHUNK;
	case UTRACE_EV_STR:
		return UTRACE_STR_LEN(ev->ext) <= UTRACE_ABI_STR_CHUNK &&
		       UTRACE_STR_INDEX(ev->ext) <= UTRACE_STR_RET;
	case UTRACE_EV_MODULE:
		return (ev->dur & 0xff) <= UTRACE_ABI_ARGS;
	case UTRACE_EV_LOST:
		return true;
	}
	return false;
}

uint64_t ahost_drain(struct ahost *h, ahost_event_fn fn, void *data)
{
	uint32_t i, nt;
	uint64_t n = 0, mask = h->lay.ring_records - 1;

	if (!h->arena || !h->tails || ahost_check(h))
		return 0;
	nt = nr_slots(h);
	for (i = 0; i < nt && !h->corrupt; i++) {
		struct utrace_abi_thread *t = thread_at(h, i);
		struct utrace_abi_event *ring = ring_at(h, i);
		uint64_t head =
			__atomic_load_n(&t->head, __ATOMIC_ACQUIRE); /* pairs: ring_emit() */
		uint64_t tail = h->tails[i];

		/* the producer never runs more than a ring ahead of our tail */
		if (head - tail > h->lay.ring_records) {
			corrupt(h, "thread slot %u: ring head %" PRIu64 " against tail %" PRIu64, i,
				head, tail);
			break;
		}
		for (; tail != head; tail++, n++) {
			struct utrace_abi_event ev;

			/*
			 * The records were just written by the target's thread on
			 * the other core: their lines come over one by one unless
			 * asked for ahead (a record is 80 bytes: 8 ahead is 10
			 * lines in flight); most of a drain's time was these misses
			 */
			__builtin_prefetch(&ring[(tail + 8) & mask]);
			memcpy(&ev, &ring[tail & mask], sizeof(ev));
			if (!record_ok(h, &ev)) {
				corrupt(h,
					"thread slot %u: a record of kind %u for probe %u (ext %u)",
					i, ev.kind, ev.probe, ev.ext);
				break;
			}
			if (fn)
				fn(&ev, data);
		}
		h->tails[i] = tail;
		__atomic_store_n(&t->tail, tail, __ATOMIC_RELEASE); /* the slots may be reused */
	}
	return n;
}
