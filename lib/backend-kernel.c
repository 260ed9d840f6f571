/* SPDX-License-Identifier: MIT */
/*
 * backend-kernel.c - the kernel backend of uprobes: the kernel's own
 * uprobes and uretprobes, with eBPF programs (bpf/uprobe.bpf.c, loaded
 * through libbpf from the skeleton embedded in the library) running the
 * built-in actions of utrace/probe.h. The registry (uprobes.c) resolves
 * SPECs, owns the life cycle and calls the ops below; this file runs in
 * the tracer process, in the session's tracing thread.
 *
 * DESIGN
 *
 * A hit, step by step:
 *  1. At arming, each (probe, point) pair gets an instance number, and
 *     at the end of the batch (->commit, ->armed_all) its links on the
 *     point's object file and file offset (the registry's runtime address
 *     back to a file address, then through the ELF PT_LOAD headers), for
 *     that process only (the kernel puts its int3 in that process's
 *     memory alone), with the instance number as BPF cookie: an entry
 *     link, and a return one when the probe has a return half
 *     (uprobes_probe_has_return()). Where the kernel has them (6.6+), one
 *     BPF_TRACE_UPROBE_MULTI link per (object, process, half) carries a
 *     whole batch (libc:*, ~2,200 functions: 15 ms, where one perf link
 *     each took minutes, each detach waiting for the kernel's uprobe
 *     synchronisation); a batch the kernel refuses is split in halves down
 *     to the refused site. Else one perf uprobe link per instance and half.
 *  2. A thread executes the int3; the kernel runs uk_entry() in that
 *     thread, in the kernel, and single-steps the instruction out of line
 *     itself. Nothing stops: no signal, no tracer wake-up.
 *  3. uk_entry() checks the thread's process (tgid) against the
 *     instance's (a second filter: vfork children share the memory),
 *     counts the call, keeps the entry time keyed by (tid, instance, rsp)
 *     when the probe times returns, and writes a RECORD through the ring
 *     buffer. uk_return(), at the uretprobe, finds the entry by rsp - 8,
 *     counts errors by err_kind, and adds the duration to the histogram.
 *  4. The tracer reads figures from the per-CPU arrays when asked
 *     (->point_counts, summing CPUs) and records when polled (->poll:
 *     ring_buffer__consume into the registry's queue of struct
 *     utrace_record, with the session run in between so its ptrace stops
 *     of exec, clone and exit keep the program going).
 *  When an instance goes (probe unregistered, process gone), its links go
 *  first, then its records are drained and its figures folded into the
 *  probe's own counters (p->cnt), so utrace_probe__counts() still has them
 *  after the process exited.
 *
 * What it cannot do, and why:
 *  - handlers in the tracer (tracer_handlers = false: only BPF runs at the
 *    hit), and INJECT: a uprobe's BPF program cannot change a user
 *    function's return (bpf_override_return is for kernel functions);
 *    refused with EOPNOTSUPP and one line;
 *  - internal points (no hit reaches the tracer): the dynamic linker is
 *    watched by a BPF uprobe on _dl_debug_state that stops the thread with
 *    SIGURG (kernel_dl_watch(), kernel_signal()), so libraries are armed
 *    before their constructors run and dlopen()ed ones before their first
 *    call; no unwind guards either: the kernel's uretprobe trampoline has
 *    no unwind info, and a C++ exception or a forced unwind through a
 *    return-probed frame ends the process (said once, unwind_warn());
 *  - missed returns are not counted (the kernel drops them silently) and
 *    record depth is 0;
 *  - a followed fork child carries the parent's int3 copies until the
 *    kernel removes them at its first hit there (the links filter by
 *    process): the registry arms it as a process of its own before it
 *    runs (its fork event), with the displaced bytes read from the file
 *    (file_bytes), so nothing of it is missed; a followed vfork child's
 *    hits, in its parent's memory, are not counted (the programs' tgid
 *    filter is the parent's) until its exec.
 * Privilege: CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN, root).
 */
#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "utrace/elf.h"
#include "utrace/proc.h"
#include "utrace/spec.h"
#include "backend.h"
#include "internal.h"
#include "uprobe-abi.h"
#include "uprobe-sc.h"
#include "uprobe.skel.h"
#include "uprobes.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
/* the initial pid namespace's inode (PROC_PID_INIT_INO) */
#define UK_INIT_PIDNS_INO 0xEFFFFFFCU
/* the ring buffer: 8 MiB of records between two polls */
#define UK_RING_BYTES (8U << 20)

_Static_assert(UK_HIST == UTRACE_HIST_BUCKETS, "bpf/uprobe-abi.h and probe.h disagree");
_Static_assert(UK_ACT_COUNT == UTRACE_ACT_COUNT && UK_ACT_HIST == UTRACE_ACT_HIST &&
		       UK_ACT_RECORD == UTRACE_ACT_RECORD && UK_ACT_STACK == UTRACE_ACT_STACK,
	       "bpf/uprobe-abi.h and probe.h disagree");
_Static_assert(UK_MAX_STACK == UTRACE_REC_MAX_STACK, "bpf/uprobe-abi.h and event.h disagree");

/* BPF_TRACE_UPROBE_MULTI (uapi 6.6+; Debian 12's headers and libbpf 1.1 predate it) */
#define UK_ATTACH_UPROBE_MULTI 48
#define UK_F_UPROBE_MULTI_RETURN (1U << 0)

/*
 * One uprobe_multi link: the entry (or return) halves of a batch of
 * instances in one object of one process. A link cannot lose one offset:
 * an instance that goes zeroes its "conf" slot (its hits are ignored) and
 * its number stays reserved until the link, with its last instance, goes.
 */
struct kmulti {
	int fd;
	unsigned int refs; /* instances still using it */
	uint32_t *ids; /* the cookies it carries */
	unsigned int nr;
};

/* one probe at one point: its links and its slot in the BPF maps */
struct kinst {
	struct utrace_probe *p;
	struct probe_point *pt;
	struct utrace_point_opts po; /* the probe's settings at this point */
	uint32_t id;
	struct bpf_link *entry, *ret; /* one link per half, or ... */
	struct kmulti *m_entry, *m_ret; /* ... its place in uprobe_multi links */
	bool pending; /* links made at the batch's end (kernel_commit()) */
	bool want_ret, want_entry;
};

/* pt->priv */
struct kpoint {
	uint64_t file_off;
	struct kinst **inst;
	unsigned int nr;
};

/* pp->priv */
struct kproc {
	bool dl; /* a uprobe on ld.so's _dl_debug_state, if found */
	uint32_t dl_id; /* its instance number (no probe) */
	uint64_t dl_addr; /* its runtime address, and the byte there in the file */
	uint8_t dl_orig;
};

/* up->priv */
struct kernel_up {
	struct utrace_uprobes *up;
	struct uprobe_bpf *skel;
	struct ring_buffer *rb;
	struct kinst *inst[UK_MAX_INST]; /* by instance number; NULL: free */
	bool reserved[UK_MAX_INST]; /* free, but still a cookie of a live uprobe_multi link */
	bool multi; /* uprobe_multi links (else one link per instance and half) */
	char how[160]; /* utrace_uprobes__backend_how() */
	uint32_t next_id;
	int ncpu;
	struct uk_counts *percpu; /* [ncpu]: one read or reset of a counts slot */
	uint64_t lost_seen; /* the "lost" map's sum already reported */
	/* system calls: the tracepoint links, attached at the first kernel_count_syscalls() */
	struct bpf_link *sc_links[4];
	bool sc_on;
	bool in_pidns; /* the tracer's pids are not the kernel's */
	struct uk_sc_counts *sc_percpu; /* [ncpu] */
	/* the regions copied at a syscall's entry (UK_REC_SC_MEM), by tid, until its return */
	struct sc_pending *sc_pend[64];
	/* -k: a thread's copy of registers and stack (UK_REC_COPY), until its entry's record */
	struct copy_pending *copy_pend[64];
	/* processes told that a C++ throw through a uretprobe ends them (unwind_warn()) */
	pid_t unwind_warned[32];
	int nr_unwind_warned;
	/* system-wide: processes with utrace's agent loaded (agent_jmp_at()), and when seen */
	pid_t agent_pids[64];
	int nr_agent_pids;
	uint64_t agent_scan_ms;
};

