// SPDX-License-Identifier: MIT
/*
 * uprobe.bpf.c - the kernel backend's BPF programs (lib/backend-kernel.c
 * loads them through the skeleton bpftool generates). They run in the
 * kernel, in the probed thread's context, at each hit of a uprobe (entry)
 * or uretprobe (return) that the tracer attached with an instance number
 * as BPF cookie (bpf/uprobe-abi.h). No thread stops: the built-in actions
 * of include/utrace/probe.h run here, with the rules the tracer-side ones
 * have in lib/uprobes-arm.c (builtin_entry(), builtin_return()), so that the
 * figures agree across backends:
 *   COUNT   calls at entry; at a return, errors by err_kind
 *           (common/abi.h's utrace_abi_is_error(), repeated below);
 *   HIST    entry to return, timed by bpf_ktime_get_ns(): exact sum,
 *           min, max and the histogram (utrace_abi_hist_bucket());
 *   RECORD  entry/return records with arguments, strings read with
 *           bpf_probe_read_user_str() and a user stack, through a ring
 *           buffer; a full ring drops the record and counts it.
 * Figures go to per-CPU slots (summed by the tracer); atomic adds because
 * a preempted program can be re-entered on the same CPU by another thread.
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "uprobe-abi.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* The tracer's pid namespace (0: the initial one, the cheaper helper). */
const volatile __u64 ns_dev = 0;
const volatile __u64 ns_ino = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UK_MAX_INST);
	__type(key, __u32);
	__type(value, struct uk_conf);
} conf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UK_MAX_INST);
	__type(key, __u32);
	__type(value, struct uk_counts);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct uk_ts_key);
	__type(value, __u64);
} entry_ts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized by the tracer before loading */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uk_rec_buf);
} scratch SEC(".maps");

/* -k's copy of the registers and the stack (emit_copy()) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uk_copy_rec);
} copy_scratch SEC(".maps");

/* records the ring buffer had no room for */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* threads sent UK_DL_SIGNAL by uk_entry() whose stop the tracer has not seen yet */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} dl_stop SEC(".maps");

/* The current thread's process and thread ids as the tracer sees them; 0 if not @c's process. */
static __always_inline int current_ids(const struct uk_conf *c, __u32 *tgid, __u32 *tid)
{
	if (ns_ino) {
		struct bpf_pidns_info ns = {};

		if (bpf_get_ns_current_pid_tgid(ns_dev, ns_ino, &ns, sizeof(ns)))
			return 0;
		*tgid = ns.tgid;
		*tid = ns.pid;
	} else {
		__u64 id = bpf_get_current_pid_tgid();

		*tgid = id >> 32;
		*tid = (__u32)id;
	}
	if (c->actions & UK_ANYPROC)
		return 1; /* system-wide: every process that maps the file */
	return c->tgid && c->tgid == *tgid;
}

/* common/abi.h utrace_abi_is_error(), for the BPF side */
static __always_inline int is_error(__u32 kind, __u64 rax)
{
	__s32 i = (__s32)rax;

	switch (kind) {
	case 1: /* NEG32 */
		return i < 0;
	case 2: /* NEG64 */
		return (__s64)rax < 0;
	case 3: /* NULL */
		return rax == 0;
	case 4: /* NONZERO */
		return i != 0;
	case 5: /* SQLITE */
		return i != 0 && i != 100 && i != 101;
	case 6: /* MAPFAIL */
		return rax == ~0ULL;
	default:
		return 0;
	}
}

/* common/abi.h utrace_abi_log2_bucket(): 0 -> 0, n -> 1 + floor(log2 n), capped */
static __always_inline __u32 log2_bucket(__u64 n)
{
	__u32 b = 0;

	if (!n)
		return 0;
	if (n >> 32) {
		n >>= 32;
		b += 32;
	}
	if (n >> 16) {
		n >>= 16;
		b += 16;
	}
	if (n >> 8) {
		n >>= 8;
		b += 8;
	}
	if (n >> 4) {
		n >>= 4;
		b += 4;
	}
	if (n >> 2) {
		n >>= 2;
		b += 2;
	}
	if (n >> 1)
		b += 1;
	b += 1;
	return b < UK_HIST ? b : UK_HIST - 1;
}

