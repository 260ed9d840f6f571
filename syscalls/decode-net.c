/* SPDX-License-Identifier: MIT */
/*
 * decode-net.c - decoders of socket syscalls and of the multiplexers
 * (poll, select, epoll, eventfd). Tracer process.
 */
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "xlat/net.h"
#include "xlat/poll.h"

SYS_FUNC(socket)
{
	struct sbuf sb;
	uint64_t type = c->args[1];

	arg_xval(c, 0, xlat_af, "AF_???"); /* domain */
	arg_sb(c, 1, &sb); /* type */
	sb_xval(&sb, xlat_sock_types, type & 0xf, "SOCK_???");
	if (type & ~0xfULL) {
		sb_puts(&sb, "|");
		sb_flags(&sb, xlat_sock_flags, type & ~0xfULL, NULL);
	}
	if (c->args[0] == 2 || c->args[0] == 10) /* AF_INET, AF_INET6: protocol */
		arg_xval(c, 2, xlat_inet_protos, NULL);
	else if (c->args[0] == 16) /* AF_NETLINK */
		arg_xval(c, 2, xlat_netlink_protos, NULL);
	else
		arg_int(c, 2);
}

SYS_FUNC(socketpair)
{
	int fds[2];

	if (c->exiting) {
		struct sbuf sb;

		if (c->failed || umove(c, c->args[3], fds, sizeof(fds))) {
			arg_ptr(c, 3);
			return;
		}
		arg_sb(c, 3, &sb);
		sb_printf(&sb, "[%d", fds[0]);
		sb_fd_details(&sb, c, fds[0]);
		sb_printf(&sb, ", %d", fds[1]);
		sb_fd_details(&sb, c, fds[1]);
		sb_puts(&sb, "]");
		return;
	}
	sysdec_dec_socket(c);
	at_exit(c, 3); /* sv */
}

SYS_FUNC(connect)
{
	struct sbuf sb;

	arg_fd(c, 0); /* sockfd */
	sb_sockaddr(arg_sb(c, 1, &sb), c, c->args[1], c->args[2]); /* addr */
	arg_ulong(c, 2); /* addrlen */
}

SYS_FUNC(bind)
{
	sysdec_dec_connect(c);
}

SYS_FUNC(listen)
{
	arg_fd(c, 0); /* sockfd */
	arg_int(c, 1); /* backlog */
}

/* accept/getsockname: addr and [addrlen] are outputs. */
static void print_sockaddr_out(struct sysdec_call *c, int ia, int il)
{
	struct sbuf sb;
	uint32_t len;

	if (!c->args[il]) {
		arg_ptr(c, ia);
		arg_printf(c, il, "NULL");
		return;
	}
	if (c->failed || umove(c, c->args[il], &len, sizeof(len))) {
		arg_ptr(c, ia);
		arg_ptr(c, il);
		return;
	}
	sb_sockaddr(arg_sb(c, ia, &sb), c, c->args[ia], len);
	arg_printf(c, il, "[%u]", len);
}

SYS_FUNC(accept)
{
	if (!c->exiting) {
		arg_fd(c, 0); /* sockfd */
		at_exit(c, 1); /* addr */
		at_exit(c, 2); /* addrlen */
	} else {
		print_sockaddr_out(c, 1, 2);
	}
}

SYS_FUNC(accept4)
{
	sysdec_dec_accept(c);
	if (!c->exiting)
		arg_flags(c, 3, xlat_sock_flags, NULL); /* flags */
}

SYS_FUNC(getsockname)
{
	sysdec_dec_accept(c);
}

SYS_FUNC(shutdown)
{
	arg_fd(c, 0); /* sockfd */
	arg_xval(c, 1, xlat_shutdown_how, "SHUT_???"); /* how */
}

SYS_FUNC(sendto)
{
	struct sbuf sb;

	arg_fd(c, 0); /* sockfd */
	arg_buf(c, 1, c->args[2], 0); /* buf */
	arg_ulong(c, 2); /* len */
	arg_flags(c, 3, xlat_msg_flags, NULL); /* flags */
	sb_sockaddr(arg_sb(c, 4, &sb), c, c->args[4], c->args[5]); /* dest_addr */
	arg_ulong(c, 5); /* addrlen */
}

SYS_FUNC(recvfrom)
{
	if (!c->exiting) {
		arg_fd(c, 0); /* sockfd */
		at_exit(c, 1); /* buf */
		arg_ulong(c, 2); /* len */
		arg_flags(c, 3, xlat_msg_flags, NULL); /* flags */
		at_exit(c, 4); /* src_addr */
		at_exit(c, 5); /* addrlen */
		return;
	}
	if (c->failed)
		arg_ptr(c, 1);
	else
		arg_buf(c, 1, (uint64_t)c->ret, 0);
	print_sockaddr_out(c, 4, 5);
}

