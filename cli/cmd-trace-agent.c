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
 * Attach mode (-p PID): utrace_inject() loads the agent into
 * the running process (seize, dlopen, init with the arena's fd, detach: no
 * ptrace stop remains), the probes are armed through the arena, and on
 * SIGINT or -d a DETACH disarms them all; the sites' bytes are then checked
 * against their originals.
 *
 *  - --format chrome: the same writer as the ptrace backend (chrome.c).
 *  - --inject SPEC=VALUE[@N]: decided in the target (UTRACE_PF_INJECT,
 *    agent/dispatch.c): the calls are counted per probe with one atomic add,
 *    so "every Nth" is exact across threads; an injected call comes back as
 *    one INJECT record, shown as its entry line (unless a -f/-u of the same
 *    point showed it) and "f() = VALUE (injected)". One agent probe per
 *    address: an inject on a -f/-u/-r point is added to that point.
 *  - -k: the agent walks frame pointers in the probed thread (agent/stack.c)
 *    and publishes the return addresses with the entry record (STACK
 *    records); they are symbolised here, and the stack ends at the first
 *    address outside executable code, as with -b ptrace.
 *  - -p A,B: one agent and one arena per process (trace_agent_pids()).
 *  - -b auto, attach mode: a failure to load the agent is no error; the
 *    caller falls back to ptrace and -v says why (trace_agent_fallback_why()).
 *
 *  - -F: a fork child keeps its probes with an arena of its own, which it
 *    announces in its parent's (agent.c fork_rearena()); kid_add() maps it
 *    and traces the child as one more process, until it exits or Ctrl-C /
 *    -d takes its probes out (kids_wait()).
 *
 * Image changes (agent_image_events()): a SPEC on a library not loaded yet
 * stays pending; when the preloaded agent sees a dlopen()/dlclose() return
 * it waits while we resolve, plan and arm (or forget the unloaded points),
 * so the library's first call is probed. An injected agent cannot see
 * those calls: the target's maps are polled every 20 ms instead. After an
 * execve() in launch mode, the new image's agent (preloaded again, same
 * arena) waits before main() while the SPECs are armed anew. In attach
 * mode an exec drops the probes (the agent went with the old image).
 *
 * Not here (yet): -F with exec'ed or vfork()ed children, image changes in
 * -F children and with several pids (-p A,B).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utrace/inject.h"
#include "utrace/utrace.h"
#include "agent-host.h"
#include "aggr.h"
#include "chrome.h"
#include "cli.h"
#include "internal.h"
#include "modload.h"
#include "output.h"
#include "protos.h"
#include "trace-agent.h"

#define AGENT_MAX_PROBES 4096 /* the agent's own cap (agent-internal.h) */
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
	uint64_t addr; /* runtime address: one agent probe per address */
	/* --inject on this point (UTRACE_PF_INJECT) */
	bool inject;
	bool shown; /* a -f/-u of this point prints the entry of an injected call */
	uint64_t inj_value, inj_every;
	const char *inj_spec;
	bool gone; /* its object was unloaded, or replaced by an exec */
	const char *spec; /* the -f/-u/... SPEC it came from (t->probes) */
	bool taken_said; /* the agent gave the site to a kernel uprobe: said once */
};

struct atracer {
	struct cli_opts *opts;
	struct ahost h;
	struct output out;
	bool quiet;
	uint64_t taken_seen; /* hdr->taken at the last say_taken() */
	struct apoint *pts; /* by probe id */
	int nr_pts;
	int64_t mono_to_real;
	uint64_t lost;
	pid_t pid; /* the command (still known once reaped) */
	bool exited;
	struct utrace_maps *maps; /* at start: read-only file data after the exit */
	bool counting; /* -c / -H: histograms in the target */
	bool chrome_on; /* events go to agent_chrome */
	char comm[64]; /* the process's name at start (tracks of threads gone since) */
	pid_t *named; /* threads with a Chrome track name */
	size_t nr_named, cap_named;
	/* -k */
	struct utrace_image *img; /* borrowed: the image at start */
	struct utrace_image *img2; /* owned: re-read once for code loaded since */
	struct utrace_maps *maps2;
	struct utrace_abi_event held; /* an event waiting for its STR and STACK records */
	uint64_t pcs[UTRACE_ABI_STACK_MAX];
	unsigned int npcs, want;
	bool holding;
	/*
	 * The strings the agent copied at the hit of @held (STR records), by
	 * value index (UTRACE_STR_RET: the return value): pid_read() serves
	 * them while the event is formatted, not the memory as it is now.
	 */
	struct held_str {
		bool set, end, fault;
		uint16_t len;
		uint64_t addr;
		char bytes[UTRACE_ABI_STR_MAX];
	} strs[UTRACE_STR_RET + 1];
	bool strs_on;
	/* -F: fork children with arenas of their own (kid_add()) */
	struct atracer **kids;
	size_t nr_kids;
	uint32_t forks_seen, forks_lost;
	bool detached; /* a child whose probes were taken out */
	bool corrupt_said; /* drain() said that the arena is corrupt */
	/* Libraries loaded later and exec (agent_image_events()). */
	const struct cli_probe *probes;
	int nr_probes;
	bool rescan; /* add_points(): a re-resolution, quiet, skip known sites */
	bool pending; /* a SPEC waits for a library */
	uint32_t dl_seen, exec_seen;
	uint64_t maps_sig, next_poll;
	uint64_t image; /* image_id() of the image the points belong to */
	uint64_t exec_since; /* when image_id() was first seen to differ */
	bool attached;
	bool agent_gone; /* exec'ed into an image without the agent */
	/* injected: internal probes on the unwinder's entry points (arm_unwind_guards()) */
	int guards[4];
	int nr_guards;
	/* -m: each module's index in the agent, and where its counters are */
	int mod_idx[MODULES_MAX];
	uint32_t mod_base[MODULES_MAX];
};

static volatile sig_atomic_t agent_signal;
/*
 * An arena failed the host's checks (ahost_check(), ahost_drain()): the
 * agent of that process cannot be believed. Said once per process by
 * drain(); the loops then detach as for Ctrl-C, and the exit status is 1.
 */
static bool agent_corrupt;
#define agent_stop() (agent_signal || agent_corrupt)
static struct chrome agent_chrome; /* --format chrome: one file for every process */

static void on_agent_interrupt(int sig)
{
	agent_signal = sig;
}

static char agent_unsafe[2 * PATH_MAX + 512]; /* why $UTRACE_AGENT is not used */

/*
 * Does @path name a regular file that only its owner or root can change, in
 * directories only they can change? The rule of utrace_session__inject(),
 * for the agent preloaded at a launch as for one injected into a process.
 */
static bool safe_file(const char *path)
{
	char real[PATH_MAX], why[PATH_MAX + 128];

	if (inject_check_path(path, real, why, sizeof(why)) == 0)
		return true;
	snprintf(agent_unsafe, sizeof(agent_unsafe), "UTRACE_AGENT '%s' is not safe: %s", path,
		 why);
	return false;
}

const char *trace_agent_unsafe(void)
{
	return agent_unsafe;
}

