/* SPDX-License-Identifier: MIT */
/*
 * test-list.c - `utrace -l` end to end ($UTRACE is the built binary). The
 * expected names and addresses are computed at test time from nm, readelf,
 * objdump and /proc/PID/maps on the very files the targets run (strace's
 * self-describing style); nothing is hard-coded but the target's own
 * function names.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* Each test has its own targets and files. */
HARNESS_JOBS(3)

/* ---- helpers ------------------------------------------------------------ */

struct target {
	pid_t pid;
	int stdin_fd;
};

static const char *built(const char *rel)
{
	static char buf[8][PATH_MAX];
	static int slot;
	char *b = buf[slot++ % 8];

	if (!realpath(harness_build_path(rel), b))
		SKIP("%s not built", rel);
	return b;
}

/* Start @path; wait for its "ready <pid>" line. */
static struct target spawn(const char *path)
{
	int in[2], out[2];
	struct target t;
	char line[256] = "";
	size_t len = 0;
	struct pollfd pfd;

	CHECK(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
	t.pid = fork();
	CHECK(t.pid >= 0);
	if (t.pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	t.stdin_fd = in[1];
	pfd = (struct pollfd){ .fd = out[0], .events = POLLIN };
	while (!strstr(line, "ready ") || !strchr(strstr(line, "ready "), '\n')) {
		ssize_t n;

		CHECK_MSG(poll(&pfd, 1, 10000) == 1, "%s did not get ready", path);
		n = read(out[0], line + len, sizeof(line) - 1 - len);
		CHECK_MSG(n > 0, "%s exited early", path);
		len += n;
		line[len] = '\0';
	}
	close(out[0]);
	return t;
}

static void stop(struct target *t)
{
	int status;

	close(t->stdin_fd);
	waitpid(t->pid, &status, 0);
}

static char *pidstr(pid_t pid)
{
	static char buf[4][32];
	static int slot;
	char *b = buf[slot++ % 4];

	snprintf(b, sizeof(buf[0]), "%d", (int)pid);
	return b;
}

/* Run utrace with up to 5 args; returns the exit status. */
static int utrace(char **out, char **err, const char *a1, const char *a2, const char *a3,
		  const char *a4, const char *a5)
{
	const char *exe = getenv("UTRACE");
	char *argv[] = { (char *)exe, (char *)a1, (char *)a2, (char *)a3,
			 (char *)a4,  (char *)a5, NULL };
	int rc;

	if (!exe)
		SKIP("UTRACE is not set");
	rc = harness_run(argv, out, err, 60);
	CHECK_MSG(rc >= 0 && rc < 128, "utrace %s %s %s crashed or hung (%d)", a1, a2 ? a2 : "",
		  a3 ? a3 : "", rc);
	return rc;
}

__attribute__((noinline)) static char *tool(const char *t, const char *a1, const char *a2,
					    const char *a3)
{
	char *argv[] = { (char *)t, (char *)a1, (char *)a2, (char *)a3, NULL };
	char *out = NULL;
	int rc = harness_run(argv, &out, NULL, 60);

	if (rc == 127 || rc < 0)
		SKIP("%s is not available", t);
	CHECK_MSG(rc == 0, "%s %s %s: exit %d", t, a1, a2 ? a2 : "", rc);
	return out;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* The error output of a failing utrace: exactly one "utrace: " line. */
static void check_one_error_line(const char *err, const char *what)
{
	CHECK_MSG(count_lines(err) == 1, "%s: %d stderr lines: %s", what, count_lines(err), err);
	CHECK_MSG(!strncmp(err, "utrace: ", 8), "%s: '%s'", what, err);
}

struct nsym {
	char name[512];
	unsigned long long addr;
};

struct nsyms {
	struct nsym *v;
	size_t nr;
};

static void add(struct nsyms *s, const char *name, unsigned long long addr)
{
	s->v = realloc(s->v, (s->nr + 1) * sizeof(*s->v));
	CHECK(s->v);
	snprintf(s->v[s->nr].name, sizeof(s->v[0].name), "%s", name);
	s->v[s->nr++].addr = addr;
}

static bool has(const struct nsyms *s, const char *name, unsigned long long addr)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		if (!strcmp(s->v[i].name, name) && s->v[i].addr == addr)
			return true;
	return false;
}

static bool has_name(const struct nsyms *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		if (!strcmp(s->v[i].name, name))
			return true;
	return false;
}

/* nm [-D --defined-only] symbols of types in @types matching glob @pat, versions cut. */
static void nm_syms(const char *path, bool dyn, const char *types, const char *pat,
		    struct nsyms *out)
{
	char *text = dyn ? tool("nm", "-D", "--defined-only", path) : tool("nm", path, NULL, NULL);
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long addr;
		char type, name[512], *at;

		if (sscanf(line, "%llx %c %511s", &addr, &type, name) != 3 || !strchr(types, type))
			continue;
		at = strchr(name, '@');
		if (at)
			*at = '\0';
		if (!fnmatch(pat, name, 0))
			add(out, name, addr);
	}
	free(text);
}

/* Names readelf --dyn-syms calls FUNC or IFUNC (defined). */
static void readelf_func_names(const char *path, struct nsyms *out)
{
	char *text = tool("readelf", "-W", "--dyn-syms", path);
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char num[32], type[32], bind[32], vis[32], ndx[32], name[512];
		unsigned long long addr, size;
		char *at;

		if (sscanf(line, " %31s %llx %llu %31s %31s %31s %31s %511s", num, &addr, &size,
			   type, bind, vis, ndx, name) != 8 ||
		    !strcmp(ndx, "UND") || (strcmp(type, "FUNC") && strcmp(type, "IFUNC")))
			continue;
		at = strchr(name, '@');
		if (at)
			*at = '\0';
		add(out, name, addr);
	}
	free(text);
}

