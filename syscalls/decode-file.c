/* SPDX-License-Identifier: MIT */
/*
 * decode-file.c - decoders of file and descriptor syscalls: I/O, open,
 * stat family, access, lseek, fcntl, ioctl, pipes and dups, directories,
 * links. Tracer process. Each argument is introduced by a comment naming it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "decode.h"
#include "xlat/fs.h"

/* [{iov_base="..", iov_len=N}, ...]: at most @data bytes of payload shown. */
static void print_iov(struct sysdec_call *c, int i, uint64_t addr, uint64_t cnt, uint64_t data)
{
	struct sbuf sb;
	uint64_t k;

	arg_sb(c, i, &sb);
	if (!addr || cnt > 1024) {
		sb_ptr(&sb, addr);
		return;
	}
	sb_puts(&sb, "[");
	for (k = 0; k < cnt && !sb.trunc; k++) {
		uint64_t iov[2];
		uint64_t len;
		size_t shown;
		unsigned char *buf;

		if (k >= (uint64_t)c->strsize) {
			sb_puts(&sb, ", ...");
			break;
		}
		if (umove(c, addr + k * sizeof(iov), iov, sizeof(iov))) {
			sb_printf(&sb, "%s%#llx", k ? ", " : "",
				  (unsigned long long)(addr + k * 16));
			break;
		}
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
	sb_puts(&sb, "]");
}

SYS_FUNC(read)
{
	if (!c->exiting) {
		arg_fd(c, 0); /* fd */
		at_exit(c, 1); /* buf */
		arg_ulong(c, 2); /* count */
	} else if (c->failed) {
		arg_ptr(c, 1);
	} else {
		arg_buf(c, 1, (uint64_t)c->ret, 0);
	}
}

SYS_FUNC(write)
{
	arg_fd(c, 0); /* fd */
	arg_buf(c, 1, c->args[2], 0); /* buf */
	arg_ulong(c, 2); /* count */
}

SYS_FUNC(pread)
{
	sysdec_dec_read(c);
	if (!c->exiting)
		arg_long(c, 3); /* offset */
}

SYS_FUNC(pwrite)
{
	sysdec_dec_write(c);
	arg_long(c, 3); /* offset */
}

SYS_FUNC(readv)
{
	if (!c->exiting) {
		arg_fd(c, 0); /* fd */
		at_exit(c, 1); /* iov */
		arg_int(c, 2); /* iovcnt */
	} else if (c->failed) {
		arg_ptr(c, 1);
	} else {
		print_iov(c, 1, c->args[1], c->args[2], (uint64_t)c->ret);
	}
}

SYS_FUNC(writev)
{
	arg_fd(c, 0); /* fd */
	print_iov(c, 1, c->args[1], c->args[2], ~0ULL); /* iov */
	arg_int(c, 2); /* iovcnt */
}

SYS_FUNC(preadv)
{
	sysdec_dec_readv(c);
	if (!c->exiting)
		arg_long(c, 3); /* offset */
}

SYS_FUNC(pwritev)
{
	sysdec_dec_writev(c);
	arg_long(c, 3); /* offset */
}

/* O_RDONLY|O_CLOEXEC: the access mode, then the flags. */
static void print_open_flags(struct sysdec_call *c, int i)
{
	struct sbuf sb;
	uint64_t f = c->args[i];

	arg_sb(c, i, &sb);
	if (sb_raw_begin(&sb, f, "%#llx"))
		return;
	sb_xval(&sb, xlat_open_access, f & 3, NULL);
	f &= ~3ULL;
	if (f) {
		sb_puts(&sb, "|");
		sb_flags(&sb, xlat_open_flags, f, NULL);
	}
	sb_raw_end(&sb);
}

/* The mode argument only means something when a file may be created. */
static int open_shows_mode(uint64_t flags)
{
	return (flags & O_CREAT) || (flags & 020200000) == 020200000;
}

SYS_FUNC(open)
{
	arg_path(c, 0); /* pathname */
	print_open_flags(c, 1); /* flags */
	if (open_shows_mode(c->args[1]))
		arg_oct(c, 2); /* mode */
	else
		show(c, 2);
}

SYS_FUNC(openat)
{
	arg_dirfd(c, 0); /* dirfd */
	arg_path(c, 1); /* pathname */
	print_open_flags(c, 2); /* flags */
	if (open_shows_mode(c->args[2]))
		arg_oct(c, 3); /* mode */
	else
		show(c, 3);
}

SYS_FUNC(creat)
{
	arg_path(c, 0); /* pathname */
	arg_oct(c, 1); /* mode */
}

SYS_FUNC(close)
{
	arg_fd(c, 0); /* fd */
}

SYS_FUNC(fd_only)
{
	arg_fd(c, 0); /* fd */
}

SYS_FUNC(path_only)
{
	arg_path(c, 0); /* pathname */
}

SYS_FUNC(close_range)
{
	arg_fd(c, 0); /* first */
	if ((uint32_t)c->args[1] == ~0U)
		arg_printf(c, 1, "~0U"); /* last */
	else
		arg_ulong(c, 1);
	arg_printf(c, 2, "%s",
		   (c->args[2] & 6) == 6 ? "CLOSE_RANGE_UNSHARE|CLOSE_RANGE_CLOEXEC" :
		   c->args[2] & 4	 ? "CLOSE_RANGE_CLOEXEC" :
		   c->args[2] & 2	 ? "CLOSE_RANGE_UNSHARE" :
					   "0");
}

/* {st_mode=S_IFREG|0644, st_size=1234, ...}, as strace prints by default. */
static void print_stat(struct sysdec_call *c, int i)
{
	struct stat st;
	struct sbuf sb;

	if (c->failed || umove(c, c->args[i], &st, sizeof(st))) {
		arg_ptr(c, i);
		return;
	}
	arg_sb(c, i, &sb);
	sb_puts(&sb, "{st_mode=");
	sb_mode(&sb, st.st_mode);
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		sb_puts(&sb, ", st_rdev=");
		if (!sb_raw_begin(&sb, st.st_rdev, "%#llx")) {
			sb_printf(&sb, "makedev(%#x, %#x)", major(st.st_rdev), minor(st.st_rdev));
			sb_raw_end(&sb);
		}
	} else
		sb_printf(&sb, ", st_size=%lld", (long long)st.st_size);
	sb_puts(&sb, ", ...}");
}

