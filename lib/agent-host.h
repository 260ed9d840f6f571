/* SPDX-License-Identifier: MIT */
/*
 * agent-host.h - the host side of libutrace-agent.so (internal, not
 * installed): creates the arena (memfd, 0600), launches a target with
 * LD_PRELOAD and UTRACE_AGENT_FD, plans and relocates probe sites with
 * lib/arch.h ("decode on the host, patch in the target"), picks XOL areas
 * from the target's maps, drives the mailbox, sums counters and drains the
 * per-thread rings. Runs in the tracer process. The agent tests and the hit
 * benchmark use it; lib/backend-agent.c is meant to build on it (attach mode
 * needs only a different way to get the arena fd into the target:
 * lib/inject.c). Protocol: docs/agent.md and common/abi.h.
 */
#ifndef __UTRACE_AGENT_HOST_H
#define __UTRACE_AGENT_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"

/* bytes per XOL area the host maps: ~4,000 slots, a glob of all libc in one XOL_MAP */
#define AHOST_XOL_SIZE (1024 * 1024)

/*
 * The arena's layout as the host made it. The target can write every byte
 * of the arena (it is the agent's working memory), so a traced program
 * could steer a privileged tracer through any offset, size or index it
 * finds there: the host computes these once, at creation, and never
 * re-reads them. ahost_check() compares the arena's copy with this one.
 */
struct ahost_layout {
	uint32_t max_probes, max_threads, ring_records;
	uint64_t probes_off, threads_off, thread_stride, rings_off, arena_size;
};

struct utrace_image;
struct utrace_planner;
struct utrace_maps;

struct ahost {
	int fd;
	void *arena;
	struct utrace_arena_hdr *hdr;
	pid_t pid;
	int stdin_fd; /* write end of the target's stdin, or -1 */
	int stdout_fd; /* read end of the target's stdout, or -1 */
	uint32_t nr_probes;
	/*
	 * Ids [max_probes - reserved_top, max_probes) are never planned nor
	 * armed: their per-thread hit counters hold C probe modules' counters.
	 */
	uint32_t reserved_top;
	uint64_t xol_base, xol_next, xol_end; /* current XOL area */
	/* every area known: mapped by us, or left by earlier sessions (re-attach) */
	struct ahost_area {
		uint64_t base, next, end;
	} areas[64];
	unsigned int nr_areas, cur_area;
	/*
	 * The target belongs to a ptrace session (lib/backend-agent.c): never
	 * waitpid() it (that would take the session's stops) nor kill it.
	 */
	bool session_owned;
	/*
	 * Called while a command waits for its ack: the session's other
	 * stops are handled meanwhile (the control thread is traced too and
	 * stops at an int3 of ours like any thread).
	 */
	void (*pump)(void *ctx);
	void *pump_ctx;
	bool reaped; /* a command found the target dead and reaped it ... */
	int status; /* ... with this wait status */
	char why[256]; /* last failure, for test messages */
	struct ahost_layout lay; /* ahost_set_layout(): never read back from the arena */
	uint64_t *tails; /* lay.max_threads consumer indexes: ours, not the arena's */
	uint32_t seq; /* the last command's sequence number */
	/*
	 * The arena failed a check (ahost_check(), ahost_drain()): the agent
	 * is not to be believed any more. @why says what; the caller detaches.
	 */
	bool corrupt;
	/*
	 * ahost_plan_begin() .. ahost_plan_end(): what planning a site reads,
	 * read once for a whole batch of ahost_probe_match() calls on @img
	 * instead of once per probe: one planner (one branch-target index per
	 * object), the target's maps (re-read after an XOL_MAP) and one
	 * descriptor per object file.
	 */
	struct ahost_batch {
		struct utrace_image *img;
		struct utrace_planner *pl;
		struct utrace_maps *maps;
		struct ahost_file {
			char *path;
			int fd;
		} files[8];
		unsigned int nr_files;
		/* pages read once: the target's (src -1) and the files' (src = index) */
		struct ahost_page {
			uint64_t key; /* page address, or file offset, + 1 */
			int src;
			uint32_t len; /* bytes valid (a file's last page is short) */
			uint8_t data[4096];
		} * pages; /* AHOST_BATCH_PAGES, direct-mapped */
	} batch;
};

struct ahost_opts {
	uint32_t max_probes, max_threads, ring_records, max_depth, flags;
	uint32_t stack_dump; /* hdr->stack_dump: -k's bytes of stack (0: none) */
	bool pipe_stdin, pipe_stdout;
};

/*
 * Take @hd's layout (computed by utrace_abi_layout() on the host's side) as
 * @h's: before @h reads anything from its arena. Return: 0 or -ENOMEM.
 */
