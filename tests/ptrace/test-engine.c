/* SPDX-License-Identifier: MIT */
/*
 * test-engine.c - the engine layer against real processes: attach and
 * detach, launch and exit status, syscall events (PTRACE_SYSCALL and
 * seccomp), signals, group-stop, exec from a non-leader thread, fork and
 * vfork with and without -F, zombies, threads that exit while being
 * stopped. Targets are tests/targets/s-*, which check themselves.
 */
#include <linux/filter.h>
#include <pthread.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include "utrace/utrace.h"
#include "ptrace-util.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A recording engine shared by the tests. */
struct rec {
	int entries, exits, seccomps, signals, clones, forks, execs, exits_thread, stops, quiesces;
	int steps, attaches;
	long first_nr, last_entry_nr, exit_after_exec_nr;
	int entry_nr_mismatch;
	long open_nr;
	int sigs[65];
	pid_t fork_child;
	bool fork_vfork, fork_followed;
	pid_t exec_tid, exec_former, exec_pid;
	int break_on_stop;
	int break_on_exec;
	pid_t pids_seen[16];
	int nr_pids;
};

static void rec_pid(struct rec *r, pid_t pid)
{
	int i;

	for (i = 0; i < r->nr_pids; i++)
		if (r->pids_seen[i] == pid)
			return;
	if (r->nr_pids < 16)
		r->pids_seen[r->nr_pids++] = pid;
}

static int on_entry(struct utrace_engine *e, struct utrace_thread *th, struct utrace_syscall *sc)
{
	struct rec *r = utrace_engine__ctx(e);

	if (!r->entries)
		r->first_nr = sc->nr;
	r->entries++;
	r->last_entry_nr = sc->nr;
	r->open_nr = sc->nr;
	rec_pid(r, utrace_thread__pid(th));
	return UTRACE_RESUME;
}

static int on_exit_sc(struct utrace_engine *e, struct utrace_thread *th, struct utrace_syscall *sc)
{
	struct rec *r = utrace_engine__ctx(e);

	r->exits++;
	if (sc->nr != r->open_nr && sc->nr != SYS_execve)
		r->entry_nr_mismatch++;
	if (r->execs && !r->exit_after_exec_nr)
		r->exit_after_exec_nr = sc->nr;
	return UTRACE_RESUME;
}

static int on_seccomp(struct utrace_engine *e, struct utrace_thread *th, struct utrace_syscall *sc)
{
	struct rec *r = utrace_engine__ctx(e);

	r->seccomps++;
	return UTRACE_RESUME;
}

static int on_signal(struct utrace_engine *e, struct utrace_thread *th, siginfo_t *info)
{
	struct rec *r = utrace_engine__ctx(e);

	r->signals++;
	if (info->si_signo > 0 && info->si_signo <= 64)
		r->sigs[info->si_signo]++;
	return UTRACE_RESUME;
}

static int on_clone(struct utrace_engine *e, struct utrace_thread *th, pid_t child)
{
	struct rec *r = utrace_engine__ctx(e);

	r->clones++;
	return UTRACE_RESUME;
}

static int on_fork(struct utrace_engine *e, struct utrace_thread *th, pid_t child, bool vfork,
		   bool followed)
{
	struct rec *r = utrace_engine__ctx(e);

	if (!r->forks++) {
		r->fork_child = child;
		r->fork_vfork = vfork;
		r->fork_followed = followed;
	}
	return UTRACE_RESUME;
}

static int on_exec(struct utrace_engine *e, struct utrace_thread *th, pid_t former)
{
	struct rec *r = utrace_engine__ctx(e);

	r->execs++;
	r->exec_tid = utrace_thread__tid(th);
	r->exec_pid = utrace_thread__pid(th);
	r->exec_former = former;
	rec_pid(r, utrace_thread__pid(th));
	return r->break_on_exec ? UTRACE_BREAK : UTRACE_RESUME;
}

static int on_exit_th(struct utrace_engine *e, struct utrace_thread *th, int status)
{
	struct rec *r = utrace_engine__ctx(e);

	r->exits_thread++;
	return UTRACE_RESUME;
}

static int on_stop(struct utrace_engine *e, struct utrace_thread *th, int signo)
{
	struct rec *r = utrace_engine__ctx(e);

	r->stops++;
	return r->break_on_stop ? UTRACE_BREAK : UTRACE_RESUME;
}

static int on_quiesce(struct utrace_engine *e, struct utrace_thread *th)
{
	struct rec *r = utrace_engine__ctx(e);

	r->quiesces++;
	return UTRACE_RESUME;
}

static int on_step(struct utrace_engine *e, struct utrace_thread *th)
{
	struct rec *r = utrace_engine__ctx(e);

	r->steps++;
	return UTRACE_STOP | UTRACE_BREAK;
}

static int on_attach(struct utrace_engine *e, struct utrace_thread *th)
{
	struct rec *r = utrace_engine__ctx(e);

	r->attaches++;
	return UTRACE_RESUME;
}

static const struct utrace_engine_ops rec_ops = {
	.sz = sizeof(struct utrace_engine_ops),
	.syscall_entry = on_entry,
	.syscall_exit = on_exit_sc,
	.seccomp = on_seccomp,
	.signal = on_signal,
	.clone = on_clone,
	.fork = on_fork,
	.exec = on_exec,
	.exit = on_exit_th,
	.stop = on_stop,
	.quiesce = on_quiesce,
	.step = on_step,
	.attach = on_attach,
};

static struct utrace_session *new_session(bool follow, int mode)
{
	UTRACE_OPTS(utrace_session_opts, o, .follow_forks = follow, .syscall_mode = mode);
	struct utrace_session *s = utrace_session__new(&o);

