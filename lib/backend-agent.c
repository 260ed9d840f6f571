/* SPDX-License-Identifier: MIT */
/*
 * backend-agent.c - the agent backend of the uprobes layer: probes run
 * inside the target, in the probed thread (libutrace-agent.so), at
 * nanosecond cost; the tracer only plans sites, writes the probe table
 * and reads counters and rings. Runs in the tracer process, in the
 * session's tracing thread, behind the ops of backend.h.
 *
 * HOW A PROCESS GETS ITS AGENT
 *
 *  - Launch (utrace_session__launch() after utrace_uprobes__new()): the
 *    session's launch hook (internal.h launch_hook, launch_prepare()
 *    below) makes the arena (memfd, 0600) before the fork and has the
 *    child inherit it at a high fd with the agent first in LD_PRELOAD and
 *    UTRACE_AGENT_FD, as lib/agent-host.c's own launch does. The arena
 *    asks for WAIT_START and HELLO (common/abi.h): the agent's constructor
 *    starts its control thread, waits until it is READY, then executes one
 *    int3 (__utrace_agent_hello_site). That SIGTRAP is a signal-delivery
 *    stop of the session: the registry's engine hands it to ->signal
 *    (agent_signal()), which plans and arms every probe point the registry
 *    resolved at the exec, while the main thread waits in that stop and
 *    the control thread executes the commands; then START, and the trap
 *    is suppressed. main() runs probed from its first instruction.
 *  - Attach (utrace_session__attach(), then register or sync): ->proc_init
 *    injects the agent with utrace_session__inject() (lib/inject.c: one
 *    thread does the calls, the others never stop) and waits for READY.
 *
 * Either way the process stays traced by the session (its engines may want
 * syscalls, signals, exits), which costs a ptrace stop per signal: the
 * agent's int3-mode sites (sites too short for a jmp, and every site while
 * it is being upgraded) raise SIGTRAP, which the session delivers to the
 * agent's handler (foreign to us: ->signal returns UTRACE_RESUME), and the
 * upgrade signal of the agent goes through the same way. Jmp sites never
 * stop.
 *
 * WHAT THE REGISTRY'S OPS BECOME
 *
 *  arm/point_update  a point gets an agent probe id once its probes are
 *                    known: the union of their built-in actions
 *                    (point_flags()) is written with the planned site
 *                    into the arena's probe table at ->commit; a change
 *                    of the union retires the id (DISARMED) and plans a
 *                    new one (the agent takes flags only before the
 *                    first SYNC of an id).
 *  commit            plan the dirty points (ahost_probe_match()), set
 *                    @want, one SYNC: the agent patches every site in one
 *                    transaction without stopping any thread.
 *  disarm            @want = DISARMED, applied at the next SYNC (commit,
 *                    or release, which is a DETACH: the agent restores
 *                    every byte and goes dormant).
 *  point_counts      the agent's per-thread hit counters and the probe's
 *                    shared figures (returns, errors, exact sum/min/max,
 *                    log2 histogram), read while the program runs.
 *  poll              drain every thread ring into struct utrace_record,
 *                    strings copied at the hit (STR records) included.
 *
 * What the agent cannot honour, and why (probe.h):
 *  - tracer-side handlers: the hit does not stop, there is no tracer code
 *    to run (EOPNOTSUPP at registration); C code runs in the target as a
 *    probe module (utrace/module.h, utrace_uprobes__load_module(): loaded
 *    into each process by proc_load_modules(), bound per point id by
 *    bind_modules()).
 *  - fork children without UTRACE_UPROBES_FOLLOW_FORKS: the agent removes
 *    its patches from a child before it runs (agent.c atfork_child); with
 *    it, follow_forks() makes each child a process of the layer. A
 *    followed child's exec is not followed yet.
 *  - figures per probe at a shared point: the agent counts per point; a
 *    second probe at the same point with other actions gets the point's
 *    figures for the actions it asked for.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "utrace/inject.h"
#include "utrace/proc.h"
#include "abi.h"
#include "agent-host.h"
#include "backend.h"
#include "internal.h"
#include "uprobes.h"

#define AGENT_PROBES 4096 /* the agent's cap (agent-internal.h AGENT_MAX_PROBES) */
#define AGENT_THREADS 128
#define AGENT_RING 8192
#define READY_WAIT_MS 10000

/* Per process (pp->priv). */
struct agent_proc {
	struct ahost h;
	pid_t pid;
	bool ready; /* the agent runs and takes commands */
	bool hello; /* launched: planning waits for the constructor's hello stop */
	bool anchored; /* only the control thread stays traced (anchor()) */
	bool dl_pending; /* anchored: the control thread's dl int3 was seen, re-plan */
	bool attached; /* agent_attach(): injected, its control thread the one traced */
	bool corrupt_said; /* its arena failed a check: said once, the process to detach */
	bool dirty; /* points to plan or disarm at the next commit */
	bool exec_wait; /* anchored, launched: exec'ed, its new image's agent not seen yet */
	uint32_t exec_seen; /* the agent's exec_seq handled */
	uint64_t exec_since; /* when exec_wait began (follow_execs()) */
	bool exec_waited; /* follow_execs() waited for this exec's agent once */
	bool guarded; /* with return probes: the unwinders guarded (guard_unwinders()) */
	pid_t fork_parent; /* a followed fork child (follow_forks()): its points are its parent's */
	uint32_t forks_seen, forks_lost; /* the arena's fork announcements read */
	uint64_t hello_site; /* runtime address of the hello int3 */
	uint64_t dl_site; /* ... and of the dlopen/dlclose one */
	uint64_t maps_hash, maps_at; /* injected: maps_changed() */
	uint32_t dl_seen; /* the agent's dl_seq handled */
	uint64_t drops; /* ring drops reported so far */
	struct probe_point **by_id; /* agent probe id -> point */
	/* the record being assembled from a group (ENTRY/RETURN + STR records) */
	struct utrace_abi_event grp;
	unsigned int grp_left;
	char *str[7];
	size_t str_len[7];
	unsigned int str_flags[7];
	uint64_t stack[UTRACE_REC_MAX_STACK];
	unsigned int nr_stack;
	/* -k's copy (REGS, STACKDATA records): utrace_record.regs, .stack_data */
	uint64_t regs[UTRACE_ABI_NR_REGS];
	unsigned int nr_regs;
	uint8_t *dump; /* [UTRACE_ABI_STACK_DUMP_MAX], at the first copy */
	size_t dump_len;
	bool grp_strs; /* @str holds a string of the group (grp_reset() frees) */
	struct agent_proc *next; /* layer's list: kept across exec */
	struct utrace_uprobes *up;
	/* C probe modules: [id - 1] = the agent's index of that module + 1, 0: not loaded */
	int mod_idx[UPROBES_MAX_MODULES];
	bool mod_arena; /* the arena holds module counters (kept across exec, fork) */
	uint64_t text_lo, text_hi; /* the agent's code in this image (agent_own_syscall()) */
	bool ctor_seen; /* launched: a syscall of the agent's constructor was seen */
	bool execed; /* image_gone() ran: UTRACE_UPROBES_LAUNCH_ARMED is the first image's */
};

/* Per point (pt->priv). */
struct agent_point {
	int id; /* agent probe id, -1 while none */
	uint32_t flags; /* UTRACE_PF_* of @id */
	uint64_t mods; /* mods_sig() of @id's bindings: modules cannot be unbound */
	bool want; /* armed once committed */
	int err; /* the planner's or the agent's refusal */
};

/* Per layer (up->priv). */
struct agent_layer {
	char path[PATH_MAX];
	struct agent_proc *procs;
	struct agent_proc *launch; /* made by the launch hook, adopted at the exec */
	bool kid_exec_said; /* a followed fork child's exec was said (agent_proc_forget()) */
	uint32_t mod_reserved; /* probe ids at the top of the table: module counters */
	utrace_record_fn_t fn; /* poll's callback while draining */
	void *fn_ctx;
	int fn_ret;
	int delivered;
	struct utrace_uprobes *up;
	/*
	 * grp_emit()'s record: zeroed once (agent_layer_new), each record's
	 * fields written in full by grp_emit(), never the others (per-event
	 * zeroing of its 384 bytes was most of the cost of a recorded call)
	 */
	struct utrace_record rec;
	bool rec_dirty; /* @rec holds strings or a stack: grp_emit() clears them */
};

static struct agent_layer *layer(struct utrace_uprobes *up)
{
	return up->priv;
}

/* ------------------------------------------------------------------------ */
/* Finding the agent                                                         */
/* ------------------------------------------------------------------------ */

/*
 * The agent object: $UTRACE_AGENT, else the build tree's
 * ($UTRACE_BUILD_DIR), else the installed one. It is loaded into targets,
 * so nobody but us or root may be able to replace it (inject_check_path()).
 */
static int find_agent(struct agent_layer *al, const char *asked, char *why, size_t whylen)
{
	const char *env = getenv("UTRACE_AGENT"), *b = getenv("UTRACE_BUILD_DIR");
	char cand[4][PATH_MAX], real[PATH_MAX], w[PATH_MAX + 64];
	int n = 0, i;

	if (asked && *asked)
		snprintf(cand[n++], PATH_MAX, "%s", asked);
	else if (env && *env)
		snprintf(cand[n++], PATH_MAX, "%s", env);
	if (b && *b)
		snprintf(cand[n++], PATH_MAX, "%s/agent/libutrace-agent.so", b);
#ifdef UTRACE_LIBDIR
	snprintf(cand[n++], PATH_MAX, "%s/utrace/libutrace-agent.so", UTRACE_LIBDIR);
#endif
	why[0] = 0;
	for (i = 0; i < n; i++) {
		if (realpath(cand[i], real) && inject_check_path(real, real, w, sizeof(w)) == 0) {
			snprintf(al->path, sizeof(al->path), "%s", real);
			return 0;
		}
		if (!why[0]) {
			const char *e = access(cand[i], R_OK) ? strerror(errno) : w;
			int l = snprintf(why, whylen, "%.*s", (int)(whylen / 2), cand[i]);

			if (l >= 0 && (size_t)l < whylen)
				snprintf(why + l, whylen - (size_t)l, ": %.*s", (int)(whylen / 2),
					 e);
		}
	}
	if (!why[0])
		snprintf(why, whylen, "libutrace-agent.so is not installed");
	return -EOPNOTSUPP;
}

/* ------------------------------------------------------------------------ */
/* Arena                                                                     */
/* ------------------------------------------------------------------------ */

static void arena_header(struct utrace_arena_hdr *hd, uint32_t flags, unsigned int depth)
{
	memset(hd, 0, sizeof(*hd));
	hd->max_probes = AGENT_PROBES;
	hd->max_threads = AGENT_THREADS;
	hd->ring_records = AGENT_RING;
	if (getenv("UTRACE_AGENT_RING")) { /* tests make it small to see drops */
		unsigned long n = strtoul(getenv("UTRACE_AGENT_RING"), NULL, 0);

		if (n >= 2 && n <= (1UL << 20) && !(n & (n - 1)))
			hd->ring_records = (uint32_t)n;
	}
	/*
	 * -k's copy of the stack for the CFI unwinder (ABI 12): 4 KiB by
	 * default; UTRACE_AGENT_STACK_DUMP sets it (0: frame pointers only,
	 * as before ABI 12; a measurement's baseline)
	 */
	hd->stack_dump = UTRACE_ABI_STACK_DUMP;
	if (getenv("UTRACE_AGENT_STACK_DUMP")) {
		unsigned long n = strtoul(getenv("UTRACE_AGENT_STACK_DUMP"), NULL, 0);

		hd->stack_dump =
			n < UTRACE_ABI_STACK_DUMP_MAX ? (uint32_t)n : UTRACE_ABI_STACK_DUMP_MAX;
	}
	hd->flags = flags;
	hd->max_depth = depth;
	utrace_abi_layout(hd);
	hd->host_pid = (uint32_t)getpid();
}

/*
 * While a command waits for the agent: the session's stops go on (the
 * control thread's own, a hello), exits are held (session_pump_hold()): a
 * process freed under the waiting command would be read after its free.
 */
static void pump(void *ctx)
{
	session_pump_hold(ctx);
}

static struct agent_proc *aproc_new(struct utrace_uprobes *up)
{
	struct agent_proc *ap = calloc(1, sizeof(*ap));
	struct utrace_session *s = up->s;

