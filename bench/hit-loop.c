/* SPDX-License-Identifier: MIT */
/*
 * hit-loop - the probed program of bench/func-hit.sh: calls bench_work()
 * COUNT times (argv[1]) and checks the result, so every tracer is measured
 * on the same loop. Exit 0 when the loop ran correctly.
 */
#include <stdlib.h>

__attribute__((noinline)) long bench_work(long x)
{
	__asm__ volatile("" ::: "memory"); /* keep the call and the body */
	return x + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000, s = 0, i;

	for (i = 0; i < n; i++)
		s = bench_work(s);
	return s == n ? 0 : 1;
}
