/* SPDX-License-Identifier: MIT */
/*
 * modload.c - utrace -m FILE.so: C probe modules, the command's side.
 * Tracer process. The author's header is include/utrace/module.h; the
 * target's side is agent/module.c; the guide is docs/modules.md.
 *
 * Design
 * ------
 * A module is a shared object with one exported descriptor (struct
 * utrace_module): a name, a probe table (SPEC + entry and/or return handler
 * with probe.h's signature) and counter names. Its handlers call the
 * probe.h context functions through a table of function pointers that the
 * loader stores in the module, so one .so has no undefined utrace symbol
 * and runs unchanged wherever it is loaded:
 *
 *  - -b agent: the agent dlopen()s it inside the target (a mailbox command
 *    with the path) and runs its handlers in the probed threads, from the
 *    trampolines; counters are per-thread counters in the shared arena,
 *    records go through the threads' rings. cmd-trace-agent.c drives it.
 *  - -b ptrace: we dlopen() it here and register its handlers with
 *    utrace_probe__register_spec(); they run in the tracer while the
 *    probed thread is stopped. cmd-trace.c drives it.
 *
 * Either way the command dlopen()s the module here first, to read and
 * check the descriptor (so a bad module is refused before anything runs)
 * and to know the names it prints.
 *
 * Safety. A module is code that runs inside the target: it is loaded only
 * from a path that nobody but its owner (us or root) can change, up to the
 * root directory (the rule lib/inject.c applies to the agent itself). With
 * the agent, its handlers run on the probed thread's registers, and the
 * trampolines save the integer registers only: a module whose code touches
 * an SSE/AVX/x87/MMX register would corrupt the application's floating-point
 * state. We decode its executable sections (Zydis, linear sweep; a few
 * microseconds for a small module) and refuse it in one line otherwise.
 */
#define UTRACE_MODULE_LOADER /* we implement the table: no redirecting macros */

#include <Zydis/Zydis.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utrace/module.h"
#include "modload.h"

_Static_assert(UTRACE_MODULE_MAX_COUNTERS == 32, "struct cli_module counts[]");

struct cli_module *cli_modules;
int cli_nr_modules;

/* ---- checks --------------------------------------------------------------- */

/* Can anyone but us or root change @p (@st)? A sticky directory is fine. */
static bool unsafe(const char *p, const struct stat *st, bool is_dir, char *why, size_t size)
{
	if (st->st_uid != geteuid() && st->st_uid != 0) {
		snprintf(why, size, "'%s' belongs to uid %u, neither us nor root", p,
			 (unsigned int)st->st_uid);
		return true;
	}
	if (!(st->st_mode & (S_IWGRP | S_IWOTH)) || (is_dir && (st->st_mode & S_ISVTX)))
		return false;
	snprintf(why, size, "'%s' is writable by %s (mode %04o)", p,
		 (st->st_mode & S_IWOTH) ? "others" : "its group",
		 (unsigned int)(st->st_mode & 07777));
	return true;
}

/*
 * check_path - canonicalise @arg into @real and check the file and every
 * directory above it. Return: 0, EXIT_USAGE (one line said why).
 */
static int check_path(const char *arg, char *real)
{
	char why[PATH_MAX + 128], dir[PATH_MAX];
	struct stat st;
	char *slash;

	if (!realpath(arg, real) || stat(real, &st)) {
		cli_error("module '%s': %s", arg, strerror(errno));
		return EXIT_USAGE;
	}
	if (!S_ISREG(st.st_mode)) {
		cli_error("module '%s': not a regular file", arg);
		return EXIT_USAGE;
	}
	if (unsafe(real, &st, false, why, sizeof(why)))
		goto refuse;
	snprintf(dir, sizeof(dir), "%s", real);
	while ((slash = strrchr(dir, '/'))) {
		slash[slash == dir ? 1 : 0] = '\0';
		if (stat(dir, &st)) {
			cli_error("module '%s': %s: %s", arg, dir, strerror(errno));
			return EXIT_USAGE;
		}
		if (unsafe(dir, &st, true, why, sizeof(why)))
			goto refuse;
		if (slash == dir)
			break;
	}
	return 0;
refuse:
	cli_error("module '%s': refused: %s (a module runs inside the traced program: only its "
		  "owner may be able to change it)",
		  arg, why);
	return EXIT_USAGE;
}

static char simd_why[PATH_MAX + 256];

