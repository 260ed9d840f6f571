/* SPDX-License-Identifier: MIT */
/*
 * main.c - option parsing for the utrace command (docs/cli.md) and dispatch
 * to the sub-commands. Runs in the tracer process.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "cli.h"
#include "launch.h"
#include "output.h"
#include "protos.h"
#include "sysdec.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;

	output_break_stderr(); /* an open --one-line call line ends first */
	fputs("utrace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_lib_error(const char *what, int err)
{
	char buf[256];

	utrace_strerror(err, buf, sizeof(buf));
	cli_error("%s: %s", what, buf);
}

int cli_parse_every(const char *s, uint64_t *ret_every)
{
	unsigned long long v;
	char *end;

	/* strtoull() takes "-1" (as ULLONG_MAX) and leading blanks: digits only */
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || !v)
		return -EINVAL;
	*ret_every = v;
	return 0;
}

/*
 * While attaching or injecting, the library's warnings are held back: when
 * it fails, the one line printed is ours, which says what to do.
 */
static char held_msg[512];
static utrace_print_fn_t chained_print;

static int hold_print(enum utrace_print_level level, const char *fmt, va_list ap)
{
	if (level <= UTRACE_WARN)
		return vsnprintf(held_msg, sizeof(held_msg), fmt, ap);
	return chained_print ? chained_print(level, fmt, ap) : 0;
}

void cli_hold_warnings(void)
{
	held_msg[0] = '\0';
	chained_print = utrace_set_print(hold_print);
}

void cli_release_warnings(bool print)
{
	utrace_set_print(chained_print);
	if (print && held_msg[0])
		fprintf(stderr, "utrace: %s", held_msg);
}

int cli_attach_pids(struct utrace_session *s, const pid_t *pids, int nr)
{
	int i, err;

	for (i = 0; i < nr; i++) {
		pid_t pid = pids[i];
		char what[128];

		cli_hold_warnings();
		err = utrace_session__attach(s, pid);
		cli_release_warnings(!err);
		if (!err)
			continue;
		if (err == -ESRCH)
			cli_error("cannot attach to pid %d: no such process (it has exited?)", pid);
		else if (err == -UTRACE_ERRNO__TRACED)
			cli_error("cannot attach to pid %d: it is already traced by another "
				  "process (gdb, strace...); detach that tracer first",
				  pid);
		else if (err == -EPERM || err == -EACCES)
			cli_error("cannot attach to pid %d: permission denied (check "
				  "/proc/sys/kernel/yama/ptrace_scope or run as its owner)",
				  pid);
		else if (err == -EINVAL)
			cli_error("cannot attach to pid %d: not a process id (a thread id?)", pid);
		else {
			snprintf(what, sizeof(what), "cannot attach to pid %d", pid);
			cli_lib_error(what, err);
		}
		return err;
	}
	return 0;
}

static int cli_print(enum utrace_print_level level, const char *fmt, va_list ap)
{
	static int max = -2;

	if (max == -2) {
		const char *s = getenv("UTRACE_LOG_LEVEL");

		max = UTRACE_WARN;
		if (s && !strcmp(s, "info"))
			max = UTRACE_INFO;
		else if (s && !strcmp(s, "debug"))
			max = UTRACE_DEBUG;
	}
	if ((int)level > max)
		return 0;
	output_break_stderr();
	fputs("utrace: ", stderr);
	return vfprintf(stderr, fmt, ap);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: utrace [OPTIONS] -- COMMAND [ARG...]   launch COMMAND and trace it\n"
		"       utrace [OPTIONS] -p PID[,PID...]       attach to running processes\n"
		"       utrace -a [OPTIONS] [-- COMMAND]       every process that runs the SPECs'\n"
		"                                              files (kernel backend, root)\n"
		"       utrace -l SPEC [-p PID | -- COMMAND]   list the probe points SPEC matches\n"
		"       utrace record [-o FILE] [OPTIONS] -- COMMAND | -p PID   every call into FILE\n"
		"       utrace replay|report [--graph]|dump --chrome|--folded FILE   read it back\n"
		"\n"
		"What to trace:\n"
		"  -f, --func SPEC          calls and returns of matching functions\n"
		"                           (-f followed by another option: -F, as in strace)\n"
		"  -u, --uprobe SPEC        entry probe only\n"
		"  -r, --uretprobe SPEC     return probe only\n"
		"  -s[SET], -s SET, --syscalls[=SET] system calls (names, %%file %%process\n"
		"                           %%network %%signal %%memory %%desc %%ipc, /REGEX;\n"
		"                           '!' negates)\n"
		"How:\n"
		"  -c, --summary            summary table at exit\n"
		"  -H, --hist               log2 latency histograms at exit\n"
		"  -k, --stack              user stack with each entry event\n"
		"  -S, --strsize N          bytes of string arguments to show (default 32)\n"
		"      --inject SPEC=VALUE[@EVERY]  fault injection\n"
		"  -m, --module FILE.so     load a C probe module\n"
		"  -o, --output FILE        write events to FILE instead of stderr\n"
		"      --format text|json|chrome\n"
		"  -F, --follow-forks       also trace child processes\n"
		"  -a, --all                every process running the SPECs' files, started\n"
		"                           before or after (implies -b kernel)\n"
		"  -b, --backend auto|agent|ptrace|kernel\n"
		"  -d, --duration SEC       detach after SEC seconds\n"
		"      --lossy              drop (and count) events when a ring is full,\n"
		"                           rather than make the probed thread wait\n"
		"      --one-line           a call on one line, f(1) = 3, as ltrace; when other\n"
		"                           lines come between: <unfinished ...>, <... f resumed>\n"
		"  -t, -tt, -ttt, -T        timestamps and durations, as in strace\n"
		"  -q, -v                   quieter, more verbose\n"
		"      --color auto|always|never\n"
		"  -l, --list SPEC          list matching probe points and how each is probed\n"
		"      --why                with -l, explain refused sites\n"
		"  -h, --help, -V, --version\n"
		"strace spellings (system calls; any of them implies -s):\n"
		"  -e trace=SET, --trace=SET    as -s SET (-e SET too)\n"
		"  -e signal=SET, --signal=SET  signals to show (names or numbers, '!' negates)\n"
		"  -e status=SET, --status=SET  successful,failed,unfinished,unavailable,detached\n"
		"  -z, --successful-only    only calls that succeeded\n"
		"  -Z, --failed-only        only calls that failed\n"
		"  -P, --trace-path PATH    only calls that use PATH (a name or an fd to it)\n"
		"  -X, --const-print-style raw|abbrev|verbose  constants as numbers, names, both\n"
		"  -e inject=SET:error=E|retval=N[:when=EXPR], --inject=SET:...\n"
		"                           the calls fail or return N, unrun (strace's when=)\n"
		"  -e fault=SET[:error=E][:when=EXPR], --fault=SET...  error=ENOSYS by default\n"
		"  -y, --decode-fds[=path]  descriptors with their paths: 3</etc/hosts>\n"
		"  -yy, --decode-fds=all    and sockets' addresses, devices, pidfds\n"
		"  -ff                      with -o FILE: each thread's lines in FILE.TID\n"
		"  -C                       the -c table and the events (with -f, -l: C++\n"
		"                           names demangled, ltrace's -C)\n"
		"  -s N, --string-limit N   as -S N\n"
		"  -w, --summary-wall-clock, --seccomp-bpf  accepted: what utrace does anyway\n"
		"ltrace spellings (function tracing):\n"
		"  -e FILTER                ltrace's [+-]SYMBOL[@LIB]... rules: calls through\n"
		"                           PLTs (@MAIN: the executable's; no @: every object's;\n"
		"                           '-' takes away: -e 'malloc+free-@libc.so*')\n"
		"  -x FILTER                the same rules for entry points (as -f)\n"
		"  -n N                     indent by N spaces per level of traced calls (-n\n"
		"                           before another option: strace's syscall numbers)\n"
		"  -i                       the call site (return address) of each call (with\n"
		"                           -s: strace's -i, the instruction pointer)\n"
		"  -w N                     the stack of each call, N frames (-k)\n"
		"  -L, -A N                 accepted: utrace assumes no filter, prints no arrays\n");
}

