/* SPDX-License-Identifier: MIT */
/*
 * test-ltrace.c - ltrace's spellings of function tracing (docs/cli.md
 * "ltrace spellings"), with ltrace as the oracle where it is installed:
 * -e FILTER (calls through PLTs), -x FILTER (entry points), and the
 * spellings refused in one line. Runs $UTRACE on tests/targets/s-trace and
 * ls. Suite e2e.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

HARNESS_JOBS(3)

static bool have_ltrace(void)
{
	char *argv[] = { "ltrace", "-V", NULL };

	return harness_run(argv, NULL, NULL, 10) == 0;
}

/*
 * The calls in @text (utrace's entry lines "[tid] NAME(ARGS)" or ltrace's
 * "[obj->]NAME(ARGS...) = R"), one "NAME(ARGS" (with @args, else "NAME")
 * per line, in order, in a malloc'ed string: what both tools saw called.
 */
static char *calls(const char *text, const char *const *names, bool args)
{
	size_t cap = strlen(text) + 1, n = 0;
	char *out = calloc(1, cap);
	const char *line = text;

	for (; line && *line; line = strchr(line, '\n'), line += line ? 1 : 0) {
		const char *p = line, *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *const *nm;

		bool ours = *p == '[';

		if (ours) /* utrace's [tid] */
			p = strchr(p, ']') ? strchr(p, ']') + 2 : p;
		if (strstr(p, "->") && strstr(p, "->") < strchr(p, '(')) /* ltrace's caller */
			p = strstr(p, "->") + 2;
		for (nm = names; *nm; nm++) {
			size_t l = strlen(*nm);
			const char *q;

			if (strncmp(p, *nm, l) || p[l] != '(' ||
			    (ours && !strncmp(p + l, "() = ", 5)))
				continue; /* not it, or utrace's return line "NAME() = R" */
			/* the arguments: up to ltrace's " = " or "<unfinished", or the end */
			q = p + l;
			while (q < line + len && strncmp(q, ") ", 2) && strncmp(q, " <unf", 5) &&
			       q[0] != '\n')
				q++;
			if (q == line + len && q[-1] == ')')
				q--;
			if (!args) /* ltrace without a prototype shows registers: names only */
				q = p + l;
			memcpy(out + n, p, q - p);
			n += q - p;
			out[n++] = '\n';
			break;
		}
	}
	out[n] = '\0';
	return out;
}

/* utrace @uargs and ltrace @largs on @cmd: the same calls of @names */
static void compare_ltrace(const char *const *uargs, const char *const *largs,
			   const char *const *cmd, const char *const *names, int want, bool args)
{
	const char *uargv[24], *largv[24];
	char *uerr = NULL, *lerr = NULL, *uc, *lc;
	int n = 0, m = 0, i;

	for (i = 0; uargs[i]; i++)
		uargv[n++] = uargs[i];
	uargv[n++] = "--";
	largv[m++] = "ltrace";
	for (i = 0; largs[i]; i++)
		largv[m++] = largs[i];
	for (i = 0; cmd[i]; i++) {
		uargv[n++] = cmd[i];
		largv[m++] = cmd[i];
	}
	uargv[n] = NULL;
	largv[m] = NULL;
	CHECK_EQ(run_utrace(uargv, NULL, &uerr), 0);
	uc = calls(uerr, names, args);
	/* @want: the calls expected, or -1: some */
	CHECK_MSG(want < 0 ? count_lines(uc) > 0 : count_lines(uc) == want, "%d calls, not %d:\n%s",
		  count_lines(uc), want, uerr);
	if (have_ltrace()) {
		CHECK_EQ(harness_run((char **)largv, NULL, &lerr, 60), 0);
		lc = calls(lerr, names, args);
		CHECK_MSG(!strcmp(uc, lc), "utrace:\n%s\nltrace:\n%s", uc, lc);
		free(lc);
	} else {
		harness_note("ltrace is not installed: utrace checked alone");
	}
	free(uc);
	free(uerr);
	free(lerr);
}

/* -e FILTER: the calls through the executable's PLT (@MAIN), as ltrace */
TEST_TIMEOUT(e_filter_plt, 120)
{
	const char *u1[] = { "-e", "malloc@MAIN", NULL }, *l1[] = { "-e", "malloc@MAIN", NULL };
	const char *u2[] = { "-e", "getenv+strlen@MAIN", NULL };
	const char *l2[] = { "-e", "getenv+strlen@MAIN", NULL };
	const char *t[] = { target(), "calls", NULL };
	const char *ls[] = { "ls", "/", NULL };
	const char *m[] = { "malloc", NULL }, *g[] = { "getenv", NULL };

	compare_ltrace(u1, l1, t, m, 10, true);
	/* ls calls getenv through its PLT a fixed number of times */
	compare_ltrace(u2, l2, ls, g, -1, true);
}

