/* SPDX-License-Identifier: MIT */
/*
 * cmd-record.c - utrace record / replay / report / dump: every call of
 * the probed functions into a trace file (tracefile.h, docs/record.md),
 * and what is read back from it without the process. Tracer process; one
 * event loop.
 *
 * Recording runs on the library's one event path: each -f/-u/-r SPEC is a
 * probe with the built-in RECORD action (and the prototype's strings,
 * point_opts), on any backend; utrace_uprobes__poll() hands each record to
 * on_rec(), which appends it to its thread's buffer in the file. A probe
 * point gets an id and a POINT block (names, prototype) the first time
 * one of its records comes, so the file is read with no DWARF and no
 * process. Replay formats the records as utrace -f prints its events.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "chrome.h"
#include "cli.h"
#include "launch.h"
#include "output.h"
#include "protos.h"
#include "tracefile.h"
#include "unwind.h"

#define DEFAULT_FILE "utrace.rec"

/* ------------------------------------------------------------------------ */
/* record                                                                    */
/* ------------------------------------------------------------------------ */

struct rprobe {
	enum cli_probe_kind kind;
	const char *spec;
	const char *const *exclude; /* ltrace's '-' rules */
	struct utrace_probe *p;
};

/* a point seen in the records: (probe, pid, address) -> its id in the file */
struct rpoint {
	struct rpoint *next;
	struct utrace_probe *probe;
	pid_t pid;
	uint64_t addr;
	int id;
	unsigned int nargs; /* arguments kept per entry: what the prototype shows */
};

#define RP_HASH 1024

/*
 * -k: a process's CFI unwinder (libdw). Recording: made at its first stack
 * while its maps can be read, the records' copies of registers and stack
 * unwound with it as they come and the frames kept in the file. Replay:
 * made from the last maps the file kept, it names the frames.
 */
struct runwind {
	struct runwind *next;
	pid_t pid;
	struct utrace_unwind *u; /* NULL: none could be made */
	uint64_t maps_sig; /* of the maps last reported (rec_refresh()) */
};

static struct runwind *runwind_find(struct runwind *list, pid_t pid)
{
	for (; list; list = list->next)
		if (list->pid == pid)
			return list;
	return NULL;
}

/* a new entry of @list: @pid's unwinder @u (NULL: none), owned by the list */
static struct runwind *runwind_add(struct runwind **list, pid_t pid, struct utrace_unwind *u)
{
	struct runwind *ru = calloc(1, sizeof(*ru));

	if (!ru) {
		utrace_unwind__free(u);
		return NULL;
	}
	ru->pid = pid;
	ru->u = u;
	ru->next = *list;
	*list = ru;
	return ru;
}

static void runwind_free_all(struct runwind **list)
{
	while (*list) {
		struct runwind *ru = *list;

		*list = ru->next;
		utrace_unwind__free(ru->u);
		free(ru);
	}
}

struct recorder {
	struct cli_opts *opts;
	const char *path;
	struct utrace_session *s;
	struct utrace_uprobes *up;
	struct tf_writer *w;
	struct rprobe *probes;
	int nr_probes;
	struct rpoint *points[RP_HASH];
	struct rpoint *last; /* rec_point()'s last answer: a loop hits one point */
	/*
	 * on_rec()'s event, reused: its strings are cleared only after an
	 * event that had some (@ev_strs); most have none
	 */
	struct tf_event ev;
	struct tf_point evpt;
	bool ev_strs;
	pid_t main_pid;
	uint64_t lost;
	int err; /* first write error */
	bool maps_done;
	bool rings; /* the backend's records wait in rings (agent, kernel) */
	struct runwind *unwinders;
	uint64_t t0_ns, refresh_ns; /* rec_refresh()'s pace */
};

static volatile sig_atomic_t rec_signal;
static struct recorder *the_rec;

static void rec_interrupt(int sig)
{
	rec_signal = sig;
	if (the_rec && the_rec->s)
		utrace_session__interrupt(the_rec->s);
}

static const struct proto *point_proto(const char *object, const char *symbol)
{
	const struct proto *p = symbol ? proto_dwarf(object, symbol) : NULL;

	if (!p && symbol)
		p = proto_find(symbol);
	return p ? p : proto_unknown();
}

/* Each function a SPEC matches: its prototype's strings (copied at the hit). */
static void rec_point_opts(struct utrace_probe *p, const struct utrace_probe_point_info *pt,
			   struct utrace_point_opts *po, void *data)
{
	const struct proto *proto = point_proto(pt->object, pt->symbol);
	unsigned int i;

	(void)p;
	(void)data;
	po->nargs = 6;
	po->str_args = 0;
	for (i = 0; i < proto->nargs && i < 6; i++)
		if (proto->args[i] == PK_STR || proto->args[i] == PK_FMT)
			po->str_args |= 1U << i;
	if (proto->ret == PK_STR)
		po->str_args |= 1U << 6;
	po->err_kind = (int)proto_err_kind(proto);
}

static struct rpoint *rec_point_new(struct recorder *rc, const struct utrace_record *r,
				    unsigned int h);

/* The point of @r, written into the file at its first record. */
static inline struct rpoint *rec_point(struct recorder *rc, const struct utrace_record *r)
{
	unsigned int h = (unsigned int)((r->addr >> 4) ^ (uint64_t)r->pid) % RP_HASH;
	struct rpoint *rp = rc->last;

	if (rp && rp->probe == r->probe && rp->addr == r->addr && rp->pid == r->pid)
		return rp;
	for (rp = rc->points[h]; rp; rp = rp->next)
		if (rp->probe == r->probe && rp->addr == r->addr && rp->pid == r->pid)
			return rc->last = rp;
	return rc->last = rec_point_new(rc, r, h);
}

static struct rpoint *rec_point_new(struct recorder *rc, const struct utrace_record *r,
				    unsigned int h)
{
	struct tf_point tp = { 0 };
	const struct proto *proto;
	struct rpoint *rp;
	int i, id;

	for (i = 0; i < rc->nr_probes && rc->probes[i].p != r->probe; i++)
		;
	if (i == rc->nr_probes)
		return NULL;
	proto = point_proto(r->object, r->symbol);
	tp.kind = rc->probes[i].kind == CLI_PROBE_ENTRY ? TF_ENTRY :
		  rc->probes[i].kind == CLI_PROBE_RET	? TF_RET :
							  TF_FUNC;
	tp.pid = r->pid;
	tp.addr = r->addr;
	tp.offset = r->offset;
	tp.name = (char *)(r->name ? r->name : "?");
	tp.symbol = (char *)r->symbol;
	tp.object = (char *)r->object;
	tp.proto = *proto;
	tp.proto.name = NULL;
	id = tf_writer_point(rc->w, &tp);
	if (id < 0)
		return NULL;
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return NULL;
	rp->probe = r->probe;
	rp->pid = r->pid;
	rp->addr = r->addr;
	rp->id = id;
	/* printf-like and unknown prototypes: all six registers */
	rp->nargs = proto->nargs > 6 ? 6 : proto->nargs;
	for (i = 0; i < proto->nargs; i++)
		if (proto->args[i] == PK_FMT)
			rp->nargs = 6;
	rp->next = rc->points[h];
	rc->points[h] = rp;
	return rp;
}

/* the maps of the main process while it can be read: at its exec, at its exit */
static void rec_maps(struct recorder *rc, pid_t pid)
{
	if (rc->w && pid > 0)
		tf_writer_maps(rc->w, pid);
}

static struct runwind *rec_unwinder(struct recorder *rc, pid_t pid)
{
	struct runwind *ru = runwind_find(rc->unwinders, pid);
	char why[256];

	if (ru)
		return ru;
	ru = runwind_add(&rc->unwinders, pid, utrace_unwind__new(pid, NULL, why, sizeof(why)));
	if (ru && !ru->u && rc->opts->verbose > 0)
		cli_error("-k: no CFI unwinder for pid %d (%s): frame pointers only", (int)pid,
			  why);
	return ru;
}

