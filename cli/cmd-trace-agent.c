/* SPDX-License-Identifier: MIT */
/*
 * cmd-trace-agent.c - utrace -b agent -f/-u/-r: function tracing with the
 * in-process agent (libutrace-agent.so, docs/agent.md). Tracer process.
 *
 * The command is started with the agent preloaded (lib/agent-host.c); its
 * constructor waits before main() while the SPECs are resolved against the
 * live image (the executable and the libraries loaded at start), planned,
 * relocated and armed through the arena. Then main() runs with the probes
 * in place, and handlers run in the probed threads:
 *
 *  - event lines: entry and return records in per-thread rings of the
 *    shared arena, drained every millisecond or so and printed with the
 *    same text / JSON shapes as the ptrace backend (cmd-trace.c). Argument
 *    strings are read from the live process when the record is drained, so
 *    a buffer changed in between shows its newer contents. A full ring
 *    counts drops: they come out as "lost" records and a count at exit.
 *  - -c / -H: no event traffic at all; hits, returns and log2 latency
 *    histograms are counted in the target and read at exit. Total, min and
 *    max times are derived from the histogram (power-of-two resolution).
 *
 * Attach mode (-p PID, one process): utrace_inject() loads the agent into
 * the running process (seize, dlopen, init with the arena's fd, detach: no
 * ptrace stop remains), the probes are armed through the arena, and on
 * SIGINT or -d a DETACH disarms them all; the sites' bytes are then checked
 * against their originals.
 *
 * Not here (yet): several pids, -k, --inject, -F, Chrome output, libraries
 * loaded later with dlopen.
 */
#include <errno.h>
#include <linux/futex.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utrace/inject.h"
#include "utrace/utrace.h"
#include "agent-host.h"
#include "aggr.h"
#include "cli.h"
#include "output.h"
#include "protos.h"
#include "trace-agent.h"

#define AGENT_MAX_PROBES 512
#define AGENT_MAX_THREADS 128
#define AGENT_RING_RECORDS 8192

struct apoint {
	char *name; /* "s-trace:work" */
	char *object; /* path */
	char *symbol; /* NULL for an address */
	enum cli_probe_kind kind;
	bool at_entry;
	const struct proto *proto;
	int id;
};

struct atracer {
	struct cli_opts *opts;
	struct ahost h;
	struct output out;
	bool quiet;
	struct apoint *pts; /* by probe id */
	int nr_pts;
	int64_t mono_to_real;
	uint64_t lost;
	pid_t pid; /* the command (still known once reaped) */
	bool exited;
	struct utrace_maps *maps; /* at start: read-only file data after the exit */
};

static volatile sig_atomic_t agent_signal;

static void on_agent_interrupt(int sig)
{
	agent_signal = sig;
}

/* Does @path name a regular file that only its owner or root can change? */
static bool safe_file(const char *path)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return false;
	return st.st_uid == 0 || st.st_uid == geteuid();
}

const char *trace_agent_path(void)
{
	static char path[PATH_MAX + 64];
	char exe[PATH_MAX], real[PATH_MAX], *slash;
	const char *env = getenv("UTRACE_AGENT");
	ssize_t n;

	if (env && *env)
		return safe_file(env) ? env : NULL;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			/* the build tree: build/cli/utrace, build/agent/libutrace-agent.so */
			snprintf(path, sizeof(path), "%s/../agent/libutrace-agent.so", exe);
			/* absolute, no '..': utrace_inject() checks every directory */
			if (safe_file(path) && realpath(path, real)) {
				snprintf(path, sizeof(path), "%s", real);
				return path;
			}
		}
	}
#ifdef UTRACE_LIBDIR
	snprintf(path, sizeof(path), "%s/utrace/libutrace-agent.so", UTRACE_LIBDIR);
	if (safe_file(path))
		return path;
#endif
	return NULL;
}