/* what a thread's syscall entry copied (on_sample()), kept for its return's record */
struct sc_pending {
	struct sc_pending *next;
	uint32_t tid;
	uint64_t ts_ns;
	int64_t nr;
	unsigned int n;
	struct utrace_mem mem[UK_SC_NCAP];
	char data[UK_SC_NCAP][UK_SC_CAP_MAX];
};

/* -k's copy (struct uk_copy_rec), kept by thread for the entry that follows it */
struct copy_pending {
	struct copy_pending *next;
	uint32_t tid;
	uint64_t regs[UTRACE_REC_NR_REGS];
	uint32_t len;
	uint8_t *data;
};

/* libbpf's messages go to the library's log callback, never to stderr. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	/* debug even for its warnings: the failures they explain are reported (init_why, arm errors) */
	(void)level;
	utrace_log(UTRACE_DEBUG, "libbpf: %s\n", buf);
	return 0;
}

/* The effective capabilities the backend needs that the tracer lacks ("" if none). */
static const char *missing_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	bool admin, bpf, perfmon;

	if (syscall(SYS_capget, &h, d))
		return "CAP_BPF and CAP_PERFMON (capget failed)";
	admin = d[CAP_SYS_ADMIN / 32].effective & (1U << (CAP_SYS_ADMIN % 32));
	bpf = d[CAP_BPF / 32].effective & (1U << (CAP_BPF % 32));
	perfmon = d[CAP_PERFMON / 32].effective & (1U << (CAP_PERFMON % 32));
	if (admin || (bpf && perfmon))
		return "";
	if (!bpf && !perfmon)
		return "CAP_BPF and CAP_PERFMON";
	return bpf ? "CAP_PERFMON" : "CAP_BPF";
}

/* ------------------------------------------------------------------------ */
/* Figures                                                                   */
/* ------------------------------------------------------------------------ */

/* Zero instance @id's per-CPU figures (min as "none yet"). */
static int counts_reset(struct kernel_up *k, uint32_t id)
{
	int i;

	memset(k->percpu, 0, (size_t)k->ncpu * sizeof(*k->percpu));
	for (i = 0; i < k->ncpu; i++)
		k->percpu[i].min_ns = UINT64_MAX;
	return bpf_map__update_elem(k->skel->maps.counts, &id, sizeof(id), k->percpu,
				    (size_t)k->ncpu * sizeof(*k->percpu), BPF_ANY);
}

/* Add instance @id's figures, summed over the CPUs, to @c. */
static void counts_read(struct kernel_up *k, uint32_t id, struct utrace_probe_counts *c)
{
	int i, j;

	if (bpf_map__lookup_elem(k->skel->maps.counts, &id, sizeof(id), k->percpu,
				 (size_t)k->ncpu * sizeof(*k->percpu), 0))
		return;
	for (i = 0; i < k->ncpu; i++) {
		const struct uk_counts *u = &k->percpu[i];

		if (u->timed && (!c->timed || u->min_ns < c->min_ns))
			c->min_ns = u->min_ns;
		if (u->max_ns > c->max_ns)
			c->max_ns = u->max_ns;
		c->calls += u->calls;
		c->returns += u->returns;
		c->errors += u->errors;
		c->timed += u->timed;
		c->sum_ns += u->sum_ns;
		for (j = 0; j < UK_HIST; j++)
			c->hist[j] += u->hist[j];
	}
}

static void kernel_point_counts(struct uprobes_proc *pp, struct probe_point *pt,
				const struct utrace_probe *p, struct utrace_probe_counts *c)
{
	struct kernel_up *k = pp->up->priv;
	struct kpoint *kp = pt->priv;
	unsigned int i;

	for (i = 0; k && kp && i < kp->nr; i++)
		if (kp->inst[i]->p == p)
			counts_read(k, kp->inst[i]->id, c);
}

/* ------------------------------------------------------------------------ */
/* Records                                                                   */
/* ------------------------------------------------------------------------ */

/* Queue @q in the registry's record queue; the oldest goes when full (counted). */

static char *str_dup(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = 0;
	}
	return d;
}

/*
 * The regions after a syscall record's header (bpf/uprobe-abi.h), copied
 * into @bytes and described in @mem. Return: how many.
 */
static unsigned int sc_regions(const void *data, size_t size, struct utrace_mem *mem,
			       char (*bytes)[UK_SC_CAP_MAX])
{
	const struct uk_sc_rec *h = data;
	size_t off = sizeof(*h), hdr = offsetof(struct uk_sc_mem, data);
	unsigned int i, n = 0;

	for (i = 0; i < h->nmem && i < UK_SC_NCAP; i++, off += sizeof(struct uk_sc_mem)) {
		const struct uk_sc_mem *m = (const void *)((const char *)data + off);

		if (off + hdr > size || m->len > UK_SC_CAP_MAX || off + hdr + m->len > size)
			break;
		memcpy(bytes[n], m->data, m->len);
		mem[n].addr = m->addr;
		mem[n].len = m->len;
		mem[n].arg = m->arg;
		mem[n].flags = (m->flags & UK_SC_MEM_EXIT ? UTRACE_MEM_EXIT : 0) |
			       (m->flags & UK_SC_MEM_TRUNC ? UTRACE_MEM_TRUNC : 0);
		mem[n].data = bytes[n];
		n++;
	}
	return n;
}

/*
 * One ring buffer sample (ring_buffer__consume(), tracing thread) to a
 * struct utrace_record in the registry's queue. The stack is kept behind
 * the queue entry, in the same allocation.
 */
