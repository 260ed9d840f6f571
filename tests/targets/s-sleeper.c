/* SPDX-License-Identifier: MIT */
/*
 * s-sleeper - a multithreaded target that idles: N threads (argv[1],
 * default 4) sleeping in nanosleep until the process is killed or argv[2]
 * seconds have passed. Prints "ready <pid>" once all threads run.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static unsigned long secret = 0x5ec2e7c0ffeeUL;

static void *worker(void *arg)
{
	while (!stop) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	return arg;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	int secs = argc > 2 ? atoi(argv[2]) : 30;
	pthread_t th[64];
	int i;

	if (n > 64)
		n = 64;
	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	printf("ready %d %p\n", getpid(), (void *)&secret);
	fflush(stdout);
	sleep(secs);
	stop = 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return (int)(secret & 0x7f);
}
