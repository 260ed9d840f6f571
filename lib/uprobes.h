/* SPDX-License-Identifier: MIT */
/*
 * uprobes.h - the probe registry's objects (uprobes.c, uprobes-arm.c,
 * uprobes-life.c), shared with its backends (backend.h: the operations;
 * backend-ptrace.c). Not installed.
 * Everything here runs in the tracer process, in the session's tracing
 * thread; nothing is locked (there is one thread).
 */
#ifndef __UTRACE_UPROBES_INTERNAL_H
#define __UTRACE_UPROBES_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "utrace/event.h"
#include "utrace/plan.h"
#include "utrace/probe.h"
#include "utrace/session.h"
#include "utrace/spec.h"

/* Default and largest number of return instances kept per thread. */
#define UPROBES_DEFAULT_DEPTH 64
#define UPROBES_MAX_DEPTH 4096
/* Return instances dropped as stale that are kept for a late match. */
#define UPROBES_DROPPED_KEEP 16
/* Longest instruction, and the bytes kept from the probed site. */
#define UPROBES_INSN_MAX 16

struct uprobes_proc;
struct uprobes_backend_ops;
struct utrace_module;
struct probe_point;
struct uprobes_rec;

/*
 * struct utrace_probe - one registered probe (public opaque type). Owned
 * by its struct utrace_uprobes; freed when unregistered and no longer
 * referenced by a running hit.
 */
struct utrace_probe {
	struct utrace_uprobes *up;
	struct utrace_probe *next; /* up->probes, in registration order */
	uint64_t seq; /* registration order: handlers run by ascending seq */
	struct utrace_probe_opts opts; /* copied, unknown tail zeroed */
	bool is_spec;
	bool warned; /* a refused site was reported once */
	char *name; /* SPEC text or "PID:0xADDR" */
	struct utrace_spec spec; /* is_spec */
	struct utrace_spec *excl; /* opts.exclude, parsed: matches left out */
	size_t nr_excl;
	pid_t pid; /* !is_spec: the process and runtime address */
	uint64_t addr;
	bool registered; /* registration completed (armed where possible) */
	bool dead; /* unregistered; freed once no hit uses it */
	uint64_t dead_hit; /* unregistered inside this hit (up->hit_seq), which it still runs for */
	unsigned int points; /* probe points carrying this probe */
	unsigned int pending; /* SPEC objects not loaded yet (per process) */
	uint64_t hits, returns, missed_returns;
	uint64_t inject_calls; /* ACT_INJECT in the tracer */
	struct uprobes_retired *retired; /* figures of points gone, by point name */
	struct uprobes_module *mod; /* utrace_probe_opts.module: its table entry @mprobe runs */
	unsigned int mprobe;
};

/* Modules loaded into one layer at most (the agent's table holds 8). */
#define UPROBES_MAX_MODULES 8

/*
 * struct uprobes_module - a C probe module loaded into a layer (module.c):
 * its descriptor, read in the tracer, and what it counted where its
 * counters cannot be read any more (ptrace: every count; agent: the
 * processes gone, backend-agent.c).
 */
struct uprobes_module {
	int id; /* utrace_uprobes__load_module()'s: index + 1 */
	const char *name; /* the descriptor's */
	char path[4096]; /* canonical, checked */
	void *handle;
	struct utrace_module *desc;
	unsigned int nr_probes, nr_counters;
	uint32_t ret_mask; /* bit i: table entry i has a return handler */
	uint64_t counts[32]; /* UTRACE_MODULE_MAX_COUNTERS */
	uint32_t agent_base; /* agent: the probe id of its first counter */
	struct utrace_probe *by_pi[32]; /* the last probe registered on each table entry */
};
struct uprobes_module *uprobes_module_get(const struct utrace_uprobes *up, int id);
void uprobes_modules_free(struct utrace_uprobes *up);
/* The registry's tracer-side handlers of a module probe (module.c). */
int uprobes_module_entry(struct utrace_probe_ctx *ctx, void *data);
int uprobes_module_return(struct utrace_probe_ctx *ctx, void *data);

/* The built-in figures of a probe at points that are gone (exit, exec, unload). */
struct uprobes_retired {
	struct uprobes_retired *next;
	pid_t pid; /* the process the point was in (utrace_uprobes__pid_stats()) */
	char *name, *symbol, *object;
	struct utrace_probe_counts c;
};
void uprobes_retire_counts(struct utrace_probe *p, const struct probe_point *pt,
			   const struct utrace_probe_counts *c);