	CHECK(s);
	return s;
}

/* Run the session until all processes are gone (or @ms elapse). */
static void run_to_end(struct utrace_session *s, int ms)
{
	int r;

	do {
		r = utrace_session__run(s, ms);
	} while (r == UTRACE_RUN_BREAK);
	CHECK_EQ(r, UTRACE_RUN_DONE);
}

/* ------------------------------------------------------------------------ */

TEST(attach_detach_basic)
{
	const char *args[] = { "4", "30", NULL };
	struct target t = target_start("s-sleeper", args, -1);
	struct utrace_session *s;
	struct utrace_thread *ths[16];
	struct rec rec = { 0 };

	target_wait_ready(&t);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_ATTACH | UTRACE_EV_SIGNAL, &rec));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK_EQ(utrace_session__attach(s, t.pid), -EEXIST);
	CHECK_EQ(utrace_session__threads(s, t.pid, ths, 16), 5);
	CHECK_EQ(rec.attaches, 5);
	CHECK(proc_status_num(t.pid, "TracerPid", false) == (unsigned long long)getpid());
	CHECK_EQ(utrace_session__run(s, 50), UTRACE_RUN_TIMEOUT);
	CHECK_EQ(utrace_session__detach(s), 0);
	CHECK_EQ(proc_status_num(t.pid, "TracerPid", false), 0);
	CHECK(strchr("RS", proc_state(t.pid)));
	CHECK_EQ(rec.signals, 0);
	utrace_session__close(s);
	kill(t.pid, SIGTERM);
	CHECK_EQ(target_reap(&t, 5000), 128 + SIGTERM);
}

TEST(attach_refuses_traced)
{
	const char *args[] = { "1", "30", NULL };
	struct target t = target_start("s-sleeper", args, -1);
	struct utrace_session *s;
	int sync[2], status;
	pid_t helper;
	char c;

	target_wait_ready(&t);
	CHECK(pipe(sync) == 0);
	helper = fork();
	if (helper == 0) {
		/* Another tracer (like gdb or strace) holds the target. */
		if (ptrace(PTRACE_SEIZE, t.pid, NULL, NULL) < 0)
			_exit(1);
		c = 1;
		if (write(sync[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK(read(sync[0], &c, 1) == 1);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK_EQ(utrace_session__attach(s, t.pid), -UTRACE_ERRNO__TRACED);
	kill(helper, SIGKILL);
	waitpid(helper, &status, 0);
	/* The other tracer is gone: now it works, and the target was not harmed. */
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	kill(t.pid, SIGTERM);
	CHECK_EQ(target_reap(&t, 5000), 128 + SIGTERM);
}

TEST(attach_zombie)
{
	struct utrace_session *s;
	pid_t pid = fork();
	int status;

	if (pid == 0)
		_exit(0);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(wait_state(pid, "Z", 5000));
	CHECK_EQ(utrace_session__attach(s, pid), -ESRCH);
	CHECK_EQ(utrace_session__attach(s, 999999), -ESRCH);
	utrace_session__close(s);
	CHECK(waitpid(pid, &status, 0) == pid);
}

TEST(attach_zombie_leader)
{
	const char *args[] = { "1500", NULL };
	struct target t = target_start("s-zombie-leader", args, -1);
	struct utrace_session *s;
	char line[64];

	target_wait_ready(&t);
	CHECK(wait_state(t.pid, "Z", 5000));
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK_EQ(utrace_session__threads(s, t.pid, NULL, 0), 1);
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK(read_line(t.out, line, sizeof(line), 20000) > 0);
	CHECK_STREQ(line, "worker ok");
	CHECK_EQ(target_reap(&t, 5000), 0);
}

TEST(launch_exit_status)
{
	char *ok[] = { "sh", "-c", "exit 3", NULL };
	char *killed[] = { "sh", "-c", "kill -9 $$", NULL };
	char *missing[] = { "/nonexistent/prog", NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_PTRACE);

	CHECK_EQ(utrace_session__exit_status(s), -ECHILD);
	CHECK(utrace_session__launch(s, ok, NULL) > 0);
	CHECK_EQ(utrace_session__launch(s, ok, NULL), -EBUSY);
	CHECK_EQ(utrace_session__exit_status(s), -EAGAIN);
	run_to_end(s, 10000);
	CHECK_EQ(utrace_session__exit_status(s), 3);
	utrace_session__close(s);

	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_session__launch(s, killed, NULL) > 0);
	run_to_end(s, 10000);
	CHECK_EQ(utrace_session__exit_status(s), 128 + SIGKILL);
	utrace_session__close(s);

	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK_EQ(utrace_session__launch(s, missing, NULL), -ENOENT);
	CHECK_EQ(utrace_session__exit_status(s), -ECHILD);
	utrace_session__close(s);
}

static int devnull_stdout(void *ctx)
{
	int fd = ctx ? *(int *)ctx : open("/dev/null", O_WRONLY);

	return dup2(fd, 1) < 0;
}

static void launch_syscalls_ptrace_body(void)
{
	char *argv[] = { "sh", "-c", "echo hello; exit 0", NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = devnull_stdout);
	struct rec rec = { 0 };

	CHECK(utrace_engine__attach(s, &rec_ops,
				    UTRACE_EV_SYSCALL | UTRACE_EV_EXEC | UTRACE_EV_EXIT, &rec));
	CHECK(utrace_session__launch(s, argv, &lo) > 0);
	run_to_end(s, 10000);
	CHECK_EQ(utrace_session__exit_status(s), 0);
	/* Hidden before exec: the first event is the entry of execve. */
	CHECK_EQ(rec.first_nr, SYS_execve);
	CHECK_EQ(rec.last_entry_nr, SYS_exit_group);
	CHECK_EQ(rec.execs, 1);
	CHECK_EQ(rec.entries, rec.exits + 1); /* exit_group does not return */
	CHECK_EQ(rec.entry_nr_mismatch, 0);
	CHECK_EQ(rec.exits_thread, 1);
	utrace_session__close(s);
}

TEST(launch_syscalls_ptrace)
{
	launch_syscalls_ptrace_body();
}

/* pre-exec hook: a filter tracing write(2) only, then stdout to /dev/null. */
static int install_write_filter(void *ctx)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | 7),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { ARRAY_SIZE(f), f };

	if (devnull_stdout(ctx))
		return 1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return 1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0;
}

struct wrec {
	int entries, exits, other, bad_data;
	bool remote;
	int remote_bad;
};

static void w_remote(struct wrec *w, struct utrace_thread *th)
{
	uint64_t args[6] = { 0 };
	long ret = 0;

	if (!w->remote)
		return;
	if (utrace_thread__remote_syscall(th, SYS_getpid, args, &ret) ||
	    ret != utrace_thread__pid(th))
		w->remote_bad++;
}

static int w_entry(struct utrace_engine *e, struct utrace_thread *th, struct utrace_syscall *sc)
{
	struct wrec *w = utrace_engine__ctx(e);

	if (sc->nr != SYS_write || !sc->seccomp)
		w->other++;
	if (sc->seccomp_data != 7)
		w->bad_data++;
	w->entries++;
	w_remote(w, th);
	return UTRACE_RESUME;
}

static int w_exit(struct utrace_engine *e, struct utrace_thread *th, struct utrace_syscall *sc)
{
	struct wrec *w = utrace_engine__ctx(e);

	if (sc->nr != SYS_write || sc->ret <= 0)
		w->other++;
	w->exits++;
	w_remote(w, th);
	return UTRACE_RESUME;
}

TEST(launch_syscalls_seccomp)
{
	char *argv[] = { "sh", "-c", "echo hello; echo hello; exit 5", NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_SECCOMP);
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = install_write_filter);
	const struct utrace_engine_ops ops = {
		.sz = sizeof(ops),
		.syscall_entry = w_entry,
		.syscall_exit = w_exit,
	};
	struct wrec w = { 0 };

	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL, &w));
	CHECK(utrace_session__launch(s, argv, &lo) > 0);
	run_to_end(s, 10000);
	CHECK_EQ(utrace_session__exit_status(s), 5);
	CHECK_EQ(w.entries, 2);
	CHECK_EQ(w.exits, 2);
	CHECK_EQ(w.other, 0);
	CHECK_EQ(w.bad_data, 0);
	utrace_session__close(s);
}