/*
 * -k: each process's modules anew when its code mappings changed (the
 * libraries ld.so and dlopen() map), while they can be read: a short program maps
 * its libraries and exits between two drains, and its records are
 * unwound after its exit. Every turn of the loop for its first 100 ms
 * (the libraries come then), then every 10 ms; the main process's maps
 * go into the file as well (replay names the frames with them). Tracer,
 * between the session's run and the drain.
 */
static void rec_refresh(struct recorder *rc, uint64_t now)
{
	struct runwind *ru;

	if (!rc->unwinders ||
	    (now - rc->t0_ns > 100000000ull && now - rc->refresh_ns < 10000000ull))
		return;
	rc->refresh_ns = now;
	for (ru = rc->unwinders; ru; ru = ru->next) {
		struct utrace_maps *m;
		uint64_t sig;
		size_t i;

		if (!ru->u || !(m = utrace_maps__read(ru->pid)))
			continue;
		/* the code mapped from files: not the heap, nor malloc's mmaps */
		for (i = 0, sig = 1; i < m->nr; i++)
			if ((m->maps[i].prot & UTRACE_MAP_EXEC) && m->maps[i].path &&
			    m->maps[i].path[0] == '/')
				sig = sig * 31 + (m->maps[i].start ^ m->maps[i].inode);
		/* (from /proc again, not @m: the unwinder stays one on /proc, unwind.h) */
		if (m->nr && sig != ru->maps_sig && utrace_unwind__report(ru->u, NULL) == 0) {
			ru->maps_sig = sig;
			rec_maps(rc, ru->pid);
		}
		utrace_maps__free(m);
	}
}

/*
 * -k: the callers of an entry record, innermost first, into @ev. A copy of
 * the registers and the top of the stack (agent, kernel) is unwound by
 * CFI here, while the process can still be read for its modules (the
 * unwinder reads them anew after a dlopen); the probed function's own
 * frame is left out, as utrace -k does. Otherwise (ptrace: unwound at the
 * stop; no unwinder) the addresses the backend gave.
 */
static void rec_stack(struct recorder *rc, const struct utrace_record *r, struct tf_event *ev)
{
	unsigned int max = sizeof(ev->stack) / sizeof(ev->stack[0]), i;
	uint64_t all[sizeof(ev->stack) / sizeof(ev->stack[0]) + 1];
	bool act[sizeof(all) / sizeof(all[0])];
	struct runwind *ru;
	int n;

	if (r->sz >= offsetof(struct utrace_record, stack_len) + sizeof(size_t) &&
	    r->nr_regs == UTRACE_REC_NR_REGS && r->regs && (ru = rec_unwinder(rc, r->pid)) &&
	    ru->u) {
		/* (a frame in a library dlopen()ed since: the unwinder reads the maps anew) */
		n = utrace_unwind__stack_copy(ru->u, r->tid, r->regs, r->stack_sp, r->stack_data,
					      r->stack_len, all, act, (int)max + 1);
		if (n > 1) {
			for (i = 1; i < (unsigned int)n; i++)
				ev->stack[i - 1] = all[i];
			ev->nr_stack = (unsigned int)n - 1;
			return;
		}
	}
	ev->nr_stack = r->nr_stack < max ? r->nr_stack : max;
	for (i = 0; i < ev->nr_stack; i++)
		ev->stack[i] = r->stack[i];
}

/* without -F, the processes asked for: the command, or the -p pids */
static bool rec_wanted(struct recorder *rc, pid_t pid)
{
	int i;

	if (pid == rc->main_pid)
		return true;
	for (i = 0; i < rc->opts->nr_pids; i++)
		if (rc->opts->pids[i] == pid)
			return true;
	return false;
}

static int on_rec(const struct utrace_record *r, void *data)
{
	struct recorder *rc = data;
	struct tf_event *ev = &rc->ev;
	struct rpoint *rp;
	unsigned int i;
	bool strs;
	int err;

	if (r->type == UTRACE_REC_LOST) {
		rc->lost += r->lost;
		err = tf_writer_lost(rc->w, r->tid, r->lost);
		goto out;
	}
	if ((r->type != UTRACE_REC_ENTRY && r->type != UTRACE_REC_RETURN) || !r->probe)
		return 0;
	if (!rc->opts->follow_forks && !rec_wanted(rc, r->pid))
		return 0; /* a child the session follows anyway: only with -F */
	rp = rec_point(rc, r);
	if (!rp)
		return 0;
	/*
	 * Every field tf_writer_event() reads, set, in the recorder's event
	 * (no memset, no per-event struct: at millions of records a second,
	 * zeroing these structs was most of on_rec()'s time); the strings are
	 * cleared only after an event that had some
	 */
	rc->evpt.id = (uint32_t)rp->id; /* (tf_writer_event() reads its id only) */
	ev->point = &rc->evpt;
	ev->type = r->type == UTRACE_REC_ENTRY ? TF_EV_ENTRY : TF_EV_RETURN;
	ev->pid = r->pid;
	ev->tid = r->tid;
	ev->ts_ns = r->ts_ns;
	ev->depth = r->depth;
	ev->nr_stack = 0;
	if (rc->ev_strs) {
		memset(ev->str, 0, sizeof(ev->str));
		memset(ev->str_len, 0, sizeof(ev->str_len));
		memset(ev->str_flags, 0, sizeof(ev->str_flags));
		rc->ev_strs = false;
	}
	if (ev->type == TF_EV_ENTRY) {
		ev->nargs = rp->nargs;
		ev->retval = ev->dur_ns = 0;
		memcpy(ev->args, r->args, sizeof(ev->args));
		for (i = 0, strs = false; i < 6; i++)
			strs |= r->str[i] || r->str_flags[i];
		if (strs) {
			for (i = 0; i < 6; i++) {
				ev->str[i] = r->str[i];
				ev->str_len[i] = r->str_len[i];
				ev->str_flags[i] = r->str_flags[i];
			}
			rc->ev_strs = true;
		}
	} else {
		ev->nargs = 0;
		ev->retval = r->retval;
		ev->dur_ns = r->dur_ns;
		if (r->ret_str || r->ret_str_flags) {
			ev->str[6] = r->ret_str;
			ev->str_len[6] = r->ret_str_len;
			ev->str_flags[6] = r->ret_str_flags;
			rc->ev_strs = true;
		}
	}
	if (ev->type == TF_EV_ENTRY && (r->nr_stack || r->nr_regs))
		rec_stack(rc, r, ev);
	err = tf_writer_event(rc->w, ev);
out:
	if (err && !rc->err)
		rc->err = err;
	return 0;
}

static int rec_on_exec(struct utrace_engine *e, struct utrace_thread *th, pid_t former_tid)
{
	struct recorder *rc = utrace_engine__ctx(e);

	(void)former_tid;
	if (utrace_thread__pid(th) == rc->main_pid)
		rec_maps(rc, rc->main_pid);
	if (rc->opts->stack) { /* -k: a new image, its modules */
		struct runwind *ru = runwind_find(rc->unwinders, utrace_thread__pid(th));

		if (ru && ru->u)
			utrace_unwind__report(ru->u, NULL);
	}
	return UTRACE_RESUME;
}

static int rec_on_exit(struct utrace_engine *e, struct utrace_thread *th, int status)
{
	struct recorder *rc = utrace_engine__ctx(e);

	(void)status;
	/* the last maps: every library the program loaded (dlopen too) */
	if (utrace_thread__tid(th) == rc->main_pid)
		rec_maps(rc, rc->main_pid);
	/* -k: the modules as they end, for the records still in the rings */
	if (utrace_thread__tid(th) == utrace_thread__pid(th) && rc->opts->stack) {
		struct runwind *ru = runwind_find(rc->unwinders, utrace_thread__pid(th));

		if (ru && ru->u)
			utrace_unwind__report(ru->u, NULL);
	}
	return UTRACE_RESUME;
}

