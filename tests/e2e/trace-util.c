/* SPDX-License-Identifier: MIT */
/*
 * trace-util.c - helpers of the function-tracing e2e tests (test-trace.c,
 * test-trace-agent.c): run utrace and python3, count what they printed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "trace-util.h"

const char *utrace(void)
{
	const char *u = getenv("UTRACE");

	return u ? u : harness_build_path("cli/utrace");
}

const char *target(void)
{
	return harness_build_path("tests/targets/s-trace");
}

int count(const char *hay, const char *needle)
{
	int n = 0;

	for (; hay && (hay = strstr(hay, needle)); hay += strlen(needle))
		n++;
	return n;
}

int count_lines(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		if (*s == '\n')
			n++;
	return n;
}

/* "key=N" in the target's output */
long target_count(const char *out, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "%s=", key);
	p = out ? strstr(out, k) : NULL;
	return p ? atol(p + strlen(k)) : -1;
}

/* harness_note() per line: TAP wants every diagnostic line to start with '#' */
void note_lines(const char *text)
{
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		harness_note("%.*s", len, p);
		p = nl ? nl + 1 : NULL;
	}
}

/* Run utrace with @args (NULL-terminated), capture both streams. */
int run_utrace(const char *const *args, char **out, char **err)
{
	char *argv[64];
	int i = 0;

	argv[i++] = (char *)utrace();
	while (*args && i < 63)
		argv[i++] = (char *)*args++;
	argv[i] = NULL;
	return harness_run(argv, out, err, 120);
}

/* python3 SCRIPT FILE: exit 0 and prints its verdict */
int run_python(const char *script, const char *file, char **out)
{
	char *argv[] = { "python3", "-c", (char *)script, (char *)file, NULL };
	char *err = NULL;
	int rc = harness_run(argv, out, &err, 60);

	if (rc)
		note_lines(err ? err : "python3 failed");
	free(err);
	return rc;
}