	if (!ap)
		return NULL;
	ap->up = up;
	ap->h.fd = -1;
	ap->h.stdin_fd = ap->h.stdout_fd = -1;
	ap->h.session_owned = true;
	ap->h.pump = pump;
	ap->h.pump_ctx = s;
	ap->by_id = calloc(AGENT_PROBES, sizeof(*ap->by_id));
	if (!ap->by_id) {
		free(ap);
		return NULL;
	}
	return ap;
}

/*
 * The session is over for @ap's agent (abi.h UTRACE_ARENA_F_RELEASED): an
 * agent that still waits for its START (launched, or exec'ed, and not
 * planned yet) goes dormant and lets the program run. After a DETACH the
 * agent has left the arena already: no effect.
 */
static void arena_let_go(struct agent_proc *ap)
{
	if (!ap->h.hdr)
		return;
	__atomic_fetch_or(&ap->h.hdr->flags, UTRACE_ARENA_F_RELEASED, __ATOMIC_RELEASE);
	syscall(SYS_futex, &ap->h.hdr->cmd_seq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

static void modules_fold(struct agent_proc *ap);

static void aproc_free(struct agent_proc *ap)
{
	unsigned int i;

	if (!ap)
		return;
	modules_fold(ap);
	arena_let_go(ap);
	ahost_close(&ap->h);
	for (i = 0; i < ARRAY_SIZE(ap->str); i++)
		free(ap->str[i]);
	free(ap->dump);
	free(ap->by_id);
	free(ap);
}

/* The arena flags the layer's options ask for (common/abi.h). */
static uint32_t arena_flags(const struct utrace_uprobes *up)
{
	uint32_t f = 0;

	if (up->flags & UTRACE_UPROBES_RING_WAIT)
		f |= UTRACE_ARENA_F_RING_WAIT;
	/* children are found through the arena, not the session: untraced only */
	if ((up->flags & UTRACE_UPROBES_FOLLOW_FORKS) && up->agent_untraced)
		f |= UTRACE_ARENA_F_FOLLOW_FORK;
	return f;
}

/*
 * The session's launch hook: an arena for the command about to be forked,
 * the agent in its LD_PRELOAD. Tracing thread, before the fork.
 */
static int launch_prepare(void *data, struct session_launch_extra *x)
{
	struct utrace_uprobes *up = data;
	struct agent_layer *al = layer(up);
	struct utrace_arena_hdr hd;
	struct agent_proc *ap;
	struct rlimit rl;

	aproc_free(al->launch);
	al->launch = ap = aproc_new(up);
	if (!ap)
		return -ENOMEM;
	arena_header(&hd, UTRACE_ARENA_F_WAIT_START | UTRACE_ARENA_F_HELLO | arena_flags(up),
		     up->max_depth);
	if (ahost_set_layout(&ap->h, &hd))
		return -ENOMEM;
	ap->h.fd = memfd_create("utrace-arena", MFD_CLOEXEC); /* the child dup2()s it */
	if (ap->h.fd < 0 || fchmod(ap->h.fd, 0600) < 0 ||
	    ftruncate(ap->h.fd, (off_t)hd.arena_size) < 0)
		return -errno;
	ap->h.arena = mmap(NULL, hd.arena_size, PROT_READ | PROT_WRITE, MAP_SHARED, ap->h.fd, 0);
	if (ap->h.arena == MAP_FAILED) {
		ap->h.arena = NULL;
		return -errno;
	}
	ap->h.hdr = ap->h.arena;
	memcpy(ap->h.hdr, &hd, sizeof(hd));
	/* high, out of the numbers programs dup2() onto (agent-host.c high_fd()) */
	x->keep_fd = ap->h.fd;
	x->keep_as = 992;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur <= 1024)
		x->keep_as = rl.rlim_cur >= 64 ? (int)rl.rlim_cur - 32 : 3;
	snprintf(x->env[0], sizeof(x->env[0]), "UTRACE_AGENT_FD=%d", x->keep_as);
	snprintf(x->env[1], sizeof(x->env[1]), "LD_PRELOAD=%s", al->path);
	x->nr_env = 2;
	ap->hello = true;
	return 0;
}

/* The launched process's arena, or the one a process kept across exec. */
static struct agent_proc *adopt(struct agent_layer *al, pid_t pid)
{
	struct agent_proc **l;

	for (l = &al->procs; *l; l = &(*l)->next) {
		if ((*l)->pid == pid) {
			struct agent_proc *ap = *l;

			*l = ap->next;
			ap->next = NULL;
			return ap;
		}
	}
	if (al->launch && al->up->s && al->up->s->launched_pid == pid) {
		struct agent_proc *ap = al->launch;

		al->launch = NULL;
		return ap;
	}
	return NULL;
}

static int prepare_arena(void *arena, size_t size, void *ctx)
{
	const struct utrace_arena_hdr *want = ctx;

	if (want->arena_size > size)
		return -ENOSPC;
	memcpy(arena, want, sizeof(*want));
	return 0;
}

/* Is @pid job-control stopped ("T" in /proc/PID/status)? */
static bool proc_stopped(pid_t pid)
{
	char state[32];

	return proc_status_field(pid, "State", state, sizeof(state)) == 0 && state[0] == 'T';
}

/* Does the session hold @pid's main thread in a group-stop (SIGSTOP before the attach)? */
static bool session_group_stopped(struct utrace_session *s, pid_t pid)
{
	struct utrace_thread *th = utrace_session__find_thread(s, pid);

	return th && (th->group_stopped || th->stop == TSTOP_GROUP);
}

/* Attach: load the agent into @pp's process and wait until it is READY. */
/* A failure's reason: into @why when the caller takes it, else the log. */
static void __attribute__((format(printf, 3, 4)))
say(char *why, size_t whylen, const char *fmt, ...)
{
	char buf[640];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (why && whylen)
		snprintf(why, whylen, "%s", buf);
	else
		pr_warn("%s\n", buf);
}

/*
 * Load the agent into running process @pid (lib/inject.c: one chosen thread
 * stops; the session keeps what it traced before). The reason of a failure
 * goes to @why (@whylen bytes), else to the log.
 */
static int inject(struct utrace_uprobes *up, pid_t pid, struct agent_proc *ap, char *why,
		  size_t whylen)
{
	struct agent_layer *al = layer(up);
	struct utrace_arena_hdr hd;
	struct utrace_injection inj;
	char errbuf[512] = "";
	UTRACE_OPTS(utrace_inject_opts, io, .init_symbol = "__utrace_agent_init",
		    .prepare_arena = prepare_arena, .prepare_ctx = &hd, .errbuf = errbuf,
		    .errlen = sizeof(errbuf), .allow_copies = true);
	int err, i;

	arena_header(&hd, arena_flags(up), up->max_depth);
	io.arena_size = hd.arena_size;
	if (proc_stopped(pid) || session_group_stopped(up->s, pid)) {
		/* its agent's thread could not run: nothing would ever be armed */
		say(why, whylen,
		    "pid %d is stopped (state T): continue it (kill -CONT %d), then attach", pid,
		    pid);
		return -EAGAIN;
	}
	err = utrace_session__inject(up->s, pid, al->path, &io, &inj);
	if (err) {
		say(why, whylen, "process %d: cannot load the agent: %s", pid,
		    errbuf[0] ? errbuf : strerror(-err));
		return err;
	}
	ap->h.fd = inj.arena_fd;
	ap->h.arena = inj.arena;
	ap->h.hdr = inj.arena;
	if (ahost_set_layout(&ap->h, &hd))
		return -ENOMEM;
	for (i = 0; i < READY_WAIT_MS; i++) {
		uint32_t st = __atomic_load_n(&ap->h.hdr->agent_state, __ATOMIC_ACQUIRE);
		struct timespec ts = { 0, 0 };

		if (st == UTRACE_AGENT_READY) {
			ahost_adopt_areas(&ap->h); /* a re-attach: the old XOL areas first */
			return 0;
		}
		if (st != UTRACE_AGENT_NONE || (kill(pid, 0) < 0 && errno == ESRCH))
			break;
		/* the control thread is traced too: its first stop wants us */
		session_pump(up->s);
		ts.tv_nsec = 1000000;
		syscall(SYS_futex, &ap->h.hdr->agent_state, FUTEX_WAIT, UTRACE_AGENT_NONE, &ts,
			NULL, 0);
	}
	say(why, whylen, "process %d: the agent did not start (state %u, error %d)", pid,
	    ap->h.hdr->agent_state, ap->h.hdr->agent_err);
	return -EPROTO;
}

/* ------------------------------------------------------------------------ */
/* Ops: layer and process                                                    */
/* ------------------------------------------------------------------------ */

/* ------------------------------------------------------------------------ */
/* C probe modules (module.c: the tracer's side; agent/module.c: the target's) */
/* ------------------------------------------------------------------------ */

/*
 * Is @real (checked in our mount namespace by module.c) the same file in
 * process @pid's? Its dlopen() resolves the path in its own namespace (a
 * container's root may hold another file there), as for the agent itself
 * (lib/inject.c check_same_file()). Return: NULL or why not.
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
 * Load module @m into @ap's agent (UTRACE_CMD_MODULE_LOAD): its counters
 * are the per-thread hit counters of probe ids at the top of the table,
 * never armed (m->agent_base). Before the module's probes are bound
 * (plan_point()), in each image (exec) of each process; a fork child has
 * its parent's. Return: 0 or negative errno, the reason into @why (which
 * does not name the module).
 */
static int proc_load_module(struct agent_proc *ap, struct uprobes_module *m, char *why,
			    size_t whylen)
{
	struct agent_layer *al = layer(ap->up);
	const char *other;
	size_t len = strlen(m->path);
	int r;

	if (ap->mod_idx[m->id - 1])
		return 0;
	other = module_same_file(ap->pid, m->path);
	if (other) {
		snprintf(why, whylen, "not loaded in process %d: %s", ap->pid, other);
		return -ENOENT;
	}
	if (len >= sizeof(ap->h.hdr->cmd_str)) {
		snprintf(why, whylen, "its path is longer than %zu bytes",
			 sizeof(ap->h.hdr->cmd_str) - 1);
		return -ENAMETOOLONG;
	}
	if (ap->h.nr_probes + al->mod_reserved > ap->h.lay.max_probes) {
		snprintf(why, whylen, "process %d has no probe ids left for its counters", ap->pid);
		return -ENOSPC;
	}
	ap->h.reserved_top = al->mod_reserved;
	memcpy(ap->h.hdr->cmd_str, m->path, len + 1);
	r = ahost_cmd(&ap->h, UTRACE_CMD_MODULE_LOAD, m->agent_base, m->nr_counters);
	if (r < 0) {
		char tw[sizeof(ap->h.hdr->cmd_str)];

		ahost_agent_str(&ap->h, tw, sizeof(tw)); /* the target wrote it */
		snprintf(why, whylen, "process %d could not load it: %s", ap->pid,
			 tw[0]	      ? tw :
			 ap->h.why[0] ? ap->h.why :
					strerror(-r));
		return r;
	}
	ap->mod_idx[m->id - 1] = r + 1;
	ap->mod_arena = true;
	return 0;
}

/* Every module of the layer into @ap (a new process or image); the reason into @why or the log. */
static int proc_load_modules(struct agent_proc *ap, char *why, size_t whylen)
{
	char msg[512];
	unsigned int i;
	int err;

	for (i = 0; i < ap->up->nr_mods; i++) {
		err = proc_load_module(ap, ap->up->mods[i], msg, sizeof(msg));
		if (err) {
			say(why, whylen, "module '%s': %s", ap->up->mods[i]->path, msg);
			return err;
		}
	}
	return 0;
}

/* ->module_load: @m's counter ids, then every process served now. */
static int agent_module_load(struct utrace_uprobes *up, struct uprobes_module *m, char *why,
			     size_t whylen)
{
	struct agent_layer *al = layer(up);
	struct uprobes_proc *pp;
	int err;

	if (al->mod_reserved + m->nr_counters >= AGENT_PROBES / 2) {
		say(why, whylen, "the modules have too many counters");
		return -ENOSPC;
	}
	m->agent_base = AGENT_PROBES - al->mod_reserved - m->nr_counters;
	al->mod_reserved += m->nr_counters;
	for (pp = up->procs; pp; pp = pp->next) {
		struct agent_proc *ap = pp->priv;

		if (!ap || !ap->ready || !ap->h.hdr)
			continue;
		err = proc_load_module(ap, m, why, whylen);
		if (err) {
			al->mod_reserved -= m->nr_counters;
			return err;
		}
	}
	return 0;
}

/* @ap's live counters of @m into @c. */
static void proc_module_counts(struct agent_proc *ap, const struct uprobes_module *m, uint64_t *c)
{
	unsigned int j;

	if (!ap->h.arena || !ap->mod_arena)
		return;
	for (j = 0; j < m->nr_counters; j++)
		c[j] += ahost_hits(&ap->h, (int)(m->agent_base + j));
}

/* ->module_counts: every process whose arena is mapped, adopted or not. */
static void agent_module_counts(struct utrace_uprobes *up, const struct uprobes_module *m,
				uint64_t *c)
{
	struct agent_layer *al = layer(up);
	struct uprobes_proc *pp;
	struct agent_proc *ap;

	for (pp = up->procs; pp; pp = pp->next)
		if (pp->priv)
			proc_module_counts(pp->priv, m, c);
	for (ap = al->procs; ap; ap = ap->next)
		proc_module_counts(ap, m, c);
}

/* @ap's arena goes: what its modules counted stays with the modules. */
static void modules_fold(struct agent_proc *ap)
{
	unsigned int i;

	for (i = 0; ap->up && i < ap->up->nr_mods; i++)
		proc_module_counts(ap, ap->up->mods[i], ap->up->mods[i]->counts);
	ap->mod_arena = false;
}

/*
 * The module probes at @pt, as a signature: an id's bindings cannot be
 * taken back, so a change retires the id (agent_point_update()).
 */
static uint64_t mods_sig(const struct probe_point *pt)
{
	uint64_t h = 0;
	unsigned int i;

	for (i = 0; i < pt->nr_probes; i++) {
		const struct utrace_probe *p = pt->probes[i];

		if (!p->dead && p->mod)
			h = h * 1000003u + ((uint64_t)p->mod->id << 8 | p->mprobe) + 1;
	}
	return h;
}

/* The module probes at @pt run at agent probe @id's hits, after its built-in actions. */
static void bind_modules(struct uprobes_proc *pp, struct agent_proc *ap, struct probe_point *pt,
			 int id)
{
	unsigned int i;

	for (i = 0; i < pt->nr_probes; i++) {
		const struct utrace_probe *p = pt->probes[i];
		int idx, err;

		if (p->dead || !p->mod)
			continue;
		idx = ap->mod_idx[p->mod->id - 1];
		err = idx ? ahost_cmd(&ap->h, UTRACE_CMD_MODULE_BIND,
				      (uint64_t)(uint32_t)(idx - 1) << 32 | p->mprobe,
				      (uint64_t)id) :
			    -ENOENT;
		if (err < 0)
			pr_warn("module '%s': probe '%s' not bound in process %d: %s\n",
				p->mod->name, p->name, pp->pid,
				idx ? strerror(-err) : "the module is not loaded there");
	}
}

/* A module's record (utrace_module__emit() in the target). */
static void module_record(struct agent_layer *al, struct agent_proc *ap,
			  const struct utrace_abi_event *ev)
{
	struct utrace_record r = { .sz = sizeof(r), .type = UTRACE_REC_MODULE };
	int agent_mi = (int)(ev->dur >> 24);
	unsigned int pi = (unsigned int)((ev->dur >> 8) & 0xffff), i;
	struct uprobes_module *m = NULL;

	for (i = 0; i < ap->up->nr_mods && !m; i++)
		if (ap->mod_idx[i] == agent_mi + 1)
			m = ap->up->mods[i];
	if (!m || pi >= m->nr_probes)
		return;
	r.pid = ap->pid;
	r.tid = (pid_t)ev->tid;
	r.ts_ns = ev->ts;
	r.probe = m->by_pi[pi];
	r.module = m->id;
	r.module_probe = pi;
	r.nargs = MIN((unsigned int)(ev->dur & 0xff), 6u);
	memcpy(r.args, ev->args, r.nargs * sizeof(r.args[0]));
	al->fn_ret = al->fn(&r, al->fn_ctx);
	al->delivered++;
}

static int agent_init(struct utrace_uprobes *up)
{
	struct agent_layer *al = calloc(1, sizeof(*al));
	int err;

	if (!al)
		return -ENOMEM;
	err = find_agent(al, up->agent_path, up->init_why, sizeof(up->init_why));
	if (err) {
		free(al);
		return err;
	}
	al->up = up;
	up->priv = al;
	if (!up->s->launch_hook) {
		up->s->launch_hook = launch_prepare;
		up->s->launch_data = up;
	}
	return 0;
}

static void agent_fini(struct utrace_uprobes *up)
{
	struct agent_layer *al = layer(up);

	if (!al)
		return;
	if (up->s && up->s->launch_hook == launch_prepare && up->s->launch_data == up)
		up->s->launch_hook = NULL;
	while (al->procs) {
		struct agent_proc *ap = al->procs;

		al->procs = ap->next;
		aproc_free(ap);
	}
	aproc_free(al->launch);
	free(al);
	up->priv = NULL;
}

/*
 * utrace_uprobes__attach() with agent_untraced (ANCHOR in attach mode): the
 * agent is injected through one chosen thread, which inject() lets go again;
 * then its control thread alone is seized. No thread of the program stops
 * but the one lib/inject.c chose (one in a restartable wait, or running
 * user code), and none stops at the detach. Tracing thread, not from a
 * session callback.
 */
static int agent_attach(struct utrace_uprobes *up, pid_t pid, char *why, size_t whylen)
{
	struct agent_layer *al = layer(up);
	struct agent_proc *ap;
	pid_t ctl;
	int err;

	if (!up->agent_untraced)
		return utrace_session__attach(up->s, pid);
	if (uprobes_proc_find(up, pid) || utrace_session__threads(up->s, pid, NULL, 0) > 0)
		return -EEXIST;
	ap = aproc_new(up);
	if (!ap)
		return -ENOMEM;
	ap->pid = ap->h.pid = pid;
	err = inject(up, pid, ap, why, whylen);
	if (err) {
		ap->h.pid = 0;
		aproc_free(ap);
		return err;
	}
	ctl = (pid_t)__atomic_load_n(&ap->h.hdr->control_tid, __ATOMIC_ACQUIRE);
	err = ctl > 0 ? utrace_session__attach_thread(up->s, pid, ctl) : -EPROTO;
	if (err) {
		say(why, whylen, "process %d: cannot trace the agent's thread %d: %s", pid,
		    (int)ctl, strerror(-err));
		ahost_cmd(&ap->h, UTRACE_CMD_DETACH, 0, 0);
		aproc_free(ap);
		return err;
	}
	__atomic_fetch_or(&ap->h.hdr->flags, UTRACE_ARENA_F_ANCHOR, __ATOMIC_RELEASE);
	ap->ready = ap->anchored = ap->attached = true;
	err = proc_load_modules(ap, why, whylen);
	if (err) {
		ahost_cmd(&ap->h, UTRACE_CMD_DETACH, 0, 0);
		aproc_free(ap);
		return err;
	}
	ap->next = al->procs;
	al->procs = ap; /* agent_proc_init() takes it */
	return 0;
}

static int agent_proc_init(struct uprobes_proc *pp)
{
	struct agent_layer *al = layer(pp->up);
	struct agent_proc *ap = adopt(al, pp->pid);
	int err;

	if (ap && ap->attached) {
		pp->priv = ap; /* agent_attach()'s */
		return 0;
	}
	if (ap && ap->fork_parent) {
		pp->priv = ap; /* follow_forks()'s: its agent runs, its points are its parent's */
		return 0;
	}
	if (ap && ap->exec_wait) {
		/* follow_execs(): the new image's agent serves commands already */
		ap->exec_wait = false;
		ap->ready = true;
		pp->priv = ap;
		return 0;
	}
	if (ap) {
		/* launched (or exec'ed): its constructor says hello when READY */
		ap->pid = pp->pid;
		ap->h.pid = pp->pid;
		ap->hello = true;
		ap->ready = false;
		ap->hello_site = ap->dl_site = 0; /* a new image: new addresses */
		memset(ap->by_id, 0, AGENT_PROBES * sizeof(*ap->by_id));
		pp->priv = ap;
		return 0;
	}
	/*
	 * A process met inside a session callback is a fork child (followed by
	 * the session): the agent took its patches out of it before it ran
	 * (agent.c atfork_child), and no injection may run from a callback.
	 * Not traced by this layer (probe.h: fork children carry no probes).
	 */
	if (pp->up->s->dispatch_depth)
		return -EOPNOTSUPP;
	ap = aproc_new(pp->up);
	if (!ap)
		return -ENOMEM;
	ap->pid = pp->pid;
	ap->h.pid = pp->pid;
	err = inject(pp->up, pp->pid, ap, NULL, 0);
	if (err) {
		ap->h.pid = 0;
		aproc_free(ap);
		return err;
	}
	ap->ready = true;
	err = proc_load_modules(ap, NULL, 0);
	if (err) {
		ahost_cmd(&ap->h, UTRACE_CMD_DETACH, 0, 0);
		aproc_free(ap);
		return err;
	}
	pp->priv = ap;
	return 0;
}

/*
 * The address space is gone (exec, exit) or released. After an exec the
 * process keeps its arena (the fd and the agent's variables survive
 * execve, agent.c): kept for proc_init of the new image.
 */
static bool proc_is_zombie(pid_t pid)
{
	char st[16];

	return proc_status_field(pid, "State", st, sizeof(st)) < 0 || st[0] == 'Z' || st[0] == 'X';
}

/*
 * An exec: the old image's probes and XOL areas are gone with it. Every id
 * it used is forgotten without a byte written (GONE), so that the new
 * image's agent never arms one at an address that now holds other code;
 * the areas are planned anew (an old area's address, in reach of the new
 * code by chance of ASLR, would be unmapped: 1 run in 5 counted 0).
 */
static void image_gone(struct agent_proc *ap)
{
	uint32_t id;

	for (id = 0; id < ap->h.nr_probes; id++)
		ahost_set_want(&ap->h, (int)id, UTRACE_PS_GONE);
	ap->h.xol_base = ap->h.xol_next = ap->h.xol_end = 0;
	ap->h.nr_areas = ap->h.cur_area = 0;
	ap->hello_site = ap->dl_site = 0; /* a new image: new addresses */
	memset(ap->by_id, 0, AGENT_PROBES * sizeof(*ap->by_id));
	ap->guarded = false;
	memset(ap->mod_idx, 0, sizeof(ap->mod_idx)); /* the new image loads them again */
	ap->text_lo = ap->text_hi = 0;
	ap->ctor_seen = false;
	ap->execed = true;
}

static void agent_proc_forget(struct uprobes_proc *pp)
{
	struct agent_layer *al = layer(pp->up);
	struct agent_proc *ap = pp->priv;

	pp->priv = NULL;
	if (!ap)
		return;
	if (ap->anchored) {
		/*
		 * The control thread went without a release: the process
		 * exited, or exec'ed (execve() kills every other thread).
		 * Launched, the new image preloads the agent again
		 * (agent/interpose.c gives execve its variables back), which
		 * finds this arena, starts a control thread, bumps exec_seq and
		 * holds main() for START: follow_execs() arms it. Injected, the
		 * new image has no agent: the probes went with the old one.
		 */
		if (kill(pp->pid, 0) || proc_is_zombie(pp->pid)) {
			aproc_free(ap);
			return;
		}
		if (ap->fork_parent && !pp->up->freeing) {
			/* said once a session: a shell's children would say it for each */
			if (!al->kid_exec_said)
				pr_warn("process %d, a followed fork child, ran execve(): its new "
					"image runs unprobed (fork children are followed, not yet "
					"their execs; so are the next ones)\n",
					pp->pid);
			al->kid_exec_said = true;
			aproc_free(ap);
			return;
		}
		if (!ap->hello || pp->up->freeing) {
			if (!pp->up->freeing)
				pr_warn("process %d ran execve(): its probes went with the old image "
					"and the agent is not in the new one (attach again to trace "
					"it, or start the command under utrace to follow its "
					"execs)\n",
					pp->pid);
			aproc_free(ap);
			return;
		}
		image_gone(ap);
		ap->ready = false;
		ap->exec_wait = true;
		ap->exec_waited = false;
		ap->exec_since = uprobes_now_ns();
		ap->next = al->procs;
		al->procs = ap;
		return;
	}
	if (ap->hello && ap->h.arena && kill(pp->pid, 0) == 0 &&
	    __atomic_load_n(&ap->h.hdr->agent_state, __ATOMIC_ACQUIRE) == UTRACE_AGENT_READY) {
		/* an exec, seen by the session: its hello stop arms the new image */
		image_gone(ap);
		ap->next = al->procs;
		al->procs = ap;
		return;
	}
	if (ap->hello && !ap->ready && !pp->up->freeing && ap->h.hdr &&
	    (kill(pp->pid, 0) || proc_is_zombie(pp->pid))) {
		/*
		 * Launched, and gone without its hello: the program ran without
		 * probes (an agent that is not ours, one that failed, a program
		 * that exits in a constructor before ours). Said through
		 * utrace_uprobes__attach_why(): the command is never started
		 * again (its side effects happened once).
		 */
		uint32_t st = __atomic_load_n(&ap->h.hdr->agent_state, __ATOMIC_ACQUIRE);

		if (st == UTRACE_AGENT_FAILED)
			snprintf(pp->up->attach_why, sizeof(pp->up->attach_why),
				 "the agent failed in the target: %s",
				 strerror(-(int)ap->h.hdr->agent_err));
		else
			snprintf(pp->up->attach_why, sizeof(pp->up->attach_why),
				 "target exited before the agent was ready");
	}
	aproc_free(ap);
}

/* ------------------------------------------------------------------------ */
/* Ops: points                                                               */
/* ------------------------------------------------------------------------ */

/* What the probes at @pt ask the agent to do (UTRACE_PF_*). */
static uint32_t point_flags(const struct probe_point *pt, struct utrace_abi_probe *ab)
{
	uint32_t f = 0;
	unsigned int i;

	if (ab) {
		ab->err_kind = 0;
		ab->str_args = 0;
		ab->str_ret = 0;
		ab->str_max = 0;
	}
	for (i = 0; i < pt->nr_probes; i++) {
		const struct utrace_probe *p = pt->probes[i];
		unsigned int a = p->opts.actions, max;

		if (p->dead)
			continue;
		if (uprobes_probe_has_entry(p) && (a & (UTRACE_ACT_COUNT | UTRACE_ACT_HIST)))
			f |= UTRACE_PF_COUNT;
		if (p->mod)
			f |= UTRACE_PF_COUNT; /* its handlers run at counted hits (bind_modules()) */
		/*
		 * Returns are timed for the counts (-c, -H, errors); a probe
		 * that only records has each call's duration in its RETURN
		 * record and no use for the histogram: no account() per call
		 */
		if (uprobes_probe_has_return(p) && pt->entry) {
			f |= UTRACE_PF_RETPROBE;
			if (a & (UTRACE_ACT_COUNT | UTRACE_ACT_HIST))
				f |= UTRACE_PF_HIST;
		}
		if ((a & UTRACE_ACT_RECORD) && uprobes_probe_has_entry(p))
			f |= UTRACE_PF_RECORD_ENTRY;
		if ((a & UTRACE_ACT_RECORD) && uprobes_probe_has_return(p) && pt->entry)
			f |= UTRACE_PF_RECORD_RETURN;
		if (a & UTRACE_ACT_STACK)
			f |= UTRACE_PF_STACK;
		if ((a & UTRACE_ACT_INJECT) && pt->entry)
			f |= UTRACE_PF_INJECT;
		if (!ab)
			continue;
		if (pt->popts[i].err_kind)
			ab->err_kind = (uint8_t)pt->popts[i].err_kind;
		if (a & UTRACE_ACT_RECORD) {
			ab->str_args |= (uint8_t)(pt->popts[i].str_args & 0x3f);
			ab->str_ret |= (pt->popts[i].str_args >> 6) & 1;
			max = p->opts.str_max ? p->opts.str_max : 32;
			if (max + 1 > ab->str_max) /* the NUL needs a byte */
				ab->str_max = (uint16_t)MIN(max + 1, UTRACE_ABI_STR_MAX);
		}
		if (a & UTRACE_ACT_INJECT) {
			ab->inject_value = p->opts.inject_value;
			ab->inject_every = p->opts.inject_every ? p->opts.inject_every : 1;
		}
	}
	if (pt->entry)
		f |= UTRACE_PF_ENTRY;
	if (!(f & UTRACE_PF_RECORD_ENTRY) && ab)
		ab->str_args = 0;
	if (!(f & UTRACE_PF_RECORD_RETURN) && ab)
		ab->str_ret = 0;
	return f;
}

static void agent_point_counts(struct uprobes_proc *pp, struct probe_point *pt,
			       const struct utrace_probe *p, struct utrace_probe_counts *c);

/*
 * @pt's agent id is retired (disarm, new flags, the process goes): its
 * figures so far are added to its probes' own, which utrace_probe__counts()
 * adds to the live points', so nothing counted is lost or counted twice.
 */
static void fold_point(struct uprobes_proc *pp, struct agent_proc *ap, struct probe_point *pt)
{
	struct agent_point *apt = pt->priv;
	unsigned int k;

	if (!apt || apt->id < 0)
		return;
	for (k = 0; k < pt->nr_probes; k++) {
		struct utrace_probe_counts one = { 0 };

		agent_point_counts(pp, pt, pt->probes[k], &one);
		uprobes_retire_counts(pt->probes[k], pt, &one);
	}
	ap->by_id[apt->id] = NULL;
	apt->id = -1;
}

static int agent_arm(struct uprobes_proc *pp, struct probe_point *pt)
{
	struct agent_proc *ap = pp->priv;
	struct agent_point *apt = pt->priv;

	if (!apt) {
		apt = calloc(1, sizeof(*apt));
		if (!apt)
			return -ENOMEM;
		apt->id = -1;
		pt->priv = apt;
	}
	apt->want = true;
	pt->armed = true; /* (for the registry: taken out at the next commit if not) */
	if (ap->fork_parent && apt->id < 0) {
		/*
		 * A followed fork child: its arena is a copy of its parent's
		 * probe table, armed (agent.c fork_rearena()): the parent's
		 * point at this address has its id here too.
		 */
		struct uprobes_proc *par = uprobes_proc_find(pp->up, ap->fork_parent);
		struct probe_point *ppt = par ? uprobes_point_find(par, pt->addr) : NULL;
		struct agent_point *papt = ppt ? ppt->priv : NULL;

		if (papt && papt->id >= 0 && !papt->err) {
			apt->id = papt->id;
			apt->flags = papt->flags;
			apt->mods = papt->mods;
			ap->by_id[apt->id] = pt;
			return 0;
		}
	}
	ap->dirty = true;
	return 0;
}

static int agent_point_update(struct uprobes_proc *pp, struct probe_point *pt)
{
	struct agent_proc *ap = pp->priv;
	struct agent_point *apt = pt->priv;

	if (!apt || apt->id < 0 || !ap)
		return 0;
	if (point_flags(pt, NULL) == apt->flags && mods_sig(pt) == apt->mods)
		return 0;
	/* the agent takes flags only before an id's first SYNC: a new id */
	ahost_set_want(&ap->h, apt->id, UTRACE_PS_DISARMED);
	fold_point(pp, ap, pt);
	ap->dirty = true;
	return 0;
}

static int agent_disarm(struct uprobes_proc *pp, struct probe_point *pt, bool alive)
{
	struct agent_proc *ap = pp->priv;
	struct agent_point *apt = pt->priv;

	pt->armed = false;
	if (!apt || !ap)
		return 0;
	apt->want = false;
	if (apt->id >= 0) {
		ahost_set_want(&ap->h, apt->id, alive ? UTRACE_PS_DISARMED : UTRACE_PS_GONE);
		fold_point(pp, ap, pt);
		ap->dirty = true;
	}
	return 0;
}

/* utrace_probe__sites(): the agent's state of @pt's id (PENDING before a SYNC). */
static void agent_site(struct uprobes_proc *pp, struct probe_point *pt,
		       struct utrace_point_site *ps)
{
	struct agent_proc *ap = pp->priv;
	struct agent_point *apt = pt->priv;
	struct utrace_abi_probe *ab;

	ps->site = UTRACE_SITE_PENDING;
	if (apt && apt->err) {
		ps->site = UTRACE_SITE_FAILED;
		ps->err = apt->err;
	}
	if (!ap || !apt || apt->id < 0 || !ap->ready || !ap->h.hdr)
		return;
	ab = ahost_abi(&ap->h, apt->id);
	switch (__atomic_load_n(&ab->state, __ATOMIC_ACQUIRE)) {
	case UTRACE_PS_INT3:
		ps->site = UTRACE_SITE_INT3;
		break;
	case UTRACE_PS_JMP:
		ps->site = UTRACE_SITE_JMP;
		break;
	case UTRACE_PS_TAKEN:
		ps->site = UTRACE_SITE_TAKEN;
		ps->err = ab->err; /* -EEXIST: a kernel uprobe (agent/patch.c) */
		break;
	case UTRACE_PS_FAILED:
		ps->site = UTRACE_SITE_FAILED;
		ps->err = ab->err ? ab->err : -EIO;
		break;
	default:
		break;
	}
}

static void agent_point_free(struct probe_point *pt)
{
	free(pt->priv);
	pt->priv = NULL;
}

/* Plan @pt as a new agent probe id. */
static int plan_point(struct uprobes_proc *pp, struct agent_proc *ap, struct probe_point *pt)
{
	struct agent_point *apt = pt->priv;
	struct utrace_abi_probe *ab;
	uint32_t flags = point_flags(pt, NULL);
	int id;

	id = ahost_probe_match(&ap->h, pp->img, &pt->match, pt->name, flags, false);
	if (id == -ECANCELED) {
		/*
		 * exec_seq moved under the command: after an exec the new
		 * image's agent can bump it while we plan in its hello stop
		 * (seen 1 run in 4 with -s, the process traced); once more
		 */
		ap->h.why[0] = 0;
		id = ahost_probe_match(&ap->h, pp->img, &pt->match, pt->name, flags, false);
	}
	if (id < 0) {
		pr_warn("cannot probe %s in process %d: %s\n", pt->name, pp->pid,
			ap->h.why[0] ? ap->h.why : strerror(-id));
		apt->err = id;
		return id;
	}
	ab = ahost_abi(&ap->h, id);
	point_flags(pt, ab); /* the per-probe fields, before the first SYNC */
	apt->id = id;
	apt->flags = flags;
	apt->err = 0;
	ap->by_id[id] = pt;
	bind_modules(pp, ap, pt, id);
	apt->mods = mods_sig(pt);
	ahost_set_want(&ap->h, id, ab->mode == UTRACE_PM_JMP ? UTRACE_PS_JMP : UTRACE_PS_INT3);
	return 0;
}

/*
 * Return probes with an injected agent, or a preloaded one once libgcc_s is
 * loaded (glibc's cancellation calls _Unwind_ForcedUnwind through a pointer
 * of its own, past the interposers). A C++ exception (or pthread_exit(),
 * which unwinds) passing through a frame whose return address a return
 * probe hijacked makes the unwinder look up the trampoline, which has no
 * unwind info: std::terminate(), the process dies. A preloaded agent
 * interposes the unwinder's entry points and puts the addresses back first
 * (agent/interpose.c); an injected one cannot (the program's references
 * were bound before it came). So the entry points get internal probes
 * whose hit does the same (UTRACE_PF_UNWIND): not points of the registry,
 * no records, no counts. pthread_exit() unwinds with _Unwind_ForcedUnwind
 * from libgcc_s, which the injected agent loads at its init; pthread_exit
 * itself is guarded only if that failed.
 *
 * Another session (its own agent, its own return instances) may guard the
 * same function already, and one site takes one session's patch. Any
 * instruction of the prologue does, as long as it runs before the unwinder
 * reads a frame: libgcc's _Unwind_RaiseException and _Unwind_ForcedUnwind
 * push and set up for ~16 instructions before their first call, so the
 * guard goes on the first free one of the first GUARD_SPAN bytes, before
 * any call. Return: 0, or the negative errno of an unwinder that could not
 * be guarded (then return probes are refused rather than risk the process).
 */
#define GUARD_SPAN 24

static int guard_function(struct uprobes_proc *pp, struct agent_proc *ap,
			  const struct utrace_match *m0, const char *name)
{
	uint32_t offs[16];
	int n = ahost_insn_offsets(&ap->h, m0->addr, GUARD_SPAN, offs, 16), j, id = -ENOENT;
	uint8_t code[GUARD_SPAN];

	if (n > 0 && utrace_mem__read(pp->pid, m0->addr, code, sizeof(code)) != sizeof(code))
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
		id = ahost_probe_match(&ap->h, pp->img, &mm, name, UTRACE_PF_UNWIND, false);
		if (id >= 0 || id != -EBUSY)
			break;
	}
	if (id >= 0)
		ahost_set_want(&ap->h, id,
			       ahost_abi(&ap->h, id)->mode == UTRACE_PM_JMP ? UTRACE_PS_JMP :
									      UTRACE_PS_INT3);
	return id < 0 ? id : 0;
}

