/* SPDX-License-Identifier: MIT */
/*
 * s-unfinished - a call that waits while another thread's calls run, as
 * strace prints it "<unfinished ...>" then "<... read resumed>": the main
 * thread blocks in read() on a pipe; a second thread sleeps 100 ms, calls
 * getppid(), writes one byte to the pipe. The main thread checks the byte
 * and exits 0; nonzero if something failed.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int fds[2];

static void *writer(void *arg)
{
	struct timespec ts = { 0, 100000000 };

	(void)arg;
	nanosleep(&ts, NULL);
	getppid();
	return write(fds[1], "x", 1) == 1 ? NULL : (void *)1;
}

int main(void)
{
	pthread_t t;
	void *ret = (void *)1;
	char b = 0;

	if (pipe(fds) || pthread_create(&t, NULL, writer, NULL))
		return 1;
	if (read(fds[0], &b, 1) != 1 || b != 'x')
		return 2;
	if (pthread_join(t, &ret) || ret)
		return 3;
	return 0;
}
