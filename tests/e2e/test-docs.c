/* SPDX-License-Identifier: MIT */
/*
 * test-docs.c - the documentation says what the program does, and
 * `meson install` ships it.
 *
 * help_in_man, help_in_cli_md: every option `utrace --help` lists is
 * documented in the man page source (docs/man/utrace.1.scd, as a bold
 * *-x* / *--long* term) and in docs/cli.md.
 *
 * install: `meson install --destdir` of this build puts the binary, the
 * agent, the man pages and both completions where Debian looks for them,
 * and the installed libutrace.pc names every library libutrace.so needs
 * (pkg-config --static --libs against readelf's NEEDED).
 *
 * Runs utrace only for --help; traces nothing (suite unit).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

static char *source_file(const char *rel)
{
	const char *src = getenv("UTRACE_SOURCE_DIR");
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", src ? src : ".", rel);
	return read_file(path);
}

/*
 * The options of --help: every word that starts with '-' followed by a
 * letter, or "--" and a letter, up to the first character that cannot be
 * in an option name ("--syscalls[=SET]" gives "--syscalls"). Calls @fn on
 * each; returns how many.
 */
static int for_each_option(const char *help, void (*fn)(const char *opt, void *ctx), void *ctx)
{
	const char *p = help;
	int n = 0;

	for (; *p; p++) {
		char opt[64];
		size_t len = 0;

		if (*p != '-' || (p > help && !strchr(" ,([", p[-1])))
			continue;
		if (!(isalpha((unsigned char)p[1]) ||
		      (p[1] == '-' && isalpha((unsigned char)p[2]))))
			continue;
		while (p[len] && (isalnum((unsigned char)p[len]) || p[len] == '-') &&
		       len < sizeof(opt) - 1)
			len++;
		memcpy(opt, p, len);
		opt[len] = '\0';
		/* a short option is one letter, repeated at most (-tt, -ttt) */
		if (opt[1] != '-' && len > 2 && opt[2] != opt[1]) {
			p += len - 1;
			continue;
		}
		fn(opt, ctx);
		n++;
		p += len - 1;
	}
	return n;
}

struct doc_check {
	const char *text, *what;
	bool bold; /* scdoc: the option must be a bold term: "*-x*" or "*-x" */
	int missing;
};

static void check_option(const char *opt, void *ctx)
{
	struct doc_check *d = ctx;
	char needle[80];
	const char *p;
	size_t len = strlen(opt);

	if (d->bold) {
		snprintf(needle, sizeof(needle), "*%s", opt);
		for (p = strstr(d->text, needle); p; p = strstr(p + 1, needle))
			if (!isalnum((unsigned char)p[len + 1]) && p[len + 1] != '-')
				return;
	} else {
		for (p = strstr(d->text, opt); p; p = strstr(p + 1, opt))
			if ((p == d->text || !isalnum((unsigned char)p[-1])) &&
			    !isalnum((unsigned char)p[len]) && p[len] != '-')
				return;
	}
	harness_note("%s is in utrace --help but not in %s", opt, d->what);
	d->missing++;
}

static char *help_text(void)
{
	char *argv[] = { (char *)utrace(), "--help", NULL };
	char *out = NULL;

	CHECK_EQ(harness_run(argv, &out, NULL, 30), 0);
	CHECK(out && strstr(out, "usage: utrace"));
	return out;
}

TEST(help_in_man)
{
	char *help = help_text(), *man = source_file("docs/man/utrace.1.scd");
	struct doc_check d = { .text = man, .what = "docs/man/utrace.1.scd", .bold = true };
	int n;

	CHECK(man);
	n = for_each_option(help, check_option, &d);
	harness_note("%d options of --help checked", n);
	CHECK(n > 40);
	CHECK_EQ(d.missing, 0);
	free(help);
	free(man);
}

TEST(help_in_cli_md)
{
	char *help = help_text(), *md = source_file("docs/cli.md");
	struct doc_check d = { .text = md, .what = "docs/cli.md" };

	CHECK(md);
	CHECK(for_each_option(help, check_option, &d) > 40);
	CHECK_EQ(d.missing, 0);
	/* the exit statuses the CLI uses for a COMMAND that cannot run */
	CHECK(strstr(md, "127") && strstr(md, "126"));
	free(help);
	free(md);
}

static bool exists(const char *dir, const char *rel)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", dir, rel);
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		return true;
	harness_note("not installed: %s", rel);
	return false;
}

