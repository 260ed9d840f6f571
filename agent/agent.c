/* SPDX-License-Identifier: MIT */
/*
 * agent.c - entry points of libutrace-agent.so and its control thread.
 *
 * Two ways in:
 *  - launch (preload) mode: LD_PRELOAD=libutrace-agent.so with
 *    UTRACE_AGENT_FD=N, an inherited memfd of the arena (common/abi.h). The
 *    constructor maps it, starts the control thread and, if the host asked
 *    (UTRACE_ARENA_F_WAIT_START), waits until the host has armed its probes
 *    and sent UTRACE_CMD_START, so that main() runs probed from its first
 *    instruction. The wait is bounded (10 s), after which the program runs
 *    as if untraced.
 *  - injection mode: __utrace_agent_init(arena_fd, flags), called by the
 *    host's remote call after dlopen; it maps the arena, starts the control
 *    thread and returns at once.
 *
 * The control thread serves the mailbox (abi.h) and watches the host with a
 * pidfd. When the host exits, or sends DETACH, every probe is disarmed and
 * the agent goes dormant: the target runs on with its code bytes as before.
 * The agent never exits, aborts or prints; failures are status fields in
 * the arena (agent_err, a probe's err).
 *
 * The control thread blocks every signal and is cloaked (its own calls of
 * probed functions run no handler).
 *
 * THE ARENA OF A DORMANT AGENT
 *
 * A process may be attached and detached thousands of times; each session
 * must leave nothing behind but what the next one reuses (the agent
 * itself, its XOL areas, its private tables: tests/e2e/test-agent-leaks.c,
 * 1,000 cycles: fds +0; mappings +2 and RSS +1 MiB, the new XOL slots of
 * each session's probes, which are never reused). So, when a session
 * ends (go_dormant(), control thread):
 *  - the fds it opened are closed: the pidfd of the host, /proc/self/mem
 *    (patch_release(); patch_reset() opens it again for the next session).
 *    The arena's own fd was closed right after init (injection: the agent
 *    owns it, lib/inject.h); launch mode keeps UTRACE_AGENT_FD for execve.
 *  - the arena's pages are given back, but not its addresses. Threads may
 *    still hold pointers into it (a task's slot, counters and ring, a
 *    probe's counters) and be just about to use them: preempted between
 *    the check of agent_active and the write, or inside a handler. Unmapped,
 *    such a write would crash the program or scribble on whatever is mapped
 *    there next. So the range becomes anonymous zero pages in one
 *    mmap(MAP_FIXED) (arena_release(): atomic for other threads, which see
 *    either the memfd's page or a zero page, never a hole): the memfd is no
 *    longer mapped here (its memory goes when the host lets go), a late
 *    write lands in a private zero page and is lost, RSS drops by the
 *    rings. This "tombstone" is never unmapped.
 *  - the next session maps its arena over the tombstone (MAP_FIXED at the
 *    same address, when it fits): mappings stay as they were. That is safe
 *    only if no thread of the last session can still write through an old
 *    pointer, since the same offsets now belong to the new session's
 *    threads. The proof (patch_quiesce(), before the DETACH ack): with
 *    agent_active cleared, every path into the agent that writes the arena
 *    checks it first (the thunk's fast path, dispatch_hit(), the return
 *    path's counters in retprobe.c, the trap handler's counters, the slot
 *    release at thread exit, a task's first claim), and the window from the
 *    check to the last write is either agent code or under the guard. One
 *    signal to every other thread: each answers from its handler whether
 *    it was interrupted in the agent's code or with the guard held (or
 *    while making its task: guard_busy()); those that were are asked again
 *    until none is. Then no thread is inside, and none enters any more.
 *    Not proved (a thread blocks the signal or is stopped, or stays inside
 *    for 100 ms): the next arena is mapped elsewhere, and the tombstone
 *    stays, zero pages, one mapping.
 *    Not seen by the proof: a thread interrupted inside the counting fast
 *    path (the five instructions between the session check and the incq,
 *    entry.S and utrace_dispatch_entry()) by a signal whose handler still
 *    runs when the session ends: its interrupted PC is in a signal frame,
 *    not its live one (patch.c has the same residual case for upgrades).
 *    Its incq lands in the tombstone, or in the next session's arena: one
 *    count of another thread's slot, no crash, no memory outside the
 *    arena. A full-path hit in that state sees the new session (the guard
 *    is taken before the session is checked) and claims a new slot.
 * Then control_running is cleared: agent_start() of a re-attach waits for
 * that (up to 1 s) instead of calling the agent busy, which would make the
 * host load a copy.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent-internal.h"

struct utrace_arena_hdr agent_layout;
void *agent_arena;
struct utrace_arena_hdr *agent_hdr;
struct utrace_probe *agent_probes;
uint32_t agent_nr_probes;
volatile int agent_active;
volatile uint32_t agent_gen;

static int host_pidfd = -1;
static bool host_gone; /* the host had exited before we could watch it */
/*
 * The control thread's look at the jmp sites (patch_check_taken()), in ms:
 * the exposed ones (a kernel uprobe there kills at its first hit), all.
 */
#define CHECK_MS 5
#define CHECK_ALL_MS 200