static unsigned long long objdump_plt(const char *path, const char *fn)
{
	char *text = tool("objdump", "-d", path, NULL);
	char want[300], *p;
	unsigned long long addr;

	snprintf(want, sizeof(want), "<%s@plt>:", fn);
	p = strstr(text, want);
	CHECK_MSG(p, "objdump shows no %s@plt in %s", fn, path);
	while (p > text && p[-1] != '\n')
		p--;
	CHECK(sscanf(p, "%llx", &addr) == 1);
	free(text);
	return addr;
}

/* Load bias of @path in @pid: start of its offset-0 mapping minus its first PT_LOAD. */
static unsigned long long bias_of(pid_t pid, const char *path)
{
	char maps_path[64], line[PATH_MAX + 128], *text, *p;
	unsigned long long start = 0, vaddr = ~0ULL;
	bool found = false;
	FILE *f;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)pid);
	f = fopen(maps_path, "r");
	CHECK(f);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perms[8], dev[16], file[PATH_MAX];
		unsigned long ino;

		if (sscanf(line, "%llx-%llx %7s %llx %15s %lu %s", &s, &e, perms, &off, dev, &ino,
			   file) == 7 &&
		    off == 0 && !strcmp(file, path)) {
			start = s;
			found = true;
		}
	}
	fclose(f);
	CHECK_MSG(found, "%s is not mapped in %d", path, (int)pid);
	text = tool("readelf", "-lW", path, NULL);
	for (p = strstr(text, "  LOAD "); p; p = strstr(p + 1, "  LOAD ")) {
		unsigned long long off, va;

		if (sscanf(p, " LOAD %llx %llx", &off, &va) == 2 && off == 0)
			vaddr = va & ~0xfffULL;
	}
	free(text);
	CHECK(vaddr != ~0ULL);
	return start - vaddr;
}

