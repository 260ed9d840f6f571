/* SPDX-License-Identifier: MIT */
/*
 * uprobe-abi.h - what the kernel backend's BPF programs (uprobe.bpf.c,
 * run in the kernel at each uprobe hit) and lib/backend-kernel.c (the
 * tracer) share: map keys, map values and the ring buffer's records.
 * Included by both: only fixed-width types, no libc.
 *
 * An "instance" is one probe at one probe point in one process: one entry
 * uprobe link and, when the probe has a return half, one uretprobe link,
 * both with the instance number as BPF cookie. Everything the programs
 * keep is indexed by it.
 */
#ifndef __UTRACE_BPF_UPROBE_ABI_H
#define __UTRACE_BPF_UPROBE_ABI_H

#include <linux/types.h>

/* instances one layer can have at once (map sizes) */
#define UK_MAX_INST 8192
/* histogram buckets, as common/abi.h's UTRACE_ABI_HIST_BUCKETS (utrace_abi_hist_bucket()) */
#define UK_HIST 64
/* strings per record: arguments 0..5 and the return value (slot 6) */
#define UK_NSTR 7
/* one string slot: str_max (at most 1024) bytes, one more to see a cut, NUL */
#define UK_STR_SLOT 1026
/* user stack frames per record (UTRACE_REC_MAX_STACK) */
#define UK_MAX_STACK 32

/* actions, as enum utrace_probe_action */
#define UK_ACT_COUNT (1U << 0)
#define UK_ACT_HIST (1U << 1)
#define UK_ACT_RECORD (1U << 2)
#define UK_ACT_STACK (1U << 3)
/* set by the tracer: the instance has a return half (a uretprobe link) */
#define UK_RETURN (1U << 16)
/*
 * The instance is the dynamic linker's _dl_debug_state() (its r_brk):
 * the thread is marked in "dl_stop" and sent UK_DL_SIGNAL, whose ptrace
 * stop tells the tracer that the link map changed (dlopen, dlclose, the
 * libraries of a new program) before any code of a new object runs.
 */
#define UK_DLSTOP (1U << 17)
/*
 * System-wide (utrace_uprobes_opts.all_exec): the instance's link has no
 * process (perf_event_open pid -1: every process that maps the file, now
 * or later), and the program filters none either; @tgid is 0.
 */
#define UK_ANYPROC (1U << 18)
/* SIGURG: ignored by default, should one ever reach the program */
#define UK_DL_SIGNAL 23

/* the configuration of one instance (the "conf" array, by instance) */
struct uk_conf {
	__u32 tgid; /* the process, as the BPF helpers see it (0: instance free) */
	__u32 actions; /* UK_ACT_* | UK_RETURN */
	__u32 err_kind; /* enum utrace_err_kind */
	__u32 nargs; /* RECORD: integer arguments */
	__u32 str_args; /* RECORD: bit i: argument i is a string; bit 6: the return value */
	__u32 str_max; /* RECORD: bytes kept per string (1..1024) */
};

/* the figures of one instance on one CPU (the per-CPU "counts" array) */
struct uk_counts {
	__u64 calls;
	__u64 returns;
	__u64 errors;
	__u64 timed;
	__u64 sum_ns;
	__u64 min_ns; /* valid when timed */
	__u64 max_ns;
	__u64 hist[UK_HIST];
};

/*
 * An entry's timestamp (the "entry_ts" LRU hash), found again at the
 * return by the stack pointer: at entry rsp points at the return address,
 * after the ret it is 8 above. Recursion has one key per frame; a frame
 * unwound without returning (longjmp) leaves a key the LRU ages out.
 */
struct uk_ts_key {
	__u32 tid;
	__u32 inst;
	__u64 sp;
};

enum uk_rec_type {
	UK_REC_ENTRY = 1,
	UK_REC_RETURN = 2,
	UK_REC_SC = 3,
	UK_REC_SC_MEM = 4,
	UK_REC_COPY = 5, /* struct uk_copy_rec: -k's copy, just before its entry */
};

