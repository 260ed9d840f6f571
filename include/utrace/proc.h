/* SPDX-License-Identifier: MIT */
/*
 * proc.h - the process layer: memory maps, threads and bulk memory access
 * of a live process. All of it runs in the tracer process.
 */
#ifndef __UTRACE_PROC_H
#define __UTRACE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "utrace/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Protection bits of a mapping, as in /proc/PID/maps. */
enum utrace_map_prot {
	UTRACE_MAP_READ = 1U << 0,
	UTRACE_MAP_WRITE = 1U << 1,
	UTRACE_MAP_EXEC = 1U << 2,
	UTRACE_MAP_SHARED = 1U << 3,
};

/** struct utrace_map - one line of /proc/PID/maps. */
struct utrace_map {
	uint64_t start;	 /* first byte */
	uint64_t end;	 /* one past the last byte */
	uint64_t offset; /* file offset of @start */
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t prot;	/* enum utrace_map_prot bits */
	char *path;	/* file path, "[heap]", "[vdso]" ...; NULL if anonymous */
	bool deleted;	/* the file was unlinked (" (deleted)" was stripped from @path) */
};

/** struct utrace_maps - all mappings of a process, sorted by address. */
struct utrace_maps {
	struct utrace_map *maps;
	size_t nr;
};

/**
 * @brief **utrace_maps__read()** parses /proc/@pid/maps.
 * @param pid process id (0 = the caller)
 * @return a new object to free with utrace_maps__free(); NULL with errno set
 * on failure (ESRCH: no such process; EACCES/EPERM: not allowed)
 */
UTRACE_API struct utrace_maps *utrace_maps__read(pid_t pid);

/**
 * @brief **utrace_maps__parse()** parses text in /proc/PID/maps format.
 * @param text NUL-terminated text
 * @return a new object; NULL with errno set (EINVAL on a malformed line)
 */
UTRACE_API struct utrace_maps *utrace_maps__parse(const char *text);

/** @brief **utrace_maps__free()** frees @maps; accepts NULL. */
UTRACE_API void utrace_maps__free(struct utrace_maps *maps);

/**
 * @brief **utrace_maps__find()** finds the mapping that contains @addr.
 * @return a borrowed pointer into @maps, or NULL if @addr is not mapped
 */
UTRACE_API const struct utrace_map *utrace_maps__find(const struct utrace_maps *maps,
						      uint64_t addr);

/**
 * @brief **utrace_proc__threads()** lists the thread ids of @pid.
 * @param pid process id
 * @param ret_tids on success, a malloc'ed array the caller frees
 * @param ret_nr on success, the number of entries
 * @return 0 on success; negative errno on failure (-ESRCH: no such process);
 * the ret_* parameters are untouched on failure
 */
UTRACE_API int utrace_proc__threads(pid_t pid, pid_t **ret_tids, size_t *ret_nr);

/**
 * @brief **utrace_proc__exe()** reads the path of @pid's executable.
 * @return length of the path on success; negative errno on failure
 */
UTRACE_API int utrace_proc__exe(pid_t pid, char *buf, size_t size);

/**
 * @brief **utrace_proc__check_access()** tells whether the caller may trace
 * @pid: it exists, is not a zombie and passes the kernel's ptrace access
 * check (PTRACE_MODE_ATTACH, probed through /proc/PID/mem).
 * @return 0 if tracing is allowed; -ESRCH if there is no such process;
 * -EPERM or -EACCES if it may not be traced
 */
UTRACE_API int utrace_proc__check_access(pid_t pid);

/**
 * @brief **utrace_proc__blocks_signal()** tells whether a thread of @pid
 * has signal @sig blocked (SigBlk in /proc/PID/task/TID/status). A thread
 * that blocks SIGTRAP cannot take a breakpoint: the kernel forces the
 * signal, unblocking it and resetting its action, and without a tracer the
 * process dies. Transient blocks (pthread_create() blocks every signal
 * around clone()) are seen too: look again before concluding.
 * @param ret_tid receives the first such thread, when not NULL
 * @return 1 if some thread blocks @sig, 0 if none; negative errno on
 * failure (-ESRCH: no such process, -EINVAL: bad @sig)
 */
UTRACE_API int utrace_proc__blocks_signal(pid_t pid, int sig, pid_t *ret_tid);

/**
 * @brief **utrace_proc__tracer()** reads TracerPid of @pid.
 * @return the tracer's pid, 0 if untraced; negative errno on failure
 */
UTRACE_API int utrace_proc__tracer(pid_t pid);

/**
 * @brief **utrace_mem__read()** copies @len bytes at @addr in @pid to @buf,
 * with process_vm_readv, falling back to /proc/PID/mem (which can also read
 * pages without read permission, e.g. execute-only code).
 * @return @len on success; negative errno on failure (-EFAULT: a byte in the
 * range is not mapped; -ESRCH; -EPERM); never a short count
 */
UTRACE_API ssize_t utrace_mem__read(pid_t pid, uint64_t addr, void *buf, size_t len);

/**
 * @brief **utrace_mem__write()** copies @len bytes from @buf to @addr in
 * @pid. Uses process_vm_writev, falling back to /proc/PID/mem, which can
 * write read-only pages such as code (with copy-on-write, as ptrace does).
 * @return @len on success; negative errno on failure (-EFAULT, -ESRCH,
 * -EPERM); on failure some bytes may have been written
 */
UTRACE_API ssize_t utrace_mem__write(pid_t pid, uint64_t addr, const void *buf, size_t len);

/**
 * @brief **utrace_mem__read_str()** reads a NUL-terminated string of at most
 * @size - 1 bytes at @addr, stopping at the first NUL or unmapped page.
 * @return the string length (without NUL) on success; negative errno if not
 * even the first byte could be read
 */
UTRACE_API ssize_t utrace_mem__read_str(pid_t pid, uint64_t addr, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* __UTRACE_PROC_H */
