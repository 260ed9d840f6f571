/* SPDX-License-Identifier: MIT */
/*
 * unwind.c - the stack unwinder (utrace/unwind.h): libdw's dwfl, which
 * unwinds by the call frame information (.eh_frame, .debug_frame) of each
 * module, as gdb and perf do, so frames of code built without frame
 * pointers (most of a distribution's libraries) are walked through. The
 * probes' stacks (UTRACE_ACT_STACK) and utrace -k. Tracer process, the
 * session's thread; it never prints.
 *
 * One Dwfl per traced process: its modules reported from /proc/PID/maps
 * (dwfl_linux_proc_report(); the files opened by dwfl_linux_proc_find_elf,
 * separate debug files, for names, by dwfl_standard_find_debuginfo), and
 * a process state of our own (dwfl_attach_state()): the one thread stopped
 * at the hit, its registers as the hit gave them, its memory read with
 * utrace_mem__read(). We trace the thread already, so nothing attaches:
 * dwfl_linux_proc_attach() would PTRACE_ATTACH it. The architecture comes
 * from a 64-byte x86-64 ELF header of ours, not from a module whose Elf
 * would go with the module at the next report (an exec).
 *
 * Stack reads go through a small cache of 4 KiB blocks, emptied at each
 * unwind (the thread is stopped while it lasts): a frame's CFI reads a
 * few words around its CFA, one process_vm_readv per block.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "utrace/unwind.h"

#ifdef HAVE_LIBDW

#include <elfutils/libdwfl.h>
#include <gelf.h>

#define BLOCK 4096
#define NR_BLOCKS 4
#define NAME_CACHE 512 /* a power of 2 */

struct utrace_unwind {
	Dwfl *dwfl;
	Elf *arch; /* the x86-64 header the process state's backend was opened with */
	unsigned char ehdr[sizeof(Elf64_Ehdr)];
	pid_t pid;
	bool from_proc; /* the modules come from /proc/PID/maps, not a snapshot */
	/* the unwind being made */
	pid_t tid;
	const struct user_regs_struct *regs;
	/* ... or from a copy (utrace_unwind__stack_copy()): @cregs NULL otherwise */
	const uint64_t *cregs;
	uint64_t csp;
	const uint8_t *cdata;
	size_t clen;
	utrace_unwind_fix_fn fix;
	void *fix_arg;
	uint64_t *pcs;
	bool *act;
	int n, max;
	/* stack blocks read during it */
	struct {
		uint64_t addr; /* BLOCK-aligned; 0: empty */
		unsigned char data[BLOCK];
	} blk[NR_BLOCKS];
	unsigned int next_blk;
	/*
	 * utrace_unwind__name()'s answers by pc, until the next report: libdw looks
	 * an address up by a linear search of the symbol table (some 10,000
	 * symbols in libc's debug file)
	 */
	struct name_slot {
		uint64_t pc; /* 0: empty */
		bool act;
		const char *name; /* NULL: none */
		uint64_t off;
	} names[NAME_CACHE];
};

static char *debuginfo_path;

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static pid_t cb_next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct utrace_unwind *u = dwfl_arg;

	if (*thread_argp)
		return 0; /* the hit thread only */
	*thread_argp = u;
	return u->tid;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	struct utrace_unwind *u = dwfl_arg;

	*thread_argp = u;
	return tid == u->tid;
}

static bool read_word(struct utrace_unwind *u, uint64_t addr, uint64_t *word)
{
	uint64_t base = addr & ~(uint64_t)(BLOCK - 1);
	unsigned int i;

	if (u->cregs) { /* a copy: its bytes or nothing (the process is not stopped) */
		if (addr < u->csp || u->clen < 8 || addr - u->csp > u->clen - 8)
			return false;
		memcpy(word, u->cdata + (addr - u->csp), 8);
		return true;
	}
	if (addr & 7) /* (never across two blocks) */
		return utrace_mem__read(u->pid, addr, word, 8) == 8;
	for (i = 0; i < NR_BLOCKS; i++)
		if (u->blk[i].addr == base && base)
			break;
	if (i == NR_BLOCKS) {
		i = u->next_blk++ % NR_BLOCKS;
		u->blk[i].addr = 0;
		if (!base || utrace_mem__read(u->pid, base, u->blk[i].data, BLOCK) != BLOCK)
			return utrace_mem__read(u->pid, addr, word, 8) == 8;
		u->blk[i].addr = base;
	}
	memcpy(word, u->blk[i].data + (addr - base), 8);
	return true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct utrace_unwind *u = dwfl_arg;
	uint64_t w;

	if (!read_word(u, addr, &w))
		return false;
	*result = u->fix ? u->fix(u->fix_arg, addr, w) : w;
	return true;
}