TEST(remote_syscall_at_seccomp_stops)
{
	char *argv[] = { "sh", "-c", "echo hello; echo hello", NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_SECCOMP);
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = install_write_filter);
	const struct utrace_engine_ops ops = {
		.sz = sizeof(ops),
		.syscall_entry = w_entry,
		.syscall_exit = w_exit,
	};
	struct wrec w = { .remote = true };
	char out[64] = "";
	int p[2];
	ssize_t n;

	CHECK(pipe(p) == 0);
	lo.pre_exec_ctx = &p[1];
	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL, &w));
	CHECK(utrace_session__launch(s, argv, &lo) > 0);
	close(p[1]);
	run_to_end(s, 10000);
	CHECK_EQ(utrace_session__exit_status(s), 0);
	CHECK_EQ(w.entries, 2);
	CHECK_EQ(w.exits, 2);
	CHECK_EQ(w.other, 0);
	CHECK_EQ(w.remote_bad, 0);
	/* The writes themselves ran once each, with their own arguments. */
	n = read(p[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = 0;
	CHECK_STREQ(out, "hello\nhello\n");
	utrace_session__close(s);
	close(p[0]);
}

TEST(launch_seccomp_fork_not_followed)
{
	/* The child inherits the filter: it must not get ENOSYS for write. */
	char *argv[] = { "sh", "-c", "(echo child; exit 0) && echo parent; exit 0", NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_SECCOMP);
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = install_write_filter);
	const struct utrace_engine_ops ops = {
		.sz = sizeof(ops),
		.syscall_entry = w_entry,
		.syscall_exit = w_exit,
	};
	struct wrec w = { 0 };

	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL, &w));
	CHECK(utrace_session__launch(s, argv, &lo) > 0);
	run_to_end(s, 10000);
	CHECK_EQ(utrace_session__exit_status(s), 0);
	CHECK_EQ(w.entries, 1); /* the parent's write only */
	CHECK_EQ(w.exits, 1);
	CHECK_EQ(w.other, 0);
	utrace_session__close(s);
}

TEST(group_stop_while_traced)
{
	const char *args[] = { "30000", "0", "0", "eof", NULL };
	struct target t = target_start("s-signals", args, -1);
	struct utrace_session *s;
	struct rec rec = { .break_on_stop = 1 };

	target_wait_ready(&t);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_STOP | UTRACE_EV_SIGNAL, &rec));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	kill(t.pid, SIGSTOP);
	CHECK_EQ(utrace_session__run(s, 5000), UTRACE_RUN_BREAK);
	CHECK_EQ(rec.sigs[SIGSTOP], 1);
	CHECK_EQ(rec.stops, 1);
	/* Stopped for real: it stays stopped while we keep processing events. */
	CHECK_EQ(utrace_session__run(s, 200), UTRACE_RUN_TIMEOUT);
	CHECK(strchr("Tt", proc_state(t.pid)));
	kill(t.pid, SIGCONT);
	CHECK_EQ(utrace_session__run(s, 200), UTRACE_RUN_TIMEOUT);
	CHECK(strchr("RS", proc_state(t.pid)));
	CHECK_EQ(rec.sigs[SIGCONT], 1);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

