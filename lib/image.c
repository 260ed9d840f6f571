/* SPDX-License-Identifier: MIT */
/*
 * image.c - the ELF objects of a process image, and resolving SPECs against
 * them. Tracer process.
 *
 * Two ways to build an image:
 *
 * - utrace_image__open_pid(): from /proc/PID/maps. Every file-backed object
 *   with at least one executable mapping is an object; [vdso] and anonymous
 *   code are skipped. The load bias comes from the ELF program headers (read
 *   with two pread()s, without libelf, so that building the image of a
 *   process with a hundred libraries stays cheap): for a mapping at START of
 *   file offset OFF inside PT_LOAD segment P,
 *       bias = START - OFF - (P.p_vaddr - P.p_offset)
 *   which is exact because p_vaddr and p_offset are congruent modulo the
 *   page size. The ELF file is opened as /proc/PID/root/PATH (the target's
 *   mount namespace) and, if that fails or the file was deleted, as
 *   /proc/PID/map_files/START-END.
 *
 * - utrace_image__open_exec(): what ld.so would load for a launch: the
 *   executable, its PT_INTERP loader and the breadth-first DT_NEEDED
 *   closure. Each name is searched like ld.so does: DT_RPATH of the object
 *   and of the executable (only when the object has no DT_RUNPATH), then
 *   LD_LIBRARY_PATH, then DT_RUNPATH, then the directories of
 *   /etc/ld.so.conf (what ldconfig puts in /etc/ld.so.cache; the binary
 *   cache itself is not parsed), then the default directories. $ORIGIN is
 *   expanded. A candidate of another ELF
 *   class or machine is skipped, as ld.so does. A library that cannot be
 *   found is reported with pr_warn() and left out. Biases are 0.
 *
 * utrace_image__resolve() picks objects by the SPEC's OBJECT (see spec.c
 * for the name rules; a path is compared by device and inode, so
 * /lib/x86_64-linux-gnu/libc.so.6 and /usr/lib/x86_64-linux-gnu/libc.so.6
 * are the same object on a merged-/usr system), then symbols by PATTERN
 * with fnmatch(3). An OBJECT that is in no object of the image is
 * "pending" (it may be dlopen()ed later), unless it is a path that does
 * not exist (-ENOENT).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "utrace/proc.h"
#include "utrace/spec.h"
#include "internal.h"

struct image_obj {
	struct utrace_object pub;
	char *path; /* pub.path */
	char *open_path; /* where to open the ELF file */
	char *alt_path; /* second choice (map_files), or NULL */
	dev_t dev; /* identity, for OBJECT given as a path */
	ino_t ino;
	struct utrace_elf *elf;
	int elf_err; /* cached failure of opening @elf */
};

struct utrace_image {
	pid_t pid; /* 0 for an exec image */
	struct image_obj *objs;
	size_t nr;
};

static const char *const default_lib_dirs[] = {
	"/lib/x86_64-linux-gnu",
	"/usr/lib/x86_64-linux-gnu",
	"/lib64",
	"/usr/lib64",
	"/usr/lib",
	"/lib",
};

void image_set_bias(struct utrace_image *img, size_t i, uint64_t bias)
{
	if (img && i < img->nr && !img->pid)
		img->objs[i].pub.bias = bias;
}

size_t utrace_image__object_count(const struct utrace_image *img)
{
	return img ? img->nr : 0;
}

const struct utrace_object *utrace_image__object(const struct utrace_image *img, size_t i)
{
	if (!img || i >= img->nr)
		return NULL;
	return &img->objs[i].pub;
}

void utrace_image__close(struct utrace_image *img)
{
	size_t i;

	if (!img)
		return;
	for (i = 0; i < img->nr; i++) {
		utrace_elf__close(img->objs[i].elf);
		free(img->objs[i].path);
		free(img->objs[i].open_path);
		free(img->objs[i].alt_path);
	}
	free(img->objs);
	free(img);
}

static struct image_obj *add_obj(struct utrace_image *img, const char *path)
{
	struct image_obj *no = realloc(img->objs, (img->nr + 1) * sizeof(*no)), *o;

	if (!no)
		return NULL;
	img->objs = no;
	o = &img->objs[img->nr];
	memset(o, 0, sizeof(*o));
	o->path = strdup(path);
	if (!o->path)
		return NULL;
	o->pub.path = o->path;
	img->nr++;
	return o;
}

