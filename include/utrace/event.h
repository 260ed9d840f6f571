/* SPDX-License-Identifier: MIT */
/*
 * event.h - the one event record of utrace: what every backend delivers
 * and every writer consumes (text, JSON, Chrome, a recording). A writer
 * never learns the backend: the agent's ring records, the ptrace
 * backend's stops and the kernel's BPF ring buffer all become a struct
 * utrace_record, handed to a callback by utrace_uprobes__poll(), as
 * libbpf's ring_buffer__poll() hands its samples.
 *
 * Lifetime: the record and everything it points to (strings, the stack)
 * are borrowed for the duration of the callback; copy what you keep.
 * Times are CLOCK_MONOTONIC nanoseconds on every backend.
 */
#ifndef __UTRACE_REC_H
#define __UTRACE_REC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "utrace/common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct utrace_probe;
struct utrace_uprobes;

enum utrace_record_type {
	UTRACE_REC_ENTRY = 1, /* a function entry (RECORD) */
	UTRACE_REC_RETURN, /* its return (RECORD with a return half) */
	UTRACE_REC_SYSCALL_ENTER,
	UTRACE_REC_SYSCALL_EXIT,
	UTRACE_REC_SIGNAL,
	UTRACE_REC_FORK,
	UTRACE_REC_EXEC,
	UTRACE_REC_EXIT,
	UTRACE_REC_LOST, /* @lost records were dropped (full ring): never silent */
	UTRACE_REC_MODULE, /* a C probe module's record (utrace_module__emit()) */
};

/* UTRACE_REC_STR_* flags of one string */
#define UTRACE_REC_STR_TRUNC (1U << 0) /* longer than str_max: cut */
#define UTRACE_REC_STR_FAULT (1U << 1) /* the pointer could not be read: @str is NULL */

/* utrace_record.flags */
#define UTRACE_REC_F_INJECTED (1U << 0) /* RETURN: made by ACT_INJECT, the body did not run */

/* utrace_mem.flags */
#define UTRACE_MEM_EXIT (1U << 0) /* copied at the syscall's return (else at its entry) */
#define UTRACE_MEM_TRUNC (1U << 1) /* a string longer than what was copied: no NUL in @data */

/**
 * struct utrace_mem - a region of the process's memory copied with a
 * SYSCALL_* record (the kernel backend's UTRACE_SC_RECORD): @len bytes at
 * @addr (the value of argument @arg), as they were at the syscall's entry
 * or, with UTRACE_MEM_EXIT, at its return.
 */
struct utrace_mem {
	uint64_t addr;
	size_t len;
	unsigned int flags;
	unsigned int arg;
	const void *data;
};

/* maximum user stack frames carried by one event */
#define UTRACE_REC_MAX_STACK 32

/* utrace_record.regs[]: x86-64 registers of a stack copy, in this order */
enum utrace_rec_reg {
	UTRACE_REC_REG_RIP = 0,
	UTRACE_REC_REG_RSP,
	UTRACE_REC_REG_RBP,
	UTRACE_REC_REG_RBX,
	UTRACE_REC_REG_R12,
	UTRACE_REC_REG_R13,
	UTRACE_REC_REG_R14,
	UTRACE_REC_REG_R15,
	UTRACE_REC_NR_REGS,
};

