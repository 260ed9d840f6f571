/* SPDX-License-Identifier: MIT */
/*
 * interpose.c - keep SIGTRAP deliverable and ours (launch/preload mode).
 *
 * An int3 probe works only if the thread that hits it can take SIGTRAP
 * with our handler. The kernel forces SIGTRAP on a thread that blocks it by
 * resetting the handler to SIG_DFL: the process dumps core. Worker threads
 * that block every signal (sigfillset + pthread_sigmask) are common, and
 * applications install their own SIGTRAP handlers. So, when the agent is
 * preloaded, it interposes:
 *  - sigprocmask / pthread_sigmask: SIGTRAP is taken out of any set being
 *    blocked (SIG_BLOCK, SIG_SETMASK). Nothing else changes;
 *  - sigaction / signal for SIGTRAP once our handler is installed: the
 *    application's new action is recorded as the one we chain to, and its
 *    previous action is what it gets back. Our handler stays in place.
 *  - pthread_attr_setsigmask_np: the same for a new thread's mask.
 * When the agent is injected with dlopen these symbols are already bound:
 * sigguard.c then points the program's GOT slots of the three mask calls
 * here for the session. patch.c still checks each thread's blocked mask
 * (SigBlk in /proc/self/task/TID/status) before writing an int3, and a
 * probe refuses to arm (-EDEADLK) rather than kill the target.
 *
 * It also interposes _Unwind_RaiseException, _Unwind_ForcedUnwind and
 * pthread_exit (C++ throw, thread exit): hijacked return addresses are written back
 * before the unwinder walks the stack (retprobe.c).
 *
 * And dlopen / dlclose: when one returns, the thread tells the host and
 * waits (bounded) until the SPECs pending on the new object are armed, or
 * the probes of an unloaded one forgotten (agent_image_changed()). Injected,
 * the agent cannot see these calls: the host polls the target's maps then.
 *
 * And the exec family (execve, execv, execvp, execvpe, execl, execlp,
 * execle, fexecve): launch mode takes its variables out of the environment
 * (agent.c strip_env()), so an execve() of the traced process itself gets
 * them back from agent_exec_env(), and its new image is traced again.
 * glibc's own callers of __execve (system(), posix_spawn()) make children,
 * which run untraced.
 *
 * Runs in any application thread; async-signal-safe as the originals are
 * (dlopen and dlclose are not, and neither are ours; execve is, and ours
 * is too: no malloc, the new environment is built on the stack).
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent-internal.h"

extern char **environ;

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);

typedef void (*pthread_exit_fn)(void *) __attribute__((noreturn));
typedef int (*unwind_raise_fn)(void *);
typedef int (*unwind_forced_fn)(void *, void *, void *);

static sigaction_fn real_sigaction_p;
static unwind_raise_fn real_raise_p;
static unwind_forced_fn real_forced_p;
static pthread_exit_fn real_pthread_exit_p;
static sigmask_fn real_sigprocmask_p, real_pthread_sigmask_p;
typedef int (*attr_sigmask_fn)(pthread_attr_t *, const sigset_t *);
static attr_sigmask_fn real_attr_setsigmask_p;
typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);
static dlopen_fn real_dlopen_p;
static signal_fn real_signal_p;
typedef int (*cancel_fn)(pthread_t);
static cancel_fn real_cancel_p;
static dlclose_fn real_dlclose_p;
/* resolved at the constructor: a vfork child must not take the loader's lock */
static void *real_execve_p, *real_execvpe_p, *real_fexecve_p;

