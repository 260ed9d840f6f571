/* SPDX-License-Identifier: MIT */
/*
 * print.c - rendering helpers for the decoders: strace's string quoting,
 * flag and constant tables, pointers, signal sets, file modes, timespecs and
 * socket addresses. Tracer process; snprintf into fixed buffers only.
 */
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>

#include "decode.h"
#include "xlat/fs.h"
#include "xlat/net.h"
#include "xlat/signal.h"

void sb_init(struct sbuf *sb, char *buf, size_t size)
{
	sb->buf = buf;
	sb->size = size;
	sb->len = 0;
	sb->trunc = false;
	buf[0] = '\0';
}

static void sb_overflow(struct sbuf *sb)
{
	/* Keep room for "..." so a cut argument reads as one. */
	sb->trunc = true;
	if (sb->size > 4) {
		sb->len = sb->size - 4;
		memcpy(sb->buf + sb->len, "...", 4);
		sb->len += 3;
	}
}

void sb_printf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (sb->trunc)
		return;
	va_start(ap, fmt);
	n = vsnprintf(sb->buf + sb->len, sb->size - sb->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sb->size - sb->len - 3)
		sb_overflow(sb);
	else
		sb->len += n;
}

void sb_puts(struct sbuf *sb, const char *s)
{
	sb_printf(sb, "%s", s);
}

/*
 * The escaping of strace's string_quote(): printable ASCII as is, the usual
 * C escapes, everything else in octal, with three digits only when the next
 * byte is an octal digit (so "\0" + "1" cannot read as "\01").
 */
void sb_quote(struct sbuf *sb, const unsigned char *s, size_t len, unsigned int flags)
{
	char tmp[8];
	size_t i;

	sb_puts(sb, "\"");
	for (i = 0; i < len && !sb->trunc; i++) {
		unsigned char ch = s[i];
		char *p = tmp;

		if ((flags & QUOTE_NUL_TERM) && ch == '\0')
			break;
		if (flags & QUOTE_FORCE_HEX) {
			snprintf(tmp, sizeof(tmp), "\\x%02x", ch);
			sb_puts(sb, tmp);
			continue;
		}
		switch (ch) {
		case '"':
			sb_puts(sb, "\\\"");
			continue;
		case '\\':
			sb_puts(sb, "\\\\");
			continue;
		case '\f':
			sb_puts(sb, "\\f");
			continue;
		case '\n':
			sb_puts(sb, "\\n");
			continue;
		case '\r':
			sb_puts(sb, "\\r");
			continue;
		case '\t':
			sb_puts(sb, "\\t");
			continue;
		case '\v':
			sb_puts(sb, "\\v");
			continue;
		}
		if (ch >= ' ' && ch <= '~') {
			*p++ = (char)ch;
		} else {
			*p++ = '\\';
			if (i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '7') {
				*p++ = (char)('0' + (ch >> 6));
				*p++ = (char)('0' + ((ch >> 3) & 7));
			} else if (ch >> 3) {
				if (ch >> 6)
					*p++ = (char)('0' + (ch >> 6));
				*p++ = (char)('0' + ((ch >> 3) & 7));
			}
			*p++ = (char)('0' + (ch & 7));
		}
		*p = '\0';
		sb_puts(sb, tmp);
	}
	sb_puts(sb, "\"");
	if (flags & QUOTE_ELLIPSIS)
		sb_puts(sb, "...");
}

const char *xlat_name(const struct xlat *x, uint64_t val)
{
	for (; x && x->str; x++)
		if (x->val == val)
			return x->str;
	return NULL;
}

/* -X: set once by the CLI before any decoding (tracer process, one thread) */
static enum sysdec_xlat_style xlat_style;

void sysdec_set_xlat_style(enum sysdec_xlat_style style)
{
	xlat_style = style;
}

static void sb_flags_abbrev(struct sbuf *sb, const struct xlat *x, uint64_t val, const char *dflt);

static enum sysdec_xlat_style saved_style;

bool sb_raw_begin(struct sbuf *sb, uint64_t val, const char *fmt)
{
	if (xlat_style == SYSDEC_XLAT_ABBREV)
		return false;
	sb_printf(sb, fmt, (unsigned long long)val);
	if (xlat_style == SYSDEC_XLAT_RAW)
		return true;
	sb_puts(sb, " /* ");
	saved_style = xlat_style;
	xlat_style = SYSDEC_XLAT_ABBREV;
	return false;
}

