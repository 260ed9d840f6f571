/* SPDX-License-Identifier: MIT */
/*
 * s-timed - a target whose calls take known times, for the -c and -H
 * figures: timed(2), timed(3), timed(5) sleep that many milliseconds
 * (at least: nanosleep never returns early); close(-1) fails 3 times
 * (EBADF) and one close() of a real descriptor succeeds. Prints
 * "timed=3 close=4" and exits 0.
 */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) int timed(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	while (nanosleep(&ts, &ts))
		;
	return ms;
}

int main(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), i, sum = 0;

	sum += timed(2);
	sum += timed(3);
	sum += timed(5);
	for (i = 0; i < 3; i++)
		if (close(-1) == 0)
			return 1;
	if (fd < 0 || close(fd))
		return 1;
	printf("timed=3 close=4\n");
	return sum == 10 ? 0 : 1;
}
