/* SPDX-License-Identifier: MIT */
/*
 * output.c - text and JSON event writers (docs/cli.md "Output").
 * Tracer process. Output goes through one fully buffered FILE; it is flushed
 * by the event loops every OUTPUT_LIVE_MS while something is pending
 * (output_live()), at exit and when the tracer is interrupted, never per
 * event (tracing to /dev/null must cost no write(2) per syscall).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "output.h"

int output_open(struct output *o, const struct cli_opts *opts)
{
	memset(o, 0, sizeof(*o));
	o->format = opts->format;
	o->timestamps = opts->timestamps;
	o->durations = opts->durations;
	o->demangle = opts->flag_C;
	o->one_line = opts->one_line && opts->format == CLI_FMT_TEXT;
	if (opts->output) {
		o->f = fopen(opts->output, "we"); /* never inherited by the tracee */
		if (!o->f)
			return -errno;
		o->own = true;
		o->name = opts->output;
	} else {
		o->f = stderr;
	}
	/*
	 * stderr is unbuffered by default: give it a buffer, flushed at exit.
	 * Its own: once a line went out unbuffered (a note before tracing),
	 * setvbuf(NULL) would keep glibc's one-byte buffer, a write(2) per
	 * printf conversion, and lines torn by the program's own stderr.
	 */
	if (o->own) {
		setvbuf(o->f, NULL, _IOFBF, 1 << 16);
	} else {
		static char errbuf[1 << 16]; /* stderr outlives every output */

		fflush(stderr);
		setvbuf(o->f, errbuf, _IOFBF, sizeof(errbuf));
	}
	o->color = o->format == CLI_FMT_TEXT && output_color_wanted(opts->color, o->f);
	return 0;
}

/* The first write error on the output, kept for output_error(). */
static int first_err;
static const char *first_name;

static void note_error(int err, const char *name)
{
	if (!first_err) {
		first_err = err;
		first_name = name;
	}
}