/**
 * struct utrace_record - one event.
 * @sz: size of this struct (fields are only added at the end)
 * @type: enum utrace_record_type
 * @pid, @tid: process and thread
 * @ts_ns: when it happened (CLOCK_MONOTONIC)
 * @probe: ENTRY/RETURN: the probe (NULL for events of no probe)
 * @addr: ENTRY/RETURN: the probe point's runtime address
 * @name: ENTRY/RETURN: the point's display name ("libc.so.6:malloc")
 * @symbol, @object, @offset: ENTRY/RETURN: the function (NULL for a raw
 *	address), the object's path, the point's offset in the function
 * @nargs, @args: ENTRY: the integer arguments recorded (SysV order)
 * @retval: RETURN: rax; SYSCALL_EXIT: the return value
 * @dur_ns: RETURN: time since the matching entry (0: not known)
 * @depth: ENTRY/RETURN: nesting depth of this thread's probed calls
 * @str, @str_len, @str_flags: ENTRY: argument i as a string copied at the
 *	hit when the probe asked for it (str_args), else NULL
 * @ret_str, @ret_str_len, @ret_str_flags: RETURN: the return value as a string
 * @nr_stack, @stack: return addresses, innermost first (ACT_STACK)
 * @sysno: SYSCALL_*: the syscall number
 * @sig: SIGNAL: the signal; EXIT: the terminating signal, or 0
 * @status: EXIT: the exit status
 * @child: FORK: the new process
 * @lost: LOST: records dropped since the last LOST event
 * @flags: UTRACE_REC_F_* bits
 * @comm: ENTRY/RETURN: the hitting thread's name (/proc/TID/comm) as the
 *	kernel backend sees it at the hit, else NULL (read at @sz)
 * @module, @module_probe: MODULE: the module (utrace_uprobes__load_module()'s
 *	id) and the index of the emitting probe in its table; @nargs and
 *	@args are the values emitted, @probe the probe registered on that
 *	table entry (read at @sz)
 * @nr_mem, @mem: SYSCALL_*: the regions of memory copied with it (read at
 *	@sz), for a decoder to read instead of the process's memory: the
 *	kernel backend's strings, buffers and out-structs (bpf/uprobe-sc.h)
 * @regs, @nr_regs: ENTRY with ACT_STACK on the agent backend: the
 *	registers at the hit that a CFI unwinder starts from, in enum
 *	utrace_rec_reg order (rip = the probed address); NULL, 0 when the
 *	hit carried no copy (read at @sz)
 * @stack_sp, @stack_data, @stack_len: with @regs: the @stack_len bytes of
 *	the thread's stack at @stack_sp (= rsp) as they were at the hit, for
 *	an unwinder to read instead of the process's memory (perf's
 *	--call-graph dwarf model); what lies outside is not known (read at @sz)
 */
struct utrace_record {
	size_t sz;
	int type;
	pid_t pid;
	pid_t tid;
	uint64_t ts_ns;
	struct utrace_probe *probe;
	uint64_t addr;
	const char *name;
	const char *symbol;
	const char *object;
	uint64_t offset;
	unsigned int nargs;
	uint64_t args[6];
	uint64_t retval;
	uint64_t dur_ns;
	unsigned int depth;
	const char *str[6];
	size_t str_len[6];
	unsigned int str_flags[6];
	const char *ret_str;
	size_t ret_str_len;
	unsigned int ret_str_flags;
	unsigned int nr_stack;
	const uint64_t *stack;
	long sysno;
	int sig;
	int status;
	pid_t child;
	uint64_t lost;
	unsigned int flags;
	const char *comm;
	int module;
	unsigned int module_probe;
	unsigned int nr_mem;
	const struct utrace_mem *mem;
	const uint64_t *regs;
	unsigned int nr_regs;
	uint64_t stack_sp;
	const uint8_t *stack_data;
	size_t stack_len;
};

/**
 * The callback of utrace_uprobes__poll(). Return 0 to go on; a nonzero
 * value stops the poll, which returns it.
 */
typedef int (*utrace_record_fn_t)(const struct utrace_record *ev, void *ctx);

/**
 * @brief **utrace_uprobes__poll()** delivers the events of @up's probes
 * (ACT_RECORD), in time order per thread, to @fn, waiting at most
 * @timeout_ms for the first one (0: do not wait; -1: wait until one
 * comes). With the ptrace backend it runs the session for that long
 * (the stops are where the events come from); with the agent it drains
 * the target's rings. Dropped records arrive as UTRACE_REC_LOST.
 * @return the number of events delivered (>= 0); @fn's nonzero return;
 * or a negative error code: -EBADMSG when a process's agent arena failed a
 * check (the target wrote what its agent never would): said through the
 * log, that process detached (its probes out), the others traced on
 */
UTRACE_API int utrace_uprobes__poll(struct utrace_uprobes *up, utrace_record_fn_t fn, void *ctx,
				    int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* __UTRACE_REC_H */