/* UK_STR_* flags, as UTRACE_REC_STR_* */
#define UK_STR_TRUNC (1U << 0)
#define UK_STR_FAULT (1U << 1)

/*
 * One record in the ring buffer: this header, then nstr string slots of
 * UK_STR_SLOT bytes, in order of their argument number (the return
 * value's last); str_len[i] / str_flags[i] describe argument i's string.
 */
struct uk_rec {
	__u32 type; /* enum uk_rec_type */
	__u32 inst;
	__u32 tgid, tid; /* as the BPF helpers see them */
	__u64 ts_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 args[6];
	__u64 retval;
	__u64 dur_ns;
	__u32 nr_stack;
	__u32 nstr;
	__u16 str_len[UK_NSTR];
	__u8 str_flags[UK_NSTR];
	__u8 pad[3];
	char comm[16]; /* bpf_get_current_comm(): the hitting thread's */
	__u64 stack[UK_MAX_STACK];
};

/*
 * -k (UK_ACT_STACK): the registers and the top of the stack at an entry
 * hit, for the host's CFI unwinder (perf's --call-graph dwarf model, as
 * the agent's copy). Its own record, output just before the entry's by
 * the same program run: the host keeps it by thread until that entry
 * comes (lib/backend-kernel.c). @len bytes of @data, read from @regs[1]
 * (rsp) up: UK_COPY_MAX, or up to the end of rsp's page when the stack
 * ends within UK_COPY_MAX (a read that crosses into no mapping fails
 * whole), or none.
 */
#define UK_COPY_MAX 4096
struct uk_copy_rec {
	__u32 type; /* UK_REC_COPY */
	__u32 tid;
	__u64 regs[8]; /* rip rsp rbp rbx r12 r13 r14 r15 (enum utrace_rec_reg) */
	__u32 len;
	__u32 pad;
	__u8 data[UK_COPY_MAX];
};

/* the largest record: the per-CPU scratch buffer the programs fill */
struct uk_rec_buf {
	struct uk_rec h;
	char data[UK_NSTR * UK_STR_SLOT];
};

/*
 * System calls (uk_sys_enter/uk_sys_exit on the raw_syscalls tracepoints):
 * counted per number for the processes in the "sc_tgids" hash, in BPF,
 * with no stop. A process waiting for its exec (a launched command still
 * in the launcher) is UK_SC_AT_EXEC until sched_process_exec makes it
 * UK_SC_TRACED, its execve then counted at its return, as strace counts
 * a launched command's from its execve.
 */
#define UK_SC_MAX 512 /* syscall numbers counted (as SYSDEC_NR_MAX) */
#define UK_SC_TRACED 1
#define UK_SC_AT_EXEC 2
/* the "sc_conf" array's flags */
#define UK_SC_FOLLOW (1U << 0) /* fork children of a traced process are traced */
#define UK_SC_RECORD (1U << 1) /* a UK_REC_SC record in the ring at each return */

/* the figures of one syscall number on one CPU (the per-CPU "sc_counts" array) */
struct uk_sc_counts {
	__u64 calls; /* returns seen (exit and exit_group: their entries) */
	__u64 errors; /* returns in [-4095, -1] (strace's) */
	__u64 sum_ns;
	__u64 min_ns; /* valid when calls */
	__u64 max_ns;
};

/* a thread inside a counted syscall (the "sc_start" hash, by tid) */
struct uk_sc_start {
	__u64 ts_ns;
	__s64 nr;
	__u64 args[6];
	/*
	 * bit i: capture i, a string, faulted at the entry (a page the
	 * process has not touched yet, which bpf_probe_read_user_str() does
	 * not fault in): tried again at the return, after the kernel read it
	 */
	__u32 retry;
	__u32 pad;
};