int output_flush(struct output *o)
{
	int err;

	if (!o->f || !fflush(o->f))
		return 0;
	err = -errno;
	note_error(err, o->name);
	return err;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void output_live(struct output *o)
{
	uint64_t now;

	if (!o->f || !__fpending(o->f))
		return;
	now = mono_ns();
	if (now - o->flushed_ns < OUTPUT_LIVE_MS * 1000000ull)
		return;
	output_flush(o);
	o->flushed_ns = now;
}

int output_live_wait(const struct output *o, int timeout_ms)
{
	(void)o; /* the bound holds whether or not something is pending now */
	return timeout_ms < 0 || timeout_ms > OUTPUT_LIVE_MS ? OUTPUT_LIVE_MS : timeout_ms;
}

int output_close(struct output *o)
{
	int err = 0;

	if (!o->f)
		return 0;
	output_break(o);
	/* what fflush() cannot write, and what an earlier flush could not */
	if (fflush(o->f))
		err = -errno;
	else if (ferror(o->f))
		err = -EIO;
	if (o->own && fclose(o->f) && !err)
		err = -errno;
	if (err)
		note_error(err, o->name);
	o->f = NULL;
	return err;
}

int output_error(const char **ret_name)
{
	int err;

	/* stderr carries the events without -o, and the tables with chrome */
	if (fflush(stderr))
		note_error(-errno, NULL);
	else if (ferror(stderr))
		note_error(-EIO, NULL);
	/* -l lists, --help and --version print on stdout */
	if (fflush(stdout))
		note_error(-errno, "stdout");
	else if (ferror(stdout))
		note_error(-EIO, "stdout");
	err = first_err;
	if (err)
		*ret_name = first_name;
	return err;
}

uint64_t now_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

uint64_t now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The output with an open call line (one at a time: one event loop). */
static struct output *open_out;

void output_call_open(struct output *o, pid_t tid, uint64_t addr, unsigned int depth)
{
	if (open_out)
		output_break(open_out);
	o->call.open = true;
	o->call.tid = tid;
	o->call.addr = addr;
	o->call.depth = depth;
	open_out = o;
}

void output_line_end(struct output *o)
{
	if (!o->call.tail)
		return;
	fclose(o->call.tail);
	o->call.tail = NULL;
	if (o->call.tail_len)
		fwrite(o->call.tail_buf, 1, o->call.tail_len, o->f);
	free(o->call.tail_buf);
	o->call.tail_buf = NULL;
	o->call.tail_len = 0;
}

FILE *output_call_tail(struct output *o)
{
	if (!o->call.open)
		return NULL;
	if (!o->call.tail)
		o->call.tail = open_memstream(&o->call.tail_buf, &o->call.tail_len);
	return o->call.tail; /* NULL without memory: the caller writes in place */
}

/*
 * The open line is the one on @o's FILE, whichever struct output left it
 * open: the syscall writer embedded in a function trace has a copy of the
 * function tracer's output (syscalls_embed()).
 */
void output_break(struct output *o)
{
	struct output *w = open_out;

	if (!w || !o->f || w->f != o->f)
		return;
	w->call.open = false;
	open_out = NULL;
	fputs(" <unfinished ...>\n", w->f);
	output_line_end(w);
}

bool output_call_close(struct output *o, pid_t tid, uint64_t addr, unsigned int depth)
{
	if (open_out == o && o->call.open && o->call.tid == tid && o->call.addr == addr &&
	    o->call.depth == depth) {
		o->call.open = false;
		open_out = NULL;
		return true;
	}
	output_break(o);
	return false;
}

void output_break_stderr(void)
{
	if (open_out && open_out->f == stderr)
		output_break(open_out);
}

void output_prefix(struct output *o, uint64_t ts_ns, pid_t tid, bool show_pid)
{
	time_t sec = (time_t)(ts_ns / 1000000000ULL);
	unsigned long usec = (unsigned long)(ts_ns % 1000000000ULL / 1000);
	struct tm tm;
	char hms[16];

	output_break(o);
	if (o->timestamps) {
		if (o->timestamps == 3) {
			fprintf(o->f, "%lld.%06lu ", (long long)sec, usec);
		} else {
			localtime_r(&sec, &tm);
			strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
			if (o->timestamps == 2)
				fprintf(o->f, "%s.%06lu ", hms, usec);
			else
				fprintf(o->f, "%s ", hms);
		}
	}
	if (show_pid)
		fprintf(o->f, "[%d] ", (int)tid);
}

void output_killed(struct output *o, pid_t pid, int status)
{
	const char *name = sigabbrev_np(WTERMSIG(status));

	if (o->format != CLI_FMT_TEXT || !WIFSIGNALED(status))
		return;
	output_prefix(o, o->timestamps ? now_realtime_ns() : 0, pid, true);
	output_color(o, OC_SIGNAL);
	if (name)
		fprintf(o->f, "+++ killed by SIG%s%s +++\n", name,
			WCOREDUMP(status) ? " (core dumped)" : "");
	else
		fprintf(o->f, "+++ killed by signal %d%s +++\n", WTERMSIG(status),
			WCOREDUMP(status) ? " (core dumped)" : "");
	output_color_end(o);
}

/* "SIGSEGV", or "SIG42" for a number without a name */
static const char *sig_name(int sig, char *buf, size_t len)
{
	const char *name = sigabbrev_np(sig);

	if (name)
		snprintf(buf, len, "SIG%s", name);
	else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(buf, len, "SIGRT_%d", sig - SIGRTMIN); /* strace's spelling */
	else
		snprintf(buf, len, "SIG%d", sig);
	return buf;
}

void output_json_exit(struct output *o, uint64_t ts_ns, pid_t pid, pid_t tid, int status)
{
	char name[32];

	if (o->format != CLI_FMT_JSON)
		return;
	fputc('{', o->f);
	json_ts(o->f, ts_ns);
	fprintf(o->f,
		", \"pid\": %d, \"tid\": %d, \"type\": \"exit\", \"probe\": \"\", \"name\": \"\"",
		(int)pid, (int)tid);
	if (WIFSIGNALED(status))
		fprintf(o->f, ", \"signal\": \"%s\", \"core_dumped\": %s}\n",
			sig_name(WTERMSIG(status), name, sizeof(name)),
			WCOREDUMP(status) ? "true" : "false");
	else
		fprintf(o->f, ", \"exit_code\": %d}\n", WEXITSTATUS(status));
}

void output_json_signal(struct output *o, uint64_t ts_ns, pid_t pid, pid_t tid, const siginfo_t *si)
{
	static const char *const cld[] = { "",
					   "CLD_EXITED",
					   "CLD_KILLED",
					   "CLD_DUMPED",
					   "CLD_TRAPPED",
					   "CLD_STOPPED",
					   "CLD_CONTINUED" };
	char name[32], code[16];
	const char *c = NULL;
	bool chld = si->si_signo == SIGCHLD && si->si_code >= CLD_EXITED &&
		    si->si_code <= CLD_CONTINUED;

	if (o->format != CLI_FMT_JSON)
		return;
	if (si->si_code == SI_USER)
		c = "SI_USER";
	else if (si->si_code == SI_TKILL)
		c = "SI_TKILL";
	else if (si->si_code == SI_KERNEL)
		c = "SI_KERNEL";
	else if (si->si_code == SI_QUEUE)
		c = "SI_QUEUE";
	else if (chld)
		c = cld[si->si_code];
	if (!c) {
		snprintf(code, sizeof(code), "%d", si->si_code);
		c = code;
	}
	fputc('{', o->f);
	json_ts(o->f, ts_ns);
	sig_name(si->si_signo, name, sizeof(name));
	fprintf(o->f,
		", \"pid\": %d, \"tid\": %d, \"type\": \"signal\", \"probe\": \"signal:%s\", "
		"\"name\": \"%s\", \"signal\": \"%s\", \"si_code\": \"%s\"",
		(int)pid, (int)tid, name, name, name, c);
	if (si->si_code == SI_USER || si->si_code == SI_TKILL || si->si_code == SI_QUEUE || chld)
		fprintf(o->f, ", \"si_pid\": %d, \"si_uid\": %u", (int)si->si_pid,
			(unsigned int)si->si_uid);
	if (chld)
		fprintf(o->f, ", \"si_status\": %d", si->si_status);
	fputs("}\n", o->f);
}

void output_duration(struct output *o, uint64_t dur_ns)
{
	if (!o->durations)
		return;
	fputc(' ', o->f);
	output_color(o, OC_DURATION);
	fprintf(o->f, "<%llu.%06llu>", (unsigned long long)(dur_ns / 1000000000ULL),
		(unsigned long long)(dur_ns % 1000000000ULL / 1000));
	output_color_end(o);
}

/* Length of the valid UTF-8 sequence at @s (at most @len bytes), 0 if none. */
static size_t utf8_len(const unsigned char *s, size_t len)
{
	size_t n, i;
	uint32_t cp;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0; /* ASCII is not asked here; 0x80..0xc1 never start one */
	n = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	if (n > len)
		return 0;
	cp = s[0] & (0x7f >> n);
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, UTF-16 surrogates, beyond U+10FFFF: not UTF-8 */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void json_str(FILE *f, const char *s, size_t len)
{
	size_t i, n;

	fputc('"', f);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else if (c < 0x80)
			fputc(c, f);
		else if ((n = utf8_len((const unsigned char *)s + i, len - i))) {
			fwrite(s + i, 1, n, f);
			i += n - 1;
		} else {
			fprintf(f, "\\u%04x", c); /* a byte of no UTF-8 sequence */
		}
	}
	fputc('"', f);
}

void json_ts(FILE *f, uint64_t ts_ns)
{
	unsigned long long sec = ts_ns / 1000000000ULL, nsec = ts_ns % 1000000000ULL;

	fprintf(f,
		"\"ts_ns\": %" PRIu64
		", \"ts\": \"%llu.%09llu\", \"ts_sec\": %llu, \"ts_nsec\": %llu",
		ts_ns, sec, nsec, sec, nsec);
}

static const char *const sgr[] = {
	[OC_NAME] = "\033[1m",
	[OC_ERROR] = "\033[31m",
	[OC_DURATION] = "\033[33m",
	[OC_SIGNAL] = "\033[35m",
};

void output_color(struct output *o, enum output_color c)
{
	if (o->color)
		fputs(sgr[c], o->f);
}

void output_color_end(struct output *o)
{
	if (o->color)
		fputs("\033[0m", o->f);
}

bool output_color_wanted(enum cli_color mode, FILE *f)
{
	const char *no = getenv("NO_COLOR"), *term = getenv("TERM");

	if (mode != CLI_COLOR_AUTO)
		return mode == CLI_COLOR_ALWAYS;
	/* https://no-color.org: set and not empty means no colour by default */
	if (no && no[0])
		return false;
	if (term && !strcmp(term, "dumb"))
		return false;
	return isatty(fileno(f));
}

/*
 * libstdc++'s demangler, where the program links it (the utrace command
 * does; the unit tests need not): without it names stay as they are.
 */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status)
	__attribute__((weak));

