/* SPDX-License-Identifier: MIT */
/*
 * abi.h - the wire contract between libutrace (the host, in the tracer
 * process) and libutrace-agent.so (the agent, inside the target).
 *
 * Everything travels through one shared arena: a memfd (mode 0600, no path,
 * passed as an inherited fd in launch mode: UTRACE_AGENT_FD=N, or created
 * remotely in attach mode) that both sides map MAP_SHARED. No pointers cross
 * it, only offsets and target addresses; every struct has fixed-width fields,
 * explicit padding and a size assertion. Version bumps on any change.
 *
 * Layout (each section page-aligned; offsets in the header):
 *
 *   header          struct utrace_arena_hdr (one page): magic, version, sizes,
 *                   the command mailbox, global counters, clock calibration
 *   probe table     max_probes x struct utrace_abi_probe: what to patch, how
 *                   (filled by the host), state and counters (by the agent)
 *   thread slots    max_threads x struct utrace_abi_thread: a thread's ring
 *                   indices, per-probe hit counters and UTRACE_ABI_CELLS
 *                   timing cells (struct utrace_abi_cell); claimed on first hit
 *   rings           max_threads x ring_records x struct utrace_abi_event
 *
 * Who relocates. The host decodes and relocates ("decode on the host, patch
 * in the target", style.md §1): the agent links no decoder (no Zydis in every
 * target) and never guesses at instruction boundaries. The host also picks
 * the address of each XOL area from /proc/PID/maps (reloc_find_slot(): within
 * ±2 GiB of the sites and of their RIP-relative data) and relocates each
 * site's displaced bytes for the address of its slot in that area
 * (slot + UTRACE_TRAMP_XOL_OFF). The agent maps the area there with
 * MAP_FIXED_NOREPLACE; if something else took the range meanwhile it says so
 * (-EEXIST) and the host re-plans. One round trip, no decoder in the target.
 * The agent writes the slot's header itself (it alone knows its thunk), so
 * the host never ships code that runs before the probe's own displaced bytes.
 *
 * Mailbox. The host fills cmd_* and then store-releases cmd_seq + 1 and
 * FUTEX_WAKEs it (a shared, not private, futex: both processes map it). The
 * agent's control thread runs the command, writes cmd_result, store-releases
 * ack_seq = cmd_seq and wakes it. One command at a time.
 *
 * Liveness. The agent watches the host with pidfd_open(host_pid): when the
 * host exits (or sets UTRACE_CMD_DETACH) the agent disarms every probe, in
 * reverse order, and goes dormant.
 */
#ifndef __UTRACE_ABI_H
#define __UTRACE_ABI_H

#include <stddef.h>
#include <stdint.h>

#define UTRACE_ABI_MAGIC 0x4543415254557475ULL /* "utUTRACE" */
#define UTRACE_ABI_VERSION 12

#define UTRACE_ABI_PAGE 4096u
#define UTRACE_ABI_MAX_CODE 224 /* relocated bytes per site (incl. the jump back) */
#define UTRACE_ABI_MAX_INSNS 8 /* displaced instructions per site */
#define UTRACE_ABI_HIST_BUCKETS 64 /* utrace_abi_hist_bucket(): [0] = 0 ns, then 2^k per unit */
#define UTRACE_ABI_ARGS 6
#define UTRACE_ABI_STACK_MAX 32 /* caller frames recorded with an entry (-k) */
/*
 * ABI 12, -k's copy for the host's CFI unwinder (perf's --call-graph dwarf
 * model): the registers it starts from (REGS records) and the bytes of the
 * stack above rsp (STACKDATA records), up to the arena header's @stack_dump
 * bytes (the host's choice; 0: none, only the frame-pointer walk), never
 * more than UTRACE_ABI_STACK_DUMP_MAX.
 */
#define UTRACE_ABI_STACK_DUMP 4096 /* the host's default @stack_dump */
#define UTRACE_ABI_STACK_DUMP_MAX 16384
#define UTRACE_ABI_DUMP_CHUNK 48 /* stack bytes per STACKDATA record: sizeof(args) */
#define UTRACE_ABI_DUMP_RECS \
	((UTRACE_ABI_STACK_DUMP_MAX + UTRACE_ABI_DUMP_CHUNK - 1) / UTRACE_ABI_DUMP_CHUNK)