SYS_FUNC(stat)
{
	if (!c->exiting) {
		arg_path(c, 0); /* pathname */
		at_exit(c, 1); /* statbuf */
	} else {
		print_stat(c, 1);
	}
}

SYS_FUNC(fstat)
{
	if (!c->exiting) {
		arg_fd(c, 0); /* fd */
		at_exit(c, 1); /* statbuf */
	} else {
		print_stat(c, 1);
	}
}

SYS_FUNC(newfstatat)
{
	if (!c->exiting) {
		arg_dirfd(c, 0); /* dirfd */
		arg_path(c, 1); /* pathname */
		at_exit(c, 2); /* statbuf */
		arg_flags(c, 3, xlat_at_flags, NULL); /* flags */
	} else {
		print_stat(c, 2);
	}
}

SYS_FUNC(statx)
{
	struct statx stx;
	struct sbuf sb;

	if (!c->exiting) {
		arg_dirfd(c, 0); /* dirfd */
		arg_path(c, 1); /* pathname */
		arg_sb(c, 2, &sb); /* flags: the sync type, then the AT_* flags */
		sb_xval(&sb, xlat_statx_sync, c->args[2] & 0x6000, NULL);
		if (c->args[2] & ~0x6000ULL) {
			sb_puts(&sb, "|");
			sb_flags(&sb, xlat_at_flags, c->args[2] & ~0x6000ULL, NULL);
		}
		arg_flags(c, 3, xlat_statx_mask, NULL); /* mask */
		at_exit(c, 4); /* statxbuf */
		return;
	}
	if (c->failed || umove(c, c->args[4], &stx, sizeof(stx))) {
		arg_ptr(c, 4);
		return;
	}
	arg_sb(c, 4, &sb);
	sb_puts(&sb, "{stx_mask=");
	sb_flags(&sb, xlat_statx_mask, stx.stx_mask, NULL);
	sb_puts(&sb, ", stx_attributes=");
	sb_flags(&sb, xlat_statx_attrs, stx.stx_attributes, NULL);
	sb_puts(&sb, ", stx_mode=");
	sb_mode(&sb, stx.stx_mode);
	sb_printf(&sb, ", stx_size=%llu, ...}", (unsigned long long)stx.stx_size);
}

