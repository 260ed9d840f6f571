/* SPDX-License-Identifier: MIT */
/*
 * cmd-trace.c - utrace -f/-u/-r/--inject: function tracing on the probe
 * API (include/utrace/probe.h). Tracer process: every handler below runs in
 * the session's tracing thread while the probed thread is stopped.
 *
 * Probes
 * ------
 * One probe per SPEC: -f registers an entry handler and a return handler
 * (the return context carries the entry timestamp, hence the duration);
 * -u an entry handler; -r a paired probe whose entry handler prints nothing
 * (the backend traps at entry anyway to hijack the return address, and the
 * pairing gives the return its duration). --inject SPEC=VALUE[@EVERY]
 * registers its probe first, so that at a shared address its handler runs
 * before the tracing handlers: it makes the function return VALUE without
 * running it (every EVERY-th call), and the -f handler of the same SPEC
 * then prints the call and its injected return at once (the skipped
 * function has no return to trap).
 *
 * Specs are checked before anything runs: syntax with utrace_spec__parse(),
 * and in launch mode resolution against the image the command would have
 * (the executable and its DT_NEEDED closure, utrace_image__open_exec()). A
 * SPEC that matches nothing is an error (exit 2); one on a library that is
 * not among them stays pending (a warning) and is armed if the program
 * dlopen()s it. In attach mode the probes are registered after the
 * attach, so resolution errors come back from the registration, and the
 * processes are detached untouched before exiting.
 *
 * Output
 * ------
 * Like ltrace, a call's entry line is printed when it is entered and its
 * return line when it returns, each with the thread id, so nested calls and
 * calls in several threads interleave readably:
 *
 *   12:00:01.000123 [4242] malloc(32)
 *   12:00:01.000125 [4242] malloc() = 0x55d0c0a012a0 <0.000002>
 *
 * Arguments follow the prototype table (protos.c); an unknown function
 * shows its first three integer arguments in hex. -c and -H print no event
 * lines, only the table / histograms at exit (to stderr as text when the
 * events go to a Chrome trace file).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "aggr.h"
#include "chrome.h"
#include "cli.h"
#include "launch.h"
#include "modload.h"
#include "output.h"
#include "protos.h"
#include "trace-agent.h"

#define STACK_MAX 32

struct tracer;

/* One --inject SPEC=VALUE[@EVERY]. */
struct inject {
	char *spec;
	uint64_t value;
	uint64_t every; /* 1: every call */
	uint64_t hits;
	uint64_t done; /* injections made */
	bool shown; /* a -f/-u probe has the same SPEC and shows the calls */
	struct utrace_probe *p;
	struct tracer *t;
};

/* One -f/-u/-r SPEC, or a -m module's probe. */
struct tprobe {
	enum cli_probe_kind kind;
	int module, mprobe; /* CLI_PROBE_MODULE */
	const char *spec;
	char *owned; /* @spec, when rewritten by check_specs() */
	const char *refused; /* every match refuses return probes: why (Go code) */
	struct utrace_probe *p;
	struct tracer *t;
};

/* Per-pid symbol cache for -k. */
struct symcache {
	struct symcache *next;
	pid_t pid;
	struct utrace_maps *maps;
	struct utrace_image *img;
};

/* Threads seen (Chrome track names). */
#define SEEN_HASH 256
struct seen {
	struct seen *next;
	pid_t tid;
};

struct tracer {
	struct cli_opts *opts;
	struct utrace_session *s;
	struct utrace_uprobes *up;
	struct output out;
	struct chrome chrome;
	bool chrome_on;
	bool quiet_events; /* -c / -H: no per-event lines */
	struct aggr aggr;
	struct tprobe *probes;
	int nr_probes;
	struct inject *injects;
	int nr_injects;
	int64_t mono_to_real; /* add to CLOCK_MONOTONIC ns to get CLOCK_REALTIME ns */
	pid_t main_pid;
	struct symcache *syms;
	struct seen *seen[SEEN_HASH];
	/* the last injection, so that the -f handler of the same hit knows */
	pid_t inj_tid;
	uint64_t inj_addr, inj_ns, inj_value;
	bool inj_warned;
	/* launch mode, no image to check specs against before exec */
	bool check_after_exec;
	bool nomatch; /* a SPEC matched nothing after exec */
	bool pending; /* a SPEC waits for a library (the agent arms it for one process) */
	/*
	 * The session always follows forks (see cmd_trace()); without -F,
	 * only the roots (the command, the -p pids) are shown, and tracing
	 * ends when they have all exited.
	 */
	int roots_left;
	bool roots_done;
};

static struct tracer *the_tracer;
static volatile sig_atomic_t last_signal;

static void on_interrupt(int sig)
{
	last_signal = sig;
	if (the_tracer && the_tracer->s)
		utrace_session__interrupt(the_tracer->s);
}

/* ------------------------------------------------------------------------ */
/* Helpers for handlers                                                      */
/* ------------------------------------------------------------------------ */

static uint64_t real_ns(struct tracer *t, uint64_t mono_ns)
{
	return (uint64_t)((int64_t)mono_ns + t->mono_to_real);
}

static ssize_t ctx_read(void *c, uint64_t addr, void *buf, size_t len)
{
	return utrace_probe_ctx__read(c, addr, buf, len);
}

static void ctx_regs(struct utrace_probe_ctx *ctx, struct proto_regs *r)
{
	unsigned int i;

	for (i = 0; i < 6; i++)
		r->args[i] = utrace_probe_ctx__arg(ctx, i);
	r->sp = ctx->regs ? ctx->regs->rsp : 0;
	r->read = ctx_read;
	r->ctx = ctx;
}

/* display name: the bare function name, else the point's name */
static const char *fn_name(const struct utrace_probe_ctx *ctx)
{
	return ctx->point->symbol ? ctx->point->symbol : ctx->point->name;
}

/*
 * The per-point record: aggregation entry (-c, -H) with the prototype in
 * its priv, looked up once per point name.
 */
static struct aggr_stat *point_stat(struct tracer *t, const struct utrace_probe_ctx *ctx,
				    const struct proto **ret_proto)
{
	struct aggr_stat *st = aggr_get(&t->aggr, ctx->point->name, fn_name(ctx));
	const struct proto *p;

	if (st && st->priv) {
		*ret_proto = st->priv;
		return st;
	}
	/* the debug information knows best; then the table of libc functions */
	p = proto_dwarf(ctx->point->object, ctx->point->symbol);
	if (!p)
		p = proto_find(ctx->point->symbol);
	if (!p)
		p = proto_unknown();
	if (st)
		st->priv = p;
	*ret_proto = p;
	return st;
}

