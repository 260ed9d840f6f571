/* SPDX-License-Identifier: MIT */
/*
 * test-spec.c - SPEC parsing (table-driven: good specs with their fields,
 * bad specs with their one-line error) and OBJECT name matching.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utrace/utrace.h"
#include "internal.h"
#include "harness.h"

static const struct good_spec {
	const char *text;
	const char *object;
	const char *pattern;
	uint32_t flags;
	uint64_t offset;
	uint64_t addr;
} good[] = {
	{ "malloc", NULL, "malloc", 0 },
	{ "libc:malloc", "libc", "malloc", 0 },
	{ "libc.so.6:malloc", "libc.so.6", "malloc", 0 },
	{ "libc:mem*", "libc", "mem*", UTRACE_SPEC_GLOB },
	{ "*:*_alloc*", "*", "*_alloc*", UTRACE_SPEC_GLOB },
	{ "str?", NULL, "str?", UTRACE_SPEC_GLOB },
	{ "str[a-c]py", NULL, "str[a-c]py", UTRACE_SPEC_GLOB },
	{ "[]x]", NULL, "[]x]", UTRACE_SPEC_GLOB },
	{ "main+0x10", NULL, "main", UTRACE_SPEC_OFFSET, 0x10 },
	{ "main+16", NULL, "main", UTRACE_SPEC_OFFSET, 16 },
	{ "main+0", NULL, "main", UTRACE_SPEC_OFFSET, 0 },
	{ "work*+4", NULL, "work*", UTRACE_SPEC_OFFSET | UTRACE_SPEC_GLOB, 4 },
	{ "0x1139", NULL, NULL, UTRACE_SPEC_ADDR, 0, 0x1139 },
	{ "prog:0XDEADbeef", "prog", NULL, UTRACE_SPEC_ADDR, 0, 0xdeadbeef },
	{ "0xffffffffffffffff", NULL, NULL, UTRACE_SPEC_ADDR, 0, 0xffffffffffffffffULL },
	{ "puts@plt", NULL, "puts", UTRACE_SPEC_PLT },
	{ "*@plt", NULL, "*", UTRACE_SPEC_PLT | UTRACE_SPEC_GLOB },
	{ "libfoo:puts@plt", "libfoo", "puts", UTRACE_SPEC_PLT },
	{ "/usr/lib/x86_64-linux-gnu/libc.so.6:free", "/usr/lib/x86_64-linux-gnu/libc.so.6", "free",
	  0 },
	{ "./prog:main", "./prog", "main", 0 },
	{ "libstdc++:_ZNSo3putEc", "libstdc++", "_ZNSo3putEc", 0 },
	{ "lib*:foo", "lib*", "foo", 0 },
	{ "_Z3fooPKc.cold", NULL, "_Z3fooPKc.cold", 0 },
	/* a "::" is a C++ name's, never OBJECT's ':' */
	{ "Foo::bar*", NULL, "Foo::bar*", UTRACE_SPEC_GLOB },
	{ "libfoo:ns::Foo::bar", "libfoo", "ns::Foo::bar", 0 },
	/* /REGEX/: any character between the slashes, the SPEC's first ':' before them */
	{ "/^mem/", NULL, "^mem", UTRACE_SPEC_REGEX },
	{ "/a:b+c/", NULL, "a:b+c", UTRACE_SPEC_REGEX },
	{ "libc:/^mem(cpy|set)$/", "libc", "^mem(cpy|set)$", UTRACE_SPEC_REGEX },
	{ "/usr/lib/x.so:/^m/@plt", "/usr/lib/x.so", "^m", UTRACE_SPEC_REGEX | UTRACE_SPEC_PLT },
	{ "*:/x/y/+8", "*", "x/y", UTRACE_SPEC_REGEX | UTRACE_SPEC_OFFSET, 8 },
};

static const struct bad_spec {
	const char *text;
	const char *error; /* the whole message */
} bad[] = {
	{ "", "bad spec '': empty spec: expected [OBJECT:]SYMBOL, e.g. 'libc:malloc'" },
	{ "::", "bad spec '::': '::' must join two names (e.g. 'Foo::bar*')" },
	{ "libfoo:Foo::", "bad spec 'libfoo:Foo::': '::' must join two names (e.g. 'Foo::bar*')" },
	{ "libc:", "bad spec 'libc:': missing symbol after ':'" },
	{ ":foo", "bad spec ':foo': missing object before ':'" },
	{ "a:b:c",
	  "bad spec 'a:b:c': more than one ':' (give OBJECT:SYMBOL; C++ names with '::')" },
	{ "0xZZ", "bad spec '0xZZ': bad address '0xZZ': expected 0x and up to 16 hex digits" },
	{ "0x", "bad spec '0x': bad address '0x': expected 0x and up to 16 hex digits" },
	{ "0x1ffffffffffffffff", NULL },
	{ "libc:0x12g", NULL },
	{ "*:0x1000",
	  "bad spec '*:0x1000': an address needs one object, not '*' (e.g. 'libc:0x1000')" },
	{ "foo+", "bad spec 'foo+': missing offset after '+'" },
	{ "foo+zz", "bad spec 'foo+zz': bad offset 'zz': expected a decimal or 0x-hex number" },
	{ "foo+-1", NULL },
	{ "foo+1+2", NULL },
	{ "+4", "bad spec '+4': missing symbol before '+'" },
	{ "@plt", "bad spec '@plt': missing symbol before '@plt'" },
	{ "libc:@plt", "bad spec 'libc:@plt': missing symbol before '@plt'" },
	{ "foo@plt+4", "bad spec 'foo@plt+4': '@plt': an offset cannot follow '@plt'" },
	{ "foo+4@plt", "bad spec 'foo+4@plt': an offset cannot be combined with '@plt'" },
	{ "memcpy@GLIBC_2.2.5", NULL },
	{ "foo bar", "bad spec 'foo bar': unexpected space at offset 3" },
	{ "foo\tbar", NULL },
	{ "str[a-", "bad spec 'str[a-': unterminated '[' in pattern 'str[a-'" },
	{ "lib[c:foo", "bad spec 'lib[c:foo': unterminated '[' in object 'lib[c'" },
	{ "libc:/x", "bad spec 'libc:/x': unterminated /REGEX/: it ends with '/'" },
	{ "libc://", "bad spec 'libc://': empty /REGEX/" },
	{ "/(/", "bad spec '/(/': bad /REGEX/ '(': Unmatched ( or \\(" },
	{ "libc:/x/y",
	  "bad spec 'libc:/x/y': 'y': after /REGEX/ only '@plt' or '+OFFSET' may come" },
	/* glibc's regcomp() grows these exponentially: refused before it */
	{ "/a++/", "bad spec '/a++/': /REGEX/ 'a++' refused: two repetitions in a row" },
	{ "/x{100}/", "bad spec '/x{100}/': /REGEX/ 'x{100}' refused: an interval {m,n} above 16" },
	{ "/(a+)+b+c+d+e+f+g+h+/", NULL },
};