SYS_FUNC(access)
{
	arg_path(c, 0); /* pathname */
	arg_flags(c, 1, xlat_access_modes, "F_OK"); /* mode */
}

SYS_FUNC(faccessat)
{
	arg_dirfd(c, 0); /* dirfd */
	arg_path(c, 1); /* pathname */
	arg_flags(c, 2, xlat_access_modes, "F_OK"); /* mode */
}

SYS_FUNC(faccessat2)
{
	sysdec_dec_faccessat(c);
	arg_flags(c, 3, xlat_faccessat_flags, NULL); /* flags */
}

SYS_FUNC(lseek)
{
	arg_fd(c, 0); /* fd */
	arg_long(c, 1); /* offset */
	arg_xval(c, 2, xlat_whence, "SEEK_???"); /* whence */
}

SYS_FUNC(ioctl)
{
	const char *name = xlat_name(xlat_ioctl_cmds, (uint32_t)c->args[1]);

	arg_fd(c, 0); /* fd */
	if (name) { /* request */
		struct sbuf sb;

		arg_sb(c, 1, &sb);
		if (!sb_raw_begin(&sb, (uint32_t)c->args[1], "%#llx")) {
			sb_puts(&sb, name);
			sb_raw_end(&sb);
		}
	} else {
		arg_printf(c, 1, "%#x", (unsigned int)c->args[1]);
	}
	arg_hex(c, 2); /* argp */
}

/* [3, 4] */
static void print_fd_pair(struct sysdec_call *c, int i)
{
	int fds[2];

	struct sbuf sb;

	if (c->failed || umove(c, c->args[i], fds, sizeof(fds))) {
		arg_ptr(c, i);
		return;
	}
	arg_sb(c, i, &sb);
	sb_printf(&sb, "[%d", fds[0]);
	sb_fd_details(&sb, c, fds[0]);
	sb_printf(&sb, ", %d", fds[1]);
	sb_fd_details(&sb, c, fds[1]);
	sb_puts(&sb, "]");
}

SYS_FUNC(pipe)
{
	if (!c->exiting)
		at_exit(c, 0); /* pipefd */
	else
		print_fd_pair(c, 0);
}

SYS_FUNC(pipe2)
{
	struct sbuf sb;

	if (!c->exiting) {
		at_exit(c, 0); /* pipefd */
		sb_flags(arg_sb(c, 1, &sb), xlat_open_flags, c->args[1], NULL); /* flags */
	} else {
		print_fd_pair(c, 0);
	}
}

SYS_FUNC(dup)
{
	arg_fd(c, 0); /* oldfd */
}

SYS_FUNC(dup2)
{
	arg_fd(c, 0); /* oldfd */
	arg_fd(c, 1); /* newfd */
}

SYS_FUNC(dup3)
{
	struct sbuf sb;

	arg_fd(c, 0); /* oldfd */
	arg_fd(c, 1); /* newfd */
	sb_flags(arg_sb(c, 2, &sb), xlat_open_flags, c->args[2], NULL); /* flags */
}