/* REGS: rip (the probed address) rsp rbp rbx r12 r13 r14 r15, in this order */
#define UTRACE_ABI_NR_REGS 8
#define UTRACE_ABI_REGS_RECS ((UTRACE_ABI_NR_REGS + UTRACE_ABI_ARGS - 1) / UTRACE_ABI_ARGS)
#define UTRACE_ABI_FORKS 16 /* fork children announced and not yet seen by the host */
#define UTRACE_ABI_XOL_PREV 16 /* XOL areas of earlier sessions offered to a new one */

/*
 * A trampoline slot in an XOL area (agent-written header, host-relocated
 * tail):
 *
 *   +0   lea  rsp, [rsp - 128 + undo] skip the red zone (and give back what
 *                                      the kept first instruction pushed)
 *   +5   push imm32 (probe id)
 *   +10  call [rip + thunk]            the area's first 8 bytes
 *   +16  lea  rsp, [rsp + 136]         drop the id and the red zone
 *   +24  nop x 8
 *   +32  displaced instructions relocated for this address, then the jump
 *        back to site + len (the host's reloc_relocate(..., jmp_back))
 *
 * An int3-mode hit resumes at +32 directly (the signal handler ran the
 * handlers already): both modes execute the same relocated copy.
 */
#define UTRACE_TRAMP_XOL_OFF 32
#define UTRACE_TRAMP_SLOT 256
#define UTRACE_XOL_HDR 64 /* first bytes of an area: the thunk address */
_Static_assert(UTRACE_TRAMP_XOL_OFF + UTRACE_ABI_MAX_CODE <= UTRACE_TRAMP_SLOT, "code fits a slot");

enum utrace_cmd {
	UTRACE_CMD_NONE = 0,
	UTRACE_CMD_PING, /* no-op; answers 0 */
	UTRACE_CMD_XOL_MAP, /* arg[0] = address, arg[1] = size: map an XOL area there */
	UTRACE_CMD_SYNC, /* apply every probe's @want in one transaction */
	UTRACE_CMD_DETACH, /* disarm everything, go dormant */
	UTRACE_CMD_START, /* launch mode: the constructor may return (probes armed) */
	/*
	 * C probe modules (ABI 6, docs/modules.md). MODULE_LOAD: @cmd_str = the
	 * module's path (checked by the host), arg[0] = the first probe id
	 * reserved for its counters, arg[1] = how many; dlopen()s it, answers
	 * its index (>= 0) or -errno with the reason in @cmd_str. MODULE_BIND:
	 * arg[0] = module index << 32 | index in its probe table, arg[1] = the
	 * probe id whose hits run that table entry's handlers.
	 */
	UTRACE_CMD_MODULE_LOAD,
	UTRACE_CMD_MODULE_BIND,
	__UTRACE_CMD_MAX,
};

enum utrace_agent_state {
	UTRACE_AGENT_NONE = 0,
	UTRACE_AGENT_READY, /* mapped the arena, control thread running */
	UTRACE_AGENT_DORMANT, /* host gone or detached; every probe disarmed */
	UTRACE_AGENT_FAILED, /* init failed: status says why */
};

/* Probe flags (host-set): what the built-in handlers do at a hit. */
enum utrace_probe_flags {
	UTRACE_PF_COUNT = 1U << 0, /* count hits (per thread slot) */
	UTRACE_PF_RECORD_ENTRY = 1U << 1, /* ring record with the 6 integer args */
	UTRACE_PF_RETPROBE = 1U << 2, /* hijack the return address (function entry only) */
	UTRACE_PF_RECORD_RETURN = 1U << 3, /* ring record with rax and the duration */
	UTRACE_PF_HIST = 1U << 4, /* log2 histogram of the duration (ns) */
	UTRACE_PF_ENTRY = 1U << 5, /* the site is a function entry ([rsp] = return) */
	/*
	 * Fault injection (function entries only): every @inject_every-th call,
	 * counted across threads in @inject_calls, returns @inject_value without
	 * running the function. With RECORD_ENTRY or RECORD_RETURN, the call is
	 * recorded as one UTRACE_EV_INJECT record (after its ENTRY record, if any).
	 */
	UTRACE_PF_INJECT = 1U << 6,
	/*
	 * The caller stack (frame pointers, bounded by the thread's stack) goes
	 * with each ENTRY or INJECT record as UTRACE_EV_STACK records in the
	 * same ring, published together (one group is never split nor half lost).
	 */
	UTRACE_PF_STACK = 1U << 7,
	/*
	 * An unwinder is about to walk the thread's stack (a probe on
	 * _Unwind_RaiseException, _Unwind_ForcedUnwind or pthread_exit):
	 * put its hijacked return addresses back first. The host arms these
	 * for an injected agent, whose interposers of the same functions are
	 * not bound (docs/agent.md); a preloaded agent interposes them.
	 */
	UTRACE_PF_UNWIND = 1U << 8,
};

