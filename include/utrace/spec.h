/* SPDX-License-Identifier: MIT */
/*
 * spec.h - probe specs (the SPEC grammar of docs/cli.md) and their
 * resolution against a process image. Runs in the tracer process.
 *
 *   SPEC    := [OBJECT ':'] TARGET
 *   TARGET  := PATTERN ['+' OFFSET] | '0x' HEXADDR | PATTERN '@plt'
 *   PATTERN := NAME | GLOB | '/' REGEX '/'
 *
 * OBJECT: absent = the main executable; '*' = every object; with a '/' =
 * a path (compared by device and inode, then real path); with a glob
 * character = a glob on basenames; otherwise a name matched against
 * basenames: equal, or followed by ".so", "-<digit>" or (for a name ending
 * in ".so") ".<digit>": 'libc' matches libc.so.6 and libc-2.31.so, not
 * libcrypt.so.1. OBJECT cannot contain ':'.
 * OFFSET: decimal or 0x-hex. HEXADDR: a file address in OBJECT ('*' is
 * refused). PATTERN@plt: stubs of OBJECT's PLT (the main executable's when
 * OBJECT is absent). '@' is allowed only in the '@plt' suffix.
 * /REGEX/: a POSIX extended regular expression that matches anywhere in
 * the name (anchor it with ^ and $), as ltrace's /regex/ rules; between
 * the slashes any character but a blank may appear ('+', '@', ':', '/'
 * included: the first ':' of the SPEC ends OBJECT, the last '/' ends
 * REGEX, before an optional '@plt' or '+OFFSET').
 */
#ifndef __UTRACE_SPEC_H
#define __UTRACE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "utrace/common.h"
#include "utrace/elf.h"

