/* SPDX-License-Identifier: MIT */
/*
 * test-image.c - process images and SPEC resolution (lib/image.c), checked
 * against what the dynamic linker itself says about this very process
 * (dl_iterate_phdr load biases, dlsym addresses) and against the stripped
 * test target's DT_NEEDED closure. No ptrace.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "utrace/utrace.h"
#include "harness.h"

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

struct bias_check {
	struct utrace_image *img;
	int checked;
};

static int check_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct bias_check *bc = arg;
	size_t i;

	if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_name[0] != '/')
		return 0; /* main program ("") or vdso */
	for (i = 0; i < utrace_image__object_count(bc->img); i++) {
		const struct utrace_object *o = utrace_image__object(bc->img, i);
		char a[4096], b[4096];

		if (!realpath(o->path, a) || !realpath(info->dlpi_name, b) || strcmp(a, b))
			continue;
		CHECK_MSG(o->bias == info->dlpi_addr, "%s: bias %#llx, ld.so says %#llx", o->path,
			  (unsigned long long)o->bias, (unsigned long long)info->dlpi_addr);
		CHECK(o->live);
		bc->checked++;
	}
	return 0;
}

TEST(open_pid_biases_match_ldso)
{
	struct utrace_image *img = utrace_image__open_pid(getpid());
	struct bias_check bc = { img, 0 };
	size_t i, mains = 0;

	CHECK(img);
	CHECK(utrace_image__object_count(img) >= 3);
	dl_iterate_phdr(check_one, &bc);
	CHECK(bc.checked >= 2); /* at least libc and ld.so */
	for (i = 0; i < utrace_image__object_count(img); i++) {
		const struct utrace_object *o = utrace_image__object(img, i);

		CHECK(o->path[0] == '/');
		CHECK(!strstr(o->path, "[vdso]"));
		mains += o->is_main;
		if (o->is_main)
			CHECK_STREQ(base(o->path), "test-image");
	}
	CHECK_EQ(mains, 1);
	CHECK(utrace_image__object(img, utrace_image__object_count(img)) == NULL);
	utrace_image__close(img);
	utrace_image__close(NULL);
}

static void resolve(struct utrace_image *img, const char *text, struct utrace_match **m, size_t *nr,
		    bool *pending, int want_err)
{
	struct utrace_spec spec;
	char err[256];
	int r;

	CHECK_MSG(utrace_spec__parse(text, &spec, err, sizeof(err)) == 0, "%s", err);
	r = utrace_image__resolve(img, &spec, m, nr, pending);
	CHECK_MSG(r == want_err, "'%s': %d, want %d", text, r, want_err);
	utrace_spec__clear(&spec);
}

TEST(resolve_in_self)
{
	struct utrace_image *img = utrace_image__open_pid(getpid());
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	struct utrace_match *m = NULL;
	size_t nr = 0, i;
	bool pending = true;

	CHECK(img);
	/* main executable, no OBJECT */
	resolve(img, "harness_run", &m, &nr, &pending, 0);
	CHECK_EQ(nr, 1);
	CHECK(!pending);
	CHECK_EQ(m[0].addr, (uintptr_t)&harness_run);
	CHECK(m[0].sym_size > 0);
	free(m);
	/* +OFFSET and 0xADDR */
	resolve(img, "harness_run+0x4", &m, &nr, NULL, 0);
	CHECK_EQ(nr, 1);
	CHECK_EQ(m[0].addr, (uintptr_t)&harness_run + 4);
	CHECK_EQ(m[0].offset, 4);
	{
		char spec[64];
		struct utrace_match *m2;
		size_t nr2;

		snprintf(spec, sizeof(spec), "0x%llx", (unsigned long long)m[0].file_addr);
		resolve(img, spec, &m2, &nr2, NULL, 0);
		CHECK_EQ(nr2, 1);
		CHECK_STREQ(m2[0].symbol, "harness_run");
		CHECK_EQ(m2[0].offset, 4);
		CHECK_EQ(m2[0].addr, (uintptr_t)&harness_run + 4);
		free(m2);
	}
	free(m);
	resolve(img, "harness_run+0x100000", &m, &nr, NULL, -ERANGE);
	/* a library by name: libc's own malloc (dlsym in libc, not an interposer) */
	if (libc) {
		resolve(img, "libc:malloc", &m, &nr, NULL, 0);
		CHECK(nr >= 1);
		CHECK_EQ(m[0].addr, (uintptr_t)dlsym(libc, "malloc"));
		CHECK_STREQ(base(utrace_image__object(img, m[0].object)->path), "libc.so.6");
		free(m);
	}
	/* globs over every object; sorted by object then address */
	resolve(img, "*:mem*", &m, &nr, NULL, 0);
	CHECK(nr > 5);
	for (i = 1; i < nr; i++)
		CHECK(m[i - 1].object < m[i].object ||
		      (m[i - 1].object == m[i].object && m[i - 1].file_addr <= m[i].file_addr));
	free(m);
	/* '?' and '[...]' globs */
	resolve(img, "harness_ru?", &m, &nr, NULL, 0);
	CHECK_EQ(nr, 1);
	CHECK_STREQ(m[0].symbol, "harness_run");
	free(m);
	resolve(img, "harness_[rs]*", &m, &nr, NULL, 0);
	CHECK(nr >= 2); /* harness_run, harness_skip */
	for (i = 0; i < nr; i++)
		CHECK(!strncmp(m[i].symbol, "harness_r", 9) ||
		      !strncmp(m[i].symbol, "harness_s", 9));
	free(m);
	/* pending, missing path, nothing */
	resolve(img, "libnotloadedatall:foo", &m, &nr, &pending, 0);
	CHECK(pending);
	CHECK_EQ(nr, 0);
	resolve(img, "/no/such/lib.so:foo", &m, &nr, &pending, -ENOENT);
	resolve(img, "no_such_function_at_all", &m, &nr, &pending, 0);
	CHECK(!pending);
	CHECK_EQ(nr, 0);
	if (libc)
		dlclose(libc);
	utrace_image__close(img);
}

