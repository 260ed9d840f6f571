/* SPDX-License-Identifier: MIT */
/*
 * fdinfo.c - strace's -y and -yy: what a tracee's file descriptor refers
 * to, as strace prints it between '<' and '>'. Tracer process, at a
 * syscall stop of the thread whose descriptor it is (the table is read
 * through /proc/TID, so it is the table the call uses).
 *
 *   -y   the /proc/TID/fd/N link: "/etc/hosts", "pipe:[123]", "socket:[456]"
 *   -yy  and for sockets the protocol and addresses: "TCP:[127.0.0.1:80]",
 *        "TCP:[a:p->b:q]", "TCPv6:[[::1]:80]", "UNIX-STREAM:[ino->peer]",
 *        "UNIX:[ino,\"/path\"]"; for devices "/dev/null<char 1:3>"; for
 *        pidfds "pid:PID".
 *
 * As strace, sockets are looked up with sock_diag (netlink, in the
 * tracer's network namespace: the tracee's when they share it), and what
 * was found is kept per inode: a socket is printed as first found, even
 * after a later connect(). A socket diag does not know (unbound, or a
 * Unix one with neither name nor peer) is "PROTO:[inode]", looked up again
 * next time. Netlink sockets are "NETLINK:[ROUTE:portid]" once bound.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/netlink_diag.h>
#include <linux/rtnetlink.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "sysdec.h"

#define CACHE_SIZE 1024 /* direct-mapped on the inode, like strace's */

static struct {
	unsigned long inode;
	char *details;
} cache[CACHE_SIZE];

static void cache_put(unsigned long inode, const char *details)
{
	char *d = strdup(details);

	if (!d)
		return;
	free(cache[inode % CACHE_SIZE].details);
	cache[inode % CACHE_SIZE].inode = inode;
	cache[inode % CACHE_SIZE].details = d;
}

static const char *cache_get(unsigned long inode)
{
	return cache[inode % CACHE_SIZE].details && cache[inode % CACHE_SIZE].inode == inode ?
		       cache[inode % CACHE_SIZE].details :
		       NULL;
}

/* inet_diag's protocols, by the names of the "system.sockprotoname" attribute */
static const struct {
	const char *name;
	int family, proto;
} inet_protos[] = {
	{ "TCP", AF_INET, IPPROTO_TCP },	 { "UDP", AF_INET, IPPROTO_UDP },
	{ "UDPLITE", AF_INET, IPPROTO_UDPLITE }, { "DCCP", AF_INET, IPPROTO_DCCP },
	{ "SCTP", AF_INET, IPPROTO_SCTP },	 { "PING", AF_INET, IPPROTO_ICMP },
	{ "RAW", AF_INET, IPPROTO_RAW },	 { "TCPv6", AF_INET6, IPPROTO_TCP },
	{ "UDPv6", AF_INET6, IPPROTO_UDP },	 { "UDPLITEv6", AF_INET6, IPPROTO_UDPLITE },
	{ "DCCPv6", AF_INET6, IPPROTO_DCCP },	 { "SCTPv6", AF_INET6, IPPROTO_SCTP },
	{ "PINGv6", AF_INET6, IPPROTO_ICMP },	 { "RAWv6", AF_INET6, IPPROTO_RAW },
};

/* One inet_diag message: @inode's "PROTO:[src:port]" or "PROTO:[src:port->dst:port]". */
static int inet_format(const struct inet_diag_msg *m, const char *proto, char *buf, size_t len)
{
	static const unsigned char zero[16];
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	bool v6 = m->idiag_family == AF_INET6;
	const char *ob = v6 ? "[" : "", *cb = v6 ? "]" : "";

	if (!inet_ntop(m->idiag_family, m->id.idiag_src, src, sizeof(src)))
		return -1;
	if (m->id.idiag_dport || memcmp(zero, m->id.idiag_dst, v6 ? 16 : 4)) {
		if (!inet_ntop(m->idiag_family, m->id.idiag_dst, dst, sizeof(dst)))
			return -1;
		snprintf(buf, len, "%s:[%s%s%s:%u->%s%s%s:%u]", proto, ob, src, cb,
			 ntohs(m->id.idiag_sport), ob, dst, cb, ntohs(m->id.idiag_dport));
	} else {
		snprintf(buf, len, "%s:[%s%s%s:%u]", proto, ob, src, cb, ntohs(m->id.idiag_sport));
	}
	return 0;
}