enum utrace_probe_mode {
	UTRACE_PM_INT3 = 1, /* keep the int3: one displaced instruction */
	UTRACE_PM_JMP = 2, /* int3 first, then upgrade to a 5-byte jmp */
};

/* @want (host) and @state (agent). */
enum utrace_probe_state {
	UTRACE_PS_UNUSED = 0,
	UTRACE_PS_DISARMED,
	UTRACE_PS_INT3, /* armed, int3 at the site */
	UTRACE_PS_JMP, /* armed, 5-byte jmp at the site */
	UTRACE_PS_FAILED, /* refused or failed: @err says why; never retried */
	/*
	 * @want only: the site's object was unmapped (dlclose) or replaced
	 * (exec). Forget the probe without writing a byte (the address may
	 * hold another object by now); its state becomes DISARMED.
	 */
	UTRACE_PS_GONE,
	/*
	 * @state only (ABI 9): someone else's int3 appeared on the jmp's first
	 * byte (a kernel uprobe: bpftrace, perf probe). The agent gave the
	 * site back in the state the kernel expects (agent/patch.c,
	 * patch_check_taken(): the file's bytes under that int3, @err
	 * -EEXIST; -EILSEQ when the byte is not an int3 and was left as it
	 * is). The probe sees no more hits; the site is never written again,
	 * not even at detach.
	 */
	UTRACE_PS_TAKEN,
};

enum utrace_event_kind {
	UTRACE_EV_ENTRY = 1,
	UTRACE_EV_RETURN = 2,
	UTRACE_EV_LOST = 3, /* args[0] = records lost before this one */
	UTRACE_EV_STACK = 4, /* follows an ENTRY/INJECT: args[0..ext) = return addresses */
	UTRACE_EV_INJECT = 5, /* an injected call: the entry's args; it returned inject_value */
	/*
	 * A C probe module's record (utrace_module__emit()): args = its values,
	 * dur = module index << 24 | index in the module's probe table << 8 |
	 * number of values.
	 */
	UTRACE_EV_MODULE = 6,
	/*
	 * ABI 9: follows an ENTRY/INJECT (argument strings) or a RETURN (the
	 * returned string): bytes of a string copied in the probed thread at
	 * the hit, args[] as UTRACE_ABI_STR_CHUNK bytes; ext: UTRACE_STR_*.
	 * One string is one or more consecutive STR records of the same index.
	 */
	UTRACE_EV_STR = 7,
	/*
	 * ABI 12, with UTRACE_PF_STACK and a nonzero @stack_dump: after an
	 * ENTRY/INJECT's STACK records, UTRACE_ABI_REGS_RECS REGS records
	 * (args[0..ext) = the next registers of the UTRACE_ABI_NR_REGS, in
	 * their order), then STACKDATA records: the stack's bytes from rsp
	 * on, in order, ext = bytes in this record (<= UTRACE_ABI_DUMP_CHUNK),
	 * return addresses hijacked by return probes put back.
	 */
	UTRACE_EV_REGS = 8,
	UTRACE_EV_STACKDATA = 9,
};

/* ext of a STR record: bytes in this record, which value, how the copy ended. */
#define UTRACE_ABI_STR_CHUNK 48 /* bytes of string per record: sizeof(args) */
#define UTRACE_ABI_STR_MAX 1024 /* most bytes copied of one string */
#define UTRACE_ABI_STR_RECS ((UTRACE_ABI_STR_MAX + UTRACE_ABI_STR_CHUNK - 1) / UTRACE_ABI_STR_CHUNK)
#define UTRACE_STR_LEN(ext) ((ext)&0xff) /* bytes here, <= UTRACE_ABI_STR_CHUNK */
#define UTRACE_STR_INDEX(ext) (((ext) >> 8) & 0xf) /* argument 0..5; 6: the return value */
#define UTRACE_STR_END (1U << 12) /* last record: the NUL was found (not counted in LEN) */
#define UTRACE_STR_FAULT (1U << 13) /* last record: memory ended before a NUL */
#define UTRACE_STR_RET 6