/* What record does not do (yet), in one line; NULL: nothing. */
static const char *rec_refused(const struct cli_opts *o)
{
	return o->syscalls		 ? "-s (system calls)" :
	       o->nr_modules		 ? "-m" :
	       o->nr_injects		 ? "--inject" :
	       o->summary || o->hist	 ? "-c/-H (run utrace report FILE on the recording)" :
	       o->format != CLI_FMT_TEXT ? "--format (a recording is binary: utrace replay "
					   "--format json FILE)" :
					   NULL;
}

/* A SPEC that cannot be parsed, or that matches nothing in the command's image. */
static int rec_check_specs(struct recorder *rc)
{
	struct cli_opts *o = rc->opts;
	struct utrace_image *img = NULL;
	char errbuf[256];
	int i, ret = 0;

	if (o->argc > 0 && o->exe)
		img = utrace_image__open_exec(o->exe);
	for (i = 0; i < rc->nr_probes && !ret; i++) {
		struct utrace_spec spec;
		struct utrace_match *m = NULL;
		size_t nr = 0;
		bool pending = false;
		int err;

		if (utrace_spec__parse(rc->probes[i].spec, &spec, errbuf, sizeof(errbuf))) {
			cli_error("%s", errbuf[0] ? errbuf : "bad spec");
			ret = EXIT_USAGE;
			break;
		}
		if (img) {
			err = utrace_image__resolve(img, &spec, &m, &nr, &pending);
			free(m);
			if (err == -ENOENT) {
				cli_error("probe '%s': no such file '%s'", rc->probes[i].spec,
					  spec.object);
				ret = EXIT_USAGE;
			} else if (err) {
				snprintf(errbuf, sizeof(errbuf), "probe '%s'", rc->probes[i].spec);
				cli_lib_error(errbuf, err);
				ret = EXIT_USAGE;
			} else if (!nr && !pending) {
				cli_error("probe '%s': no such function in %s or its libraries "
					  "(utrace -l SPEC lists what a SPEC matches)",
					  rc->probes[i].spec, o->exe);
				ret = EXIT_USAGE;
			}
		}
		utrace_spec__clear(&spec);
	}
	utrace_image__close(img);
	return ret;
}

static int rec_register(struct recorder *rc)
{
	int i;

	for (i = 0; i < rc->nr_probes; i++) {
		UTRACE_OPTS(utrace_probe_opts, po);
		struct rprobe *rp = &rc->probes[i];

		po.point_opts = rec_point_opts;
		po.exclude = rp->exclude;
		po.str_max = rc->opts->strsize > 0 ? (unsigned int)rc->opts->strsize + 1 : 1;
		if (po.str_max > 1024)
			po.str_max = 1024;
		switch (rp->kind) {
		case CLI_PROBE_FUNC:
			po.actions = UTRACE_ACT_RECORD;
			break;
		case CLI_PROBE_ENTRY:
			po.actions = UTRACE_ACT_RECORD | UTRACE_ACT_NORET;
			break;
		case CLI_PROBE_RET:
			po.retprobe = true;
			po.actions = UTRACE_ACT_RECORD;
			break;
		default:
			break;
		}
		if (rc->opts->stack && rp->kind != CLI_PROBE_RET)
			po.actions |= UTRACE_ACT_STACK; /* -k: entries carry their callers */
		rp->p = utrace_probe__register_spec(rc->up, rp->spec, &po);
		if (!rp->p) {
			int err = errno;
			char what[300];

			if (err == UTRACE_ERRNO__NOMATCH) {
				cli_error("probe '%s': matches nothing in the traced process",
					  rp->spec);
				return EXIT_USAGE;
			}
			snprintf(what, sizeof(what), "probe '%s'", rp->spec);
			cli_lib_error(what, -err);
			return err == UTRACE_ERRNO__SPEC ? EXIT_USAGE : EXIT_TRACE;
		}
	}
	return 0;
}

static int drain(struct recorder *rc)
{
	int n, total = 0;

	while ((n = utrace_uprobes__poll(rc->up, on_rec, rc, 0)) > 0)
		total += n;
	return n < 0 ? n : total;
}

/*
 * -v: what the recording cost the tracer itself (all its threads: the
 * CPU time of draining, encoding and writing; the target's is not in it),
 * per event, and its peak memory (docs/record.md's bound)
 */
static void rec_say_cost(uint64_t events)
{
	struct rusage ru;
	double cpu;

	if (getrusage(RUSAGE_SELF, &ru))
		return;
	cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	cli_error("tracer: %.3f s of CPU (%.1f ns per event), %ld KiB maximum RSS", cpu,
		  events ? cpu * 1e9 / (double)events : 0.0, ru.ru_maxrss);
}

