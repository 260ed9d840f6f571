/* SPDX-License-Identifier: MIT */
/*
 * spec.c - parsing probe SPECs (docs/cli.md) and matching their OBJECT part
 * against object paths. Tracer process; pure string work, no I/O.
 *
 *   SPEC    := [OBJECT ':'] TARGET
 *   TARGET  := PATTERN ['+' OFFSET] | '0x' HEXADDR | PATTERN '@plt'
 *
 * Decisions the grammar leaves open:
 * - The first ':' splits OBJECT from TARGET, so OBJECT cannot contain ':'
 *   and a second ':' is an error; a "::" is never the split: it is in a
 *   C++ name ("Foo::bar*", "libfoo:ns::f"), matched against the demangled
 *   names (image.c).
 * - OBJECT: '*' = every object; containing '/' = a path; containing a glob
 *   character = a glob on basenames; otherwise a name matched against
 *   basenames: equal, or followed by ".so" ("libc" ~ "libc.so.6"), by a
 *   '-' and a digit ("libc" ~ "libc-2.31.so"), or, for a name ending in
 *   ".so", by '.' and a digit ("libfoo.so" ~ "libfoo.so.1"). So "libc"
 *   matches neither libcrypt.so.1 nor libcap.so.2.
 * - OBJECT:PATTERN@plt means calls made through OBJECT's PLT; without
 *   OBJECT, the main executable's (ltrace's view). A library's PLT is as
 *   real as the executable's, so we allow it rather than refuse it.
 * - OFFSET is decimal or 0x-hex. '+' may follow a glob (each match gets the
 *   offset; the resolver drops symbols too short for it).
 * - 0xADDR needs a single object: '*:0x...' is refused.
 * - '@' is only allowed in the '@plt' suffix: symbol versions are cut off
 *   when reading symbols, so 'memcpy@GLIBC_2.2.5' would never match.
 */
#include <errno.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utrace/spec.h"
#include "internal.h"

/*
 * Copy @text into @buf with control bytes escaped, so that the message stays
 * one line. (Messages quote parts of @text only after bad_char() has
 * refused every control byte.)
 */
static void escape(const char *text, char *buf, size_t size)
{
	size_t n = 0;

	for (; *text && n + 5 < size; text++) {
		unsigned char c = (unsigned char)*text;

		if (c < ' ' || c == 0x7f)
			n += snprintf(buf + n, size - n, "\\x%02x", c);
		else
			buf[n++] = (char)c;
	}
	if (*text && n + 4 < size)
		n += snprintf(buf + n, size - n, "...");
	buf[n] = '\0';
}

