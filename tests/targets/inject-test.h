/* SPDX-License-Identifier: MIT */
/* inject-test.h - the marker libinject-test.so writes into the arena. */
#ifndef __UTRACE_INJECT_TEST_H
#define __UTRACE_INJECT_TEST_H

#include <stdint.h>

#define INJECT_TEST_MAGIC 0x7574726163652121ULL /* "utrace!!" */
#define INJECT_TEST_COOKIE 0xc00c1eULL /* written by the tracer first */

struct inject_test_marker {
	uint64_t magic; /* written last */
	uint64_t host_cookie; /* written by the tracer's prepare_arena() */
	uint64_t flags;
	uint64_t arg;
	uint64_t init_calls;
	uint64_t ctor_calls;
	uint64_t arena_size;
	int32_t pid;
	int32_t tid;
	char text[64];
	/* inject_test_init_thread(): the thread it started */
	uint64_t thread_sigblk; /* its blocked signals (bit n-1 = signal n) */
	uint64_t thread_ticks; /* incremented while it runs */
	int32_t thread_tid;
	int32_t pad;
	/* inject_test_init_sleep(): its argument, once its sleep is over */
	uint64_t late_done;
};

#endif /* __UTRACE_INJECT_TEST_H */