enum {
	OPT_INJECT = 256,
	OPT_FORMAT,
	OPT_COLOR,
	OPT_WHY,
	OPT_SYSCALLS,
	OPT_TRACE,
	OPT_SIGNAL,
	OPT_STATUS,
	OPT_SECCOMP_BPF,
	OPT_STRING_LIMIT,
	OPT_WALL_CLOCK,
	OPT_FAULT,
	OPT_LOSSY,
	OPT_ONE_LINE,
	OPT_DECODE_FDS,
	OPT_SUMMARY_ONLY,
	OPT_OUTPUT_SEPARATELY,
};

static const struct option long_opts[] = {
	{ "func", required_argument, NULL, 'f' },
	{ "uprobe", required_argument, NULL, 'u' },
	{ "uretprobe", required_argument, NULL, 'r' },
	{ "syscalls", optional_argument, NULL, OPT_SYSCALLS },
	{ "summary", no_argument, NULL, 'c' },
	{ "hist", no_argument, NULL, 'H' },
	{ "stack", no_argument, NULL, 'k' },
	{ "strsize", required_argument, NULL, 'S' },
	{ "inject", required_argument, NULL, OPT_INJECT },
	{ "module", required_argument, NULL, 'm' },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "follow-forks", no_argument, NULL, 'F' },
	{ "all", no_argument, NULL, 'a' },
	{ "backend", required_argument, NULL, 'b' },
	{ "duration", required_argument, NULL, 'd' },
	{ "color", required_argument, NULL, OPT_COLOR },
	{ "list", required_argument, NULL, 'l' },
	{ "why", no_argument, NULL, OPT_WHY },
	{ "pid", required_argument, NULL, 'p' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	/* strace's long spellings */
	{ "trace", required_argument, NULL, OPT_TRACE },
	{ "signal", required_argument, NULL, OPT_SIGNAL },
	{ "status", required_argument, NULL, OPT_STATUS },
	{ "successful-only", no_argument, NULL, 'z' },
	{ "failed-only", no_argument, NULL, 'Z' },
	{ "trace-path", required_argument, NULL, 'P' },
	{ "const-print-style", required_argument, NULL, 'X' },
	{ "string-limit", required_argument, NULL, OPT_STRING_LIMIT },
	{ "summary-wall-clock", no_argument, NULL, OPT_WALL_CLOCK },
	{ "seccomp-bpf", no_argument, NULL, OPT_SECCOMP_BPF },
	{ "fault", required_argument, NULL, OPT_FAULT },
	{ "lossy", no_argument, NULL, OPT_LOSSY },
	{ "one-line", no_argument, NULL, OPT_ONE_LINE },
	{ "decode-fds", optional_argument, NULL, OPT_DECODE_FDS },
	/* strace's long spellings of utrace's short options */
	{ "summary-only", no_argument, NULL, OPT_SUMMARY_ONLY },
	{ "syscall-times", no_argument, NULL, 'T' },
	{ "stack-trace", no_argument, NULL, 'k' },
	{ "instruction-pointer", no_argument, NULL, 'i' },
	{ "output-separately", no_argument, NULL, OPT_OUTPUT_SEPARATELY },
	{ "attach", required_argument, NULL, 'p' },
	{ NULL, 0, NULL, 0 },
};

/*
 * strace's and ltrace's options utrace does not have: what they are, and
 * the utrace spelling if there is one, said with "invalid option". Short
 * ones are "-X", long ones "--name" (matched up to a '=').
 */
