/* SPDX-License-Identifier: MIT */
/*
 * sigguard.c - keep SIGTRAP deliverable when the agent is injected.
 *
 * A thread that blocks SIGTRAP dies at its first int3 site: the kernel
 * forces the signal by resetting the handler to SIG_DFL (the process dumps
 * core, status 133). Preloaded, the agent's sigprocmask/pthread_sigmask
 * interposers (interpose.c) take SIGTRAP out of every mask a thread asks
 * for. Injected with dlopen, the program's references to these functions
 * were bound to libc before the agent came: a worker that blocks every
 * signal (sigfillset + pthread_sigmask, as xz -T2, liblzma and many thread
 * pools do) blocks SIGTRAP too, and the attach-time check of the host only
 * sees the threads that exist then.
 *
 * So, while a session is active, every loaded object's GOT slots of
 * pthread_sigmask, sigprocmask and pthread_attr_setsigmask_np (JUMP_SLOT:
 * the PLT; GLOB_DAT: -fno-plt calls) point to the agent's interposers.
 * A GOT slot is one aligned pointer: a thread calling through it at the
 * moment of the write reaches either libc or us, both correct. Written
 * through /proc/self/mem (RELRO pages are read-only; no protection
 * changes). The objects are scanned again at each SYNC and whenever the
 * loader's count of added objects changes (dlopen), from the control
 * thread. When the session ends (go_dormant()) every slot that still holds
 * our address gets its old value back: a dormant agent leaves no pointer
 * into itself in the program (the agent is -z nodelete, so a thread
 * already inside an interposer returns safely).
 *
 * What stays exposed (docs/agent.md): calls that do not go through a GOT
 * (a pointer taken before the attach, dlsym() results, raw
 * syscall(SYS_rt_sigprocmask), libc's internal callers); a handler whose
 * sa_mask holds SIGTRAP; and pthread_create's own window: glibc blocks
 * every signal in the parent around clone() and the child runs start_thread()
 * with everything blocked until it restores the parent's mask (which no
 * longer holds SIGTRAP), so an int3 site on the libc functions of that
 * window (clone, __clone_internal, __ctype_init) can still kill the
 * process.
 *
 * Runs in the control thread only (never from a probe hit): it may take
 * the loader's lock (dl_iterate_phdr), open and write /proc/self/mem. So
 * a library constructor that runs long (the lock held) delays the
 * commands of an injected agent until it returns. Preloaded, it does
 * nothing.
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent-internal.h"

#define GUARD_MAX_SLOTS 1024

/* One redirected GOT slot. */
struct guard_slot {
	uint64_t addr; /* the slot */
	uint64_t orig; /* what it held before (libc's function, or a lazy PLT stub) */
	uint64_t ours; /* what we wrote */
};

static struct guard_slot slots[GUARD_MAX_SLOTS];
static unsigned int nr_slots;
static unsigned long long seen_adds; /* dlpi_adds at the last scan; 0: never scanned */
static int mem_fd = -1; /* /proc/self/mem during one scan */
static bool guard_on;
static bool preloaded; /* the mask calls are interposed already: no redirection */

struct guard_fn {
	const char *name;
	uint64_t ours;
	uint64_t exported; /* the interposer a preloaded agent's slots hold already */
};

static struct guard_fn guard_fns[3];

static void fns_init(void)
{
	/* -Bsymbolic: the exported names are this object's own functions */
	guard_fns[0] =
		(struct guard_fn){ "pthread_sigmask", (uint64_t)(uintptr_t)agent_pthread_sigmask,
				   (uint64_t)(uintptr_t)pthread_sigmask };
	guard_fns[1] = (struct guard_fn){ "sigprocmask", (uint64_t)(uintptr_t)agent_sigprocmask,
					  (uint64_t)(uintptr_t)sigprocmask };
	guard_fns[2] = (struct guard_fn){ "pthread_attr_setsigmask_np",
					  (uint64_t)(uintptr_t)agent_pthread_attr_setsigmask_np,
					  (uint64_t)(uintptr_t)pthread_attr_setsigmask_np };
}

static int put_word(uint64_t addr, uint64_t val)
{
	if (mem_fd < 0)
		mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (mem_fd < 0)
		return -1;
	return pwrite(mem_fd, &val, sizeof(val), (off_t)addr) == (ssize_t)sizeof(val) ? 0 : -1;
}

static struct guard_slot *slot_find(uint64_t addr)
{
	unsigned int i;

	for (i = 0; i < nr_slots; i++)
		if (slots[i].addr == addr)
			return &slots[i];
	return NULL;
}

/* Does the object of @info contain the agent's own code? */
static bool is_self(struct dl_phdr_info *info)
{
	uint64_t me = (uint64_t)(uintptr_t)sigguard_arm;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz)
			return true;
	}
	return false;
}

static void scan_relocs(uint64_t base, const ElfW(Rela) * r, size_t n, const ElfW(Sym) * symtab,
			const char *strtab, size_t strsz)
{
	size_t i;
	unsigned int k;

	for (i = 0; i < n; i++) {
		uint32_t type = (uint32_t)ELF64_R_TYPE(r[i].r_info);
		uint32_t sym = (uint32_t)ELF64_R_SYM(r[i].r_info);
		const char *name;
		uint64_t slot, cur;
		struct guard_slot *g;

		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !sym)
			continue;
		if (symtab[sym].st_shndx != SHN_UNDEF || symtab[sym].st_name >= strsz)
			continue;
		name = strtab + symtab[sym].st_name;
		for (k = 0; k < 3; k++)
			if (!strcmp(name, guard_fns[k].name))
				break;
		if (k == 3)
			continue;
		slot = base + r[i].r_offset;
		cur = *(volatile uint64_t *)(uintptr_t)slot;
		if (cur == guard_fns[k].ours || cur == guard_fns[k].exported)
			continue; /* ours already (preloaded, or redirected) */
		g = slot_find(slot);
		if (!g) {
			if (nr_slots == GUARD_MAX_SLOTS)
				continue;
			g = &slots[nr_slots];
			g->addr = slot;
		}
		/* (re)bound meanwhile (lazy binding, or our restore): redirect again */
		if (put_word(slot, guard_fns[k].ours))
			continue;
		g->orig = cur;
		g->ours = guard_fns[k].ours;
		if (g == &slots[nr_slots])
			nr_slots++;
	}
}