/*
 * common/abi.h utrace_abi_hist_bucket() (ABI 10), the one scheme of every
 * backend: [0, 1ns), then ten buckets [2^k, 2^(k+1)) per unit (ns, us,
 * ms), the tenth ending at the next unit; seconds doubling after.
 */
static __always_inline __u32 hist_bucket(__u64 ns)
{
	__u64 unit = 1;
	__u32 u = 0, k, b;

	if (!ns)
		return 0;
	if (ns >= 1000000000ull) {
		u = 3;
		unit = 1000000000ull;
	} else if (ns >= 1000000ull) {
		u = 2;
		unit = 1000000ull;
	} else if (ns >= 1000ull) {
		u = 1;
		unit = 1000ull;
	}
	k = log2_bucket(ns / unit) - 1; /* floor(log2 q), q >= 1 */
	if (u < 3 && k >= 10)
		k = 9;
	b = 1 + u * 10 + k;
	return b < UK_HIST ? b : UK_HIST - 1;
}

/* Copy the user string at @ptr into slot b->h.nstr, as argument @i's. */
static __always_inline void copy_str(struct uk_rec_buf *b, const struct uk_conf *c, __u32 i,
				     __u64 ptr)
{
	__u32 k = b->h.nstr, max = c->str_max, sz;
	long n;
	char *dst;

	if (k >= UK_NSTR || i >= UK_NSTR)
		return;
	if (max < 1 || max > UK_STR_SLOT - 2)
		max = 32;
	sz = max + 2;
	dst = b->data + k * UK_STR_SLOT;
	n = bpf_probe_read_user_str(dst, sz, (const void *)ptr);
	if (n <= 0) {
		b->h.str_len[i] = 0;
		b->h.str_flags[i] = UK_STR_FAULT;
	} else if ((__u32)(n - 1) > max) {
		dst[max] = 0;
		b->h.str_len[i] = (__u16)max;
		b->h.str_flags[i] = UK_STR_TRUNC;
	} else {
		b->h.str_len[i] = (__u16)(n - 1);
		b->h.str_flags[i] = 0;
	}
	b->h.nstr = k + 1;
}

static __always_inline void count_lost(void)
{
	__u32 zero = 0;
	__u64 *l = bpf_map_lookup_elem(&lost, &zero);

	if (l)
		__sync_fetch_and_add(l, 1);
}

/*
 * -k: the registers and the top of the stack, in a record of their own
 * output before the entry's (struct uk_copy_rec). A non-sleepable program
 * cannot fault a page in: the stack above rsp is the callers' frames,
 * present; a read past the stack's end fails whole, so then only up to
 * the end of rsp's page.
 */
static __always_inline void emit_copy(struct pt_regs *ctx, __u32 tid)
{
	__u32 zero = 0, first;
	struct uk_copy_rec *cp = bpf_map_lookup_elem(&copy_scratch, &zero);
	__u64 sp = ctx->rsp, size;

	if (!cp)
		return;
	cp->type = UK_REC_COPY;
	cp->tid = tid;
	cp->regs[0] = ctx->rip;
	cp->regs[1] = sp;
	cp->regs[2] = ctx->rbp;
	cp->regs[3] = ctx->rbx;
	cp->regs[4] = ctx->r12;
	cp->regs[5] = ctx->r13;
	cp->regs[6] = ctx->r14;
	cp->regs[7] = ctx->r15;
	cp->len = 0;
	if (!bpf_probe_read_user(cp->data, UK_COPY_MAX, (const void *)sp)) {
		cp->len = UK_COPY_MAX;
	} else {
		first = UK_COPY_MAX - (__u32)(sp & (UK_COPY_MAX - 1));
		if (first > UK_COPY_MAX)
			first = UK_COPY_MAX;
		if (first && !bpf_probe_read_user(cp->data, first, (const void *)sp))
			cp->len = first;
	}
	size = sizeof(*cp) - UK_COPY_MAX + (cp->len & (2 * UK_COPY_MAX - 1));
	if (size > sizeof(*cp))
		size = sizeof(*cp);
	bpf_ringbuf_output(&events, cp, size,
			   0); /* lost: the entry is unwound by its frame pointers */
}