SYS_FUNC(fcntl)
{
	unsigned int cmd = (unsigned int)c->args[1];
	struct sbuf sb;

	if (c->exiting) {
		/* F_GETFD/F_GETFL: strace adds the decoded flags to the value */
		if (c->failed)
			return;
		c->rfmt = RVAL_HEX;
		sb_init(&sb, c->rextra, sizeof(c->rextra));
		sb_puts(&sb, " (flags ");
		if (cmd == F_GETFD) {
			sb_flags(&sb, xlat_fd_flags, (uint64_t)c->ret, NULL);
		} else {
			sb_xval(&sb, xlat_open_access, (uint64_t)c->ret & 3, NULL);
			if ((uint64_t)c->ret & ~3ULL) {
				sb_puts(&sb, "|");
				sb_flags(&sb, xlat_open_flags, (uint64_t)c->ret & ~3ULL, NULL);
			}
		}
		sb_puts(&sb, ")");
		if (!c->ret && cmd == F_GETFD) {
			c->rfmt = RVAL_DEC;
			c->rextra[0] = '\0';
		}
		return;
	}
	arg_fd(c, 0); /* fd */
	arg_xval(c, 1, xlat_fcntl_cmds, "F_???"); /* cmd */
	switch (cmd) { /* arg */
	case F_GETFD:
	case F_GETFL:
		c->want_exit = true;
		show(c, 2);
		break;
	case F_GETOWN:
	case F_GETSIG:
	case 1025: /* F_GETLEASE */
	case 1032: /* F_GETPIPE_SZ */
	case 1034: /* F_GET_SEALS */
		show(c, 2);
		break;
	case F_SETFD:
		arg_flags(c, 2, xlat_fd_flags, NULL);
		break;
	case F_SETFL:
		sb_flags(arg_sb(c, 2, &sb), xlat_open_flags, c->args[2], NULL);
		break;
	case F_DUPFD:
	case 1030: /* F_DUPFD_CLOEXEC */
	case F_SETOWN:
	case F_SETSIG:
	case 1031: /* F_SETPIPE_SZ */
	case 1024: /* F_SETLEASE */
	case 1033: /* F_ADD_SEALS */
		arg_long(c, 2);
		break;
	default:
		arg_ptr(c, 2);
		break;
	}
}

SYS_FUNC(getdents64)
{
	unsigned char *buf;
	long n, off, count = 0;

	if (!c->exiting) {
		arg_fd(c, 0); /* fd */
		at_exit(c, 1); /* dirp */
		arg_ulong(c, 2); /* count */
		return;
	}
	n = c->ret;
	if (!c->failed && n == 0) {
		arg_printf(c, 1, "%#llx /* 0 entries */", (unsigned long long)c->args[1]);
		return;
	}
	if (c->failed || n < 0 || n > (1 << 24) || !(buf = malloc(n))) {
		arg_ptr(c, 1);
		return;
	}
	if (umove(c, c->args[1], buf, n)) {
		free(buf);
		arg_ptr(c, 1);
		return;
	}
	/* struct linux_dirent64: d_reclen at offset 16 */
	for (off = 0; off + 19 <= n; count++) {
		uint16_t reclen;

		memcpy(&reclen, buf + off + 16, sizeof(reclen));
		if (!reclen)
			break;
		off += reclen;
	}
	free(buf);
	arg_printf(c, 1, "%#llx /* %ld entries */", (unsigned long long)c->args[1], count);
}

SYS_FUNC(chdir)
{
	arg_path(c, 0); /* path */
}

SYS_FUNC(getcwd)
{
	if (!c->exiting) {
		at_exit(c, 0); /* buf */
		arg_ulong(c, 1); /* size */
	} else if (c->failed) {
		arg_ptr(c, 0);
	} else {
		arg_path(c, 0);
	}
}

SYS_FUNC(rename)
{
	arg_path(c, 0); /* oldpath */
	arg_path(c, 1); /* newpath */
}

SYS_FUNC(renameat)
{
	arg_dirfd(c, 0); /* olddirfd */
	arg_path(c, 1); /* oldpath */
	arg_dirfd(c, 2); /* newdirfd */
	arg_path(c, 3); /* newpath */
}

SYS_FUNC(renameat2)
{
	sysdec_dec_renameat(c);
	arg_flags(c, 4, xlat_renameat2_flags, NULL); /* flags */
}

SYS_FUNC(unlinkat)
{
	arg_dirfd(c, 0); /* dirfd */
	arg_path(c, 1); /* pathname */
	arg_flags(c, 2, xlat_at_flags, NULL); /* flags */
}

SYS_FUNC(mkdir)
{
	arg_path(c, 0); /* pathname */
	arg_oct(c, 1); /* mode */
}

SYS_FUNC(mkdirat)
{
	arg_dirfd(c, 0); /* dirfd */
	arg_path(c, 1); /* pathname */
	arg_oct(c, 2); /* mode */
}

SYS_FUNC(chmod)
{
	arg_path(c, 0); /* pathname */
	arg_oct(c, 1); /* mode */
}

SYS_FUNC(fchmod)
{
	arg_fd(c, 0); /* fd */
	arg_oct(c, 1); /* mode */
}

