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
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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

/*
 * Fill record @e of thread @t: the header, and the payload from @args
 * (@nargs values, zeros after them), or the payload left as it is when
 * @args is NULL (a string copied there already). Probed thread.
 */
static inline void rec_fill(struct utrace_abi_event *e, const struct utrace_task *t, uint32_t probe,
			    uint16_t kind, uint64_t ts, uint64_t dur, uint32_t ext,
			    const uint64_t *args, unsigned int nargs)
{
	unsigned int i;

	e->ts = ts;
	e->dur = dur;
	e->tid = t->tid;
	e->probe = probe;
	e->kind = kind;
	e->depth = (uint16_t)t->depth;
	e->ext = ext;
	for (i = 0; args && i < UTRACE_ABI_ARGS; i++)
		e->args[i] = i < nargs ? args[i] : 0;
}

/*
 * Lossless recording (UTRACE_ARENA_F_RING_WAIT): the ring of @s lacks
 * room for @need records; wait until the host has drained enough. A
 * yield first (the host on the other core needs microseconds), then
 * 50 us sleeps. The wait gives up -- the caller drops and counts, as
 * without the flag -- when the session ends (dormant agent), when the
 * host process is gone (checked every 10 ms), or when the tail has not
 * moved for UTRACE_RING_WAIT_STALL_MS; a ring found stalled so is not
 * waited on again until its tail moves. So a thread can wait, but the
 * target runs on whatever its tracer does. Probed thread, guard held;
 * raw system calls only (a hit may run in a signal handler).
 * Return: true when there is room.
 */
static bool ring_wait_room(struct utrace_abi_thread *s, uint64_t head, uint64_t need, uint64_t n)
{
	static volatile int host_dead;
	static struct utrace_abi_thread *volatile stalled_slot;
	static volatile uint64_t stalled_tail;
	uint64_t tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE), last = tail;
	uint64_t moved_ns = 0, checked_ns = 0, now;
	unsigned int spins = 0;
	struct timespec ts = { 0, 50000 };

	if (!(agent_layout.flags & UTRACE_ARENA_F_RING_WAIT) || host_dead || need > n)
		return false;
	if (stalled_slot == s && stalled_tail == tail)
		return false;
	while (head - tail + need > n) {
		if (!agent_active)
			return false;
		if (spins < 16) {
			spins++;
			raw_syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
			tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
			continue;
		}
		/* the clock (the TSC) only once sleeping: the yields cost less */
		raw_syscall6(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
		now = ring_now_ns();
		if (!moved_ns)
			moved_ns = checked_ns = now;
		if (now - checked_ns >= 10000000ull) {
			checked_ns = now;
			if (!agent_host_alive()) {
				host_dead = 1;
				return false;
			}
		}
		tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
		if (tail != last) {
			last = tail;
			moved_ns = now;
		} else if (now - moved_ns >= UTRACE_RING_WAIT_STALL_MS * 1000000ull) {
			stalled_tail = tail;
			stalled_slot = s;
			return false;
		}
	}
	return true;
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

	if (!s)
		return;
	n = agent_layout.ring_records;
	head = s->head;
	tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
	if (head - tail >= n && !ring_wait_room(s, head, 1, n)) {
		__atomic_store_n(&s->drops, s->drops + 1, __ATOMIC_RELAXED);
		return;
	}
	e = &t->ring[head & (n - 1)];
	rec_fill(e, t, probe, kind, ts, dur, 0, args, nargs);
	__atomic_store_n(&s->head, head + 1, __ATOMIC_RELEASE);
}

/* ---- strings copied at the hit ------------------------------------------ */

int ring_self_pid;
static int str_ok; /* strings may be copied: no seccomp filter in this process */