/** struct utrace_abi_event - one fixed-size ring record. */
struct utrace_abi_event {
	uint64_t ts; /* CLOCK_MONOTONIC ns (TSC-derived, see hdr calibration) */
	uint64_t dur; /* return: ns since the matching entry; 0 if unknown */
	uint32_t tid;
	uint32_t probe; /* probe id */
	uint16_t kind; /* enum utrace_event_kind */
	uint16_t depth; /* return-instance depth */
	/*
	 * ENTRY/INJECT: the records that follow (STR, STACK, REGS, STACKDATA);
	 * STACK, REGS: values in args; STACKDATA: bytes in args
	 */
	uint32_t ext;
	uint64_t args[UTRACE_ABI_ARGS]; /* entry: rdi rsi rdx rcx r8 r9; return: args[0] = rax */
};
_Static_assert(sizeof(struct utrace_abi_event) == 80, "event size");

/** struct utrace_abi_probe - one probe-table entry. */
struct utrace_abi_probe {
	/* Host-written before the probe's first SYNC; read-only afterwards. */
	uint64_t addr; /* site address (runtime) */
	uint64_t slot; /* trampoline slot address, inside a mapped XOL area */
	uint32_t flags; /* enum utrace_probe_flags */
	uint8_t mode; /* enum utrace_probe_mode */
	uint8_t len; /* displaced bytes: 1 insn for INT3, >= 5 for JMP */
	uint8_t nr_insns; /* displaced instructions */
	uint8_t code_len; /* relocated bytes in @code */
	uint8_t orig[16]; /* expected bytes at @addr (checked before arming) */
	uint8_t src_off[UTRACE_ABI_MAX_INSNS]; /* insn i at addr + src_off[i] ... */
	uint16_t dst_off[UTRACE_ABI_MAX_INSNS]; /* ... has its copy at slot + 32 + dst_off[i] */
	uint8_t code[UTRACE_ABI_MAX_CODE]; /* relocated for slot + UTRACE_TRAMP_XOL_OFF */
	/* Host-written any time, then SYNC. */
	uint32_t want; /* enum utrace_probe_state: DISARMED, INT3 or JMP */
	/* Agent-written. */
	uint32_t state; /* enum utrace_probe_state */
	int32_t err; /* negative errno when FAILED or when an upgrade was skipped */
	/*
	 * Host-written (ABI 8): the entry's first instruction, @pre_len bytes
	 * before @addr, stays in place (planner.c rule 5) and moved rsp down
	 * by @undo bytes. The slot gives rsp back before the handlers, which
	 * see the probe at addr - pre_len; @code starts with a copy of that
	 * instruction (src_off/dst_off still describe [addr, addr + len)).
	 */
	uint8_t pre_len;
	uint8_t undo;
	/*
	 * Host-written (ABI 9), before the first SYNC: which return values
	 * count as errors in -c (enum utrace_abi_err, from the prototype).
	 */
	uint8_t err_kind;
	uint8_t __pad;
	uint64_t hits_shared; /* hits of threads without a slot (atomic adds) */
	uint64_t nested; /* hits inside the agent (guard held): displaced code ran, no handler */
	uint64_t missed_ret; /* return probes skipped: depth limit, foreign stack */
	/*
	 * @returns, @hist and the exact figures below are those of threads
	 * with no timing cell for the probe (ABI 11: struct utrace_abi_cell);
	 * the host adds every thread's cell of the probe to them.
	 */
	uint64_t returns; /* return-trampoline hits */
	uint64_t hist[UTRACE_ABI_HIST_BUCKETS]; /* durations, atomic adds */
	uint64_t inject_value; /* UTRACE_PF_INJECT (host, before the first SYNC): rax */
	uint64_t inject_every; /* ... every Nth call (0 is taken as 1) */
	uint64_t
		inject_calls; /* agent: calls seen by the injection (atomic); injected = calls / every */
	/*
	 * Agent-written with HIST (ABI 9; atomic): the exact figures of the
	 * timed calls that @hist only buckets, so that -c shows measured
	 * times on every backend (the host never derives them from buckets).
	 */
	uint64_t sum_ns; /* total duration */
	uint64_t min_inv; /* ~(shortest duration): 0 until the first timed call */
	uint64_t max_ns; /* longest duration */
	uint64_t errors; /* returns (and injected values) that @err_kind calls errors */
	/*
	 * Host-written (ABI 9), before the first SYNC, with RECORD_ENTRY /
	 * RECORD_RETURN: copy these values as strings at the hit (STR
	 * records), up to @str_max bytes each (<= UTRACE_ABI_STR_MAX): by the
	 * time the host drains the ring, the memory may hold something else.
	 */
	uint8_t str_args; /* bit i: argument i (0..5) is a string */
	uint8_t str_ret; /* 1: the return value is a string */
	uint16_t str_max;
	uint32_t __pad2;
	/*
	 * Agent-written (ABI 11, atomic): the program's calls among @nested,
	 * hits from a signal handler that interrupted a hit's dispatch in the
	 * same thread (agent/dispatch.c nested_hit()): counted with COUNT,
	 * but no record, no return probe, no handler.
	 */
	uint64_t nested_calls;
};
_Static_assert(sizeof(struct utrace_abi_probe) == 408 + UTRACE_ABI_HIST_BUCKETS * 8, "probe size");
_Static_assert(offsetof(struct utrace_abi_probe, code) == 64, "probe code offset");

