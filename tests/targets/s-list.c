/* SPDX-License-Identifier: MIT */
/*
 * s-list - target for utrace -l tests, built three ways (PIE, non-PIE, IBT
 * PLT with .plt.sec). Calls puts through the PLT, prints "ready <pid>",
 * then blocks reading stdin until it is closed (or the process is killed).
 */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) int list_target_fn(int x)
{
	return x * 3 + 1;
}

int main(void)
{
	char c;

	puts("s-list: started");
	printf("ready %d %d\n", (int)getpid(), list_target_fn(1));
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