static void thread_seen(struct tracer *t, pid_t pid, pid_t tid)
{
	struct seen **pp = &t->seen[(unsigned int)tid % SEEN_HASH], *s;
	char path[64], comm[64] = "";
	FILE *f;

	for (s = *pp; s; s = s->next)
		if (s->tid == tid)
			return;
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->tid = tid;
	s->next = *pp;
	*pp = s;
	if (!t->chrome_on)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	if (tid == pid)
		chrome_name_process(&t->chrome, pid, comm[0] ? comm : "?");
	chrome_name_thread(&t->chrome, pid, tid, comm[0] ? comm : "?");
}

static void seen_clear(struct tracer *t)
{
	unsigned int i;

	for (i = 0; i < SEEN_HASH; i++) {
		while (t->seen[i]) {
			struct seen *s = t->seen[i];

			t->seen[i] = s->next;
			free(s);
		}
	}
}

/* ------------------------------------------------------------------------ */
/* -k: frame-pointer stack walk, symbolised through the process image        */
/* ------------------------------------------------------------------------ */

static struct symcache *symcache_get(struct tracer *t, pid_t pid, bool refresh)
{
	struct symcache *c;

	for (c = t->syms; c; c = c->next)
		if (c->pid == pid)
			break;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		c->pid = pid;
		c->next = t->syms;
		t->syms = c;
		refresh = true;
	}
	if (refresh) {
		utrace_maps__free(c->maps);
		utrace_image__close(c->img);
		c->maps = utrace_maps__read(pid);
		c->img = utrace_image__open_pid(pid);
	}
	return c;
}

static void symcache_clear(struct tracer *t)
{
	while (t->syms) {
		struct symcache *c = t->syms;

		t->syms = c->next;
		utrace_maps__free(c->maps);
		utrace_image__close(c->img);
		free(c);
	}
}

static bool is_code(struct symcache *c, uint64_t addr)
{
	const struct utrace_map *m = c->maps ? utrace_maps__find(c->maps, addr) : NULL;

	return m && (m->prot & UTRACE_MAP_EXEC);
}

/* "main+0x1c" and "s-trace" for @addr; false if no object maps it. */
static bool symbolise(struct symcache *c, uint64_t addr, char *sym, size_t symlen,
		      const char **ret_obj)
{
	const struct utrace_map *m = c->maps ? utrace_maps__find(c->maps, addr) : NULL;
	size_t i, n = c->img ? utrace_image__object_count(c->img) : 0;

	*ret_obj = NULL;
	snprintf(sym, symlen, "0x%" PRIx64, addr);
	if (!m || !m->path)
		return false;
	for (i = 0; i < n; i++) {
		const struct utrace_object *o = utrace_image__object(c->img, i);
		const struct utrace_sym *s;
		struct utrace_elf *elf;
		const char *base;

		if (!o || !o->path || strcmp(o->path, m->path))
			continue;
		base = strrchr(o->path, '/');
		*ret_obj = base ? base + 1 : o->path;
		elf = utrace_image__elf(c->img, i);
		s = elf ? utrace_elf__find_sym(elf, addr - o->bias) : NULL;
		if (s)
			snprintf(sym, symlen, "%s+0x%" PRIx64, s->name, addr - o->bias - s->addr);
		return true;
	}
	{
		const char *base = strrchr(m->path, '/');

		*ret_obj = base ? base + 1 : m->path;
	}
	return true;
}

/*
 * Return addresses of the calling frames: [rsp] at a function entry (the
 * frame is not set up yet), then the rbp chain. Frames of code built without
 * frame pointers end the walk early: a frame pointer must grow towards the
 * stack base, stay within 8 MiB of rsp and lead to executable code.
 */
static int walk_stack(struct tracer *t, struct utrace_probe_ctx *ctx, uint64_t *pcs)
{
	struct symcache *c = symcache_get(t, ctx->pid, false);
	uint64_t sp = ctx->regs->rsp, fp = ctx->regs->rbp, ret;
	int n = 0;

	if (!c)
		return 0;
	if (ctx->point->offset == 0 &&
	    utrace_probe_ctx__read(ctx, sp, &ret, sizeof(ret)) == sizeof(ret)) {
		if (!is_code(c, ret)) {
			c = symcache_get(t, ctx->pid, true); /* dlopen since? */
			if (!c || !is_code(c, ret))
				return 0;
		}
		pcs[n++] = ret;
	}
	while (n < STACK_MAX && fp > sp && fp - sp < (8u << 20) && !(fp & 7)) {
		uint64_t frame[2];

		if (utrace_probe_ctx__read(ctx, fp, frame, sizeof(frame)) != sizeof(frame))
			break;
		if (!frame[1] || !is_code(c, frame[1]))
			break;
		pcs[n++] = frame[1];
		sp = fp;
		fp = frame[0];
	}
	return n;
}