/*
 * The memory of a syscall copied with its record (UK_SC_RECORD): what the
 * decoders of syscalls/ read, at the moment they read it (the ptrace
 * path's entry and exit stops). The "sc_caps" array, by syscall number,
 * says which argument points at what; lib/backend-kernel.c fills it at
 * start-up from the one table of bpf/uprobe-sc.h. A capture is a string
 * (UK_CAP_STR: bpf_probe_read_user_str(), up to UK_SC_CAP_MAX bytes with
 * the NUL) or bytes: args[len_arg] (UK_CAP_LEN), the return value
 * (UK_CAP_RET), @size (UK_CAP_FIX) or args[len_arg] * @size (UK_CAP_ARR),
 * at most UK_SC_CAP_MAX - 1; UK_CAPF_STRMAX cuts them to the -s size.
 */
#define UK_SC_NCAP 4 /* captures per syscall, regions per record */
#define UK_SC_CAP_MAX 512 /* bytes per region (a power of 2) */
#define UK_CAP_STR 1
#define UK_CAP_LEN 2
#define UK_CAP_RET 3
#define UK_CAP_FIX 4
#define UK_CAP_ARR 5
#define UK_CAPF_EXIT (1U << 0) /* at the return (else at the entry) */
#define UK_CAPF_STRMAX (1U << 1) /* at most the string size (sc_conf[3]) */
#define UK_CAPF_OK (1U << 2) /* only after a success (a return outside [-4095, -1]) */
#define UK_CAPF_ERR (1U << 3) /* only after a failure */

struct uk_sc_cap {
	__u8 how; /* UK_CAP_*; 0: none */
	__u8 arg; /* the argument holding the address */
	__u8 len_arg; /* UK_CAP_LEN, UK_CAP_ARR: the argument holding the length, the count */
	__u8 flags; /* UK_CAPF_* */
	__u16 size; /* UK_CAP_FIX: bytes; UK_CAP_ARR: bytes per element */
	__u16 pad;
};

struct uk_sc_caps {
	struct uk_sc_cap cap[UK_SC_NCAP];
};

/* one region of a record: UK_SC_MEM_* flags */
#define UK_SC_MEM_EXIT (1U << 0) /* copied at the return */
#define UK_SC_MEM_TRUNC (1U << 1) /* a string longer than UK_SC_CAP_MAX - 1: cut, no NUL */

struct uk_sc_mem {
	__u64 addr;
	__u16 len; /* bytes of @data copied (a string's with its NUL) */
	__u8 flags;
	__u8 arg;
	__u32 pad;
	char data[UK_SC_CAP_MAX];
};

/*
 * One syscall, at its return (UK_SC_RECORD): its header's first fields
 * are struct uk_rec's (type, inst, tgid, tid, ts_ns), type UK_REC_SC,
 * then @nmem regions copied at the return. What was copied at its entry
 * came before, in a UK_REC_SC_MEM record of the same header (the same
 * tid, ts_ns and nr; no ret, dur_ns) and its regions, which the tracer
 * keeps until the return's record (a thread has one syscall at a time).
 * The regions are struct uk_sc_mem, each but the last whole; the last
 * ends after its @len bytes.
 */
struct uk_sc_rec {
	__u32 type; /* UK_REC_SC, UK_REC_SC_MEM */
	__u32 inst; /* ~0 */
	__u32 tgid, tid;
	__u64 ts_ns; /* the entry's */
	__s64 nr;
	__u64 args[6];
	__s64 ret;
	__u64 dur_ns; /* ~0: exit or exit_group, recorded at its entry (no return) */
	__u32 nmem;
	__u32 pad;
};

/* the largest syscall record: the per-CPU "sc_scratch" buffers the programs fill */
struct uk_sc_buf {
	struct uk_sc_rec h;
	struct uk_sc_mem mem[UK_SC_NCAP];
};

#endif /* __UTRACE_BPF_UPROBE_ABI_H */