/*
 * simd_free - does the code of @path use no SIMD, x87 or MMX register?
 * The agent's trampolines save the integer registers only (agent/tramp.c).
 * Return: 0; EXIT_TRACE with the first such instruction named in simd_why.
 */
static int simd_free(const char *arg, const char *path)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, ret = 0;
	Elf *e;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* dlopen() says why */
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getshdrstrndx(e, &shstrndx)) {
		if (e)
			elf_end(e);
		close(fd);
		return 0;
	}
	while (!ret && (scn = elf_nextscn(e, scn))) {
		ZydisDecoder dec;
		ZydisDecodedInstruction insn;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		Elf_Data *d;
		GElf_Shdr sh;
		size_t off = 0;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
		while (off < d->d_size && !ret) {
			unsigned int i;

			if (ZYAN_FAILED(ZydisDecoderDecodeFull(&dec,
							       (const uint8_t *)d->d_buf + off,
							       d->d_size - off, &insn, ops))) {
				off++; /* data or padding: go on */
				continue;
			}
			for (i = 0; i < insn.operand_count; i++) {
				ZydisRegisterClass c;

				if (ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER)
					continue;
				c = ZydisRegisterGetClass(ops[i].reg.value);
				if (c != ZYDIS_REGCLASS_XMM && c != ZYDIS_REGCLASS_YMM &&
				    c != ZYDIS_REGCLASS_ZMM && c != ZYDIS_REGCLASS_X87 &&
				    c != ZYDIS_REGCLASS_MMX && c != ZYDIS_REGCLASS_MASK)
					continue;
				snprintf(
					simd_why, sizeof(simd_why),
					"module '%s': its code uses %s at 0x%" PRIx64
					" (%s): in the target the agent saves integer registers "
					"only; rebuild it with -mgeneral-regs-only, or use -b ptrace",
					arg, ZydisRegisterGetString(ops[i].reg.value),
					(uint64_t)(sh.sh_addr + off),
					elf_strptr(e, shstrndx, sh.sh_name) ?: "?");
				ret = EXIT_TRACE;
				break;
			}
			off += insn.length;
		}
	}
	elf_end(e);
	close(fd);
	return ret;
}

/* The descriptor makes sense? One line if not. */
static int check_desc(const char *arg, struct cli_module *m)
{
	const struct utrace_module *d = m->desc;
	int i;

	if (d->abi != UTRACE_MODULE_ABI) {
		cli_error("module '%s': built for module ABI %u, this utrace has %u (rebuild it "
			  "against this include/utrace/module.h)",
			  arg, d->abi, UTRACE_MODULE_ABI);
		return EXIT_USAGE;
	}
	if (!d->name || !d->name[0] || !d->ops || !d->probes || !d->probes[0].spec) {
		cli_error("module '%s': its descriptor has no name or no probe (see "
			  "UTRACE_MODULE() in utrace/module.h)",
			  arg);
		return EXIT_USAGE;
	}
	for (i = 0; d->probes[i].spec; i++) {
		if (i >= UTRACE_MODULE_MAX_PROBES) {
			cli_error("module '%s': more than %d probes", arg,
				  UTRACE_MODULE_MAX_PROBES);
			return EXIT_USAGE;
		}
		if (!d->probes[i].handler && !d->probes[i].ret_handler) {
			cli_error("module '%s': probe '%s' has no handler", arg, d->probes[i].spec);
			return EXIT_USAGE;
		}
	}
	m->nr_probes = i;
	for (i = 0; d->counters && d->counters[i]; i++)
		if (i >= UTRACE_MODULE_MAX_COUNTERS) {
			cli_error("module '%s': more than %d counters", arg,
				  UTRACE_MODULE_MAX_COUNTERS);
			return EXIT_USAGE;
		}
	m->nr_counters = i;
	m->name = d->name;
	return 0;
}

/* ---- the ptrace backend's table (tracer, the session's thread) ------------ */

struct pbind {
	int mi, pi;
};

static const struct pbind *pcur; /* the module probe whose handler runs */
static struct output *pout;
static int64_t pm2r;

static void pt_count(struct utrace_probe_ctx *ctx, unsigned int i, uint64_t delta)
{
	struct cli_module *m;

	(void)ctx;
	if (!pcur)
		return;
	m = &cli_modules[pcur->mi];
	if (i < (unsigned int)m->nr_counters)
		m->counts[i] += delta;
}