static void print_stack(struct tracer *t, struct utrace_probe_ctx *ctx, bool json)
{
	uint64_t pcs[STACK_MAX];
	int n = walk_stack(t, ctx, pcs), i;
	struct symcache *c = symcache_get(t, ctx->pid, false); /* may be refreshed */
	FILE *f = t->out.f;

	if (json)
		fputs(", \"stack\": [", f);
	for (i = 0; i < n && c; i++) {
		char sym[256], buf[320];
		const char *obj;

		symbolise(c, pcs[i], sym, sizeof(sym), &obj);
		if (json) {
			snprintf(buf, sizeof(buf), "%s:%s", obj ? obj : "?", sym);
			fputs(i ? ", " : "", f);
			json_str(f, buf, strlen(buf));
		} else {
			fprintf(f, " > %s (%s) [0x%" PRIx64 "]\n", sym, obj ? obj : "?", pcs[i]);
		}
	}
	if (json)
		fputc(']', f);
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

static void json_head(struct tracer *t, const struct utrace_probe_ctx *ctx, const char *type)
{
	FILE *f = t->out.f;

	fprintf(f,
		"{\"ts_ns\": %" PRIu64 ", \"pid\": %d, \"tid\": %d, \"type\": \"%s\", \"probe\": ",
		real_ns(t, ctx->now_ns), (int)ctx->pid, (int)ctx->tid, type);
	json_str(f, ctx->point->name, strlen(ctx->point->name));
	fputs(", \"name\": ", f);
	json_str(f, fn_name(ctx), strlen(fn_name(ctx)));
}

static void emit_entry(struct tracer *t, struct utrace_probe_ctx *ctx, const struct proto *proto,
		       bool injected)
{
	struct proto_regs r;
	struct proto_vals vals;
	FILE *f = t->out.f;
	int i;

	ctx_regs(ctx, &r);
	if (injected)
		r.sp -= 8; /* set_return popped the return address */
	proto_format_args(proto, &r, t->opts->strsize, &vals);
	if (t->chrome_on) {
		char *a = chrome_call_args(&vals, NULL, false);

		chrome_begin(&t->chrome, ctx->pid, ctx->tid, ctx->now_ns, fn_name(ctx),
			     ctx->point->name, a);
		free(a);
	} else if (t->out.format == CLI_FMT_JSON) {
		json_head(t, ctx, "entry");
		fputs(", \"args\": [", f);
		for (i = 0; i < vals.nr; i++) {
			fputs(i ? ", " : "", f);
			proto_val_print_json(f, &vals.v[i]);
		}
		fputc(']', f);
		if (t->opts->stack)
			print_stack(t, ctx, true);
		fputs("}\n", f);
	} else {
		output_prefix(&t->out, real_ns(t, ctx->now_ns), ctx->tid, true);
		fprintf(f, "%s(", fn_name(ctx));
		for (i = 0; i < vals.nr; i++) {
			fputs(i ? ", " : "", f);
			proto_val_print_text(f, &vals.v[i]);
		}
		fputs(")\n", f);
		if (t->opts->stack)
			print_stack(t, ctx, false);
	}
	proto_vals_clear(&vals);
}

static void emit_return(struct tracer *t, struct utrace_probe_ctx *ctx, const struct proto *proto,
			uint64_t rax, uint64_t dur_ns, bool injected)
{
	struct proto_regs r;
	struct proto_val v;
	FILE *f = t->out.f;
	bool is_void;

	ctx_regs(ctx, &r);
	proto_format_ret(proto, rax, &r, t->opts->strsize, &v);
	is_void = proto->ret == PK_VOID;
	if (t->chrome_on) {
		char *a = chrome_call_args(NULL, &v, injected);

		chrome_end(&t->chrome, ctx->pid, ctx->tid, ctx->now_ns, fn_name(ctx),
			   ctx->point->name, a);
		free(a);
	} else if (t->out.format == CLI_FMT_JSON) {
		json_head(t, ctx, "return");
		fputs(", \"ret\": ", f);
		if (is_void)
			fputs("null", f);
		else
			proto_val_print_json(f, &v);
		fprintf(f, ", \"dur_ns\": %" PRIu64 "%s}\n", dur_ns,
			injected ? ", \"injected\": true" : "");
	} else {
		output_prefix(&t->out, real_ns(t, ctx->now_ns), ctx->tid, true);
		fprintf(f, "%s() = ", fn_name(ctx));
		if (is_void)
			fputs("<void>", f);
		else
			proto_val_print_text(f, &v);
		if (injected)
			fputs(" (injected)", f);
		output_duration(&t->out, dur_ns);
		fputc('\n', f);
	}
	proto_val_clear(&v);
}

/* -u at an address inside a function: no arguments to show */
static void emit_probe(struct tracer *t, struct utrace_probe_ctx *ctx)
{
	if (t->chrome_on) {
		chrome_instant(&t->chrome, ctx->pid, ctx->tid, ctx->now_ns, ctx->point->name,
			       ctx->point->name, NULL);
	} else if (t->out.format == CLI_FMT_JSON) {
		json_head(t, ctx, "probe");
		if (t->opts->stack)
			print_stack(t, ctx, true);
		fputs("}\n", t->out.f);
	} else {
		output_prefix(&t->out, real_ns(t, ctx->now_ns), ctx->tid, true);
		fprintf(t->out.f, "%s\n", ctx->point->name);
		if (t->opts->stack)
			print_stack(t, ctx, false);
	}
}

static bool wanted(struct tracer *t, pid_t pid);

/*
 * Without -F, the children the session follows anyway are not shown. The
 * process is the thread's own (a vfork child's return hits are reported
 * with its parent's pid, whose memory it shares).
 */
static bool wanted_ctx(struct tracer *t, const struct utrace_probe_ctx *ctx)
{
	struct utrace_thread *th;

	if (t->opts->follow_forks)
		return true;
	th = utrace_session__find_thread(t->s, ctx->tid);
	return wanted(t, th ? utrace_thread__pid(th) : ctx->pid);
}

static bool wanted(struct tracer *t, pid_t pid)
{
	int i;

	if (t->opts->follow_forks || pid == t->main_pid)
		return true;
	for (i = 0; i < t->opts->nr_pids; i++)
		if (t->opts->pids[i] == pid)
			return true;
	return false;
}

static bool injected_here(struct tracer *t, const struct utrace_probe_ctx *ctx)
{
	return t->inj_tid == ctx->tid && t->inj_addr == ctx->point->addr &&
	       t->inj_ns == ctx->now_ns;
}

/* -f and -u: entry */
static int on_entry(struct utrace_probe_ctx *ctx, void *data)
{
	struct tprobe *tp = data;
	struct tracer *t = tp->t;
	const struct proto *proto;
	struct aggr_stat *st = point_stat(t, ctx, &proto);
	bool injected = injected_here(t, ctx), at_entry = ctx->point->offset == 0;

	if (!wanted_ctx(t, ctx))
		return UTRACE_PROBE_OK;
	thread_seen(t, ctx->pid, ctx->tid);
	/* -f counts a call here, like -u: one unwound by an exception never returns */
	if (tp->kind == CLI_PROBE_FUNC && injected && st)
		aggr_add(st, true, 0, proto_is_error(proto, t->inj_value));
	else if ((tp->kind == CLI_PROBE_ENTRY || tp->kind == CLI_PROBE_FUNC) && st)
		aggr_count(st, false);
	if (t->quiet_events && !t->chrome_on)
		return UTRACE_PROBE_OK;
	if (!at_entry && tp->kind == CLI_PROBE_ENTRY) {
		emit_probe(t, ctx);
		return UTRACE_PROBE_OK;
	}
	emit_entry(t, ctx, proto, injected);
	if (tp->kind == CLI_PROBE_FUNC && injected)
		emit_return(t, ctx, proto, t->inj_value, 0, true);
	return UTRACE_PROBE_OK;
}

/* -f and -r: return */
static int on_return(struct utrace_probe_ctx *ctx, void *data)
{
	struct tprobe *tp = data;
	struct tracer *t = tp->t;
	const struct proto *proto;
	struct aggr_stat *st = point_stat(t, ctx, &proto);
	uint64_t rax = utrace_probe_ctx__retval(ctx);
	uint64_t dur =
		ctx->entry_ns && ctx->now_ns > ctx->entry_ns ? ctx->now_ns - ctx->entry_ns : 0;

	if (!wanted_ctx(t, ctx))
		return UTRACE_PROBE_OK;
	thread_seen(t, ctx->pid, ctx->tid);
	if (st && tp->kind == CLI_PROBE_FUNC)
		aggr_time(st, dur, proto_is_error(proto, rax)); /* counted at its entry */
	else if (st)
		aggr_add(st, ctx->entry_ns != 0, dur, proto_is_error(proto, rax));
	if (t->quiet_events && !t->chrome_on)
		return UTRACE_PROBE_OK;
	emit_return(t, ctx, proto, rax, dur, false);
	return UTRACE_PROBE_OK;
}

/* -r: the entry half of the pair, for the duration only */
static int on_ret_entry(struct utrace_probe_ctx *ctx, void *data)
{
	return UTRACE_PROBE_OK;
}

/* --inject: runs before the tracing handlers at the same address */
static int on_inject(struct utrace_probe_ctx *ctx, void *data)
{
	struct inject *in = data;
	struct tracer *t = in->t;
	int err;

	if (!wanted_ctx(t, ctx) || ++in->hits % in->every)
		return UTRACE_PROBE_OK;
	err = utrace_probe_ctx__set_return(ctx, in->value);
	if (err) {
		if (!t->inj_warned)
			cli_error("--inject '%s': cannot inject at %s: not a function entry",
				  in->spec, ctx->point->name);
		t->inj_warned = true;
		return UTRACE_PROBE_OK;
	}
	in->done++;
	t->inj_tid = ctx->tid;
	t->inj_addr = ctx->point->addr;
	t->inj_ns = ctx->now_ns;
	t->inj_value = in->value;
	if (!in->shown) {
		/* no -f shows this SPEC: show the injected call here */
		const struct proto *proto;
		struct aggr_stat *st = point_stat(t, ctx, &proto);

		thread_seen(t, ctx->pid, ctx->tid);
		if (st)
			aggr_add(st, true, 0, proto_is_error(proto, in->value));
		if (!t->quiet_events || t->chrome_on) {
			emit_entry(t, ctx, proto, true);
			emit_return(t, ctx, proto, in->value, 0, true);
		}
	}
	return UTRACE_PROBE_OK;
}

/* ------------------------------------------------------------------------ */
/* Set-up                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * SPEC=VALUE[@EVERY]: the last '=' splits (a SPEC has none); VALUE is an
 * integer (decimal, 0x hex, negative) or NULL; an errno name means a
 * syscall, which this command does not inject (yet).
 */
static int parse_inject(const char *arg, struct inject *in)
{
	const char *eq = strrchr(arg, '=');
	char *end, *at;
	char val[64];

	if (!eq || eq == arg || !eq[1]) {
		cli_error("bad --inject '%s': expected SPEC=VALUE[@EVERY]", arg);
		return -EINVAL;
	}
	snprintf(val, sizeof(val), "%s", eq + 1);
	in->every = 1;
	at = strchr(val, '@');
	if (at) {
		*at++ = '\0';
		if (cli_parse_every(at, &in->every)) {
			cli_error("bad --inject '%s': @EVERY must be a positive integer", arg);
			return -EINVAL;
		}
	}
	if (val[0] == 'E' && val[1] >= 'A' && val[1] <= 'Z') {
		cli_error("--inject '%s': failing a syscall cannot be combined with -f/-u/-r yet "
			  "(for a function, VALUE is its return value: an integer)",
			  arg);
		return -EOPNOTSUPP;
	}
	if (!strcmp(val, "NULL")) {
		in->value = 0;
	} else {
		errno = 0;
		if (val[0] == '-')
			in->value = (uint64_t)strtoll(val, &end, 0);
		else
			in->value = strtoull(val, &end, 0);
		if (errno || end == val || *end) {
			cli_error("bad --inject '%s': VALUE must be an integer (42, -1, 0x10) or "
				  "NULL",
				  arg);
			return -EINVAL;
		}
	}
	in->spec = strndup(arg, (size_t)(eq - arg));
	return in->spec ? 0 : -ENOMEM;
}

/* argv[0] as execvp() would find it; false if not found. */
static bool find_command(const char *cmd, char *buf, size_t size)
{
	const char *path = getenv("PATH"), *p;
	struct stat st;

	if (strchr(cmd, '/')) {
		snprintf(buf, size, "%s", cmd);
		return access(buf, X_OK) == 0;
	}
	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; p && *p;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);

		snprintf(buf, size, "%.*s/%s", (int)len, len ? p : ".", cmd);
		if (access(buf, X_OK) == 0 && stat(buf, &st) == 0 && S_ISREG(st.st_mode))
			return true;
		p = colon ? colon + 1 : NULL;
	}
	return false;
}

