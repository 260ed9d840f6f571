/* SPDX-License-Identifier: MIT */
/*
 * alloc.c - the agent's private memory (anonymous mmap, never freed), and our own memcpy/memset/memcmp (Frida's gumlibc),
 * so that a probe on malloc or memcpy never recurses into the agent.
 *
 * Runs in any thread, async-signal-safe, lock-free. Memory is never freed:
 * the agent allocates per thread (struct utrace_task, its return instances)
 * and per XOL area, all bounded.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "agent-internal.h"

/**
 * utrace_alloc - zeroed memory for the agent's own structures
 * @size: bytes (rounded up to a page)
 *
 * Runs in any thread, async-signal-safe and lock-free: one anonymous mmap
 * per call. Callers allocate rarely (a thread's first hit, an XOL area), so
 * the page granularity costs nothing that matters.
 * Return: the memory, or NULL if mmap fails.
 */
void *utrace_alloc(size_t size)
{
	/*
	 * Raw: libc's mmap() (and errno's __errno_location) may be probed,
	 * and a thread's first hit allocates here (guard.c task_new(), where
	 * a hit is the program's signal handler's, never ours)
	 */
	long p = raw_syscall6(SYS_mmap, 0, (long)size, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p < 0 && p > -4096 ? NULL : (void *)p;
}

void utrace_memcpy(void *dst, const void *src, size_t n)
{
	volatile char *d = dst;
	const char *s = src;

	while (n--)
		*d++ = *s++;
}

void utrace_memset(void *dst, int c, size_t n)
{
	volatile char *d = dst;

	while (n--)
		*d++ = (char)c;
}

int utrace_memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}