int cmd_record(struct cli_opts *opts)
{
	static struct recorder rec;
	struct recorder *rc = &rec;
	UTRACE_OPTS(utrace_session_opts, sopts, .follow_forks = true);
	UTRACE_OPTS(utrace_uprobes_opts, uopts);
	UTRACE_OPTS(utrace_engine_ops, ops, .exec = rec_on_exec, .exit = rec_on_exit);
	struct sigaction sa = { .sa_handler = rec_interrupt };
	bool launched = opts->argc > 0, detach = false;
	uint64_t deadline = 0, t0;
	const char *no;
	char agent_why[PATH_MAX + 128];
	int ret = EXIT_TRACE, r, i, err, idle = 0;

	memset(rc, 0, sizeof(*rc));
	rc->opts = opts;
	rc->path = opts->output ? opts->output : DEFAULT_FILE;
	no = rec_refused(opts);
	if (no) {
		cli_error("record: %s is not supported by utrace record yet", no);
		return EXIT_USAGE;
	}
	if (!opts->nr_probes) {
		cli_error("record: nothing to record: give -f SPEC (or -u/-r SPEC)");
		return EXIT_USAGE;
	}
	if (!launched && !opts->nr_pids) {
		cli_error("record: give a command after '--' or -p PID");
		return EXIT_USAGE;
	}
	rc->probes = calloc(opts->nr_probes, sizeof(*rc->probes));
	if (!rc->probes)
		return EXIT_TRACE;
	for (i = 0; i < opts->nr_probes; i++) {
		rc->probes[i].kind = opts->probes[i].kind;
		rc->probes[i].spec = opts->probes[i].spec;
		rc->probes[i].exclude = opts->probes[i].exclude;
	}
	rc->nr_probes = opts->nr_probes;
	ret = rec_check_specs(rc);
	if (ret)
		goto out_free;
	ret = EXIT_TRACE;

	switch (opts->backend) {
	case CLI_BACKEND_AGENT:
		uopts.backend = UTRACE_BACKEND_AGENT;
		break;
	case CLI_BACKEND_PTRACE:
		uopts.backend = UTRACE_BACKEND_PTRACE;
		break;
	case CLI_BACKEND_KERNEL:
		uopts.backend = UTRACE_BACKEND_KERNEL;
		break;
	default:
		/* auto: the agent where it can be preloaded (launch) or injected (-p) */
		uopts.backend = UTRACE_BACKEND_AGENT;
		if (launched && launch_agent_why(opts->exe, agent_why, sizeof(agent_why)))
			uopts.backend = UTRACE_BACKEND_PTRACE;
		break;
	}
	if (launched && uopts.backend == UTRACE_BACKEND_AGENT &&
	    (no = launch_agent_why(opts->exe, agent_why, sizeof(agent_why)))) {
		cli_error("cannot preload the agent: %s (use -b ptrace)", no);
		goto out_free;
	}

	/*
	 * the agent the CLI found (UTRACE_AGENT, the build tree, the install),
	 * as utrace -f gives it: the library alone knows only the install's
	 */
	if (uopts.backend == UTRACE_BACKEND_AGENT) {
		uopts.agent_path = trace_agent_path();
		/*
		 * the program's threads are not stopped once it is armed (its
		 * waits and signals run as untraced), and a fork child is the
		 * agent's to follow (-F), not the session's: as utrace -f does
		 */
		uopts.agent_untraced = true;
	}
	/* lossless unless --lossy: probed threads wait for the drain (agent/ring.c) */
	uopts.flags = opts->lossy ? 0 : UTRACE_UPROBES_RING_WAIT;
	/* -F: fork children carry the probes (the agent re-arenas them), as utrace -F */
	if (opts->follow_forks)
		uopts.flags |= UTRACE_UPROBES_FOLLOW_FORKS;
	/*
	 * the kernel's uprobes follow a child by themselves; a fork child the
	 * session does not trace loses its copies at its first hit (as in
	 * cmd-trace.c): the session follows children only with -F
	 */
	if (uopts.backend == UTRACE_BACKEND_KERNEL)
		sopts.follow_forks = opts->follow_forks;
	rc->s = utrace_session__new(&sopts);
	if (!rc->s) {
		cli_lib_error("cannot create a tracing session", -errno);
		goto out_free;
	}
	rc->up = utrace_uprobes__new(rc->s, &uopts);
	if (!rc->up && opts->backend == CLI_BACKEND_AUTO) {
		uopts.backend = UTRACE_BACKEND_PTRACE; /* the agent is not installed */
		rc->up = utrace_uprobes__new(rc->s, &uopts);
	}
	if (!rc->up) {
		cli_lib_error("cannot set up the backend", -errno);
		goto out;
	}
	/* the agent's and the kernel's records wait in rings; ptrace's come from stops */
	rc->rings = uopts.backend != UTRACE_BACKEND_PTRACE;
	if (!utrace_engine__attach(rc->s, &ops, UTRACE_EV_EXEC | UTRACE_EV_EXIT, rc)) {
		cli_lib_error("cannot set up the tracing engine", -errno);
		goto out;
	}
	rc->w = tf_writer_open(rc->path);
	if (!rc->w) {
		cli_error("cannot create '%s': %s", rc->path, strerror(errno));
		ret = EXIT_USAGE;
		goto out;
	}
	tf_writer_info(rc->w, "utrace", "%s", UTRACE_VERSION_STRING);
	tf_writer_info(rc->w, "backend", "%s", utrace_backend_str(utrace_uprobes__backend(rc->up)));
	tf_writer_info(rc->w, "mono_to_real", "%" PRId64,
		       (int64_t)now_realtime_ns() - (int64_t)now_mono_ns());
	tf_writer_info(rc->w, "strsize", "%d", opts->strsize);
	/* the records' depth: the kernel backend's is always 0 (lib/backend-kernel.c) */
	tf_writer_info(rc->w, "depth", "%s",
		       utrace_uprobes__backend(rc->up) == UTRACE_BACKEND_KERNEL ? "none" : "exact");
	tf_writer_info(rc->w, "lossy", "%d", opts->lossy ? 1 : 0);
	if (launched) {
		char cmd[2048] = "";
		size_t n = 0;

		for (i = 0; i < opts->argc && n < sizeof(cmd) - 2; i++)
			n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s%s", i ? " " : "",
					      opts->argv[i]);
		tf_writer_info(rc->w, "command", "%s", cmd);
	}
	if (opts->verbose > 0)
		cli_error("backend: %s", utrace_backend_str(utrace_uprobes__backend(rc->up)));
	the_rec = rc;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	if (launched) {
		UTRACE_OPTS(utrace_launch_opts, lo, .kill_if_tracer_dies = true);
		pid_t pid;

		ret = rec_register(rc);
		if (ret)
			goto out;
		ret = EXIT_TRACE;
		pid = utrace_session__launch(rc->s, opts->argv, &lo);
		if (pid < 0) {
			if (pid == -ENOENT || pid == -EACCES)
				cli_error("cannot run '%s': %s", opts->argv[0], strerror(-pid));
			else
				cli_lib_error("cannot launch the command", pid);
			ret = pid == -ENOENT ? 127 : pid == -EACCES ? 126 : EXIT_TRACE;
			goto out;
		}
		rc->main_pid = pid;
		/*
		 * the probes are armed: with the agent, the libraries it
		 * needs are mapped (its constructor ran after them). Their
		 * maps now, for replay and -k: a short run may be gone, and
		 * its maps with it, before its first record is read
		 */
		rec_maps(rc, pid);
		if (opts->stack) /* (on ptrace too: rec_refresh() keeps the file's maps) */
			rec_unwinder(rc, pid);
	} else {
		rc->main_pid = opts->pids[0];
		if (cli_attach_pids(rc->s, opts->pids, opts->nr_pids))
			goto out;
		ret = rec_register(rc);
		if (ret)
			goto out;
		ret = EXIT_TRACE;
		rec_maps(rc, rc->main_pid);
		for (i = 0; opts->stack && i < opts->nr_pids; i++)
			rec_unwinder(rc, opts->pids[i]);
	}
	tf_writer_info(rc->w, "pid", "%d", (int)rc->main_pid);
	t0 = now_mono_ns();
	rc->t0_ns = t0;
	err = 0;
	if (opts->duration > 0)
		deadline = t0 + (uint64_t)(opts->duration * 1e9);

	for (;;) {
		/*
		 * While the rings hold records, drain without waiting in the
		 * session. Once they are empty, look again every 50 us for a
		 * millisecond before waiting in the session (1 ms): a thread
		 * whose ring filled sleeps 50 us at a time (agent/ring.c), so a
		 * drain that caught up with it finds nothing, and a 1 ms wait
		 * then would leave both asleep. A drain that found only a few records (the
		 * threads are slower than the drain) also waits 50 us before
		 * the next: each turn of this loop costs system calls (the
		 * session's run), which a handful of records did not pay for;
		 * in 50 us a thread writes ~1,000 records, an eighth of its
		 * ring (agent: 8,192), so it never waits for room meanwhile.
		 * Not with ptrace: there the records come from the stops this
		 * loop runs, and a stopped thread would wait for the sleep.
		 */
		int wait = err > 0 || idle < 20 ? 0 : 1;

		if ((err == 0 && idle < 20) || (rc->rings && err > 0 && err < 256)) {
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
		}

		/* the rings are drained between short runs of the session */
		if (deadline) {
			uint64_t now = now_mono_ns();

			if (now >= deadline) {
				detach = true;
				break;
			}
		}
		r = utrace_session__run(rc->s, wait);
		if (opts->stack)
			rec_refresh(rc, now_mono_ns());
		err = drain(rc);
		idle = err > 0 ? 0 : idle + 1;
		if (err < 0 && err != -ESRCH) {
			cli_lib_error("reading the events failed", err);
			break;
		}
		if (rc->err)
			break;
		if (r == UTRACE_RUN_TIMEOUT || r == UTRACE_RUN_BREAK)
			continue;
		if (r == UTRACE_RUN_DONE)
			break;
		if (r == UTRACE_RUN_INTERRUPTED) {
			detach = true;
			break;
		}
		cli_lib_error("tracing failed", r);
		goto out;
	}
	drain(rc);
	utrace_uprobes__free(rc->up);
	rc->up = NULL;
	if (detach) {
		err = utrace_session__detach(rc->s);
		if (err && err != -ESRCH)
			cli_lib_error("detach failed", err);
	}
	if (rc->err) {
		cli_error("cannot write '%s': %s", rc->path, strerror(-rc->err));
		ret = EXIT_TRACE;
	} else if (launched && !detach) {
		ret = utrace_session__exit_status(rc->s);
		if (ret < 0)
			ret = EXIT_TRACE;
	} else if (launched) {
		int st;

		ret = 0;
		if (waitpid(rc->main_pid, &st, 0) == rc->main_pid)
			ret = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	} else {
		ret = 0;
	}
	tf_writer_info(rc->w, "elapsed_ns", "%" PRIu64, now_mono_ns() - t0);
	if (opts->verbose >= 0) {
		uint64_t events = tf_writer_events(rc->w);

		tf_writer_flush(rc->w);
		cli_error("recorded %" PRIu64 " events (%" PRIu64 " lost) into '%s' (%" PRIu64
			  " bytes)",
			  events, rc->lost, rc->path, tf_writer_bytes(rc->w));
		if (opts->verbose > 0)
			rec_say_cost(events);
	}
