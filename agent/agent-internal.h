/* SPDX-License-Identifier: MIT */
/*
 * agent-internal.h - shared declarations of libutrace-agent.so, the only
 * code that runs inside the target. Everything here is hidden; the exports
 * are the __utrace_agent_* symbols in agent.map.
 *
 * Contract for everything reachable from a probe hit (dispatch.c, ring.c,
 * retprobe.c, guard.c, the thunks in arch/x86_64/entry.S): runs in the
 * probed thread, possibly inside a signal handler or inside malloc; no
 * locks, no malloc, no stdio, no libc string calls, no syscalls (except
 * clock_gettime before the TSC is calibrated, the mmap of a thread's
 * first hit, and one raw process_vm_readv() per string a recording probe
 * copies: ring.c copy_str()). Compiled with -mgeneral-regs-only: the trampolines save the
 * integer registers and flags only, so agent code must not touch SIMD state.
 */
#ifndef __UTRACE_AGENT_INTERNAL_H
#define __UTRACE_AGENT_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "abi.h"

#define AGENT_API __attribute__((visibility("default")))

/* agent.c: the int3 of the launch hello (abi.h UTRACE_ARENA_F_HELLO) */
extern const char __utrace_agent_hello_site[], __utrace_agent_dl_site[];

#define AGENT_MAX_PROBES 4096 /* hard cap of probe ids the agent accepts */
#define AGENT_MAX_HANDLERS 4 /* extra (in-process) handlers per probe */
#define AGENT_DEF_DEPTH 64 /* return instances per thread */
#define AGENT_MAX_DEPTH 1024

/* The saved registers: the layout of struct user_regs_struct (216 bytes). */
typedef struct user_regs_struct utrace_regs_t;
_Static_assert(sizeof(utrace_regs_t) == 216, "frame layout used by entry.S");

/** struct utrace_agent_ctx - what an in-process handler gets. */
struct utrace_agent_ctx {
	uint32_t probe; /* probe id */
	uint32_t tid;
	utrace_regs_t *regs; /* may be changed: written back after the handlers */
	bool is_return;
	uint64_t ret_addr; /* return hits: where the function returns to */
	uint64_t entry_ns; /* return hits: entry time (0 if unknown) */
	uint64_t now_ns; /* return hits: now */
	unsigned int depth;
};
typedef int (*utrace_agent_handler_t)(struct utrace_agent_ctx *ctx, void *data);

struct utrace_handler {
	utrace_agent_handler_t fn;
	void *data;
	bool on_return;
};

/** struct utrace_probe - the agent's private view of a probe-table entry. */
struct utrace_probe {
	struct utrace_abi_probe *abi; /* counters and host-written config */
	uint64_t addr; /* where the int3 / jmp goes */
	uint64_t slot;
	uint64_t xol; /* slot + UTRACE_TRAMP_XOL_OFF */
	uint32_t id;
	uint32_t flags;
	uint8_t len;
	uint8_t mode;
	uint8_t undo; /* rsp the kept first instruction moved; given back at a hit */
	bool exposed; /* jmp over a short first instruction (patch_check_taken()) */
	uint8_t orig[16];
	uint64_t inject_value, inject_every; /* UTRACE_PF_INJECT, copied at load */
	volatile uint32_t state; /* enum utrace_probe_state, as the handlers see it */
	unsigned int nr_handlers; /* published with a release store */
	struct utrace_handler handlers[AGENT_MAX_HANDLERS];
	uint64_t entry; /* where the handlers see the hit: addr - pre_len (abi.h) */
};

/** struct utrace_return_instance - one hijacked return address. */
struct utrace_return_instance {
	uint64_t func; /* probe id */
	uint64_t sp; /* address of the return-address slot at entry */
	uint64_t orig_ret; /* the real return address */
	uint64_t entry_ns;
	bool chained; /* tail call: shares the instance below */
};

enum utrace_task_state {
	UTRACE_TASK_RUNNING = 0,
	UTRACE_TASK_CLOAKED, /* an agent thread: its hits run no handler */
};