/*
 * ltrace's '-' rules: a function is traced when the last rule it matches
 * is a '+' one (ltrace(1)'s example, the calls of malloc and free except
 * libc's own); a chain that starts with '-' starts from everything; a '+'
 * after a '-' adds back. The same calls as ltrace.
 */
TEST_TIMEOUT(minus_rules_as_ltrace, 120)
{
	const char *u1[] = { "-e", "malloc+free-@libc.so*", NULL };
	const char *u2[] = { "-e", "-@libc.so*-@ld-linux*-getenv-strlen-puts-printf", NULL };
	const char *u3[] = { "-x", "work+leaf-leaf", NULL };
	const char *u4[] = { "-x", "work-work@MAIN+work", NULL };
	const char *t[] = { target(), "calls", NULL };
	const char *mf[] = { "malloc", "free", NULL }, *w[] = { "work", NULL };
	const char *l[] = { "leaf", NULL };
	char *out = NULL, *err = NULL;

	compare_ltrace(u1, u1, t, mf, 20, false); /* heap addresses differ */
	/* everything through the executable's PLT but these: malloc and free are left */
	compare_ltrace(u2, u2, t, mf, 20, false);
	compare_ltrace(u3, u3, t, w, 10, false);
	compare_ltrace(u3, u3, t, l, 0, false);
	compare_ltrace(u4, u4, t, w, 10, false);
	{
		const char *args[] = { "-c", "-e", "malloc-malloc", "--", target(), "calls", NULL };

		/* nothing left to trace: said, the command not run */
		CHECK_EQ(run_utrace(args, &out, &err), 2);
		note_lines(err);
		free(out);
		free(err);
	}
}

/* -x FILTER: entry points of the symbol table, chained with '+', as ltrace */
TEST_TIMEOUT(x_filter, 120)
{
	const char *u[] = { "-x", "work@MAIN+leaf@MAIN", NULL };
	const char *l[] = { "-x", "work@MAIN+leaf@MAIN", NULL };
	const char *u2[] = { "-x", "^answer$", NULL }; /* no @: every object */
	const char *l2[] = { "-x", "answer@MAIN", NULL };
	const char *t[] = { target(), "calls", NULL };
	const char *names[] = { "work", "leaf", NULL }, *a[] = { "answer", NULL };

	compare_ltrace(u, l, t, names, 20, false);
	compare_ltrace(u2, l2, t, a, 4, false);
}

static void one_line_error(const char *const *args, const char *what)
{
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 2);
	CHECK_MSG(err && count_lines(err) == 1 && !strncmp(err, "utrace: ", 8) && strstr(err, what),
		  "%s: stderr: %s", args[0], err ? err : "");
	free(out);
	free(err);
}

/*
 * ltrace's /regex/ rules (a SPEC's /REGEX/: POSIX extended, unanchored):
 * the same calls as ltrace's globs for the same names (ltrace 0.7's own
 * /regex/ ignores ^ and $), with '+' and '-' inside and around them; a
 * library's /regex/ is refused in one line.
 */
TEST_TIMEOUT(regex_rules, 120)
{
	const char *u1[] = { "-x", "/^(work|leaf)$/", NULL }, *l1[] = { "-x", "work+leaf", NULL };
	const char *u2[] = { "-e", "/^mal+oc$/@MAIN", NULL }, *l2[] = { "-e", "malloc@MAIN", NULL };
	const char *u3[] = { "-x", "/^(work|leaf)$/-leaf", NULL }, *l3[] = { "-x", "work", NULL };
	const char *bad[] = { "-e", "malloc@/libc/", "--", "true", NULL };
	const char *t[] = { target(), "calls", NULL };
	const char *wl[] = { "work", "leaf", NULL }, *m[] = { "malloc", NULL };

	compare_ltrace(u1, l1, t, wl, 20, false);
	compare_ltrace(u2, l2, t, m, 10, false);
	compare_ltrace(u3, l3, t, wl, 10, false);
	one_line_error(bad, "ltrace's /regex/ for a library is not supported yet");
	{
		/* every object's PLT: the agent's own library is none of the program's */
		const char *agent[] = { "-b", "agent", "-c",	    "-e", "/^read/",
					"--", "cat",   "/dev/null", NULL };
		char *out = NULL, *err = NULL;

		CHECK_EQ(run_utrace(agent, &out, &err), 0);
		CHECK_MSG(err && !strstr(err, "libutrace-agent") && summary_calls(err, "read") == 1,
			  "%s", err ? err : "");
		free(out);
		free(err);
	}
}

