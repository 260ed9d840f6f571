/* SPDX-License-Identifier: MIT */
/*
 * sysdec.c - the x86-64 syscall table, -s SET parsing, and the two-phase
 * decode driver (entry, exit) that runs the per-syscall decoders of
 * decode-*.c. Tracer process.
 */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "xlat/errnos.h"

#define DEC(name) sysdec_dec_##name

static const struct sysdec_ent sysent[SYSDEC_NR_MAX] = {
#include "table-x86_64.h"
};

static const struct sysdec_ent *ent(long nr)
{
	if (nr < 0 || nr >= SYSDEC_NR_MAX || !sysent[nr].name)
		return NULL;
	return &sysent[nr];
}

const char *sysdec_name(long nr)
{
	const struct sysdec_ent *e = ent(nr);

	return e ? e->name : NULL;
}

long sysdec_nr(const char *name)
{
	long nr;

	for (nr = 0; nr < SYSDEC_NR_MAX; nr++)
		if (sysent[nr].name && !strcmp(sysent[nr].name, name))
			return nr;
	return -1;
}

uint32_t sysdec_classes(long nr)
{
	const struct sysdec_ent *e = ent(nr);

	return e ? e->classes : 0;
}

int sysdec_nargs(long nr)
{
	const struct sysdec_ent *e = ent(nr);

	return e ? e->nargs : 6;
}

static const struct {
	const char *name;
	uint32_t cls;
} classes[] = {
	{ "file", SYSDEC_TRACE_FILE },	     { "desc", SYSDEC_TRACE_DESC },
	{ "process", SYSDEC_TRACE_PROCESS }, { "network", SYSDEC_TRACE_NETWORK },
	{ "net", SYSDEC_TRACE_NETWORK },     { "signal", SYSDEC_TRACE_SIGNAL },
	{ "memory", SYSDEC_TRACE_MEMORY },   { "ipc", SYSDEC_TRACE_IPC },
};