static int on_sample(void *ctx, void *data, size_t size)
{
	struct kernel_up *k = ctx;
	const struct uk_rec *h = data;
	const char *slots = (const char *)(h + 1);
	struct uprobes_rec *q;
	struct kinst *in;
	unsigned int i, slot = 0, nst;

	if (size >= sizeof(struct uk_sc_rec) && h->type == UK_REC_SC_MEM) {
		const struct uk_sc_rec *sr = data;
		struct sc_pending **pp = &k->sc_pend[sr->tid % ARRAY_SIZE(k->sc_pend)], *p;

		for (; (p = *pp); pp = &p->next) /* an older one: its return never came */
			if (p->tid == sr->tid)
				break;
		if (!p) {
			p = malloc(sizeof(*p));
			if (!p)
				return 0;
			p->next = NULL;
			*pp = p;
		}
		p->tid = sr->tid;
		p->ts_ns = sr->ts_ns;
		p->nr = sr->nr;
		p->n = sc_regions(data, size, p->mem, p->data);
		return 0;
	}
	if (size >= sizeof(struct uk_sc_rec) && h->type == UK_REC_SC) {
		const struct uk_sc_rec *sr = data;
		struct utrace_record r = { .sz = sizeof(r),
					   .type = sr->dur_ns == ~0ULL ? UTRACE_REC_SYSCALL_ENTER :
									 UTRACE_REC_SYSCALL_EXIT };
		struct sc_pending **pp = &k->sc_pend[sr->tid % ARRAY_SIZE(k->sc_pend)], *p;
		struct utrace_mem mem[2 * UK_SC_NCAP];
		char bytes[UK_SC_NCAP][UK_SC_CAP_MAX];
		unsigned int n = 0;

		for (; (p = *pp); pp = &p->next)
			if (p->tid == sr->tid)
				break;
		if (p) {
			*pp = p->next;
			if (p->ts_ns == sr->ts_ns && p->nr == sr->nr) { /* this call's entry */
				memcpy(mem, p->mem, p->n * sizeof(mem[0]));
				n = p->n;
			} else {
				free(p);
				p = NULL;
			}
		}
		n += sc_regions(data, size, mem + n, bytes);
		r.nr_mem = n;
		r.mem = n ? mem : NULL;

		r.pid = (pid_t)sr->tgid;
		r.tid = (pid_t)sr->tid;
		r.ts_ns = sr->ts_ns;
		r.sysno = sr->nr;
		r.nargs = 6;
		memcpy(r.args, sr->args, sizeof(r.args));
		r.retval = (uint64_t)sr->ret;
		r.dur_ns = sr->dur_ns == ~0ULL ? 0 : sr->dur_ns;
		uprobes_queue_record(k->up, &r); /* (copies the regions) */
		free(p);
		return 0;
	}
	if (size >= sizeof(struct uk_copy_rec) - UK_COPY_MAX && h->type == UK_REC_COPY) {
		const struct uk_copy_rec *cr = data;
		struct copy_pending **pp = &k->copy_pend[cr->tid % ARRAY_SIZE(k->copy_pend)], *p;
		size_t len = cr->len;

		if (len > UK_COPY_MAX || sizeof(*cr) - UK_COPY_MAX + len > size)
			return 0;
		for (; (p = *pp); pp = &p->next) /* an older one: its entry was lost */
			if (p->tid == cr->tid)
				break;
		if (!p) {
			p = calloc(1, sizeof(*p));
			if (!p)
				return 0;
			*pp = p;
		}
		free(p->data);
		p->data = len ? malloc(len) : NULL;
		p->tid = cr->tid;
		memcpy(p->regs, cr->regs, sizeof(p->regs));
		p->len = p->data ? (uint32_t)len : 0;
		if (p->data)
			memcpy(p->data, cr->data, len);
		return 0;
	}
	if (size < sizeof(*h) || h->inst >= UK_MAX_INST || !(in = k->inst[h->inst]) || !in->p)
		return 0; /* an instance already gone (cannot happen: drained before) */
	nst = h->nr_stack < UK_MAX_STACK ? h->nr_stack : UK_MAX_STACK;
	q = calloc(1, sizeof(*q) + nst * sizeof(uint64_t));
	if (!q) {
		k->up->rq_lost++;
		return 0;
	}
	q->r.sz = sizeof(q->r);
	q->r.type = h->type == UK_REC_ENTRY ? UTRACE_REC_ENTRY : UTRACE_REC_RETURN;
	q->r.pid = (pid_t)h->tgid;
	q->r.tid = (pid_t)h->tid;
	memcpy(q->comm, h->comm, sizeof(h->comm));
	q->comm[sizeof(q->comm) - 1] = 0;
	q->r.comm = q->comm;
	q->r.ts_ns = h->ts_ns;
	q->r.probe = in->p;
	q->r.addr = in->pt->addr;
	q->name = in->pt->name ? strdup(in->pt->name) : NULL;
	q->r.name = q->name;
	q->symbol = in->pt->symbol ? strdup(in->pt->symbol) : NULL;
	q->r.symbol = q->symbol;
	q->object = in->pt->object ? strdup(in->pt->object) : NULL;
	q->r.object = q->object;
	q->r.offset = in->pt->info.offset;
	if (q->r.type == UTRACE_REC_ENTRY) {
		q->r.nargs = in->po.nargs;
		memcpy(q->r.args, h->args, sizeof(q->r.args));
	} else {
		q->r.retval = h->retval;
		q->r.dur_ns = h->dur_ns;
	}
	/* the slots are in argument order, the return value's last (uprobe.bpf.c copy_str()) */
	for (i = 0; i < UK_NSTR; i++) {
		bool used = q->r.type == UTRACE_REC_ENTRY ?
				    i < 6 && i < q->r.nargs && (in->po.str_args & (1U << i)) :
				    i == 6 && (in->po.str_args & (1U << 6));
		const char *s;

		if (!used)
			continue;
		if (slot >= h->nstr || sizeof(*h) + (slot + 1) * (size_t)UK_STR_SLOT > size)
			break;
		s = slots + (size_t)slot * UK_STR_SLOT;
		slot++;
		if (i < 6) {
			q->r.str_flags[i] = h->str_flags[i];
			if (h->str_flags[i] & UK_STR_FAULT)
				continue;
			q->strs[i] = str_dup(s, h->str_len[i]);
			q->r.str[i] = q->strs[i];
			q->r.str_len[i] = h->str_len[i];
		} else {
			q->r.ret_str_flags = h->str_flags[6];
			if (h->str_flags[6] & UK_STR_FAULT)
				continue;
			q->strs[6] = str_dup(s, h->str_len[6]);
			q->r.ret_str = q->strs[6];
			q->r.ret_str_len = h->str_len[6];
		}
	}
	if (nst) {
		uint64_t *st = (uint64_t *)(q + 1);
		unsigned int skip = 0;

		/*
		 * bpf_get_stack() starts at the probed instruction itself; the
		 * record's stack is the callers' (probe.h), as on the other
		 * backends: the hit's own pc goes.
		 */
		if (h->stack[0] == in->pt->addr)
			skip = 1;
		memcpy(st, h->stack + skip, (nst - skip) * sizeof(uint64_t));
		q->r.stack = st;
		q->r.nr_stack = nst - skip;
	}
	if (q->r.type == UTRACE_REC_ENTRY && (in->p->opts.actions & UTRACE_ACT_STACK)) {
		/* -k: this entry's copy came just before it (uprobe.bpf.c emit_copy()) */
		struct copy_pending **pp = &k->copy_pend[h->tid % ARRAY_SIZE(k->copy_pend)], *p;

		for (; (p = *pp); pp = &p->next)
			if (p->tid == h->tid)
				break;
		if (p) {
			*pp = p->next;
			memcpy(q->regs, p->regs, sizeof(q->regs));
			q->r.regs = q->regs;
			q->r.nr_regs = UTRACE_REC_NR_REGS;
			q->r.stack_sp = p->regs[1];
			q->stack_data = p->data; /* the queue entry's now */
			q->r.stack_data = p->data;
			q->r.stack_len = p->len;
			free(p);
		}
	}
	uprobes_rec_queue(k->up, q);
	return 0;
}

/* Move what the ring buffer holds into the registry's queue; count kernel-side drops. */
static void drain(struct kernel_up *k)
{
	uint64_t *v = (uint64_t *)k->percpu, sum = 0;
	uint32_t zero = 0;
	int i;

	ring_buffer__consume(k->rb);
	if (bpf_map__lookup_elem(k->skel->maps.lost, &zero, sizeof(zero), v,
				 (size_t)k->ncpu * sizeof(uint64_t), 0))
		return;
	for (i = 0; i < k->ncpu; i++)
		sum += v[i];
	if (sum > k->lost_seen) {
		k->up->rq_lost += sum - k->lost_seen;
		k->lost_seen = sum;
	}
}

/*
 * ->poll: records come from the ring buffer; while waiting, the session
 * runs in slices (its processes stop at exec, clone and exit events and
 * wait for it), and the ring is drained after each.
 */
static int kernel_poll(struct utrace_uprobes *up, utrace_record_fn_t fn, void *ctx, int timeout_ms)
{
	struct kernel_up *k = up->priv;
	uint64_t deadline =
		uprobes_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000;
	int n;

	drain(k);
	n = uprobes_rq_deliver(up, fn, ctx);
	while (!n && timeout_ms) {
		int slice = 20, r;

		if (timeout_ms > 0) {
			uint64_t now = uprobes_now_ns();

			if (now >= deadline)
				break;
			if ((deadline - now) / 1000000 < (uint64_t)slice)
				slice = (int)((deadline - now) / 1000000) + 1;
		}
		r = up->s ? utrace_session__run(up->s, slice) : UTRACE_RUN_DONE;
		if (r < 0)
			return r;
		if (r == UTRACE_RUN_DONE || r == UTRACE_RUN_INTERRUPTED) {
			/* nothing runs that could write more: what is there, then stop */
			drain(k);
			return uprobes_rq_deliver(up, fn, ctx);
		}
		drain(k);
		n = uprobes_rq_deliver(up, fn, ctx);
	}
	return n;
}

/* ------------------------------------------------------------------------ */
/* Instances                                                                 */
/* ------------------------------------------------------------------------ */

static int inst_id_get(struct kernel_up *k, uint32_t *ret)
{
	unsigned int i;

	/* round robin: a number is reused as late as possible */
	for (i = 0; i < UK_MAX_INST; i++) {
		uint32_t id = (k->next_id + i) % UK_MAX_INST;

		if (!k->inst[id] && !k->reserved[id]) {
			k->next_id = id + 1;
			*ret = id;
			return 0;
		}
	}
	return -ENOSPC;
}