const char *trace_agent_path(void)
{
	static char path[PATH_MAX + 64];
	char exe[PATH_MAX], real[PATH_MAX], *slash;
	const char *env = getenv("UTRACE_AGENT");
	ssize_t n;

	agent_unsafe[0] = '\0';
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
/*
 * From the strings copied at the hit (t->strs): -1 if @addr is in none of
 * them; else the bytes there (the NUL included when the copy found it),
 * or -EFAULT where the copy found the memory unreadable.
 */
static ssize_t held_read(struct atracer *t, uint64_t addr, void *buf, size_t len)
{
	unsigned int i;

	for (i = 0; t->strs_on && i <= UTRACE_STR_RET; i++) {
		const struct held_str *h = &t->strs[i];
		size_t avail = h->len + (h->end ? 1 : 0);

		if (!h->set || addr < h->addr || addr - h->addr > h->len)
			continue;
		avail -= addr - h->addr;
		if (!avail)
			return h->fault ? -EFAULT : -1;
		if (len > avail)
			len = avail;
		if (h->end && addr - h->addr + len == (size_t)h->len + 1) {
			memcpy(buf, h->bytes + (addr - h->addr), len - 1);
			((char *)buf)[len - 1] = 0;
		} else {
			memcpy(buf, h->bytes + (addr - h->addr), len);
		}
		return (ssize_t)len;
	}
	return -1;
}

static ssize_t pid_read(void *c, uint64_t addr, void *buf, size_t len)
{
	struct atracer *t = c;
	ssize_t n = held_read(t, addr, buf, len);
	size_t i;

	if (n != -1)
		return n;
	n = -ESRCH;

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

/* ------------------------------------------------------------------------ */
/* -k: the caller stacks recorded by the agent, symbolised here              */
/* ------------------------------------------------------------------------ */

/* The mapping of @addr if it holds code; re-reads maps and image once (dlopen since). */
static const struct utrace_map *code_map(struct atracer *t, uint64_t addr)
{
	const struct utrace_map *m = NULL;

	if (t->maps2)
		m = utrace_maps__find(t->maps2, addr);
	else if (t->maps)
		m = utrace_maps__find(t->maps, addr);
	if (!m && !t->maps2 && !t->exited) {
		t->maps2 = utrace_maps__read(t->pid);
		t->img2 = utrace_image__open_pid(t->pid);
		m = t->maps2 ? utrace_maps__find(t->maps2, addr) : NULL;
	}
	return m && (m->prot & UTRACE_MAP_EXEC) ? m : NULL;
}

/* "main+0x1c" for @addr in @m, and the object's base name (as cmd-trace.c). */
static void symbolise(struct atracer *t, const struct utrace_map *m, uint64_t addr, char *sym,
		      size_t symlen, const char **ret_obj)
{
	struct utrace_image *img = t->img2 ? t->img2 : t->img;
	size_t i, n = img ? utrace_image__object_count(img) : 0;
	const char *base = m->path ? strrchr(m->path, '/') : NULL;

	*ret_obj = base ? base + 1 : m->path;
	snprintf(sym, symlen, "0x%" PRIx64, addr);
	for (i = 0; m->path && i < n; i++) {
		const struct utrace_object *o = utrace_image__object(img, i);
		const struct utrace_sym *s;
		struct utrace_elf *elf;

		if (!o || !o->path || strcmp(o->path, m->path))
			continue;
		elf = utrace_image__elf(img, i);
		s = elf ? utrace_elf__find_sym(elf, addr - o->bias) : NULL;
		if (s)
			snprintf(sym, symlen, "%s+0x%" PRIx64, s->name, addr - o->bias - s->addr);
		return;
	}
}

/*
 * The frames of -k, as the ptrace backend prints them: " > sym (obj) [pc]"
 * lines, or a JSON "stack" member. The agent's walk may run into frames of
 * code without frame pointers: the stack ends at the first address that is
 * not code.
 */
static void print_stack(struct atracer *t, bool json)
{
	FILE *f = t->out.f;
	unsigned int i;

	if (json)
		fputs(", \"stack\": [", f);
	for (i = 0; i < t->npcs; i++) {
		const struct utrace_map *m = code_map(t, t->pcs[i]);
		char sym[256], buf[320];
		const char *obj;

		if (!m)
			break;
		symbolise(t, m, t->pcs[i], sym, sizeof(sym), &obj);
		if (json) {
			snprintf(buf, sizeof(buf), "%s:%s", obj ? obj : "?", sym);
			fputs(i ? ", " : "", f);
			json_str(f, buf, strlen(buf));
		} else {
			fprintf(f, " > %s (%s) [0x%" PRIx64 "]\n", sym, obj ? obj : "?", t->pcs[i]);
		}
	}
	if (json)
		fputc(']', f);
}

/* Chrome: name the track of @tid once (its process's too, for the main thread). */
static void chrome_track(struct atracer *t, pid_t tid)
{
	char path[64], comm[64] = "";
	size_t i;
	FILE *f;

	for (i = 0; i < t->nr_named; i++)
		if (t->named[i] == tid)
			return;
	if (t->nr_named == t->cap_named) {
		size_t cap = t->cap_named ? t->cap_named * 2 : 16;
		pid_t *n = realloc(t->named, cap * sizeof(*n));

		if (!n)
			return;
		t->named = n;
		t->cap_named = cap;
	}
	t->named[t->nr_named++] = tid;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)t->pid, (int)tid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	if (!comm[0])
		snprintf(comm, sizeof(comm), "%s", t->comm[0] ? t->comm : "?");
	if (tid == t->pid)
		chrome_name_process(&agent_chrome, t->pid, comm);
	chrome_name_thread(&agent_chrome, t->pid, tid, comm);
}

/*
 * The return line of an injected call ("answer() = 42 (injected)", dur 0),
 * as cmd-trace.c prints it.
 */
/*
 * A return line: the value returned @ret after @dur ns, or, @injected, the
 * value --inject made the call return (the function did not run).
 */
/*
 * @p's prototype, found at its first record: a counting run (-c) never
 * needs one, and a glob of thousands would read every object's DWARF.
 */
static const struct proto *point_proto(const struct apoint *p)
{
	struct apoint *w = (struct apoint *)p; /* a cache, not state */

	if (!w->proto && w->symbol)
		w->proto = proto_dwarf(w->object, w->symbol);
	if (!w->proto && w->symbol)
		w->proto = proto_find(w->symbol);
	if (!w->proto)
		w->proto = proto_unknown();
	return w->proto;
}

/*
 * Which values of @p's records the agent copies as strings at the hit: the
 * prototype's string arguments (and printf formats) at entry, a returned
 * string at return, -S + 1 bytes each (what proto_format_args() reads).
 */
static void agent_strings(struct atracer *t, const struct apoint *p, struct utrace_abi_probe *ab)
{
	const struct proto *pr;
	unsigned int i, mask = 0;

	if (!(ab->flags & (UTRACE_PF_RECORD_ENTRY | UTRACE_PF_RECORD_RETURN)) || !p->at_entry)
		return;
	pr = point_proto(p);
	for (i = 0; i < pr->nargs && i < UTRACE_ABI_ARGS; i++)
		if (pr->args[i] == PK_STR || pr->args[i] == PK_FMT)
			mask |= 1U << i;
	ab->str_args = (ab->flags & UTRACE_PF_RECORD_ENTRY) ? (uint8_t)mask : 0;
	ab->str_ret = (ab->flags & UTRACE_PF_RECORD_RETURN) && pr->ret == PK_STR;
	ab->str_max = (uint16_t)MIN((unsigned int)MAX(t->opts->strsize, 0) + 1, UTRACE_ABI_STR_MAX);
}

static void show_return(struct atracer *t, const struct apoint *p,
			const struct utrace_abi_event *ev, struct proto_regs *r, uint64_t ret,
			uint64_t dur, bool injected)
{
	struct proto_val v;
	FILE *f = t->out.f;
	bool is_void = point_proto(p)->ret == PK_VOID;

	proto_format_ret(point_proto(p), ret, r, t->opts->strsize, &v);
	if (t->chrome_on) {
		char *a = chrome_call_args(NULL, &v, injected);

		chrome_end(&agent_chrome, t->pid, (pid_t)ev->tid, ev->ts, fn_name(p), p->name, a);
		free(a);
	} else if (t->out.format == CLI_FMT_JSON) {
		json_head(t, p, ev->ts, ev->tid, "return");
		fputs(", \"ret\": ", f);
		if (is_void)
			fputs("null", f);
		else
			proto_val_print_json(f, &v);
		fprintf(f, ", \"dur_ns\": %" PRIu64 "%s}\n", dur,
			injected ? ", \"injected\": true" : "");
	} else {
		output_prefix(&t->out, real_ns(t, ev->ts), (pid_t)ev->tid, true);
		fprintf(f, "%s() = ", fn_name(p));
		if (is_void)
			fputs("<void>", f);
		else
			proto_val_print_text(f, &v);
		if (injected)
			fputs(" (injected)", f);
		output_duration(&t->out, dur);
		fputc('\n', f);
	}
	proto_val_clear(&v);
}

/*
 * The point of probe @id: ids and indexes agree unless internal probes
 * (arm_unwind_guards()) took ids in between.
 */
static const struct apoint *point_of(const struct atracer *t, uint32_t id)
{
	int i;

	if (id < (uint32_t)t->nr_pts && t->pts[id].id == (int)id)
		return &t->pts[id];
	for (i = 0; i < t->nr_pts; i++)
		if (t->pts[i].id == (int)id)
			return &t->pts[i];
	return NULL;
}

/* One event (with its stack in t->pcs[0, t->npcs) for -k). */
static void show_event(struct atracer *t, const struct utrace_abi_event *ev)
{
	const struct apoint *p;
	struct proto_regs r = { .read = pid_read, .ctx = t };
	FILE *f = t->out.f;
	bool inj = ev->kind == UTRACE_EV_INJECT;
	int i;

	p = point_of(t, ev->probe);
	if (!p)
		return;
	for (i = 0; i < 6; i++)
		r.args[i] = ev->args[i];
	if (t->chrome_on)
		chrome_track(t, (pid_t)ev->tid);
	if (inj && p->shown) {
		/* the entry record of the same hit was shown already */
		if (p->kind == CLI_PROBE_FUNC)
			show_return(t, p, ev, &r, p->inj_value, 0, true);
		return;
	}
	if (ev->kind == UTRACE_EV_ENTRY || inj) {
		struct proto_vals vals;

		if (!p->at_entry) {
			if (t->chrome_on) {
				chrome_instant(&agent_chrome, t->pid, (pid_t)ev->tid, ev->ts,
					       p->name, p->name, NULL);
			} else if (t->out.format == CLI_FMT_JSON) {
				json_head(t, p, ev->ts, ev->tid, "probe");
				if (t->opts->stack)
					print_stack(t, true);
				fputs("}\n", f);
			} else {
				output_prefix(&t->out, real_ns(t, ev->ts), (pid_t)ev->tid, true);
				fprintf(f, "%s\n", p->name);
				if (t->opts->stack)
					print_stack(t, false);
			}
			return;
		}
		proto_format_args(point_proto(p), &r, t->opts->strsize, &vals);
		if (t->chrome_on) {
			char *a = chrome_call_args(&vals, NULL, false);

			chrome_begin(&agent_chrome, t->pid, (pid_t)ev->tid, ev->ts, fn_name(p),
				     p->name, a);
			free(a);
		} else if (t->out.format == CLI_FMT_JSON) {
			json_head(t, p, ev->ts, ev->tid, "entry");
			fputs(", \"args\": [", f);
			for (i = 0; i < vals.nr; i++) {
				fputs(i ? ", " : "", f);
				proto_val_print_json(f, &vals.v[i]);
			}
			fputc(']', f);
			if (t->opts->stack)
				print_stack(t, true);
			fputs("}\n", f);
		} else {
			output_prefix(&t->out, real_ns(t, ev->ts), (pid_t)ev->tid, true);
			fprintf(f, "%s(", fn_name(p));
			for (i = 0; i < vals.nr; i++) {
				fputs(i ? ", " : "", f);
				proto_val_print_text(f, &vals.v[i]);
			}
			fputs(")\n", f);
			if (t->opts->stack)
				print_stack(t, false);
		}
		proto_vals_clear(&vals);
		if (inj)
			show_return(t, p, ev, &r, p->inj_value, 0, true);
	} else if (ev->kind == UTRACE_EV_RETURN) {
		show_return(t, p, ev, &r, ev->args[0], ev->dur, false);
	}
}

/*
 * -m: is @real (checked in our mount namespace by modload.c) the same file
 * in the target's? The target's dlopen() resolves the path in its own
 * namespace (a container's root may hold another file there), as for the
 * agent itself (lib/inject.c check_same_file()). Return: NULL or why not.
 */
static const char *module_same_file(pid_t pid, const char *real)
{
	char other[PATH_MAX + 64];
	struct stat a, b;

	snprintf(other, sizeof(other), "/proc/%d/root%s", (int)pid, real);
	if (stat(real, &a) || stat(other, &b))
		return "it is not visible in the target's mount namespace";
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return "the target's mount namespace has another file at that path";
	return NULL;
}

/*
 * -m: load every module in the target (agent/module.c) and say where its
 * counters go: probe ids at the top of the table, never armed, whose
 * per-thread hit counters the module's handlers add to. Before the
 * modules' probes are added (add_points() binds them), and again in the
 * new image after an exec. Return: 0 or EXIT_TRACE (one line said why).
 */
static int agent_modules_load(struct atracer *t)
{
	uint32_t total = 0, max = t->h.lay.max_probes;
	int i, r;

	for (i = 0; i < cli_nr_modules; i++)
		total += (uint32_t)cli_modules[i].nr_counters;
	t->h.reserved_top = total;
	for (i = 0, total = 0; i < cli_nr_modules; i++) {
		struct cli_module *m = &cli_modules[i];
		const char *why = module_same_file(t->h.pid > 0 ? t->h.pid : t->pid, m->path);

		t->mod_base[i] = max - t->h.reserved_top + total;
		total += (uint32_t)m->nr_counters;
		if (why) {
			cli_error("module '%s': not loaded: %s", m->path, why);
			return EXIT_TRACE;
		}
		if (strlen(m->path) >= sizeof(t->h.hdr->cmd_str)) {
			cli_error("module '%s': its path is longer than %zu bytes", m->path,
				  sizeof(t->h.hdr->cmd_str) - 1);
			return EXIT_TRACE;
		}
		memcpy(t->h.hdr->cmd_str, m->path, strlen(m->path) + 1);
		r = ahost_cmd(&t->h, UTRACE_CMD_MODULE_LOAD, t->mod_base[i],
			      (uint64_t)m->nr_counters);
		if (r < 0) {
			char why[sizeof(t->h.hdr->cmd_str)];

			ahost_agent_str(&t->h, why, sizeof(why)); /* the target wrote it */
			cli_error("module '%s': the target could not load it: %s", m->path,
				  why[0]      ? why :
				  t->h.why[0] ? t->h.why :
						strerror(-r));
			return EXIT_TRACE;
		}
		t->mod_idx[i] = r;
	}
	return 0;
}

/*
 * -m: module probe @cp on agent probe @id: its handlers run at that
 * probe's hits, after the built-in ones. Return: 0 or negative errno.
 */
static int agent_module_bind(struct atracer *t, const struct cli_probe *cp, int id)
{
	uint64_t which = ((uint64_t)(uint32_t)t->mod_idx[cp->module] << 32) | (uint32_t)cp->mprobe;
	int err = ahost_cmd(&t->h, UTRACE_CMD_MODULE_BIND, which, (uint64_t)id);

	if (err < 0 && t->opts->verbose >= 0)
		cli_error("warning: module '%s': probe '%s' not bound: %s",
			  cli_modules[cp->module].name, cp->spec, strerror(-err));
	return err;
}

/* -m: a module's record (utrace_module__emit() in the target). */
static void module_event(struct atracer *t, const struct utrace_abi_event *ev)
{
	int agent_mi = (int)(ev->dur >> 24), pi = (int)((ev->dur >> 8) & 0xffff), i;

	for (i = 0; i < cli_nr_modules; i++)
		if (t->mod_idx[i] == agent_mi)
			module_print_record(&t->out, t->mono_to_real, t->pid, (pid_t)ev->tid,
					    ev->ts, i, pi, ev->args,
					    (unsigned int)(ev->dur & 0xff));
}

/* -m: add the module counters of this process and its -F children into cli_modules[].counts. */
static void agent_modules_count(struct atracer *t)
{
	size_t k;
	int i, j;

	for (i = 0; i < cli_nr_modules && t->h.arena; i++)
		for (j = 0; j < cli_modules[i].nr_counters; j++)
			cli_modules[i].counts[j] += ahost_hits(&t->h, (int)(t->mod_base[i] + j));
	for (k = 0; k < t->nr_kids; k++)
		agent_modules_count(t->kids[k]);
}

/* A STR record of the held event: append its bytes to the value's string. */
static void held_str_add(struct atracer *t, const struct utrace_abi_event *ev)
{
	unsigned int idx = UTRACE_STR_INDEX(ev->ext), n = UTRACE_STR_LEN(ev->ext);
	struct held_str *h = &t->strs[idx]; /* idx <= UTRACE_STR_RET: record_ok() */

	if (!h->set) {
		h->set = true;
		h->end = h->fault = false;
		h->len = 0;
		h->addr = t->held.args[idx == UTRACE_STR_RET ? 0 : idx];
	}
	if (h->end || h->fault)
		return; /* a record past the end: a target's scribble, not the agent */
	if (n > sizeof(h->bytes) - h->len)
		n = (unsigned int)(sizeof(h->bytes) - h->len);
	memcpy(h->bytes + h->len, ev->args, n);
	h->len = (uint16_t)(h->len + n);
	h->end = ev->ext & UTRACE_STR_END;
	h->fault = ev->ext & UTRACE_STR_FAULT;
}

/*
 * A ring record. An ENTRY, INJECT or RETURN record with ext > 0 is
 * followed by its ext STR and STACK records in the same ring; the agent publishes a group at once
 * and ahost_drain() hands a ring's records over in order, so the group is
 * complete in this pass: hold the event until its last STACK record.
 */
static void on_event(const struct utrace_abi_event *ev, void *data)
{
	struct atracer *t = data;
	unsigned int i;

	if (ev->kind == UTRACE_EV_LOST)
		return;
	if (ev->kind == UTRACE_EV_MODULE) {
		module_event(t, ev);
		return;
	}
	if (ev->kind == UTRACE_EV_STACK || ev->kind == UTRACE_EV_STR) {
		if (!t->holding || ev->tid != t->held.tid)
			return;
		if (ev->kind == UTRACE_EV_STR)
			held_str_add(t, ev);
		for (i = 0; ev->kind == UTRACE_EV_STACK && i < ev->ext && i < UTRACE_ABI_ARGS &&
			    t->npcs < UTRACE_ABI_STACK_MAX;
		     i++)
			t->pcs[t->npcs++] = ev->args[i];
		if (--t->want)
			return;
		t->holding = false;
		t->strs_on = true;
		show_event(t, &t->held);
		t->strs_on = false;
		return;
	}
	t->holding = false; /* a group cut short cannot happen; never hold stale state */
	t->npcs = 0;
	for (i = 0; i <= UTRACE_STR_RET; i++)
		t->strs[i].set = false;
	if ((ev->kind == UTRACE_EV_ENTRY || ev->kind == UTRACE_EV_INJECT ||
	     ev->kind == UTRACE_EV_RETURN) &&
	    ev->ext) {
		t->held = *ev;
		t->want = ev->ext;
		t->holding = true;
		return;
	}
	show_event(t, ev);
}

/*
 * The agent gave jmp sites back to a kernel uprobe that was put on them
 * (agent/patch.c, patch_check_taken()): one line each, once. Those points
 * get no more hits; the agent leaves their bytes alone at detach (the
 * kernel restores its int3's byte when its uprobe goes).
 */
static void say_taken(struct atracer *t)
{
	uint64_t taken = __atomic_load_n(&t->h.hdr->taken, __ATOMIC_ACQUIRE);
	int i;

	if (taken == t->taken_seen)
		return;
	t->taken_seen = taken;
	for (i = 0; i < t->nr_pts; i++) {
		struct apoint *p = &t->pts[i];
		struct utrace_abi_probe *ab = ahost_abi(&t->h, p->id);
		const char *spec = p->spec ? p->spec : p->name;
		/* a glob's point names itself */
		const char *name = strpbrk(spec, "*?[") ? p->name : spec;

		if (p->taken_said || p->gone ||
		    __atomic_load_n(&ab->state, __ATOMIC_ACQUIRE) != UTRACE_PS_TAKEN)
			continue;
		p->taken_said = true;
		if (ab->err == -EEXIST)
			cli_error(
				"probe '%s'%s%s%s: a kernel uprobe was placed on it; utrace's probe "
				"there is off",
				spec, name != spec ? " (" : "", name != spec ? name : "",
				name != spec ? ")" : "");
		else
			cli_error(
				"probe '%s'%s%s%s: its code was changed by someone else; utrace's "
				"probe there is off",
				spec, name != spec ? " (" : "", name != spec ? name : "",
				name != spec ? ")" : "");
	}
}

/* Drain the rings; report drops seen since the last call; let pending lines out. */
static void drain(struct atracer *t)
{
	uint64_t drops;

	ahost_drain(&t->h, t->quiet ? NULL : on_event, t);
	say_taken(t);
	if (t->h.corrupt) {
		if (!t->corrupt_said)
			cli_error("the agent's arena in pid %d is corrupt (%s): detaching",
				  (int)t->pid, t->h.why);
		t->corrupt_said = true;
		agent_corrupt = true;
		return;
	}
	drops = ahost_drops(&t->h);
	if (drops > t->lost)
		emit_lost(t, drops - t->lost);
	output_live(&t->out); /* drained once a millisecond: lines go out every OUTPUT_LIVE_MS */
}

static bool known_site(struct atracer *t, uint64_t addr)
{
	int i;

	for (i = 0; i < t->nr_pts; i++)
		if (!t->pts[i].gone && t->pts[i].addr == addr)
			return true;
	return false;
}

/*
 * --inject on point @p (probe @id), before its first SYNC (the agent reads
 * the inject fields once). A -f or -u of the point shows the call's entry
 * itself; otherwise the INJECT record shows both lines.
 */
static void inject_set(struct atracer *t, struct apoint *p, int id, const struct cli_probe *cp)
{
	struct utrace_abi_probe *ab = ahost_abi(&t->h, id);

	ab->flags |= UTRACE_PF_INJECT | UTRACE_PF_ENTRY | (t->counting ? UTRACE_PF_HIST : 0);
	if (!t->quiet)
		ab->flags |= UTRACE_PF_RECORD_RETURN | (t->opts->stack ? UTRACE_PF_STACK : 0);
	ab->inject_value = cp->value;
	ab->inject_every = cp->every ? cp->every : 1;
	p->inject = true;
	p->shown = p->kind == CLI_PROBE_FUNC || p->kind == CLI_PROBE_ENTRY;
	p->inj_value = cp->value;
	p->inj_every = ab->inject_every;
	p->inj_spec = cp->spec;
}

/*
 * --inject on match @m: only at a function entry (VALUE is what the
 * function returns). The agent has one probe per address: a -f/-u/-r
 * point already there gets the injection. Return: 1 merged, 0 a new point
 * is needed, or -EXIT_USAGE.
 */
static int inject_merge(struct atracer *t, const struct utrace_match *m, const struct cli_probe *cp)
{
	int i;

	if (m->offset) {
		cli_error("--inject '%s': %s+0x%" PRIx64 " is not a function entry (VALUE is what "
			  "a function returns)",
			  cp->spec, m->symbol ? m->symbol : "?", m->offset);
		return -EXIT_USAGE;
	}
	for (i = 0; i < t->nr_pts; i++) {
		if (t->pts[i].gone || t->pts[i].addr != m->addr || !t->pts[i].at_entry)
			continue;
		if (!t->pts[i].inject)
			inject_set(t, &t->pts[i], t->pts[i].id, cp);
		return 1;
	}
	return 0;
}

/*
 * -m: one agent probe per address, so a module probe on a point that is
 * already there (a -f/-u/-r, an --inject, another module's) is bound to
 * it. A return handler needs the return probe: added if the point has not
 * been armed yet, else the module's return side is skipped with a warning.
 * Return: 1 bound there, 0 a new point is needed.
 */
static int module_merge(struct atracer *t, const struct utrace_match *m, const struct cli_probe *cp)
{
	int i;

	for (i = 0; i < t->nr_pts; i++) {
		struct apoint *p = &t->pts[i];
		struct utrace_abi_probe *ab;

		if (p->gone || p->addr != m->addr)
			continue;
		ab = ahost_abi(&t->h, p->id);
		if (module_has_return(cp->module, cp->mprobe) &&
		    !(ab->flags & UTRACE_PF_RETPROBE)) {
			if (p->at_entry && ab->state == UTRACE_PS_UNUSED)
				ab->flags |= UTRACE_PF_ENTRY | UTRACE_PF_RETPROBE | UTRACE_PF_HIST;
			else if (t->opts->verbose >= 0)
				cli_error("warning: module '%s': %s is not probed at its return "
					  "here: its return handler will not run",
					  cli_modules[cp->module].name, p->name);
		}
		agent_module_bind(t, cp, p->id);
		return 1;
	}
	return 0;
}

/* Is @path the agent itself (whose code is never probed: patch.c refuses it)? */
static bool is_agent(const char *path)
{
	static struct stat self;
	static bool known;
	struct stat st;

	if (!known) {
		const char *so = trace_agent_path();

		known = true;
		if (!so || stat(so, &self) < 0)
			memset(&self, 0, sizeof(self));
	}
	return path && self.st_ino && stat(path, &st) == 0 && st.st_dev == self.st_dev &&
	       st.st_ino == self.st_ino;
}

static int add_points(struct atracer *t, struct utrace_image *img, const struct cli_probe *cp)
{
	struct utrace_spec spec;
	struct utrace_match *m = NULL;
	size_t nr = 0, k;
	bool pending = false, glob, in_agent = false;
	char errbuf[256], first[512] = "";
	size_t tried = 0, refused = 0, left = 0, last_obj = SIZE_MAX;
	int err, added = 0;

	if (utrace_spec__parse(cp->spec, &spec, errbuf, sizeof(errbuf))) {
		cli_error("%s", errbuf[0] ? errbuf : "bad spec");
		return -EXIT_USAGE;
	}
	err = utrace_image__resolve(img, &spec, &m, &nr, &pending);
	glob = spec.object && (!strcmp(spec.object, "*") || strpbrk(spec.object, "*?["));
	glob |= !!(spec.flags & UTRACE_SPEC_GLOB);
	utrace_spec__clear(&spec);
	if (err) {
		if (t->rescan)
			return 0; /* e.g. -ESRCH: it exited while we re-read it; quiet */
		cli_error("probe '%s': %s", cp->spec, strerror(-err));
		return -EXIT_USAGE;
	}
	ahost_plan_begin(&t->h, img); /* else each match is planned alone: slower */
	for (k = 0; k < nr; k++) {
		const struct utrace_object *o = utrace_image__object(img, m[k].object);
		struct apoint *p = &t->pts[t->nr_pts];
		const char *base;
		uint32_t flags = 0;
		char buf[512];
		int id;

		if (m[k].sym_flags & UTRACE_SYM_ALIAS)
			continue;
		if (t->rescan && known_site(t, m[k].addr))
			continue;
		if (m[k].object != last_obj) {
			last_obj = m[k].object;
			in_agent = o && is_agent(o->path);
			/* utrace's own code, not the program's: a glob says so with -v */
			if (in_agent && !t->rescan && t->opts->verbose >= (glob ? 1 : 0))
				cli_error("%sprobe '%s': %s is utrace's agent: its code is not "
					  "probed",
					  glob ? "" : "warning: ", cp->spec, o->path);
		}
		if (in_agent)
			continue;
		if (t->nr_pts >= AGENT_MAX_PROBES) {
			left = nr - k; /* said once, below */
			break;
		}
		tried++;
		if (cp->kind == CLI_PROBE_MODULE) {
			err = module_merge(t, &m[k], cp);
			if (err > 0) {
				added++;
				continue;
			}
		}
		if (cp->kind == CLI_PROBE_INJECT) {
			err = inject_merge(t, &m[k], cp);
			if (err < 0) {
				ahost_plan_end(&t->h);
				free(m);
				return err;
			}
			if (err > 0) {
				added++;
				continue;
			}
		}
		p->kind = cp->kind;
		p->addr = m[k].addr;
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
		p->spec = cp->spec;
		p->proto = NULL; /* point_proto(), at its first record */
		if (cp->kind == CLI_PROBE_INJECT) {
			flags = UTRACE_PF_COUNT; /* inject_set() adds the rest */
		} else if (cp->kind == CLI_PROBE_MODULE) {
			/* the module's handlers only; HIST times the entry (ctx->entry_ns) */
			flags = UTRACE_PF_COUNT | (p->at_entry ? UTRACE_PF_ENTRY : 0);
			if (module_has_return(cp->module, cp->mprobe) && p->at_entry)
				flags |= UTRACE_PF_RETPROBE | UTRACE_PF_HIST;
		} else if (cp->kind == CLI_PROBE_ENTRY || !p->at_entry) {
			flags = UTRACE_PF_COUNT | (t->quiet ? 0 : UTRACE_PF_RECORD_ENTRY) |
				(p->at_entry ? UTRACE_PF_ENTRY : 0);
		} else {
			flags = UTRACE_PF_ENTRY | UTRACE_PF_RETPROBE | UTRACE_PF_COUNT;
			if (t->counting)
				flags |= UTRACE_PF_HIST;
			if (!t->quiet)
				flags |= UTRACE_PF_RECORD_RETURN |
					 (cp->kind == CLI_PROBE_FUNC ? UTRACE_PF_RECORD_ENTRY : 0);
		}
		/* the ELF entry point is jumped to, not called: [rsp] is argc, not a return */
		if (p->at_entry && p->symbol && !strcmp(p->symbol, "_start"))
			flags &= ~(uint32_t)(UTRACE_PF_RETPROBE | UTRACE_PF_HIST);
		if (t->opts->stack && (flags & UTRACE_PF_RECORD_ENTRY))
			flags |= UTRACE_PF_STACK; /* -k: the stack goes with each entry record */
		if (!p->name || !p->object) {
			ahost_plan_end(&t->h);
			free(m);
			return -EXIT_TRACE;
		}
		t->h.why[0] = 0;
		id = ahost_probe_match(&t->h, img, &m[k], p->name, flags, false);
		if (id < 0) {
			char why[512];

			snprintf(why, sizeof(why), "%s cannot be probed: %s", p->name,
				 t->h.why[0] ? t->h.why : strerror(-id));
			free(p->name);
			free(p->object);
			free(p->symbol);
			memset(p, 0, sizeof(*p));
			if (id == -ENOSPC) {
				left = nr - k;
				tried--;
				break;
			}
			if (id == -ESRCH) {
				/* the program is gone (the agent waits 10 s for its probes) */
				ahost_plan_end(&t->h);
				free(m);
				if (!t->rescan)
					cli_error("cannot arm the probes: %s", why);
				return t->rescan ? 0 : -EXIT_TRACE;
			}
			/* a glob's refusals: each with -v, else one line below */
			if (!refused++)
				snprintf(first, sizeof(first), "%s", why);
			if (t->opts->verbose >= 0 && !t->rescan && (!glob || t->opts->verbose > 0))
				cli_error("%sprobe '%s': %s", glob ? "" : "warning: ", cp->spec,
					  why);
			continue;
		}
		p->id = id;
		if (cp->kind == CLI_PROBE_INJECT)
			inject_set(t, p, id, cp);
		if (cp->kind == CLI_PROBE_MODULE)
			agent_module_bind(t, cp, id);
		if (t->counting && (ahost_abi(&t->h, id)->flags & UTRACE_PF_HIST))
			ahost_abi(&t->h, id)->err_kind = (uint8_t)proto_err_kind(point_proto(p));
		agent_strings(t, p, ahost_abi(&t->h, id));
		t->nr_pts++;
		added++;
		ahost_set_want(&t->h, id,
			       ahost_abi(&t->h, id)->mode == UTRACE_PM_JMP ? UTRACE_PS_JMP :
									     UTRACE_PS_INT3);
	}
	ahost_plan_end(&t->h);
	free(m);
	if (t->opts->verbose >= 0 && !t->rescan && glob && refused)
		cli_error("warning: probe '%s': %zu of %zu matches cannot be probed (-v lists them "
			  "with the reason), e.g. %s",
			  cp->spec, refused, tried, first);
	if (t->opts->verbose >= 0 && left)
		cli_error("warning: probe '%s': more than %d probe points: %zu matches are not "
			  "traced",
			  cp->spec, AGENT_MAX_PROBES, left);
	t->pending |= pending;
	if (added || t->rescan)
		return added;
	/*
	 * Every match refused (a site under someone else's int3 or jmp, a
	 * planner refusal): warned above; the other SPECs are traced, and the
	 * callers exit 1 only when no point at all could be armed (the rule of
	 * both backends, docs/cli.md).
	 */
	if (nr)
		return 0;
	if (pending && t->opts->nr_pids > 1) {
		/* trace_agent_pids() does not watch image changes (yet) */
		if (t->opts->verbose >= 0)
			cli_error("warning: probe '%s': with several processes the agent backend "
				  "does not arm libraries loaded later yet (-b ptrace does)",
				  cp->spec);
		return 0;
	}
	if (pending)
		return 0; /* cmd-trace.c's check_specs() said so already */
	if (t->opts->nr_pids > 1)
		return 0; /* -p A,B: cmd-trace.c checked that some process has it */
	if (!t->opts->argv) {
		cli_error(
			"probe '%s': matches nothing in pid %d (utrace -l SPEC -p %d lists what a "
			"SPEC matches)",
			cp->spec, (int)t->pid, (int)t->pid);
		return -EXIT_USAGE;
	}
	cli_error("probe '%s': no such function in %s or its libraries (utrace -l SPEC lists "
		  "what a SPEC matches)",
		  cp->spec, t->opts->argv[0]);
	return -EXIT_USAGE;
}

/* After a SYNC: true if some point is armed (or given back to a kernel uprobe since). */
static bool any_point_armed(struct atracer *t)
{
	int i;

	for (i = 0; i < t->nr_pts; i++)
		if (ahost_abi(&t->h, t->pts[i].id)->state != UTRACE_PS_FAILED)
			return true;
	return false;
}

/*
 * After a SYNC: the points [@from, nr_pts) the agent could not arm. One
 * line each for a few; for more (a glob) each with -v, else one summary.
 * @pfx: "" or "pid N: ".
 */
static void say_unarmed(struct atracer *t, int from, const char *pfx)
{
	int i, n = 0, shown = 0;
	const char *first = NULL;
	int first_err = 0;

	for (i = from; i < t->nr_pts; i++) {
		struct utrace_abi_probe *ab = ahost_abi(&t->h, t->pts[i].id);

		if (ab->state == UTRACE_PS_FAILED) {
			if (!n++) {
				first = t->pts[i].name;
				first_err = -ab->err;
			}
		} else if (t->opts->verbose > 1) {
			cli_error("%s%s armed (%s)", pfx, t->pts[i].name,
				  ab->state == UTRACE_PS_JMP ? "jmp" : "int3");
		}
	}
	if (!n || t->opts->verbose < 0)
		return;
	for (i = from; i < t->nr_pts && (n <= 3 || t->opts->verbose > 0); i++) {
		struct utrace_abi_probe *ab = ahost_abi(&t->h, t->pts[i].id);

		if (ab->state == UTRACE_PS_FAILED && ++shown)
			cli_error("warning: %s%s could not be armed: %s", pfx, t->pts[i].name,
				  strerror(-ab->err));
	}
	if (!shown)
		cli_error("warning: %s%d probe points could not be armed (-v lists them), e.g. "
			  "%s: %s",
			  pfx, n, first, strerror(first_err));
}

/*
 * Return probes with an injected agent. A C++ exception (or pthread_exit(),
 * which unwinds) passing through a frame whose return address a return
 * probe hijacked would make the unwinder look up the trampoline, which has
 * no unwind info: std::terminate(), the process dies. A preloaded agent
 * interposes the unwinder's entry points and puts the addresses back first
 * (agent/interpose.c); an injected one cannot: the application's
 * references were bound before it came. So the entry points get internal
 * probes whose hit does the same (UTRACE_PF_UNWIND). They are not points:
 * no output, no counts; their ids are kept in t->guards. pthread_exit()
 * unwinds with _Unwind_ForcedUnwind, from libgcc_s, which the injected
 * agent loads at its init (glibc would load it inside the first
 * pthread_exit()); pthread_exit itself is guarded only if that failed.
 *
 * Another session (its own agent instance, its own return instances)
 * may guard the same function already, and one site takes one session's
 * patch. Any instruction of the prologue does, as long as it runs before
 * the unwinder reads a frame: libgcc's _Unwind_RaiseException and
 * _Unwind_ForcedUnwind push and set up for ~16 instructions before their
 * first call, so the guard goes on the first free one of the first
 * GUARD_SPAN bytes, before any call. If the unwinder cannot be guarded,
 * return probes are refused rather than risk the process.
 * Return: 0, or -EXIT_TRACE after one line.
 */
#define GUARD_SPAN 24

static int guard_function(struct atracer *t, struct utrace_image *img,
			  const struct utrace_match *m0, const char *name)
{
	uint32_t offs[16];
	int n = ahost_insn_offsets(&t->h, m0->addr, GUARD_SPAN, offs, 16), j, id = -ENOENT;
	uint8_t code[GUARD_SPAN];

	if (n > 0 && utrace_mem__read(t->pid, m0->addr, code, sizeof(code)) != sizeof(code))
		n = 0;
	for (j = 0; j < n; j++) {
		struct utrace_match mm = *m0;

		/* a call (e8, ff /2) ends the prologue: the unwinder may run in it */
		if (j && (code[offs[j - 1]] == 0xe8 ||
			  (code[offs[j - 1]] == 0xff && (code[offs[j - 1] + 1] & 0x38) == 0x10)))
			break;
		mm.addr += offs[j];
		mm.file_addr += offs[j];
		mm.offset += offs[j];
		id = ahost_probe_match(&t->h, img, &mm, name, UTRACE_PF_UNWIND, false);
		if (id >= 0 || id != -EBUSY)
			break;
	}
	if (id >= 0) {
		t->guards[t->nr_guards++] = id;
		ahost_set_want(&t->h, id,
			       ahost_abi(&t->h, id)->mode == UTRACE_PM_JMP ? UTRACE_PS_JMP :
									     UTRACE_PS_INT3);
	}
	return id;
}

static int arm_unwind_guards(struct atracer *t, struct utrace_image *img)
{
	static const char *const specs[] = { "libgcc_s:_Unwind_RaiseException",
					     "libgcc_s:_Unwind_ForcedUnwind", "libc:pthread_exit" };
	bool ret = false, forced = false;
	size_t s, k;
	int i;

	for (i = 0; i < t->nr_pts; i++)
		ret |= !!(ahost_abi(&t->h, t->pts[i].id)->flags & UTRACE_PF_RETPROBE);
	if (!ret)
		return 0;
	for (s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		struct utrace_match *m = NULL;
		struct utrace_spec spec;
		size_t nr = 0;
		int id = -ENOENT;

		if (s == 2 && forced)
			break; /* pthread_exit goes through the guarded _Unwind_ForcedUnwind */

		if (utrace_spec__parse(specs[s], &spec, NULL, 0))
			continue;
		if (utrace_image__resolve(img, &spec, &m, &nr, NULL))
			nr = 0;
		utrace_spec__clear(&spec);
		for (k = 0; k < nr && id < 0; k++) {
			if (m[k].sym_flags & UTRACE_SYM_ALIAS)
				continue;
			if ((size_t)t->nr_guards >= sizeof(t->guards) / sizeof(t->guards[0]))
				break;
			id = guard_function(t, img, &m[k], specs[s]);
		}
		free(m);
		if (s == 1 && id >= 0)
			forced = true;
		if (nr && id < 0) {
			cli_error("pid %d: cannot guard %s (%s): a C++ exception or pthread_exit() "
				  "through a probed frame would end the process; return probes "
				  "refused (use -u for entry probes only)",
				  (int)t->pid, specs[s],
				  t->h.why[0] ? t->h.why : strerror(id == -ENOENT ? ENOENT : -id));
			return -EXIT_TRACE;
		}
	}
	return 0;
}

/* Edges of agent bucket @b: [0]=0, [b]=[2^(b-1), 2^b). */

/*
 * -c and -H from the probe table: calls from the counters; the total,
 * min, max and errors the agent measured at each return (account() in
 * agent/dispatch.c: exact, as -b ptrace measures them); the log2 buckets
 * for -H only.
 */
static void aggregate(struct atracer *t, struct aggr *a)
{
	int i;

	for (i = 0; i < t->nr_pts; i++) {
		struct apoint *p = &t->pts[i];
		struct utrace_abi_probe *ab = ahost_abi(&t->h, p->id);
		struct aggr_stat *st; /* -m: a module's point reports through the module */
		bool timed = p->kind != CLI_PROBE_ENTRY && p->at_entry;
		uint64_t n_timed = 0, min_ns, max_ns;
		unsigned int b;

		uint64_t calls = p->kind == CLI_PROBE_RET ?
					 __atomic_load_n(&ab->returns, __ATOMIC_RELAXED) :
				 p->kind == CLI_PROBE_INJECT ? 0 :
							       ahost_hits(&t->h, p->id);

		if (p->inject && (p->kind == CLI_PROBE_RET || p->kind == CLI_PROBE_INJECT))
			calls += __atomic_load_n(&ab->inject_calls, __ATOMIC_RELAXED) /
				 p->inj_every; /* the injected calls (never returned) */
		/* a row per function called, as -b ptrace (and strace -c) print */
		st = calls && p->kind != CLI_PROBE_MODULE ? aggr_get(a, p->name, fn_name(p)) : NULL;
		if (!st)
			continue;
		st->calls += calls;
		if (!timed)
			continue;
		for (b = 0; b < UTRACE_ABI_HIST_BUCKETS; b++) {
			uint64_t n = __atomic_load_n(&ab->hist[b], __ATOMIC_RELAXED);

			if (!n)
				continue;
			st->hist[b] += n; /* the same buckets (abi.h utrace_abi_hist_bucket()) */
			n_timed += n;
		}
		st->errors += __atomic_load_n(&ab->errors, __ATOMIC_RELAXED);
		if (!n_timed)
			continue;
		/* the target wrote these: a hostile one only lies about itself */
		min_ns = ~__atomic_load_n(&ab->min_inv, __ATOMIC_RELAXED);
		max_ns = __atomic_load_n(&ab->max_ns, __ATOMIC_RELAXED);
		if (min_ns == UINT64_MAX) /* read while a call was being accounted */
			min_ns = max_ns;
		if (!st->timed || min_ns < st->min_ns)
			st->min_ns = min_ns;
		if (max_ns > st->max_ns)
			st->max_ns = max_ns;
		st->timed += n_timed;
		st->total_ns += __atomic_load_n(&ab->sum_ns, __ATOMIC_RELAXED);
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
 * -b auto in attach mode: a failure to load the agent is no error, ptrace
 * takes over; the reason is kept for -v instead of printed.
 */
static bool attach_quiet;
static char fallback_why[512];

const char *trace_agent_fallback_why(void)
{
	return fallback_why;
}

__attribute__((format(printf, 1, 2))) static void attach_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fallback_why, sizeof(fallback_why), fmt, ap);
	va_end(ap);
	if (!attach_quiet)
		cli_error("%s", fallback_why);
}

/* @pid's state letter in /proc/PID/stat ('R', 'S', 'T' stopped ...); '?' if unknown. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

static bool proc_gone(pid_t pid);
static int proc_exit_status(pid_t pid);

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
	hd.flags = o->flags; /* UTRACE_ARENA_F_FOLLOW_FORK with -F */
	utrace_abi_layout(&hd);
	hd.host_pid = (uint32_t)getpid();
	io.arena_size = hd.arena_size;
	if (proc_state(pid) == 'T') {
		/* the agent's thread could not run: nothing would ever be armed */
		attach_error("pid %d is stopped (state T): continue it (kill -CONT %d), then "
			     "attach",
			     pid, pid);
		return -EAGAIN;
	}
	cli_hold_warnings(); /* a failure gets one line, ours */
	err = utrace_inject(pid, so, &io, &inj);
	cli_release_warnings(!err);
	if (err) {
		if (err == -ESRCH)
			attach_error("cannot attach to pid %d: no such process (it has exited?)",
				     pid);
		else
			attach_error("cannot load the agent into pid %d: %s", pid,
				     errbuf[0] ? errbuf : strerror(-err));
		return err;
	}
	t->h.fd = inj.arena_fd;
	t->h.arena = inj.arena;
	t->h.hdr = inj.arena;
	if (ahost_set_layout(&t->h, &hd)) { /* before any read of the arena */
		attach_error("out of memory");
		ahost_cmd(&t->h, UTRACE_CMD_DETACH, 0, 0);
		t->h.pid = 0;
		return -ENOMEM;
	}
	t->h.pid = pid;
	t->h.stdin_fd = t->h.stdout_fd = -1;
	ahost_watch_exit(pid); /* its wait status, even once its parent reaped it */
	for (i = 0; i < 1000; i++) { /* 10 s */
		uint32_t st = __atomic_load_n(&t->h.hdr->agent_state, __ATOMIC_ACQUIRE);

		if (st == UTRACE_AGENT_READY) {
			ahost_adopt_areas(&t->h); /* a re-attach: fill the old areas first */
			return 0;
		}
		if (st != UTRACE_AGENT_NONE)
			break;
		if (proc_gone(pid)) {
			/*
			 * Died between the injection and READY: say how, at once
			 * (not 10 s later as "did not start").
			 */
			int es = proc_exit_status(pid);

			if (es > 0 && WIFSIGNALED(es))
				attach_error(
					"pid %d was killed by %s while the agent started (after "
					"its injection, before any probe was armed)",
					pid, strsignal(WTERMSIG(es)));
			else
				attach_error("pid %d exited while the agent started (status %#x)",
					     pid, es);
			t->h.pid = 0;
			return -ESRCH;
		}
		syscall(SYS_futex, &t->h.hdr->agent_state, FUTEX_WAIT, UTRACE_AGENT_NONE, &ts, NULL,
			0);
	}
	if (proc_state(pid) == 'T')
		attach_error("pid %d was stopped (state T) while the agent was loaded: continue "
			     "it (kill -CONT %d), then attach again",
			     pid, pid);
	else
		attach_error("the agent in pid %d did not start (state %u, error %d)", pid,
			     t->h.hdr->agent_state, t->h.hdr->agent_err);
	t->h.pid = 0; /* not our child: ahost_close() must not kill it */
	return -EPROTO;
}