/*
 * What has no utrace equivalent yet, and the clashes (utrace's meaning
 * kept), each one line naming the utrace spelling, exit status 2; -L and
 * -A N are accepted (utrace assumes no default filter, prints no arrays).
 */
TEST_TIMEOUT(ltrace_misuse, 60)
{
	const char *n[] = { "-n", "2", "-s", "--", "true", NULL };
	const char *nx[] = { "-n", "x", "-e", "malloc", "--", "true", NULL };
	const char *ns[] = { "-n", "-e", "malloc", "--", "true", NULL };
	const char *w[] = { "-w", "99", "-e", "malloc", "--", "true", NULL };
	const char *l[] = { "-l", "libm.so.6", "--", "true", NULL };
	const char *c[] = { "-C", "-s", "-e", "malloc", "--", "true", NULL };
	const char *ca[] = {
		"-b", "agent", "-C", "-e", "malloc@MAIN", "--", target(), "calls", NULL
	};
	const char *ok[] = { "-L", "-A", "5", "-e", "malloc@MAIN", "--", target(), "calls", NULL };
	char *out = NULL, *err = NULL;

	one_line_error(n, "-n N (indent by call depth) is ltrace's, for function tracing");
	one_line_error(nx, "bad -n 'x': expected a number of spaces per level");
	one_line_error(ns, "-n before another option is strace's (syscall numbers), for -s");
	one_line_error(w, "bad -w '99': expected 1..32 frames");
	one_line_error(l, "ltrace's -l libm.so.6 (the calls into it) is -f 'libm.so.6:*'");
	one_line_error(c, "-C is strace's (the -c table and the events) with -s alone");
	/* the agent: the same writers as ptrace's */
	{
		char *o2 = NULL, *e2 = NULL;

		CHECK_EQ(run_utrace(ca, &o2, &e2), 0);
		free(o2);
		free(e2);
	}
	CHECK_EQ(run_utrace(ok, &out, &err), 0);
	CHECK_EQ(count(err, "malloc("), 20); /* entry and return lines */
	free(out);
	free(err);
}

/*
 * C++ names: -C -l shows them demangled (the names nm -C prints), and a
 * SPEC with "::" is a glob over the demangled names, with or without the
 * parameters (tests/targets/s-cxx, built where there is a C++ compiler).
 */
TEST_TIMEOUT(cxx_names, 60)
{
	const char *prog = built_path("tests/targets/s-cxx");
	const char *list[] = { "-C", "-l", "shapes::*", "--", prog, NULL };
	const char *trace[] = { "-f", "shapes::Circle::area*", "--", prog, "2", NULL };
	char *nm_argv[] = { "nm", "-C", (char *)prog, NULL };
	char *out = NULL, *err = NULL, *nm = NULL, *line;
	int names = 0;

	if (access(prog, X_OK))
		SKIP("no C++ compiler: tests/targets/s-cxx was not built");
	CHECK_EQ(harness_run(nm_argv, &nm, NULL, 30), 0);
	CHECK_EQ(run_utrace(list, &out, &err), 0);
	/* every function of namespace shapes in nm -C's list is listed, demangled */
	for (line = nm; line && *line; line = strchr(line, '\n'), line += line ? 1 : 0) {
		char type, name[512], want[600];

		if (sscanf(line, "%*s %c %511[^\n]", &type, name) != 2 ||
		    (type != 'T' && type != 'W'))
			continue;
		if (strncmp(name, "shapes::", 8) && !strstr(name, " shapes::"))
			continue;
		snprintf(want, sizeof(want), "  %s  ", name);
		CHECK_MSG(out && strstr(out, want), "'%s' not listed:\n%s", name, out ? out : "");
		names++;
	}
	CHECK_EQ(names, 4);
	CHECK_EQ(count_lines(out), 4);
	free(out);
	free(err);
	/* area(int) twice a round (once from area(int, int)), area(int, int) once: 2 rounds */
	CHECK_EQ(run_utrace(trace, &out, &err), 0);
	CHECK_STREQ(out, "ok calls=2\n");
	CHECK_EQ(count(err, "] _ZNK6shapes6Circle4areaEi("), 4);
	CHECK_EQ(count(err, "] _ZNK6shapes6Circle4areaEii("), 2);
	free(out);
	free(err);
	free(nm);
}

