/* SPDX-License-Identifier: MIT */
/*
 * patch.c - arming and disarming probe sites while every thread runs.
 *
 * The agent never stops threads (the host has detached; ptrace stops are
 * the cost this design removes). Every code write must therefore be safe
 * against a thread executing the very bytes being written. The protocol is
 * the kernel's text_poke_bp and optprobe sequence, adapted to user space:
 *
 * 1. Transactions. The host sets each probe's @want and sends one SYNC; the
 *    control thread applies all changes in one pass: disarms first (in
 *    reverse id order), then new int3s, then a batch of jmp upgrades. Each
 *    phase writes all its bytes, then syncs cores once.
 *
 * 2. Writes go through /proc/self/mem (a FOLL_FORCE write, like ptrace's
 *    POKETEXT): no VMA protection ever changes, so no thread can fault on a
 *    page that briefly lost X. If that fails (hardened kernels), the
 *    fallback is mprotect(RWX) -> write -> mprotect(RX); never RW.
 *
 * 3. Core sync: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE),
 *    registered at init, after every phase: every thread of the process
 *    executes a core-serialising instruction before it returns, so no CPU
 *    runs stale prefetched bytes of a site.
 *
 * 4. int3 first. Writing 0xCC over byte 0 is a single-byte store, atomic
 *    with respect to instruction fetch. The probe is live from then on: the
 *    in-process SIGTRAP handler (SA_SIGINFO|SA_ONSTACK|SA_RESTART, chaining
 *    the application's previous handler) runs the handlers with the
 *    registers of the ucontext and resumes the thread in the probe's
 *    trampoline slot, at the relocated copy of the displaced instructions
 *    (slot + 32), which jumps back to site + len. The int3 path and the jmp
 *    path execute the same copy.
 *
 * 5. The jmp upgrade needs proof that no thread is inside (site, site+len).
 *    Once the int3 is in and cores are synced, no thread can *enter* the
 *    displaced bytes any more: every arrival at the site traps and resumes
 *    in the slot, and the host's planner refused sites that other code
 *    branches into. A thread can only be inside if it was there before the
 *    int3 went in (preempted after the first displaced instruction, or
 *    interrupted there by a signal). The control thread then proves, for
 *    every other thread, that it is outside the windows, without ever
 *    interrupting a system call: a signal handler that runs in a thread
 *    blocked in nanosleep, clock_nanosleep, poll, ppoll, select, pselect,
 *    epoll_wait, sigtimedwait, io_getevents or semop makes the call fail
 *    with EINTR whatever SA_RESTART says (signal(7)), and many programs
 *    take EINTR for a shutdown request. So each thread is looked at first
 *    (clear_threads(): /proc/self/task, read with getdents64, no malloc):
 *    /proc/self/task/TID/syscall shows a thread in any sleep (a syscall, a
 *    page fault, a stop) with its user-mode pc, read by the kernel without
 *    interrupting it. Such a thread can never enter a window (its pc is
 *    outside, and every way in is an int3): done, no signal. If its pc is
 *    inside one (or just after a syscall instruction inside one, which a
 *    restart would re-enter), that probe alone stays int3 (-EBUSY) and the
 *    next SYNC tries again. A thread the file calls "running" (on a CPU, or
 *    runnable: preempted, or just woken inside its syscall) is looked at
 *    again every 0.5 ms, and is usually seen blocked soon. Only a thread
 *    seen running at every look for 2 ms (looks more than 1.5 ms apart,
 *    this thread preempted, restart the watch unless the thread's
 *    voluntary_ctxt_switches show it never went to sleep meanwhile: on a
 *    loaded machine gaps are the rule, and a busy thread must still be
 *    signalled some day), that has meanwhile been on a CPU
 *    for 1 ms (schedstat: busy computing, not waiting for a CPU inside a
 *    syscall that a pending signal would still make fail) and that does
 *    not block the signal (else it would stay pending and fail a later
 *    ppoll/pselect/sigsuspend that unblocks it), gets one real-time signal
 *    (rt_tgsigqueueinfo, right after one more look; the signal carries the
 *    broadcast's epoch so that a late answer to an earlier, timed-out
 *    broadcast is not counted). Its handler looks at its own interrupted
 *    RIP: if it is inside a site of the batch, it moves it to the matching
 *    instruction of the relocated copy (the host sent the instruction map:
 *    src_off/dst_off), then acknowledges. When every
 *    thread is cleared and every one signalled has answered, no thread is
 *    inside any site of the batch, and none can enter: bytes 1..4 (the
 *    rel32) are written, cores synced, then byte 0 becomes 0xE9, cores
 *    synced.
 *    Residual: a busy thread that enters a blocking call in the few
 *    microseconds between the last look and the signal's arrival still
 *    sees EINTR. It needs a thread that computed for 1 ms without a
 *    blocking call and then blocks at that very moment; a thread that
 *    blocks often is seen blocked first. The file does not tell user
 *    from kernel mode: a thread busy for 1 ms inside one syscall (a long
 *    copy) counts as busy, and the signal may cut that syscall short. Threads that only sleep, or only
 *    wake up briefly, are never signalled (tests/e2e/test-trace-agent.c,
 *    s-waits).
 *    A thread that cannot be cleared in time (busy while it blocks the
 *    signal, runnable without a CPU for 500 ms, more than 4096 threads)
 *    or does not answer leaves the whole batch in int3 mode: correct, only
 *    slower; the next SYNC tries again. Threads created meanwhile start in
 *    clone's return path, not inside a probed prologue.
 *    Residual case (as uftrace's PR notes): a thread that was interrupted
 *    inside displaced bytes by a signal whose handler is still running has
 *    its site RIP in a signal frame, not in its live RIP; the planner's
 *    "no call among displaced bytes" rule keeps return addresses out, but
 *    such a frame would resume in a rewritten instruction. It needs a
 *    handler running across the whole upgrade; it is not detected.
 *
 * 6. Disarm is the reverse: jmp sites get 0xCC at byte 0 (sync), their
 *    original tail (sync), then every site its original byte 0 (sync).
 *    The code bytes are then exactly the host's @orig. A thread that hit
 *    the int3 just before the restore takes its SIGTRAP later: the site
 *    table is never cleared, so the handler still knows the site and
 *    resumes the thread in the (never freed) slot without running handlers.
 *    Disarming needs no proof and sends no signal: arming, disarming,
 *    detaching and going dormant interrupt no thread (membarrier's
 *    SYNC_CORE only IPIs the CPUs that run one, which no syscall sees).
 *
 * 7. Before arming, the live bytes must equal the host's @orig (a changed
 *    binary, another tool's breakpoint): else the probe fails (-EILSEQ).
 *    Sites inside the agent itself are refused (-EPERM).
 *
 * SIGTRAP hygiene: SIGTRAP cannot be blocked usefully (the kernel forces
 * it and resets the handler to SIG_DFL); an application that installs its
 * own SIGTRAP handler after us would take our traps, so each transaction
 * checks the disposition and re-installs ours (chaining the new one).
 *
 * Runs in the control thread (patch_sync, patch_disarm_all), in the child
 * after fork (patch_atfork_child) and in any thread (the signal handlers).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent-internal.h"

#define SITE_HASH (AGENT_MAX_PROBES * 2)
#define UPGRADE_TIMEOUT_NS 500000000ull /* a thread that answers slower stays int3 */

/* Site address -> probe id + 1. Insert-only (late traps must find the site). */
static struct {
	uint64_t addr;
	uint32_t id1;
} site_hash[SITE_HASH];

static int mem_fd = -1;
static bool have_membarrier;
static struct sigaction old_trap;
static int upgrade_sig;
static struct sigaction old_upgrade;
static uint64_t self_lo, self_hi; /* the agent's own mapped range (find_self()) */