TEST_TIMEOUT(install, 300)
{
	const char *build = getenv("UTRACE_BUILD_DIR");
	char dest[] = "/tmp/utrace-install-XXXXXX", *out = NULL, cmd[8192], *p;
	char *meson[] = { "meson",     "install", "-C",	     (char *)build, "--no-rebuild",
			  "--destdir", dest,	  "--quiet", NULL };
	char man[4096];
	FILE *f;
	int bad = 0;

	if (!build)
		SKIP("UTRACE_BUILD_DIR is not set");
	snprintf(man, sizeof(man), "%s/docs/man/utrace.1", build);
	if (access(man, R_OK))
		SKIP("the man pages were not built (scdoc is missing)");
	CHECK(mkdtemp(dest));
	CHECK_EQ(harness_run(meson, NULL, NULL, 240), 0);
	/* the prefix the build was configured with: where bin/utrace went */
	snprintf(cmd, sizeof(cmd), "cd %s && find . -path '*/bin/utrace'", dest);
	f = popen(cmd, "r");
	CHECK(f && fgets(man, sizeof(man), f));
	pclose(f);
	man[strcspn(man, "\n")] = '\0';
	p = strstr(man, "/bin/utrace");
	CHECK(p);
	*p = '\0'; /* "./usr/local" */
	snprintf(cmd, sizeof(cmd), "%s/%s", dest, man + 1);
	bad += !exists(cmd, "/bin/utrace");
	bad += !exists(cmd, "/share/man/man1/utrace.1");
	bad += !exists(cmd, "/share/man/man7/utrace-module.7");
	bad += !exists(cmd, "/share/bash-completion/completions/utrace");
	bad += !exists(cmd, "/share/zsh/vendor-completions/_utrace");
	bad += !exists(cmd, "/include/utrace/utrace.h");
	bad += !exists(cmd, "/include/utrace/module.h");
	CHECK_EQ(bad, 0);

	/*
	 * Every library libutrace.so needs, in pkg-config --static --libs:
	 * NEEDED libZydis.so.4 wants -lZydis. libc and the loader aside.
	 */
	{
		char pc[8192], needed[8192], *line, *save = NULL;
		char *sh[] = { "sh", "-c", pc, NULL };
		char *libs = NULL;

		snprintf(
			pc, sizeof(pc),
			"d=$(dirname $(find %s -name libutrace.pc)) && "
			"PKG_CONFIG_PATH=$d PKG_CONFIG_SYSROOT_DIR= pkg-config --static --libs libutrace",
			dest);
		CHECK_EQ(harness_run(sh, &libs, NULL, 30), 0);
		harness_note("pkg-config --static --libs libutrace: %s", libs);
		snprintf(pc, sizeof(pc),
			 "readelf -d $(find %s -name 'libutrace.so.*.*') | "
			 "sed -n 's/.*Shared library: \\[lib\\([^].]*\\)\\.so.*/\\1/p'",
			 dest);
		out = NULL;
		CHECK_EQ(harness_run(sh, &out, NULL, 30), 0);
		snprintf(needed, sizeof(needed), "%s", out);
		for (line = strtok_r(needed, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char flag[128];

			/* libc, the loader, and a sanitizer build's runtimes (-fsanitize links them) */
			if (!strcmp(line, "c") || !strncmp(line, "ld-linux", 8) ||
			    !strcmp(line, "asan") || !strcmp(line, "ubsan") ||
			    !strcmp(line, "lsan") || !strcmp(line, "tsan"))
				continue;
			snprintf(flag, sizeof(flag), "-l%s ", line);
			if (!strstr(libs, flag)) {
				harness_note("libutrace.so needs lib%s.so; libutrace.pc lacks -l%s",
					     line, line);
				bad++;
			}
		}
		CHECK_EQ(bad, 0);
		free(libs);
		free(out);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dest);
	CHECK_EQ(system(cmd), 0);
}

/*
 * The bash completion completes options and their values (skips without
 * the bash-completion package: scripts/deps.sh --with-optional).
 */
TEST(bash_completion)
{
	const char *lib = "/usr/share/bash-completion/bash_completion";
	const char *src = getenv("UTRACE_SOURCE_DIR");
	char script[8192], *out = NULL;
	char *argv[] = { "bash", "-c", script, NULL };

	if (access(lib, R_OK))
		SKIP("bash-completion is not installed");
	snprintf(
		script, sizeof(script),
		"source %s 2>/dev/null; source %s/completions/utrace.bash; "
		"t() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMP_LINE=\"$*\"; "
		"COMP_POINT=${#COMP_LINE}; COMPREPLY=(); _utrace; echo \"$*: ${COMPREPLY[*]}\"; }; "
		"t utrace --for; t utrace -X r; t utrace -b a; t utrace -s %%f; t utrace --succ",
		lib, src ? src : ".");
	CHECK_EQ(harness_run(argv, &out, NULL, 30), 0);
	CHECK_MSG(out && strstr(out, "utrace --for: --format\n") &&
			  strstr(out, "utrace -X r: raw\n") &&
			  strstr(out, "utrace -b a: auto agent\n") &&
			  strstr(out, "utrace -s %f: %file\n") &&
			  strstr(out, "utrace --succ: --successful-only\n"),
		  "%s", out ? out : "");
	free(out);
}