/* @m loses an instance; the last one closes it and frees its numbers. */
static void multi_put(struct kernel_up *k, struct kmulti *m)
{
	unsigned int i;

	if (!m || --m->refs)
		return;
	close(m->fd);
	for (i = 0; i < m->nr; i++)
		k->reserved[m->ids[i]] = false;
	free(m->ids);
	free(m);
}

/* bpf(BPF_LINK_CREATE) of a uprobe_multi link, as the 6.6+ uapi lays it out. */
static int uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offsets,
			     const uint64_t *cookies, uint32_t cnt, bool ret, pid_t pid)
{
	struct {
		uint32_t prog_fd, target_fd, attach_type, flags;
		uint64_t path, offsets, ref_ctr_offsets, cookies;
		uint32_t cnt, flags2, pid, pad;
	} a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)prog_fd;
	a.attach_type = UK_ATTACH_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offsets;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.cnt = cnt;
	a.flags2 = ret ? UK_F_UPROBE_MULTI_RETURN : 0;
	a.pid = (uint32_t)pid; /* 0: every process (system-wide) */
	fd = syscall(SYS_bpf, BPF_LINK_CREATE, &a, offsetof(typeof(a), pad));
	return fd < 0 ? -errno : (int)fd;
}

static struct bpf_link *attach_one(struct kernel_up *k, struct uprobes_proc *pp,
				   struct probe_point *pt, uint32_t id, bool ret, int *err)
{
	struct kpoint *kp = pt->priv;
	LIBBPF_OPTS(bpf_uprobe_opts, o, .retprobe = ret, .bpf_cookie = id);
	struct bpf_link *l;

	/* pid -1: system-wide (the layer's pseudo-process 0, utrace_uprobes_opts.all_exec) */
	l = bpf_program__attach_uprobe_opts(ret ? k->skel->progs.uk_return :
						  k->skel->progs.uk_entry,
					    pp->pid ? pp->pid : -1, pt->object, kp->file_off, &o);
	if (!l)
		*err = -errno;
	return l;
}

/* Tear down @in: links first (no more hits), then its records and figures. */
static void inst_free(struct kernel_up *k, struct kinst *in)
{
	struct uk_conf zero = { 0 };
	struct utrace_probe_counts c = { 0 };

	bpf_link__destroy(in->entry);
	bpf_link__destroy(in->ret);
	if (in->m_entry || in->m_ret) {
		/* the link lives on for the others: this number is not reused before it goes */
		k->reserved[in->id] = true;
		multi_put(k, in->m_entry);
		multi_put(k, in->m_ret);
	}
	drain(k);
	if (!in->p) /* the dynamic linker's watch: no figures */
		goto out;
	/*
	 * (The probe keeps what this point measured: the registry read it
	 * through ->point_counts when the probe left the point, before this.)
	 */
	(void)c;
out:
	bpf_map__update_elem(k->skel->maps.conf, &in->id, sizeof(in->id), &zero, sizeof(zero),
			     BPF_ANY);
	k->inst[in->id] = NULL;
	free(in);
}

/* @p's settings at @pt (utrace_probe_opts.point_opts), the probe's own if not found. */
static const struct utrace_point_opts *point_opts_of(const struct probe_point *pt,
						     const struct utrace_probe *p)
{
	static struct utrace_point_opts own;
	unsigned int i;

	for (i = 0; i < pt->nr_probes; i++)
		if (pt->probes[i] == p)
			return &pt->popts[i];
	own.nargs = p->opts.nargs;
	own.str_args = p->opts.str_args;
	own.err_kind = p->opts.err_kind;
	return &own;
}

/*
 * The kernel's uretprobe trampoline has no unwind info: a C++ exception, a
 * pthread_exit() or a cancellation unwinding through a return-probed frame
 * ends the process (std::terminate(), cleanup handlers skipped), as with
 * bpftrace's uretprobes; the agent and ptrace backends guard the unwinder
 * instead. Said once per process whose unwinder is loaded (libgcc_s, the
 * C++ library), at its first return probe.
 */
static bool needs_unwinder(struct uprobes_proc *pp, struct probe_point *pt)
{
	struct utrace_elf *elf = pp->img ? utrace_image__elf(pp->img, pt->match.object) : NULL;
	struct elf_dyninfo di;
	bool yes = false;
	size_t i;

	if (!elf || elf_dyninfo_get(elf, &di))
		return false;
	for (i = 0; i < di.nr_needed && !yes; i++)
		yes = strstr(di.needed[i], "libstdc++") || strstr(di.needed[i], "libgcc_s");
	elf_dyninfo_clear(&di);
	return yes;
}

static void unwind_warn(struct kernel_up *k, struct uprobes_proc *pp, struct probe_point *pt)
{
	char path[64], line[4096];
	pid_t pid = pp->pid;
	bool unwinder;
	FILE *f;
	int i;

	if (pid <= 0)
		return;
	for (i = 0; i < k->nr_unwind_warned; i++)
		if (k->unwind_warned[i] == pid)
			return;
	/* the probed object needs it (armed at exec: nothing else is mapped yet), or it is loaded */
	unwinder = needs_unwinder(pp, pt);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = unwinder ? NULL : fopen(path, "re");
	while (f && !unwinder && fgets(line, sizeof(line), f))
		unwinder = strstr(line, "/libgcc_s.so") || strstr(line, "/libstdc++.so");
	if (f)
		fclose(f);
	if (!unwinder)
		return; /* (maybe later: said at a later probe) */
	if (k->nr_unwind_warned < (int)ARRAY_SIZE(k->unwind_warned))
		k->unwind_warned[k->nr_unwind_warned++] = pid;
	pr_warn("process %d: a C++ exception, pthread_exit() or a cancellation through a "
		"frame with a kernel return probe ends the process (the kernel's "
		"uretprobe trampoline has no unwind info); -b agent and -b ptrace "
		"guard the unwinder\n",
		(int)pid);
}

static int inst_new(struct kernel_up *k, struct uprobes_proc *pp, struct probe_point *pt,
		    struct utrace_probe *p, struct kinst **ret)
{
	const struct utrace_probe_opts *o = &p->opts;
	bool want_ret = uprobes_probe_has_return(p) && uprobes_point_wants_return(pt);
	const struct utrace_point_opts *po = point_opts_of(pt, p);
	struct uk_conf conf = {
		.tgid = (uint32_t)pp->pid,
		.actions = o->actions & (UK_ACT_COUNT | UK_ACT_HIST | UK_ACT_RECORD | UK_ACT_STACK),
		.err_kind = (uint32_t)po->err_kind,
		.nargs = po->nargs,
		.str_args = po->str_args,
		.str_max = o->str_max ? o->str_max : 32,
	};
	struct kinst *in;
	uint32_t id;
	int err = inst_id_get(k, &id);

