/* SPDX-License-Identifier: MIT */
/*
 * inject.c - load a shared object into a running process. Runs in the
 * tracer process, in the session's tracing thread.
 *
 * THE PTRACE INJECTION SEQUENCE, STEP BY STEP
 *
 * Background and the survey of Frida, kubo/injector, Orbit, libpulp and
 * CRIU: docs/prior-art.md §1. What we do, in order, and why:
 *
 *  0. Check the object before touching the target. The path must be
 *     absolute and name a regular file that nobody but us or root could
 *     replace: neither the file nor any directory above it may be writable
 *     by group or others, except a sticky directory owned by us or root
 *     (/tmp), and each must belong to us or root. Whoever can swap the
 *     file gets code execution in the target with the target's
 *     privileges. dlopen() resolves the path in the *target's* mount
 *     namespace, so /proc/PID/root/PATH must be the same inode as PATH.
 *  1. Resolve dlopen, dlsym, dlerror and dlclose in the target: glibc >=
 *     2.34 exports them from libc.so.6 (libdl.so.2 is an empty stub), older
 *     ones from libdl.so.2 when it is loaded. utrace_image__open_pid() reads
 *     the maps and the ELF symbol tables; runtime address = st_value +
 *     load bias. No dlopen (static binary, musl, libc not mapped yet: a
 *     process stopped at exec) is a clean -ENOENT. If r_debug.r_state
 *     (found via DT_DEBUG) says a dlopen or dlclose is half done, wait for
 *     it to finish. All of this before attaching: the target runs freely.
 *  2. If the process is not in the session already, seize only the thread
 *     chosen in 3 (utrace_session__attach_thread(), attach_and_choose()),
 *     a candidate at a time. The others are never seized: every stop, a
 *     ptrace stop included, makes an epoll_wait, epoll_pwait,
 *     sigtimedwait, semop, semtimedop or io_getevents of the stopped
 *     thread fail with EINTR (signal(7)), and seizing a thread means
 *     stopping it at attach and at detach (PTRACE_DETACH wants a stop).
 *  3. Choose the thread that will make the calls. dlopen takes the loader
 *     lock and calls malloc; a thread stopped while holding either would
 *     deadlock against itself (kubo/injector#5). So, from /proc without
 *     stopping anything, prefer in order: a thread blocked in a syscall
 *     that malloc and the loader do not make (read, poll, nanosleep ...);
 *     a running thread whose rip is in neither libc nor ld.so; a thread
 *     blocked in futex (waiting for a lock: it may hold another); anything
 *     else, a thread in one of the calls a stop makes fail last. The
 *     chosen thread is stopped (PTRACE_INTERRUPT) and checked: a rip
 *     inside ld.so is never used, nor a thread stopped while running libc
 *     code or in a memory syscall from libc (inside malloc, it may hold
 *     the arena lock). The looks repeat for ~1 s (choose_round()) before
 *     the injection is refused. Only that thread stops; the others keep
 *     running, so a lock held by one of them is released as usual.
 *  4. Remote mmap of a scratch page (remote syscall, remote.c), read and
 *     execute only, written through /proc/PID/mem: the kill-safe return
 *     stub of the remote calls (arch/x86_64/call-stub.S) and the strings
 *     we pass. Every later syscall runs as a call of the stub's sys().
 *  5. The arena: remote memfd_create("utrace-arena", MFD_CLOEXEC |
 *     MFD_ALLOW_SEALING), fchmod 0600, ftruncate, then F_SEAL_SHRINK |
 *     F_SEAL_GROW | F_SEAL_SEAL so the target cannot make the tracer's
 *     mapping SIGBUS. The tracer takes the same file with pidfd_getfd()
 *     (Linux >= 5.6) or by opening /proc/PID/fd/N, and maps it MAP_SHARED.
 *     No name exists in any filesystem (CRIU's memfd exchange).
 *  6. dlopen(path, RTLD_NOW) as a remote function call
 *     (utrace_thread__remote_call(): registers, xstate and mask saved,
 *     signals blocked, orig_rax = -1, stack below the red zone, return to
 *     the stub, timeout). NULL: remote dlerror(), its text read from the
 *     target, reported as "dlopen failed: <text>".
 *  7. dlsym(handle, init_symbol); NULL: dlerror() again, dlclose(handle).
 *  8. init(arena_fd, flags, arg), after the caller's prepare_arena() has
 *     filled the arena. A negative int: dlclose(handle), the arena fd
 *     closed in the target. On success the object owns that fd (the
 *     agent maps the arena and closes it: a successful injection leaves
 *     no fd of ours in the target, except a copy's, "COPIES" below).
 *  9. munmap the scratch page; resume the thread: its registers come back
 *     and the syscall it was blocked in restarts (remote.c's essay).
 * 10. Detach if we attached: while traced, every signal the target gets
 *     would become a stop that wakes the tracer, the very cost the agent
 *     design removes (design.md, prior-art.md §8).
 *
 * Every failure after step 2 unwinds what was done in the target, in
 * reverse (dlclose, close the arena fd, munmap), and leaves the thread as
 * it was; the one error message has the shape "pid N: cannot inject
 * 'PATH': WHAT".
 *
 * Except a remote call that times out (a dlopen whose constructor blocks,
 * a slow init): it cannot be unwound, since the callee holds what it took
 * (dlopen: the loader lock) until it returns. So it is left to finish on
 * its own (remote-call.c, call_abandon()): the thread is resumed mid-call
 * and detached with the rest, runs the callee to its end and returns
 * through the stub, which restores its mask, xstate and registers and
 * restarts its syscall, as if we had died. Nothing more is done in the
 * target: the scratch page stays mapped (the stub and the strings the
 * callee may still read are there), the arena's fd stays open in it, a
 * loaded object stays loaded. -ETIMEDOUT, "the remote call of X did not
 * return in N s; left to finish on its own, the process was not stopped".
 * If a dlopen of the agent finishes later, its constructor does nothing
 * in a process not launched by utrace (agent.c, agent_ctor()): no init,
 * no arena, nothing armed, like a dormant agent. An init of the agent
 * that finishes later maps the arena and watches the host's pid like any
 * init; the host arms nothing in it, and it goes dormant when the host
 * exits (utrace does, after the failure).
 *
 * The tracer may die at any moment (SIGKILL, OOM): "Never harm the
 * target" must hold then too. The kernel detaches a dying tracer's
 * tracees as they are, so a thread in the middle of a remote syscall or
 * call would run on with our registers. Each one therefore carries its
 * own way back, which runs only if we are gone (arch/x86_64/call.c, "KILL-
 * SAFE RETURNS"): the scratch mmap and munmap return through an
 * rt_sigreturn frame via libc's "syscall; ret" and __restore_rt; the
 * calls (and the syscalls between) return to the stub, which restores the
 * mask, the xstate and the registers and restarts the interrupted syscall.
 * There is no window left in which a kill crashes the target, as long as
 * libc has both gadgets (glibc does; without them remote.c falls back to
 * its plain way, and only the scratch mmap and munmap are exposed). The
 * remaining effects of a kill mid-injection: the scratch page stays mapped
 * (4 KiB), a signal the tracer had taken aside to re-send is lost, and a
 * thread killed out of a restart_block sleep (nanosleep, poll) during the
 * scratch mmap/munmap sees EINTR (choose_thread() avoids such threads).
 * The price: calls run under PTRACE_SYSCALL to catch the stub's marker,
 * so every syscall of dlopen and init stops twice: 1.6 -> 3.4 ms per
 * injection (bench/inject.sh read, median of 21 on the 2-core dev VM).
 * tests/e2e/test-agent-kill.c kills utrace 120 times at random moments.
 *
 * Not done: objects that are not visible in the target's mount namespace
 * (Frida sends them as a memfd and dlopens /proc/PID/fd/N), glibc < 2.34
 * without libdl loaded (__libc_dlopen_mode), musl, and libpulp's "thread
 * is inside malloc" detection (it needs an interposer preloaded).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "utrace/inject.h"
#include "utrace/proc.h"
#include "utrace/spec.h"
#include "arch.h"
#include "internal.h"

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define R_DEBUG_STATE 24 /* offsetof(struct r_debug, r_state) on LP64 */
#define RTLD_NOW_VALUE 2 /* <dlfcn.h> RTLD_NOW, the same in every glibc */
#define SCRATCH_SIZE 4096
#define ARENA_NAME "utrace-arena"

