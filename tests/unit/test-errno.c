/* SPDX-License-Identifier: MIT */
/* test-errno.c - utrace_strerror() and the logging callback. */
#include <errno.h>

#include "utrace/utrace.h"
#include "harness.h"
#include "log.h"

TEST(strerror_errno)
{
	char buf[128];

	CHECK_EQ(utrace_strerror(-ENOENT, buf, sizeof(buf)), 0);
	CHECK_STREQ(buf, "No such file or directory");
	CHECK_EQ(utrace_strerror(ESRCH, buf, sizeof(buf)), 0);
	CHECK_STREQ(buf, "No such process");
}

TEST(strerror_utrace)
{
	char buf[128];
	int e;

	for (e = __UTRACE_ERRNO__START; e < __UTRACE_ERRNO__END; e++) {
		CHECK_EQ(utrace_strerror(-e, buf, sizeof(buf)), 0);
		CHECK(strlen(buf) > 5);
	}
	CHECK_EQ(utrace_strerror(-UTRACE_ERRNO__SPEC, buf, sizeof(buf)), 0);
	CHECK_STREQ(buf, "Malformed probe spec");
}

TEST(strerror_bad)
{
	char buf[8];

	CHECK_EQ(utrace_strerror(-99999, buf, sizeof(buf)), -ERANGE);
	CHECK_EQ(utrace_strerror(-ENOENT, buf, sizeof(buf)), -ERANGE);
	CHECK_EQ(utrace_strerror(-ENOENT, NULL, 0), -EINVAL);
}

static int seen;
static int count_print(enum utrace_print_level level, const char *fmt, va_list ap)
{
	seen++;
	return 0;
}

TEST(print_callback)
{
	utrace_print_fn_t old = utrace_set_print(count_print);

	errno = 42;
	pr_warn("x %d\n", 1);
	CHECK_EQ(errno, 42); /* logging preserves errno */
	CHECK_EQ(seen, 1);
	CHECK(utrace_set_print(NULL) == count_print);
	pr_warn("silenced\n");
	CHECK_EQ(seen, 1);
	utrace_set_print(old);
}