void sb_raw_end(struct sbuf *sb)
{
	if (saved_style != SYSDEC_XLAT_VERBOSE)
		return;
	sb_puts(sb, " */");
	xlat_style = saved_style;
	saved_style = SYSDEC_XLAT_ABBREV;
}

/*
 * strace -X raw prints the number alone, -X verbose the number and the
 * names in a comment (only when some name applies).
 */
void sb_flags(struct sbuf *sb, const struct xlat *x, uint64_t val, const char *dflt)
{
	const struct xlat *p;
	bool named = !val && dflt;

	if (xlat_style == SYSDEC_XLAT_ABBREV) {
		sb_flags_abbrev(sb, x, val, dflt);
		return;
	}
	sb_printf(sb, "%#llx", (unsigned long long)val);
	for (p = x; val && p->str; p++)
		named |= p->val && (val & p->val) == p->val;
	if (xlat_style == SYSDEC_XLAT_VERBOSE && named) {
		sb_puts(sb, " /* ");
		sb_flags_abbrev(sb, x, val, dflt);
		sb_puts(sb, " */");
	}
}

static void sb_flags_abbrev(struct sbuf *sb, const struct xlat *x, uint64_t val, const char *dflt)
{
	bool first = true;

	if (!val) {
		sb_puts(sb, dflt ? dflt : "0");
		return;
	}
	for (; x->str; x++) {
		if (x->val && (val & x->val) == x->val) {
			sb_printf(sb, "%s%s", first ? "" : "|", x->str);
			val &= ~x->val;
			first = false;
		}
	}
	if (val)
		sb_printf(sb, "%s%#llx", first ? "" : "|", (unsigned long long)val);
}

void sb_xval(struct sbuf *sb, const struct xlat *x, uint64_t val, const char *unknown_comment)
{
	const char *s = xlat_name(x, val);

	if (s && xlat_style != SYSDEC_XLAT_ABBREV) {
		sb_printf(sb, unknown_comment ? "%#llx" : "%llu", (unsigned long long)val);
		if (xlat_style == SYSDEC_XLAT_VERBOSE)
			sb_printf(sb, " /* %s */", s);
	} else if (s)
		sb_puts(sb, s);
	else if (unknown_comment)
		sb_printf(sb, "%#llx /* %s */", (unsigned long long)val, unknown_comment);
	else
		sb_printf(sb, "%llu", (unsigned long long)val);
}

void sb_ptr(struct sbuf *sb, uint64_t addr)
{
	if (addr)
		sb_printf(sb, "%#llx", (unsigned long long)addr);
	else
		sb_puts(sb, "NULL");
}

static const char *signame(int sig, char *buf, size_t len)
{
	if (sig > 0 && sig < (int)(sizeof(signal_names) / sizeof(signal_names[0])) &&
	    signal_names[sig])
		return signal_names[sig];
	if (sig == 32)
		return "SIGRTMIN";
	if (sig > 32 && sig <= 64) {
		snprintf(buf, len, "SIGRT_%d", sig - 32);
		return buf;
	}
	return NULL;
}

const char *sysdec_signal_name(int sig)
{
	static __thread char buf[16];

	return signame(sig, buf, sizeof(buf));
}

void sb_signame(struct sbuf *sb, int sig)
{
	char buf[16];
	const char *s = signame(sig, buf, sizeof(buf));

	if (s)
		sb_puts(sb, s);
	else
		sb_printf(sb, "%d", sig);
}

/*
 * strace prints a set with more members than non-members as the complement:
 * "~[]" is every signal, "~[RTMIN RT_1]" all but those two.
 */
void sb_sigset(struct sbuf *sb, const void *set, size_t len)
{
	uint64_t mask = 0;
	int nbits, count = 0, sig;
	bool inv, first = true;

	if (len > sizeof(mask))
		len = sizeof(mask);
	memcpy(&mask, set, len);
	nbits = (int)len * 8;
	for (sig = 0; sig < nbits; sig++)
		count += (mask >> sig) & 1;
	inv = count * 2 > nbits;
	if (inv) {
		mask = ~mask;
		if (nbits < 64)
			mask &= (1ULL << nbits) - 1;
		sb_puts(sb, "~");
	}
	sb_puts(sb, "[");
	for (sig = 1; sig <= nbits; sig++) {
		char buf[16];
		const char *s;

		if (!((mask >> (sig - 1)) & 1))
			continue;
		s = signame(sig, buf, sizeof(buf));
		if (s)
			sb_printf(sb, "%s%s", first ? "" : " ", s + 3); /* no "SIG" */
		else
			sb_printf(sb, "%s%d", first ? "" : " ", sig);
		first = false;
	}
	sb_puts(sb, "]");
}