const char *trace_agent_unsupported(const struct cli_opts *o)
{
	if (o->nr_pids > 1)
		return "attaching to several processes (-p PID,PID)";
	if (o->stack)
		return "-k";
	if (o->nr_injects)
		return "--inject";
	if (o->follow_forks)
		return "-F";
	if (o->format == CLI_FMT_CHROME)
		return "--format chrome";
	if (o->nr_modules)
		return "-m";
	if (o->syscalls)
		return "-s";
	return NULL;
}

static bool find_exe(const char *cmd, char *buf, size_t size)
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

static uint64_t real_ns(struct atracer *t, uint64_t mono_ns)
{
	return (uint64_t)((int64_t)mono_ns + t->mono_to_real);
}

/*
 * Target memory for argument strings. Records drained after the command has
 * exited (the last ones, or all of a short run) can still show what lies in
 * read-only file mappings (string literals), read from the file itself.
 */
static ssize_t pid_read(void *c, uint64_t addr, void *buf, size_t len)
{
	struct atracer *t = c;
	ssize_t n = -ESRCH;
	size_t i;

	if (!t->exited)
		n = utrace_mem__read(t->pid, addr, buf, len);
	if (n > 0 || !t->maps)
		return n;
	for (i = 0; i < t->maps->nr; i++) {
		const struct utrace_map *m = &t->maps->maps[i];
		FILE *f;

		if (addr < m->start || addr >= m->end)
			continue;
		if (!m->path || m->path[0] != '/' || m->deleted || (m->prot & UTRACE_MAP_WRITE))
			return n;
		if (len > m->end - addr)
			len = m->end - addr;
		f = fopen(m->path, "re");
		if (!f)
			return n;
		if (fseeko(f, (off_t)(m->offset + (addr - m->start)), SEEK_SET) == 0)
			n = (ssize_t)fread(buf, 1, len, f);
		fclose(f);
		return n > 0 ? n : -EIO;
	}
	return n;
}

static const char *fn_name(const struct apoint *p)
{
	return p->symbol ? p->symbol : p->name;
}

static void json_head(struct atracer *t, const struct apoint *p, uint64_t ts, uint32_t tid,
		      const char *type)
{
	FILE *f = t->out.f;

	fprintf(f,
		"{\"ts_ns\": %" PRIu64 ", \"pid\": %d, \"tid\": %u, \"type\": \"%s\", \"probe\": ",
		real_ns(t, ts), (int)t->pid, tid, type);
	json_str(f, p->name, strlen(p->name));
	fputs(", \"name\": ", f);
	json_str(f, fn_name(p), strlen(fn_name(p)));
}

static void emit_lost(struct atracer *t, uint64_t n)
{
	if (t->out.format == CLI_FMT_JSON)
		fprintf(t->out.f,
			"{\"ts_ns\": %" PRIu64 ", \"pid\": %d, \"tid\": %d, \"type\": \"lost\", "
			"\"probe\": \"\", \"name\": \"\", \"count\": %" PRIu64 "}\n",
			now_realtime_ns(), (int)t->pid, (int)t->pid, n);
	else
		fprintf(t->out.f, "utrace: %" PRIu64 " events lost (a ring buffer was full)\n", n);
	t->lost += n;
}