/**
 * struct utrace_abi_thread - one thread's slot: a single-producer (the
 * thread) single-consumer (the host) ring, and per-probe hit counters that
 * only this thread writes (plain relaxed stores; the host sums the slots).
 * @head is written by the producer only (store-release after the record),
 * @tail by the consumer only; they sit on separate cache lines.
 */
struct utrace_abi_thread {
	uint32_t tid; /* the thread using it (last one, once released) */
	uint32_t state; /* 0 never used, 1 in use, 2 released (reusable; counters kept) */
	uint64_t drops; /* records that did not fit */
	uint64_t __pad0[6];
	uint64_t head; /* producer index (records written) */
	uint64_t __pad1[7];
	uint64_t tail; /* consumer index (records read) */
	uint64_t __pad2[7];
	/*
	 * followed by max_probes uint64_t hit counters (hits[]), then, 64-byte
	 * aligned, UTRACE_ABI_CELLS timing cells (utrace_abi_cells())
	 */
};
_Static_assert(sizeof(struct utrace_abi_thread) == 192, "thread slot size");

/*
 * struct utrace_abi_cell - one thread's return figures of one probe (ABI
 * 11). A return probe's figures were shared atomics: threads calling one
 * probe at once fought over its cache lines (bench/agent-bench, 2 threads
 * on 2 cores: 104-119 ns a timed call, 74 ns with cells, the same as one
 * thread alone; single-threaded the locked adds cost nothing measurable,
 * the two rdtsc do). Now a thread keeps them in its slot, in the cell
 * @id % UTRACE_ABI_CELLS, written only by that thread under its guard
 * (plain adds and stores: a signal handler of the thread cannot enter
 * the agent meanwhile, guard.c). The thread takes a free cell with one
 * store-release of @probe; a cell taken by another probe sends the hit to
 * the probe's shared atomics (struct utrace_abi_probe), so nothing is
 * lost, only slower. The host sums the shared figures and every thread's
 * cell whose @probe is id + 1 (min and max over them).
 */
#define UTRACE_ABI_CELLS 32
struct utrace_abi_cell {
	uint32_t probe; /* probe id + 1; 0: free */
	uint32_t __pad;
	uint64_t returns;
	uint64_t sum_ns;
	uint64_t min_inv; /* ~(shortest duration): 0 until the first timed call */
	uint64_t max_ns;
	uint64_t errors;
	uint64_t hist[UTRACE_ABI_HIST_BUCKETS];
};
_Static_assert(sizeof(struct utrace_abi_cell) == 48 + UTRACE_ABI_HIST_BUCKETS * 8, "cell size");