struct utrace_elf *utrace_image__elf(struct utrace_image *img, size_t i)
{
	struct image_obj *o;

	if (!img || i >= img->nr) {
		errno = EINVAL;
		return NULL;
	}
	o = &img->objs[i];
	if (o->elf)
		return o->elf;
	if (o->elf_err) {
		errno = o->elf_err;
		return NULL;
	}
	o->elf = utrace_elf__open(o->open_path ? o->open_path : o->path);
	if (!o->elf && o->alt_path)
		o->elf = utrace_elf__open(o->alt_path);
	if (!o->elf)
		o->elf_err = errno;
	return o->elf;
}

/* ---- live processes ---------------------------------------------------- */

/* Program headers of a 64-bit ELF file, read without libelf. */
static int read_phdrs(const char *path, Elf64_Phdr **ret, size_t *ret_nr)
{
	Elf64_Ehdr eh;
	Elf64_Phdr *ph;
	size_t sz;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum) {
		close(fd);
		return -UTRACE_ERRNO__ELF;
	}
	sz = (size_t)eh.e_phnum * sizeof(*ph);
	ph = malloc(sz);
	if (!ph)
		err = -ENOMEM;
	else if (pread(fd, ph, sz, (off_t)eh.e_phoff) != (ssize_t)sz)
		err = -UTRACE_ERRNO__ELF;
	close(fd);
	if (err) {
		free(ph);
		return err;
	}
	*ret = ph;
	*ret_nr = eh.e_phnum;
	return 0;
}

static int phdr_bias(const Elf64_Phdr *ph, size_t nr, uint64_t start, uint64_t off,
		     uint64_t *ret_bias)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t i;

	for (i = 0; i < nr; i++) {
		if (ph[i].p_type != PT_LOAD || off < (ph[i].p_offset & ~(page - 1)) ||
		    off >= ph[i].p_offset + MAX(ph[i].p_filesz, 1))
			continue;
		*ret_bias = start - off - (ph[i].p_vaddr - ph[i].p_offset);
		return 0;
	}
	return -ENOENT;
}

/* Fill bias, open paths and identity of object @o from its mappings. */
static int setup_live_obj(pid_t pid, struct image_obj *o, const struct utrace_maps *maps)
{
	const struct utrace_map *first = NULL;
	char buf[PATH_MAX + 64];
	Elf64_Phdr *ph = NULL;
	struct stat st;
	size_t i, nr = 0;
	bool deleted = false;
	int err = -ENOENT;

	for (i = 0; i < maps->nr; i++) {
		const struct utrace_map *m = &maps->maps[i];

		if (!m->path || strcmp(m->path, o->path))
			continue;
		if (!first)
			first = m;
		deleted |= m->deleted;
	}
	if (!first)
		return -ENOENT;
	o->dev = makedev(first->dev_major, first->dev_minor);
	o->ino = (ino_t)first->inode;
	snprintf(buf, sizeof(buf), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)first->start, (unsigned long long)first->end);
	o->alt_path = strdup(buf);
	snprintf(buf, sizeof(buf), "/proc/%d/root%s", (int)pid, o->path);
	o->open_path = strdup(buf);
	if (!o->open_path || !o->alt_path)
		return -ENOMEM;
	if (deleted || access(o->open_path, R_OK) ||
	    (!stat(o->open_path, &st) && st.st_ino != o->ino)) {
		/*
		 * map_files first: the path is gone, not reachable, or now
		 * names another file (upgraded package). With overlayfs,
		 * inode numbers may differ for the same file: then the
		 * fallback to the path is what works.
		 */
		char *t = o->open_path;

		o->open_path = o->alt_path;
		o->alt_path = t;
	}
	if (read_phdrs(o->open_path, &ph, &nr) && read_phdrs(o->alt_path, &ph, &nr)) {
		pr_debug("%s: cannot read program headers; assuming bias = start - offset\n",
			 o->path);
		o->pub.bias = first->start - first->offset;
		return 0;
	}
	for (i = 0; i < maps->nr && err; i++) {
		const struct utrace_map *m = &maps->maps[i];

		if (m->path && !strcmp(m->path, o->path))
			err = phdr_bias(ph, nr, m->start, m->offset, &o->pub.bias);
	}
	free(ph);
	if (err)
		o->pub.bias = first->start - first->offset;
	return 0;
}