/** interpose_init - resolve the real functions (constructor, before any probe). */
void interpose_init(void)
{
	if (!real_sigaction_p)
		real_sigaction_p = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	if (!real_sigprocmask_p)
		real_sigprocmask_p = (sigmask_fn)dlsym(RTLD_NEXT, "sigprocmask");
	if (!real_pthread_sigmask_p)
		real_pthread_sigmask_p = (sigmask_fn)dlsym(RTLD_NEXT, "pthread_sigmask");
	if (!real_attr_setsigmask_p)
		real_attr_setsigmask_p =
			(attr_sigmask_fn)dlsym(RTLD_NEXT, "pthread_attr_setsigmask_np");
	if (!real_raise_p)
		real_raise_p = (unwind_raise_fn)dlsym(RTLD_NEXT, "_Unwind_RaiseException");
	if (!real_forced_p)
		real_forced_p = (unwind_forced_fn)dlsym(RTLD_NEXT, "_Unwind_ForcedUnwind");
	if (!real_pthread_exit_p)
		real_pthread_exit_p = (pthread_exit_fn)dlsym(RTLD_NEXT, "pthread_exit");
	if (!real_dlopen_p)
		real_dlopen_p = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
	if (!real_dlclose_p)
		real_dlclose_p = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
	if (!real_signal_p)
		real_signal_p = (signal_fn)dlsym(RTLD_NEXT, "signal");
	if (!real_cancel_p)
		real_cancel_p = (cancel_fn)dlsym(RTLD_NEXT, "pthread_cancel");
	if (!real_execve_p)
		real_execve_p = dlsym(RTLD_NEXT, "execve");
	if (!real_execvpe_p)
		real_execvpe_p = dlsym(RTLD_NEXT, "execvpe");
	if (!real_fexecve_p)
		real_fexecve_p = dlsym(RTLD_NEXT, "fexecve");
}

/*
 * glibc's dlopen() looks at its return address to find the calling object,
 * whose DT_RUNPATH / DT_RPATH and $ORIGIN direct the search. Called from
 * our interposer it would see the agent instead. So dlopen below is a stub
 * that asks dlopen_needs_caller() first: when the caller's object has a
 * search path of its own (a bare name) or the name uses $ORIGIN, it jumps
 * to the real dlopen with the caller's return address in place (exact
 * semantics, no notification: the host's maps poll finds the object, as
 * in attach mode); otherwise dlopen_notify() calls it and tells the host.
 */
/* strchr() of our own: libc's may be probed, and this call is not the program's. */
static bool has_char(const char *s, char c)
{
	for (; *s; s++)
		if (*s == c)
			return true;
	return false;
}