__attribute__((format(printf, 4, 5))) static int bad_spec(const char *text, char *errbuf,
							  size_t errlen, const char *fmt, ...)
{
	char shown[256], msg[512];
	va_list ap;

	if (errbuf && errlen) {
		escape(text, shown, sizeof(shown));
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		snprintf(errbuf, errlen, "bad spec '%s': %s", shown, msg);
	}
	return -UTRACE_ERRNO__SPEC;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* Checks the bracket expressions of a glob; returns the bad '[' or NULL. */
static const char *unterminated_bracket(const char *s)
{
	for (; *s; s++) {
		const char *open = s;

		if (*s == '\\' && s[1]) {
			s++;
			continue;
		}
		if (*s != '[')
			continue;
		s++;
		if (*s == '!' || *s == '^')
			s++;
		if (*s == ']')
			s++; /* a leading ']' is a member */
		while (*s && *s != ']')
			s++;
		if (!*s)
			return open;
	}
	return NULL;
}

static const char *bad_char(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return s;
	return NULL;
}

static int parse_number(const char *s, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int parse_hex(const char *s, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!*s || strspn(s, "0123456789abcdefABCDEF") != strlen(s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 16);
	if (errno || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

/*
 * The ':' that ends OBJECT: the first one that is not half of a C++ "::"
 * ("Foo::bar*" has none, "libfoo:Foo::bar" the one after libfoo), or NULL.
 */
static const char *spec_colon(const char *s)
{
	const char *p;

	for (p = strchr(s, ':'); p; p = strchr(p + 1, ':')) {
		if (p[1] == ':') {
			p++;
			continue;
		}
		return p;
	}
	return NULL;
}

/*
 * Does @text (starting with '/') read as a whole "/REGEX/[@plt|+OFFSET]"?
 * Its last '/' is followed by nothing, "@plt" or "+N".
 */
static bool regex_target(const char *text)
{
	const char *end = strrchr(text, '/');

	return end > text && (!end[1] || !strcmp(end + 1, "@plt") ||
			      (end[1] == '+' && end[2] >= '0' && end[2] <= '9'));
}

/*
 * What glibc's regcomp() cannot be given: it copies a subexpression for
 * each '+' and {m,n} applied to it, so "x++++..." or nested intervals grow
 * its tree exponentially (the fuzzer ran it out of memory with 90 '+').
 * Symbol names need none of that: at most 256 bytes, no two repetitions
 * in a row, at most 8 '+' and 2 intervals, their bounds at most 16.
 * Return: why @re is refused, or NULL.
 */
static const char *regex_too_costly(const char *re)
{
	unsigned int plus = 0, intervals = 0;
	bool after_rep = false, in_bracket = false;
	const char *p;

	if (strlen(re) > 256)
		return "longer than 256 bytes";
	for (p = re; *p; p++) {
		bool rep = false;

		if (in_bracket) {
			if (*p == ']')
				in_bracket = false;
			continue;
		}
		if (*p == '\\' && p[1]) {
			p++;
		} else if (*p == '[') {
			in_bracket = true;
			if (p[1] == '^')
				p++;
			if (p[1] == ']')
				p++; /* a leading ']' is a member */
		} else if (*p == '*' || *p == '?' || *p == '+') {
			rep = true;
			plus += *p == '+';
		} else if (*p == '{') {
			char *end;
			unsigned long lo = strtoul(p + 1, &end, 10), hi = lo;

			if (*end == ',')
				hi = end[1] == '}' ? 17 : strtoul(end + 1, &end, 10);
			if (lo > 16 || hi > 16)
				return "an interval {m,n} above 16";
			intervals++;
			rep = true;
			while (*p && *p != '}')
				p++;
			if (!*p)
				break;
		}
		if (rep && after_rep)
			return "two repetitions in a row";
		after_rep = rep;
	}
	if (plus > 8 || intervals > 2)
		return "more than 8 '+' or 2 intervals {m,n}";
	return NULL;
}

/* TARGET "/REGEX/[@plt|+OFFSET]" of @text, OBJECT before @colon (or none). */
static int parse_regex(const char *text, const char *colon, const char *target,
		       struct utrace_spec *ret, char *errbuf, size_t errlen)
{
	struct utrace_spec s = { 0 };
	const char *end = strrchr(target, '/');
	char msg[128];
	regex_t re;
	int r;

	if (end == target)
		return bad_spec(text, errbuf, errlen, "unterminated /REGEX/: it ends with '/'");
	if (!regex_target(target))
		return bad_spec(text, errbuf, errlen,
				"'%s': after /REGEX/ only '@plt' or '+OFFSET' may come", end + 1);
	if (end == target + 1)
		return bad_spec(text, errbuf, errlen, "empty /REGEX/");
	if (colon && colon == text)
		return bad_spec(text, errbuf, errlen, "missing object before ':'");
	if (!strcmp(end + 1, "@plt"))
		s.flags |= UTRACE_SPEC_PLT;
	else if (end[1] == '+') {
		if (parse_number(end + 2, &s.offset))
			return bad_spec(text, errbuf, errlen,
					"bad offset '%s': expected a decimal or 0x-hex number",
					end + 2);
		s.flags |= UTRACE_SPEC_OFFSET;
	}
	s.flags |= UTRACE_SPEC_REGEX;
	s.pattern = strndup(target + 1, end - target - 1);
	s.object = colon ? strndup(text, colon - text) : NULL;
	s.text = strdup(text);
	if (!s.pattern || (colon && !s.object) || !s.text) {
		utrace_spec__clear(&s);
		return -ENOMEM;
	}
	if (regex_too_costly(s.pattern)) {
		bad_spec(text, errbuf, errlen, "/REGEX/ '%s' refused: %s", s.pattern,
			 regex_too_costly(s.pattern));
		utrace_spec__clear(&s);
		return -UTRACE_ERRNO__SPEC;
	}
	r = regcomp(&re, s.pattern, REG_EXTENDED | REG_NOSUB);
	if (r) {
		regerror(r, &re, msg, sizeof(msg));
		bad_spec(text, errbuf, errlen, "bad /REGEX/ '%s': %s", s.pattern, msg);
		utrace_spec__clear(&s);
		return -UTRACE_ERRNO__SPEC;
	}
	regfree(&re);
	if (s.object && has_glob(s.object) && strcmp(s.object, "*") &&
	    unterminated_bracket(s.object)) {
		bad_spec(text, errbuf, errlen, "unterminated '[' in object '%s'", s.object);
		utrace_spec__clear(&s);
		return -UTRACE_ERRNO__SPEC;
	}
	*ret = s;
	return 0;
}

int utrace_spec__parse(const char *text, struct utrace_spec *ret, char *errbuf, size_t errlen)
{
	struct utrace_spec s = { 0 };
	const char *colon, *target, *p;
	char *pat = NULL;
	size_t len;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!ret)
		return -EINVAL;
	if (!text || !*text)
		return bad_spec(text ? text : "", errbuf, errlen,
				"empty spec: expected [OBJECT:]SYMBOL, e.g. 'libc:malloc'");
	p = bad_char(text);
	if (p)
		return bad_spec(text, errbuf, errlen, "unexpected %s at offset %zu",
				*p == ' ' ? "space" : "control character", (size_t)(p - text));
	colon = spec_colon(text);
	/*
	 * /REGEX/ after OBJECT ("libc:/^mem/", "/lib/x.so:/a:b/"), or the
	 * whole SPEC ("/^mem/", "/a:b/": a ':' in REGEX is no OBJECT's)
	 */
	if (colon && colon[1] == '/')
		return parse_regex(text, colon, colon + 1, ret, errbuf, errlen);
	if (text[0] == '/' && regex_target(text))
		return parse_regex(text, NULL, text, ret, errbuf, errlen);
	target = colon ? colon + 1 : text;
	if (colon && colon == text)
		return bad_spec(text, errbuf, errlen, "missing object before ':'");
	if (colon && !*target)
		return bad_spec(text, errbuf, errlen, "missing symbol after ':'");
	if (spec_colon(target))
		return bad_spec(text, errbuf, errlen,
				"more than one ':' (give OBJECT:SYMBOL; C++ names with '::')");
	if (!strncmp(target, "::", 2) ||
	    (strlen(target) >= 2 && !strcmp(target + strlen(target) - 2, "::")))
		return bad_spec(text, errbuf, errlen,
				"'::' must join two names (e.g. 'Foo::bar*')");
	if (colon) {
		s.object = strndup(text, colon - text);
		if (!s.object)
			return -ENOMEM;
	}

	if (target[0] == '0' && (target[1] == 'x' || target[1] == 'X')) {
		if (parse_hex(target + 2, &s.addr)) {
			bad_spec(text, errbuf, errlen,
				 "bad address '%s': expected 0x and up to 16 hex digits", target);
			goto err_free;
		}
		if (s.object && !strcmp(s.object, "*")) {
			bad_spec(text, errbuf, errlen,
				 "an address needs one object, not '*' (e.g. 'libc:%s')", target);
			goto err_free;
		}
		s.flags |= UTRACE_SPEC_ADDR;
		goto done;
	}

	len = strlen(target);
	if (len >= 4 && !strcmp(target + len - 4, "@plt")) {
		if (len == 4) {
			bad_spec(text, errbuf, errlen, "missing symbol before '@plt'");
			goto err_free;
		}
		s.flags |= UTRACE_SPEC_PLT;
		pat = strndup(target, len - 4);
	} else {
		const char *plus = strrchr(target, '+');

		if (plus) {
			if (plus == target) {
				bad_spec(text, errbuf, errlen, "missing symbol before '+'");
				goto err_free;
			}
			if (!plus[1]) {
				bad_spec(text, errbuf, errlen, "missing offset after '+'");
				goto err_free;
			}
			if (parse_number(plus + 1, &s.offset)) {
				bad_spec(text, errbuf, errlen,
					 "bad offset '%s': expected a decimal or 0x-hex number",
					 plus + 1);
				goto err_free;
			}
			s.flags |= UTRACE_SPEC_OFFSET;
			pat = strndup(target, plus - target);
		} else {
			pat = strdup(target);
		}
	}
	if (!pat)
		goto err_nomem;
	if (strchr(pat, '+')) {
		if (s.flags & UTRACE_SPEC_PLT)
			bad_spec(text, errbuf, errlen, "an offset cannot be combined with '@plt'");
		else
			bad_spec(text, errbuf, errlen, "more than one '+' in '%s'", target);
		goto err_free;
	}
	p = strchr(pat, '@');
	if (p) {
		if (s.flags & UTRACE_SPEC_OFFSET)
			bad_spec(text, errbuf, errlen, "'%s': an offset cannot follow '@plt'", p);
		else
			bad_spec(
				text, errbuf, errlen,
				"unexpected '%s': only the '@plt' suffix is allowed (symbol versions are ignored)",
				p);
		goto err_free;
	}
	p = unterminated_bracket(pat);
	if (p) {
		bad_spec(text, errbuf, errlen, "unterminated '[' in pattern '%s'", pat);
		goto err_free;
	}
	if (has_glob(pat))
		s.flags |= UTRACE_SPEC_GLOB;
	s.pattern = pat;
	pat = NULL;

done:
	if (s.object && has_glob(s.object) && strcmp(s.object, "*") &&
	    unterminated_bracket(s.object)) {
		bad_spec(text, errbuf, errlen, "unterminated '[' in object '%s'", s.object);
		goto err_free;
	}
	s.text = strdup(text);
	if (!s.text)
		goto err_nomem;
	*ret = s;
	return 0;

err_nomem:
	free(pat);
	utrace_spec__clear(&s);
	return -ENOMEM;
err_free:
	free(pat);
	utrace_spec__clear(&s);
	return -UTRACE_ERRNO__SPEC;
}

void utrace_spec__clear(struct utrace_spec *spec)
{
	if (!spec)
		return;
	free(spec->text);
	free(spec->object);
	free(spec->pattern);
	memset(spec, 0, sizeof(*spec));
}

/**
 * spec_object_is_path - does the OBJECT of a spec name a file path?
 * @object: OBJECT part of a parsed spec (not NULL)
 *
 * Return: true if @object contains a '/'.
 */
bool spec_object_is_path(const char *object)
{
	return strchr(object, '/') != NULL;
}

/**
 * spec_name_matches - match an OBJECT name (not a path) against a basename
 * @object: "*", a glob, or a name such as "libc", "libc.so.6", "libssl"
 * @base: basename of a loaded object, e.g. "libc.so.6"
 *
 * See the rules at the top of this file. Tracer process; no allocation.
 *
 * Return: true if @base is meant by @object.
 */
bool spec_name_matches(const char *object, const char *base)
{
	size_t n = strlen(object);
	const char *rest;

	if (!strcmp(object, "*") || !strcmp(object, base))
		return true;
	if (has_glob(object))
		return fnmatch(object, base, 0) == 0;
	if (strncmp(object, base, n))
		return false;
	rest = base + n;
	if (!strncmp(rest, ".so", 3) && (rest[3] == '\0' || rest[3] == '.'))
		return true;
	if (rest[0] == '-' && rest[1] >= '0' && rest[1] <= '9')
		return true;
	if (n > 3 && !strcmp(object + n - 3, ".so") && rest[0] == '.' && rest[1] >= '0' &&
	    rest[1] <= '9')
		return true;
	return false;
}