void sb_mode(struct sbuf *sb, uint32_t mode)
{
	const char *type = xlat_name(xlat_file_types, mode & 0170000);

	if (sb_raw_begin(sb, mode, "%#llo"))
		return;
	if (type)
		sb_printf(sb, "%s|", type);
	else if (mode & 0170000)
		sb_printf(sb, "%#o|", mode & 0170000);
	if (mode & 07000)
		sb_printf(sb, "%s%s%s", mode & 04000 ? "S_ISUID|" : "",
			  mode & 02000 ? "S_ISGID|" : "", mode & 01000 ? "S_ISVTX|" : "");
	sb_printf(sb, "%#03o", mode & 0777);
	sb_raw_end(sb);
}

int umove(struct sysdec_call *c, uint64_t addr, void *buf, size_t len)
{
	ssize_t n;

	if (!addr || !c->read)
		return -EFAULT;
	n = c->read(c->ctx, addr, buf, len);
	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EFAULT;
}

/*
 * Read a NUL-terminated string of at most @max bytes, page by page so that a
 * string ending just before an unmapped page still reads. Returns the bytes
 * read (without NUL) and sets *complete when the NUL was seen.
 */
static ssize_t read_cstr(struct sysdec_call *c, uint64_t addr, char *buf, size_t max,
			 bool *complete)
{
	size_t done = 0;

	*complete = false;
	while (done < max) {
		uint64_t a = addr + done;
		size_t chunk = 4096 - (a & 4095);
		ssize_t n;
		char *nul;

		if (chunk > max - done)
			chunk = max - done;
		n = c->read(c->ctx, a, buf + done, chunk);
		if (n <= 0)
			return done ? (ssize_t)done : -EFAULT;
		nul = memchr(buf + done, '\0', n);
		if (nul) {
			*complete = true;
			return nul - buf;
		}
		done += n;
		if ((size_t)n < chunk)
			break;
	}
	return (ssize_t)done;
}

void sb_cstr(struct sbuf *sb, struct sysdec_call *c, uint64_t addr, size_t max)
{
	char *buf;
	bool complete;
	ssize_t n;

	if (!addr) {
		sb_puts(sb, "NULL");
		return;
	}
	buf = malloc(max + 1);
	if (!buf) {
		sb_ptr(sb, addr);
		return;
	}
	/* One byte more than shown tells "exactly max" from "longer". */
	n = read_cstr(c, addr, buf, max + 1, &complete);
	if (n < 0) {
		sb_ptr(sb, addr);
	} else {
		bool cut = !complete && (size_t)n > max;

		sb_quote(sb, (unsigned char *)buf, cut ? max : (size_t)n, cut ? QUOTE_ELLIPSIS : 0);
	}
	free(buf);
}

void sb_timespec(struct sbuf *sb, struct sysdec_call *c, uint64_t addr)
{
	int64_t ts[2];

	if (!addr) {
		sb_puts(sb, "NULL");
		return;
	}
	if (umove(c, addr, ts, sizeof(ts))) {
		sb_ptr(sb, addr);
		return;
	}
	sb_printf(sb, "{tv_sec=%lld, tv_nsec=%lld}", (long long)ts[0], (long long)ts[1]);
}

