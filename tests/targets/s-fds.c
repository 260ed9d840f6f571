/* SPDX-License-Identifier: MIT */
/*
 * s-fds - one descriptor of each kind strace's -y / -yy decorates, each
 * used once and closed: a file, a pipe, a deleted file with '<>"' in its
 * name, /dev/null, a Unix socketpair, a
 * bound Unix datagram socket (argv[1], a path to create), an abstract
 * Unix socket, a TCP listener on 127.0.0.1 with a connection to it, a UDP
 * socket bound then connected, a netlink socket unbound then bound, and a pidfd. Exits nonzero if any step fails.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define CHECK(x)                                  \
	do {                                      \
		if (!(x)) {                       \
			printf("FAIL: %s\n", #x); \
			return 1;                 \
		}                                 \
	} while (0)

int main(int argc, char **argv)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t len = sizeof(in);
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	int fd, p[2], sv[2], u, a, l, c, s, d, n, pfd;
	char buf[16], name[sizeof(un.sun_path) + 16];

	CHECK(argc == 2 && strlen(argv[1]) < sizeof(un.sun_path));
	fd = open("/etc/hostname", O_RDONLY);
	CHECK(fd >= 0 && read(fd, buf, 1) == 1 && close(fd) == 0);
	CHECK(pipe(p) == 0 && write(p[1], "x", 1) == 1 && close(p[0]) == 0 && close(p[1]) == 0);
	/* a name strace escapes ('<', '>', '"'), written to once deleted */
	snprintf(name, sizeof(name), "%s.<del>\"", argv[1]);
	fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, "x", 1) == 1 && unlink(name) == 0);
	CHECK(write(fd, "x", 1) == 1 && close(fd) == 0);
	fd = open("/dev/null", O_WRONLY);
	CHECK(fd >= 0 && write(fd, "x", 1) == 1 && close(fd) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && write(sv[0], "x", 1) == 1);
	CHECK(read(sv[1], buf, 1) == 1 && close(sv[0]) == 0 && close(sv[1]) == 0);
	u = socket(AF_UNIX, SOCK_DGRAM, 0);
	strcpy(un.sun_path, argv[1]);
	unlink(argv[1]);
	CHECK(u >= 0 && bind(u, (struct sockaddr *)&un, sizeof(un)) == 0);
	CHECK(write(u, "", 0) < 0 && close(u) == 0 && unlink(argv[1]) == 0);
	a = socket(AF_UNIX, SOCK_STREAM, 0);
	memset(un.sun_path, 0, sizeof(un.sun_path));
	memcpy(un.sun_path + 1, "utrace-s-fds", 12);
	CHECK(a >= 0 && bind(a, (struct sockaddr *)&un, sizeof(sa_family_t) + 13) == 0);
	CHECK(listen(a, 1) == 0 && close(a) == 0);
	l = socket(AF_INET, SOCK_STREAM, 0);
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(l >= 0 && bind(l, (struct sockaddr *)&in, sizeof(in)) == 0 && listen(l, 1) == 0);
	CHECK(getsockname(l, (struct sockaddr *)&in, &len) == 0);
	c = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(c >= 0 && connect(c, (struct sockaddr *)&in, sizeof(in)) == 0);
	s = accept(l, NULL, NULL);
	CHECK(s >= 0 && write(c, "x", 1) == 1 && read(s, buf, 1) == 1);
	CHECK(close(s) == 0 && close(c) == 0 && close(l) == 0);
	d = socket(AF_INET, SOCK_DGRAM, 0);
	in.sin_port = 0;
	CHECK(d >= 0 && bind(d, (struct sockaddr *)&in, sizeof(in)) == 0);
	CHECK(getsockname(d, (struct sockaddr *)&in, &len) == 0);
	CHECK(connect(d, (struct sockaddr *)&in, sizeof(in)) == 0 && write(d, "x", 1) == 1);
	CHECK(read(d, buf, 1) == 1 && close(d) == 0);
	n = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	CHECK(n >= 0 && fcntl(n, F_GETFD) == 0);
	CHECK(bind(n, (struct sockaddr *)&nl, sizeof(nl)) == 0 && fcntl(n, F_GETFD) == 0);
	CHECK(close(n) == 0);
	pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	CHECK(pfd >= 0 && close(pfd) == 0);
	return 0;
}