/** struct utrace_task - per-thread state (agent-private memory). */
struct utrace_task {
	uint32_t tid;
	uint32_t state; /* enum utrace_task_state */
	uint32_t guard; /* 0, or who holds the guard: enum utrace_guard (guard.c) */
	uint32_t depth; /* return instances in use */
	uint32_t max_depth;
	uint32_t gen; /* agent_gen when @slot was claimed (a new session claims anew) */
	struct utrace_abi_thread *slot; /* NULL: no slot free; counters go to hits_shared */
	uint64_t *hits;
	struct utrace_abi_cell *cells; /* [UTRACE_ABI_CELLS] in @slot (dispatch.c cell_of()) */
	struct utrace_abi_event *ring;
	struct utrace_return_instance *ri; /* [max_depth] */
	/* -k: the stack mapping around the thread's rsp, learned once (stack.c) */
	uint64_t stack_lo, stack_hi;
	bool stack_tried;
};

/* agent.c */
/*
 * The arena's layout, copied and validated at start: the agent computes
 * every address from this private copy, never from the (host-writable)
 * header, so a confused host cannot make it write outside the arena.
 */
extern struct utrace_arena_hdr agent_layout;
extern void *agent_arena;
extern struct utrace_arena_hdr *agent_hdr;
extern struct utrace_probe *agent_probes; /* [max_probes] */
extern uint32_t agent_nr_probes; /* ids < this may be in use */
extern volatile int agent_active; /* 0: dormant, hits run no handler */
/*
 * The session: 1 for the first arena, + 1 for each re-attach to the
 * dormant agent (agent.c). Thread slots and return instances belong to the
 * session that made them: those of an earlier one count nowhere.
 */
extern volatile uint32_t agent_gen;

/* A return instance's @func: the probe id tagged with the session. */
static inline uint64_t agent_ri_func(uint32_t id)
{
	return ((uint64_t)agent_gen << 32) | id;
}

/* The probe id of a return instance's @func, or UINT32_MAX if another session's. */
static inline uint32_t agent_ri_probe(uint64_t func, uint32_t nr_probes)
{
	if ((uint32_t)(func >> 32) != agent_gen || (uint32_t)func >= nr_probes)
		return UINT32_MAX;
	return (uint32_t)func;
}
extern int agent_trap_sig; /* SIGTRAP */

static inline struct utrace_abi_probe *agent_abi_probe(uint32_t i)
{
	return (struct utrace_abi_probe *)((char *)agent_arena + agent_layout.probes_off) + i;
}

static inline struct utrace_abi_thread *agent_abi_thread(uint32_t i)
{
	return (struct utrace_abi_thread *)((char *)agent_arena + agent_layout.threads_off +
					    (uint64_t)i * agent_layout.thread_stride);
}

static inline struct utrace_abi_event *agent_abi_ring(uint32_t i)
{
	return (struct utrace_abi_event *)((char *)agent_arena + agent_layout.rings_off) +
	       (uint64_t)i * agent_layout.ring_records;
}

void agent_image_changed(void);
char *const *agent_exec_env(char *const *envp, char **out, size_t max, char *buf, size_t len);
void agent_exec_failed(void);
int agent_fd_high(int fd);
int __utrace_agent_add_handler(uint32_t id, utrace_agent_handler_t fn, void *data, int on_return);

/* module.c (control thread) */
int module_load(uint64_t counter_base, uint64_t nr_counters);
int module_bind(uint64_t which, uint64_t id);

/* alloc.c */
void *utrace_alloc(size_t size);
void utrace_memcpy(void *dst, const void *src, size_t n);
void utrace_memset(void *dst, int c, size_t n);
int utrace_memcmp(const void *a, const void *b, size_t n);

/*
 * raw_syscall6 - a system call without libc. For code that runs in a
 * probed thread outside the guard (the signal handlers of patch.c, the
 * interposers): a libc wrapper there (syscall(), getpid(), and errno's
 * __errno_location()) may be probed itself, and its hit would be counted
 * as the program's call (or trap again, in the SIGTRAP handler). Leaves
 * errno alone. Return: the kernel's value (-errno on failure).
 */