static void strip_deleted(char *path)
{
	size_t n = strlen(path), d = strlen(" (deleted)");

	if (n > d && !strcmp(path + n - d, " (deleted)"))
		path[n - d] = '\0';
}

struct utrace_image *utrace_image__open_pid(pid_t pid)
{
	struct utrace_image *img;
	struct utrace_maps *maps;
	char exe[PATH_MAX];
	size_t i, j;
	int err;

	maps = utrace_maps__read(pid);
	if (!maps)
		return NULL;
	img = calloc(1, sizeof(*img));
	if (!img) {
		utrace_maps__free(maps);
		errno = ENOMEM;
		return NULL;
	}
	img->pid = pid;
	if (utrace_proc__exe(pid, exe, sizeof(exe)) < 0)
		exe[0] = '\0';
	strip_deleted(exe);
	for (i = 0; i < maps->nr; i++) {
		const struct utrace_map *m = &maps->maps[i];
		struct image_obj *o;

		if (!m->path || m->path[0] != '/' || !(m->prot & UTRACE_MAP_EXEC))
			continue;
		/* the agent's trampolines (agent/tramp.c): code, but no ELF object */
		if (!strncmp(m->path, "/memfd:utrace-", 14))
			continue;
		for (j = 0; j < img->nr; j++)
			if (!strcmp(img->objs[j].path, m->path))
				break;
		if (j < img->nr)
			continue;
		o = add_obj(img, m->path);
		if (!o) {
			err = -ENOMEM;
			goto err_free;
		}
		o->pub.live = true;
		o->pub.is_main = exe[0] && !strcmp(exe, m->path);
		err = setup_live_obj(pid, o, maps);
		if (err)
			goto err_free;
	}
	utrace_maps__free(maps);
	return img;

err_free:
	utrace_maps__free(maps);
	utrace_image__close(img);
	errno = -err;
	return NULL;
}

/* ---- launch mode ------------------------------------------------------- */

/* Append @dir to @buf, expanding $ORIGIN / ${ORIGIN}. */
static void expand_dir(const char *dir, size_t len, const char *origin, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	while (len && n + 1 < size) {
		size_t skip = 0;

		if (!strncmp(dir, "$ORIGIN", 7) && (len == 7 || dir[7] == '/'))
			skip = 7;
		else if (len >= 9 && !strncmp(dir, "${ORIGIN}", 9))
			skip = 9;
		if (skip) {
			n += snprintf(buf + n, size - n, "%s", origin);
			if (n >= size)
				n = size - 1;
			dir += skip;
			len -= skip;
			continue;
		}
		buf[n++] = *dir++;
		len--;
	}
	buf[n] = '\0';
}

static bool same_file(const struct image_obj *o, const struct stat *st)
{
	return o->dev == st->st_dev && o->ino == st->st_ino;
}

/* Try @dir/@name; on success *ret_elf is open and @out holds the path. */
static bool try_lib(const char *dir, const char *name, int class, int machine, char *out,
		    size_t size, struct utrace_elf **ret_elf)
{
	struct utrace_elf *elf;
	int c, m;

	if (!*dir)
		dir = ".";
	if ((size_t)snprintf(out, size, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
			     name) >= size ||
	    access(out, R_OK))
		return false;
	elf = utrace_elf__open(out);
	if (!elf)
		return false;
	elf_ident(elf, &c, &m);
	if (c != class || m != machine) {
		utrace_elf__close(elf);
		return false;
	}
	*ret_elf = elf;
	return true;
}

static bool search_list(const char *list, const char *origin, const char *name, int class,
			int machine, char *out, size_t size, struct utrace_elf **ret_elf)
{
	char dir[PATH_MAX];

	while (list && *list) {
		size_t len = strcspn(list, ":;");

		expand_dir(list, len, origin, dir, sizeof(dir));
		if (try_lib(dir, name, class, machine, out, size, ret_elf))
			return true;
		list += len;
		if (*list)
			list++;
	}
	return false;
}

static void dir_of(const char *path, char *buf, size_t size)
{
	char real[PATH_MAX], *slash;

	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	slash = strrchr(real, '/');
	if (slash == real)
		snprintf(buf, size, "/");
	else if (slash)
		snprintf(buf, size, "%.*s", (int)(slash - real), real);
	else
		snprintf(buf, size, ".");
}

