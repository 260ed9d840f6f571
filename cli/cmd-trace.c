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
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "aggr.h"
#include "chrome.h"
#include "cli.h"
#include "hitregs.h"
#include "launch.h"
#include "modload.h"
#include "output.h"
#include "protos.h"
#include "unwind.h"

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
	const char *const *exclude; /* utrace_probe_opts.exclude (ltrace's '-' rules) */
	char *owned; /* @spec, when rewritten by check_specs() */
	const char *refused; /* every match refuses return probes: why (Go code) */
	bool taken; /* every match taken away by its '-' rules (@exclude) */
	struct utrace_probe *p;
	struct tracer *t;
};

/* Per-pid symbol cache for -k. */
struct symcache {
	struct symcache *next;
	pid_t pid;
	struct utrace_maps *maps;
	struct utrace_image *img;
	/* objects the image did not list yet (read at the exec): by path */
	struct symfile {
		struct symfile *next;
		char *path;
		struct utrace_elf *elf; /* NULL: could not be opened */
	} * files;
	struct hit_errno_cache errno_cache;
	unsigned int gen; /* maps and image read anew (a refresh) */
	/* -k on ptrace: the CFI unwinder, its modules as of the refresh @unwind_gen */
	struct utrace_unwind *unwind;
	unsigned int unwind_gen;
	bool unwind_tried;
	bool stale; /* an exec since: read anew before the next walk */
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
	bool syscalls_on; /* -s: cmd-syscalls.c's engine in this session (syscalls_embed()) */
	bool quiet_events; /* -c / -H: no per-event lines */
	/*
	 * attach mode exits 1: a process's agent arena failed a check (the
	 * library detached it), or SIGTRAP killed a process (on_exit_ev())
	 */
	bool agent_failed;
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
	bool unwind_said; /* -v: -k walks frame pointers only (no CFI unwinder), said */
	/* launch mode, no image to check specs against before exec */
	bool check_after_exec;
	bool in_drain; /* embed_wanted() drains the agent's rings */
	pid_t own_sig_tids[64]; /* -s: threads in a handler of the agent's signal */
	bool nomatch; /* a SPEC matched nothing after exec */
	bool noarm; /* launch mode: no point of any SPEC could be armed at the exec */
	bool armed_checked; /* launch mode: the main exec's check_armed() ran */
	bool pending; /* a SPEC waits for a library (the agent arms it for one process) */
	/*
	 * The session always follows forks (see cmd_trace()); without -F,
	 * only the roots (the command, the -p pids) are shown, and tracing
	 * ends when they have all exited.
	 */
	int roots_left;
	bool roots_done;
	/* -a: the executable whose image the SPECs resolve against (the library's all_exec) */
	char all_exec[PATH_MAX];
	/*
	 * The agent through the library (lib/backend-agent.c): the probes run
	 * built-in actions in the target; its records come through
	 * utrace_uprobes__poll() and go through the same writers as the
	 * ptrace handlers' hits (rec_to_ctx()), its -c/-H figures from
	 * utrace_probe__point_counts() at the end.
	 */
	bool lib;
	const struct utrace_record *cur; /* the record being written */
	/*
	 * library path, --inject without a -f of its SPEC: the entry record of
	 * the last call of an inject probe, shown only if its injected return
	 * follows (the agent records every call of the point)
	 */
	struct inj_pending {
		struct utrace_record entry;
		char *str[6], *name, *symbol, *object; /* its copies */
		uint64_t stack[UTRACE_REC_MAX_STACK];
		bool pending;
	} * inj; /* one per thread: a ring may be drained between a call's entry and return */
	size_t nr_inj;
	uint64_t lost; /* records the agent's rings dropped */
	/* -vv: each point's placement said so far (say_sites()) */
	struct said_site {
		pid_t pid;
		uint64_t addr;
		enum utrace_site site;
	} * said;
	size_t nr_said, cap_said;
	uint64_t sites_at; /* when say_sites() last looked */
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

/*
 * A record's strings were copied at the hit: a read at an argument that
 * was recorded as a string (or at the returned string) is served from the
 * copy; anything else cannot be read any more (-EFAULT: shown as a
 * pointer), the target has moved on.
 */
static ssize_t rec_read(const struct utrace_record *r, uint64_t addr, void *buf, size_t len)
{
	unsigned int i;

	for (i = 0; i < 7; i++) {
		const char *str = i < 6 ? r->str[i] : r->ret_str;
		size_t n = i < 6 ? r->str_len[i] : r->ret_str_len;
		uint64_t base = i < 6 ? r->args[i] : r->retval;

		if (!str || addr < base || addr > base + n)
			continue;
		n = n + 1 - (size_t)(addr - base); /* with the NUL */
		if (n > len)
			n = len;
		memcpy(buf, str + (addr - base), n);
		return (ssize_t)n;
	}
	return -EFAULT;
}

static ssize_t ctx_read(void *c, uint64_t addr, void *buf, size_t len)
{
	struct utrace_probe_ctx *ctx = c;

	if (the_tracer && the_tracer->cur)
		return rec_read(the_tracer->cur, addr, buf, len);
	return utrace_probe_ctx__read(ctx, addr, buf, len);
}

static void ctx_regs(struct utrace_probe_ctx *ctx, struct proto_regs *r)
{
	unsigned int i;

	memset(r, 0, sizeof(*r)); /* no xmm registers until ctx_xmm() */
	for (i = 0; i < 6; i++)
		r->args[i] = utrace_probe_ctx__arg(ctx, i);
	r->sp = ctx->regs ? ctx->regs->rsp : 0;
	r->read = ctx_read;
	r->ctx = ctx;
}

/*
 * Floating-point arguments and returns are in xmm registers, which the
 * probe context does not carry: with ptrace the handler runs while the
 * thread is stopped at the hit, and this (tracing) thread is its tracer,
 * so they are read here, only for prototypes that have such values. The
 * agent's and the kernel's records carry none ('?' then).
 */
static void ctx_xmm(struct tracer *t, struct utrace_probe_ctx *ctx, const struct proto *p,
		    struct proto_regs *r)
{
	if (!t->lib && !t->cur && proto_has_float(p))
		r->have_xmm = hit_xmm(ctx->tid, r->xmm);
}

/* the symbol: the bare function name, else the point's name */
static const char *fn_sym(const struct utrace_probe_ctx *ctx)
{
	return ctx->point->symbol ? ctx->point->symbol : ctx->point->name;
}

/* display name: fn_sym(), demangled with -C (output_name()) */
static const char *fn_name(const struct utrace_probe_ctx *ctx)
{
	return the_tracer ? output_name(&the_tracer->out, fn_sym(ctx)) : fn_sym(ctx);
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

/* the first line of @path into @buf (no newline), or "" */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void thread_seen(struct tracer *t, pid_t pid, pid_t tid)
{
	struct seen **pp = &t->seen[(unsigned int)tid % SEEN_HASH], *s;
	char path[64], comm[64] = "";

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
	/*
	 * Records can be drained after their thread (or process) is gone
	 * (the library's agent path): then the process's name, else the
	 * command's, as a thread's comm is its process's unless it renamed
	 * itself.
	 */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	read_line(path, comm, sizeof(comm));
	if (!comm[0]) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		read_line(path, comm, sizeof(comm));
	}
	if (!comm[0] && pid == t->main_pid && t->opts->exe) {
		const char *b = strrchr(t->opts->exe, '/');

		/* the kernel's comm: the exec'd file's base name, 15 bytes */
		snprintf(comm, 16, "%s", b ? b + 1 : t->opts->exe);
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
/* -k: the stack (CFI unwinder), symbolised through the process image       */
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
		struct utrace_maps *m = utrace_maps__read(pid);
		struct utrace_image *img = m ? utrace_image__open_pid(pid) : NULL;

		/*
		 * a process gone keeps the image it was last seen with (a
		 * zombie, which kill(pid, 0) still finds, has no mappings)
		 */
		if (m && m->nr && img) {
			utrace_maps__free(c->maps);
			utrace_image__close(c->img);
			c->maps = m;
			c->img = img;
			memset(&c->errno_cache, 0,
			       sizeof(c->errno_cache)); /* an exec: another libc */
			c->gen++;
		} else {
			utrace_maps__free(m);
			utrace_image__close(img); /* (ASan: the image of an empty read leaked) */
		}
	}
	return c;
}

/* -k on ptrace: @pid's cache, if it has one, is of its former image (an exec) */
static void symcache_exec(struct tracer *t, pid_t pid)
{
	struct symcache *c;

	for (c = t->syms; c && c->pid != pid; c = c->next)
		;
	if (c)
		c->stale = true;
}

/*
 * -k on ptrace: @pid is ending (its last thread's exit): its unwinder goes,
 * with the files it holds open (a -F trace can see thousands of processes)
 */
static void symcache_exit(struct tracer *t, pid_t pid)
{
	struct symcache *c;

	for (c = t->syms; c && c->pid != pid; c = c->next)
		;
	if (!c)
		return;
	utrace_unwind__free(c->unwind);
	c->unwind = NULL;
	c->unwind_tried = false;
}

static void symcache_clear(struct tracer *t)
{
	while (t->syms) {
		struct symcache *c = t->syms;

		t->syms = c->next;
		while (c->files) {
			struct symfile *f = c->files;

			c->files = f->next;
			utrace_elf__close(f->elf);
			free(f->path);
			free(f);
		}
		utrace_maps__free(c->maps);
		utrace_image__close(c->img);
		utrace_unwind__free(c->unwind);
		free(c);
	}
}

/* Has @pid mapped more since @c was read (a dlopen)? Compares the mapping count. */
/*
 * @pid's executable mappings are not those @c was read with: a library
 * came or went, or an exec (a launched command's first read can be of the
 * child before its exec, utrace's own image, with as many mappings as the
 * command's: counting them was not enough).
 */
static bool maps_grew(pid_t pid, const struct symcache *c)
{
	struct utrace_maps *m = utrace_maps__read(pid);
	bool changed = false;
	size_t i, j;

	if (!m || !c->maps) {
		utrace_maps__free(m);
		return false;
	}
	for (i = j = 0; !changed; i++, j++) {
		while (i < m->nr && !(m->maps[i].prot & UTRACE_MAP_EXEC))
			i++;
		while (j < c->maps->nr && !(c->maps->maps[j].prot & UTRACE_MAP_EXEC))
			j++;
		if (i >= m->nr || j >= c->maps->nr) {
			changed = (i >= m->nr) != (j >= c->maps->nr);
			break;
		}
		changed = m->maps[i].start != c->maps->maps[j].start ||
			  m->maps[i].end != c->maps->maps[j].end ||
			  m->maps[i].inode != c->maps->maps[j].inode;
	}
	utrace_maps__free(m);
	return changed;
}

static bool is_code(struct symcache *c, uint64_t addr)
{
	const struct utrace_map *m = c->maps ? utrace_maps__find(c->maps, addr) : NULL;

	return m && (m->prot & UTRACE_MAP_EXEC);
}

/*
 * @addr in a mapping of a file the image does not list (an image read at
 * the exec, before the loader ran, and a process gone before it was read
 * again): the file's own symbols, with the bias of a segment whose file
 * offset is its address (every PT_LOAD of a PIE or a DSO from a current
 * linker); checked against the segment table, else left unnamed.
 */
static void symbolise_file(struct symcache *c, const struct utrace_map *m, uint64_t addr, char *sym,
			   size_t symlen)
{
	struct symfile *f;
	const struct utrace_sym *s;
	uint64_t bias, off;

	for (f = c->files; f && strcmp(f->path, m->path); f = f->next)
		;
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f || !(f->path = strdup(m->path))) {
			free(f);
			return;
		}
		f->elf = m->deleted ? NULL : utrace_elf__open(m->path);
		f->next = c->files;
		c->files = f;
	}
	if (!f->elf)
		return;
	bias = utrace_elf__is_dyn(f->elf) ? m->start - m->offset : 0;
	if (utrace_elf__file_offset(f->elf, addr - bias, &off) ||
	    off != addr - m->start + m->offset)
		return;
	s = utrace_elf__find_sym(f->elf, addr - bias);
	if (s)
		snprintf(sym, symlen, "%s+0x%" PRIx64, s->name, addr - bias - s->addr);
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
		if (!s)
			break; /* (an object listed at the exec, before its bias was known) */
		snprintf(sym, symlen, "%s+0x%" PRIx64,
			 the_tracer ? output_name(&the_tracer->out, s->name) : s->name,
			 addr - o->bias - s->addr);
		return true;
	}
	{
		const char *base = strrchr(m->path, '/');

		*ret_obj = base ? base + 1 : m->path;
	}
	symbolise_file(c, m, addr, sym, symlen);
	return true;
}