static __always_inline void emit(struct pt_regs *ctx, const struct uk_conf *c, __u32 inst,
				 __u32 tgid, __u32 tid, __u64 now, __u32 type, __u64 dur)
{
	__u32 zero = 0, i, nstr;
	struct uk_rec_buf *b = bpf_map_lookup_elem(&scratch, &zero);
	__u64 size;

	if (!b) {
		count_lost();
		return;
	}
	b->h.type = type;
	b->h.inst = inst;
	b->h.tgid = tgid;
	b->h.tid = tid;
	b->h.ts_ns = now;
	b->h.nstr = 0;
	b->h.nr_stack = 0;
	b->h.retval = 0;
	b->h.dur_ns = dur;
	bpf_get_current_comm(b->h.comm, sizeof(b->h.comm));
	for (i = 0; i < UK_NSTR; i++) {
		b->h.str_len[i] = 0;
		b->h.str_flags[i] = 0;
	}
	if (type == UK_REC_ENTRY) {
		/*
		 * The registers first, at constant offsets: the verifier refuses
		 * a load through a context pointer the compiler moved.
		 */
		__u64
			a
				[6] = { PT_REGS_PARM1(ctx),
					PT_REGS_PARM2(ctx),
					PT_REGS_PARM3(ctx),
					PT_REGS_PARM4(ctx),
					PT_REGS_PARM5(ctx),
					ctx->r9 /* (libbpf 1.1 has no PT_REGS_PARM6) */ };

		for (i = 0; i < 6; i++) {
			b->h.args[i] = i < c->nargs ? a[i] : 0;
			if (i < c->nargs && (c->str_args & (1U << i)))
				copy_str(b, c, i, b->h.args[i]);
		}
		if (c->actions & UK_ACT_STACK) {
			long n = bpf_get_stack(ctx, b->h.stack, sizeof(b->h.stack),
					       BPF_F_USER_STACK);

			b->h.nr_stack = n > 0 ? (__u32)((__u64)n >> 3) : 0;
			emit_copy(ctx, tid);
		}
	} else {
		b->h.retval = PT_REGS_RC(ctx);
		if (c->str_args & (1U << 6))
			copy_str(b, c, 6, b->h.retval);
	}
	nstr = b->h.nstr;
	if (nstr > UK_NSTR)
		nstr = UK_NSTR;
	size = sizeof(struct uk_rec) + (__u64)nstr * UK_STR_SLOT;
	if (size > sizeof(*b))
		size = sizeof(*b);
	if (bpf_ringbuf_output(&events, b, size, 0))
		count_lost();
}

static __always_inline int entry_hit(struct pt_regs *ctx)
{
	__u32 inst = (__u32)bpf_get_attach_cookie(ctx), tgid, tid;
	struct uk_conf *c = bpf_map_lookup_elem(&conf, &inst);
	__u64 now;

	if (!c || !current_ids(c, &tgid, &tid))
		return 0;
	if (c->actions & UK_DLSTOP) {
		__u32 one = 1;

		/* the stop comes when the thread returns to user mode, before ld.so goes on */
		if (!bpf_map_update_elem(&dl_stop, &tid, &one, BPF_ANY))
			bpf_send_signal_thread(UK_DL_SIGNAL);
		return 0;
	}
	now = bpf_ktime_get_ns();
	if (c->actions & UK_ACT_COUNT) {
		struct uk_counts *n = bpf_map_lookup_elem(&counts, &inst);

		if (n)
			__sync_fetch_and_add(&n->calls, 1);
	}
	if ((c->actions & UK_RETURN) && (c->actions & (UK_ACT_HIST | UK_ACT_RECORD))) {
		struct uk_ts_key k = { .tid = tid, .inst = inst, .sp = PT_REGS_SP(ctx) };

		bpf_map_update_elem(&entry_ts, &k, &now, BPF_ANY);
	}
	if (c->actions & UK_ACT_RECORD)
		emit(ctx, c, inst, tgid, tid, now, UK_REC_ENTRY, 0);
	return 0;
}