/* Directories of /etc/ld.so.conf (and its includes), the ones ldconfig caches. */
struct dir_list {
	char **v;
	size_t nr;
};

static void dir_list_free(struct dir_list *dl)
{
	size_t i;

	for (i = 0; i < dl->nr; i++)
		free(dl->v[i]);
	free(dl->v);
	memset(dl, 0, sizeof(*dl));
}

static void read_ld_conf(const char *path, int depth, struct dir_list *dl)
{
	char line[PATH_MAX];
	FILE *f;

	if (depth > 4)
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end, **nv;

		p[strcspn(p, "#\n")] = '\0';
		p += strspn(p, " \t");
		for (end = p + strlen(p); end > p && (end[-1] == ' ' || end[-1] == '\t'); end--)
			end[-1] = '\0';
		if (!strncmp(p, "include", 7) && (p[7] == ' ' || p[7] == '\t')) {
			glob_t g;
			size_t i;

			p += 8 + strspn(p + 8, " \t");
			if (!glob(p, 0, NULL, &g)) {
				for (i = 0; i < g.gl_pathc; i++)
					read_ld_conf(g.gl_pathv[i], depth + 1, dl);
				globfree(&g);
			}
			continue;
		}
		if (p[0] != '/')
			continue; /* empty, or "hwcap" lines */
		nv = realloc(dl->v, (dl->nr + 1) * sizeof(*nv));
		if (!nv)
			break;
		dl->v = nv;
		dl->v[dl->nr] = strdup(p);
		if (dl->v[dl->nr])
			dl->nr++;
	}
	fclose(f);
}

/*
 * Find library @name needed by @req (whose DT_RPATH/DT_RUNPATH are in
 * @req_di), as ld.so would. Returns an open ELF and its path in @out.
 */
static bool find_lib(const char *name, const struct image_obj *req,
		     const struct elf_dyninfo *req_di, const struct elf_dyninfo *exe_di,
		     const char *exe_path, const struct dir_list *conf, int class, int machine,
		     char *out, size_t size, struct utrace_elf **ret_elf)
{
	char origin[PATH_MAX];
	size_t i;

	if (strchr(name, '/')) {
		dir_of(req->path, origin, sizeof(origin));
		expand_dir(name, strlen(name), origin, out, size);
		if (access(out, R_OK))
			return false;
		*ret_elf = utrace_elf__open(out);
		return *ret_elf != NULL;
	}
	dir_of(req->path, origin, sizeof(origin));
	if (!req_di->runpath) {
		if (search_list(req_di->rpath, origin, name, class, machine, out, size, ret_elf))
			return true;
		if (req_di != exe_di && !exe_di->runpath) {
			char exe_origin[PATH_MAX];

			dir_of(exe_path, exe_origin, sizeof(exe_origin));
			if (search_list(exe_di->rpath, exe_origin, name, class, machine, out, size,
					ret_elf))
				return true;
		}
	}
	if (search_list(getenv("LD_LIBRARY_PATH"), origin, name, class, machine, out, size,
			ret_elf))
		return true;
	if (search_list(req_di->runpath, origin, name, class, machine, out, size, ret_elf))
		return true;
	for (i = 0; i < conf->nr; i++) /* what ld.so.cache holds */
		if (try_lib(conf->v[i], name, class, machine, out, size, ret_elf))
			return true;
	for (i = 0; i < ARRAY_SIZE(default_lib_dirs); i++)
		if (try_lib(default_lib_dirs[i], name, class, machine, out, size, ret_elf))
			return true;
	return false;
}

/* Add an object for an opened ELF unless the same file is already there. */
static int add_exec_obj(struct utrace_image *img, const char *path, struct utrace_elf *elf,
			bool is_main, struct image_obj **ret)
{
	struct image_obj *o;
	struct stat st;
	size_t i;

	if (stat(path, &st)) {
		utrace_elf__close(elf);
		return -errno;
	}
	for (i = 0; i < img->nr; i++) {
		if (same_file(&img->objs[i], &st)) {
			utrace_elf__close(elf);
			*ret = NULL;
			return 0;
		}
	}
	o = add_obj(img, path);
	if (!o) {
		utrace_elf__close(elf);
		return -ENOMEM;
	}
	o->elf = elf;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	o->pub.is_main = is_main;
	*ret = o;
	return 0;
}