static uint32_t started; /* futex word: CMD_START seen (or gave up) */
static bool after_exec; /* this image replaced a traced one (execve) */
static pid_t self_pid; /* the traced process; a fork child differs */
static volatile int control_running; /* a control thread serves the arena */
/*
 * The address range of the last session's arena, now anonymous zero pages
 * (arena_release()), and whether patch_quiesce() proved that no thread is
 * left inside the agent since: then the next arena may take its place.
 */
static void *tomb;
static uint64_t tomb_size;
static bool tomb_quiet;

#define DL_WAIT_NS 2000000000ull /* a dlopen() waits this long at most for the host */

/*
 * Raw (agent-internal.h): also called in program threads, whose libc calls
 * may be probed (agent_image_changed(), the constructor's wait). -errno.
 */
static long futex(uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return raw_syscall6(SYS_futex, (long)w, op, val, (long)ts, 0, 0);
}

/**
 * agent_fd_high - move the agent's long-lived @fd (a pidfd, /proc/self/mem,
 * an arena) out of the low numbers the program uses, dup2()s onto or
 * counts on being free (3, 4, ...): to the first free one from just under
 * the soft RLIMIT_NOFILE (at most 992: no bigger fd table), close-on-exec.
 * Raw syscalls: no libc function the user may be probing.
 * Return: the new fd, or @fd itself when it cannot be moved (or is < 0).
 */
int agent_fd_high(int fd)
{
	struct rlimit rl;
	long base = 992, nfd;

	if (fd < 0)
		return fd;
	if (!syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl) && rl.rlim_cur <= 1024)
		base = rl.rlim_cur >= 64 ? (long)rl.rlim_cur - 48 : 3;
	if (fd >= base)
		return fd;
	nfd = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, base);
	if (nfd < 0)
		return fd;
	syscall(SYS_close, fd);
	return (int)nfd;
}

static void ack(uint32_t seq, int result)
{
	agent_hdr->cmd_result = result;
	__atomic_store_n(&agent_hdr->ack_seq, seq, __ATOMIC_RELEASE);
	futex(&agent_hdr->ack_seq, FUTEX_WAKE, INT32_MAX, NULL);
}

/*
 * The session ends (DETACH, or the host is gone): disarm, close the fds
 * the session opened (pidfd of the host, /proc/self/mem), and prove that
 * no thread is inside the agent any more. The arena itself goes after the
 * DETACH ack, which is written into it (arena_release()). Control thread.
 */