static void pt_emit(struct utrace_probe_ctx *ctx, const uint64_t *v, unsigned int n)
{
	if (!pcur || !pout)
		return;
	module_print_record(pout, pm2r, ctx->pid, ctx->tid, ctx->now_ns, pcur->mi, pcur->pi, v,
			    n > UTRACE_MODULE_MAX_VALUES ? UTRACE_MODULE_MAX_VALUES : n);
}

static const struct utrace_module_ops ptrace_ops = {
	.abi = UTRACE_MODULE_ABI,
	.backend = UTRACE_BACKEND_PTRACE,
	.arg = utrace_probe_ctx__arg,
	.retval = utrace_probe_ctx__retval,
	.set_return = utrace_probe_ctx__set_return,
	.read = utrace_probe_ctx__read,
	.write = utrace_probe_ctx__write,
	.read_str = utrace_probe_ctx__read_str,
	.count = pt_count,
	.emit = pt_emit,
};

static int pt_call(struct utrace_probe_ctx *ctx, const struct pbind *b, bool ret)
{
	const struct utrace_module_probe *mp = &cli_modules[b->mi].desc->probes[b->pi];
	utrace_handler_fn_t fn = ret ? mp->ret_handler : mp->handler;
	int r;

	if (!fn)
		return UTRACE_PROBE_OK; /* the paired entry of a return-only probe */
	pcur = b;
	r = fn(ctx, mp->data);
	pcur = NULL;
	return r;
}

static int pt_entry(struct utrace_probe_ctx *ctx, void *data)
{
	return pt_call(ctx, data, false);
}

static int pt_return(struct utrace_probe_ctx *ctx, void *data)
{
	return pt_call(ctx, data, true);
}

static struct pbind *pbinds;

void module_ptrace_opts(int mi, int pi, struct utrace_probe_opts *po)
{
	const struct utrace_module_probe *mp = &cli_modules[mi].desc->probes[pi];
	int k, i;

	for (k = 0, i = 0; i < mi; i++)
		k += cli_modules[i].nr_probes;
	/* a return handler alone still gets a paired entry: ctx->entry_ns */
	po->handler = pt_entry;
	po->ret_handler = mp->ret_handler ? pt_return : NULL;
	po->data = &pbinds[k + pi];
}

void module_ptrace_output(struct output *out, int64_t mono_to_real)
{
	int i;

	pout = out;
	pm2r = mono_to_real;
	for (i = 0; i < cli_nr_modules; i++)
		*cli_modules[i].desc->ops = &ptrace_ops;
}

/* ---- loading -------------------------------------------------------------- */

const char *modules_simd_why(void)
{
	return simd_why[0] ? simd_why : NULL;
}

int modules_load(const struct cli_opts *o, enum modules_check check)
{
	int i, j, k, ret;

	if (o->nr_modules > MODULES_MAX) {
		cli_error("at most %d modules (-m) at once", MODULES_MAX);
		return EXIT_USAGE;
	}
	cli_modules = calloc((size_t)o->nr_modules + 1, sizeof(*cli_modules));
	if (!cli_modules) {
		cli_error("out of memory");
		return EXIT_TRACE;
	}
	for (i = 0; i < o->nr_modules; i++) {
		struct cli_module *m = &cli_modules[i];
		const char *arg = o->modules[i];

		ret = check_path(arg, m->path);
		if (ret)
			return ret;
		for (j = 0; j < i; j++)
			if (!strcmp(cli_modules[j].path, m->path)) {
				cli_error("module '%s' is given twice", arg);
				return EXIT_USAGE;
			}
		if (check != MODULES_IN_TRACER && !simd_why[0] && simd_free(arg, m->path) &&
		    check == MODULES_IN_TARGET) {
			cli_error("%s", simd_why);
			return EXIT_TRACE;
		}
		m->handle = dlopen(m->path, RTLD_NOW | RTLD_LOCAL);
		if (!m->handle) {
			cli_error("module '%s': cannot load it: %s", arg, dlerror());
			return EXIT_USAGE;
		}
		cli_nr_modules++;
		m->desc = dlsym(m->handle, UTRACE_MODULE_SYMBOL);
		if (!m->desc) {
			cli_error(
				"module '%s': no '%s' descriptor (define one with UTRACE_MODULE(), "
				"include/utrace/module.h)",
				arg, UTRACE_MODULE_SYMBOL);
			return EXIT_USAGE;
		}
		ret = check_desc(arg, m);
		if (ret)
			return ret;
	}
	pbinds = calloc((size_t)modules_nr_probes() + 1, sizeof(*pbinds));
	if (!pbinds) {
		cli_error("out of memory");
		return EXIT_TRACE;
	}
	for (k = 0, i = 0; i < cli_nr_modules; i++)
		for (j = 0; j < cli_modules[i].nr_probes; j++, k++) {
			pbinds[k].mi = i;
			pbinds[k].pi = j;
		}
	return 0;
}