/*
 * The names of ltrace -C's lines ("shapes::Circle::area(int) const(...) =
 * 12", "<... NAME resumed> ...") in @text: one per line, in order.
 */
static char *ltrace_names(const char *text)
{
	char *out = calloc(1, strlen(text) + 2), *o = out;
	const char *line;

	for (line = text; line && *line; line = strchr(line, '\n'), line += line ? 1 : 0) {
		const char *end = strchr(line, '\n'), *p;

		if (strncmp(line, "shapes::", 8) || !end)
			continue;
		/* the name ends at the '(' that opens the arguments: after ") const" */
		p = strstr(line, ") const(");
		if (!p || p > end)
			continue;
		o += sprintf(o, "%.*s\n", (int)(p + 7 - line), line);
	}
	return out;
}

/* The same from utrace's entry lines "[tid] NAME(ARGS)": */
static char *utrace_names(const char *text)
{
	char *out = calloc(1, strlen(text) + 2), *o = out;
	const char *line;

	for (line = text; line && *line; line = strchr(line, '\n'), line += line ? 1 : 0) {
		const char *end = strchr(line, '\n'), *p = strstr(line, "] shapes::"), *q;

		if (!p || !end || p > end)
			continue;
		p += 2;
		q = strstr(p, ") const(");
		if (!q || q > end || !strncmp(q + 7, "() = ", 5))
			continue; /* a return line */
		o += sprintf(o, "%.*s\n", (int)(q + 7 - p), p);
	}
	return out;
}

/*
 * ltrace's -C with -f: C++ names demangled in every output, as ltrace -C
 * names them on the same run of tests/targets/s-cxx: the entry and return
 * lines, the -k frames, the -c table and JSON (name demangled, symbol
 * mangled), with ptrace and with the agent through the library.
 */
TEST_TIMEOUT(cxx_demangled_everywhere, 120)
{
	const char *prog = built_path("tests/targets/s-cxx");
	const char *text[] = { "-b", "ptrace", "-C", "-f", "shapes::Circle::area*",
			       "--", prog,     "2",  NULL };
	const char *stack[] = { "-b", "ptrace", "-C", "-k", "-f", "shapes::Circle::area*",
				"--", prog,	"1",  NULL };
	const char *table[] = { "-b", "ptrace", "-C", "-c", "-f", "shapes::Circle::area*",
				"--", prog,	"2",  NULL };
	const char *json[] = {
		"-b", "ptrace", "-C", "--format", "json", "-f", "shapes::Circle::area*",
		"--", prog,	"2",  NULL
	};
	char *lt_argv[] = { "ltrace", "-C", "-x", "*Circle*", (char *)prog, "2", NULL };
	char *out = NULL, *err = NULL, *lt = NULL, *a, *b;
	int pass;

	if (access(prog, X_OK))
		SKIP("no C++ compiler: tests/targets/s-cxx was not built");
	for (pass = 0; pass < 2; pass++) {
		if (pass) { /* the agent through the library: the same writers */
			text[1] = table[1] = json[1] = "agent";
		}
		CHECK_EQ(run_utrace(text, &out, &err), 0);
		/* area(int) twice (once from area(int, int)), area(int, int) once */
		CHECK_EQ(count(err, "] shapes::Circle::area(int) const("), 4);
		/* DWARF by the linkage name: this, then the int arguments; an int return */
		CHECK_EQ(count(err, "] shapes::Circle::area(int) const() = 12\n"), 2);
		CHECK_EQ(count(err, "] shapes::Circle::area(int, int) const() = 13\n"), 1);
		CHECK_MSG(strstr(err, "] shapes::Circle::area(int, int) const(0x") &&
				  strstr(err, ", 1, 1)\n"),
			  "%s", err);
		CHECK_EQ(count(err, "_ZNK"), 0);
		if (!pass && have_ltrace()) {
			/* the names and their order are ltrace -C's */
			CHECK_EQ(harness_run(lt_argv, NULL, &lt, 30), 0);
			a = ltrace_names(lt);
			b = utrace_names(err);
			CHECK_MSG(count_lines(a) == 3, "%s", lt);
			CHECK_STREQ(b, a);
			free(a);
			free(b);
			free(lt);
		}
		free(out);
		free(err);
		CHECK_EQ(run_utrace(table, &out, &err), 0);
		CHECK_MSG(strstr(err, " shapes::Circle::area(int) const\n") &&
				  strstr(err, " shapes::Circle::area(int, int) const\n"),
			  "%s", err);
		free(out);
		free(err);
		CHECK_EQ(run_utrace(json, &out, &err), 0);
		CHECK_EQ(count(err, "\"name\": \"shapes::Circle::area(int) const\", \"symbol\": "
				    "\"_ZNK6shapes6Circle4areaEi\""),
			 4);
		CHECK_EQ(count(err, "\"name\": \"shapes::Circle::area(int, int) const\", "
				    "\"symbol\": \"_ZNK6shapes6Circle4areaEii\""),
			 2);
		free(out);
		free(err);
	}
	/* the frames of -k: area(int) called from area(int, int) */
	CHECK_EQ(run_utrace(stack, &out, &err), 0);
	CHECK_MSG(strstr(err, " > shapes::Circle::area(int, int) const+0x"), "%s", err);
	free(out);
	free(err);
}

