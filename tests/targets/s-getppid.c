/* SPDX-License-Identifier: MIT */
/*
 * s-getppid - a syscall-heavy benchmark workload: COUNT (argv[1], default
 * 200000) getppid() calls, then COUNT/10 writes of 16 bytes to /dev/null.
 * Used by bench/syscalls.sh.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000, i, sum = 0;
	int fd = open("/dev/null", O_WRONLY);

	for (i = 0; i < n; i++)
		sum += syscall(SYS_getppid);
	for (i = 0; i < n / 10; i++)
		sum += write(fd, "0123456789abcdef", 16);
	return sum == 0;
}