	if (err)
		return err;
	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->p = p;
	in->pt = pt;
	in->po = *po;
	in->id = id;
	if (want_ret)
		conf.actions |= UK_RETURN;
	if (!pp->pid)
		conf.actions |= UK_ANYPROC;
	err = counts_reset(k, id);
	if (!err)
		err = bpf_map__update_elem(k->skel->maps.conf, &id, sizeof(id), &conf, sizeof(conf),
					   BPF_ANY);
	if (err) {
		free(in);
		return err;
	}
	k->inst[id] = in;
	in->want_ret = want_ret;
	if (want_ret)
		unwind_warn(k, pp, pt);
	in->want_entry = uprobes_probe_has_entry(p);
	if (k->multi) {
		in->pending = true; /* its links come with the batch's (kernel_commit()) */
		*ret = in;
		return 0;
	}
	/* the return half first: no entry is timed whose return is not watched */
	if (want_ret)
		in->ret = attach_one(k, pp, pt, id, true, &err);
	if (!err && in->want_entry)
		in->entry = attach_one(k, pp, pt, id, false, &err);
	if (err) {
		inst_free(k, in);
		return err;
	}
	*ret = in;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Operations                                                                */
/* ------------------------------------------------------------------------ */

static int kernel_init(struct utrace_uprobes *up)
{
	struct kernel_up *k;
	const char *miss = missing_caps(), *nomulti_why = NULL;
	struct stat st;
	bool multi;
	int err;

	if (*miss) {
		snprintf(up->init_why, sizeof(up->init_why),
			 "needs root or CAP_BPF and CAP_PERFMON: %s missing", miss);
		return -EPERM;
	}
	libbpf_set_print(libbpf_log);
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->up = up;
	k->ncpu = libbpf_num_possible_cpus();
	if (k->ncpu <= 0) {
		free(k);
		return -EINVAL;
	}
	k->percpu = calloc((size_t)k->ncpu, sizeof(*k->percpu));
	if (!k->percpu) {
		err = -ENOMEM;
		goto fail;
	}
	/*
	 * uprobe_multi programs where the kernel takes them (6.6+): loaded
	 * with their attach type, which an older kernel refuses, and the
	 * object again without them then. UTRACE_KERNEL_NO_MULTI=1: one link
	 * per probe point everywhere (tests, comparisons).
	 */
	multi = !getenv("UTRACE_KERNEL_NO_MULTI") || strcmp(getenv("UTRACE_KERNEL_NO_MULTI"), "1");
	for (;;) {
		k->skel = uprobe_bpf__open();
		if (!k->skel) {
			err = -errno;
			snprintf(up->init_why, sizeof(up->init_why),
				 "the BPF object does not open: %s", strerror(-err));
			goto fail;
		}
		/* pids as the tracer sees them, also from inside a pid namespace */
		if (stat("/proc/self/ns/pid", &st) == 0 && st.st_ino != UK_INIT_PIDNS_INO) {
			k->in_pidns = true;
			k->skel->rodata->ns_dev = st.st_dev;
			k->skel->rodata->ns_ino = st.st_ino;
		}
		bpf_map__set_max_entries(k->skel->maps.events, UK_RING_BYTES);
		if (multi) {
			bpf_program__set_expected_attach_type(k->skel->progs.uk_entry_multi,
							      UK_ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(k->skel->progs.uk_return_multi,
							      UK_ATTACH_UPROBE_MULTI);
		} else {
			bpf_program__set_autoload(k->skel->progs.uk_entry_multi, false);
			bpf_program__set_autoload(k->skel->progs.uk_return_multi, false);
		}
		err = uprobe_bpf__load(k->skel);
		if (!err || !multi)
			break;
		pr_debug("kernel backend: no uprobe_multi programs (%s): one link per point\n",
			 strerror(-err));
		uprobe_bpf__destroy(k->skel);
		k->skel = NULL;
		multi = false;
		nomulti_why = "the kernel has no uprobe_multi links (6.6+)";
	}
	k->multi = multi;
	if (multi)
		snprintf(k->how, sizeof(k->how),
			 "uprobe_multi links (one per object, process and half)");
	else
		snprintf(k->how, sizeof(k->how), "one uprobe link per probe point (%s)",
			 nomulti_why ? nomulti_why : "UTRACE_KERNEL_NO_MULTI=1");
	if (err) {
		snprintf(
			up->init_why, sizeof(up->init_why),
			"the BPF programs do not load: %s (kernel without BPF uprobes or ring buffers?)",
			strerror(-err));
		goto fail;
	}
	k->rb = ring_buffer__new(bpf_map__fd(k->skel->maps.events), on_sample, k, NULL);
	if (!k->rb) {
		err = -errno;
		snprintf(up->init_why, sizeof(up->init_why), "no BPF ring buffer: %s",
			 strerror(-err));
		goto fail;
	}
	up->priv = k;
	return 0;
fail:
	uprobe_bpf__destroy(k->skel);
	free(k->percpu);
	free(k);
	return err ? err : -EINVAL;
}

static void kernel_fini(struct utrace_uprobes *up)
{
	struct kernel_up *k = up->priv;
	unsigned int i;

	if (!k)
		return;
	for (i = 0; i < UK_MAX_INST; i++)
		if (k->inst[i]) /* (points are freed before: none is left) */
			inst_free(k, k->inst[i]);
	for (i = 0; i < ARRAY_SIZE(k->sc_links); i++)
		bpf_link__destroy(k->sc_links[i]);
	for (i = 0; i < ARRAY_SIZE(k->sc_pend); i++) {
		struct sc_pending *p;

		while ((p = k->sc_pend[i])) {
			k->sc_pend[i] = p->next;
			free(p);
		}
	}
	for (i = 0; i < ARRAY_SIZE(k->copy_pend); i++) {
		struct copy_pending *p;

		while ((p = k->copy_pend[i])) {
			k->copy_pend[i] = p->next;
			free(p->data);
			free(p);
		}
	}
	free(k->sc_percpu);
	ring_buffer__free(k->rb);
	uprobe_bpf__destroy(k->skel);
	free(k->percpu);
	free(k);
	up->priv = NULL;
}

/* The file offset of @pt's address in its object (ELF program headers). */
static int point_file_offset(struct uprobes_proc *pp, struct probe_point *pt, uint64_t *off)
{
	struct utrace_elf *elf = pp->img ? utrace_image__elf(pp->img, pt->match.object) : NULL;

	if (!elf)
		return -ENOENT;
	/* the planner may have moved the point past an endbr64: same shift in the file */
	return utrace_elf__file_offset(elf, pt->match.file_addr + (pt->addr - pt->match.addr), off);
}

/*
 * ->point_update: one instance per live probe at @pt (added when a probe
 * comes, torn down when it goes). Called by the registry after every
 * change of pt->probes, and by kernel_arm().
 */
static int kernel_point_update(struct uprobes_proc *pp, struct probe_point *pt)
{
	struct kernel_up *k = pp->up->priv;
	struct kpoint *kp = pt->priv;
	unsigned int i, j;
	int err = 0;

	if (!k || !kp || !pt->armed)
		return 0;
	/* instances whose probe left (or died) go */
	for (i = 0; i < kp->nr;) {
		for (j = 0;
		     j < pt->nr_probes && (pt->probes[j] != kp->inst[i]->p || pt->probes[j]->dead);
		     j++)
			;
		if (j == pt->nr_probes) {
			inst_free(k, kp->inst[i]);
			kp->inst[i] = kp->inst[--kp->nr];
			continue;
		}
		i++;
	}
	/* probes without an instance get one */
	for (j = 0; j < pt->nr_probes; j++) {
		struct utrace_probe *p = pt->probes[j];
		struct kinst *in, **n;

		if (p->dead)
			continue;
		for (i = 0; i < kp->nr && kp->inst[i]->p != p; i++)
			;
		if (i < kp->nr)
			continue;
		n = realloc(kp->inst, (kp->nr + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		kp->inst = n;
		err = inst_new(k, pp, pt, p, &in);
		if (err)
			return err;
		kp->inst[kp->nr++] = in;
	}
	return 0;
}

/*
 * The pending instances of @pp's points in object @object, one half: one
 * uprobe_multi link for them all. Return: 0, or the link's error (the
 * caller then links them one by one).
 */
static int multi_attach(struct kernel_up *k, struct uprobes_proc *pp, const char *object, bool ret,
			struct kinst **v, unsigned int nr)
{
	struct kmulti *m = calloc(1, sizeof(*m));
	uint64_t *offs = calloc(nr, sizeof(*offs)), *cookies = calloc(nr, sizeof(*cookies));
	struct bpf_program *prog =
		ret ? k->skel->progs.uk_return_multi : k->skel->progs.uk_entry_multi;
	unsigned int i;
	int fd = -ENOMEM;

	if (m)
		m->ids = calloc(nr, sizeof(*m->ids));
	if (m && m->ids && offs && cookies) {
		for (i = 0; i < nr; i++) {
			offs[i] = ((struct kpoint *)v[i]->pt->priv)->file_off;
			cookies[i] = v[i]->id;
			m->ids[i] = v[i]->id;
		}
		fd = uprobe_multi_link(bpf_program__fd(prog), object, offs, cookies, nr, ret,
				       pp->pid);
	}
	free(offs);
	free(cookies);
	if (fd < 0) {
		if (m)
			free(m->ids);
		free(m);
		return fd;
	}
	m->fd = fd;
	m->nr = m->refs = nr;
	for (i = 0; i < nr; i++) {
		if (ret)
			v[i]->m_ret = m;
		else
			v[i]->m_entry = m;
	}
	return 0;
}

/*
 * One link for @v's @n instances, or, where the kernel refuses the batch
 * (one site it cannot probe fails the whole link: ENOTSUPP for an
 * instruction its uprobes do not emulate), for each half of it, down to
 * one link per instance, the refused one said. Return: 0 or the first error.
 */
static int multi_split(struct kernel_up *k, struct uprobes_proc *pp, const char *obj, bool ret,
		       struct kinst **v, unsigned int n)
{
	struct bpf_link *l;
	int err = 0, e2;

	if (!n || !multi_attach(k, pp, obj, ret, v, n))
		return 0;
	if (n > 1) {
		err = multi_split(k, pp, obj, ret, v, n / 2);
		e2 = multi_split(k, pp, obj, ret, v + n / 2, n - n / 2);
		return err ? err : e2;
	}
	l = attach_one(k, pp, v[0]->pt, v[0]->id, ret, &err);
	if (ret)
		v[0]->ret = l;
	else
		v[0]->entry = l;
	if (err) {
		char ebuf[128];

		utrace_strerror(err, ebuf, sizeof(ebuf));
		pr_warn("probe '%s': cannot probe %s: %s\n", v[0]->p->name, v[0]->pt->name,
			err == -524 ? "the kernel's uprobes refuse this instruction (ENOTSUPP)" :
				      ebuf);
	}
	return err;
}

/*
 * ->commit, at the end of a batch of arm calls: the pending instances of
 * @pp get their links, uprobe_multi ones by object, the return halves
 * first (no entry is timed whose return is not watched); where a
 * uprobe_multi link fails, one link per instance.
 */
static int kernel_commit(struct uprobes_proc *pp)
{
	struct kernel_up *k = pp->up->priv;
	struct kinst **v;
	unsigned int nr = 0, i, j, half;
	int first_err = 0, err;

	uint64_t t0 = uprobes_now_ns();
	unsigned int linked = 0;

	if (!k || !k->multi)
		return 0;
	v = calloc(UK_MAX_INST, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (half = 0; half < 2; half++) { /* 0: returns, 1: entries */
		bool ret = half == 0;

		nr = 0;
		for (i = 0; i < UK_MAX_INST; i++) {
			struct kinst *in = k->inst[i];

			if (in && in->pending && in->p && in->pt->proc == pp &&
			    (ret ? in->want_ret : in->want_entry))
				v[nr++] = in;
		}
		/* by object: each run of one object's instances is one link */
		for (i = 0; i < nr;) {
			const char *obj = v[i]->pt->object;
			unsigned int n = 0;
			struct kinst *t;

			for (j = i; j < nr; j++) {
				if (!strcmp(v[j]->pt->object, obj)) {
					t = v[i + n];
					v[i + n] = v[j];
					v[j] = t;
					n++;
				}
			}
			err = multi_split(k, pp, obj, ret, v + i, n);
			linked += n;
			if (err && !first_err)
				first_err = err;
			i += n;
		}
	}
	for (i = 0; i < UK_MAX_INST; i++)
		if (k->inst[i] && k->inst[i]->pt && k->inst[i]->pt->proc == pp)
			k->inst[i]->pending = false;
	free(v);
	if (linked)
		pr_debug("process %d: %u probe halves linked in %.1f ms\n", pp->pid, linked,
			 (uprobes_now_ns() - t0) / 1e6);
	return first_err;
}

/*
 * The kernel's x86 uprobes refuse an instruction with a LOCK or an ES, CS,
 * SS or DS segment prefix (arch/x86/kernel/uprobes.c is_prefix_bad()):
 * said here, before a uprobe_multi link of a whole library fails for one
 * such site (pthread_spin_lock starts with lock decl).
 */
static bool bad_prefix(const struct probe_point *pt)
{
	unsigned int i;

	for (i = 0; i < pt->insn_len && i < UPROBES_INSN_MAX; i++) {
		uint8_t b = pt->orig[i];

		if (b == 0xf0 || b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e)
			return true;
		/* the other legacy prefixes and REX come before the opcode */
		if (!(b == 0x64 || b == 0x65 || b == 0x66 || b == 0x67 || b == 0xf2 || b == 0xf3 ||
		      (b >= 0x40 && b <= 0x4f)))
			return false;
	}
	return false;
}

static void kernel_armed_all(struct uprobes_proc *pp)
{
	kernel_commit(pp);
}

/* ->arm: the point's place in the file; its links come with its probes (->point_update). */
static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The processes that have utrace's agent mapped now (at most 64), for 200 ms. */
static void agent_scan(struct kernel_up *k)
{
	DIR *d;
	struct dirent *e;

	if (k->agent_scan_ms && mono_ms() - k->agent_scan_ms < 200)
		return;
	k->agent_scan_ms = mono_ms();
	k->nr_agent_pids = 0;
	d = opendir("/proc");
	if (!d)
		return;
	while ((e = readdir(d)) && k->nr_agent_pids < (int)ARRAY_SIZE(k->agent_pids)) {
		char path[64], line[4096];
		long pid = strtol(e->d_name, NULL, 10);
		FILE *f;

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (strstr(line, "/libutrace-agent")) {
				k->agent_pids[k->nr_agent_pids++] = (pid_t)pid;
				break;
			}
		fclose(f);
	}
	closedir(d);
}

/* @pid's address of @object's file offset @off in an executable mapping, or 0. */
static uint64_t file_vaddr(pid_t pid, const char *object, uint64_t off)
{
	char path[64], line[4096];
	uint64_t addr = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!addr && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, moff;
		char perm[8];
		int n = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perm, &moff, &n) < 4 ||
		    !n || perm[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = 0;
		if (strcmp(line + n, object) || off < moff || off - moff >= hi - lo)
			continue;
		addr = lo + (off - moff);
	}
	fclose(f);
	return addr;
}

/*
 * agent_jmp_at - a process this uprobe would reach where utrace's agent
 * has patched @pt with a jmp (another session: -b agent, or a library
 * user), or 0. The kernel would write its int3 over the jmp's first byte,
 * run the file's first instruction out of line and resume inside the jmp:
 * the process dies at its next call (the agent gives such a site back
 * when it sees it, but a hot function is called first). Per process: its
 * own bytes; system-wide: every process with the agent mapped.
 */
static pid_t agent_jmp_at(struct uprobes_proc *pp, struct probe_point *pt, uint64_t file_off)
{
	struct kernel_up *k = pp->up->priv;
	uint8_t b;
	int i;

	if (pt->orig[0] == 0xe9)
		return 0; /* the file's own jmp */
	if (pp->pid)
		return utrace_mem__read(pp->pid, pt->addr, &b, 1) == 1 && b == 0xe9 ? pp->pid : 0;
	if (!k || !pt->object)
		return 0;
	agent_scan(k);
	for (i = 0; i < k->nr_agent_pids; i++) {
		uint64_t va = file_vaddr(k->agent_pids[i], pt->object, file_off);

		if (va && utrace_mem__read(k->agent_pids[i], va, &b, 1) == 1 && b == 0xe9)
			return k->agent_pids[i];
	}
	return 0;
}

static int kernel_arm(struct uprobes_proc *pp, struct probe_point *pt)
{
	pid_t agent;
	struct kpoint *kp = pt->priv;
	int err;

	if (bad_prefix(pt)) {
		pr_warn("%s: the kernel's uprobes refuse an instruction with a LOCK or segment "
			"prefix\n",
			pt->name ? pt->name : "?");
		return -UTRACE_ERRNO__NOT_PATCHABLE;
	}

	if (!kp) {
		kp = calloc(1, sizeof(*kp));
		if (!kp)
			return -ENOMEM;
		pt->priv = kp;
	}
	err = point_file_offset(pp, pt, &kp->file_off);
	if (err)
		return err == -ENOENT ? -EFAULT : err;
	agent = agent_jmp_at(pp, pt, kp->file_off);
	if (agent) {
		snprintf(pp->up->arm_why, sizeof(pp->up->arm_why),
			 "utrace's agent has patched it with a jmp in process %d: no kernel uprobe "
			 "there (it would kill that process at its next call)",
			 (int)agent);
		return -UTRACE_ERRNO__PROBE_BUSY;
	}
	pt->armed = true;
	return kernel_point_update(pp, pt);
}

static int kernel_disarm(struct uprobes_proc *pp, struct probe_point *pt, bool alive)
{
	struct kernel_up *k = pp->up->priv;
	struct kpoint *kp = pt->priv;

	(void)alive; /* links are the kernel's: nothing is written in the target */
	while (k && kp && kp->nr)
		inst_free(k, kp->inst[--kp->nr]);
	pt->armed = false;
	return 0;
}

static void kernel_point_free(struct probe_point *pt)
{
	struct kpoint *kp = pt->priv;

	if (kp) {
		kernel_disarm(pt->proc, pt, false);
		free(kp->inst);
		free(kp);
	}
	pt->priv = NULL;
}

/* ------------------------------------------------------------------------ */
/* System calls                                                              */
/* ------------------------------------------------------------------------ */

/*
 * The raw_syscalls tracepoints (uk_sys_enter/uk_sys_exit), the exec that
 * starts a launched command (uk_sc_exec) and, for -F, the fork that adds
 * a child (uk_sc_fork): attached once, for every counted process.
 */
static int sc_attach(struct kernel_up *k)
{
	struct bpf_program *progs[4] = { k->skel->progs.uk_sys_enter, k->skel->progs.uk_sys_exit,
					 k->skel->progs.uk_sc_exec, k->skel->progs.uk_sc_fork };
	unsigned int i;
	int err;

	k->sc_percpu = calloc((size_t)k->ncpu, sizeof(*k->sc_percpu));
	if (!k->sc_percpu)
		return -ENOMEM;
	/* what the records copy of each syscall's memory: read by the programs from their start */
	for (i = 0; i < UK_SC_MAX; i++) {
		if (!uk_sc_table[i].cap[0].how)
			continue;
		err = bpf_map__update_elem(k->skel->maps.sc_caps, &i, sizeof(i), &uk_sc_table[i],
					   sizeof(uk_sc_table[i]), BPF_ANY);
		if (err) {
			free(k->sc_percpu);
			k->sc_percpu = NULL;
			return err;
		}
	}
	for (i = 0; i < ARRAY_SIZE(progs); i++) {
		k->sc_links[i] = bpf_program__attach(progs[i]);
		if (!k->sc_links[i]) {
			err = -errno;
			pr_warn("system calls in the kernel: cannot attach %s: %s\n",
				bpf_program__name(progs[i]), strerror(-err));
			while (i > 0) {
				bpf_link__destroy(k->sc_links[--i]);
				k->sc_links[i] = NULL;
			}
			free(k->sc_percpu);
			k->sc_percpu = NULL;
			return err ? err : -EINVAL;
		}
	}
	k->sc_on = true;
	return 0;
}

static const char *kernel_how(struct utrace_uprobes *up)
{
	struct kernel_up *k = up->priv;

	return k ? k->how : "";
}

/*
 * The byte offsets of pid and tgid in the running kernel's struct
 * task_struct, from its BTF (/sys/kernel/btf/vmlinux): what uk_sc_fork()
 * reads in a new task. Parsed here, only for -F (CO-RE in the object would
 * parse it at every start-up).
 */
static int task_offsets(uint32_t *pid_off, uint32_t *tgid_off)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	const struct btf_member *m;
	int id, i, found = 0;

	if (!btf)
		return -errno ? -errno : -ENOENT;
	id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	for (i = 0, m = t ? btf_members(t) : NULL; t && i < btf_vlen(t); i++, m++) {
		const char *name = btf__name_by_offset(btf, m->name_off);
		uint32_t bits = btf_member_bit_offset(t, i);

		if (name && !strcmp(name, "pid")) {
			*pid_off = bits / 8;
			found |= 1;
		} else if (name && !strcmp(name, "tgid")) {
			*tgid_off = bits / 8;
			found |= 2;
		}
	}
	btf__free(btf);
	if (found != 3) {
		pr_warn("system calls in the kernel: no pid and tgid in the kernel's task_struct "
			"(BTF): -F cannot follow forks\n");
		return -EOPNOTSUPP;
	}
	return 0;
}

static int kernel_count_syscalls(struct utrace_uprobes *up, pid_t pid, unsigned int flags)
{
	struct kernel_up *k = up->priv;
	uint32_t tgid = (uint32_t)pid, v = flags & UTRACE_SC_AT_EXEC ? UK_SC_AT_EXEC : UK_SC_TRACED;
	uint32_t zero = 0, conf = 0;
	int err;

	if (!k)
		return -EINVAL;
	if (k->in_pidns) {
		pr_warn("system calls in the kernel: the tracer runs in a pid namespace, the "
			"tracepoints see the kernel's pids\n");
		return -EOPNOTSUPP;
	}
	if (flags & UTRACE_SC_RECORD) {
		uint32_t cur = 0, key = 3, str_max = up->sc_str_max ? up->sc_str_max : 32;

		if (str_max > UK_SC_CAP_MAX - 1)
			str_max = UK_SC_CAP_MAX - 1;
		err = bpf_map__update_elem(k->skel->maps.sc_conf, &key, sizeof(key), &str_max,
					   sizeof(str_max), BPF_ANY);
		if (err)
			return err;

		bpf_map__lookup_elem(k->skel->maps.sc_conf, &zero, sizeof(zero), &cur, sizeof(cur),
				     0);
		cur |= UK_SC_RECORD;
		err = bpf_map__update_elem(k->skel->maps.sc_conf, &zero, sizeof(zero), &cur,
					   sizeof(cur), BPF_ANY);
		if (err)
			return err;
	}
	if (flags & UTRACE_SC_FOLLOW) {
		uint32_t off[2], key;

		err = task_offsets(&off[0], &off[1]);
		if (err)
			return err;
		for (key = 1; key <= 2 && !err; key++)
			err = bpf_map__update_elem(k->skel->maps.sc_conf, &key, sizeof(key),
						   &off[key - 1], sizeof(off[0]), BPF_ANY);
		conf = UK_SC_FOLLOW | (flags & UTRACE_SC_RECORD ? UK_SC_RECORD : 0);
		if (!err)
			err = bpf_map__update_elem(k->skel->maps.sc_conf, &zero, sizeof(zero),
						   &conf, sizeof(conf), BPF_ANY);
		if (err)
			return err;
	}
	/* the process first: attached, the programs must find it at once */
	err = bpf_map__update_elem(k->skel->maps.sc_tgids, &tgid, sizeof(tgid), &v, sizeof(v),
				   BPF_ANY);
	if (err)
		return err == -E2BIG ? -ENOSPC : err;
	return k->sc_on ? 0 : sc_attach(k);
}

static int kernel_syscall_counts(struct utrace_uprobes *up, long nr,
				 struct utrace_syscall_counts *c)
{
	struct kernel_up *k = up->priv;
	uint32_t key = (uint32_t)nr;
	int i, err;

	if (!k || nr < 0 || nr >= UK_SC_MAX)
		return -EINVAL;
	if (!k->sc_on)
		return 0;
	err = bpf_map__lookup_elem(k->skel->maps.sc_counts, &key, sizeof(key), k->sc_percpu,
				   (size_t)k->ncpu * sizeof(*k->sc_percpu), 0);
	if (err)
		return err;
	for (i = 0; i < k->ncpu; i++) {
		const struct uk_sc_counts *u = &k->sc_percpu[i];

		if (!u->calls)
			continue;
		if (!c->calls || u->min_ns < c->min_ns)
			c->min_ns = u->min_ns;
		if (u->max_ns > c->max_ns)
			c->max_ns = u->max_ns;
		c->calls += u->calls;
		c->errors += u->errors;
		c->total_ns += u->sum_ns;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The dynamic linker                                                        */
/* ------------------------------------------------------------------------ */

static int kernel_proc_init(struct uprobes_proc *pp)
{
	pp->priv = calloc(1, sizeof(struct kproc));
	return pp->priv ? 0 : -ENOMEM;
}

static void kernel_proc_forget(struct uprobes_proc *pp)
{
	struct kernel_up *k = pp->up->priv;
	struct kproc *kp = pp->priv;

	if (kp && kp->dl && k && k->inst[kp->dl_id])
		inst_free(k, k->inst[kp->dl_id]); /* (its link, the watch's) */
	free(kp);
	pp->priv = NULL;
}

/*
 * ->dl_watch: a uprobe on ld.so's _dl_debug_state (the r_brk debuggers
 * use), whose program stops the thread with UK_DL_SIGNAL; kernel_signal()
 * then has the registry rescan and arm (uprobes_dl_activity()). Without
 * it (a static program, no ld.so), objects loaded later are not armed.
 */
static void kernel_dl_watch(struct uprobes_proc *pp)
{
	struct kernel_up *k = pp->up->priv;
	struct kproc *kp = pp->priv;
	size_t i, n = pp->img ? utrace_image__object_count(pp->img) : 0;

	if (!k || !kp || kp->dl)
		return;
	for (i = 0; i < n; i++) {
		const struct utrace_object *o = utrace_image__object(pp->img, i);
		const char *base = o && o->path ? strrchr(o->path, '/') : NULL;
		struct utrace_elf *elf;
		size_t j, nsym;

		base = base ? base + 1 : (o ? o->path : NULL);
		if (!base || !o->live ||
		    (strncmp(base, "ld-linux", 8) && strncmp(base, "ld-musl", 7) &&
		     strncmp(base, "ld.so", 5)))
			continue;
		elf = utrace_image__elf(pp->img, i);
		nsym = elf ? utrace_elf__sym_count(elf) : 0;
		for (j = 0; j < nsym; j++) {
			const struct utrace_sym *sym = utrace_elf__sym(elf, j);
			LIBBPF_OPTS(bpf_uprobe_opts, uo);
			struct uk_conf conf = { .tgid = (uint32_t)pp->pid, .actions = UK_DLSTOP };
			struct kinst *in;
			int err;
			uint64_t off;
			uint32_t id;

			if (strcmp(sym->name, "_dl_debug_state") || (sym->flags & UTRACE_SYM_PLT))
				continue;
			if (utrace_elf__file_offset(elf, sym->addr, &off) || inst_id_get(k, &id))
				return;
			in = calloc(1, sizeof(*in));
			if (!in)
				return;
			in->id = id;
			if (bpf_map__update_elem(k->skel->maps.conf, &id, sizeof(id), &conf,
						 sizeof(conf), BPF_ANY)) {
				free(in);
				return;
			}
			k->inst[id] = in;
			/*
			 * A uprobe_multi link of one where the kernel has them:
			 * a perf uprobe's perf_event_open took 180 ms of a
			 * 350 ms start-up here
			 */
			if (k->multi) {
				uint64_t cookie = id;
				int fd = uprobe_multi_link(
					bpf_program__fd(k->skel->progs.uk_entry_multi), o->path,
					&off, &cookie, 1, false, pp->pid);

				in->m_entry = fd >= 0 ? calloc(1, sizeof(*in->m_entry)) : NULL;
				if (in->m_entry)
					in->m_entry->ids = malloc(sizeof(uint32_t));
				if (in->m_entry && in->m_entry->ids) {
					in->m_entry->fd = fd;
					in->m_entry->ids[0] = id;
					in->m_entry->nr = in->m_entry->refs = 1;
					err = 0;
				} else {
					err = fd < 0 ? fd : -ENOMEM;
					if (fd >= 0)
						close(fd);
					if (in->m_entry)
						free(in->m_entry);
					in->m_entry = NULL;
				}
			} else {
				uo.bpf_cookie = id;
				in->entry = bpf_program__attach_uprobe_opts(
					k->skel->progs.uk_entry, pp->pid, o->path, off, &uo);
				err = in->entry ? 0 : -errno;
			}
			if (err) {
				pr_debug("process %d: no dlopen notification: %s\n", pp->pid,
					 strerror(-err));
				inst_free(k, in);
				return;
			}
			kp->dl = true;
			kp->dl_id = id;
			kp->dl_addr = o->bias + sym->addr;
			if (utrace_elf__read(elf, sym->addr, &kp->dl_orig, 1) != 1)
				kp->dl_addr = 0;
			return;
		}
	}
}

/*
 * ->signal: UK_DL_SIGNAL from uk_entry() at _dl_debug_state (the thread
 * is marked in "dl_stop"): rescan and arm, suppress the signal. Any other
 * signal, and a SIGURG of the program's own, is delivered.
 */
static int kernel_signal(struct utrace_uprobes *up, struct utrace_thread *th, siginfo_t *info)
{
	struct kernel_up *k = up->priv;
	uint32_t tid = (uint32_t)utrace_thread__tid(th), v;
	struct uprobes_proc *pp;

	if (info->si_signo != UK_DL_SIGNAL || !k ||
	    bpf_map__lookup_elem(k->skel->maps.dl_stop, &tid, sizeof(tid), &v, sizeof(v), 0))
		return UTRACE_RESUME;
	bpf_map__delete_elem(k->skel->maps.dl_stop, &tid, sizeof(tid), 0);
	pp = uprobes_proc_find(up, utrace_thread__pid(th));
	if (pp)
		uprobes_dl_activity(pp, th);
	return UTRACE_RESUME | UTRACE_SIGNAL_IGNORE;
}

/*
 * ->fork_clean: a fork child (stopped, not run yet) carries the int3s the
 * kernel put in its parent's memory. A per-process perf uprobe drops them
 * at the child's first hit, a uprobe_multi link never does (it only skips
 * the program); the child would run correctly, through the kernel's
 * handler at each call. Its copy gets the file's bytes back, as the ptrace
 * backend does (the kernel checks for its int3 before it restores a byte).
 */
static void kernel_fork_clean(struct uprobes_proc *parent, pid_t child)
{
	struct kproc *kp = parent->priv;
	unsigned int i;
	uint8_t b;

	for (i = 0; i < PROC_HASH; i++) {
		struct probe_point *pt;

		for (pt = parent->points[i]; pt; pt = pt->hnext) {
			if (!pt->armed)
				continue;
			if (utrace_mem__read(child, pt->addr, &b, 1) == 1 && b == 0xcc &&
			    utrace_mem__write(child, pt->addr, pt->orig, 1) != 1)
				pr_warn("fork child %d: cannot take the kernel's int3 out of "
					"0x%llx\n",
					child, (unsigned long long)pt->addr);
		}
	}
	if (kp && kp->dl && kp->dl_addr && utrace_mem__read(child, kp->dl_addr, &b, 1) == 1 &&
	    b == 0xcc)
		utrace_mem__write(child, kp->dl_addr, &kp->dl_orig, 1);
}

/* utrace_probe__sites(): a kernel uprobe once its link is made */
static void kernel_site(struct uprobes_proc *pp, struct probe_point *pt,
			struct utrace_point_site *ps)
{
	(void)pp;
	ps->site = pt->armed ? UTRACE_SITE_KERNEL : UTRACE_SITE_PENDING;
}

const struct uprobes_backend_ops uprobes_kernel_ops = {
	.id = UTRACE_BACKEND_KERNEL,
	.name = "kernel",
	.internal_points = false,
	.tracer_handlers = false,
	.system_wide = true,
	.file_bytes = true,
	.refused_actions = UTRACE_ACT_INJECT,
	.refused_why =
		"--inject is not possible with the kernel backend: a uprobe's BPF program cannot change a user function's return",
	.init = kernel_init,
	.fini = kernel_fini,
	.proc_init = kernel_proc_init,
	.proc_forget = kernel_proc_forget,
	.dl_watch = kernel_dl_watch,
	.fork_clean = kernel_fork_clean,
	.signal = kernel_signal,
	.arm = kernel_arm,
	.disarm = kernel_disarm,
	.point_free = kernel_point_free,
	.point_update = kernel_point_update,
	.commit = kernel_commit,
	.armed_all = kernel_armed_all,
	.point_counts = kernel_point_counts,
	.site = kernel_site,
	.poll = kernel_poll,
	.count_syscalls = kernel_count_syscalls,
	.how = kernel_how,
	.syscall_counts = kernel_syscall_counts,
};
