/* SPDX-License-Identifier: MIT */
/*
 * xol.c - execute-out-of-line areas of the ptrace backend. Runs in the
 * tracer process; the areas live in the target.
 *
 * DESIGN
 *
 * The paper's rule is that a breakpoint is never removed while the process
 * runs, so no thread can slip past a probe while another is being handled
 * (ltrace's bug). The instruction the int3 replaced therefore executes
 * somewhere else: in a slot of an XOL area, an anonymous private mapping
 * (PROT_READ | PROT_EXEC) made in the target with a remote mmap.
 *
 * Layout of an area (XOL_AREA_SIZE bytes):
 *
 *   +0     int3            the return trampoline: return probes replace a
 *                          return address with this address; the trap
 *                          tells the tracer that the function returned
 *   +1..63 int3 padding
 *   +64    slot 0          the relocated instruction (reloc_relocate()),
 *                          then a jump back to the instruction after the
 *                          probed one (a rel32 jmp, or jmp [rip+0] when far)
 *   +128   slot 1 ...      XOL_SLOT_SIZE (64) bytes each: RELOC_MAX_OUT(1)
 *                          is 62
 *
 * After a hit's handlers, the tracer sets rip to the point's slot and
 * resumes: the thread runs the copy and jumps back by itself. No
 * single-step, no second stop: one trap per hit (the kernel's uprobes needs
 * a single-step trap too; we do not, because the jump back is part of the
 * slot, and the slot is per probe point rather than per thread: it holds no
 * thread state, so any number of threads can run it at once).
 *
 * Placement. A RIP-relative operand keeps its meaning if the copy is
 * within ±2 GiB of its target (disp32 re-pointed by the relocator), and the
 * relocator falls back to a scratch-register rewrite for plain data
 * operands when it is not. The first area of a process is placed near the
 * first probed site (reloc_find_slot() over /proc/PID/maps, mapped with
 * MAP_FIXED_NOREPLACE); a site whose instruction still cannot be relocated
 * into any existing area (SITE_FAIL_RIPREL_FAR) gets a new area near it
 * and its targets. Slots are filled lazily at a point's first hit.
 *
 * Lifetime. Slots are never reused while the process is traced: a thread
 * may have been redirected to a slot and be preempted there for an
 * unbounded time after its point is unregistered (the kernel keeps its XOL
 * vma for the same reason). Areas are unmapped only when the backend
 * detaches from the process, after every thread is quiesced, every
 * trampoline return address is restored and no thread's rip is inside an
 * area (see ptrace_backend_release()). A followed fork child inherits the
 * parent's areas (same addresses, copied pages) and reuses them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "utrace/proc.h"
#include "arch.h"
#include "internal.h"
#include "backend-ptrace.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define XOL_AREA_SIZE (64 * 1024)
#define XOL_SLOT_SIZE 64
#define XOL_FIRST_SLOT 64
#define XOL_NR_SLOTS ((XOL_AREA_SIZE - XOL_FIRST_SLOT) / XOL_SLOT_SIZE)

/* struct xol_area - one mapping of slots in the target. */
struct xol_area {
	struct xol_area *next;
	uint64_t addr;
	unsigned int used; /* slots handed out (never returned, see above) */
};

static struct uprobes_proc *mem_proc(struct uprobes_proc *pp)
{
	/* a followed vfork child runs in its parent's memory */
	if (pp->vfork_parent) {
		struct uprobes_proc *parent = uprobes_proc_find(pp->up, pp->vfork_parent);

		if (parent)
			return parent;
	}
	return pp;
}

/**
 * xol_insn_len - length of the instruction at @bytes.
 * @bytes: code
 * @len: bytes available
 *
 * Return: 1..15; negative error code if it does not decode.
 */
int xol_insn_len(const uint8_t *bytes, size_t len)
{
	return reloc_insn_len(bytes, len);
}

/**
 * xol_tramp - address of the return trampoline of @pp, 0 if no area yet.
 * @pp: process
 */
uint64_t xol_tramp(const struct uprobes_proc *pp)
{
	const struct xol_area *a = ptrace_proc(pp)->xol;

	if (!a)
		return 0;
	while (a->next)
		a = a->next; /* the first area created is the last in the list */
	return a->addr;
}