/* One injection in progress. */
struct inject_ctx {
	struct utrace_session *s;
	pid_t pid;
	const char *path;
	const struct utrace_inject_opts *opts;
	struct utrace_call_opts call_opts;
	struct utrace_thread *th;
	bool th_was_stopped;
	uint64_t fn_dlopen, fn_dlsym, fn_dlerror, fn_dlclose;
	uint64_t scratch;
	char *errbuf;
	size_t errlen;
	int copy_scan; /* next target fd to look at for a copy (next_copy()) */
	bool copy_made;
	/*
	 * A remote call timed out and was left to finish on its own
	 * (remote-call.c, call_abandon()): the thread is mid-call, its way
	 * back is the stub in the scratch page. No more remote work in the
	 * target, and the page stays mapped.
	 */
	bool abandoned;
};

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000L;
}

/* Format the failure once: into the caller's buffer and the log. */
__attribute__((format(printf, 3, 4))) static int fail(struct inject_ctx *c, int err,
						      const char *fmt, ...)
{
	char what[512], line[PATH_MAX + 600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "pid %d: cannot inject '%s': %s", c->pid, c->path, what);
	pr_warn("%s\n", line);
	if (c->errbuf && c->errlen)
		snprintf(c->errbuf, c->errlen, "%s", line);
	return err;
}

static const char *errstr(int err, char *buf, size_t size)
{
	utrace_strerror(err, buf, size);
	return buf;
}

/* ------------------------------------------------------------------------ */
/* Step 0: is the object safe to load?                                       */
/* ------------------------------------------------------------------------ */

/*
 * Check one path component. @is_dir: a directory (sticky + owner rule) or
 * the object itself. Fills @why and returns -UTRACE_ERRNO__UNSAFE_PATH.
 */
static int check_component(const char *p, const struct stat *st, bool is_dir, char *why,
			   size_t size)
{
	uid_t me = geteuid();

	if (st->st_uid != me && st->st_uid != 0) {
		snprintf(why, size, "'%s' belongs to uid %u, neither us nor root", p,
			 (unsigned int)st->st_uid);
		return -UTRACE_ERRNO__UNSAFE_PATH;
	}
	if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	if (is_dir && (st->st_mode & S_ISVTX))
		return 0; /* like /tmp: others cannot rename or delete our entries */
	snprintf(why, size, "'%s' is writable by %s (mode %04o)%s", p,
		 (st->st_mode & S_IWOTH) ? "others" : "its group",
		 (unsigned int)(st->st_mode & 07777), is_dir ? " and not sticky" : "");
	return -UTRACE_ERRNO__UNSAFE_PATH;
}

/**
 * inject_check_path - may @path be loaded into another process?
 * @path: the object, as given
 * @real: receives its canonical path (PATH_MAX bytes)
 * @why: on failure, the reason, e.g. "'/x' is writable by others (mode 0777)"
 * @size: size of @why
 *
 * Tracer process. Return: 0 if safe; -UTRACE_ERRNO__UNSAFE_PATH with @why
 * set; -ENOENT, -EACCES ... if it cannot be examined; -EINVAL if @path is
 * not absolute or not a regular file.
 */