static int find_exe(const char *path, char *out, size_t size)
{
	const char *p = getenv("PATH");

	if (strchr(path, '/')) {
		if ((size_t)snprintf(out, size, "%s", path) >= size)
			return -ENAMETOOLONG;
		return access(out, F_OK) ? -errno : 0;
	}
	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p) {
		size_t len = strcspn(p, ":");

		snprintf(out, size, "%.*s/%s", (int)len, len ? p : ".", path);
		if (!access(out, X_OK))
			return 0;
		p += len;
		if (*p)
			p++;
	}
	return -ENOENT;
}

struct utrace_image *utrace_image__open_exec(const char *path)
{
	struct elf_dyninfo exe_di = { 0 };
	struct dir_list conf = { 0 };
	struct utrace_image *img;
	struct utrace_elf *elf;
	struct image_obj *o;
	char exe[PATH_MAX], lib[PATH_MAX];
	int class, machine, err;
	size_t done;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	err = find_exe(path, exe, sizeof(exe));
	if (err) {
		errno = -err;
		return NULL;
	}
	elf = utrace_elf__open(exe);
	if (!elf)
		return NULL;
	img = calloc(1, sizeof(*img));
	if (!img) {
		utrace_elf__close(elf);
		errno = ENOMEM;
		return NULL;
	}
	elf_ident(elf, &class, &machine);
	err = add_exec_obj(img, exe, elf, true, &o);
	if (err)
		goto err_free;
	err = elf_dyninfo_get(o->elf, &exe_di);
	if (err)
		goto err_free;
	if (exe_di.interp) {
		elf = utrace_elf__open(exe_di.interp);
		if (elf)
			err = add_exec_obj(img, exe_di.interp, elf, false, &o);
		else
			pr_warn("%s: program interpreter %s: %s\n", exe, exe_di.interp,
				strerror(errno));
		if (err)
			goto err_free;
	}
	read_ld_conf("/etc/ld.so.conf", 0, &conf);
	/* breadth-first over DT_NEEDED, as ld.so loads them */
	for (done = 0; done < img->nr; done++) {
		struct elf_dyninfo di = { 0 };
		size_t k;

		if (done == 0) {
			di = exe_di;
		} else {
			err = elf_dyninfo_get(img->objs[done].elf, &di);
			if (err)
				goto err_free;
		}
		for (k = 0; k < di.nr_needed; k++) {
			struct image_obj *req = &img->objs[done];

			if (!find_lib(di.needed[k], req, &di, &exe_di, exe, &conf, class, machine,
				      lib, sizeof(lib), &elf)) {
				pr_warn("%s: needed library %s not found\n", req->path,
					di.needed[k]);
				continue;
			}
			err = add_exec_obj(img, lib, elf, false, &o);
			if (err)
				break;
		}
		if (done)
			elf_dyninfo_clear(&di);
		if (err)
			goto err_free;
	}
	elf_dyninfo_clear(&exe_di);
	dir_list_free(&conf);
	return img;

err_free:
	elf_dyninfo_clear(&exe_di);
	dir_list_free(&conf);
	utrace_image__close(img);
	errno = -err;
	return NULL;
}

/* ---- resolution -------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Does @o match an OBJECT given as a path (@st from stat(), @real realpath)? */
static bool path_matches(const struct image_obj *o, const struct stat *st, const char *real)
{
	char r[PATH_MAX];

	if (same_file(o, st))
		return true;
	if (!strcmp(o->path, real))
		return true;
	return realpath(o->path, r) && !strcmp(r, real);
}

struct match_vec {
	struct utrace_match *v;
	size_t nr, cap;
};

static int match_push(struct match_vec *mv, const struct utrace_match *m)
{
	if (mv->nr == mv->cap) {
		size_t cap = mv->cap ? mv->cap * 2 : 64;
		struct utrace_match *nv = realloc(mv->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		mv->v = nv;
		mv->cap = cap;
	}
	mv->v[mv->nr++] = *m;
	return 0;
}

static int match_cmp(const void *a, const void *b)
{
	const struct utrace_match *x = a, *y = b;
	int c;

	if (x->object != y->object)
		return x->object < y->object ? -1 : 1;
	if (x->file_addr != y->file_addr)
		return x->file_addr < y->file_addr ? -1 : 1;
	c = (int)(x->sym_flags & UTRACE_SYM_ALIAS) - (int)(y->sym_flags & UTRACE_SYM_ALIAS);
	if (c)
		return c;
	if (!x->symbol || !y->symbol)
		return !x->symbol - !y->symbol;
	return strcmp(x->symbol, y->symbol);
}

/*
 * C++ names: a PATTERN with "::" is matched against the demangled names of
 * the "_Z" symbols: whole ("Foo::bar(int) const"), without the parameters
 * ("Foo::bar"), and without a template's return type ("ns::twice<int>"),
 * so "Foo::bar*" matches _ZNK3Foo3barEi. The demangler is libstdc++'s, taken
 * where the program using the library has it (the utrace command links
 * it); without it such a PATTERN matches nothing. Tracer process.
 */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status)
	__attribute__((weak));

