/* SPDX-License-Identifier: MIT */
/*
 * proc.c - the process layer: /proc/PID/maps, threads, access checks and
 * bulk memory access. Runs in the tracer process; never stops the target.
 *
 * Memory access prefers process_vm_readv/writev (one syscall, no ptrace
 * stop needed). They honour page protections, so reading execute-only code
 * or writing code pages falls back to /proc/PID/mem, which goes through the
 * kernel's FOLL_FORCE path like PTRACE_POKETEXT (copy-on-write for private
 * file mappings: the file on disk is never changed).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "utrace/proc.h"
#include "internal.h"

static char *read_text_file(const char *path, int *err)
{
	size_t cap = 16384, len = 0;
	char *buf = malloc(cap);
	int fd;

	if (!buf) {
		*err = -ENOMEM;
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*err = -errno;
		free(buf);
		return NULL;
	}
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				*err = -ENOMEM;
				goto err_free;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			*err = -errno;
			goto err_free;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;

err_free:
	close(fd);
	free(buf);
	return NULL;
}

static int parse_map_line(char *line, struct utrace_map *m)
{
	unsigned long long start, end, off, inode;
	unsigned int maj, min;
	char perms[8];
	int pos = 0;
	char *path;
	size_t len;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min,
		   &inode, &pos) < 7 ||
	    pos == 0 || strlen(perms) != 4 || end < start)
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->offset = off;
	m->dev_major = maj;
	m->dev_minor = min;
	m->inode = inode;
	if (perms[0] == 'r')
		m->prot |= UTRACE_MAP_READ;
	if (perms[1] == 'w')
		m->prot |= UTRACE_MAP_WRITE;
	if (perms[2] == 'x')
		m->prot |= UTRACE_MAP_EXEC;
	if (perms[3] == 's')
		m->prot |= UTRACE_MAP_SHARED;
	path = line + pos;
	while (*path == ' ')
		path++;
	len = strlen(path);
	if (len == 0)
		return 0;
	if (len > 10 && !strcmp(path + len - 10, " (deleted)")) {
		path[len - 10] = '\0';
		m->deleted = true;
	}
	m->path = strdup(path);
	return m->path ? 0 : -ENOMEM;
}

struct utrace_maps *utrace_maps__parse(const char *text)
{
	struct utrace_maps *maps = calloc(1, sizeof(*maps));
	char *copy = strdup(text ? text : ""), *line, *save = NULL;
	size_t cap = 0;
	int err = 0;

	if (!maps || !copy) {
		err = -ENOMEM;
		goto err_free;
	}
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (maps->nr == cap) {
			struct utrace_map *nm;

			cap = cap ? cap * 2 : 64;
			nm = realloc(maps->maps, cap * sizeof(*nm));
			if (!nm) {
				err = -ENOMEM;
				goto err_free;
			}
			maps->maps = nm;
		}
		err = parse_map_line(line, &maps->maps[maps->nr]);
		if (err)
			goto err_free;
		maps->nr++;
	}
	free(copy);
	return maps;

err_free:
	free(copy);
	utrace_maps__free(maps);
	errno = -err;
	return NULL;
}

struct utrace_maps *utrace_maps__read(pid_t pid)
{
	struct utrace_maps *maps;
	char path[64];
	char *text;
	int err = 0;

	if (pid < 0) {
		errno = EINVAL;
		return NULL;
	}
	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/maps");
	else
		snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	text = read_text_file(path, &err);
	if (!text) {
		errno = err == -ENOENT ? ESRCH : -err;
		return NULL;
	}
	/* A zombie or a kernel thread has an empty maps file. */
	maps = utrace_maps__parse(text);
	free(text);
	return maps;
}

void utrace_maps__free(struct utrace_maps *maps)
{
	size_t i;

	if (!maps)
		return;
	for (i = 0; i < maps->nr; i++)
		free(maps->maps[i].path);
	free(maps->maps);
	free(maps);
}

const struct utrace_map *utrace_maps__find(const struct utrace_maps *maps, uint64_t addr)
{
	size_t lo = 0, hi = maps ? maps->nr : 0;

	/* /proc/PID/maps is sorted by address: binary search. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct utrace_map *m = &maps->maps[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int utrace_proc__threads(pid_t pid, pid_t **ret_tids, size_t *ret_nr)
{
	pid_t *tids = NULL;
	size_t nr = 0, cap = 0;
	struct dirent *de;
	char path[64];
	DIR *dir;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(dir))) {
		char *end;
		long tid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		tid = strtol(de->d_name, &end, 10);
		if (*end || tid <= 0)
			continue;
		if (nr == cap) {
			pid_t *nt;

			cap = cap ? cap * 2 : 16;
			nt = realloc(tids, cap * sizeof(*nt));
			if (!nt) {
				free(tids);
				closedir(dir);
				return -ENOMEM;
			}
			tids = nt;
		}
		tids[nr++] = (pid_t)tid;
	}
	closedir(dir);
	if (nr == 0) {
		free(tids);
		return -ESRCH;
	}
	qsort(tids, nr, sizeof(*tids), cmp_pid);
	*ret_tids = tids;
	*ret_nr = nr;
	return 0;
}

int utrace_proc__exe(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;

	if (pid <= 0 || size == 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, size - 1);
	if (n < 0) {
		if (errno == ENOENT && access(path, F_OK) && errno == ENOENT) {
			snprintf(path, sizeof(path), "/proc/%d", pid);
			return access(path, F_OK) ? -ESRCH : -ENOENT;
		}
		return -errno;
	}
	if ((size_t)n >= size - 1)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return (int)n;
}

/* Reads "Key:\tvalue" from /proc/PID/status. */
int proc_status_field(pid_t pid, const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key);
	char path[64];
	char *text, *line, *save = NULL;
	int err = 0, ret = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	text = read_text_file(path, &err);
	if (!text)
		return err == -ENOENT ? -ESRCH : err;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			const char *v = line + klen + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			snprintf(buf, size, "%s", v);
			ret = 0;
			break;
		}
	}
	free(text);
	return ret;
}