uint32_t sysdec_class_by_name(const char *cls)
{
	size_t i;

	if (*cls == '%')
		cls++;
	for (i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (!strcmp(classes[i].name, cls))
			return classes[i].cls;
	return 0;
}

static void set_all(struct sysdec_set *s, bool on)
{
	memset(s->bits, on ? 0xff : 0, sizeof(s->bits));
}

static void set_bit(struct sysdec_set *s, long nr, bool on)
{
	if (on)
		s->bits[nr / 64] |= 1ULL << (nr % 64);
	else
		s->bits[nr / 64] &= ~(1ULL << (nr % 64));
}

/*
 * The strace rules: the list is applied left to right; when the first item
 * is negated ("!open" or "!%file") the set starts full, else empty. A
 * leading '!' before the whole list ("!open,close") negates every item.
 * "all" and "none" are accepted like strace's.
 */
int sysdec_parse_set(const char *set, struct sysdec_set *ret, char *errbuf, size_t errlen)
{
	struct sysdec_set s;
	char *copy, *tok, *rest;
	bool first = true, neg_all = false;
	int err = 0;

	if (!set || !*set || !strcmp(set, "all")) {
		set_all(ret, true);
		return 0;
	}
	copy = strdup(set);
	if (!copy)
		return -ENOMEM;
	set_all(&s, false);
	rest = copy;
	if (*rest == '!' && strchr(rest, ',')) {
		neg_all = true;
		rest++;
	}
	while ((tok = strsep(&rest, ","))) {
		bool neg = neg_all, quiet = false, matched = false;
		uint32_t cls;
		long nr;

		while (*tok == ' ')
			tok++;
		if (*tok == '!') {
			neg = !neg;
			tok++;
		}
		if (first && neg)
			set_all(&s, true);
		first = false;
		if (!*tok) {
			snprintf(errbuf, errlen, "empty syscall name in -s '%s'", set);
			err = -EINVAL;
			break;
		}
		if (!strcmp(tok, "all") || !strcmp(tok, "none")) {
			set_all(&s, (tok[0] == 'a') != neg);
			continue;
		}
		if (*tok == '?') { /* strace: no error if unknown */
			quiet = true;
			tok++;
		}
		if (*tok == '/') {
			regex_t re;
			int rc = regcomp(&re, tok + 1, REG_EXTENDED | REG_NOSUB);

			if (rc) {
				char msg[128];

				regerror(rc, &re, msg, sizeof(msg));
				snprintf(errbuf, errlen,
					 "bad regular expression '%s' in -s '%s': %s", tok + 1, set,
					 msg);
				err = -EINVAL;
				break;
			}
			for (nr = 0; nr < SYSDEC_NR_MAX; nr++)
				if (sysent[nr].name && !regexec(&re, sysent[nr].name, 0, NULL, 0)) {
					set_bit(&s, nr, !neg);
					matched = true;
				}
			regfree(&re);
			if (!matched && !quiet) {
				snprintf(errbuf, errlen,
					 "regular expression '%s' in -s '%s' matches no "
					 "syscall",
					 tok + 1, set);
				err = -EINVAL;
				break;
			}
			continue;
		}
		if (*tok == '%') {
			cls = sysdec_class_by_name(tok);
			if (!cls) {
				snprintf(errbuf, errlen,
					 "unknown syscall class '%s' in -s '%s' (classes: %%file "
					 "%%desc %%process %%network %%signal %%memory %%ipc)",
					 tok, set);
				err = -EINVAL;
				break;
			}
			for (nr = 0; nr < SYSDEC_NR_MAX; nr++)
				if (sysent[nr].classes & cls)
					set_bit(&s, nr, !neg);
			continue;
		}
		nr = sysdec_nr(tok);
		if (nr < 0 && quiet)
			continue;
		if (nr < 0) {
			snprintf(errbuf, errlen, "unknown syscall '%s' in -s '%s'", tok, set);
			err = -EINVAL;
			break;
		}
		set_bit(&s, nr, !neg);
	}
	free(copy);
	if (!err)
		*ret = s;
	return err;
}

const char *sysdec_errno_name(int err)
{
	size_t i;

	if (err > 0 && err < (int)(sizeof(errno_names) / sizeof(errno_names[0])))
		return errno_names[err];
	for (i = 0; i < sizeof(errno_internal) / sizeof(errno_internal[0]); i++)
		if (errno_internal[i].err == err)
			return errno_internal[i].name;
	return NULL;
}

const char *sysdec_errno_desc(int err)
{
	size_t i;

	for (i = 0; i < sizeof(errno_internal) / sizeof(errno_internal[0]); i++)
		if (errno_internal[i].err == err)
			return errno_internal[i].desc;
	if (err > 0 && err < 512)
		return strerrordesc_np(err);
	return NULL;
}

int sysdec_is_error(long nr, long ret)
{
	(void)nr;
	return ret < 0 && ret >= -4095 ? (int)-ret : 0;
}

/* strace's printargs(): raw arguments, 0 or hex. */
static void decode_raw(struct sysdec_call *c)
{
	int i;

	for (i = 0; i < c->nr_out; i++)
		arg_hex(c, i);
}

static void clear_args(struct sysdec_call *c)
{
	int i;

	for (i = 0; i < 6; i++) {
		free(c->out[i].raw);
		c->out[i].raw = NULL;
		c->out[i].raw_len = 0;
		c->out[i].kind = SYSDEC_INT;
		c->out[i].text[0] = '\0';
		c->decoded_at_exit[i] = false;
	}
	free(c->retval.raw);
	c->retval.raw = NULL;
	c->retval.text[0] = '\0';
	c->rextra[0] = '\0';
}

/* Does @c return a new descriptor (strace's RVAL_FD: -y decorates it)? */
static bool returns_fd(const struct sysdec_call *c)
{
	static const char *const names[] = {
		"open",
		"openat",
		"openat2",
		"creat",
		"dup",
		"dup2",
		"dup3",
		"socket",
		"accept",
		"accept4",
		"epoll_create",
		"epoll_create1",
		"eventfd",
		"eventfd2",
		"signalfd",
		"signalfd4",
		"timerfd_create",
		"inotify_init",
		"inotify_init1",
		"memfd_create",
		"memfd_secret",
		"perf_event_open",
		"fanotify_init",
		"pidfd_open",
		"pidfd_getfd",
		"open_by_handle_at",
		"userfaultfd",
		"fsopen",
		"fsmount",
		"fspick",
		"open_tree",
		"io_uring_setup",
		"landlock_create_ruleset",
	};
	const char *name = sysdec_name(c->nr);
	size_t i;

	if (name && !strcmp(name, "fcntl"))
		return (int)c->args[1] == F_DUPFD || (int)c->args[1] == F_DUPFD_CLOEXEC;
	for (i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

int sysdec_decode_entry(struct sysdec_call *c)
{
	const struct sysdec_ent *e = ent(c->nr);

	clear_args(c);
	c->exiting = false;
	c->entered = true;
	c->rfmt = RVAL_DEC;
	c->ret = 0;
	c->failed = false;
	c->errname = NULL;
	c->priv[0] = c->priv[1] = 0;
	c->want_exit = false;
	c->nr_out = e ? e->nargs : 6;
	if (c->strsize < 0)
		c->strsize = 32;
	if (e && e->decode)
		e->decode(c);
	else
		decode_raw(c);
	if (c->rfmt == RVAL_DEC && returns_fd(c))
		c->rfmt = RVAL_FD;
	return 0;
}

static void format_retval(struct sysdec_call *c)
{
	struct sbuf sb;
	int err = c->success ? 0 : sysdec_is_error(c->nr, c->ret);

	c->retval.kind = SYSDEC_INT;
	sb_init(&sb, c->retval.text, sizeof(c->retval.text));
	if (err) {
		const char *name = sysdec_errno_name(err);
		const char *desc = sysdec_errno_desc(err);

		c->failed = true;
		c->errname = name;
		c->retval.kind = SYSDEC_TEXT;
		/* strace: the ERESTART* codes never reach the task, hence "?" */
		sb_puts(&sb, (err >= 512 && err <= 514) || err == 516 ? "?" : "-1");
		if (name)
			sb_printf(&sb, " %s", name);
		else
			sb_printf(&sb, " (errno %d)", err); /* strace's spelling */
		if (name && desc)
			sb_printf(&sb, " (%s)", desc);
		return;
	}
	switch (c->rfmt) {
	case RVAL_HEX:
		c->retval.kind = SYSDEC_TEXT;
		sb_printf(&sb, "%#lx", (unsigned long)c->ret);
		break;
	case RVAL_OCT:
		c->retval.kind = SYSDEC_TEXT;
		sb_printf(&sb, "%#03lo", (unsigned long)c->ret);
		break;
	case RVAL_UDEC:
		sb_printf(&sb, "%lu", (unsigned long)c->ret);
		break;
	case RVAL_NONE:
		c->retval.kind = SYSDEC_TEXT;
		sb_puts(&sb, "?");
		break;
	case RVAL_FD:
		sb_printf(&sb, "%ld", c->ret);
		if (sysdec_decode_fds_level && c->tid) {
			c->retval.kind = SYSDEC_TEXT;
			sb_fd_details(&sb, c, (int)c->ret);
		}
		break;
	default:
		sb_printf(&sb, "%ld", c->ret);
		break;
	}
	if (c->rextra[0])
		sb_puts(&sb, c->rextra);
}

int sysdec_decode_exit(struct sysdec_call *c, long ret)
{
	const struct sysdec_ent *e = ent(c->nr);
	int i;
	bool more = false;

	c->ret = ret;
	c->failed = !c->success && sysdec_is_error(c->nr, ret) != 0;
	c->errname = c->failed ? sysdec_errno_name(-ret) : NULL;
	for (i = 0; i < 6; i++)
		more |= c->decoded_at_exit[i];
	if (e && e->decode && (more || c->want_exit)) {
		c->exiting = true;
		e->decode(c);
		for (i = 0; i < 6; i++)
			c->decoded_at_exit[i] = false;
	}
	format_retval(c);
	return 0;
}

void sysdec_call_clear(struct sysdec_call *c)
{
	clear_args(c);
}

int sysdec_format_args(const struct sysdec_call *c, char *buf, size_t len)
{
	size_t need = 0;
	int i;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < c->nr_out; i++) {
		int n = snprintf(len > need ? buf + need : NULL, len > need ? len - need : 0,
				 "%s%s", i ? ", " : "", c->out[i].text);

		if (n > 0)
			need += n;
	}
	return (int)need;
}

int sysdec_format(const struct sysdec_call *c, bool finished, char *buf, size_t len)
{
	const char *name = sysdec_name(c->nr);
	char unk[32];
	size_t need;
	int n;

	if (!name) {
		snprintf(unk, sizeof(unk), "syscall_%#lx", (unsigned long)c->nr);
		name = unk;
	}
	n = snprintf(buf, len, "%s(", name);
	need = n;
	n = sysdec_format_args(c, len > need ? buf + need : NULL, len > need ? len - need : 0);
	need += n;
	n = snprintf(len > need ? buf + need : NULL, len > need ? len - need : 0, ") = %s",
		     finished ? c->retval.text : "?");
	need += n;
	return (int)need;
}