void sb_sockaddr(struct sbuf *sb, struct sysdec_call *c, uint64_t addr, uint64_t len)
{
	struct sockaddr_storage ss;
	char ip[INET6_ADDRSTRLEN];

	if (!addr) {
		sb_puts(sb, "NULL");
		return;
	}
	if (len > sizeof(ss))
		len = sizeof(ss);
	memset(&ss, 0, sizeof(ss));
	if (len < sizeof(sa_family_t) || umove(c, addr, &ss, len)) {
		sb_ptr(sb, addr);
		return;
	}
	sb_puts(sb, "{sa_family=");
	if (!sb_raw_begin(sb, ss.ss_family, "%#llx")) {
		sb_xval(sb, xlat_af, ss.ss_family, NULL);
		sb_raw_end(sb);
	}
	switch (ss.ss_family) {
	case AF_UNIX: {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;
		size_t plen = len - offsetof(struct sockaddr_un, sun_path);

		if (len <= offsetof(struct sockaddr_un, sun_path))
			break;
		if (un->sun_path[0] == '\0' && plen > 1) {
			sb_puts(sb, ", sun_path=@");
			sb_quote(sb, (unsigned char *)un->sun_path + 1, plen - 1, QUOTE_NUL_TERM);
		} else {
			sb_puts(sb, ", sun_path=");
			sb_quote(sb, (unsigned char *)un->sun_path, plen, QUOTE_NUL_TERM);
		}
		break;
	}
	case AF_INET: {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		sb_printf(sb, ", sin_port=htons(%u), sin_addr=inet_addr(\"%s\")",
			  ntohs(in->sin_port), ip);
		break;
	}
	case AF_INET6: {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		sb_printf(sb,
			  ", sin6_port=htons(%u), sin6_flowinfo=htonl(%u), "
			  "inet_pton(AF_INET6, \"%s\", &sin6_addr), sin6_scope_id=%u",
			  ntohs(in6->sin6_port), ntohl(in6->sin6_flowinfo), ip, in6->sin6_scope_id);
		break;
	}
	case AF_NETLINK: {
		/* strace: nl_groups in 8 hex digits */
		struct sockaddr_nl *nl = (struct sockaddr_nl *)&ss;

		if (len < sizeof(*nl))
			goto raw;
		sb_printf(sb, ", nl_pid=%u, nl_groups=%08x", nl->nl_pid, nl->nl_groups);
		break;
	}
	default:
raw:
		if (len > sizeof(sa_family_t)) {
			sb_puts(sb, ", sa_data=");
			sb_quote(sb, (unsigned char *)&ss + sizeof(sa_family_t),
				 len - sizeof(sa_family_t), 0);
		}
		break;
	}
	sb_puts(sb, "}");
}

/* Argument writers. */

struct sbuf *arg_sb(struct sysdec_call *c, int i, struct sbuf *sb)
{
	c->out[i].kind = SYSDEC_TEXT;
	sb_init(sb, c->out[i].text, sizeof(c->out[i].text));
	return sb;
}

void arg_end(struct sysdec_call *c, int i, struct sbuf *sb)
{
	(void)c;
	(void)i;
	(void)sb;
}

__attribute__((format(printf, 3, 4))) void arg_printf(struct sysdec_call *c, int i, const char *fmt,
						      ...)
{
	va_list ap;

	c->out[i].kind = SYSDEC_TEXT;
	va_start(ap, fmt);
	vsnprintf(c->out[i].text, sizeof(c->out[i].text), fmt, ap);
	va_end(ap);
}

static void arg_num(struct sysdec_call *c, int i, const char *fmt, long long v)
{
	c->out[i].kind = SYSDEC_INT;
	snprintf(c->out[i].text, sizeof(c->out[i].text), fmt, v);
}

void arg_int(struct sysdec_call *c, int i)
{
	arg_num(c, i, "%lld", (int)c->args[i]);
}

void arg_long(struct sysdec_call *c, int i)
{
	arg_num(c, i, "%lld", (long long)c->args[i]);
}

void arg_ulong(struct sysdec_call *c, int i)
{
	c->out[i].kind = SYSDEC_INT;
	snprintf(c->out[i].text, sizeof(c->out[i].text), "%llu", (unsigned long long)c->args[i]);
}

void arg_hex(struct sysdec_call *c, int i)
{
	arg_printf(c, i, "%#llx", (unsigned long long)c->args[i]);
}

void arg_oct(struct sysdec_call *c, int i)
{
	arg_printf(c, i, "%#03llo", (unsigned long long)c->args[i]);
}

void arg_ptr(struct sysdec_call *c, int i)
{
	struct sbuf sb;

	sb_ptr(arg_sb(c, i, &sb), c->args[i]);
}

int sysdec_decode_fds_level;

void sysdec_set_decode_fds(int level)
{
	sysdec_decode_fds_level = level;
}

void sb_fd_details(struct sbuf *sb, const struct sysdec_call *c, int fd)
{
	char buf[4200];

	if (!sysdec_decode_fds_level || !c->tid || fd < 0)
		return;
	if (sysdec_fd_details(c->tid, fd, sysdec_decode_fds_level, buf, sizeof(buf)) == 0)
		sb_puts(sb, buf);
}

void arg_fd(struct sysdec_call *c, int i)
{
	struct sbuf sb;

	if (!sysdec_decode_fds_level || !c->tid || (int)c->args[i] < 0) {
		arg_int(c, i);
		return;
	}
	/* "3</etc/hosts>": text, for JSON too */
	arg_sb(c, i, &sb);
	sb_printf(&sb, "%d", (int)c->args[i]);
	sb_fd_details(&sb, c, (int)c->args[i]);
}