TEST(signals_while_stopped_not_lost)
{
	const char *args[] = { "30000", "1", "1", "eof", NULL };
	struct target t = target_start("s-signals", args, -1);
	struct utrace_session *s;
	struct rec rec = { 0 };

	target_wait_ready(&t);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_SIGNAL | UTRACE_EV_QUIESCE, &rec));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK_EQ(utrace_session__quiesce(s, t.pid), 0);
	CHECK(strchr("t", proc_state(t.pid)));
	kill(t.pid, SIGUSR1);
	syscall(SYS_tgkill, t.pid, t.pid, SIGUSR2);
	/* The thread stays stopped; the signals wait in the kernel. */
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	CHECK_EQ(rec.signals, 0);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

TEST(signals_passed_while_traced)
{
	const char *args[] = { "30000", "2", "1", "eof", NULL };
	struct target t = target_start("s-signals", args, -1);
	struct utrace_session *s;
	struct rec rec = { 0 };
	int i;

	target_wait_ready(&t);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_SIGNAL | UTRACE_EV_SYSCALL, &rec));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	kill(t.pid, SIGUSR1);
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	kill(t.pid, SIGUSR1);
	kill(t.pid, SIGUSR2);
	for (i = 0; i < 10 && rec.signals < 3; i++)
		utrace_session__run(s, 50);
	CHECK_EQ(rec.sigs[SIGUSR1], 2);
	CHECK_EQ(rec.sigs[SIGUSR2], 1);
	CHECK(rec.entries > 0);
	close(t.in); /* ends the target, which exits while traced */
	t.in = -1;
	run_to_end(s, 10000);
	utrace_session__close(s);
}

TEST(detach_leaves_stopped_process_stopped)
{
	const char *args[] = { "30000", "0", "0", "eof", NULL };
	struct target t = target_start("s-signals", args, -1);
	struct utrace_session *s;
	struct rec rec = { .break_on_stop = 1 };

	target_wait_ready(&t);
	/* Stopped before we come. */
	kill(t.pid, SIGSTOP);
	CHECK(wait_state(t.pid, "T", 5000));
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_STOP, &rec));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	/* The group-stop is reported once, then the process stays stopped. */
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_BREAK);
	CHECK_EQ(rec.stops, 1);
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	CHECK(strchr("Tt", proc_state(t.pid)));
	CHECK_EQ(utrace_session__detach(s), 0);
	msleep(100);
	CHECK_EQ(proc_state(t.pid), 'T');
	CHECK_EQ(proc_status_num(t.pid, "TracerPid", false), 0);
	CHECK_EQ(proc_status_num(t.pid, "SigPnd", true) & (1ULL << (SIGSTOP - 1)), 0);
	CHECK_EQ(proc_status_num(t.pid, "ShdPnd", true) & (1ULL << (SIGSTOP - 1)), 0);

	/* Stopped while we trace it, then detached. */
	kill(t.pid, SIGCONT);
	CHECK(wait_state(t.pid, "RS", 5000));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	rec.stops = 0;
	kill(t.pid, SIGSTOP);
	CHECK_EQ(utrace_session__run(s, 5000), UTRACE_RUN_BREAK);
	CHECK_EQ(rec.stops, 1);
	CHECK_EQ(utrace_session__detach(s), 0);
	msleep(100);
	CHECK_EQ(proc_state(t.pid), 'T');
	CHECK_EQ(proc_status_num(t.pid, "ShdPnd", true) & (1ULL << (SIGSTOP - 1)), 0);
	utrace_session__close(s);
	kill(t.pid, SIGCONT);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

static void exec_from_non_leader_thread_body(void)
{
	char *argv[] = { (char *)target_path("s-exec-thread"), NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = devnull_stdout);
	struct rec rec = { 0 };
	pid_t pid;

	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_ALL, &rec));
	pid = utrace_session__launch(s, argv, &lo);
	CHECK(pid > 0);
	run_to_end(s, 10000);
	CHECK_EQ(utrace_session__exit_status(s), 0);
	CHECK_EQ(rec.execs, 2);
	CHECK_EQ(rec.exec_pid, pid);
	CHECK_EQ(rec.exec_tid, pid);
	CHECK(rec.exec_former != pid && rec.exec_former > 0);
	CHECK_EQ(rec.clones, 1);
	CHECK_EQ(rec.exit_after_exec_nr, SYS_execve);
	utrace_session__close(s);
}

TEST(exec_from_non_leader_thread)
{
	exec_from_non_leader_thread_body();
}

TEST(no_syscall_info_fallback)
{
	/* As on kernels < 5.3: entry and exit told apart by a toggle. */
	setenv("UTRACE_NO_SYSCALL_INFO", "1", 1);
	launch_syscalls_ptrace_body();
	exec_from_non_leader_thread_body();
}