static __always_inline int return_hit(struct pt_regs *ctx)
{
	__u32 inst = (__u32)bpf_get_attach_cookie(ctx), tgid, tid, i;
	struct uk_conf *c = bpf_map_lookup_elem(&conf, &inst);
	struct uk_counts *n;
	__u64 now, entry = 0, dur = 0, rax, *ts;
	struct uk_ts_key k = {};

	if (!c || !current_ids(c, &tgid, &tid))
		return 0;
	now = bpf_ktime_get_ns();
	k.tid = tid;
	k.inst = inst;
	k.sp = PT_REGS_SP(ctx) - 8; /* after the ret: 8 above the return address's slot */
	ts = bpf_map_lookup_elem(&entry_ts, &k);
	if (ts) {
		entry = *ts;
		bpf_map_delete_elem(&entry_ts, &k);
		dur = now >= entry ? now - entry : 0;
	}
	rax = PT_REGS_RC(ctx);
	n = bpf_map_lookup_elem(&counts, &inst);
	if (n && (c->actions & (UK_ACT_COUNT | UK_ACT_HIST)))
		__sync_fetch_and_add(&n->returns, 1);
	if (n && (c->actions & UK_ACT_COUNT) && is_error(c->err_kind, rax))
		__sync_fetch_and_add(&n->errors, 1);
	if (n && (c->actions & UK_ACT_HIST) && entry) {
		__u64 old;

		__sync_fetch_and_add(&n->timed, 1);
		__sync_fetch_and_add(&n->sum_ns, dur);
		__sync_fetch_and_add(&n->hist[hist_bucket(dur) & (UK_HIST - 1)], 1);
		/* min and max: compare-and-swap, retried while another hit won */
		old = n->min_ns;
		for (i = 0; i < 16 && dur < old; i++) {
			__u64 prev = __sync_val_compare_and_swap(&n->min_ns, old, dur);

			if (prev == old)
				break;
			old = prev;
		}
		old = n->max_ns;
		for (i = 0; i < 16 && dur > old; i++) {
			__u64 prev = __sync_val_compare_and_swap(&n->max_ns, old, dur);

			if (prev == old)
				break;
			old = prev;
		}
	}
	if (c->actions & UK_ACT_RECORD)
		emit(ctx, c, inst, tgid, tid, now, UK_REC_RETURN, entry ? dur : 0);
	return 0;
}

/*
 * The programs: the same bodies attached two ways. uk_entry/uk_return
 * through one perf uprobe link per instance (any kernel with BPF
 * uprobes); uk_entry_multi/uk_return_multi through BPF_TRACE_UPROBE_MULTI
 * links, one per (object, process, half) for a batch of instances, each
 * offset with its instance as cookie (6.6+; the tracer sets their expected
 * attach type and does not load them where the kernel lacks it).
 */
SEC("uprobe")
int uk_entry(struct pt_regs *ctx)
{
	return entry_hit(ctx);
}

SEC("uretprobe")
int uk_return(struct pt_regs *ctx)
{
	return return_hit(ctx);
}

SEC("uprobe")
int uk_entry_multi(struct pt_regs *ctx)
{
	return entry_hit(ctx);
}

SEC("uretprobe")
int uk_return_multi(struct pt_regs *ctx)
{
	return return_hit(ctx);
}

/* ------------------------------------------------------------------------ */
/* System calls                                                              */
/* ------------------------------------------------------------------------ */