/* A stack slot as an unwinder should read it: the return probes' trampoline seen through. */
static uint64_t real_return(void *ctx, uint64_t slot, uint64_t value)
{
	return utrace_probe_ctx__real_return(ctx, slot, value);
}

/*
 * -k: @c's CFI unwinder, made at the first need, its modules those of @c's
 * image (re-reported when @c was read anew). Tracer thread, while the
 * process can be read: the agent's records may be unwound after its exit,
 * with the modules reported here.
 */
static void symcache_unwinder(struct tracer *t, struct symcache *c)
{
	if (!c->unwind && !c->unwind_tried) {
		char why[256];

		c->unwind_tried = true;
		c->unwind = utrace_unwind__new(c->pid, c->maps, why, sizeof(why));
		c->unwind_gen = c->gen;
		if (!c->unwind && t->opts->verbose > 0 && !t->unwind_said) {
			t->unwind_said = true;
			cli_error("-k: no CFI unwinder for pid %d (%s): frame pointers only",
				  (int)c->pid, why);
		}
	} else if (c->unwind && c->unwind_gen != c->gen && c->maps &&
		   utrace_unwind__report(c->unwind, c->maps) == 0) {
		c->unwind_gen = c->gen;
	}
}

/*
 * -k with the thread stopped at the hit (ptrace): libdw's CFI unwinder
 * (unwind.c) from the hit's registers, so frames of code built without
 * frame pointers are walked through; with @copy, from the registers and
 * the stack the agent copied at the hit (the record's: the thread runs
 * on, the process may be gone). Its first frame, the probed function,
 * is left out: the lines are the callers. A frame outside the modules it
 * knows (a dlopen since they were read): the maps again, and once more.
 * Return: the frames, or -1 when the process has no CFI unwinder (libdw
 * could not start on it: said once with -v).
 */
static int walk_cfi(struct tracer *t, struct symcache *c, struct utrace_probe_ctx *ctx,
		    const struct utrace_record *copy, bool injected, uint64_t *pcs, bool *act)
{
	struct user_regs_struct regs;
	uint64_t all[STACK_MAX + 1];
	bool all_act[STACK_MAX + 1];
	int n = 0, i, pass;

	symcache_unwinder(t, c);
	if (!c->unwind)
		return -1;
	if (!copy) {
		regs = *ctx->regs;
		if (injected) { /* set_return popped the return address: the state at the entry */
			regs.rip = ctx->point->addr;
			regs.rsp -= 8;
		}
	}
	for (pass = 0; pass < 2; pass++) {
		symcache_unwinder(t, c); /* (read anew by the pass before) */
		if (copy)
			n = utrace_unwind__stack_copy(c->unwind, copy->tid, copy->regs,
						      copy->stack_sp, copy->stack_data,
						      copy->stack_len, all, all_act, STACK_MAX + 1);
		else
			n = utrace_unwind__stack(c->unwind, ctx->tid, &regs, real_return, ctx, all,
						 all_act, STACK_MAX + 1);
		for (i = 0; i < n && utrace_unwind__has_module(c->unwind, all[i] - !all_act[i]);
		     i++)
			;
		if (i == n || pass || !maps_grew(ctx->pid, c))
			break;
		symcache_get(t, ctx->pid, true); /* same @c, read anew */
	}
	for (i = 1; i < n; i++) {
		pcs[i - 1] = all[i];
		act[i - 1] = all_act[i];
	}
	return n > 0 ? n - 1 : 0;
}

/*
 * Return addresses of the calling frames, innermost first; @act[i]: @pcs[i]
 * is where its frame resumes as is (a signal frame's interrupted pc), not
 * one byte past a call. On ptrace, walk_cfi(); without it, the frame-pointer
 * chain: [rsp] at a function entry (the frame is not set up yet), then
 * rbp, each frame pointer towards the stack base, within 8 MiB of rsp,
 * leading to executable code (code without frame pointers ends it early).
 */
static int walk_stack(struct tracer *t, struct utrace_probe_ctx *ctx, bool injected, uint64_t *pcs,
		      bool *act)
{
	struct symcache *c = symcache_get(t, ctx->pid, false);
	uint64_t sp = ctx->regs->rsp, fp = ctx->regs->rbp, ret;
	int n = 0;

	memset(act, 0, STACK_MAX * sizeof(*act));
	if (t->cur) {
		/*
		 * Walked at the hit (ACT_STACK): keep what lands in code, as
		 * below; a process gone since (its records came after its
		 * exit) cannot be symbolised: the addresses as they are.
		 */
		unsigned int i;

		if (c && !c->maps)
			c = NULL;
		/*
		 * The agent's copy of the registers and the stack at the hit
		 * (ABI 12): unwound by CFI here, as the ptrace backend's hits
		 * are; while the process lives (its modules come from its maps),
		 * else the frame pointers' addresses below.
		 */
		if (c && t->cur->sz >= offsetof(struct utrace_record, stack_len) + sizeof(size_t) &&
		    t->cur->nr_regs == UTRACE_REC_NR_REGS && t->cur->regs &&
		    (c->unwind || kill(ctx->pid, 0) == 0)) {
			if (c->stale) {
				c->stale = false;
				c = symcache_get(t, ctx->pid, true);
			}
			n = c ? walk_cfi(t, c, ctx, t->cur, false, pcs, act) : -1;
			if (n > 0) {
				/*
				 * the copy ended (a deep stack, a signal frame's
				 * interrupted stack elsewhere): the frame pointers'
				 * addresses beyond the last frame, if they met it
				 */
				for (i = 0; i < t->cur->nr_stack && t->cur->stack[i] != pcs[n - 1];
				     i++)
					;
				for (i++; i < t->cur->nr_stack && n < STACK_MAX && c->maps &&
					  is_code(c, t->cur->stack[i]);
				     i++)
					pcs[n++] = t->cur->stack[i];
				return n;
			}
			n = 0;
			c = symcache_get(t, ctx->pid, false);
			if (c && !c->maps)
				c = NULL;
		}
		for (i = 0; i < t->cur->nr_stack && n < STACK_MAX; i++) {
			if (!c) {
				pcs[n++] = t->cur->stack[i];
				continue;
			}
			if (!is_code(c, t->cur->stack[i])) {
				/* a gone process keeps the image it was last seen with */
				if (kill(ctx->pid, 0) == 0)
					c = symcache_get(t, ctx->pid, true);
				if (c && !c->maps)
					c = NULL;
				if (!c) { /* gone: what is left, unnamed */
					pcs[n++] = t->cur->stack[i];
					continue;
				}
				if (!is_code(c, t->cur->stack[i]))
					break;
			}
			pcs[n++] = t->cur->stack[i];
		}
		return n;
	}
	if (c && c->stale) {
		c->stale = false;
		c = symcache_get(t, ctx->pid, true);
	}
	if (!c)
		return 0;
	n = walk_cfi(t, c, ctx, NULL, injected, pcs, act);
	if (n >= 0)
		return n;
	n = 0;
	if (injected)
		sp -= 8; /* set_return popped the return address */
	if (ctx->point->offset == 0 &&
	    utrace_probe_ctx__read(ctx, sp, &ret, sizeof(ret)) == sizeof(ret)) {
		ret = utrace_probe_ctx__real_return(ctx, sp, ret);
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
		frame[1] = utrace_probe_ctx__real_return(ctx, fp + 8, frame[1]);
		if (!frame[1] || !is_code(c, frame[1]))
			break;
		pcs[n++] = frame[1];
		sp = fp;
		fp = frame[0];
	}
	return n;
}

/*
 * -k's lines (text) or "stack" array (JSON): each frame named from the
 * process image, else (a local symbol of a stripped library, named by its
 * separate debug file) by the CFI unwinder's modules.
 */
