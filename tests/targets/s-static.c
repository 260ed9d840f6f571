/* SPDX-License-Identifier: MIT */
/*
 * s-static - a statically linked program (no PT_INTERP: the agent cannot be
 * preloaded) that says it ran: "s-static ran work=N" on stdout, and the same
 * line appended to FILE if given, so that a second run shows.
 *
 *   s-static [FILE]
 */
#include <stdio.h>

__attribute__((noinline)) int work(int x)
{
	return x * 2 + 1;
}

int main(int argc, char **argv)
{
	int w = work(1);

	if (argc > 1) {
		FILE *f = fopen(argv[1], "a");

		if (!f)
			return 1;
		fprintf(f, "s-static ran work=%d\n", w);
		fclose(f);
	}
	printf("s-static ran work=%d\n", w);
	return 0;
}
