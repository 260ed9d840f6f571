/* SPDX-License-Identifier: MIT */
/*
 * sysdec.h - x86-64 system-call metadata and strace-style decoding.
 * Runs in the tracer process. Table-driven (syscalls/table-x86_64.h: nr,
 * nargs, class flags, decoder, name), constant tables in syscalls/xlat/.
 *
 * Decoding is two-phase, like strace: sysdec_decode_entry() at the entry
 * stop formats the input arguments (memory may change or vanish later:
 * execve), sysdec_decode_exit() at the exit stop formats output arguments
 * (read buffers, struct stat, pipe fds) and the return value.
 */
#ifndef __UTRACE_SYSDEC_H
#define __UTRACE_SYSDEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Class flags (strace's TD, TF, ...), used by %class filters. */
enum sysdec_class {
	SYSDEC_TRACE_FILE = 1U << 0, /* %file: takes a file name */
	SYSDEC_TRACE_DESC = 1U << 1, /* %desc: takes or returns a file descriptor */
	SYSDEC_TRACE_PROCESS = 1U << 2, /* %process */
	SYSDEC_TRACE_NETWORK = 1U << 3, /* %network */
	SYSDEC_TRACE_SIGNAL = 1U << 4, /* %signal */
	SYSDEC_TRACE_MEMORY = 1U << 5, /* %memory */
	SYSDEC_TRACE_IPC = 1U << 6, /* %ipc */
};

#define SYSDEC_NR_MAX 512 /* syscall numbers are < SYSDEC_NR_MAX */

/** sysdec_name - name of syscall @nr, or NULL if unknown. */
const char *sysdec_name(long nr);

/** sysdec_nr - number of the syscall called @name, or -1. */
long sysdec_nr(const char *name);

/** sysdec_classes - enum sysdec_class bits of @nr (0 if unknown). */
uint32_t sysdec_classes(long nr);

/** sysdec_nargs - number of arguments of @nr (6 if unknown). */
int sysdec_nargs(long nr);

/**
 * struct sysdec_set - a set of syscall numbers, from a -s SET expression.
 */
struct sysdec_set {
	uint64_t bits[SYSDEC_NR_MAX / 64];
};

static inline bool sysdec_set_has(const struct sysdec_set *s, long nr)
{
	return nr >= 0 && nr < SYSDEC_NR_MAX && (s->bits[nr / 64] >> (nr % 64)) & 1;
}

/**
 * sysdec_parse_set - parse a SET: comma list of names and classes
 * (%file %process %network %signal %memory %desc %ipc) and /REGEX (POSIX
 * extended, matched against the names), each optionally prefixed with '!',
 * or a leading '!' negating the whole list; NULL or "all" means every
 * syscall. Unknown names are errors, except after '?' ("?foo"), as in strace.
 * @errbuf: one line on failure, e.g. "unknown syscall 'opn' in -s 'opn'"
 * Return: 0 on success; -EINVAL on a bad set.
 */
int sysdec_parse_set(const char *set, struct sysdec_set *ret, char *errbuf, size_t errlen);

/*
 * strace's -X: how named constants (flags, enums, AT_FDCWD) are printed:
 * "O_RDONLY|O_CLOEXEC" (abbrev, the default), "0x80000" (raw), or
 * the number with the names in a C comment after it (verbose).
 */
enum sysdec_xlat_style { SYSDEC_XLAT_ABBREV, SYSDEC_XLAT_RAW, SYSDEC_XLAT_VERBOSE };

/* sysdec_set_xlat_style - set the -X style for every later decode (one per process). */
void sysdec_set_xlat_style(enum sysdec_xlat_style style);

/*
 * strace's -y (1: the paths of descriptors, and the cwd after AT_FDCWD)
 * and -yy (2: and sockets' protocols and addresses, devices' numbers,
 * pidfds' pids): "3</etc/hosts>". Needs sysdec_call.tid. One per process.
 */
void sysdec_set_decode_fds(int level);

/*
 * sysdec_fd_details - what descriptor @fd of thread @tid refers to, as
 * strace prints it after the number at -y (@level 1) or -yy (2), in @buf:
 * "</etc/hosts>", "</tmp/x>(deleted)", "<TCP:[127.0.0.1:80]>". Reads
 * /proc/TID (fdinfo.c). Return: 0, or negative errno (no such fd).
 */
int sysdec_fd_details(pid_t tid, int fd, int level, char *buf, size_t len);

/* sysdec_cwd - the working directory of @tid in @buf, quoted as strace. Return: 0 or -errno. */
int sysdec_cwd(pid_t tid, char *buf, size_t len);

/* How an argument (or the return value) was rendered, for JSON output. */
enum sysdec_kind {
	SYSDEC_INT, /* a plain decimal integer: JSON number */
	SYSDEC_STR, /* a string read from memory: JSON string, text shows it quoted */
	SYSDEC_TEXT, /* anything else (flags, hex, structs): JSON string of the text */
};