static void fork_case(const char *mode, bool follow)
{
	char *argv[] = { (char *)target_path("s-fork"), (char *)mode, NULL };
	struct utrace_session *s = new_session(follow, UTRACE_SYSCALLS_PTRACE);
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = devnull_stdout);
	struct rec rec = { 0 };
	int p[2], i;
	pid_t pid;
	char out[128] = "";
	ssize_t n;

	CHECK(pipe(p) == 0);
	lo.pre_exec_ctx = &p[1];
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_ALL, &rec));
	pid = utrace_session__launch(s, argv, &lo);
	CHECK(pid > 0);
	close(p[1]);
	run_to_end(s, 10000);
	CHECK_EQ(utrace_session__exit_status(s), 0);
	n = read(p[0], out, sizeof(out) - 1);
	CHECK(n > 0);
	out[n > 0 ? n : 0] = 0;
	CHECK_STREQ(out, follow ? "child traced=1\n" : "child traced=0\n");
	/* With -F, the vfork child (sh) forks grep: 2 forks. */
	CHECK_EQ(rec.forks, follow && !strcmp(mode, "vfork") ? 2 : 1);
	CHECK_EQ(rec.fork_vfork, !strcmp(mode, "vfork"));
	CHECK_EQ(rec.fork_followed, follow);
	/* Events from the child only when following it. */
	for (i = 0; i < rec.nr_pids; i++)
		CHECK(follow || rec.pids_seen[i] == pid);
	if (follow)
		CHECK(rec.nr_pids >= 2);
	utrace_session__close(s);
	close(p[0]);
}

TEST(fork_not_followed)
{
	fork_case("fork", false);
}

TEST(fork_followed)
{
	fork_case("fork", true);
}

TEST(vfork_not_followed)
{
	fork_case("vfork", false);
}

TEST(vfork_followed)
{
	fork_case("vfork", true);
}

TEST_TIMEOUT(threads_exiting_while_stopped, 60)
{
	const char *args[] = { "60000", NULL };
	struct target t = target_start("s-churn", args, -1);
	struct utrace_session *s;
	struct rec rec = { 0 };
	char line[64];
	int i;

	target_wait_ready(&t);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_CLONE | UTRACE_EV_EXIT, &rec));
	for (i = 0; i < 40; i++) {
		CHECK_EQ(utrace_session__attach(s, t.pid), 0);
		utrace_session__run(s, 5);
		CHECK_EQ(utrace_session__quiesce(s, t.pid), 0);
		CHECK_EQ(utrace_session__run(s, 2), UTRACE_RUN_TIMEOUT);
		CHECK_EQ(utrace_session__detach(s), 0);
		msleep(5);
	}
	CHECK(rec.clones > 0);
	utrace_session__close(s);
	close(t.in); /* ends the target */
	t.in = -1;
	CHECK(read_line(t.out, line, sizeof(line), 10000) > 0);
	CHECK(!strncmp(line, "threads ", 8));
	CHECK_EQ(target_reap(&t, 10000), 0);
}

static int step_count_break(struct utrace_engine *e, struct utrace_thread *th)
{
	int *n = utrace_engine__ctx(e);

	(*n)++;
	return UTRACE_STOP | UTRACE_BREAK;
}

TEST(singlestep)
{
	const char *args[] = { "spin", "1000", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct utrace_session *s;
	const struct utrace_engine_ops ops = { .sz = sizeof(ops), .step = step_count_break };
	struct user_regs_struct r1, r2;
	struct utrace_thread *th;
	int steps = 0, i;

	target_wait_ready(&t);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_STEP, &steps));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	th = utrace_session__find_thread(s, t.pid);
	CHECK(th);
	CHECK_EQ(utrace_thread__quiesce(th, true), 0);
	CHECK_EQ(utrace_thread__get_regs(th, &r1), 0);
	for (i = 0; i < 5; i++) {
		CHECK_EQ(utrace_thread__singlestep(th), 0);
		CHECK_EQ(utrace_session__run(s, 5000), UTRACE_RUN_BREAK);
	}
	CHECK_EQ(steps, 5);
	CHECK(utrace_thread__is_stopped(th));
	CHECK_EQ(utrace_thread__get_regs(th, &r2), 0);
	CHECK(r1.rip != r2.rip);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

static int skip_getppid(struct utrace_engine *e, struct utrace_thread *th,
			struct utrace_syscall *sc)
{
	if (sc->nr == SYS_getppid)
		utrace_thread__skip_syscall(th, 4242);
	return UTRACE_RESUME;
}

