/* SPDX-License-Identifier: MIT */
/*
 * tracefile.c - the trace file of utrace record: writer and reader
 * (format: docs/record.md). Tracer process (the writer runs in utrace
 * record's event loop, the reader in replay/report/dump).
 *
 * Each block goes out in one write(2) of a whole block (header and
 * payload), so a tracer killed between two writes leaves a file whose
 * blocks are all complete, and one killed inside a write leaves at most
 * one partial block at the end, cut on a page boundary, which the reader
 * skips (a note: cut short). A partial block ending anywhere else is a
 * file truncated afterwards: reported, exit 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "tracefile.h"

#define TF_HDR_SIZE 16
#define TF_BLK_HDR 8
/* the page size of x86_64, where a killed writev() stops (tf_reader_open) */
#define TF_PAGE 4096
/* the largest event record: tag, ids, 6 args, 7 strings of 1024, 32 frames */
#define TF_EV_MAX (64 + 6 * 10 + 7 * (2 + 10 + 1024) + 1 + 32 * 10)

/* ---- encoding ------------------------------------------------------------ */

static size_t put_uv(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static size_t put_sv(uint8_t *p, int64_t v)
{
	return put_uv(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* A bounded cursor over a block's payload: any overrun sets @bad. */
struct cur {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t get_uv(struct cur *c)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (c->p < c->end && shift < 64) {
		uint8_t b = *c->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
		shift += 7;
	}
	c->bad = true;
	return 0;
}

static int64_t get_sv(struct cur *c)
{
	uint64_t u = get_uv(c);

	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static uint8_t get8(struct cur *c)
{
	if (c->p >= c->end) {
		c->bad = true;
		return 0;
	}
	return *c->p++;
}

static uint32_t get32(struct cur *c)
{
	uint32_t v = 0;

	if (c->end - c->p < 4) {
		c->bad = true;
		return 0;
	}
	memcpy(&v, c->p, 4);
	c->p += 4;
	return v;
}

static uint64_t get64(struct cur *c)
{
	uint64_t v = 0;

	if (c->end - c->p < 8) {
		c->bad = true;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

/* a name as put_name() wrote it: varint 0 (NULL) or length + 1, then the bytes */
static char *get_name(struct cur *c)
{
	uint64_t n = get_uv(c);
	char *s;

	if (c->bad || !n)
		return NULL;
	n--;
	if (n > (uint64_t)(c->end - c->p)) {
		c->bad = true;
		return NULL;
	}
	s = strndup((const char *)c->p, n);
	if (!s)
		c->bad = true;
	c->p += n;
	return s;
}

/* ---- writer -------------------------------------------------------------- */

struct tbuf {
	struct tbuf *next;
	pid_t pid, tid;
	uint32_t count;
	uint64_t last_ts;
	size_t len;
	uint8_t data[TF_BUF_SIZE];
};

#define TF_THASH 256

struct tf_writer {
	int fd;
	int err; /* first write error */
	uint32_t next_point;
	uint64_t events, bytes, lost;
	struct tbuf *threads[TF_THASH];
	struct tbuf *last; /* tbuf_get()'s last answer: records come a thread's ring at a time */
};

static int write_block(struct tf_writer *w, uint32_t type, const void *payload, size_t len)
{
	uint8_t hd[TF_BLK_HDR];
	struct iovec iov[2] = { { hd, sizeof(hd) }, { (void *)payload, len } };
	size_t want = sizeof(hd) + len, done = 0;

	if (w->err)
		return w->err;
	put32(hd, type);
	put32(hd + 4, (uint32_t)len);
	while (done < want) {
		ssize_t n = writev(w->fd, iov, 2);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			w->err = n < 0 ? -errno : -EIO;
			return w->err;
		}
		done += (size_t)n;
		/* a short write: go on from where it stopped */
		if ((size_t)n >= iov[0].iov_len) {
			n -= (ssize_t)iov[0].iov_len;
			iov[0].iov_len = 0;
			iov[1].iov_base = (char *)iov[1].iov_base + n;
			iov[1].iov_len -= (size_t)n;
		} else {
			iov[0].iov_base = (char *)iov[0].iov_base + n;
			iov[0].iov_len -= (size_t)n;
		}
	}
	w->bytes += want;
	return 0;
}

struct tf_writer *tf_writer_open(const char *path)
{
	struct tf_writer *w = calloc(1, sizeof(*w));
	uint8_t hd[TF_HDR_SIZE] = { 0 };
	int err;

	if (!w)
		return NULL;
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		err = errno;
		free(w);
		errno = err;
		return NULL;
	}
	memcpy(hd, TF_MAGIC, 8);
	put32(hd + 8, TF_VERSION);
	if (write(w->fd, hd, sizeof(hd)) != (ssize_t)sizeof(hd)) {
		err = errno ? errno : EIO;
		close(w->fd);
		free(w);
		errno = err;
		return NULL;
	}
	w->bytes = sizeof(hd);
	return w;
}

int tf_writer_info(struct tf_writer *w, const char *key, const char *fmt, ...)
{
	char line[4096];
	int n = snprintf(line, sizeof(line), "%s=", key);
	va_list ap;

	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* one line per block: a value never holds a newline */
	for (char *p = line; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return write_block(w, TF_B_INFO, line, strlen(line));
}

static size_t put_name(uint8_t *p, const char *s)
{
	size_t len = s ? strlen(s) : 0, n;

	if (len > 4000)
		len = 4000;
	n = put_uv(p, s ? len + 1 : 0); /* 0: no string (NULL) */
	memcpy(p + n, s ? s : "", len);
	return n + len;
}

int tf_writer_point(struct tf_writer *w, const struct tf_point *pt)
{
	uint8_t buf[3 * 4010 + 64 + PROTO_MAX_ARGS];
	size_t n = 0;
	uint32_t id = w->next_point;
	int i, err;

	put32(buf, id);
	put32(buf + 4, pt->kind);
	put32(buf + 8, (uint32_t)pt->pid);
	put64(buf + 12, pt->addr);
	put64(buf + 20, pt->offset);
	n = 28;
	buf[n++] = pt->proto.ret;
	buf[n++] = pt->proto.err;
	buf[n++] = pt->proto.flags;
	buf[n++] = pt->proto.nargs;
	for (i = 0; i < PROTO_MAX_ARGS; i++)
		buf[n++] = pt->proto.args[i];
	n += put_name(buf + n, pt->name);
	n += put_name(buf + n, pt->symbol);
	n += put_name(buf + n, pt->object);
	err = write_block(w, TF_B_POINT, buf, n);
	if (err)
		return err;
	w->next_point++;
	return (int)id;
}

/*
 * The process's maps, then the build-id of each file mapped executable:
 * with them a later reader can check that the objects it symbolises with
 * are the ones that ran.
 */
int tf_writer_maps(struct tf_writer *w, pid_t pid)
{
	char path[64], *text = NULL, *line, *save;
	size_t len = 0, cap = 0;
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	cap = 4 + 65536;
	text = malloc(cap);
	if (!text) {
		fclose(f);
		return -ENOMEM;
	}
	put32((uint8_t *)text, (uint32_t)pid);
	len = 4;
	for (;;) {
		size_t n;

		if (cap - len < 4096) {
			char *t = realloc(text, cap * 2);

			if (!t)
				break;
			text = t;
			cap *= 2;
		}
		n = fread(text + len, 1, cap - len - 1, f);
		if (!n)
			break;
		len += n;
	}
	fclose(f);
	text[len] = 0;
	err = write_block(w, TF_B_MAPS, text, len);
	/* build-ids of the executable mappings' files, once each */
	for (line = strtok_r(text + 4, "\n", &save); !err && line;
	     line = strtok_r(NULL, "\n", &save)) {
		char perms[8], file[4096], id[128], blk[4096 + 160];
		struct utrace_elf *elf;
		int k, nid;
		size_t n;

		if (sscanf(line, "%*x-%*x %7s %*s %*s %*s %4095s", perms, file) != 2 ||
		    perms[2] != 'x' || file[0] != '/')
			continue;
		elf = utrace_elf__open(file);
		if (!elf)
			continue;
		nid = utrace_elf__build_id(elf, id, sizeof(id));
		utrace_elf__close(elf);
		if (nid <= 0)
			continue;
		n = put_name((uint8_t *)blk, file);
		n += put_name((uint8_t *)blk + n, id);
		for (k = 0; k < 1; k++)
			err = write_block(w, TF_B_BUILDID, blk, n);
	}
	free(text);
	return err;
}

static struct tbuf *tbuf_get(struct tf_writer *w, pid_t pid, pid_t tid)
{
	struct tbuf **slot = &w->threads[(unsigned int)tid % TF_THASH], *b = w->last;

	if (b && b->tid == tid && b->pid == pid)
		return b;
	for (b = *slot; b; b = b->next)
		if (b->tid == tid && b->pid == pid)
			return w->last = b;
	b = malloc(sizeof(*b));
	if (!b)
		return NULL;
	b->next = *slot;
	b->pid = pid;
	b->tid = tid;
	b->count = 0;
	b->len = 0;
	b->last_ts = 0;
	*slot = b;
	return w->last = b;
}

/* EVENTS payload: pid, tid, count, first ts, then the records */
#define TF_EV_HDR 20

static int tbuf_flush(struct tf_writer *w, struct tbuf *b)
{
	int err;

	if (!b->count)
		return 0;
	put32(b->data, (uint32_t)b->pid);
	put32(b->data + 4, (uint32_t)b->tid);
	put32(b->data + 8, b->count);
	err = write_block(w, TF_B_EVENTS, b->data, b->len);
	b->count = 0;
	b->len = 0;
	return err;
}

int tf_writer_event(struct tf_writer *w, const struct tf_event *ev)
{
	struct tbuf *b = tbuf_get(w, ev->pid, ev->tid);
	uint8_t *p, tag = (uint8_t)ev->type;
	unsigned int i, nstr = 0;
	size_t n = 0;
	int err;

	if (!b)
		return -ENOMEM;
	for (i = 0; i < 7; i++)
		if (ev->str[i] || (ev->str_flags[i] & UTRACE_REC_STR_FAULT))
			nstr++;
	if (nstr)
		tag |= TF_EV_STRS;
	if (ev->nr_stack)
		tag |= TF_EV_STACK;
	if (b->len + TF_EV_MAX > TF_BUF_SIZE) {
		err = tbuf_flush(w, b);
		if (err)
			return err;
	}
	if (!b->count) {
		put64(b->data + 12, ev->ts_ns);
		b->last_ts = ev->ts_ns;
		b->len = TF_EV_HDR;
	}
	p = b->data + b->len; /* in place: TF_EV_MAX bytes are free */
	p[n++] = tag;
	n += put_uv(p + n, ev->point->id);
	n += put_sv(p + n, (int64_t)(ev->ts_ns - b->last_ts));
	n += put_uv(p + n, ev->depth);
	if (ev->type == TF_EV_ENTRY) {
		p[n++] = (uint8_t)(ev->nargs > 6 ? 6 : ev->nargs);
		for (i = 0; i < ev->nargs && i < 6; i++)
			n += put_uv(p + n, ev->args[i]);
	} else {
		n += put_uv(p + n, ev->retval);
		n += put_uv(p + n, ev->dur_ns);
	}
	if (nstr) {
		p[n++] = (uint8_t)nstr;
		for (i = 0; i < 7; i++) {
			size_t len = ev->str[i] ? ev->str_len[i] : 0;

			if (!ev->str[i] && !(ev->str_flags[i] & UTRACE_REC_STR_FAULT))
				continue;
			if (len > 1024)
				len = 1024;
			p[n++] = (uint8_t)i;
			p[n++] = (uint8_t)(ev->str_flags[i] | (ev->str[i] ? 0 : 0x80));
			n += put_uv(p + n, len);
			memcpy(p + n, ev->str[i] ? ev->str[i] : "", len);
			n += len;
		}
	}
	if (ev->nr_stack) {
		unsigned int k = ev->nr_stack > 32 ? 32 : ev->nr_stack;

		p[n++] = (uint8_t)k;
		for (i = 0; i < k; i++)
			n += put_uv(p + n, ev->stack[i]);
	}
	b->len += n;
	b->count++;
	b->last_ts = ev->ts_ns;
	w->events++;
	return 0;
}

int tf_writer_lost(struct tf_writer *w, pid_t tid, uint64_t count)
{
	uint8_t buf[12];

	put32(buf, (uint32_t)tid);
	put64(buf + 4, count);
	w->lost += count;
	return write_block(w, TF_B_LOST, buf, sizeof(buf));
}

int tf_writer_flush(struct tf_writer *w)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < TF_THASH; i++)
		for (struct tbuf *b = w->threads[i]; b; b = b->next)
			if (!err)
				err = tbuf_flush(w, b);
	return err;
}

int tf_writer_close(struct tf_writer *w)
{
	uint8_t end[16];
	unsigned int i;
	int err;

	if (!w)
		return 0;
	tf_writer_flush(w);
	put64(end, w->events);
	put64(end + 8, w->lost);
	write_block(w, TF_B_END, end, sizeof(end));
	if (!w->err && fsync(w->fd) && errno != EINVAL)
		w->err = -errno;
	if (close(w->fd) && !w->err)
		w->err = -errno;
	err = w->err;
	for (i = 0; i < TF_THASH; i++)
		while (w->threads[i]) {
			struct tbuf *b = w->threads[i];

			w->threads[i] = b->next;
			free(b);
		}
	free(w);
	return err;
}

uint64_t tf_writer_events(const struct tf_writer *w)
{
	return w->events;
}

uint64_t tf_writer_bytes(const struct tf_writer *w)
{
	return w->bytes;
}

/* ---- reader -------------------------------------------------------------- */

struct rblock {
	const uint8_t *p;
	size_t len;
};

/* one thread's EVENTS blocks, in file order, and the decoding cursor */
struct rthread {
	pid_t pid, tid;
	struct rblock *blocks;
	size_t nr, cap;
	size_t bi; /* current block */
	uint32_t left; /* records left in it */
	uint64_t ts; /* the previous record's time */
	struct cur c;
	struct tf_event ev; /* the next event, decoded */
	bool has;
};

struct tf_reader {
	uint8_t *map;
	size_t size;
	char **info;
	size_t nr_info;
	struct tf_point *points;
	size_t nr_points;
	struct rthread *threads;
	size_t nr_threads;
	struct rmaps {
		pid_t pid;
		const char *text; /* in @map, not NUL-terminated */
		size_t len;
	} * maps; /* every MAPS block, in file order */
	size_t nr_maps;
	bool complete, cut_by_kill;
	uint64_t truncated, lost;
	char corrupt[160];
};

static struct rthread *rthread_get(struct tf_reader *r, pid_t pid, pid_t tid)
{
	size_t i;
	struct rthread *t;

	for (i = 0; i < r->nr_threads; i++)
		if (r->threads[i].tid == tid && r->threads[i].pid == pid)
			return &r->threads[i];
	t = realloc(r->threads, (r->nr_threads + 1) * sizeof(*t));
	if (!t)
		return NULL;
	r->threads = t;
	t = &r->threads[r->nr_threads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	return t;
}

static int read_point(struct tf_reader *r, const uint8_t *p, size_t len)
{
	struct cur c = { p, p + len, false };
	struct tf_point pt = { 0 }, *np;
	int i;

	pt.id = get32(&c);
	pt.kind = get32(&c);
	pt.pid = (pid_t)get32(&c);
	pt.addr = get64(&c);
	pt.offset = get64(&c);
	pt.proto.ret = get8(&c);
	pt.proto.err = get8(&c);
	pt.proto.flags = get8(&c);
	pt.proto.nargs = get8(&c);
	for (i = 0; i < PROTO_MAX_ARGS; i++)
		pt.proto.args[i] = get8(&c);
	if (pt.proto.nargs > PROTO_MAX_ARGS || pt.proto.ret >= __PK_MAX)
		c.bad = true;
	for (i = 0; i < PROTO_MAX_ARGS; i++)
		if (pt.proto.args[i] >= __PK_MAX)
			c.bad = true;
	for (i = 0; i < 3 && !c.bad; i++) {
		char *s = get_name(&c);

		if (i == 0)
			pt.name = s;
		else if (i == 1)
			pt.symbol = s;
		else
			pt.object = s;
	}
	if (c.bad || pt.id != r->nr_points || !pt.name) {
		free(pt.name);
		free(pt.symbol);
		free(pt.object);
		return -EBADMSG;
	}
	np = realloc(r->points, (r->nr_points + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	r->points = np;
	r->points[r->nr_points++] = pt;
	return 0;
}

struct tf_reader *tf_reader_open(const char *path, char *why, size_t whylen)
{
	struct tf_reader *r;
	struct stat st;
	size_t off;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		close(fd);
		return NULL;
	}
	if ((size_t)st.st_size < TF_HDR_SIZE) {
		snprintf(why, whylen,
			 (size_t)st.st_size >= 8 || st.st_size == 0 ?
				 "not a utrace recording (%zu bytes, no header)" :
				 "not a utrace recording (%zu bytes)",
			 (size_t)st.st_size);
		close(fd);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(why, whylen, "out of memory");
		close(fd);
		return NULL;
	}
	r->size = (size_t)st.st_size;
	r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (r->map == MAP_FAILED) {
		snprintf(why, whylen, "cannot map it: %s", strerror(errno));
		free(r);
		return NULL;
	}
	if (memcmp(r->map, TF_MAGIC, 8)) {
		snprintf(why, whylen, "not a utrace recording (no utrace record header)");
		goto fail;
	}
	{
		uint32_t v;

		memcpy(&v, r->map + 8, 4);
		if (v != TF_VERSION) {
			snprintf(why, whylen,
				 "a utrace recording of format version %u; this utrace reads "
				 "version %u",
				 v, TF_VERSION);
			goto fail;
		}
	}
	for (off = TF_HDR_SIZE; off < r->size;) {
		uint32_t type, len;
		const uint8_t *p;

		if (r->size - off < TF_BLK_HDR) {
			r->truncated = off;
			break;
		}
		memcpy(&type, r->map + off, 4);
		memcpy(&len, r->map + off + 4, 4);
		if (type < TF_B_INFO || type > TF_B_END) {
			snprintf(r->corrupt, sizeof(r->corrupt),
				 "unknown block type %u at byte %zu", type, off);
			break;
		}
		if (len > r->size - off - TF_BLK_HDR) {
			r->truncated = off;
			break;
		}
		p = r->map + off + TF_BLK_HDR;
		off += TF_BLK_HDR + len;
		switch (type) {
		case TF_B_INFO: {
			char **ni = realloc(r->info, (r->nr_info + 1) * sizeof(*ni));

			if (!ni)
				goto oom;
			r->info = ni;
			r->info[r->nr_info] = strndup((const char *)p, len);
			if (!r->info[r->nr_info])
				goto oom;
			r->nr_info++;
			break;
		}
		case TF_B_POINT:
			if (read_point(r, p, len)) {
				snprintf(r->corrupt, sizeof(r->corrupt),
					 "a probe point block at byte %zu does not decode",
					 off - len - TF_BLK_HDR);
				goto done;
			}
			break;
		case TF_B_EVENTS: {
			struct rthread *t;
			pid_t pid, tid;

			if (len < TF_EV_HDR) {
				snprintf(r->corrupt, sizeof(r->corrupt),
					 "an event block at byte %zu is too short",
					 off - len - TF_BLK_HDR);
				goto done;
			}
			memcpy(&pid, p, 4);
			memcpy(&tid, p + 4, 4);
			t = rthread_get(r, pid, tid);
			if (!t)
				goto oom;
			if (t->nr == t->cap) {
				size_t cap = t->cap ? t->cap * 2 : 16;
				struct rblock *nb = realloc(t->blocks, cap * sizeof(*nb));

				if (!nb)
					goto oom;
				t->blocks = nb;
				t->cap = cap;
			}
			t->blocks[t->nr].p = p;
			t->blocks[t->nr++].len = len;
			break;
		}
		case TF_B_LOST:
			if (len >= 12) {
				uint64_t n;

				memcpy(&n, p + 4, 8);
				r->lost += n;
			}
			break;
		case TF_B_END:
			r->complete = true;
			break;
		case TF_B_MAPS:
			if (len >= 4) {
				struct rmaps *nm = realloc(r->maps, (r->nr_maps + 1) * sizeof(*nm));

				if (!nm)
					goto oom;
				r->maps = nm;
				memcpy(&nm[r->nr_maps].pid, p, 4);
				nm[r->nr_maps].text = (const char *)p + 4;
				nm[r->nr_maps++].len = len - 4;
			}
			break;
		default:
			break; /* BUILDID: for symbolisers */
		}
	}
	/*
	 * A partial last block that ends on a page boundary is what SIGKILL
	 * leaves when it hits the tracer inside write_block()'s writev(): the
	 * kernel's generic_perform_write() checks fatal_signal_pending()
	 * before each page it copies and returns the short count written so
	 * far. That file is a killed recording (read up to its last whole
	 * block, a note, exit 0), not one cut by hand or by a full disk.
	 */
	if (r->truncated && !r->complete && !(r->size % TF_PAGE))
		r->cut_by_kill = true;
done:
	return r;
oom:
	snprintf(why, whylen, "out of memory");
fail:
	tf_reader_close(r);
	return NULL;
}

char *tf_reader_maps(const struct tf_reader *r, pid_t pid)
{
	size_t i;

	for (i = r->nr_maps; i-- > 0;)
		if (r->maps[i].pid == pid && r->maps[i].len) /* (read as the process went: empty) */
			return strndup(r->maps[i].text, r->maps[i].len);
	return NULL;
}

void tf_reader_close(struct tf_reader *r)
{
	size_t i;

	if (!r)
		return;
	free(r->maps);
	for (i = 0; i < r->nr_info; i++)
		free(r->info[i]);
	free(r->info);
	for (i = 0; i < r->nr_points; i++) {
		free(r->points[i].name);
		free(r->points[i].symbol);
		free(r->points[i].object);
	}
	free(r->points);
	for (i = 0; i < r->nr_threads; i++)
		free(r->threads[i].blocks);
	free(r->threads);
	if (r->map && r->map != MAP_FAILED)
		munmap(r->map, r->size);
	free(r);
}

const char *tf_reader_info(const struct tf_reader *r, const char *key)
{
	size_t i, k = strlen(key);

	/* the last one wins: a later line corrects an earlier one */
	for (i = r->nr_info; i-- > 0;)
		if (!strncmp(r->info[i], key, k) && r->info[i][k] == '=')
			return r->info[i] + k + 1;
	return NULL;
}

bool tf_reader_complete(const struct tf_reader *r)
{
	return r->complete;
}

uint64_t tf_reader_truncated(const struct tf_reader *r)
{
	return r->cut_by_kill ? 0 : r->truncated;
}

const char *tf_reader_corrupt(const struct tf_reader *r)
{
	return r->corrupt[0] ? r->corrupt : NULL;
}

uint64_t tf_reader_lost(const struct tf_reader *r)
{
	return r->lost;
}

int tf_reader_nr_points(const struct tf_reader *r)
{
	return (int)r->nr_points;
}

const struct tf_point *tf_reader_point(const struct tf_reader *r, int i)
{
	return i >= 0 && (size_t)i < r->nr_points ? &r->points[i] : NULL;
}

/* Decode thread @t's next event into t->ev. Return: 1, 0 at its end, -EBADMSG. */
static int rthread_next(struct tf_reader *r, struct rthread *t)
{
	struct tf_event *ev = &t->ev;
	struct cur *c = &t->c;
	uint8_t tag;
	uint64_t id;
	unsigned int i;

	while (!t->left) {
		const struct rblock *b;

		if (t->bi >= t->nr)
			return 0;
		b = &t->blocks[t->bi++];
		c->p = b->p + TF_EV_HDR;
		c->end = b->p + b->len;
		c->bad = false;
		memcpy(&t->left, b->p + 8, 4);
		memcpy(&t->ts, b->p + 12, 8);
	}
	memset(ev, 0, offsetof(struct tf_event, stack));
	tag = get8(c);
	id = get_uv(c);
	ev->type = tag & 3;
	ev->pid = t->pid;
	ev->tid = t->tid;
	t->ts += (uint64_t)get_sv(c);
	ev->ts_ns = t->ts;
	ev->depth = (unsigned int)get_uv(c);
	if (id >= r->nr_points || (ev->type != TF_EV_ENTRY && ev->type != TF_EV_RETURN)) {
		c->bad = true;
		goto bad;
	}
	ev->point = &r->points[id];
	if (ev->type == TF_EV_ENTRY) {
		ev->nargs = get8(c);
		if (ev->nargs > 6)
			c->bad = true;
		for (i = 0; i < ev->nargs && i < 6; i++)
			ev->args[i] = get_uv(c);
	} else {
		ev->retval = get_uv(c);
		ev->dur_ns = get_uv(c);
	}
	if (tag & TF_EV_STRS) {
		unsigned int n = get8(c);

		for (i = 0; i < n && !c->bad; i++) {
			unsigned int idx = get8(c), fl = get8(c);
			uint64_t len = get_uv(c);

			if (idx > 6 || len > (uint64_t)(c->end - c->p)) {
				c->bad = true;
				break;
			}
			/* the bytes stay in the map: borrowed, NUL-less (str_len says) */
			ev->str[idx] = (fl & 0x80) ? NULL : (const char *)c->p;
			ev->str_len[idx] = (size_t)len;
			ev->str_flags[idx] = fl & 0x7f;
			c->p += len;
		}
	}
	if (tag & TF_EV_STACK) {
		ev->nr_stack = get8(c);
		if (ev->nr_stack > 32)
			c->bad = true;
		for (i = 0; i < ev->nr_stack && i < 32; i++)
			ev->stack[i] = get_uv(c);
	}
bad:
	if (c->bad) {
		snprintf(r->corrupt, sizeof(r->corrupt),
			 "an event record of thread %d at byte %zu does not decode", (int)t->tid,
			 (size_t)(c->p - r->map));
		return -EBADMSG;
	}
	t->left--;
	return 1;
}

/* a min-heap of threads by their next event's time */
static bool heap_less(struct rthread **h, size_t a, size_t b)
{
	return h[a]->ev.ts_ns < h[b]->ev.ts_ns ||
	       (h[a]->ev.ts_ns == h[b]->ev.ts_ns && h[a]->tid < h[b]->tid);
}

static void heap_down(struct rthread **h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct rthread *tmp;

		if (l < n && heap_less(h, l, m))
			m = l;
		if (l + 1 < n && heap_less(h, l + 1, m))
			m = l + 1;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

int tf_reader_events(struct tf_reader *r, tf_event_fn fn, void *ctx)
{
	struct rthread **h = calloc(r->nr_threads + 1, sizeof(*h));
	size_t i, n = 0;
	int ret = 0, k;

	if (!h)
		return -ENOMEM;
	for (i = 0; i < r->nr_threads; i++) {
		struct rthread *t = &r->threads[i];

		t->bi = 0;
		t->left = 0;
		k = rthread_next(r, t);
		if (k < 0) {
			ret = k;
			goto out;
		}
		if (k)
			h[n++] = t;
	}
	for (i = n / 2 + 1; i-- > 0;)
		heap_down(h, n, i);
	while (n) {
		struct rthread *t = h[0];

		ret = fn(&t->ev, ctx);
		if (ret)
			break;
		k = rthread_next(r, t);
		if (k < 0) {
			ret = k;
			break;
		}
		if (!k)
			h[0] = h[--n];
		heap_down(h, n, 0);
	}
out:
	free(h);
	return ret;
}
