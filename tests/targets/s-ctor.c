/* SPDX-License-Identifier: MIT */
/*
 * s-ctor.c - what a launched program sees of utrace (nothing, ideally).
 *
 *   s-ctor env     prints env_bad=N (UTRACE_AGENT* entries and any naming
 *                  the agent), child_bad=N (the same in a system() child),
 *                  lowfd=N (the lowest free fd at main(): 3 when the agent
 *                  took none of the program's numbers), preload=LD_PRELOAD
 *                  (the user's own preloads, kept)
 *   s-ctor fd3     puts a pipe with "fd3-data" on fd 3 and execs itself as
 *                  "fd3-child", which prints fd3=<what it reads on fd 3>
 * Every image calls ctor_probe() 7 times in libctor's constructor and 3
 * times in main(): 10 calls per image.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int ctor_probe(int i);
extern char **environ;

static int bad_env(void)
{
	int i, bad = 0;

	for (i = 0; environ[i]; i++)
		if (!strncmp(environ[i], "UTRACE_AGENT", 12) || strstr(environ[i], "utrace-agent"))
			bad++;
	return bad;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "env";
	int i, lowfd = dup(0);

	if (lowfd >= 0)
		close(lowfd);
	for (i = 0; i < 3; i++)
		ctor_probe(i);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("lowfd=%d env_bad=%d preload=%s\n", lowfd, bad_env(),
	       getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "(none)");
	if (!strcmp(mode, "env")) {
		int r = system("exit $(env | grep -c -E '^UTRACE_AGENT|utrace-agent')");

		printf("child_bad=%d\n", WEXITSTATUS(r));
	} else if (!strcmp(mode, "fd3")) {
		int p[2];

		if (pipe(p) || write(p[1], "fd3-data", 8) != 8 || dup2(p[0], 3) != 3)
			return 2;
		close(p[1]);
		if (p[0] != 3)
			close(p[0]);
		execl(argv[0], argv[0], "fd3-child", (char *)NULL);
		perror("execl");
		return 3;
	} else if (!strcmp(mode, "fd3-child")) {
		char buf[32] = "";
		ssize_t n = read(3, buf, sizeof(buf) - 1);

		printf("fd3=%s\n", n > 0 ? buf : "(lost)");
	}
	return 0;
}