static inline long raw_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret = nr;

	__asm__ volatile("syscall"
			 : "+a"(ret)
			 : "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* guard.c */
/*
 * Who holds a thread's guard. GUARD_HIT: a hit's dispatch, between its
 * built-in actions (which call no libc function); a hit then comes from a
 * signal handler of the program that interrupted the dispatch: the
 * program's call, counted (-c), though no handler runs (@nested).
 * GUARD_OWN: the agent's own code (an interposer, the making of a task, a
 * module's handler, the fork child's handler): its calls are not the
 * program's, only @nested.
 */
enum utrace_guard {
	GUARD_HIT = 1,
	GUARD_OWN = 2,
};

extern __thread struct utrace_task *utrace_tls_task __attribute__((tls_model("initial-exec")));

/*
 * count_inc - add one to a counter only this thread writes. One "incq"
 * instruction: a signal handler of the same thread cannot split it, and
 * the host reads the aligned 8 bytes whole.
 */
static inline void count_inc(uint64_t *c)
{
	__asm__ volatile("incq %0" : "+m"(*c));
}

/* count_add - count_inc() by @v: one "addq". */
static inline void count_add(uint64_t *c, uint64_t v)
{
	__asm__ volatile("addq %1, %0" : "+m"(*c) : "r"(v));
}

void guard_init(void);
void guard_release_all(void);
struct utrace_task *guard_task(void);
struct utrace_task *guard_enter(void);
void guard_leave(struct utrace_task *t);
void guard_cloak_self(void);
bool guard_busy(void);
bool guard_making_task(void);
int guard_hold(void);
void guard_unhold(int was);
uint32_t guard_gettid(void);

/* ring.c */
uint64_t ring_now_ns(void);
void ring_calibrate(void);
void ring_emit(struct utrace_task *t, uint32_t probe, uint16_t kind, uint64_t ts, uint64_t dur,
	       const uint64_t *args, unsigned int nargs);
/*
 * -k's copy for the host's CFI unwinder (ABI 12): the registers in
 * UTRACE_EV_REGS order and the @len readable bytes of stack at regs[1]
 * (rsp), copied into STACKDATA records by ring_emit_group().
 */
struct ring_stack_copy {
	uint64_t regs[UTRACE_ABI_NR_REGS];
	uint64_t len;
};
void ring_emit_group(struct utrace_task *t, uint32_t probe, uint16_t kind, uint64_t ts,
		     uint64_t dur, const uint64_t *args, unsigned int nargs, unsigned int str_mask,
		     unsigned int str_max, const uint64_t *pcs, unsigned int npcs,
		     const struct ring_stack_copy *sc);
/* This process's pid, for the string copies (set at start and in a fork child). */
extern int ring_self_pid;
/* Whether strings may be copied at hits (no seccomp filter); sets ring_self_pid. */
void ring_str_init(void);
long raw_getpid(void);
/* the host process still lives (agent.c; raw system calls, any thread) */
bool agent_host_alive(void);

/* dispatch.c */
int utrace_dispatch_entry(uint32_t id, utrace_regs_t *regs);
uint64_t utrace_dispatch_return(utrace_regs_t *regs);
int dispatch_hit(struct utrace_probe *p, utrace_regs_t *regs);

/* retprobe.c */
void retprobe_entry(struct utrace_task *t, struct utrace_probe *p, utrace_regs_t *regs,
		    uint64_t now);
uint64_t retprobe_return(struct utrace_task *t, utrace_regs_t *regs,
			 struct utrace_return_instance *ret_ri);
void retprobe_unwind_begin(void);

/* stack.c */
unsigned int stack_walk(struct utrace_task *t, const utrace_regs_t *regs, bool at_entry,
			uint64_t *pcs, uint64_t *top);

/* tramp.c */
int tramp_xol_map(uint64_t addr, uint64_t size);
void tramp_publish_areas(struct utrace_arena_hdr *h);
int tramp_write_slot(struct utrace_probe *p);
bool tramp_in_xol(uint64_t addr);

/* patch.c */
int patch_init(void);
void patch_reset(void);
void patch_agent_signals(sigset_t *set);
int patch_sync(void);
void patch_disarm_all(void);
uint32_t patch_check_taken(bool all, uint32_t *nr_jmp);
void patch_release(void);
int patch_quiesce(void);
void patch_atfork_child(void);
void patch_atfork_follow(void);
int patch_trap_handler(int sig, siginfo_t *info, void *uc);

bool patch_trap_owned(void);
struct sigaction patch_trap_chained(void);
void patch_trap_set_chained(const struct sigaction *act);

/* interpose.c */
void interpose_init(void);
int agent_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
int agent_sigprocmask(int how, const sigset_t *set, sigset_t *old);
int agent_pthread_sigmask(int how, const sigset_t *set, sigset_t *old);
int agent_pthread_attr_setsigmask_np(pthread_attr_t *attr, const sigset_t *set);

/* sigguard.c (control thread) */
void sigguard_arm(bool force);
void sigguard_disarm(void);

/* arch/x86_64/entry.S */
extern char __utrace_agent_entry[];
extern char __utrace_agent_ret_tramp[];

#endif /* __UTRACE_AGENT_INTERNAL_H */