static void print_stack(struct tracer *t, struct utrace_probe_ctx *ctx, bool json, bool injected)
{
	uint64_t pcs[STACK_MAX];
	bool act[STACK_MAX];
	int n = walk_stack(t, ctx, injected, pcs, act), i;
	struct symcache *c = symcache_get(t, ctx->pid, false); /* may be refreshed */
	FILE *f = t->out.f;

	/* --one-line: the frames follow the call's line, once it is complete */
	if (!json && output_call_tail(&t->out))
		f = output_call_tail(&t->out);

	if (json)
		fputs(", \"stack\": [", f);
	if (c && !c->maps)
		c = NULL;
	if (t->opts->stack_max && n > t->opts->stack_max)
		n = t->opts->stack_max; /* ltrace's -w N */
	for (i = 0; i < n; i++) {
		char sym[256], buf[320];
		const char *obj = NULL, *name;
		uint64_t off;

		if (c)
			symbolise(c, pcs[i], sym, sizeof(sym), &obj);
		else
			snprintf(sym, sizeof(sym), "0x%" PRIx64, pcs[i]);
		/* (no symbol starts with "0x": an address) */
		if (c && c->unwind && !strncmp(sym, "0x", 2) &&
		    (name = utrace_unwind__name(c->unwind, pcs[i], act[i], &off)))
			snprintf(sym, sizeof(sym), "%.*s+0x%" PRIx64,
				 unwind_name_len(output_name(&t->out, name)),
				 output_name(&t->out, name), off);
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

/*
 * The errno of a call that returned @rax, when its prototype says it
 * failed and set errno (-1, MAP_FAILED): read in the stopped thread (the
 * handlers of ptrace), 0 when not known (the agent's records carry none).
 */
static int call_errno(struct tracer *t, struct utrace_probe_ctx *ctx, const struct proto *p,
		      uint64_t rax)
{
	struct symcache *c;

	if ((p->err != PE_NEG && p->err != PE_MAPFAIL) || !proto_is_error(p, rax) ||
	    (p->err == PE_NEG &&
	     (p->ret == PK_LONG || p->ret == PK_ULONG ? (int64_t)rax != -1 : (int32_t)rax != -1)) ||
	    t->lib || t->cur)
		return 0;
	c = symcache_get(t, ctx->pid, false);
	return c ? hit_errno(ctx, c->img, &c->errno_cache) : 0;
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

static void json_head(struct tracer *t, const struct utrace_probe_ctx *ctx, const char *type)
{
	FILE *f = t->out.f;

	fputc('{', f);
	json_ts(f, real_ns(t, ctx->now_ns));
	fprintf(f, ", \"pid\": %d, \"tid\": %d, \"type\": \"%s\", \"probe\": ", (int)ctx->pid,
		(int)ctx->tid, type);
	json_str(f, ctx->point->name, strlen(ctx->point->name));
	fputs(", \"name\": ", f);
	json_str(f, fn_name(ctx), strlen(fn_name(ctx)));
	if (fn_name(ctx) != fn_sym(ctx)) { /* -C: the symbol as the object has it */
		fputs(", \"symbol\": ", f);
		json_str(f, fn_sym(ctx), strlen(fn_sym(ctx)));
	}
	if (t->opts->all && t->cur && t->cur->comm) {
		fputs(", \"comm\": ", f);
		json_str(f, t->cur->comm, strlen(t->cur->comm));
	}
}

/* -a: after the "[TID] " prefix, whose process it is: "COMM[PID] " (any process counts) */
static void all_who(struct tracer *t, const struct utrace_probe_ctx *ctx)
{
	if (t->opts->all)
		fprintf(t->out.f, "%s[%d] ", t->cur && t->cur->comm ? t->cur->comm : "?",
			(int)ctx->pid);
}

/* "truncated": [i, ...]: the string arguments cut at -S bytes (docs/json.md) */
static void json_truncated(FILE *f, const struct proto_vals *vals)
{
	int i, n = 0;

	for (i = 0; i < vals->nr; i++) {
		if (vals->v[i].kind != PV_STR || !vals->v[i].truncated)
			continue;
		fprintf(f, "%s%d", n++ ? ", " : ", \"truncated\": [", i);
	}
	if (n)
		fputc(']', f);
}

/*
 * ltrace's -i: where the call was made from, the return address (at the
 * entry: [rsp]; the agent copied it as the first frame of ACT_STACK).
 */
static uint64_t call_site(struct tracer *t, struct utrace_probe_ctx *ctx)
{
	uint64_t ret = 0;

	if (t->cur)
		return t->cur->nr_stack ? t->cur->stack[0] : 0;
	if (ctx->point->offset || !ctx->regs ||
	    utrace_probe_ctx__read(ctx, ctx->regs->rsp, &ret, sizeof(ret)) != sizeof(ret))
		return 0;
	return ret;
}

/*
 * The start of a text line: timestamps and [tid], ltrace's -i call site
 * (entry lines), -n indentation by call depth, the function's name.
 */
static void text_head(struct tracer *t, struct utrace_probe_ctx *ctx, bool entry)
{
	FILE *f = t->out.f;

	output_prefix(&t->out, real_ns(t, ctx->now_ns), ctx->tid, true);
	all_who(t, ctx);
	if (t->opts->call_site && entry) {
		uint64_t ip = call_site(t, ctx);

		if (ip)
			fprintf(f, "[0x%" PRIx64 "] ", ip);
		else
			fputs("[?] ", f);
	}
	if (t->opts->indent)
		fprintf(f, "%*s", (int)(ctx->depth * (unsigned int)t->opts->indent), "");
	output_color(&t->out, OC_NAME);
	fputs(fn_name(ctx), f);
	output_color_end(&t->out);
}

/*
 * @paired: a return line follows (-f): with --one-line the entry's line is
 * left open for it (output_call_open()).
 */
static void emit_entry(struct tracer *t, struct utrace_probe_ctx *ctx, const struct proto *proto,
		       bool injected, bool paired)
{
	struct proto_regs r;
	struct proto_vals vals;
	FILE *f = t->out.f;
	int i;

	ctx_regs(ctx, &r);
	ctx_xmm(t, ctx, proto, &r);
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
		json_truncated(f, &vals);
		if (t->opts->stack)
			print_stack(t, ctx, true, injected);
		fputs("}\n", f);
	} else {
		text_head(t, ctx, true);
		fputc('(', f);
		for (i = 0; i < vals.nr; i++) {
			fputs(i ? ", " : "", f);
			proto_val_print_text(f, &vals.v[i]);
		}
		if (t->out.one_line && paired)
			output_call_open(&t->out, ctx->tid, ctx->point->addr, ctx->depth);
		else
			fputs(")\n", f);
		if (t->opts->stack)
			print_stack(t, ctx, false, injected);
	}
	proto_vals_clear(&vals);
}

/*
 * @paired: the call's entry line was written (-f, its entry seen): with
 * --one-line the return completes it, or says "<... f resumed> )".
 */
static void emit_return(struct tracer *t, struct utrace_probe_ctx *ctx, const struct proto *proto,
			uint64_t rax, uint64_t dur_ns, bool injected, bool paired)
{
	struct proto_regs r;
	struct proto_val v;
	FILE *f = t->out.f;
	bool is_void;
	int err = injected ? 0 : call_errno(t, ctx, proto, rax);

	ctx_regs(ctx, &r);
	if (!injected) /* an injected return sets rax only */
		ctx_xmm(t, ctx, proto, &r);
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
		if (v.kind == PV_STR && v.truncated)
			fputs(", \"ret_truncated\": true", f);
		if (err)
			fprintf(f, ", \"errno\": \"%s\"", strerrorname_np(err));
		fprintf(f, ", \"dur_ns\": %" PRIu64 "%s}\n", dur_ns,
			injected ? ", \"injected\": true" : "");
	} else {
		bool is_err = !is_void && proto_is_error(proto, rax), errno_shown = err != 0;
		bool one_line = t->out.one_line && paired;

		if (one_line &&
		    output_call_close(&t->out, ctx->tid, ctx->point->addr, ctx->depth)) {
			fputs(") = ", f);
		} else if (one_line) {
			/* ltrace's "<... f resumed> ) = 3": other lines came between */
			output_prefix(&t->out, real_ns(t, ctx->now_ns), ctx->tid, true);
			all_who(t, ctx);
			if (t->opts->indent)
				fprintf(f, "%*s", (int)(ctx->depth * (unsigned int)t->opts->indent),
					"");
			fputs("<... ", f);
			output_color(&t->out, OC_NAME);
			fputs(fn_name(ctx), f);
			output_color_end(&t->out);
			fputs(" resumed> ) = ", f);
		} else {
			text_head(t, ctx, false);
			fputs("() = ", f);
		}
		if (is_err)
			output_color(&t->out, OC_ERROR);
		if (is_void)
			fputs("<void>", f);
		else
			proto_val_print_text(f, &v);
		if (errno_shown) /* as strace: "-1 ENOENT (No such file or directory)" */
			fprintf(f, " %s (%s)", strerrorname_np(err), strerror(err));
		if (is_err)
			output_color_end(&t->out);
		if (injected)
			fputs(" (injected)", f);
		output_duration(&t->out, dur_ns);
		fputc('\n', f);
		output_line_end(&t->out);
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
			print_stack(t, ctx, true, false);
		fputs("}\n", t->out.f);
	} else {
		output_prefix(&t->out, real_ns(t, ctx->now_ns), ctx->tid, true);
		all_who(t, ctx);
		fprintf(t->out.f, "%s\n", ctx->point->name);
		if (t->opts->stack)
			print_stack(t, ctx, false, false);
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

	if (t->opts->follow_forks || t->opts->all)
		return true;
	th = utrace_session__find_thread(t->s, ctx->tid);
	return wanted(t, th ? utrace_thread__pid(th) : ctx->pid);
}

static bool wanted(struct tracer *t, pid_t pid)
{
	int i;

	if (t->opts->follow_forks || t->opts->all || pid == t->main_pid)
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

	if (t->lib)
		st = NULL; /* counted in the target: utrace_probe__point_counts() at the end */
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
	emit_entry(t, ctx, proto, injected, tp->kind == CLI_PROBE_FUNC);
	if (tp->kind == CLI_PROBE_FUNC && injected)
		emit_return(t, ctx, proto, t->inj_value, 0, true, true);
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

	if (t->lib)
		st = NULL; /* counted in the target */
	if (!wanted_ctx(t, ctx))
		return UTRACE_PROBE_OK;
	thread_seen(t, ctx->pid, ctx->tid);
	if (st && tp->kind == CLI_PROBE_FUNC)
		aggr_time(st, dur, proto_is_error(proto, rax)); /* counted at its entry */
	else if (st)
		aggr_add(st, ctx->entry_ns != 0, dur, proto_is_error(proto, rax));
	if (t->quiet_events && !t->chrome_on)
		return UTRACE_PROBE_OK;
	emit_return(t, ctx, proto, rax, dur, injected_here(t, ctx), /* (library path) */
		    tp->kind == CLI_PROBE_FUNC && ctx->entry_ns);
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
			emit_entry(t, ctx, proto, true, true);
			emit_return(t, ctx, proto, in->value, 0, true, true);
		}
	}
	return UTRACE_PROBE_OK;
}