/*
 * glibc's strlen, memcpy, strcmp ... are IFUNCs: the symbol is a resolver
 * that ld.so runs once to pick an implementation (__strlen_avx2 ...).
 * Said for a name; for a glob ('libc:*' has dozens) only with -v, as the
 * glob traces the implementations it matches too.
 */
static void warn_ifunc(struct cli_opts *o, const char *text, const struct utrace_match *m,
		       size_t nr)
{
	const char *colon = strrchr(text, ':');
	bool glob = strpbrk(colon ? colon + 1 : text, "*?[") != NULL;
	size_t k;

	for (k = 0; k < nr && o->verbose >= (glob ? 1 : 0); k++) {
		if (!(m[k].sym_flags & UTRACE_SYM_IFUNC))
			continue;
		cli_error("%sprobe '%s': '%s' is an IFUNC: this traces its resolver, run "
			  "once at load; trace the implementation instead (utrace -l '*:__%s*' "
			  "lists them)",
			  glob ? "" : "warning: ", text, m[k].symbol, m[k].symbol);
		return;
	}
}

/*
 * A bare PATTERN (no OBJECT) that the main executable does not define,
 * like 'sqlite3_step' in the sqlite3 shell, which imports it: the SPEC
 * naming the object(s) that do define it ("libsqlite3.so.0:sqlite3_step",
 * or "*:PATTERN" when there are several), or NULL.
 */
static char *fallback_spec(struct cli_opts *o, struct utrace_image **imgs, int nr_imgs,
			   const char *text)
{
	struct utrace_spec spec;
	char *star = NULL, *ret = NULL, base[256] = "";
	int i;
	size_t k;
	bool several = false;

	if (asprintf(&star, "*:%s", text) < 0)
		return NULL;
	if (utrace_spec__parse(star, &spec, NULL, 0)) {
		free(star);
		return NULL;
	}
	for (i = 0; i < nr_imgs; i++) {
		struct utrace_match *m = NULL;
		size_t nr = 0;

		if (!imgs[i] || utrace_image__resolve(imgs[i], &spec, &m, &nr, NULL))
			continue;
		warn_ifunc(o, text, m, nr);
		for (k = 0; k < nr; k++) {
			const struct utrace_object *o = utrace_image__object(imgs[i], m[k].object);
			const char *b = o && o->path ? strrchr(o->path, '/') : NULL;

			b = b ? b + 1 : (o && o->path ? o->path : "");
			if (!base[0])
				snprintf(base, sizeof(base), "%s", b);
			else if (strcmp(base, b))
				several = true;
		}
		free(m);
	}
	utrace_spec__clear(&spec);
	if (base[0] && (several || strchr(base, ':') || asprintf(&ret, "%s:%s", base, text) < 0))
		ret = NULL;
	if (base[0] && several) {
		ret = star;
		star = NULL;
	}
	free(star);
	return ret;
}