int inject_check_path(const char *path, char *real, char *why, size_t size)
{
	struct stat st;
	char *slash;
	int r;

	if (path[0] != '/') {
		snprintf(why, size, "not an absolute path");
		return -EINVAL;
	}
	if (!realpath(path, real)) {
		r = -errno;
		snprintf(why, size, "%s", strerror(errno));
		return r;
	}
	if (stat(real, &st) < 0) {
		r = -errno;
		snprintf(why, size, "%s: %s", real, strerror(errno));
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, size, "'%s' is not a regular file", real);
		return -EINVAL;
	}
	r = check_component(real, &st, false, why, size);
	if (r < 0)
		return r;
	/* Every directory up to the root. */
	slash = strrchr(real, '/');
	while (slash) {
		char c = slash[1];
		const char *dir = real;

		slash[slash == real ? 1 : 0] = 0; /* "/a/b/x.so" -> "/a/b", ... "/" */
		if (stat(dir, &st) < 0) {
			r = -errno;
			snprintf(why, size, "%s: %s", dir, strerror(errno));
		} else {
			r = check_component(dir, &st, true, why, size);
		}
		/* Put the path back together. */
		if (slash == real) {
			slash[1] = c;
			slash = NULL;
		} else {
			*slash = '/';
			slash = memrchr(real, '/', (size_t)(slash - real));
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int utrace_inject__check_path(const char *path, char *why, size_t whylen)
{
	char real[PATH_MAX], buf[8];

	if (!why || !whylen) {
		why = buf;
		whylen = sizeof(buf);
	}
	why[0] = 0;
	return path ? inject_check_path(path, real, why, whylen) : -EINVAL;
}

/* The same file in the target's mount namespace? */
static int check_same_file(pid_t pid, const char *real, char *why, size_t size)
{
	char other[PATH_MAX + 64];
	struct stat a, b;

	snprintf(other, sizeof(other), "/proc/%d/root/", pid);
	if (stat(other, &b) < 0) {
		int r = errno == ENOENT ? -ESRCH : -errno;

		snprintf(why, size, "%s", strerror(-r));
		return r;
	}
	snprintf(other, sizeof(other), "/proc/%d/root%s", pid, real);
	if (stat(real, &a) < 0)
		return -errno;
	if (stat(other, &b) < 0) {
		int r = -errno;

		snprintf(why, size, "not visible in the target's mount namespace (%s: %s)", other,
			 strerror(errno));
		return r;
	}
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		snprintf(why, size, "the target's mount namespace has another file at that path");
		return -EXDEV;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Step 2: symbols                                                           */
/* ------------------------------------------------------------------------ */

/*
 * Find dlopen, dlsym, dlerror and dlclose of @object in @img with one
 * lookup ("OBJECT:dl*"): functions, not PLT stubs nor IFUNCs. glibc gives
 * the default and the compat version (dlopen@@GLIBC_2.34, dlopen@GLIBC_2.2.5)
 * the same address. Return: 0 when all four were found; -ENOENT.
 */
static int resolve_dl_in(struct inject_ctx *c, struct utrace_image *img, const char *object)
{
	static const char *const names[] = { "dlopen", "dlsym", "dlerror", "dlclose" };
	uint64_t *dst[] = { &c->fn_dlopen, &c->fn_dlsym, &c->fn_dlerror, &c->fn_dlclose };
	uint64_t found[4] = { 0 };
	struct utrace_spec spec;
	struct utrace_match *m = NULL;
	char text[64];
	size_t nr = 0, i, k;
	int r;

	snprintf(text, sizeof(text), "%s:dl*", object);
	r = utrace_spec__parse(text, &spec, NULL, 0);
	if (r < 0)
		return r;
	r = utrace_image__resolve(img, &spec, &m, &nr, NULL);
	utrace_spec__clear(&spec);
	if (r < 0)
		return r;
	for (i = 0; i < nr; i++) {
		const struct utrace_object *o = utrace_image__object(img, m[i].object);

		if ((m[i].sym_flags & (UTRACE_SYM_PLT | UTRACE_SYM_IFUNC)) || !o || !o->live ||
		    !m[i].symbol)
			continue;
		for (k = 0; k < ARRAY_SIZE(names); k++)
			if (!found[k] && !strcmp(m[i].symbol, names[k]))
				found[k] = m[i].addr;
	}
	free(m);
	for (k = 0; k < ARRAY_SIZE(names); k++)
		if (!found[k])
			return -ENOENT;
	for (k = 0; k < ARRAY_SIZE(names); k++)
		*dst[k] = found[k];
	return 0;
}

static int resolve_dl(struct inject_ctx *c)
{
	static const char *const objects[] = { "libc", "libdl" };
	struct utrace_image *img = utrace_image__open_pid(c->pid);
	char eb[128];
	size_t i;
	int r = -ENOENT;

	if (!img)
		return fail(c, -errno, "cannot read its memory map: %s",
			    errstr(-errno, eb, sizeof(eb)));
	for (i = 0; i < ARRAY_SIZE(objects) && r < 0; i++) {
		r = resolve_dl_in(c, img, objects[i]);
		if (r == 0)
			pr_debug("pid %d: dlopen at 0x%lx (%s)\n", c->pid,
				 (unsigned long)c->fn_dlopen, objects[i]);
	}
	utrace_image__close(img);
	if (r < 0)
		return fail(c, -ENOENT,
			    "no dlopen in the target (statically linked, not glibc, or libc not "
			    "loaded yet)");
	return 0;
}

/*
 * Address of the target's struct r_debug (_r_debug of ld.so), from the
 * DT_DEBUG entry ld.so fills in the main program's dynamic section: found
 * through AT_PHDR/AT_PHNUM of /proc/PID/auxv and PT_DYNAMIC. Target memory
 * only, no symbol table needed. Return: 0; -ENOENT (static, or no
 * DT_DEBUG); negative errno.
 */
static int find_r_debug(pid_t pid, uint64_t *ret)
{
	uint64_t auxv[2 * 64], phdr = 0, phnum = 0, base = 0, dyn = 0, i;
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, auxv, sizeof(auxv));
	close(fd);
	if (n <= 0)
		return -EIO;
	for (i = 0; i + 1 < (uint64_t)n / 8; i += 2) {
		if (auxv[i] == AT_PHDR)
			phdr = auxv[i + 1];
		else if (auxv[i] == AT_PHNUM)
			phnum = auxv[i + 1];
	}
	if (!phdr || !phnum || phnum > 256)
		return -ENOENT;
	/* The load bias: AT_PHDR minus PT_PHDR's vaddr. */
	for (i = 0; i < phnum; i++) {
		Elf64_Phdr ph;

		if (utrace_mem__read(pid, phdr + i * sizeof(ph), &ph, sizeof(ph)) != sizeof(ph))
			return -EFAULT;
		if (ph.p_type == PT_PHDR)
			base = phdr - ph.p_vaddr;
		else if (ph.p_type == PT_DYNAMIC)
			dyn = ph.p_vaddr;
	}
	if (!dyn)
		return -ENOENT;
	for (i = 0; i < 512; i++) {
		Elf64_Dyn d;

		if (utrace_mem__read(pid, base + dyn + i * sizeof(d), &d, sizeof(d)) != sizeof(d))
			return -EFAULT;
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_DEBUG) {
			if (!d.d_un.d_ptr)
				return -ENOENT;
			*ret = d.d_un.d_ptr;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Wait (up to ~1 s, the target running) until no dlopen/dlclose is half
 * done: r_debug.r_state == RT_CONSISTENT. A thread inside the loader holds
 * its lock; calling dlopen in that very thread would re-enter it, which is
 * what produces "Inconsistency detected by ld.so: ... r_state ==
 * RT_CONSISTENT" (kubo/injector#5). Without DT_DEBUG, nothing to check.
 * Return: 0; -EAGAIN if the loader stayed busy.
 */
static int wait_loader_idle(struct inject_ctx *c)
{
	uint64_t r_debug = 0;
	int32_t state = 0;
	int i;

	if (find_r_debug(c->pid, &r_debug) < 0)
		return 0;
	pr_debug("pid %d: r_debug at 0x%lx\n", c->pid, (unsigned long)r_debug);
	for (i = 0; i < 100; i++) {
		if (utrace_mem__read(c->pid, r_debug + R_DEBUG_STATE, &state, sizeof(state)) !=
		    sizeof(state))
			return 0;
		if (state == 0 /* RT_CONSISTENT */)
			return 0;
		usleep(10000);
	}
	return fail(c, -EAGAIN, "its dynamic loader stays busy (r_debug.r_state %d)", state);
}

/* ------------------------------------------------------------------------ */
/* Step 3: choose a thread                                                   */
/* ------------------------------------------------------------------------ */

/* Syscalls a thread inside malloc or the loader may be blocked in. */
static bool syscall_maybe_in_libc_internals(long nr)
{
	return nr == SYS_futex || nr == SYS_mmap || nr == SYS_munmap || nr == SYS_mprotect ||
	       nr == SYS_mremap || nr == SYS_madvise || nr == SYS_brk;
}

/*
 * Sleeps that the kernel restarts through the thread's restart_block
 * (-ERESTART_RESTARTBLOCK): nanosleep, clock_nanosleep, poll, and
 * restart_syscall itself (such a sleep interrupted once). If we died during
 * the scratch page's mmap or munmap, the thread's way back (remote.c,
 * an rt_sigreturn frame) would lose that block and the sleep would fail
 * with EINTR; other threads come first.
 */
static bool syscall_uses_restart_block(long nr)
{
	return nr == SYS_nanosleep || nr == SYS_clock_nanosleep || nr == SYS_poll ||
	       nr == SYS_restart_syscall;
}

/*
 * Calls that fail with EINTR after any stop of their thread, a ptrace stop
 * included, instead of being restarted (signal(7), "Interruption of system
 * calls and library functions by stop signals"): a thread in one is used
 * only if no other can be (socket calls with SO_RCVTIMEO/SO_SNDTIMEO do it
 * too, which /proc does not tell).
 */
static bool syscall_eintr_after_stop(long nr)
{
	return nr == SYS_epoll_wait || nr == SYS_epoll_pwait ||
#ifdef SYS_epoll_pwait2
	       nr == SYS_epoll_pwait2 ||
#endif
	       nr == SYS_rt_sigtimedwait || nr == SYS_semop || nr == SYS_semtimedop ||
	       nr == SYS_io_getevents || nr == SYS_io_pgetevents;
}

/*
 * Rank of a thread from /proc alone: 0 blocked in a harmless syscall,
 * 1 running, 2 blocked in futex or a memory syscall, 3 anything else
 * (a call that a stop makes fail included);
 * a sleep restarted through the restart_block ranks after the others of
 * its group (0 -> 0.5, shown as 1 with running threads first).
 */
static int thread_rank(pid_t pid, pid_t tid)
{
	char path[96], buf[256], *p;
	FILE *f;
	char state = '?';
	long nr = -2;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f)) {
			p = strrchr(buf, ')');
			if (p && p[1] && p[2])
				state = p[2];
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			nr = strncmp(buf, "running", 7) ? strtol(buf, NULL, 10) : -2;
		fclose(f);
	}
	if (state == 'S' && nr >= 0) {
		if (syscall_eintr_after_stop(nr))
			return 3;
		if (syscall_maybe_in_libc_internals(nr))
			return 2;
		return syscall_uses_restart_block(nr) ? 1 : 0;
	}
	if (state == 'R')
		return 1;
	return 3;
}

/* Where is @rip: 2 ld.so, 1 libc, 0 elsewhere. */
static int rip_place(const struct utrace_maps *maps, uint64_t rip)
{
	const struct utrace_map *m = maps ? utrace_maps__find(maps, rip) : NULL;
	const char *base;

	if (!m || !m->path)
		return 0;
	base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	if (!strncmp(base, "ld-linux", 8) || !strncmp(base, "ld-", 3))
		return 2;
	if (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5))
		return 1;
	return 0;
}

static void release_thread(struct inject_ctx *c)
{
	/* An abandoned call must run to its end, even in a thread that was stopped. */
	if (c->th && (!c->th_was_stopped || c->abandoned))
		utrace_thread__resume(c->th);
	c->th = NULL;
}

/*
 * Stop @th and see whether it is usable at @pass (0: strict, 1: anything
 * outside ld.so). Return: 1 usable (stopped); 0 not (left as it was);
 * negative errno.
 */
static int try_thread(struct inject_ctx *c, struct utrace_thread *th, int rank, int pass,
		      const struct utrace_maps *maps)
{
	struct user_regs_struct regs;
	int r, place;

	c->th = th;
	c->th_was_stopped = utrace_thread__is_stopped(th);
	if (!c->th_was_stopped) {
		r = utrace_thread__quiesce(th, true);
		if (r < 0) {
			c->th = NULL;
			return r == -ESRCH ? 0 : r;
		}
	}
	r = utrace_thread__get_regs(th, &regs);
	if (r < 0) {
		release_thread(c);
		return r == -ESRCH ? 0 : r;
	}
	place = rip_place(maps, regs.rip);
	/*
	 * In a syscall (orig_rax >= 0) rip is at the libc wrapper: fine if
	 * rank 0, and in pass 1 for a futex wait too. Never a thread stopped
	 * while running libc code, nor in a memory syscall made from libc: it
	 * may be inside malloc, holding the arena lock that dlopen's malloc
	 * then waits on for ever (xz -T2 hung in tcache_init and in
	 * _dl_new_object's calloc under the remote dlopen, kubo/injector#5).
	 */
	if (place == 2 ||
	    (place == 1 && ((long long)regs.orig_rax < 0 ||
			    ((long)regs.orig_rax != SYS_futex &&
			     syscall_maybe_in_libc_internals((long)regs.orig_rax)))) ||
	    (pass == 0 && place == 1 && rank != 0)) {
		pr_debug("pid %d: thread %d not used: rip 0x%llx is in %s\n", c->pid,
			 utrace_thread__tid(th), regs.rip, place == 2 ? "ld.so" : "libc");
		release_thread(c);
		return 0;
	}
	return 1;
}

/*
 * The looks of choose_thread() and attach_and_choose(), ~2 ms apart with
 * the threads running in between (a busy thread is seldom in libc two
 * looks in a row): CHOOSE_ROUNDS of pass 0 (no rip in libc unless blocked
 * in a harmless syscall), then pass 1 (a futex wait in libc too) until
 * CHOOSE_ROUNDS_ALL, ~1 s; then the injection is refused rather than risk
 * a deadlock. A rank-3 thread (in a call a stop makes fail: its
 * epoll_wait, semop, sigtimedwait would return EINTR) is stopped in one
 * round only, the last: only when, for ~1 s, no thread was ever running
 * outside libc nor blocked in a harmless call (an event loop whose every
 * thread waits in epoll_wait). It was the first round of pass 1, ~50 ms in,
 * and a loaded machine took it: one EINTR seen in test-trace-agent's
 * attach rounds, with a busy thread there all along. Return: false when no
 * round is left.
 */
#define CHOOSE_ROUNDS 25
#define CHOOSE_ROUNDS_ALL 500
#define NO_THREAD_WHY "each was inside the dynamic loader, or busy or allocating inside libc"

static bool choose_round(int round, int *pass, int *max_rank)
{
	if (round >= CHOOSE_ROUNDS_ALL)
		return false;
	if (round) {
		struct timespec ts = { 0, 2 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	*pass = round < CHOOSE_ROUNDS ? 0 : 1;
	*max_rank = round == CHOOSE_ROUNDS_ALL - 1 ? 3 : 2;
	return true;
}

static int choose_thread(struct inject_ctx *c)
{
	struct utrace_thread **ths = NULL;
	struct utrace_maps *maps = NULL;
	int *rank = NULL, n, i, pass, round, max_rank, want, r = 0;
	size_t cap = 64;

	if (c->opts && c->opts->tid) {
		struct utrace_thread *th = utrace_session__find_thread(c->s, c->opts->tid);

		if (!th || utrace_thread__pid(th) != c->pid)
			return fail(c, -ESRCH, "thread %d is not a traced thread of it",
				    c->opts->tid);
		c->th = th;
		c->th_was_stopped = utrace_thread__is_stopped(th);
		if (!c->th_was_stopped) {
			r = utrace_thread__quiesce(th, true);
			if (r < 0) {
				c->th = NULL;
				return fail(c, r, "thread %d cannot be stopped", c->opts->tid);
			}
		}
		return 0;
	}
	for (;;) {
		ths = calloc(cap, sizeof(*ths));
		if (!ths)
			return -ENOMEM;
		n = utrace_session__threads(c->s, c->pid, ths, cap);
		if (n < 0 || (size_t)n <= cap)
			break;
		cap = (size_t)n + 16;
		free(ths);
	}
	if (n <= 0) {
		free(ths);
		return fail(c, n < 0 ? n : -ESRCH, "no traced thread");
	}
	rank = calloc((size_t)n, sizeof(*rank));
	maps = utrace_maps__read(c->pid);
	if (!rank || !maps) {
		r = -ENOMEM;
		goto out;
	}
	r = -EAGAIN;
	for (round = 0; r == -EAGAIN && choose_round(round, &pass, &max_rank); round++) {
		for (i = 0; i < n; i++)
			rank[i] = thread_rank(c->pid, utrace_thread__tid(ths[i]));
		for (want = 0; want <= max_rank && r == -EAGAIN; want++) {
			for (i = 0; i < n && r == -EAGAIN; i++) {
				int t;

				if (rank[i] != want)
					continue;
				t = try_thread(c, ths[i], rank[i], pass, maps);
				if (t < 0)
					r = t;
				else if (t > 0)
					r = 0;
			}
		}
	}
	if (r == 0)
		pr_debug("pid %d: using thread %d\n", c->pid, utrace_thread__tid(c->th));
out:
	utrace_maps__free(maps);
	free(rank);
	free(ths);
	if (r == -EAGAIN)
		return fail(c, r, "no thread can be used safely now (%s)", NO_THREAD_WHY);
	if (r < 0)
		return fail(c, r, "cannot choose a thread: %s", strerror(-r));
	return 0;
}

/*
 * choose_thread() for a process that is not traced yet: rank the threads
 * from /proc, then seize and try them one at a time, best first; a thread
 * that cannot be used is detached before the next is seized. The others
 * are never seized, so they never stop: a stop would make their
 * epoll_wait(), sigtimedwait(), semop() or io_getevents() fail with EINTR.
 */
static int attach_and_choose(struct inject_ctx *c)
{
	struct utrace_maps *maps = NULL;
	pid_t *tids = NULL;
	size_t n = 0, i;
	int *rank = NULL, pass, round, max_rank, want, r;

	if (c->opts && c->opts->tid) {
		r = utrace_session__attach_thread(c->s, c->pid, c->opts->tid);
		if (r < 0)
			return fail(c, r, "cannot attach thread %d: %s", c->opts->tid,
				    strerror(-r));
		return choose_thread(c);
	}
	r = utrace_proc__threads(c->pid, &tids, &n);
	if (r < 0 || !n) {
		free(tids);
		return fail(c, r < 0 ? r : -ESRCH, "no thread");
	}
	rank = calloc(n, sizeof(*rank));
	maps = utrace_maps__read(c->pid);
	if (!rank || !maps) {
		r = -ENOMEM;
		goto out;
	}
	r = -EAGAIN;
	for (round = 0; r == -EAGAIN && choose_round(round, &pass, &max_rank); round++) {
		for (i = 0; i < n; i++)
			rank[i] = thread_rank(c->pid, tids[i]);
		for (want = 0; want <= max_rank && r == -EAGAIN; want++) {
			for (i = 0; i < n && r == -EAGAIN; i++) {
				struct utrace_thread *th;
				int t;

				if (rank[i] != want)
					continue;
				t = utrace_session__attach_thread(c->s, c->pid, tids[i]);
				if (t == -ESRCH)
					continue; /* gone */
				if (t < 0) {
					char eb[128];

					r = fail(c, t, "cannot attach: %s",
						 errstr(t, eb, sizeof(eb)));
					goto out;
				}
				th = utrace_session__find_thread(c->s, tids[i]);
				t = th ? try_thread(c, th, rank[i], pass, maps) : 0;
				if (t < 0)
					r = t;
				else if (t > 0)
					r = 0;
				else
					utrace_session__detach_pid(c->s, c->pid);
			}
		}
	}
	if (r == 0)
		pr_debug("pid %d: using thread %d (the only one seized)\n", c->pid,
			 utrace_thread__tid(c->th));
	if (r == -EAGAIN)
		r = fail(c, r, "no thread can be used safely now (%s)", NO_THREAD_WHY);
	else if (r < 0 && !(c->errbuf && c->errbuf[0]))
		r = fail(c, r, "cannot choose a thread: %s", strerror(-r));
out:
	utrace_maps__free(maps);
	free(rank);
	free(tids);
	return r;
}

/* ------------------------------------------------------------------------ */
/* Remote helpers                                                            */
/* ------------------------------------------------------------------------ */

/*
 * A remote syscall. Once the stub page is there, as a remote call of its
 * sys() (arch/x86_64/call-stub.S), whose way back if we die leaves the
 * thread's restart_block intact; before it (the scratch mmap) and for the
 * munmap of the page itself, through remote.c, whose way back is an
 * rt_sigreturn frame (which resets the restart_block: a thread interrupted
 * in nanosleep would see EINTR if we died right then; choose_thread()
 * prefers other threads for that reason).
 */
static int rsys(struct inject_ctx *c, long nr, uint64_t a0, uint64_t a1, uint64_t a2, long *ret)
{
	uint64_t args[6] = { (uint64_t)nr, a0, a1, a2, 0, 0 }, sargs[6] = { a0, a1, a2, 0, 0, 0 };
	uint64_t v = 0;
	long t0 = now_us();
	int r;

	if (c->abandoned)
		return -ECANCELED;
	if (c->th->proc->call_stub && !(nr == SYS_munmap && a0 == c->scratch)) {
		r = utrace_thread__remote_call(c->th, c->th->proc->call_stub + ARCH_STUB_SYS, args,
					       &c->call_opts, &v);
		if (r == 0)
			*ret = (long)v;
		c->abandoned = r == -ETIMEDOUT;
	} else {
		r = utrace_thread__remote_syscall(c->th, nr, sargs, ret);
	}

	pr_debug("pid %d: remote syscall %ld: %d, %ld us\n", c->pid, nr, r, now_us() - t0);
	return r;
}

static int rcall(struct inject_ctx *c, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2,
		 uint64_t *ret)
{
	uint64_t args[6] = { a0, a1, a2, 0, 0, 0 };
	bool stub = c->th->proc->call_stub != 0;
	long t0 = now_us();
	int r;

	if (c->abandoned)
		return -ECANCELED;
	r = utrace_thread__remote_call(c->th, fn, args, &c->call_opts, ret);
	/* With the stub, a timeout leaves the call running (remote-call.c). */
	c->abandoned = stub && r == -ETIMEDOUT;
	pr_debug("pid %d: remote call of 0x%lx: %d, %ld us\n", c->pid, (unsigned long)fn, r,
		 now_us() - t0);
	return r;
}

/* Report a failed remote call of @what (dlopen, dlsym, the init). */
static int call_fail(struct inject_ctx *c, const char *what, int r)
{
	char eb[128];

	if (c->abandoned)
		return fail(c, -ETIMEDOUT,
			    "the remote call of %s did not return in %.1f s; left to finish on its "
			    "own, the process was not stopped",
			    what, c->call_opts.timeout_ms / 1000.0);
	return fail(c, r, "remote call of %s: %s", what, errstr(r, eb, sizeof(eb)));
}

/* The text of the target's dlerror(), or a placeholder. */
static void remote_dlerror(struct inject_ctx *c, char *buf, size_t size)
{
	uint64_t p = 0;

	snprintf(buf, size, "(no dlerror message)");
	if (rcall(c, c->fn_dlerror, 0, 0, 0, &p) < 0 || !p)
		return;
	if (utrace_mem__read_str(c->pid, p, buf, size) < 0)
		snprintf(buf, size, "(dlerror message unreadable at 0x%lx)", (unsigned long)p);
}

/* Write @str into the scratch page at @off; returns its target address. */
static uint64_t scratch_put(struct inject_ctx *c, size_t *off, const char *str)
{
	size_t len = strlen(str) + 1;
	uint64_t addr = c->scratch + *off;

	if (*off + len > SCRATCH_SIZE)
		return 0;
	if (utrace_mem__write(c->pid, addr, str, len) != (ssize_t)len)
		return 0;
	*off += (len + 15) & ~(size_t)15;
	return addr;
}

/* The tracer's own fd for the target's fd @tfd. */
static int grab_fd(pid_t pid, int tfd)
{
	char path[64];
	int pfd, fd;

	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0) {
		fd = (int)syscall(SYS_pidfd_getfd, pfd, tfd, 0);
		close(pfd);
		if (fd >= 0)
			return fd;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, tfd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* ------------------------------------------------------------------------ */
/* The sequence                                                              */
/* ------------------------------------------------------------------------ */

/*
 * Steps 6 to 8 for the object at @path_addr (a string in the scratch
 * page): dlopen, dlsym, init. On failure everything is undone (dlclose)
 * and the failure reported, except an init that returned -EALREADY: the
 * caller may try a copy (returned as is, nothing reported).
 * Return: 0 with *@handle and *@iret set; negative errno.
 */
static int load_one(struct inject_ctx *c, uint64_t path_addr, uint64_t sym_addr, long tfd,
		    uint64_t *handle, int *iret)
{
	const struct utrace_inject_opts *o = c->opts;
	uint64_t init = 0, ret = 0;
	char eb[128], msg[512];
	int r;

	*iret = 0;
	/* 6. dlopen. */
	r = rcall(c, c->fn_dlopen, path_addr, RTLD_NOW_VALUE, 0, handle);
	if (r < 0)
		return call_fail(c, "dlopen", r);
	if (!*handle) {
		remote_dlerror(c, msg, sizeof(msg));
		return fail(c, -UTRACE_ERRNO__INJECT, "dlopen failed: %s", msg);
	}
	if (!sym_addr)
		return 0;
	/* 7, 8. dlsym and init. */
	r = rcall(c, c->fn_dlsym, *handle, sym_addr, 0, &init);
	if (r < 0) {
		r = call_fail(c, "dlsym", r);
		goto out_dlclose;
	}
	if (!init) {
		remote_dlerror(c, msg, sizeof(msg));
		r = fail(c, -UTRACE_ERRNO__INJECT, "dlsym failed: %s", msg);
		goto out_dlclose;
	}
	r = rcall(c, init, (uint64_t)(int64_t)tfd, o->init_flags, o->init_arg, &ret);
	if (r < 0) {
		r = call_fail(c, o->init_symbol, r);
		goto out_dlclose;
	}
	/* An int: only eax is defined (mov $-1, %eax zero-extends). */
	*iret = (int)(uint32_t)ret;
	if (*iret == -EALREADY && o->allow_copies) {
		r = -EALREADY;
		goto out_dlclose;
	}
	if (*iret < 0) {
		r = fail(c, -UTRACE_ERRNO__INJECT, "%s() failed: %s", o->init_symbol,
			 errstr(*iret, eb, sizeof(eb)));
		goto out_dlclose;
	}
	return 0;

out_dlclose:
	if (c->abandoned) {
		/*
		 * The object stays: a dlclose() now would run in the middle of
		 * the call still running (dlsym, init) and race with it.
		 */
		*handle = 0;
		return r;
	}
	if (rcall(c, c->fn_dlclose, *handle, 0, 0, &ret) < 0)
		pr_warn("pid %d: dlclose of '%s' failed; the object stays loaded\n", c->pid,
			c->path);
	*handle = 0;
	return r;
}

/*
 * COPIES. An object whose init refuses a second caller while the first
 * is still served (the agent: one arena per instance) can be loaded
 * again as another instance: glibc identifies an object by its inode, so
 * a memfd holding the same bytes is a new object, with its own data and
 * TLS (the agent's initial-exec TLS, 16 bytes, comes out of the static
 * TLS surplus: a few hundred bytes, so a few dozen copies at most; dlopen
 * then fails with its own message). The copy is made in the target
 * (memfd_create "utrace-copy:BASENAME", filled by the tracer from the file
 * it has checked, step 0), dlopened as /proc/PID/fd/N and its fd kept open
 * (close-on-exec), so that a later injection finds it and reuses it once
 * its instance is free again, instead of loading yet another copy.
 * Each call returns the next candidate's path in the scratch page: first
 * the existing copies (fds of the target named so), then one new copy.
 * Return: its address, or 0 (none left, or the copy could not be made:
 * reported).
 */
static uint64_t next_copy(struct inject_ctx *c, const char *real, size_t *off)
{
	const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
	char name[128], want[200], path[64], link[256], eb[128];
	uint64_t name_addr;
	long tfd = -1, sret = 0;
	int fd, src, r;

	snprintf(name, sizeof(name), "utrace-copy:%.100s", base);
	snprintf(want, sizeof(want), "/memfd:%s (deleted)", name);
	while (c->copy_scan >= 0 && c->copy_scan < 1024) {
		int n = c->copy_scan++;
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", c->pid, n);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		if (strcmp(link, want))
			continue;
		return scratch_put(c, off, path);
	}
	if (c->copy_made)
		return 0;
	c->copy_made = true;
	name_addr = scratch_put(c, off, name);
	if (!name_addr)
		return 0;
	r = rsys(c, SYS_memfd_create, name_addr, MFD_CLOEXEC, 0, &tfd);
	if (r == 0 && tfd < 0)
		r = (int)tfd;
	if (r < 0) {
		fail(c, r, "cannot make a copy: remote memfd_create: %s",
		     errstr(r, eb, sizeof(eb)));
		return 0;
	}
	fd = grab_fd(c->pid, (int)tfd);
	src = open(real, O_RDONLY | O_CLOEXEC);
	r = fd < 0 ? fd : src < 0 ? -errno : 0;
	while (r == 0) {
		char buf[65536];
		ssize_t n = read(src, buf, sizeof(buf));

		if (n < 0)
			r = -errno;
		if (n <= 0)
			break;
		if (write(fd, buf, (size_t)n) != n)
			r = -EIO;
	}
	if (fd >= 0)
		close(fd);
	if (src >= 0)
		close(src);
	if (r < 0) {
		rsys(c, SYS_close, (uint64_t)tfd, 0, 0, &sret);
		fail(c, r, "cannot make a copy: %s", errstr(r, eb, sizeof(eb)));
		return 0;
	}
	pr_debug("pid %d: copy of '%s' as fd %ld\n", c->pid, real, tfd);
	snprintf(path, sizeof(path), "/proc/%d/fd/%ld", c->pid, tfd);
	return scratch_put(c, off, path);
}

static int inject_in_thread(struct inject_ctx *c, const char *real, struct utrace_injection *out)
{
	const struct utrace_inject_opts *o = c->opts;
	size_t arena_size = o ? o->arena_size : 0, off = 0;
	uint64_t path_addr, sym_addr = 0, name_addr = 0, handle = 0;
	int iret = 0;
	long sret = 0, tfd = -1;
	int fd = -1, r;
	void *arena = NULL;
	char eb[128];

	arena_size = (arena_size + 4095) & ~(size_t)4095;

	/* 4. Scratch page. */
	{
		uint64_t args[6] = { 0,
				     SCRATCH_SIZE,
				     PROT_READ | PROT_EXEC,
				     MAP_PRIVATE | MAP_ANONYMOUS,
				     (uint64_t)-1,
				     0 };

		r = utrace_thread__remote_syscall(c->th, SYS_mmap, args, &sret);
	}
	if (r < 0)
		return fail(c, r, "remote mmap: %s", errstr(r, eb, sizeof(eb)));
	if (sret < 0 && sret > -4096)
		return fail(c, (int)sret, "remote mmap failed: %s", strerror((int)-sret));
	c->scratch = (uint64_t)sret;
	/*
	 * The remote calls' kill-safe return stub (arch/x86_64/call.c) at the
	 * start of the page, the strings after it. The target only reads and
	 * runs the page: it stays read-only, written through /proc/PID/mem.
	 */
	if (utrace_mem__write(c->pid, c->scratch, arch_call_stub_start, ARCH_STUB_LEN) ==
	    (ssize_t)ARCH_STUB_LEN)
		c->th->proc->call_stub = c->scratch;
	off = (ARCH_STUB_LEN + 63) & ~(size_t)63;
	path_addr = scratch_put(c, &off, real);
	if (arena_size)
		name_addr = scratch_put(c, &off, ARENA_NAME);
	if (o && o->init_symbol)
		sym_addr = scratch_put(c, &off, o->init_symbol);
	if (!path_addr || (arena_size && !name_addr) || (o && o->init_symbol && !sym_addr)) {
		r = fail(c, -ENAMETOOLONG, "path or symbol name too long for the scratch page");
		goto out_scratch;
	}

	/* 5. Arena. */
	if (arena_size) {
		r = rsys(c, SYS_memfd_create, name_addr, MFD_CLOEXEC | MFD_ALLOW_SEALING, 0, &tfd);
		if (r == 0 && tfd < 0)
			r = (int)tfd;
		if (r < 0) {
			tfd = -1;
			r = fail(c, r, "remote memfd_create: %s", errstr(r, eb, sizeof(eb)));
			goto out_scratch;
		}
		r = rsys(c, SYS_fchmod, (uint64_t)tfd, 0600, 0, &sret);
		if (r == 0 && sret == 0)
			r = rsys(c, SYS_ftruncate, (uint64_t)tfd, arena_size, 0, &sret);
		if (r == 0 && sret == 0)
			r = rsys(c, SYS_fcntl, (uint64_t)tfd, F_ADD_SEALS,
				 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, &sret);
		if (r == 0 && sret < 0)
			r = (int)sret;
		if (r < 0) {
			r = fail(c, r, "setting up the arena in the target: %s",
				 errstr(r, eb, sizeof(eb)));
			goto out_fd;
		}
		fd = grab_fd(c->pid, (int)tfd);
		if (fd < 0) {
			r = fail(c, fd, "cannot open the target's arena fd %ld: %s", tfd,
				 strerror(-fd));
			goto out_fd;
		}
		arena = mmap(NULL, arena_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (arena == MAP_FAILED) {
			arena = NULL;
			r = fail(c, -errno, "cannot map the arena: %s", strerror(errno));
			goto out_fd;
		}
	}

	if (arena && o->prepare_arena) {
		r = o->prepare_arena(arena, arena_size, o->prepare_ctx);
		if (r < 0) {
			r = fail(c, r, "preparing the arena: %s", errstr(r, eb, sizeof(eb)));
			goto out_fd;
		}
	}

	/*
	 * 6-8. The object; with allow_copies, while its init says -EALREADY
	 * (this instance is busy with another session), a private copy.
	 */
	r = load_one(c, path_addr, sym_addr, tfd, &handle, &iret);
	while (r == -EALREADY && o && o->allow_copies) {
		uint64_t copy_addr = next_copy(c, real, &off);

		if (!copy_addr) {
			r = -EALREADY;
			break;
		}
		r = load_one(c, copy_addr, sym_addr, tfd, &handle, &iret);
	}
	if (r == -EALREADY)
		r = fail(c, -EALREADY, "%s() failed: %s", o->init_symbol,
			 errstr(-EALREADY, eb, sizeof(eb)));
	if (r < 0)
		goto out_fd;

	/* 9. Done in the target. */
	c->th->proc->call_stub = 0;
	rsys(c, SYS_munmap, c->scratch, SCRATCH_SIZE, 0, &sret);
	c->scratch = 0;
	out->pid = c->pid;
	out->tid = utrace_thread__tid(c->th);
	out->handle = handle;
	out->init_ret = iret;
	out->arena = arena;
	out->arena_size = arena ? arena_size : 0;
	out->arena_fd = fd;
	out->target_arena_fd = (int)tfd;
	return 0;

out_fd:
	if (arena)
		munmap(arena, arena_size);
	if (fd >= 0)
		close(fd);
	if (tfd >= 0)
		rsys(c, SYS_close, (uint64_t)tfd, 0, 0, &sret);
out_scratch:
	c->th->proc->call_stub = 0;
	/* After a timeout the page stays: the abandoned call returns through it. */
	if (c->scratch && !c->abandoned)
		rsys(c, SYS_munmap, c->scratch, SCRATCH_SIZE, 0, &sret);
	c->scratch = 0;
	return r;
}

int utrace_session__inject(struct utrace_session *s, pid_t pid, const char *path,
			   const struct utrace_inject_opts *opts, struct utrace_injection *ret)
{
	struct inject_ctx c = { .s = s, .pid = pid, .path = path, .opts = opts };
	struct utrace_injection out = { .arena_fd = -1, .target_arena_fd = -1 };
	char real[PATH_MAX], why[PATH_MAX + 128];
	bool attached = false;
	long t[4];
	int r;

	if (!s || pid <= 0 || !path || !ret)
		return -EINVAL;
	if (opts && opts->sz < offsetof(struct utrace_inject_opts, errlen) + sizeof(size_t))
		return -EINVAL;
	if (opts) {
		c.errbuf = opts->errbuf;
		c.errlen = opts->errlen;
		if (c.errbuf && c.errlen)
			c.errbuf[0] = 0;
	}
	c.call_opts.sz = sizeof(c.call_opts);
	c.call_opts.timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : 5000;

	/* 0. The object. */
	r = inject_check_path(path, real, why, sizeof(why));
	if (r == -UTRACE_ERRNO__UNSAFE_PATH && opts && opts->allow_unsafe_path)
		r = 0;
	if (r == -UTRACE_ERRNO__UNSAFE_PATH)
		return fail(&c, r, "refusing an object others could replace: %s", why);
	if (r < 0)
		return fail(&c, r, "%s", why);
	r = check_same_file(pid, real, why, sizeof(why));
	if (r < 0)
		return fail(&c, r, "%s", why);

	/* 1. Symbols and the loader's state, before we hold anything. */
	t[0] = now_us();
	r = resolve_dl(&c);
	if (r == 0)
		r = wait_loader_idle(&c);
	t[1] = now_us();
	if (r < 0)
		return r;
	/* 2, 3. Seize (only the thread chosen, if we attach) and choose. */
	if (utrace_session__threads(s, pid, NULL, 0) < 0) {
		attached = true;
		r = attach_and_choose(&c);
	} else {
		r = choose_thread(&c);
	}
	t[2] = now_us();
	/* 4-9. Threads it clones meanwhile are the injected code's (struct utrace_thread). */
	if (r == 0) {
		s->injecting_tid = c.th ? c.th->tid : 0;
		r = inject_in_thread(&c, real, &out);
		s->injecting_tid = 0;
	}
	t[3] = now_us();
	release_thread(&c);
	/* 10. */
	if (attached)
		utrace_session__detach_pid(s, pid);
	if (r < 0)
		return r;
	*ret = out;
	pr_debug("pid %d: injected '%s' (handle 0x%lx, thread %d); us: symbols %ld, thread %ld, "
		 "calls %ld\n",
		 pid, real, (unsigned long)out.handle, out.tid, t[1] - t[0], t[2] - t[1],
		 t[3] - t[2]);
	return 0;
}

int utrace_inject(pid_t pid, const char *path, const struct utrace_inject_opts *opts,
		  struct utrace_injection *ret)
{
	struct utrace_session *s = utrace_session__new(NULL);
	int r;

	if (!s)
		return -errno;
	r = utrace_session__inject(s, pid, path, opts, ret);
	utrace_session__close(s);
	return r;
}

void utrace_injection__clear(struct utrace_injection *inj)
{
	if (!inj)
		return;
	/* The fd exists only with the mapping: a zeroed struct closes nothing. */
	if (inj->arena) {
		munmap(inj->arena, inj->arena_size);
		if (inj->arena_fd >= 0)
			close(inj->arena_fd);
	}
	inj->arena = NULL;
	inj->arena_size = 0;
	inj->arena_fd = -1;
}
