/* SPDX-License-Identifier: MIT */
/*
 * agent-host.c - the host side of the agent protocol; see agent-host.h.
 * Runs in the tracer process. Every function returns 0 (or a count/id) on
 * success and a negative errno on failure, with h->why saying what failed.
 *
 * The arena is untrusted input: its readers are in agent-arena.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utrace/plan.h"
#include "utrace/proc.h"
#include "utrace/spec.h"
#include "arch.h"
#include "util.h"
#include "agent-host.h"

#define XOL_SIZE AHOST_XOL_SIZE
#define AHOST_BATCH_PAGES 64 /* 256 KiB of pages for a batch */

/* $UTRACE_AGENT, else the build tree's ($UTRACE_BUILD_DIR), else the loader's search. */
const char *ahost_agent_path(void)
{
	static char path[4096];
	const char *a = getenv("UTRACE_AGENT"), *b = getenv("UTRACE_BUILD_DIR");

	if (a && *a)
		return a;
	if (!b)
		return "libutrace-agent.so";
	snprintf(path, sizeof(path), "%s/agent/libutrace-agent.so", b);
	return path;
}

static long futex(uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, w, op, val, ts, NULL, 0);
}

/*
 * A descriptor number for the launched program's arena fd: high, below
 * the soft RLIMIT_NOFILE, and not so high that the target's fd table grows
 * (a service with a limit of 524288 would get a 4 MiB table for one fd).
 */
static int high_fd(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur < 64)
		return 3;
	return rl.rlim_cur > 1024 ? 992 : (int)rl.rlim_cur - 32;
}