/*
 * Raw tracepoints (attached by name through bpf(BPF_RAW_TRACEPOINT_OPEN)):
 * unlike the tracefs ones they need no tracefs mounted (containers and
 * minimal systems often have none: "cannot attach uk_sys_enter: No such
 * file or directory") and cost less per event. sys_enter's arguments
 * are (struct pt_regs *regs, long id), sys_exit's (regs, long ret); the
 * system call's arguments are read from the saved user registers in the
 * x86-64 syscall order: rdi, rsi, rdx, r10, r8, r9.
 */
static __always_inline void sc_args(const struct pt_regs *regs, __u64 *args)
{
	bpf_probe_read_kernel(&args[0], 8, &regs->rdi);
	bpf_probe_read_kernel(&args[1], 8, &regs->rsi);
	bpf_probe_read_kernel(&args[2], 8, &regs->rdx);
	bpf_probe_read_kernel(&args[3], 8, &regs->r10);
	bpf_probe_read_kernel(&args[4], 8, &regs->r8);
	bpf_probe_read_kernel(&args[5], 8, &regs->r9);
}

/* processes whose syscalls count: UK_SC_TRACED, or UK_SC_AT_EXEC until their exec */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u32);
} sc_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct uk_sc_start);
} sc_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UK_SC_MAX);
	__type(key, __u32);
	__type(value, struct uk_sc_counts);
} sc_counts SEC(".maps");

/*
 * [0]: UK_SC_* flags; [1], [2]: the offsets of pid and tgid in the
 * kernel's struct task_struct (from its BTF, read by the tracer only for
 * -F: no CO-RE here, whose vmlinux BTF parse would cost every start-up
 * ~100 ms). Set before these programs are attached.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} sc_conf SEC(".maps");

/* what is copied of each syscall's memory (bpf/uprobe-sc.h, set by the tracer) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UK_SC_MAX);
	__type(key, __u32);
	__type(value, struct uk_sc_caps);
} sc_caps SEC(".maps");

/* [0]: uk_sys_enter's record, [1]: uk_sys_exit's (too large for the stack) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct uk_sc_buf);
} sc_scratch SEC(".maps");

/*
 * One capture @c of the syscall in @b, into region @k: @mode is the string
 * size (sc_conf[3]) and SC_AT_EXIT at the return (whose value is @ret).
 * A global function, verified once rather than at each of its calls.
 * Return: the bytes copied, 0 for none (not this moment, a NULL
 * address, a fault), -1 for a string that faulted.
 */
#define SC_AT_EXIT (1U << 16)
#define SC_RETRY (1U << 17) /* at the return: a string of the entry that faulted there */
__noinline int sc_capture_one(struct uk_sc_buf *b, __u32 k, const struct uk_sc_cap *c, long ret,
			      __u32 mode)
{
	__u32 str_max = mode & 0xffff, at_exit = !!(mode & SC_AT_EXIT), n, a, la;
	int failed = ret < 0 && ret >= -4095;
	struct uk_sc_mem *m;
	__u64 addr, want = 0;
	long r;

	if (!b || !c || !c->how)
		return 0;
	if (mode & SC_RETRY) {
		if (c->how != UK_CAP_STR || (c->flags & UK_CAPF_EXIT))
			return 0;
		at_exit = 0; /* the entry's string, as the kernel read it */
	} else if (!!(c->flags & UK_CAPF_EXIT) != at_exit) {
		return 0;
	}
	if (((c->flags & UK_CAPF_OK) && failed) || ((c->flags & UK_CAPF_ERR) && !failed))
		return 0;
	a = c->arg;
	la = c->len_arg;
	if (a >= 6 || la >= 6)
		return 0;
	addr = b->h.args[a];
	if (!addr)
		return 0;
	if (str_max > UK_SC_CAP_MAX - 1)
		str_max = UK_SC_CAP_MAX - 1;
	m = &b->mem[k & (UK_SC_NCAP - 1)];
	m->addr = addr;
	m->arg = (__u8)a;
	m->flags = at_exit ? UK_SC_MEM_EXIT : 0;
	m->pad = 0;
	if (c->how == UK_CAP_STR) {
		r = bpf_probe_read_user_str(m->data, UK_SC_CAP_MAX, (const void *)addr);
		if (r <= 0)
			return -1;
		if (r >= UK_SC_CAP_MAX) {
			r = UK_SC_CAP_MAX - 1; /* perhaps longer: no NUL kept */
			m->flags |= UK_SC_MEM_TRUNC;
		}
		m->len = (__u16)r;
		return (int)r;
	}
	if (c->how == UK_CAP_LEN)
		want = b->h.args[la];
	else if (c->how == UK_CAP_RET)
		want = ret > 0 ? (__u64)ret : 0;
	else if (c->how == UK_CAP_FIX)
		want = c->size;
	else if (c->how == UK_CAP_ARR)
		want = b->h.args[la] < UK_SC_CAP_MAX ? b->h.args[la] * c->size : UK_SC_CAP_MAX;
	if ((c->flags & UK_CAPF_STRMAX) && want > str_max)
		want = str_max;
	if (want > UK_SC_CAP_MAX - 1)
		want = UK_SC_CAP_MAX - 1;
	n = (__u32)want & (UK_SC_CAP_MAX - 1);
	if (!n || bpf_probe_read_user(m->data, n, (const void *)addr))
		return 0;
	m->len = (__u16)n;
	return (int)n;
}

