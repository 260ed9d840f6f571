/* SPDX-License-Identifier: MIT */
/*
 * s-stripped - linked to libfoo.so (found through DT_RUNPATH $ORIGIN) and
 * stripped: only .dynsym is left. Prints "ready <pid>" and blocks reading
 * stdin until it is closed.
 */
#include <stdio.h>
#include <unistd.h>

int exported_fn(int x);
int foo_entry(int x);

int main(void)
{
	char c;

	printf("ready %d %d\n", (int)getpid(), exported_fn(1) + foo_entry(2));
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