static bool name_matches(const char *pattern, bool glob, const char *name)
{
	return glob ? !fnmatch(pattern, name, 0) : !strcmp(pattern, name);
}

static bool demangled_matches(const char *pattern, bool glob, const char *name)
{
	char *d, *p, *base = NULL;
	bool hit;
	int st = -1, depth = 0;

	if (strncmp(name, "_Z", 2) || !__cxa_demangle)
		return false;
	d = __cxa_demangle(name, NULL, NULL, &st);
	if (!d || st) {
		free(d);
		return false;
	}
	hit = name_matches(pattern, glob, d);
	/*
	 * Then without the parameters ("ns::f"), and without a template's
	 * return type ("int ns::twice<int>"): the name as it is written
	 */
	for (p = d; !hit && *p; p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>')
			depth--;
		else if (*p == ' ' && !depth)
			base = p + 1;
		else if (*p == '(' && !depth && p > d) {
			*p = '\0';
			hit = name_matches(pattern, glob, d) ||
			      (base && name_matches(pattern, glob, base));
			break;
		}
	}
	free(d);
	return hit;
}

/*
 * @name against /REGEX/ @re: the symbol, or a C++ one demangled (whole,
 * as nm -C shows it), as ltrace's /regex/ rules.
 */
static bool regex_matches(const regex_t *re, const char *name)
{
	char *d;
	bool hit;
	int st = -1;

	if (!regexec(re, name, 0, NULL, 0))
		return true;
	if (strncmp(name, "_Z", 2) || !__cxa_demangle)
		return false;
	d = __cxa_demangle(name, NULL, NULL, &st);
	hit = d && !st && !regexec(re, d, 0, NULL, 0);
	free(d);
	return hit;
}

/* Matches of @spec in object @idx; *too_short counts names past their size. */
static int resolve_obj(struct utrace_image *img, size_t idx, struct utrace_elf *elf,
		       const struct utrace_spec *spec, struct match_vec *mv, size_t *too_short)
{
	uint64_t bias = img->objs[idx].pub.bias;
	size_t i, n = utrace_elf__sym_count(elf);
	bool want_plt = spec->flags & UTRACE_SPEC_PLT;
	bool glob = spec->flags & UTRACE_SPEC_GLOB;
	bool cxx = spec->pattern && strstr(spec->pattern, "::");
	bool rx = spec->flags & UTRACE_SPEC_REGEX;
	regex_t re;
	int err = 0;

	if (spec->flags & UTRACE_SPEC_ADDR) {
		const struct utrace_sym *s;
		struct utrace_match m = { .object = idx };

		if (!elf_addr_is_code(elf, spec->addr))
			return 0;
		s = utrace_elf__find_sym(elf, spec->addr);
		m.file_addr = spec->addr;
		m.addr = spec->addr + bias;
		if (s) {
			m.symbol = s->name;
			m.sym_size = s->size;
			m.offset = spec->addr - s->addr;
			m.sym_flags = s->flags;
		}
		return match_push(mv, &m);
	}
	if (rx && regcomp(&re, spec->pattern, REG_EXTENDED | REG_NOSUB))
		return -UTRACE_ERRNO__SPEC; /* (utrace_spec__parse() compiled it) */
	for (i = 0; i < n && !err; i++) {
		const struct utrace_sym *s = utrace_elf__sym(elf, i);
		struct utrace_match m;

		if (!!(s->flags & UTRACE_SYM_PLT) != want_plt)
			continue;
		if (rx	 ? !regex_matches(&re, s->name) :
		    cxx	 ? !demangled_matches(spec->pattern, glob, s->name) :
		    glob ? fnmatch(spec->pattern, s->name, 0) :
			   strcmp(spec->pattern, s->name))
			continue;
		if ((spec->flags & UTRACE_SPEC_OFFSET) && s->size && spec->offset >= s->size) {
			(*too_short)++;
			continue;
		}
		m = (struct utrace_match){
			.object = idx,
			.symbol = s->name,
			.file_addr = s->addr + spec->offset,
			.addr = s->addr + spec->offset + bias,
			.sym_size = s->size,
			.offset = spec->offset,
			.sym_flags = s->flags,
		};
		err = match_push(mv, &m);
	}
	if (rx)
		regfree(&re);
	return err;
}

