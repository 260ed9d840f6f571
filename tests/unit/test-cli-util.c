/* SPDX-License-Identifier: MIT */
/*
 * test-cli-util.c - the CLI's prototype table and argument formatting,
 * aggregation (-c, -H) and the Chrome trace writer, without tracing
 * anything: registers and target memory are faked.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "aggr.h"
#include "chrome.h"
#include "output.h"
#include "protos.h"

size_t protos_sorted(void);

/* fake target memory: one buffer at address 0x1000 */
static char mem[8192];
#define MEM_BASE 0x1000ULL

static ssize_t fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	if (addr < MEM_BASE || addr >= MEM_BASE + sizeof(mem))
		return -14; /* -EFAULT */
	if (addr + len > MEM_BASE + sizeof(mem))
		len = MEM_BASE + sizeof(mem) - addr;
	memcpy(buf, mem + (addr - MEM_BASE), len);
	return (ssize_t)len;
}

static char *render(const struct proto *p, struct proto_regs *r, int strsize, bool json)
{
	struct proto_vals vals;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int i;

	proto_format_args(p, r, strsize, &vals);
	for (i = 0; i < vals.nr; i++) {
		if (i)
			fputs(", ", f);
		if (json)
			proto_val_print_json(f, &vals.v[i]);
		else
			proto_val_print_text(f, &vals.v[i]);
	}
	proto_vals_clear(&vals);
	fclose(f);
	return buf;
}

TEST(protos_table_sorted)
{
	CHECK_EQ(protos_sorted(), 0);
	CHECK(proto_find("malloc"));
	CHECK_STREQ(proto_find("__libc_malloc")->name, "malloc");
	CHECK_STREQ(proto_find("open64")->name, "open");
	CHECK(!proto_find("no_such_function"));
	CHECK(!proto_find(NULL));
	CHECK_EQ(proto_unknown()->nargs, PROTO_UNKNOWN_ARGS);
}

TEST(protos_format)
{
	struct proto_regs r = { .read = fake_read };
	char *s;

	strcpy(mem, "hello\n\"world\"");
	r.args[0] = MEM_BASE;
	s = render(proto_find("strlen"), &r, 32, false);
	CHECK_STREQ(s, "\"hello\\n\\\"world\\\"\"");
	free(s);
	s = render(proto_find("strlen"), &r, 32, true);
	CHECK_STREQ(s, "\"hello\\n\\\"world\\\"\"");
	free(s);
	/* -S truncation */
	s = render(proto_find("strlen"), &r, 4, false);
	CHECK_STREQ(s, "\"hell\"...");
	free(s);
	/* malloc(32), free(NULL) */
	r.args[0] = 32;
	s = render(proto_find("malloc"), &r, 32, false);
	CHECK_STREQ(s, "32");
	free(s);
	r.args[0] = 0;
	s = render(proto_find("free"), &r, 32, false);
	CHECK_STREQ(s, "NULL");
	free(s);
	/* open: mode only with O_CREAT; openat's AT_FDCWD */
	r.args[0] = MEM_BASE;
	r.args[1] = O_RDONLY | O_CLOEXEC;
	r.args[2] = 0777;
	s = render(proto_find("open"), &r, 32, false);
	CHECK_STREQ(s, "\"hello\\n\\\"world\\\"\", O_RDONLY|O_CLOEXEC");
	free(s);
	r.args[0] = (uint64_t)(int64_t)AT_FDCWD;
	r.args[1] = MEM_BASE;
	r.args[2] = O_WRONLY | O_CREAT | O_TRUNC;
	r.args[3] = 0644;
	strcpy(mem, "/tmp/x");
	s = render(proto_find("openat"), &r, 32, false);
	CHECK_STREQ(s, "AT_FDCWD, \"/tmp/x\", O_WRONLY|O_CREAT|O_TRUNC, 0644");
	free(s);
	/* an int argument ignores the register's upper half */
	r.args[0] = 0xdeadbeefffffffffULL;
	s = render(proto_find("close"), &r, 32, false);
	CHECK_STREQ(s, "-1");
	free(s);
	/* unreadable string: the pointer */
	r.args[0] = 0x10;
	s = render(proto_find("puts"), &r, 32, false);
	CHECK_STREQ(s, "0x10");
	free(s);
	/* unknown: three hex */
	r.args[0] = 1;
	r.args[1] = 0xff;
	r.args[2] = 0;
	s = render(proto_unknown(), &r, 32, false);
	CHECK_STREQ(s, "0x1, 0xff, 0");
	free(s);
}