static int guard_unwinders(struct uprobes_proc *pp, struct agent_proc *ap, bool *ret_forced)
{
	static const char *const specs[] = { "libgcc_s:_Unwind_RaiseException",
					     "libgcc_s:_Unwind_ForcedUnwind", "libc:pthread_exit" };
	bool forced = false;
	size_t s, k;

	for (s = 0; s < ARRAY_SIZE(specs); s++) {
		struct utrace_match *m = NULL;
		struct utrace_spec spec;
		size_t nr = 0;
		int err = -ENOENT;

		if (s == 2 && (forced || !ap->attached))
			break; /* pthread_exit goes through the guarded _Unwind_ForcedUnwind */
		if (utrace_spec__parse(specs[s], &spec, NULL, 0))
			continue;
		if (utrace_image__resolve(pp->img, &spec, &m, &nr, NULL))
			nr = 0;
		utrace_spec__clear(&spec);
		for (k = 0; k < nr && err < 0; k++)
			if (!(m[k].sym_flags & UTRACE_SYM_ALIAS))
				err = guard_function(pp, ap, &m[k], specs[s]);
		free(m);
		if (s == 1 && !err)
			forced = true;
		if (nr && err < 0) {
			pr_warn("process %d: cannot guard %s (%s): a C++ exception or pthread_exit() "
				"through a probed frame would end the process; its return probes "
				"are refused (entry probes only)\n",
				pp->pid, specs[s], ap->h.why[0] ? ap->h.why : strerror(-err));
			return err;
		}
	}
	*ret_forced = forced;
	return 0;
}