static const struct {
	const char *opt, *what;
} foreign_opts[] = {
	{ "-D", "strace's -D (the tracer as a detached grandchild) is not supported" },
	{ "-E", "strace's -E VAR=VAL (the command's environment): use env VAR=VAL COMMAND" },
	{ "-I", "strace's -I (interruptible) is not needed: Ctrl-C always detaches cleanly" },
	{ "-O", "strace's -O (overhead for -c) is not supported" },
	{ "-U", "strace's -U (the -c columns) is not supported" },
	{ "-Y", "strace's -Y (command names for pids) is not supported yet" },
	{ "--env", "strace's --env VAR=VAL: use env VAR=VAL COMMAND" },
	{ "--columns", "strace's --columns (the -c columns) is not supported" },
	{ "--summary-columns", "strace's --summary-columns is not supported" },
	{ "--summary-sort-by", "strace's --summary-sort-by is not supported: -c sorts by time" },
	{ "--timestamps", "strace's --timestamps: use -t, -tt or -ttt" },
	{ "--absolute-timestamps", "strace's --absolute-timestamps: use -t, -tt or -ttt" },
	{ "--relative-timestamps",
	  "strace's --relative-timestamps (-r) is not supported: use -ttt or -T" },
	{ "--syscall-number", "strace's --syscall-number (-n) is not supported" },
	{ "--quiet", "strace's --quiet=...: use -q" },
	{ "--no-abbrev", "strace's --no-abbrev (-v) is not supported yet" },
	{ "--raw", "strace's --raw (-e raw=) is not supported yet" },
	{ "--decode-pids", "strace's --decode-pids (-Y) is not supported yet" },
	{ "--detach-on",
	  "strace's --detach-on is not supported: -d SEC detaches after SEC seconds" },
	{ "--daemonize", "strace's --daemonize (-D) is not supported" },
	{ "--user",
	  "strace's and ltrace's --user (-u USER): run the command with sudo -u USER instead" },
	{ "--kill-on-exit",
	  "strace's --kill-on-exit is not supported: utrace detaches, the program runs on" },
	{ "--argv0", "strace's --argv0 is not supported" },
	{ "--library", "ltrace's --library LIB: use -f 'LIB:*'" },
	{ "--demangle", "ltrace's --demangle: use -C" },
	{ "--indent", "ltrace's --indent N: use -n N" },
	{ "--align", "ltrace's --align: not supported" },
	{ "--config",
	  "ltrace's --config (-F FILE): prototypes come from DWARF and utrace's table" },
	{ "--where", "ltrace's --where N (-w N): use -w N or -k" },
	{ "--no-signals", "ltrace's --no-signals (-b) is not needed: -f shows no signals" },
};

/* The line for an unknown option @opt ("-D", "--summary=x"), or NULL. */
static const char *foreign_opt(const char *opt)
{
	size_t i, len = strcspn(opt, "=");

	for (i = 0; i < sizeof(foreign_opts) / sizeof(foreign_opts[0]); i++)
		if (strlen(foreign_opts[i].opt) == len && !strncmp(foreign_opts[i].opt, opt, len))
			return foreign_opts[i].what;
	return NULL;
}

static int add_probe(struct cli_opts *o, enum cli_probe_kind kind, const char *spec)
{
	struct cli_probe *np = realloc(o->probes, (o->nr_probes + 1) * sizeof(*np));

	if (!np)
		return -ENOMEM;
	o->probes = np;
	o->probes[o->nr_probes++] = (struct cli_probe){ .kind = kind, .spec = spec };
	return 0;
}

static int add_str(const char ***arr, int *nr, const char *s)
{
	const char **na = realloc(*arr, (*nr + 1) * sizeof(*na));

	if (!na)
		return -ENOMEM;
	*arr = na;
	na[(*nr)++] = s;
	return 0;
}

static int parse_pids(struct cli_opts *o, const char *arg)
{
	const char *p = arg;
	int i;

	while (*p) {
		char *end;
		long v;
		pid_t *np;

		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > INT_MAX || (*end && *end != ',')) {
			cli_error("bad pid list '%s': expected PID[,PID...] of positive numbers",
				  arg);
			return -EINVAL;
		}
		for (i = 0; i < o->nr_pids; i++) {
			if (o->pids[i] == (pid_t)v) {
				cli_error("bad pid list '%s': pid %ld is given twice", arg, v);
				return -EINVAL;
			}
		}
		np = realloc(o->pids, (o->nr_pids + 1) * sizeof(*np));
		if (!np)
			return -ENOMEM;
		o->pids = np;
		o->pids[o->nr_pids++] = (pid_t)v;
		p = *end ? end + 1 : end;
	}
	return 0;
}

/*
 * -s takes its SET attached (-sopenat) or, like strace's -e, as the next
 * word (-s openat) when that word cannot be the command: it does not start
 * with '-', and either "--" or -p follows it, or it is a valid SET. So
 * "utrace -s -- ls" and "utrace -s ls" launch ls with every syscall traced,
 * while "utrace -s opn -- ls" reports the unknown syscall.
 */
static bool next_is_set(int argc, char **argv, int idx)
{
	struct sysdec_set set;
	char err[256];
	int i;

	if (idx >= argc || argv[idx][0] == '-')
		return false;
	for (i = idx + 1; i < argc; i++)
		if (!strcmp(argv[i], "--") || !strncmp(argv[i], "-p", 2) ||
		    !strncmp(argv[i], "--pid", 5))
			return true;
	return sysdec_parse_set(argv[idx], &set, err, sizeof(err)) == 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int parse_strsize(struct cli_opts *o, const char *opt, const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0 || v > INT_MAX) {
		if (!strcmp(opt, "-S"))
			cli_error(
				"bad -S '%s': -S is utrace's string size in bytes (strace's -s N); "
				"strace's -S SORTBY is not supported (utrace -c sorts by time); "
				"ltrace's -S (system calls too) is -s",
				arg);
		else
			cli_error("bad %s '%s': expected a non-negative byte count", opt, arg);
		return -EINVAL;
	}
	o->strsize = (int)v;
	return 0;
}

/* -e trace=SET, --trace=SET, -s SET: the last one wins, as in strace. */
static int add_trace_set(struct cli_opts *o, const char *set)
{
	char *n = strdup(set);

	if (!n)
		return -ENOMEM;
	free(o->trace_sets);
	o->trace_sets = n;
	o->syscalls = true;
	return 0;
}

/* strace's -e status=SET: names, '!' negating the list, "all"/"none". */
static int parse_status(struct cli_opts *o, const char *arg)
{
	static const struct {
		const char *name;
		unsigned int bit;
	} names[] = {
		{ "successful", CLI_STATUS_SUCCESSFUL },
		{ "failed", CLI_STATUS_FAILED },
		{ "unfinished", CLI_STATUS_UNFINISHED },
		{ "unavailable", CLI_STATUS_UNAVAILABLE },
		{ "detached", CLI_STATUS_DETACHED },
		{ "all", CLI_STATUS_ALL },
		{ "none", 0 },
	};
	const char *p = arg;
	bool neg = *p == '!';
	unsigned int mask = 0;
	size_t i;

	p += neg;
	while (*p) {
		size_t len = strcspn(p, ",");

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == len && !strncmp(names[i].name, p, len))
				break;
		if (i == sizeof(names) / sizeof(names[0])) {
			cli_error("bad -e status='%s': '%.*s' is not one of successful, failed, "
				  "unfinished, unavailable, detached",
				  arg, (int)len, p);
			return -EINVAL;
		}
		mask |= names[i].bit;
		p += len + (p[len] == ',');
	}
	if (neg)
		mask = CLI_STATUS_ALL & ~mask;
	/* 0 means "no filter": an empty selection is kept as "nothing" */
	o->status_mask = mask ? mask : 1U << 31;
	o->strace_style = true;
	return 0;
}

