/* SPDX-License-Identifier: MIT */
/*
 * output.c - text and JSON event writers (docs/cli.md "Output").
 * Tracer process. Output goes through one fully buffered FILE; it is flushed
 * at exit and when the tracer is interrupted, never per event (tracing to
 * /dev/null must cost no write(2) per syscall).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "output.h"

int output_open(struct output *o, const struct cli_opts *opts)
{
	memset(o, 0, sizeof(*o));
	o->format = opts->format;
	o->timestamps = opts->timestamps;
	o->durations = opts->durations;
	if (opts->output) {
		o->f = fopen(opts->output, "we"); /* never inherited by the tracee */
		if (!o->f)
			return -errno;
		o->own = true;
		o->name = opts->output;
	} else {
		o->f = stderr;
	}
	/* stderr is unbuffered by default: give it a buffer, flushed at exit */
	setvbuf(o->f, NULL, _IOFBF, 1 << 16);
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

int output_close(struct output *o)
{
	int err = 0;

	if (!o->f)
		return 0;
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

void output_prefix(struct output *o, uint64_t ts_ns, pid_t tid, bool show_pid)
{
	time_t sec = (time_t)(ts_ns / 1000000000ULL);
	unsigned long usec = (unsigned long)(ts_ns % 1000000000ULL / 1000);
	struct tm tm;
	char hms[16];

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
	if (name)
		fprintf(o->f, "+++ killed by SIG%s%s +++\n", name,
			WCOREDUMP(status) ? " (core dumped)" : "");
	else
		fprintf(o->f, "+++ killed by signal %d%s +++\n", WTERMSIG(status),
			WCOREDUMP(status) ? " (core dumped)" : "");
}

void output_duration(struct output *o, uint64_t dur_ns)
{
	if (o->durations)
		fprintf(o->f, " <%llu.%06llu>", (unsigned long long)(dur_ns / 1000000000ULL),
			(unsigned long long)(dur_ns % 1000000000ULL / 1000));
}

void json_str(FILE *f, const char *s, size_t len)
{
	size_t i;

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
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c); /* bytes, not UTF-8: each one as U+00XX */
		else
			fputc(c, f);
	}
	fputc('"', f);
}