out:
	if (rc->up) {
		drain(rc);
		utrace_uprobes__free(rc->up);
		rc->up = NULL;
	}
	utrace_session__close(rc->s);
	rc->s = NULL;
	the_rec = NULL;
	err = tf_writer_close(rc->w);
	rc->w = NULL;
	if (err && !rc->err) {
		cli_error("cannot write '%s': %s", rc->path, strerror(-err));
		ret = EXIT_TRACE;
	}
out_free:
	for (i = 0; i < RP_HASH; i++)
		while (rc->points[i]) {
			struct rpoint *p = rc->points[i];

			rc->points[i] = p->next;
			free(p);
		}
	runwind_free_all(&rc->unwinders);
	proto_dwarf_clear();
	free(rc->probes);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* reading a recording                                                       */
/* ------------------------------------------------------------------------ */

/* Open @path or say in one line why not. */
static struct tf_reader *open_rec(const char *path)
{
	char why[256];
	struct tf_reader *r = tf_reader_open(path, why, sizeof(why));

	if (!r)
		cli_error("%s: %s", path, why);
	return r;
}

/*
 * After reading: a recording cut short is said in one line. Cut inside a
 * block (a file truncated by hand, a disk full) or with a block that does
 * not decode: exit 2 after what could be read. Cut between blocks with no
 * END (a tracer killed): what it holds is whole; a note, exit 0.
 */
static int close_rec(struct tf_reader *r, const char *path, int ret, bool quiet)
{
	if (ret < 0 && tf_reader_corrupt(r)) {
		cli_error("%s: corrupt: %s", path, tf_reader_corrupt(r));
		ret = EXIT_USAGE;
	} else if (ret < 0) {
		cli_error("%s: %s", path, strerror(-ret));
		ret = EXIT_TRACE;
	} else if (tf_reader_corrupt(r)) {
		cli_error("%s: corrupt: %s; read up to there", path, tf_reader_corrupt(r));
		ret = EXIT_USAGE;
	} else if (tf_reader_truncated(r)) {
		cli_error("%s: truncated at byte %" PRIu64
			  " (inside a block): read up to the last complete buffer",
			  path, tf_reader_truncated(r));
		ret = EXIT_USAGE;
	} else if (!tf_reader_complete(r) && !quiet) {
		cli_error("note: %s: the recording was cut short (no end block: the tracer or "
			  "its target was killed); read up to its last complete buffer",
			  path);
	}
	if (tf_reader_lost(r) && !quiet)
		cli_error("note: %s: %" PRIu64 " events were lost while recording (--lossy)", path,
			  tf_reader_lost(r));
	tf_reader_close(r);
	return ret;
}

/* ---- replay -------------------------------------------------------------- */

struct replay {
	struct output out;
	struct chrome chrome;
	bool chrome_on;
	int strsize;
	int64_t mono_to_real;
	const struct tf_event *cur;
	struct tf_reader *rd;
	struct runwind *syms; /* -k: the frames' names, by pid */
};

/*
 * The symboliser of @pid: the CFI unwinder's modules (symbol tables,
 * separate debug files), read from the last maps the recording kept of
 * it: no process is needed, the files are (as uftrace's replay needs
 * them, or perf report's).
 */
static struct runwind *replay_sym(struct replay *rp, pid_t pid)
{
	struct runwind *s = runwind_find(rp->syms, pid);
	char *text, why[256];
	struct utrace_maps *m;

	if (s)
		return s;
	text = rp->rd ? tf_reader_maps(rp->rd, pid) : NULL;
	m = text ? utrace_maps__parse(text) : NULL;
	free(text);
	/* no maps kept: no unwinder, the addresses shown as they are */
	s = runwind_add(&rp->syms, pid, m ? utrace_unwind__new(pid, m, why, sizeof(why)) : NULL);
	utrace_maps__free(m);
	return s;
}

/* -k's frames of an entry: the lines (and JSON array) utrace -k prints */
static void replay_stack(struct replay *rp, const struct tf_event *ev, bool json)
{
	struct runwind *s = replay_sym(rp, ev->pid);
	FILE *f = rp->out.f;
	unsigned int i;

	if (json)
		fputs(", \"stack\": [", f);
	for (i = 0; i < ev->nr_stack; i++) {
		const char *name = NULL, *obj = NULL;
		char sym[320], buf[400];
		uint64_t off = 0;

		if (s && s->u) {
			name = utrace_unwind__name(s->u, ev->stack[i], false, &off);
			obj = utrace_unwind__module(s->u, ev->stack[i]);
		}
		if (name)
			snprintf(sym, sizeof(sym), "%.*s+0x%" PRIx64,
				 unwind_name_len(output_name(&rp->out, name)),
				 output_name(&rp->out, name), off);
		else
			snprintf(sym, sizeof(sym), "0x%" PRIx64, ev->stack[i]);
		if (json) {
			snprintf(buf, sizeof(buf), "%s:%s", obj ? obj : "?", sym);
			fputs(i ? ", " : "", f);
			json_str(f, buf, strlen(buf));
		} else {
			fprintf(f, " > %s (%s) [0x%" PRIx64 "]\n", sym, obj ? obj : "?",
				ev->stack[i]);
		}
	}
	if (json)
		fputc(']', f);
}

static const char *ev_fn(const struct tf_point *p)
{
	return p->symbol ? p->symbol : p->name;
}

/* strings are served from the copies made at the hit (as cmd-trace.c's rec_read()) */
static ssize_t ev_read(void *c, uint64_t addr, void *buf, size_t len)
{
	const struct tf_event *ev = c;
	unsigned int i;

	for (i = 0; i < 7; i++) {
		uint64_t base = i < 6 ? ev->args[i] : ev->retval;
		size_t n = ev->str_len[i], k;

		if (!ev->str[i] || addr < base || addr > base + n || !len)
			continue;
		k = n - (size_t)(addr - base);
		if (k > len - 1)
			k = len - 1;
		memcpy(buf, ev->str[i] + (addr - base), k);
		((char *)buf)[k] = 0;
		return (ssize_t)k + 1;
	}
	return -EFAULT;
}

static void ev_regs(const struct tf_event *ev, struct proto_regs *r)
{
	memcpy(r->args, ev->args, sizeof(r->args));
	r->sp = 0;
	r->read = ev_read;
	r->ctx = (void *)ev;
}

static void replay_json_head(struct replay *rp, const struct tf_event *ev, const char *type)
{
	FILE *f = rp->out.f;

	fprintf(f,
		"{\"ts_ns\": %" PRIu64 ", \"pid\": %d, \"tid\": %d, \"type\": \"%s\", \"probe\": ",
		(uint64_t)((int64_t)ev->ts_ns + rp->mono_to_real), (int)ev->pid, (int)ev->tid,
		type);
	json_str(f, ev->point->name, strlen(ev->point->name));
	fputs(", \"name\": ", f);
	json_str(f, ev_fn(ev->point), strlen(ev_fn(ev->point)));
}