/* Path of the libc.so.6 mapped in @pid. */
static void libc_of(pid_t pid, char *buf, size_t size)
{
	char maps_path[64], line[PATH_MAX + 128];
	FILE *f;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)pid);
	f = fopen(maps_path, "r");
	CHECK(f);
	buf[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *base;

		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		base = strrchr(p, '/') + 1;
		if (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5)) {
			snprintf(buf, size, "%s", p);
			break;
		}
	}
	fclose(f);
	CHECK_MSG(buf[0], "no libc in pid %d", (int)pid);
}

struct row {
	char pidcol[32], obj[PATH_MAX], sym[512], size[32];
	unsigned long long addr;
};

/* Parse utrace -l output (optionally with a leading [PID] column). */
static size_t parse_rows(char *text, bool pidcol, struct row **ret)
{
	char *line, *save = NULL;
	struct row *rows = NULL;
	size_t nr = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct row r = { 0 };
		int n = pidcol ? sscanf(line, "%31s %4095s %511s %llx %31s", r.pidcol, r.obj, r.sym,
					&r.addr, r.size) :
				 sscanf(line, "%4095s %511s %llx %31s", r.obj, r.sym, &r.addr,
					r.size);

		CHECK_MSG(n == (pidcol ? 5 : 4), "bad output line '%s'", line);
		rows = realloc(rows, (nr + 1) * sizeof(*rows));
		CHECK(rows);
		rows[nr++] = r;
	}
	*ret = rows;
	return nr;
}

/* ---- acceptance --------------------------------------------------------- */

TEST(libc_mem_glob_pid)
{
	struct target t = spawn(built("tests/targets/s-list-pie"));
	struct nsyms want = { 0 }, funcs = { 0 }, expect = { 0 }, got = { 0 };
	char libc[PATH_MAX], *out, *err;
	unsigned long long bias;
	struct row *rows;
	size_t i, nr;

	libc_of(t.pid, libc, sizeof(libc));
	CHECK_EQ(utrace(&out, &err, "-l", "libc:mem*", "-p", pidstr(t.pid), NULL), 0);
	CHECK_MSG(!*err, "stderr: %s", err);
	bias = bias_of(t.pid, libc);
	nm_syms(libc, true, "TtiW", "mem*", &want);
	readelf_func_names(libc, &funcs);
	for (i = 0; i < want.nr; i++) /* W may be data: keep functions */
		if (has_name(&funcs, want.v[i].name))
			add(&expect, want.v[i].name, want.v[i].addr);
	CHECK(expect.nr >= 5);
	nr = parse_rows(out, false, &rows);
	for (i = 0; i < nr; i++) {
		CHECK_STREQ(rows[i].obj, libc);
		CHECK_MSG(has(&expect, rows[i].sym, rows[i].addr - bias),
			  "%s at %#llx (file %#llx) is not in nm -D", rows[i].sym, rows[i].addr,
			  rows[i].addr - bias);
		add(&got, rows[i].sym, 0);
	}
	for (i = 0; i < expect.nr; i++)
		CHECK_MSG(has_name(&got, expect.v[i].name), "nm -D has %s, utrace does not",
			  expect.v[i].name);
	harness_note("%zu lines, %zu nm -D names, bias %#llx", nr, expect.nr, bias);
	stop(&t);
}

