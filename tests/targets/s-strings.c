/* SPDX-License-Identifier: MIT */
/*
 * s-strings - strings that change right after the call: what a tracer
 * shows must be what the callee got, not what the memory holds when the
 * tracer gets round to reading it.
 *
 *   s-strings N   N rounds; round i: strtol() of "i" in a stack buffer that
 *                 is overwritten at once; atoi() of a heap copy of
 *                 "heap-i" that is freed at once; name_of(i) returns a
 *                 static buffer "name-i" that the next round overwrites;
 *                 bad_str() is called with a pointer to nothing (0x1) and
 *                 an unmapped page. Prints "rounds=N" and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static char sbuf[32];

__attribute__((noinline)) const char *name_of(int i)
{
	snprintf(sbuf, sizeof(sbuf), "name-%d", i);
	return sbuf;
}

/* never reads @s: a tracer that copies it must survive a bad pointer */
__attribute__((noinline)) int bad_str(const char *s)
{
	return s != NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100, i;
	long sum = 0;
	char *gone = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	for (i = 0; i < n; i++) {
		volatile char buf[32];
		char *heap;

		snprintf((char *)buf, sizeof(buf), "%d", i);
		sum += strtol((const char *)buf, NULL, 10);
		memset((char *)buf, 'X', sizeof(buf) - 1);
		buf[sizeof(buf) - 1] = 0;
		heap = malloc(32);
		snprintf(heap, 32, "heap-%d", i);
		sum += atoi(heap) + 1;
		memset(heap, 'Y', 31);
		free(heap);
		if (strncmp(name_of(i), "name-", 5))
			return 1;
		sum += bad_str((const char *)1) + bad_str(gone);
	}
	memset(sbuf, 'Z', sizeof(sbuf) - 1);
	printf("rounds=%d\n", n);
	return sum > 0 ? 0 : 1;
}
