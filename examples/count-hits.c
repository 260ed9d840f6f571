/* SPDX-License-Identifier: MIT */
/*
 * count-hits.c - the first example of the 2007 uprobes paper, on utrace's
 * API: count the hits of a probe at one (process, address) and report the
 * total when the probe goes away.
 *
 *   count-hits PID ADDR [SECONDS]
 *
 * Attaches to the running process PID, probes the runtime address ADDR
 * (hex), counts for SECONDS (default: until Ctrl-C), then unregisters the
 * probe, detaches (the process runs on, its code as before) and prints
 * "hits=N" and the backend that counted.
 *
 * The count is the built-in COUNT action, so the default backend (AUTO)
 * takes the agent when it loads: the hits are counted inside the target,
 * in a few nanoseconds each, and read here without stopping it; without
 * the agent, the ptrace backend counts at each stop.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "utrace/utrace.h"

static struct utrace_session *session;

static void on_sigint(int sig)
{
	(void)sig;
	utrace_session__interrupt(session);
}

int main(int argc, char **argv)
{
	UTRACE_OPTS(utrace_probe_opts, opts, .actions = UTRACE_ACT_COUNT | UTRACE_ACT_NORET);
	struct utrace_probe_counts c = { 0 };
	const char *backend;
	struct utrace_uprobes *up;
	struct utrace_probe *p;
	struct timespec t0, t;
	pid_t pid;
	uint64_t addr;
	double secs;
	int err, r;

	if (argc < 3) {
		fprintf(stderr, "usage: %s PID ADDR [SECONDS]\n", argv[0]);
		return 2;
	}
	pid = atoi(argv[1]);
	addr = strtoull(argv[2], NULL, 16);
	secs = argc > 3 ? atof(argv[3]) : -1;
	session = utrace_session__new(NULL);
	if (!session) {
		perror("utrace_session__new");
		return 1;
	}
	up = utrace_uprobes__new(session, NULL);
	if (!up) {
		perror("utrace_uprobes__new");
		return 1;
	}
	err = utrace_session__attach(session, pid);
	if (err) {
		fprintf(stderr, "attach %d: %s\n", pid, strerror(-err));
		return 1;
	}
	p = utrace_probe__register(up, pid, addr, &opts);
	if (!p) {
		fprintf(stderr, "probe 0x%llx: %s\n", (unsigned long long)addr, strerror(errno));
		utrace_session__close(session);
		return 1;
	}
	signal(SIGINT, on_sigint);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int left = -1;

		if (secs >= 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			left = (int)((secs - (t.tv_sec - t0.tv_sec) -
				      (t.tv_nsec - t0.tv_nsec) / 1e9) *
				     1000);
			if (left <= 0)
				break;
		}
		r = utrace_session__run(session, left);
		if (r != UTRACE_RUN_BREAK && r != UTRACE_RUN_TIMEOUT)
			break;
	}
	utrace_probe__counts(p, &c);
	backend = utrace_backend_str(utrace_uprobes__backend(up));
	/* "module unload": the probe goes, the process runs on untouched */
	utrace_probe__unregister(p);
	utrace_uprobes__free(up);
	utrace_session__close(session);
	printf("hits=%llu backend=%s\n", (unsigned long long)c.calls, backend);
	return 0;
}