int ahost_set_layout(struct ahost *h, const struct utrace_arena_hdr *hd);
/*
 * Is the arena still the one the host made (magic, version, sizes,
 * offsets)? Return: 0, or -EBADMSG with h->corrupt set and h->why =
 * "the agent's arena in pid N is corrupt: WHAT". Cheap: once a drain.
 */
int ahost_check(struct ahost *h);
/*
 * Copy the agent's string answer (cmd_str) into @buf: bounded, and with
 * every byte that is not printable ASCII replaced by '?' (a target must not
 * write terminal escapes into the tracer's stderr).
 */
void ahost_agent_str(struct ahost *h, char *buf, size_t len);
/*
 * -F: the next fork child announced in the arena (hdr->forks), after
 * *@seen. Return: 1 with *@pid and *@fd (unchecked values: the caller
 * verifies that pid is a child of h->pid before opening anything), 0 when
 * there is none (yet), and adds entries that were overwritten to *@lost.
 */
int ahost_next_fork(struct ahost *h, uint32_t *seen, uint32_t *lost, pid_t *pid, int *fd,
		    uint32_t **acked);
int ahost_launch(struct ahost *h, const struct ahost_opts *o, char *const argv[]);
int ahost_cmd(struct ahost *h, uint32_t cmd, uint64_t a0, uint64_t a1);
/* Re-attach: take the XOL areas the agent offers (hdr->xol_prev), once READY. */
void ahost_adopt_areas(struct ahost *h);
/* Returns the probe id (>= 0). @force_int3 keeps a jmp-able site in int3 mode. */
int ahost_probe(struct ahost *h, const char *spec, uint32_t flags, bool force_int3);
/* The same for a match of utrace_image__resolve() on @img (the target's image). */
struct utrace_match;
/*
 * Plan the next ahost_probe_match() calls on @img as one batch (see
 * struct ahost_batch); @img must outlive ahost_plan_end(). Without a
 * batch, or for another image, every call reads everything afresh.
 * Return: 0, or a negative errno (then calls plan one by one).
 */
int ahost_plan_begin(struct ahost *h, struct utrace_image *img);
void ahost_plan_end(struct ahost *h);
int ahost_probe_match(struct ahost *h, struct utrace_image *img, const struct utrace_match *m,
		      const char *text, uint32_t flags, bool force_int3);
/*
 * Offsets of the instructions that start in [addr, addr + span) (span <= 64),
 * decoded from the file's bytes (not the live ones, which may hold another
 * session's patch). Return: how many (> 0), or -ENOENT.
 */
int ahost_insn_offsets(struct ahost *h, uint64_t addr, size_t span, uint32_t *offs, int max);
int ahost_set_want(struct ahost *h, int id, uint32_t want);
int ahost_sync(struct ahost *h);
int ahost_start(struct ahost *h);
struct utrace_abi_probe *ahost_abi(struct ahost *h, int id);
uint64_t ahost_hits(struct ahost *h, int id);
uint64_t ahost_hits_tid(struct ahost *h, int id, uint32_t tid);
uint64_t ahost_drops(struct ahost *h);
/*
 * The return figures of probe @id: its shared ones plus every thread's
 * timing cell of it (abi.h struct utrace_abi_cell). @min_ns is UINT64_MAX
 * until a timed call; the sums are read while the threads add to them.
 */
struct ahost_timing {
	uint64_t returns, sum_ns, min_ns, max_ns, errors;
	uint64_t hist[UTRACE_ABI_HIST_BUCKETS];
};
void ahost_timing(struct ahost *h, int id, struct ahost_timing *out);
uint64_t ahost_returns(struct ahost *h, int id);
/*
 * Consume the records of every thread ring (load-acquire head, copy,
 * store-release tail), calling @fn for each. Returns the number consumed.
 */
typedef void (*ahost_event_fn)(const struct utrace_abi_event *ev, void *data);
uint64_t ahost_drain(struct ahost *h, ahost_event_fn fn, void *data);
int ahost_wait(struct ahost *h); /* exit status of the target */
uint64_t ahost_sym(struct ahost *h, const char *spec); /* runtime address of a symbol */
void ahost_close(struct ahost *h);
const char *ahost_agent_path(void);
/*
 * Attach mode: the target is not our child, and its parent may reap it
 * before we look at /proc. ahost_watch_exit() keeps a pidfd on @pid (a few
 * at most); ahost_exit_status() then gives its wait status once it is dead
 * and reaped (PIDFD_INFO_EXIT, Linux >= 6.15), or -1 (alive, not known, or
 * an older kernel).
 */
void ahost_watch_exit(pid_t pid);
int ahost_exit_status(pid_t pid);

#endif /* __UTRACE_AGENT_HOST_H */