/* a SPEC made here (ltrace's filters): freed with the options */
static const char *own_spec(struct cli_opts *o, char *spec)
{
	if (!spec || add_str((const char ***)&o->owned, &o->nr_owned, spec)) {
		free(spec);
		return NULL;
	}
	return spec;
}

/*
 * ltrace's FILTER of -e (@plt: the calls made through a PLT, ltrace's
 * "library calls") and -x (entry points): rules [+-]SYMBOL[@LIBRARY]
 * chained, each a SPEC: LIBRARY is an object name or glob ("libc.so*"),
 * MAIN the executable, absent every object; SYMBOL absent is '*'. As
 * ltrace(1) reads the chain, a function is traced when the last rule it
 * matches is a '+' one: each '+' rule is a -f SPEC that leaves out the
 * '-' rules after it (utrace_probe_opts.exclude); a chain that starts
 * with '-' starts from everything ('@'). /regex/ rules have no SPEC:
 * refused in one line. Return: 0, or -EINVAL after one line.
 */
static int add_ltrace_filter(struct cli_opts *o, const char *opt, const char *expr, bool plt)
{
	const char *p = expr, *specs[64];
	bool minus[64];
	int nr = 0, i, k;

	if (*p == '-') { /* ltrace: "as if there was another rule @ in front of it" */
		specs[nr] = own_spec(o, strdup(plt ? "*:*@plt" : "*:*"));
		if (!specs[nr])
			return -ENOMEM;
		minus[nr++] = false;
	}
	while (*p) {
		size_t len = 0;
		char rule[512], *at, *sym, *lib, *re_end, *spec = NULL;
		bool neg = *p == '-', lib_regex;

		if (*p == '+' || *p == '-')
			p++;
		/* a /regex/ may hold '+' and '-': the rule goes on after its closing '/' */
		if (*p == '/') {
			const char *close = strchr(p + 1, '/');

			if (!close) {
				cli_error("bad %s '%s': unterminated /regex/", opt, expr);
				return -EINVAL;
			}
			len = (size_t)(close - p) + 1;
		}
		/* a rule ends at '+' or '-', except "++" (libstdc++) and "-N" (libc-2.31) */
		while (p[len] &&
		       !((p[len] == '+' && p[len + 1] != '+' && (!len || p[len - 1] != '+')) ||
			 (p[len] == '-' && !(p[len + 1] >= '0' && p[len + 1] <= '9'))))
			len++;
		if (len >= sizeof(rule)) {
			cli_error("bad %s '%s': a rule is too long", opt, expr);
			return -EINVAL;
		}
		if (nr == (int)(sizeof(specs) / sizeof(specs[0]))) {
			cli_error("bad %s '%s': more than 64 rules", opt, expr);
			return -EINVAL;
		}
		snprintf(rule, sizeof(rule), "%.*s", (int)len, p);
		/* the symbol's /regex/ is a SPEC's /REGEX/; ltrace's /x@y/ is /x/@/y/ */
		re_end = rule[0] == '/' ? strchr(rule + 1, '/') : NULL;
		lib_regex = re_end && memchr(rule, '@', (size_t)(re_end - rule));
		at = strrchr(re_end ? re_end : rule, '@');
		if (at)
			*at++ = '\0';
		sym = rule;
		lib = at && *at ? at : "*";
		if (lib_regex || (lib[0] == '/' && lib[1] && lib[strlen(lib) - 1] == '/')) {
			cli_error(
				"%s '%s': ltrace's /regex/ for a library is not supported yet: give "
				"its name, a glob (libc.so*) or its path",
				opt, expr);
			return -EINVAL;
		}
		/* ltrace's ^ and $ anchor a whole-name match, which globs are anyway */
		if (*sym != '/' && *sym == '^')
			sym++;
		if (*sym != '/' && *sym && sym[strlen(sym) - 1] == '$')
			sym[strlen(sym) - 1] = '\0';
		if (!*sym)
			sym = "*";
		if (!strcmp(lib, "MAIN"))
			lib = NULL;
		if (asprintf(&spec, "%s%s%s%s", lib ? lib : "", lib ? ":" : "", sym,
			     plt ? "@plt" : "") < 0)
			spec = NULL;
		specs[nr] = own_spec(o, spec);
		if (!specs[nr])
			return -ENOMEM;
		minus[nr++] = neg;
		p += len;
	}
	for (i = 0; i < nr; i++) {
		const char **ex = NULL;
		int n = 0;

		if (minus[i])
			continue;
		for (k = i + 1; k < nr; k++)
			if (minus[k] && add_str(&ex, &n, specs[k]))
				return -ENOMEM;
		if (n && add_str(&ex, &n, NULL)) /* NULL-terminated, freed with the SPECs */
			return -ENOMEM;
		if ((ex && !own_spec(o, (char *)ex)) || add_probe(o, CLI_PROBE_FUNC, specs[i]))
			return -ENOMEM;
		o->probes[o->nr_probes - 1].exclude = ex;
	}
	return 0;
}

/*
 * -e WORD with no '=': strace's syscall SET, or ltrace's FILTER when it
 * has ltrace's '@' / '+' / inner '-', or names no syscall ("malloc").
 */
static bool ltrace_filter(const char *arg)
{
	struct sysdec_set set;
	char err[256];

	/* strace's '!' (negation), %class, ?name and /regex (which may hold a '+') */
	if (strchr("!%?", arg[0]))
		return false;
	/* ltrace's /regex/ (closed) when it names no syscall: -e /read/ stays strace's */
	if (arg[0] == '/' && !strchr(arg, '@'))
		return strlen(arg) > 2 && arg[strlen(arg) - 1] == '/' &&
		       sysdec_parse_set(arg, &set, err, sizeof(err)) != 0;
	if (strchr(arg, '@') || strchr(arg, '+') || (arg[0] && strchr(arg + 1, '-')))
		return true;
	return sysdec_parse_set(arg, &set, err, sizeof(err)) != 0;
}