/* The batch being upgraded, read by the upgrade signal handler. */
static uint32_t upg_ids[AGENT_MAX_PROBES];
static volatile uint32_t upg_nr;
static uint32_t upg_acks; /* futex word */
static volatile int upg_epoch; /* the broadcast being answered (si_value) */
static int taken_pipe[2] = { -1, -1 }; /* patch_check_taken()'s (taken_pipe_open()) */
/* patch_quiesce()'s broadcast: answers of threads that were inside the agent */
static volatile int upg_quiesce;
static uint32_t upg_busy;

static bool slot_written[AGENT_MAX_PROBES];

static inline uint32_t hash_addr(uint64_t a)
{
	return (uint32_t)((a * 0x9E3779B97F4A7C15ull) >> 40) % SITE_HASH;
}

static void site_insert(uint64_t addr, uint32_t id)
{
	uint32_t h = hash_addr(addr), i;

	for (i = 0; i < SITE_HASH; i++, h = (h + 1) % SITE_HASH) {
		if (site_hash[h].addr == addr) {
			__atomic_store_n(&site_hash[h].id1, id + 1, __ATOMIC_RELEASE);
			return;
		}
		if (!site_hash[h].addr) {
			site_hash[h].id1 = id + 1;
			__atomic_store_n(&site_hash[h].addr, addr, __ATOMIC_RELEASE);
			return;
		}
	}
}

static struct utrace_probe *site_lookup(uint64_t addr)
{
	uint32_t h = hash_addr(addr), i;

	for (i = 0; i < SITE_HASH; i++, h = (h + 1) % SITE_HASH) {
		uint64_t a = __atomic_load_n(&site_hash[h].addr, __ATOMIC_ACQUIRE);

		if (a == addr) {
			uint32_t id1 = __atomic_load_n(&site_hash[h].id1, __ATOMIC_ACQUIRE);

			return id1 && id1 - 1 < agent_nr_probes ? &agent_probes[id1 - 1] : NULL;
		}
		if (!a)
			return NULL;
	}
	return NULL;
}

/*
 * site_known - was @addr ever a site of this agent (any session)? The
 * table keeps every address (site_insert() never removes one), while
 * site_lookup() answers only for the ids of the current session.
 */
static bool site_known(uint64_t addr)
{
	uint32_t h = hash_addr(addr), i;

	for (i = 0; i < SITE_HASH; i++, h = (h + 1) % SITE_HASH) {
		uint64_t a = __atomic_load_n(&site_hash[h].addr, __ATOMIC_ACQUIRE);

		if (a == addr)
			return true;
		if (!a)
			return false;
	}
	return false;
}

/*
 * A system call without libc: the transaction's own pwrite() and
 * membarrier() would otherwise trap in every libc wrapper it has just
 * probed (int3 until the upgrade), thousands of times for a glob of libc.
 */
static long raw_syscall4(long nr, long a, long b, long c, long d)
{
	return raw_syscall6(nr, a, b, c, d, 0, 0);
}