#define SYSDEC_ARG_LEN 1024

struct sysdec_arg {
	enum sysdec_kind kind;
	char text[SYSDEC_ARG_LEN]; /* as strace prints it (strings quoted and escaped) */
	char *raw; /* SYSDEC_STR: unescaped bytes (malloc'ed), else NULL */
	size_t raw_len;
	bool truncated; /* SYSDEC_STR: @raw is the first -s bytes of a longer string */
};

/* Reads tracee memory; returns bytes read or negative errno. */
typedef ssize_t (*sysdec_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/**
 * struct sysdec_call - one syscall being decoded; the caller fills nr, args,
 * read, ctx, strsize; the decoder fills the rest. Zero it before its first
 * use; it can then be reused call after call (sysdec_decode_entry() frees
 * what the previous call left). @read and @ctx must still be valid at
 * sysdec_decode_exit(), which reads the output arguments. Not thread-safe:
 * one struct per traced thread.
 */
struct sysdec_call {
	long nr;
	uint64_t args[6];
	sysdec_read_fn read;
	void *ctx;
	int strsize; /* -S: bytes of strings to show */
	uint64_t sp; /* stack pointer at the syscall (rt_sigreturn's frame); 0 = unknown */
	/*
	 * The return is a success whatever its value: strace's -e inject=
	 * retval=-1 prints "= -1", not an errno. Set before sysdec_decode_exit().
	 */
	bool success;
	pid_t tid; /* -y: whose /proc/TID/fd the descriptors are in; 0 = not decorated */
	/* filled by the decoder */
	int nr_out; /* number of arguments shown */
	struct sysdec_arg out[6];
	bool decoded_at_exit[6]; /* out[i] still to be filled at exit */
	long ret; /* raw return value (from rax) */
	bool failed; /* ret in [-4095, -1] */
	const char *errname; /* "ENOENT" when failed, else NULL */
	struct sysdec_arg retval; /* "3", "0x7f...", "-1 ENOENT (No such file or directory)" */
	/* decoder-private state, kept between entry and exit */
	bool exiting; /* sysdec_decode_exit() is running */
	bool entered; /* sysdec_decode_entry() ran */
	bool want_exit; /* run the decoder at exit even with no output args */
	unsigned int rfmt; /* enum sysdec_rfmt of the return value */
	uint64_t priv[2]; /* values a decoder saves at entry for exit */
	char rextra[SYSDEC_ARG_LEN]; /* " (flags O_RDONLY)" after the return value */
};

/** sysdec_decode_entry - format the input arguments of @call. Return: 0 or negative errno. */
int sysdec_decode_entry(struct sysdec_call *call);

/** sysdec_decode_exit - format output arguments and the return value @ret. */
int sysdec_decode_exit(struct sysdec_call *call, long ret);

/** sysdec_call_clear - free what the decoder allocated in @call. */
void sysdec_call_clear(struct sysdec_call *call);

/**
 * sysdec_format - the strace line of @call without a newline:
 * "openat(AT_FDCWD, \"/etc/hosts\", O_RDONLY|O_CLOEXEC) = 3". If @finished is
 * false (exit_group, a task killed inside a syscall) the return is " = ?".
 * Return: the length the full line needs (like snprintf); @buf is always
 * NUL-terminated when @len > 0.
 */
int sysdec_format(const struct sysdec_call *call, bool finished, char *buf, size_t len);

/**
 * sysdec_format_args - "AT_FDCWD, \"/etc/hosts\", O_RDONLY|O_CLOEXEC": the
 * arguments of @call joined by ", ". Return: as sysdec_format().
 */
int sysdec_format_args(const struct sysdec_call *call, char *buf, size_t len);

/**
 * sysdec_is_error - does @ret (raw rax) of syscall @nr mean failure?
 * Return: the positive errno, or 0 on success. Syscalls returning addresses
 * (mmap, brk) only fail in [-4095, -1], like everything else on x86-64.
 */
int sysdec_is_error(long nr, long ret);

/** sysdec_errno_desc - "No such file or directory" for ENOENT; strace's text
 * for the kernel-internal ERESTART* codes; NULL if unknown. */
const char *sysdec_errno_desc(int err);

/** sysdec_errno_name - "ENOENT" for 2, NULL if unknown. */
const char *sysdec_errno_name(int err);

/** sysdec_signal_name - "SIGINT" for 2, NULL if unknown. */
const char *sysdec_signal_name(int sig);

/** sysdec_class_by_name - the enum sysdec_class named @cls ("%file" or "file"), or 0. */
uint32_t sysdec_class_by_name(const char *cls);

#endif /* __UTRACE_SYSDEC_H */
