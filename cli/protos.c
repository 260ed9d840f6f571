/* SPDX-License-Identifier: MIT */
/*
 * protos.c - the prototype table of common libc (and libpthread, libdl,
 * sqlite3) functions, and argument formatting from registers, as ltrace
 * shows calls: malloc(32), strlen("hello"), open("/etc/hosts", O_RDONLY).
 * Tracer process.
 *
 * Kinds follow the C types closely enough for display: an int is shown as a
 * signed 32-bit value (the upper half of the register is garbage), pointers
 * in hex or NULL, strings read from the target up to -S bytes. A printf-like
 * format is parsed to show the varargs it consumes, like ltrace does.
 */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "utrace/probe.h"
#include "output.h"
#include "protos.h"

#define A(...)                                      \
	(sizeof((unsigned char[]){ __VA_ARGS__ })), \
	{                                           \
		__VA_ARGS__                         \
	}
#define P(name, ret, err, flags, ...)                 \
	{                                             \
		name, ret, err, flags, A(__VA_ARGS__) \
	}
#define P0(name, ret, err, flags)         \
	{                                 \
		name, ret, err, flags, 0, \
		{                         \
			0                 \
		}                         \
	}

/* Kept sorted by name (checked by proto_find() on first use). */
static struct proto protos[] = {
	P0("abort", PK_VOID, PE_NONE, PF_NORETURN),
	P("accept", PK_FD, PE_NEG, 0, PK_FD, PK_PTR, PK_PTR),
	P("accept4", PK_FD, PE_NEG, 0, PK_FD, PK_PTR, PK_PTR, PK_HEX),
	P("aligned_alloc", PK_PTR, PE_NULL, 0, PK_ULONG, PK_ULONG),
	P("atexit", PK_INT, PE_NONZERO, 0, PK_PTR),
	P("atoi", PK_INT, PE_NONE, 0, PK_STR),
	P("atol", PK_LONG, PE_NONE, 0, PK_STR),
	P("atoll", PK_LONG, PE_NONE, 0, PK_STR),
	P("bind", PK_INT, PE_NEG, 0, PK_FD, PK_PTR, PK_UINT),
	P("bsearch", PK_PTR, PE_NONE, 0, PK_PTR, PK_PTR, PK_ULONG, PK_ULONG, PK_PTR),
	P("calloc", PK_PTR, PE_NULL, 0, PK_ULONG, PK_ULONG),
	P("chdir", PK_INT, PE_NEG, 0, PK_STR),
	P("clock_gettime", PK_INT, PE_NEG, 0, PK_INT, PK_PTR),
	P("clock_nanosleep", PK_INT, PE_NONZERO, 0, PK_INT, PK_INT, PK_PTR, PK_PTR),
	P("close", PK_INT, PE_NEG, 0, PK_FD),
	P("closedir", PK_INT, PE_NEG, 0, PK_PTR),
	P("connect", PK_INT, PE_NEG, 0, PK_FD, PK_PTR, PK_UINT),
	P("creat", PK_FD, PE_NEG, 0, PK_STR, PK_MODE),
	P("dlclose", PK_INT, PE_NONZERO, 0, PK_PTR),
	P0("dlerror", PK_STR, PE_NONE, 0),
	P("dlopen", PK_PTR, PE_NULL, 0, PK_STR, PK_HEX),
	P("dlsym", PK_PTR, PE_NULL, 0, PK_PTR, PK_STR),
	P("dprintf", PK_INT, PE_NEG, 0, PK_FD, PK_FMT),
	P("dup", PK_FD, PE_NEG, 0, PK_FD),
	P("dup2", PK_FD, PE_NEG, 0, PK_FD, PK_FD),
	P("execv", PK_INT, PE_NEG, 0, PK_STR, PK_PTR),
	P("execve", PK_INT, PE_NEG, 0, PK_STR, PK_PTR, PK_PTR),
	P("execvp", PK_INT, PE_NEG, 0, PK_STR, PK_PTR),
	P("exit", PK_VOID, PE_NONE, PF_NORETURN, PK_INT),
	P("fclose", PK_INT, PE_NEG, 0, PK_PTR),
	P("fdopen", PK_PTR, PE_NULL, 0, PK_FD, PK_STR),
	P("fflush", PK_INT, PE_NEG, 0, PK_PTR),
	P("fgetc", PK_INT, PE_NONE, 0, PK_PTR),
	P("fgets", PK_PTR, PE_NONE, 0, PK_PTR, PK_INT, PK_PTR),
	P("fileno", PK_FD, PE_NEG, 0, PK_PTR),
	P("fopen", PK_PTR, PE_NULL, 0, PK_STR, PK_STR),
	P0("fork", PK_INT, PE_NEG, 0),
	P("fprintf", PK_INT, PE_NEG, 0, PK_PTR, PK_FMT),
	P("fputc", PK_INT, PE_NEG, 0, PK_CHAR, PK_PTR),
	P("fputs", PK_INT, PE_NEG, 0, PK_STR, PK_PTR),
	P("fread", PK_ULONG, PE_NONE, 0, PK_PTR, PK_ULONG, PK_ULONG, PK_PTR),
	P("free", PK_VOID, PE_NONE, 0, PK_PTR),
	P("freopen", PK_PTR, PE_NULL, 0, PK_STR, PK_STR, PK_PTR),
	P("fseek", PK_INT, PE_NEG, 0, PK_PTR, PK_LONG, PK_INT),
	P("ftell", PK_LONG, PE_NEG, 0, PK_PTR),
	P("fwrite", PK_ULONG, PE_NONE, 0, PK_PTR, PK_ULONG, PK_ULONG, PK_PTR),
	P("getcwd", PK_STR, PE_NULL, 0, PK_PTR, PK_ULONG),
	P("getenv", PK_STR, PE_NONE, 0, PK_STR),
	P0("getpid", PK_INT, PE_NONE, 0),
	P("gettimeofday", PK_INT, PE_NEG, 0, PK_PTR, PK_PTR),
	P("ioctl", PK_INT, PE_NEG, 0, PK_FD, PK_HEX, PK_HEX),
	P("kill", PK_INT, PE_NEG, 0, PK_INT, PK_INT),
	P("listen", PK_INT, PE_NEG, 0, PK_FD, PK_INT),
	P("lseek", PK_LONG, PE_NEG, 0, PK_FD, PK_LONG, PK_INT),
	P("malloc", PK_PTR, PE_NULL, 0, PK_ULONG),
	P("memalign", PK_PTR, PE_NULL, 0, PK_ULONG, PK_ULONG),
	P("memchr", PK_PTR, PE_NONE, 0, PK_PTR, PK_CHAR, PK_ULONG),
	P("memcmp", PK_INT, PE_NONE, 0, PK_PTR, PK_PTR, PK_ULONG),
	P("memcpy", PK_PTR, PE_NONE, 0, PK_PTR, PK_PTR, PK_ULONG),
	P("memmove", PK_PTR, PE_NONE, 0, PK_PTR, PK_PTR, PK_ULONG),
	P("memset", PK_PTR, PE_NONE, 0, PK_PTR, PK_CHAR, PK_ULONG),
	P("mkdir", PK_INT, PE_NEG, 0, PK_STR, PK_MODE),
	P("mmap", PK_PTR, PE_MAPFAIL, 0, PK_PTR, PK_ULONG, PK_HEX, PK_HEX, PK_FD, PK_LONG),
	P("munmap", PK_INT, PE_NEG, 0, PK_PTR, PK_ULONG),
	P("nanosleep", PK_INT, PE_NEG, 0, PK_PTR, PK_PTR),
	P("open", PK_FD, PE_NEG, PF_OPEN_MODE, PK_STR, PK_OFLAGS, PK_MODE),
	P("openat", PK_FD, PE_NEG, PF_OPEN_MODE, PK_DIRFD, PK_STR, PK_OFLAGS, PK_MODE),
	P("opendir", PK_PTR, PE_NULL, 0, PK_STR),
	P("pipe", PK_INT, PE_NEG, 0, PK_PTR),
	P("poll", PK_INT, PE_NEG, 0, PK_PTR, PK_ULONG, PK_INT),
	P("posix_memalign", PK_INT, PE_NONZERO, 0, PK_PTR, PK_ULONG, PK_ULONG),
	P("pread", PK_LONG, PE_NEG, 0, PK_FD, PK_PTR, PK_ULONG, PK_LONG),
	P("printf", PK_INT, PE_NEG, 0, PK_FMT),
	P("pthread_cond_broadcast", PK_INT, PE_NONZERO, 0, PK_PTR),
	P("pthread_cond_signal", PK_INT, PE_NONZERO, 0, PK_PTR),
	P("pthread_cond_timedwait", PK_INT, PE_NONZERO, 0, PK_PTR, PK_PTR, PK_PTR),
	P("pthread_cond_wait", PK_INT, PE_NONZERO, 0, PK_PTR, PK_PTR),
	P("pthread_create", PK_INT, PE_NONZERO, 0, PK_PTR, PK_PTR, PK_PTR, PK_PTR),
	P("pthread_detach", PK_INT, PE_NONZERO, 0, PK_HEX),
	P("pthread_join", PK_INT, PE_NONZERO, 0, PK_HEX, PK_PTR),
	P("pthread_mutex_lock", PK_INT, PE_NONZERO, 0, PK_PTR),
	P("pthread_mutex_trylock", PK_INT, PE_NONZERO, 0, PK_PTR),
	P("pthread_mutex_unlock", PK_INT, PE_NONZERO, 0, PK_PTR),
	P0("pthread_self", PK_HEX, PE_NONE, 0),
	P("putchar", PK_INT, PE_NEG, 0, PK_CHAR),
	P("puts", PK_INT, PE_NEG, 0, PK_STR),
	P("pwrite", PK_LONG, PE_NEG, 0, PK_FD, PK_PTR, PK_ULONG, PK_LONG),
	P("qsort", PK_VOID, PE_NONE, 0, PK_PTR, PK_ULONG, PK_ULONG, PK_PTR),
	P0("rand", PK_INT, PE_NONE, 0),
	P("read", PK_LONG, PE_NEG, 0, PK_FD, PK_PTR, PK_ULONG),
	P("readdir", PK_PTR, PE_NONE, 0, PK_PTR),
	P("realloc", PK_PTR, PE_NULL, 0, PK_PTR, PK_ULONG),
	P("reallocarray", PK_PTR, PE_NULL, 0, PK_PTR, PK_ULONG, PK_ULONG),
	P("recv", PK_LONG, PE_NEG, 0, PK_FD, PK_PTR, PK_ULONG, PK_HEX),
	P("recvfrom", PK_LONG, PE_NEG, 0, PK_FD, PK_PTR, PK_ULONG, PK_HEX, PK_PTR, PK_PTR),
	P("remove", PK_INT, PE_NEG, 0, PK_STR),
	P("rename", PK_INT, PE_NEG, 0, PK_STR, PK_STR),
	P("rmdir", PK_INT, PE_NEG, 0, PK_STR),
	P("select", PK_INT, PE_NEG, 0, PK_INT, PK_PTR, PK_PTR, PK_PTR, PK_PTR),
	P("send", PK_LONG, PE_NEG, 0, PK_FD, PK_PTR, PK_ULONG, PK_HEX),
	P("sendto", PK_LONG, PE_NEG, 0, PK_FD, PK_PTR, PK_ULONG, PK_HEX, PK_PTR, PK_UINT),
	P("setenv", PK_INT, PE_NEG, 0, PK_STR, PK_STR, PK_INT),
	P("signal", PK_PTR, PE_MAPFAIL, 0, PK_INT, PK_PTR),
	P("sleep", PK_UINT, PE_NONE, 0, PK_UINT),
	P("snprintf", PK_INT, PE_NEG, 0, PK_PTR, PK_ULONG, PK_FMT),
	P("socket", PK_FD, PE_NEG, 0, PK_INT, PK_INT, PK_INT),
	P("sprintf", PK_INT, PE_NEG, 0, PK_PTR, PK_FMT),
	P("sqlite3_close", PK_INT, PE_SQLITE, 0, PK_PTR),
	P("sqlite3_exec", PK_INT, PE_SQLITE, 0, PK_PTR, PK_STR, PK_PTR, PK_PTR, PK_PTR),
	P("sqlite3_finalize", PK_INT, PE_SQLITE, 0, PK_PTR),
	P("sqlite3_open", PK_INT, PE_SQLITE, 0, PK_STR, PK_PTR),
	P("sqlite3_open_v2", PK_INT, PE_SQLITE, 0, PK_STR, PK_PTR, PK_HEX, PK_STR),
	P("sqlite3_prepare_v2", PK_INT, PE_SQLITE, 0, PK_PTR, PK_STR, PK_INT, PK_PTR, PK_PTR),
	P("sqlite3_reset", PK_INT, PE_SQLITE, 0, PK_PTR),
	P("sqlite3_step", PK_INT, PE_SQLITE, 0, PK_PTR),
	P("srand", PK_VOID, PE_NONE, 0, PK_UINT),
	P("stat", PK_INT, PE_NEG, 0, PK_STR, PK_PTR),
	P("strcasecmp", PK_INT, PE_NONE, 0, PK_STR, PK_STR),
	P("strcat", PK_PTR, PE_NONE, 0, PK_PTR, PK_STR),
	P("strchr", PK_PTR, PE_NONE, 0, PK_STR, PK_CHAR),
	P("strcmp", PK_INT, PE_NONE, 0, PK_STR, PK_STR),
	P("strcpy", PK_PTR, PE_NONE, 0, PK_PTR, PK_STR),
	P("strdup", PK_STR, PE_NULL, 0, PK_STR),
	P("strerror", PK_STR, PE_NONE, 0, PK_INT),
	P("strlen", PK_ULONG, PE_NONE, 0, PK_STR),
	P("strncasecmp", PK_INT, PE_NONE, 0, PK_STR, PK_STR, PK_ULONG),
	P("strncat", PK_PTR, PE_NONE, 0, PK_PTR, PK_STR, PK_ULONG),
	P("strncmp", PK_INT, PE_NONE, 0, PK_STR, PK_STR, PK_ULONG),
	P("strncpy", PK_PTR, PE_NONE, 0, PK_PTR, PK_STR, PK_ULONG),
	P("strndup", PK_STR, PE_NULL, 0, PK_STR, PK_ULONG),
	P("strnlen", PK_ULONG, PE_NONE, 0, PK_STR, PK_ULONG),
	P("strrchr", PK_PTR, PE_NONE, 0, PK_STR, PK_CHAR),
	P("strstr", PK_PTR, PE_NONE, 0, PK_STR, PK_STR),
	P("strtol", PK_LONG, PE_NONE, 0, PK_STR, PK_PTR, PK_INT),
	P("strtoll", PK_LONG, PE_NONE, 0, PK_STR, PK_PTR, PK_INT),
	P("strtoul", PK_ULONG, PE_NONE, 0, PK_STR, PK_PTR, PK_INT),
	P("strtoull", PK_ULONG, PE_NONE, 0, PK_STR, PK_PTR, PK_INT),
	P("system", PK_INT, PE_NONZERO, 0, PK_STR),
	P("time", PK_LONG, PE_NEG, 0, PK_PTR),
	P("unlink", PK_INT, PE_NEG, 0, PK_STR),
	P("unsetenv", PK_INT, PE_NEG, 0, PK_STR),
	P("usleep", PK_INT, PE_NEG, 0, PK_UINT),
	P("write", PK_LONG, PE_NEG, 0, PK_FD, PK_PTR, PK_ULONG),
};

