/* SPDX-License-Identifier: MIT */
/*
 * decode.h - internals shared by the syscall decoders: the per-syscall table
 * entry, the decoder signature, and the printing helpers (print.c) that
 * render arguments the way strace does. Runs in the tracer process; no
 * stdio beyond snprintf into the buffers of struct sysdec_call.
 *
 * A decoder, SYS_FUNC(name), is called once at syscall entry
 * (c->exiting == false) and, if it marked an argument with
 * at_exit(c, i), once more at exit (c->exiting == true) to fill it in:
 * strace's entering()/exiting() split. It also picks how the return value
 * is shown (c->rfmt) and may add text after it (c->rextra).
 */
#ifndef __UTRACE_SYSDEC_DECODE_H
#define __UTRACE_SYSDEC_DECODE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sysdec.h"

/* Class flag spellings of syscalls-x86_64.in (strace's). */
#define TD SYSDEC_TRACE_DESC
#define TF SYSDEC_TRACE_FILE
#define TP SYSDEC_TRACE_PROCESS
#define TN SYSDEC_TRACE_NETWORK
#define TS SYSDEC_TRACE_SIGNAL
#define TM SYSDEC_TRACE_MEMORY
#define TI SYSDEC_TRACE_IPC

typedef void (*sysdec_fn_t)(struct sysdec_call *c);

struct sysdec_ent {
	uint8_t nargs;
	uint32_t classes;
	sysdec_fn_t decode; /* NULL: every argument as raw hex, like strace's printargs */
	const char *name;
};

#define SYS_FUNC(name) void sysdec_dec_##name(struct sysdec_call *c)

/* Declarations of every decoder named in syscalls-x86_64.in. */
#define DECL(name) SYS_FUNC(name);
#define SYSDEC_TABLE_DECODERS
#include "table-x86_64.h"
#undef SYSDEC_TABLE_DECODERS
#undef DECL

/* How the return value is shown. */
enum sysdec_rfmt {
	RVAL_DEC = 0, /* signed decimal */
	RVAL_HEX, /* 0x7f... (mmap, brk) */
	RVAL_OCT, /* 022 (umask) */
	RVAL_UDEC, /* unsigned decimal */
	RVAL_NONE, /* never returns (exit): "?" */
	RVAL_FD, /* a new descriptor: decimal, with -y "3</etc/hosts>" */
};

/* Constant tables: { value, "NAME" } rows ending with XLAT_END. */
struct xlat {
	uint64_t val;
	const char *str;
};
#define XLAT(v)                   \
	{                         \
		(uint64_t)(v), #v \
	}
#define XLAT_PAIR(v, s)          \
	{                        \
		(uint64_t)(v), s \
	}
#define XLAT_END        \
	{               \
		0, NULL \
	}

/*
 * struct sbuf - an append-only text buffer over a fixed array; overflow
 * sets @trunc and the text ends in "..." (never a cut escape sequence).
 */
struct sbuf {
	char *buf;
	size_t size;
	size_t len;
	bool trunc;
};

void sb_init(struct sbuf *sb, char *buf, size_t size);
__attribute__((format(printf, 2, 3))) void sb_printf(struct sbuf *sb, const char *fmt, ...);
void sb_puts(struct sbuf *sb, const char *s);

/* Quoting flags of sb_quote(). */
#define QUOTE_NUL_TERM 1U /* stop at the first NUL (C string) */
#define QUOTE_FORCE_HEX 2U /* every byte as \xNN (getrandom) */
#define QUOTE_ELLIPSIS 4U /* append "..." after the closing quote */