static void on_event(const struct utrace_abi_event *ev, void *data)
{
	struct atracer *t = data;
	const struct apoint *p;
	struct proto_regs r = { .read = pid_read, .ctx = t };
	FILE *f = t->out.f;
	int i;

	if (ev->kind == UTRACE_EV_LOST || ev->probe >= (uint32_t)t->nr_pts)
		return;
	p = &t->pts[ev->probe];
	for (i = 0; i < 6; i++)
		r.args[i] = ev->args[i];
	if (ev->kind == UTRACE_EV_ENTRY) {
		struct proto_vals vals;

		if (!p->at_entry) {
			if (t->out.format == CLI_FMT_JSON) {
				json_head(t, p, ev->ts, ev->tid, "probe");
				fputs("}\n", f);
			} else {
				output_prefix(&t->out, real_ns(t, ev->ts), (pid_t)ev->tid, true);
				fprintf(f, "%s\n", p->name);
			}
			return;
		}
		proto_format_args(p->proto, &r, t->opts->strsize, &vals);
		if (t->out.format == CLI_FMT_JSON) {
			json_head(t, p, ev->ts, ev->tid, "entry");
			fputs(", \"args\": [", f);
			for (i = 0; i < vals.nr; i++) {
				fputs(i ? ", " : "", f);
				proto_val_print_json(f, &vals.v[i]);
			}
			fputs("]}\n", f);
		} else {
			output_prefix(&t->out, real_ns(t, ev->ts), (pid_t)ev->tid, true);
			fprintf(f, "%s(", fn_name(p));
			for (i = 0; i < vals.nr; i++) {
				fputs(i ? ", " : "", f);
				proto_val_print_text(f, &vals.v[i]);
			}
			fputs(")\n", f);
		}
		proto_vals_clear(&vals);
	} else if (ev->kind == UTRACE_EV_RETURN) {
		struct proto_val v;
		bool is_void = p->proto->ret == PK_VOID;

		proto_format_ret(p->proto, ev->args[0], &r, t->opts->strsize, &v);
		if (t->out.format == CLI_FMT_JSON) {
			json_head(t, p, ev->ts, ev->tid, "return");
			fputs(", \"ret\": ", f);
			if (is_void)
				fputs("null", f);
			else
				proto_val_print_json(f, &v);
			fprintf(f, ", \"dur_ns\": %" PRIu64 "}\n", ev->dur);
		} else {
			output_prefix(&t->out, real_ns(t, ev->ts), (pid_t)ev->tid, true);
			fprintf(f, "%s() = ", fn_name(p));
			if (is_void)
				fputs("<void>", f);
			else
				proto_val_print_text(f, &v);
			output_duration(&t->out, ev->dur);
			fputc('\n', f);
		}
		proto_val_clear(&v);
	}
}

/* Drain the rings; report drops seen since the last call. */
static void drain(struct atracer *t)
{
	uint64_t drops;

	ahost_drain(&t->h, t->quiet ? NULL : on_event, t);
	drops = ahost_drops(&t->h);
	if (drops > t->lost)
		emit_lost(t, drops - t->lost);
}