/**
 * xol_contains - true if @addr is inside one of @pp's areas.
 * @pp: process
 * @addr: address
 */
bool xol_contains(const struct uprobes_proc *pp, uint64_t addr)
{
	const struct xol_area *a;

	for (a = ptrace_proc(pp)->xol; a; a = a->next)
		if (addr >= a->addr && addr < a->addr + XOL_AREA_SIZE)
			return true;
	return false;
}

/* Map a new area near @near (and @targets) with a remote mmap from @th. */
static int area_new(struct uprobes_proc *pp, struct utrace_thread *th, const uint64_t *addrs,
		    size_t nr, struct xol_area **ret)
{
	struct utrace_maps *maps = utrace_maps__read(pp->pid);
	uint8_t pad[XOL_FIRST_SLOT];
	uint64_t hint = 0, args[6];
	struct xol_area *a;
	long res = 0;
	int err;

	if (!maps)
		return -errno;
	err = reloc_find_slot(maps, addrs, nr, XOL_AREA_SIZE, &hint);
	utrace_maps__free(maps);
	args[0] = err ? 0 : hint;
	args[1] = XOL_AREA_SIZE;
	args[2] = PROT_READ | PROT_EXEC;
	args[3] = MAP_PRIVATE | MAP_ANONYMOUS | (err ? 0 : MAP_FIXED_NOREPLACE);
	args[4] = (uint64_t)-1;
	args[5] = 0;
	err = utrace_thread__remote_syscall(th, SYS_mmap, args, &res);
	if (err)
		return err;
	if (res < 0 && res > -4096)
		return (int)res;
	a = calloc(1, sizeof(*a));
	if (!a) {
		uint64_t margs[6] = { (uint64_t)res, XOL_AREA_SIZE };
		long r2;

		utrace_thread__remote_syscall(th, SYS_munmap, margs, &r2);
		return -ENOMEM;
	}
	a->addr = (uint64_t)res;
	memset(pad, 0xcc, sizeof(pad)); /* int3: the trampoline, and padding */
	if (utrace_mem__write(pp->pid, a->addr, pad, sizeof(pad)) != (ssize_t)sizeof(pad)) {
		uint64_t margs[6] = { a->addr, XOL_AREA_SIZE };
		long r2;

		utrace_thread__remote_syscall(th, SYS_munmap, margs, &r2);
		free(a);
		return -EFAULT;
	}
	a->next = ptrace_proc(pp)->xol;
	ptrace_proc(pp)->xol = a;
	pp->up->stats.xol_areas++;
	pr_debug("process %d: XOL area at 0x%llx\n", pp->pid, (unsigned long long)a->addr);
	*ret = a;
	return 0;
}

/* Relocate @pt's instruction into the next slot of @a. */
static int area_try(struct uprobes_proc *pp, struct xol_area *a, struct probe_point *pt,
		    struct reloc *r)
{
	uint8_t buf[XOL_SLOT_SIZE];
	uint64_t slot;
	struct writer w;
	int n, len;

