/* SPDX-License-Identifier: MIT */
/*
 * test-self-count.c - no call the agent makes itself is counted as the
 * program's (issue 10, item 5), and launch mode changes nothing the
 * program does: the malloc and free counts of real programs nobody here
 * wrote are the same with the agent, with the ptrace backend (which loads
 * nothing into the target), with utrace's kernel backend and with bpftrace
 * (kernel uprobes: nothing in the target either; as root), on
 * deterministic runs:
 *  - gawk summing 20,000 lines (682 / 279 here),
 *  - lua5.4 building 20,000 strings (20,316 / 20,372),
 *  - xz -T2 compressing utrace's binary (two threads; 229 / 79),
 *  - python3 -c pass (1,025 / 1,315; python3 copies its environment, so
 *    the figures move with the number of variables: the same for all three
 *    here, since each starts the command with the test's environment).
 * Before: the agent's variables in the environment made python3 copy two
 * more strings into os.environ, and the agent's own libc calls (TLS, its
 * control thread, dlopen) were counted: gawk 61,127 / 40,302 against
 * bpftrace's 61,118 / 40,299.
 * A program that is not installed is skipped; bpftrace's turn is skipped
 * where it cannot run (not root, no uprobes). Alone: bpftrace's uprobes on
 * libc's malloc and free are in every process while it runs (meson.build
 * alone_tests).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

struct mf {
	long malloc, free;
};

static struct mf utrace_counts(const char *backend, const char *const *cmd)
{
	const char *args[32] = {
		"-b", backend, "-c", "-f", "libc:malloc", "-f", "libc:free", "--"
	};
	char *out = NULL, *err = NULL;
	struct mf c;
	int i;

	for (i = 0; cmd[i] && i < 20; i++)
		args[8 + i] = cmd[i];
	CHECK_MSG(run_utrace(args, &out, &err) == 0, "utrace -b %s: %s", backend, err ? err : "");
	c.malloc = summary_calls(err, "malloc");
	c.free = summary_calls(err, "free");
	harness_note("%s: malloc %ld free %ld", backend, c.malloc, c.free);
	free(out);
	free(err);
	return c;
}

/* bpftrace's counts of the same command; malloc = -1 where it cannot run */
static struct mf bpftrace_counts(const char *const *cmd)
{
	char prog[512], line[4096] = "", res[4096] = "", *out = NULL, *at;
	char path[4096];
	char *argv[] = { "/usr/bin/bpftrace", "-q", "-o", path, "-e", prog, "-c", line, NULL };
	struct mf c = { -1, -1 };
	size_t len = 0;
	FILE *f;
	int i;

	if (access(argv[0], X_OK) || geteuid() != 0 || access(LIBC, R_OK))
		return c;
	/* its maps into a file: the command's own output (xz's) may be binary */
	snprintf(path, sizeof(path), "%s", harness_build_path("tests/self-count.bt"));
	snprintf(prog, sizeof(prog),
		 "uprobe:%s:malloc /pid == cpid/ { @m = count(); } "
		 "uprobe:%s:free /pid == cpid/ { @f = count(); }",
		 LIBC, LIBC);
	for (i = 0; cmd[i]; i++) /* bpftrace splits -c on spaces: no argument has one */
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s", i ? " " : "",
					cmd[i]);
	unlink(path);
	if (harness_run(argv, &out, NULL, 120) == 0 && (f = fopen(path, "r"))) {
		res[fread(res, 1, sizeof(res) - 1, f)] = '\0';
		fclose(f);
		if ((at = strstr(res, "@m: ")) && strstr(res, "@f: ")) {
			c.malloc = atol(at + 4);
			c.free = atol(strstr(res, "@f: ") + 4);
		}
	}
	harness_note("bpftrace: malloc %ld free %ld", c.malloc, c.free);
	free(out);
	return c;
}

static void same_counts(const char *const *cmd, bool with_bpftrace)
{
	struct mf a, p, b;

	if (access(cmd[0], X_OK))
		SKIP("no %s", cmd[0]);
	a = utrace_counts("agent", cmd);
	p = utrace_counts("ptrace", cmd);
	CHECK(a.malloc > 0 && a.free > 0);
	CHECK_EQ(a.malloc, p.malloc);
	CHECK_EQ(a.free, p.free);
	if (geteuid() == 0) {
		/* utrace's own kernel backend: the same mechanism as bpftrace's */
		struct mf k = utrace_counts("kernel", cmd);

		CHECK_EQ(a.malloc, k.malloc);
		CHECK_EQ(a.free, k.free);
	}
	if (!with_bpftrace)
		return;
	b = bpftrace_counts(cmd);
	if (b.malloc < 0) {
		harness_note("bpftrace cannot run here: its comparison is skipped");
		return;
	}
	CHECK_EQ(a.malloc, b.malloc);
	CHECK_EQ(a.free, b.free);
}

/* A file of @text in the build's tests directory; its path (static). */
static const char *write_file(const char *name, const char *text)
{
	static char path[3][4096];
	static int k;
	char *p = path[k++ % 3];
	FILE *f;

	snprintf(p, sizeof(path[0]), "%s", harness_build_path(name));
	f = fopen(p, "w");
	CHECK(f);
	fputs(text, f);
	fclose(f);
	return p;
}

TEST_TIMEOUT(gawk, 240)
{
	char nums[20000 * 6 + 1], *w = nums;
	const char *prog, *data;
	int i;

	for (i = 1; i <= 20000; i++)
		w += sprintf(w, "%d\n", i);
	prog = write_file("tests/self-count.awk", "{ s += $1 } END { print s }\n");
	data = write_file("tests/self-count.txt", nums);
	{
		const char *cmd[] = { "/usr/bin/gawk", "-f", prog, data, NULL };

		same_counts(cmd, true);
	}
}

TEST_TIMEOUT(lua, 240)
{
	const char *prog =
		write_file("tests/self-count.lua", "local s = 0\n"
						   "for i = 1, 20000 do s = s + #tostring(i) end\n"
						   "print(s)\n");
	const char *cmd[] = { "/usr/bin/lua5.4", prog, NULL };

	same_counts(cmd, true);
}

TEST_TIMEOUT(xz_threads, 240)
{
	const char *cmd[] = { "/usr/bin/xz", "-T2", "-c", harness_build_path("cli/utrace"), NULL };

	same_counts(cmd, true);
}

TEST_TIMEOUT(python3, 240)
{
	const char *cmd[] = { "/usr/bin/python3", "-c", "pass", NULL };

	same_counts(cmd, true);
}