/** struct utrace_arena_hdr - the arena's first page. */
struct utrace_arena_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;
	uint64_t arena_size;
	uint32_t max_probes;
	uint32_t max_threads;
	uint32_t ring_records; /* per thread, a power of two */
	uint32_t record_size; /* sizeof(struct utrace_abi_event) */
	uint64_t probes_off;
	uint64_t threads_off;
	uint64_t thread_stride; /* bytes per thread slot incl. hits[] */
	uint64_t rings_off;
	uint32_t host_pid;
	uint32_t agent_pid;
	uint32_t flags; /* UTRACE_ARENA_F_* (host) */
	uint32_t agent_state; /* enum utrace_agent_state (agent) */
	int32_t agent_err; /* init failure, negative errno */
	uint32_t max_depth; /* return instances per thread (0: 64) */
	/* Mailbox, 64-byte aligned. */
	uint32_t cmd_seq; /* host: futex word */
	uint32_t ack_seq; /* agent: futex word */
	uint32_t cmd; /* enum utrace_cmd */
	int32_t cmd_result;
	uint64_t cmd_arg[4];
	uint64_t __pad0[2];
	/* Global counters (agent, atomic adds). */
	uint64_t nr_threads; /* slots claimed */
	uint64_t thread_overflow; /* threads that found no free slot */
	uint64_t foreign_traps; /* SIGTRAPs that were not ours (chained) */
	uint64_t late_traps; /* int3 hits after the probe was disarmed */
	uint64_t upgrades; /* int3 -> jmp upgrades done */
	uint64_t upgrade_skipped; /* batches left in int3 (a thread did not answer) */
	uint64_t transactions;
	uint64_t taken; /* jmp sites given back to a kernel uprobe (state TAKEN) */
	/* Clock: ns = mono0 + ((tsc - tsc0) * mult >> 32), valid when mult != 0. */
	uint64_t tsc0;
	uint64_t mono0;
	uint64_t mult;
	/*
	 * Follow-fork (UTRACE_ARENA_F_FOLLOW_FORK): a fork child of this
	 * process made itself a fresh arena (same sizes, the probe table copied,
	 * counters zero) and announces it here, in its parent's arena: it
	 * reserves entry fork_head++ (atomic), fills pid and fd (the memfd in the
	 * child, for the host to open as /proc/PID/fd/FD), then store-releases
	 * seq = index + 1, and waits (1 s at most) until the host has opened it
	 * and set acked = 1 (a shared futex word): a short-lived child must not
	 * exit before the host holds its arena. The host reads entries in
	 * order; more than UTRACE_ABI_FORKS unread overwrite the oldest.
	 */
	uint32_t fork_head;
	uint32_t __pad2;
	struct utrace_abi_fork {
		uint32_t seq;
		uint32_t pid;
		int32_t fd;
		uint32_t acked;
	} forks[UTRACE_ABI_FORKS];
	/*
	 * Image changes (launch/preload mode), agent -> host. A thread that
	 * returns from dlopen()/dlclose() bumps @dl_seq (futex word) and waits,
	 * bounded, until the host has re-resolved its pending SPECs, armed the
	 * new sites and stored @dl_ack = @dl_seq: the library's first calls
	 * are probed. After an execve() the new image's agent (the same pid,
	 * the same inherited arena fd) bumps @exec_seq once its control thread
	 * serves the mailbox: the host forgets every old probe (want GONE),
	 * re-plans the SPECs in the new image and sends START again.
	 */
	uint32_t dl_seq;
	uint32_t dl_ack;
	uint32_t exec_seq;
	uint32_t __pad3;
	/*
	 * Re-attach (agent -> host, before READY): the XOL areas that earlier
	 * sessions left (areas are never unmapped), with the offset of their
	 * first unwritten slot. The host fills their free tails before it
	 * maps new ones; written slots are never reused (a thread of an
	 * earlier session may still run in one).
	 */
	uint32_t nr_xol_prev;
	/*
	 * The control thread's tid (agent, before READY): the one thread of
	 * the process a ptrace session keeps (lib/backend-agent.c, "ANCHOR"):
	 * it only ever waits in futex() and poll(), which a ptrace stop
	 * restarts, so its stops never change what the program sees.
	 */
	uint32_t control_tid;
	struct utrace_abi_xol {
		uint64_t vaddr;
		uint64_t size;
		uint64_t used; /* bytes from vaddr: header and written slots */
	} xol_prev[UTRACE_ABI_XOL_PREV];
	/*
	 * Host-written before the first SYNC (ABI 12): bytes of stack copied
	 * with a -k entry (STACKDATA records); 0: none. The agent caps it at
	 * UTRACE_ABI_STACK_DUMP_MAX and at what its ring can hold.
	 */
	uint32_t stack_dump;
	uint32_t __pad4;
	/* MODULE_LOAD: the path (host), then the failure's reason (agent). */
	char cmd_str[512];
	uint64_t __reserved[(4096 - 288 - 512 - UTRACE_ABI_FORKS * 16 - UTRACE_ABI_XOL_PREV * 24) /
			    8];
};
_Static_assert(sizeof(struct utrace_arena_hdr) == 4096, "arena header is one page");
_Static_assert(offsetof(struct utrace_arena_hdr, cmd_seq) == 96, "mailbox offset");