/*
 * -f/-r SPECs whose every match refuses return probes (Go code): one line
 * each; an error (exit 2) when nothing else is left to trace, else a
 * warning and they are left out.
 */
static int drop_refused(struct tracer *t)
{
	int i, j, n = 0, left = t->nr_injects;

	for (i = 0; i < t->nr_probes; i++)
		left += !t->probes[i].refused;
	for (i = 0; i < t->nr_probes; i++) {
		struct tprobe *tp = &t->probes[i];

		if (!tp->refused) {
			t->probes[n++] = *tp;
			continue;
		}
		if (!left || t->opts->verbose >= 0)
			cli_error("%sprobe '%s': refused: %s; -u traces its entries",
				  left ? "warning: " : "", tp->spec, tp->refused);
		free(tp->owned);
	}
	t->nr_probes = n;
	for (i = 0; i < t->nr_injects; i++) {
		t->injects[i].shown = false;
		for (j = 0; j < n; j++)
			if (t->probes[j].kind != CLI_PROBE_RET &&
			    t->probes[j].kind != CLI_PROBE_MODULE &&
			    !strcmp(t->probes[j].spec, t->injects[i].spec))
				t->injects[i].shown = true;
	}
	return left ? 0 : EXIT_USAGE;
}

/*
 * Check every SPEC's syntax, and its resolution against the command's image
 * (launch mode: the executable and its DT_NEEDED closure) or the images of
 * the processes to attach to, before anything is touched. A bare PATTERN
 * the main executable does not define is looked up in the libraries (a
 * note says which). Return: 0, or the exit status.
 */
static int check_specs(struct tracer *t)
{
	struct cli_opts *o = t->opts;
	struct utrace_image **imgs;
	char path[PATH_MAX] = "", errbuf[256];
	int i, k, n = t->nr_probes + t->nr_injects, ret = 0, nr_imgs = 0;

	imgs = calloc(o->nr_pids + 1, sizeof(*imgs));
	if (!imgs)
		return EXIT_TRACE;
	if (o->argc > 0) {
		if (!find_command(o->argv[0], path, sizeof(path))) {
			cli_error("cannot run '%s': no such executable (check the name and PATH)",
				  o->argv[0]);
			free(imgs);
			return EXIT_USAGE;
		}
		imgs[0] = utrace_image__open_exec(path);
		nr_imgs = imgs[0] ? 1 : 0;
		/* a script or an unreadable binary: checked after its exec instead */
		t->check_after_exec = !imgs[0];
	} else {
		/* a process that cannot be read is reported by the attach */
		for (i = 0; i < o->nr_pids; i++)
			if ((imgs[nr_imgs] = utrace_image__open_pid(o->pids[i])))
				nr_imgs++;
		snprintf(path, sizeof(path), "pid %d", o->pids[0]);
	}
	for (i = 0; i < n && !ret; i++) {
		const char **textp = i < t->nr_probes ?
					     &t->probes[i].spec :
					     (const char **)&t->injects[i - t->nr_probes].spec;
		const char *text = *textp;
		struct utrace_spec spec;
		size_t total = 0, refused = 0;
		const char *ret_why = NULL;
		bool any_pending = false,
		     returns = i < t->nr_probes && (t->probes[i].kind == CLI_PROBE_FUNC ||
						    t->probes[i].kind == CLI_PROBE_RET);
		char *alt;
		int err = 0;

		if (utrace_spec__parse(text, &spec, errbuf, sizeof(errbuf))) {
			cli_error("%s", errbuf[0] ? errbuf : "bad spec");
			ret = EXIT_USAGE;
			break;
		}
		for (k = 0; k < nr_imgs && !err; k++) {
			struct utrace_match *m = NULL;
			size_t nr = 0, j;
			bool pending = false;

			err = utrace_image__resolve(imgs[k], &spec, &m, &nr, &pending);
			if (!err)
				warn_ifunc(o, text, m, nr);
			for (j = 0; !err && returns && j < nr; j++) {
				const char *r = utrace_plan__ret_refused(imgs[k], &m[j]);

				refused += !!r;
				ret_why = r ?: ret_why;
			}
			free(m);
			total += nr;
			any_pending |= pending;
		}
		if (err == -ENOENT) {
			cli_error("probe '%s': no such file '%s'", text, spec.object);
			ret = EXIT_USAGE;
		} else if (err == -ERANGE) {
			cli_error("probe '%s': the offset is past the end of '%s'", text,
				  spec.pattern);
			ret = EXIT_USAGE;
		} else if (err) {
			snprintf(errbuf, sizeof(errbuf), "probe '%s'", text);
			cli_lib_error(errbuf, err);
			ret = EXIT_USAGE;
		} else if (total && refused == total && !any_pending) {
			/* some refused, some not: the backends skip those, with a warning */
			t->probes[i].refused = ret_why;
		} else if (!nr_imgs || total) {
			/* resolved, or nothing to check against */
		} else if (any_pending) {
			t->pending = true;
			if (o->verbose >= 0)
				cli_error(
					"warning: probe '%s': '%s' is not loaded yet; armed if the "
					"program loads it",
					text, spec.object);
		} else if (!spec.object && !(spec.flags & (UTRACE_SPEC_PLT | UTRACE_SPEC_ADDR)) &&
			   (alt = fallback_spec(o, imgs, nr_imgs, text))) {
			if (o->verbose >= 0)
				cli_error("note: probe '%s': not defined in the main executable; "
					  "tracing '%s'",
					  text, alt);
			if (i < t->nr_probes) {
				free(t->probes[i].owned);
				t->probes[i].owned = alt;
			} else {
				free(t->injects[i - t->nr_probes].spec);
			}
			*textp = alt;
		} else {
			if (spec.object)
				cli_error(
					"probe '%s': matches nothing in '%s' (utrace -l SPEC lists "
					"what a SPEC matches)",
					text, spec.object);
			else
				cli_error("probe '%s': no such function in %s or its libraries "
					  "(utrace -l SPEC lists what a SPEC matches)",
					  text, path);
			ret = EXIT_USAGE;
		}
		utrace_spec__clear(&spec);
	}
	for (k = 0; k < nr_imgs; k++)
		utrace_image__close(imgs[k]);
	free(imgs);
	return ret ?: drop_refused(t);
}

/*
 * -p: a thread that blocks SIGTRAP cannot take a breakpoint, with either
 * backend (the agent arms every site as an int3 first): the kernel forces
 * the signal, unblocking it and resetting its action, and the process
 * dies of it once no tracer stops it. Refused before the process is
 * touched. A new thread blocks every signal until it sets its own mask,
 * so look again for ~200 ms. (Launch mode cannot know in advance: a
 * program that blocks SIGTRAP later is docs/uprobes.md's limit.)
 */