/*
 * An agent's points that hijack returns, planned in this round: guarded
 * first (guard_unwinders()); injected, refused if that cannot be done.
 */
/* Return probes armed and not guarded yet (a library just loaded may be libgcc_s). */
static bool guard_wanted(struct uprobes_proc *pp, struct agent_proc *ap)
{
	unsigned int i;

	if (ap->guarded)
		return false;
	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = pp->points[i]; pt; pt = pt->hnext) {
			struct agent_point *apt = pt->priv;

			if (apt && apt->id >= 0 && apt->want && (apt->flags & UTRACE_PF_RETPROBE))
				return true;
		}
	}
	return false;
}

static void guard_or_refuse(struct uprobes_proc *pp, struct agent_proc *ap)
{
	unsigned int i;
	bool forced = false;
	int err;

	if (!guard_wanted(pp, ap))
		return;
	err = guard_unwinders(pp, ap, &forced);
	if (!err) {
		/*
		 * Launched, the agent's interposers catch the program's throws
		 * and pthread_exit(); glibc's cancellation goes through its own
		 * pointer to libgcc_s's _Unwind_ForcedUnwind (once libgcc_s is
		 * loaded: a later image change tries again) and needs the guard.
		 */
		ap->guarded = ap->attached || forced;
		return;
	}
	if (!ap->attached)
		return; /* the interposers still guard the program's own unwinds */
	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = pp->points[i]; pt; pt = pt->hnext) {
			struct agent_point *apt = pt->priv;

			if (apt && apt->id >= 0 && (apt->flags & UTRACE_PF_RETPROBE) &&
			    __atomic_load_n(&ahost_abi(&ap->h, apt->id)->state, __ATOMIC_ACQUIRE) !=
				    UTRACE_PS_INT3 &&
			    __atomic_load_n(&ahost_abi(&ap->h, apt->id)->state, __ATOMIC_ACQUIRE) !=
				    UTRACE_PS_JMP) {
				ahost_set_want(&ap->h, apt->id, UTRACE_PS_DISARMED);
				apt->err = err;
			}
		}
	}
}