/*
 * strace's -e decode-fds=SET / --decode-fds[=SET]: path is -y, all -yy;
 * socket, dev and pidfd alone are refused (utrace decodes them together).
 */
static int parse_decode_fds(struct cli_opts *o, const char *set)
{
	if (!set || !strcmp(set, "path"))
		o->decode_fds = 1;
	else if (!strcmp(set, "all"))
		o->decode_fds = 2;
	else if (!strcmp(set, "none"))
		o->decode_fds = 0;
	else if (!strcmp(set, "socket") || !strcmp(set, "dev") || !strcmp(set, "pidfd") ||
		 strchr(set, ',')) {
		cli_error("--decode-fds=%s is not supported yet: path (-y) or all (-yy)", set);
		return -EINVAL;
	} else {
		cli_error("bad --decode-fds '%s': expected path, all or none", set);
		return -EINVAL;
	}
	o->strace_style = true;
	return 0;
}

/* strace's -e inject=EXPR / -e fault=EXPR: checked by cmd-syscalls.c, before anything runs */
static int add_sc_inject(struct cli_opts *o, const char *expr, bool fault)
{
	struct cli_sc_inject *n = realloc(o->sc_injects, (o->nr_sc_injects + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	o->sc_injects = n;
	n[o->nr_sc_injects++] = (struct cli_sc_inject){ .expr = expr, .fault = fault };
	o->strace_style = true;
	return 0;
}

/*
 * --inject ARG: utrace's SPEC=VALUE[@EVERY], or strace's --inject=SET:KEY=V...
 * strace's when a syscall SET comes before the first ':' and a token after
 * a ':' starts with one of strace's keys (a utrace SPEC has an OBJECT before
 * its ':', and "libc:error=0" injects into libc's error()).
 */
static bool strace_inject_form(const char *arg)
{
	static const char *const keys[] = { "error=",	   "retval=",	   "signal=",
					    "syscall=",	   "delay_enter=", "delay_exit=",
					    "poke_enter=", "poke_exit=",   "when=" };
	const char *p = strchr(arg, ':');
	struct sysdec_set set;
	char head[1024], err[256];
	size_t i;

	/* and what comes before is a syscall SET: "libc:error=0" is utrace's (libc's error()) */
	if (!p || (size_t)(p - arg) >= sizeof(head))
		return false;
	snprintf(head, sizeof(head), "%.*s", (int)(p - arg), arg);
	if (sysdec_parse_set(head, &set, err, sizeof(err)))
		return false;
	for (; p; p = strchr(p + 1, ':'))
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!strncmp(p + 1, keys[i], strlen(keys[i])))
				return true;
	return false;
}

/*
 * strace's -e EXPR: [QUALIFIER=][!]VALUE[,VALUE...]; no qualifier is
 * trace=. The qualifiers utrace has no equivalent for yet are refused in
 * one line rather than ignored.
 */
static int parse_e(struct cli_opts *o, const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t qlen = eq ? (size_t)(eq - arg) : 0;
	const char *val = eq ? eq + 1 : arg;

#define QUAL(s) (qlen == strlen(s) && !strncmp(arg, s, qlen))
	if (!eq && ltrace_filter(arg))
		return add_ltrace_filter(o, "-e", arg, true);
	if (!eq || QUAL("trace") || QUAL("t")) {
		o->strace_style = true;
		return add_trace_set(o, val);
	}
	if (QUAL("signal") || QUAL("signals") || QUAL("s")) {
		o->signal_set = val;
		o->strace_style = true;
		return 0;
	}
	if (QUAL("status"))
		return parse_status(o, val);
	if (QUAL("decode-fds") || QUAL("decode-fd"))
		return parse_decode_fds(o, val);
	if (QUAL("inject") || QUAL("fault"))
		return add_sc_inject(o, val, QUAL("fault"));
	if (QUAL("abbrev") || QUAL("a") || QUAL("verbose") || QUAL("v") || QUAL("raw") ||
	    QUAL("x") || QUAL("read") || QUAL("r") || QUAL("write") || QUAL("w") || QUAL("quiet") ||
	    QUAL("q") || QUAL("silent") || QUAL("silence") || QUAL("kvm") || QUAL("decode-pids"))
		cli_error("-e %.*s= is not supported yet (utrace -e knows trace=, signal=, "
			  "status=, inject=, fault=; -X raw for raw constants)",
			  (int)qlen, arg);
	else
		cli_error("bad -e '%s': unknown qualifier '%.*s' (utrace -e knows trace=, "
			  "signal=, status=, inject=, fault=)",
			  arg, (int)qlen, arg);
#undef QUAL
	return -EINVAL;
}

/*
 * Output that could not be written is an error, as in every coreutils
 * tool: one line, exit status 1 (a usage error keeps its 2). Return: the
 * exit status.
 */
static int check_output(int ret)
{
	const char *name;
	int err = output_error(&name);

	if (!err)
		return ret;
	if (!name)
		cli_error("cannot write to stderr: %s (output was lost; give -o FILE)",
			  strerror(-err));
	else if (!strcmp(name, "stdout"))
		cli_error("cannot write to stdout: %s (output was lost)", strerror(-err));
	else
		cli_error("cannot write to '%s': %s (output was lost; free space or choose "
			  "another -o FILE)",
			  name, strerror(-err));
	fflush(stderr);
	return ret == EXIT_USAGE ? ret : EXIT_TRACE;
}

static bool syscall_injects(const struct cli_opts *o);

/*
 * strace spells -tt and -ttt as repeated flags; getopt sees each 't'
 * separately, which counts them for free.
 */
/*
 * -a: system-wide, which only the kernel's uprobes can do (a uprobe on a
 * file hits in every process that maps it). Return: 0, or -EINVAL after
 * one line.
 */
static int check_all(struct cli_opts *o)
{
	if (o->list_spec) {
		cli_error("-a traces; -l lists the points of the files themselves without it");
		return -EINVAL;
	}
	if (o->nr_pids) {
		cli_error("give either -a (every process) or -p PID, not both");
		return -EINVAL;
	}
	if (o->backend == CLI_BACKEND_AGENT || o->backend == CLI_BACKEND_PTRACE) {
		cli_error(
			"-a needs the kernel backend (-b kernel): the %s backend's probes live in "
			"the processes it traces",
			o->backend == CLI_BACKEND_AGENT ? "agent" : "ptrace");
		return -EINVAL;
	}
	if (o->syscalls) {
		cli_error("-a with -s is not supported yet: -a probes functions (-f/-u/-r) of "
			  "every process");
		return -EINVAL;
	}
	o->backend = CLI_BACKEND_KERNEL; /* -a implies it */
	return 0;
}

static int parse_args(int argc, char **argv, struct cli_opts *o)
{
	int c;

	o->strsize = 32;
	/* getopt's own messages would name argv[0] (a build path): ours name utrace */
	opterr = 0;
	while ((c = getopt_long(argc, argv,
				"+:f:u:r:s::cHkS:m:o:Fab:d:tTqvl:p:hVe:zZP:wX:yCx:LA:n:i",
				long_opts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'f':
			/* strace's -ff (one output file per pid) */
			if (!strcmp(optarg, "f") && optarg != argv[optind - 1]) {
				/* with -o FILE: FILE.TID per thread (cmd-syscalls.c) */
				o->follow_forks = true;
				o->per_thread_files = true;
				break;
			}
			/*
			 * strace users type '-f' for "follow forks" out of habit
			 * ('utrace -c -f -s ...'). A SPEC never starts with '-',
			 * so '-f' followed by another option means -F; the word
			 * is handed back to getopt.
			 */
			if (optarg[0] == '-' && optind > 1 && optarg == argv[optind - 1]) {
				o->follow_forks = true;
				optind--;
				break;
			}
			/* fall through */
		case 'u':
		case 'r':
			/* strace's -r (relative timestamps) before another option */
			if (c == 'r' && optarg[0] == '-' && optarg == argv[optind - 1]) {
				cli_error("-r SPEC is a return probe in utrace; strace's -r "
					  "(relative timestamps) is not supported: use -ttt or -T");
				return -EINVAL;
			}
			if (add_probe(o,
				      c == 'f' ? CLI_PROBE_FUNC :
				      c == 'u' ? CLI_PROBE_ENTRY :
						 CLI_PROBE_RET,
				      optarg))
				return -ENOMEM;
			break;
		case 's':
			/*
			 * strace's -s N (string size): no syscall is a number,
			 * so a number after -s (or attached) can only be that.
			 */
			if (optarg && all_digits(optarg)) {
				if (parse_strsize(o, "-s", optarg))
					return -EINVAL;
				o->strace_style = true;
				break;
			}
			if (!optarg && optind < argc && all_digits(argv[optind])) {
				if (parse_strsize(o, "-s", argv[optind++]))
					return -EINVAL;
				o->strace_style = true;
				break;
			}
			/* fall through */
		case OPT_SYSCALLS:
			o->syscalls = true;
			if (!optarg && next_is_set(argc, argv, optind))
				optarg = argv[optind++];
			if (optarg && add_trace_set(o, optarg))
				return -ENOMEM;
			if (!optarg) { /* every syscall: replaces an earlier SET */
				free(o->trace_sets);
				o->trace_sets = NULL;
			}
			break;
		case 'e':
			if (parse_e(o, optarg))
				return -EINVAL;
			break;
		case OPT_TRACE:
			o->strace_style = true;
			if (add_trace_set(o, optarg))
				return -ENOMEM;
			break;
		case OPT_SIGNAL:
			o->signal_set = optarg;
			o->strace_style = true;
			break;
		case OPT_STATUS:
			if (parse_status(o, optarg))
				return -EINVAL;
			break;
		case 'z':
		case 'Z':
			o->status_mask |= c == 'z' ? CLI_STATUS_SUCCESSFUL : CLI_STATUS_FAILED;
			o->strace_style = true;
			break;
		case 'P':
			if (add_str(&o->paths, &o->nr_paths, optarg))
				return -ENOMEM;
			o->strace_style = true;
			break;
		case 'X':
			if (!strcmp(optarg, "abbrev"))
				o->xlat_style = SYSDEC_XLAT_ABBREV;
			else if (!strcmp(optarg, "raw"))
				o->xlat_style = SYSDEC_XLAT_RAW;
			else if (!strcmp(optarg, "verbose"))
				o->xlat_style = SYSDEC_XLAT_VERBOSE;
			else {
				cli_error("bad -X '%s': expected raw, abbrev or verbose", optarg);
				return -EINVAL;
			}
			o->strace_style = true;
			break;
		case OPT_STRING_LIMIT:
			if (parse_strsize(o, "--string-limit", optarg))
				return -EINVAL;
			o->strace_style = true;
			break;
		case 'w':
			/*
			 * ltrace's -w N (a backtrace of N frames) before a
			 * number: no syscall or COMMAND is one (-w alone is
			 * strace's -c wall-clock times, which -c is anyway)
			 */
			if (optind < argc && all_digits(argv[optind])) {
				long n = strtol(argv[optind++], &end, 10);

				if (n < 1 || n > 32) {
					cli_error("bad -w '%s': expected 1..32 frames (ltrace's "
						  "stack depth; -k is utrace's spelling)",
						  argv[optind - 1]);
					return -EINVAL;
				}
				o->stack = true;
				o->stack_max = (int)n;
				break;
			}
			/* fall through */
		case OPT_WALL_CLOCK:
			/* -c times are wall-clock already (entry to exit stop) */
		case OPT_SECCOMP_BPF:
			/* launch mode filters with seccomp-bpf already when it saves stops */
			o->strace_style = true;
			break;
		case 'c':
			o->summary = true;
			break;
		case 'C':
			o->flag_C = true;
			break;
		case 'H':
			o->hist = true;
			break;
		case 'k':
			o->stack = true;
			break;
		case 'S':
			if (parse_strsize(o, "-S", optarg))
				return -EINVAL;
			break;
		case 'x':
			/* ltrace's -x FILTER: entry points (symbol table) */
			if (add_ltrace_filter(o, "-x", optarg, false))
				return -EINVAL;
			break;
		case 'L': /* ltrace's "no default @MAIN": utrace assumes nothing anyway */
			break;
		case 'A': /* ltrace's array length: utrace prints no arrays */
			if (!all_digits(optarg)) {
				cli_error("bad -A '%s': expected a number (ltrace's array length)",
					  optarg);
				return -EINVAL;
			}
			break;
		case 'n':
			/*
			 * strace's -n (syscall numbers) before another option:
			 * the word is handed back to getopt, as for -f
			 */
			if (optarg[0] == '-' && optarg == argv[optind - 1]) {
				o->syscall_numbers = true;
				o->strace_style = true;
				optind--;
				break;
			}
			/* ltrace's -n N: indent by call depth */
			if (!all_digits(optarg) || strlen(optarg) > 2) {
				cli_error("bad -n '%s': expected a number of spaces per level "
					  "(ltrace's indentation)",
					  optarg);
				return -EINVAL;
			}
			o->indent = atoi(optarg);
			break;
		case 'i':
			o->call_site = true; /* ltrace's and strace's -i */
			break;
		case 'y':
			/* strace's -y (paths) and -yy (and sockets, devices, pidfds) */
			if (o->decode_fds < 2)
				o->decode_fds++;
			o->strace_style = true;
			break;
		case OPT_DECODE_FDS:
			if (parse_decode_fds(o, optarg))
				return -EINVAL;
			break;
		case OPT_SUMMARY_ONLY: /* strace's -c */
			o->summary = true;
			o->strace_style = true;
			break;
		case OPT_OUTPUT_SEPARATELY: /* strace's -ff */
			o->follow_forks = true;
			o->per_thread_files = true;
			break;
		case OPT_LOSSY:
			o->lossy = true;
			break;
		case OPT_ONE_LINE:
			o->one_line = true;
			break;
		case OPT_FAULT:
			if (add_sc_inject(o, optarg, true))
				return -ENOMEM;
			break;
		case OPT_INJECT:
			if (strace_inject_form(optarg)) {
				if (add_sc_inject(o, optarg, false))
					return -ENOMEM;
				break;
			}
			if (!strchr(optarg, '=')) {
				cli_error("bad --inject '%s': expected SPEC=VALUE[@EVERY]", optarg);
				return -EINVAL;
			}
			if (add_str(&o->injects, &o->nr_injects, optarg))
				return -ENOMEM;
			break;
		case 'm':
			if (add_str(&o->modules, &o->nr_modules, optarg))
				return -ENOMEM;
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "text"))
				o->format = CLI_FMT_TEXT;
			else if (!strcmp(optarg, "json"))
				o->format = CLI_FMT_JSON;
			else if (!strcmp(optarg, "chrome"))
				o->format = CLI_FMT_CHROME;
			else {
				cli_error("bad --format '%s': expected text, json or chrome",
					  optarg);
				return -EINVAL;
			}
			break;
		case 'F':
			o->follow_forks = true;
			break;
		case 'a':
			o->all = true;
			break;
		case 'b':
			if (!strcmp(optarg, "auto"))
				o->backend = CLI_BACKEND_AUTO;
			else if (!strcmp(optarg, "agent"))
				o->backend = CLI_BACKEND_AGENT;
			else if (!strcmp(optarg, "ptrace"))
				o->backend = CLI_BACKEND_PTRACE;
			else if (!strcmp(optarg, "kernel"))
				o->backend = CLI_BACKEND_KERNEL;
			else {
				cli_error("bad --backend '%s': expected auto, agent, ptrace or "
					  "kernel%s",
					  optarg,
					  !strcmp(optarg, "execve") ?
						  " (strace's -b execve is not supported)" :
						  "");
				return -EINVAL;
			}
			break;
		case 'd':
			errno = 0;
			o->duration = strtod(optarg, &end);
			if (errno || *end || !(o->duration > 0)) {
				cli_error("bad -d '%s': expected a positive number of seconds%s",
					  optarg,
					  optarg[0] == '-' ? " (strace's -d debug output: "
							     "UTRACE_LOG_LEVEL=debug)" :
							     "");
				return -EINVAL;
			}
			break;
		case 't':
			o->timestamps++;
			break;
		case 'T':
			o->durations = true;
			break;
		case 'q':
			o->verbose = -1;
			break;
		case 'v':
			o->verbose++;
			break;
		case OPT_COLOR:
			if (!strcmp(optarg, "auto"))
				o->color = CLI_COLOR_AUTO;
			else if (!strcmp(optarg, "always"))
				o->color = CLI_COLOR_ALWAYS;
			else if (!strcmp(optarg, "never"))
				o->color = CLI_COLOR_NEVER;
			else {
				cli_error("bad --color '%s': expected auto, always or never",
					  optarg);
				return -EINVAL;
			}
			break;
		case 'l':
			o->list_spec = optarg;
			break;
		case OPT_WHY:
			o->list_why = true;
			break;
		case 'p':
			if (parse_pids(o, optarg))
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			exit(check_output(0));
		case 'V':
			printf("utrace %s\n", UTRACE_VERSION_STRING);
			exit(check_output(0));
		case ':':
			if (optopt)
				cli_error("option requires an argument -- '%c'", optopt);
			else
				cli_error("option '%s' requires an argument", argv[optind - 1]);
			fprintf(stderr, "Try 'utrace --help' for more information.\n");
			return -EINVAL;
		default: {
			char shopt[3] = { '-', (char)optopt, '\0' };
			const char *why = foreign_opt(optopt ? shopt : argv[optind - 1]);

			if (optopt)
				cli_error("invalid option -- '%c'%s%s", optopt, why ? ": " : "",
					  why ? why : "");
			else
				cli_error("unrecognized option '%s'%s%s", argv[optind - 1],
					  why ? ": " : "", why ? why : "");
		}
			fprintf(stderr, "Try 'utrace --help' for more information.\n");
			return -EINVAL;
		}
	}
	o->argv = argv + optind;
	o->argc = argc - optind;
	if (o->timestamps > 3)
		o->timestamps = 3;
	/* every strace spelling is about syscalls: alone, it traces them all */
	if (o->strace_style && !o->syscalls && !o->nr_probes && !o->nr_injects && !o->nr_modules &&
	    !o->list_spec)
		o->syscalls = true;
	if (!o->syscalls &&
	    (o->status_mask || o->signal_set || o->nr_paths || o->xlat_style || o->decode_fds)) {
		cli_error("-e status=, -e signal=, -z, -Z, -P, -X and -y apply to system calls: "
			  "add -s");
		return -EINVAL;
	}
	if (o->nr_sc_injects && (o->nr_probes || o->nr_modules || o->list_spec ||
				 (o->nr_injects && !syscall_injects(o)))) {
		cli_error(
			"-e inject= applies to system calls, and they are not traced with -f, -u, "
			"-r, -m or -l yet: use --inject SPEC=VALUE for functions");
		return -EINVAL;
	}
	o->syscall_set = o->trace_sets;
	/* ltrace's -l LIB: a library's name alone ("libm.so.6", "libssl.so*") */
	if (o->list_spec && !strchr(o->list_spec, ':') && strstr(o->list_spec, ".so") &&
	    !strchr(o->list_spec, '/')) {
		cli_error("-l SPEC lists probe points in utrace; ltrace's -l %s (the calls into "
			  "it) is -f '%s:*'",
			  o->list_spec, o->list_spec);
		return -EINVAL;
	}
	/*
	 * -C: strace's (the -c table and the events) for system calls;
	 * ltrace's (demangle C++ names) for functions
	 */
	if (o->flag_C && o->syscalls && !o->nr_probes && !o->nr_modules) {
		o->summary = true;
		o->summary_events = true;
	} else if (o->flag_C && o->syscalls) {
		cli_error("-C is strace's (the -c table and the events) with -s alone, ltrace's "
			  "(C++ names demangled) with -f: not both");
		return -EINVAL;
	}
	if (o->syscall_numbers && (o->nr_probes || o->list_spec)) {
		cli_error("-n before another option is strace's (syscall numbers), for -s; "
			  "ltrace's -n N (indent by call depth) takes a number");
		return -EINVAL;
	}
	if (o->indent && !o->nr_probes && !o->list_spec) {
		cli_error("-n N (indent by call depth) is ltrace's, for function tracing (-f, -e, "
			  "-x): not supported with -s yet");
		return -EINVAL;
	}
	if (o->per_thread_files && (o->nr_probes || o->nr_modules || o->list_spec)) {
		cli_error("-ff (a file per thread) is for system calls only yet: -F follows forks "
			  "into one output ([pid] on each line)");
		return -EINVAL;
	}
	if (o->nr_pids && o->argc) {
		cli_error("give either -p PID or -- COMMAND, not both");
		return -EINVAL;
	}
	if (o->all && check_all(o))
		return -EINVAL;
	if (!o->list_spec && !o->nr_pids && !o->argc && !o->all) {
		cli_error("nothing to trace: give -p PID or -- COMMAND (see utrace --help)");
		return -EINVAL;
	}
	if (!o->list_spec && !o->syscalls && !o->nr_probes && !o->nr_injects && !o->nr_modules) {
		cli_error(
			"nothing to trace: give -f, -u, -r, -s, --inject or -m (see utrace --help)");
		return -EINVAL;
	}
	return 0;
}