/* sb_quote - strace's string_quote(): "..." with \n \t \" \\ and octal escapes. */
void sb_quote(struct sbuf *sb, const unsigned char *s, size_t len, unsigned int flags);
/* sb_flags - "A|B|0x40" for @val from @x; @dflt when @val is 0 (NULL: "0"). */
void sb_flags(struct sbuf *sb, const struct xlat *x, uint64_t val, const char *dflt);
/* sb_xval - the name of @val in @x, else @val in decimal, with a comment like strace. */
void sb_xval(struct sbuf *sb, const struct xlat *x, uint64_t val, const char *unknown_comment);
/* sb_ptr - "NULL" or "0x..." */
void sb_ptr(struct sbuf *sb, uint64_t addr);
/* sb_signame - "SIGINT", "SIGRTMIN", "SIGRT_3", or the number. */
void sb_signame(struct sbuf *sb, int sig);
/* sb_sigset - "[INT TERM]" / "~[RTMIN RT_1]" of @len bytes at @set. */
void sb_sigset(struct sbuf *sb, const void *set, size_t len);
/* sb_mode - "S_IFREG|0644" */
void sb_mode(struct sbuf *sb, uint32_t mode);
/* sb_timespec - "{tv_sec=1, tv_nsec=500}" of the struct timespec at @addr. */
void sb_timespec(struct sbuf *sb, struct sysdec_call *c, uint64_t addr);
/* sb_sockaddr - "{sa_family=AF_INET, sin_port=htons(80), ...}" */
void sb_sockaddr(struct sbuf *sb, struct sysdec_call *c, uint64_t addr, uint64_t len);
/* sb_cstr - a NUL-terminated string at @addr; at most @max bytes shown. */
void sb_cstr(struct sbuf *sb, struct sysdec_call *c, uint64_t addr, size_t max);

/*
 * -X raw and verbose for a value a decoder composes from several tables
 * (open's access mode and flags): sb_raw_begin() prints @val with @fmt;
 * true means raw (done). Otherwise print the names, then sb_raw_end()
 * (verbose: they end up in a comment after the number).
 */
bool sb_raw_begin(struct sbuf *sb, uint64_t val, const char *fmt);
void sb_raw_end(struct sbuf *sb);

/* xlat_name - the name of @val in @x, or NULL. */
const char *xlat_name(const struct xlat *x, uint64_t val);

/*
 * umove - copy @len bytes of tracee memory at @addr into @buf.
 * Return: 0 if all of it was read; negative errno otherwise.
 */
int umove(struct sysdec_call *c, uint64_t addr, void *buf, size_t len);

/* Argument writers: each renders argument @i into c->out[i]. */
struct sbuf *arg_sb(struct sysdec_call *c, int i, struct sbuf *sb);
void arg_end(struct sysdec_call *c, int i, struct sbuf *sb);
void arg_int(struct sysdec_call *c, int i); /* (int) decimal */
void arg_long(struct sysdec_call *c, int i); /* (long) decimal */
void arg_ulong(struct sysdec_call *c, int i); /* unsigned decimal */
void arg_hex(struct sysdec_call *c, int i); /* 0 or 0x... */
void arg_oct(struct sysdec_call *c, int i); /* 0644 */
void arg_ptr(struct sysdec_call *c, int i); /* NULL or 0x... */
void arg_fd(struct sysdec_call *c, int i); /* int; with -y "3</etc/hosts>" */
/* -y: "<...>" of descriptor @fd appended to @sb (nothing without -y or for a closed fd) */
void sb_fd_details(struct sbuf *sb, const struct sysdec_call *c, int fd);
extern int sysdec_decode_fds_level;
void arg_dirfd(struct sysdec_call *c, int i); /* AT_FDCWD or int */
void arg_path(struct sysdec_call *c, int i); /* file name: not cut at -S, like strace */
void arg_str(struct sysdec_call *c, int i); /* C string, cut at -S */
void arg_buf(struct sysdec_call *c, int i, uint64_t len, unsigned int qflags); /* data */
void arg_flags(struct sysdec_call *c, int i, const struct xlat *x, const char *dflt);
void arg_xval(struct sysdec_call *c, int i, const struct xlat *x, const char *comment);
void arg_signal(struct sysdec_call *c, int i);
__attribute__((format(printf, 3, 4))) void arg_printf(struct sysdec_call *c, int i, const char *fmt,
						      ...);
/* at_exit - argument @i is an output: decode it at exit (strace's exiting()). */
static inline void at_exit(struct sysdec_call *c, int i)
{
	c->decoded_at_exit[i] = true;
}
/* show - only the first @n arguments are shown (strace omits unused ones). */
static inline void show(struct sysdec_call *c, int n)
{
	c->nr_out = n;
}

#endif /* __UTRACE_SYSDEC_DECODE_H */