const char *proc_stat_fields(pid_t pid, char *buf, size_t size)
{
	char path[64], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0) {
		errno = ESRCH; /* opened, then reaped */
		return NULL;
	}
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: the fields start after the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		errno = EINVAL;
	return p ? p + 1 : NULL;
}

bool proc_exiting(pid_t pid)
{
	char buf[1024], state;
	const char *f = proc_stat_fields(pid, buf, sizeof(buf));
	unsigned long flags;

	if (!f)
		return errno == ENOENT || errno == ESRCH; /* gone (or reaped while read) */
	if (sscanf(f, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return false;
	return state == 'Z' || state == 'X' || (flags & 0x4 /* PF_EXITING */);
}

int utrace_proc__blocks_signal(pid_t pid, int sig, pid_t *ret_tid)
{
	pid_t *tids = NULL;
	size_t nr = 0, i;
	int err, ret = 0;

	if (sig < 1 || sig > 64)
		return -EINVAL;
	err = utrace_proc__threads(pid, &tids, &nr);
	if (err)
		return err;
	for (i = 0; i < nr && !ret; i++) {
		char buf[32];

		/* /proc/TID/status is the thread's own; a thread gone meanwhile is no matter */
		if (proc_status_field(tids[i], "SigBlk", buf, sizeof(buf)))
			continue;
		if ((strtoull(buf, NULL, 16) >> (sig - 1)) & 1) {
			ret = 1;
			if (ret_tid)
				*ret_tid = tids[i];
		}
	}
	free(tids);
	return ret;
}

int utrace_proc__tracer(pid_t pid)
{
	char buf[32];
	int err;

	if (pid <= 0)
		return -EINVAL;
	err = proc_status_field(pid, "TracerPid", buf, sizeof(buf));
	if (err)
		return err;
	return atoi(buf);
}

int utrace_proc__check_access(pid_t pid)
{
	char path[64], state[32];
	int fd, err;

	if (pid <= 0)
		return -ESRCH;
	err = proc_status_field(pid, "State", state, sizeof(state));
	if (err)
		return err;
	if (state[0] == 'Z' || state[0] == 'X')
		return -ESRCH;
	/*
	 * Opening /proc/PID/mem performs the same PTRACE_MODE_ATTACH check
	 * that ptrace(PTRACE_SEIZE) does (uid match, dumpable, Yama,
	 * capabilities), without touching the target.
	 */
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	close(fd);
	return 0;
}

static ssize_t mem_rw_procfs(pid_t pid, uint64_t addr, void *buf, size_t len, bool write)
{
	char path[64];
	size_t done = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	while (done < len) {
		ssize_t n =
			write ? pwrite(fd, (char *)buf + done, len - done, (off_t)(addr + done)) :
				pread(fd, (char *)buf + done, len - done, (off_t)(addr + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? -errno : -EFAULT;

			close(fd);
			/* EIO from /proc/PID/mem means an unmapped address. */
			return err == -EIO ? -EFAULT : err;
		}
		done += n;
	}
	close(fd);
	return (ssize_t)len;
}

static ssize_t mem_rw(pid_t pid, uint64_t addr, void *buf, size_t len, bool write)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (pid <= 0 || (addr + len < addr))
		return -EINVAL;
	if (len == 0)
		return 0;
	n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0) :
		    process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return n;
	if (n < 0 && errno == ESRCH)
		return -ESRCH;
	/*
	 * Short transfer, EFAULT (protection, e.g. code pages for a write),
	 * ENOSYS or EPERM under some LSMs: retry everything through
	 * /proc/PID/mem, which uses FOLL_FORCE.
	 */
	return mem_rw_procfs(pid, addr, buf, len, write);
}

ssize_t utrace_mem__read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return mem_rw(pid, addr, buf, len, false);
}

ssize_t utrace_mem__write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	return mem_rw(pid, addr, (void *)buf, len, true);
}

ssize_t utrace_mem__read_str(pid_t pid, uint64_t addr, char *buf, size_t size)
{
	size_t done = 0;

	if (size == 0)
		return -EINVAL;
	/* Read page by page so a string that ends near an unmapped page works. */
	while (done < size - 1) {
		uint64_t a = addr + done;
		size_t chunk = 4096 - (a & 4095);
		ssize_t n;
		char *nul;

		if (chunk > size - 1 - done)
			chunk = size - 1 - done;
		n = utrace_mem__read(pid, a, buf + done, chunk);
		if (n < 0) {
			if (done == 0)
				return n;
			break;
		}
		nul = memchr(buf + done, '\0', chunk);
		if (nul)
			return nul - buf;
		done += chunk;
	}
	buf[done] = '\0';
	return (ssize_t)done;
}