static void replay_entry(struct replay *rp, const struct tf_event *ev)
{
	const struct tf_point *pt = ev->point;
	uint64_t real = (uint64_t)((int64_t)ev->ts_ns + rp->mono_to_real);
	struct proto_regs r;
	struct proto_vals vals;
	FILE *f = rp->out.f;
	int i;

	if (pt->kind == TF_ENTRY && pt->offset) {
		/* -u inside a function: the point's name only */
		if (rp->chrome_on) {
			chrome_instant(&rp->chrome, ev->pid, ev->tid, ev->ts_ns, pt->name, pt->name,
				       NULL);
		} else if (rp->out.format == CLI_FMT_JSON) {
			replay_json_head(rp, ev, "probe");
			fputs("}\n", f);
		} else {
			output_prefix(&rp->out, real, ev->tid, true);
			fprintf(f, "%s\n", pt->name);
		}
		return;
	}
	ev_regs(ev, &r);
	proto_format_args(&pt->proto, &r, rp->strsize, &vals);
	if (rp->chrome_on) {
		char *a = chrome_call_args(&vals, NULL, false);

		if (pt->kind == TF_ENTRY)
			chrome_instant(&rp->chrome, ev->pid, ev->tid, ev->ts_ns, ev_fn(pt),
				       pt->name, a);
		else
			chrome_begin(&rp->chrome, ev->pid, ev->tid, ev->ts_ns, ev_fn(pt), pt->name,
				     a);
		free(a);
	} else if (rp->out.format == CLI_FMT_JSON) {
		replay_json_head(rp, ev, "entry");
		fputs(", \"args\": [", f);
		for (i = 0; i < vals.nr; i++) {
			fputs(i ? ", " : "", f);
			proto_val_print_json(f, &vals.v[i]);
		}
		fputc(']', f);
		if (ev->nr_stack)
			replay_stack(rp, ev, true);
		fputs("}\n", f);
	} else {
		output_prefix(&rp->out, real, ev->tid, true);
		fprintf(f, "%s(", ev_fn(pt));
		for (i = 0; i < vals.nr; i++) {
			fputs(i ? ", " : "", f);
			proto_val_print_text(f, &vals.v[i]);
		}
		if (rp->out.one_line && pt->kind == TF_FUNC && !ev->nr_stack) {
			output_call_open(&rp->out, ev->tid, (uintptr_t)pt, ev->depth);
		} else {
			fputs(")\n", f);
			if (ev->nr_stack)
				replay_stack(rp, ev, false);
		}
	}
	proto_vals_clear(&vals);
}

static void replay_return(struct replay *rp, const struct tf_event *ev)
{
	const struct tf_point *pt = ev->point;
	uint64_t real = (uint64_t)((int64_t)ev->ts_ns + rp->mono_to_real);
	struct proto_regs r;
	struct proto_val v;
	FILE *f = rp->out.f;
	bool is_void = pt->proto.ret == PK_VOID;

	ev_regs(ev, &r);
	proto_format_ret(&pt->proto, ev->retval, &r, rp->strsize, &v);
	if (rp->chrome_on) {
		char *a = chrome_call_args(NULL, &v, false);

		if (pt->kind == TF_RET)
			chrome_instant(&rp->chrome, ev->pid, ev->tid, ev->ts_ns, ev_fn(pt),
				       pt->name, a);
		else
			chrome_end(&rp->chrome, ev->pid, ev->tid, ev->ts_ns, ev_fn(pt), pt->name,
				   a);
		free(a);
	} else if (rp->out.format == CLI_FMT_JSON) {
		replay_json_head(rp, ev, "return");
		fputs(", \"ret\": ", f);
		if (is_void)
			fputs("null", f);
		else
			proto_val_print_json(f, &v);
		fprintf(f, ", \"dur_ns\": %" PRIu64 "}\n", ev->dur_ns);
	} else {
		if (rp->out.one_line && pt->kind == TF_FUNC &&
		    output_call_close(&rp->out, ev->tid, (uintptr_t)pt, ev->depth)) {
			fputs(") = ", f);
		} else if (rp->out.one_line && pt->kind == TF_FUNC) {
			output_prefix(&rp->out, real, ev->tid, true);
			fprintf(f, "<... %s resumed> ) = ", ev_fn(pt));
		} else {
			output_prefix(&rp->out, real, ev->tid, true);
			fprintf(f, "%s() = ", ev_fn(pt));
		}
		if (is_void)
			fputs("<void>", f);
		else
			proto_val_print_text(f, &v);
		output_duration(&rp->out, ev->dur_ns);
		fputc('\n', f);
	}
	proto_val_clear(&v);
}

static int replay_ev(const struct tf_event *ev, void *data)
{
	struct replay *rp = data;

	if (ev->type == TF_EV_ENTRY)
		replay_entry(rp, ev);
	else
		replay_return(rp, ev);
	return ferror(rp->out.f) ? -EIO : 0;
}

/* ---- report, graph, folded ---------------------------------------------- */

/* a node of the call tree: one path of probed calls from a thread's root */
struct node {
	const struct tf_point *point; /* NULL: the root */
	struct node *parent, *child, *sibling;
	uint64_t calls, total_ns, self_ns;
};

/* per function (point name) */
struct fstat {
	const char *name; /* the point's name: the row's key */
	const char *fn; /* what is shown: the function */
	uint64_t calls, timed, total_ns, self_ns, min_ns, max_ns;
};

struct frame {
	const struct tf_point *point;
	struct node *node;
	uint64_t ts, child_ns;
};

struct tstack {
	pid_t tid;
	struct frame *f;
	size_t n, cap;
};

struct rep {
	struct node root;
	struct fstat *fs; /* by point id -> index in @fs */
	int *fs_of_point;
	size_t nr_fs;
	struct tstack *ts;
	size_t nr_ts;
	uint64_t unmatched; /* returns with no entry on their thread's stack */
	uint64_t unwound; /* calls whose return never came (longjmp, exceptions) */
	bool depth_ok; /* the records' depths count exactly our frames: no -r point */
};

/*
 * Calls unwound by longjmp (or an exception) never return: the records'
 * depth says so. Every backend reports at an entry the thread's open
 * probed calls below it, and at a return the returning call's index;
 * the unwound frames are pruned at the next entry, so the first entry
 * after a longjmp still counts them and the ones after it do not. The
 * unwound frames are the ones right below the most recent call: at an
 * entry of depth @d, the d - 1 oldest frames and the newest are real;
 * at a return of depth @d of frame @k, frames d..k-1 are gone. Depths
 * are exact up to the backends' max_depth (64).
 */
static struct node *node_child(struct node *parent, const struct tf_point *pt);

static void prune(struct rep *r, struct tstack *t, size_t keep_below, size_t k)
{
	struct node *parent, *n, *nn;

	/* keep frames [0, keep_below) and frame k; drop keep_below..k-1 */
	if (keep_below >= k)
		return;
	parent = keep_below ? t->f[keep_below - 1].node : &r->root;
	n = t->f[k].node;
	r->unwound += k - keep_below;
	t->f[keep_below] = t->f[k];
	t->n = keep_below + 1 + (t->n - k - 1);
	memmove(&t->f[keep_below + 1], &t->f[k + 1], (t->n - keep_below - 1) * sizeof(*t->f));
	/*
	 * The call was put under an unwound one (its entry came first): it
	 * moves to its real caller. It has no callee yet (a callee's entry
	 * would have pruned before), so only its own count moves.
	 */
	if (n->parent == parent || n->child || !(nn = node_child(parent, n->point)))
		return;
	nn->calls++;
	t->f[keep_below].node = nn;
	if (--n->calls || n->total_ns) {
		return;
	}
	{
		struct node **pp = &n->parent->child;

		while (*pp != n)
			pp = &(*pp)->sibling;
		*pp = n->sibling;
		free(n);
	}
}

static struct tstack *rep_stack(struct rep *r, pid_t tid)
{
	size_t i;
	struct tstack *t;

	for (i = 0; i < r->nr_ts; i++)
		if (r->ts[i].tid == tid)
			return &r->ts[i];
	t = realloc(r->ts, (r->nr_ts + 1) * sizeof(*t));
	if (!t)
		return NULL;
	r->ts = t;
	t = &r->ts[r->nr_ts++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	return t;
}

static struct node *node_child(struct node *parent, const struct tf_point *pt)
{
	struct node *n;

	for (n = parent->child; n; n = n->sibling)
		if (n->point == pt || (n->point && !strcmp(n->point->name, pt->name)))
			return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->point = pt;
	n->parent = parent;
	n->sibling = parent->child;
	parent->child = n;
	return n;
}

static void node_free(struct node *n)
{
	while (n->child) {
		struct node *c = n->child;

		n->child = c->sibling;
		node_free(c);
		free(c);
	}
}

static struct fstat *rep_fstat(struct rep *r, const struct tf_point *pt)
{
	int i = r->fs_of_point[pt->id];

