/* SPDX-License-Identifier: MIT */
/*
 * test-strings - string arguments and returned strings are shown as the
 * callee had them: the agent copies them in the probed thread at the hit
 * (a fault-safe copy: a bad pointer shows as the pointer), ptrace reads
 * them while the thread is stopped. The target s-strings overwrites or
 * frees each string right after the call, so a tracer that reads the
 * memory later shows the wrong bytes. Both backends, same expectations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "trace-util.h"

#define ROUNDS 40

static void check_strings(const char *backend)
{
	char rounds[16], needle[128];
	const char *args[] = { "-b",   backend,	    "-f", "libc:strtol",
			       "-f",   "libc:atoi", "-f", "name_of",
			       "-f",   "bad_str",   "--", built_path("tests/targets/s-strings"),
			       rounds, NULL };
	char *out = NULL, *err = NULL;
	int rc, i, bad = 0;

	snprintf(rounds, sizeof(rounds), "%d", ROUNDS);
	rc = run_utrace(args, &out, &err);
	CHECK_EQ(rc, 0);
	CHECK(out && strstr(out, "rounds=40"));
	if (!err)
		return;
	for (i = 0; i < ROUNDS; i++) {
		snprintf(needle, sizeof(needle), "strtol(\"%d\", ", i);
		if (count(err, needle) != 1 && bad++ < 5)
			harness_note("round %d: %d lines with '%s'", i, count(err, needle), needle);
		snprintf(needle, sizeof(needle), "atoi(\"heap-%d\")", i);
		if (count(err, needle) != 1 && bad++ < 5)
			harness_note("round %d: %d lines with '%s'", i, count(err, needle), needle);
		snprintf(needle, sizeof(needle), "= \"name-%d\"", i);
		if (count(err, needle) != 1 && bad++ < 5)
			harness_note("round %d: %d lines with '%s'", i, count(err, needle), needle);
	}
	/* a bad pointer (and an unmapped page): the pointer, the target unharmed */
	CHECK_MSG(count(err, "bad_str(0x1)") == ROUNDS, "bad_str(0x1) lines: %d",
		  count(err, "bad_str(0x1)"));
	/*
	 * A PROT_NONE page: the agent's copy fails (the pointer is shown);
	 * ptrace reads it through /proc/PID/mem, which ignores protections
	 * (""), as strace's PTRACE_PEEKDATA fallback does. One line each.
	 */
	CHECK_MSG(count(err, "bad_str() = 1") == 2 * ROUNDS, "bad_str returns: %d",
		  count(err, "bad_str() = 1"));
	CHECK_MSG(!strstr(err, "XXXX") && !strstr(err, "YYYY") && !strstr(err, "ZZZZ"),
		  "a string was read after the target overwrote it");
	CHECK_EQ(bad, 0);
	if (bad)
		note_lines(err);
	free(out);
	free(err);
}

TEST(agent_strings_are_the_callees)
{
	check_strings("agent");
}

TEST(ptrace_strings_are_the_callees)
{
	check_strings("ptrace");
}