static void check_main_and_plt(const char *rel)
{
	const char *path = built(rel);
	struct nsyms mainsym = { 0 };
	unsigned long long plt = objdump_plt(path, "puts"), bias;
	struct target t;
	struct row *rows;
	char *out, *err;

	nm_syms(path, false, "T", "main", &mainsym);
	CHECK_EQ(mainsym.nr, 1);
	/* launch mode: file addresses */
	CHECK_EQ(utrace(&out, &err, "-l", "main", "--", path, NULL), 0);
	CHECK_EQ(parse_rows(out, false, &rows), 1);
	CHECK_STREQ(rows[0].sym, "main");
	CHECK_STREQ(rows[0].obj, path);
	CHECK_EQ(rows[0].addr, mainsym.v[0].addr);
	CHECK_EQ(utrace(&out, &err, "-l", "puts@plt", "--", path, NULL), 0);
	CHECK_EQ(parse_rows(out, false, &rows), 1);
	CHECK_STREQ(rows[0].sym, "puts@plt");
	CHECK_EQ(rows[0].addr, plt);
	/* live: plus the load bias */
	t = spawn(path);
	bias = bias_of(t.pid, path);
	CHECK_EQ(utrace(&out, &err, "-l", "main", "-p", pidstr(t.pid), NULL), 0);
	CHECK_EQ(parse_rows(out, false, &rows), 1);
	CHECK_EQ(rows[0].addr, mainsym.v[0].addr + bias);
	CHECK_EQ(utrace(&out, &err, "-l", "puts@plt", "-p", pidstr(t.pid), NULL), 0);
	CHECK_EQ(parse_rows(out, false, &rows), 1);
	CHECK_EQ(rows[0].addr, plt + bias);
	/* an address inside main resolves to main+OFF */
	{
		char spec[64], want[64];

		snprintf(spec, sizeof(spec), "0x%llx", mainsym.v[0].addr + 1);
		CHECK_EQ(utrace(&out, &err, "-l", spec, "-p", pidstr(t.pid), NULL), 0);
		CHECK_EQ(parse_rows(out, false, &rows), 1);
		CHECK_STREQ(rows[0].sym, "main+0x1");
		CHECK_EQ(rows[0].addr, mainsym.v[0].addr + 1 + bias);
		snprintf(want, sizeof(want), "main+0x1");
		CHECK_EQ(utrace(&out, &err, "-l", want, "--", path, NULL), 0);
		CHECK_EQ(parse_rows(out, false, &rows), 1);
		CHECK_EQ(rows[0].addr, mainsym.v[0].addr + 1);
	}
	harness_note("%s: main %#llx puts@plt %#llx bias %#llx", rel, mainsym.v[0].addr, plt, bias);
	stop(&t);
}

TEST(main_and_puts_plt_pie)
{
	check_main_and_plt("tests/targets/s-list-pie");
}

TEST(main_and_puts_plt_nopie)
{
	check_main_and_plt("tests/targets/s-list-nopie");
}

TEST(main_and_puts_plt_ibt)
{
	check_main_and_plt("tests/targets/s-list-ibt");
}

TEST(stripped_via_dynsym)
{
	const char *prog = built("tests/targets/s-stripped");
	const char *lib = built("tests/targets/libfoo.so");
	struct nsyms want = { 0 };
	struct target t;
	struct row *rows;
	char *out, *err;

	nm_syms(lib, true, "T", "exported_fn", &want);
	CHECK_EQ(want.nr, 1);
	CHECK_EQ(utrace(&out, &err, "-l", "libfoo:exported_fn", "--", prog, NULL), 0);
	CHECK_MSG(!*err, "stderr: %s", err);
	CHECK_EQ(parse_rows(out, false, &rows), 1);
	CHECK_STREQ(rows[0].obj, lib);
	CHECK_STREQ(rows[0].sym, "exported_fn");
	CHECK_EQ(rows[0].addr, want.v[0].addr);
	/* the program is stripped: no main */
	CHECK_EQ(utrace(&out, &err, "-l", "main", "--", prog, NULL), 2);
	check_one_error_line(err, "main in a stripped program");
	CHECK(!*out);
	/* but its PLT works through .dynsym */
	CHECK_EQ(utrace(&out, &err, "-l", "exported_fn@plt", "--", prog, NULL), 0);
	CHECK_EQ(parse_rows(out, false, &rows), 1);
	/* live, with every object */
	t = spawn(prog);
	CHECK_EQ(utrace(&out, &err, "-l", "*:exported_fn", "-p", pidstr(t.pid), NULL), 0);
	CHECK_EQ(parse_rows(out, false, &rows), 1);
	CHECK_STREQ(rows[0].obj, lib);
	CHECK_EQ(rows[0].addr, want.v[0].addr + bias_of(t.pid, lib));
	stop(&t);
}