void uprobes_queue_record(struct utrace_uprobes *up, const struct utrace_record *r);
/* Queue @q as it is (the oldest dropped, counted, when full); hand the queue to @fn. */
void uprobes_rec_queue(struct utrace_uprobes *up, struct uprobes_rec *q);
int uprobes_rq_deliver(struct utrace_uprobes *up, utrace_record_fn_t fn, void *ctx);
/* @pp's points, or its vfork parent's, whose memory it shares. */
struct uprobes_proc *uprobes_points_proc(struct uprobes_proc *pp);
/* @c += @a (counts, histograms; min and max merged) */
void uprobes_counts_add(struct utrace_probe_counts *c, const struct utrace_probe_counts *a);
/* The halves of probe @p (built-in actions or handlers). */
bool uprobes_probe_has_entry(const struct utrace_probe *p);
bool uprobes_probe_has_return(const struct utrace_probe *p);
/* A recorded event of the tracer-side RECORD action, queued until polled. */
struct uprobes_rec {
	struct uprobes_rec *next;
	struct utrace_record r;
	char *strs[7]; /* owned copies behind r.str[] and r.ret_str */
	char *name, *symbol, *object; /* behind r.name ...: the point may be gone when polled */
	uint64_t stack[UTRACE_REC_MAX_STACK]; /* behind r.stack */
	char comm[16]; /* behind r.comm, when the backend knows it */
	void *mem; /* behind r.mem: the regions, then their bytes (one allocation) */
	uint64_t regs[UTRACE_REC_NR_REGS]; /* behind r.regs */
	uint8_t *stack_data; /* behind r.stack_data */
};

/*
 * struct probe_point - one breakpoint: (process, address) with the probes
 * there, in registration order.
 */
struct probe_point {
	struct probe_point *hnext; /* proc hash chain */
	struct uprobes_proc *proc;
	uint64_t addr; /* runtime address of the int3 */
	uint8_t orig[UPROBES_INSN_MAX]; /* original bytes at @addr */
	uint8_t insn_len; /* length of the displaced instruction */
	bool armed; /* int3 written */
	bool entry; /* at a function's first instruction (set_return allowed) */
	bool internal; /* the dynamic linker's r_brk or an unwind guard: no probes */
	bool unwind; /* an unwinder's entry: the thread's hijacked returns go back */
	void *priv; /* the backend's (backend.h), NULL until its arm() */
	struct utrace_probe **probes;
	struct utrace_point_opts *popts; /* [i]: probes[i]'s settings here (point_opts) */
	struct utrace_probe_counts *pcnt; /* [i]: probes[i]'s figures here (tracer-side actions) */
	unsigned int nr_probes, cap_probes;
	struct utrace_probe_point_info info;
	char *object, *symbol, *name; /* owned strings behind @info */
	/* the match it was made from (symbol: @symbol), for backends that plan sites */
	struct utrace_match match;
};

/*
 * struct utrace_return_instance - a function entered through a return
 * probe, whose return address was replaced with the trampoline (the
 * kernel's return_instance).
 * @func: the probe point address (the function entry)
 * @sp: rsp at entry: the stack slot holding the return address
 * @orig_ret: the real return address
 * @chained: tail call: this instance returns through the one below it
 *	(the return address it replaced was already the trampoline)
 * @entry_ns: CLOCK_MONOTONIC at entry
 */
struct utrace_return_instance {
	uint64_t func;
	uint64_t sp;
	uint64_t orig_ret;
	bool chained;
	uint64_t entry_ns;
};

/* enum utrace_task_state - where a thread is with respect to probes. */
enum utrace_task_state {
	UTASK_RUNNING = 0, /* outside any probe */
	UTASK_IN_HANDLERS, /* its hit's handlers are running in the tracer */
};

/* struct utrace_task - per-thread probe state (the kernel's uprobe_task). */
struct utrace_task {
	struct utrace_task *hnext;
	pid_t tid;
	enum utrace_task_state state;
	unsigned int depth; /* return instances in use */
	struct utrace_return_instance *ri; /* [max_depth], ri[depth - 1] is the newest */
	/*
	 * Instances dropped as unwound past, kept a little longer: if a
	 * stack switch (swapcontext, coroutines) fooled the stack-pointer
	 * check, the trampoline can still find the real return address.
	 */
	struct utrace_return_instance dropped[UPROBES_DROPPED_KEEP];
	unsigned int nr_dropped;
};

#define PROC_HASH 256