void modules_free(void)
{
	/* never dlclose(): a module's strings are printed up to the very end */
	free(cli_modules);
	free(pbinds);
	cli_modules = NULL;
	pbinds = NULL;
	cli_nr_modules = 0;
}

int modules_nr_probes(void)
{
	int i, n = 0;

	for (i = 0; i < cli_nr_modules; i++)
		n += cli_modules[i].nr_probes;
	return n;
}

void modules_probe_at(int k, int *mi, int *pi)
{
	*mi = pbinds[k].mi;
	*pi = pbinds[k].pi;
}

const char *module_spec(int mi, int pi)
{
	return cli_modules[mi].desc->probes[pi].spec;
}

bool module_has_entry(int mi, int pi)
{
	return cli_modules[mi].desc->probes[pi].handler != NULL;
}

bool module_has_return(int mi, int pi)
{
	return cli_modules[mi].desc->probes[pi].ret_handler != NULL;
}

/* ---- output --------------------------------------------------------------- */

static const char *field(const struct utrace_module_probe *mp, unsigned int i, char *buf,
			 size_t size)
{
	if (i < UTRACE_MODULE_MAX_VALUES && mp->fields[i])
		return mp->fields[i];
	snprintf(buf, size, "v%u", i);
	return buf;
}

void module_print_record(struct output *out, int64_t mono_to_real, pid_t pid, pid_t tid,
			 uint64_t ts_mono, int mi, int pi, const uint64_t *v, unsigned int n)
{
	const struct cli_module *m;
	const struct utrace_module_probe *mp;
	uint64_t ts = (uint64_t)((int64_t)ts_mono + mono_to_real);
	FILE *f = out->f;
	unsigned int i;
	char buf[16];

	if (mi < 0 || mi >= cli_nr_modules || pi < 0 || pi >= cli_modules[mi].nr_probes ||
	    out->format == CLI_FMT_CHROME)
		return;
	m = &cli_modules[mi];
	mp = &m->desc->probes[pi];
	if (out->format == CLI_FMT_JSON) {
		fputc('{', f);
		json_ts(f, ts);
		fprintf(f,
			", \"pid\": %d, \"tid\": %d, \"type\": \"module\", \"module\": ", (int)pid,
			(int)tid);
		json_str(f, m->name, strlen(m->name));
		fputs(", \"probe\": ", f);
		json_str(f, mp->spec, strlen(mp->spec));
		fputs(", \"values\": {", f);
		for (i = 0; i < n; i++) {
			const char *name = field(mp, i, buf, sizeof(buf));

			fputs(i ? ", " : "", f);
			json_str(f, name, strlen(name));
			fprintf(f, ": %" PRId64, (int64_t)v[i]);
		}
		fputs("}}\n", f);
		return;
	}
	output_prefix(out, ts, tid, true);
	fprintf(f, "%s:%s", m->name, mp->spec);
	for (i = 0; i < n; i++)
		fprintf(f, " %s=%" PRId64, field(mp, i, buf, sizeof(buf)), (int64_t)v[i]);
	fputc('\n', f);
}

void modules_print_counters(FILE *f, bool json, uint64_t ts_real, pid_t pid)
{
	int i, j;

	for (i = 0; i < cli_nr_modules; i++) {
		const struct cli_module *m = &cli_modules[i];

		if (!m->nr_counters)
			continue;
		if (json) {
			fputc('{', f);
			json_ts(f, ts_real);
			fprintf(f, ", \"pid\": %d, \"type\": \"module_counters\", \"module\": ",
				(int)pid);
			json_str(f, m->name, strlen(m->name));
			fputs(", \"counters\": {", f);
		} else {
			fprintf(f, "module %s:", m->name);
		}
		for (j = 0; j < m->nr_counters; j++) {
			const char *name = m->desc->counters[j];

			if (json) {
				fputs(j ? ", " : "", f);
				json_str(f, name, strlen(name));
				fprintf(f, ": %" PRIu64, m->counts[j]);
			} else {
				fprintf(f, " %s=%" PRIu64, name, m->counts[j]);
			}
		}
		fputs(json ? "}}\n" : "\n", f);
	}
}