/*
 * --inject NAME=ENOENT[@N] fails a syscall (cmd-syscalls.c); any other
 * VALUE is a function's return value (cmd-trace.c). True if every
 * --inject is of the first kind (and there is at least one).
 */
static bool syscall_injects(const struct cli_opts *o)
{
	int i;

	for (i = 0; i < o->nr_injects; i++) {
		const char *v = strrchr(o->injects[i], '=');

		if (!v || v[1] != 'E' || v[2] < 'A' || v[2] > 'Z')
			return false;
	}
	return o->nr_injects > 0;
}

/*
 * A kernel thread has no user space: no attach failure should suggest
 * permissions for it. Return: 0, or the exit status after one line.
 */
static int check_pids(const struct cli_opts *o)
{
	int i;

	for (i = 0; i < o->nr_pids; i++) {
		char path[64], buf[1024], *p;
		unsigned long flags = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)o->pids[i]);
		f = fopen(path, "re");
		if (!f)
			continue; /* the attach says what is wrong */
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		/* ") S ppid pgrp session tty tpgid flags": flags is field 9 */
		if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
			continue;
		if (flags & 0x00200000) { /* PF_KTHREAD */
			cli_error("pid %d is a kernel thread; nothing to trace", o->pids[i]);
			return EXIT_TRACE;
		}
	}
	return 0;
}