static int add_points(struct atracer *t, struct utrace_image *img, const struct cli_probe *cp)
{
	struct utrace_spec spec;
	struct utrace_match *m = NULL;
	size_t nr = 0, k;
	bool pending = false;
	char errbuf[256];
	int err, added = 0;

	if (utrace_spec__parse(cp->spec, &spec, errbuf, sizeof(errbuf))) {
		cli_error("%s", errbuf[0] ? errbuf : "bad spec");
		return -EXIT_USAGE;
	}
	err = utrace_image__resolve(img, &spec, &m, &nr, &pending);
	utrace_spec__clear(&spec);
	if (err) {
		cli_error("probe '%s': %s", cp->spec, strerror(-err));
		return -EXIT_USAGE;
	}
	for (k = 0; k < nr; k++) {
		const struct utrace_object *o = utrace_image__object(img, m[k].object);
		struct apoint *p = &t->pts[t->nr_pts];
		const char *base;
		uint32_t flags = 0;
		char buf[512];
		int id;

		if (m[k].sym_flags & UTRACE_SYM_ALIAS)
			continue;
		p->kind = cp->kind;
		p->at_entry = m[k].offset == 0;
		p->object = strdup(o && o->path ? o->path : "?");
		p->symbol = m[k].symbol ? strdup(m[k].symbol) : NULL;
		base = strrchr(p->object, '/');
		base = base ? base + 1 : p->object;
		if (m[k].symbol && m[k].offset)
			snprintf(buf, sizeof(buf), "%s:%s+0x%" PRIx64, base, m[k].symbol,
				 m[k].offset);
		else if (m[k].symbol)
			snprintf(buf, sizeof(buf), "%s:%s", base, m[k].symbol);
		else
			snprintf(buf, sizeof(buf), "%s:0x%" PRIx64, base, m[k].file_addr);
		p->name = strdup(buf);
		p->proto = p->symbol ? proto_dwarf(p->object, p->symbol) : NULL;
		if (!p->proto && p->symbol)
			p->proto = proto_find(p->symbol);
		if (!p->proto)
			p->proto = proto_unknown();
		if (cp->kind == CLI_PROBE_ENTRY || !p->at_entry) {
			flags = UTRACE_PF_COUNT | (t->quiet ? 0 : UTRACE_PF_RECORD_ENTRY);
		} else {
			flags = UTRACE_PF_ENTRY | UTRACE_PF_RETPROBE | UTRACE_PF_COUNT;
			if (t->quiet)
				flags |= UTRACE_PF_HIST;
			else
				flags |= UTRACE_PF_RECORD_RETURN |
					 (cp->kind == CLI_PROBE_FUNC ? UTRACE_PF_RECORD_ENTRY : 0);
		}
		if (!p->name || !p->object) {
			free(m);
			return -EXIT_TRACE;
		}
		id = ahost_probe_match(&t->h, img, &m[k], p->name, flags, false);
		if (id < 0) {
			if (t->opts->verbose >= 0)
				cli_error("warning: probe '%s': %s cannot be probed: %s", cp->spec,
					  p->name, t->h.why[0] ? t->h.why : strerror(-id));
			free(p->name);
			free(p->object);
			free(p->symbol);
			memset(p, 0, sizeof(*p));
			if (id == -ENOSPC)
				break;
			continue;
		}
		p->id = id;
		t->nr_pts++;
		added++;
		ahost_set_want(&t->h, id,
			       ahost_abi(&t->h, id)->mode == UTRACE_PM_JMP ? UTRACE_PS_JMP :
									     UTRACE_PS_INT3);
	}
	free(m);
	if (added)
		return added;
	if (nr)
		return -EXIT_TRACE; /* warned above */
	if (pending) {
		if (t->opts->verbose >= 0)
			cli_error("warning: probe '%s': the agent backend does not arm libraries "
				  "loaded later yet (-b ptrace does)",
				  cp->spec);
		return 0;
	}
	cli_error("probe '%s': no such function in %s or its libraries (utrace -l SPEC lists "
		  "what a SPEC matches)",
		  cp->spec, t->opts->argv[0]);
	return -EXIT_USAGE;
}

/* Upper edge of agent bucket @b: [0]=0, [b]=[2^(b-1), 2^b). */
static void agent_bucket(unsigned int b, uint64_t *lo, uint64_t *hi)
{
	*lo = b ? 1ULL << (b - 1) : 0;
	*hi = b ? (b >= 64 ? UINT64_MAX : 1ULL << b) : 1;
}

static void aggregate(struct atracer *t, struct aggr *a)
{
	int i;

	for (i = 0; i < t->nr_pts; i++) {
		struct apoint *p = &t->pts[i];
		struct utrace_abi_probe *ab = ahost_abi(&t->h, p->id);
		struct aggr_stat *st = aggr_get(a, p->name, fn_name(p));
		bool timed = p->kind != CLI_PROBE_ENTRY && p->at_entry;
		unsigned int b;

		if (!st)
			continue;
		st->priv = p->proto;
		st->calls += p->kind == CLI_PROBE_RET ?
				     __atomic_load_n(&ab->returns, __ATOMIC_RELAXED) :
				     ahost_hits(&t->h, p->id);
		if (!timed)
			continue;
		for (b = 0; b < UTRACE_ABI_HIST_BUCKETS; b++) {
			uint64_t n = __atomic_load_n(&ab->hist[b], __ATOMIC_RELAXED), lo, hi;

			if (!n)
				continue;
			agent_bucket(b, &lo, &hi);
			st->hist[aggr_bucket(lo)] += n;
			if (!st->timed || lo < st->min_ns)
				st->min_ns = lo;
			if (hi - 1 > st->max_ns)
				st->max_ns = hi - 1;
			st->timed += n;
			st->total_ns += n * (lo + (hi - lo) / 2);
		}
	}
}