static int check_sigtrap(struct tracer *t)
{
	int i, k, r = 0;
	pid_t tid = 0;

	for (i = 0; i < t->opts->nr_pids; i++) {
		if (utrace_proc__check_access(t->opts->pids[i]))
			continue; /* the attach says why it cannot */
		for (k = 0; k < 20; k++) {
			struct timespec ts = { 0, 10000000 };

			r = utrace_proc__blocks_signal(t->opts->pids[i], SIGTRAP, &tid);
			if (r <= 0)
				break; /* an error is the attach's to report */
			nanosleep(&ts, NULL);
		}
		if (r > 0) {
			cli_error(
				"cannot trace pid %d: its thread %d blocks SIGTRAP, which a "
				"probe's breakpoint raises (the kernel would unblock it and reset "
				"its action, or kill the process)",
				t->opts->pids[i], (int)tid);
			return EXIT_TRACE;
		}
	}
	return 0;
}

/* A SPEC neither armed nor pending anywhere: nothing will ever hit it. */
static const char *unmatched_spec(struct tracer *t)
{
	int i;

	for (i = 0; i < t->nr_probes + t->nr_injects; i++) {
		struct utrace_probe *p =
			i < t->nr_probes ? t->probes[i].p : t->injects[i - t->nr_probes].p;
		struct utrace_probe_stats st;

		if (p && !utrace_probe__stats(p, &st) && !st.points && !st.pending)
			return utrace_probe__name(p);
	}
	return NULL;
}

/* launch mode, script: once the command has exec'ed, its specs must resolve */
static int on_exec(struct utrace_engine *e, struct utrace_thread *th, pid_t former_tid)
{
	struct tracer *t = utrace_engine__ctx(e);
	const char *bad;

	if (!t->check_after_exec || utrace_thread__pid(th) != t->main_pid)
		return UTRACE_RESUME;
	t->check_after_exec = false;
	bad = unmatched_spec(t);
	if (!bad)
		return UTRACE_RESUME;
	cli_error("probe '%s': matches nothing in '%s' or its libraries (list candidates with: "
		  "utrace -l '%s' -- %s)",
		  bad, t->opts->argv[0], bad, t->opts->argv[0]);
	t->nomatch = true;
	return UTRACE_STOP | UTRACE_BREAK;
}

/*
 * A thread exited: close its open calls in the Chrome trace. Without -F,
 * when the roots are gone the children still traced are not detached but
 * followed silently until they exit: a child forked a moment ago may not
 * have had the breakpoints it inherited taken out yet, and untraced it
 * would die of the first one it hits.
 */
static int on_exit_ev(struct utrace_engine *e, struct utrace_thread *th, int status)
{
	struct tracer *t = utrace_engine__ctx(e);
	pid_t tid = utrace_thread__tid(th), pid = utrace_thread__pid(th);

	if (t->chrome_on)
		chrome_thread_exit(&t->chrome, tid, now_mono_ns());
	/* attach mode: the exit status cannot say it (launch mode: it does) */
	if (tid == pid && t->opts->nr_pids && wanted(t, pid) && !t->quiet_events)
		output_killed(&t->out, pid, status);
	if (tid != pid || !wanted(t, pid) || t->opts->follow_forks)
		return UTRACE_RESUME;
	if (--t->roots_left > 0)
		return UTRACE_RESUME;
	t->roots_done = true;
	if (t->opts->verbose > 0 && utrace_session__threads(t->s, 0, NULL, 0) > 1)
		cli_error("the traced processes have exited; following their children until they "
			  "exit (Ctrl-C detaches)");
	return UTRACE_RESUME;
}

static int register_probes(struct tracer *t)
{
	int i;

	/* injections first: their handlers run before the tracing ones */
	for (i = 0; i < t->nr_injects + t->nr_probes; i++) {
		UTRACE_OPTS(utrace_probe_opts, po);
		const char *spec;
		struct utrace_probe *p;
		char what[300];

		if (i < t->nr_injects) {
			struct inject *in = &t->injects[i];

			spec = in->spec;
			po.handler = on_inject;
			po.data = in;
		} else {
			struct tprobe *tp = &t->probes[i - t->nr_injects];

			spec = tp->spec;
			po.data = tp;
			switch (tp->kind) {
			case CLI_PROBE_FUNC:
				po.handler = on_entry;
				po.ret_handler = on_return;
				break;
			case CLI_PROBE_ENTRY:
				po.handler = on_entry;
				break;
			case CLI_PROBE_RET:
				po.handler = on_ret_entry;
				po.ret_handler = on_return;
				break;
			case CLI_PROBE_INJECT:
				break; /* never in opts->probes: injects are t->injects */
			case CLI_PROBE_MODULE:
				module_ptrace_opts(tp->module, tp->mprobe, &po);
				break;
			}
		}
		p = utrace_probe__register_spec(t->up, spec, &po);
		if (!p) {
			int err = errno;

			if (err == UTRACE_ERRNO__NOMATCH)
				cli_error(
					"probe '%s': matches nothing in the traced process%s (list "
					"candidates with: utrace -l '%s' -p %d)",
					spec, t->opts->nr_pids > 1 ? "es" : "", spec, t->main_pid);
			else {
				snprintf(what, sizeof(what), "probe '%s'", spec);
				cli_lib_error(what, -err);
			}
			return err == UTRACE_ERRNO__NOMATCH || err == UTRACE_ERRNO__SPEC ||
					       err == ENOENT || err == ERANGE ?
				       EXIT_USAGE :
				       EXIT_TRACE;
		}
		if (i < t->nr_injects)
			t->injects[i].p = p;
		else
			t->probes[i - t->nr_injects].p = p;
		if (t->opts->nr_pids && t->opts->verbose >= 0) {
			struct utrace_probe_stats st;

			if (!utrace_probe__stats(p, &st) && !st.points && st.pending)
				cli_error(
					"warning: probe '%s': its object is not loaded yet; armed "
					"when it is loaded",
					spec);
		}
	}
	return 0;
}

static int timeout_left(uint64_t deadline_ns)
{
	uint64_t now;

	if (!deadline_ns)
		return -1;
	now = now_mono_ns();
	if (now >= deadline_ns)
		return 0;
	return (int)((deadline_ns - now + 999999) / 1000000);
}

static void print_at_exit(struct tracer *t)
{
	FILE *f = t->chrome_on ? stderr : t->out.f;
	uint64_t ts = now_realtime_ns();
	bool json = t->out.format == CLI_FMT_JSON;

	if (t->opts->summary) {
		if (json)
			aggr_json_summary(f, &t->aggr, ts, t->main_pid);
		else
			aggr_print_summary(f, &t->aggr, "function");
	}
	if (t->opts->hist) {
		if (json)
			aggr_json_hist(f, &t->aggr, ts, t->main_pid);
		else
			aggr_print_hist(f, &t->aggr);
	}
	modules_print_counters(f, json, ts, t->main_pid);
}