TEST(skip_syscall_injects_result)
{
	char *argv[] = { "sh", "-c", "echo $PPID", NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = devnull_stdout);
	const struct utrace_engine_ops ops = { .sz = sizeof(ops), .syscall_entry = skip_getppid };
	char out[64] = "";
	int p[2];
	ssize_t n;

	CHECK(pipe(p) == 0);
	lo.pre_exec_ctx = &p[1];
	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SYSCALL_ENTRY, NULL));
	CHECK(utrace_session__launch(s, argv, &lo) > 0);
	close(p[1]);
	run_to_end(s, 10000);
	n = read(p[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = 0;
	CHECK_STREQ(out, "4242\n");
	utrace_session__close(s);
	close(p[0]);
}

TEST(engine_detach_and_run_timeout)
{
	const char *args[] = { "2", "30", NULL };
	struct target t = target_start("s-sleeper", args, -1);
	struct utrace_session *s;
	struct utrace_engine *e1, *e2;
	struct rec r1 = { 0 }, r2 = { 0 };
	int fd;

	target_wait_ready(&t);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	e1 = utrace_engine__attach(s, &rec_ops, UTRACE_EV_SYSCALL, &r1);
	e2 = utrace_engine__attach(s, &rec_ops, UTRACE_EV_SYSCALL, &r2);
	CHECK(e1 && e2);
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	CHECK(r1.entries > 0);
	CHECK(r1.entries == r2.entries);
	utrace_engine__detach(e1);
	r2.entries = 0;
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	CHECK(r2.entries > 0);
	utrace_session__interrupt(s);
	CHECK_EQ(utrace_session__run(s, 1000), UTRACE_RUN_INTERRUPTED);
	fd = utrace_session__fd(s);
	CHECK(fd >= 0);
	CHECK(utrace_session__poll(s) >= 0);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	kill(t.pid, SIGTERM);
	CHECK_EQ(target_reap(&t, 5000), 128 + SIGTERM);
}

TEST(attach_during_vfork)
{
	const char *args[] = { "vfork-hold", NULL };
	struct target t = target_start("s-fork", args, -1);
	struct utrace_session *s;
	struct rec rec = { 0 };
	long t0, t1;
	char line[64];
	struct timespec ts;
	int i;

	target_wait_ready(&t);
	msleep(200); /* the parent now waits for its vfork child */
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_ATTACH | UTRACE_EV_SYSCALL, &rec));
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t1 = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	/* Did not wait for the vfork to end (the child sleeps 2 s). */
	CHECK_MSG(t1 - t0 < 1200, "attach took %ld ms", t1 - t0);
	CHECK_EQ(rec.attaches, 0);
	CHECK_EQ(utrace_session__quiesce(s, t.pid), 0);
	CHECK_EQ(utrace_session__resume(s, t.pid), 0);
	/* Once the child execs, the parent stops, is traced, runs on. */
	for (i = 0; i < 100 && !rec.entries; i++)
		CHECK_EQ(utrace_session__run(s, 50), UTRACE_RUN_TIMEOUT);
	CHECK_EQ(rec.attaches, 1);
	CHECK(rec.entries > 0);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK(read_line(t.out, line, sizeof(line), 20000) > 0);
	CHECK_STREQ(line, "child traced=0");
	CHECK_EQ(target_reap(&t, 10000), 0);
}

TEST(close_launched_waits_for_it)
{
	char *argv[] = { (char *)target_path("s-signals"), "300", "0", "0", NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = devnull_stdout);
	struct timespec a, b;
	pid_t pid;
	int status;

	clock_gettime(CLOCK_MONOTONIC, &a);
	pid = utrace_session__launch(s, argv, &lo);
	CHECK(pid > 0);
	CHECK_EQ(utrace_session__run(s, 50), UTRACE_RUN_TIMEOUT);
	/* Detached, not killed: it runs its 300 ms, and close reaps it. */
	utrace_session__close(s);
	clock_gettime(CLOCK_MONOTONIC, &b);
	CHECK((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 >= 300);
	CHECK(waitpid(pid, &status, WNOHANG) < 0 && errno == ECHILD);
}

struct det {
	int calls, detached;
};

static int det_entry(struct utrace_engine *e, struct utrace_thread *th, struct utrace_syscall *sc)
{
	struct det *d = utrace_engine__ctx(e);

	d->calls++;
	return UTRACE_DETACH;
}

static void det_detach(struct utrace_engine *e)
{
	struct det *d = utrace_engine__ctx(e);

	d->detached++;
}

TEST(engine_detaches_itself)
{
	char *argv[] = { "sh", "-c", "exit 0", NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	const struct utrace_engine_ops dops = {
		.sz = sizeof(dops),
		.syscall_entry = det_entry,
		.detach = det_detach,
	};
	struct det d = { 0 };
	struct rec rec = { 0 };

	CHECK(utrace_engine__attach(s, &dops, UTRACE_EV_SYSCALL, &d));
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_SYSCALL, &rec));
	CHECK(utrace_session__launch(s, argv, NULL) > 0);
	run_to_end(s, 10000);
	CHECK_EQ(d.calls, 1);
	CHECK_EQ(d.detached, 1);
	CHECK(rec.entries > 5);
	utrace_session__close(s);
	CHECK_EQ(d.detached, 1);
}

static int stop_on_usr1(struct utrace_engine *e, struct utrace_thread *th, siginfo_t *info)
{
	int *n = utrace_engine__ctx(e);

	if (info->si_signo != SIGUSR1)
		return UTRACE_RESUME;
	(*n)++;
	return UTRACE_STOP | UTRACE_BREAK;
}

TEST(signal_held_by_engine_delivered_at_detach)
{
	const char *args[] = { "30000", "1", "0", "eof", NULL };
	struct target t = target_start("s-signals", args, -1);
	const struct utrace_engine_ops ops = { .sz = sizeof(ops), .signal = stop_on_usr1 };
	struct utrace_session *s;
	struct utrace_thread *th;
	int n = 0;

	target_wait_ready(&t);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SIGNAL, &n));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	kill(t.pid, SIGUSR1);
	CHECK_EQ(utrace_session__run(s, 5000), UTRACE_RUN_BREAK);
	CHECK_EQ(n, 1);
	th = utrace_session__find_thread(s, t.pid);
	CHECK(utrace_thread__is_stopped(th));
	/* Held at its signal-delivery stop; detach hands it back exactly once. */
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK_EQ(target_reap(&t, 10000), 0);
}

TEST(killed_while_stopped)
{
	const char *args[] = { "4", "30", NULL };
	struct target t = target_start("s-sleeper", args, -1);
	struct utrace_session *s;
	struct rec rec = { 0 };

	target_wait_ready(&t);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_EXIT, &rec));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK_EQ(utrace_session__quiesce(s, t.pid), 0);
	kill(t.pid, SIGKILL);
	run_to_end(s, 5000);
	CHECK_EQ(rec.exits_thread, 5);
	CHECK_EQ(utrace_session__threads(s, 0, NULL, 0), 0);
	utrace_session__close(s);
	/* We were tracer and parent: the session reaped it. */
	CHECK(waitpid(t.pid, NULL, WNOHANG) < 0 && errno == ECHILD);
}