/*
 * "[0x55d0c0a011a5]   NAME(": the call site and the indentation of
 * utrace's or ltrace's entry line @line, the call site's offset in its
 * page (the same in both runs whatever the load address) in *@pgoff.
 */
static bool entry_line(const char *line, bool ours, unsigned int *pgoff, int *indent)
{
	unsigned long long ip;
	const char *p, *end = strchr(line, '\n'), *r;

	if (!end)
		end = line + strlen(line);
	if (ours) {
		p = strchr(line, ']');
		if (!p || p[1] != ' ')
			return false;
		line = p + 2;
	}
	if (sscanf(line, "[%llx] ", &ip) != 1)
		return false;
	p = strchr(line, ']') + 2;
	*indent = 0;
	while (p[*indent] == ' ')
		(*indent)++;
	if (strncmp(p + *indent, "shapes::", 8))
		return false;
	r = strstr(p, "() = ");
	if (r && r < end)
		return false; /* a return line */
	*pgoff = (unsigned int)(ip & 0xfff);
	return true;
}

static char *sites(const char *text, bool ours)
{
	char *out = calloc(1, strlen(text) + 2), *o = out;
	const char *line;

	for (line = text; line && *line; line = strchr(line, '\n'), line += line ? 1 : 0) {
		unsigned int off;
		int ind;

		if (entry_line(line, ours, &off, &ind))
			o += sprintf(o, "%03x %d\n", off, ind);
	}
	return out;
}

/*
 * ltrace's -n N (indent by the depth of traced calls) and -i (the call
 * site): area(int, int) calls area(int), which is indented; the call
 * sites are those ltrace -i prints on the same program. -w N: -k with at
 * most N frames. With ptrace and the agent through the library.
 */
TEST_TIMEOUT(ltrace_indent_and_call_sites, 120)
{
	const char *prog = built_path("tests/targets/s-cxx");
	const char *args[] = { "-b", "ptrace", "-n", "3", "-i", "-C", "-f", "shapes::Circle::area*",
			       "--", prog,     "1",  NULL };
	const char *w1[] = { "-b", "ptrace", "-w", "1", "-f", "*Circle*", "--", prog, "1", NULL };
	char *lt_argv[] = { "ltrace", "-n",	  "3",		"-i", "-C",
			    "-x",     "*Circle*", (char *)prog, "1",  NULL };
	char *out = NULL, *err = NULL, *lt = NULL, *a, *b = NULL;
	int pass;

	if (access(prog, X_OK))
		SKIP("no C++ compiler: tests/targets/s-cxx was not built");
	if (have_ltrace()) {
		CHECK_EQ(harness_run(lt_argv, NULL, &lt, 30), 0);
		b = sites(lt, false);
		free(lt);
	}
	for (pass = 0; pass < 2; pass++) {
		if (pass) {
			args[1] = "agent";
		}
		CHECK_EQ(run_utrace(args, &out, &err), 0);
		a = sites(err, true);
		/* area(int) at depth 0, area(int, int) at 0, its area(int) at 1 */
		CHECK_MSG(count_lines(a) == 3 && count(a, " 0\n") == 2 && count(a, " 3\n") == 1,
			  "%s\n%s", a, err);
		/* the return of the nested call is indented as its entry */
		CHECK_EQ(count(err, "]    shapes::Circle::area(int) const() = 12"), 1);
		if (b)
			CHECK_STREQ(a, b);
		free(a);
		free(out);
		free(err);
	}
	free(b);
	CHECK_EQ(run_utrace(w1, &out, &err), 0);
	/* one frame under each of the three entry lines */
	CHECK_EQ(count(err, "\n > "), 3);
	free(out);
	free(err);
}