__attribute__((used)) static int dlopen_needs_caller(const char *file, void *ret)
{
	struct link_map *lm = NULL;
	const ElfW(Dyn) * d;
	Dl_info info;
	int found, g;

	if (!real_dlopen_p)
		interpose_init();
	if (!file)
		return 1; /* the main program's handle: nothing is loaded */
	if (has_char(file, '$'))
		return 1;
	if (has_char(file, '/'))
		return 0;
	/* dladdr1() is libc's, maybe probed: the agent's call, not the program's. */
	g = guard_hold();
	found = dladdr1(ret, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm;
	guard_unhold(g);
	if (!found)
		return 1;
	for (d = lm->l_ld; d && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_RPATH || d->d_tag == DT_RUNPATH)
			return 1;
	return 0;
}

__attribute__((used)) static void *dlopen_notify(const char *file, int mode)
{
	void *h = real_dlopen_p ? real_dlopen_p(file, mode) : NULL;

	if (h)
		agent_image_changed();
	return h;
}

/* dlopen(file, mode): the stub (rdi, rsi kept across the check). */
__asm__(".text\n"
	".globl dlopen\n"
	".type dlopen, @function\n"
	"dlopen:\n"
	"\t.cfi_startproc\n" /* unwind info: debuggers walk through the stub */
	"\tpush %rdi\n"
	"\t.cfi_adjust_cfa_offset 8\n"
	"\tpush %rsi\n"
	"\t.cfi_adjust_cfa_offset 8\n"
	"\tsub $8, %rsp\n" /* 16-byte alignment for the call */
	"\t.cfi_adjust_cfa_offset 8\n"
	"\tmov 24(%rsp), %rsi\n" /* the caller's return address */
	"\tcall dlopen_needs_caller\n"
	"\tadd $8, %rsp\n"
	"\t.cfi_adjust_cfa_offset -8\n"
	"\tpop %rsi\n"
	"\t.cfi_adjust_cfa_offset -8\n"
	"\tpop %rdi\n"
	"\t.cfi_adjust_cfa_offset -8\n"
	"\ttest %eax, %eax\n"
	"\tjz dlopen_notify\n"
	"\tmov real_dlopen_p(%rip), %rax\n"
	"\ttest %rax, %rax\n"
	"\tjz 1f\n"
	"\tjmp *%rax\n"
	"1:\txor %eax, %eax\n"
	"\tret\n"
	"\t.cfi_endproc\n"
	".size dlopen, .-dlopen\n");

AGENT_API int dlclose(void *handle)
{
	int r;

	if (!real_dlclose_p)
		interpose_init();
	if (!real_dlclose_p)
		return -1;
	r = real_dlclose_p(handle);
	if (!r)
		agent_image_changed();
	return r;
}

/*
 * glibc's pthread_exit (and cancellation) reach _Unwind_ForcedUnwind through
 * a pointer it dlsym()s from libgcc_s itself, past our interposer: put the
 * return addresses back on the way in. (A cancellation acted upon inside
 * libc cannot be caught here: the host's guard probe on libgcc_s's
 * _Unwind_ForcedUnwind catches it, which pthread_cancel() below makes
 * possible.)
 */
AGENT_API __attribute__((noreturn)) void pthread_exit(void *ret)
{
	if (!real_pthread_exit_p)
		interpose_init();
	retprobe_unwind_begin();
	if (real_pthread_exit_p)
		real_pthread_exit_p(ret);
	for (;;) /* no libc pthread_exit: cannot happen in a glibc process */
		syscall(SYS_exit, 0);
}

/*
 * pthread_cancel(): the cancelled thread unwinds through glibc's own
 * pointer to libgcc_s's _Unwind_ForcedUnwind (past our interposer below),
 * and glibc loads libgcc_s only then, too late for the host to guard it.
 * Loaded here first, under the guard (its calls are the agent's), and the
 * host told as for a dlopen(): it arms the guard probe (lib/backend-agent.c
 * guard_unwinders()) before the cancellation is sent. Program thread.
 */
AGENT_API int pthread_cancel(pthread_t th)
{
	static volatile int loaded;

	if (!real_cancel_p)
		interpose_init();
	if (!loaded && real_dlopen_p) {
		int g = guard_hold();
		void *h = real_dlopen_p("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);

		if (!h)
			h = real_dlopen_p("libgcc_s.so.1", RTLD_NOW);
		guard_unhold(g);
		loaded = 1;
		if (h)
			agent_image_changed(); /* a new object maybe: the host's turn */
	}
	return real_cancel_p ? real_cancel_p(th) : ESRCH;
}

#define URC_FATAL_PHASE1_ERROR 3

AGENT_API int _Unwind_RaiseException(void *exc)
{
	if (!real_raise_p)
		interpose_init();
	if (!real_raise_p)
		return URC_FATAL_PHASE1_ERROR;
	retprobe_unwind_begin();
	return real_raise_p(exc);
}

AGENT_API int _Unwind_ForcedUnwind(void *exc, void *stop, void *arg)
{
	if (!real_forced_p)
		interpose_init();
	if (!real_forced_p)
		return URC_FATAL_PHASE1_ERROR;
	retprobe_unwind_begin();
	return real_forced_p(exc, stop, arg);
}

/** agent_sigaction - the real sigaction(), for the agent's own use. */
int agent_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!real_sigaction_p)
		interpose_init();
	if (!real_sigaction_p) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigaction_p(sig, act, old);
}

/*
 * @set without SIGTRAP. The bit by hand, not sigismember()/sigdelset():
 * those are libc's, may be probed, and would count calls the program never
 * made (5 in an xz -T2 run, 56 in python3 -c pass).
 */
static const sigset_t *without_trap(int how, const sigset_t *set, sigset_t *tmp)
{
	const unsigned int bit = SIGTRAP - 1, w = bit / (8 * sizeof(unsigned long));
	const unsigned long m = 1ul << (bit % (8 * sizeof(unsigned long)));

	if (!set || how == SIG_UNBLOCK || !(((const unsigned long *)set)[w] & m))
		return set;
	*tmp = *set;
	((unsigned long *)tmp)[w] &= ~m;
	return tmp;
}

/*
 * The three below are also what an injected agent points the program's GOT
 * slots to (sigguard.c): hidden names, so that the addresses are ours.
 */
int agent_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t tmp;

	if (!real_sigprocmask_p)
		interpose_init();
	if (!real_sigprocmask_p) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigprocmask_p(how, without_trap(how, set, &tmp), old);
}

int agent_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t tmp;

	if (!real_pthread_sigmask_p)
		interpose_init();
	if (!real_pthread_sigmask_p)
		return ENOSYS;
	return real_pthread_sigmask_p(how, without_trap(how, set, &tmp), old);
}