static void report_missed(struct tracer *t)
{
	struct utrace_uprobes_stats st;

	if (!t->up || utrace_uprobes__stats(t->up, &st))
		return;
	if (st.missed_returns && t->opts->verbose >= 0)
		cli_error("note: %" PRIu64 " returns were not seen (frames unwound by longjmp or "
			  "exceptions, or nesting deeper than 64 calls)",
			  st.missed_returns);
	if (t->opts->verbose > 0)
		cli_error("%" PRIu64 " entry hits, %" PRIu64 " returns, %" PRIu64
			  " probe points armed at the end",
			  st.hits, st.returns, st.points);
}

static int setup(struct tracer *t, struct cli_opts *opts)
{
	int i, j, err;

	if (opts->backend == CLI_BACKEND_KERNEL) {
		cli_error("backend 'kernel' is not available yet (use -b agent or -b ptrace)");
		return EXIT_TRACE;
	}
	if (opts->backend == CLI_BACKEND_AGENT && trace_agent_unsupported(opts)) {
		cli_error("%s is not available with the agent backend yet (use -b ptrace)",
			  trace_agent_unsupported(opts));
		return EXIT_TRACE;
	}
	if (opts->nr_modules) {
		/* in the target unless -b ptrace: its code must leave SIMD state alone */
		err = modules_load(opts, opts->backend == CLI_BACKEND_PTRACE ? MODULES_IN_TRACER :
					 opts->backend == CLI_BACKEND_AUTO   ? MODULES_EITHER :
									       MODULES_IN_TARGET);
		if (err)
			return err;
	}
	t->probes = calloc(opts->nr_probes + modules_nr_probes() + 1, sizeof(*t->probes));
	t->injects = calloc(opts->nr_injects + 1, sizeof(*t->injects));
	if (!t->probes || !t->injects) {
		cli_error("out of memory");
		return EXIT_TRACE;
	}
	for (i = 0; i < opts->nr_probes; i++) {
		t->probes[i].kind = opts->probes[i].kind;
		t->probes[i].spec = opts->probes[i].spec;
		t->probes[i].t = t;
	}
	/* the modules' probes after the command line's: their handlers run after */
	for (j = 0; j < modules_nr_probes(); j++) {
		struct tprobe *tp = &t->probes[opts->nr_probes + j];

		modules_probe_at(j, &tp->module, &tp->mprobe);
		tp->kind = CLI_PROBE_MODULE;
		tp->spec = module_spec(tp->module, tp->mprobe);
		tp->t = t;
	}
	t->nr_probes = opts->nr_probes + modules_nr_probes();
	for (i = 0; i < opts->nr_injects; i++) {
		struct inject *in = &t->injects[i];

		err = parse_inject(opts->injects[i], in);
		if (err)
			return err == -EOPNOTSUPP ? EXIT_TRACE : EXIT_USAGE;
		in->t = t;
		t->nr_injects++;
		for (j = 0; j < t->nr_probes; j++)
			if (t->probes[j].kind != CLI_PROBE_RET &&
			    t->probes[j].kind != CLI_PROBE_MODULE &&
			    !strcmp(t->probes[j].spec, in->spec))
				in->shown = true;
	}
	if (opts->syscalls) {
		cli_error("-s cannot be combined with -f/-u/-r/--inject yet: run the syscall "
			  "trace as a separate utrace -s");
		return EXIT_TRACE;
	}
	return 0;
}

