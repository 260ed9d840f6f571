/* SPDX-License-Identifier: MIT */
/*
 * tracefile.h - the binary trace file of utrace record (format:
 * docs/record.md): a versioned header, then self-delimiting blocks
 * (information, probe points with their prototypes, maps and build-ids,
 * per-thread event buffers, an end block). The writer keeps one buffer
 * per thread and writes it as one block when it fills, so a file cut
 * short (a killed tracer) is readable up to its last complete block.
 * Tracer process; not thread-safe (one event loop).
 */
#ifndef __UTRACE_CLI_TRACEFILE_H
#define __UTRACE_CLI_TRACEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "protos.h"

#define TF_MAGIC "UTRACE\x89R"
#define TF_VERSION 1

/* block types */
enum tf_block {
	TF_B_INFO = 1, /* key=value lines */
	TF_B_POINT, /* one probe point: id, kind, names, prototype */
	TF_B_MAPS, /* pid, then /proc/PID/maps as text */
	TF_B_BUILDID, /* path, GNU build-id (hex) */
	TF_B_EVENTS, /* pid, tid, count, then the thread's event records */
	TF_B_LOST, /* tid, count: records the backend dropped */
	TF_B_END, /* events, lost: the recording ended cleanly */
};

/* event record tags (low 2 bits), with flags */
enum tf_tag {
	TF_EV_ENTRY = 1,
	TF_EV_RETURN = 2,
	TF_EV_STRS = 1 << 2, /* strings follow */
	TF_EV_STACK = 1 << 3, /* return addresses follow */
};

/* the per-thread buffer: a block is written when it holds this much */
#define TF_BUF_SIZE (64 * 1024)

/* what a point shows (cli_probe_kind of -f, -u, -r) */
enum tf_kind { TF_FUNC = 0, TF_ENTRY = 1, TF_RET = 2 };

/* One probe point, as the file keeps it. */
struct tf_point {
	uint32_t id;
	uint32_t kind; /* enum tf_kind */
	pid_t pid;
	uint64_t addr, offset;
	char *name, *symbol, *object; /* symbol: NULL for a raw address */
	struct proto proto; /* .name: NULL */
};

/* One event decoded from the file. */
struct tf_event {
	int type; /* TF_EV_ENTRY / TF_EV_RETURN */
	pid_t pid, tid;
	uint64_t ts_ns; /* CLOCK_MONOTONIC of the recording */
	const struct tf_point *point;
	unsigned int depth;
	unsigned int nargs;
	uint64_t args[6];
	uint64_t retval, dur_ns;
	/* strings: index 0..5 arguments, 6 the return value */
	const char *str[7];
	size_t str_len[7];
	unsigned int str_flags[7];
	unsigned int nr_stack;
	uint64_t stack[32];
};

/* ---- writer -------------------------------------------------------------- */

struct tf_writer;

/*
 * tf_writer_open - create @path (truncating it) and write the header.
 * Return: a writer, or NULL with errno set.
 */
struct tf_writer *tf_writer_open(const char *path);

/* tf_writer_info - an INFO line "key=value" (written at once). */
int tf_writer_info(struct tf_writer *w, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * tf_writer_point - a new probe point (written at once); its id, for
 * tf_writer_event(). Return: id >= 0, or negative errno.
 */
int tf_writer_point(struct tf_writer *w, const struct tf_point *pt);

/* tf_writer_maps - /proc/@pid/maps and the build-ids of its files. */
int tf_writer_maps(struct tf_writer *w, pid_t pid);

/* tf_writer_event - append @ev (its @point->id) to its thread's buffer. */
int tf_writer_event(struct tf_writer *w, const struct tf_event *ev);

/* tf_writer_lost - @count records of thread @tid were dropped. */
int tf_writer_lost(struct tf_writer *w, pid_t tid, uint64_t count);

/* tf_writer_flush - write every thread's buffer (a block each). */
int tf_writer_flush(struct tf_writer *w);

/*
 * tf_writer_close - flush, write the END block, close. Accepts NULL.
 * Return: 0, or the first write error (negative errno) of the file.
 */
int tf_writer_close(struct tf_writer *w);

/* counters: events and bytes written so far */
uint64_t tf_writer_events(const struct tf_writer *w);
uint64_t tf_writer_bytes(const struct tf_writer *w);

/* ---- reader -------------------------------------------------------------- */

struct tf_reader;

/*
 * tf_reader_open - map @path and index its blocks. A foreign file (no
 * magic), another version, or a header cut short is refused: *@why says
 * why in one line. A file cut inside a block is read up to its last
 * complete block (tf_reader_truncated() says where).
 * Return: a reader, or NULL (*@why set).
 */
struct tf_reader *tf_reader_open(const char *path, char *why, size_t whylen);
void tf_reader_close(struct tf_reader *r);

/*
 * tf_reader_maps - the last /proc/PID/maps the recording kept of @pid (its
 * exit's: every library it loaded), as text to free(); NULL if none.
 */
char *tf_reader_maps(const struct tf_reader *r, pid_t pid);

/* the INFO value of @key, or NULL */
const char *tf_reader_info(const struct tf_reader *r, const char *key);

/* whether the END block was seen; where a partial block starts (0: none) */
bool tf_reader_complete(const struct tf_reader *r);
uint64_t tf_reader_truncated(const struct tf_reader *r);
/* a block's content did not decode: why (NULL: none) */
const char *tf_reader_corrupt(const struct tf_reader *r);
/* records the backend dropped (LOST blocks) */
uint64_t tf_reader_lost(const struct tf_reader *r);

/* the points, by index 0..n-1 */
int tf_reader_nr_points(const struct tf_reader *r);
const struct tf_point *tf_reader_point(const struct tf_reader *r, int i);

typedef int (*tf_event_fn)(const struct tf_event *ev, void *ctx);

/*
 * tf_reader_events - every event, in time order across threads (each
 * thread's own order kept), to @fn; its nonzero return stops.
 * Return: 0, @fn's return, or a negative errno (a record that does not
 * decode: -EBADMSG, tf_reader_corrupt() says where).
 */
int tf_reader_events(struct tf_reader *r, tf_event_fn fn, void *ctx);

#endif /* __UTRACE_CLI_TRACEFILE_H */
