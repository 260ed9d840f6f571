/* SPDX-License-Identifier: MIT */
/*
 * protos.h - prototypes of common library functions, ltrace style, and the
 * formatting of a call's arguments and return value from its registers.
 * Tracer process; not thread-safe (one event loop).
 *
 * A function with no entry in the table is shown with its first
 * PROTO_UNKNOWN_ARGS integer arguments in hex and its return value in hex:
 * three covers most C functions without flooding the line with registers
 * that hold nothing. protos_from_dwarf() can supply the real prototype of a
 * function built with debug information.
 */
#ifndef __UTRACE_CLI_PROTOS_H
#define __UTRACE_CLI_PROTOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define PROTO_MAX_ARGS 8
#define PROTO_UNKNOWN_ARGS 3
#define PROTO_MAX_VARARGS 16

/* How one argument or the return value is shown. */
enum proto_kind {
	PK_VOID = 0, /* return only: nothing */
	PK_INT, /* int, decimal */
	PK_UINT, /* unsigned int, decimal */
	PK_LONG, /* long / ssize_t / off_t, decimal */
	PK_ULONG, /* unsigned long / size_t, decimal */
	PK_HEX, /* integer shown in hex (flags we do not decode, handles) */
	PK_PTR, /* pointer: 0x..., NULL */
	PK_STR, /* const char *: "string" (-S bytes), NULL */
	PK_FMT, /* printf format string: a string, then the varargs it describes */
	PK_CHAR, /* int holding a character: 'a' */
	PK_FD, /* file descriptor (int) */
	PK_DIRFD, /* AT_FDCWD or a file descriptor */
	PK_OFLAGS, /* open(2) flags: O_RDONLY|O_CLOEXEC */
	PK_MODE, /* mode_t, octal */
	PK_FLOAT, /* double: the next xmm register (proto_regs.have_xmm), else '?' */
	PK_FLOAT32, /* float: the low 32 bits of the next xmm register, else '?' */
	PK_FLOATX, /* long double, complex: not shown ('?'); later xmm ones neither */
	PK_AGGR8, /* struct or union in one register: {...} */
	PK_AGGR16, /* struct or union in two registers: {...} */
	PK_AGGRMEM, /* struct or union passed in memory (> 16 bytes): {...} */
	__PK_MAX,
};

/* When a return value counts as an error in the -c table. */
enum proto_err {
	PE_NONE = 0, /* never */
	PE_NEG, /* a negative integer (-1 and errno) */
	PE_NULL, /* a NULL pointer */
	PE_NONZERO, /* a nonzero integer (pthread_*: the error number) */
	PE_SQLITE, /* not SQLITE_OK, SQLITE_ROW or SQLITE_DONE */
	PE_MAPFAIL, /* MAP_FAILED ((void *)-1) */
};

enum proto_flags {
	PF_OPEN_MODE = 1U << 0, /* last argument (mode) shown only with O_CREAT/O_TMPFILE */
	PF_NORETURN = 1U << 1, /* never returns (exit, abort) */
};

/* An enum type's enumerators (DWARF), for values shown by name. */
struct proto_enum {
	unsigned int nr;
	struct {
		int64_t value;
		const char *name;
	} v[];
};

/*
 * struct proto - one prototype. @args has @nargs kinds; PK_FMT ends it.
 * @enums[i] (@ret_enum): argument i (the return value) is of an enum type
 * and shown by its enumerator's name when it has one (DWARF prototypes).
 */
struct proto {
	const char *name;
	unsigned char ret; /* enum proto_kind */
	unsigned char err; /* enum proto_err */
	unsigned char flags; /* enum proto_flags */
	unsigned char nargs;
	unsigned char args[PROTO_MAX_ARGS];
	const struct proto_enum *enums[PROTO_MAX_ARGS];
	const struct proto_enum *ret_enum;
};

/*
 * proto_find - the prototype of function @name: exact name, else the name
 * without a "__libc_" / "__GI_" prefix or a "64" suffix (open64).
 * Return: a static prototype, or NULL if unknown.
 */
const struct proto *proto_find(const char *name);

/*
 * proto_dwarf - the prototype of function @name from the DWARF of the ELF
 * file @path (or its /usr/lib/debug/.build-id/ file, or the debug file
 * of its build-id from $DEBUGINFOD_URLS, with libdebuginfod), with
 * libdw; cached.
 * Return: a prototype valid until proto_dwarf_clear(), or NULL (no debug
 * information, no such function, or utrace built without libdw).
 */