void arg_dirfd(struct sysdec_call *c, int i)
{
	char cwd[4096];

	if ((int)c->args[i] != AT_FDCWD) {
		arg_fd(c, i);
		return;
	}
	if (xlat_style == SYSDEC_XLAT_RAW)
		arg_printf(c, i, "%d", AT_FDCWD);
	else if (xlat_style == SYSDEC_XLAT_VERBOSE)
		arg_printf(c, i, "%d /* AT_FDCWD */", AT_FDCWD);
	else
		arg_printf(c, i, "AT_FDCWD");
	/* -y: strace adds the working directory */
	if (sysdec_decode_fds_level && c->tid && sysdec_cwd(c->tid, cwd, sizeof(cwd)) == 0) {
		size_t n = strlen(c->out[i].text);

		snprintf(c->out[i].text + n, sizeof(c->out[i].text) - n, "<%s>", cwd);
	}
}

/* Keep the unescaped bytes of a string argument for JSON output. */
static void arg_keep_raw(struct sysdec_call *c, int i, const void *raw, size_t len)
{
	size_t n;

	free(c->out[i].raw);
	c->out[i].raw = malloc(len + 1);
	if (!c->out[i].raw) {
		c->out[i].raw_len = 0;
		return;
	}
	memcpy(c->out[i].raw, raw, len);
	c->out[i].raw[len] = '\0';
	c->out[i].raw_len = len;
	c->out[i].kind = SYSDEC_STR;
	/* the text is final here: sb_quote()'s QUOTE_ELLIPSIS marks a cut string */
	n = strlen(c->out[i].text);
	c->out[i].truncated = n >= 4 && !strcmp(c->out[i].text + n - 4, "\"...");
}

static void arg_cstr_max(struct sysdec_call *c, int i, size_t max)
{
	struct sbuf sb;
	char *buf;
	bool complete;
	ssize_t n;

	arg_sb(c, i, &sb);
	if (!c->args[i]) {
		sb_puts(&sb, "NULL");
		return;
	}
	buf = malloc(max + 1);
	if (!buf) {
		sb_ptr(&sb, c->args[i]);
		return;
	}
	n = read_cstr(c, c->args[i], buf, max + 1, &complete);
	if (n < 0) {
		sb_ptr(&sb, c->args[i]);
	} else {
		bool cut = !complete && (size_t)n > max;
		size_t shown = cut ? max : (size_t)n;

		sb_quote(&sb, (unsigned char *)buf, shown, cut ? QUOTE_ELLIPSIS : 0);
		arg_keep_raw(c, i, buf, shown);
	}
	free(buf);
}

void arg_path(struct sysdec_call *c, int i)
{
	arg_cstr_max(c, i, 4096);
}

void arg_str(struct sysdec_call *c, int i)
{
	arg_cstr_max(c, i, c->strsize);
}

void arg_buf(struct sysdec_call *c, int i, uint64_t len, unsigned int qflags)
{
	struct sbuf sb;
	size_t shown = len < (uint64_t)c->strsize ? (size_t)len : (size_t)c->strsize;
	unsigned char *buf;

	arg_sb(c, i, &sb);
	if (!c->args[i]) {
		sb_puts(&sb, "NULL");
		return;
	}
	buf = malloc(shown + 1);
	if (!buf || (shown && umove(c, c->args[i], buf, shown))) {
		sb_ptr(&sb, c->args[i]);
		free(buf);
		return;
	}
	sb_quote(&sb, buf, shown, qflags | (shown < len ? QUOTE_ELLIPSIS : 0));
	if (!(qflags & QUOTE_FORCE_HEX))
		arg_keep_raw(c, i, buf, shown);
	free(buf);
}

void arg_flags(struct sysdec_call *c, int i, const struct xlat *x, const char *dflt)
{
	struct sbuf sb;

	sb_flags(arg_sb(c, i, &sb), x, c->args[i], dflt);
}

void arg_xval(struct sysdec_call *c, int i, const struct xlat *x, const char *comment)
{
	struct sbuf sb;

	sb_xval(arg_sb(c, i, &sb), x, c->args[i], comment);
}

void arg_signal(struct sysdec_call *c, int i)
{
	struct sbuf sb;

	if ((int)c->args[i] == 0) {
		arg_int(c, i);
		return;
	}
	sb_signame(arg_sb(c, i, &sb), (int)c->args[i]);
}
