/* SPDX-License-Identifier: MIT */
/*
 * tramp.c - XOL areas and trampoline slots.
 *
 * An XOL area is executable memory within ±2 GiB of the sites it serves, at
 * an address the host chose from /proc/PID/maps (abi.h: who relocates). It
 * is a memfd mapped twice: read+exec at the chosen address with
 * MAP_FIXED_NOREPLACE (never over anything), and read+write elsewhere for
 * the agent's writes. So no page is ever writable and executable at once,
 * and no mprotect ever takes X away from code another thread may be
 * running. If memfd_create is not allowed, an anonymous RWX mapping is the
 * fallback.
 *
 * Area layout: the first 8 bytes hold the address of __utrace_agent_entry
 * (each slot's call [rip+x] reads it: the agent may be >2 GiB away), then
 * UTRACE_TRAMP_SLOT-byte slots from UTRACE_XOL_HDR on (abi.h). Areas and
 * slots are never unmapped or reused: a thread may be inside a slot, or
 * have a slot address in a signal frame, at any time (Orbit never frees;
 * the late-int3 path also resumes in the slot after a disarm).
 *
 * Runs in the control thread, except tramp_in_xol() (any thread).
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent-internal.h"

#define MAX_AREAS 64

struct xol_area {
	uint64_t vaddr; /* the executable view */
	uint64_t size;
	char *rw; /* the writable view (== vaddr for the RWX fallback) */
	uint64_t used; /* header and written slots: the tail after it is free */
};

static struct xol_area areas[MAX_AREAS];
static unsigned int nr_areas; /* published with a release store */

/**
 * tramp_xol_map - map an XOL area at @addr
 * @addr: page-aligned address chosen by the host; @size: bytes
 *
 * Control thread. Return: 0; -EEXIST if the range is taken; -ENOSPC when
 * there are too many areas; another negative errno from mmap.
 */
int tramp_xol_map(uint64_t addr, uint64_t size)
{
	struct xol_area *a;
	void *x, *rw;
	int fd;

	if (!addr || (addr & (UTRACE_ABI_PAGE - 1)) || !size || size > (64ULL << 20))
		return -EINVAL;
	size = utrace_abi_align(size, UTRACE_ABI_PAGE);
	if (nr_areas >= MAX_AREAS)
		return -ENOSPC;
	fd = memfd_create("utrace-xol", MFD_CLOEXEC);
	if (fd >= 0) {
		if (ftruncate(fd, (off_t)size) < 0) {
			close(fd);
			return -errno;
		}
		x = mmap((void *)addr, size, PROT_READ | PROT_EXEC,
			 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
		if (x == MAP_FAILED) {
			int err = -errno;

			close(fd);
			return err;
		}
		rw = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (rw == MAP_FAILED) {
			munmap(x, size);
			return -ENOMEM;
		}
	} else {
		x = mmap((void *)addr, size, PROT_READ | PROT_WRITE | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (x == MAP_FAILED)
			return -errno;
		rw = x;
	}
	if ((uint64_t)x != addr) { /* a kernel without MAP_FIXED_NOREPLACE */
		munmap(x, size);
		if (rw != x)
			munmap(rw, size);
		return -EEXIST;
	}
	*(uint64_t *)rw = (uint64_t)__utrace_agent_entry;
	a = &areas[nr_areas];
	a->vaddr = addr;
	a->size = size;
	a->rw = rw;
	a->used = UTRACE_XOL_HDR;
	__atomic_store_n(&nr_areas, nr_areas + 1, __ATOMIC_RELEASE);
	return 0;
}

/**
 * tramp_publish_areas - offer the areas of earlier sessions to a new one
 *
 * agent_start() of a re-attach, before READY (no control thread runs):
 * the newest areas with free room, in @h->xol_prev.
 */
void tramp_publish_areas(struct utrace_arena_hdr *h)
{
	unsigned int i, n = 0;

	for (i = nr_areas; i-- > 0 && n < UTRACE_ABI_XOL_PREV;) {
		if (areas[i].used + UTRACE_TRAMP_SLOT > areas[i].size)
			continue;
		h->xol_prev[n].vaddr = areas[i].vaddr;
		h->xol_prev[n].size = areas[i].size;
		h->xol_prev[n].used = areas[i].used;
		n++;
	}
	h->nr_xol_prev = n;
}

static struct xol_area *area_of(uint64_t addr, uint64_t len)
{
	unsigned int i, n = __atomic_load_n(&nr_areas, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (addr >= areas[i].vaddr + UTRACE_XOL_HDR &&
		    addr + len <= areas[i].vaddr + areas[i].size)
			return &areas[i];
	return NULL;
}

/** tramp_in_xol - true if @addr is inside one of our XOL areas. */
bool tramp_in_xol(uint64_t addr)
{
	return area_of(addr, 1) != NULL;
}

/**
 * tramp_write_slot - write @p's trampoline slot: our header, the host's
 * relocated displaced instructions
 *
 * Control thread, before the probe's site is patched (the caller syncs
 * cores afterwards). Return: 0; -EINVAL for a slot outside every area or
 * code that does not fit.
 */
int tramp_write_slot(struct utrace_probe *p)
{
	struct utrace_abi_probe *a = p->abi;
	struct xol_area *x = area_of(p->slot, UTRACE_TRAMP_SLOT);
	uint8_t hdr[UTRACE_TRAMP_XOL_OFF] = {
		0x48, 0x8d, 0x64, 0x24, 0x80, /* lea rsp, [rsp - 0x80] */
		0x68, 0,    0,	  0,	0, /* push imm32 (id) */
		0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00, /* nop6 */
		0x66, 0x90, /* nop2 */
		0xff, 0x15, 0,	  0,	0,    0, /* call [rip + disp32] (the area's thunk) */
		0x48, 0x8d, 0xa4, 0x24, 0x88, 0,    0, 0, /* lea rsp, [rsp + 0x88] */
	};
	int64_t disp;
	char *w;

	if (!x || (p->slot - x->vaddr - UTRACE_XOL_HDR) % UTRACE_TRAMP_SLOT ||
	    a->code_len > UTRACE_TRAMP_SLOT - UTRACE_TRAMP_XOL_OFF ||
	    a->code_len > UTRACE_ABI_MAX_CODE || !a->code_len || p->id > INT32_MAX)
		return -EINVAL;
	disp = (int64_t)x->vaddr - (int64_t)(p->slot + 24);
	hdr[4] = (uint8_t)(int8_t)((int)p->undo - 0x80); /* lea rsp, [rsp - 0x80 + undo] */
	utrace_memcpy(&hdr[6], &p->id, 4);
	utrace_memcpy(&hdr[20], &(int32_t){ (int32_t)disp }, 4);
	w = x->rw + (p->slot - x->vaddr);
	utrace_memcpy(w, hdr, sizeof(hdr));
	utrace_memcpy(w + UTRACE_TRAMP_XOL_OFF, a->code, a->code_len);
	if (p->slot - x->vaddr + UTRACE_TRAMP_SLOT > x->used)
		x->used = p->slot - x->vaddr + UTRACE_TRAMP_SLOT;
	return 0;
}
