/* SPDX-License-Identifier: MIT */
/*
 * harness.h - a tiny test harness. Each TEST() runs in a fork()ed child so
 * a crash fails one test, not the run. Output is TAP (meson reads it) and
 * ends with the plain line "N passed, N failed, N skipped".
 *
 *   TEST(maps_parse) { CHECK(x == 1); CHECK_EQ(a, b); if (!ok) SKIP("no foo"); }
 *
 * Exit codes inside a test: 0 pass, 77 skip, anything else (or a signal)
 * fail. Run some tests with: ./test-foo NAME [NAME...]. After each test a
 * comment line gives its wall time: "# time NAME 1.23 s".
 */
#ifndef __UTRACE_HARNESS_H
#define __UTRACE_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*harness_fn_t)(void);

void harness_register(const char *name, harness_fn_t fn, int timeout_sec, bool alone);
void harness_set_jobs(int jobs);
__attribute__((noreturn, format(printf, 3, 4))) void harness_fail(const char *file, int line,
								  const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2))) void harness_skip(const char *fmt, ...);
/* Log a note (TAP comment) from inside a test. */
__attribute__((format(printf, 1, 2))) void harness_note(const char *fmt, ...);

#define TEST_REGISTER(name, secs, alone)                                                           \
	static void test_##name(void);                                                             \
	__attribute__((constructor)) static void register_##name(void)                             \
	{                                                                                          \
		harness_register(#name, test_##name, secs, alone);                                 \
	}                                                                                          \
	static void test_##name(void)

#define TEST_TIMEOUT(name, secs) TEST_REGISTER(name, secs, false)

/*
 * A test that runs with no other test of its program at the same time
 * (see HARNESS_JOBS): one whose effect reaches other processes (a kernel
 * uprobe on a shared file), or that measures how long something takes.
 */
#define TEST_ALONE(name, secs) TEST_REGISTER(name, secs, true)

/*
 * HARNESS_JOBS(n): up to @n tests of this program run at the same time,
 * each in its own process as always (their TAP lines come out whole, in
 * the order they finish). For programs whose tests mostly wait for their
 * targets; each test must then use its own targets and files. The
 * environment's UTRACE_TEST_JOBS overrides it (1: one after the other).
 */
#define HARNESS_JOBS(n)                                                                            \
	__attribute__((constructor)) static void harness_jobs_decl(void)                           \
	{                                                                                          \
		harness_set_jobs(n);                                                               \
	}

#define TEST(name) TEST_TIMEOUT(name, 60)

#define CHECK(expr)                                                                                \
	do {                                                                                       \
		if (!(expr))                                                                       \
			harness_fail(__FILE__, __LINE__, "%s", #expr);                             \
	} while (0)

#define CHECK_MSG(expr, fmt, ...)                                                                  \
	do {                                                                                       \
		if (!(expr))                                                                       \
			harness_fail(__FILE__, __LINE__, "%s: " fmt, #expr, ##__VA_ARGS__);        \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long __a = (long long)(a), __b = (long long)(b);                              \
		if (__a != __b)                                                                    \
			harness_fail(__FILE__, __LINE__, "%s == %s (%lld != %lld)", #a, #b, __a,   \
				     __b);                                                         \
	} while (0)

#define CHECK_STREQ(a, b)                                                                          \
	do {                                                                                       \
		const char *__a = (a), *__b = (b);                                                 \
		if (!__a || !__b || strcmp(__a, __b))                                              \
			harness_fail(__FILE__, __LINE__, "%s == %s (\"%s\" != \"%s\")", #a, #b,    \
				     __a ? __a : "(null)", __b ? __b : "(null)");                  \
	} while (0)

#define CHECK_MEMEQ(a, b, n)                                                                       \
	do {                                                                                       \
		if (memcmp((a), (b), (n)))                                                         \
			harness_fail(__FILE__, __LINE__, "memcmp(%s, %s, %s) == 0", #a, #b, #n);   \
	} while (0)

#define SKIP(...) harness_skip(__VA_ARGS__)

/* Helpers for tests that run programs. */

/*
 * harness_run - run argv (argv[0] searched in PATH), capture stdout and
 * stderr (each NUL-terminated, malloc'ed; either pointer may be NULL to
 * discard), wait at most timeout_sec. Returns the exit status, 128+signal if
 * killed, or -1 if it could not be run or timed out.
 */
int harness_run(char *const argv[], char **out, char **err, int timeout_sec);

/*
 * The size of a stress loop: @normal in the normal suite (scripts/check),
 * @slow when UTRACE_SLOW=1 (the slow suite's runs of the same test).
 */
long harness_size(long normal, long slow);

/* Path of a built program next to the test binary's build tree (env UTRACE_BUILD_DIR). */
const char *harness_build_path(const char *rel);

#endif /* __UTRACE_HARNESS_H */