long raw_getpid(void)
{
	return raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

/*
 * ring_str_init - decide once (agent start, control thread) whether hits
 * may copy strings. The copy is one process_vm_readv() of our own memory:
 * the only fault-safe read there is without a SIGSEGV handler of ours (a
 * bad pointer gives EFAULT, never a crash). A process under a seccomp
 * filter (a sandbox) could have it refused, or be killed for it: there
 * the host reads the strings when it drains, as before (documented).
 */
void ring_str_init(void)
{
	ring_self_pid = (int)raw_getpid();
	str_ok = raw_syscall6(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0, 0) == 0;
}

/* Number of records a string of up to @max bytes may take. */
static unsigned int str_recs(unsigned int max)
{
	return (max + UTRACE_ABI_STR_CHUNK - 1) / UTRACE_ABI_STR_CHUNK;
}

/*
 * Copy the string at @addr (value @index of the event) into the ring of
 * @t from record @first on (reserved by the caller: str_recs(@max) of
 * them), straight into the records' payloads: one process_vm_readv() with
 * one local iovec per record. Probed thread, guard held; one system call,
 * no allocation. Return: records used (>= 1: an unreadable string is one
 * empty record with UTRACE_STR_FAULT).
 */
static unsigned int copy_str(struct utrace_task *t, uint64_t first, uint64_t addr,
			     unsigned int index, unsigned int max,
			     const struct utrace_abi_event *hd)
{
	uint64_t mask = agent_layout.ring_records - 1;
	struct iovec local[UTRACE_ABI_STR_MAX / UTRACE_ABI_STR_CHUNK];
	/*
	 * One remote iovec per page: a partial transfer never splits an
	 * iovec, so a string that ends just before an unmapped page is still
	 * read up to there.
	 */
	struct iovec remote[UTRACE_ABI_STR_MAX / 4096 + 2];
	unsigned int nrec = str_recs(max), k, used = 0, end = 0, nr = 0, off = 0;
	long got, total;

	for (k = 0; k < nrec; k++) {
		local[k].iov_base = t->ring[(first + k) & mask].args;
		local[k].iov_len =
			k + 1 < nrec ? UTRACE_ABI_STR_CHUNK : max - k * UTRACE_ABI_STR_CHUNK;
	}
	while (off < max) {
		unsigned int room = 4096 - (unsigned int)((addr + off) & 4095);

		if (room > max - off)
			room = max - off;
		remote[nr].iov_base = (void *)(addr + off);
		remote[nr++].iov_len = room;
		off += room;
	}
	got = raw_syscall6(SYS_process_vm_readv, ring_self_pid, (long)local, nrec, (long)remote, nr,
			   0);
	if (got < 0)
		got = 0;
	total = got;
	/* where the string ends: its NUL, the end of readable memory, or @max */
	for (k = 0; k < nrec; k++) {
		struct utrace_abi_event *e = &t->ring[(first + k) & mask];
		const uint8_t *b = (const uint8_t *)e->args; /* the copy's bytes: kept */
		unsigned int valid = (unsigned long)got < local[k].iov_len ?
					     (unsigned int)got :
					     (unsigned int)local[k].iov_len;
		unsigned int n = 0;

		while (n < valid && b[n])
			n++;
		rec_fill(e, t, hd->probe, UTRACE_EV_STR, hd->ts, 0, n | index << 8, NULL, 0);
		used = k + 1;
		if (n < valid) {
			end = UTRACE_STR_END;
			break;
		}
		got -= valid;
		if (!got) {
			/* all read, no NUL: cut at @max, or memory ended before it */
			if (total < (long)max)
				end = UTRACE_STR_FAULT;
			break;
		}
	}
	if (end)
		t->ring[(first + used - 1) & mask].ext |= end;
	return used ? used : 1;
}

/*
 * @cnt bytes of stack into a record's payload: a whole chunk as six
 * 8-byte moves (utrace_memcpy() goes byte by byte: 4 KiB of it cost
 * microseconds), the last one byte by byte, never reading past @cnt (the
 * stack may end there).
 */
static inline void copy_chunk(uint64_t *dst, const uint8_t *src, uint64_t cnt)
{
	unsigned int i;

	if (cnt != UTRACE_ABI_DUMP_CHUNK) {
		utrace_memcpy(dst, src, cnt);
		return;
	}
	for (i = 0; i < UTRACE_ABI_ARGS; i++) {
		uint64_t w;

		__builtin_memcpy(&w, src + 8 * i, 8); /* one mov, rsp may be unaligned */
		dst[i] = w;
	}
}

/*
 * -k's copy (ABI 12) into the records from @at on (reserved by the
 * caller): the registers, then the @len bytes at rsp, straight from the
 * stack into the records' payloads. Those bytes are readable: stack_walk()
 * bounded them by the stack rsp is on. A return address that a return
 * probe hijacked (the trampoline's address in its slot) is put back, as
 * stack_walk() does, so the host's unwinder sees the real caller. Probed
 * thread, guard held; plain loads and stores, no call but utrace_memcpy().
 * Return: the index after the last record written.
 */
static uint64_t stack_copy(struct utrace_task *t, uint64_t at, uint32_t probe, uint64_t ts,
			   const struct ring_stack_copy *sc, uint64_t len)
{
	uint64_t mask = agent_layout.ring_records - 1, sp = sc->regs[1], off;
	unsigned int r, i;

	for (r = 0; r < UTRACE_ABI_REGS_RECS; r++) {
		unsigned int cnt = UTRACE_ABI_NR_REGS - r * UTRACE_ABI_ARGS;

		if (cnt > UTRACE_ABI_ARGS)
			cnt = UTRACE_ABI_ARGS;
		rec_fill(&t->ring[at++ & mask], t, probe, UTRACE_EV_REGS, ts, 0, cnt,
			 sc->regs + r * UTRACE_ABI_ARGS, cnt);
	}
	for (off = 0; off < len; off += UTRACE_ABI_DUMP_CHUNK) {
		struct utrace_abi_event *e = &t->ring[(at + off / UTRACE_ABI_DUMP_CHUNK) & mask];
		uint64_t cnt =
			len - off < UTRACE_ABI_DUMP_CHUNK ? len - off : UTRACE_ABI_DUMP_CHUNK;

		copy_chunk(e->args, (const uint8_t *)(sp + off), cnt);
		rec_fill(e, t, probe, UTRACE_EV_STACKDATA, ts, 0, (uint32_t)cnt, NULL, 0);
	}
	for (i = 0; t->ri && i < t->depth; i++) {
		uint64_t slot = t->ri[i].sp, ret = t->ri[i].orig_ret, tramp;
		uint8_t *b = (uint8_t *)&ret;
		unsigned int k;

		if (len < 8 || slot < sp || slot - sp > len - 8)
			continue;
		utrace_memcpy(&tramp, (const void *)slot, 8);
		if (tramp != (uint64_t)__utrace_agent_ret_tramp)
			continue;
		for (k = 0; k < 8; k++) { /* (the slot may straddle two records) */
			uint64_t o = slot - sp + k;

			((uint8_t *)t->ring[(at + o / UTRACE_ABI_DUMP_CHUNK) & mask]
				 .args)[o % UTRACE_ABI_DUMP_CHUNK] = b[k];
		}
	}
	return at + (len + UTRACE_ABI_DUMP_CHUNK - 1) / UTRACE_ABI_DUMP_CHUNK;
}

/**
 * ring_emit_group - one event and what goes with it: a @kind record
 * (ENTRY, INJECT or RETURN) with @nargs @args, then the strings of
 * @str_mask (bit i: args[i]; bit UTRACE_STR_RET: args[0], the return
 * value), up to @str_max bytes each, as UTRACE_EV_STR records, then
 * UTRACE_EV_STACK records of up to 6 return addresses each. Space for the
 * largest group is checked first and head is published once, so the host
 * sees all of it or none (a full ring drops the group and counts one drop:
 * one event lost). With @sc, -k's copy follows (ABI 12): REGS records,
 * then the stack's bytes as STACKDATA records (fewer of them if the ring
 * could never hold the group). The first record's ext counts the records
 * that follow.
 * @t: the thread (guard held); @pcs, @npcs: from stack_walk(); @sc: NULL
 *	or the registers and the readable length at rsp (dispatch.c)
 */
void ring_emit_group(struct utrace_task *t, uint32_t probe, uint16_t kind, uint64_t ts,
		     uint64_t dur, const uint64_t *args, unsigned int nargs, unsigned int str_mask,
		     unsigned int str_max, const uint64_t *pcs, unsigned int npcs,
		     const struct ring_stack_copy *sc)
{
	struct utrace_abi_thread *s = t->slot;
	unsigned int nst = (npcs + UTRACE_ABI_ARGS - 1) / UTRACE_ABI_ARGS, r, i, nstr = 0;
	uint64_t head, tail, n, mask, at, nreg = 0, ndump = 0, dlen = 0;
	struct utrace_abi_event *e0;

	if (!s)
		return;
	if (!str_ok || str_max == 0)
		str_mask = 0;
	if (str_max > UTRACE_ABI_STR_MAX)
		str_max = UTRACE_ABI_STR_MAX;
	for (i = 0; i <= UTRACE_STR_RET; i++)
		if ((str_mask & (1U << i)) && args[i == UTRACE_STR_RET ? 0 : i])
			nstr += str_recs(str_max);
	n = agent_layout.ring_records;
	mask = n - 1;
	if (sc && 1 + nstr + nst + UTRACE_ABI_REGS_RECS < n) {
		nreg = UTRACE_ABI_REGS_RECS;
		dlen = sc->len < UTRACE_ABI_STACK_DUMP_MAX ? sc->len : UTRACE_ABI_STACK_DUMP_MAX;
		ndump = (dlen + UTRACE_ABI_DUMP_CHUNK - 1) / UTRACE_ABI_DUMP_CHUNK;
		if (1 + nstr + nst + nreg + ndump > n) { /* a small ring: what it can hold */
			ndump = n - (1 + nstr + nst + nreg);
			dlen = ndump * UTRACE_ABI_DUMP_CHUNK;
		}
	}
	head = s->head;
	tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
	if (head - tail + 1 + nstr + nst + nreg + ndump > n &&
	    !ring_wait_room(s, head, 1 + nstr + nst + nreg + ndump, n)) {
		__atomic_store_n(&s->drops, s->drops + 1, __ATOMIC_RELAXED);
		return;
	}
	e0 = &t->ring[head & mask];
	rec_fill(e0, t, probe, kind, ts, dur, 0, args, nargs); /* ext: below */
	at = head + 1;
	for (i = 0; i <= UTRACE_STR_RET; i++) {
		uint64_t addr = args[i == UTRACE_STR_RET ? 0 : i];

		if ((str_mask & (1U << i)) && addr) /* NULL: the host shows NULL */
			at += copy_str(t, at, addr, i, str_max, e0);
	}
	for (r = 0; r < nst; r++) {
		struct utrace_abi_event *e = &t->ring[(at + r) & mask];
		const uint64_t *src = pcs + r * UTRACE_ABI_ARGS;
		unsigned int cnt = UTRACE_ABI_ARGS;

		if (npcs - r * UTRACE_ABI_ARGS < UTRACE_ABI_ARGS)
			cnt = npcs - r * UTRACE_ABI_ARGS;
		rec_fill(e, t, probe, UTRACE_EV_STACK, ts, 0, cnt, src, cnt);
	}
	at += nst;
	if (nreg)
		at = stack_copy(t, at, probe, ts, sc, dlen);
	e0->ext = (uint32_t)(at - head - 1);
	__atomic_store_n(&s->head, at, __ATOMIC_RELEASE);
}