TEST(protos_printf_varargs)
{
	struct proto_regs r = { .read = fake_read };
	uint64_t stack_arg = 77;
	char *s;

	/* printf("%d %s %5.2f %lu %c %%\n", -3, "ab", 1.5, 99, 'z') */
	strcpy(mem, "%d %s %5.2f %lu %c %%\n");
	strcpy(mem + 100, "ab");
	r.args[0] = MEM_BASE;
	r.args[1] = (uint32_t)-3;
	r.args[2] = MEM_BASE + 100;
	r.args[3] = 99;
	r.args[4] = 'z';
	s = render(proto_find("printf"), &r, 32, false);
	CHECK_STREQ(s, "\"%d %s %5.2f %lu %c %%\\n\", -3, \"ab\", ?, 99, 'z'");
	free(s);
	/* fprintf(f, "%d%d%d%d%d", ...): the 7th integer argument is on the stack */
	strcpy(mem, "%d%d%d%d%d");
	r.args[0] = 0x1234;
	r.args[1] = MEM_BASE;
	r.args[2] = 1;
	r.args[3] = 2;
	r.args[4] = 3;
	r.args[5] = 4;
	memcpy(mem + 200 + 8, &stack_arg, 8);
	r.sp = MEM_BASE + 200;
	s = render(proto_find("fprintf"), &r, 32, true);
	CHECK_STREQ(s, "4660, \"%d%d%d%d%d\", 1, 2, 3, 4, 77");
	free(s);
}

TEST(protos_ret_and_errors)
{
	struct proto_regs r = { .read = fake_read };
	struct proto_val v;

	CHECK(proto_is_error(proto_find("malloc"), 0));
	CHECK(!proto_is_error(proto_find("malloc"), 0x5000));
	CHECK(proto_is_error(proto_find("open"), 0xffffffff));
	CHECK(!proto_is_error(proto_find("open"), 3));
	CHECK(proto_is_error(proto_find("read"), (uint64_t)-1));
	CHECK(proto_is_error(proto_find("pthread_mutex_lock"), 22));
	CHECK(!proto_is_error(proto_find("sqlite3_step"), 101));
	CHECK(proto_is_error(proto_find("sqlite3_step"), 1));
	CHECK(!proto_is_error(proto_find("strlen"), (uint64_t)-1));
	strcpy(mem, "dup");
	proto_format_ret(proto_find("strdup"), MEM_BASE, &r, 32, &v);
	CHECK(v.kind == PV_STR);
	CHECK_EQ(v.raw_len, 3);
	proto_val_clear(&v);
	proto_format_ret(proto_find("mmap"), (uint64_t)-1, &r, 32, &v);
	CHECK_STREQ(v.text, "MAP_FAILED");
	proto_format_ret(proto_find("free"), 5, &r, 32, &v);
	CHECK_STREQ(v.text, "");
}