	if (a->used >= XOL_NR_SLOTS)
		return -ENOSPC;
	slot = a->addr + XOL_FIRST_SLOT + (uint64_t)a->used * XOL_SLOT_SIZE;
	/* once without the jump back, to learn where it starts (xol_rip_fixup()) */
	writer_init(&w, buf, sizeof(buf), slot);
	reloc_init(r, pt->orig, pt->insn_len, pt->addr);
	n = reloc_relocate(r, &w, false);
	if (n < 0)
		return n;
	len = n;
	memset(buf, 0xcc, sizeof(buf));
	writer_init(&w, buf, sizeof(buf), slot);
	reloc_init(r, pt->orig, pt->insn_len, pt->addr);
	n = reloc_relocate(r, &w, true);
	if (n < 0)
		return n;
	if (utrace_mem__write(pp->pid, slot, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		return -EFAULT;
	a->used++;
	ptrace_point(pt)->slot = slot;
	ptrace_point(pt)->slot_len = (uint16_t)len;
	ptrace_point(pt)->area = a;
	return 0;
}

/**
 * xol_prepare_slot - give @pt a slot holding its relocated instruction,
 * mapping an area first if needed.
 * @pp: process
 * @th: a stopped thread of @pp usable for remote syscalls
 * @pt: probe point
 *
 * Tracer process; may allocate; may run remote syscalls in @th.
 *
 * Return: 0 on success (the slot set); -UTRACE_ERRNO__RELOC if the
 * instruction cannot run out of line anywhere; negative errno otherwise.
 */
int xol_prepare_slot(struct uprobes_proc *pp, struct utrace_thread *th, struct probe_point *pt)
{
	struct uprobes_proc *mp = mem_proc(pp);
	struct xol_area *a;
	struct reloc r;
	uint64_t addrs[1 + 4];
	int err = -ENOSPC, n;

	if (ptrace_point(pt)->slot)
		return 0;
	for (a = ptrace_proc(mp)->xol; a; a = a->next) {
		err = area_try(mp, a, pt, &r);
		if (!err)
			return 0;
		if (err != -ENOSPC &&
		    !(err == -UTRACE_ERRNO__RELOC && r.fail == SITE_FAIL_RIPREL_FAR))
			return err;
	}
	addrs[0] = pt->addr;
	n = reloc_targets(pt->orig, pt->insn_len, pt->addr, addrs + 1, 4);
	if (n < 0)
		n = 0;
	err = area_new(mp, th, addrs, 1 + (size_t)MIN(n, 4), &a);
	if (err)
		return err;
	return area_try(mp, a, pt, &r);
}

/**
 * xol_unmap_all - unmap every area of @pp from the target with @th.
 * @pp: process
 * @th: a stopped thread usable for remote syscalls
 *
 * The caller guarantees that no thread can be inside an area.
 * Return: 0 on success; the first negative error code otherwise (the
 * areas are forgotten anyway).
 */
int xol_unmap_all(struct uprobes_proc *pp, struct utrace_thread *th)
{
	int ret = 0;

	while (ptrace_proc(pp)->xol) {
		struct xol_area *a = ptrace_proc(pp)->xol;
		uint64_t args[6] = { a->addr, XOL_AREA_SIZE };
		long res = 0;
		int r = th ? utrace_thread__remote_syscall(th, SYS_munmap, args, &res) : -ESRCH;

		if (!r && res)
			r = (int)res;
		if (r && !ret)
			ret = r;
		ptrace_proc(pp)->xol = a->next;
		free(a);
	}
	return ret;
}

/**
 * xol_inherit - @child (a fork of @parent) has copies of @parent's areas
 * at the same addresses: adopt them (their slots are stale but harmless;
 * they are handed out again from the start).
 * @child: new process
 * @parent: its parent
 *
 * Return: 0 on success; -ENOMEM.
 */
int xol_inherit(struct uprobes_proc *child, const struct uprobes_proc *parent)
{
	const struct xol_area *a;
	struct xol_area **tail = &ptrace_proc(child)->xol;

	for (a = ptrace_proc(parent)->xol; a; a = a->next) {
		struct xol_area *c = calloc(1, sizeof(*c));

		if (!c)
			return -ENOMEM;
		c->addr = a->addr;
		*tail = c;
		tail = &c->next;
	}
	return 0;
}

/**
 * xol_forget - free @pp's area descriptors without touching the target
 * (exec, exit, or after xol_unmap_all()).
 * @pp: process
 */
void xol_forget(struct uprobes_proc *pp)
{
	while (ptrace_proc(pp)->xol) {
		struct xol_area *a = ptrace_proc(pp)->xol;

		ptrace_proc(pp)->xol = a->next;
		free(a);
	}
}

/**
 * xol_rip_fixup - where a thread stopped at @rip inside @pt's slot would be
 * in the original code.
 * @pt: probe point whose slot contains @rip
 * @rip: address in the slot
 * @ret: receives the original address
 *
 * Return: 0 if @rip is at the start of the slot (the instruction has not
 * run) or at its jump back (it has); -EBUSY in the middle of a multi
 * instruction emulation.
 */
int xol_rip_fixup(const struct probe_point *pt, uint64_t rip, uint64_t *ret)
{
	if (rip == ptrace_point(pt)->slot) {
		*ret = pt->addr;
		return 0;
	}
	if (rip == ptrace_point(pt)->slot + ptrace_point(pt)->slot_len) {
		*ret = pt->addr + pt->insn_len;
		return 0;
	}
	return -EBUSY;
}