#ifdef __cplusplus
extern "C" {
#endif

enum utrace_spec_flags {
	UTRACE_SPEC_ADDR = 1U << 0, /* TARGET is 0xHEXADDR (file address in OBJECT) */
	UTRACE_SPEC_PLT = 1U << 1, /* PATTERN@plt */
	UTRACE_SPEC_OFFSET = 1U << 2, /* PATTERN+OFFSET */
	UTRACE_SPEC_GLOB = 1U << 3, /* PATTERN has glob characters */
	UTRACE_SPEC_REGEX = 1U << 4, /* PATTERN is /REGEX/ (pattern: the REGEX) */
};

/** struct utrace_spec - a parsed SPEC. Strings are owned (utrace_spec__clear). */
struct utrace_spec {
	char *text; /* the SPEC as given */
	char *object; /* NULL: the main executable; "*": every object; else path/name/glob */
	char *pattern; /* symbol name or glob; NULL with UTRACE_SPEC_ADDR */
	uint64_t offset; /* with UTRACE_SPEC_OFFSET */
	uint64_t addr; /* with UTRACE_SPEC_ADDR */
	uint32_t flags; /* enum utrace_spec_flags */
};

/**
 * @brief **utrace_spec__parse()** parses @text into @ret.
 * @param errbuf on failure, one line saying what is wrong, e.g.
 * "bad spec 'libc:': missing symbol after ':'" (may be NULL); control
 * bytes of @text are shown escaped (\x0a); emptied on success
 * @return 0 on success; -UTRACE_ERRNO__SPEC on a malformed spec (@ret
 * untouched); -ENOMEM
 */
UTRACE_API int utrace_spec__parse(const char *text, struct utrace_spec *ret, char *errbuf,
				  size_t errlen);

/** @brief **utrace_spec__clear()** frees the strings of @spec; accepts NULL. */
UTRACE_API void utrace_spec__clear(struct utrace_spec *spec);

/**
 * struct utrace_object - one ELF object of a process image: the main
 * executable or a shared library, mapped (live process) or to be loaded
 * (launch mode: the executable and its DT_NEEDED closure).
 */
struct utrace_object {
	const char *path; /* resolved path */
	uint64_t bias; /* load bias: runtime address = file address + bias */
	bool is_main; /* the main executable */
	bool live; /* mapped in a live process (bias is real) */
};

struct utrace_image;

/**
 * @brief **utrace_image__open_pid()** builds the image of live process @pid
 * from its maps (objects with their load biases).
 * @return new object; NULL with errno set (ESRCH, EPERM, EACCES)
 */
UTRACE_API struct utrace_image *utrace_image__open_pid(pid_t pid);

/**
 * @brief **utrace_image__open_exec()** builds the image a launch of @path
 * would have: the executable and the libraries it needs (DT_NEEDED, searched
 * through RPATH/RUNPATH, LD_LIBRARY_PATH and the system directories). Biases
 * are 0 (file addresses).
 * @return new object; NULL with errno set
 */
UTRACE_API struct utrace_image *utrace_image__open_exec(const char *path);

/** @brief **utrace_image__close()** frees @img; accepts NULL. */
UTRACE_API void utrace_image__close(struct utrace_image *img);

/** @return the number of objects in @img. */
UTRACE_API size_t utrace_image__object_count(const struct utrace_image *img);

/** @return object @i (borrowed), or NULL. */
UTRACE_API const struct utrace_object *utrace_image__object(const struct utrace_image *img,
							    size_t i);

/**
 * @brief **utrace_image__elf()** opens (once, then cached) the ELF file of
 * object @i.
 * @return borrowed pointer; NULL with errno set on failure
 */
UTRACE_API struct utrace_elf *utrace_image__elf(struct utrace_image *img, size_t i);

/** struct utrace_match - one probe point a spec resolved to. */
struct utrace_match {
	size_t object; /* index into the image */
	/*
	 * @symbol: borrowed from the ELF. For 0xHEXADDR, the function that
	 * contains the address (@offset into it), or NULL if none does.
	 */
	const char *symbol;
	uint64_t file_addr; /* file address of the probe point */
	uint64_t addr; /* runtime address (file_addr + bias) */
	uint64_t sym_size; /* size of the symbol, 0 if unknown */
	uint64_t offset; /* offset of the probe point in the symbol */
	uint32_t sym_flags; /* enum utrace_sym_flags (UTRACE_SYM_ALIAS, _PLT ...) */
};

/**
 * @brief **utrace_image__resolve()** resolves @spec against @img. Every
 * name is a match, aliases included (they share an address; the primary
 * name comes first). With '+OFFSET', symbols whose known size is not
 * larger than OFFSET are skipped.
 * @param ret_matches on success, a malloc'ed array (free() it), sorted by
 * object then address; NULL when there is no match
 * @param ret_nr on success, number of matches
 * @param ret_pending on success, set to true if the spec names an object that
 * is not in the image (it may still be loaded with dlopen); may be NULL
 * @return 0 on success (even with no match); negative errno on failure:
 * -ENOENT for an object path that does not exist; -ERANGE when PATTERN is
 * not a glob and OFFSET is past the end of every symbol of that name;
 * -UTRACE_ERRNO__ELF (or the errno of open()) when the one selected object
 * cannot be read (with several, unreadable ones are skipped with a
 * warning); ret_* are untouched on failure
 */
UTRACE_API int utrace_image__resolve(struct utrace_image *img, const struct utrace_spec *spec,
				     struct utrace_match **ret_matches, size_t *ret_nr,
				     bool *ret_pending);

/**
 * @brief **utrace_image__match_is()** says whether match @m of @img (from
 * utrace_image__resolve()) is also a match of @spec: the same object
 * selection and name rules (a pattern with "::" against demangled names,
 * PATTERN@plt against PLT stubs only), an address SPEC the same file
 * address; OFFSET is not compared. Used for exclusions
 * (utrace_probe_opts.exclude, ltrace's '-' rules).
 * @return true if @spec selects @m's object and names its function
 */
UTRACE_API bool utrace_image__match_is(struct utrace_image *img, const struct utrace_match *m,
				       const struct utrace_spec *spec);

#ifdef __cplusplus
}
#endif

#endif /* __UTRACE_SPEC_H */
