/* SPDX-License-Identifier: MIT */
/*
 * chrome.c - Chrome Trace Event writer (see chrome.h). Tracer process.
 * https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chrome.h"
#include "output.h"
#include "protos.h"

struct open_call {
	char *name;
	char *probe;
	pid_t pid;
};

struct chrome_thread {
	struct chrome_thread *next;
	pid_t tid;
	struct open_call *stack;
	size_t depth, cap;
};

void chrome_open(struct chrome *c, FILE *f)
{
	memset(c, 0, sizeof(*c));
	c->f = f;
	c->first = true;
	fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n", f);
}

static void event_head(struct chrome *c, const char *ph, pid_t pid, pid_t tid, uint64_t ts_ns,
		       const char *name)
{
	if (ts_ns > c->last_ns)
		c->last_ns = ts_ns;
	fprintf(c->f, "%s{\"ph\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %" PRIu64 ".%03u",
		c->first ? "" : ",\n", ph, (int)pid, (int)tid, ts_ns / 1000,
		(unsigned int)(ts_ns % 1000));
	c->first = false;
	if (name) {
		fputs(", \"name\": ", c->f);
		json_str(c->f, name, strlen(name));
	}
}

static void event_tail(struct chrome *c, const char *probe, const char *args_json)
{
	if (probe) {
		fputs(", \"cat\": ", c->f);
		json_str(c->f, probe, strlen(probe));
	}
	if (args_json)
		fprintf(c->f, ", \"args\": {%s}", args_json);
	fputc('}', c->f);
}

static struct chrome_thread *thread_get(struct chrome *c, pid_t tid, bool create)
{
	struct chrome_thread *t;

	for (t = c->threads; t; t = t->next)
		if (t->tid == tid)
			return t;
	if (!create)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	t->next = c->threads;
	c->threads = t;
	return t;
}

static void pop(struct chrome *c, struct chrome_thread *t, uint64_t ts_ns)
{
	struct open_call *oc = &t->stack[--t->depth];

	event_head(c, "E", oc->pid, t->tid, ts_ns, oc->name);
	event_tail(c, oc->probe, NULL);
	free(oc->name);
	free(oc->probe);
}

int chrome_begin(struct chrome *c, pid_t pid, pid_t tid, uint64_t ts_ns, const char *name,
		 const char *probe, const char *args_json)
{
	struct chrome_thread *t = thread_get(c, tid, true);
	struct open_call *oc;

	if (!t)
		goto nomem;
	if (t->depth == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct open_call *s = realloc(t->stack, cap * sizeof(*s));

		if (!s)
			goto nomem;
		t->stack = s;
		t->cap = cap;
	}
	oc = &t->stack[t->depth];
	oc->name = strdup(name);
	oc->probe = strdup(probe);
	oc->pid = pid;
	if (!oc->name || !oc->probe) {
		free(oc->name);
		free(oc->probe);
		goto nomem;
	}
	t->depth++;
	event_head(c, "B", pid, tid, ts_ns, name);
	event_tail(c, probe, args_json);
	return 0;
nomem:
	/* without a stack entry the "E" could not be matched: an instant event */
	chrome_instant(c, pid, tid, ts_ns, name, probe, args_json);
	return -ENOMEM;
}

void chrome_end(struct chrome *c, pid_t pid, pid_t tid, uint64_t ts_ns, const char *name,
		const char *probe, const char *args_json)
{
	struct chrome_thread *t = thread_get(c, tid, false);
	size_t i;

	if (t) {
		for (i = t->depth; i > 0; i--)
			if (!strcmp(t->stack[i - 1].probe, probe))
				break;
		if (i > 0) {
			while (t->depth > i)
				pop(c, t, ts_ns); /* unwound past them (longjmp) */
			t->depth--;
			free(t->stack[t->depth].name);
			free(t->stack[t->depth].probe);
			event_head(c, "E", pid, tid, ts_ns, name);
			event_tail(c, probe, args_json);
			return;
		}
	}
	chrome_instant(c, pid, tid, ts_ns, name, probe, args_json);
}

void chrome_instant(struct chrome *c, pid_t pid, pid_t tid, uint64_t ts_ns, const char *name,
		    const char *probe, const char *args_json)
{
	event_head(c, "i", pid, tid, ts_ns, name);
	fputs(", \"s\": \"t\"", c->f);
	event_tail(c, probe, args_json);
}

static void thread_free(struct chrome *c, struct chrome_thread *t, uint64_t ts_ns)
{
	while (t->depth)
		pop(c, t, ts_ns);
	free(t->stack);
	free(t);
}

void chrome_thread_exit(struct chrome *c, pid_t tid, uint64_t ts_ns)
{
	struct chrome_thread **pp, *t;

	for (pp = &c->threads; (t = *pp); pp = &t->next) {
		if (t->tid == tid) {
			*pp = t->next;
			thread_free(c, t, ts_ns);
			return;
		}
	}
}

static void name_meta(struct chrome *c, const char *what, pid_t pid, pid_t tid, const char *name)
{
	fprintf(c->f,
		"%s{\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"name\": \"%s\", \"args\": {\"name\": ",
		c->first ? "" : ",\n", (int)pid, (int)tid, what);
	json_str(c->f, name, strlen(name));
	fputs("}}", c->f);
	c->first = false;
}

void chrome_name_process(struct chrome *c, pid_t pid, const char *name)
{
	name_meta(c, "process_name", pid, pid, name);
}

void chrome_name_thread(struct chrome *c, pid_t pid, pid_t tid, const char *name)
{
	name_meta(c, "thread_name", pid, tid, name);
}

void chrome_close(struct chrome *c)
{
	struct chrome_thread *t;

	if (!c->f)
		return;
	while ((t = c->threads)) {
		c->threads = t->next;
		thread_free(c, t, c->last_ns);
	}
	fputs("\n]}\n", c->f);
	c->f = NULL;
}

char *chrome_call_args(const struct proto_vals *vals, const struct proto_val *ret, bool injected)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int i;

	if (!f)
		return NULL;
	if (vals) {
		fputs("\"args\": [", f);
		for (i = 0; i < vals->nr; i++) {
			fputs(i ? ", " : "", f);
			proto_val_print_json(f, &vals->v[i]);
		}
		fputc(']', f);
	}
	if (ret) {
		fputs("\"ret\": ", f);
		if (ret->kind == PV_TEXT && !ret->text[0])
			fputs("null", f);
		else
			proto_val_print_json(f, ret);
	}
	if (injected)
		fputs(", \"injected\": true", f);
	fclose(f);
	return buf;
}
