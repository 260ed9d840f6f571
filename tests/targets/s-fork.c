/* SPDX-License-Identifier: MIT */
/*
 * s-fork MODE - creates a child with fork() or vfork() (MODE "fork" or
 * "vfork"); the child reports whether it is traced (TracerPid) in its exit
 * status: exit 10 if untraced, 11 if traced (fork), or execs
 * "/bin/sh -c 'exit 10|11'" computed the same way (vfork). The parent
 * prints "child traced=<0|1>" and exits with 0, or 1 if the child failed.
 * MODE "vfork-hold": prints "ready <pid>" first, and the vfork child sleeps
 * 2 s before its exec, so the parent is blocked in vfork meanwhile; the
 * exec'ed shell then sleeps 0.5 s more before answering.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int traced(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int pid = 0;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "TracerPid:", 10))
			pid = atoi(line + 10);
	if (f)
		fclose(f);
	return pid != 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "fork";
	int status;
	pid_t pid;

	if (!strncmp(mode, "vfork", 5)) {
		bool hold = !strcmp(mode, "vfork-hold");

		if (hold) {
			printf("ready %d\n", getpid());
			fflush(stdout);
		}
		pid = vfork();
		if (pid == 0) {
			struct timespec ts = { 2, 0 };

			if (hold)
				syscall(SYS_nanosleep, &ts, NULL);
			execl("/bin/sh", "sh", "-c",
			      hold ? "sleep 0.5; grep -q 'TracerPid:[[:space:]]*0$' /proc/self/status "
				     "&& exit 10; exit 11" :
				     "grep -q 'TracerPid:[[:space:]]*0$' /proc/self/status && exit 10; "
				     "exit 11",
			      (char *)NULL);
			_exit(1);
		}
	} else {
		pid = fork();
		if (pid == 0)
			_exit(10 + traced());
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		fprintf(stderr, "child failed\n");
		return 1;
	}
	if (WEXITSTATUS(status) != 10 && WEXITSTATUS(status) != 11)
		return 1;
	printf("child traced=%d\n", WEXITSTATUS(status) - 10);
	return 0;
}
