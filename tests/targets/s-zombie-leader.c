/* SPDX-License-Identifier: MIT */
/*
 * s-zombie-leader - the main thread exits with pthread_exit() (leaving a
 * zombie leader) while a worker keeps the process alive for argv[1] ms
 * (default 1500) in short sleeps, then prints "worker ok" and exits 0.
 * Prints "ready <pid>" once the leader is about to exit.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long ms = 1500;

static void *worker(void *arg)
{
	long i;

	for (i = 0; i < ms / 10; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	printf("worker ok\n");
	fflush(stdout);
	exit(0);
}

int main(int argc, char **argv)
{
	pthread_t th;

	if (argc > 1)
		ms = atol(argv[1]);
	pthread_create(&th, NULL, worker, NULL);
	printf("ready %d\n", getpid());
	fflush(stdout);
	pthread_exit(NULL);
}