static int prepare_arena(void *arena, size_t size, void *ctx)
{
	const struct utrace_arena_hdr *want = ctx;

	if (want->arena_size > size)
		return -ENOSPC;
	memcpy(arena, want, sizeof(*want));
	return 0;
}

/*
 * Attach mode: load the agent into @pid (seize, dlopen, init with the
 * arena's fd, detach: lib/inject.c) and wait until it is ready. The arena
 * becomes @h's; @h->pid is the target, which is not our child.
 */
static int agent_attach(struct atracer *t, const struct ahost_opts *o, pid_t pid, const char *so)
{
	struct utrace_arena_hdr hd = { 0 };
	struct utrace_injection inj;
	char errbuf[512] = "";
	UTRACE_OPTS(utrace_inject_opts, io, .init_symbol = "__utrace_agent_init",
		    .prepare_arena = prepare_arena, .prepare_ctx = &hd, .errbuf = errbuf,
		    .errlen = sizeof(errbuf), .allow_copies = true);
	struct timespec ts = { 0, 10000000 };
	int err, i;

	hd.max_probes = o->max_probes;
	hd.max_threads = o->max_threads;
	hd.ring_records = o->ring_records;
	utrace_abi_layout(&hd);
	hd.host_pid = (uint32_t)getpid();
	io.arena_size = hd.arena_size;
	err = utrace_inject(pid, so, &io, &inj);
	if (err) {
		if (err == -ESRCH)
			cli_error("cannot attach to pid %d: no such process (it has exited?)", pid);
		else
			cli_error("cannot load the agent into pid %d: %s", pid,
				  errbuf[0] ? errbuf : strerror(-err));
		return err;
	}
	t->h.fd = inj.arena_fd;
	t->h.arena = inj.arena;
	t->h.hdr = inj.arena;
	t->h.pid = pid;
	t->h.stdin_fd = t->h.stdout_fd = -1;
	for (i = 0; i < 1000; i++) { /* 10 s */
		uint32_t st = __atomic_load_n(&t->h.hdr->agent_state, __ATOMIC_ACQUIRE);

		if (st == UTRACE_AGENT_READY)
			return 0;
		if (st != UTRACE_AGENT_NONE)
			break;
		syscall(SYS_futex, &t->h.hdr->agent_state, FUTEX_WAIT, UTRACE_AGENT_NONE, &ts, NULL,
			0);
	}
	cli_error("the agent in pid %d did not start (state %u, error %d)", pid,
		  t->h.hdr->agent_state, t->h.hdr->agent_err);
	return -EPROTO;
}

/* Attach mode, after DETACH: every probed site holds its original bytes again. */
static int check_restored(struct atracer *t)
{
	int i, bad = 0;

	for (i = 0; i < t->nr_pts; i++) {
		struct utrace_abi_probe *ab = ahost_abi(&t->h, t->pts[i].id);
		uint8_t now[16];

		if (ab->len > sizeof(now) ||
		    utrace_mem__read(t->pid, ab->addr, now, ab->len) != (ssize_t)ab->len)
			continue; /* gone */
		if (memcmp(now, ab->orig, ab->len)) {
			cli_error("%s at 0x%" PRIx64 " still differs from its original bytes after "
				  "the detach",
				  t->pts[i].name, ab->addr);
			bad++;
		}
	}
	return bad;
}