TEST(aggr_buckets)
{
	uint64_t lo, hi, prev_hi = 0;
	unsigned int b;
	char buf[32];

	for (b = 0; b < AGGR_BUCKETS; b++) {
		aggr_bucket_range(b, &lo, &hi);
		CHECK_EQ(lo, prev_hi); /* contiguous */
		CHECK(hi > lo);
		CHECK_EQ(aggr_bucket(lo), b);
		if (hi != UINT64_MAX)
			CHECK_EQ(aggr_bucket(hi - 1), b);
		prev_hi = hi;
	}
	CHECK_EQ(prev_hi, UINT64_MAX);
	aggr_bucket_range(aggr_bucket(1500), &lo, &hi);
	CHECK_EQ(lo, 1000);
	CHECK_EQ(hi, 2000);
	aggr_bucket_range(aggr_bucket(700), &lo, &hi);
	CHECK_EQ(lo, 512);
	CHECK_EQ(hi, 1000);
	aggr_fmt_ns(1000, buf, sizeof(buf));
	CHECK_STREQ(buf, "1us");
	aggr_fmt_ns(512000000, buf, sizeof(buf));
	CHECK_STREQ(buf, "512ms");
	aggr_fmt_ns(4000000000ULL, buf, sizeof(buf));
	CHECK_STREQ(buf, "4s");
}

TEST(aggr_summary_and_hist)
{
	struct aggr a;
	struct aggr_stat *m, *f;
	char *buf = NULL;
	size_t len = 0, i;
	uint64_t sum = 0;
	FILE *out;
	int k;

	aggr_init(&a);
	m = aggr_get(&a, "libc.so.6:malloc", "malloc");
	f = aggr_get(&a, "libc.so.6:free", "free");
	CHECK(m && f && m != f);
	for (k = 0; k < 100; k++) /* grow the hash past its first size */
		CHECK(aggr_get(&a, (char[]){ 'p', (char)('0' + k % 10), (char)('0' + k / 10), 0 },
			       NULL));
	CHECK(aggr_get(&a, "libc.so.6:malloc", "malloc") == m);
	aggr_add(m, true, 1500, false);
	aggr_add(m, true, 3000, true);
	aggr_add(m, true, 700, false);
	aggr_count(f, false);
	CHECK_EQ(m->calls, 3);
	CHECK_EQ(m->errors, 1);
	CHECK_EQ(m->min_ns, 700);
	CHECK_EQ(m->max_ns, 3000);
	CHECK_EQ(m->total_ns, 5200);
	for (i = 0; i < AGGR_BUCKETS; i++)
		sum += m->hist[i];
	CHECK_EQ(sum, 3);

	out = open_memstream(&buf, &len);
	aggr_print_summary(out, &a, "function");
	fclose(out);
	CHECK(strstr(buf, "% time"));
	CHECK(strstr(buf, "min usecs"));
	/* malloc first (most time): 3 calls, 1 error, min 0.700 max 3.000 */
	CHECK(strstr(buf, " 1         3         1       0.700       3.000 malloc\n"));
	CHECK(strstr(buf, " total\n"));
	free(buf);

	buf = NULL;
	out = open_memstream(&buf, &len);
	aggr_print_hist(out, &a);
	fclose(out);
	CHECK(strstr(buf, "@malloc [libc.so.6:malloc]: 3 calls"));
	CHECK(strstr(buf, "[512ns, 1us)            1 |"));
	CHECK(strstr(buf, "[1us, 2us)              1 |"));
	CHECK(strstr(buf, "[2us, 4us)              1 |@@@@"));
	CHECK(!strstr(buf, "@free")); /* no durations, no histogram */
	free(buf);

	buf = NULL;
	out = open_memstream(&buf, &len);
	aggr_json_hist(out, &a, 1, 2);
	aggr_json_summary(out, &a, 1, 2);
	fclose(out);
	CHECK(strstr(buf,
		     "\"type\": \"hist\", \"probe\": \"libc.so.6:malloc\", \"name\": \"malloc\", "
		     "\"buckets\": [{\"lo_ns\": 512, \"hi_ns\": 1000, \"count\": 1}, "));
	CHECK(strstr(buf, "\"type\": \"summary\", \"probe\": \"libc.so.6:malloc\", \"name\": "
			  "\"malloc\", \"calls\": 3, \"errors\": 1, \"total_ns\": 5200, "
			  "\"min_ns\": 700, \"max_ns\": 3000}"));
	free(buf);
	aggr_clear(&a);
}

