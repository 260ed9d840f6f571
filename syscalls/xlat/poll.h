/* SPDX-License-Identifier: MIT */
/* xlat/poll.h - poll and epoll events, epoll_ctl ops, eventfd flags. */
#ifndef __UTRACE_XLAT_POLL_H
#define __UTRACE_XLAT_POLL_H

#include "decode.h"

static const struct xlat xlat_poll_events[] = {
	XLAT_PAIR(0x1, "POLLIN"),
	XLAT_PAIR(0x2, "POLLPRI"),
	XLAT_PAIR(0x4, "POLLOUT"),
	XLAT_PAIR(0x8, "POLLERR"),
	XLAT_PAIR(0x10, "POLLHUP"),
	XLAT_PAIR(0x20, "POLLNVAL"),
	XLAT_PAIR(0x40, "POLLRDNORM"),
	XLAT_PAIR(0x80, "POLLRDBAND"),
	XLAT_PAIR(0x100, "POLLWRNORM"),
	XLAT_PAIR(0x200, "POLLWRBAND"),
	XLAT_PAIR(0x400, "POLLMSG"),
	XLAT_PAIR(0x2000, "POLLRDHUP"),
	XLAT_END,
};

static const struct xlat xlat_epoll_events[] = {
	XLAT_PAIR(0x1, "EPOLLIN"),
	XLAT_PAIR(0x2, "EPOLLPRI"),
	XLAT_PAIR(0x4, "EPOLLOUT"),
	XLAT_PAIR(0x8, "EPOLLERR"),
	XLAT_PAIR(0x10, "EPOLLHUP"),
	XLAT_PAIR(0x20, "EPOLLNVAL"),
	XLAT_PAIR(0x40, "EPOLLRDNORM"),
	XLAT_PAIR(0x80, "EPOLLRDBAND"),
	XLAT_PAIR(0x100, "EPOLLWRNORM"),
	XLAT_PAIR(0x200, "EPOLLWRBAND"),
	XLAT_PAIR(0x400, "EPOLLMSG"),
	XLAT_PAIR(0x2000, "EPOLLRDHUP"),
	XLAT_PAIR(1U << 28, "EPOLLEXCLUSIVE"),
	XLAT_PAIR(1U << 29, "EPOLLWAKEUP"),
	XLAT_PAIR(1U << 30, "EPOLLONESHOT"),
	XLAT_PAIR(1U << 31, "EPOLLET"),
	XLAT_END,
};

static const struct xlat xlat_epoll_ctl_ops[] = {
	XLAT_PAIR(1, "EPOLL_CTL_ADD"),
	XLAT_PAIR(2, "EPOLL_CTL_DEL"),
	XLAT_PAIR(3, "EPOLL_CTL_MOD"),
	XLAT_END,
};

static const struct xlat xlat_epoll_flags[] = {
	XLAT_PAIR(02000000, "EPOLL_CLOEXEC"),
	XLAT_END,
};

static const struct xlat xlat_efd_flags[] = {
	XLAT_PAIR(1, "EFD_SEMAPHORE"),
	XLAT_PAIR(02000000, "EFD_CLOEXEC"),
	XLAT_PAIR(04000, "EFD_NONBLOCK"),
	XLAT_END,
};

#endif /* __UTRACE_XLAT_POLL_H */