int cmd_trace_agent(struct cli_opts *opts, const struct cli_probe *probes, int nr_probes,
		    bool fallback_ok)
{
	static struct atracer tr;
	struct atracer *t = &tr;
	struct ahost_opts ho = { .max_probes = AGENT_MAX_PROBES,
				 .max_threads = AGENT_MAX_THREADS,
				 .ring_records = AGENT_RING_RECORDS };
	struct sigaction sa = { .sa_handler = on_agent_interrupt };
	char path[PATH_MAX];
	char **argv = NULL;
	const char *so = trace_agent_path(), *why;
	struct utrace_image *img = NULL;
	uint64_t deadline = 0;
	bool detached = false, attached = false;
	int ret = EXIT_TRACE, err, i, st = 0;

	memset(t, 0, sizeof(*t));
	t->opts = opts;
	t->h.fd = -1;
	/* records per thread ring, a power of two (tests make it small to see drops) */
	if (getenv("UTRACE_AGENT_RING")) {
		unsigned long n = strtoul(getenv("UTRACE_AGENT_RING"), NULL, 0);

		if (n >= 2 && n <= (1UL << 20) && !(n & (n - 1)))
			ho.ring_records = (uint32_t)n;
	}
	why = trace_agent_unsupported(opts);
	if (why) {
		cli_error("%s is not available with the agent backend yet (use -b ptrace)", why);
		return EXIT_TRACE;
	}
	if (!so) {
		if (fallback_ok)
			return TRACE_AGENT_FALLBACK;
		cli_error("cannot find libutrace-agent.so (set UTRACE_AGENT=PATH, a file only its "
			  "owner can write, or use -b ptrace)");
		return EXIT_TRACE;
	}
	t->quiet = opts->summary || opts->hist;
	if (opts->nr_pids) {
		t->pts = calloc(AGENT_MAX_PROBES, sizeof(*t->pts));
		if (!t->pts) {
			cli_error("out of memory");
			goto out;
		}
		err = agent_attach(t, &ho, opts->pids[0], so);
		if (err)
			goto out;
		attached = true;
		goto armed;
	}
	if (!find_exe(opts->argv[0], path, sizeof(path))) {
		cli_error("cannot run '%s': no such executable (check the name and PATH)",
			  opts->argv[0]);
		return EXIT_USAGE;
	}
	t->pts = calloc(AGENT_MAX_PROBES, sizeof(*t->pts));
	argv = calloc((size_t)opts->argc + 1, sizeof(*argv));
	if (!t->pts || !argv) {
		cli_error("out of memory");
		goto out;
	}
	argv[0] = path;
	for (i = 1; i < opts->argc; i++)
		argv[i] = opts->argv[i];
	t->quiet = opts->summary || opts->hist;
	setenv("UTRACE_AGENT", so, 1);
	err = ahost_launch(&t->h, &ho, argv);
	unsetenv("UTRACE_AGENT");
	if (err) {
		/* main() has not run: the command can be started again */
		if (fallback_ok) {
			ahost_close(&t->h);
			t->h.fd = -1;
			ret = TRACE_AGENT_FALLBACK;
			goto out;
		}
		cli_error("cannot start '%s' with the agent (%s): %s", opts->argv[0], so,
			  t->h.why[0] ? t->h.why : strerror(-err));
		goto out;
	}
armed:
	t->pid = t->h.pid;
	if (opts->verbose > 0)
		cli_error("backend: agent");
	img = utrace_image__open_pid(t->h.pid);
	if (!img) {
		cli_error("cannot read the image of pid %d: %s", t->h.pid, strerror(errno));
		goto out;
	}
	for (i = 0; i < nr_probes; i++) {
		err = add_points(t, img, &probes[i]);
		if (err < 0) {
			ret = -err;
			goto out;
		}
	}
	if (!t->nr_pts) {
		cli_error("no probe point to arm in %s (use -b ptrace for libraries loaded later)",
			  attached ? "the process" : opts->argv[0]);
		goto out;
	}
	err = ahost_sync(&t->h); /* the number of probes changed */
	if (err < 0) {
		cli_error("cannot arm the probes: %s", t->h.why[0] ? t->h.why : strerror(-err));
		goto out;
	}
	for (i = 0; i < t->nr_pts; i++) {
		struct utrace_abi_probe *ab = ahost_abi(&t->h, t->pts[i].id);

		if (ab->state == UTRACE_PS_FAILED && opts->verbose >= 0)
			cli_error("warning: %s could not be armed: %s", t->pts[i].name,
				  strerror(-ab->err));
		else if (opts->verbose > 1)
			cli_error("%s armed (%s)", t->pts[i].name,
				  ab->state == UTRACE_PS_JMP ? "jmp" : "int3");
	}
	err = output_open(&t->out, opts);
	if (err) {
		cli_error("cannot open output file '%s': %s", opts->output, strerror(-err));
		ret = EXIT_USAGE;
		goto out;
	}
	t->mono_to_real = (int64_t)now_realtime_ns() - (int64_t)now_mono_ns();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (opts->duration > 0)
		deadline = now_mono_ns() + (uint64_t)(opts->duration * 1e9);
	t->maps = utrace_maps__read(t->pid); /* the libraries loaded at start are in */
	err = attached ? 0 : ahost_start(&t->h);
	if (err < 0) {
		cli_error("cannot start the command: %s", t->h.why[0] ? t->h.why : strerror(-err));
		goto out;
	}
	for (;;) {
		struct timespec ts = { 0, 1000000 };
		pid_t w = attached ? 0 : waitpid(t->h.pid, &st, WNOHANG);

		if (w == t->h.pid || (attached && kill(t->pid, 0) && errno == ESRCH))
			break;
		if (attached && (agent_signal || (deadline && now_mono_ns() >= deadline))) {
			err = ahost_cmd(&t->h, UTRACE_CMD_DETACH, 0, 0);
			if (err < 0)
				cli_error("detach failed: %s", t->h.why);
			detached = true;
			drain(t);
			if (check_restored(t))
				err = -EIO;
			st = err < 0 ? EXIT_TRACE << 8 : 0;
			break;
		}
		drain(t);
		if (agent_signal || (deadline && now_mono_ns() >= deadline)) {
			/* every probe out, then the command runs on: wait for it */
			err = ahost_cmd(&t->h, UTRACE_CMD_DETACH, 0, 0);
			if (err && err != -ESRCH)
				cli_error("detach failed: %s", t->h.why);
			detached = true;
			drain(t);
			if (waitpid(t->h.pid, &st, 0) != t->h.pid)
				st = 0;
			break;
		}
		nanosleep(&ts, NULL);
	}
	t->h.pid = 0; /* reaped, or not our child */
	t->exited = !attached || !detached; /* a detached process can still be read */
	ret = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	drain(t);
	if (t->quiet) {
		struct aggr a;
		FILE *f = t->out.f;
		bool json = opts->format == CLI_FMT_JSON;
		uint64_t now = now_realtime_ns();

		aggr_init(&a);
		aggregate(t, &a);
		if (opts->summary)
			json ? aggr_json_summary(f, &a, now, t->pid) :
			       aggr_print_summary(f, &a, "function");
		if (opts->hist)
			json ? aggr_json_hist(f, &a, now, t->pid) : aggr_print_hist(f, &a);
		aggr_clear(&a);
	}
	fflush(t->out.f);
	if (t->lost && opts->verbose >= 0)
		cli_error("%" PRIu64 " events were lost (ring buffers full)", t->lost);
	if (opts->verbose > 0) {
		uint64_t hits = 0, rets = 0, missed = 0;

		for (i = 0; i < t->nr_pts; i++) {
			hits += ahost_hits(&t->h, t->pts[i].id);
			rets += ahost_abi(&t->h, t->pts[i].id)->returns;
			missed += ahost_abi(&t->h, t->pts[i].id)->missed_ret;
		}
		cli_error("%" PRIu64 " entry hits, %" PRIu64 " returns, %" PRIu64
			  " returns missed, %d probe points%s",
			  hits, rets, missed, t->nr_pts, detached ? " (detached)" : "");
	}
out:
	if (attached && !detached && t->h.pid > 0) {
		/* a failure after the injection: take every probe out before leaving */
		ahost_cmd(&t->h, UTRACE_CMD_DETACH, 0, 0);
		t->h.pid = 0;
	}
	if (img)
		utrace_image__close(img);
	if (t->maps)
		utrace_maps__free(t->maps);
	output_close(&t->out);
	ahost_close(&t->h); /* kills a command that never started */
	for (i = 0; t->pts && i < t->nr_pts; i++) {
		free(t->pts[i].name);
		free(t->pts[i].object);
		free(t->pts[i].symbol);
	}
	free(t->pts);
	free(argv);
	proto_dwarf_clear();
	return ret;
}
