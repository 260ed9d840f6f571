/* SPDX-License-Identifier: MIT */
/*
 * spec-fuzzer.c - libFuzzer target for utrace_spec__parse() and the OBJECT
 * name matcher. Built by fuzz/run.sh with clang -fsanitize=fuzzer,address,
 * undefined directly against lib/spec.c. Checks, beyond "no crash, no
 * leak": a failure leaves @ret untouched and writes one line starting with
 * "bad spec '"; a success round-trips the text and sets consistent fields.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utrace/spec.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const bases[] = { "libc.so.6", "libcrypt.so.1", "libfoo.so", "prog",
					     "ld-linux-x86-64.so.2" };
	struct utrace_spec s, untouched;
	char err[512];
	char *text = malloc(size + 1);
	size_t i;
	int r;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	memset(&s, 0x5a, sizeof(s));
	untouched = s;
	r = utrace_spec__parse(text, &s, err, sizeof(err));
	if (r) {
		if (memcmp(&s, &untouched, sizeof(s)) || strncmp(err, "bad spec '", 10) ||
		    strchr(err, '\n'))
			abort();
	} else {
		if (strcmp(s.text, text) || (s.flags & UTRACE_SPEC_ADDR ? !!s.pattern : !s.pattern))
			abort();
		if (s.object && !spec_object_is_path(s.object))
			for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
				(void)spec_name_matches(s.object, bases[i]);
		utrace_spec__clear(&s);
	}
	/* small buffers must truncate, not overflow */
	if (utrace_spec__parse(text, &s, err, 7) == 0)
		utrace_spec__clear(&s);
	free(text);
	return 0;
}