/*
 * Copy into @b's regions what @caps says of this moment (@at_exit: the
 * return, whose value is @ret): one region per capture whose address is
 * not NULL and could be read. Return: the record's size to output.
 */
static __always_inline __u64 sc_capture(struct uk_sc_buf *b, const struct uk_sc_caps *caps,
					int at_exit, long ret, __u32 retry, __u32 *faulted)
{
	__u32 three = 3, *conf = bpf_map_lookup_elem(&sc_conf, &three), str_max = 32;
	__u32 i, k = 0, last = 0;
	int n;

	if (conf && *conf)
		str_max = *conf;
	if (str_max > UK_SC_CAP_MAX - 1)
		str_max = UK_SC_CAP_MAX - 1;
	for (i = 0; i < UK_SC_NCAP; i++) {
		__u32 mode = str_max | (at_exit ? SC_AT_EXIT : 0);

		if (at_exit && (retry & (1U << i)))
			mode = str_max | SC_RETRY;
		n = sc_capture_one(b, k, &caps->cap[i], ret, mode);
		if (n > 0) {
			last = (__u32)n;
			k++;
		} else if (n < 0) {
			*faulted |= 1U << i;
		}
	}
	b->h.nmem = k;
	if (!k)
		return sizeof(b->h);
	if (k > UK_SC_NCAP)
		k = UK_SC_NCAP;
	last &= UK_SC_CAP_MAX - 1;
	return sizeof(b->h) + (__u64)(k - 1) * sizeof(struct uk_sc_mem) +
	       __builtin_offsetof(struct uk_sc_mem, data) + last;
}

static __always_inline void sc_header(struct uk_sc_buf *b, __u32 type, __u32 tgid, __u32 tid,
				      __u64 ts, __s64 nr, const __u64 *args)
{
	__u32 i;

	b->h.type = type;
	b->h.inst = ~0U;
	b->h.tgid = tgid;
	b->h.tid = tid;
	b->h.ts_ns = ts;
	b->h.nr = nr;
	for (i = 0; i < 6; i++)
		b->h.args[i] = args[i];
	b->h.ret = 0;
	b->h.dur_ns = 0;
	b->h.nmem = 0;
	b->h.pad = 0;
}

static __always_inline int sc_traced(__u32 tgid)
{
	__u32 *v = bpf_map_lookup_elem(&sc_tgids, &tgid);

	return v && *v == UK_SC_TRACED;
}

