/* SPDX-License-Identifier: MIT */
/*
 * trace-util.c - helpers of the function-tracing e2e tests (test-trace,
 * test-trace-agent, test-agent-kill, test-agent-sessions, ...): run utrace
 * and python3, count what they printed, start the background target, check
 * a process's code against its file and that no thread stays traced.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "trace-util.h"

const char *utrace(void)
{
	const char *u = getenv("UTRACE");

	return u ? u : harness_build_path("cli/utrace");
}

const char *target(void)
{
	return harness_build_path("tests/targets/s-trace");
}

int count(const char *hay, const char *needle)
{
	int n = 0;

	for (; hay && (hay = strstr(hay, needle)); hay += strlen(needle))
		n++;
	return n;
}

int count_lines(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		if (*s == '\n')
			n++;
	return n;
}

/* "key=N" in the target's output */
long target_count(const char *out, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "%s=", key);
	p = out ? strstr(out, k) : NULL;
	return p ? atol(p + strlen(k)) : -1;
}

/* harness_note() per line: TAP wants every diagnostic line to start with '#' */
void note_lines(const char *text)
{
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		harness_note("%.*s", len, p);
		p = nl ? nl + 1 : NULL;
	}
}

/* Run utrace with @args (NULL-terminated), capture both streams. */
int run_utrace(const char *const *args, char **out, char **err)
{
	char *argv[64];
	int i = 0;

	argv[i++] = (char *)utrace();
	while (*args && i < 63)
		argv[i++] = (char *)*args++;
	argv[i] = NULL;
	return harness_run(argv, out, err, 120);
}

/*
 * Debian's python3 (scripts/deps.sh installs it) rather than the first one
 * in PATH: a version manager's shim there (pyenv) is a shell script that
 * takes seconds to start, and traced it is a chain of execs of bash.
 */
const char *python3(void)
{
	return access("/usr/bin/python3", X_OK) ? "python3" : "/usr/bin/python3";
}

/* python3 SCRIPT FILE: exit 0 and prints its verdict */
int run_python(const char *script, const char *file, char **out)
{
	char *argv[] = { (char *)python3(), "-c", (char *)script, (char *)file, NULL };
	char *err = NULL;
	int rc = harness_run(argv, out, &err, 60);

	if (rc)
		note_lines(err ? err : "python3 failed");
	free(err);
	return rc;
}

const char *built_path(const char *rel)
{
	static char paths[8][4096];
	static unsigned int next;
	char *path = paths[next++ % 8];

	snprintf(path, sizeof(paths[0]), "%s/%s", getenv("UTRACE_BUILD_DIR") ?: "build", rel);
	return path;
}

char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			char *b = realloc(buf, cap + 65536);

			if (!b)
				break;
			buf = b;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	if (buf)
		buf[len] = 0;
	return buf;
}

/* tests/targets/s-life, the kill and session tests' target. */
const char *life(void)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/tests/targets/s-life",
		 getenv("UTRACE_BUILD_DIR") ?: "build");
	return path;
}

uint64_t life_sum(uint64_t threads, uint64_t batches)
{
	uint64_t sum = 0, t, x;

	for (t = 0; t < threads; t++)
		for (x = 0; x < batches * 200; x++) { /* s-life's BATCH */
			uint64_t a = t * 1000003ULL + x;

			sum += ((a * 2654435761ULL) * 31 + 7) ^ (a >> 3);
		}
	return sum;
}

/* Threads of @pid that have a tracer. */
int traced_threads(pid_t pid)
{
	char path[320], line[256];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "TracerPid:", 10) && atoi(line + 10) != 0)
				n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/*
 * Every r-xp mapping of @pid's program equals the file. Return: mappings
 * compared (> 0), or -1 on a difference or error.
 */
int code_matches_file(pid_t pid)
{
	char path[64], line[512], exe[256];
	FILE *maps;
	int mem, fd, n = 0;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	len = readlink(path, exe, sizeof(exe) - 1);
	if (len <= 0)
		return -1;
	exe[len] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (!maps || mem < 0 || fd < 0) {
		if (maps)
			fclose(maps);
		if (mem >= 0)
			close(mem);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (fgets(line, sizeof(line), maps) && n >= 0) {
		unsigned long start, end, off;
		char perms[8], file[256] = "";
		char *a, *b;
		size_t sz;

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255s", &start, &end, perms, &off, file) <
			    4 ||
		    strcmp(perms, "r-xp") || strcmp(file, exe))
			continue;
		sz = end - start;
		a = malloc(sz);
		b = calloc(1, sz);
		if (!a || !b || pread(mem, a, sz, (off_t)start) != (ssize_t)sz ||
		    pread(fd, b, sz, (off_t)off) <= 0 || memcmp(a, b, sz))
			n = -1;
		else
			n++;
		free(a);
		free(b);
	}
	fclose(maps);
	close(mem);
	close(fd);
	return n ? n : -1;
}

/* s-trace loop in the background; its stdin is our pipe */
struct bg bg_start(void)
{
	return bg_start_mode(NULL);
}

struct bg bg_start_mode(const char *mode)
{
	int pin[2], pout[2];
	struct bg b;
	char line[64] = "";
	ssize_t n;

	CHECK(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	b.pid = fork();
	CHECK(b.pid >= 0);
	if (b.pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execl(target(), "s-trace", "loop", mode, (char *)NULL);
		_exit(99);
	}
	close(pin[0]);
	close(pout[1]);
	b.in = pin[1];
	b.out = pout[0];
	n = read(b.out, line, sizeof(line) - 1);
	CHECK_MSG(n > 0 && !strncmp(line, "ready ", 6), "target said '%s'", line);
	return b;
}

/* close the target's stdin: it checks work() still computes, prints ok */
void bg_finish(struct bg *b)
{
	char buf[256] = "";
	ssize_t n, len = 0;
	int status;

	close(b->in);
	while ((n = read(b->out, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	CHECK(waitpid(b->pid, &status, 0) == b->pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "target status %#x", status);
	CHECK(strstr(buf, "ok\n"));
	close(b->out);
}

/* A child of @u (any of its threads) running @exe: the command has exec'ed. */
pid_t launched(pid_t u, const char *exe)
{
	char path[96], buf[256];
	struct dirent *de;
	pid_t found = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)u);
	d = opendir(path);
	while (d && !found && (de = readdir(d))) {
		FILE *f;
		int c;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)u, de->d_name);
		f = fopen(path, "re");
		while (f && !found && fscanf(f, "%d", &c) == 1) {
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%d/exe", c);
			n = readlink(path, buf, sizeof(buf) - 1);
			if (n > 0) {
				buf[n] = 0;
				if (!strcmp(buf, exe))
					found = c;
			}
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

/* The calls of @fn in a -c summary: 0 if the table has no row for it, -1 if no table. */
long summary_calls(const char *summary, const char *fn)
{
	char *text = strdup(summary), *line, *save = NULL;
	long calls = strstr(text, "% time") ? 0 : -1;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tok[16], *s2 = NULL, *w;
		int nt = 0;

		for (w = strtok_r(line, " ", &s2); w && nt < 16; w = strtok_r(NULL, " ", &s2))
			tok[nt++] = w;
		if (nt >= 7 && !strcmp(tok[nt - 1], fn))
			calls = atol(tok[3]);
	}
	free(text);
	return calls;
}