static uint64_t dyn_ptr(uint64_t base, uint64_t v)
{
	/* glibc relocates these d_ptr values in place on x86-64; the vDSO's are not */
	return v < base ? v + base : v;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *data)
{
	const ElfW(Dyn) *d = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	uint64_t jmprel = 0, pltsz = 0, rela = 0, relasz = 0, relacount = 0, strsz = 0;
	uint64_t base = info->dlpi_addr;
	int i;

	(void)size;
	(void)data;
	if (info->dlpi_name && !strncmp(info->dlpi_name, "linux-vdso", 10))
		return 0;
	if (is_self(info))
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			d = (const ElfW(Dyn) *)(uintptr_t)(base + info->dlpi_phdr[i].p_vaddr);
	if (!d)
		return 0;
	for (; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			symtab = (const ElfW(Sym) *)(uintptr_t)dyn_ptr(base, d->d_un.d_ptr);
			break;
		case DT_STRTAB:
			strtab = (const char *)(uintptr_t)dyn_ptr(base, d->d_un.d_ptr);
			break;
		case DT_STRSZ:
			strsz = d->d_un.d_val;
			break;
		case DT_JMPREL:
			jmprel = dyn_ptr(base, d->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			pltsz = d->d_un.d_val;
			break;
		case DT_RELA:
			rela = dyn_ptr(base, d->d_un.d_ptr);
			break;
		case DT_RELASZ:
			relasz = d->d_un.d_val;
			break;
		case DT_RELACOUNT:
			relacount = d->d_un.d_val;
			break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	if (jmprel && pltsz)
		scan_relocs(base, (const ElfW(Rela) *)(uintptr_t)jmprel, pltsz / sizeof(ElfW(Rela)),
			    symtab, strtab, strsz);
	if (rela && relasz / sizeof(ElfW(Rela)) > relacount)
		/* the R_X86_64_RELATIVE ones come first (DT_RELACOUNT): skip them */
		scan_relocs(base, (const ElfW(Rela) *)(uintptr_t)rela + relacount,
			    relasz / sizeof(ElfW(Rela)) - relacount, symtab, strtab, strsz);
	return 0;
}

/*
 * The loader lists the objects in load order: the program, its preloads,
 * then its needed libraries. An agent (this one or another instance)
 * before libc was preloaded. @data: 2 once an agent came first, 1 once
 * libc did.
 */
static int find_order(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	int *state = data;

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (!base)
		return 0;
	if (!strncmp(base, "libutrace-agent", 15) || is_self(info))
		*state = 2;
	else if (!strncmp(base, "libc.so", 7))
		*state = 1;
	return *state;
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(unsigned long long *)data = info->dlpi_adds;
	return 1;
}

/**
 * sigguard_arm - point every object's GOT slots of the signal-mask
 * functions to the agent's interposers. Control thread: at the start of a
 * session, before any probe is armed, and at each SYNC. Cheap when
 * nothing was loaded since (@force false).
 */
void sigguard_arm(bool force)
{
	unsigned long long adds = 0;

	if (!guard_fns[0].name) {
		/*
		 * Preloaded (this agent or another instance first in the global
		 * scope), the program's calls come to an interposer already:
		 * nothing to do. Not taking the loader's lock then matters: a
		 * dlopen() in a constructor waits for the host in the dlopen
		 * interposer (agent_image_changed()) with the lock held, and
		 * the host's SYNC would wait for the lock here.
		 */
		int state = 0;

		fns_init();
		dl_iterate_phdr(find_order, &state);
		preloaded = state == 2;
	}
	if (preloaded)
		return;
	dl_iterate_phdr(count_adds, &adds);
	if (guard_on && !force && adds == seen_adds)
		return;
	seen_adds = adds;
	guard_on = true;
	dl_iterate_phdr(scan_one, NULL);
	if (mem_fd >= 0)
		close(mem_fd);
	mem_fd = -1;
}

/**
 * sigguard_disarm - give every redirected slot its old value back (where it
 * still holds ours: an unloaded object's slot is no longer mapped, and
 * /proc/self/mem's write then simply fails). Control thread, when the
 * session ends.
 */
void sigguard_disarm(void)
{
	unsigned int i;

	for (i = 0; i < nr_slots; i++) {
		uint64_t cur = 0;
		struct guard_slot *g = &slots[i];

		if (mem_fd < 0)
			mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
		if (mem_fd < 0)
			break;
		/* read through the file too: the object may be gone */
		if (pread(mem_fd, &cur, sizeof(cur), (off_t)g->addr) != (ssize_t)sizeof(cur))
			continue;
		if (cur == g->ours)
			put_word(g->addr, g->orig);
	}
	nr_slots = 0;
	guard_on = false;
	seen_adds = 0;
	if (mem_fd >= 0)
		close(mem_fd);
	mem_fd = -1;
}
