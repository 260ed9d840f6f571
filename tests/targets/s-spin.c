/* SPDX-License-Identifier: MIT */
/*
 * s-spin - a thread that spins in user space and calls nothing (no libc,
 * no system call) until the main thread, blocked in read(0), sees EOF on
 * stdin. Prints "ready <pid>" once the spinner runs. A tracer that
 * interrupts running threads (the agent's int3 -> jmp upgrade signal)
 * finds the spinner running, whatever the machine's speed. Exit 0 once the
 * spinner has stopped with its sum intact.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static volatile int stop, running;

static void *spinner(void *arg)
{
	unsigned long n = 0, sum = 0;

	(void)arg;
	running = 1;
	while (!stop)
		sum += n++;
	/* Gauss: a spinner whose registers were damaged would disagree. */
	return (void *)(sum == (n % 2 ? n * ((n - 1) / 2) : n / 2 * (n - 1)) ? 1ul : 0ul);
}

int main(void)
{
	pthread_t th;
	char buf[64];
	void *ok = NULL;

	if (pthread_create(&th, NULL, spinner, NULL))
		return 1;
	while (!running)
		;
	printf("ready %d\n", getpid());
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	stop = 1;
	pthread_join(th, &ok);
	if (!ok) {
		fprintf(stderr, "s-spin: the spinner's sum is wrong\n");
		return 1;
	}
	return 0;
}