/*
 * A sock_diag dump (@req, @len bytes): @found is called on each message
 * until it returns nonzero (1: @inode's, done; -1: stop). Return: 0 if
 * found, -1 otherwise.
 */
static int diag_dump(const void *req, size_t len,
		     int (*found)(const struct nlmsghdr *h, unsigned long inode, void *ctx),
		     unsigned long inode, void *ctx)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	union {
		struct nlmsghdr nlh;
		char b[16384];
	} resp;
	int fd, ret = -1, flags = 0;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -1;
	if (sendto(fd, req, len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	for (;;) {
		ssize_t n = recv(fd, &resp, sizeof(resp), flags);
		struct nlmsghdr *h = &resp.nlh;
		bool done = n <= 0;

		for (; !done && NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			int r = h->nlmsg_type == SOCK_DIAG_BY_FAMILY ? found(h, inode, ctx) : -1;

			if (r)
				done = true;
			if (r > 0)
				ret = 0;
		}
		if (done)
			break;
		flags = MSG_DONTWAIT; /* a multi-part dump: the rest is queued already */
	}
	close(fd);
	return ret;
}

struct diag_out {
	const char *proto;
	char *buf;
	size_t len;
};

static int inet_found(const struct nlmsghdr *h, unsigned long inode, void *ctx)
{
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	struct diag_out *o = ctx;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return -1;
	if (m->idiag_inode != inode)
		return 0;
	return inet_format(m, o->proto, o->buf, o->len) ? -1 : 1;
}

/* TCP, UDP...: a sock_diag dump of every socket of the protocol, in all states */
static int inet_details(const char *proto, unsigned long inode, char *buf, size_t len)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 idr;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req),
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.idr = { .idiag_states = -1 },
	};
	struct diag_out o = { proto, buf, len };
	size_t i;

	for (i = 0; i < sizeof(inet_protos) / sizeof(inet_protos[0]); i++)
		if (!strcmp(inet_protos[i].name, proto))
			break;
	if (i == sizeof(inet_protos) / sizeof(inet_protos[0]))
		return -1;
	req.idr.sdiag_family = (unsigned char)inet_protos[i].family;
	req.idr.sdiag_protocol = (unsigned char)inet_protos[i].proto;
	return diag_dump(&req, sizeof(req), inet_found, inode, &o);
}

/* strace's names of the netlink protocols, without NETLINK_ */
static const char *const netlink_protos[] = {
	[NETLINK_ROUTE] = "ROUTE",
	[NETLINK_USERSOCK] = "USERSOCK",
	[NETLINK_FIREWALL] = "FIREWALL",
	[NETLINK_SOCK_DIAG] = "SOCK_DIAG",
	[NETLINK_NFLOG] = "NFLOG",
	[NETLINK_XFRM] = "XFRM",
	[NETLINK_SELINUX] = "SELINUX",
	[NETLINK_ISCSI] = "ISCSI",
	[NETLINK_AUDIT] = "AUDIT",
	[NETLINK_FIB_LOOKUP] = "FIB_LOOKUP",
	[NETLINK_CONNECTOR] = "CONNECTOR",
	[NETLINK_NETFILTER] = "NETFILTER",
	[NETLINK_IP6_FW] = "IP6_FW",
	[NETLINK_DNRTMSG] = "DNRTMSG",
	[NETLINK_KOBJECT_UEVENT] = "KOBJECT_UEVENT",
	[NETLINK_GENERIC] = "GENERIC",
	[NETLINK_SCSITRANSPORT] = "SCSITRANSPORT",
	[NETLINK_ECRYPTFS] = "ECRYPTFS",
	[NETLINK_RDMA] = "RDMA",
	[NETLINK_CRYPTO] = "CRYPTO",
	[NETLINK_SMC] = "SMC",
};

static int netlink_found(const struct nlmsghdr *h, unsigned long inode, void *ctx)
{
	const struct netlink_diag_msg *m = NLMSG_DATA(h);
	struct diag_out *c = ctx;
	const char *name;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return -1;
	if (m->ndiag_ino != inode)
		return 0;
	name = m->ndiag_protocol < sizeof(netlink_protos) / sizeof(netlink_protos[0]) ?
		       netlink_protos[m->ndiag_protocol] :
		       NULL;
	if (name)
		snprintf(c->buf, c->len, "%s:[%s:%u]", c->proto, name, m->ndiag_portid);
	else
		snprintf(c->buf, c->len, "%s:[%u]", c->proto, (unsigned int)m->ndiag_protocol);
	return 1;
}