TEST(close_seccomp_launch_keeps_servicing)
{
	char *argv[] = { "sh", "-c", "sleep 0.2; echo hello; echo world", NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_SECCOMP);
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = install_write_filter);
	char out[64] = "";
	int p[2];
	ssize_t n;

	CHECK(pipe(p) == 0);
	lo.pre_exec_ctx = &p[1];
	CHECK(utrace_session__launch(s, argv, &lo) > 0);
	close(p[1]);
	CHECK_EQ(utrace_session__run(s, 50), UTRACE_RUN_TIMEOUT);
	/* Detaching would leave RET_TRACE filters without a tracer: refused. */
	CHECK_EQ(utrace_session__detach(s), -EBUSY);
	utrace_session__close(s);
	n = read(p[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = 0;
	/* No ENOSYS for the traced writes: all output is there. */
	CHECK_STREQ(out, "hello\nworld\n");
	close(p[0]);
}

TEST(run_without_sigchld_wakeups)
{
	char *argv[] = { "sh", "-c", "sleep 0.1; exit 7", NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	struct rec rec = { 0 };
	sigset_t set;

	/* The caller takes SIGCHLD away (as with a signalfd): run() must still work. */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_SYSCALL, &rec));
	CHECK(utrace_session__launch(s, argv, NULL) > 0);
	run_to_end(s, 10000);
	CHECK_EQ(utrace_session__exit_status(s), 7);
	CHECK(rec.entries > 10);
	utrace_session__close(s);
}

static struct utrace_session *alarm_session;

static void interrupt_on_alarm(int sig)
{
	(void)sig;
	utrace_session__interrupt(alarm_session);
}

static void *interrupt_later(void *s)
{
	msleep(100);
	utrace_session__interrupt(s);
	return NULL;
}

static long elapsed_ms(const struct timespec *t0)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec - t0->tv_sec) * 1000 + (ts.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * run(-1) sleeps with no event to come (the target is blocked in read):
 * an interrupt from a signal handler in the tracing thread (SA_RESTART set,
 * which would restart a blocking waitpid()) or from another thread must
 * wake it, and run() must leave the signal mask as it found it.
 */
TEST(run_interrupt_while_asleep)
{
	const char *args[] = { "read", NULL };
	struct target t = target_start("s-blocked", args, -1);
	struct sigaction sa = { .sa_handler = interrupt_on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { .it_value = { 0, 100 * 1000 } };
	struct utrace_session *s;
	struct rec rec = { 0 };
	struct timespec t0;
	pthread_t th;
	sigset_t mask;
	char path[64], kids[256] = "";
	FILE *f;
	long ms;

	target_wait_ready(&t);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	alarm_session = s;
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_SYSCALL, &rec));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
	CHECK_EQ(utrace_session__run(s, -1), UTRACE_RUN_INTERRUPTED);
	ms = elapsed_ms(&t0);
	CHECK_MSG(ms >= 50 && ms < 5000, "woke after %ld ms", ms);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(pthread_create(&th, NULL, interrupt_later, s) == 0);
	CHECK_EQ(utrace_session__run(s, 20000), UTRACE_RUN_INTERRUPTED);
	CHECK(pthread_join(th, NULL) == 0);
	ms = elapsed_ms(&t0);
	CHECK_MSG(ms >= 50 && ms < 5000, "woke after %ld ms", ms);

	CHECK(pthread_sigmask(SIG_BLOCK, NULL, &mask) == 0);
	CHECK(!sigismember(&mask, SIGCHLD));
	/* run(-1)'s waker child is gone: the target is our only child */
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)syscall(SYS_gettid));
	f = fopen(path, "r");
	CHECK(f);
	if (!fgets(kids, sizeof(kids), f))
		kids[0] = 0;
	fclose(f);
	snprintf(path, sizeof(path), "%d ", t.pid);
	CHECK_STREQ(kids, path);
	/* a timeout in the same sleep */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	ms = elapsed_ms(&t0);
	CHECK_MSG(ms >= 90 && ms < 5000, "timed out after %ld ms", ms);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	CHECK(write(t.in, "hello\n", 6) == 6);
	CHECK_EQ(target_reap(&t, 5000), 0);
}

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/*
 * run() keeps SIGCHLD blocked in the tracing thread; another thread that
 * does not block it may take the signal instead. The library's handler
 * must forward it, else run() sleeps while a tracee waits for it.
 */
TEST(run_sigchld_taken_by_another_thread)
{
	char *argv[] = { (char *)target_path("s-getppid"), "3000", NULL };
	struct timespec t0;
	pthread_t th;
	int i, r;

	CHECK(pthread_create(&th, NULL, idle_thread, NULL) == 0);
	/* the window is small: several rounds of 6600 stops each */
	for (i = 0; i < 4; i++) {
		struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_PTRACE);
		struct rec rec = { 0 };

		CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_SYSCALL, &rec));
		CHECK(utrace_session__launch(s, argv, NULL) > 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			r = utrace_session__run(s, 10000);
		} while (r == UTRACE_RUN_BREAK);
		CHECK_MSG(r == UTRACE_RUN_DONE, "round %d: run() returned %d after %ld ms", i, r,
			  elapsed_ms(&t0));
		CHECK_EQ(utrace_session__exit_status(s), 0);
		CHECK(rec.entries > 3000);
		utrace_session__close(s);
	}
}

