/* SPDX-License-Identifier: MIT */
/*
 * test-proc.c - the process layer against real processes: this test's own
 * children (forked or the s-sleeper target). No ptrace.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "harness.h"

TEST(maps_parse_text)
{
	const char *text =
		"55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/prog\n"
		"55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 1234 /usr/bin/prog\n"
		"7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
		"7f0000100000-7f0000101000 rw-s 00000000 00:05 99 /memfd:arena (deleted)\n"
		"7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n";
	struct utrace_maps *m = utrace_maps__parse(text);

	CHECK(m);
	CHECK_EQ(m->nr, 5);
	CHECK_EQ(m->maps[1].start, 0x55d0c0a01000ULL);
	CHECK_EQ(m->maps[1].offset, 0x1000);
	CHECK_EQ(m->maps[1].prot, UTRACE_MAP_READ | UTRACE_MAP_EXEC);
	CHECK_EQ(m->maps[1].inode, 1234);
	CHECK_EQ(m->maps[1].dev_major, 8);
	CHECK_STREQ(m->maps[1].path, "/usr/bin/prog");
	CHECK(m->maps[2].path == NULL);
	CHECK_STREQ(m->maps[3].path, "/memfd:arena");
	CHECK(m->maps[3].deleted);
	CHECK(m->maps[3].prot & UTRACE_MAP_SHARED);
	CHECK_STREQ(m->maps[4].path, "[stack]");
	CHECK(utrace_maps__find(m, 0x55d0c0a01800ULL) == &m->maps[1]);
	CHECK(utrace_maps__find(m, 0x55d0c0a02000ULL) == NULL);
	CHECK(utrace_maps__find(m, 0x7ffc00000000ULL) == &m->maps[4]);
	utrace_maps__free(m);
}

TEST(maps_parse_malformed)
{
	CHECK(utrace_maps__parse("garbage\n") == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK(utrace_maps__parse("1000-0 r-xp 0 0:0 0\n") == NULL);
	utrace_maps__free(NULL);
}

TEST(maps_read_self)
{
	struct utrace_maps *m = utrace_maps__read(getpid());
	const struct utrace_map *code;
	static int data;
	size_t i;
	bool found_stack = false;

	CHECK(m);
	CHECK(m->nr > 5);
	code = utrace_maps__find(m, (uint64_t)(uintptr_t)&test_maps_parse_text);
	CHECK(code);
	CHECK(code->prot & UTRACE_MAP_EXEC);
	CHECK(utrace_maps__find(m, (uint64_t)(uintptr_t)&data)->prot & UTRACE_MAP_WRITE);
	for (i = 0; i < m->nr; i++) {
		if (i)
			CHECK(m->maps[i].start >= m->maps[i - 1].end);
		if (m->maps[i].path && !strcmp(m->maps[i].path, "[stack]"))
			found_stack = true;
	}
	CHECK(found_stack);
	utrace_maps__free(m);
}

/* Fork a child that waits on a pipe; returns its pid. */
static pid_t spawn_idle(int *wfd)
{
	int p[2];
	pid_t pid;

	CHECK(pipe(p) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char c;

		close(p[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (read(p[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[0]);
	*wfd = p[1];
	return pid;
}

TEST(mem_read_write_child)
{
	static char buf[64] = "hello from the parent's copy";
	char got[64];
	int wfd;
	pid_t pid = spawn_idle(&wfd);

	/* The child has the same address space layout (fork): read our data. */
	CHECK_EQ(utrace_mem__read(pid, (uintptr_t)buf, got, sizeof(got)), sizeof(got));
	CHECK_STREQ(got, buf);
	CHECK_EQ(utrace_mem__write(pid, (uintptr_t)buf, "changed", 8), 8);
	CHECK_EQ(utrace_mem__read(pid, (uintptr_t)buf, got, sizeof(got)), sizeof(got));
	CHECK_STREQ(got, "changed");
	CHECK_STREQ(buf, "hello from the parent's copy");
	CHECK_EQ(utrace_mem__read_str(pid, (uintptr_t)buf, got, sizeof(got)), 7);
	CHECK_STREQ(got, "changed");
	close(wfd);
	waitpid(pid, NULL, 0);
}

TEST(mem_write_code_page)
{
	/* Code pages are read-only: process_vm_writev fails, /proc/PID/mem works. */
	unsigned char orig[4], patched[4] = { 0xcc, 0xcc, 0xcc, 0xcc }, got[4];
	uint64_t addr = (uintptr_t)&spawn_idle;
	int wfd;
	pid_t pid = spawn_idle(&wfd);

	CHECK_EQ(utrace_mem__read(pid, addr, orig, 4), 4);
	CHECK_MEMEQ(orig, (void *)&spawn_idle, 4);
	CHECK_EQ(utrace_mem__write(pid, addr, patched, 4), 4);
	CHECK_EQ(utrace_mem__read(pid, addr, got, 4), 4);
	CHECK_MEMEQ(got, patched, 4);
	CHECK_MEMEQ(orig, (void *)&spawn_idle, 4); /* our own copy is untouched */
	CHECK_EQ(utrace_mem__write(pid, addr, orig, 4), 4);
	kill(pid, SIGKILL);
	close(wfd);
	waitpid(pid, NULL, 0);
}

TEST(mem_unmapped_and_gone)
{
	char c, *page;
	int wfd;
	pid_t pid = spawn_idle(&wfd);

	page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED);
	munmap(page, 4096); /* unmapped in the child too: it forked earlier */
	CHECK_EQ(utrace_mem__read(pid, 8, &c, 1), -EFAULT);
	CHECK_EQ(utrace_mem__write(pid, 8, &c, 1), -EFAULT);
	close(wfd);
	waitpid(pid, NULL, 0);
	CHECK_EQ(utrace_mem__read(pid, (uintptr_t)&c, &c, 1), -ESRCH);
	CHECK_EQ(utrace_proc__check_access(pid), -ESRCH);
	CHECK(utrace_maps__read(pid) == NULL && errno == ESRCH);
}

TEST(threads_of_sleeper)
{
	char *argv[] = { (char *)harness_build_path("tests/targets/s-sleeper"), "5", "30", NULL };
	char line[128];
	pid_t pid, *tids = NULL;
	size_t nr = 0;
	FILE *f;
	int p[2];

	CHECK(pipe(p) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	CHECK(fgets(line, sizeof(line), f));
	CHECK(!strncmp(line, "ready ", 6));
	CHECK_EQ(utrace_proc__threads(pid, &tids, &nr), 0);
	CHECK_EQ(nr, 6);
	CHECK_EQ(tids[0], pid);
	CHECK_EQ(utrace_proc__check_access(pid), 0);
	CHECK_EQ(utrace_proc__tracer(pid), 0);
	{
		char exe[4096];

		CHECK(utrace_proc__exe(pid, exe, sizeof(exe)) > 0);
		CHECK(strstr(exe, "s-sleeper"));
	}
	free(tids);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK_EQ(utrace_proc__threads(pid, &tids, &nr), -ESRCH);
}

TEST(access_denied)
{
	int wfd;
	pid_t pid;

	if (geteuid() != 0)
		SKIP("needs root to create a process of another user");
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* Another uid, and we drop our privileges below to check as a user. */
		if (setuid(65534))
			_exit(1);
		pause();
		_exit(0);
	}
	(void)wfd;
	usleep(100000);
	{
		pid_t checker = fork();
		int status;

		if (checker == 0) {
			if (setgid(65533) || setuid(65533))
				_exit(3);
			_exit(utrace_proc__check_access(pid) == -EACCES ||
					       utrace_proc__check_access(pid) == -EPERM
				       ? 0
				       : 2);
		}
		waitpid(checker, &status, 0);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		CHECK(WIFEXITED(status));
		CHECK_EQ(WEXITSTATUS(status), 0);
	}
}