/* {msg_name=..., msg_iov=[...], msg_iovlen=N, msg_controllen=N, msg_flags=...} */
static void print_msghdr(struct sysdec_call *c, int i, uint64_t data)
{
	struct {
		uint64_t name;
		uint32_t namelen, pad;
		uint64_t iov, iovlen, control, controllen;
		int32_t flags, pad2;
	} m;
	struct sbuf sb;
	uint64_t k;

	if (umove(c, c->args[i], &m, sizeof(m))) {
		arg_ptr(c, i);
		return;
	}
	arg_sb(c, i, &sb);
	sb_puts(&sb, "{msg_name=");
	if (m.name)
		sb_sockaddr(&sb, c, m.name, m.namelen);
	else
		sb_puts(&sb, "NULL");
	sb_printf(&sb, ", msg_namelen=%u, msg_iov=[", m.namelen);
	for (k = 0; k < m.iovlen && k < 16 && !sb.trunc; k++) {
		uint64_t iov[2], len;
		size_t shown;
		unsigned char *buf;

		if (umove(c, m.iov + k * 16, iov, sizeof(iov)))
			break;
		len = iov[1] < data ? iov[1] : data;
		data -= len;
		shown = len < (uint64_t)c->strsize ? (size_t)len : (size_t)c->strsize;
		sb_printf(&sb, "%s{iov_base=", k ? ", " : "");
		buf = malloc(shown + 1);
		if (buf && (!shown || !umove(c, iov[0], buf, shown)))
			sb_quote(&sb, buf, shown, shown < len ? QUOTE_ELLIPSIS : 0);
		else
			sb_ptr(&sb, iov[0]);
		free(buf);
		sb_printf(&sb, ", iov_len=%llu}", (unsigned long long)iov[1]);
	}
	sb_printf(&sb, "], msg_iovlen=%llu, msg_controllen=%llu, msg_flags=",
		  (unsigned long long)m.iovlen, (unsigned long long)m.controllen);
	sb_flags(&sb, xlat_msg_flags, (uint32_t)m.flags, NULL);
	sb_puts(&sb, "}");
}

SYS_FUNC(sendmsg)
{
	arg_fd(c, 0); /* sockfd */
	print_msghdr(c, 1, ~0ULL); /* msg */
	arg_flags(c, 2, xlat_msg_flags, NULL); /* flags */
}

SYS_FUNC(recvmsg)
{
	if (!c->exiting) {
		arg_fd(c, 0); /* sockfd */
		at_exit(c, 1); /* msg */
		arg_flags(c, 2, xlat_msg_flags, NULL); /* flags */
	} else if (c->failed) {
		arg_ptr(c, 1);
	} else {
		print_msghdr(c, 1, (uint64_t)c->ret);
	}
}

/* [{fd=3, events=POLLIN}, ...]; at exit the revents of the ready ones. */
static void print_pollfds(struct sysdec_call *c, int i, struct sbuf *sb, bool revents)
{
	uint64_t n = c->args[1], k;
	bool first = true;

	if (n > 1024 || !c->args[0]) {
		sb_ptr(sb, c->args[0]);
		return;
	}
	sb_puts(sb, "[");
	for (k = 0; k < n && !sb->trunc; k++) {
		struct {
			int32_t fd;
			int16_t events, revents;
		} p;

		if (umove(c, c->args[0] + k * 8, &p, sizeof(p)))
			break;
		if (revents && !p.revents)
			continue;
		if (k >= (uint64_t)c->strsize) {
			sb_puts(sb, ", ...");
			break;
		}
		sb_printf(sb, "%s{fd=%d, %s=", first ? "" : ", ", p.fd,
			  revents ? "revents" : "events");
		sb_flags(sb, xlat_poll_events, (uint16_t)(revents ? p.revents : p.events), "0");
		sb_puts(sb, "}");
		first = false;
	}
	sb_puts(sb, "]");
	(void)i;
}

static void poll_common(struct sysdec_call *c)
{
	struct sbuf sb;

	if (!c->exiting) {
		print_pollfds(c, 0, arg_sb(c, 0, &sb), false); /* fds */
		arg_ulong(c, 1); /* nfds */
		c->want_exit = true;
		return;
	}
	if (c->failed || c->ret <= 0)
		return;
	sb_init(&sb, c->rextra, sizeof(c->rextra));
	sb_puts(&sb, " (");
	print_pollfds(c, 0, &sb, true);
	sb_puts(&sb, ")");
}

SYS_FUNC(poll)
{
	poll_common(c);
	if (!c->exiting)
		arg_int(c, 2); /* timeout */
}

SYS_FUNC(ppoll)
{
	struct sbuf sb;

	poll_common(c);
	if (c->exiting)
		return;
	sb_timespec(arg_sb(c, 2, &sb), c, c->args[2]); /* tmo_p */
	arg_ptr(c, 3); /* sigmask */
	arg_ulong(c, 4); /* sigsetsize */
}