int cmd_trace(struct cli_opts *opts)
{
	static struct tracer tr;
	struct tracer *t = &tr;
	/*
	 * Children are always followed: the ptrace backend cannot take its
	 * breakpoints out of a vfork child it does not trace (it shares its
	 * parent's memory), and such a child dies of SIGTRAP if it calls a
	 * probed function before exec; dash runs every command that way.
	 */
	UTRACE_OPTS(utrace_session_opts, sopts, .follow_forks = true);
	UTRACE_OPTS(utrace_uprobes_opts, uopts, .backend = UTRACE_BACKEND_PTRACE);
	UTRACE_OPTS(utrace_engine_ops, ops, .exec = on_exec, .exit = on_exit_ev);
	struct sigaction sa = { .sa_handler = on_interrupt };
	bool launched = opts->argc > 0, interrupted = false, detach = false;
	uint64_t deadline = 0;
	const char *auto_why = "", *no_agent;
	static char why[640], agent_why[PATH_MAX + 128];
	int ret, err, r, i;

	memset(t, 0, sizeof(*t));
	t->opts = opts;
	aggr_init(&t->aggr);
	ret = setup(t, opts);
	if (ret)
		goto out_free;
	ret = check_specs(t);
	if (!ret)
		ret = check_sigtrap(t);
	if (ret)
		goto out_free;
	/* decided before anything runs: a command runs once, never again with ptrace */
	no_agent = launched ? launch_agent_why(opts->exe, agent_why, sizeof(agent_why)) : NULL;
	if (no_agent && opts->backend == CLI_BACKEND_AGENT) {
		cli_error("cannot preload the agent: %s (use -b ptrace)", no_agent);
		ret = EXIT_TRACE;
		goto out_free;
	}
	/*
	 * The agent: every option supported, and (auto) specs that could be
	 * checked before anything runs; a SPEC waiting for a library is armed
	 * by the agent in one process, not (yet) with several pids.
	 */
	if (opts->backend == CLI_BACKEND_AGENT ||
	    (opts->backend == CLI_BACKEND_AUTO && !t->check_after_exec && !no_agent &&
	     !(t->pending && opts->nr_pids > 1) && !trace_agent_unsupported(opts) &&
	     !modules_simd_why() && trace_agent_path())) {
		struct cli_probe *cp = calloc(t->nr_probes + t->nr_injects + 1, sizeof(*cp));

		if (!cp) {
			ret = EXIT_TRACE;
			goto out_free;
		}
		for (i = 0; i < t->nr_probes; i++) {
			cp[i].kind = t->probes[i].kind;
			cp[i].spec = t->probes[i].spec;
			cp[i].module = t->probes[i].module;
			cp[i].mprobe = t->probes[i].mprobe;
		}
		/* the injects after the probes: the agent adds them to their points */
		for (i = 0; i < t->nr_injects; i++) {
			cp[t->nr_probes + i].kind = CLI_PROBE_INJECT;
			cp[t->nr_probes + i].spec = t->injects[i].spec;
			cp[t->nr_probes + i].value = t->injects[i].value;
			cp[t->nr_probes + i].every = t->injects[i].every;
		}
		ret = cmd_trace_agent(opts, cp, t->nr_probes + t->nr_injects,
				      opts->backend == CLI_BACKEND_AUTO);
		free(cp);
		if (ret != TRACE_AGENT_FALLBACK)
			goto out_free;
		if (!launched && trace_agent_fallback_why()[0])
			snprintf(why, sizeof(why), " (auto: the agent could not be loaded: %s)",
				 trace_agent_fallback_why());
		else
			snprintf(why, sizeof(why), " (auto: the agent could not be loaded)");
		auto_why = why;
	} else if (opts->backend == CLI_BACKEND_AUTO) {
		if (t->check_after_exec)
			auto_why =
				" (auto: the command's SPECs can only be checked after its exec)";
		else if (no_agent)
			snprintf(why, sizeof(why), " (auto: the agent cannot be preloaded: %s)",
				 no_agent);
		else if (t->pending && opts->nr_pids > 1)
			auto_why =
				" (auto: a SPEC waits for a library; the agent arms those in one "
				"process only, yet)";
		else if (modules_simd_why())
			snprintf(why, sizeof(why), " (auto: %s)", modules_simd_why());
		else if (trace_agent_unsupported(opts))
			snprintf(why, sizeof(why),
				 " (auto: %s is not available with the agent yet)",
				 trace_agent_unsupported(opts));
		else if (trace_agent_unsafe()[0])
			snprintf(why, sizeof(why), " (auto: %s)", trace_agent_unsafe());
		else
			auto_why = " (auto: libutrace-agent.so not found)";
		if (why[0])
			auto_why = why;
	}
	ret = EXIT_TRACE;
	err = output_open(&t->out, opts);
	if (err) {
		cli_error("cannot open output file '%s': %s", opts->output, strerror(-err));
		ret = EXIT_USAGE;
		goto out_free;
	}
	/* on a terminal, lines as they come (the ptrace stops cost far more) */
	if (isatty(fileno(t->out.f)))
		setvbuf(t->out.f, NULL, _IOLBF, 0);
	t->quiet_events = opts->summary || opts->hist;
	if (opts->format == CLI_FMT_CHROME) {
		t->chrome_on = true;
		chrome_open(&t->chrome, t->out.f);
	}
	t->mono_to_real = (int64_t)now_realtime_ns() - (int64_t)now_mono_ns();
	module_ptrace_output(&t->out, t->mono_to_real); /* -m: handlers run here */

	t->s = utrace_session__new(&sopts);
	if (!t->s) {
		cli_lib_error("cannot create a tracing session", -errno);
		goto out;
	}
	the_tracer = t;
	t->up = utrace_uprobes__new(t->s, &uopts);
	if (!t->up) {
		cli_lib_error("cannot set up the ptrace backend", -errno);
		goto out;
	}
	if (opts->verbose > 0)
		cli_error("backend: %s%s", utrace_backend_str(utrace_uprobes__backend(t->up)),
			  auto_why);
	t->roots_left = launched ? 1 : opts->nr_pids;
	if (!utrace_engine__attach(t->s, &ops, UTRACE_EV_EXEC | UTRACE_EV_EXIT, t)) {
		cli_lib_error("cannot set up the tracing engine", -errno);
		goto out;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	if (launched) {
		/*
		 * If utrace is killed, the command is killed too (SIGKILL, as
		 * strace --kill-on-exit): its int3s would otherwise stay in its
		 * code with nobody to take the traps, and it would die of
		 * SIGTRAP at its next probed call. A detach leaves it running.
		 */
		UTRACE_OPTS(utrace_launch_opts, lo, .kill_if_tracer_dies = true);
		pid_t pid;

		/* registered before the launch: armed at the exec, before main() */
		ret = register_probes(t);
		if (ret)
			goto out;
		ret = EXIT_TRACE;
		pid = utrace_session__launch(t->s, opts->argv, &lo);
		if (pid < 0) {
			if (pid == -ENOENT || pid == -EACCES)
				cli_error("cannot run '%s': %s", opts->argv[0], strerror(-pid));
			else
				cli_lib_error("cannot launch the command", pid);
			/* a shell's statuses */
			ret = pid == -ENOENT ? 127 : pid == -EACCES ? 126 : EXIT_TRACE;
			goto out;
		}
		t->main_pid = pid;
	} else {
		t->main_pid = opts->pids[0];
		if (cli_attach_pids(t->s, opts->pids, opts->nr_pids))
			goto out;
		ret = register_probes(t);
		if (ret)
			goto out; /* the processes are detached untouched */
		ret = EXIT_TRACE;
	}
	if (opts->duration > 0)
		deadline = now_mono_ns() + (uint64_t)(opts->duration * 1e9);

	for (;;) {
		r = utrace_session__run(t->s, timeout_left(deadline));
		if (r == UTRACE_RUN_BREAK) {
			if (t->nomatch)
				break;
			continue;
		}
		if (r == UTRACE_RUN_DONE)
			break;
		if (r == UTRACE_RUN_TIMEOUT || r == UTRACE_RUN_INTERRUPTED) {
			interrupted = detach = true;
			break;
		}
		cli_lib_error("tracing failed", r);
		goto out;
	}
	if (t->nomatch) {
		/* the command has not run a single instruction of its own yet */
		kill(t->main_pid, SIGKILL);
		ret = EXIT_USAGE;
		goto out;
	}

	/* every breakpoint out first: the processes run on untouched */
	report_missed(t);
	utrace_uprobes__free(t->up);
	t->up = NULL;
	if (detach) {
		err = utrace_session__detach(t->s);
		if (err && err != -ESRCH)
			cli_lib_error("detach failed", err);
	}
	if (t->chrome_on)
		chrome_close(&t->chrome);
	print_at_exit(t);
	output_flush(&t->out);
	if (launched && !interrupted) {
		ret = utrace_session__exit_status(t->s);
		if (ret < 0)
			ret = EXIT_TRACE;
	} else if (launched) {
		/*
		 * A command detached by -d or a signal runs on as our child:
		 * wait for it, as strace (and utrace -s) do, and exit with its
		 * status.
		 */
		int st;

		ret = 0;
		if (waitpid(t->main_pid, &st, 0) == t->main_pid)
			ret = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	} else {
		ret = 0; /* attach mode: a clean detach */
	}
	for (i = 0; i < t->nr_injects; i++)
		if (opts->verbose > 0)
			cli_error("--inject '%s': %" PRIu64 " of %" PRIu64 " calls injected",
				  t->injects[i].spec, t->injects[i].done, t->injects[i].hits);
out:
	if (t->up) {
		report_missed(t);
		utrace_uprobes__free(t->up);
		t->up = NULL;
	}
	utrace_session__close(t->s);
	t->s = NULL;
	the_tracer = NULL;
	if (t->chrome_on)
		chrome_close(&t->chrome);
	output_close(&t->out);
out_free:
	symcache_clear(t);
	seen_clear(t);
	proto_dwarf_clear();
	aggr_clear(&t->aggr);
	for (i = 0; i < t->nr_injects; i++)
		free(t->injects[i].spec);
	for (i = 0; i < t->nr_probes; i++)
		free(t->probes[i].owned);
	free(t->injects);
	free(t->probes);
	modules_free();
	return ret;
}