/* Plan every point that has no id yet, then one SYNC. */
static int sync_proc(struct uprobes_proc *pp, struct agent_proc *ap)
{
	unsigned int i;
	int err, planned = 0;

	if (!ap->ready || !pp->img)
		return 0;
	ap->dirty = false;
	if (ahost_plan_begin(&ap->h, pp->img))
		pr_debug("process %d: planning point by point\n", pp->pid);
	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = pp->points[i]; pt; pt = pt->hnext) {
			struct agent_point *apt = pt->priv;

			if (apt && apt->want && apt->id < 0 && !apt->err && pt->nr_probes &&
			    plan_point(pp, ap, pt) == 0)
				planned++;
		}
	}
	guard_or_refuse(pp, ap); /* (planned with the points: the same image) */
	ahost_plan_end(&ap->h);
	err = ahost_sync(&ap->h);
	if (err < 0) {
		pr_warn("process %d: the agent did not apply the probes: %s\n", pp->pid,
			ap->h.why[0] ? ap->h.why : strerror(-err));
		return err;
	}
	/* what the agent could not arm is said once, with its reason */
	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = pp->points[i]; pt; pt = pt->hnext) {
			struct agent_point *apt = pt->priv;
			struct utrace_abi_probe *ab;

			if (!apt || apt->id < 0)
				continue;
			ab = ahost_abi(&ap->h, apt->id);
			if (__atomic_load_n(&ab->state, __ATOMIC_ACQUIRE) == UTRACE_PS_FAILED &&
			    !apt->err) {
				apt->err = ab->err ? ab->err : -EIO;
				pr_warn("cannot probe %s in process %d: %s\n", pt->name, pp->pid,
					strerror(-apt->err));
			}
		}
	}
	return planned;
}

static int agent_commit(struct uprobes_proc *pp)
{
	struct agent_proc *ap = pp->priv;

	if (!ap || !ap->dirty || !ap->ready)
		return 0; /* launched: the hello stop plans (agent_signal()) */
	return sync_proc(pp, ap) < 0 ? -EIO : 0;
}

/*
 * After the agent's DETACH: every site it ever patched in this image holds
 * its original bytes again. A thread that blocked SIGTRAP at every look
 * (a new or exiting thread inside libc's all-blocked windows, starved of
 * CPU) makes the agent leave that jmp, inert, rather than a transient int3
 * that could kill it (agent/patch.c disarm()): said, one line a site (3 at
 * most, then a count). Return: 0, or -EBUSY.
 */
static int check_restored(struct uprobes_proc *pp, struct agent_proc *ap)
{
	uint32_t id;
	int bad = 0;

	for (id = 0; id < ap->h.nr_probes; id++) {
		struct utrace_abi_probe *ab = ahost_abi(&ap->h, (int)id);
		uint8_t now[16];

		if (!ab->len || ab->len > sizeof(now) || !ab->addr ||
		    __atomic_load_n(&ab->state, __ATOMIC_ACQUIRE) == UTRACE_PS_GONE ||
		    __atomic_load_n(&ab->state, __ATOMIC_ACQUIRE) == UTRACE_PS_TAKEN)
			continue; /* never placed, unloaded, or the kernel's since */
		if (utrace_mem__read(pp->pid, ab->addr, now, ab->len) != (ssize_t)ab->len ||
		    !memcmp(now, ab->orig, ab->len))
			continue;
		if (++bad <= 3)
			pr_warn("process %d: the code at 0x%llx%s%s still differs from its original "
				"bytes after the detach (a thread blocked SIGTRAP throughout: the "
				"agent left its jmp there, inert)\n",
				pp->pid, (unsigned long long)ab->addr, ap->by_id[id] ? ", " : "",
				ap->by_id[id] ? ap->by_id[id]->name : "");
	}
	if (bad > 3)
		pr_warn("process %d: %d sites in all still differ from their original bytes\n",
			pp->pid, bad);
	return bad ? -EBUSY : 0;
}

/* Every point is disarmed: the session ends for this process (DETACH). */
static int agent_release(struct uprobes_proc *pp)
{
	struct agent_proc *ap = pp->priv;
	int err;

	if (ap && !ap->ready && ap->hello && ap->h.hdr) {
		/*
		 * Launched and released before its hello: nothing is armed,
		 * and no START will come. The agent takes F_RELEASED as our
		 * death (its control thread looks every 100 ms) and lets main()
		 * run; a hello trap still to come is its handler's (agent_signal()
		 * no longer knows the process).
		 */
		arena_let_go(ap);
		ap->hello = false;
		return 0;
	}
	if (!ap || !ap->ready)
		return 0;
	err = ahost_cmd(&ap->h, UTRACE_CMD_DETACH, 0, 0);
	ap->ready = false;
	ap->anchored = false; /* its control thread ends now: no exec to warn about */
	ap->hello = false; /* not kept for an exec: the session let it go */
	if (err < 0)
		return err;
	return ap->h.corrupt ? -EBADMSG : check_restored(pp, ap);
}

/* ------------------------------------------------------------------------ */
/* Ops: the hello stop, image changes                                        */
/* ------------------------------------------------------------------------ */

static void check_images(struct uprobes_proc *pp, struct agent_proc *ap);

/*
 * ANCHOR. Every ptrace stop of a thread blocked in epoll_wait, semop,
 * sigtimedwait or io_getevents makes that call fail with EINTR (signal(7)),
 * and a session stops every thread it traces when it detaches (and when
 * it attaches: PTRACE_DETACH wants a stopped tracee). So once the probes
 * are armed the session keeps one thread of the process: the agent's
 * control thread, which only waits in futex() and poll() (restarted after
 * a stop) and exits with the process; its exit is the process's for the
 * registry. The hello thread is let go at this stop (only it and the
 * control thread run yet, unless a constructor made threads); threads the
 * program makes later are never traced, so nothing the program waits in
 * is ever interrupted by us. A dlopen() then waits for dl_ack instead of
 * an int3 (F_HELLO cleared), which utrace_uprobes__poll() gives.
 * An exec kills the control thread: a launched process's new image is
 * followed (follow_execs()), an attached one's is let go. Not followed this
 * way: fork children.
 */
static void anchor(struct uprobes_proc *pp, struct agent_proc *ap, struct utrace_thread *th)
{
	pid_t ctl = (pid_t)__atomic_load_n(&ap->h.hdr->control_tid, __ATOMIC_ACQUIRE);

	if (!pp->up->agent_untraced || ctl <= 0 || ctl == utrace_thread__tid(th) ||
	    !utrace_session__find_thread(pp->up->s, ctl))
		return; /* (an agent without a control_tid: the process stays traced) */
	/* a dlopen() now wakes the control thread, whose int3 we see (agent.c) */
	__atomic_fetch_or(&ap->h.hdr->flags, UTRACE_ARENA_F_ANCHOR, __ATOMIC_RELEASE);
	__atomic_fetch_and(&ap->h.hdr->flags, ~UTRACE_ARENA_F_HELLO, __ATOMIC_RELEASE);
	ap->anchored = true;
	ap->exec_seen = __atomic_load_n(&ap->h.hdr->exec_seq, __ATOMIC_ACQUIRE);
	session_detach_at_stop(th);
}

/* Take @ap off the layer's list of processes between two images. */
static void unlist(struct agent_layer *al, struct agent_proc *ap)
{
	struct agent_proc **l;

	for (l = &al->procs; *l; l = &(*l)->next)
		if (*l == ap) {
			*l = ap->next;
			ap->next = NULL;
			return;
		}
}

#define EXEC_WAIT_NS 10000000000ull /* the agent's own wait for START, one round */
#define EXEC_HOOK_MS 1000

/*
 * The new image's agent bumps exec_seq (and wakes it) once it serves the
 * mailbox: wait for that, at most @ms, in 10 ms slices that look whether
 * the process still lives. The execve() itself went on once the session
 * reaped the old control thread (de_thread() waits for that zombie).
 */
static bool exec_answered(struct agent_proc *ap, int ms)
{
	for (; ms > 0; ms -= 10) {
		uint32_t ex = __atomic_load_n(&ap->h.hdr->exec_seq, __ATOMIC_ACQUIRE);
		struct timespec ts = { 0, 10000000 };

		if (ex != ap->exec_seen)
			return true;
		if (kill(ap->pid, 0) || proc_is_zombie(ap->pid))
			return false;
		syscall(SYS_futex, &ap->h.hdr->exec_seq, FUTEX_WAIT, ex, &ts, NULL, 0);
	}
	return __atomic_load_n(&ap->h.hdr->exec_seq, __ATOMIC_ACQUIRE) != ap->exec_seen;
}

/*
 * An anchored, launched process exec'ed (agent_proc_forget()): when its new
 * image's agent has bumped exec_seq (agent.c control_main(), after READY;
 * main() waits in the constructor for START), seize its new control thread,
 * arm the SPEC probes in the new image, START. An image without the agent
 * (a static or set-id program: ld.so ignores LD_PRELOAD) never answers: after
 * EXEC_WAIT_NS it is let go with one line. Tracing thread, from
 * utrace_uprobes__poll() and from the session's after hook (@hook: the
 * first look after the old control thread's exit waits EXEC_HOOK_MS for
 * the new agent, so that a user who only runs utrace_session__run(),
 * which sees no event of an untraced process, gets the new image armed
 * too); never inside a session callback (it attaches).
 */