int ahost_launch(struct ahost *h, const struct ahost_opts *o, char *const argv[])
{
	struct utrace_arena_hdr hd = { 0 };
	int in[2] = { -1, -1 }, out[2] = { -1, -1 };
	char fdbuf[32], agent[4096];
	struct timespec ts = { 10, 0 };
	int afd;

	memset(h, 0, sizeof(*h));
	h->stdin_fd = h->stdout_fd = -1;
	hd.max_probes = o->max_probes ?: 64;
	hd.max_threads = o->max_threads ?: 64;
	hd.ring_records = o->ring_records ?: 1024;
	utrace_abi_layout(&hd);
	hd.host_pid = (uint32_t)getpid();
	hd.flags = o->flags | UTRACE_ARENA_F_WAIT_START;
	hd.max_depth = o->max_depth;
	hd.stack_dump = o->stack_dump;
	if (ahost_set_layout(h, &hd))
		return -ENOMEM;
	h->fd = memfd_create("utrace-arena", MFD_CLOEXEC); /* the child dups it */
	if (h->fd < 0 || fchmod(h->fd, 0600) < 0 || ftruncate(h->fd, (off_t)hd.arena_size) < 0)
		return -errno;
	h->arena = mmap(NULL, hd.arena_size, PROT_READ | PROT_WRITE, MAP_SHARED, h->fd, 0);
	if (h->arena == MAP_FAILED)
		return -errno;
	h->hdr = h->arena;
	memcpy(h->hdr, &hd, sizeof(hd));
	if ((o->pipe_stdin && pipe(in) < 0) || (o->pipe_stdout && pipe(out) < 0))
		return -errno;
	snprintf(agent, sizeof(agent), "%s", ahost_agent_path()); /* before UTRACE_AGENT goes */
	h->pid = fork();
	if (h->pid < 0)
		return -errno;
	if (!h->pid) {
		if (in[0] >= 0) {
			dup2(in[0], 0);
			close(in[0]);
			close(in[1]);
		}
		if (out[1] >= 0) {
			dup2(out[1], 1);
			close(out[0]);
			close(out[1]);
		}
		/*
		 * The arena fd, high up: out of the numbers a program
		 * dup2()s onto or passes across execve() (3, 4, ...). The
		 * agent takes it and these variables out of the program's
		 * sight (agent.c strip_env()); UTRACE_AGENT is ours only.
		 */
		afd = fcntl(h->fd, F_DUPFD, high_fd());
		if (afd < 0)
			_exit(127);
		close(h->fd);
		snprintf(fdbuf, sizeof(fdbuf), "%d", afd);
		unsetenv("UTRACE_AGENT");
		setenv("UTRACE_AGENT_FD", fdbuf, 1);
		/* the agent first, then the user's own preloads */
		if (getenv("LD_PRELOAD") && *getenv("LD_PRELOAD")) {
			char *pre = NULL;

			if (asprintf(&pre, "%s:%s", agent, getenv("LD_PRELOAD")) < 0)
				_exit(127);
			setenv("LD_PRELOAD", pre, 1);
		} else {
			setenv("LD_PRELOAD", agent, 1);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (in[0] >= 0) {
		close(in[0]);
		h->stdin_fd = in[1];
	}
	if (out[1] >= 0) {
		close(out[1]);
		h->stdout_fd = out[0];
	}
	while (__atomic_load_n(&h->hdr->agent_state, __ATOMIC_ACQUIRE) == UTRACE_AGENT_NONE) {
		int st;

		if (waitpid(h->pid, &st, WNOHANG) == h->pid) {
			h->pid = 0;
			snprintf(h->why, sizeof(h->why),
				 "target exited before the agent was ready");
			return -ECHILD;
		}
		ts.tv_sec = 0;
		ts.tv_nsec = 10000000;
		futex(&h->hdr->agent_state, FUTEX_WAIT, UTRACE_AGENT_NONE, &ts);
	}
	if (h->hdr->agent_state != UTRACE_AGENT_READY) {
		snprintf(h->why, sizeof(h->why), "agent state %u err %d", h->hdr->agent_state,
			 h->hdr->agent_err);
		return h->hdr->agent_err ?: -EPROTO;
	}
	return 0;
}

static bool watched_dead(pid_t pid, int *st);

int ahost_cmd(struct ahost *h, uint32_t cmd, uint64_t a0, uint64_t a1)
{
	uint32_t seq = ++h->seq;
	uint32_t exec_seq = __atomic_load_n(&h->hdr->exec_seq, __ATOMIC_ACQUIRE);
	struct timespec ts = { 0, 50000000 };
	int i;

	h->hdr->cmd = cmd;
	h->hdr->cmd_arg[0] = a0;
	h->hdr->cmd_arg[1] = a1;
	__atomic_store_n(&h->hdr->cmd_seq, seq, __ATOMIC_RELEASE);
	futex(&h->hdr->cmd_seq, FUTEX_WAKE, INT32_MAX, NULL);
	if (h->pump)
		ts.tv_nsec = 1000000; /* 1 ms: the stops must not wait long */
	for (i = 0; i < (h->pump ? 20000 : 400); i++) { /* 20 s */
		uint32_t a = __atomic_load_n(&h->hdr->ack_seq, __ATOMIC_ACQUIRE);

		int st;

		if (a == seq)
			return h->hdr->cmd_result;
		if (h->pump)
			h->pump(h->pump_ctx);
		if (__atomic_load_n(&h->hdr->exec_seq, __ATOMIC_ACQUIRE) != exec_seq) {
			/* the agent that had the command is gone with its image */
			snprintf(h->why, sizeof(h->why), "command %u: the program ran execve()",
				 cmd);
			return -ECANCELED;
		}
		if (h->session_owned && h->pid > 0 && kill(h->pid, 0) < 0 && errno == ESRCH) {
			snprintf(h->why, sizeof(h->why), "command %u: target died", cmd);
			return -ESRCH;
		}
		if (!h->session_owned && h->pid > 0 && waitpid(h->pid, &st, WNOHANG) == h->pid) {
			snprintf(h->why, sizeof(h->why), "command %u: target died (status 0x%x)",
				 cmd, st);
			h->pid = 0;
			h->reaped = true;
			h->status = st;
			return -ESRCH;
		}
		if (h->pid > 0 && (i & 3) == 3 && watched_dead(h->pid, &st)) {
			/* attach mode: not our child, so not waited for 20 s either */
			if (st >= 0 && WIFSIGNALED(st))
				snprintf(h->why, sizeof(h->why),
					 "command %u: target killed by SIG%s (status 0x%x)", cmd,
					 sigabbrev_np(WTERMSIG(st)) ?: "?", st);
			else
				snprintf(h->why, sizeof(h->why), "command %u: target died", cmd);
			return -ESRCH;
		}
		futex(&h->hdr->ack_seq, FUTEX_WAIT, a, &ts);
	}
	snprintf(h->why, sizeof(h->why), "command %u: no ack (agent state %u, seq %u ack %u)", cmd,
		 h->hdr->agent_state, seq, h->hdr->ack_seq);
	return -ETIMEDOUT;
}

static int resolve(struct ahost *h, const char *text, struct utrace_image **ret_img,
		   struct utrace_match *ret_m)
{
	struct utrace_spec spec;
	struct utrace_match *m = NULL;
	struct utrace_image *img;
	size_t nr = 0, i;
	int err;

	err = utrace_spec__parse(text, &spec, h->why, sizeof(h->why));
	if (err)
		return err;
	img = utrace_image__open_pid(h->pid);
	if (!img) {
		utrace_spec__clear(&spec);
		return -errno;
	}
	err = utrace_image__resolve(img, &spec, &m, &nr, NULL);
	utrace_spec__clear(&spec);
	if (err || !nr) {
		snprintf(h->why, sizeof(h->why), "spec '%s': no match (%d)", text, err);
		free(m);
		utrace_image__close(img);
		return err ?: -ENOENT;
	}
	for (i = 0; i < nr && (m[i].sym_flags & UTRACE_SYM_ALIAS); i++)
		;
	*ret_m = m[i < nr ? i : 0];
	*ret_img = img;
	free(m);
	return 0;
}

uint64_t ahost_sym(struct ahost *h, const char *text)
{
	struct utrace_image *img;
	struct utrace_match m;

	if (resolve(h, text, &img, &m))
		return 0;
	utrace_image__close(img);
	return m.addr;
}

int ahost_plan_begin(struct ahost *h, struct utrace_image *img)
{
	ahost_plan_end(h);
	h->batch.pl = utrace_planner__new(img);
	if (!h->batch.pl)
		return -errno;
	h->batch.img = img;
	h->batch.pages = calloc(AHOST_BATCH_PAGES, sizeof(*h->batch.pages)); /* else uncached */
	return 0;
}

void ahost_plan_end(struct ahost *h)
{
	unsigned int i;

	for (i = 0; i < h->batch.nr_files; i++) {
		free(h->batch.files[i].path);
		if (h->batch.files[i].fd >= 0)
			close(h->batch.files[i].fd);
	}
	utrace_planner__free(h->batch.pl);
	utrace_maps__free(h->batch.maps);
	free(h->batch.pages);
	memset(&h->batch, 0, sizeof(h->batch));
}

/*
 * The target's maps: the batch's copy, else a fresh one that *@own says to
 * free. NULL with errno set.
 */
static struct utrace_maps *maps_get(struct ahost *h, bool *own)
{
	*own = !h->batch.pl;
	if (*own)
		return utrace_maps__read(h->pid);
	if (!h->batch.maps)
		h->batch.maps = utrace_maps__read(h->pid);
	return h->batch.maps;
}

static void maps_put(struct utrace_maps *maps, bool own)
{
	if (own)
		utrace_maps__free(maps);
}

/* A read-only descriptor of @path: the batch's (kept), else a new one (*@own). */
static int file_get(struct ahost *h, const char *path, bool *own)
{
	struct ahost_file *f;
	unsigned int i;
	int fd;

	*own = true;
	for (i = 0; h->batch.pl && i < h->batch.nr_files; i++)
		if (!strcmp(h->batch.files[i].path, path)) {
			*own = false;
			return h->batch.files[i].fd;
		}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!h->batch.pl || h->batch.nr_files >= sizeof(h->batch.files) / sizeof(h->batch.files[0]))
		return fd;
	f = &h->batch.files[h->batch.nr_files];
	f->path = strdup(path);
	if (!f->path)
		return fd;
	f->fd = fd;
	h->batch.nr_files++;
	*own = false;
	return fd;
}

static int file_index(struct ahost *h, int fd)
{
	unsigned int i;

	for (i = 0; i < h->batch.nr_files; i++)
		if (h->batch.files[i].fd == fd)
			return (int)i;
	return -1;
}

/*
 * @len bytes at @off of source @src (-1: the target's memory, else the
 * batch's file @src, descriptor @fd), through the batch's page cache: a
 * glob's sites share pages, one read each instead of one per site.
 * Return: bytes copied (short at a file's end), or a negative errno.
 */
static ssize_t cached_read(struct ahost *h, int src, int fd, uint64_t off, uint8_t *buf, size_t len)
{
	size_t done = 0;

	if (!h->batch.pages) {
		if (src < 0)
			return utrace_mem__read(h->pid, off, buf, len);
		done = (size_t)pread(fd, buf, len, (off_t)off);
		return (ssize_t)done < 0 ? -errno : (ssize_t)done;
	}
	while (done < len) {
		uint64_t pg = (off + done) & ~4095ULL, at = off + done - pg;
		struct ahost_page *p =
			&h->batch.pages[((pg >> 12) ^ (uint64_t)(src + 1)) % AHOST_BATCH_PAGES];
		size_t n;

		if (p->key != pg + 1 || p->src != src) {
			ssize_t r = src < 0 ? utrace_mem__read(h->pid, pg, p->data, 4096) :
					      pread(fd, p->data, 4096, (off_t)pg);

			if (r < 0 && src >= 0)
				r = -errno;
			p->key = 0;
			if (r < 0)
				return done ? (ssize_t)done : r;
			p->key = pg + 1;
			p->src = src;
			p->len = (uint32_t)r;
		}
		if (at >= p->len)
			break;
		n = MIN(len - done, p->len - at);
		memcpy(buf + done, p->data + at, n);
		done += n;
	}
	return (ssize_t)done;
}

/*
 * Up to @len bytes of the file mapped at @addr in the target, as the file
 * has them (the live ones may hold a patch), not past the mapping's end.
 * Return: bytes read (> 0), or a negative errno.
 */
static ssize_t file_bytes(struct ahost *h, uint64_t addr, uint8_t *buf, size_t len)
{
	bool own_maps, own_fd;
	struct utrace_maps *maps = maps_get(h, &own_maps);
	const struct utrace_map *m = maps ? utrace_maps__find(maps, addr) : NULL;
	ssize_t r = -ENOENT;
	int fd;

	if (m && m->path && m->path[0] == '/' && !m->deleted && addr < m->end) {
		if (len > m->end - addr)
			len = m->end - addr;
		fd = file_get(h, m->path, &own_fd);
		r = fd;
		if (fd >= 0) {
			uint64_t off = m->offset + (addr - m->start);
			/* a descriptor of the batch is cached under its index */
			int fi = own_fd ? -1 : file_index(h, fd);

			r = fi < 0 ? pread(fd, buf, len, (off_t)off) :
				     cached_read(h, fi, fd, off, buf, len);
			r = r < 0 ? (fi < 0 ? -errno : r) : r ? r : -EIO;
			if (own_fd)
				close(fd);
		}
	}
	maps_put(maps, own_maps);
	return r;
}

/* Make area @k the current one (the slot allocator works on h->xol_*). */
static void use_area(struct ahost *h, unsigned int k)
{
	if (h->xol_base && h->cur_area < h->nr_areas && h->areas[h->cur_area].base == h->xol_base)
		h->areas[h->cur_area].next = h->xol_next;
	h->cur_area = k;
	h->xol_base = h->areas[k].base;
	h->xol_next = h->areas[k].next;
	h->xol_end = h->areas[k].end;
}

static int xol_for(struct ahost *h, uint64_t addr, const uint64_t *targets, int nt)
{
	uint64_t want[9], slot;
	struct utrace_maps *maps;
	unsigned int k;
	bool own;
	int i, err;

	if (h->xol_base && h->cur_area < h->nr_areas && h->areas[h->cur_area].base == h->xol_base)
		h->areas[h->cur_area].next = h->xol_next;
	else if (!h->xol_base)
		h->cur_area = h->nr_areas; /* forgotten (an exec): none is current */
	/* the current area first, then every other one with room */
	for (k = 0; k <= h->nr_areas; k++) {
		unsigned int j = k == 0 ? h->cur_area : k - 1;
		struct ahost_area *a;
		bool ok = true;

		if (j >= h->nr_areas || (k && j == h->cur_area))
			continue;
		a = &h->areas[j];
		if (a->next + UTRACE_TRAMP_SLOT > a->end)
			continue;
		for (i = -1; i < nt; i++) {
			uint64_t t = i < 0 ? addr : targets[i];
			int64_t d1 = (int64_t)(a->base - t), d2 = (int64_t)(a->end - t);

			if (d1 != (int32_t)d1 || d2 != (int32_t)d2)
				ok = false;
		}
		if (ok) {
			use_area(h, j);
			return 0;
		}
	}
	want[0] = addr;
	for (i = 0; i < nt && i < 8; i++)
		want[i + 1] = targets[i];
	maps = maps_get(h, &own);
	if (!maps)
		return -errno;
	err = reloc_find_slot(maps, want, (size_t)(1 + (nt < 8 ? nt : 8)), XOL_SIZE, &slot);
	maps_put(maps, own);
	if (err)
		return err;
	err = ahost_cmd(h, UTRACE_CMD_XOL_MAP, slot, XOL_SIZE);
	/* the maps changed (or were stale, -EEXIST): read them again next time */
	utrace_maps__free(h->batch.maps);
	h->batch.maps = NULL;
	if (err) {
		snprintf(h->why, sizeof(h->why), "XOL_MAP at 0x%lx: %d", (unsigned long)slot, err);
		return err;
	}
	if (h->nr_areas < 64) {
		h->areas[h->nr_areas].base = slot;
		h->areas[h->nr_areas].next = slot + UTRACE_XOL_HDR;
		h->areas[h->nr_areas].end = slot + XOL_SIZE;
		use_area(h, h->nr_areas++);
	} else {
		h->xol_base = slot;
		h->xol_next = slot + UTRACE_XOL_HDR;
		h->xol_end = slot + XOL_SIZE;
		h->cur_area = h->nr_areas;
	}
	return 0;
}

int ahost_probe(struct ahost *h, const char *text, uint32_t flags, bool force_int3)
{
	struct utrace_image *img;
	struct utrace_match m;
	int err;

	if (h->nr_probes >= h->lay.max_probes)
		return -ENOSPC;
	err = resolve(h, text, &img, &m);
	if (err)
		return err;
	err = ahost_probe_match(h, img, &m, text, flags, force_int3);
	utrace_image__close(img);
	return err;
}

/*
 * Do the @len live bytes at @addr equal the target's file's? Return: 1 yes,
 * 0 no, negative errno when the file cannot be read (then nothing is said).
 * Tracer process.
 */
static int live_equals_file(struct ahost *h, uint64_t addr, const uint8_t *live, size_t len)
{
	uint8_t file[16];
	ssize_t r = file_bytes(h, addr, file, len);

	if (r < 0)
		return (int)r;
	return r == (ssize_t)len ? !memcmp(file, live, len) : -EIO;
}

int ahost_insn_offsets(struct ahost *h, uint64_t addr, size_t span, uint32_t *offs, int max)
{
	uint8_t file[64];
	ssize_t r;
	size_t o = 0, got;
	int n = 0, l;

	if (span > sizeof(file))
		span = sizeof(file);
	/* the file's bytes: the live ones may hold another session's patch */
	r = file_bytes(h, addr, file, span);
	got = r > 0 ? (size_t)r : 0;
	while (o < got && n < max) {
		l = reloc_insn_len(file + o, got - o);
		if (l <= 0)
			break;
		offs[n++] = (uint32_t)o;
		o += (size_t)l;
	}
	return n ? n : -ENOENT;
}

int ahost_probe_match(struct ahost *h, struct utrace_image *img, const struct utrace_match *m,
		      const char *text, uint32_t flags, bool force_int3)
{
	struct utrace_planner *pl;
	struct utrace_plan plan;
	struct utrace_abi_probe *a;
	struct reloc r;
	struct writer w;
	uint8_t all[64], *bytes;
	uint64_t targets[8], entry;
	int err, nt, id = (int)h->nr_probes;
	uint8_t len, pre;

	if (h->nr_probes + h->reserved_top >= h->lay.max_probes) {
		snprintf(h->why, sizeof(h->why), "more than %u probe points",
			 h->lay.max_probes - h->reserved_top);
		return -ENOSPC;
	}
	if ((flags & UTRACE_PF_RETPROBE) && utrace_plan__ret_refused(img, m)) {
		snprintf(h->why, sizeof(h->why), "%s", utrace_plan__ret_refused(img, m));
		return -UTRACE_ERRNO__NOT_PATCHABLE;
	}
	pl = h->batch.pl && h->batch.img == img ? h->batch.pl : utrace_planner__new(img);
	/* jmp sites keep a short first instruction in place (planner.c rule 5) */
	utrace_planner__keep_first(pl, !force_int3);
	err = pl ? utrace_planner__plan(pl, m, &plan) : -ENOMEM;
	if (pl != h->batch.pl)
		utrace_planner__free(pl);
	if (err) {
		snprintf(h->why, sizeof(h->why), "plan '%s': %s (%d)", text, pl ? plan.why : "",
			 err);
		return err;
	}
	/*
	 * @all from the entry on: a kept first instruction (plan.pre_len bytes)
	 * is relocated into the slot too; @bytes are the patched ones.
	 */
	pre = plan.mode == UTRACE_PLAN_JMP ? (uint8_t)plan.pre_len : 0;
	entry = plan.addr - pre;
	if (cached_read(h, -1, -1, entry, all, sizeof(all)) != (ssize_t)sizeof(all)) {
		if (utrace_proc__check_access(h->pid) == -ESRCH) {
			/* e.g. the agent stopped waiting for START (10 s) and it ran */
			snprintf(h->why, sizeof(h->why), "pid %d exited", (int)h->pid);
			return -ESRCH;
		}
		return -EFAULT;
	}
	bytes = all + pre;
	/*
	 * The kept instruction runs in place, and a copy of it in the slot:
	 * the copy comes from the file, so that a kernel uprobe's (or a
	 * debugger's) int3 already on the entry is not copied; that int3 can
	 * stay, the kernel's resumes after the instruction, on our jmp.
	 */
	if (pre && file_bytes(h, entry, all, pre) != (ssize_t)pre)
		return -EIO;
	/*
	 * Someone patched the site already: another utrace session (each has
	 * its own agent instance and puts the bytes back when it ends), or a
	 * debugger's breakpoint. Relocating their jmp or int3 as if it were
	 * the program's code would chain us to them and, at our detach, write
	 * their patch back: refuse.
	 */
	if (live_equals_file(h, plan.addr, bytes, plan.len < 16 ? plan.len : 16) == 0) {
		snprintf(h->why, sizeof(h->why),
			 "its code is patched already (a kernel uprobe such as bpftrace's, a "
			 "debugger's breakpoint, or another utrace session probing it): one "
			 "session per function");
		return -EBUSY;
	}
	len = (uint8_t)plan.len;
	if (force_int3 || plan.mode != UTRACE_PLAN_JMP) {
		/* int3: one instruction; plan.len covers it for int3 plans. */
		if (plan.mode == UTRACE_PLAN_JMP) {
			struct reloc one;
			struct writer tw;
			uint8_t tmp[256];
			size_t l;

			/* Find the first instruction's length by relocating growing prefixes. */
			for (l = 1; l <= 15; l++) {
				reloc_init(&one, bytes, l, plan.addr);
				writer_init(&tw, tmp, sizeof(tmp), 0x10000);
				if (reloc_relocate(&one, &tw, false) >= 0 && one.nr == 1)
					break;
			}
			len = (uint8_t)l;
		}
	}
	nt = reloc_targets(all, pre + len, entry, targets, 8);
	if (nt < 0)
		return nt;
	err = xol_for(h, plan.addr, targets, nt > 8 ? 8 : nt);
	if (err)
		return err;
	a = ahost_abi(h, id);
	memset(a, 0, sizeof(*a));
	a->addr = plan.addr;
	a->slot = h->xol_next;
	a->flags = flags;
	a->mode = (force_int3 || plan.mode != UTRACE_PLAN_JMP) ? UTRACE_PM_INT3 : UTRACE_PM_JMP;
	a->len = len;
	a->pre_len = pre;
	a->undo = (uint8_t)plan.undo;
	memcpy(a->orig, bytes, sizeof(a->orig));
	reloc_init(&r, all, pre + len, entry);
	writer_init(&w, a->code, UTRACE_ABI_MAX_CODE, a->slot + UTRACE_TRAMP_XOL_OFF);
	err = reloc_relocate(&r, &w, true);
	if (err < 0 || w.err) {
		snprintf(h->why, sizeof(h->why), "relocate '%s': %d", text, err < 0 ? err : w.err);
		return err < 0 ? err : w.err;
	}
	a->code_len = (uint8_t)w.len;
	/* the instruction map of the patched bytes: the kept one is not among them */
	a->nr_insns = (uint8_t)(r.nr - (pre ? 1 : 0));
	for (unsigned int i = 0; i < a->nr_insns && i < UTRACE_ABI_MAX_INSNS; i++) {
		a->src_off[i] = (uint8_t)(r.src_off[i + (pre ? 1 : 0)] - pre);
		a->dst_off[i] = r.dst_off[i + (pre ? 1 : 0)];
	}
	reloc_clear(&r);
	h->xol_next += UTRACE_TRAMP_SLOT;
	h->nr_probes++;
	return id;
}

int ahost_set_want(struct ahost *h, int id, uint32_t want)
{
	__atomic_store_n(&ahost_abi(h, id)->want, want, __ATOMIC_RELEASE);
	return 0;
}

int ahost_sync(struct ahost *h)
{
	return ahost_cmd(h, UTRACE_CMD_SYNC, 0, 0);
}

int ahost_start(struct ahost *h)
{
	return ahost_cmd(h, UTRACE_CMD_START, 0, 0);
}

int ahost_wait(struct ahost *h)
{
	int st;

	if (h->stdin_fd >= 0) {
		close(h->stdin_fd);
		h->stdin_fd = -1;
	}
	if (!h->pid || waitpid(h->pid, &st, 0) != h->pid)
		return -ECHILD;
	h->pid = 0;
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

void ahost_close(struct ahost *h)
{
	ahost_plan_end(h);
	if (h->pid > 0 && !h->session_owned) {
		kill(h->pid, SIGKILL);
		waitpid(h->pid, NULL, 0);
	}
	if (h->stdin_fd >= 0)
		close(h->stdin_fd);
	if (h->stdout_fd >= 0)
		close(h->stdout_fd);
	if (h->arena && h->arena != MAP_FAILED)
		munmap(h->arena, h->lay.arena_size);
	free(h->tails);
	if (h->fd >= 0)
		close(h->fd);
	memset(h, 0, sizeof(*h));
}

/* ------------------------------------------------------------------------ */
/* The wait status of a process that is not our child                       */
/* ------------------------------------------------------------------------ */

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* linux/pidfd.h of Linux 6.15 (PIDFD_INFO_SIZE_VER0: 64 bytes) */
struct ahost_pidfd_info {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
};
#define AHOST_PIDFD_INFO_EXIT (1ULL << 3)
#define AHOST_PIDFD_GET_INFO _IOWR(0xFF, 11, struct ahost_pidfd_info)

#define AHOST_WATCH_MAX 64
static struct {
	pid_t pid;
	int fd;
} watched[AHOST_WATCH_MAX];

void ahost_watch_exit(pid_t pid)
{
	int i, fd;

	for (i = 0; i < AHOST_WATCH_MAX; i++)
		if (watched[i].pid == pid)
			return;
	for (i = 0; i < AHOST_WATCH_MAX && watched[i].pid; i++)
		;
	if (i == AHOST_WATCH_MAX)
		return;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return;
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	watched[i].pid = pid;
	watched[i].fd = fd;
}

int ahost_exit_status(pid_t pid)
{
	struct ahost_pidfd_info info;
	int i;

	for (i = 0; i < AHOST_WATCH_MAX; i++) {
		if (watched[i].pid != pid)
			continue;
		memset(&info, 0, sizeof(info));
		info.mask = AHOST_PIDFD_INFO_EXIT;
		if (ioctl(watched[i].fd, AHOST_PIDFD_GET_INFO, &info) < 0 ||
		    !(info.mask & AHOST_PIDFD_INFO_EXIT))
			return -1;
		return info.exit_code;
	}
	return -1;
}

/*
 * Has the watched @pid (ahost_watch_exit()) exited? Its pidfd polls readable
 * then; *@st is its wait status once known (-1: not yet reaped by its parent,
 * or an older kernel).
 */
static bool watched_dead(pid_t pid, int *st)
{
	int i;

	for (i = 0; i < AHOST_WATCH_MAX; i++) {
		struct pollfd p = { .fd = watched[i].fd, .events = POLLIN };

		if (watched[i].pid != pid)
			continue;
		if (poll(&p, 1, 0) != 1)
			return false;
		*st = ahost_exit_status(pid);
		return true;
	}
	return false;
}
