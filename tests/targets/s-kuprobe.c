/* SPDX-License-Identifier: MIT */
/*
 * s-kuprobe - three probed functions for tests/e2e/test-kernel-uprobe.c,
 * hand-written so that their first instruction does not depend on the
 * compiler:
 *  - kup_short: mov rdx, rdi (3 bytes, writes an argument register): not
 *    keepable (planner.c rule 5), the agent's jmp stays at its entry, where
 *    a kernel uprobe's int3 goes;
 *  - kup_push: push rbx, kept in place, the jmp after it;
 *  - kup_mov: mov rax, rdi (writes only rax), kept in place (undo 0).
 * "s-kuprobe serve": prints "pid=N", then for each line "run T N" on stdin
 * runs T threads that call each function N times and prints "done ok" (or
 * "done BAD"); "code" prints the first 8 bytes of each function in hex;
 * exits 0 at EOF. "s-kuprobe run T N": one run, then exit (0 if ok).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__asm__(".intel_syntax noprefix\n"
	".text\n"
	".globl kup_short\n.type kup_short, @function\nkup_short:\n"
	"	mov rdx, rdi\n	add rdx, rdx\n	lea rax, [rdx + 1]\n	ret\n"
	".size kup_short, . - kup_short\n"
	".globl kup_push\n.type kup_push, @function\nkup_push:\n"
	"	push rbx\n	mov rbx, rdi\n	lea rax, [rbx + 3]\n	pop rbx\n	ret\n"
	".size kup_push, . - kup_push\n"
	".globl kup_mov\n.type kup_mov, @function\nkup_mov:\n"
	"	mov rax, rdi\n	lea rax, [rax + rax]\n	add rax, 5\n	ret\n"
	".size kup_mov, . - kup_mov\n"
	".att_syntax prefix\n");

uint64_t kup_short(uint64_t x); /* 2x + 1 */
uint64_t kup_push(uint64_t x); /* x + 3 */
uint64_t kup_mov(uint64_t x); /* 2x + 5 */

static long calls;

static void *worker(void *arg)
{
	long i, bad = 0;

	(void)arg;
	for (i = 0; i < calls; i++) {
		uint64_t x = (uint64_t)i;

		bad += kup_short(x) != 2 * x + 1;
		bad += kup_push(x) != x + 3;
		bad += kup_mov(x) != 2 * x + 5;
	}
	return (void *)bad;
}

static int run(int threads, long n)
{
	pthread_t th[64];
	long bad = 0;
	int i;

	if (threads < 1 || threads > 64 || n < 0)
		return -1;
	calls = n;
	for (i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, NULL))
			return -1;
	for (i = 0; i < threads; i++) {
		void *r;

		pthread_join(th[i], &r);
		bad += (long)r;
	}
	return bad ? -1 : 0;
}

static void code(void)
{
	void *fn[] = { (void *)kup_short, (void *)kup_push, (void *)kup_mov };
	size_t f, i;

	for (f = 0; f < 3; f++) {
		for (i = 0; i < 8; i++)
			printf("%02x", ((volatile uint8_t *)fn[f])[i]);
		printf(f < 2 ? " " : "\n");
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char line[128];

	if (argc == 4 && !strcmp(argv[1], "run")) {
		int r = run(atoi(argv[2]), atol(argv[3]));

		printf("done %s\n", r ? "BAD" : "ok");
		return r ? 1 : 0;
	}
	if (argc != 2 || strcmp(argv[1], "serve")) {
		fprintf(stderr, "usage: s-kuprobe serve | run THREADS CALLS\n");
		return 2;
	}
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		int t;
		long n;

		if (!strcmp(line, "code\n")) {
			code();
		} else if (sscanf(line, "run %d %ld", &t, &n) == 2) {
			printf("done %s\n", run(t, n) ? "BAD" : "ok");
			fflush(stdout);
		}
	}
	return 0;
}