static void follow_execs(struct utrace_uprobes *up, bool hook)
{
	struct agent_layer *al = layer(up);
	struct agent_proc *ap, *next;

	if (!up->s || up->s->dispatch_depth || up->freeing)
		return;
	for (ap = al->procs; ap; ap = next) {
		uint32_t ex;
		struct uprobes_proc *pp;
		pid_t ctl;
		int err;

		next = ap->next;
		if (!ap->exec_wait)
			continue;
		if (hook && !ap->exec_waited) {
			ap->exec_waited = true;
			exec_answered(ap, EXEC_HOOK_MS);
		}
		ex = __atomic_load_n(&ap->h.hdr->exec_seq, __ATOMIC_ACQUIRE);
		if (ex == ap->exec_seen) {
			bool gone = kill(ap->pid, 0) || proc_is_zombie(ap->pid);

			if (!gone && uprobes_now_ns() - ap->exec_since < EXEC_WAIT_NS)
				continue;
			if (!gone)
				pr_warn("process %d ran execve(): its new image did not load the agent "
					"in %llu s (a static or set-id program?): it runs unprobed\n",
					ap->pid, EXEC_WAIT_NS / 1000000000ull);
			unlist(al, ap);
			aproc_free(ap);
			continue;
		}
		ap->exec_seen = ex;
		ctl = (pid_t)__atomic_load_n(&ap->h.hdr->control_tid, __ATOMIC_ACQUIRE);
		err = ctl > 0 ? utrace_session__attach_thread(up->s, ap->pid, ctl) : -EPROTO;
		if (err) {
			pr_warn("process %d ran execve(): cannot trace its new agent thread %d: %s; "
				"it runs unprobed\n",
				ap->pid, (int)ctl, strerror(-err));
			unlist(al, ap);
			aproc_free(ap); /* F_RELEASED: main() runs */
			continue;
		}
		pp = uprobes_proc_exec_pid(up, ap->pid); /* agent_proc_init() adopts @ap */
		if (!pp || pp->priv != ap) {
			if (!pp)
				pr_warn("process %d ran execve(): its new image cannot be probed\n",
					ap->pid);
			if (!ap->exec_wait)
				continue; /* adopted, then freed with its process */
			unlist(al, ap);
			aproc_free(ap);
			continue;
		}
		ap->dl_seen = __atomic_load_n(&ap->h.hdr->dl_seq, __ATOMIC_ACQUIRE);
		ahost_adopt_areas(&ap->h);
		proc_load_modules(ap, NULL,
				  0); /* before their probes are bound; a failure logged */
		sync_proc(pp, ap);
		ahost_start(&ap->h); /* main() of the new image runs, probed */
	}
}

/* Is some point of @pp placed by the agent (after a SYNC)? */
static bool proc_placed(struct uprobes_proc *pp, struct agent_proc *ap)
{
	unsigned int i;

	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = pp->points[i]; pt; pt = pt->hnext) {
			struct agent_point *apt = pt->priv;
			uint32_t st;

			if (!apt || apt->id < 0 || apt->err)
				continue;
			st = __atomic_load_n(&ahost_abi(&ap->h, apt->id)->state, __ATOMIC_ACQUIRE);
			if (st == UTRACE_PS_INT3 || st == UTRACE_PS_JMP)
				return true;
		}
	}
	return false;
}

static int agent_signal(struct utrace_uprobes *up, struct utrace_thread *th, siginfo_t *info)
{
	struct uprobes_proc *pp = uprobes_proc_find(up, utrace_thread__pid(th));
	struct agent_proc *ap = pp ? pp->priv : NULL;
	struct user_regs_struct regs;

	if (!ap || !ap->hello || info->si_signo != SIGTRAP || info->si_code != SI_KERNEL ||
	    utrace_thread__get_regs(th, &regs) < 0)
		return UTRACE_RESUME; /* the agent's own int3 sites: its handler's */
	if (ap->ready) {
		/* a dlopen()/dlclose() returned in this thread: re-plan in its stop */
		if (!ap->dl_site)
			ap->dl_site =
				ahost_sym(&ap->h, "libutrace-agent.so:__utrace_agent_dl_site");
		if (!ap->dl_site || regs.rip - 1 != ap->dl_site)
			return UTRACE_RESUME;
		if (ap->anchored) {
			/* the control thread's: it must run to serve the re-plan (agent_after()) */
			ap->dl_pending = true;
			return UTRACE_RESUME | UTRACE_SIGNAL_IGNORE;
		}
		check_images(pp, ap);
		return UTRACE_RESUME | UTRACE_SIGNAL_IGNORE;
	}
	if (!ap->hello_site)
		ap->hello_site = ahost_sym(&ap->h, "libutrace-agent.so:__utrace_agent_hello_site");
	pr_debug("process %d: SIGTRAP at 0x%llx, hello at 0x%llx\n", pp->pid,
		 (unsigned long long)regs.rip - 1, (unsigned long long)ap->hello_site);
	if (!ap->hello_site || regs.rip - 1 != ap->hello_site)
		return UTRACE_RESUME;
	if (__atomic_load_n(&ap->h.hdr->agent_state, __ATOMIC_ACQUIRE) != UTRACE_AGENT_READY)
		return UTRACE_RESUME | UTRACE_SIGNAL_IGNORE;
	/* the main thread waits here; the control thread runs the commands */
	ap->ready = true;
	ap->dl_seen = __atomic_load_n(&ap->h.hdr->dl_seq, __ATOMIC_ACQUIRE);
	ahost_adopt_areas(&ap->h);
	proc_load_modules(ap, NULL, 0); /* before their probes are bound; a failure logged */
	/* libc and the other DT_NEEDED objects are mapped now: pending SPECs resolve */
	uprobes_dl_activity(pp, th);
	sync_proc(pp, ap);
	if ((up->flags & UTRACE_UPROBES_LAUNCH_ARMED) && !ap->execed && !proc_placed(pp, ap) &&
	    !uprobes_proc_pending(pp)) {
		/* probe.h: killed before main() rather than run unprobed */
		snprintf(up->attach_why, sizeof(up->attach_why),
			 UTRACE_WHY_NOTHING_ARMED " in process %d (every site was refused): it was "
						  "killed before its first instruction",
			 pp->pid);
		kill(pp->pid, SIGKILL);
		return UTRACE_RESUME | UTRACE_SIGNAL_IGNORE;
	}
	anchor(pp, ap, th);
	ahost_start(&ap->h);
	return UTRACE_RESUME | UTRACE_SIGNAL_IGNORE;
}

/* After a stop: an anchored process's dlopen()/dlclose(), its control thread running. */
/*
 * The processes whose arena failed a check go (their probes out through
 * the agent's DETACH, as at any detach); not while the session dispatches
 * an event (a poll from an exit callback): then at its after hook
 * (@in_hook: called from it, where the session's deferred work runs).
 */
static void detach_corrupt(struct utrace_uprobes *up, bool in_hook)
{
	struct uprobes_proc *pp;

	if (!up->s || up->s->dispatch_depth || (up->s->in_after && !in_hook) || up->hit_depth)
		return;
	for (pp = up->procs; pp;) {
		struct agent_proc *ap = pp->priv;

		if (ap && ap->corrupt_said) {
			utrace_uprobes__detach_pid(up, pp->pid);
			pp = up->procs; /* the list changed */
			continue;
		}
		pp = pp->next;
	}
}

static void agent_after(struct utrace_uprobes *up)
{
	struct uprobes_proc *pp;

	for (pp = up->procs; pp; pp = pp->next) {
		struct agent_proc *ap = pp->priv;

		if (ap && ap->dl_pending && ap->ready) {
			ap->dl_pending = false;
			check_images(pp, ap);
		}
	}
	follow_execs(up, true);
	detach_corrupt(up, true);
}

/*
 * A dlopen()/dlclose() returned in the target (the agent bumps dl_seq and
 * waits for dl_ack, a few ms at most): rescan, arm what became resolvable.
 */
/*
 * An injected agent does not see dlopen() (its interposers are not bound):
 * the target's executable mappings, hashed at most every 100 ms, tell.
 */
static bool maps_changed(struct agent_proc *ap)
{
	char path[64], buf[8192];
	uint64_t h = 1469598103934665603ull, now = uprobes_now_ns();
	ssize_t n;
	int fd;

	if (now - ap->maps_at < 100000000ull)
		return false;
	ap->maps_at = now;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)ap->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	/* lines of executable mappings only: heaps and stacks come and go */
	{
		char line[512];
		size_t len = 0;

		while ((n = read(fd, buf, sizeof(buf))) > 0) {
			ssize_t i;

			for (i = 0; i < n; i++) {
				const char *perms;
				size_t k;

				if (buf[i] != '\n') {
					if (len < sizeof(line) - 1)
						line[len++] = buf[i];
					continue;
				}
				line[len] = 0;
				perms = strchr(line, ' '); /* "lo-hi perms offset dev inode path" */
				if (perms && strlen(perms) > 4 && perms[3] == 'x')
					for (k = 0; k < len; k++)
						h = (h ^ (uint8_t)line[k]) * 1099511628211ull;
				len = 0;
			}
		}
	}
	close(fd);
	if (h == ap->maps_hash)
		return false;
	ap->maps_hash = h; /* (the first look rescans too: a dlopen may predate it) */
	return true;
}