/* x86-64's DWARF register numbers: rax rdx rcx rbx rsi rdi rbp rsp r8-r15, rip (16) */
static bool set_regs(Dwfl_Thread *thread, const struct user_regs_struct *r)
{
	Dwarf_Word regs[17] = {
		r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp, r->r8,
		r->r9,	r->r10, r->r11, r->r12, r->r13, r->r14, r->r15, r->rip,
	};

	dwfl_thread_state_register_pc(thread, r->rip);
	return dwfl_thread_state_registers(thread, 0, 17, regs);
}

/* A copy's registers (enum utrace_rec_reg order); the others stay undefined */
static bool set_copy_registers(Dwfl_Thread *thread, const uint64_t *c)
{
	Dwarf_Word bx = c[3], bp_sp[2] = { c[2], c[1] }, hi[4] = { c[4], c[5], c[6], c[7] };

	dwfl_thread_state_register_pc(thread, c[0]);
	return dwfl_thread_state_registers(thread, 3, 1, &bx) &&
	       dwfl_thread_state_registers(thread, 6, 2, bp_sp) &&
	       dwfl_thread_state_registers(thread, 12, 4, hi);
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct utrace_unwind *u = thread_arg;

	return u->cregs ? set_copy_registers(thread, u->cregs) : set_regs(thread, u->regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

static int cb_frame(Dwfl_Frame *state, void *arg)
{
	struct utrace_unwind *u = arg;
	Dwarf_Addr pc;
	bool act;

	if (!dwfl_frame_pc(state, &pc, &act) || !pc)
		return DWARF_CB_ABORT;
	u->pcs[u->n] = pc;
	if (u->act)
		u->act[u->n] = act;
	return ++u->n < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/*
 * Can @pid's maps be read now? A process gone (a zombie: no mappings)
 * must not be reported: dwfl_report_end() would drop every module, and
 * the agent's stack copies of its last calls are unwound after its exit.
 */
static int maps_readable(pid_t pid)
{
	char path[64], c;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (read(fd, &c, 1) != 1)
		err = ESRCH;
	close(fd);
	return err;
}

static int report_proc(struct utrace_unwind *u)
{
	int err = maps_readable(u->pid);

	if (err)
		return -err; /* the modules stay those last reported */
	memset(u->names, 0, sizeof(u->names)); /* libdw's strings go with their modules */
	dwfl_report_begin(u->dwfl);
	err = dwfl_linux_proc_report(u->dwfl, u->pid); /* 0, an errno, or -1: libdw's */
	if (dwfl_report_end(u->dwfl, NULL, NULL) != 0 && !err)
		err = -1;
	return err > 0 ? -err : err ? -EIO : 0;
}

/*
 * The modules of @m, a snapshot of the maps (the symbol cache's): the
 * agent's records are read after the fact, and the maps they need may be
 * gone with the process by then (or between reading them and reporting
 * them). File mappings only (the vDSO is not a module here).
 */
static int report_maps(struct utrace_unwind *u, const struct utrace_maps *m)
{
	char *text = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&text, &len);
	int err = 0;

	if (!f)
		return -errno;
	for (i = 0; i < m->nr; i++) {
		const struct utrace_map *mp = &m->maps[i];

		if (!mp->path || mp->path[0] != '/' || mp->deleted)
			continue;
		fprintf(f,
			"%" PRIx64 "-%" PRIx64 " %c%c%cp %08" PRIx64 " %02x:%02x %" PRIu64 " %s\n",
			mp->start, mp->end, mp->prot & UTRACE_MAP_READ ? 'r' : '-',
			mp->prot & UTRACE_MAP_WRITE ? 'w' : '-',
			mp->prot & UTRACE_MAP_EXEC ? 'x' : '-', mp->offset, mp->dev_major,
			mp->dev_minor, mp->inode, mp->path);
	}
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	f = fmemopen(text, len, "r");
	if (!f) {
		err = -errno;
		free(text);
		return err;
	}
	memset(u->names, 0, sizeof(u->names)); /* libdw's strings go with their modules */
	dwfl_report_begin(u->dwfl);
	err = dwfl_linux_proc_maps_report(u->dwfl, f); /* 0, an errno, or -1: libdw's */
	if (dwfl_report_end(u->dwfl, NULL, NULL) != 0 && !err)
		err = -1;
	fclose(f);
	free(text);
	return err > 0 ? -err : err ? -EIO : 0;
}

int utrace_unwind__report(struct utrace_unwind *u, const struct utrace_maps *maps)
{
	if (!u)
		return -EINVAL;
	u->from_proc = !maps;
	return maps ? report_maps(u, maps) : report_proc(u);
}

struct utrace_unwind *utrace_unwind__new(pid_t pid, const struct utrace_maps *m, char *why,
					 size_t whylen)
{
	struct utrace_unwind *u = calloc(1, sizeof(*u));
	Elf64_Ehdr *eh;
	int err;

	if (!u) {
		snprintf(why, whylen, "%s", strerror(ENOMEM));
		errno = ENOMEM;
		return NULL;
	}
	u->pid = pid;
	elf_version(EV_CURRENT);
	eh = (Elf64_Ehdr *)u->ehdr;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	u->arch = elf_memory((char *)u->ehdr, sizeof(u->ehdr));
	u->dwfl = u->arch ? dwfl_begin(&proc_callbacks) : NULL;
	err = 0;
	if (!u->dwfl) {
		snprintf(why, whylen, "%s", u->arch ? dwfl_errmsg(-1) : elf_errmsg(-1));
		goto fail;
	}
	u->from_proc = !m;
	err = m ? report_maps(u, m) : report_proc(u);
	if (err) {
		snprintf(why, whylen, "the modules of pid %d: %s", (int)pid,
			 err != -EIO ? strerror(-err) : dwfl_errmsg(-1));
		goto fail;
	}
	if (!dwfl_attach_state(u->dwfl, u->arch, pid, &thread_callbacks, u)) {
		snprintf(why, whylen, "%s", dwfl_errmsg(-1));
		err = -EIO;
		goto fail;
	}
	return u;
fail:
	utrace_unwind__free(u);
	errno = err ? -err : EIO;
	return NULL;
}

void utrace_unwind__free(struct utrace_unwind *u)
{
	if (!u)
		return;
	if (u->dwfl)
		dwfl_end(u->dwfl);
	if (u->arch)
		elf_end(u->arch);
	free(u);
}

/*
 * The unwind set up in @u, for thread @tid. An unwinder on /proc/PID/maps
 * that meets a frame outside its modules (a library dlopen()ed since they
 * were read) reads them anew and unwinds once more; a snapshot's owner
 * gives the new maps itself (utrace_unwind__report()).
 */
static int frames(struct utrace_unwind *u, pid_t tid)
{
	int i;

	u->n = 0;
	/* -1 at the outermost frame (no caller) too: what was collected stands */
	dwfl_getthread_frames(u->dwfl, tid, cb_frame, u);
	if (!u->from_proc)
		return u->n;
	for (i = 0; i < u->n && dwfl_addrmodule(u->dwfl, u->pcs[i] - !(u->act && u->act[i])); i++)
		;
	if (i < u->n && report_proc(u) == 0) {
		u->n = 0;
		dwfl_getthread_frames(u->dwfl, tid, cb_frame, u);
	}
	return u->n;
}

int utrace_unwind__stack(struct utrace_unwind *u, pid_t tid, const struct user_regs_struct *regs,
			 utrace_unwind_fix_fn fix, void *fix_arg, uint64_t *pcs, bool *act, int max)
{
	unsigned int i;

	if (!u || max <= 0)
		return 0;
	u->tid = tid;
	u->regs = regs;
	u->fix = fix;
	u->fix_arg = fix_arg;
	u->pcs = pcs;
	u->act = act;
	u->max = max;
	for (i = 0; i < NR_BLOCKS; i++)
		u->blk[i].addr = 0;
	frames(u, tid);
	u->regs = NULL;
	return u->n;
}

int utrace_unwind__stack_copy(struct utrace_unwind *u, pid_t tid, const uint64_t *regs, uint64_t sp,
			      const uint8_t *data, size_t len, uint64_t *pcs, bool *act, int max)
{
	if (!u || max <= 0 || !regs)
		return 0;
	u->tid = tid;
	u->cregs = regs;
	u->csp = sp;
	u->cdata = data;
	u->clen = data ? len : 0;
	u->fix = NULL; /* the agent put hijacked return addresses back in the copy */
	u->pcs = pcs;
	u->act = act;
	u->max = max;
	frames(u, tid);
	u->cregs = NULL;
	u->cdata = NULL;
	return u->n;
}

bool utrace_unwind__has_module(struct utrace_unwind *u, uint64_t pc)
{
	return u && dwfl_addrmodule(u->dwfl, pc) != NULL;
}

const char *utrace_unwind__name(struct utrace_unwind *u, uint64_t pc, bool act, uint64_t *off)
{
	uint64_t at = act ? pc : pc - 1;
	struct name_slot *ns;
	Dwfl_Module *mod;
	GElf_Off o = 0;
	GElf_Sym sym;
	const char *name = NULL;

	if (!u || !pc)
		return NULL;
	ns = &u->names[((pc >> 2) ^ (pc >> 13)) & (NAME_CACHE - 1)];
	if (ns->pc != pc || ns->act != act) {
		mod = dwfl_addrmodule(u->dwfl, at);
		if (mod)
			name = dwfl_module_addrinfo(mod, at, &o, &sym, NULL, NULL, NULL);
		ns->pc = pc;
		ns->act = act;
		ns->name = name && *name ? name : NULL;
		ns->off = o + (pc - at);
	}
	*off = ns->off;
	return ns->name;
}

const char *utrace_unwind__module(struct utrace_unwind *u, uint64_t pc)
{
	Dwfl_Module *mod = u && pc ? dwfl_addrmodule(u->dwfl, pc) : NULL;
	const char *name =
		mod ? dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL) : NULL;
	const char *slash = name ? strrchr(name, '/') : NULL;

	return slash ? slash + 1 : name;
}

#else /* !HAVE_LIBDW */

struct utrace_unwind *utrace_unwind__new(pid_t pid, const struct utrace_maps *maps, char *why,
					 size_t whylen)
{
	snprintf(why, whylen, "libutrace was built without libdw");
	errno = EOPNOTSUPP;
	return NULL;
}

void utrace_unwind__free(struct utrace_unwind *u)
{
}

int utrace_unwind__report(struct utrace_unwind *u, const struct utrace_maps *maps)
{
	return -EOPNOTSUPP;
}

int utrace_unwind__stack(struct utrace_unwind *u, pid_t tid, const struct user_regs_struct *regs,
			 utrace_unwind_fix_fn fix, void *fix_arg, uint64_t *pcs, bool *act, int max)
{
	return 0;
}

int utrace_unwind__stack_copy(struct utrace_unwind *u, pid_t tid, const uint64_t *regs, uint64_t sp,
			      const uint8_t *data, size_t len, uint64_t *pcs, bool *act, int max)
{
	return 0;
}

bool utrace_unwind__has_module(struct utrace_unwind *u, uint64_t pc)
{
	return false;
}

const char *utrace_unwind__name(struct utrace_unwind *u, uint64_t pc, bool act, uint64_t *off)
{
	return NULL;
}

const char *utrace_unwind__module(struct utrace_unwind *u, uint64_t pc)
{
	return NULL;
}

#endif /* HAVE_LIBDW */