/* ------------------------------------------------------------------------ */
/* The agent through the library: records and figures                        */
/* ------------------------------------------------------------------------ */

/*
 * A record of the agent is written as a hit of the ptrace handlers: the
 * same context, built from what was copied at the hit (registers: the six
 * arguments, rax; strings: rec_read(); the stack: walk_stack()).
 */
/* A record as the ptrace path's handlers see a hit: @tp's on_entry() or on_return(). */
static void lib_dispatch(struct tracer *t, const struct utrace_record *r, struct tprobe *tp)
{
	struct utrace_probe_point_info info = { 0 };
	struct user_regs_struct regs = { 0 };
	struct utrace_probe_ctx ctx = { 0 };

	info.addr = r->addr;
	info.name = r->name ? r->name : "?";
	info.symbol = r->symbol;
	info.object = r->object;
	info.offset = r->offset;
	regs.rdi = r->args[0];
	regs.rsi = r->args[1];
	regs.rdx = r->args[2];
	regs.rcx = r->args[3];
	regs.r8 = r->args[4];
	regs.r9 = r->args[5];
	regs.rax = r->retval;
	ctx.probe = r->probe;
	ctx.point = &info;
	ctx.pid = r->pid;
	ctx.tid = r->tid;
	ctx.regs = &regs;
	ctx.now_ns = r->ts_ns;
	ctx.depth = r->depth;
	t->cur = r;
	if (r->type == UTRACE_REC_ENTRY) {
		ctx.is_return = false;
		on_entry(&ctx, tp);
	} else {
		ctx.is_return = true;
		ctx.entry_ns = r->dur_ns && r->ts_ns > r->dur_ns ? r->ts_ns - r->dur_ns : 0;
		on_return(&ctx, tp);
	}
	t->cur = NULL;
}

static void inj_slot_clear(struct inj_pending *q)
{
	unsigned int i;

	for (i = 0; i < 6; i++) {
		free(q->str[i]);
		q->str[i] = NULL;
	}
	free(q->name);
	free(q->symbol);
	free(q->object);
	q->name = q->symbol = q->object = NULL;
	q->pending = false;
}

static void inj_clear(struct tracer *t)
{
	size_t i;

	for (i = 0; i < t->nr_inj; i++)
		inj_slot_clear(&t->inj[i]);
	free(t->inj);
	t->inj = NULL;
	t->nr_inj = 0;
}

/* Thread @tid's slot (a free one if it has none; NULL: out of memory). */
static struct inj_pending *inj_slot(struct tracer *t, pid_t tid, bool create)
{
	struct inj_pending *n, *free_slot = NULL;
	size_t i;

	for (i = 0; i < t->nr_inj; i++) {
		if (t->inj[i].pending && t->inj[i].entry.tid == tid)
			return &t->inj[i];
		if (!t->inj[i].pending && !free_slot)
			free_slot = &t->inj[i];
	}
	if (!create || free_slot)
		return free_slot;
	n = realloc(t->inj, (t->nr_inj + 1) * sizeof(*n));
	if (!n)
		return NULL;
	t->inj = n;
	memset(&t->inj[t->nr_inj], 0, sizeof(*n));
	return &t->inj[t->nr_inj++];
}

/*
 * The records of an inject probe (no -f shows its SPEC): an entry waits for
 * the injected return of the same thread, which comes next in that
 * thread's ring if the call was one of the Nth; then both lines, as the
 * ptrace path's on_inject() shows.
 */
static int lib_inject_record(struct tracer *t, const struct utrace_record *r)
{
	struct inject *in = NULL;
	struct inj_pending *q;
	int i;

	for (i = 0; i < t->nr_injects; i++)
		if (t->injects[i].p == r->probe)
			in = &t->injects[i];
	if (!in)
		return 0;
	if (r->type == UTRACE_REC_ENTRY) {
		q = inj_slot(t, r->tid, true);
		if (!q)
			return 0;
		inj_slot_clear(q);
		q->entry = *r;
		/* (a record may be a queued copy, freed after this call) */
		q->entry.name = q->name = r->name ? strdup(r->name) : NULL;
		q->entry.symbol = q->symbol = r->symbol ? strdup(r->symbol) : NULL;
		q->entry.object = q->object = r->object ? strdup(r->object) : NULL;
		for (i = 0; i < 6; i++) {
			if (!r->str[i])
				continue;
			q->str[i] = malloc(r->str_len[i] + 1);
			if (q->str[i]) {
				memcpy(q->str[i], r->str[i], r->str_len[i]);
				q->str[i][r->str_len[i]] = 0;
			}
			q->entry.str[i] = q->str[i];
		}
		q->entry.nr_stack =
			r->nr_stack < UTRACE_REC_MAX_STACK ? r->nr_stack : UTRACE_REC_MAX_STACK;
		if (r->nr_stack)
			memcpy(q->stack, r->stack, q->entry.nr_stack * sizeof(uint64_t));
		q->entry.stack = q->stack;
		/* -k's copy is not kept: the frame pointers' addresses serve */
		q->entry.regs = NULL;
		q->entry.nr_regs = 0;
		q->entry.stack_data = NULL;
		q->entry.stack_len = 0;
		q->pending = true;
		return 0;
	}
	q = inj_slot(t, r->tid, false);
	if (!q || !q->pending || q->entry.tid != r->tid)
		return 0;
	if ((r->flags & UTRACE_REC_F_INJECTED) && q->entry.addr == r->addr) {
		struct tprobe tp = { .kind = CLI_PROBE_FUNC, .spec = in->spec, .t = t };
		struct utrace_record e = q->entry;

		e.flags = 0;
		t->inj_tid = e.tid;
		t->inj_addr = e.addr;
		t->inj_ns = e.ts_ns;
		t->inj_value = r->retval;
		lib_dispatch(t, &e, &tp);
	}
	inj_slot_clear(q);
	return 0;
}

static int on_record(const struct utrace_record *r, void *data)
{
	struct tracer *t = data;
	int i;

	if (r->type == UTRACE_REC_LOST) {
		/* where they were lost, in the stream, and a count at the end */
		if (t->out.format == CLI_FMT_JSON) {
			fputc('{', t->out.f);
			json_ts(t->out.f, (uint64_t)((int64_t)r->ts_ns + t->mono_to_real));
			fprintf(t->out.f,
				", \"pid\": %d, \"tid\": %d, \"type\": \"lost\", \"probe\": \"\", "
				"\"name\": \"\", \"count\": %" PRIu64 "}\n",
				(int)r->pid, (int)(r->tid ? r->tid : r->pid), r->lost);
		} else if (!t->quiet_events && !t->chrome_on) {
			output_break(&t->out);
			fprintf(t->out.f,
				"utrace: %" PRIu64 " events lost (a ring buffer was full)\n",
				r->lost);
		}
		t->lost += r->lost;
		return 0;
	}
	if (r->type == UTRACE_REC_MODULE) {
		module_print(&t->out, t->mono_to_real, r);
		return 0;
	}
	if (r->type == UTRACE_REC_FORK) {
		/* -F on the agent: a child the library follows (its own arena) */
		if (t->opts->verbose > 0)
			cli_error("following pid %d, a fork child of pid %d", (int)r->child,
				  (int)r->pid);
		return 0;
	}
	if ((r->type != UTRACE_REC_ENTRY && r->type != UTRACE_REC_RETURN) || !r->probe)
		return 0;
	for (i = 0; i < t->nr_probes && t->probes[i].p != r->probe; i++)
		;
	if (i == t->nr_probes)
		return lib_inject_record(t, r);
	if (r->flags & UTRACE_REC_F_INJECTED) {
		/* a -f of an injected SPEC: its return line says so (injected_here()) */
		t->inj_tid = r->tid;
		t->inj_addr = r->addr;
		t->inj_ns = r->ts_ns;
		t->inj_value = r->retval;
	}
	lib_dispatch(t, r, &t->probes[i]);
	return 0;
}

/* Each function a SPEC matches: its prototype's strings and error rule. */
static void lib_point_opts(struct utrace_probe *p, const struct utrace_probe_point_info *pt,
			   struct utrace_point_opts *po, void *data)
{
	const struct proto *proto = pt->symbol ? proto_dwarf(pt->object, pt->symbol) : NULL;
	unsigned int i;

	(void)p;
	(void)data;
	if (!proto && pt->symbol)
		proto = proto_find(pt->symbol);
	if (!proto)
		proto = proto_unknown();
	po->nargs = 6;
	po->str_args = 0;
	for (i = 0; i < (unsigned int)proto->nargs && i < 6; i++)
		if (proto->args[i] == PK_STR)
			po->str_args |= 1U << i;
	if (proto->ret == PK_STR)
		po->str_args |= 1U << 6;
	po->err_kind = (int)proto_err_kind(proto);
}