/* netlink sockets: "NETLINK:[ROUTE:portid]", as strace's netlink diag */
static int netlink_details(const char *proto, unsigned long inode, char *buf, size_t len)
{
	struct {
		struct nlmsghdr nlh;
		struct netlink_diag_req ndr;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req),
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.ndr = { .sdiag_family = AF_NETLINK, .sdiag_protocol = NDIAG_PROTO_ALL },
	};
	struct diag_out c = { proto, buf, len };

	return diag_dump(&req, sizeof(req), netlink_found, inode, &c);
}

/* Unix sockets: sock_diag for @inode's name and peer (in the tracer's network namespace) */
static int unix_details(const char *proto, unsigned long inode, char *buf, size_t len)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req udr;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req),
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST },
		.udr = { .sdiag_family = AF_UNIX,
			 .udiag_states = -1,
			 .udiag_ino = (unsigned int)inode,
			 .udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_PEER,
			 .udiag_cookie = { ~0U, ~0U } },
	};
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	union {
		struct nlmsghdr nlh;
		char b[8192];
	} resp;
	char path[256] = "";
	unsigned int peer = 0;
	size_t path_len = 0;
	bool found = false;
	ssize_t n;
	int fd;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -1;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	n = recv(fd, &resp, sizeof(resp), 0);
	close(fd);
	if (n > 0 && NLMSG_OK(&resp.nlh, (size_t)n) && resp.nlh.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
		struct unix_diag_msg *m = NLMSG_DATA(&resp.nlh);
		struct rtattr *rta = (struct rtattr *)(m + 1);
		int rlen = resp.nlh.nlmsg_len - NLMSG_LENGTH(sizeof(*m));

		found = m->udiag_ino == inode;
		for (; found && RTA_OK(rta, rlen); rta = RTA_NEXT(rta, rlen)) {
			if (rta->rta_type == UNIX_DIAG_NAME && RTA_PAYLOAD(rta) < sizeof(path)) {
				path_len = RTA_PAYLOAD(rta);
				memcpy(path, RTA_DATA(rta), path_len);
			} else if (rta->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(rta) >= 4) {
				memcpy(&peer, RTA_DATA(rta), 4);
			}
		}
	}
	if (!found || (!peer && !path_len))
		return -1; /* as strace: "UNIX:[inode]", not kept */
	{
		size_t w = (size_t)snprintf(buf, len, "%s:[%lu", proto, inode);
		size_t i;

		if (peer && w < len)
			w += snprintf(buf + w, len - w, "->%u", peer);
		if (path_len && w < len) {
			/* an abstract name starts with NUL: strace's @"name" */
			bool abstract = path[0] == '\0';

			w += snprintf(buf + w, len - w, ",%s\"", abstract ? "@" : "");
			for (i = abstract; i < path_len && path[i] && w + 5 < len; i++) {
				unsigned char ch = (unsigned char)path[i];

				if (ch == '"' || ch == '\\')
					w += snprintf(buf + w, len - w, "\\%c", ch);
				else if (ch < 0x20 || ch >= 0x7f)
					w += snprintf(buf + w, len - w, "\\%o", ch);
				else
					buf[w++] = (char)ch;
			}
			if (w + 2 < len) {
				buf[w++] = '"';
				buf[w] = '\0';
			}
		}
		if (w + 1 < len) {
			buf[w++] = ']';
			buf[w] = '\0';
		}
	}
	return 0;
}

/* -yy for "socket:[INODE]": the details, cached per inode as strace does */
static void socket_details(pid_t tid, int fd, unsigned long inode, char *buf, size_t len)
{
	const char *c = cache_get(inode);
	char link[64], proto[64];
	ssize_t n;
	int r;

	if (c) {
		snprintf(buf, len, "%s", c);
		return;
	}
	snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)tid, fd);
	n = getxattr(link, "system.sockprotoname", proto, sizeof(proto) - 1);
	if (n <= 0) {
		snprintf(buf, len, "socket:[%lu]", inode);
		return;
	}
	proto[n] = '\0';
	if (!strncmp(proto, "UNIX", 4))
		r = unix_details(proto, inode, buf, len);
	else if (!strcmp(proto, "NETLINK"))
		r = netlink_details(proto, inode, buf, len);
	else
		r = inet_details(proto, inode, buf, len);
	if (r == 0)
		cache_put(inode, buf);
	else
		snprintf(buf, len, "%s:[%lu]", proto, inode);
}