TEST(path_object_without_pid)
{
	const char *lib = built("tests/targets/libfoo.so");
	char spec[PATH_MAX + 32];
	struct row *rows;
	char *out, *err;

	snprintf(spec, sizeof(spec), "%s:exported_fn", lib);
	CHECK_EQ(utrace(&out, &err, "-l", spec, NULL, NULL, NULL), 0);
	CHECK_EQ(parse_rows(out, false, &rows), 1);
	CHECK_STREQ(rows[0].sym, "exported_fn");
	/* a name, not a path, needs -p or a command */
	CHECK_EQ(utrace(&out, &err, "-l", "libfoo:exported_fn", NULL, NULL, NULL), 2);
	check_one_error_line(err, "no -p and no path");
}

TEST(several_pids)
{
	const char *path = built("tests/targets/s-list-pie");
	struct target a = spawn(path), b = spawn(path);
	char pids[64], ca[32], cb[32];
	struct row *rows;
	char *out, *err;

	snprintf(pids, sizeof(pids), "%d,%d", (int)a.pid, (int)b.pid);
	CHECK_EQ(utrace(&out, &err, "-l", "main", "-p", pids, NULL), 0);
	CHECK_EQ(parse_rows(out, true, &rows), 2);
	snprintf(ca, sizeof(ca), "[%d]", (int)a.pid);
	snprintf(cb, sizeof(cb), "[%d]", (int)b.pid);
	CHECK_STREQ(rows[0].pidcol, ca);
	CHECK_STREQ(rows[1].pidcol, cb);
	CHECK_EQ(rows[0].addr, bias_of(a.pid, path) + (rows[1].addr - bias_of(b.pid, path)));
	stop(&a);
	stop(&b);
}

/* Aliases: all listed, primary first; -v names the primary at the same address. */
TEST(aliases_verbose)
{
	const char *path = built("tests/targets/s-list-pie");
	char *out, *err, *line, *save = NULL;
	int aliases = 0;

	CHECK_EQ(utrace(&out, &err, "-v", "-l", "libc:*", "--", path), 0);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char obj[PATH_MAX], sym[512], size[32], primary[512];
		unsigned long long addr;
		char *note = strstr(line, "(alias of ");

		CHECK(sscanf(line, "%4095s %511s %llx %31s", obj, sym, &addr, size) == 4);
		if (!note)
			continue;
		CHECK(sscanf(note, "(alias of %511[^)])", primary) == 1);
		CHECK(strcmp(primary, sym));
		{
			char *o2, *e2, spec[600];
			struct row *rows;

			snprintf(spec, sizeof(spec), "libc:%s", primary);
			CHECK_EQ(utrace(&o2, &e2, "-l", spec, "--", path, NULL), 0);
			CHECK(parse_rows(o2, false, &rows) >= 1);
			CHECK_MSG(rows[0].addr == addr, "%s at %#llx, its primary %s at %#llx", sym,
				  addr, primary, rows[0].addr);
			free(rows);
			free(o2);
			free(e2);
		}
		if (++aliases >= 20)
			break;
	}
	CHECK(aliases > 0);
}

/* ---- errors: one line on stderr, status 2 or 1, never a crash ------------ */

TEST(bad_specs)
{
	const char *path = built("tests/targets/s-list-pie");
	static const char *const specs[] = { "",     "::",     "libc:", "0xZZ",
					     ":foo", "foo+zz", "@plt",	"a:b:c" };
	size_t i;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		char *out, *err;

		CHECK_EQ(utrace(&out, &err, "-l", specs[i], "--", path, NULL), 2);
		check_one_error_line(err, specs[i]);
		CHECK_MSG(strstr(err, "bad spec '"), "'%s': %s", specs[i], err);
		CHECK(!*out);
		free(out);
		free(err);
	}
}