TEST(good_specs)
{
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const struct good_spec *g = &good[i];
		struct utrace_spec s;
		char err[256] = "x";
		int r = utrace_spec__parse(g->text, &s, err, sizeof(err));

		CHECK_MSG(r == 0, "'%s' -> %d: %s", g->text, r, err);
		CHECK_MSG(err[0] == '\0', "'%s': errbuf not cleared", g->text);
		CHECK_STREQ(s.text, g->text);
		if (g->object)
			CHECK_STREQ(s.object, g->object);
		else
			CHECK_MSG(s.object == NULL, "'%s': object '%s'", g->text, s.object);
		if (g->pattern)
			CHECK_STREQ(s.pattern, g->pattern);
		else
			CHECK(s.pattern == NULL);
		CHECK_MSG(s.flags == g->flags, "'%s': flags %#x != %#x", g->text, s.flags,
			  g->flags);
		CHECK_EQ(s.offset, g->offset);
		CHECK_EQ(s.addr, g->addr);
		utrace_spec__clear(&s);
		CHECK(s.text == NULL && s.object == NULL && s.pattern == NULL);
	}
}

TEST(bad_specs)
{
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const struct bad_spec *b = &bad[i];
		struct utrace_spec s;
		char err[256] = "";
		int r;

		memset(&s, 0xa5, sizeof(s));
		r = utrace_spec__parse(b->text, &s, err, sizeof(err));
		CHECK_MSG(r == -UTRACE_ERRNO__SPEC, "'%s' -> %d", b->text, r);
		/* @ret untouched on failure */
		CHECK_MSG(((unsigned char *)&s)[0] == 0xa5 && s.flags == 0xa5a5a5a5,
			  "'%s': ret was written", b->text);
		/* one line, in the documented shape */
		CHECK_MSG(!strncmp(err, "bad spec '", 10), "'%s': '%s'", b->text, err);
		CHECK_MSG(!strchr(err, '\n'), "'%s': more than one line", b->text);
		CHECK_MSG(strlen(err) > strlen(b->text) + 14, "'%s': '%s' says nothing", b->text,
			  err);
		if (b->error)
			CHECK_STREQ(err, b->error);
	}
}

TEST(parse_edge_cases)
{
	struct utrace_spec s;
	char small[16];

	/* NULL errbuf, tiny errbuf: still fails cleanly */
	CHECK_EQ(utrace_spec__parse("libc:", &s, NULL, 0), -UTRACE_ERRNO__SPEC);
	CHECK_EQ(utrace_spec__parse("libc:", &s, small, sizeof(small)), -UTRACE_ERRNO__SPEC);
	CHECK(strlen(small) < sizeof(small));
	CHECK_EQ(utrace_spec__parse(NULL, &s, small, sizeof(small)), -UTRACE_ERRNO__SPEC);
	CHECK_EQ(utrace_spec__parse("malloc", NULL, NULL, 0), -EINVAL);
	utrace_spec__clear(NULL);
}

TEST(object_names)
{
	static const struct {
		const char *object, *base;
		bool match;
	} cases[] = {
		{ "libc", "libc.so.6", true },
		{ "libc", "libc.so", true },
		{ "libc", "libc-2.31.so", true },
		{ "libc", "libcrypt.so.1", false },
		{ "libc", "libcap.so.2", false },
		{ "libc", "libc++.so.1", false },
		{ "libc", "libc_malloc_debug.so.0", false },
		{ "libc.so.6", "libc.so.6", true },
		{ "libc.so.6", "libc.so.60", false },
		{ "libc.so", "libc.so.6", true },
		{ "libssl", "libssl.so.3", true },
		{ "libssl", "libssl3.so", false },
		{ "libfoo", "libfoo.so", true },
		{ "libfoo.so", "libfoo.so.1.2", true },
		{ "ld-linux-x86-64", "ld-linux-x86-64.so.2", true },
		{ "s-list-pie", "s-list-pie", true },
		{ "s-list", "s-list-pie", false },
		{ "*", "anything", true },
		{ "lib*", "libz.so.1", true },
		{ "lib*", "prog", false },
		{ "libc.so.?", "libc.so.6", true },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK_MSG(spec_name_matches(cases[i].object, cases[i].base) == cases[i].match,
			  "'%s' vs '%s'", cases[i].object, cases[i].base);
	CHECK(spec_object_is_path("./prog"));
	CHECK(!spec_object_is_path("libc"));
}