/* Attach mode, after DETACH: every probed site holds its original bytes again. */
static int check_restored(struct atracer *t)
{
	int i, bad = 0;

	if (t->h.corrupt)
		return 1; /* its sites' records cannot be believed; drain() said why */

	for (i = 0; i < t->nr_guards; i++) {
		struct utrace_abi_probe *ab = ahost_abi(&t->h, t->guards[i]);
		uint8_t now[16];

		if (ab->len <= sizeof(now) &&
		    utrace_mem__read(t->pid, ab->addr, now, ab->len) == (ssize_t)ab->len &&
		    memcmp(now, ab->orig, ab->len)) {
			cli_error("the unwinder guard at 0x%" PRIx64 " still differs from its "
				  "original bytes after the detach",
				  ab->addr);
			bad++;
		}
	}

	for (i = 0; i < t->nr_pts; i++) {
		struct utrace_abi_probe *ab = ahost_abi(&t->h, t->pts[i].id);
		uint8_t now[16];

		if (t->pts[i].gone)
			continue; /* unloaded: nothing of ours there */
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

/*
 * A cheap signature of the target's file mappings: it changes when an
 * object is mapped or unmapped (dlopen, dlclose). 0 when unreadable.
 */
static uint64_t maps_signature(pid_t pid)
{
	struct utrace_maps *maps = utrace_maps__read(pid);
	uint64_t sig = 0;
	size_t i, n = 0;

	if (!maps)
		return 0;
	/*
	 * Code only: neither the program's data mappings nor the agent's
	 * trampolines (XOL areas mapped at arming) are a reason to re-read
	 * every object's symbols.
	 */
	for (i = 0; i < maps->nr; i++)
		if (maps->maps[i].path && (maps->maps[i].prot & UTRACE_MAP_EXEC) &&
		    strncmp(maps->maps[i].path, "/memfd:utrace-", 14)) {
			sig = (sig ^ maps->maps[i].start ^ maps->maps[i].inode) * 0x100000001b3ULL;
			n++;
		}
	utrace_maps__free(maps);
	return sig ^ n;
}

/*
 * Which image @pid runs: its start_code (/proc/PID/stat field 26), moved by
 * every exec of a PIE or ASLR'ed program; 0 if unknown.
 */
static uint64_t image_id(pid_t pid)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	for (f = 2; p && f < 26; f++) /* ')' ends field 2 */
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* Is @p's site still mapped from its object (not unloaded, not replaced)? */
static bool point_mapped(const struct utrace_maps *maps, const struct apoint *p)
{
	const struct utrace_map *m = maps ? utrace_maps__find(maps, p->addr) : NULL;

	return m && m->path && !strcmp(m->path, p->object);
}

/*
 * The target's image changed: forget the points whose object is gone
 * (want GONE: the agent writes nothing there, the range may hold another
 * object), resolve every SPEC again and arm the new matches (dlopen, or
 * the whole new image after an exec). Tracer; the agent's control thread
 * applies it in one SYNC. Returns the number of points armed or dropped.
 */
static int rescan(struct atracer *t, bool all_gone)
{
	struct utrace_maps *maps = all_gone ? NULL : utrace_maps__read(t->pid);
	struct utrace_image *img = utrace_image__open_pid(t->pid);
	int i, first = t->nr_pts, changed = 0, err;

	/*
	 * Both read from the image the points belong to? An exec between
	 * the caller's check and here would have us plan the new image
	 * before its agent serves the mailbox: leave it to the exec event.
	 */
	if (image_id(t->pid) != t->image) {
		utrace_maps__free(maps);
		if (img)
			utrace_image__close(img);
		return 0;
	}
	for (i = 0; i < t->nr_pts; i++) {
		struct apoint *p = &t->pts[i];

		if (p->gone || point_mapped(maps, p))
			continue;
		p->gone = true;
		ahost_set_want(&t->h, p->id, UTRACE_PS_GONE);
		changed++;
		if (t->opts->verbose > 1)
			cli_error("%s: its object was unloaded", p->name);
	}
	utrace_maps__free(maps);
	if (img && all_gone && cli_nr_modules && agent_modules_load(t)) {
		/* the new image's agent has no module: its probes would run nothing */
		utrace_image__close(img);
		img = NULL;
	}
	if (img) {
		t->rescan = true;
		t->pending = false;
		for (i = 0; i < t->nr_probes && t->nr_pts < AGENT_MAX_PROBES; i++)
			add_points(t, img, &t->probes[i]);
		t->rescan = false;
		utrace_image__close(img);
	}
	changed += t->nr_pts - first;
	if (!changed)
		return 0;
	err = ahost_sync(&t->h);
	if (err < 0) {
		/*
		 * -ESRCH: it exited meanwhile (its maps emptied as it went);
		 * -ECANCELED: it exec'ed, the exec event re-plans.
		 */
		if (t->opts->verbose >= 0 && err != -ESRCH && err != -ECANCELED)
			cli_error("warning: cannot arm the probes of a newly loaded object: %s",
				  t->h.why[0] ? t->h.why : "no answer from the agent");
		return changed;
	}
	say_unarmed(t, first, "");
	return changed;
}

/*
 * Has the target exec'ed into an image where no agent will answer? Attach
 * mode: always (the injected agent went with the old image; the design's
 * lifecycle: probes dropped). Launch mode: when the new image's agent has
 * not said so within 2 s (a static program, LD_PRELOAD dropped). The probes
 * are gone then, and no DETACH is sent (nothing would acknowledge it).
 */
static bool exec_without_agent(struct atracer *t, uint64_t now)
{
	uint64_t img = image_id(t->pid);
	int i;

	if (img == t->image)
		return false;
	if (!img)
		return true; /* a new mm without its code yet (exec), or a zombie */
	if (!t->exec_since)
		t->exec_since = now;
	if (t->agent_gone || (!t->attached && now - t->exec_since < 2000000000ULL))
		return true;
	t->agent_gone = true;
	for (i = 0; i < t->nr_pts; i++)
		t->pts[i].gone = true;
	if (t->opts->verbose >= 0)
		cli_error("warning: pid %d ran execve(): its probes went with the old image and "
			  "the agent is not in the new one (%s)",
			  (int)t->pid,
			  t->attached ? "attach again to trace it" :
					"a static program, or LD_PRELOAD was dropped");
	return true;
}

/*
 * Attach mode, before the DETACH: forget the points of objects unloaded
 * since the last poll, so that the disarm writes nothing where another
 * object may have been mapped.
 */
static void before_detach(struct atracer *t)
{
	if (!t->agent_gone && image_id(t->pid) == t->image)
		rescan(t, false);
}

/*
 * Called from the main loop (tracer): react to the target's image changes.
 *  - exec (launch mode): the new image's agent bumped exec_seq and waits in
 *    its constructor; every old point is gone, the XOL areas too; the SPECs
 *    are armed in the new image, then START lets its main() run.
 *  - dlopen/dlclose seen by the preloaded agent: dl_seq; the calling
 *    thread waits for dl_ack.
 *  - otherwise (injected agent, or a dlopen the agent passes straight to
 *    libc): the file mappings' signature, every 20 ms.
 */
static void agent_image_events(struct atracer *t)
{
	struct utrace_arena_hdr *hd = t->h.hdr;
	uint32_t ex = __atomic_load_n(&hd->exec_seq, __ATOMIC_ACQUIRE);
	uint32_t dl = __atomic_load_n(&hd->dl_seq, __ATOMIC_ACQUIRE);
	uint64_t now = now_mono_ns();

	if (ex != t->exec_seen) {
		t->exec_seen = ex;
		t->exec_since = 0;
		t->agent_gone = false;
		t->h.xol_base = t->h.xol_next = t->h.xol_end = 0; /* gone with the image */
		t->h.nr_areas = t->h.cur_area = 0;
		if (t->maps)
			utrace_maps__free(t->maps);
		t->maps = utrace_maps__read(t->pid);
		t->image = image_id(t->pid);
		rescan(t, true);
		t->maps_sig = maps_signature(t->pid);
		if (ahost_start(&t->h) < 0 && t->opts->verbose >= 0)
			cli_error("warning: the program's new image did not answer: %s", t->h.why);
		return;
	}
	if (dl != t->dl_seen) {
		uint64_t sig = maps_signature(t->pid);

		t->dl_seen = dl;
		/*
		 * Nothing mapped or unmapped (an object loaded already, a
		 * dlclose that only dropped a reference): answer at once,
		 * without re-reading every object's symbols.
		 */
		if (sig != t->maps_sig && image_id(t->pid) == t->image) /* else: an exec */
			rescan(t, false);
		t->maps_sig = sig;
		__atomic_store_n(&hd->dl_ack, dl, __ATOMIC_RELEASE);
		syscall(SYS_futex, &hd->dl_ack, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
		return;
	}
	if (now >= t->next_poll) {
		uint64_t sig = maps_signature(t->pid);

		t->next_poll = now + 20000000;
		/*
		 * Not while an exec is under way: the new image's agent says
		 * so (exec_seq) once it serves the mailbox; the old image's
		 * probes must not be forgotten as "unloaded" meanwhile.
		 */
		if (exec_without_agent(t, now))
			return;
		if (sig && sig != t->maps_sig) {
			t->maps_sig = sig;
			rescan(t, false);
		}
	}
}

/* ------------------------------------------------------------------------ */
/* -F: fork children that the agent kept probed, each with its own arena     */
/* ------------------------------------------------------------------------ */

/*
 * An attached process killed by SIGTRAP: a thread reached an int3 of ours
 * while it blocked SIGTRAP (the kernel forces the signal, with SIG_DFL).
 * Our failure, not the program's: said, and utrace exits 1.
 */
static bool killed_by_trap(pid_t pid, int st)
{
	if (st <= 0 || !WIFSIGNALED(st) || WTERMSIG(st) != SIGTRAP)
		return false;
	cli_error("pid %d was killed by SIGTRAP: one of its threads reached a probe's breakpoint "
		  "while it blocked SIGTRAP",
		  (int)pid);
	return true;
}

/* Has @pid exited (gone, or a zombie nobody reaped yet)? */
static bool proc_gone(pid_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

/*
 * The wait status of @pid, a zombie that is not our child (attach mode), from
 * /proc/PID/stat's exit_code (field 52); -1 once its parent has reaped it.
 */
static int proc_exit_status(pid_t pid)
{
	char path[64], buf[1024], *p;
	int fd, i, st = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ahost_exit_status(pid);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return ahost_exit_status(pid);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] != 'Z')
		return -1;
	/* ") Z ..." is field 3: skip to field 52 */
	for (p += 2, i = 3; p && i < 52; i++) {
		p = strchr(p, ' ');
		p = p ? p + 1 : NULL;
	}
	if (p)
		st = atoi(p);
	return st;
}

/*
 * A fork child of @t's process announced its arena (agent.c fork_rearena):
 * map it (through /proc/PID/fd/FD: the child's memfd) and trace the child
 * as one more process with @t's probe points (same ids: the table was
 * copied). A child that has exec'ed or exited since cannot be opened:
 * there is nothing left to follow.
 */
/* Is @pid a child of @parent, now? (/proc/PID/stat's 4th field) */
static bool is_child_of(pid_t pid, pid_t parent)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd, ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && sscanf(p + 1, " %*c %d", &ppid) == 1 && ppid == (int)parent;
}

static void kid_add(struct atracer *t, pid_t pid, int fd)
{
	struct utrace_arena_hdr *hd, lay = { .max_probes = t->h.lay.max_probes,
					     .max_threads = t->h.lay.max_threads,
					     .ring_records = t->h.lay.ring_records };
	struct atracer *k, **kids;
	char path[64], link[64];
	struct stat st;
	ssize_t n;
	void *m;
	int afd;

	/*
	 * The pid and the fd come from the arena, which the target writes: a
	 * tracer running as root must not be steered into opening another
	 * process's file. Only a child of the traced process, and only its
	 * arena memfd (agent.c fork_rearena names it "utrace-arena").
	 */
	if (pid <= 0 || fd < 0 || !is_child_of(pid, t->pid))
		return;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = '\0';
	if (strncmp(link, "/memfd:utrace-arena", 19))
		return;
	utrace_abi_layout(&lay); /* the child's arena has its parent's sizes */
	afd = open(path, O_RDWR | O_CLOEXEC);
	if (afd < 0)
		return;
	if (fstat(afd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < lay.arena_size) {
		close(afd);
		return;
	}
	m = mmap(NULL, lay.arena_size, PROT_READ | PROT_WRITE, MAP_SHARED, afd, 0);
	hd = m;
	if (m == MAP_FAILED || hd->magic != UTRACE_ABI_MAGIC || hd->version != UTRACE_ABI_VERSION ||
	    hd->agent_pid != (uint32_t)pid || hd->arena_size != lay.arena_size) {
		if (m != MAP_FAILED)
			munmap(m, lay.arena_size);
		close(afd);
		return;
	}
	k = calloc(1, sizeof(*k));
	kids = realloc(t->kids, (t->nr_kids + 1) * sizeof(*kids));
	if (k)
		k->pts = calloc((size_t)t->nr_pts + 1, sizeof(*k->pts));
	if (!k || !kids || !k->pts) {
		if (kids)
			t->kids = kids;
		if (k)
			free(k->pts);
		free(k);
		munmap(m, lay.arena_size);
		close(afd);
		return;
	}
	if (ahost_set_layout(&k->h, &lay)) {
		t->kids = kids;
		free(k->pts);
		free(k);
		munmap(m, lay.arena_size);
		close(afd);
		return;
	}
	t->kids = kids;
	t->kids[t->nr_kids++] = k;
	k->opts = t->opts;
	k->h.fd = afd;
	k->h.arena = m;
	k->h.hdr = hd;
	k->h.pid = 0; /* not our child: never killed, never waited for */
	k->h.stdin_fd = k->h.stdout_fd = -1;
	k->h.nr_probes = t->h.nr_probes;
	k->out = t->out;
	k->out.own = false; /* the root tracer closes it */
	k->quiet = t->quiet;
	k->counting = t->counting;
	k->chrome_on = t->chrome_on;
	k->mono_to_real = t->mono_to_real;
	k->pid = pid;
	/* a copy of @t's points: names and prototypes stay @t's (kids_free()) */
	memcpy(k->pts, t->pts, (size_t)t->nr_pts * sizeof(*k->pts));
	k->nr_pts = t->nr_pts;
	/* -m: the child has its parent's modules, counters in its own arena */
	memcpy(k->mod_idx, t->mod_idx, sizeof(k->mod_idx));
	memcpy(k->mod_base, t->mod_base, sizeof(k->mod_base));
	k->h.reserved_top = t->h.reserved_top;
	k->img = t->img; /* a fork child has its parent's mappings */
	k->maps = utrace_maps__read(pid);
	snprintf(k->comm, sizeof(k->comm), "%s", t->comm);
	if (t->opts->verbose > 0)
		cli_error("following pid %d, a fork child of pid %d", (int)pid, (int)t->pid);
}

/* Drain @t's children (and theirs): new ones first, then their rings. */
static int kids_poll(struct atracer *t)
{
	uint32_t *acked;
	int alive = 0, kfd, guard;
	pid_t kpid;
	size_t i;

	if (!t->h.hdr || !t->opts->follow_forks || t->h.corrupt)
		return 0;
	/* bounded: a target that keeps bumping fork_head cannot hold us here */
	for (guard = 0; guard < UTRACE_ABI_FORKS &&
			ahost_next_fork(&t->h, &t->forks_seen, &t->forks_lost, &kpid, &kfd, &acked);
	     guard++) {
		kid_add(t, kpid, kfd);
		/* the child may go on (it waits for this, agent.c fork_rearena) */
		__atomic_store_n(acked, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, acked, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
	}
	for (i = 0; i < t->nr_kids; i++) {
		struct atracer *k = t->kids[i];

		if (k->exited)
			continue;
		drain(k);
		if (proc_gone(k->pid)) {
			k->exited = true;
			drain(k); /* what it wrote last */
		} else {
			alive++;
		}
		alive += kids_poll(k);
	}
	return alive;
}

/* Take the probes out of every child still running (Ctrl-C, -d). */
static int kids_detach(struct atracer *t)
{
	int bad = 0, err;
	size_t i;

	for (i = 0; i < t->nr_kids; i++) {
		struct atracer *k = t->kids[i];

		bad += kids_detach(k);
		if (k->exited || k->detached || proc_gone(k->pid))
			continue;
		err = ahost_cmd(&k->h, UTRACE_CMD_DETACH, 0, 0);
		k->detached = true;
		drain(k);
		if (err < 0 && !proc_gone(k->pid)) {
			cli_error("pid %d: detach failed: %s", (int)k->pid, k->h.why);
			bad++;
		} else if (!proc_gone(k->pid)) {
			bad += check_restored(k);
		}
	}
	return bad;
}

/*
 * After the root process has ended or detached: with -F, the children run
 * on probed until they exit, or until Ctrl-C / -d takes their probes out
 * (the ptrace backend follows them the same way). Return: the number of
 * children that could not be detached cleanly.
 */
static int kids_wait(struct atracer *t, uint64_t deadline)
{
	struct timespec ts = { 0, 1000000 };

	while (kids_poll(t) > 0) {
		if (agent_stop() || (deadline && now_mono_ns() >= deadline))
			return kids_detach(t);
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void kids_aggregate(struct atracer *t, struct aggr *a)
{
	size_t i;

	for (i = 0; i < t->nr_kids; i++) {
		aggregate(t->kids[i], a);
		kids_aggregate(t->kids[i], a);
	}
}

static void pid_stats(struct atracer *t, bool detached);

static void kids_stats(struct atracer *t)
{
	size_t i;

	for (i = 0; i < t->nr_kids; i++) {
		pid_stats(t->kids[i], t->kids[i]->detached);
		kids_stats(t->kids[i]);
	}
	if (t->forks_lost)
		cli_error("pid %d: %u fork children were not followed (too many at once)",
			  (int)t->pid, t->forks_lost);
}

static void kids_free(struct atracer *t)
{
	size_t i;

	for (i = 0; i < t->nr_kids; i++) {
		struct atracer *k = t->kids[i];

		kids_free(k);
		if (!k->exited && !k->detached && !proc_gone(k->pid))
			ahost_cmd(&k->h, UTRACE_CMD_DETACH, 0, 0); /* a failure: probes out */
		if (k->maps)
			utrace_maps__free(k->maps);
		if (k->maps2)
			utrace_maps__free(k->maps2);
		if (k->img2)
			utrace_image__close(k->img2);
		free(k->named);
		free(k->pts);
		ahost_close(&k->h);
		free(k);
	}
	free(t->kids);
	t->kids = NULL;
	t->nr_kids = 0;
}

/* Attach mode, several processes: the verbose figures of @t's process. */
static void pid_stats(struct atracer *t, bool detached)
{
	uint64_t hits = 0, rets = 0, missed = 0;
	int i;

	for (i = 0; i < t->nr_pts; i++) {
		hits += ahost_hits(&t->h, t->pts[i].id);
		rets += ahost_abi(&t->h, t->pts[i].id)->returns;
		missed += ahost_abi(&t->h, t->pts[i].id)->missed_ret;
	}
	cli_error("pid %d: %" PRIu64 " entry hits, %" PRIu64 " returns, %" PRIu64
		  " returns missed, %d probe points%s",
		  (int)t->pid, hits, rets, missed, t->nr_pts, detached ? " (detached)" : "");
	for (i = 0; i < t->nr_pts; i++) {
		uint64_t n = ahost_abi(&t->h, t->pts[i].id)->inject_calls;

		if (t->pts[i].inject)
			cli_error("pid %d: --inject '%s': %" PRIu64 " of %" PRIu64
				  " calls injected (%s)",
				  (int)t->pid, t->pts[i].inj_spec, n / t->pts[i].inj_every, n,
				  t->pts[i].name);
	}
}

/*
 * utrace -b agent -p A,B,...: one agent and one arena per process, each
 * armed with every SPEC resolved against its own image, all drained by one
 * loop into one output (one Chrome file, one merged -c table). Ctrl-C or
 * -d detaches them all; a process that exits meanwhile just stops
 * counting. Any failure after the first attach detaches the processes
 * already armed (their code bytes restored) before saying why. With -b
 * auto, only a failure to load the agent into the first process falls back
 * to ptrace (nothing has been touched yet).
 */
static int trace_agent_pids(struct cli_opts *opts, const struct cli_probe *probes, int nr_probes,
			    bool fallback_ok, const char *so, const struct ahost_opts *ho)
{
	struct sigaction sa = { .sa_handler = on_agent_interrupt, .sa_flags = SA_RESTART };
	int n = opts->nr_pids, ret = EXIT_TRACE, err, i, k, armed = 0;
	struct atracer *ts = calloc((size_t)n, sizeof(*ts));
	bool detached = false, any_lost = false, bad = false;
	uint64_t deadline = 0;

	if (!ts) {
		cli_error("out of memory");
		return EXIT_TRACE;
	}
	for (i = 0; i < n; i++) {
		struct atracer *t = &ts[i];

		t->opts = opts;
		t->h.fd = -1;
		t->counting = opts->summary || opts->hist;
		t->quiet = t->counting && opts->format != CLI_FMT_CHROME;
	}
	/* a Ctrl-C while attaching and arming detaches cleanly (cmd_trace_agent()) */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	for (i = 0; i < n; i++) {
		struct atracer *t = &ts[i];

		t->pts = calloc(AGENT_MAX_PROBES, sizeof(*t->pts));
		if (!t->pts) {
			cli_error("out of memory");
			goto out;
		}
		attach_quiet = fallback_ok && i == 0;
		err = agent_attach(t, ho, opts->pids[i], so);
		attach_quiet = false;
		if (err) {
			if (fallback_ok && i == 0)
				ret = TRACE_AGENT_FALLBACK;
			goto out;
		}
		armed++;
		t->pid = opts->pids[i];
		t->img = utrace_image__open_pid(t->pid);
		if (!t->img) {
			cli_error("cannot read the image of pid %d: %s", t->pid, strerror(errno));
			goto out;
		}
		if (cli_nr_modules && agent_modules_load(t))
			goto out; /* -m */
		for (k = 0; k < nr_probes; k++) {
			err = add_points(t, t->img, &probes[k]);
			if (err < 0) {
				ret = -err;
				goto out;
			}
		}
		if (!t->nr_pts) {
			cli_error("no probe point to arm in pid %d (use -b ptrace for libraries "
				  "loaded later)",
				  t->pid);
			goto out;
		}
		if (arm_unwind_guards(t, t->img))
			goto out;
		err = ahost_sync(&t->h);
		if (err < 0) {
			cli_error("cannot arm the probes in pid %d: %s", t->pid,
				  t->h.why[0] ? t->h.why : strerror(-err));
			goto out;
		}
		{
			char pfx[32];

			snprintf(pfx, sizeof(pfx), "pid %d: ", (int)t->pid);
			say_unarmed(t, 0, pfx);
		}
		t->maps = utrace_maps__read(t->pid);
	}
	if (opts->verbose > 0)
		cli_error("backend: agent%s (%d processes)",
			  fallback_ok ? " (auto: the agent could be loaded)" : "", n);
	err = output_open(&ts[0].out, opts);
	if (err) {
		cli_error("cannot open output file '%s': %s", opts->output, strerror(-err));
		ret = EXIT_USAGE;
		goto out;
	}
	for (i = 0; i < n; i++) {
		char path[64];
		FILE *f;

		if (i) {
			ts[i].out = ts[0].out;
			ts[i].out.own = false; /* ts[0] closes it */
		}
		ts[i].mono_to_real = (int64_t)now_realtime_ns() - (int64_t)now_mono_ns();
		ts[i].chrome_on = opts->format == CLI_FMT_CHROME;
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)ts[i].pid);
		f = fopen(path, "re");
		if (f) {
			if (fgets(ts[i].comm, sizeof(ts[i].comm), f))
				ts[i].comm[strcspn(ts[i].comm, "\n")] = '\0';
			fclose(f);
		}
	}
	if (opts->format == CLI_FMT_CHROME)
		chrome_open(&agent_chrome, ts[0].out.f);
	if (opts->duration > 0)
		deadline = now_mono_ns() + (uint64_t)(opts->duration * 1e9);
	for (;;) {
		struct timespec tsl = { 0, 1000000 };
		int alive = 0, st;

		for (i = 0; i < n; i++) {
			alive += kids_poll(&ts[i]); /* -F */
			if (ts[i].exited)
				continue;
			/* a zombie, which we may see before its parent reaps it */
			st = proc_exit_status(ts[i].pid);
			drain(&ts[i]);
			if (st > 0 && WIFSIGNALED(st)) {
				ts[i].exited = true;
				drain(&ts[i]); /* its last records, then the line strace -p prints */
				if (!ts[i].quiet)
					output_killed(&ts[i].out, ts[i].pid, st);
				bad |= killed_by_trap(ts[i].pid, st);
			} else if (kill(ts[i].pid, 0) && errno == ESRCH) {
				ts[i].exited = true; /* its last records are drained below */
				bad |= killed_by_trap(ts[i].pid, proc_exit_status(ts[i].pid));
			} else {
				alive++;
			}
		}
		if (!alive)
			break;
		if (agent_stop() || (deadline && now_mono_ns() >= deadline)) {
			detached = true;
			for (i = 0; i < n; i++) {
				if (ts[i].exited)
					continue;
				err = ahost_cmd(&ts[i].h, UTRACE_CMD_DETACH, 0, 0);
				if (err < 0 && err != -ESRCH) {
					cli_error("pid %d: detach failed: %s", ts[i].pid,
						  ts[i].h.why);
					bad = true;
				}
				drain(&ts[i]);
				if (check_restored(&ts[i]))
					bad = true; /* said which site */
				if (kids_detach(&ts[i]))
					bad = true;
			}
			break;
		}
		nanosleep(&tsl, NULL);
	}
	for (i = 0; i < n; i++) {
		drain(&ts[i]);
		any_lost |= ts[i].lost != 0;
	}
	if (agent_chrome.f)
		chrome_close(&agent_chrome);
	if (ts[0].counting) {
		struct aggr a;
		FILE *f = ts[0].chrome_on ? stderr : ts[0].out.f;
		bool json = opts->format == CLI_FMT_JSON;
		uint64_t now = now_realtime_ns();

		aggr_init(&a);
		for (i = 0; i < n; i++) {
			aggregate(&ts[i], &a); /* merged by probe name, as -b ptrace does */
			kids_aggregate(&ts[i], &a);
		}
		if (opts->summary)
			json ? aggr_json_summary(f, &a, now, ts[0].pid) :
			       aggr_print_summary(f, &a, "function");
		if (opts->hist)
			json ? aggr_json_hist(f, &a, now, ts[0].pid) : aggr_print_hist(f, &a);
		aggr_clear(&a);
	}
	if (cli_nr_modules) {
		for (i = 0; i < n; i++)
			agent_modules_count(&ts[i]); /* summed over the processes */
		modules_print_counters(ts[0].chrome_on ? stderr : ts[0].out.f,
				       opts->format == CLI_FMT_JSON, now_realtime_ns(), ts[0].pid);
	}
	output_flush(&ts[0].out);
	if (any_lost && opts->verbose >= 0)
		for (i = 0; i < n; i++)
			if (ts[i].lost)
				cli_error("pid %d: %" PRIu64
					  " events were lost (ring buffers full)",
					  ts[i].pid, ts[i].lost);
	if (opts->verbose > 0) {
		for (i = 0; i < n; i++) {
			pid_stats(&ts[i], detached && !ts[i].exited);
			kids_stats(&ts[i]);
		}
	}
	ret = bad || agent_corrupt ? EXIT_TRACE : 0;
	armed = 0; /* detached, or exited */
out:
	for (i = 0; i < n; i++) {
		struct atracer *t = &ts[i];

		/* a failure after the injections: take every probe out before leaving */
		if (i < armed && !t->exited && t->h.arena)
			ahost_cmd(&t->h, UTRACE_CMD_DETACH, 0, 0);
		kids_free(t);
		t->h.pid = 0; /* not our child: never killed */
		if (t->img)
			utrace_image__close(t->img);
		if (t->img2)
			utrace_image__close(t->img2);
		if (t->maps)
			utrace_maps__free(t->maps);
		if (t->maps2)
			utrace_maps__free(t->maps2);
		free(t->named);
		ahost_close(&t->h);
		for (k = 0; t->pts && k < t->nr_pts; k++) {
			free(t->pts[k].name);
			free(t->pts[k].object);
			free(t->pts[k].symbol);
		}
		free(t->pts);
	}
	if (agent_chrome.f)
		chrome_close(&agent_chrome);
	output_close(&ts[0].out);
	free(ts);
	proto_dwarf_clear();
	return ret;
}

int cmd_trace_agent(struct cli_opts *opts, const struct cli_probe *probes, int nr_probes,
		    bool fallback_ok)
{
	static struct atracer tr;
	struct atracer *t = &tr;
	struct ahost_opts ho = { .max_probes = AGENT_MAX_PROBES,
				 .max_threads = AGENT_MAX_THREADS,
				 .ring_records = AGENT_RING_RECORDS };
	struct sigaction sa = { .sa_handler = on_agent_interrupt, .sa_flags = SA_RESTART };
	char path[PATH_MAX];
	char **argv = NULL;
	const char *so = trace_agent_path(), *why;
	struct utrace_image *img = NULL;
	uint64_t deadline = 0;
	bool detached = false, attached = false;
	int ret = EXIT_TRACE, err, i, st = 0, exit_st = -1;

	memset(t, 0, sizeof(*t));
	t->opts = opts;
	t->h.fd = -1;
	/* records per thread ring, a power of two (tests make it small to see drops) */
	if (getenv("UTRACE_AGENT_RING")) {
		unsigned long n = strtoul(getenv("UTRACE_AGENT_RING"), NULL, 0);

		if (n >= 2 && n <= (1UL << 20) && !(n & (n - 1)))
			ho.ring_records = (uint32_t)n;
	}
	if (opts->follow_forks)
		ho.flags |= UTRACE_ARENA_F_FOLLOW_FORK; /* fork children keep their probes */
	/* a full ring makes the hit wait for the drain, bounded (agent/ring.c) */
	if (!opts->lossy)
		ho.flags |= UTRACE_ARENA_F_RING_WAIT;
	why = trace_agent_unsupported(opts);
	if (why) {
		cli_error("%s is not available with the agent backend yet (use -b ptrace)", why);
		return EXIT_TRACE;
	}
	if (!so) {
		if (fallback_ok)
			return TRACE_AGENT_FALLBACK;
		if (agent_unsafe[0])
			cli_error("%s (only its owner may write it and the directories above, or "
				  "use -b ptrace)",
				  agent_unsafe);
		else
			cli_error("cannot find libutrace-agent.so (set UTRACE_AGENT=PATH, a file "
				  "only its owner can write, or use -b ptrace)");
		return EXIT_TRACE;
	}
	if (opts->nr_pids > 1)
		return trace_agent_pids(opts, probes, nr_probes, fallback_ok, so, &ho);
	/*
	 * From here on a Ctrl-C (or SIGTERM, SIGHUP) detaches cleanly, also one
	 * that comes while the agent is loaded or the probes armed: the loop
	 * below sees it first thing. SA_RESTART: the injection's waits and
	 * the mailbox's futex waits go on.
	 */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	t->counting = opts->summary || opts->hist;
	t->quiet = t->counting && opts->format != CLI_FMT_CHROME; /* no records at all */
	if (opts->nr_pids) {
		t->pts = calloc(AGENT_MAX_PROBES, sizeof(*t->pts));
		if (!t->pts) {
			cli_error("out of memory");
			goto out;
		}
		attach_quiet = fallback_ok;
		err = agent_attach(t, &ho, opts->pids[0], so);
		if (err) {
			/* nothing armed: with -b auto, ptrace attaches instead */
			if (fallback_ok)
				ret = TRACE_AGENT_FALLBACK;
			goto out;
		}
		attached = true;
		t->attached = true;
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
	t->counting = opts->summary || opts->hist;
	t->quiet = t->counting && opts->format != CLI_FMT_CHROME; /* no records at all */
	setenv("UTRACE_AGENT", so, 1);
	err = ahost_launch(&t->h, &ho, argv);
	unsetenv("UTRACE_AGENT");
	if (err) {
		/*
		 * main() has not run: the command can be started again; unless
		 * it has exited (-ECHILD: ld.so did not run the agent, and the
		 * program ran without it), which a command does only once.
		 */
		if (fallback_ok && err != -ECHILD) {
			ahost_close(&t->h);
			t->h.fd = -1;
			ret = TRACE_AGENT_FALLBACK;
			goto out;
		}
		if (err == -ECHILD)
			cli_error("cannot start '%s' with the agent (%s): %s (it is not started "
				  "again; use -b ptrace)",
				  opts->argv[0], so, t->h.why);
		else
			cli_error("cannot start '%s' with the agent (%s): %s", opts->argv[0], so,
				  t->h.why[0] ? t->h.why : strerror(-err));
		goto out;
	}
armed:
	t->pid = t->h.pid;
	if (opts->verbose > 0)
		cli_error("backend: agent%s",
			  fallback_ok ? " (auto: the agent could be loaded, handlers run in the "
					"probed threads)" :
					"");
	img = utrace_image__open_pid(t->h.pid);
	if (!img) {
		cli_error("cannot read the image of pid %d: %s", t->h.pid, strerror(errno));
		goto out;
	}
	t->img = img;
	t->probes = probes;
	t->nr_probes = nr_probes;
	t->exec_seen = __atomic_load_n(&t->h.hdr->exec_seq, __ATOMIC_ACQUIRE);
	t->dl_seen = __atomic_load_n(&t->h.hdr->dl_seq, __ATOMIC_ACQUIRE);
	t->maps_sig = maps_signature(t->h.pid);
	t->image = image_id(t->h.pid);
	if (cli_nr_modules) {
		ret = agent_modules_load(t); /* -m: before add_points() binds their probes */
		if (ret)
			goto out;
		ret = EXIT_TRACE;
	}
	for (i = 0; i < nr_probes; i++) {
		err = add_points(t, img, &probes[i]);
		if (err < 0) {
			ret = -err;
			goto out;
		}
	}
	if (!t->nr_pts && !t->pending) {
		/* one SPEC: its line said why, and is the error */
		if (nr_probes > 1)
			cli_error("no probe point to arm in %s (every match was refused, see "
				  "above)",
				  attached ? "the process" : opts->argv[0]);
		goto out;
	}
	if (attached && arm_unwind_guards(t, img))
		goto out;
	err = ahost_sync(&t->h); /* the number of probes changed */
	if (err < 0) {
		cli_error("cannot arm the probes: %s", t->h.why[0] ? t->h.why : strerror(-err));
		goto out;
	}
	say_unarmed(t, 0, "");
	if (!t->pending && !any_point_armed(t)) {
		/* each one failed at the SYNC (say_unarmed() said why): the same rule */
		if (nr_probes > 1)
			cli_error("no probe point could be armed in %s",
				  attached ? "the process" : opts->argv[0]);
		goto out;
	}
	err = output_open(&t->out, opts);
	if (err) {
		cli_error("cannot open output file '%s': %s", opts->output, strerror(-err));
		ret = EXIT_USAGE;
		goto out;
	}
	if (opts->format == CLI_FMT_CHROME) {
		char path[64];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)t->pid);
		f = fopen(path, "re");
		if (f) {
			if (fgets(t->comm, sizeof(t->comm), f))
				t->comm[strcspn(t->comm, "\n")] = '\0';
			fclose(f);
		}
		t->chrome_on = true;
		chrome_open(&agent_chrome, t->out.f);
	}
	t->mono_to_real = (int64_t)now_realtime_ns() - (int64_t)now_mono_ns();
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

		if (w == t->h.pid)
			break;
		if (attached && proc_gone(t->pid)) {
			exit_st = proc_exit_status(t->pid);
			break;
		}
		if (!attached && t->h.reaped) {
			st = t->h.status; /* exited during a command (a re-arm) */
			break;
		}
		if (attached && (agent_stop() || (deadline && now_mono_ns() >= deadline))) {
			before_detach(t);
			err = t->agent_gone ? 0 : ahost_cmd(&t->h, UTRACE_CMD_DETACH, 0, 0);
			if (err < 0)
				cli_error("detach failed: %s", t->h.why);
			detached = true;
			drain(t);
			if (check_restored(t) || kids_detach(t))
				err = -EIO;
			st = err < 0 ? EXIT_TRACE << 8 : 0;
			break;
		}
		agent_image_events(t);
		drain(t);
		kids_poll(t); /* -F */
		if (agent_stop() || (deadline && now_mono_ns() >= deadline)) {
			/* every probe out, then the command runs on: wait for it */
			err = t->agent_gone ? 0 : ahost_cmd(&t->h, UTRACE_CMD_DETACH, 0, 0);
			if (err && err != -ESRCH)
				cli_error("detach failed: %s", t->h.why);
			detached = true;
			drain(t);
			kids_detach(t);
			if (t->h.reaped)
				st = t->h.status; /* it ended during the DETACH, reaped there */
			else if (waitpid(t->h.pid, &st, 0) != t->h.pid)
				st = 0;
			break;
		}
		nanosleep(&ts, NULL);
	}
	t->h.pid = 0; /* reaped, or not our child */
	t->exited = !attached || !detached; /* a detached process can still be read */
	ret = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	drain(t);
	if (attached && agent_corrupt)
		ret = EXIT_TRACE; /* drain() said why */
	if (exit_st > 0 && !t->quiet)
		output_killed(&t->out, t->pid, exit_st); /* as strace -p; still exit 0 */
	if (attached && killed_by_trap(t->pid, exit_st))
		ret = EXIT_TRACE; /* ... unless we killed it */
	if (kids_wait(t, deadline) && attached)
		ret = EXIT_TRACE; /* -F: said which child */
	if (t->chrome_on)
		chrome_close(&agent_chrome); /* before the tables, which go to stderr then */
	if (t->counting) {
		struct aggr a;
		FILE *f = t->chrome_on ? stderr : t->out.f;
		bool json = opts->format == CLI_FMT_JSON;
		uint64_t now = now_realtime_ns();

		aggr_init(&a);
		aggregate(t, &a);
		kids_aggregate(t, &a);
		if (opts->summary)
			json ? aggr_json_summary(f, &a, now, t->pid) :
			       aggr_print_summary(f, &a, "function");
		if (opts->hist)
			json ? aggr_json_hist(f, &a, now, t->pid) : aggr_print_hist(f, &a);
		aggr_clear(&a);
	}
	if (cli_nr_modules) {
		agent_modules_count(t);
		modules_print_counters(t->chrome_on ? stderr : t->out.f,
				       opts->format == CLI_FMT_JSON, now_realtime_ns(), t->pid);
	}
	output_flush(&t->out);
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
		for (i = 0; i < t->nr_pts; i++) {
			uint64_t n = ahost_abi(&t->h, t->pts[i].id)->inject_calls;

			if (t->pts[i].inject)
				cli_error("--inject '%s': %" PRIu64 " of %" PRIu64
					  " calls injected (%s)",
					  t->pts[i].inj_spec, n / t->pts[i].inj_every, n,
					  t->pts[i].name);
		}
		kids_stats(t);
	}
out:
	if (attached && !detached && t->h.pid > 0 && !t->agent_gone) {
		/* a failure after the injection: take every probe out before leaving */
		ahost_cmd(&t->h, UTRACE_CMD_DETACH, 0, 0);
		t->h.pid = 0;
	}
	if (img)
		utrace_image__close(img);
	if (t->maps)
		utrace_maps__free(t->maps);
	kids_free(t);
	if (t->chrome_on)
		chrome_close(&agent_chrome); /* every "B" gets its "E"; accepts a closed one */
	output_close(&t->out);
	if (t->img2)
		utrace_image__close(t->img2);
	if (t->maps2)
		utrace_maps__free(t->maps2);
	free(t->named);
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
