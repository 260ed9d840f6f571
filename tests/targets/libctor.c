/* SPDX-License-Identifier: MIT */
/*
 * libctor.c - a library whose constructor calls a probed function
 * (s-ctor): launch mode must arm before any library constructor runs.
 */
int ctor_probe(int i);

__attribute__((noinline)) int ctor_probe(int i)
{
	__asm__ volatile("" ::: "memory");
	return i + 1;
}

__attribute__((constructor)) static void libctor_init(void)
{
	int i;

	for (i = 0; i < 7; i++)
		ctor_probe(i);
}