char *output_demangle(const char *name)
{
	int st = -1;
	char *d;

	if (!name || strncmp(name, "_Z", 2) || !__cxa_demangle)
		return NULL;
	d = __cxa_demangle(name, NULL, NULL, &st);
	if (st) {
		free(d);
		return NULL;
	}
	return d;
}

/* Names demangled so far: each C++ symbol once, not once per call. */
#define NAMES_HASH 256
struct dname {
	struct dname *next;
	char *name, *shown;
};
static struct dname *names[NAMES_HASH];

const char *output_name(struct output *o, const char *name)
{
	struct dname **pp, *d;
	unsigned int h = 5381;
	const char *p;

	if (!o->demangle || !name || strncmp(name, "_Z", 2))
		return name;
	for (p = name; *p; p++)
		h = h * 33 + (unsigned char)*p;
	pp = &names[h % NAMES_HASH];
	for (d = *pp; d; d = d->next)
		if (!strcmp(d->name, name))
			return d->shown;
	d = calloc(1, sizeof(*d));
	if (!d)
		return name;
	d->name = strdup(name);
	d->shown = output_demangle(name);
	if (!d->name || !d->shown) {
		free(d->name);
		free(d->shown);
		free(d);
		return name;
	}
	d->next = *pp;
	*pp = d;
	return d->shown;
}

void output_names_clear(void)
{
	unsigned int i;

	for (i = 0; i < NAMES_HASH; i++) {
		while (names[i]) {
			struct dname *d = names[i];

			names[i] = d->next;
			free(d->name);
			free(d->shown);
			free(d);
		}
	}
}
