/* SPDX-License-Identifier: MIT */
/*
 * s-exec-thread - a non-leader thread calls execve() of this program with
 * the argument "child"; the new image checks that it is a single-threaded
 * process whose pid did not change (passed in argv[2]) and exits 0.
 * Exits 1 if execve fails or the check fails.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *self;

static void *execer(void *arg)
{
	char pid[32];
	char *argv[] = { self, "child", pid, NULL };

	snprintf(pid, sizeof(pid), "%d", getpid());
	execv("/proc/self/exe", argv);
	perror("execv");
	exit(1);
}

static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	if (d)
		closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	pthread_t th;

	if (argc > 2 && !strcmp(argv[1], "child")) {
		if (atoi(argv[2]) != getpid() || count_threads() != 1) {
			fprintf(stderr, "after exec: pid %d (want %s), %d threads\n", getpid(),
				argv[2], count_threads());
			return 1;
		}
		printf("exec ok\n");
		return 0;
	}
	self = argv[0];
	pthread_create(&th, NULL, execer, NULL);
	for (;;)
		pause();
}
