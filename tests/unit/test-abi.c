/* SPDX-License-Identifier: MIT */
/*
 * test-abi.c - the lib<->agent wire contract (common/abi.h): layout
 * arithmetic both sides share, record and header sizes, log2 buckets.
 */
#include <stddef.h>

#include "abi.h"
#include "harness.h"

TEST(layout_sections_are_ordered_and_aligned)
{
	struct utrace_arena_hdr h = { .max_probes = 100, .max_threads = 17, .ring_records = 256 };

	utrace_abi_layout(&h);
	CHECK_EQ(h.magic, UTRACE_ABI_MAGIC);
	CHECK_EQ(h.version, UTRACE_ABI_VERSION);
	CHECK_EQ(h.hdr_size, 4096);
	CHECK_EQ(h.probes_off, 4096);
	CHECK_EQ(h.threads_off % 4096, 0);
	CHECK_EQ(h.rings_off % 4096, 0);
	CHECK_EQ(h.arena_size % 4096, 0);
	CHECK(h.threads_off >= h.probes_off + 100 * sizeof(struct utrace_abi_probe));
	CHECK(h.thread_stride >= sizeof(struct utrace_abi_thread) + 100 * 8);
	CHECK_EQ(h.thread_stride % 64, 0);
	CHECK(h.rings_off >= h.threads_off + 17 * h.thread_stride);
	CHECK(h.arena_size >= h.rings_off + 17ull * 256 * sizeof(struct utrace_abi_event));
}

TEST(fixed_sizes)
{
	CHECK_EQ(sizeof(struct utrace_abi_event), 80);
	CHECK_EQ(sizeof(struct utrace_abi_thread), 192);
	CHECK_EQ(offsetof(struct utrace_abi_thread, head), 64);
	CHECK_EQ(offsetof(struct utrace_abi_thread, tail), 128);
	CHECK_EQ(offsetof(struct utrace_arena_hdr, cmd_seq), 96);
	CHECK_EQ(offsetof(struct utrace_abi_probe, code), 64);
	CHECK_EQ(sizeof(struct utrace_abi_probe), 920);
	CHECK_EQ(sizeof(struct utrace_abi_cell), 560);
	CHECK(UTRACE_TRAMP_XOL_OFF + UTRACE_ABI_MAX_CODE <= UTRACE_TRAMP_SLOT);
}

TEST(log2_buckets)
{
	uint64_t lo_ms, hi_ms;

	CHECK_EQ(utrace_abi_log2_bucket(0), 0);
	CHECK_EQ(utrace_abi_log2_bucket(1), 1);
	CHECK_EQ(utrace_abi_log2_bucket(2), 2);
	CHECK_EQ(utrace_abi_log2_bucket(3), 2);
	CHECK_EQ(utrace_abi_log2_bucket(4), 3);
	CHECK_EQ(utrace_abi_log2_bucket(1000), 10);
	CHECK_EQ(utrace_abi_log2_bucket(~0ull), UTRACE_ABI_HIST_BUCKETS - 1);
	/* the histogram's buckets: every value inside its bucket's edges, round edges */
	{
		static const uint64_t v[] = { 0,
					      1,
					      2,
					      511,
					      512,
					      999,
					      1000,
					      1023,
					      1024,
					      999999,
					      1000000,
					      1048576,
					      1999999,
					      2000000,
					      999999999,
					      1000000000,
					      3600000000000ull,
					      ~0ull };
		unsigned int i;

		for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			unsigned int b = utrace_abi_hist_bucket(v[i]);
			uint64_t lo, hi;

			utrace_abi_hist_range(b, &lo, &hi);
			CHECK_MSG(v[i] >= lo && (v[i] < hi || hi == UINT64_MAX),
				  "%llu in bucket %u [%llu, %llu)", (unsigned long long)v[i], b,
				  (unsigned long long)lo, (unsigned long long)hi);
		}
		utrace_abi_hist_range(utrace_abi_hist_bucket(1000000), &lo_ms, &hi_ms);
		CHECK_MSG(lo_ms == 1000000 && hi_ms == 2000000, "1 ms in [%llu, %llu)",
			  (unsigned long long)lo_ms, (unsigned long long)hi_ms);
		utrace_abi_hist_range(utrace_abi_hist_bucket(999999), &lo_ms, &hi_ms);
		CHECK_MSG(lo_ms == 512000 && hi_ms == 1000000, "999999 ns in [%llu, %llu)",
			  (unsigned long long)lo_ms, (unsigned long long)hi_ms);
	}
}

TEST(accessors_follow_the_layout)
{
	static uint64_t arena[(4096 * 8) / 8];
	struct utrace_arena_hdr *h = (struct utrace_arena_hdr *)arena;

	h->max_probes = 2;
	h->max_threads = 2;
	h->ring_records = 4;
	utrace_abi_layout(h);
	CHECK((char *)utrace_abi_probe(arena, 1) == (char *)arena + 4096 + 920);
	CHECK((char *)utrace_abi_thread(arena, 1) ==
	      (char *)arena + h->threads_off + h->thread_stride);
	CHECK((char *)utrace_abi_hits(utrace_abi_thread(arena, 0)) ==
	      (char *)arena + h->threads_off + 192);
	/* the cells after the 2 hit counters, 64-byte aligned; all of them in the stride */
	CHECK((char *)utrace_abi_cells(utrace_abi_thread(arena, 0), 2) ==
	      (char *)arena + h->threads_off + 256);
	CHECK_EQ(h->thread_stride, 256 + UTRACE_ABI_CELLS * 560);
	CHECK((char *)utrace_abi_ring(arena, 1) == (char *)arena + h->rings_off + 4 * 80);
}