TEST(chrome_pairs)
{
	struct chrome c;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	const char *p;
	int b = 0, e = 0;

	chrome_open(&c, out);
	chrome_name_process(&c, 10, "prog \"x\"");
	chrome_begin(&c, 10, 10, 1000, "outer", "prog:outer", "\"args\": [1]");
	chrome_begin(&c, 10, 10, 2000, "inner", "prog:inner", NULL);
	chrome_begin(&c, 10, 11, 2500, "other", "prog:other", NULL);
	/* inner never returns (longjmp): closed when outer returns */
	chrome_end(&c, 10, 10, 3000, "outer", "prog:outer", "\"ret\": 0");
	chrome_end(&c, 10, 10, 3500, "lost", "prog:lost", NULL); /* no entry: instant */
	chrome_close(&c); /* closes "other" */
	fclose(out);
	for (p = buf; (p = strstr(p, "\"ph\": \"B\"")); p++)
		b++;
	for (p = buf; (p = strstr(p, "\"ph\": \"E\"")); p++)
		e++;
	CHECK_EQ(b, 3);
	CHECK_EQ(e, 3);
	CHECK(strstr(buf, "\"ph\": \"i\""));
	CHECK(strstr(buf, "\"ts\": 1.000"));
	CHECK(!strncmp(buf, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n", 43));
	CHECK(strstr(buf, "\n]}\n"));
	free(buf);
}

static char *json_of(const char *s, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	json_str(f, s, len);
	fclose(f);
	return buf;
}

/* UTF-8 passes through; bytes of no valid sequence become \u00XX (docs/json.md) */
TEST(json_strings_utf8)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "caf\xc3\xa9", "\"caf\xc3\xa9\"" }, /* é: was \u00c3\u00a9 */
		{ "\xe2\x82\xac 5", "\"\xe2\x82\xac 5\"" }, /* € */
		{ "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"" }, /* U+1F600 */
		{ "caf\xe9", "\"caf\\u00e9\"" }, /* Latin-1 é: no UTF-8 */
		{ "\xc3", "\"\\u00c3\"" }, /* a sequence cut by -S */
		{ "\xc0\xaf", "\"\\u00c0\\u00af\"" }, /* overlong '/' */
		{ "\xed\xa0\x80", "\"\\u00ed\\u00a0\\u0080\"" }, /* a UTF-16 surrogate */
		{ "\xf4\x90\x80\x80", "\"\\u00f4\\u0090\\u0080\\u0080\"" }, /* > U+10FFFF */
		{ "a\"b\\\n\t\x01\x7f", "\"a\\\"b\\\\\\n\\t\\u0001\\u007f\"" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *j = json_of(cases[i].in, strlen(cases[i].in));

		CHECK_STREQ(j, cases[i].out);
		free(j);
	}
}

/* ts_ns beyond 2^53: "ts" and ts_sec/ts_nsec keep every digit */
TEST(json_timestamps)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	json_ts(f, 1796192135283224209ULL);
	json_ts(f, 1000000000000000007ULL);
	fclose(f);
	CHECK_STREQ(buf, "\"ts_ns\": 1796192135283224209, \"ts\": \"1796192135.283224209\", "
			 "\"ts_sec\": 1796192135, \"ts_nsec\": 283224209"
			 "\"ts_ns\": 1000000000000000007, \"ts\": \"1000000000.000000007\", "
			 "\"ts_sec\": 1000000000, \"ts_nsec\": 7");
	free(buf);
}