SEC("raw_tracepoint/sys_enter")
int uk_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32, i;
	__u32 *v = bpf_map_lookup_elem(&sc_tgids, &tgid);
	long nr = (long)ctx->args[1];
	struct uk_sc_start st = {};

	/*
	 * a process waiting for its exec: only an execve, kept until its
	 * return, which counts if the exec happened (uk_sc_exec())
	 */
	if (!v || (*v != UK_SC_TRACED && !(*v == UK_SC_AT_EXEC && nr == 59)))
		return 0;
	st.ts_ns = bpf_ktime_get_ns();
	st.nr = nr;
	sc_args((const struct pt_regs *)ctx->args[0], st.args);
	if ((nr == 60 || nr == 231) && *v == UK_SC_TRACED) {
		/* exit, exit_group: no return to record them at; recorded here (dur ~0) */
		__u32 zero = 0, *conf = bpf_map_lookup_elem(&sc_conf, &zero);
		struct uk_sc_rec r = {
			.type = UK_REC_SC,
			.inst = ~0U,
			.tgid = tgid,
			.tid = tid,
			.ts_ns = st.ts_ns,
			.nr = nr,
			.dur_ns = ~0ULL,
		};

		if (!conf || !(*conf & UK_SC_RECORD))
			return 0;
		for (i = 0; i < 6; i++)
			r.args[i] = st.args[i];
		if (bpf_ringbuf_output(&events, &r, sizeof(r), 0))
			count_lost();
		return 0;
	}
	if (nr >= 0 && nr < UK_SC_MAX) {
		/* what the decoders read at the entry: a UK_REC_SC_MEM record before the return's */
		__u32 zero = 0, key = (__u32)nr, *conf = bpf_map_lookup_elem(&sc_conf, &zero);
		struct uk_sc_caps *caps = bpf_map_lookup_elem(&sc_caps, &key);
		struct uk_sc_buf *b = bpf_map_lookup_elem(&sc_scratch, &zero);
		__u32 faulted = 0;
		__u64 size;

		if (conf && (*conf & UK_SC_RECORD) && caps && caps->cap[0].how && b) {
			sc_header(b, UK_REC_SC_MEM, tgid, tid, st.ts_ns, nr, st.args);
			size = sc_capture(b, caps, 0, 0, 0, &faulted);
			if (size > sizeof(*b))
				size = sizeof(*b);
			if (b->h.nmem && bpf_ringbuf_output(&events, b, size, 0))
				count_lost();
			/* (an exec's return is in the new image: nothing of the old one to read) */
			if (nr != 59 && nr != 322)
				st.retry = faulted;
		}
	}
	bpf_map_update_elem(&sc_start, &tid, &st, BPF_ANY);
	return 0;
}

