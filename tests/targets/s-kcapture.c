// SPDX-License-Identifier: MIT
/*
 * s-kcapture FILE - system calls whose memory the decoders read, each
 * with the same arguments on every run (test-kernel.c: -b kernel -s
 * prints the lines -b ptrace prints): a pipe written, polled and read,
 * FILE created, written, read and stat'ed, a timed sleep, uname,
 * readlink, getcwd, and a path longer than the kernel backend copies.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static const char msg[] = "hello, pipe\n", data[] = "0123456789";
	static const char cut[] = "forty bytes, more than the 32 of -s ..\n";
	char buf[64], longp[700];
	struct pollfd pfd[2];
	struct timespec ts = { 0, 1000 };
	struct utsname u;
	struct stat st;
	int p[2], fd;

	if (argc != 2 || pipe2(p, O_CLOEXEC))
		return 2;
	if (write(p[1], msg, strlen(msg)) != (ssize_t)strlen(msg))
		return 3;
	pfd[0] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = p[1], .events = POLLOUT };
	if (poll(pfd, 2, 1000) != 2)
		return 4;
	if (read(p[0], buf, sizeof(buf)) != (ssize_t)strlen(msg))
		return 5;
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || pwrite(fd, data, 10, 0) != 10 || pread(fd, buf, 10, 0) != 10)
		return 6;
	if (syscall(SYS_fstat, fd, &st) || st.st_size != 10 || stat(argv[1], &st))
		return 7;
	if (write(fd, cut, strlen(cut)) != (ssize_t)strlen(cut))
		return 8;
	close(fd);
	nanosleep(&ts, NULL);
	if (uname(&u) || readlink("/proc/self/exe", buf, sizeof(buf)) <= 0 ||
	    !getcwd(buf, sizeof(buf)))
		return 9;
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	if (open(longp, O_RDONLY) >= 0)
		return 10;
	unlink(argv[1]);
	close(p[0]);
	close(p[1]);
	return 0;
}