/* A new thread's mask from its attributes (glibc >= 2.32): without SIGTRAP too. */
int agent_pthread_attr_setsigmask_np(pthread_attr_t *attr, const sigset_t *set)
{
	sigset_t tmp;

	if (!real_attr_setsigmask_p)
		interpose_init();
	if (!real_attr_setsigmask_p)
		return ENOSYS;
	return real_attr_setsigmask_p(attr, without_trap(SIG_SETMASK, set, &tmp));
}

AGENT_API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return agent_sigprocmask(how, set, old);
}

AGENT_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return agent_pthread_sigmask(how, set, old);
}

AGENT_API int pthread_attr_setsigmask_np(pthread_attr_t *attr, const sigset_t *set)
{
	return agent_pthread_attr_setsigmask_np(attr, set);
}

AGENT_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig == SIGTRAP && patch_trap_owned()) {
		struct sigaction prev = patch_trap_chained(), cur;

		/*
		 * The program's call reaches libc's sigaction() as it would
		 * untraced, as a query that changes nothing: a probe there
		 * counts it (python3 asks for every signal's action at start).
		 */
		agent_sigaction(sig, NULL, &cur);

		if (act)
			patch_trap_set_chained(act);
		if (old)
			*old = prev;
		return 0;
	}
	return agent_sigaction(sig, act, old);
}

/*
 * signal(): libc's own for every signal but an owned SIGTRAP, so that the
 * program's calls are what a probe sees untraced (libc's signal() and the
 * sigaction() it calls; not our sigaction() and a sigemptyset()).
 */
AGENT_API sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction sa, old;

	if (!real_signal_p)
		interpose_init();
	if ((sig != SIGTRAP || !patch_trap_owned()) && real_signal_p)
		return real_signal_p(sig, handler);
	utrace_memset(&sa, 0, sizeof(sa)); /* an empty sa_mask */
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART; /* BSD semantics, as glibc's signal() */
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* ------------------------------------------------------------------------ */
/* The exec family: the traced process's new image is traced again          */
/* ------------------------------------------------------------------------ */

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

#define EXEC_ENV_MAX 2048 /* environment entries we can extend; more: passed as they are */
#define EXEC_ARGS_MAX 1024 /* execl*() arguments (on the caller's stack) */

/*
 * Call @real (libc's execve or execvpe with @path, or fexecve with @fd)
 * with the environment extended by agent_exec_env(); errno as it left it.
 */
static int exec_with(void *real, const char *path, int fd, char *const argv[], char *const envp[])
{
	char *out[EXEC_ENV_MAX], buf[4200];
	char *const *env;
	int r;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	env = agent_exec_env(envp, out, EXEC_ENV_MAX, buf, sizeof(buf));
	if (fd >= 0)
		r = ((fexecve_fn)real)(fd, argv, env);
	else
		r = ((execve_fn)real)(path, argv, env);
	agent_exec_failed(); /* leaves errno alone */
	return r;
}

AGENT_API int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_with(real_execve_p, path, -1, argv, envp);
}

AGENT_API int execv(const char *path, char *const argv[])
{
	return exec_with(real_execve_p, path, -1, argv, environ);
}

AGENT_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_with(real_execvpe_p, file, -1, argv, envp);
}

AGENT_API int execvp(const char *file, char *const argv[])
{
	return exec_with(real_execvpe_p, file, -1, argv, environ);
}

AGENT_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	return exec_with(real_fexecve_p, NULL, fd, argv, envp);
}

/*
 * execl*(): the variadic arguments after @arg into an array, then (execle,
 * @with_env) the envp after their NULL; @real called with them.
 */
static int exec_list(void *real, const char *path, const char *arg, va_list ap, bool with_env)
{
	char *argv[EXEC_ARGS_MAX], *const *envp = environ;
	int n;

	argv[0] = (char *)arg;
	for (n = 1; argv[n - 1] && n < EXEC_ARGS_MAX; n++)
		argv[n] = va_arg(ap, char *);
	if (argv[n - 1]) {
		errno = E2BIG;
		return -1;
	}
	if (with_env)
		envp = va_arg(ap, char *const *);
	return exec_with(real, path, -1, argv, envp);
}

AGENT_API int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(real_execve_p, path, arg, ap, false);
	va_end(ap);
	return r;
}

AGENT_API int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(real_execvpe_p, file, arg, ap, false);
	va_end(ap);
	return r;
}

AGENT_API int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(real_execve_p, path, arg, ap, true);
	va_end(ap);
	return r;
}
