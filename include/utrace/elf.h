/* SPDX-License-Identifier: MIT */
/*
 * elf.h - ELF files and their function symbols (on libelf). Runs in the
 * tracer process.
 *
 * Addresses here are "file addresses": the st_value / p_vaddr space of the
 * file. A live mapping adds the object's load bias (utrace_object).
 */
#ifndef __UTRACE_ELF_H
#define __UTRACE_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "utrace/common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct utrace_elf;

enum utrace_sym_flags {
	UTRACE_SYM_SYMTAB = 1U << 0, /* seen in .symtab */
	UTRACE_SYM_DYNSYM = 1U << 1, /* seen in .dynsym */
	UTRACE_SYM_PLT = 1U << 2,    /* PLT stub: name is the called function, addr the stub */
	UTRACE_SYM_GLOBAL = 1U << 3,
	UTRACE_SYM_WEAK = 1U << 4,
	UTRACE_SYM_IFUNC = 1U << 5, /* STT_GNU_IFUNC: addr is the resolver */
	/*
	 * Another name at the same address is the primary one (exported
	 * before local, then fewer leading underscores, then global before
	 * weak, then shorter: memalign, not __libc_memalign). Every address
	 * with function symbols has exactly one primary name; placing one
	 * probe per address means skipping the aliases.
	 */
	UTRACE_SYM_ALIAS = 1U << 6,
};

/** struct utrace_sym - one function symbol (or PLT stub). */
struct utrace_sym {
	const char *name; /* owned by the utrace_elf; no "@plt" suffix, no version */
	uint64_t addr;	  /* file address */
	uint64_t size;	  /* 0 if unknown */
	uint32_t flags;	  /* enum utrace_sym_flags */
};

/**
 * @brief **utrace_elf__open()** opens an ELF file and reads its function
 * symbols from .symtab and .dynsym (merged: one entry per address and name,
 * "@VERSION" suffixes cut off), and its PLT stubs (.plt, .plt.sec and
 * .plt.got) named after the functions they call. The file is mmap()ed and
 * stays mapped until utrace_elf__close().
 * @param path file path
 * @return new object to close with utrace_elf__close(); NULL with errno set
 * on failure (ENOENT, EACCES, or UTRACE_ERRNO__ELF for a non-ELF file)
 */
UTRACE_API struct utrace_elf *utrace_elf__open(const char *path);

/** @brief **utrace_elf__close()** frees @elf; accepts NULL. */
UTRACE_API void utrace_elf__close(struct utrace_elf *elf);

/** @return the path given to utrace_elf__open() (borrowed). */
UTRACE_API const char *utrace_elf__path(const struct utrace_elf *elf);

/** @return true for ET_DYN (PIE executables, shared libraries). */
UTRACE_API bool utrace_elf__is_dyn(const struct utrace_elf *elf);

/**
 * @return true for an object built by the Go toolchain: a "Go" build-id
 * note (NT_GO_BUILDID, .note.go.buildid), a .gopclntab section or a
 * runtime.goexit symbol (executables, also stripped, and -buildmode=c-shared
 * libraries).
 */
UTRACE_API bool utrace_elf__is_go(const struct utrace_elf *elf);

/** @return the number of symbols; symbols are sorted by address, then name. */
UTRACE_API size_t utrace_elf__sym_count(const struct utrace_elf *elf);

/**
 * @return symbol @i (borrowed), or NULL if out of range. PLT stubs
 * (UTRACE_SYM_PLT) are in the same array; aliases carry UTRACE_SYM_ALIAS.
 */
UTRACE_API const struct utrace_sym *utrace_elf__sym(const struct utrace_elf *elf, size_t i);

/**
 * @brief **utrace_elf__find_sym()** finds the function containing @addr
 * (addr in [sym.addr, sym.addr + size), or the closest preceding symbol of
 * unknown size); of several names at that address, the primary one.
 * @return borrowed pointer, or NULL if none
 */
UTRACE_API const struct utrace_sym *utrace_elf__find_sym(const struct utrace_elf *elf,
							 uint64_t addr);

/**
 * @brief **utrace_elf__file_offset()** translates a file address to an offset
 * in the file through the PT_LOAD program headers.
 * @return 0 on success and *ret_off set; -ENOENT if @addr is in no segment
 */
UTRACE_API int utrace_elf__file_offset(const struct utrace_elf *elf, uint64_t addr,
				       uint64_t *ret_off);

/**
 * @brief **utrace_elf__read()** copies file bytes at file address @addr
 * (from the PT_LOAD segment that contains it).
 * @return number of bytes copied (may be short at a segment end); negative
 * errno on failure
 */
UTRACE_API ssize_t utrace_elf__read(const struct utrace_elf *elf, uint64_t addr, void *buf,
				    size_t len);

/**
 * @brief **utrace_elf__build_id()** writes the GNU build-id as hex into @buf.
 * @return length written; -ENOENT if the file has no build-id
 */
UTRACE_API int utrace_elf__build_id(const struct utrace_elf *elf, char *buf, size_t size);

/**
 * struct utrace_elf_section - an executable section (for linear sweeps by the
 * site planner). @data points into the file image owned by the utrace_elf.
 */
struct utrace_elf_section {
	const char *name;
	uint64_t addr;
	uint64_t size;
	const uint8_t *data;
};

/**
 * @brief **utrace_elf__exec_sections()** lists SHF_EXECINSTR sections.
 * @return number of sections written to @out (at most @max); the total
 * number is returned if @out is NULL
 */
UTRACE_API int utrace_elf__exec_sections(const struct utrace_elf *elf,
					 struct utrace_elf_section *out, size_t max);

#ifdef __cplusplus
}
#endif

#endif /* __UTRACE_ELF_H */