/* [3 4]: an fd_set of @nfds bits */
static void print_fdset(struct sysdec_call *c, int i, int nfds)
{
	unsigned char set[128];
	struct sbuf sb;
	size_t len;
	int fd;
	bool first = true;

	if (!c->args[i]) {
		arg_printf(c, i, "NULL");
		return;
	}
	if (nfds < 0 || nfds > 1024)
		nfds = 1024;
	len = (nfds + 63) / 64 * 8;
	if (umove(c, c->args[i], set, len)) {
		arg_ptr(c, i);
		return;
	}
	arg_sb(c, i, &sb);
	sb_puts(&sb, "[");
	for (fd = 0; fd < nfds; fd++) {
		if (set[fd / 8] & (1U << (fd % 8))) {
			sb_printf(&sb, "%s%d", first ? "" : " ", fd);
			first = false;
		}
	}
	sb_puts(&sb, "]");
}

SYS_FUNC(select)
{
	int nfds = (int)c->args[0];
	struct sbuf sb;
	int64_t tv[2];

	arg_int(c, 0); /* nfds */
	print_fdset(c, 1, nfds);
	print_fdset(c, 2, nfds);
	print_fdset(c, 3, nfds);
	arg_sb(c, 4, &sb); /* timeout: struct timeval */
	if (!c->args[4])
		sb_puts(&sb, "NULL");
	else if (umove(c, c->args[4], tv, sizeof(tv)))
		sb_ptr(&sb, c->args[4]);
	else
		sb_printf(&sb, "{tv_sec=%lld, tv_usec=%lld}", (long long)tv[0], (long long)tv[1]);
}

SYS_FUNC(pselect6)
{
	int nfds = (int)c->args[0];
	struct sbuf sb;

	arg_int(c, 0); /* nfds */
	print_fdset(c, 1, nfds);
	print_fdset(c, 2, nfds);
	print_fdset(c, 3, nfds);
	sb_timespec(arg_sb(c, 4, &sb), c, c->args[4]); /* timeout */
	arg_ptr(c, 5); /* sigmask */
}

SYS_FUNC(epoll_create)
{
	arg_int(c, 0); /* size */
}

SYS_FUNC(epoll_create1)
{
	arg_flags(c, 0, xlat_epoll_flags, NULL); /* flags */
}

/* struct epoll_event is packed on x86-64: u32 events, u64 data. */
static void sb_epoll_event(struct sbuf *sb, const unsigned char *ev)
{
	uint32_t events;
	uint64_t data;

	memcpy(&events, ev, 4);
	memcpy(&data, ev + 4, 8);
	sb_puts(sb, "{events=");
	sb_flags(sb, xlat_epoll_events, events, "0");
	sb_printf(sb, ", data=%#llx}", (unsigned long long)data);
}

SYS_FUNC(epoll_ctl)
{
	unsigned char ev[12];
	struct sbuf sb;

	arg_fd(c, 0); /* epfd */
	arg_xval(c, 1, xlat_epoll_ctl_ops, "EPOLL_CTL_???"); /* op */
	arg_fd(c, 2); /* fd */
	if (!c->args[3]) /* event */
		arg_printf(c, 3, "NULL");
	else if (umove(c, c->args[3], ev, sizeof(ev)))
		arg_ptr(c, 3);
	else
		sb_epoll_event(arg_sb(c, 3, &sb), ev);
}

static void print_epoll_events(struct sysdec_call *c, int i)
{
	struct sbuf sb;
	long k;

	if (c->failed) {
		arg_ptr(c, i);
		return;
	}
	arg_sb(c, i, &sb);
	sb_puts(&sb, "[");
	for (k = 0; k < c->ret && !sb.trunc; k++) {
		unsigned char ev[12];

		if (umove(c, c->args[i] + k * 12, ev, sizeof(ev)))
			break;
		if (k)
			sb_puts(&sb, ", ");
		sb_epoll_event(&sb, ev);
	}
	sb_puts(&sb, "]");
}

SYS_FUNC(epoll_wait)
{
	if (!c->exiting) {
		arg_fd(c, 0); /* epfd */
		at_exit(c, 1); /* events */
		arg_int(c, 2); /* maxevents */
		arg_int(c, 3); /* timeout */
	} else {
		print_epoll_events(c, 1);
	}
}

SYS_FUNC(epoll_pwait)
{
	sysdec_dec_epoll_wait(c);
	if (!c->exiting) {
		arg_ptr(c, 4); /* sigmask */
		arg_ulong(c, 5); /* sigsetsize */
	}
}

SYS_FUNC(eventfd)
{
	arg_ulong(c, 0); /* initval */
}

SYS_FUNC(eventfd2)
{
	arg_ulong(c, 0); /* initval */
	arg_flags(c, 1, xlat_efd_flags, NULL); /* flags */
}