/* The -c/-H rows from the target's figures, function by function. */
static int lib_row(const char *name, const char *symbol, const char *object,
		   const struct utrace_probe_counts *c, void *data)
{
	struct tracer *t = data;
	struct aggr_stat *st;
	unsigned int b;

	(void)object;
	if (!c->calls && !c->returns && !c->injected)
		return 0; /* a row per function called, as -b ptrace (and strace -c) print */
	st = aggr_get(&t->aggr, name, output_name(&t->out, symbol ? symbol : name));
	if (!st)
		return 0;
	st->calls += c->calls ? c->calls : c->returns;
	st->errors += c->errors;
	if (!c->timed)
		return 0;
	for (b = 0; b < AGGR_BUCKETS && b < UTRACE_HIST_BUCKETS; b++)
		st->hist[b] += c->hist[b]; /* the same buckets (abi.h) */
	if (!st->timed || c->min_ns < st->min_ns)
		st->min_ns = c->min_ns;
	if (c->max_ns > st->max_ns)
		st->max_ns = c->max_ns;
	st->timed += c->timed;
	st->total_ns += c->sum_ns;
	return 0;
}

static void lib_figures(struct tracer *t)
{
	int i;

	for (i = 0; i < t->nr_probes; i++)
		if (t->probes[i].p && t->probes[i].kind != CLI_PROBE_MODULE) /* -m: its counters */
			utrace_probe__point_counts(t->probes[i].p, lib_row, t);
	/* --inject: calls seen and injected, counted in the target (-v) */
	for (i = 0; i < t->nr_injects; i++) {
		struct utrace_probe_counts c;

		if (t->injects[i].p && !utrace_probe__counts(t->injects[i].p, &c)) {
			t->injects[i].hits = c.calls;
			t->injects[i].done = c.injected;
		}
	}
}

/* What -b kernel cannot do, in one line (NULL: nothing). */
static int lib_kernel_refuses(const struct tracer *t, const struct cli_opts *o)
{
	const char *what = o->syscalls		       ? "-s" :
			   o->nr_modules	       ? "-m" :
			   o->format == CLI_FMT_CHROME ? "--format chrome" :
							 NULL;

	if (t->nr_injects || o->nr_injects) {
		cli_error("--inject is not possible with -b kernel: a uprobe's BPF program cannot "
			  "change a user function's return (use -b agent or -b ptrace)");
		return EXIT_TRACE;
	}
	if (what) {
		cli_error("%s is not supported with -b kernel yet (use -b ptrace or -b agent)",
			  what);
		return EXIT_TRACE;
	}
	return 0;
}

/*
 * Which runs go through the library's agent: -b agent, and -b auto unless
 * a module has SIMD code (its handlers then run in the tracer) or -s asks
 * for syscalls (they stop the process at each one anyway: -b auto takes
 * ptrace, which is the one that has always done both).
 */
