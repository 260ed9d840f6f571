/* SPDX-License-Identifier: MIT */
/*
 * common.h - conventions shared by every public utrace header: export macro,
 * opts structs, error codes and the logging callback.
 */
#ifndef __UTRACE_COMMON_H
#define __UTRACE_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UTRACE_API __attribute__((visibility("default")))

/*
 * Opts structs (libbpf pattern): 'size_t sz' first, 'size_t :0;' last.
 * UTRACE_OPTS zero-fills the whole struct, padding included, and sets sz.
 */
#define UTRACE_OPTS(TYPE, NAME, ...)                                                               \
	struct TYPE NAME = ({                                                                      \
		memset(&NAME, 0, sizeof(struct TYPE));                                             \
		(struct TYPE){ .sz = sizeof(struct TYPE), __VA_ARGS__ };                            \
	})

/**
 * enum utrace_errno - utrace-specific error codes, above the errno range.
 * Functions return them negated, like any errno.
 */
enum utrace_errno {
	__UTRACE_ERRNO__START = 4000,
	UTRACE_ERRNO__SPEC = __UTRACE_ERRNO__START, /* malformed probe spec */
	UTRACE_ERRNO__NOMATCH,			    /* spec matches nothing */
	UTRACE_ERRNO__ELF,			    /* malformed or unsupported ELF file */
	UTRACE_ERRNO__NOT_PATCHABLE,		    /* site cannot be probed */
	UTRACE_ERRNO__RELOC,			    /* instruction cannot run out of line */
	UTRACE_ERRNO__AGENT_PROTO,		    /* lib/agent protocol mismatch */
	UTRACE_ERRNO__PROBE_BUSY,		    /* probe in use */
	UTRACE_ERRNO__TRACED,			    /* process already has a tracer */
	UTRACE_ERRNO__NOT_YET,			    /* feature not implemented yet */
	UTRACE_ERRNO__REMOTE_FAULT,		    /* a remote function call crashed */
	UTRACE_ERRNO__INJECT,			    /* dlopen/dlsym/init failed in the target */
	UTRACE_ERRNO__UNSAFE_PATH,		    /* file others could replace */
	__UTRACE_ERRNO__END,
};

/**
 * @brief **utrace_strerror()** writes a description of a (negative or
 * positive) errno or utrace error code into @buf.
 * @param err error code, as returned by a utrace function
 * @param buf destination buffer
 * @param size size of @buf
 * @return 0 on success; -EINVAL if @err is unknown (a generic text is still
 * written); -ERANGE if @buf is too small (the text is truncated)
 */
UTRACE_API int utrace_strerror(int err, char *buf, size_t size);

enum utrace_print_level {
	UTRACE_WARN,
	UTRACE_INFO,
	UTRACE_DEBUG,
};

typedef int (*utrace_print_fn_t)(enum utrace_print_level level, const char *fmt, va_list ap);

/**
 * @brief **utrace_set_print()** installs the callback through which the
 * library (and the agent, via the tracer) reports messages. The library never
 * writes to stdio itself. The default callback prints warnings to stderr,
 * and more when UTRACE_LOG_LEVEL=info|debug is set.
 * @param fn the new callback, or NULL to silence all messages
 * @return the previous callback (never fails)
 */
UTRACE_API utrace_print_fn_t utrace_set_print(utrace_print_fn_t fn);

#ifdef __cplusplus
}
#endif

#endif /* __UTRACE_COMMON_H */