SYS_FUNC(umask)
{
	arg_oct(c, 0); /* mask */
	c->rfmt = RVAL_OCT;
}

/* The link target: ret bytes, not NUL-terminated, cut at -S. */
static void print_link(struct sysdec_call *c, int i)
{
	if (c->failed)
		arg_ptr(c, i);
	else
		arg_buf(c, i, (uint64_t)c->ret, 0);
}

SYS_FUNC(readlink)
{
	if (!c->exiting) {
		arg_path(c, 0); /* pathname */
		at_exit(c, 1); /* buf */
		arg_ulong(c, 2); /* bufsiz */
	} else {
		print_link(c, 1);
	}
}

SYS_FUNC(readlinkat)
{
	if (!c->exiting) {
		arg_dirfd(c, 0); /* dirfd */
		arg_path(c, 1); /* pathname */
		at_exit(c, 2); /* buf */
		arg_ulong(c, 3); /* bufsiz */
	} else {
		print_link(c, 2);
	}
}

SYS_FUNC(ftruncate)
{
	arg_fd(c, 0); /* fd */
	arg_long(c, 1); /* length */
}

SYS_FUNC(truncate)
{
	arg_path(c, 0); /* path */
	arg_long(c, 1); /* length */
}

SYS_FUNC(memfd_create)
{
	arg_str(c, 0); /* name */
	arg_flags(c, 1, xlat_mfd_flags, NULL); /* flags */
}

/* statfs(path, buf): the struct is left as an address. */
SYS_FUNC(statfs)
{
	arg_path(c, 0); /* path */
	arg_ptr(c, 1); /* buf */
}

SYS_FUNC(fstatfs)
{
	arg_fd(c, 0); /* fd */
	arg_ptr(c, 1); /* buf */
}

/* The value of getxattr: ret bytes, or the address if it failed or size is 0. */
static void print_xattr_value(struct sysdec_call *c, int i, uint64_t size)
{
	if (!c->args[i] || !size)
		arg_ptr(c, i);
	else if (c->failed)
		arg_ptr(c, i);
	else
		arg_buf(c, i, (uint64_t)c->ret, 0);
}

static void getxattr_common(struct sysdec_call *c, bool by_fd)
{
	if (!c->exiting) {
		if (by_fd)
			arg_fd(c, 0); /* fd */
		else
			arg_path(c, 0); /* path */
		arg_str(c, 1); /* name */
		at_exit(c, 2); /* value */
		arg_ulong(c, 3); /* size */
	} else {
		print_xattr_value(c, 2, c->args[3]);
	}
}

SYS_FUNC(getxattr)
{
	getxattr_common(c, false);
}

SYS_FUNC(fgetxattr)
{
	getxattr_common(c, true);
}

static void setxattr_common(struct sysdec_call *c, bool by_fd)
{
	if (by_fd)
		arg_fd(c, 0); /* fd */
	else
		arg_path(c, 0); /* path */
	arg_str(c, 1); /* name */
	arg_buf(c, 2, c->args[3], 0); /* value */
	arg_ulong(c, 3); /* size */
	arg_flags(c, 4, xlat_xattr_flags, NULL); /* flags */
}

SYS_FUNC(setxattr)
{
	setxattr_common(c, false);
}

SYS_FUNC(fsetxattr)
{
	setxattr_common(c, true);
}

/* listxattr: the list is NUL-separated names; shown as a quoted buffer. */
static void listxattr_common(struct sysdec_call *c, bool by_fd)
{
	if (!c->exiting) {
		if (by_fd)
			arg_fd(c, 0); /* fd */
		else
			arg_path(c, 0); /* path */
		at_exit(c, 1); /* list */
		arg_ulong(c, 2); /* size */
	} else {
		print_xattr_value(c, 1, c->args[2]);
	}
}

SYS_FUNC(listxattr)
{
	listxattr_common(c, false);
}

SYS_FUNC(flistxattr)
{
	listxattr_common(c, true);
}

SYS_FUNC(removexattr)
{
	arg_path(c, 0); /* path */
	arg_str(c, 1); /* name */
}

SYS_FUNC(fremovexattr)
{
	arg_fd(c, 0); /* fd */
	arg_str(c, 1); /* name */
}