	return &r->fs[i];
}

static void fstat_time(struct fstat *s, uint64_t dur, uint64_t self)
{
	if (!s->timed || dur < s->min_ns)
		s->min_ns = dur;
	if (dur > s->max_ns)
		s->max_ns = dur;
	s->timed++;
	s->total_ns += dur;
	s->self_ns += self;
}

static int rep_ev(const struct tf_event *ev, void *data)
{
	struct rep *r = data;
	struct tstack *t = rep_stack(r, ev->tid);
	struct fstat *s = rep_fstat(r, ev->point);
	struct node *parent, *n;
	size_t k;

	if (!t)
		return -ENOMEM;
	if (ev->type == TF_EV_ENTRY && r->depth_ok && t->n <= 64 && ev->depth < t->n) {
		if (!ev->depth) {
			r->unwound += t->n;
			t->n = 0;
		} else {
			prune(r, t, ev->depth - 1, t->n - 1);
		}
	}
	parent = t->n ? t->f[t->n - 1].node : &r->root;
	if (ev->type == TF_EV_ENTRY) {
		s->calls++;
		n = node_child(parent, ev->point);
		if (!n)
			return -ENOMEM;
		n->calls++;
		if (ev->point->kind == TF_ENTRY)
			return 0; /* -u: no return comes */
		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 64;
			struct frame *nf = realloc(t->f, cap * sizeof(*nf));

			if (!nf)
				return -ENOMEM;
			t->f = nf;
			t->cap = cap;
		}
		t->f[t->n++] = (struct frame){ ev->point, n, ev->ts_ns, 0 };
		return 0;
	}
	if (ev->point->kind == TF_RET) {
		/* -r: the return is the call */
		s->calls++;
		n = node_child(parent, ev->point);
		if (!n)
			return -ENOMEM;
		n->calls++;
		n->total_ns += ev->dur_ns;
		n->self_ns += ev->dur_ns;
		fstat_time(s, ev->dur_ns, ev->dur_ns);
		if (t->n)
			t->f[t->n - 1].child_ns += ev->dur_ns;
		return 0;
	}
	/* the innermost open call of this point; those above it were unwound (longjmp) */
	for (k = t->n; k-- > 0;)
		if (t->f[k].point == ev->point)
			break;
	if (k == (size_t)-1) {
		r->unmatched++;
		return 0;
	}
	r->unwound += t->n - 1 - k;
	t->n = k + 1;
	if (r->depth_ok && k < 64 && ev->depth < k) {
		prune(r, t, ev->depth, k);
		k = ev->depth;
	}
	{
		struct frame *f = &t->f[k];
		uint64_t dur = ev->dur_ns ? ev->dur_ns : ev->ts_ns > f->ts ? ev->ts_ns - f->ts : 0;
		uint64_t self = dur > f->child_ns ? dur - f->child_ns : 0;

		fstat_time(s, dur, self);
		f->node->total_ns += dur;
		f->node->self_ns += self;
		t->n = k;
		if (k)
			t->f[k - 1].child_ns += dur;
	}
	return 0;
}

static int rep_init(struct rep *r, struct tf_reader *rd)
{
	int i, n = tf_reader_nr_points(rd);
	const char *v;
	size_t j;

	memset(r, 0, sizeof(*r));
	r->fs = calloc((size_t)n + 1, sizeof(*r->fs));
	r->fs_of_point = calloc((size_t)n + 1, sizeof(int));
	if (!r->fs || !r->fs_of_point)
		return -ENOMEM;
	/* a function probed in several processes, or by several SPECs: one row */
	for (i = 0; i < n; i++) {
		const struct tf_point *pt = tf_reader_point(rd, i);

		for (j = 0; j < r->nr_fs && strcmp(r->fs[j].name, pt->name); j++)
			;
		if (j == r->nr_fs) {
			r->fs[r->nr_fs].fn = ev_fn(pt);
			r->fs[r->nr_fs++].name = pt->name;
		}
		r->fs_of_point[i] = (int)j;
	}
	v = tf_reader_info(rd, "depth");
	r->depth_ok = v && !strcmp(v, "exact");
	for (i = 0; i < n; i++)
		if (tf_reader_point(rd, i)->kind == TF_RET)
			r->depth_ok = false;
	return 0;
}

static void rep_clear(struct rep *r)
{
	size_t i;

	node_free(&r->root);
	for (i = 0; i < r->nr_ts; i++)
		free(r->ts[i].f);
	free(r->ts);
	free(r->fs);
	free(r->fs_of_point);
}

/* uftrace's time column: "  1.234 us" */
static void put_time(FILE *f, uint64_t ns)
{
	static const char *const unit[] = { "ns", "us", "ms", " s" };
	double v = (double)ns;
	int u = 0;

	while (v >= 1000.0 && u < 3) {
		v /= 1000.0;
		u++;
	}
	if (u == 0)
		fprintf(f, "%7" PRIu64 " %s", ns, unit[0]);
	else
		fprintf(f, "%7.3f %s", v, unit[u]);
}

static const char *sort_key = "total";

