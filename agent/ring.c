/* SPDX-License-Identifier: MIT */
/*
 * ring.c - per-thread event rings in the shared arena, and the clock.
 *
 * Each thread slot has one single-producer (the thread) single-consumer
 * (the host) ring of fixed-size struct utrace_abi_event records. The
 * producer owns @head, the consumer @tail (separate cache lines). Reserve:
 * if head - tail == ring_records the ring is full and the record is counted
 * in @drops (the host reports drops); otherwise fill the record and
 * store-release head + 1 (pairs with the host's load-acquire of head before
 * it reads records; the host's store-release of tail pairs with our
 * load-acquire of tail, so we never overwrite a record being read).
 *
 * The clock: CLOCK_MONOTONIC costs a syscall-class price on some VMs (460 ns
 * on the development machine, where rdtsc itself traps to ~80 ns), so hits
 * read the TSC and convert with a calibration the control thread keeps in the
 * arena header: ns = mono0 + ((tsc - tsc0) * mult >> 32). Before the first
 * calibration, hits fall back to clock_gettime().
 *
 * Runs in the probed thread; async-signal-safe; no locks.
 */
#include <time.h>
#include <x86intrin.h>

#include "agent-internal.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Private copy of the calibration (the arena is written by our control thread only). */
static struct {
	uint64_t tsc0, mono0, mult;
} clk;

/** ring_now_ns - CLOCK_MONOTONIC nanoseconds, from the TSC when calibrated. */
uint64_t ring_now_ns(void)
{
	uint64_t mult = __atomic_load_n(&clk.mult, __ATOMIC_ACQUIRE);

	if (__builtin_expect(mult != 0, 1)) {
		uint64_t d = __rdtsc() - clk.tsc0;

		return clk.mono0 + (uint64_t)(((unsigned __int128)d * mult) >> 32);
	}
	return mono_ns();
}

/**
 * ring_calibrate - refine the TSC calibration. Control thread only: the
 * first call takes the reference pair, later ones (50 ms apart or more)
 * publish the multiplier. Keeps mono0/tsc0 fixed so that times stay
 * monotonic within the calibration error.
 */
void ring_calibrate(void)
{
	static uint64_t t0, m0;
	uint64_t t, m, mult;

	if (!t0) {
		m0 = mono_ns();
		t0 = __rdtsc();
		return;
	}
	m = mono_ns();
	t = __rdtsc();
	if (m - m0 < 50000000ull || t <= t0)
		return;
	mult = (uint64_t)((((unsigned __int128)(m - m0)) << 32) / (t - t0));
	if (!__atomic_load_n(&clk.mult, __ATOMIC_ACQUIRE)) {
		clk.tsc0 = t0;
		clk.mono0 = m0;
	}
	__atomic_store_n(&clk.mult, mult, __ATOMIC_RELEASE);
	if (agent_hdr) {
		agent_hdr->tsc0 = clk.tsc0;
		agent_hdr->mono0 = clk.mono0;
		__atomic_store_n(&agent_hdr->mult, mult, __ATOMIC_RELEASE);
	}
}

/**
 * ring_emit - append one record to the thread's ring, or count a drop
 * @t: the thread (guard held)
 * @probe: probe id; @kind: enum utrace_event_kind
 * @ts, @dur: times in ns
 * @args, @nargs: up to UTRACE_ABI_ARGS values
 */
void ring_emit(struct utrace_task *t, uint32_t probe, uint16_t kind, uint64_t ts, uint64_t dur,
	       const uint64_t *args, unsigned int nargs)
{
	struct utrace_abi_thread *s = t->slot;
	uint64_t head, tail, n;
	struct utrace_abi_event *e;
	unsigned int i;

	if (!s)
		return;
	n = agent_layout.ring_records;
	head = s->head;
	tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
	if (head - tail >= n) {
		__atomic_store_n(&s->drops, s->drops + 1, __ATOMIC_RELAXED);
		return;
	}
	e = &t->ring[head & (n - 1)];
	e->ts = ts;
	e->dur = dur;
	e->tid = t->tid;
	e->probe = probe;
	e->kind = kind;
	e->depth = (uint16_t)t->depth;
	e->ext = 0;
	for (i = 0; i < UTRACE_ABI_ARGS; i++)
		e->args[i] = i < nargs ? args[i] : 0;
	__atomic_store_n(&s->head, head + 1, __ATOMIC_RELEASE);
}

/**
 * ring_emit_group - one event and the caller stack that goes with it: a
 * @kind record (ENTRY or INJECT) with its 6 @args, then UTRACE_EV_STACK
 * records of up to 6 return addresses each. Space for the whole group is
 * checked first and head is published once, so the host sees all of it or
 * none (a full ring drops the group and counts one drop: one event lost).
 * @t: the thread (guard held); @pcs, @npcs: from stack_walk()
 */
void ring_emit_group(struct utrace_task *t, uint32_t probe, uint16_t kind, uint64_t ts,
		     const uint64_t *args, const uint64_t *pcs, unsigned int npcs)
{
	struct utrace_abi_thread *s = t->slot;
	unsigned int nst = (npcs + UTRACE_ABI_ARGS - 1) / UTRACE_ABI_ARGS, r, i;
	uint64_t head, tail, n;

	if (!s)
		return;
	n = agent_layout.ring_records;
	head = s->head;
	tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
	if (head - tail + 1 + nst > n) {
		__atomic_store_n(&s->drops, s->drops + 1, __ATOMIC_RELAXED);
		return;
	}
	for (r = 0; r <= nst; r++) {
		struct utrace_abi_event *e = &t->ring[(head + r) & (n - 1)];
		const uint64_t *src = r ? pcs + (r - 1) * UTRACE_ABI_ARGS : args;
		unsigned int cnt = UTRACE_ABI_ARGS;

		if (r && npcs - (r - 1) * UTRACE_ABI_ARGS < UTRACE_ABI_ARGS)
			cnt = npcs - (r - 1) * UTRACE_ABI_ARGS;
		e->ts = ts;
		e->dur = 0;
		e->tid = t->tid;
		e->probe = probe;
		e->kind = r ? UTRACE_EV_STACK : kind;
		e->depth = (uint16_t)t->depth;
		e->ext = r ? cnt : nst;
		for (i = 0; i < UTRACE_ABI_ARGS; i++)
			e->args[i] = i < cnt ? src[i] : 0;
	}
	__atomic_store_n(&s->head, head + 1 + nst, __ATOMIC_RELEASE);
}
