/* SPDX-License-Identifier: MIT */
/*
 * utrace-demo - the bundled demo target: a few threads that compute, write
 * a small file and allocate, so every kind of probe has something to see.
 *
 *   utrace-demo [ROUNDS]     (default 3)
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NR_THREADS 3

__attribute__((noinline)) long demo_fib(int n)
{
	return n < 2 ? n : demo_fib(n - 1) + demo_fib(n - 2);
}

__attribute__((noinline)) int demo_write_note(int round, long value)
{
	char path[64], line[64];
	int fd, len, ret;

	snprintf(path, sizeof(path), "/tmp/utrace-demo-%d.txt", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd < 0)
		return -1;
	len = snprintf(line, sizeof(line), "round %d: %ld\n", round, value);
	ret = (int)write(fd, line, len);
	close(fd);
	return ret;
}

static void *demo_worker(void *arg)
{
	int rounds = *(int *)arg, i;

	for (i = 0; i < rounds; i++) {
		char *buf = malloc(256);
		long v = demo_fib(18 + i);

		memset(buf, 0, 256);
		demo_write_note(i, v);
		free(buf);
		usleep(20000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	pthread_t th[NR_THREADS];
	char path[64];
	int i;

	for (i = 0; i < NR_THREADS; i++)
		pthread_create(&th[i], NULL, demo_worker, &rounds);
	for (i = 0; i < NR_THREADS; i++)
		pthread_join(th[i], NULL);
	snprintf(path, sizeof(path), "/tmp/utrace-demo-%d.txt", (int)getpid());
	unlink(path);
	puts("utrace-demo: done");
	return 0;
}