static const struct proto unknown = {
	"?", PK_HEX, PE_NONE, 0, PROTO_UNKNOWN_ARGS, { PK_HEX, PK_HEX, PK_HEX },
};

static int cmp_name(const void *key, const void *elem)
{
	return strcmp(key, ((const struct proto *)elem)->name);
}

static const struct proto *lookup(const char *name)
{
	return bsearch(name, protos, sizeof(protos) / sizeof(protos[0]), sizeof(protos[0]),
		       cmp_name);
}

const struct proto *proto_find(const char *name)
{
	static const char *const prefixes[] = { "__libc_", "__GI_", "__" };
	const struct proto *p;
	char buf[128];
	size_t i, len;

	if (!name)
		return NULL;
	p = lookup(name);
	if (p)
		return p;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		len = strlen(prefixes[i]);
		if (!strncmp(name, prefixes[i], len) && (p = lookup(name + len)))
			return p;
	}
	/* open64, fopen64, lseek64, pread64 ... */
	len = strlen(name);
	if (len > 2 && len < sizeof(buf) && !strcmp(name + len - 2, "64")) {
		memcpy(buf, name, len - 2);
		buf[len - 2] = '\0';
		return lookup(buf);
	}
	return NULL;
}

const struct proto *proto_unknown(void)
{
	return &unknown;
}

