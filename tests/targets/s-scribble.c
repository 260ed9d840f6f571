/* SPDX-License-Identifier: MIT */
/*
 * s-scribble.c - a hostile target: it finds the agent's arena in its own
 * address space and overwrites it, to check that the host (utrace, maybe
 * running as root) treats the arena as untrusted input.
 *
 *   s-scribble MODE [SECONDS]
 *
 * It calls scribble_work() in a loop, prints "ready PID" once the arena is
 * mapped (launch: preloaded; attach: injected), waits 300 ms for the probes
 * to be armed and then, by MODE:
 *   header   the layout fields (offsets, sizes, counts) point far outside
 *   ring     every thread slot's ring head runs 2^40 records ahead
 *   records  records with an out-of-range probe id and stack count
 *   stackdata an entry with -k's copy (ABI 12) whose STACKDATA record claims
 *            more bytes than a record holds, after REGS records of garbage
 *   fork     a fork announcement naming pid 1 and its fd 0
 *   random   random bytes over the whole arena, again every millisecond
 * It goes on calling scribble_work() for SECONDS (default 1) and exits 0
 * with "done calls=N" (the agent, whose own layout is private, survives
 * every mode but random).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"

__attribute__((noinline)) int scribble_work(int i)
{
	__asm__ volatile("" ::: "memory");
	return i * 3 + 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The arena's mapping in /proc/self/maps: its start and size, or 0. */
static char *find_arena(size_t *size)
{
	char line[512];
	unsigned long lo, hi;
	FILE *f = fopen("/proc/self/maps", "re");
	char *r = NULL;

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "utrace-arena") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
		    hi - lo >= UTRACE_ABI_PAGE &&
		    ((struct utrace_arena_hdr *)lo)->magic == UTRACE_ABI_MAGIC) {
			r = (char *)lo;
			*size = hi - lo;
		}
	fclose(f);
	return r;
}

static uint64_t rnd = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return rnd;
}

static void scribble(const char *mode, char *a, size_t size)
{
	struct utrace_arena_hdr *h = (void *)a, lay = *h; /* the offsets, while they are true */
	uint32_t i;

	if (!strcmp(mode, "header")) {
		h->threads_off = 1ull << 44;
		h->probes_off = 1ull << 45;
		h->rings_off = 1ull << 46;
		h->thread_stride = 1ull << 40;
		h->arena_size = 1ull << 47;
		h->max_threads = h->max_probes = 1u << 30;
		h->ring_records = 3;
		h->nr_threads = ~0ull;
		h->nr_xol_prev = ~0u;
	} else if (!strcmp(mode, "ring")) {
		for (i = 0; i < lay.max_threads; i++) {
			struct utrace_abi_thread *t = utrace_abi_thread(a, i);

			t->head = t->tail + (1ull << 40);
		}
		h->nr_threads = lay.max_threads;
	} else if (!strcmp(mode, "records")) {
		struct utrace_abi_thread *t = utrace_abi_thread(a, 0);
		struct utrace_abi_event *ring = utrace_abi_ring(a, 0);
		uint64_t head = t->tail;

		for (i = 0; i < 4; i++) {
			struct utrace_abi_event *e = &ring[(head + i) & (lay.ring_records - 1)];

			memset(e, 0xff, sizeof(*e));
			e->kind = i & 1 ? UTRACE_EV_MODULE : UTRACE_EV_ENTRY;
			e->ext = 1000000;
		}
		if (!h->nr_threads)
			h->nr_threads = 1;
		__atomic_store_n(&t->head, head + 4, __ATOMIC_RELEASE);
	} else if (!strcmp(mode, "stackdata")) {
		struct utrace_abi_thread *t = utrace_abi_thread(a, 0);
		struct utrace_abi_event *ring = utrace_abi_ring(a, 0);
		uint64_t head = t->tail;

		for (i = 0; i < 4; i++) {
			struct utrace_abi_event *e = &ring[(head + i) & (lay.ring_records - 1)];

			memset(e, 0xff, sizeof(*e));
			e->probe = 0;
			e->kind = i == 0 ? UTRACE_EV_ENTRY :
				  i < 3	 ? UTRACE_EV_REGS :
					   UTRACE_EV_STACKDATA;
			e->ext = i == 0 ? 3 : i < 3 ? UTRACE_ABI_ARGS : 4096;
		}
		if (!h->nr_threads)
			h->nr_threads = 1;
		__atomic_store_n(&t->head, head + 4, __ATOMIC_RELEASE);
	} else if (!strcmp(mode, "fork")) {
		uint32_t k = h->fork_head;

		h->forks[k % UTRACE_ABI_FORKS].pid = 1;
		h->forks[k % UTRACE_ABI_FORKS].fd = 0;
		__atomic_store_n(&h->forks[k % UTRACE_ABI_FORKS].seq, k + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&h->fork_head, k + 1, __ATOMIC_RELEASE);
	} else if (!strcmp(mode, "random")) {
		for (i = 0; i + 8 <= size; i += 8) {
			uint64_t v = xorshift();

			memcpy(a + i, &v, 8);
		}
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "header";
	uint64_t secs = argc > 2 ? strtoull(argv[2], NULL, 0) : 1, t0, end;
	long calls = 0, sum = 0;
	size_t size = 0;
	char *a = NULL;
	int i = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	for (t0 = now_ms(); !a && now_ms() - t0 < 20000; i++) {
		sum += scribble_work(i);
		calls++;
		if (!(i % 1000)) {
			a = find_arena(&size);
			if (!a)
				usleep(1000);
		}
	}
	if (!a) {
		printf("no arena\n");
		return 3;
	}
	for (t0 = now_ms(); now_ms() - t0 < 300; calls++)
		sum += scribble_work(i++);
	scribble(mode, a, size);
	for (end = now_ms() + secs * 1000; now_ms() < end; calls++) {
		sum += scribble_work(i++);
		if (!strcmp(mode, "random") && !(calls % 20000))
			scribble(mode, a, size);
	}
	printf("done calls=%ld sum=%ld\n", calls, sum);
	return 0;
}