/*
 * DWARF prototypes (tests/targets/s-dwarf, -g): enums by their
 * enumerators' names (a value without one as a number), float and double
 * arguments and returns from the xmm registers with ptrace, in text and
 * JSON; the agent's records carry no xmm registers: '?' there, enums
 * still by name.
 */
TEST_TIMEOUT(dwarf_enums_and_floats, 120)
{
	const char *prog = built_path("tests/targets/s-dwarf");
	const char *args[] = { "-b",   "ptrace", "-f",	     "paint", "-f", "scale", "-f",
			       "half", "-f",	 "level_of", "--",    prog, "1",     NULL };
	const char *json[] = { "-b",   "ptrace", "--format", "json", "-f", "scale", "-f",
			       "half", "-f",	 "level_of", "--",   prog, "1",	    NULL };
	char *out = NULL, *err = NULL;

	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_STREQ(out, "ok 1\n");
	CHECK_MSG(strstr(err, "] paint(COLOR_GREEN, 2)\n") && strstr(err, "] paint(7, 3)\n") &&
			  strstr(err, "] scale(3, 1.5, 4, 0.25)\n") &&
			  strstr(err, "] scale() = 5.5\n") && strstr(err, "] half(5.0)\n") &&
			  strstr(err, "] half() = 2.5\n") &&
			  strstr(err, "] level_of() = LEVEL_HIGH\n"),
		  "%s", err);
	free(out);
	free(err);
	CHECK_EQ(run_utrace(json, &out, &err), 0);
	CHECK_MSG(strstr(err, "\"name\": \"scale\", \"args\": [3, 1.5, 4, 0.25]}") &&
			  strstr(err, "\"name\": \"scale\", \"ret\": 5.5, ") &&
			  strstr(err, "\"name\": \"half\", \"args\": [5.0]}") &&
			  strstr(err, "\"name\": \"level_of\", \"ret\": \"LEVEL_HIGH\", "),
		  "%s", err);
	free(out);
	free(err);
	args[1] = "agent";
	CHECK_EQ(run_utrace(args, &out, &err), 0);
	CHECK_MSG(strstr(err, "] paint(COLOR_GREEN, 2)\n") &&
			  strstr(err, "] scale(3, ?, 4, ?)\n") &&
			  strstr(err, "] level_of() = LEVEL_HIGH\n"),
		  "%s", err);
	free(out);
	free(err);
}

/*
 * A libc function that failed and set errno (its prototype says so:
 * -1, MAP_FAILED) shows it as strace shows the syscall's: "= -1 ENOENT
 * (No such file or directory)", the same as strace on the same command;
 * "errno" in JSON. With ptrace (read in the stopped thread); the agent's
 * records carry no errno: "-1" alone.
 */
TEST_TIMEOUT(function_errno_as_strace, 120)
{
	const char *args[] = {
		"-b", "ptrace", "-f", "open", "--", "cat", "/nonexistent-utrace", "/etc/hostname/x",
		NULL
	};
	const char *json[] = { "-b",
			       "ptrace",
			       "--format",
			       "json",
			       "-f",
			       "open",
			       "--",
			       "cat",
			       "/nonexistent-utrace",
			       "/etc/hostname/x",
			       NULL };
	char *sargv[] = { "strace",
			  "-e",
			  "trace=openat",
			  "-P",
			  "/nonexistent-utrace",
			  "-P",
			  "/etc/hostname/x",
			  "cat",
			  "/nonexistent-utrace",
			  "/etc/hostname/x",
			  NULL };
	char *out = NULL, *err = NULL, *st = NULL, want[2][128], *p;
	int n = 0;

	if (harness_run((char *[]){ "strace", "-V", NULL }, NULL, NULL, 10))
		SKIP("no strace");
	CHECK_EQ(harness_run(sargv, NULL, &st, 30), 1);
	/* strace's endings of the two failed opens */
	for (p = st; p && (p = strstr(p, ") = -1 ")) && n < 2; p++) {
		snprintf(want[n], sizeof(want[n]), "] open() = %.*s\n", (int)strcspn(p + 4, "\n"),
			 p + 4);
		n++;
	}
	CHECK_MSG(n == 2 && strstr(want[0], "ENOENT (") && strstr(want[1], "ENOTDIR ("), "%s", st);
	CHECK_EQ(run_utrace(args, &out, &err), 1);
	CHECK_MSG(strstr(err, want[0]) && strstr(err, want[1]) &&
			  strstr(err, want[0]) < strstr(err, want[1]),
		  "%s\nstrace:\n%s", err, st);
	free(out);
	free(err);
	CHECK_EQ(run_utrace(json, &out, &err), 1);
	CHECK_EQ(count(err, "\"ret\": -1, \"errno\": \"ENOENT\""), 1);
	CHECK_EQ(count(err, "\"ret\": -1, \"errno\": \"ENOTDIR\""), 1);
	free(out);
	free(err);
	args[1] = "agent";
	CHECK_EQ(run_utrace(args, &out, &err), 1);
	CHECK_EQ(count(err, "] open() = -1\n"), 2);
	free(out);
	free(err);
	free(st);
}

