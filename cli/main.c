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
#include "sysdec.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;

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
	fputs("utrace: ", stderr);
	return vfprintf(stderr, fmt, ap);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: utrace [OPTIONS] -- COMMAND [ARG...]   launch COMMAND and trace it\n"
		"       utrace [OPTIONS] -p PID[,PID...]       attach to running processes\n"
		"       utrace -l SPEC [-p PID | -- COMMAND]   list the probe points SPEC matches\n"
		"\n"
		"What to trace:\n"
		"  -f, --func SPEC          calls and returns of matching functions\n"
		"                           (-f followed by another option: -F, as in strace)\n"
		"  -u, --uprobe SPEC        entry probe only\n"
		"  -r, --uretprobe SPEC     return probe only\n"
		"  -s[SET], -s SET, --syscalls[=SET] system calls (names, %%file %%process\n"
		"                           %%network %%signal %%memory %%desc %%ipc; '!' negates)\n"
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
		"  -b, --backend auto|agent|ptrace|kernel\n"
		"  -d, --duration SEC       detach after SEC seconds\n"
		"  -t, -tt, -ttt, -T        timestamps and durations, as in strace\n"
		"  -q, -v                   quieter, more verbose\n"
		"      --color auto|always|never\n"
		"  -l, --list SPEC          list matching probe points and how each is probed\n"
		"      --why                with -l, explain refused sites\n"
		"  -h, --help, -V, --version\n");
}

enum {
	OPT_INJECT = 256,
	OPT_FORMAT,
	OPT_COLOR,
	OPT_WHY,
};

static const struct option long_opts[] = {
	{ "func", required_argument, NULL, 'f' },
	{ "uprobe", required_argument, NULL, 'u' },
	{ "uretprobe", required_argument, NULL, 'r' },
	{ "syscalls", optional_argument, NULL, 's' },
	{ "summary", no_argument, NULL, 'c' },
	{ "hist", no_argument, NULL, 'H' },
	{ "stack", no_argument, NULL, 'k' },
	{ "strsize", required_argument, NULL, 'S' },
	{ "inject", required_argument, NULL, OPT_INJECT },
	{ "module", required_argument, NULL, 'm' },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "follow-forks", no_argument, NULL, 'F' },
	{ "backend", required_argument, NULL, 'b' },
	{ "duration", required_argument, NULL, 'd' },
	{ "color", required_argument, NULL, OPT_COLOR },
	{ "list", required_argument, NULL, 'l' },
	{ "why", no_argument, NULL, OPT_WHY },
	{ "pid", required_argument, NULL, 'p' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

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

/*
 * strace spells -tt and -ttt as repeated flags; getopt sees each 't'
 * separately, which counts them for free.
 */
static int parse_args(int argc, char **argv, struct cli_opts *o)
{
	int c;

	o->strsize = 32;
	while ((c = getopt_long(argc, argv, "+f:u:r:s::cHkS:m:o:Fb:d:tTqvl:p:hV", long_opts,
				NULL)) != -1) {
		char *end;

		switch (c) {
		case 'f':
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
			if (add_probe(o,
				      c == 'f' ? CLI_PROBE_FUNC :
				      c == 'u' ? CLI_PROBE_ENTRY :
						 CLI_PROBE_RET,
				      optarg))
				return -ENOMEM;
			break;
		case 's':
			o->syscalls = true;
			o->syscall_set = optarg;
			if (!optarg && next_is_set(argc, argv, optind))
				o->syscall_set = argv[optind++];
			break;
		case 'c':
			o->summary = true;
			break;
		case 'H':
			o->hist = true;
			break;
		case 'k':
			o->stack = true;
			break;
		case 'S':
			errno = 0;
			o->strsize = (int)strtol(optarg, &end, 10);
			if (errno || *end || o->strsize < 0) {
				cli_error("bad -S '%s': expected a non-negative byte count",
					  optarg);
				return -EINVAL;
			}
			break;
		case OPT_INJECT:
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
				cli_error(
					"bad --backend '%s': expected auto, agent, ptrace or kernel",
					optarg);
				return -EINVAL;
			}
			break;
		case 'd':
			errno = 0;
			o->duration = strtod(optarg, &end);
			if (errno || *end || !(o->duration > 0)) {
				cli_error("bad -d '%s': expected a positive number of seconds",
					  optarg);
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
		default:
			fprintf(stderr, "Try 'utrace --help' for more information.\n");
			return -EINVAL;
		}
	}
	o->argv = argv + optind;
	o->argc = argc - optind;
	if (o->timestamps > 3)
		o->timestamps = 3;
	if (o->nr_pids && o->argc) {
		cli_error("give either -p PID or -- COMMAND, not both");
		return -EINVAL;
	}
	if (!o->list_spec && !o->nr_pids && !o->argc) {
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

static void opts_clear(struct cli_opts *o)
{
	free(o->probes);
	free(o->injects);
	free(o->modules);
	free(o->pids);
}

int main(int argc, char **argv)
{
	struct cli_opts opts = { 0 };
	int ret;

	utrace_set_print(cli_print);
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
	if (opts.list_spec)
		ret = cmd_list(&opts);
	else if (opts.nr_probes || opts.nr_modules || (opts.nr_injects && !syscall_injects(&opts)))
		ret = cmd_trace(&opts);
	else
		ret = cmd_syscalls(&opts);
out:
	opts_clear(&opts);
	return check_output(ret);
}