static void check_images(struct uprobes_proc *pp, struct agent_proc *ap)
{
	uint32_t seq = __atomic_load_n(&ap->h.hdr->dl_seq, __ATOMIC_ACQUIRE);

	if (!ap->hello) {
		if (maps_changed(ap)) {
			uprobes_dl_activity(pp, NULL);
			if (guard_wanted(pp, ap))
				ap->dirty = true;
			if (ap->dirty)
				sync_proc(pp, ap);
		}
		return;
	}
	if (seq == ap->dl_seen)
		return;
	ap->dl_seen = seq;
	uprobes_dl_activity(pp, NULL);
	if (guard_wanted(pp, ap))
		ap->dirty = true;
	if (ap->dirty)
		sync_proc(pp, ap);
	__atomic_store_n(&ap->h.hdr->dl_ack, seq, __ATOMIC_RELEASE);
	syscall(SYS_futex, &ap->h.hdr->dl_ack, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* ------------------------------------------------------------------------ */
/* Ops: figures and events                                                   */
/* ------------------------------------------------------------------------ */

static void agent_point_counts(struct uprobes_proc *pp, struct probe_point *pt,
			       const struct utrace_probe *p, struct utrace_probe_counts *c)
{
	struct agent_proc *ap = pp->priv;
	struct agent_point *apt = pt->priv;
	struct utrace_abi_probe *ab;
	struct ahost_timing tm;
	unsigned int a = p->opts.actions, b;
	uint64_t every, inj;

	if (!ap || !apt || apt->id < 0 || !ap->h.arena)
		return;
	ab = ahost_abi(&ap->h, apt->id);
	every = ab->inject_every ? ab->inject_every : 1;
	inj = (apt->flags & UTRACE_PF_INJECT) ?
		      __atomic_load_n(&ab->inject_calls, __ATOMIC_RELAXED) / every :
		      0;
	if (a & UTRACE_ACT_INJECT)
		c->injected = inj;
	c->missed_returns = __atomic_load_n(&ab->missed_ret, __ATOMIC_RELAXED);
	c->unrecorded = __atomic_load_n(&ab->nested_calls, __ATOMIC_RELAXED);
	if (a & UTRACE_ACT_COUNT)
		c->calls = ahost_hits(&ap->h, apt->id);
	if (!uprobes_probe_has_return(p) || !(a & (UTRACE_ACT_COUNT | UTRACE_ACT_HIST)))
		return;
	/* the target wrote these: a hostile one only lies about itself */
	ahost_timing(&ap->h, apt->id, &tm);
	if (a & UTRACE_ACT_COUNT)
		c->errors = tm.errors;
	c->returns = tm.returns;
	if (!(a & UTRACE_ACT_HIST))
		return;
	for (b = 0; b < UTRACE_HIST_BUCKETS; b++) {
		c->hist[b] = tm.hist[b];
		c->timed += c->hist[b];
	}
	if (!c->timed)
		return;
	c->sum_ns = tm.sum_ns;
	c->max_ns = tm.max_ns;
	c->min_ns = tm.min_ns == UINT64_MAX ? c->max_ns : tm.min_ns; /* read mid-update */
}

static void grp_reset(struct agent_proc *ap)
{
	unsigned int i;

	/* most groups carry no string: nothing to clear (a drain's hot path) */
	for (i = 0; ap->grp_strs && i < ARRAY_SIZE(ap->str); i++) {
		free(ap->str[i]);
		ap->str[i] = NULL;
		ap->str_len[i] = 0;
		ap->str_flags[i] = 0;
	}
	ap->grp_strs = false;
	ap->grp_left = 0;
	ap->nr_stack = 0;
	ap->nr_regs = 0;
	ap->dump_len = 0;
}

/*
 * Deliver the group of @ev (an ENTRY, RETURN or INJECT: ap->grp, or the
 * drained record itself when nothing follows it) as one record per probe
 * at the point that records.
 */
static void grp_emit(struct agent_layer *al, struct agent_proc *ap,
		     const struct utrace_abi_event *ev)
{
	struct probe_point *pt = ev->probe < AGENT_PROBES ? ap->by_id[ev->probe] : NULL;
	unsigned int i, k;

	if (!pt || al->fn_ret)
		goto out;
	for (k = 0; k < pt->nr_probes && !al->fn_ret; k++) {
		struct utrace_probe *p = pt->probes[k];
		struct utrace_record *rp = &al->rec;

		if (p->dead || !(p->opts.actions & UTRACE_ACT_RECORD))
			continue;
		/*
		 * What any branch below sets, reset: the record is reused. The
		 * strings and the stack only when the last record had some
		 * (al->rec_dirty): most records have neither, and these
		 * stores were a good part of a recorded call's drain.
		 */
		rp->sz = sizeof(*rp);
		rp->flags = 0;
		rp->retval = rp->dur_ns = 0;
		rp->nargs = 0;
		if (al->rec_dirty) {
			rp->ret_str = NULL;
			rp->ret_str_len = 0;
			rp->ret_str_flags = 0;
			rp->stack = NULL;
			rp->nr_stack = 0;
			rp->regs = NULL;
			rp->nr_regs = 0;
			rp->stack_sp = 0;
			rp->stack_data = NULL;
			rp->stack_len = 0;
			for (i = 0; i < 6; i++) {
				rp->str[i] = NULL;
				rp->str_len[i] = 0;
				rp->str_flags[i] = 0;
			}
			al->rec_dirty = false;
		}
		for (i = 0; i < 6; i++)
			rp->args[i] = 0;
		rp->pid = ap->pid;
		rp->tid = (pid_t)ev->tid;
		rp->ts_ns = ev->ts;
		rp->probe = p;
		rp->addr = pt->addr;
		rp->name = pt->name;
		rp->symbol = pt->symbol;
		rp->object = pt->object;
		rp->offset = pt->info.offset;
		rp->depth = ev->depth;
		if (ev->kind == UTRACE_EV_INJECT) {
			/* after the call's ENTRY record: it returned the value at once */
			if (!uprobes_probe_has_return(p) && !(p->opts.actions & UTRACE_ACT_INJECT))
				continue;
			rp->type = UTRACE_REC_RETURN;
			rp->flags = UTRACE_REC_F_INJECTED;
			rp->retval = ahost_abi(&ap->h, (int)ev->probe)->inject_value;
		} else if (ev->kind == UTRACE_EV_RETURN) {
			if (!uprobes_probe_has_return(p))
				continue;
			rp->type = UTRACE_REC_RETURN;
			rp->retval = ev->args[0];
			rp->dur_ns = ev->dur;
			if (pt->popts[k].str_args & (1U << 6)) {
				al->rec_dirty = true;
				rp->ret_str_flags = ap->str_flags[UTRACE_STR_RET];
				if (!(rp->ret_str_flags & UTRACE_REC_STR_FAULT) ||
				    ap->str_len[UTRACE_STR_RET]) {
					rp->ret_str = ap->str[UTRACE_STR_RET];
					rp->ret_str_len = ap->str_len[UTRACE_STR_RET];
				}
			}
		} else {
			if (!uprobes_probe_has_entry(p))
				continue;
			rp->type = UTRACE_REC_ENTRY;
			rp->nargs = pt->popts[k].nargs;
			if (p->opts.actions & UTRACE_ACT_STACK) {
				al->rec_dirty = true;
				rp->stack = ap->stack;
				rp->nr_stack = ap->nr_stack;
				if (ap->nr_regs == UTRACE_ABI_NR_REGS) { /* a whole copy only */
					rp->regs = ap->regs;
					rp->nr_regs = ap->nr_regs;
					rp->stack_sp = ap->regs[UTRACE_REC_REG_RSP];
					rp->stack_data = ap->dump;
					rp->stack_len = ap->dump_len;
				}
			}
			for (i = 0; i < 6; i++) {
				rp->args[i] = ev->args[i];
				if (i >= rp->nargs || !(pt->popts[k].str_args & (1U << i)))
					continue;
				/* nothing readable at the pointer: no string (the address stays) */
				al->rec_dirty = true;
				rp->str_flags[i] = ap->str_flags[i];
				if ((ap->str_flags[i] & UTRACE_REC_STR_FAULT) && !ap->str_len[i])
					continue;
				rp->str[i] = ap->str[i];
				rp->str_len[i] = ap->str_len[i];
			}
		}
		al->fn_ret = al->fn(rp, al->fn_ctx);
		al->delivered++;
	}
out:
	grp_reset(ap);
}

/* One STR record: @ext's bytes appended to string UTRACE_STR_INDEX(ext). */
static void grp_str(struct agent_proc *ap, const struct utrace_abi_event *ev)
{
	unsigned int idx = UTRACE_STR_INDEX(ev->ext), len = UTRACE_STR_LEN(ev->ext);
	char *n;

	if (idx > UTRACE_STR_RET)
		return;
	ap->grp_strs = true;
	n = realloc(ap->str[idx], ap->str_len[idx] + len + 1);
	if (!n)
		return;
	memcpy(n + ap->str_len[idx], ev->args, len);
	ap->str_len[idx] += len;
	n[ap->str_len[idx]] = 0;
	ap->str[idx] = n;
	if (ev->ext & UTRACE_STR_FAULT)
		ap->str_flags[idx] |= UTRACE_REC_STR_FAULT;
	else if (!(ev->ext & UTRACE_STR_END))
		ap->str_flags[idx] |= UTRACE_REC_STR_TRUNC;
}

/*
 * One STACKDATA record: its bytes appended to the copy of the stack. What
 * the target wrote is bounded here (record_ok() checked ext): the copy
 * never grows past UTRACE_ABI_STACK_DUMP_MAX, and a copy without its
 * registers first is not one (dropped).
 */
static void grp_dump(struct agent_proc *ap, const struct utrace_abi_event *ev)
{
	size_t len = ev->ext;

	if (ap->nr_regs != UTRACE_ABI_NR_REGS || len > UTRACE_ABI_DUMP_CHUNK)
		return;
	if (!ap->dump && !(ap->dump = malloc(UTRACE_ABI_STACK_DUMP_MAX)))
		return;
	if (len > UTRACE_ABI_STACK_DUMP_MAX - ap->dump_len)
		len = UTRACE_ABI_STACK_DUMP_MAX - ap->dump_len;
	memcpy(ap->dump + ap->dump_len, ev->args, len);
	ap->dump_len += len;
}

static struct agent_proc *draining;

static void on_record(const struct utrace_abi_event *ev, void *data)
{
	struct agent_layer *al = data;
	struct agent_proc *ap = draining;

	if (ap->grp_left) {
		ap->grp_left--;
		if (ev->kind == UTRACE_EV_STR)
			grp_str(ap, ev);
		else if (ev->kind == UTRACE_EV_STACK) {
			unsigned int k;

			for (k = 0; k < ev->ext && ap->nr_stack < UTRACE_REC_MAX_STACK; k++)
				ap->stack[ap->nr_stack++] = ev->args[k];
		} else if (ev->kind == UTRACE_EV_REGS) {
			unsigned int k;

			for (k = 0; k < ev->ext && ap->nr_regs < UTRACE_ABI_NR_REGS; k++)
				ap->regs[ap->nr_regs++] = ev->args[k];
		} else if (ev->kind == UTRACE_EV_STACKDATA) {
			grp_dump(ap, ev);
		}
		if (!ap->grp_left)
			grp_emit(al, ap, &ap->grp);
		return;
	}
	switch (ev->kind) {
	case UTRACE_EV_ENTRY:
	case UTRACE_EV_RETURN:
	case UTRACE_EV_INJECT:
		/* kept only when records follow (@ev is the drain's copy) */
		if (!ev->ext) {
			grp_emit(al, ap, ev);
			break;
		}
		ap->grp = *ev;
		ap->grp_left = ev->ext;
		break;
	case UTRACE_EV_LOST:
		if (!al->fn_ret) {
			struct utrace_record r = { .sz = sizeof(r), .type = UTRACE_REC_LOST };

			r.pid = ap->pid;
			r.tid = (pid_t)ev->tid;
			r.ts_ns = ev->ts;
			r.lost = ev->args[0];
			al->fn_ret = al->fn(&r, al->fn_ctx);
			al->delivered++;
		}
		break;
	case UTRACE_EV_MODULE:
		if (!al->fn_ret)
			module_record(al, ap, ev);
		break;
	default:
		break; /* STACK outside a group: not a record */
	}
}

/* Is @pid a child of @parent now? (/proc/PID/stat's 4th field) */
static bool is_child_of(pid_t pid, pid_t parent)
{
	char buf[512];
	const char *f = proc_stat_fields(pid, buf, sizeof(buf));
	int ppid;

	return f && sscanf(f, " %*c %d", &ppid) == 1 && ppid == (int)parent;
}

/*
 * A fork child of @pp announced its arena (agent.c fork_rearena(), waiting
 * for our ack before its fork() returns): map it through /proc/PID/fd/FD,
 * wait until its control thread is READY, seize that thread alone (as
 * anchor() keeps the parent's: its exit is the child's), and make the child
 * a process of the layer whose points are its parent's ids (agent_arm()).
 * The pid and fd come from the arena, which the target writes: a tracer
 * running as root must not be steered into opening another process's
 * file. Only a child of the traced process, and only its arena memfd.
 */
static void fork_adopt(struct utrace_uprobes *up, struct uprobes_proc *pp, struct agent_proc *par,
		       pid_t pid, int fd)
{
	struct agent_layer *al = layer(up);
	struct utrace_arena_hdr *hd, lay = { .max_probes = par->h.lay.max_probes,
					     .max_threads = par->h.lay.max_threads,
					     .ring_records = par->h.lay.ring_records };
	struct agent_proc *ap;
	char path[64], link[64];
	struct stat st;
	ssize_t n;
	void *m;
	int afd, i, err;
	pid_t ctl;

	if (pid <= 0 || fd < 0 || !is_child_of(pid, pp->pid) || uprobes_proc_find(up, pid))
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
	ap = aproc_new(up);
	if (!ap || ahost_set_layout(&ap->h, &lay)) {
		aproc_free(ap);
		munmap(m, lay.arena_size);
		close(afd);
		return;
	}
	ap->h.fd = afd;
	ap->h.arena = m;
	ap->h.hdr = hd;
	ap->h.pid = pid; /* session_owned: never killed, never waited for */
	ap->h.nr_probes = par->h.nr_probes;
	ap->h.reserved_top = par->h.reserved_top;
	/* the child's agent has its parent's modules, counters in its own arena */
	memcpy(ap->mod_idx, par->mod_idx, sizeof(ap->mod_idx));
	ap->mod_arena = par->mod_arena;
	ap->pid = pid;
	ap->hello = true; /* dlopen()s through dl_seq, its control thread's int3 */
	ap->anchored = true;
	ap->fork_parent = pp->pid;
	ap->guarded = par->guarded; /* the copied table holds the guards */
	/* its control thread runs already (fork_rearena() made it before announcing) */
	for (i = 0; i < 500; i++) {
		struct timespec ts = { 0, 1000000 };

		if (__atomic_load_n(&hd->agent_state, __ATOMIC_ACQUIRE) == UTRACE_AGENT_READY)
			break;
		syscall(SYS_futex, &hd->agent_state, FUTEX_WAIT, UTRACE_AGENT_NONE, &ts, NULL, 0);
	}
	ctl = (pid_t)__atomic_load_n(&hd->control_tid, __ATOMIC_ACQUIRE);
	err = __atomic_load_n(&hd->agent_state, __ATOMIC_ACQUIRE) == UTRACE_AGENT_READY && ctl > 0 ?
		      utrace_session__attach_thread(up->s, pid, ctl) :
		      -EPROTO;
	if (err) {
		pr_warn("process %d: cannot follow its fork child %d: %s\n", pp->pid, pid,
			err == -EPROTO ? "its agent did not start" : strerror(-err));
		aproc_free(ap); /* F_RELEASED: the child's agent goes dormant, bytes restored */
		return;
	}
	ap->ready = true;
	ap->dl_seen = __atomic_load_n(&hd->dl_seq, __ATOMIC_ACQUIRE);
	ap->next = al->procs;
	al->procs = ap;
	uprobes_proc_fork(up, pp->pid, pid, false, true); /* agent_proc_init() adopts @ap */
	if (!uprobes_proc_find(up, pid)) {
		struct agent_proc *l;

		for (l = al->procs; l && l != ap; l = l->next)
			;
		if (l) { /* not adopted (else freed with its process) */
			unlist(al, ap);
			aproc_free(ap);
		}
		pr_warn("process %d: cannot follow its fork child %d\n", pp->pid, pid);
		return;
	}
	if (al->fn && !al->fn_ret) {
		/* (before the child's first records, drained after this in the same poll) */
		struct utrace_record fr = { .sz = sizeof(fr), .type = UTRACE_REC_FORK };

		fr.pid = fr.tid = pp->pid;
		fr.child = pid;
		fr.ts_ns = uprobes_now_ns();
		al->fn_ret = al->fn(&fr, al->fn_ctx);
		al->delivered++;
	}
}

/*
 * UTRACE_UPROBES_FOLLOW_FORKS: the fork children each process's arena
 * announced since the last look, then their ack (the child waits for it).
 * Tracing thread, from utrace_uprobes__poll(), never inside a callback.
 */
static void follow_forks(struct utrace_uprobes *up)
{
	struct uprobes_proc *pp;

	if (!(up->flags & UTRACE_UPROBES_FOLLOW_FORKS) || !up->agent_untraced || !up->s ||
	    up->s->dispatch_depth || up->freeing)
		return;
	for (pp = up->procs; pp; pp = pp->next) {
		struct agent_proc *ap = pp->priv;
		uint32_t *acked;
		pid_t kpid;
		int kfd, guard;

		if (!ap || !ap->ready || ap->corrupt_said || !ap->h.hdr)
			continue;
		/* bounded: a target that keeps bumping fork_head cannot hold us here */
		for (guard = 0;
		     guard < UTRACE_ABI_FORKS &&
		     ahost_next_fork(&ap->h, &ap->forks_seen, &ap->forks_lost, &kpid, &kfd, &acked);
		     guard++) {
			fork_adopt(up, pp, ap, kpid, kfd);
			__atomic_store_n(acked, 1, __ATOMIC_RELEASE);
			syscall(SYS_futex, acked, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
		}
	}
}

static int agent_poll(struct utrace_uprobes *up, utrace_record_fn_t fn, void *ctx, int timeout_ms)
{
	struct agent_layer *al = layer(up);
	struct uprobes_proc *pp;
	pid_t corrupt = 0;
	int r;

	al->fn = fn;
	al->fn_ctx = ctx;
	al->fn_ret = 0;
	al->delivered = 0;
	for (;;) {
		follow_execs(up, false);
		follow_forks(up);
		for (pp = up->procs; pp && !al->fn_ret; pp = pp->next) {
			struct agent_proc *ap = pp->priv;
			uint64_t drops;

			if (!ap || !ap->ready || ap->corrupt_said)
				continue;
			check_images(pp, ap);
			draining = ap;
			ahost_drain(&ap->h, on_record, al);
			draining = NULL;
			if (ap->h.corrupt) {
				/*
				 * The target wrote what its agent never would
				 * (lib/agent-arena.c's checks): nothing more of
				 * it is believed; its probes go (the agent's
				 * DETACH, as at any detach) once out of this loop.
				 */
				pr_warn("the agent's arena in pid %d is corrupt (%s): detaching\n",
					(int)ap->pid, ap->h.why);
				ap->corrupt_said = true;
				corrupt = ap->pid;
				continue;
			}
			drops = ahost_drops(&ap->h);
			if (drops > ap->drops && !al->fn_ret) {
				struct utrace_record lr = { .sz = sizeof(lr),
							    .type = UTRACE_REC_LOST };

				lr.pid = ap->pid;
				lr.ts_ns = uprobes_now_ns();
				lr.lost = drops - ap->drops;
				ap->drops = drops;
				al->fn_ret = fn(&lr, ctx);
				al->delivered++;
			}
		}
		if (al->fn_ret)
			return al->fn_ret;
		if (corrupt) {
			detach_corrupt(up, false);
			return -EBADMSG;
		}
		if (al->delivered || !timeout_ms || !up->s)
			return al->delivered;
		/*
		 * Nothing yet: let the session handle its events (exits, the
		 * hello, signals) for a slice of the wait, then look again.
		 */
		r = utrace_session__run(up->s, timeout_ms > 0 && timeout_ms < 20 ? timeout_ms : 20);
		if (r < 0)
			return r;
		if (r != UTRACE_RUN_TIMEOUT)
			return al->delivered; /* nothing left, a break, an interrupt */
		if (timeout_ms > 0)
			timeout_ms = timeout_ms > 20 ? timeout_ms - 20 : 0;
	}
}

static int queue_fn(const struct utrace_record *r, void *ctx)
{
	uprobes_queue_record(ctx, r);
	return 0;
}

/* @pp's points are about to go: its rings' records into the registry's queue. */
static void agent_proc_flush(struct uprobes_proc *pp)
{
	struct agent_layer *al = layer(pp->up);
	struct agent_proc *ap = pp->priv;
	utrace_record_fn_t fn = al->fn;
	void *fn_ctx = al->fn_ctx;
	int fn_ret = al->fn_ret, delivered = al->delivered;

	unsigned int i;

	if (!ap || !ap->h.arena)
		return;
	if (!ap->h.tails)
		goto fold;
	al->fn = queue_fn;
	al->fn_ctx = pp->up;
	al->fn_ret = 0;
	draining = ap;
	ahost_drain(&ap->h, on_record, al);
	draining = NULL;
	grp_reset(ap);
	{
		/* the drops since the last poll: counted, as the records are */
		uint64_t drops = ahost_drops(&ap->h);
		struct utrace_record lr = { .sz = sizeof(lr), .type = UTRACE_REC_LOST };

		if (drops > ap->drops) {
			lr.pid = ap->pid;
			lr.ts_ns = uprobes_now_ns();
			lr.lost = drops - ap->drops;
			ap->drops = drops;
			uprobes_queue_record(pp->up, &lr);
		}
	}
	al->fn = fn;
	al->fn_ctx = fn_ctx;
	al->fn_ret = fn_ret;
	al->delivered = delivered;
fold:
	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = pp->points[i]; pt; pt = pt->hnext)
			fold_point(pp, ap, pt);
	}
}

/* Where the agent's code is mapped in @ap's process (r-xp of libutrace-agent.so). */
static bool agent_text(struct agent_proc *ap)
{
	char path[64], line[PATH_MAX + 128];
	FILE *f;

	if (ap->text_hi)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)ap->pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		char perms[8];

		/* preloaded, injected, or a second session's private copy (utrace-copy:) */
		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) == 3 && perms[2] == 'x' &&
		    strstr(line, "libutrace-agent.so")) {
			ap->text_lo = lo;
			ap->text_hi = hi;
			break;
		}
	}
	fclose(f);
	return ap->text_hi != 0;
}