/* --color: always and never as said; auto a terminal, unless NO_COLOR or TERM=dumb */
TEST(color_wanted)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY), s;
	FILE *tty, *pipe_end;
	int p[2];

	CHECK(m >= 0);
	CHECK_EQ(grantpt(m), 0);
	CHECK_EQ(unlockpt(m), 0);
	s = open(ptsname(m), O_RDWR | O_NOCTTY);
	CHECK(s >= 0);
	tty = fdopen(s, "w");
	CHECK_EQ(pipe(p), 0);
	pipe_end = fdopen(p[1], "w");
	unsetenv("NO_COLOR");
	setenv("TERM", "xterm", 1);
	CHECK(output_color_wanted(CLI_COLOR_AUTO, tty));
	CHECK(!output_color_wanted(CLI_COLOR_AUTO, pipe_end));
	CHECK(output_color_wanted(CLI_COLOR_ALWAYS, pipe_end));
	CHECK(!output_color_wanted(CLI_COLOR_NEVER, tty));
	setenv("NO_COLOR", "", 1); /* empty: as unset */
	CHECK(output_color_wanted(CLI_COLOR_AUTO, tty));
	setenv("NO_COLOR", "1", 1);
	CHECK(!output_color_wanted(CLI_COLOR_AUTO, tty));
	CHECK(output_color_wanted(CLI_COLOR_ALWAYS, tty)); /* the option wins */
	unsetenv("NO_COLOR");
	setenv("TERM", "dumb", 1);
	CHECK(!output_color_wanted(CLI_COLOR_AUTO, tty));
	fclose(tty);
	fclose(pipe_end);
	close(p[0]);
	close(m);
}

/* enums by name; float, double from xmm0.. in order, integers aside; long double stops them */
TEST(protos_enums_and_floats)
{
	static struct {
		struct proto_enum e;
		char room[2 * sizeof(((struct proto_enum *)0)->v[0])];
	} colors = { .e = { .nr = 2 } };
	struct proto p = { "f", PK_FLOAT32, PE_NONE,
			   0,	5,	    { PK_INT, PK_FLOAT, PK_LONG, PK_FLOAT32, PK_INT } };
	struct proto q = { "g", PK_FLOAT, PE_NONE, 0, 3, { PK_FLOATX, PK_FLOAT, PK_INT } };
	struct proto_regs r = { .read = fake_read, .args = { 7, 4, 1 }, .have_xmm = true };
	double d = 1.5, ret = 0.125;
	float f = 0.25f, fret = 2.5f;
	uint32_t fb;
	char *s;

	colors.e.v[0].value = 1;
	colors.e.v[0].name = "GREEN";
	colors.e.v[1].value = -1;
	colors.e.v[1].name = "NONE";
	p.enums[4] = &colors.e;
	memcpy(&r.xmm[0], &d, 8);
	memcpy(&fb, &f, 4);
	r.xmm[1] = 0xdeadbeef00000000ULL | fb; /* a float is the low 32 bits */
	s = render(&p, &r, 32, false);
	CHECK_STREQ(s, "7, 1.5, 4, 0.25, GREEN");
	free(s);
	s = render(&p, &r, 32, true);
	CHECK_STREQ(s, "7, 1.5, 4, 0.25, \"GREEN\"");
	free(s);
	r.args[2] = (uint64_t)-1; /* an enum's negative enumerator */
	s = render(&p, &r, 32, false);
	CHECK_STREQ(s, "7, 1.5, 4, 0.25, NONE");
	free(s);
	r.args[2] = 9; /* no enumerator: the number */
	s = render(&p, &r, 32, false);
	CHECK_STREQ(s, "7, 1.5, 4, 0.25, 9");
	free(s);
	/* without the registers: '?' */
	r.have_xmm = false;
	s = render(&p, &r, 32, false);
	CHECK_STREQ(s, "7, ?, 4, ?, 9");
	free(s);
	/* after a long double nothing in xmm is known */
	r.have_xmm = true;
	s = render(&q, &r, 32, false);
	CHECK_STREQ(s, "?, ?, 7");
	free(s);
	{
		struct proto_val v;

		memcpy(&fb, &fret, 4);
		r.xmm[0] = fb;
		proto_format_ret(&p, 0, &r, 32, &v);
		CHECK_STREQ(v.text, "2.5");
		memcpy(&r.xmm[0], &ret, 8);
		proto_format_ret(&q, 0, &r, 32, &v);
		CHECK_STREQ(v.text, "0.125");
	}
}
