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
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
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