/* struct uprobes_proc - one traced process and its probe points. */
struct uprobes_proc {
	struct uprobes_proc *next;
	struct utrace_uprobes *up;
	pid_t pid;
	struct probe_point *points[PROC_HASH];
	unsigned int nr_points;
	struct utrace_task *tasks[PROC_HASH];
	void *priv; /* the backend's (backend.h: proc_init) */
	struct utrace_image *img; /* objects seen so far (rebuilt at r_brk) */
	struct utrace_planner *planner; /* on @img */
	uint64_t r_brk; /* the dynamic linker's _dl_debug_state, 0 if none */
	uint64_t r_debug; /* its struct r_debug (_r_debug), 0 if not found */
	uint64_t removed[8]; /* recently removed breakpoints (late SIGTRAPs) */
	unsigned int nr_removed;
	pid_t vfork_parent; /* a followed vfork child: uses its parent's points */
	struct utrace_unwind *unwind; /* ACT_STACK's CFI unwinder (uprobes-arm.c walk_stack()) */
	bool unwind_tried;
};

/* Deferred requests from handlers. */
struct uprobes_deferred {
	struct uprobes_deferred *next;
	bool reg; /* true: complete registration of @p; false: unregister */
	struct utrace_probe *p;
};

/* struct utrace_uprobes - the uprobes layer of one session. */
struct utrace_uprobes {
	struct utrace_session *s;
	struct utrace_engine *engine;
	enum utrace_backend backend;
	const struct uprobes_backend_ops *ops; /* backend.h */
	void *priv; /* the backend's */
	unsigned int max_depth;
	const char *agent_path; /* utrace_uprobes_opts.agent_path, during init */
	bool agent_untraced; /* utrace_uprobes_opts.agent_untraced */
	unsigned int sc_str_max; /* utrace_uprobes_opts.sc_str_max (0: 32) */
	char attach_why[640]; /* why the last utrace_uprobes__attach() failed */
	char arm_why[256]; /* ->arm's reason for its last refusal (said with the refusal) */
	unsigned int flags; /* utrace_uprobes_opts.flags */
	struct utrace_probe *probes, **probes_tail;
	uint64_t next_seq;
	struct uprobes_proc *procs;
	unsigned int hit_depth; /* > 0 while handlers run: (un)registration is deferred */
	uint64_t hit_seq; /* outermost hits so far (probe_runs()) */
	bool in_deferred; /* the deferred queue is being processed */
	struct utrace_thread *hit_th; /* thread whose hit is being handled (not resumed by us) */
	struct uprobes_deferred *deferred, **deferred_tail;
	bool freeing;
	struct utrace_uprobes_stats stats;
	const char *backend_why; /* utrace_uprobes__backend_why() */
	char why_buf[512];
	char init_why[200]; /* a backend's init() says here why it cannot work */
	/* tracer-side RECORD events, oldest first; bounded, drops counted */
	struct uprobes_rec *rq, **rq_tail;
	unsigned int rq_len;
	uint64_t rq_lost;
	/*
	 * System-wide (utrace_uprobes_opts.all_exec): the pseudo-process 0
	 * whose points stand for every process mapping their files; the
	 * session's own processes are then not tracked by the layer.
	 */
	struct uprobes_proc *all;
	/* C probe modules (module.c), in load order */
	struct uprobes_module *mods[UPROBES_MAX_MODULES];
	unsigned int nr_mods;
};

/* tracer-side records kept before the oldest ones are dropped (and counted) */
#define UPROBES_RQ_MAX 65536

/* ---- uprobes.c: registry ------------------------------------------------ */

struct uprobes_proc *uprobes_proc_find(struct utrace_uprobes *up, pid_t pid);
struct probe_point *uprobes_point_find(struct uprobes_proc *pp, uint64_t addr);
struct utrace_task *uprobes_task_get(struct uprobes_proc *pp, pid_t tid, bool create);
void uprobes_task_exit(struct uprobes_proc *pp, pid_t tid);
bool uprobes_point_wants_return(const struct probe_point *pt);
/* The bucket of runtime address @addr in uprobes_proc.points[]. */
unsigned int uprobes_hash_addr(uint64_t addr);
/* Free @pt and the backend's state of it (not in the hash, or taken out). */
void uprobes_point_free(struct probe_point *pt);
/* Take @pt out of @pp's hash (and out of the armed points counted). */
void uprobes_point_unlink(struct uprobes_proc *pp, struct probe_point *pt);
/* Note @addr as a breakpoint just removed from @pp (its late SIGTRAPs). */
void uprobes_remember_removed(struct uprobes_proc *pp, uint64_t addr);
/* Free a point whose memory is gone (exec, exit, unload), its probes told: no write. */
void uprobes_point_forget(struct uprobes_proc *pp, struct probe_point *pt,
			  enum utrace_drop_reason why);