/*
 * A path as strace prints it between '<' and '>': no quotes, '"' and '\\'
 * escaped, '<', '>' and unprintable bytes in octal (three digits when an
 * octal digit follows), \n \t ... by name.
 */
static size_t quote_path(const char *path, char *buf, size_t len)
{
	size_t w = 0;
	const char *p;

	for (p = path; *p && w + 5 < len; p++) {
		unsigned char ch = (unsigned char)*p;
		const char *named = ch == '\n' ? "\\n" :
				    ch == '\t' ? "\\t" :
				    ch == '\r' ? "\\r" :
				    ch == '\f' ? "\\f" :
				    ch == '\v' ? "\\v" :
				    ch == '"'  ? "\\\"" :
				    ch == '\\' ? "\\\\" :
						 NULL;

		if (named) {
			w += snprintf(buf + w, len - w, "%s", named);
		} else if (ch >= ' ' && ch <= '~' && ch != '<' && ch != '>') {
			buf[w++] = (char)ch;
		} else if (p[1] >= '0' && p[1] <= '7') {
			w += snprintf(buf + w, len - w, "\\%03o", ch);
		} else {
			w += snprintf(buf + w, len - w, "\\%o", ch);
		}
	}
	buf[w < len ? w : len - 1] = '\0';
	return w;
}

/* What @fd refers to, without the brackets: see sysdec_fd_details(). */
static int fd_text(pid_t tid, int fd, int level, const char *link, char *target, char *buf,
		   size_t len)
{
	unsigned long inode;
	struct stat st;
	size_t w;

	if (level >= 2 && sscanf(target, "socket:[%lu]", &inode) == 1) {
		socket_details(tid, fd, inode, buf, len);
		return 0;
	}
	if (level >= 2 && !strcmp(target, "anon_inode:[pidfd]")) {
		char info[64], l[256];
		FILE *f;
		int pid = -1;

		snprintf(info, sizeof(info), "/proc/%d/fdinfo/%d", (int)tid, fd);
		f = fopen(info, "re");
		while (f && fgets(l, sizeof(l), f))
			if (sscanf(l, "Pid: %d", &pid) == 1)
				break;
		if (f)
			fclose(f);
		if (pid > 0) {
			snprintf(buf, len, "pid:%d", pid);
			return 0;
		}
	}
	w = quote_path(target, buf, len);
	if (level >= 2 && target[0] == '/' && stat(link, &st) == 0 &&
	    (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && w < len)
		snprintf(buf + w, len - w, "<%s %u:%u>", S_ISCHR(st.st_mode) ? "char" : "block",
			 major(st.st_rdev), minor(st.st_rdev));
	return 0;
}

int sysdec_fd_details(pid_t tid, int fd, int level, char *buf, size_t len)
{
	static const char deleted[] = " (deleted)";
	char link[64], target[4096], text[4200];
	bool gone = false;
	ssize_t n;

	if (tid <= 0 || fd < 0 || !len)
		return -EINVAL;
	snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)tid, fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return -errno;
	target[n] = '\0';
	/* a deleted file: strace puts the kernel's " (deleted)" after the '>' */
	if (target[0] == '/' && (size_t)n > sizeof(deleted) - 1 &&
	    !strcmp(target + n - (sizeof(deleted) - 1), deleted)) {
		target[n - (sizeof(deleted) - 1)] = '\0';
		gone = true;
	}
	fd_text(tid, fd, level, link, target, text, sizeof(text));
	snprintf(buf, len, "<%s>%s", text, gone ? "(deleted)" : "");
	return 0;
}

int sysdec_cwd(pid_t tid, char *buf, size_t len)
{
	char link[64], dir[4096];
	ssize_t n;

	if (tid <= 0 || !len)
		return -EINVAL;
	snprintf(link, sizeof(link), "/proc/%d/cwd", (int)tid);
	n = readlink(link, dir, sizeof(dir) - 1);
	if (n <= 0)
		return -errno;
	dir[n] = '\0';
	quote_path(dir, buf, len); /* as strace quotes it */
	return 0;
}