static int fs_cmp(const void *a, const void *b)
{
	const struct fstat *x = a, *y = b;
	uint64_t vx, vy;

	if (!strcmp(sort_key, "name"))
		return strcmp(x->fn, y->fn);
	if (!strcmp(sort_key, "calls"))
		vx = x->calls, vy = y->calls;
	else if (!strcmp(sort_key, "self"))
		vx = x->self_ns, vy = y->self_ns;
	else if (!strcmp(sort_key, "avg"))
		vx = x->timed ? x->total_ns / x->timed : 0,
		vy = y->timed ? y->total_ns / y->timed : 0;
	else if (!strcmp(sort_key, "min"))
		vx = x->min_ns, vy = y->min_ns;
	else if (!strcmp(sort_key, "max"))
		vx = x->max_ns, vy = y->max_ns;
	else
		vx = x->total_ns, vy = y->total_ns;
	if (vx != vy)
		return vx > vy ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void print_report(FILE *f, struct rep *r)
{
	size_t i;

	/* a sorted copy: fs_of_point indexes @fs */
	{
		struct fstat *rows = malloc((r->nr_fs + 1) * sizeof(*rows));

		if (!rows)
			return;
		memcpy(rows, r->fs, r->nr_fs * sizeof(*rows));
		qsort(rows, r->nr_fs, sizeof(*rows), fs_cmp);
		fprintf(f, "  Total time   Self time       Calls     Average         Min         "
			   "Max  Function\n");
		fprintf(f, "  ==========  ==========  ==========  ==========  ==========  "
			   "==========  ====================\n");
		for (i = 0; i < r->nr_fs; i++) {
			const struct fstat *s = &rows[i];

			if (!s->calls)
				continue;
			fputs("  ", f);
			put_time(f, s->total_ns);
			fputs("  ", f);
			put_time(f, s->self_ns);
			fprintf(f, "  %10" PRIu64 "  ", s->calls);
			put_time(f, s->timed ? s->total_ns / s->timed : 0);
			fputs("  ", f);
			put_time(f, s->min_ns);
			fputs("  ", f);
			put_time(f, s->max_ns);
			fprintf(f, "  %s\n", s->fn);
		}
		free(rows);
	}
}

static int node_cmp(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return strcmp(x->point->name, y->point->name);
}

/* uftrace graph's layout: "  1.234 ms :  +-(2) name", '|' where siblings follow */
static void print_node(FILE *f, const struct node *n, char *prefix, size_t plen, bool last)
{
	struct node **kids;
	size_t nr = 0, i;
	const struct node *c;

	fputc(' ', f);
	put_time(f, n->total_ns);
	fprintf(f, " : %s%s(%" PRIu64 ") %s\n", prefix, n->parent->point ? "+-" : "", n->calls,
		ev_fn(n->point));
	for (c = n->child; c; c = c->sibling)
		nr++;
	if (!nr)
		return;
	kids = malloc(nr * sizeof(*kids));
	if (!kids)
		return;
	for (i = 0, c = n->child; c; c = c->sibling)
		kids[i++] = (struct node *)c;
	qsort(kids, nr, sizeof(*kids), node_cmp);
	if (plen + 4 < 4096) {
		size_t add = n->parent->point ? 2 : 1;

		memcpy(prefix + plen, n->parent->point ? (last ? "  " : "| ") : " ", add);
		prefix[plen + add] = 0;
		for (i = 0; i < nr; i++)
			print_node(f, kids[i], prefix, plen + add, i + 1 == nr);
		prefix[plen] = 0;
	}
	free(kids);
}

static void print_graph(FILE *f, struct rep *r)
{
	static char prefix[4096];
	struct node **kids;
	struct node *c;
	size_t nr = 0, i;

	fputs("# Function Call Graph (every thread's probed calls)\n", f);
	fputs("#  TOTAL TIME   FUNCTION\n", f);
	for (c = r->root.child; c; c = c->sibling)
		nr++;
	kids = malloc((nr + 1) * sizeof(*kids));
	if (!kids)
		return;
	for (i = 0, c = r->root.child; c; c = c->sibling)
		kids[i++] = c;
	qsort(kids, nr, sizeof(*kids), node_cmp);
	for (i = 0; i < nr; i++) {
		prefix[0] = 0;
		print_node(f, kids[i], prefix, 0, i + 1 == nr);
	}
	free(kids);
}

/* flamegraph.pl's input: "a;b;c SELF_NS", one line per path */
static void print_folded(FILE *f, const struct node *n, char *path, size_t len)
{
	const struct node *c;
	size_t add = 0;

	if (n->point) {
		const char *name = ev_fn(n->point);

		add = strlen(name) + (len ? 1 : 0);
		if (len + add + 1 >= 65536)
			return;
		snprintf(path + len, 65536 - len, "%s%s", len ? ";" : "", name);
		if (n->self_ns || (!n->child && n->calls))
			fprintf(f, "%s %" PRIu64 "\n", path, n->self_ns);
	}
	for (c = n->child; c; c = c->sibling)
		print_folded(f, c, path, len + add);
	path[len] = 0;
}

/* ---- the sub-commands' arguments ----------------------------------------- */

static void read_usage(const char *cmd)
{
	if (!strcmp(cmd, "replay"))
		cli_error(
			"usage: utrace replay [--format text|json|chrome] [--one-line] [-t|-tt|-ttt] [-T] "
			"[-S N] [-o OUT] FILE");
	else if (!strcmp(cmd, "report"))
		cli_error("usage: utrace report [--graph] [-s calls|total|self|avg|min|max|name] "
			  "[-o OUT] FILE");
	else
		cli_error("usage: utrace dump --chrome|--folded [-o OUT] FILE");
}

int cmd_read(int argc, char **argv)
{
	const char *cmd = argv[0], *file = NULL, *outpath = NULL;
	struct replay rp = { 0 };
	bool graph = false, chrome = false, folded = false;
	struct tf_reader *rd;
	const char *v;
	FILE *out = stdout;
	int i, ret = 0;

	rp.out.format = CLI_FMT_TEXT;
	rp.strsize = -1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--graph") && !strcmp(cmd, "report"))
			graph = true;
		else if (!strcmp(a, "--chrome") && !strcmp(cmd, "dump"))
			chrome = true;
		else if (!strcmp(a, "--folded") && !strcmp(cmd, "dump"))
			folded = true;
		else if (!strcmp(a, "-o") && i + 1 < argc)
			outpath = argv[++i];
		else if (!strcmp(a, "-s") && i + 1 < argc && !strcmp(cmd, "report")) {
			sort_key = argv[++i];
			if (strcmp(sort_key, "calls") && strcmp(sort_key, "total") &&
			    strcmp(sort_key, "self") && strcmp(sort_key, "avg") &&
			    strcmp(sort_key, "min") && strcmp(sort_key, "max") &&
			    strcmp(sort_key, "name")) {
				cli_error("report: unknown sort key '%s' (calls, total, self, avg, "
					  "min, max, name)",
					  sort_key);
				return EXIT_USAGE;
			}
		} else if (!strncmp(a, "--format", 8) && !strcmp(cmd, "replay")) {
			const char *f = a[8] == '=' ? a + 9 : i + 1 < argc ? argv[++i] : "";

			if (!strcmp(f, "json"))
				rp.out.format = CLI_FMT_JSON;
			else if (!strcmp(f, "chrome"))
				rp.out.format = CLI_FMT_CHROME;
			else if (strcmp(f, "text")) {
				cli_error("replay: unknown format '%s' (text, json, chrome)", f);
				return EXIT_USAGE;
			}
		} else if (!strcmp(cmd, "replay") &&
			   (!strcmp(a, "-t") || !strcmp(a, "-tt") || !strcmp(a, "-ttt")))
			rp.out.timestamps = (int)strlen(a) - 1;
		else if (!strcmp(cmd, "replay") && !strcmp(a, "-T"))
			rp.out.durations = true;
		else if (!strcmp(cmd, "replay") && !strcmp(a, "--one-line"))
			rp.out.one_line = true;
		else if (!strcmp(cmd, "replay") && !strcmp(a, "-S") && i + 1 < argc)
			rp.strsize = atoi(argv[++i]);
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			read_usage(cmd);
			return 0;
		} else if (a[0] == '-' && a[1]) {
			cli_error("%s: unknown option '%s'", cmd, a);
			read_usage(cmd);
			return EXIT_USAGE;
		} else if (!file)
			file = a;
		else {
			cli_error("%s: one recording at a time ('%s' and '%s')", cmd, file, a);
			return EXIT_USAGE;
		}
	}
	if (!strcmp(cmd, "dump") && chrome == folded) {
		read_usage(cmd);
		return EXIT_USAGE;
	}
	if (!file)
		file = DEFAULT_FILE;
	rd = open_rec(file);
	if (!rd)
		return EXIT_USAGE;
	if (outpath) {
		out = fopen(outpath, "we");
		if (!out) {
			cli_error("cannot create '%s': %s", outpath, strerror(errno));
			tf_reader_close(rd);
			return EXIT_USAGE;
		}
	}
	v = tf_reader_info(rd, "mono_to_real");
	rp.mono_to_real = v ? strtoll(v, NULL, 10) : 0;
	if (rp.strsize < 0) {
		v = tf_reader_info(rd, "strsize");
		rp.strsize = v ? atoi(v) : 32;
	}
	rp.out.f = out;
	if (!strcmp(cmd, "replay") || chrome) {
		if (chrome || rp.out.format == CLI_FMT_CHROME) {
			rp.chrome_on = true;
			chrome_open(&rp.chrome, out);
		}
		rp.out.one_line = rp.out.one_line && rp.out.format == CLI_FMT_TEXT;
		rp.rd = rd;
		ret = tf_reader_events(rd, replay_ev, &rp);
		output_break(&rp.out); /* a call the recording ended in */
		if (rp.chrome_on)
			chrome_close(&rp.chrome);
		runwind_free_all(&rp.syms);
	} else {
		struct rep r;

		ret = rep_init(&r, rd);
		if (!ret)
			ret = tf_reader_events(rd, rep_ev, &r);
		if (ret >= 0 || tf_reader_corrupt(rd)) {
			if (folded) {
				static char path[65536];

				path[0] = 0;
				print_folded(out, &r.root, path, 0);
			} else if (graph) {
				print_graph(out, &r);
			} else {
				print_report(out, &r);
			}
		}
		rep_clear(&r);
	}
	if (out != stdout && fclose(out) && ret >= 0) {
		cli_error("cannot write '%s': %s", outpath, strerror(errno));
		ret = EXIT_TRACE;
	}
	return close_rec(rd, file, ret, false);
}