static void *session_thread(void *arg)
{
	char *argv[] = { "sh", "-c", "exit 4", NULL };
	pid_t target = *(pid_t *)arg;
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	long ok = 0;

	if (utrace_session__launch(s, argv, NULL) > 0 &&
	    utrace_session__run(s, 10000) == UTRACE_RUN_DONE &&
	    utrace_session__exit_status(s) == 4 && utrace_session__attach(s, target) == 0 &&
	    utrace_session__run(s, 50) == UTRACE_RUN_TIMEOUT && utrace_session__detach(s) == 0)
		ok = 1;
	utrace_session__close(s);
	return (void *)ok;
}

static void *poll_thread(void *s)
{
	return (void *)(long)utrace_session__poll(s);
}

TEST(session_in_another_thread)
{
	const char *args[] = { "2", "30", NULL };
	struct target t = target_start("s-sleeper", args, -1);
	struct utrace_session *s;
	pthread_t th;
	void *ok = NULL;

	target_wait_ready(&t);
	CHECK(pthread_create(&th, NULL, session_thread, &t.pid) == 0);
	CHECK(pthread_join(th, &ok) == 0);
	CHECK(ok == (void *)1);
	/* A session is bound to its thread. */
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(pthread_create(&th, NULL, poll_thread, s) == 0);
	CHECK(pthread_join(th, &ok) == 0);
	CHECK_EQ((long)ok, -EINVAL);
	utrace_session__close(s);
	kill(t.pid, SIGTERM);
	CHECK_EQ(target_reap(&t, 5000), 128 + SIGTERM);
}

TEST(close_launched_kill_on_exit)
{
	char *argv[] = { (char *)target_path("s-signals"), "30000", "0", "0", NULL };
	struct utrace_session *s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	UTRACE_OPTS(utrace_launch_opts, lo, .pre_exec = devnull_stdout, .kill_on_exit = true);
	struct timespec a, b;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &a);
	pid = utrace_session__launch(s, argv, &lo);
	CHECK(pid > 0);
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	utrace_session__close(s);
	clock_gettime(CLOCK_MONOTONIC, &b);
	/* Killed, not waited for 30 s; reaped. */
	CHECK((b.tv_sec - a.tv_sec) < 10);
	CHECK(waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD);
}

TEST(attach_non_child_exits_while_traced)
{
	int pin[2], ppid[2], status;
	struct utrace_session *s;
	struct rec rec = { 0 };
	pid_t helper, target = 0;

	CHECK(pipe(pin) == 0 && pipe(ppid) == 0);
	helper = fork();
	if (helper == 0) {
		/* The target's real parent; exits with the target's status. */
		pid_t t = fork();

		if (t == 0) {
			char *argv[] = {
				(char *)target_path("s-signals"), "30000", "0", "0", "eof", NULL
			};

			dup2(pin[0], 0);
			close(pin[1]);
			dup2(open("/dev/null", O_WRONLY), 1);
			execv(argv[0], argv);
			_exit(99);
		}
		close(pin[0]);
		close(pin[1]);
		if (write(ppid[1], &t, sizeof(t)) != sizeof(t))
			_exit(98);
		_exit(waitpid(t, &status, 0) == t && WIFEXITED(status) ? WEXITSTATUS(status) : 97);
	}
	close(pin[0]);
	CHECK(read(ppid[0], &target, sizeof(target)) == sizeof(target));
	msleep(100);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &rec_ops, UTRACE_EV_EXIT | UTRACE_EV_SYSCALL, &rec));
	CHECK_EQ(utrace_session__attach(s, target), 0);
	/* Never the parent. */
	CHECK_EQ(proc_status_num(target, "PPid", false), helper);
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	close(pin[1]); /* the target ends while traced */
	run_to_end(s, 10000);
	CHECK_EQ(rec.exits_thread, 1);
	utrace_session__close(s);
	/* Its real parent still got its exit status. */
	CHECK(waitpid(helper, &status, 0) == helper);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

static int remote_in_signal_stop(struct utrace_engine *e, struct utrace_thread *th, siginfo_t *info)
{
	int *n = utrace_engine__ctx(e);
	uint64_t args[6] = { 0 };
	long ret = 0;

	if (info->si_signo != SIGUSR1)
		return UTRACE_RESUME;
	/* At the signal-delivery stop: run a syscall, the signal must survive. */
	if (utrace_thread__remote_syscall(th, SYS_getpid, args, &ret) == 0 &&
	    ret == utrace_thread__pid(th))
		(*n)++;
	return UTRACE_RESUME;
}

TEST(remote_syscall_at_signal_stop)
{
	const char *args[] = { "30000", "2", "0", "eof", NULL };
	struct target t = target_start("s-signals", args, -1);
	const struct utrace_engine_ops ops = { .sz = sizeof(ops), .signal = remote_in_signal_stop };
	struct utrace_session *s;
	int n = 0, i;

	target_wait_ready(&t);
	s = new_session(false, UTRACE_SYSCALLS_PTRACE);
	CHECK(utrace_engine__attach(s, &ops, UTRACE_EV_SIGNAL, &n));
	CHECK_EQ(utrace_session__attach(s, t.pid), 0);
	kill(t.pid, SIGUSR1);
	for (i = 0; i < 100 && n < 1; i++)
		utrace_session__run(s, 20);
	kill(t.pid, SIGUSR1);
	for (i = 0; i < 100 && n < 2; i++)
		utrace_session__run(s, 20);
	CHECK_EQ(n, 2);
	CHECK_EQ(utrace_session__run(s, 100), UTRACE_RUN_TIMEOUT);
	CHECK_EQ(utrace_session__detach(s), 0);
	utrace_session__close(s);
	/* Each SIGUSR1 delivered exactly once, with kill()'s siginfo. */
	CHECK_EQ(target_reap(&t, 10000), 0);
}
