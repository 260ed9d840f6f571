/* SPDX-License-Identifier: MIT */
/*
 * launch.c - before COMMAND starts: find it as execvp() does, so that a
 * command that cannot run is said on one line with the shell's status; and
 * decide, before anything runs, whether the agent can be preloaded into it
 * (-b auto must not start a command once with the agent, see it did not
 * load, and start it again with ptrace: a command runs exactly once).
 * Tracer process.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "utrace/inject.h"
#include "cli.h"
#include "launch.h"

/* What execve() of @path would fail with (0: it would run), as execvp() sees it. */
static int exec_error(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return errno;
	if (S_ISDIR(st.st_mode))
		return EISDIR; /* execve() says EACCES; strace and bash say this */
	if (!S_ISREG(st.st_mode) || access(path, X_OK))
		return EACCES;
	return 0;
}

int launch_resolve(const char *cmd, char *path, size_t size)
{
	const char *dirs = getenv("PATH"), *p;
	int err = ENOENT;

	if (!*cmd) {
		err = ENOENT;
	} else if (strchr(cmd, '/')) {
		snprintf(path, size, "%s", cmd);
		err = exec_error(path);
	} else {
		/* execvp(): the first that runs; EACCES if some could not, else ENOENT */
		for (p = dirs ? dirs : "/bin:/usr/bin"; p;) {
			const char *colon = strchr(p, ':');
			size_t len = colon ? (size_t)(colon - p) : strlen(p);
			int e;

			snprintf(path, size, "%.*s/%s", (int)len, len ? p : ".", cmd);
			e = exec_error(path);
			if (!e)
				return 0;
			if (e != ENOENT && e != ENOTDIR)
				err = EACCES; /* a directory in PATH is not run either */
			p = colon ? colon + 1 : NULL;
		}
	}
	if (!err)
		return 0;
	if (err == ENOENT && !strchr(cmd, '/'))
		cli_error("cannot run '%s': command not found (check the name and PATH)", cmd);
	else if (err == EISDIR)
		cli_error("cannot run '%s': Is a directory (give the program to run)", cmd);
	else if (err == EACCES)
		cli_error("cannot run '%s': Permission denied (not an executable file: check its "
			  "mode and the name)",
			  cmd);
	else
		cli_error("cannot run '%s': %s (check the name)", cmd, strerror(err));
	return err == ENOENT || err == ENOTDIR ? 127 : 126;
}

/* A setuid/setgid file, or one with capabilities: does ld.so run it in secure mode? */
static bool secure_exec(const char *path, const struct stat *st)
{
	struct statvfs vfs;

	if (!statvfs(path, &vfs) && (vfs.f_flag & ST_NOSUID))
		return false; /* the bits are ignored there */
	if ((st->st_mode & S_ISUID) && st->st_uid != getuid())
		return true;
	if ((st->st_mode & S_ISGID) && (st->st_mode & S_IXGRP) && st->st_gid != getgid())
		return true;
	/* file capabilities: AT_SECURE for anyone but root (commoncap.c) */
	return getuid() != 0 && getxattr(path, "security.capability", NULL, 0) >= 0;
}

/* An ELF program: has it a PT_INTERP (ld.so, which does LD_PRELOAD)? */
static const char *elf_why(int fd, const char *path, char *why, size_t size)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int i;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		snprintf(why, size, "'%s' is not a 64-bit x86-64 program", path);
		return why;
	}
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
		    (ssize_t)sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP)
			return NULL;
	}
	snprintf(why, size, "'%s' is statically linked", path);
	return why;
}

const char *launch_agent_why(const char *path, char *why, size_t size)
{
	char buf[256 + 1], cur[4096];
	int depth;

	snprintf(cur, sizeof(cur), "%s", path);
	/* the kernel follows at most 4 levels of #! (BINPRM_MAX_RECURSION) */
	for (depth = 0; depth < 5; depth++) {
		struct stat st;
		const char *r;
		char *p, *e;
		ssize_t n;
		int fd = open(cur, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st)) {
			snprintf(why, size, "cannot read '%s': %s", cur, strerror(errno));
			if (fd >= 0)
				close(fd);
			return why;
		}
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n < 2 || buf[0] != '#' || buf[1] != '!') {
			/* a script's own setuid bits are ignored: only a program's count */
			if (secure_exec(cur, &st)) {
				snprintf(why, size,
					 "'%s' is setuid, setgid or has file capabilities "
					 "(ld.so ignores LD_PRELOAD there)",
					 cur);
				r = why;
			} else {
				r = elf_why(fd, cur, why, size);
			}
			close(fd);
			return r;
		}
		close(fd);
		buf[n] = '\0';
		for (p = buf + 2; *p == ' ' || *p == '\t'; p++)
			;
		for (e = p; *e && *e != ' ' && *e != '\t' && *e != '\n'; e++)
			;
		*e = '\0';
		if (!*p) {
			snprintf(why, size, "'%s' has no interpreter after #!", cur);
			return why;
		}
		snprintf(cur, sizeof(cur), "%s", p);
	}
	snprintf(why, size, "'%s': too many levels of #! interpreters", path);
	return why;
}

/* ---- where the agent is -------------------------------------------------- */

static char agent_unsafe[2 * PATH_MAX + 512]; /* why $UTRACE_AGENT is not used */

/*
 * Does @path name a regular file that only its owner or root can change, in
 * directories only they can change? The rule of utrace_session__inject(),
 * for the agent preloaded at a launch as for one injected into a process.
 */
static bool safe_file(const char *path)
{
	char why[PATH_MAX + 128];

	if (utrace_inject__check_path(path, why, sizeof(why)) == 0)
		return true;
	snprintf(agent_unsafe, sizeof(agent_unsafe), "UTRACE_AGENT '%s' is not safe: %s", path,
		 why);
	return false;
}

const char *trace_agent_unsafe(void)
{
	return agent_unsafe;
}

const char *trace_agent_path(void)
{
	static char path[PATH_MAX + 64];
	char exe[PATH_MAX], real[PATH_MAX], *slash;
	const char *env = getenv("UTRACE_AGENT");
	ssize_t n;

	agent_unsafe[0] = '\0';
	if (env && *env)
		return safe_file(env) ? env : NULL;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			/* the build tree: build/cli/utrace, build/agent/libutrace-agent.so */
			snprintf(path, sizeof(path), "%s/../agent/libutrace-agent.so", exe);
			/* absolute, no '..': utrace_inject() checks every directory */
			if (safe_file(path) && realpath(path, real)) {
				snprintf(path, sizeof(path), "%s", real);
				return path;
			}
		}
	}
#ifdef UTRACE_LIBDIR
	snprintf(path, sizeof(path), "%s/utrace/libutrace-agent.so", UTRACE_LIBDIR);
	if (safe_file(path))
		return path;
#endif
	return NULL;
}
