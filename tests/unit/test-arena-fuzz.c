/* SPDX-License-Identifier: MIT */
/*
 * test-arena-fuzz.c - fuzz/arena-fuzzer.c's checks on inputs from a fixed
 * seed, so that every build (and the ASan+UBSan one in .ci/run) runs them;
 * fuzz/run.sh runs the same target under libFuzzer. A broken contract
 * aborts the test. Suite 'unit'.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "abi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t seed = 0x2545f4914f6cdd1dull;

static uint64_t next(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* Random headers: bytes over the arena's first page, mostly zeros. */
TEST(random_headers_20000)
{
	uint8_t buf[1 + 4096];
	int i, j;

	for (i = 0; i < 20000; i++) {
		size_t len = 1 + next() % 4096;

		buf[0] = 0;
		for (j = 1; j < (int)len; j++)
			buf[j] = next() % 4 ? (uint8_t)next() : 0;
		CHECK_EQ(LLVMFuzzerTestOneInput(buf, len), 0);
	}
}

/* The true header with one field changed at a time, every field. */
TEST(each_header_word_changed)
{
	struct utrace_arena_hdr hd = { .max_probes = 8, .max_threads = 4, .ring_records = 16 };
	uint8_t buf[1 + sizeof(hd)];
	size_t off;

	utrace_abi_layout(&hd);
	for (off = 0; off + 8 <= sizeof(hd); off += 4) {
		uint64_t vals[] = { 0, 1, ~0ull, 1ull << 40, 0x7fffffff, hd.arena_size };
		size_t v;

		for (v = 0; v < sizeof(vals) / sizeof(vals[0]); v++) {
			buf[0] = 0;
			memcpy(buf + 1, &hd, sizeof(hd));
			memcpy(buf + 1 + off, &vals[v], 8);
			CHECK_EQ(LLVMFuzzerTestOneInput(buf, sizeof(buf)), 0);
		}
	}
}

/* Patches all over a true arena: thread slots, ring heads, records. */
TEST(random_patches_20000)
{
	uint8_t buf[1 + 10 * 16];
	int i, j;

	for (i = 0; i < 20000; i++) {
		int np = 1 + (int)(next() % 16);

		buf[0] = 1;
		for (j = 0; j < np; j++) {
			uint64_t v = next();

			switch (next() % 4) {
			case 0: /* small numbers: indexes, counts, kinds */
				v %= 40;
				break;
			case 1: /* near a ring's size */
				v = 14 + v % 6;
				break;
			default:
				break;
			}
			buf[1 + 10 * j] = (uint8_t)next();
			buf[2 + 10 * j] = (uint8_t)(next() % 12); /* the arena is ~24 KiB */
			memcpy(buf + 3 + 10 * j, &v, 8);
		}
		CHECK_EQ(LLVMFuzzerTestOneInput(buf, (size_t)(1 + 10 * np)), 0);
	}
}

/* A string field the target filled to the end, with no NUL (libFuzzer's first find). */
TEST(cmd_str_without_nul)
{
	struct utrace_arena_hdr hd = { .max_probes = 8, .max_threads = 4, .ring_records = 16 };
	uint8_t buf[1 + sizeof(hd)];

	utrace_abi_layout(&hd);
	memset(hd.cmd_str, 'A', sizeof(hd.cmd_str));
	buf[0] = 0;
	memcpy(buf + 1, &hd, sizeof(hd));
	CHECK_EQ(LLVMFuzzerTestOneInput(buf, sizeof(buf)), 0);
}
