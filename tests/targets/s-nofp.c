/* SPDX-License-Identifier: MIT */
/*
 * s-nofp - a -O2 program built without frame pointers (tests/targets/
 * meson.build: -fomit-frame-pointer), like most of a distribution's code:
 * rbp is just a register, and only the CFI (.eh_frame) says where each
 * frame's return address is. utrace -k must unwind it as gdb's bt does.
 *
 *   s-nofp N   N rounds of main() -> a() -> b() -> c() -> strtol("42"),
 *              every call a real call (noinline, the result used after
 *              it: no tail call). Prints "sum S" and exits 0; 1 if a
 *              result is wrong.
 */
#include <stdio.h>
#include <stdlib.h>

volatile int sink; /* keeps the work after each call */

__attribute__((noinline, noclone)) long c(const char *s, int k)
{
	long v = strtol(s, NULL, 10);

	sink = k;
	return v * k + 1;
}

__attribute__((noinline, noclone)) long b(const char *s, int k)
{
	long v = c(s, k + 1);

	sink = (int)v;
	return v + 2;
}

__attribute__((noinline, noclone)) long a(const char *s, int k)
{
	long v = b(s, k * 2);

	sink = (int)v;
	return v + 3;
}

int main(int argc, char **argv)
{
	const char *p = argc > 1 ? argv[1] : "1";
	long sum = 0, want = 0;
	int n = 0, i;

	while (*p >= '0' && *p <= '9') /* not atoi(): it is strtol() too */
		n = n * 10 + *p++ - '0';
	for (i = 0; i < n; i++) {
		sum += a("42", i);
		want += 42L * (i * 2 + 1) + 1 + 2 + 3;
	}
	printf("sum %ld\n", sum);
	return sum == want ? 0 : 1;
}