const struct proto *proto_dwarf(const char *path, const char *name);

/*
 * proto_dwarf_set_note - have @note (NULL: none) called once for each
 * object whose DWARF proto_dwarf() fetched from a debuginfod server, with
 * the file it came in (the client's cache). It outlives proto_dwarf_clear().
 */
void proto_dwarf_set_note(void (*note)(const char *object, const char *debug_file));

/* proto_dwarf_clear - free what proto_dwarf() cached. */
void proto_dwarf_clear(void);

/*
 * proto_unknown - the prototype used for functions that have none:
 * PROTO_UNKNOWN_ARGS hex arguments, hex return value.
 */
const struct proto *proto_unknown(void);

/* Reads target memory: @len bytes or a negative errno. */
typedef ssize_t (*proto_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * struct proto_regs - where the arguments of a call are, at function entry:
 * the six integer argument registers and the stack pointer (arguments after
 * the sixth are at sp + 8, sp + 16 ... ; the return address is at sp).
 */
struct proto_regs {
	uint64_t args[6];
	uint64_t sp;
	/*
	 * The low 64 bits of xmm0..xmm7 (floating-point arguments; xmm0 the
	 * return value at a return), when the writer could read them at the
	 * hit (@have_xmm); else such values show as '?'.
	 */
	bool have_xmm;
	uint64_t xmm[8];
	proto_read_fn read;
	void *ctx;
};

/* What a formatted value is, for JSON: a number, a string or other text. */
enum proto_vkind {
	PV_NUM, /* JSON number: @num (signed if @is_signed) */
	PV_STR, /* JSON string of @raw (@raw_len bytes) */
	PV_TEXT, /* JSON string of @text (flags, NULL, characters ...) */
	PV_FLOAT, /* JSON number of @text (a finite double, "%g"), else a string */
};

#define PROTO_TEXT_LEN 96

struct proto_val {
	enum proto_vkind kind;
	bool is_signed;
	uint64_t num;
	char text[PROTO_TEXT_LEN]; /* as the text output shows it (strings: see @raw) */
	char *raw; /* PV_STR: the bytes read (malloc'ed), NULL on a read error */
	size_t raw_len;
	bool truncated; /* PV_STR: longer than -S */
};

/* struct proto_vals - the formatted arguments of one call. */
struct proto_vals {
	int nr;
	struct proto_val v[PROTO_MAX_ARGS + PROTO_MAX_VARARGS];
};

/*
 * proto_format_args - format the arguments of a call to @p from @regs (at
 * the function entry), strings cut at @strsize bytes; printf formats are
 * followed by their integer and string varargs (floating-point ones are
 * shown as '?': they are in xmm registers).
 * Return: 0; the values are in @ret (free with proto_vals_clear()).
 */
int proto_format_args(const struct proto *p, const struct proto_regs *regs, int strsize,
		      struct proto_vals *ret);

/*
 * proto_format_ret - format return value @rax of @p; strings are read
 * through @regs->read. @ret is one value (PK_VOID: text empty).
 */
void proto_format_ret(const struct proto *p, uint64_t rax, const struct proto_regs *regs,
		      int strsize, struct proto_val *ret);

/* proto_has_float - whether @p has floating-point arguments or return (xmm). */
bool proto_has_float(const struct proto *p);

/* proto_is_error - whether @rax is an error return of @p (enum proto_err). */
bool proto_is_error(const struct proto *p, uint64_t rax);

/*
 * proto_err_kind - @p's rule for error returns as the agent applies it in
 * the target (enum utrace_err_kind, utrace_errk_is_error()).
 */
unsigned int proto_err_kind(const struct proto *p);

/* proto_val_clear, proto_vals_clear - free what formatting allocated. */
void proto_val_clear(struct proto_val *v);
void proto_vals_clear(struct proto_vals *vals);

/*
 * proto_val_print_text - write @v as the text output shows it: strings
 * quoted and C-escaped ("ab\n"...), anything else as its text.
 */
void proto_val_print_text(FILE *f, const struct proto_val *v);

/* proto_val_print_json - write @v as a JSON value. */
void proto_val_print_json(FILE *f, const struct proto_val *v);

#endif /* __UTRACE_CLI_PROTOS_H */