/*
 * The shape of each call line in @text, one per line: "C NAME R" (a call on
 * one line, NAME(ARGS) = R), "U NAME" (NAME(ARGS <unfinished ...>) or
 * "R NAME R" (<... NAME resumed> ) = R). utrace's [tid] prefix and ltrace's
 * padding before " = " are dropped; other lines (the program's, +++) skipped.
 * Malloc'ed.
 */
static char *shapes(const char *text)
{
	size_t cap = strlen(text) + 64, n = 0;
	char *out = calloc(1, cap);
	const char *line = text;

	for (; line && *line; line = strchr(line, '\n'), line += line ? 1 : 0) {
		const char *end = strchr(line, '\n'), *p = line, *q, *eq;
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char l[512];

		if (len >= sizeof(l))
			len = sizeof(l) - 1;
		memcpy(l, line, len);
		l[len] = '\0';
		p = l;
		if (*p == '[' && strchr(p, ']'))
			p = strchr(p, ']') + 2;
		if (!strncmp(p, "<... ", 5)) {
			q = strstr(p, " resumed>");
			eq = strrchr(p, '=');
			if (!q || !eq)
				continue;
			n += (size_t)snprintf(out + n, cap - n, "R %.*s %s\n", (int)(q - p - 5),
					      p + 5, eq + 2);
			continue;
		}
		q = strchr(p, '(');
		if (!q || q == p || strchr(p, ' ') < q)
			continue; /* not a call line */
		if (strstr(p, " <unfinished ...>")) {
			n += (size_t)snprintf(out + n, cap - n, "U %.*s\n", (int)(q - p), p);
			continue;
		}
		eq = strrchr(p, '=');
		if (!eq || eq[1] != ' ')
			continue;
		n += (size_t)snprintf(out + n, cap - n, "C %.*s %s\n", (int)(q - p), p, eq + 2);
	}
	return out;
}

/*
 * --one-line: ltrace's layout, a call on one line unless other lines come
 * between its entry and return (then <unfinished ...> and <... f resumed>),
 * on both backends; the same shapes, names and values as ltrace's on the
 * same run (s-trace is deterministic without threads), and `utrace replay
 * --one-line` of a recording gives them too.
 */