SEC("raw_tracepoint/sys_exit")
int uk_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), dur, old;
	__u32 tid = (__u32)id, tgid = id >> 32, nr, i, zero = 0;
	struct uk_sc_start *st = bpf_map_lookup_elem(&sc_start, &tid);
	__u32 *conf = bpf_map_lookup_elem(&sc_conf, &zero);
	struct uk_sc_counts *c;
	long ret = (long)ctx->args[1];

	if (!st)
		return 0;
	if (!sc_traced(tgid)) { /* the launcher's execve that failed: not the command's */
		bpf_map_delete_elem(&sc_start, &tid);
		return 0;
	}
	if (conf && (*conf & UK_SC_RECORD)) {
		__u32 one = 1, key = (__u32)st->nr;
		struct uk_sc_buf *b = bpf_map_lookup_elem(&sc_scratch, &one);
		struct uk_sc_caps *caps = key < UK_SC_MAX ? bpf_map_lookup_elem(&sc_caps, &key) : 0;
		__u64 size = sizeof(struct uk_sc_rec);

		if (b) {
			sc_header(b, UK_REC_SC, tgid, tid, st->ts_ns, st->nr, st->args);
			b->h.ret = ret;
			b->h.dur_ns = now >= st->ts_ns ? now - st->ts_ns : 0;
			__u32 faulted = 0;

			if (caps && caps->cap[0].how)
				size = sc_capture(b, caps, 1, ret, st->retry, &faulted);
			if (size > sizeof(*b))
				size = sizeof(*b);
			if (bpf_ringbuf_output(&events, b, size, 0))
				count_lost();
		} else {
			count_lost();
		}
	}
	/* the entry's number: an execve's exit may report the new image's view */
	nr = (__u32)st->nr;
	dur = now >= st->ts_ns ? now - st->ts_ns : 0;
	bpf_map_delete_elem(&sc_start, &tid);
	if (nr >= UK_SC_MAX)
		return 0;
	c = bpf_map_lookup_elem(&sc_counts, &nr);
	if (!c)
		return 0;
	/* min first: a reader sees calls > 0 only with a min set (or about to be) */
	old = c->min_ns;
	for (i = 0; i < 16 && (!c->calls || dur < old); i++) {
		__u64 prev = __sync_val_compare_and_swap(&c->min_ns, old, dur);

		if (prev == old)
			break;
		old = prev;
	}
	old = c->max_ns;
	for (i = 0; i < 16 && dur > old; i++) {
		__u64 prev = __sync_val_compare_and_swap(&c->max_ns, old, dur);

		if (prev == old)
			break;
		old = prev;
	}
	__sync_fetch_and_add(&c->calls, 1);
	__sync_fetch_and_add(&c->sum_ns, dur);
	if (ret < 0 && ret >= -4095)
		__sync_fetch_and_add(&c->errors, 1);
	return 0;
}

/*
 * A process waiting for its exec starts here: the execve it returns from
 * counts (its entry kept by uk_sys_enter()); the failed ones before it
 * (the launcher's search of $PATH) did not.
 */
SEC("raw_tracepoint/sched_process_exec")
int uk_sc_exec(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, traced = UK_SC_TRACED;
	__u32 *v = bpf_map_lookup_elem(&sc_tgids, &tgid);
	struct uk_sc_start st = {};

	if (!v || *v != UK_SC_AT_EXEC)
		return 0;
	bpf_map_update_elem(&sc_tgids, &tgid, &traced, BPF_ANY);
	/* its execve's entry was kept by uk_sys_enter(); else (execveat?) from here */
	if (bpf_map_lookup_elem(&sc_start, &tid))
		return 0;
	st.ts_ns = bpf_ktime_get_ns();
	st.nr = 59; /* __NR_execve (x86-64): what the launcher calls */
	bpf_map_update_elem(&sc_start, &tid, &st, BPF_ANY);
	return 0;
}

/*
 * -F: a new process (not a thread) forked by a traced one is traced from
 * its first instruction. The raw tracepoint: (parent, child) task
 * pointers; the tracepoint runs in the parent.
 */
SEC("raw_tracepoint/sched_process_fork")
int uk_sc_fork(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 zero = 0, one = 1, two = 2, *conf = bpf_map_lookup_elem(&sc_conf, &zero);
	__u32 *pid_off = bpf_map_lookup_elem(&sc_conf, &one);
	__u32 *tgid_off = bpf_map_lookup_elem(&sc_conf, &two);
	__u32 ptgid = bpf_get_current_pid_tgid() >> 32, traced = UK_SC_TRACED;
	const char *child = (const char *)ctx->args[1];
	int ctgid = 0, cpid = 0;

	if (!conf || !pid_off || !tgid_off || !(*conf & UK_SC_FOLLOW) || !*tgid_off)
		return 0;
	if (bpf_probe_read_kernel(&cpid, sizeof(cpid), child + (*pid_off & 0xffff)) ||
	    bpf_probe_read_kernel(&ctgid, sizeof(ctgid), child + (*tgid_off & 0xffff)))
		return 0;
	if (ctgid != cpid || (__u32)ctgid == ptgid || !sc_traced(ptgid))
		return 0;
	bpf_map_update_elem(&sc_tgids, &ctgid, &traced, BPF_ANY);
	return 0;
}