TEST(unresolvable_specs)
{
	const char *path = built("tests/targets/s-list-pie");
	static const char *const specs[] = { "no_such_function_xyz", "nosuch*@plt",
					     "main+0x100000",	     "0x10",
					     "/no/such/lib.so:foo",  "libc:no_such_fn_xyz" };
	struct target t = spawn(path);
	size_t i;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		char *out, *err;

		CHECK_MSG(utrace(&out, &err, "-l", specs[i], "--", path, NULL) == 2, "%s",
			  specs[i]);
		check_one_error_line(err, specs[i]);
		CHECK(!*out);
		CHECK_MSG(utrace(&out, &err, "-l", specs[i], "-p", pidstr(t.pid), NULL) == 2, "%s",
			  specs[i]);
		check_one_error_line(err, specs[i]);
	}
	stop(&t);
}

TEST(pending_library)
{
	struct target t = spawn(built("tests/targets/s-list-pie"));
	char *out, *err;

	CHECK_EQ(utrace(&out, &err, "-l", "libnotloaded:foo", "-p", pidstr(t.pid), NULL), 0);
	check_one_error_line(err, "pending");
	CHECK(strstr(err, "pending"));
	CHECK(!*out);
	stop(&t);
}

TEST(missing_pid)
{
	char *out, *err;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0); /* reaped: the pid is free */
	CHECK_EQ(utrace(&out, &err, "-l", "main", "-p", pidstr(pid), NULL), 1);
	check_one_error_line(err, "missing pid");
	CHECK(strstr(err, "no such process"));
	CHECK_EQ(utrace(&out, &err, "-l", "::", "-p", pidstr(pid), NULL), 2);
	check_one_error_line(err, "bad spec before pid");
	CHECK_EQ(utrace(&out, &err, "-l", "main", "--", "/no/such/program", NULL), 1);
	check_one_error_line(err, "missing program");
}

/*
 * A process we may not trace: as root, a child running as uid 65534 and
 * utrace run from another child as uid 65533. As a user, pid 1.
 */
TEST(forbidden_pid)
{
	const char *exe = getenv("UTRACE");
	int status, go[2];
	pid_t victim, checker;
	char *out, *err;

	if (!exe)
		SKIP("UTRACE is not set");
	if (geteuid() != 0) {
		if (kill(1, 0) == 0 || errno != EPERM)
			SKIP("not root, and pid 1 is ours");
		CHECK_EQ(utrace(&out, &err, "-l", "main", "-p", "1", NULL), 1);
		check_one_error_line(err, "pid 1");
		CHECK(strstr(err, "not allowed to trace"));
		return;
	}
	if (access(exe, X_OK))
		SKIP("%s is not executable", exe);
	CHECK(pipe(go) == 0);
	victim = fork();
	CHECK(victim >= 0);
	if (victim == 0) {
		char c;

		close(go[1]);
		if (setgid(65534) || setuid(65534))
			_exit(1);
		while (read(go[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(go[0]);
	checker = fork();
	CHECK(checker >= 0);
	if (checker == 0) {
		close(go[1]);
		if (setgid(65533) || setuid(65533))
			harness_fail(__FILE__, __LINE__, "cannot drop to uid 65533");
		usleep(100 * 1000); /* let the victim drop its uid first */
		CHECK_EQ(utrace(&out, &err, "-l", "main", "-p", pidstr(victim), NULL), 1);
		check_one_error_line(err, "forbidden pid");
		CHECK_MSG(strstr(err, "not allowed to trace"), "%s", err);
		err[strcspn(err, "\n")] = '\0';
		harness_note("%s", err);
		_exit(0);
	}
	waitpid(checker, &status, 0);
	close(go[1]);
	waitpid(victim, NULL, 0);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "checker status %#x", status);
}