/* -v: which object's DWARF came from a debuginfod server (cli/dwarf.c) */
static void dwarf_note(const char *object, const char *debug_file)
{
	cli_error("%s: DWARF from debuginfod (%s)", object, debug_file);
}

static void opts_clear(struct cli_opts *o)
{
	free(o->probes);
	free(o->injects);
	free(o->sc_injects);
	free(o->modules);
	free(o->pids);
	free(o->paths);
	free(o->trace_sets);
	while (o->nr_owned)
		free(o->owned[--o->nr_owned]);
	free(o->owned);
}

int main(int argc, char **argv)
{
	struct cli_opts opts = { 0 };
	bool record = false;
	int ret;

	utrace_set_print(cli_print);
	/* the recording's sub-commands: utrace record|replay|report|dump (cmd-record.c) */
	if (argc > 1 &&
	    (!strcmp(argv[1], "replay") || !strcmp(argv[1], "report") || !strcmp(argv[1], "dump")))
		return check_output(cmd_read(argc - 1, argv + 1));
	if (argc > 1 && !strcmp(argv[1], "record")) {
		record = true;
		argc--;
		argv++;
	}
	if (parse_args(argc, argv, &opts)) {
		opts_clear(&opts);
		return check_output(EXIT_USAGE);
	}
	if (opts.argc && !opts.list_spec) {
		/* a command that cannot run: said before any tracing starts */
		static char exe[PATH_MAX];

		ret = launch_resolve(opts.argv[0], exe, sizeof(exe));
		if (ret)
			goto out;
		opts.exe = exe;
	}
	ret = check_pids(&opts);
	if (ret)
		goto out;
	if (opts.verbose > 0)
		proto_dwarf_set_note(dwarf_note);
	if (record)
		ret = cmd_record(&opts);
	else if (opts.list_spec)
		ret = cmd_list(&opts);
	else if (opts.nr_probes || opts.nr_modules || (opts.nr_injects && !syscall_injects(&opts)))
		ret = cmd_trace(&opts);
	else
		ret = cmd_syscalls(&opts);
out:
	opts_clear(&opts);
	return check_output(ret);
}