enum utrace_arena_flags {
	UTRACE_ARENA_F_FOLLOW_FORK = 1U << 0, /* keep probes in fork children */
	UTRACE_ARENA_F_WAIT_START = 1U << 1, /* launch: constructor waits for CMD_START */
	/*
	 * launch under a ptrace session (lib/backend-agent.c): once READY,
	 * the constructor executes the int3 at __utrace_agent_hello_site;
	 * the tracer arms the probes in that stop and suppresses the trap
	 * (untraced, the agent's SIGTRAP handler steps over it). A dlopen()
	 * or dlclose() that returned executes the int3 at
	 * __utrace_agent_dl_site the same way, instead of waiting for
	 * dl_ack: the tracer re-plans in that stop.
	 */
	UTRACE_ARENA_F_HELLO = 1U << 2,
	/*
	 * Set by the host, at any time (atomic or): this session is over.
	 * A launch released before its hello (a -d shorter than the start-up,
	 * a library user freeing the layer early) would otherwise leave the
	 * constructor waiting for a START that never comes, up to 60 s while
	 * the host lives: the agent takes it as the host's death (host_alive()
	 * is false), goes dormant and lets main() run, unprobed.
	 */
	UTRACE_ARENA_F_RELEASED = 1U << 3,
	/*
	 * Set by the host with F_HELLO cleared, once the program threads are
	 * let go and only the control thread stays traced (backend-agent.c
	 * ANCHOR): a thread that returned from dlopen()/dlclose() bumps
	 * dl_seq, wakes the control thread (cmd_seq's futex) and waits for
	 * dl_ack; the control thread executes the int3 at
	 * __utrace_agent_dl_site, in whose stop the tracer re-plans.
	 */
	UTRACE_ARENA_F_ANCHOR = 1U << 4,
	/*
	 * utrace record: a hit that finds its thread's ring full waits for
	 * the host to drain it rather than dropping the record (agent/ring.c
	 * ring_wait_room()). The wait ends, and the record is dropped and
	 * counted as before, when the host is gone or the session ends, or
	 * when the host has not drained for UTRACE_RING_WAIT_STALL_MS: a
	 * target never waits on a dead or stuck tracer.
	 */
	UTRACE_ARENA_F_RING_WAIT = 1U << 5,
};
#define UTRACE_RING_WAIT_STALL_MS 2000