/*
 * protos_sorted - the table's order, for the unit test: 0 if sorted, else
 * the index of the first entry out of order.
 */
size_t protos_sorted(void);
size_t protos_sorted(void)
{
	size_t i;

	for (i = 1; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (strcmp(protos[i - 1].name, protos[i].name) >= 0)
			return i;
	return 0;
}

static uint64_t get_arg(const struct proto_regs *r, unsigned int n)
{
	uint64_t v = 0;

	if (n < 6)
		return r->args[n];
	/* stack arguments, above the return address */
	if (r->read && r->read(r->ctx, r->sp + 8 * (n - 5), &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

static void set_num(struct proto_val *v, uint64_t num, bool is_signed, const char *fmt_text)
{
	v->kind = PV_NUM;
	v->num = num;
	v->is_signed = is_signed;
	if (fmt_text)
		snprintf(v->text, sizeof(v->text), "%s", fmt_text);
	else if (is_signed)
		snprintf(v->text, sizeof(v->text), "%" PRId64, (int64_t)num);
	else
		snprintf(v->text, sizeof(v->text), "%" PRIu64, num);
}

static void set_text(struct proto_val *v, const char *text)
{
	v->kind = PV_TEXT;
	snprintf(v->text, sizeof(v->text), "%s", text);
}

static void format_str(struct proto_val *v, uint64_t addr, const struct proto_regs *r, int strsize)
{
	size_t cap = strsize > 0 ? (size_t)strsize : 0, got = 0;
	char *buf;

	if (!addr) {
		set_text(v, "NULL");
		return;
	}
	/* read in chunks that do not cross a page: the string may end a mapping */
	buf = malloc(cap + 1);
	if (!buf) {
		set_num(v, addr, false, NULL);
		return;
	}
	while (got < cap + 1) {
		size_t chunk = 4096 - ((addr + got) & 4095);
		ssize_t n;
		char *nul;

		if (chunk > cap + 1 - got)
			chunk = cap + 1 - got;
		n = r->read ? r->read(r->ctx, addr + got, buf + got, chunk) : -1;
		if (n <= 0)
			break;
		nul = memchr(buf + got, '\0', (size_t)n);
		if (nul) {
			got = (size_t)(nul - buf);
			v->kind = PV_STR;
			v->raw = buf;
			v->raw_len = got;
			snprintf(v->text, sizeof(v->text), "0x%" PRIx64, addr);
			return;
		}
		got += (size_t)n;
	}
	if (got == 0) {
		/* unreadable: show the pointer */
		free(buf);
		v->kind = PV_NUM;
		v->num = addr;
		snprintf(v->text, sizeof(v->text), "0x%" PRIx64, addr);
		return;
	}
	v->kind = PV_STR;
	v->raw = buf;
	v->raw_len = got > cap ? cap : got;
	v->truncated = got > cap;
	snprintf(v->text, sizeof(v->text), "0x%" PRIx64, addr);
}

static void format_oflags(struct proto_val *v, uint64_t val)
{
	static const struct {
		unsigned int flag;
		const char *name;
	} names[] = {
		{ O_CREAT, "O_CREAT" },	      { O_EXCL, "O_EXCL" },
		{ O_NOCTTY, "O_NOCTTY" },     { O_TRUNC, "O_TRUNC" },
		{ O_APPEND, "O_APPEND" },     { O_NONBLOCK, "O_NONBLOCK" },
		{ O_DSYNC, "O_DSYNC" },	      { O_ASYNC, "O_ASYNC" },
		{ O_DIRECT, "O_DIRECT" },     { O_LARGEFILE, "O_LARGEFILE" },
		{ O_NOFOLLOW, "O_NOFOLLOW" }, { O_NOATIME, "O_NOATIME" },
		{ O_CLOEXEC, "O_CLOEXEC" },   { O_PATH, "O_PATH" },
	};
	unsigned int f = (unsigned int)val, i;
	char *p = v->text, *end = v->text + sizeof(v->text);

	v->kind = PV_TEXT;
	switch (f & O_ACCMODE) {
	case O_RDONLY:
		p += snprintf(p, end - p, "O_RDONLY");
		break;
	case O_WRONLY:
		p += snprintf(p, end - p, "O_WRONLY");
		break;
	case O_RDWR:
		p += snprintf(p, end - p, "O_RDWR");
		break;
	default:
		p += snprintf(p, end - p, "O_ACCMODE");
		break;
	}
	f &= ~(unsigned int)O_ACCMODE;
	/* O_TMPFILE includes O_DIRECTORY; O_SYNC includes O_DSYNC */
	if ((f & O_TMPFILE) == O_TMPFILE) {
		p += snprintf(p, end - p, "|O_TMPFILE");
		f &= ~(unsigned int)O_TMPFILE;
	} else if (f & O_DIRECTORY) {
		p += snprintf(p, end - p, "|O_DIRECTORY");
		f &= ~(unsigned int)O_DIRECTORY;
	}
	if ((f & O_SYNC) == O_SYNC) {
		p += snprintf(p, end - p, "|O_SYNC");
		f &= ~(unsigned int)O_SYNC;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && p < end; i++) {
		if (f & names[i].flag) {
			p += snprintf(p, end - p, "|%s", names[i].name);
			f &= ~names[i].flag;
		}
	}
	if (f && p < end)
		snprintf(p, end - p, "|%#x", f);
}

static void format_char(struct proto_val *v, uint64_t val)
{
	int c = (int)(int32_t)val;

	v->kind = PV_TEXT;
	if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
		snprintf(v->text, sizeof(v->text), "'%c'", c);
	else if (c == '\n')
		snprintf(v->text, sizeof(v->text), "'\\n'");
	else if (c == '\t')
		snprintf(v->text, sizeof(v->text), "'\\t'");
	else if (c == '\0')
		snprintf(v->text, sizeof(v->text), "'\\0'");
	else if (c == '\'' || c == '\\')
		snprintf(v->text, sizeof(v->text), "'\\%c'", c);
	else
		set_num(v, (uint64_t)(int64_t)c, true, NULL);
}

static void format_one(struct proto_val *v, int kind, uint64_t val, const struct proto_regs *r,
		       int strsize)
{
	char buf[32];

	memset(v, 0, sizeof(*v));
	switch (kind) {
	case PK_VOID:
		v->kind = PV_TEXT;
		break;
	case PK_INT:
	case PK_FD:
		set_num(v, (uint64_t)(int64_t)(int32_t)val, true, NULL);
		break;
	case PK_UINT:
		set_num(v, (uint32_t)val, false, NULL);
		break;
	case PK_LONG:
		set_num(v, val, true, NULL);
		break;
	case PK_ULONG:
		set_num(v, val, false, NULL);
		break;
	case PK_HEX:
		snprintf(buf, sizeof(buf), "%#" PRIx64, val);
		set_num(v, val, false, buf);
		break;
	case PK_PTR:
		if (!val) {
			set_text(v, "NULL");
		} else {
			snprintf(buf, sizeof(buf), "0x%" PRIx64, val);
			set_num(v, val, false, buf);
		}
		break;
	case PK_STR:
	case PK_FMT:
		format_str(v, val, r, strsize);
		break;
	case PK_CHAR:
		format_char(v, val);
		break;
	case PK_DIRFD:
		if ((int32_t)val == AT_FDCWD)
			set_text(v, "AT_FDCWD");
		else
			set_num(v, (uint64_t)(int64_t)(int32_t)val, true, NULL);
		break;
	case PK_OFLAGS:
		format_oflags(v, val);
		break;
	case PK_MODE:
		snprintf(buf, sizeof(buf), "0%o", (unsigned int)val & 07777);
		set_num(v, (uint32_t)val & 07777, false, buf);
		break;
	case PK_FLOAT:
	case PK_FLOAT32:
	case PK_FLOATX:
		set_text(v, "?"); /* format_float() when the register is known */
		break;
	case PK_AGGR8:
	case PK_AGGR16:
	case PK_AGGRMEM:
		set_text(v, "{...}");
		break;
	default:
		set_num(v, val, false, NULL);
		break;
	}
}

/*
 * Walk a printf format and emit one value per conversion that consumes an
 * argument: integers and pointers from the integer argument sequence,
 * strings read from the target; floating point ones take an xmm register
 * we do not see, so they show as '?' and consume nothing here.
 */
static void format_float(struct proto_val *v, int kind, uint64_t bits);

static void format_varargs(const char *fmt, size_t len, unsigned int next,
			   const struct proto_regs *r, int strsize, struct proto_vals *out)
{
	size_t i = 0;
	unsigned int xmm = 0;

	while (i < len && out->nr < (int)(sizeof(out->v) / sizeof(out->v[0]))) {
		bool ldbl = false;
		int lng = 0, kind;
		uint64_t val;
		char conv;

		if (fmt[i++] != '%')
			continue;
		if (i < len && fmt[i] == '%') {
			i++;
			continue;
		}
		/* flags, width, precision ('*' takes an int argument) */
		while (i < len && strchr("#0- +'I", fmt[i]))
			i++;
		while (i < len && (isdigit((unsigned char)fmt[i]) || fmt[i] == '.' ||
				   fmt[i] == '*' || fmt[i] == '$')) {
			if (fmt[i] == '*')
				next++;
			i++;
		}
		while (i < len && strchr("hlLqjzt", fmt[i])) {
			if (fmt[i] == 'l' || fmt[i] == 'q' || fmt[i] == 'j' || fmt[i] == 'z' ||
			    fmt[i] == 't')
				lng++;
			ldbl |= fmt[i] == 'L';
			i++;
		}
		if (i >= len)
			break;
		conv = fmt[i++];
		switch (conv) {
		case 'd':
		case 'i':
			kind = lng ? PK_LONG : PK_INT;
			break;
		case 'u':
			kind = lng ? PK_ULONG : PK_UINT;
			break;
		case 'x':
		case 'X':
		case 'o':
			kind = PK_HEX;
			break;
		case 'c':
			kind = PK_CHAR;
			break;
		case 's':
			kind = PK_STR;
			break;
		case 'p':
			kind = PK_PTR;
			break;
		case 'n':
			kind = PK_PTR;
			break;
		case 'f':
		case 'F':
		case 'e':
		case 'E':
		case 'g':
		case 'G':
		case 'a':
		case 'A':
			/* doubles in xmm0.. (the fixed arguments have none); long double: x87 */
			memset(&out->v[out->nr], 0, sizeof(out->v[0]));
			if (r->have_xmm && xmm < 8 && !ldbl) {
				format_float(&out->v[out->nr++], PK_FLOAT, r->xmm[xmm++]);
			} else {
				set_text(&out->v[out->nr++], "?");
				xmm = ldbl ? 8 :
					     xmm + 1; /* a long double: on the stack, not known */
			}
			continue;
		default:
			return; /* unknown conversion: stop rather than misalign */
		}
		val = get_arg(r, next++);
		if (kind == PK_HEX && !lng)
			val &= 0xffffffffu;
		format_one(&out->v[out->nr++], kind, val, r, strsize);
	}
}

static bool is_float(int kind)
{
	return kind == PK_FLOAT || kind == PK_FLOAT32 || kind == PK_FLOATX;
}

bool proto_has_float(const struct proto *p)
{
	unsigned int i;

	for (i = 0; i < p->nargs; i++)
		if (is_float(p->args[i]) || p->args[i] == PK_FMT) /* printf's %f */
			return true;
	return is_float(p->ret);
}

/* @bits of an xmm register as @kind: "1.5" (JSON: a number) */
static void format_float(struct proto_val *v, int kind, uint64_t bits)
{
	double d;
	float f;
	uint32_t lo = (uint32_t)bits;

	if (kind == PK_FLOAT32) {
		memcpy(&f, &lo, sizeof(f));
		d = f;
	} else {
		memcpy(&d, &bits, sizeof(d));
	}
	memset(v, 0, sizeof(*v));
	v->kind = PV_FLOAT;
	snprintf(v->text, sizeof(v->text), "%g", d);
	/* "5.0", not "5": a floating-point value reads as one (JSON too) */
	if (!strpbrk(v->text, ".eEin"))
		strncat(v->text, ".0", sizeof(v->text) - strlen(v->text) - 1);
}

/* an enum's value by its enumerator's name, when it has one */
static void format_enum(struct proto_val *v, const struct proto_enum *e)
{
	int64_t val = (int64_t)v->num; /* set_num() sign-extended a signed enum */
	unsigned int i;

	if (v->kind != PV_NUM)
		return;
	for (i = 0; i < e->nr; i++) {
		if (e->v[i].value == val) {
			set_text(v, e->v[i].name);
			return;
		}
	}
}

int proto_format_args(const struct proto *p, const struct proto_regs *regs, int strsize,
		      struct proto_vals *ret)
{
	unsigned int i, n = p->nargs, reg = 0, xmm = 0;

	ret->nr = 0;
	if ((p->flags & PF_OPEN_MODE) && n >= 2) {
		uint64_t fl = regs->args[n - 2];

		if (!(fl & O_CREAT) && (fl & O_TMPFILE) != O_TMPFILE)
			n--;
	}
	for (i = 0; i < n; i++) {
		struct proto_val *v = &ret->v[ret->nr++];
		int kind = p->args[i];

		/* only integer-class arguments take the next integer register */
		format_one(v, kind, is_float(kind) || kind == PK_AGGRMEM ? 0 : get_arg(regs, reg),
			   regs, strsize);
		if (kind == PK_AGGR16)
			reg += 2;
		else if (!is_float(kind) && kind != PK_AGGRMEM)
			reg++;
		/* SysV: float and double take xmm0..xmm7 in order, integers aside */
		if (kind == PK_FLOATX)
			xmm = 8; /* x87 or two registers: what follows is not known */
		else if (is_float(kind) && xmm < 8 && regs->have_xmm)
			format_float(v, kind, regs->xmm[xmm++]);
		else if (is_float(kind))
			xmm++;
		if (i < PROTO_MAX_ARGS && p->enums[i])
			format_enum(v, p->enums[i]);
		if (kind == PK_FMT && v->kind == PV_STR && !v->truncated)
			format_varargs(v->raw, v->raw_len, reg, regs, strsize, ret);
	}
	return 0;
}

void proto_format_ret(const struct proto *p, uint64_t rax, const struct proto_regs *regs,
		      int strsize, struct proto_val *ret)
{
	format_one(ret, p->ret, rax, regs, strsize);
	if ((p->ret == PK_FLOAT || p->ret == PK_FLOAT32) && regs->have_xmm)
		format_float(ret, p->ret, regs->xmm[0]);
	if (p->ret_enum)
		format_enum(ret, p->ret_enum);
	if (p->ret == PK_PTR && p->err == PE_MAPFAIL && rax == UINT64_MAX)
		set_text(ret, p->name[0] == 's' ? "SIG_ERR" : "MAP_FAILED");
}

unsigned int proto_err_kind(const struct proto *p)
{
	switch (p->err) {
	case PE_NEG:
		return p->ret == PK_LONG || p->ret == PK_ULONG ? UTRACE_ERRK_NEG64 :
								 UTRACE_ERRK_NEG32;
	case PE_NULL:
		return UTRACE_ERRK_NULL;
	case PE_NONZERO:
		return UTRACE_ERRK_NONZERO;
	case PE_SQLITE:
		return UTRACE_ERRK_SQLITE;
	case PE_MAPFAIL:
		return UTRACE_ERRK_MAPFAIL;
	default:
		return UTRACE_ERRK_NONE;
	}
}

bool proto_is_error(const struct proto *p, uint64_t rax)
{
	/* the rule COUNT applies on every backend (the agent's in the target) */
	return utrace_errk_is_error((int)proto_err_kind(p), rax);
}

void proto_val_clear(struct proto_val *v)
{
	free(v->raw);
	v->raw = NULL;
}

void proto_vals_clear(struct proto_vals *vals)
{
	int i;

	for (i = 0; i < vals->nr; i++)
		proto_val_clear(&vals->v[i]);
	vals->nr = 0;
}

void proto_val_print_text(FILE *f, const struct proto_val *v)
{
	size_t i;

	if (v->kind != PV_STR) {
		fputs(v->text, f);
		return;
	}
	fputc('"', f);
	for (i = 0; i < v->raw_len; i++) {
		unsigned char c = (unsigned char)v->raw[i];

		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (c < 0x20 || c >= 0x7f)
				fprintf(f, "\\%03o", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
	if (v->truncated)
		fputs("...", f);
}

void proto_val_print_json(FILE *f, const struct proto_val *v)
{
	switch (v->kind) {
	case PV_NUM:
		if (v->is_signed)
			fprintf(f, "%" PRId64, (int64_t)v->num);
		else
			fprintf(f, "%" PRIu64, v->num);
		break;
	case PV_STR:
		json_str(f, v->raw, v->raw_len);
		break;
	case PV_FLOAT:
		/* "inf", "nan" are no JSON numbers */
		if (strpbrk(v->text, "in"))
			json_str(f, v->text, strlen(v->text));
		else
			fputs(v->text, f);
		break;
	default:
		if (!strcmp(v->text, "NULL"))
			fputs("0", f); /* a null pointer is still an integer */
		else
			json_str(f, v->text, strlen(v->text));
	}
}