/*
 * ->own_syscall, at a syscall-entry stop (the CLI's -s engine): the
 * control thread's calls; a call from the agent's code (its rip, or the
 * return address a libc wrapper without a frame has at [rsp]); and, while
 * a launched process waits for its hello, every call after the first such
 * one of its main thread: the dynamic linker is done by then (the agent is
 * preloaded: its constructor runs after libc's and the other libraries',
 * before the program's), so only the agent's constructor runs there
 * (pthread_create() of its control thread included), and a thread that
 * starts meanwhile is that control thread, before it says its tid.
 */
static bool agent_own_syscall(struct utrace_uprobes *up, struct utrace_thread *th)
{
	pid_t pid = utrace_thread__pid(th), tid = utrace_thread__tid(th);
	struct uprobes_proc *pp = uprobes_proc_find(up, pid);
	struct agent_proc *ap = pp ? pp->priv : NULL;
	struct user_regs_struct regs;
	uint64_t ret = 0;
	bool ctor = false;

	/*
	 * the injected agent's control thread, before it could publish its
	 * tid (and before the process is the layer's: the injection is still
	 * under way)
	 */
	if (th->injected)
		return true;
	if (!ap)
		return false;
	if (ap->h.hdr && (pid_t)__atomic_load_n(&ap->h.hdr->control_tid, __ATOMIC_ACQUIRE) == tid)
		return true;
	/* the constructor blocks main(): a new thread now is its control thread */
	if (ap->hello && !ap->ready && ap->ctor_seen)
		return true;
	if (!agent_text(ap) || utrace_thread__get_regs(th, &regs) < 0)
		return false;
	/*
	 * The agent interposes the program's exec*(), sigaction(), signal(),
	 * sigprocmask() and pthread_sigmask() (agent/interpose.c): a leaf libc
	 * wrapper called from there has the interposer's address at [rsp],
	 * but the call is the program's.
	 */
	if (ap->ready &&
	    ((long)regs.orig_rax == SYS_execve || (long)regs.orig_rax == SYS_execveat ||
	     (long)regs.orig_rax == SYS_rt_sigaction || (long)regs.orig_rax == SYS_rt_sigprocmask))
		return false;
	if (regs.rip >= ap->text_lo && regs.rip < ap->text_hi)
		ctor = true;
	else if (utrace_thread__read_mem(th, regs.rsp, &ret, sizeof(ret)) == sizeof(ret) &&
		 ret >= ap->text_lo && ret < ap->text_hi)
		ctor = true;
	if (ctor && ap->hello && !ap->ready && tid == pid)
		ap->ctor_seen = true;
	return ctor;
}

/*
 * ->own_signal: a SIGTRAP of one of our int3-mode sites (the kernel's
 * SI_KERNEL at a point of this process, its rip past the int3), or the
 * upgrade signal (agent/patch.c send_upgrade(): a real-time signal the
 * process queued to its own thread, SI_QUEUE, while its agent runs).
 */
static bool agent_own_signal(struct utrace_uprobes *up, struct utrace_thread *th,
			     const siginfo_t *si)
{
	pid_t pid = utrace_thread__pid(th);
	struct uprobes_proc *pp = uprobes_proc_find(up, pid);
	struct agent_proc *ap = pp ? pp->priv : NULL;
	struct user_regs_struct regs;

	if (!ap || !ap->ready)
		return false;
	if (si->si_signo == SIGTRAP && si->si_code == SI_KERNEL) {
		uint64_t site;
		unsigned int i;

		if (utrace_thread__get_regs(th, &regs) < 0)
			return false;
		site = regs.rip - 1;
		if (uprobes_point_find(pp, site) || (ap->dl_site && site == ap->dl_site))
			return true;
		/* the planner may put the site past the point (after endbr64, a kernel uprobe) */
		for (i = 0; i < ap->h.nr_probes && i < AGENT_PROBES; i++)
			if (ap->by_id[i] && ahost_abi(&ap->h, (int)i)->addr == site)
				return true;
		return false;
	}
	return si->si_signo >= SIGRTMIN && si->si_signo <= SIGRTMAX && si->si_code == SI_QUEUE &&
	       si->si_pid == pid;
}

const struct uprobes_backend_ops uprobes_agent_ops = {
	.id = UTRACE_BACKEND_AGENT,
	.name = "agent",
	.site_checks = true,
	.init = agent_init,
	.fini = agent_fini,
	.proc_init = agent_proc_init,
	.after = agent_after,
	.attach = agent_attach,
	.proc_forget = agent_proc_forget,
	.arm = agent_arm,
	.disarm = agent_disarm,
	.commit = agent_commit,
	.point_free = agent_point_free,
	.release = agent_release,
	.signal = agent_signal,
	.point_update = agent_point_update,
	.point_counts = agent_point_counts,
	.site = agent_site,
	.poll = agent_poll,
	.proc_flush = agent_proc_flush,
	.module_load = agent_module_load,
	.module_counts = agent_module_counts,
	.own_syscall = agent_own_syscall,
	.own_signal = agent_own_signal,
};