static inline uint64_t utrace_abi_align(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/**
 * utrace_abi_layout - fill the size and offset fields of @h from its
 * max_probes, max_threads and ring_records. Both sides use it.
 */
static inline void utrace_abi_layout(struct utrace_arena_hdr *h)
{
	h->magic = UTRACE_ABI_MAGIC;
	h->version = UTRACE_ABI_VERSION;
	h->hdr_size = sizeof(*h);
	h->record_size = sizeof(struct utrace_abi_event);
	h->probes_off = UTRACE_ABI_PAGE;
	h->threads_off = utrace_abi_align(h->probes_off + (uint64_t)h->max_probes *
								  sizeof(struct utrace_abi_probe),
					  UTRACE_ABI_PAGE);
	h->thread_stride =
		utrace_abi_align(sizeof(struct utrace_abi_thread) + (uint64_t)h->max_probes * 8,
				 64) +
		UTRACE_ABI_CELLS * sizeof(struct utrace_abi_cell);
	h->rings_off = utrace_abi_align(h->threads_off + h->max_threads * h->thread_stride,
					UTRACE_ABI_PAGE);
	h->arena_size = utrace_abi_align(h->rings_off + (uint64_t)h->max_threads * h->ring_records *
								h->record_size,
					 UTRACE_ABI_PAGE);
}

static inline struct utrace_abi_probe *utrace_abi_probe(void *arena, uint32_t i)
{
	struct utrace_arena_hdr *h = arena;

	return (struct utrace_abi_probe *)((char *)arena + h->probes_off) + i;
}

static inline struct utrace_abi_thread *utrace_abi_thread(void *arena, uint32_t i)
{
	struct utrace_arena_hdr *h = arena;

	return (struct utrace_abi_thread *)((char *)arena + h->threads_off + i * h->thread_stride);
}

static inline uint64_t *utrace_abi_hits(struct utrace_abi_thread *t)
{
	return (uint64_t *)(t + 1);
}

/* The timing cells of slot @t, in an arena of @max_probes probes. */
static inline struct utrace_abi_cell *utrace_abi_cells(struct utrace_abi_thread *t,
						       uint32_t max_probes)
{
	return (struct utrace_abi_cell *)((char *)t +
					  utrace_abi_align(sizeof(*t) + (uint64_t)max_probes * 8,
							   64));
}

static inline struct utrace_abi_event *utrace_abi_ring(void *arena, uint32_t i)
{
	struct utrace_arena_hdr *h = arena;

	return (struct utrace_abi_event *)((char *)arena + h->rings_off) +
	       (uint64_t)i * h->ring_records;
}

/* enum utrace_abi_err - when a return value is an error (the CLI's enum proto_err). */
enum utrace_abi_err {
	UTRACE_ERR_NONE = 0,
	UTRACE_ERR_NEG32, /* a negative int (-1 and errno) */
	UTRACE_ERR_NEG64, /* a negative long */
	UTRACE_ERR_NULL, /* a NULL pointer */
	UTRACE_ERR_NONZERO, /* a nonzero int (pthread_*: the error number) */
	UTRACE_ERR_SQLITE, /* not SQLITE_OK, SQLITE_ROW or SQLITE_DONE */
	UTRACE_ERR_MAPFAIL, /* MAP_FAILED */
};

/* Is @rax an error return for @kind? (agent: probed thread; no calls) */
static inline int utrace_abi_is_error(unsigned int kind, uint64_t rax)
{
	int32_t i = (int32_t)rax;

	switch (kind) {
	case UTRACE_ERR_NEG32:
		return i < 0;
	case UTRACE_ERR_NEG64:
		return (int64_t)rax < 0;
	case UTRACE_ERR_NULL:
		return rax == 0;
	case UTRACE_ERR_NONZERO:
		return i != 0;
	case UTRACE_ERR_SQLITE:
		return i != 0 && i != 100 && i != 101;
	case UTRACE_ERR_MAPFAIL:
		return rax == UINT64_MAX;
	default:
		return 0;
	}
}

/* bpftrace-style log2 bucket: 0 -> 0, n -> 1 + floor(log2 n), capped. */
static inline unsigned int utrace_abi_log2_bucket(uint64_t n)
{
	unsigned int b = n ? 64 - __builtin_clzll(n) : 0;

	return b < UTRACE_ABI_HIST_BUCKETS ? b : UTRACE_ABI_HIST_BUCKETS - 1;
}

/*
 * The latency histogram's buckets (ABI 10), one scheme for the agent, the
 * tracer-side actions and the CLI's -H, so that every bucket's label is
 * exact whichever backend counted: bucket 0 is [0, 1ns); then for each
 * unit u (ns, us, ms) ten buckets [2^k u, 2^(k+1) u), k = 0..9, the last
 * one ending at the next unit (512ns .. 1us: every edge is a round
 * number); seconds go on doubling until the last bucket. (ABI 9 had pure
 * log2 buckets of ns, whose edges 1024ns, 1048576ns ... no unit label can
 * name: a 1 ms call showed under [512us, 1ms).) No calls, no division by
 * a variable: runs in the probed thread.
 */
#define UTRACE_ABI_UNIT_BUCKETS 10

static inline unsigned int utrace_abi_hist_bucket(uint64_t ns)
{
	uint64_t unit = 1, q;
	unsigned int u = 0, k;

	if (ns == 0)
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
	q = ns / unit;
	k = 63 - (unsigned int)__builtin_clzll(q);
	if (u < 3 && k >= UTRACE_ABI_UNIT_BUCKETS)
		k = UTRACE_ABI_UNIT_BUCKETS - 1;
	if (1 + u * UTRACE_ABI_UNIT_BUCKETS + k >= UTRACE_ABI_HIST_BUCKETS)
		return UTRACE_ABI_HIST_BUCKETS - 1;
	return 1 + u * UTRACE_ABI_UNIT_BUCKETS + k;
}

/* The edges of bucket @b: [*lo_ns, *hi_ns); the last one ends at UINT64_MAX. */
static inline void utrace_abi_hist_range(unsigned int b, uint64_t *lo_ns, uint64_t *hi_ns)
{
	static const uint64_t units[] = { 1, 1000, 1000000, 1000000000 };
	unsigned int u, k;

	if (b == 0) {
		*lo_ns = 0;
		*hi_ns = 1;
		return;
	}
	u = (b - 1) / UTRACE_ABI_UNIT_BUCKETS;
	k = (b - 1) % UTRACE_ABI_UNIT_BUCKETS;
	if (u > 3) {
		k += (u - 3) * UTRACE_ABI_UNIT_BUCKETS;
		u = 3;
	}
	*lo_ns = units[u] << k;
	if (u < 3 && k == UTRACE_ABI_UNIT_BUCKETS - 1)
		*hi_ns = units[u + 1];
	else if (b == UTRACE_ABI_HIST_BUCKETS - 1)
		*hi_ns = UINT64_MAX;
	else
		*hi_ns = units[u] << (k + 1);
}

#endif /* __UTRACE_ABI_H */