static bool obj_selected(const struct image_obj *o, const struct utrace_spec *spec,
			 const struct stat *st, const char *real)
{
	if (!spec->object)
		return o->pub.is_main;
	if (spec_object_is_path(spec->object))
		return path_matches(o, st, real);
	return spec_name_matches(spec->object, base_name(o->path));
}

bool utrace_image__match_is(struct utrace_image *img, const struct utrace_match *m,
			    const struct utrace_spec *ex)
{
	char real[PATH_MAX] = "";
	struct stat st = { 0 };
	bool glob = ex->flags & UTRACE_SPEC_GLOB;

	if (!img || m->object >= img->nr)
		return false;
	if (ex->object && spec_object_is_path(ex->object) &&
	    (stat(ex->object, &st) || !realpath(ex->object, real)))
		return false;
	if (!obj_selected(&img->objs[m->object], ex, &st, real))
		return false;
	if (ex->flags & UTRACE_SPEC_ADDR)
		return m->file_addr == ex->addr;
	if (!m->symbol || !!(m->sym_flags & UTRACE_SYM_PLT) != !!(ex->flags & UTRACE_SPEC_PLT))
		return false;
	if (ex->flags & UTRACE_SPEC_REGEX) {
		regex_t re;
		bool hit;

		if (regcomp(&re, ex->pattern, REG_EXTENDED | REG_NOSUB))
			return false;
		hit = regex_matches(&re, m->symbol);
		regfree(&re);
		return hit;
	}
	if (strstr(ex->pattern, "::"))
		return demangled_matches(ex->pattern, glob, m->symbol);
	return name_matches(ex->pattern, glob, m->symbol);
}

int utrace_image__resolve(struct utrace_image *img, const struct utrace_spec *spec,
			  struct utrace_match **ret_matches, size_t *ret_nr, bool *ret_pending)
{
	struct match_vec mv = { 0 };
	char real[PATH_MAX] = "";
	struct stat st = { 0 };
	size_t i, selected = 0, too_short = 0;
	int err = 0;

	if (!img || !spec || !ret_matches || !ret_nr)
		return -EINVAL;
	if (!spec->pattern && !(spec->flags & UTRACE_SPEC_ADDR))
		return -EINVAL;
	if (spec->object && spec_object_is_path(spec->object)) {
		if (stat(spec->object, &st) || !realpath(spec->object, real))
			return -errno;
	}
	for (i = 0; i < img->nr; i++)
		selected += obj_selected(&img->objs[i], spec, &st, real);
	for (i = 0; i < img->nr && !err; i++) {
		struct utrace_elf *elf;

		if (!obj_selected(&img->objs[i], spec, &st, real))
			continue;
		elf = utrace_image__elf(img, i);
		if (!elf) {
			int e = errno;

			if (selected == 1) {
				err = e == UTRACE_ERRNO__ELF ? -UTRACE_ERRNO__ELF : -e;
				break;
			}
			/* one of many: say so and go on with the others */
			pr_warn("%s: cannot read ELF file: %s\n", img->objs[i].path,
				e == UTRACE_ERRNO__ELF ? "not a valid ELF file" : strerror(e));
			continue;
		}
		err = resolve_obj(img, i, elf, spec, &mv, &too_short);
	}
	if (!err && !mv.nr && too_short && !(spec->flags & (UTRACE_SPEC_GLOB | UTRACE_SPEC_REGEX)))
		err = -ERANGE;
	if (err) {
		free(mv.v);
		return err;
	}
	if (mv.nr > 1)
		qsort(mv.v, mv.nr, sizeof(*mv.v), match_cmp);
	*ret_matches = mv.v;
	*ret_nr = mv.nr;
	if (ret_pending)
		*ret_pending = spec->object && !selected;
	return 0;
}