TEST(open_exec_closure)
{
	const char *prog = harness_build_path("tests/targets/s-stripped");
	struct utrace_image *img;
	bool foo = false, libc = false, ldso = false;
	size_t i;

	if (access(prog, X_OK))
		SKIP("%s not built", prog);
	unsetenv("LD_LIBRARY_PATH"); /* found through DT_RUNPATH $ORIGIN alone */
	img = utrace_image__open_exec(prog);
	CHECK(img);
	CHECK(utrace_image__object(img, 0)->is_main);
	for (i = 0; i < utrace_image__object_count(img); i++) {
		const struct utrace_object *o = utrace_image__object(img, i);

		CHECK_EQ(o->bias, 0);
		CHECK(!o->live);
		foo |= !strcmp(base(o->path), "libfoo.so");
		libc |= !strcmp(base(o->path), "libc.so.6");
		ldso |= !strncmp(base(o->path), "ld-linux", 8);
		CHECK(utrace_image__elf(img, i) != NULL);
	}
	CHECK(foo && libc && ldso);
	utrace_image__close(img);

	/* LD_LIBRARY_PATH comes before DT_RUNPATH, as in ld.so */
	{
		char dir[] = "/tmp/utrace-test-image-XXXXXX", cmd[8192], want[4096];
		const char *lib = harness_build_path("tests/targets/libfoo.so");
		char *argv[] = { "cp", (char *)lib, dir, NULL };

		CHECK(mkdtemp(dir));
		CHECK_EQ(harness_run(argv, NULL, NULL, 10), 0);
		setenv("LD_LIBRARY_PATH", dir, 1);
		img = utrace_image__open_exec(prog);
		CHECK(img);
		snprintf(want, sizeof(want), "%s/libfoo.so", dir);
		foo = false;
		for (i = 0; i < utrace_image__object_count(img); i++)
			foo |= !strcmp(utrace_image__object(img, i)->path, want);
		CHECK_MSG(foo, "%s not used", want);
		utrace_image__close(img);
		unsetenv("LD_LIBRARY_PATH");
		snprintf(cmd, sizeof(cmd), "%s/libfoo.so", dir);
		unlink(cmd);
		rmdir(dir);
	}

	errno = 0;
	CHECK(utrace_image__open_exec("/no/such/program") == NULL);
	CHECK_EQ(errno, ENOENT);
	CHECK(utrace_image__open_exec("/etc/passwd") == NULL);
	CHECK_EQ(errno, UTRACE_ERRNO__ELF);
	/* a bare name is searched in PATH, like execvp */
	img = utrace_image__open_exec("sh");
	CHECK(img);
	utrace_image__close(img);
}

TEST(open_pid_errors)
{
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0)
		_exit(0);
	CHECK(waitpid(pid, NULL, 0) == pid);
	errno = 0;
	CHECK(utrace_image__open_pid(pid) == NULL);
	CHECK_EQ(errno, ESRCH);
}
