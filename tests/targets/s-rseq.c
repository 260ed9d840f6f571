/* SPDX-License-Identifier: MIT */
/*
 * s-rseq - a thread that spins inside a restartable-sequence critical
 * section (glibc's registered rseq area, its own struct rseq_cs). The
 * section is an endless loop: only the kernel's abort on preemption gets
 * the thread out, to the abort handler, which counts and re-enters. A
 * tracer that stops the thread there, runs code in it and resumes it at
 * the old rip without an abort leaves it spinning forever in a section
 * the kernel no longer knows about: the count stops.
 *
 * Prints "ready <pid> <spinner tid>" ("norseq <pid>" if glibc did not
 * register rseq). Commands on stdin: "count" prints the abort count,
 * "quit" exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/rseq.h>
#include <unistd.h>

static volatile unsigned long aborts;
static volatile pid_t spinner_tid;

static void *spinner(void *arg)
{
	struct rseq *rs = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);

	spinner_tid = gettid();
	for (;;) {
		__asm__ __volatile__(".pushsection __rseq_cs, \"aw\"\n\t"
				     ".balign 32\n\t"
				     "4:\n\t"
				     ".long 0, 0\n\t" /* version, flags */
				     ".quad 1f, (2f - 1f), 3f\n\t" /* start, length, abort */
				     ".popsection\n\t"
				     "leaq 4b(%%rip), %%rax\n\t"
				     "movq %%rax, %[cs]\n\t" /* arm the section */
				     "1:\n\t"
				     "jmp 1b\n\t" /* the section: spin until aborted */
				     "2:\n\t"
				     "jmp 5f\n\t"
				     ".long 0x53053053\n\t" /* RSEQ_SIG before the abort handler */
				     "3:\n\t"
				     "5:\n\t"
				     : [cs] "=m"(rs->rseq_cs)
				     :
				     : "rax", "memory");
		aborts++;
	}
	return arg;
}

int main(void)
{
	char line[64];
	pthread_t th;

	if (__rseq_size == 0) {
		printf("norseq %d\n", getpid());
		fflush(stdout);
		return 0;
	}
	pthread_create(&th, NULL, spinner, NULL);
	while (!spinner_tid || aborts < 3)
		usleep(1000);
	printf("ready %d %d\n", getpid(), spinner_tid);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "count", 5)) {
			printf("%lu\n", aborts);
			fflush(stdout);
		} else if (!strncmp(line, "quit", 4)) {
			return 0;
		}
	}
	return 1;
}