TEST_TIMEOUT(one_line_calls_as_ltrace, 180)
{
	static const char *const backends[] = { "ptrace", "agent" };
	const char *largv[] = { "ltrace", "-x", "work+leaf+recurse+answer",
				"-e",	  "",	target(),
				"calls",  "3",	"0",
				"0",	  NULL };
	char file[] = "/tmp/utrace-oneline-XXXXXX";
	char *lerr = NULL, *lsh = NULL, *rout = NULL;
	int b, fd;

	if (have_ltrace()) {
		CHECK_EQ(harness_run((char **)largv, NULL, &lerr, 60), 0);
		lsh = shapes(lerr);
	} else {
		harness_note("ltrace is not installed: utrace checked alone");
	}
	for (b = 0; b < 2; b++) {
		const char *args[] = { "-b",	 backends[b], "--one-line", "-f", "work",   "-f",
				       "leaf",	 "-f",	      "recurse",    "-f", "answer", "--",
				       target(), "calls",     "3",	    "0",  "0",	    NULL };
		char *out = NULL, *err = NULL, *sh;

		CHECK_EQ(run_utrace(args, &out, &err), 0);
		sh = shapes(err);
		/* 3 work() each around a leaf(); 4 answer(); recurse(5) down to 0 */
		CHECK_EQ(count(sh, "U work\n"), 3);
		CHECK_EQ(count(sh, "C leaf 5\n"), 3);
		CHECK_EQ(count(sh, "R work "), 3);
		CHECK_EQ(count(sh, "C answer 7\n"), 4);
		CHECK_EQ(count(sh, "U recurse\n"), 5);
		CHECK_EQ(count(sh, "C recurse 0\n"), 1);
		CHECK_EQ(count(sh, "R recurse "), 5);
		CHECK(strstr(err, "] work(0 <unfinished ...>\n"));
		CHECK(strstr(err, "] leaf(\"hello\") = 5\n"));
		CHECK(strstr(err, "] <... work resumed> ) = 5\n"));
		CHECK(strstr(err, "] recurse(0) = 0\n"));
		CHECK_EQ(count(err, "() = "), 4); /* answer's only: no two-line form left */
		if (lsh)
			CHECK_MSG(!strcmp(sh, lsh), "-b %s:\n%s\nltrace:\n%s", backends[b], sh,
				  lsh);
		free(sh);
		free(out);
		free(err);
	}
	/* the recording's replay */
	CHECK((fd = mkstemp(file)) >= 0);
	close(fd);
	{
		const char *rec[] = { "record", "-o",	 file,	    "-f", "work",   "-f",
				      "leaf",	"-f",	 "recurse", "-f", "answer", "--",
				      target(), "calls", "3",	    "0",  "0",	    NULL };
		char *rargv[] = { (char *)utrace(), "replay", "--one-line", file, NULL };
		char *sh;

		CHECK_EQ(run_utrace(rec, NULL, NULL), 0);
		CHECK_EQ(harness_run(rargv, &rout, NULL, 60), 0);
		sh = shapes(rout);
		CHECK_EQ(count(sh, "U work\n"), 3);
		CHECK_EQ(count(sh, "R recurse "), 5);
		if (lsh)
			CHECK_MSG(!strcmp(sh, lsh), "replay:\n%s\nltrace:\n%s", sh, lsh);
		free(sh);
	}
	unlink(file);
	free(rout);
	free(lsh);
	free(lerr);
}

/*
 * --one-line with threads, -k and -s: every entry is either a whole line or
 * unfinished and resumed once in its own thread; the stack lines follow
 * their call's line; a syscall between entry and return makes it unfinished.
 */
TEST_TIMEOUT(one_line_threads_stacks_syscalls, 180)
{
	const char *thr[] = { "--one-line", "-f",    "work", "-f", "leaf", "--",
			      target(),	    "calls", "4",    "3",  "25",   NULL };
	const char *stk[] = { "-b", "ptrace", "--one-line", "-k", "-f", "leaf",
			      "--", target(), "calls",	    "1",  NULL };
	const char *sys[] = { "-b",	      "ptrace", "--one-line", "-s", "openat", "-f",
			      "libc:opendir", "--",	"ls",	      "/",  NULL };
	char *out = NULL, *err = NULL, *sh, *p;

	CHECK_EQ(run_utrace(thr, &out, &err), 0);
	sh = shapes(err);
	/* 4 + 3 * 25 calls of each */
	CHECK_EQ(count(sh, "U work\n") + count(sh, "C work "), 79);
	CHECK_EQ(count(sh, "U work\n"), count(sh, "R work "));
	CHECK_EQ(count(sh, "U leaf\n") + count(sh, "C leaf 5\n"), 79);
	CHECK_EQ(count(sh, "U leaf\n"), count(sh, "R leaf 5\n"));
	CHECK_EQ(count(err, "() = "), 0);
	free(sh);
	free(out);
	free(err);

	out = err = NULL;
	CHECK_EQ(run_utrace(stk, &out, &err), 0);
	p = strstr(err, "] leaf(\"hello\") = 5\n");
	CHECK_MSG(p, "%s", err);
	if (p) {
		p = strchr(p, '\n') + 1;
		CHECK(!strncmp(p, " > work+0x", 10));
	}
	free(out);
	free(err);

	out = err = NULL;
	CHECK_EQ(run_utrace(sys, &out, &err), 0);
	/* opendir() opens: its line is unfinished, the openat(2) comes, then it resumes */
	p = strstr(err, "] opendir(\"/\" <unfinished ...>\n");
	CHECK_MSG(p, "%s", err);
	if (p) {
		CHECK(strstr(p, "] openat(AT_FDCWD, \"/\", "));
		CHECK(strstr(p, "] <... opendir resumed> ) = 0x"));
	}
	free(out);
	free(err);
}