static void go_dormant(void)
{
	agent_active = 0;
	patch_disarm_all();
	sigguard_disarm(); /* no int3 left: a mask may hold SIGTRAP again */
	patch_release();
	if (host_pidfd >= 0)
		close(host_pidfd);
	host_pidfd = -1;
	host_gone = true; /* host_alive() (agent_image_changed()) needs no kill() */
	tomb_quiet = patch_quiesce() == 0;
	__atomic_store_n(&agent_hdr->agent_state, UTRACE_AGENT_DORMANT, __ATOMIC_RELEASE);
	__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	futex(&started, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
}

/*
 * Give the arena's pages back: the same range becomes anonymous zero
 * memory in one mmap(MAP_FIXED), so the memfd is no longer mapped here
 * (its pages are freed once the host lets go too) while every address a
 * late thread may still hold stays valid ("THE ARENA OF A DORMANT AGENT").
 * Then the control thread is gone: a new session may start. Control
 * thread, last thing it does.
 */
static void arena_release(void)
{
	void *m = mmap(agent_arena, agent_layout.arena_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	if (m == agent_arena) {
		tomb = m;
		tomb_size = agent_layout.arena_size;
	}
	__atomic_store_n(&control_running, 0, __ATOMIC_RELEASE);
	futex((uint32_t *)&control_running, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
}

static int run_cmd(uint32_t cmd)
{
	switch (cmd) {
	case UTRACE_CMD_PING:
		return 0;
	case UTRACE_CMD_XOL_MAP:
		return tramp_xol_map(agent_hdr->cmd_arg[0], agent_hdr->cmd_arg[1]);
	case UTRACE_CMD_SYNC:
		sigguard_arm(true); /* before any new int3: objects loaded since, lazy binds */
		return patch_sync();
	case UTRACE_CMD_START:
		/* Handled in control_main: the ack must precede the release. */
		return 0;
	case UTRACE_CMD_MODULE_LOAD:
		return module_load(agent_hdr->cmd_arg[0], agent_hdr->cmd_arg[1]);
	case UTRACE_CMD_MODULE_BIND:
		return module_bind(agent_hdr->cmd_arg[0], agent_hdr->cmd_arg[1]);
	default:
		return -EINVAL;
	}
}

/* The host process is alive: its pidfd is not readable (else kill(pid, 0)). */
static bool host_alive(void);

/* host_alive() for ring.c's waits (a program thread: raw system calls only) */
bool agent_host_alive(void)
{
	return host_alive();
}

static bool host_alive(void)
{
	struct pollfd pfd = { .fd = host_pidfd, .events = POLLIN };
	pid_t pid = (pid_t)agent_layout.host_pid;

	if (agent_hdr &&
	    __atomic_load_n(&agent_hdr->flags, __ATOMIC_ACQUIRE) & UTRACE_ARENA_F_RELEASED)
		return false; /* the host let this session go (abi.h) */
	/* raw: agent_image_changed() calls this in a program thread */
	if (host_pidfd >= 0)
		return raw_syscall6(SYS_poll, (long)&pfd, 1, 0, 0, 0, 0) == 0;
	if (host_gone)
		return false;
	if (pid <= 0)
		return true;
	return raw_syscall6(SYS_kill, pid, 0, 0, 0, 0, 0) != -ESRCH;
}

void __utrace_agent_dl_fn(void) __asm__("__utrace_agent_dl_site"); /* below, in asm */

static void *control_main(void *arg)
{
	uint32_t last = __atomic_load_n(&agent_hdr->cmd_seq, __ATOMIC_ACQUIRE), nr_jmp = 0;
	uint32_t round = 0;
	sigset_t all;

	(void)arg;
	/*
	 * Cloaked first: in a fork child (-F) or a later session the probes
	 * are in place already, and the libc calls below (patch_agent_signals()
	 * asks sigaction() about ~30 signals) are the agent's.
	 */
	guard_cloak_self();
	/* SIGTRAP stays open (interpose.c: a thread blocking it dies of an int3). */
	sigfillset(&all);
	patch_agent_signals(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	if (after_exec)
		guard_release_all(); /* before any hit of the new image claims one */
	ring_str_init();
	ring_calibrate();
	/* before the host arms anything: no thread blocks SIGTRAP from now on */
	sigguard_arm(true);
	agent_hdr->control_tid = guard_gettid();
	__atomic_store_n(&agent_hdr->agent_state, UTRACE_AGENT_READY, __ATOMIC_RELEASE);
	futex(&agent_hdr->agent_state, FUTEX_WAKE, INT32_MAX, NULL);
	if (after_exec) {
		/* after READY: the host re-plans as soon as it sees this */
		__atomic_fetch_add(&agent_hdr->exec_seq, 1, __ATOMIC_RELEASE);
		futex(&agent_hdr->exec_seq, FUTEX_WAKE, INT32_MAX, NULL);
	}
	for (;;) {
		uint32_t seq = __atomic_load_n(&agent_hdr->cmd_seq, __ATOMIC_ACQUIRE);
		struct timespec ts = { 0, 100000000L };

		if (seq != last) {
			uint32_t cmd = agent_hdr->cmd;

			last = seq;
			if (cmd == UTRACE_CMD_DETACH) {
				go_dormant();
				ack(seq, 0);
				arena_release();
				return NULL;
			}
			if (cmd == UTRACE_CMD_START) {
				/*
				 * Ack first: once released, main() may run to
				 * exit_group() before this thread writes anything.
				 */
				ack(seq, 0);
				__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
				futex(&started, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
				continue;
			}
			ack(seq, run_cmd(cmd));
			continue;
		}
		/*
		 * With jmp sites armed: look for kernel uprobes put on them
		 * (patch.c, patch_check_taken()) every CHECK_MS, and after
		 * every command.
		 */
		if (agent_active)
			patch_check_taken(!(round % (CHECK_ALL_MS / CHECK_MS)), &nr_jmp);
		if (nr_jmp)
			ts.tv_nsec = CHECK_MS * 1000000L;
		futex(&agent_hdr->cmd_seq, FUTEX_WAIT, last, &ts);
		/*
		 * ANCHOR (abi.h): a dlopen()/dlclose() waits for dl_ack; this
		 * thread is the traced one: the tracer re-plans in its int3's stop
		 */
		if ((__atomic_load_n(&agent_hdr->flags, __ATOMIC_ACQUIRE) &
		     UTRACE_ARENA_F_ANCHOR) &&
		    __atomic_load_n(&agent_hdr->dl_seq, __ATOMIC_ACQUIRE) !=
			    __atomic_load_n(&agent_hdr->dl_ack, __ATOMIC_ACQUIRE) &&
		    host_alive())
			__utrace_agent_dl_fn();
		/* the rest every 100 ms, as when no jmp site is armed */
		if (nr_jmp && ++round % (100 / CHECK_MS))
			continue;
		/* Another instance may have come meanwhile: answer its broadcasts. */
		sigfillset(&all);
		patch_agent_signals(&all);
		pthread_sigmask(SIG_SETMASK, &all, NULL);
		if (!host_alive()) {
			go_dormant();
			arena_release();
			return NULL;
		}
		sigguard_arm(false); /* a dlopen()ed object's slots */
		ring_calibrate();
	}
	return NULL;
}

/*
 * -F (UTRACE_ARENA_F_FOLLOW_FORK): the fork child keeps its probes, with an
 * arena of its own, so that its counts and records are its own and the host
 * can detach it alone. Runs in the child right after fork(), one thread,
 * before fork() returns there, so no hit of the child can reach the
 * parent's arena. The new arena is a memfd like the host's (0600), with the
 * header and the probe table copied and every counter zero; the host opens
 * it as /proc/PID/fd/FD when the child announces it in the parent's arena
 * (abi.h, forks[]). The forking thread keeps its task (its return
 * instances are on the child's copy of its stack) and takes slot 0. A new
 * control thread serves the child's mailbox and watches the host.
 * Return: 0, or a negative errno (then the caller disarms the child).
 */
static int fork_rearena(void)
{
	struct utrace_arena_hdr *old = agent_hdr, *h;
	struct utrace_task *t = utrace_tls_task;
	uint64_t size = agent_layout.arena_size;
	struct utrace_abi_fork *e;
	pthread_attr_t attr;
	pthread_t th;
	uint32_t i, idx;
	void *m;
	int fd, err;

	fd = agent_fd_high((int)syscall(SYS_memfd_create, "utrace-arena", MFD_CLOEXEC));
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600) || ftruncate(fd, (off_t)size)) {
		err = -errno;
		close(fd);
		return err;
	}
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	h = m;
	utrace_memcpy(m, agent_arena, agent_layout.threads_off); /* header, probe table */
	h->agent_pid = (uint32_t)getpid();
	h->agent_state = UTRACE_AGENT_NONE;
	h->agent_err = 0;
	h->cmd_seq = h->ack_seq = h->cmd = 0;
	h->cmd_result = 0;
	h->nr_threads = h->thread_overflow = h->foreign_traps = h->late_traps = 0;
	h->upgrades = h->upgrade_skipped = h->transactions = 0;
	h->fork_head = 0;
	utrace_memset(h->forks, 0, sizeof(h->forks));
	for (i = 0; i < agent_layout.max_probes; i++) {
		struct utrace_abi_probe *a = utrace_abi_probe(m, i);

		a->hits_shared = a->nested = a->missed_ret = a->returns = a->inject_calls = 0;
		a->sum_ns = a->min_inv = a->max_ns = a->errors = a->nested_calls = 0;
		utrace_memset(a->hist, 0, sizeof(a->hist));
	}
	for (i = 0; i < agent_nr_probes; i++)
		if (agent_probes[i].abi)
			agent_probes[i].abi = utrace_abi_probe(m, i);
	agent_arena = m;
	agent_hdr = h;
	if (t) {
		t->tid = guard_gettid();
		if (t->slot) {
			t->slot = agent_abi_thread(0);
			t->hits = utrace_abi_hits(t->slot);
			t->cells = utrace_abi_cells(t->slot, agent_layout.max_probes);
			t->ring = agent_abi_ring(0);
			t->slot->tid = t->tid;
			t->slot->state = 1; /* in use (guard.c) */
			h->nr_threads = 1;
		}
	}
	patch_atfork_follow();
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, control_main, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		h->agent_err = -err;
		h->agent_state = UTRACE_AGENT_FAILED;
		return -err; /* the caller disarms; the host never hears of this child */
	}
	idx = __atomic_fetch_add(&old->fork_head, 1, __ATOMIC_RELAXED);
	e = &old->forks[idx % UTRACE_ABI_FORKS];
	e->pid = (uint32_t)getpid();
	e->fd = fd;
	__atomic_store_n(&e->acked, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, idx + 1, __ATOMIC_RELEASE);
	for (i = 0; i < 100 && !__atomic_load_n(&e->acked, __ATOMIC_ACQUIRE); i++) {
		struct timespec ts = { 0, 10000000 }; /* 1 s in all: the host polls every ms */

		futex(&e->acked, FUTEX_WAIT, 0, &ts);
	}
	/* The host has its own fd now; unacked, it may still open ours. */
	if (__atomic_load_n(&e->acked, __ATOMIC_ACQUIRE))
		close(fd);
	munmap(old, size);
	return 0;
}

/*
 * In the fork child, before fork() returns there, with the probes still
 * in place: the libc calls below are the agent's (memfd_create, mmap,
 * getpid, pthread_create...), run under the guard so that none is counted
 * as the child's, nor, before the new arena, as the parent's thread's in
 * the shared one.
 */
static void atfork_child(void)
{
	int g;

	ring_self_pid = (int)raw_getpid(); /* ring.c's string copies read this process */
	if (!agent_hdr)
		return;
	g = guard_hold();
	if (!((agent_hdr->flags & UTRACE_ARENA_F_FOLLOW_FORK) && agent_active && !fork_rearena()))
		patch_atfork_child();
	guard_unhold(g);
}

/*
 * agent_image_changed - dlopen() or dlclose() returned in this thread
 * (interpose.c, preload mode): tell the host and wait, at most
 * DL_WAIT_NS, until it has armed the SPECs that were pending on the new
 * object (or forgotten the probes of an unloaded one), so that the
 * library's first calls are probed. Runs in an application thread, not on
 * the hit path; a fork child, the agent's own threads and a dormant agent
 * do nothing.
 */
void __utrace_agent_dl_fn(void) __asm__("__utrace_agent_dl_site"); /* below, in asm */

void agent_image_changed(void)
{
	struct utrace_task *t = utrace_tls_task;
	uint64_t deadline = 0;
	uint32_t seq;

	/*
	 * Raw system calls only: this is the agent's work in the program's
	 * thread, whose getpid(), clock_gettime() and syscall() may be probed
	 * (python3 -c pass: 16, 13 and 23 calls counted that it never made).
	 */
	if (!agent_hdr || !agent_active || raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0) != self_pid ||
	    (t && t->state == UTRACE_TASK_CLOAKED))
		return;
	seq = __atomic_add_fetch(&agent_hdr->dl_seq, 1, __ATOMIC_ACQ_REL);
	if (agent_hdr->flags & UTRACE_ARENA_F_HELLO) {
		/*
		 * Under a ptrace session (lib/backend-agent.c): one int3 the
		 * tracer handles in its stop (rescan, arm, then it resumes us):
		 * no wait, however the host's loop is written.
		 */
		__utrace_agent_dl_fn();
		return;
	}
	futex(&agent_hdr->dl_seq, FUTEX_WAKE, INT32_MAX, NULL);
	if (__atomic_load_n(&agent_hdr->flags, __ATOMIC_ACQUIRE) & UTRACE_ARENA_F_ANCHOR)
		futex(&agent_hdr->cmd_seq, FUTEX_WAKE, INT32_MAX, NULL); /* the control thread */
	for (;;) {
		uint32_t ack = __atomic_load_n(&agent_hdr->dl_ack, __ATOMIC_ACQUIRE);
		struct timespec ts = { 0, 10000000 }, now;
		uint64_t ns;

		if ((int32_t)(ack - seq) >= 0 || !agent_active || !host_alive())
			break;
		raw_syscall6(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&now, 0, 0, 0, 0);
		ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
		if (!deadline)
			deadline = ns + DL_WAIT_NS;
		else if (ns >= deadline)
			break;
		futex(&agent_hdr->dl_ack, FUTEX_WAIT, ack, &ts);
	}
}

static int agent_start(int fd, unsigned int flags)
{
	struct utrace_arena_hdr h;
	pthread_attr_t attr;
	pthread_t th;
	struct stat st;
	void *m = MAP_FAILED;
	int err, i;

	(void)flags;
	/*
	 * A session is running: this copy of the agent is busy (the host may
	 * load another copy, lib/inject.c). A dormant agent (its host
	 * detached or died) serves a new arena: a new session, agent_gen + 1.
	 */
	for (i = 0; i < 100 && agent_arena && !agent_active &&
		    __atomic_load_n(&control_running, __ATOMIC_ACQUIRE);
	     i++) {
		/* The last session's control thread is finishing (go_dormant()). */
		struct timespec ts = { 0, 10000000 };

		futex((uint32_t *)&control_running, FUTEX_WAIT_PRIVATE, 1, &ts);
	}
	if (agent_arena && (agent_active || __atomic_load_n(&control_running, __ATOMIC_ACQUIRE)))
		return -EALREADY;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -EIO;
	/*
	 * An arena already in use: either this process exec'ed (same pid,
	 * the fd and UTRACE_AGENT_FD survive execve) and its new image is
	 * traced again, or a child inherited both and must leave them alone.
	 */
	if (h.agent_pid && h.agent_state != UTRACE_AGENT_NONE) {
		if (h.agent_pid != (uint32_t)getpid())
			return -ECHILD;
		if (h.agent_state != UTRACE_AGENT_READY)
			return -ESHUTDOWN; /* the host detached or failed */
		after_exec = true;
	}
	if (h.magic != UTRACE_ABI_MAGIC || h.version != UTRACE_ABI_VERSION ||
	    h.hdr_size != sizeof(h) || h.record_size != sizeof(struct utrace_abi_event) ||
	    h.arena_size > (uint64_t)st.st_size || h.max_probes > AGENT_MAX_PROBES ||
	    !h.ring_records || (h.ring_records & (h.ring_records - 1)))
		return -EPROTO;
	{
		/* Recompute the layout from the sizes; the host's offsets must agree. */
		struct utrace_arena_hdr chk = h;

		utrace_abi_layout(&chk);
		if (chk.arena_size != h.arena_size || chk.rings_off != h.rings_off ||
		    chk.threads_off != h.threads_off || chk.thread_stride != h.thread_stride ||
		    chk.probes_off != h.probes_off)
			return -EPROTO;
		h = chk;
	}
	if (tomb && tomb_quiet && h.arena_size <= tomb_size) {
		/* In the last arena's place ("THE ARENA OF A DORMANT AGENT"). */
		m = mmap(tomb, h.arena_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
		if (m == MAP_FAILED) /* the range may be a hole now: zero pages again */
			mmap(tomb, tomb_size, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
	if (m == MAP_FAILED)
		m = mmap(NULL, h.arena_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	if (agent_arena) {
		/*
		 * Re-attach. Only probes are reset; the XOL areas, the signal
		 * handlers and the site table (late traps must still find old
		 * sites) stay. A tombstone that was not reused stays mapped
		 * for good (zero pages, nothing resident).
		 */
		tomb = NULL;
		tomb_size = 0;
		patch_reset();
		tramp_publish_areas(m);
		if (host_pidfd >= 0)
			close(host_pidfd);
		host_pidfd = -1;
	} else {
		agent_probes = utrace_alloc(AGENT_MAX_PROBES * sizeof(struct utrace_probe));
		if (!agent_probes) {
			munmap(m, h.arena_size);
			return -ENOMEM;
		}
	}
	agent_layout = h;
	agent_arena = m;
	agent_hdr = m;
	self_pid = getpid();
	agent_hdr->agent_pid = (uint32_t)self_pid;
	host_pidfd = h.host_pid ? (int)syscall(SYS_pidfd_open, (pid_t)h.host_pid, 0) : -1;
	host_pidfd = agent_fd_high(host_pidfd);
	/*
	 * Killed while it injected us: do not watch its pid with kill(), which
	 * a new process may get meanwhile (the probes would stay forever).
	 */
	host_gone = h.host_pid && host_pidfd < 0 && errno == ESRCH;
	if (!__atomic_load_n(&agent_gen, __ATOMIC_RELAXED)) {
		err = patch_init();
		if (err) {
			agent_hdr->agent_err = err;
			agent_hdr->agent_state = UTRACE_AGENT_FAILED;
			return err;
		}
		guard_init();
		pthread_atfork(NULL, NULL, atfork_child);
	}
	/*
	 * After an exec under a session's hello (abi.h F_HELLO), READY is
	 * still the old image's: the hello must wait for this image's
	 * control thread, or the tracer's first command could come before
	 * that thread reads the mailbox and be lost (test-backends exec_rearms
	 * counted the old image's calls only, 1 run in 5).
	 */
	if (after_exec && (agent_hdr->flags & UTRACE_ARENA_F_HELLO))
		__atomic_store_n(&agent_hdr->agent_state, UTRACE_AGENT_NONE, __ATOMIC_RELEASE);
	/* The new arena first, then the session that makes threads use it. */
	__atomic_store_n(&agent_gen, agent_gen + 1, __ATOMIC_RELEASE);
	agent_active = 1;
	__atomic_store_n(&control_running, 1, __ATOMIC_RELEASE);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, control_main, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		agent_active = 0;
		__atomic_store_n(&control_running, 0, __ATOMIC_RELEASE);
		agent_hdr->agent_err = -err;
		agent_hdr->agent_state = UTRACE_AGENT_FAILED;
		return -err;
	}
	return 0;
}

/**
 * __utrace_agent_init - injection-mode entry point
 * @arena_fd: the arena memfd (the agent keeps its own mapping; the fd may
 *	be closed by the caller afterwards)
 * @flags: reserved, 0
 *
 * Returns at once (the control thread does the rest).
 * Return: 0, or a negative errno (also in the arena's agent_err when mapped).
 */
AGENT_API int __utrace_agent_init(int arena_fd, unsigned int flags)
{
	int err;

	/*
	 * Injected, the agent cannot interpose the unwinder: the host guards
	 * _Unwind_RaiseException and _Unwind_ForcedUnwind with probes instead
	 * (cli/cmd-trace-agent.c arm_unwind_guards()). glibc loads libgcc_s
	 * only at the first pthread_exit() or cancellation, from inside
	 * pthread_exit, too late for a guard armed when it appears: load it
	 * now (the handle is kept; glibc's own dlopen finds it loaded). In the
	 * hijacked thread, like the dlopen of the agent itself.
	 */
	if (!dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD))
		(void)dlopen("libgcc_s.so.1", RTLD_NOW);
	err = agent_start(arena_fd, flags);
	/*
	 * The agent owns the fd (lib/inject.h) and needs only the mapping:
	 * the program's fd table must not show our arena. On failure the
	 * host closes it (it may try a copy of the agent with the same fd).
	 */
	if (!err)
		close(arena_fd);
	return err;
}

/**
 * __utrace_agent_add_handler - add an in-process handler to probe @id
 * (C probe modules loaded into the target). Handlers run after the built-in
 * ones, in the order added, in the probed thread, under the guard; they must
 * follow the hot-path rules (agent-internal.h) and not use SIMD.
 * Return: 0; -EINVAL; -ENOSPC when the probe has AGENT_MAX_HANDLERS.
 */
AGENT_API int __utrace_agent_add_handler(uint32_t id, utrace_agent_handler_t fn, void *data,
					 int on_return)
{
	struct utrace_probe *p;
	unsigned int n;

	/* ids past the arena's table: never hit, and patch_reset() would not clear them */
	if (!agent_probes || id >= AGENT_MAX_PROBES || id >= agent_layout.max_probes || !fn)
		return -EINVAL;
	p = &agent_probes[id];
	n = p->nr_handlers;
	if (n >= AGENT_MAX_HANDLERS)
		return -ENOSPC;
	p->handlers[n].fn = fn;
	p->handlers[n].data = data;
	p->handlers[n].on_return = on_return != 0;
	__atomic_store_n(&p->nr_handlers, n + 1, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Is another instance of the agent loaded in this image already? A private
 * copy that lib/inject.c loads for a second session (the first instance is
 * busy) runs this constructor too, in a process that may have been launched
 * with UTRACE_AGENT_FD (kept for execve): that arena is the first
 * instance's, the copy gets its own through __utrace_agent_init(). Copies
 * are dlopen()ed RTLD_LOCAL, so the global scope names the first instance
 * (the preloaded one).
 * Runs in the constructor, under the loader's lock (dlsym/dladdr take it
 * recursively).
 */
static bool another_instance(void)
{
	/*
	 * The main program's handle searches the global scope; RTLD_DEFAULT
	 * would not do: called from a constructor of an object being loaded,
	 * it finds that object's own definition first (glibc 2.36).
	 */
	void *global = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
	void *first = global ? dlsym(global, "__utrace_agent_init") : NULL;
	Dl_info a, b;

	if (!first || !dladdr(first, &a) || !dladdr((void *)another_instance, &b))
		return false;
	return a.dli_fbase != b.dli_fbase;
}

/*
 * Launch mode hygiene: what the host put in the environment for us
 * (UTRACE_AGENT_FD=N, and our path first in LD_PRELOAD) is taken out of
 * the process's environment before anything of the program can see it:
 * neither main(), nor getenv(), nor ENVIRON-copying interpreters, nor
 * children see them (gawk counted +9 malloc for them). Kept here for the
 * traced process's own execve() (agent_exec_env()), so that its new image
 * is traced again; a child (fork + exec, system(), posix_spawn) runs
 * untraced, as the ptrace backend without -F does. The arena fd becomes
 * close-on-exec for the same reason and is made inheritable only for that
 * execve(). The kernel's copy (/proc/PID/environ) keeps the original.
 */
static int launch_fd = -1; /* the arena fd, kept for an exec of launch_pid */
static pid_t launch_pid;
static char launch_preload[4096]; /* our own path, as LD_PRELOAD's first entry named it */

/* Is @path this very object (same file), whatever spelling? */
static bool is_self(const char *path)
{
	struct stat a, b;
	Dl_info info;

	if (!dladdr((void *)is_self, &info) || !info.dli_fname || stat(info.dli_fname, &a) ||
	    stat(path, &b))
		return false;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * Take "UTRACE_AGENT_FD=N" out of @envp (in place: the array libc makes
 * __environ, the strings on the initial stack) and our path out of
 * LD_PRELOAD, keeping the user's own preloads. Return: the fd's value
 * string (in the environment strings, unchanged), or NULL. Constructor.
 */
static const char *strip_env(char **envp)
{
	const char *fd = NULL;
	size_t i, j;

	if (!envp)
		return NULL;
	for (i = j = 0; envp[i]; i++) {
		char *e = envp[i];

		if (!strncmp(e, "UTRACE_AGENT_FD=", 16)) {
			fd = e + 16;
			continue;
		}
		if (!strncmp(e, "LD_PRELOAD=", 11)) {
			char *first = e + 11, *colon = strchr(first, ':');
			size_t n = colon ? (size_t)(colon - first) : strlen(first);

			if (n && n < sizeof(launch_preload)) {
				char path[sizeof(launch_preload)];

				memcpy(path, first, n);
				path[n] = '\0';
				if (is_self(path)) {
					memcpy(launch_preload, path, n + 1);
					if (!colon)
						continue; /* nothing of the user's: drop it */
					memmove(first, colon + 1, strlen(colon + 1) + 1);
				}
			}
		}
		envp[j++] = e;
	}
	while (j < i)
		envp[j++] = NULL; /* the auxv after the old NULL stays where it was */
	return fd;
}

static char *const *exec_env(char *const *envp, char **out, size_t max, char *buf, size_t len);

/**
 * agent_exec_env - the environment an execve() of the traced process
 * needs for its new image to be traced again: @envp plus our LD_PRELOAD
 * entry and UTRACE_AGENT_FD, written into @out (@max pointers) and @buf
 * (@len bytes); the arena fd is made inheritable. Not for a fork child,
 * nor once the host has gone (dormant): then @envp as it is.
 * After a failed execve, agent_exec_failed() puts close-on-exec back.
 * Runs in the thread that calls execve() (interpose.c).
 * Return: the environment to pass.
 */
char *const *agent_exec_env(char *const *envp, char **out, size_t max, char *buf, size_t len)
{
	char *const *r;
	int g;

	/* raw getpid: the program's may be probed (so is the guard's work below) */
	if (launch_fd < 0 || raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0) != launch_pid ||
	    !agent_active || !launch_preload[0])
		return envp;
	/* the libc calls below are the agent's: not the program's to count */
	g = guard_hold();
	r = exec_env(envp, out, max, buf, len);
	guard_unhold(g);
	return r;
}

static char *const *exec_env(char *const *envp, char **out, size_t max, char *buf, size_t len)
{
	size_t i, k = 0, n;
	const char *user = NULL;
	int w;

	for (n = 0; envp && envp[n]; n++)
		;
	if (n + 3 > max)
		return envp;
	for (i = 0; i < n; i++) {
		if (!strncmp(envp[i], "LD_PRELOAD=", 11)) {
			user = envp[i] + 11;
			continue;
		}
		if (!strncmp(envp[i], "UTRACE_AGENT_FD=", 16))
			continue;
		out[k++] = envp[i];
	}
	w = snprintf(buf, len, "UTRACE_AGENT_FD=%d", launch_fd);
	if (w < 0 || (size_t)w >= len)
		return envp;
	out[k++] = buf;
	buf += w + 1;
	len -= (size_t)w + 1;
	w = user && *user ? snprintf(buf, len, "LD_PRELOAD=%s:%s", launch_preload, user) :
			    snprintf(buf, len, "LD_PRELOAD=%s", launch_preload);
	if (w < 0 || (size_t)w >= len)
		return envp;
	out[k++] = buf;
	out[k] = NULL;
	fcntl(launch_fd, F_SETFD, 0);
	return out;
}

/**
 * agent_exec_failed - the execve() returned: the arena fd is close-on-exec
 * again. Raw system calls: the program's thread, whose errno is the
 * execve()'s, and whose getpid() and fcntl() may be probed.
 */
void agent_exec_failed(void)
{
	if (launch_fd >= 0 && raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0) == launch_pid)
		raw_syscall6(SYS_fcntl, launch_fd, F_SETFD, FD_CLOEXEC, 0, 0, 0);
}

/* Is @fd a utrace arena (so ours to close)? /proc/self/fd names memfds. */
static bool is_arena_fd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	return !strncmp(link, "/memfd:utrace-arena", 19);
}

/*
 * crtbeginS.o gives every shared object a destructor that calls
 * __cxa_finalize(__dso_handle) at exit, through a weak reference: for the
 * agent that is a libc call of its own, made in the program's exiting
 * thread with the probes armed, and a probe on __cxa_finalize counted it
 * (gawk: 7 calls for 6). This hidden definition binds that reference here.
 * Nothing is lost: the agent is never unloaded (-z nodelete) and registers
 * no atexit handler; its atfork handler stays registered to the end (a fork
 * from a later destructor is still handled).
 */
__attribute__((visibility("hidden"), used)) void __cxa_finalize(void *dso)
{
	(void)dso;
}

/*
 * Launch mode. The agent is linked with -z initfirst: this constructor
 * runs before every other object's, libc's own included, so the host has
 * armed the probes before any library constructor runs (libstdc++'s
 * emergency-pool malloc, libselinux's init are seen). libc is relocated
 * and its early init done (malloc, threads work), but its constructor has
 * not set __environ yet: the environment is @envp. glibc honours one
 * initfirst object, the last one loaded: a program with another one runs
 * that one first, then ours in the usual order.
 *
 * Injected (lib/inject.c's remote dlopen), there is no UTRACE_AGENT_FD and
 * this does nothing but look up the real functions: the agent starts only
 * in __utrace_agent_init(). So a dlopen that the host gave up on (it
 * outlasted the remote-call timeout) and that ends later leaves an agent
 * that has no arena and arms nothing.
 */
/*
 * The hello of a launch under a ptrace session (abi.h UTRACE_ARENA_F_HELLO):
 * once the control thread is READY, one int3 at a known address. The tracer
 * sees its SIGTRAP before any handler, arms every probe while this thread
 * waits in that stop (the control thread runs the commands), and suppresses
 * it; then START lets main() run probed. Untraced (the tracer died), the
 * agent's SIGTRAP handler finds the site and returns past it
 * (patch_trap_handler()). Main thread, constructor.
 */
__asm__(".text\n"
	".globl __utrace_agent_hello_site\n"
	".type __utrace_agent_hello_site, @function\n"
	"__utrace_agent_hello_site:\n"
	"\tint3\n"
	"\tret\n"
	".size __utrace_agent_hello_site, .-__utrace_agent_hello_site\n");
void __utrace_agent_hello_fn(void) __asm__("__utrace_agent_hello_site");
/* the same for a dlopen()/dlclose() that returned (agent_image_changed()) */
__asm__(".text\n"
	".globl __utrace_agent_dl_site\n"
	".type __utrace_agent_dl_site, @function\n"
	"__utrace_agent_dl_site:\n"
	"\tint3\n"
	"\tret\n"
	".size __utrace_agent_dl_site, .-__utrace_agent_dl_site\n");
void __utrace_agent_dl_fn(void) __asm__("__utrace_agent_dl_site") /* defined */;

static void hello(void)
{
	struct timespec ts = { 0, 10000000 };
	int i;

	for (i = 0; i < 1000; i++) { /* 10 s, as the wait for START */
		uint32_t st = __atomic_load_n(&agent_hdr->agent_state, __ATOMIC_ACQUIRE);

		if (st == UTRACE_AGENT_READY)
			break;
		if (st != UTRACE_AGENT_NONE ||
		    (__atomic_load_n(&agent_hdr->flags, __ATOMIC_ACQUIRE) &
		     UTRACE_ARENA_F_RELEASED))
			return;
		futex(&agent_hdr->agent_state, FUTEX_WAIT, st, &ts);
	}
	__utrace_agent_hello_fn();
}

__attribute__((constructor)) static void agent_ctor(int argc, char **argv, char **envp)
{
	struct timespec ts = { 10, 0 };
	int rounds;
	const char *s;
	char *end;
	long fd;

	(void)argc;
	(void)argv;
	interpose_init();
	if (another_instance())
		return;
	s = strip_env(envp);
	if (!s || !*s)
		return;
	fd = strtol(s, &end, 10);
	if (*end || fd < 0 || fd > INT32_MAX)
		return;
	/*
	 * A child that inherited the fd (it cannot now: close-on-exec) or an
	 * image whose arena is gone runs untraced. The fd is closed only if
	 * it is an arena: a number the program reused is the program's.
	 */
	if (agent_start((int)fd, 0)) {
		if (is_arena_fd((int)fd))
			close((int)fd);
		return;
	}
	launch_fd = (int)fd;
	launch_pid = getpid();
	fcntl(launch_fd, F_SETFD, FD_CLOEXEC);
	if (agent_hdr->flags & UTRACE_ARENA_F_HELLO)
		hello();
	if (!(agent_hdr->flags & UTRACE_ARENA_F_WAIT_START))
		return;
	/*
	 * 10 s at a time, while the host lives (a host planning many probes
	 * on a loaded machine takes longer: test-selfcount's 13 libc probes
	 * took over 10 s at a load of 12 on 2 cores, and the program ran
	 * unprobed); 60 s at most, for a host that hangs.
	 */
	for (rounds = 0; !__atomic_load_n(&started, __ATOMIC_ACQUIRE) && rounds < 6;) {
		if (futex(&started, FUTEX_WAIT_PRIVATE, 0, &ts) != -ETIMEDOUT)
			continue;
		if (!host_alive())
			break;
		rounds++;
	}
}