static void sync_cores(void)
{
	if (have_membarrier)
		raw_syscall4(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0, 0);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Write code bytes; /proc/self/mem first, mprotect(RWX) as the fallback. */
static int write_code(uint64_t addr, const void *buf, size_t len)
{
	uint64_t pg = addr & ~(uint64_t)(UTRACE_ABI_PAGE - 1);
	uint64_t end = utrace_abi_align(addr + len, UTRACE_ABI_PAGE);

	if (mem_fd >= 0 &&
	    raw_syscall4(SYS_pwrite64, mem_fd, (long)buf, (long)len, (long)addr) == (long)len)
		return 0;
	if (mprotect((void *)pg, end - pg, PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
		return -errno;
	utrace_memcpy((void *)addr, buf, len);
	/* Text pages are r-x; data pages holding code are not probed (host rule). */
	mprotect((void *)pg, end - pg, PROT_READ | PROT_EXEC);
	return 0;
}

static void set_state(struct utrace_probe *p, uint32_t st, int err)
{
	p->state = st;
	__atomic_store_n(&p->abi->err, err, __ATOMIC_RELAXED);
	__atomic_store_n(&p->abi->state, st, __ATOMIC_RELEASE);
}

static void fail(struct utrace_probe *p, int err)
{
	set_state(p, UTRACE_PS_FAILED, err);
}

/* ---- signal handlers ---------------------------------------------------- */

static void regs_from_uc(utrace_regs_t *r, const greg_t *g)
{
	r->r15 = g[REG_R15], r->r14 = g[REG_R14], r->r13 = g[REG_R13], r->r12 = g[REG_R12];
	r->rbp = g[REG_RBP], r->rbx = g[REG_RBX], r->r11 = g[REG_R11], r->r10 = g[REG_R10];
	r->r9 = g[REG_R9], r->r8 = g[REG_R8], r->rax = g[REG_RAX], r->rcx = g[REG_RCX];
	r->rdx = g[REG_RDX], r->rsi = g[REG_RSI], r->rdi = g[REG_RDI], r->rip = g[REG_RIP];
	r->eflags = g[REG_EFL], r->rsp = g[REG_RSP];
	r->orig_rax = (uint64_t)-1;
}

static void regs_to_uc(const utrace_regs_t *r, greg_t *g)
{
	g[REG_R15] = r->r15, g[REG_R14] = r->r14, g[REG_R13] = r->r13, g[REG_R12] = r->r12;
	g[REG_RBP] = r->rbp, g[REG_RBX] = r->rbx, g[REG_R11] = r->r11, g[REG_R10] = r->r10;
	g[REG_R9] = r->r9, g[REG_R8] = r->r8, g[REG_RAX] = r->rax, g[REG_RCX] = r->rcx;
	g[REG_RDX] = r->rdx, g[REG_RSI] = r->rsi, g[REG_RDI] = r->rdi;
	g[REG_EFL] = r->eflags, g[REG_RSP] = r->rsp;
}

static void chain(const struct sigaction *old, int sig, siginfo_t *info, void *uc)
{
	if (old->sa_flags & SA_SIGINFO) {
		if (old->sa_sigaction)
			old->sa_sigaction(sig, info, uc);
	} else if (old->sa_handler == SIG_DFL) {
		/* Die as the application would have: default action, re-raised. */
		struct sigaction dfl;

		utrace_memset(&dfl, 0, sizeof(dfl)); /* libc's may be probed: a signal handler */
		dfl.sa_handler = SIG_DFL;
		agent_sigaction(sig, &dfl, NULL);
		raw_syscall4(SYS_tgkill, raw_syscall4(SYS_getpid, 0, 0, 0, 0), guard_gettid(), sig,
			     0);
	} else if (old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
	}
}

/**
 * patch_trap_handler - the SIGTRAP handler: an int3-mode hit (or a late
 * one), else the application's trap
 *
 * Any thread, signal context. Return: 1 if the trap was ours.
 */
int patch_trap_handler(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;
	uint64_t site = (uint64_t)g[REG_RIP] - 1;
	struct utrace_probe *p;
	utrace_regs_t regs;
	int r;

	if (site == (uint64_t)(uintptr_t)__utrace_agent_hello_site ||
	    site == (uint64_t)(uintptr_t)__utrace_agent_dl_site)
		return 1; /* the session's int3s (abi.h F_HELLO), untraced: rip is past them */
	p = info->si_code == SI_KERNEL || info->si_code == TRAP_BRKPT ? site_lookup(site) : NULL;
	if (p && p->addr != site && *(volatile uint8_t *)site != 0xcc) {
		/*
		 * A late trap at a site of an earlier session, whose id now
		 * names another site: its bytes are restored, run them again.
		 */
		g[REG_RIP] = (greg_t)site;
		return 1;
	}
	if ((!p || !p->slot || p->addr != site) &&
	    (info->si_code == SI_KERNEL || info->si_code == TRAP_BRKPT) &&
	    *(volatile uint8_t *)site != 0xcc && site_known(site)) {
		/*
		 * A late trap of an earlier session's site whose id means
		 * nothing now (the next session reset the probes): its int3
		 * ran, then the thread waited, in a ptrace stop of that
		 * session (signal-delivery-stop) or starved of CPU, while that
		 * session ended and the next one began. Its bytes are
		 * restored: run them again. Chained, it killed the program
		 * (test-backends attach_detach_cycles, 1 run in 3 under load).
		 */
		if (agent_hdr && agent_active)
			__atomic_fetch_add(&agent_hdr->late_traps, 1, __ATOMIC_RELAXED);
		g[REG_RIP] = (greg_t)site;
		return 1;
	}
	if (!p || !p->slot || p->addr != site) {
		if (agent_hdr && agent_active)
			__atomic_fetch_add(&agent_hdr->foreign_traps, 1, __ATOMIC_RELAXED);
		chain(&old_trap, sig, info, ucv);
		return 0;
	}
	/*
	 * A kept first instruction (abi.h pre_len) ran in place: give back
	 * the rsp it moved, the slot's copy runs it again.
	 */
	if (p->state != UTRACE_PS_INT3 && p->state != UTRACE_PS_JMP) {
		if (agent_hdr && agent_active)
			__atomic_fetch_add(&agent_hdr->late_traps, 1, __ATOMIC_RELAXED);
		g[REG_RSP] += p->undo;
		g[REG_RIP] = (greg_t)p->xol;
		return 1;
	}
	regs_from_uc(&regs, g);
	regs.rsp += p->undo;
	regs.rip = p->entry;
	r = dispatch_hit(p, &regs);
	regs_to_uc(&regs, g);
	g[REG_RIP] = (greg_t)(r ? regs.rip : p->xol);
	return 1;
}

/*
 * errno without a call into libc: with every libc function probed,
 * __errno_location() is an int3 site itself, and a trap in the handler's
 * first line would trap again, forever (and a call in a thread's first
 * trap would be counted as the program's). libc's errno is initial-exec
 * TLS: at the same offset from every thread's pointer, taken once at
 * patch_init(), before any probe.
 */
static intptr_t trap_errno_off;

static inline char *thread_pointer(void)
{
	char *tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

static void trap_action(int sig, siginfo_t *info, void *uc)
{
	int *e = (int *)(thread_pointer() + trap_errno_off), saved = *e;

	patch_trap_handler(sig, info, uc);
	*e = saved;
}

/*
 * The upgrade broadcast: move this thread out of the displaced bytes, ack.
 * Runs in any thread of the program, outside the guard, while probes are
 * armed: no libc call (raw syscalls, errno by its TLS offset), so none of
 * the handler's own calls is counted as the program's (getpid, syscall and
 * __errno_location were, once per signalled thread and upgrade).
 */
static void upgrade_action(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;
	uint64_t rip = (uint64_t)g[REG_RIP];
	uint32_t i, k, n = upg_nr;
	int *e = (int *)(thread_pointer() + trap_errno_off), saved = *e;

	(void)sig;
	if (info->si_code != SI_QUEUE ||
	    info->si_pid != (pid_t)raw_syscall4(SYS_getpid, 0, 0, 0, 0)) {
		chain(&old_upgrade, sig, info, ucv);
		*e = saved;
		return;
	}
	if (info->si_value.sival_int != upg_epoch) {
		/* A late answer to an earlier broadcast that timed out: ignore. */
		*e = saved;
		return;
	}
	if (upg_quiesce) {
		/*
		 * patch_quiesce(): was this thread inside the agent (its code,
		 * or a handler under the guard, or making its task)? Without
		 * the agent's range (self_hi 0) nothing is proved.
		 */
		if (!self_hi || (rip >= self_lo && rip < self_hi) || guard_busy())
			__atomic_fetch_add(&upg_busy, 1, __ATOMIC_RELAXED);
		n = 0;
	}
	for (i = 0; i < n; i++) {
		struct utrace_probe *p = &agent_probes[upg_ids[i]];
		bool moved = false;

		if (rip <= p->addr || rip >= p->addr + p->len)
			continue;
		for (k = 0; k < p->abi->nr_insns && k < UTRACE_ABI_MAX_INSNS; k++) {
			if (p->addr + p->abi->src_off[k] == rip) {
				g[REG_RIP] = (greg_t)(p->xol + p->abi->dst_off[k]);
				moved = true;
			}
		}
		if (!moved) {
			/* Not on a known boundary: no ack, the batch stays int3. */
			*e = saved;
			return;
		}
	}
	__atomic_fetch_add(&upg_acks, 1, __ATOMIC_RELEASE);
	raw_syscall4(SYS_futex, (long)&upg_acks, FUTEX_WAKE_PRIVATE, 1, 0);
	*e = saved;
}

static bool trap_installed;

/*
 * Is @fn the SIGTRAP handler of another instance of the agent (a private
 * copy loaded for a second session, lib/inject.c "COPIES")? Such a handler
 * chains what is not its own to the handler it replaced, ours: taking the
 * signal back would make the two chain to each other forever. Control
 * thread (dlopen with RTLD_NOLOAD finds the loaded object by its name).
 */
static bool handler_is_agent(void *fn)
{
	Dl_info a;
	void *h;
	bool yes = false;

	if (!fn || !dladdr(fn, &a) || !a.dli_fname)
		return false;
	h = dlopen(a.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (h) {
		yes = dlsym(h, "__utrace_agent_init") != NULL;
		dlclose(h);
	}
	return yes;
}

static int install_trap(void)
{
	struct sigaction sa, cur;

	if (agent_sigaction(SIGTRAP, NULL, &cur) < 0)
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == trap_action)
		return 0;
	if (trap_installed && (cur.sa_flags & SA_SIGINFO) &&
	    handler_is_agent((void *)cur.sa_sigaction))
		return 0; /* a newer instance's: it chains to us */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = trap_action;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (agent_sigaction(SIGTRAP, &sa, &old_trap) < 0)
		return -errno;
	__atomic_store_n(&trap_installed, true, __ATOMIC_RELEASE);
	return 0;
}

/**
 * patch_agent_signals - remove from @set the signals agents handle (our
 * upgrade signal and those of the other instances, SIGTRAP)
 *
 * Control thread, before it blocks the rest: an instance loaded later for
 * another session broadcasts its own upgrade signal to every thread, and a
 * control thread that blocked it would make each of its upgrades wait for
 * the timeout and stay int3. The application does not use these signals:
 * each was SIG_DFL when an agent took it.
 */
void patch_agent_signals(sigset_t *set)
{
	struct sigaction cur;
	int s;

	sigdelset(set, SIGTRAP);
	for (s = SIGRTMIN; s <= SIGRTMAX; s++) {
		if (agent_sigaction(s, NULL, &cur) < 0 || !(cur.sa_flags & SA_SIGINFO))
			continue;
		if (cur.sa_sigaction == upgrade_action ||
		    handler_is_agent((void *)cur.sa_sigaction))
			sigdelset(set, s);
	}
}

/** patch_trap_owned - true once our SIGTRAP handler is installed. */
bool patch_trap_owned(void)
{
	return __atomic_load_n(&trap_installed, __ATOMIC_ACQUIRE);
}

/** patch_trap_chained - the application's SIGTRAP action we chain to. */
struct sigaction patch_trap_chained(void)
{
	return old_trap;
}

/**
 * patch_trap_set_chained - the application installs a SIGTRAP action (the
 * interposed sigaction): it becomes the chained one, ours stays installed.
 * Not atomic against a concurrent trap of an application int3 (the chained
 * action may be the old or the new one for that trap).
 */
void patch_trap_set_chained(const struct sigaction *act)
{
	old_trap = *act;
}

/*
 * True if some thread blocks SIGTRAP (SigBlk bit 5 in its status): an int3
 * hit would kill the process. Control thread; getdents64 and read, no malloc.
 */
static bool __trap_blocked_somewhere(void)
{
	char buf[4096], path[64], st[2048];
	int fd, n;
	bool blocked = false;

	fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (!blocked && (n = (int)syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		int off = 0;

		while (off < n && !blocked) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			int sfd, len, i;
			char *p;

			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			i = 0;
			for (const char *s = "/proc/self/task/"; *s; s++)
				path[i++] = *s;
			for (const char *s = d->d_name; *s && i < 50; s++)
				path[i++] = *s;
			for (const char *s = "/status"; *s; s++)
				path[i++] = *s;
			path[i] = 0;
			sfd = open(path, O_RDONLY | O_CLOEXEC);
			if (sfd < 0)
				continue;
			len = (int)read(sfd, st, sizeof(st) - 1);
			close(sfd);
			if (len <= 0)
				continue;
			st[len] = 0;
			for (p = st; *p; p++) {
				if (p[0] == 'S' && !utrace_memcmp(p, "SigBlk:\t", 8)) {
					/*
					 * 16 hex digits, signal N is bit N - 1: SIGTRAP (5)
					 * is bit 0 of the second digit from the right.
					 */
					char c = p[8 + 14];
					int v = c >= 'a' ? c - 'a' + 10 : c - '0';

					blocked = (v & 1) != 0;
					break;
				}
			}
		}
	}
	close(fd);
	return blocked;
}

/*
 * Transient blocks are normal: pthread_create blocks every signal in the
 * creating thread around clone(), and a new thread runs with all signals
 * blocked until it restores its mask. Neither runs application code
 * meanwhile, so look again for up to ~200 ms before calling it permanent.
 */
static bool trap_blocked_somewhere(void)
{
	int i;

	for (i = 0; i < 200; i++) {
		struct timespec ts = { 0, 1000000 };

		if (!__trap_blocked_somewhere())
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}

/**
 * patch_init - open /proc/self/mem, register membarrier, install the
 * SIGTRAP handler and pick a free real-time signal for upgrades
 *
 * Control thread (or the constructor). Return: 0 or a negative errno.
 */
static int find_self(struct dl_phdr_info *info, size_t size, void *data);

/*
 * patch_check_taken()'s pipe: writev() from the sites into it copies each
 * byte with the kernel's fault handling (an unmapped site is a short
 * count, EFAULT, never a signal), far cheaper a site than
 * process_vm_readv(), which pins every page. Open while a session is.
 */
static void taken_pipe_close(void)
{
	if (taken_pipe[0] >= 0)
		close(taken_pipe[0]);
	if (taken_pipe[1] >= 0)
		close(taken_pipe[1]);
	taken_pipe[0] = taken_pipe[1] = -1;
}

static void taken_pipe_open(void)
{
	int fds[2];

	taken_pipe_close();
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
		return; /* no look at the sites then */
	taken_pipe[0] = agent_fd_high(fds[0]);
	taken_pipe[1] = agent_fd_high(fds[1]);
	if (taken_pipe[0] < 0 || taken_pipe[1] < 0)
		taken_pipe_close();
}

int patch_init(void)
{
	struct sigaction sa, cur;
	int s;

	trap_errno_off = (intptr_t)((char *)&errno - thread_pointer());
	dl_iterate_phdr(find_self, NULL);
	mem_fd = agent_fd_high(open("/proc/self/mem", O_RDWR | O_CLOEXEC));
	taken_pipe_open();
	have_membarrier = syscall(SYS_membarrier,
				  MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0;
	for (s = SIGRTMAX - 2; s > SIGRTMIN + 2; s--) {
		if (agent_sigaction(s, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
		    cur.sa_handler == SIG_DFL)
			break;
	}
	if (s > SIGRTMIN + 2) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = upgrade_action;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (agent_sigaction(s, &sa, &old_upgrade) == 0)
			upgrade_sig = s;
	}
	return install_trap();
}

/**
 * patch_reset - forget the probes of a finished session (every one is
 * disarmed: the agent is dormant), for the next arena's ids
 *
 * Control thread of the new session, before it starts. The site table is
 * kept: a trap that was already raised at an old site when it was
 * disarmed must still be recognised (patch_trap_handler()).
 */
void patch_reset(void)
{
	uint32_t i;

	if (mem_fd < 0) /* closed when the last session ended (patch_release()) */
		mem_fd = agent_fd_high(open("/proc/self/mem", O_RDWR | O_CLOEXEC));
	if (taken_pipe[0] < 0)
		taken_pipe_open();
	__atomic_store_n(&agent_nr_probes, 0, __ATOMIC_RELEASE);
	/*
	 * Only the ids the last session could use (agent_layout is still
	 * its own): the rest of the table was never written, and clearing
	 * it would make all 750 KiB of it resident.
	 */
	for (i = 0; i < agent_layout.max_probes && i < AGENT_MAX_PROBES; i++) {
		utrace_memset(&agent_probes[i], 0, sizeof(agent_probes[i]));
		slot_written[i] = false;
	}
}

/**
 * patch_release - close /proc/self/mem when the agent goes dormant: a
 * dormant agent writes no code, and the program must not see our fd
 * (patch_reset() opens it again for the next session)
 *
 * Control thread, after patch_disarm_all().
 */
void patch_release(void)
{
	if (mem_fd >= 0)
		close(mem_fd);
	mem_fd = -1;
	taken_pipe_close();
}

/* ---- the transaction ---------------------------------------------------- */

/*
 * Sites inside the agent are refused. Its range is found once, at init:
 * the control thread must not take the loader's lock during a SYNC (dladdr
 * does), because a thread that waits for the host in our dlopen()
 * interposer may hold it (a dlopen() nested in a library's constructor).
 */
static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	uint64_t self = (uint64_t)(uintptr_t)patch_init, lo = UINT64_MAX, hi = 0;
	int i;

	(void)size;
	(void)data;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		lo = a < lo ? a : lo;
		hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
	}
	if (self < lo || self >= hi)
		return 0;
	self_lo = lo;
	self_hi = hi;
	return 1;
}

static bool in_agent(uint64_t addr)
{
	Dl_info a, b;

	if (self_hi)
		return addr >= self_lo && addr < self_hi;
	return dladdr((void *)addr, &a) && dladdr((void *)patch_init, &b) &&
	       a.dli_fbase == b.dli_fbase;
}

/* Load the host-written config of @id into the private probe (first use). */
static int probe_load(uint32_t id)
{
	struct utrace_probe *p = &agent_probes[id];
	struct utrace_abi_probe *a = agent_abi_probe(id);

	if (p->abi)
		return 0;
	p->abi = a;
	p->id = id;
	p->addr = a->addr;
	p->entry = a->addr - a->pre_len;
	p->undo = a->undo;
	p->slot = a->slot;
	p->xol = a->slot + UTRACE_TRAMP_XOL_OFF;
	p->flags = a->flags;
	p->len = a->len;
	p->mode = a->mode;
	p->inject_value = a->inject_value;
	p->inject_every = a->inject_every ? a->inject_every : 1;
	utrace_memcpy(p->orig, a->orig, sizeof(p->orig));
	/*
	 * The jmp covers the end of the first instruction at @addr (shorter
	 * than 5 bytes, not kept before us): a kernel uprobe put on @addr
	 * would resume inside the rel32 (patch_check_taken() looks often).
	 */
	p->exposed =
		p->mode == UTRACE_PM_JMP && !a->pre_len && a->nr_insns >= 2 && a->src_off[1] < 5;
	if (!p->addr || !p->len || p->len > sizeof(p->orig) || a->nr_insns > UTRACE_ABI_MAX_INSNS ||
	    (p->mode != UTRACE_PM_INT3 && p->mode != UTRACE_PM_JMP) ||
	    (p->mode == UTRACE_PM_JMP && p->len < 5) || (a->pre_len && p->mode != UTRACE_PM_JMP) ||
	    a->pre_len > 4 || a->undo > 127)
		return -EINVAL;
	if (in_agent(p->addr))
		return -EPERM;
	return 0;
}

/*
 * The signal carries the broadcast's epoch (rt_tgsigqueueinfo, SI_QUEUE):
 * a thread that answers a broadcast after it timed out must not be counted
 * as an answer to the next one.
 */
static int send_upgrade(pid_t pid, pid_t tid)
{
	siginfo_t si;

	utrace_memset(&si, 0, sizeof(si));
	si.si_signo = upgrade_sig;
	si.si_code = SI_QUEUE;
	si.si_pid = pid;
	si.si_uid = getuid();
	si.si_value.sival_int = upg_epoch;
	return (int)syscall(SYS_rt_tgsigqueueinfo, pid, tid, upgrade_sig, &si);
}

/*
 * Who needs the upgrade signal (the essay's step 5). Every other thread
 * is looked at through /proc/self/task/TID/syscall, which the kernel fills
 * without interrupting the thread (lib/syscall.c: task_current_syscall()
 * waits until the task is off its CPU and checks that it did not run
 * meanwhile): a thread in any sleep (a syscall, a page fault, a stop)
 * shows its user-mode sp and pc, a runnable or running one "running".
 */
#define UPG_MAX_THREADS 4096 /* more threads: the batch stays int3 */
#define UPG_POLL_NS 500000ull /* between two looks at the threads still running */
#define UPG_SETTLE_NS 2000000ull /* seen running this long, and ... */
#define UPG_BUSY_NS 1000000ull /* ... on a CPU this long meanwhile: signalled */
/*
 * ... and looked at at least this often all that time. On a loaded machine
 * this thread is itself preempted between two looks (60 ms seen): two looks
 * that far apart say nothing of what the thread did in between (it may have
 * blocked and woken again), and a thread first seen running as it woke
 * from a poll() was signalled in its next poll() (test-trace-agent, 3 busy
 * loops on 2 cores: EINTR after 60.9 ms). A gap restarts the watch, unless
 * the thread's voluntary context switches did not move: then it never
 * slept, whatever the looks missed (still_awake()). Without that, busy
 * threads on a loaded CI were never signalled and the upgrade timed out
 * (tests/agent/test-agent detach_restores_code_bytes: 4 spinning threads).
 */
#define UPG_GAP_NS 1500000ull

enum { UPG_T_PENDING, UPG_T_CLEAR, UPG_T_SIGNALLED };

static struct {
	pid_t tid;
	uint8_t st;
	uint64_t t_run, cpu0; /* when first seen running, and its CPU time then */
	uint64_t t_last; /* the last look at it (UPG_GAP_NS) */
	uint64_t nvcsw0; /* its voluntary switches at t_run */
} upg_thr[UPG_MAX_THREADS];
static bool upg_drop[AGENT_MAX_PROBES]; /* batch index: a blocked thread is inside */

enum { UPG_W_GONE, UPG_W_RUNNING, UPG_W_BLOCKED, UPG_W_UNKNOWN };

/* "/proc/self/task/TID/NAME" into @path (64 bytes). */
static void task_path(char *path, pid_t tid, const char *name)
{
	char num[16];
	int i = 0, n = 0;

	for (const char *c = "/proc/self/task/"; *c; c++)
		path[i++] = *c;
	do
		num[n++] = (char)('0' + tid % 10);
	while ((tid /= 10) && n < 12);
	while (n)
		path[i++] = num[--n];
	path[i++] = '/';
	for (const char *c = name; *c && i < 63; c++)
		path[i++] = *c;
	path[i] = 0;
}

/* A small /proc file, NUL-terminated. Return: its length or -errno. */
static int read_small(const char *path, char *buf, int size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n;

	if (fd < 0)
		return -errno;
	n = (int)read(fd, buf, (size_t)size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

static uint64_t parse_num(const char *c, int base)
{
	uint64_t v = 0;

	if (base == 16 && c[0] == '0' && c[1] == 'x')
		c += 2;
	for (;; c++) {
		int d = -1;

		if (*c >= '0' && *c <= '9')
			d = *c - '0';
		else if (base == 16 && *c >= 'a' && *c <= 'f')
			d = *c - 'a' + 10;
		if (d < 0)
			return v;
		v = v * (uint64_t)base + (uint64_t)d;
	}
}

/*
 * Where thread @tid is: UPG_W_BLOCKED with its user-mode @pc (the last
 * field: "NR [args] sp pc", NR -1 outside a syscall, 0x0 for a task that
 * has no stack any more), UPG_W_RUNNING, UPG_W_GONE (exited) or
 * UPG_W_UNKNOWN (the file cannot be read: never signal, never trust).
 */
static int task_where(pid_t tid, uint64_t *pc)
{
	char path[64], buf[256];
	int n, i;

	task_path(path, tid, "syscall");
	n = read_small(path, buf, sizeof(buf));
	if (n == -ENOENT || n == -ESRCH)
		return UPG_W_GONE;
	if (n <= 0)
		return UPG_W_UNKNOWN;
	if (buf[0] == 'r')
		return UPG_W_RUNNING;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	for (i = n; i > 0 && buf[i - 1] != ' '; i--)
		;
	if (i == 0 || buf[i] != '0')
		return UPG_W_UNKNOWN;
	*pc = parse_num(buf + i, 16);
	return UPG_W_BLOCKED;
}

/* Time @tid has spent on a CPU (schedstat, ns); 0 if unknown. */
static uint64_t task_cpu_ns(pid_t tid)
{
	char path[64], buf[128];

	task_path(path, tid, "schedstat");
	return read_small(path, buf, sizeof(buf)) > 0 ? parse_num(buf, 10) : 0;
}

/*
 * Thread @tid's status: does it block @sig (SigBlk; unknown counts as yes),
 * and how often has it gone to sleep (voluntary_ctxt_switches, counted by
 * __schedule() each time the thread blocks; ~0 if unknown)? Either out
 * pointer may be NULL.
 */
static void task_status(pid_t tid, int sig, bool *blocks, uint64_t *nvcsw)
{
	static const char vcs[] = "voluntary_ctxt_switches:\t";
	char path[64], st[2048];
	int len;

	if (blocks)
		*blocks = true;
	if (nvcsw)
		*nvcsw = ~0ull;
	task_path(path, tid, "status");
	len = read_small(path, st, sizeof(st));
	for (int i = 0; i + 24 < len; i++) {
		if (blocks && st[i] == 'S' && !utrace_memcmp(st + i, "SigBlk:\t", 8)) {
			/* 16 hex digits, signal N is bit N - 1. */
			char c = st[i + 8 + 15 - (sig - 1) / 4];
			int v = c >= 'a' ? c - 'a' + 10 : c - '0';

			*blocks = (v >> ((sig - 1) % 4)) & 1;
		}
		/* "nonvoluntary_ctxt_switches" follows; the line start tells them apart */
		if (nvcsw && st[i] == 'v' && (i == 0 || st[i - 1] == '\n') &&
		    i + (int)sizeof(vcs) - 1 < len && !utrace_memcmp(st + i, vcs, sizeof(vcs) - 1))
			*nvcsw = parse_num(st + i + sizeof(vcs) - 1, 10);
	}
}

static bool task_blocks(pid_t tid, int sig)
{
	bool b;

	task_status(tid, sig, &b, NULL);
	return b;
}

static uint64_t task_nvcsw(pid_t tid)
{
	uint64_t n;

	task_status(tid, 0, NULL, &n);
	return n;
}

/*
 * The batch index whose displaced bytes hold @pc, or -1. A pc right after
 * a syscall instruction counts for that instruction too: a syscall that
 * is restarted (after a stop) resumes at pc - 2.
 */
static int batch_window(uint64_t pc)
{
	uint32_t i, n = upg_nr;

	for (i = 0; i < n; i++) {
		const struct utrace_probe *p = &agent_probes[upg_ids[i]];

		if ((pc > p->addr && pc < p->addr + p->len) ||
		    (pc - 2 > p->addr && pc - 2 < p->addr + p->len))
			return (int)i;
	}
	return -1;
}

/* A thread seen blocked at @pc: it can never enter the batch's windows. */
static void seen_blocked(uint32_t i, uint64_t pc)
{
	int k = batch_window(pc);

	/* It is inside one: only a signal could move it out, so that probe waits. */
	if (k >= 0)
		upg_drop[k] = true;
	/* patch_quiesce(): blocked in the agent's own code is inside the agent */
	if (upg_quiesce && (!self_hi || (pc >= self_lo && pc < self_hi)))
		__atomic_fetch_add(&upg_busy, 1, __ATOMIC_RELAXED);
	upg_thr[i].st = UPG_T_CLEAR;
}

static uint64_t now_mono(void);

/*
 * After a gap between two looks: has thread @i not gone to sleep since its
 * watch began? A thread that blocked (and woke again) in the gap counts
 * one more voluntary switch; one only preempted does not (those are
 * nonvoluntary). Unknown counts as "it slept".
 */
static bool still_awake(uint32_t i)
{
	uint64_t n = task_nvcsw(upg_thr[i].tid);

	return n != ~0ull && n == upg_thr[i].nvcsw0;
}

/*
 * Prove that no other thread is inside a window of the batch, without
 * interrupting a system call. Control thread, after the batch's int3s are
 * in and cores synced: from then on a thread outside the windows stays
 * outside. A thread seen blocked needs nothing (if its pc is inside one,
 * that probe is dropped from the batch). A thread seen running is looked
 * at again every UPG_POLL_NS until it is seen blocked; only one that ran
 * all along, on a CPU (schedstat: a runnable thread just woken in a
 * syscall does not count), and does not block the signal, is signalled,
 * right after one more look. Before @deadline. Return: the number of
 * threads signalled (wait for their acks), or -errno (the batch stays int3).
 */
static int clear_threads(uint64_t deadline)
{
	char buf[4096];
	uint32_t nr = 0, i;
	int fd, n, sent = 0;
	pid_t self = (pid_t)guard_gettid(), pid = getpid();

	fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((n = (int)syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (int off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			const char *c = d->d_name;
			pid_t tid = 0;

			off += d->d_reclen;
			if (*c < '0' || *c > '9')
				continue;
			for (; *c >= '0' && *c <= '9'; c++)
				tid = tid * 10 + (*c - '0');
			if (tid == self)
				continue;
			if (nr == UPG_MAX_THREADS) {
				close(fd);
				return -E2BIG;
			}
			upg_thr[nr].tid = tid;
			upg_thr[nr].st = UPG_T_PENDING;
			upg_thr[nr++].t_run = 0;
		}
	}
	close(fd);
	if (n < 0)
		return -EIO;
	for (;;) {
		uint32_t pending = 0;
		uint64_t now = now_mono();
		struct timespec ts = { 0, UPG_POLL_NS };

		for (i = 0; i < nr; i++) {
			pid_t tid = upg_thr[i].tid;
			uint64_t pc = 0;
			int w;

			if (upg_thr[i].st != UPG_T_PENDING)
				continue;
			w = task_where(tid, &pc);
			if (w == UPG_W_GONE) {
				upg_thr[i].st = UPG_T_CLEAR;
				continue;
			}
			if (w == UPG_W_BLOCKED) {
				seen_blocked(i, pc);
				continue;
			}
			pending++;
			if (w != UPG_W_RUNNING)
				continue;
			now = now_mono();
			if (!upg_thr[i].t_run ||
			    (now - upg_thr[i].t_last > UPG_GAP_NS && !still_awake(i))) {
				upg_thr[i].t_run = upg_thr[i].t_last = now;
				/* switches first: a sleep after this read is seen */
				upg_thr[i].nvcsw0 = task_nvcsw(tid);
				upg_thr[i].cpu0 = task_cpu_ns(tid);
				continue;
			}
			upg_thr[i].t_last = now;
			if (now - upg_thr[i].t_run < UPG_SETTLE_NS ||
			    task_cpu_ns(tid) < upg_thr[i].cpu0 + UPG_BUSY_NS ||
			    task_blocks(tid, upgrade_sig))
				continue;
			/*
			 * Busy in user space, most likely: look once more, then
			 * signal, unless this look itself came late.
			 */
			w = task_where(tid, &pc);
			if (w == UPG_W_RUNNING && now_mono() - now > UPG_GAP_NS &&
			    !still_awake(i)) {
				upg_thr[i].t_run = 0;
				continue;
			}
			if (w == UPG_W_RUNNING && send_upgrade(pid, tid) == 0) {
				upg_thr[i].st = UPG_T_SIGNALLED;
				sent++;
				pending--;
			} else if (w == UPG_W_BLOCKED) {
				seen_blocked(i, pc);
				pending--;
			} else if (w == UPG_W_GONE) {
				upg_thr[i].st = UPG_T_CLEAR;
				pending--;
			}
		}
		if (!pending)
			return sent;
		if (now_mono() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&ts, NULL);
	}
}

static uint64_t now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* True when @n acks arrived before @deadline. */
static bool wait_acks(int n, uint64_t deadline)
{
	for (;;) {
		uint32_t a = __atomic_load_n(&upg_acks, __ATOMIC_ACQUIRE);
		uint64_t now = now_mono();
		struct timespec ts;

		if ((int)a >= n)
			return true;
		if (now >= deadline)
			return false;
		ts.tv_sec = (time_t)((deadline - now) / 1000000000ull);
		ts.tv_nsec = (long)((deadline - now) % 1000000000ull);
		syscall(SYS_futex, &upg_acks, FUTEX_WAIT_PRIVATE, a, &ts, NULL, 0);
	}
}

static void disarm(uint32_t *ids, uint32_t n)
{
	uint8_t cc = 0xcc;
	uint32_t i;
	bool any_jmp = false, inert = false;

	for (i = 0; i < n && !inert; i++)
		inert = agent_probes[ids[i]].state == UTRACE_PS_JMP && trap_blocked_somewhere();
	if (inert) {
		/*
		 * A thread blocks SIGTRAP: the transient int3 of a jmp disarm
		 * could kill the process. Leave the jmps in place, inert (no
		 * handler runs; the trampoline only runs the displaced code),
		 * and say so: state stays JMP for the host, err = -EDEADLK.
		 */
		uint32_t k = 0;

		for (i = 0; i < n; i++) {
			struct utrace_probe *p = &agent_probes[ids[i]];

			if (p->state == UTRACE_PS_JMP) {
				p->state = UTRACE_PS_DISARMED;
				__atomic_store_n(&p->abi->err, -EDEADLK, __ATOMIC_RELAXED);
			} else {
				ids[k++] = ids[i];
			}
		}
		n = k;
	}
	for (i = 0; i < n; i++) {
		struct utrace_probe *p = &agent_probes[ids[i]];

		if (p->state == UTRACE_PS_JMP) {
			write_code(p->addr, &cc, 1);
			any_jmp = true;
		}
	}
	if (any_jmp) {
		sync_cores();
		for (i = 0; i < n; i++) {
			struct utrace_probe *p = &agent_probes[ids[i]];

			if (p->state == UTRACE_PS_JMP)
				write_code(p->addr + 1, p->orig + 1, 4);
		}
		sync_cores();
	}
	for (i = 0; i < n; i++) {
		struct utrace_probe *p = &agent_probes[ids[i]];

		write_code(p->addr, p->orig, 1);
	}
	sync_cores();
	for (i = 0; i < n; i++)
		set_state(&agent_probes[ids[i]], UTRACE_PS_DISARMED, 0);
}

static uint32_t ids_a[AGENT_MAX_PROBES], ids_b[AGENT_MAX_PROBES];

/**
 * patch_sync - apply every probe's @want (one transaction)
 *
 * Control thread. Return: the number of probes whose state changed; probe
 * failures are in their @state/@err, not in the return value.
 */
int patch_sync(void)
{
	uint32_t i, n = agent_layout.max_probes, nd = 0, na = 0, nu = 0, changed = 0;
	uint8_t cc = 0xcc;

	if (n > AGENT_MAX_PROBES)
		n = AGENT_MAX_PROBES;
	install_trap();
	__atomic_fetch_add(&agent_hdr->transactions, 1, __ATOMIC_RELAXED);
	/* Phase 1: disarms, newest id first. */
	for (i = n; i-- > 0;) {
		struct utrace_abi_probe *a = agent_abi_probe(i);
		struct utrace_probe *p = &agent_probes[i];
		uint32_t want = __atomic_load_n(&a->want, __ATOMIC_ACQUIRE);

		if (p->abi && p->slot && want == UTRACE_PS_GONE && agent_active) {
			/*
			 * The object is unmapped (dlclose): no byte to restore,
			 * and the range may belong to another object by now.
			 * No late trap can come from it (the code is gone):
			 * an int3 that a new object has at this address is
			 * not ours (slot 0: the trap handler chains it).
			 */
			if (p->state == UTRACE_PS_INT3 || p->state == UTRACE_PS_JMP) {
				set_state(p, UTRACE_PS_DISARMED, 0);
				changed++;
			}
			__atomic_store_n(&p->slot, 0, __ATOMIC_RELEASE);
			continue;
		}
		if (!p->abi || (p->state != UTRACE_PS_INT3 && p->state != UTRACE_PS_JMP))
			continue;
		if (want == UTRACE_PS_DISARMED || want == UTRACE_PS_UNUSED || !agent_active)
			ids_a[nd++] = i;
	}
	if (nd)
		disarm(ids_a, nd);
	changed += nd;
	if (!agent_active)
		return (int)changed;

	/* Phase 2: new int3s. */
	for (i = 0; i < n; i++) {
		struct utrace_abi_probe *a = agent_abi_probe(i);
		struct utrace_probe *p = &agent_probes[i];
		uint32_t want = __atomic_load_n(&a->want, __ATOMIC_ACQUIRE);
		int err;

		if (want != UTRACE_PS_INT3 && want != UTRACE_PS_JMP)
			continue;
		if (p->abi && p->state != UTRACE_PS_DISARMED && p->state != UTRACE_PS_UNUSED)
			continue;
		if (p->state == UTRACE_PS_FAILED)
			continue;
		if (i >= agent_nr_probes)
			__atomic_store_n(&agent_nr_probes, i + 1, __ATOMIC_RELEASE);
		err = probe_load(i);
		if (!err && !slot_written[i]) {
			err = tramp_write_slot(p);
			slot_written[i] = !err;
		}
		if (!err && utrace_memcmp((void *)p->addr, p->orig, p->len))
			err = -EILSEQ;
		if (err) {
			fail(p, err);
			continue;
		}
		site_insert(p->addr, i);
		ids_a[na++] = i;
	}
	if (na && trap_blocked_somewhere()) {
		/* An int3 hit in that thread would kill the process: refuse. */
		for (i = 0; i < na; i++)
			fail(&agent_probes[ids_a[i]], -EDEADLK);
		na = 0;
	}
	if (na) {
		sync_cores(); /* the slots' bytes, before any thread can reach them */
		for (i = 0; i < na; i++) {
			struct utrace_probe *p = &agent_probes[ids_a[i]];
			int err;

			set_state(p, UTRACE_PS_INT3, 0);
			err = write_code(p->addr, &cc, 1);
			if (err)
				fail(p, err);
		}
		sync_cores();
		changed += na;
	}

	/* Phase 3: the jmp upgrade batch. */
	for (i = 0; i < n; i++) {
		struct utrace_abi_probe *a = agent_abi_probe(i);
		struct utrace_probe *p = &agent_probes[i];
		int64_t rel;

		if (!p->abi || p->state != UTRACE_PS_INT3 || p->mode != UTRACE_PM_JMP ||
		    __atomic_load_n(&a->want, __ATOMIC_ACQUIRE) != UTRACE_PS_JMP)
			continue;
		rel = (int64_t)p->slot - (int64_t)(p->addr + 5);
		if (rel != (int32_t)rel) {
			__atomic_store_n(&a->err, -ERANGE, __ATOMIC_RELAXED);
			continue;
		}
		ids_b[nu++] = i;
	}
	if (!nu)
		return (int)changed;
	if (upgrade_sig) {
		uint64_t deadline = now_mono() + UPGRADE_TIMEOUT_NS;
		uint32_t nw = 0;
		int sent;

		utrace_memcpy(upg_ids, ids_b, nu * sizeof(ids_b[0]));
		utrace_memset(upg_drop, 0, nu * sizeof(upg_drop[0]));
		upg_epoch = upg_epoch + 1;
		__atomic_store_n(&upg_acks, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&upg_nr, nu, __ATOMIC_RELEASE);
		sent = clear_threads(deadline);
		if (sent < 0 || !wait_acks(sent, deadline))
			goto skip;
		upg_nr = 0;
		/* A probe with a blocked thread inside stays int3 (-EBUSY); the next SYNC tries again. */
		for (i = 0; i < nu; i++) {
			if (upg_drop[i])
				__atomic_store_n(&agent_probes[ids_b[i]].abi->err, -EBUSY,
						 __ATOMIC_RELAXED);
			else
				ids_b[nw++] = ids_b[i];
		}
		nu = nw;
		for (i = 0; i < nu; i++) {
			struct utrace_probe *p = &agent_probes[ids_b[i]];
			int32_t rel = (int32_t)((int64_t)p->slot - (int64_t)(p->addr + 5));

			write_code(p->addr + 1, &rel, 4);
		}
		sync_cores();
		for (i = 0; i < nu; i++) {
			struct utrace_probe *p = &agent_probes[ids_b[i]];
			uint8_t e9 = 0xe9;

			write_code(p->addr, &e9, 1);
			set_state(p, UTRACE_PS_JMP, 0);
		}
		sync_cores();
		__atomic_fetch_add(&agent_hdr->upgrades, nu, __ATOMIC_RELAXED);
		return (int)(changed + nu);
	}
skip:
	upg_nr = 0;
	__atomic_fetch_add(&agent_hdr->upgrade_skipped, 1, __ATOMIC_RELAXED);
	for (i = 0; i < nu; i++)
		__atomic_store_n(&agent_probes[ids_b[i]].abi->err, -ETIMEDOUT, __ATOMIC_RELAXED);
	return (int)changed;
}

/**
 * patch_quiesce - prove that no other thread is inside the agent
 *
 * The upgrade's clear_threads() without a batch: a thread seen blocked in
 * a syscall is not signalled (no EINTR at a detach either) and counts as
 * inside only if its pc is in the agent's code; a thread seen busy on a
 * CPU answers from its signal handler whether it was interrupted inside
 * the agent's code or while it held the guard (a handler, a module's
 * handler, the making of its task; guard_busy()). While any is inside,
 * all are asked again (every 2 ms, 50 times at most). Not seen: a thread
 * blocked in a libc call that agent code made under the guard (the first
 * hit's mmap, -k's read of /proc/self/maps, a module handler's syscall). The caller has cleared agent_active: every path into
 * the agent that writes the arena checks it first, in the agent's code or
 * under the guard, so a thread that answered "outside" once writes nothing
 * into the arena any more (agent.c, "THE ARENA OF A DORMANT AGENT", also
 * for the one case this cannot see).
 *
 * Control thread. Return: 0 when proved; -EBUSY (someone stays inside),
 * -ETIMEDOUT (a thread did not answer: it blocks the signal, or is
 * stopped), -ENOSYS (no signal), or a broadcast error.
 */
int patch_quiesce(void)
{
	int round, sent = 0;

	if (!upgrade_sig)
		return -ENOSYS;
	for (round = 0; round < 50; round++) {
		struct timespec ts = { 0, 2000000 };
		uint64_t deadline = now_mono() + 100000000ull; /* 0.1 s a round */

		upg_nr = 0;
		upg_epoch = upg_epoch + 1;
		__atomic_store_n(&upg_busy, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&upg_acks, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&upg_quiesce, 1, __ATOMIC_RELEASE);
		sent = clear_threads(deadline);
		if (sent < 0 || !wait_acks(sent, deadline))
			break;
		if (!__atomic_load_n(&upg_busy, __ATOMIC_ACQUIRE)) {
			upg_quiesce = 0;
			return 0;
		}
		nanosleep(&ts, NULL);
	}
	upg_quiesce = 0;
	return sent < 0 ? sent : round < 50 ? -ETIMEDOUT : -EBUSY;
}

/**
 * patch_disarm_all - disarm every armed probe (host gone, or DETACH)
 *
 * Control thread. The caller has cleared agent_active.
 */
void patch_disarm_all(void)
{
	uint32_t i, nd = 0;

	for (i = agent_nr_probes; i-- > 0;) {
		struct utrace_probe *p = &agent_probes[i];

		if (p->abi && (p->state == UTRACE_PS_INT3 || p->state == UTRACE_PS_JMP))
			ids_a[nd++] = i;
	}
	if (nd)
		disarm(ids_a, nd);
}

/*
 * ---- jmp sites taken by a kernel uprobe ----------------------------------
 *
 * What the kernel does when bpftrace or perf probe puts a uprobe on a site
 * that holds our jmp (kernel/events/uprobes.c): uprobe_register() ->
 * install_breakpoint() -> uprobe_write_opcode(). The instruction it will
 * run is copied from the FILE (the inode's page cache, copy_insn()), not
 * from our patched private page. verify_opcode() then reads the byte at
 * the address in this process: if it is already an int3 nothing is
 * written; else the page gets 0xCC at that byte. A hit traps into the
 * kernel, which runs the bpf program, executes (or emulates) the file's
 * instruction out of line and resumes at addr + its length. Under our
 * jmp that is the middle of the rel32: the thread dies. At unregister,
 * verify_opcode() writes the file's first byte back only if the byte is
 * still an int3.
 *
 * Planner rule 5 keeps the short first instructions it can in place, so
 * an entry probe (where these tools put it) resumes on our jmp. For the
 * other jmp sites the control thread looks at each one's first byte: every
 * CHECK_MS where the first instruction is short, every CHECK_ALL_MS for
 * the rest (agent.c). A byte that is no longer our 0xE9 means someone
 * took the site: on an int3, the bytes 1..len go back to the file's (our
 * @orig, checked equal to the file by the host), byte 0 stays the
 * kernel's 0xCC: exactly what the kernel expects to run and to restore.
 * The probe becomes TAKEN; no code of ours is reached from the site any
 * more and it is never written again (patch_sync() and disarm() skip it).
 * Remaining window: a thread that reaches the site between the kernel's
 * write and our look (up to CHECK_MS plus the control thread's wake-up)
 * still resumes inside the rel32 and dies (or computes garbage: seen with
 * tests/targets/s-kuprobe); so does a thread that resumed there before our
 * write. The kernel gives no notice (no event, no signal); only an int3 at
 * a site of ours that was not ours to begin with is seen.
 *
 * The bytes are read by a writev() from the sites into a pipe of ours
 * (taken_pipe), a batch of sites per call: a site in an object that was
 * unmapped a moment ago (a dlclose the host has not answered yet) is a
 * short count, never a fault in this thread.
 */
#define TAKEN_BATCH 512

static struct iovec taken_remote[TAKEN_BATCH];
static uint8_t taken_byte[TAKEN_BATCH];
static uint32_t taken_id[TAKEN_BATCH];

static void taken_batch(uint32_t n, uint32_t *given)
{
	uint32_t i = 0, k;

	while (i < n && taken_pipe[1] >= 0) {
		/* raw: libc's wrappers may be probed sites themselves */
		long got = raw_syscall4(SYS_writev, taken_pipe[1], (long)(taken_remote + i),
					(long)(n - i), 0);

		if (got > 0 &&
		    raw_syscall4(SYS_read, taken_pipe[0], (long)(taken_byte + i), got, 0) != got)
			return; /* cannot happen: a batch is far below the pipe's size */
		if (got < 0 && got != -EFAULT)
			return; /* no look possible: nothing given back */
		if (got < 0)
			got = 0; /* the first one is gone (unmapped a moment ago) */
		for (k = 0; k < (uint32_t)got; k++) {
			struct utrace_probe *p = &agent_probes[taken_id[i + k]];

			if (taken_byte[i + k] == 0xe9)
				continue;
			if (taken_byte[i + k] == 0xcc) {
				write_code(p->addr + 1, p->orig + 1, p->len - 1u);
				set_state(p, UTRACE_PS_TAKEN, -EEXIST);
			} else {
				set_state(p, UTRACE_PS_TAKEN, -EILSEQ);
			}
			(*given)++;
		}
		i += (uint32_t)got + 1; /* skip the unreadable one (if any) */
	}
}

/**
 * patch_check_taken - give back the jmp sites a kernel uprobe took
 * @all: every jmp site; else only the exposed ones (probe_load())
 * @nr_jmp: receives the number of exposed jmp sites
 *
 * Control thread (agent.c): the exposed sites every CHECK_MS, where a
 * kernel uprobe kills the target at its first hit; all of them every
 * CHECK_ALL_MS (a kernel uprobe on a kept entry resumes on our jmp, on a
 * 5-byte first instruction after it: the target lives, our probe there
 * only stops seeing hits, which the host must still say). Costs a writev()
 * and a read() per TAKEN_BATCH sites. Return: the number of sites given
 * back now.
 */
uint32_t patch_check_taken(bool all, uint32_t *nr_jmp)
{
	uint32_t i, n = 0, given = 0, jmp = 0;

	for (i = 0; i < agent_nr_probes; i++) {
		struct utrace_probe *p = &agent_probes[i];

		if (!p->abi || p->state != UTRACE_PS_JMP || !p->slot)
			continue;
		jmp += p->exposed;
		if (!all && !p->exposed)
			continue;
		taken_remote[n] = (struct iovec){ (void *)p->addr, 1 };
		taken_id[n++] = i;
		if (n == TAKEN_BATCH) {
			taken_batch(n, &given);
			n = 0;
		}
	}
	if (n)
		taken_batch(n, &given);
	if (given) {
		sync_cores();
		__atomic_fetch_add(&agent_hdr->taken, given, __ATOMIC_RELEASE);
	}
	*nr_jmp = jmp;
	return given;
}

/**
 * patch_atfork_child - the child of fork() carries no probes
 *
 * Runs in the child right after fork (one thread, async-signal context
 * rules). /proc/self/mem of the parent is inherited as an fd that still
 * names the parent, so the child writes with mprotect. Return instances on
 * the forking thread's stack still resolve through the trampoline.
 */
/**
 * patch_atfork_follow - the child of fork() keeps its probes (-F; agent.c
 * gave it an arena of its own): later writes go to its own memory, through
 * its own /proc/self/mem (the inherited fd still names the parent).
 */
void patch_atfork_follow(void)
{
	if (mem_fd >= 0)
		close(mem_fd);
	mem_fd = agent_fd_high(open("/proc/self/mem", O_RDWR | O_CLOEXEC));
	taken_pipe_open(); /* the inherited one is shared with the parent */
}

void patch_atfork_child(void)
{
	uint32_t i;

	agent_active = 0;
	taken_pipe_close();
	if (mem_fd >= 0) {
		close(mem_fd);
		mem_fd = -1;
	}
	for (i = agent_nr_probes; i-- > 0;) {
		struct utrace_probe *p = &agent_probes[i];

		if (!p->abi || (p->state != UTRACE_PS_INT3 && p->state != UTRACE_PS_JMP))
			continue;
		write_code(p->addr, p->orig, p->state == UTRACE_PS_JMP ? 5 : 1);
		p->state = UTRACE_PS_DISARMED; /* private copy only: the arena is the parent's */
	}
}