/* uprobes_point_forget() every point of @pp, once the backend flushed its events. */
void uprobes_proc_forget_points(struct uprobes_proc *pp, enum utrace_drop_reason why);
/* Unlink and free @pp: its tasks, the backend's state, its image and planner. */
void uprobes_proc_free(struct uprobes_proc *pp);
/* Start the state of process @pid (the backend's proc_init), without an image. */
struct uprobes_proc *uprobes_proc_new(struct utrace_uprobes *up, pid_t pid);
/* (Re)build the image and planner of @pp from its maps. Return: 0 or negative errno. */
int uprobes_proc_refresh_image(struct uprobes_proc *pp);
/* Unlink and free probe @p (its retired figures; queued records forget it). */
void uprobes_probe_free(struct utrace_probe *p);
/* Arm @p (address or SPEC) where it belongs. Return: 0 or negative errno. */
int uprobes_do_register(struct utrace_probe *p);
/* Take @p out of every process, quiescing where a breakpoint goes. */
int uprobes_do_unregister(struct utrace_probe *p);
bool uprobes_proc_pending(struct uprobes_proc *pp);
uint64_t uprobes_now_ns(void);
/* Length of the instruction at @bytes (xol.c), or negative. */
int xol_insn_len(const uint8_t *bytes, size_t len);

/* ---- uprobes-arm.c: arming, hits, built-in actions ---------------------- */

/* The point of match @m in @pp, made and armed if new (-UTRACE_ERRNO__NOT_PATCHABLE: @why). */
int uprobes_point_get(struct uprobes_proc *pp, const struct utrace_match *m, bool internal,
		      struct probe_point **ret_pt, char *why, size_t whylen);
/* Probe @i leaves @pt: what it counted there stays with the probe. */
void uprobes_point_retire(struct probe_point *pt, unsigned int i);
/* Take the probe at index @i out of @pt's lists. */
void uprobes_point_del_probe_at(struct probe_point *pt, unsigned int i);
/* Insert @p in @pt's handler list, in registration order. */
int uprobes_point_add_probe(struct probe_point *pt, struct utrace_probe *p);
/* Remove the breakpoint of @pt (process alive) and free it. */
int uprobes_point_remove(struct uprobes_proc *pp, struct probe_point *pt);
/* -UTRACE_ERRNO__NOT_PATCHABLE (@why) where @p's return half is refused at @m. */
int uprobes_ret_refused(struct uprobes_proc *pp, const struct utrace_probe *p,
			const struct utrace_match *m, char *why, size_t whylen);
/* Arm SPEC probe @p in @pp. Return: points added, or negative errno. */
int uprobes_proc_arm_spec(struct uprobes_proc *pp, struct utrace_probe *p, bool *ret_pending);
/* The dynamic linker's r_brk as an internal point of @pp (or the backend's dl_watch). */
void uprobes_proc_arm_rbrk(struct uprobes_proc *pp);
/* The unwind guards of @pp, once a return probe applies to it. */
void uprobes_proc_arm_unwind_guards(struct uprobes_proc *pp);
/* Arm every live SPEC probe in @pp (new process, new image). */
void uprobes_proc_arm_all_specs(struct uprobes_proc *pp);
/* Start tracking process @pid: image, r_brk, SPEC probes if @arm_specs. No quiesce. */
struct uprobes_proc *uprobes_proc_setup(struct utrace_uprobes *up, pid_t pid, bool arm_specs);
void uprobes_hit_begin(struct utrace_uprobes *up);
void uprobes_hit_end(struct utrace_uprobes *up);
/* Free a queued record and the copies behind it. */
void uprobes_rec_free(struct uprobes_rec *q);
void uprobes_run_entry(struct probe_point *pt, struct utrace_probe_ctx *ctx);
void uprobes_run_return(struct uprobes_proc *pp, const struct utrace_return_instance *ri,
			struct utrace_probe_ctx *ctx);
void uprobes_missed_return(struct uprobes_proc *pp, uint64_t func);

/* ---- uprobes-life.c: process life cycle, the engine --------------------- */

void uprobes_proc_exec(struct utrace_uprobes *up, struct utrace_thread *th);
struct uprobes_proc *uprobes_proc_exec_pid(struct utrace_uprobes *up, pid_t pid);
void uprobes_proc_exit(struct utrace_uprobes *up, pid_t pid);
void uprobes_proc_fork(struct utrace_uprobes *up, pid_t parent, pid_t child, bool vfork,
		       bool followed);
void uprobes_dl_activity(struct uprobes_proc *pp, struct utrace_thread *th);
/* Attach the layer's engine to its session (exec, exit, fork, attach, signals). */
int uprobes_engine_attach(struct utrace_uprobes *up);
/* Detach it (not from a session that is gone). */
void uprobes_engine_detach(struct utrace_uprobes *up);

#endif /* __UTRACE_UPROBES_INTERNAL_H */