static bool lib_agent_wanted(const struct tracer *t, const struct cli_opts *o)
{
	return trace_agent_path() && /* else trace_agent_unsafe() says why, or "" */
	       (o->backend == CLI_BACKEND_AGENT ||
		(o->backend == CLI_BACKEND_AUTO && !modules_simd_why() && !o->syscalls));
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
		left += !t->probes[i].refused && !t->probes[i].taken;
	for (i = 0; i < t->nr_probes; i++) {
		struct tprobe *tp = &t->probes[i];

		if (!tp->refused && !tp->taken) {
			t->probes[n++] = *tp;
			continue;
		}
		if (tp->taken && left) {
			/* kept: an object loaded later may have what its '-' rules leave */
			t->probes[n++] = *tp;
			continue;
		}
		if (tp->taken) {
			cli_error("probe '%s': every function it matches is taken away by the '-' "
				  "rules after it",
				  tp->spec);
			free(tp->owned);
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

/* Is @m taken away by one of the SPECs @exclude (ltrace's '-' rules)? */
static bool excluded_match(struct utrace_image *img, const struct utrace_match *m,
			   const char *const *exclude)
{
	bool hit = false;

	for (; exclude && *exclude && !hit; exclude++) {
		struct utrace_spec ex;

		if (utrace_spec__parse(*exclude, &ex, NULL, 0))
			continue; /* the registration says what is wrong with it */
		hit = utrace_image__match_is(img, m, &ex);
		utrace_spec__clear(&ex);
	}
	return hit;
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
	if (o->all) {
		/* -a: the files' own image (all_exec_of()), whatever command runs */
		snprintf(path, sizeof(path), "%s", t->all_exec);
		imgs[0] = utrace_image__open_exec(path);
		nr_imgs = imgs[0] ? 1 : 0;
	} else if (o->argc > 0) {
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
		size_t total = 0, refused = 0, excluded = 0;
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
			for (j = 0; !err && i < t->nr_probes && j < nr; j++)
				excluded += excluded_match(imgs[k], &m[j], t->probes[i].exclude);
			/* --inject: VALUE is what a function returns, so at its entry only */
			for (j = 0; !err && i >= t->nr_probes && j < nr; j++) {
				if (!m[j].offset)
					continue;
				cli_error("--inject '%s': %s+0x%" PRIx64 " is not a function entry "
					  "(VALUE is what a function returns)",
					  text, m[j].symbol ? m[j].symbol : "?", m[j].offset);
				ret = EXIT_USAGE;
				err = -ECANCELED; /* said */
			}
			for (j = 0; !err && returns && j < nr; j++) {
				const char *r = utrace_plan__ret_refused(imgs[k], &m[j]);

				refused += !!r;
				ret_why = r ?: ret_why;
			}
			free(m);
			total += nr;
			any_pending |= pending;
		}
		if (err == -ECANCELED) {
			/* said above */
		} else if (err == -ENOENT) {
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
		} else if (total && excluded == total && !any_pending) {
			t->probes[i].taken =
				true; /* ltrace's chain: fine while another rule traces */
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

/*
 * The rule of both backends for points that cannot be armed (a site under
 * someone else's int3, such as a kernel uprobe's; a planner refusal):
 * each is one warning (the library's, uprobes_proc_arm_spec()), the rest is
 * traced, and utrace exits 1 only when no point at all could be armed
 * (nor waits for a library). Return: true if some SPEC has a point or is
 * pending.
 */
static int site_not_failed(const struct utrace_point_site *ps, void *ctx)
{
	(void)ctx;
	return ps->site != UTRACE_SITE_FAILED;
}

static bool any_armed(struct tracer *t)
{
	int i;

	for (i = 0; i < t->nr_probes + t->nr_injects; i++) {
		struct utrace_probe *p =
			i < t->nr_probes ? t->probes[i].p : t->injects[i - t->nr_probes].p;
		struct utrace_probe_stats st;

		if (!p || utrace_probe__stats(p, &st))
			continue;
		/* a point the agent refused at its SYNC stays a point: its site says */
		if (st.pending || (st.points && utrace_probe__sites(p, site_not_failed, NULL) > 0))
			return true;
	}
	return false;
}

/*
 * Launch mode: once the command has exec'ed (its probes armed, before its
 * first instruction), its specs must resolve (a script), and some point
 * must be armed.
 */
static int on_exec(struct utrace_engine *e, struct utrace_thread *th, pid_t former_tid)
{
	struct tracer *t = utrace_engine__ctx(e);
	const char *bad;

	if (!t->lib && t->opts->stack)
		symcache_exec(t, utrace_thread__pid(th));
	if (utrace_thread__pid(th) != t->main_pid || !t->up)
		return UTRACE_RESUME; /* (an exec met by the detach after the layer went) */
	/* -k on the library path: the new image while it can be read (the program's own frames) */
	if (t->lib && t->opts->stack)
		symcache_get(t, t->main_pid, true);
	if (!t->check_after_exec && !t->armed_checked && t->opts->argc > 0 &&
	    t->nr_probes + t->nr_injects > 0) {
		t->armed_checked = true;
		if (any_armed(t))
			return UTRACE_RESUME;
		/* one SPEC: its line said why, and is the error */
		if (t->nr_probes + t->nr_injects > 1)
			cli_error("no probe point to arm in %s (every match was refused, see "
				  "above)",
				  t->opts->argv[0]);
		t->nomatch = t->noarm = true;
		return UTRACE_STOP | UTRACE_BREAK;
	}
	if (!t->check_after_exec)
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
	/*
	 * -k on the library path: the leader's exit stop is the last moment
	 * its whole image can be read (its records may still be in the rings,
	 * and a short program maps its libraries and exits within one round
	 * of the main loop)
	 */
	if (t->lib && t->opts->stack) {
		/*
		 * and the unwinder of the agent's stack copies, its modules as
		 * of now (the thread seen may be the agent's control thread
		 * only: the image is still there at its exit stop)
		 */
		struct symcache *c = symcache_get(t, pid, tid == pid);

		if (c && tid != pid && (!c->maps || maps_grew(pid, c)))
			c = symcache_get(t, pid, true);
		if (c && c->maps)
			symcache_unwinder(t, c);
	}
	if (!t->lib && t->opts->stack && utrace_session__threads(t->s, pid, NULL, 0) <= 1)
		symcache_exit(t, pid);
	/*
	 * the library's agent keeps one thread of the process traced, its
	 * control thread (backend-agent.c, ANCHOR): its exit is the process's
	 * (its status the group's: exit_group() code or the fatal signal)
	 */
	if (t->lib && tid != pid && utrace_session__threads(t->s, pid, NULL, 0) <= 1)
		tid = pid;
	/* its events before its end: what its rings held (flushed by the layer's engine) */
	if (t->lib && tid == pid && t->up)
		while (utrace_uprobes__poll(t->up, on_record, t, 0) > 0)
			;
	/*
	 * An attached process killed by SIGTRAP: a thread reached an int3 of
	 * the agent's while it blocked SIGTRAP (the kernel forces the signal,
	 * with SIG_DFL: a raw rt_sigprocmask no interposer sees). Our failure,
	 * not the program's: said, and utrace exits 1.
	 */
	if (t->lib && tid == pid && t->opts->nr_pids && WIFSIGNALED(status) &&
	    WTERMSIG(status) == SIGTRAP && utrace_uprobes__backend(t->up) == UTRACE_BACKEND_AGENT) {
		cli_error("pid %d was killed by SIGTRAP: one of its threads reached a probe's "
			  "breakpoint while it blocked SIGTRAP",
			  (int)pid);
		t->agent_failed = true;
	}
	/* attach mode: the exit status cannot say it (launch mode: it does) */
	if (tid == pid && t->opts->nr_pids && wanted(t, pid) && !t->quiet_events &&
	    !t->syscalls_on) /* (-s: its engine says "+++ exited with N +++") */
		output_killed(&t->out, pid, status);
	/* JSON: every shown process's end, in launch mode too */
	if (tid == pid && wanted(t, pid) && !t->quiet_events)
		output_json_exit(&t->out, now_realtime_ns(), pid, tid, status);
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

/* The built-in actions of a -f/-u/-r SPEC on the library's agent. */
static void lib_probe_opts(struct tracer *t, const struct tprobe *tp, struct utrace_probe_opts *po)
{
	/* -v: its last line adds up the entry hits (report_missed()) */
	unsigned int counts =
		(t->opts->summary || t->opts->hist || t->opts->verbose > 0) ? UTRACE_ACT_COUNT : 0;
	unsigned int rec = t->quiet_events && !t->chrome_on ? 0 : UTRACE_ACT_RECORD;

	po->handler = NULL;
	po->ret_handler = NULL;
	po->point_opts = lib_point_opts;
	po->str_max = t->opts->strsize > 0 ? (unsigned int)t->opts->strsize + 1 : 1;
	if (po->str_max > 1024)
		po->str_max = 1024;
	switch (tp->kind) {
	case CLI_PROBE_FUNC:
		po->actions = rec | counts | UTRACE_ACT_HIST;
		break;
	case CLI_PROBE_ENTRY:
		po->actions = rec | counts | UTRACE_ACT_NORET;
		break;
	case CLI_PROBE_RET:
		po->retprobe = true;
		po->actions = rec | counts;
		break;
	default:
		break;
	}
	if ((t->opts->stack || t->opts->call_site) && rec)
		po->actions |= UTRACE_ACT_STACK; /* -i: the call site is its first frame */
	if (!po->actions)
		po->actions = UTRACE_ACT_COUNT | UTRACE_ACT_NORET;
}

/* The placement said for a point (pid, addr): an open-addressing table. */
static struct said_site *said_slot(struct tracer *t, pid_t pid, uint64_t addr)
{
	size_t i, h;

	if (t->nr_said * 2 >= t->cap_said) {
		size_t cap = t->cap_said ? t->cap_said * 2 : 256, k;
		struct said_site *n = calloc(cap, sizeof(*n)), *old = t->said;

		if (!n)
			return NULL;
		t->said = n;
		for (k = 0; k < t->cap_said; k++)
			if (old[k].addr) {
				for (h = (old[k].addr ^
					  (uint64_t)old[k].pid * 0x9e3779b97f4a7c15ull) %
					 cap;
				     n[h].addr; h = (h + 1) % cap)
					;
				n[h] = old[k];
			}
		free(old);
		t->cap_said = cap;
	}
	h = (addr ^ (uint64_t)pid * 0x9e3779b97f4a7c15ull) % t->cap_said;
	for (i = 0; i < t->cap_said; i++, h = (h + 1) % t->cap_said) {
		struct said_site *ss = &t->said[h];

		if (!ss->addr) {
			ss->addr = addr;
			ss->pid = pid;
			ss->site = UTRACE_SITE_PENDING;
			t->nr_said++;
			return ss;
		}
		if (ss->addr == addr && ss->pid == pid)
			return ss;
	}
	return NULL;
}

struct say_ctx {
	struct tracer *t;
	const char *spec;
};

/*
 * A point's placement changed: -vv says each ("NAME armed (jmp)"); a site
 * the agent gave back (a kernel uprobe was put on it: bpftrace, perf
 * probe; or its code was changed) is said at every verbosity, once.
 */
static int say_site(const struct utrace_point_site *ps, void *ctx)
{
	struct say_ctx *sc = ctx;
	struct tracer *t = sc->t;
	struct said_site *ss;
	char pfx[32] = "";

	if (ps->site == UTRACE_SITE_PENDING || !ps->addr)
		return 0;
	ss = said_slot(t, ps->pid, ps->addr);
	if (!ss || ss->site == ps->site)
		return 0;
	ss->site = ps->site;
	if (t->opts->nr_pids > 1 || t->opts->all)
		snprintf(pfx, sizeof(pfx), "pid %d: ", (int)ps->pid);
	if (ps->site == UTRACE_SITE_TAKEN) {
		const char *spec = sc->spec ? sc->spec : ps->name;
		bool glob = strpbrk(spec, "*?[") != NULL;

		if (t->opts->verbose < 0)
			return 0;
		cli_error("%sprobe '%s'%s%s%s: %s; utrace's probe there is off", pfx, spec,
			  glob ? " (" : "", glob ? ps->name : "", glob ? ")" : "",
			  ps->err == -EEXIST ? "a kernel uprobe was placed on it" :
					       "its code was changed by someone else");
		return 0;
	}
	/* (a failure: the library's warning said it once) */
	if (t->opts->verbose >= 2 && ps->site != UTRACE_SITE_FAILED)
		cli_error("%s%s armed (%s)", pfx, ps->name, utrace_site_str(ps->site));
	return 0;
}

/*
 * Each probe point's placement, looked at every 50 ms at most (a glob
 * has thousands of points), and @now at the end.
 */
static void say_sites(struct tracer *t, bool now)
{
	uint64_t ns = now_mono_ns();
	struct say_ctx sc = { t, NULL };
	int i;

	if (!t->up || (!now && ns - t->sites_at < 50000000ull) ||
	    (t->opts->verbose < 2 && utrace_uprobes__backend(t->up) != UTRACE_BACKEND_AGENT))
		return; /* (only the agent gives sites back) */
	t->sites_at = ns;
	for (i = 0; i < t->nr_probes; i++)
		if (t->probes[i].p) {
			sc.spec = t->probes[i].spec;
			utrace_probe__sites(t->probes[i].p, say_site, &sc);
		}
	for (i = 0; i < t->nr_injects; i++)
		if (t->injects[i].p) {
			sc.spec = t->injects[i].spec;
			utrace_probe__sites(t->injects[i].p, say_site, &sc);
		}
}

/* A point of @p goes (exit, exec, unload): its placement is said first, if not yet. */
static void said_before_drop(struct utrace_probe *p, pid_t pid, enum utrace_drop_reason why,
			     void *data)
{
	struct say_ctx sc = { the_tracer, NULL };

	(void)pid;
	(void)why;
	(void)data;
	if (the_tracer)
		utrace_probe__sites(p, say_site, &sc);
}

static int register_probes(struct tracer *t)
{
	int i, refused = 0, n = t->nr_injects + t->nr_probes;

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
			if (t->lib) {
				/* decided in the target: every Nth call, exact across threads */
				po.handler = NULL;
				po.point_opts = lib_point_opts;
				po.str_max = t->opts->strsize > 0 ?
						     (unsigned int)t->opts->strsize + 1 :
						     1;
				if (po.str_max > 1024)
					po.str_max = 1024;
				po.actions =
					UTRACE_ACT_INJECT | UTRACE_ACT_COUNT | UTRACE_ACT_NORET;
				if (!in->shown && !t->quiet_events)
					po.actions |= UTRACE_ACT_RECORD; /* lib_inject_record() */
				po.inject_value = in->value;
				po.inject_every = in->every;
			}
		} else {
			struct tprobe *tp = &t->probes[i - t->nr_injects];

			spec = tp->spec;
			po.data = tp;
			po.exclude = tp->exclude;
			if (t->lib && tp->kind != CLI_PROBE_MODULE) {
				lib_probe_opts(t, tp, &po);
				goto reg;
			}
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
				module_probe_opts(tp->module, tp->mprobe, &po);
				/* -v's last line adds up the entry hits of these too */
				if (t->opts->verbose > 0)
					po.actions |= UTRACE_ACT_COUNT;
				break;
			}
		}
reg:
		if (t->opts->verbose > 1)
			po.dropped = said_before_drop; /* a short program's points too */
		p = utrace_probe__register_spec(t->up, spec, &po);
		if (!p && t->opts->nr_pids &&
		    (errno == EEXIST || errno == EBUSY || errno == UTRACE_ERRNO__NOT_PATCHABLE ||
		     errno == UTRACE_ERRNO__RELOC)) {
			/* all refused, one warning each (uprobes_proc_arm_spec()): any_armed() */
			refused++;
			continue;
		}
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

			if (!utrace_probe__stats(p, &st) && !st.points && st.pending &&
			    (i < t->nr_injects || !t->probes[i - t->nr_injects].taken))
				cli_error(
					"warning: probe '%s': its object is not loaded yet; armed "
					"when it is loaded",
					spec);
		}
	}
	/* (the agent refuses a site at its SYNC: registered, but not placed) */
	if ((refused || (t->lib && t->opts->nr_pids)) && !any_armed(t)) {
		if (n > 1)
			cli_error("no probe point to arm in pid %d (every match was refused, see "
				  "above)",
				  t->main_pid);
		return EXIT_TRACE;
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

	output_break(&t->out); /* --one-line: a call still open is unfinished */

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

static void report_missed(struct tracer *t, bool detached)
{
	struct utrace_uprobes_stats st;
	uint64_t hits, rets, unrecorded = 0;
	int i;

	if (!t->up || utrace_uprobes__stats(t->up, &st))
		return;
	for (i = 0; i < t->nr_probes; i++) {
		struct utrace_probe_counts c;

		if (t->probes[i].p && !utrace_probe__counts(t->probes[i].p, &c))
			unrecorded += c.unrecorded;
	}
	/* nothing lost silently: calls the event stream does not show (-c counts them) */
	if (unrecorded && t->opts->verbose >= 0 && (!t->opts->summary || t->opts->summary_events))
		cli_error("note: %" PRIu64 " calls were made by signal handlers that interrupted "
			  "utrace's handler in the same thread: not shown (-c counts them)",
			  unrecorded);
	hits = st.hits;
	rets = st.returns;
	if (!t->lib) {
		/*
		 * ptrace: the probes' own hits (the layer's count has its internal
		 * points' too: the dynamic linker's r_brk), the points made in all
		 * (those of a process gone by now too)
		 */
		hits = rets = 0;
		st.points = st.points_made;
		for (i = 0; i < t->nr_probes + t->nr_injects; i++) {
			struct utrace_probe *p =
				i < t->nr_probes ? t->probes[i].p : t->injects[i - t->nr_probes].p;
			struct utrace_probe_stats ps;

			if (p && !utrace_probe__stats(p, &ps)) {
				hits += ps.hits;
				rets += ps.returns;
			}
		}
	}
	if (t->lib) {
		/* hits that never stop the tracer: the backend's own counters */
		hits = rets = 0;
		st.missed_returns = 0;
		/* and the points made in all, as the old agent path said them */
		st.points = st.points_made;
		for (i = 0; i < t->nr_probes; i++) {
			struct utrace_probe_counts c;

			if (t->probes[i].p && !utrace_probe__counts(t->probes[i].p, &c)) {
				hits += c.calls;
				rets += c.returns;
				st.missed_returns += c.missed_returns;
			}
		}
	}
	if (st.missed_returns && t->opts->verbose >= 0)
		cli_error("note: %" PRIu64 " returns were not seen (frames unwound by longjmp or "
			  "exceptions, or nesting deeper than 64 calls)",
			  st.missed_returns);
	/* one shape for every backend (test-agent-behaviour.c reads it) */
	if (t->opts->verbose > 0 && t->lib && t->opts->nr_pids > 1) {
		/* several pids: one line each */
		for (i = 0; i < t->opts->nr_pids; i++) {
			struct utrace_uprobes_stats ps;

			if (utrace_uprobes__pid_stats(t->up, t->opts->pids[i], &ps))
				continue;
			cli_error("pid %d: %" PRIu64 " entry hits, %" PRIu64 " returns, %" PRIu64
				  " returns missed, %" PRIu64 " probe points%s",
				  (int)t->opts->pids[i], ps.hits, ps.returns, ps.missed_returns,
				  ps.points, detached ? " (detached)" : "");
		}
	} else if (t->opts->verbose > 0) {
		cli_error("%" PRIu64 " entry hits, %" PRIu64 " returns, %" PRIu64
			  " returns missed, %" PRIu64 " probe points%s",
			  hits, rets, st.missed_returns, st.points, detached ? " (detached)" : "");
	}
}

/* The layer and its probes go; what the session still reports finds none. */
static void layer_free(struct tracer *t)
{
	int i;

	if (t->up && cli_nr_modules)
		modules_fetch_counters(t->up); /* -m: before the layer forgets them */
	utrace_uprobes__free(t->up);
	t->up = NULL;
	for (i = 0; i < t->nr_probes; i++)
		t->probes[i].p = NULL;
	for (i = 0; i < t->nr_injects; i++)
		t->injects[i].p = NULL;
}

static int setup(struct tracer *t, struct cli_opts *opts)
{
	int i, j, err;

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
		t->probes[i].exclude = opts->probes[i].exclude;
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
	return 0;
}

/*
 * Attach mode on the library's agent: the layer takes each process
 * (utrace_uprobes__attach(): the agent injected, only its control thread
 * traced). Return: 0, or -1 after one line.
 */
static int lib_agent_attach(struct tracer *t, bool fallback_ok, char *fb_why, size_t fb_len)
{
	int i, err;

	for (i = 0; i < t->opts->nr_pids; i++) {
		pid_t pid = t->opts->pids[i];
		const char *why;

		cli_hold_warnings();
		err = utrace_uprobes__attach(t->up, pid);
		cli_release_warnings(!err);
		if (!err)
			continue;
		why = utrace_uprobes__attach_why(t->up);
		if (err == -EAGAIN) { /* "pid N is stopped (state T): continue it ..." */
			cli_error("%s", why);
			return -1;
		}
		/* "process N: cannot load the agent: WHY": WHY */
		if (strstr(why, "cannot load the agent: "))
			why = strstr(why, "cannot load the agent: ") +
			      strlen("cannot load the agent: ");
		else if (!strncmp(why, "process ", 8) && strstr(why, ": "))
			why = strstr(why, ": ") + 2;
		if (!strncmp(why, "pid ", 4) && strstr(why, ": ")) /* (lib/inject.c's shape) */
			why = strstr(why, ": ") + 2;
		if (err == -ESRCH) {
			cli_error("cannot attach to pid %d: no such process (it has exited?)", pid);
		} else if (fallback_ok && i == 0) {
			/* -b auto: ptrace takes the processes instead, -v says why */
			snprintf(fb_why, fb_len, "pid %d: %s", pid, why);
			return 1;
		} else {
			cli_error("cannot load the agent into pid %d: %s", pid, why);
		}
		return -1;
	}
	return 0;
}

/*
 * -a: the executable whose image the SPECs resolve against: the first
 * SPEC's object given as a path (that file with its DT_NEEDED closure),
 * else the command's. Return: 0, or the exit status after one line.
 */
static int all_exec_of(struct tracer *t)
{
	struct cli_opts *o = t->opts;
	char errbuf[256];
	int i;

	for (i = 0; i < t->nr_probes && !t->all_exec[0]; i++) {
		struct utrace_spec spec;

		if (utrace_spec__parse(t->probes[i].spec, &spec, errbuf, sizeof(errbuf)))
			continue; /* (check_specs() says what is wrong) */
		if (spec.object && strchr(spec.object, '/') &&
		    !realpath(spec.object, t->all_exec)) {
			cli_error("-a: '%s': %s", spec.object, strerror(errno));
			utrace_spec__clear(&spec);
			return EXIT_USAGE;
		}
		utrace_spec__clear(&spec);
	}
	if (!t->all_exec[0] && o->argc > 0 &&
	    !find_command(o->argv[0], t->all_exec, sizeof(t->all_exec)))
		t->all_exec[0] = 0;
	if (!t->all_exec[0]) {
		cli_error("-a: no SPEC names a file (give one as PATH:FUNC, e.g. "
			  "/usr/bin/gawk:main, or a command after --, whose libraries "
			  "'libc:malloc' then names)");
		return EXIT_USAGE;
	}
	return 0;
}

/* -s: the syscall engine shows what the function lines show */
/*
 * -s with -f: the syscall engine asks before each line. With the agent the
 * function records wait in the target's rings: what they hold now happened
 * before this stop (the stopped thread's own ones all did), so they are
 * printed first, and the stream stays in time order.
 */
static bool embed_wanted(pid_t pid, struct utrace_thread *th, const siginfo_t *si)
{
	struct tracer *t = the_tracer;
	unsigned int i;

	if (!t || !wanted(t, pid))
		return false;
	if (th && si && t->up && utrace_uprobes__own_signal(t->up, th, si)) {
		/* the agent's trap or upgrade signal: its handler's rt_sigreturn goes too */
		for (i = 0; i < (sizeof(t->own_sig_tids) / sizeof(t->own_sig_tids[0])); i++)
			if (!t->own_sig_tids[i]) {
				t->own_sig_tids[i] = utrace_thread__tid(th);
				break;
			}
		return false;
	}
	if (th && !si) {
		struct user_regs_struct regs;
		pid_t tid = utrace_thread__tid(th);

		for (i = 0; i < (sizeof(t->own_sig_tids) / sizeof(t->own_sig_tids[0])); i++)
			if (t->own_sig_tids[i] == tid && utrace_thread__get_regs(th, &regs) == 0 &&
			    (long)regs.orig_rax == SYS_rt_sigreturn) {
				t->own_sig_tids[i] = 0;
				return false;
			}
		/* the agent's own calls (its thread, its constructor) are not the program's */
		if (t->up && utrace_uprobes__own_syscall(t->up, th))
			return false;
	}
	if (t->lib && t->up && !t->in_drain) {
		t->in_drain = true;
		while (utrace_uprobes__poll(t->up, on_record, t, 0) > 0)
			;
		t->in_drain = false;
	}
	return true;
}

/*
 * -a without a command: nothing of the session runs; the kernel's hits
 * come until -d or a signal, drained every 20 ms (the ring holds 8 MiB).
 */
static void all_wait(struct tracer *t, uint64_t deadline)
{
	struct timespec ts = { 0, 20 * 1000000 };

	while (!last_signal && (!deadline || now_mono_ns() < deadline)) {
		utrace_uprobes__poll(t->up, on_record, t, 0);
		output_live(&t->out);
		nanosleep(&ts, NULL);
	}
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
	static char why[640], agent_why[PATH_MAX + 128], nohello[640];
	int ret, err, r, i, polled = 0;

	memset(t, 0, sizeof(*t));
	nohello[0] = 0;
	t->opts = opts;
	aggr_init(&t->aggr);
	ret = setup(t, opts);
	if (!ret && opts->all)
		ret = all_exec_of(t);
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
	if (opts->backend == CLI_BACKEND_KERNEL) {
		ret = lib_kernel_refuses(t, opts);
		if (ret)
			goto out_free;
		t->lib = true; /* BPF programs: the library path, as the agent's */
		uopts.backend = UTRACE_BACKEND_KERNEL;
		/*
		 * Children only with -F: the kernel's uprobes follow a vfork
		 * child by themselves, and a fork child the session does not
		 * trace loses its copies at its first hit (the links filter by
		 * process); a followed one is armed as a process of its own.
		 */
		sopts.follow_forks = opts->follow_forks || opts->all;
		uopts.all_exec = opts->all ? t->all_exec : NULL;
		auto_why = " (asked for)"; /* then how it links: utrace_uprobes__backend_how() */
	} else if (opts->backend == CLI_BACKEND_AGENT && !lib_agent_wanted(t, opts)) {
		if (trace_agent_unsafe()[0])
			cli_error("%s (only its owner may write it and the directories above, or "
				  "use -b ptrace)",
				  trace_agent_unsafe());
		else
			cli_error("cannot find libutrace-agent.so (set UTRACE_AGENT=PATH, a file "
				  "only its owner can write, or use -b ptrace)");
		ret = EXIT_TRACE;
		goto out_free;
	} else if (lib_agent_wanted(t, opts) && !no_agent &&
		   (!t->check_after_exec || opts->backend == CLI_BACKEND_AGENT)) {
		t->lib = true; /* the library's agent: below, with the ptrace path's writers */
		uopts.backend = UTRACE_BACKEND_AGENT;
		uopts.agent_path = trace_agent_path();
		/*
		 * the program's waits never see a stop of ours once it is
		 * armed; with -s every thread stays traced (the syscall stops,
		 * which restart what they interrupt)
		 */
		uopts.agent_untraced = !opts->syscalls;
		/* a burst is delivered, not dropped: a full ring waits (agent/ring.c) */
		uopts.flags |= opts->lossy ? 0 : UTRACE_UPROBES_RING_WAIT;
		/* -F: the children keep their probes, each traced as a process */
		uopts.flags |= opts->follow_forks ? UTRACE_UPROBES_FOLLOW_FORKS : 0;
		/* as the ptrace backend's on_exec(): nothing armed, the command never runs */
		uopts.flags |= launched && !t->check_after_exec ? UTRACE_UPROBES_LAUNCH_ARMED : 0;
		auto_why = opts->backend == CLI_BACKEND_AUTO ?
				   " (auto: the agent could be loaded, handlers run in the probed "
				   "threads)" :
				   "";
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
		else if (opts->syscalls)
			auto_why = " (auto: -s: the program stops at each syscall anyway; -b agent "
				   "runs the function probes in the target)";
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

	t->s = utrace_session__new(&sopts);
	if (!t->s) {
		cli_lib_error("cannot create a tracing session", -errno);
		goto out;
	}
	the_tracer = t;
	t->up = utrace_uprobes__new(t->s, &uopts);
	if (!t->up && uopts.backend == UTRACE_BACKEND_KERNEL) {
		if (errno == EOPNOTSUPP)
			cli_error(
				"the kernel backend is not built in (libbpf, bpftool or clang were "
				"missing at build time)");
		else if (errno == EPERM)
			cli_error("the kernel backend needs root, or CAP_BPF and CAP_PERFMON");
		else
			cli_lib_error("cannot set up the kernel backend", -errno);
		goto out;
	}
	if (!t->up) {
		cli_lib_error(t->lib ? "cannot set up the agent backend" :
				       "cannot set up the ptrace backend",
			      -errno);
		goto out;
	}
	/* attach mode on the library's agent: said once the agent is in (or ptrace is) */
	if (opts->verbose > 0 && (launched || uopts.backend != UTRACE_BACKEND_AGENT))
		cli_error("backend: %s%s%s%s%s", utrace_backend_str(utrace_uprobes__backend(t->up)),
			  auto_why, *utrace_uprobes__backend_how(t->up) ? "; " : "",
			  utrace_uprobes__backend_how(t->up),
			  opts->all ? "; -a: every process that maps the probed files" : "");
	/* -m: in the layer before any process is (the agent loads them into each) */
	if (cli_nr_modules) {
		ret = modules_attach(t->up);
		if (ret)
			goto out;
		ret = EXIT_TRACE;
	}
	/*
	 * -s (ltrace -S): the syscall engine in this session, after the
	 * layer's engine (a breakpoint's SIGTRAP, suppressed there, is no
	 * signal of the program's to show)
	 */
	if (opts->syscalls) {
		ret = syscalls_embed(opts, t->s, &t->out, t->chrome_on ? &t->chrome : NULL,
				     embed_wanted);
		if (ret)
			goto out;
		t->syscalls_on = true;
		ret = EXIT_TRACE;
	}
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
		 * Not with the agent: it notices its host's death (within
		 * ~100 ms), puts every byte back and lets the program run on;
		 * the control thread the session keeps (ANCHOR) must not take
		 * the whole process with it (a SIGKILL to one thread is the
		 * group's).
		 */
		UTRACE_OPTS(utrace_launch_opts, lo,
			    .kill_if_tracer_dies =
				    !(t->lib && uopts.backend == UTRACE_BACKEND_AGENT));
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
	} else if (opts->all) {
		ret = register_probes(t); /* armed for every process at once */
		if (ret)
			goto out;
		ret = EXIT_TRACE;
	} else {
		t->main_pid = opts->pids[0];
		r = 0;
		if (uopts.backend == UTRACE_BACKEND_AGENT) {
			r = lib_agent_attach(t, opts->backend == CLI_BACKEND_AUTO, agent_why,
					     sizeof(agent_why));
			if (r < 0)
				goto out;
			if (r > 0) {
				/* auto: the agent could not be loaded; ptrace, in this session */
				layer_free(t);
				t->lib = false;
				uopts.backend = UTRACE_BACKEND_PTRACE;
				uopts.agent_untraced = false;
				t->up = utrace_uprobes__new(t->s, &uopts);
				if (!t->up) {
					cli_lib_error("cannot set up the ptrace backend", -errno);
					goto out;
				}
				snprintf(why, sizeof(why),
					 " (auto: the agent could not be loaded: %.500s)",
					 agent_why);
				auto_why = why;
			}
			if (opts->verbose > 0 && opts->nr_pids > 1)
				cli_error("backend: %s (%d processes)%s",
					  utrace_backend_str(utrace_uprobes__backend(t->up)),
					  opts->nr_pids, auto_why);
			else if (opts->verbose > 0)
				cli_error("backend: %s%s",
					  utrace_backend_str(utrace_uprobes__backend(t->up)),
					  auto_why);
		}
		if ((uopts.backend != UTRACE_BACKEND_AGENT || r > 0) &&
		    cli_attach_pids(t->s, opts->pids, opts->nr_pids))
			goto out;
		ret = register_probes(t);
		if (ret)
			goto out; /* the processes are detached untouched */
		ret = EXIT_TRACE;
	}
	if (opts->duration > 0)
		deadline = now_mono_ns() + (uint64_t)(opts->duration * 1e9);
	if (opts->all && !launched) {
		all_wait(t, deadline);
		goto all_done;
	}

	for (;;) {
		int wait = output_live_wait(&t->out, timeout_left(deadline));

		/*
		 * The library's rings: drained between 1 ms runs of the
		 * session, without waiting while they hold records (a full
		 * ring makes the probed thread wait for this drain)
		 */
		if (t->lib)
			wait = polled > 0 ? 0 : wait > 1 ? 1 : wait;
		r = utrace_session__run(t->s, wait);
		if (t->lib && t->opts->stack && t->main_pid && kill(t->main_pid, 0) == 0) {
			/*
			 * -k: the image while it can be read (records may come
			 * after the exit); re-read when its maps change
			 */
			struct symcache *c = symcache_get(t, t->main_pid, false);

			if (c && (!c->maps || maps_grew(t->main_pid, c)))
				symcache_get(t, t->main_pid, true);
			/* the unwinder of the agent's stack copies, as well */
			if (c && c->maps)
				symcache_unwinder(t, c);
		}
		/* -m with ptrace: the modules' records, queued at the hits */
		if (t->lib || cli_nr_modules)
			polled = utrace_uprobes__poll(t->up, on_record, t, 0); /* never waits */
		if (polled == -EBADMSG) {
			t->agent_failed =
				true; /* the library said which process, and detached it */
			polled = 0;
		}
		say_sites(t, false);
		if (t->lib && launched &&
		    !strncmp(utrace_uprobes__attach_why(t->up), UTRACE_WHY_NOTHING_ARMED,
			     strlen(UTRACE_WHY_NOTHING_ARMED))) {
			/* the library killed it before main(): on_exec()'s rule */
			if (t->nr_probes + t->nr_injects > 1)
				cli_error("no probe point to arm in %s (every match was refused, "
					  "see above)",
					  t->opts->argv[0]);
			t->nomatch = t->noarm = true;
			break;
		}
		output_live(&t->out);
		if (r == UTRACE_RUN_TIMEOUT && (!deadline || now_mono_ns() < deadline))
			continue; /* the live-output bound, not -d */
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
		ret = t->noarm ? EXIT_TRACE : EXIT_USAGE;
		goto out;
	}

all_done:
	/* every breakpoint out first: the processes run on untouched */
	report_missed(t, detach);
	while (!t->lib && cli_nr_modules && utrace_uprobes__poll(t->up, on_record, t, 0) > 0)
		;
	if (t->lib) {
		/* what the rings still hold, then the target's figures */
		while (utrace_uprobes__poll(t->up, on_record, t, 0) > 0)
			;
		say_sites(t, true);
		lib_figures(t);
		if (launched)
			snprintf(nohello, sizeof(nohello), "%s", utrace_uprobes__attach_why(t->up));
		/*
		 * attach mode: each process let go here, so that a site the
		 * agent could not restore (the library said which) makes the
		 * exit status 1, as a failed detach
		 */
		for (i = 0; !launched && i < opts->nr_pids; i++)
			if (utrace_uprobes__detach_pid(t->up, opts->pids[i]) == -EBUSY)
				t->agent_failed = true;
	}
	layer_free(t);
	if (detach) {
		err = utrace_session__detach(t->s);
		if (err && err != -ESRCH)
			cli_lib_error("detach failed", err);
	}
	if (t->chrome_on)
		chrome_close(&t->chrome);
	print_at_exit(t);
	if (t->syscalls_on)
		syscalls_embed_end();
	output_flush(&t->out);
	if (t->lost && opts->verbose >= 0)
		cli_error("%" PRIu64 " events were lost (ring buffers full)", t->lost);
	if (nohello[0]) {
		/* its agent never answered: the command ran once, unprobed */
		cli_error("cannot start '%s' with the agent (%s): %s (it is not started again; "
			  "use -b ptrace)",
			  opts->exe, trace_agent_path(), nohello);
		ret = EXIT_TRACE;
	} else if (launched && !interrupted) {
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

		/* it may have ended during the detach, and the session reaped it then */
		ret = utrace_session__exit_status(t->s);
		if (ret < 0) {
			ret = 0;
			if (waitpid(t->main_pid, &st, 0) == t->main_pid)
				ret = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
		}
	} else {
		/* attach mode: a clean detach, unless the agent failed a process */
		ret = t->agent_failed ? EXIT_TRACE : 0;
	}
	for (i = 0; i < t->nr_injects; i++)
		if (opts->verbose > 0)
			cli_error("--inject '%s': %" PRIu64 " of %" PRIu64 " calls injected",
				  t->injects[i].spec, t->injects[i].done, t->injects[i].hits);
	inj_clear(t);
out:
	if (t->up) {
		report_missed(t, false);
		layer_free(t);
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
	output_names_clear();
	for (i = 0; i < t->nr_injects; i++)
		free(t->injects[i].spec);
	for (i = 0; i < t->nr_probes; i++)
		free(t->probes[i].owned);
	free(t->injects);
	free(t->probes);
	free(t->said);
	modules_free();
	return ret;
}
