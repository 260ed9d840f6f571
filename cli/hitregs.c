/* SPDX-License-Identifier: MIT */
/*
 * hitregs.c - the xmm registers and errno of a thread stopped at a probe
 * hit (hitregs.h). Tracer process: called from the ptrace handlers, in the
 * session's tracing thread, which is the thread's tracer.
 */
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "hitregs.h"

bool hit_xmm(pid_t tid, uint64_t xmm[8])
{
	struct user_fpregs_struct fp;
	unsigned int i;

	if (ptrace(PTRACE_GETFPREGS, tid, NULL, &fp))
		return false;
	for (i = 0; i < 8; i++)
		xmm[i] = fp.xmm_space[i * 4] | (uint64_t)fp.xmm_space[i * 4 + 1] << 32;
	return true;
}

/*
 * errno's offset from the thread pointer, as libc's own
 * __errno_location() finds it: "mov GOT(errno@tpoff)(%rip), %rax; add
 * %fs:0, %rax" (after an endbr64): the GOT slot holds the TPOFF64 that
 * ld.so wrote at load.
 */
static bool find_tpoff(struct utrace_probe_ctx *ctx, struct utrace_image *img, int64_t *ret)
{
	size_t i, j, n = utrace_image__object_count(img);

	for (i = 0; i < n; i++) {
		const struct utrace_object *o = utrace_image__object(img, i);
		struct utrace_elf *elf = utrace_image__elf(img, i);
		const char *base = o && o->path ? strrchr(o->path, '/') : NULL;

		if (!elf || !base || strncmp(base, "/libc.so", 8))
			continue;
		for (j = 0; j < utrace_elf__sym_count(elf); j++) {
			const struct utrace_sym *s = utrace_elf__sym(elf, j);
			unsigned char code[11], *p = code;
			int32_t disp;
			uint64_t slot;

			if (!s || strcmp(s->name, "__errno_location") ||
			    utrace_elf__read(elf, s->addr, code, sizeof(code)) != sizeof(code))
				continue;
			if (!memcmp(p, "\xf3\x0f\x1e\xfa", 4)) /* endbr64 */
				p += 4;
			if (memcmp(p, "\x48\x8b\x05", 3))
				return false; /* not the code this expects: no errno shown */
			memcpy(&disp, p + 3, 4);
			slot = s->addr + (uint64_t)(p - code) + 7 + (uint64_t)(int64_t)disp;
			return utrace_probe_ctx__read(ctx, o->bias + slot, ret, 8) == 8;
		}
	}
	return false;
}

int hit_errno(struct utrace_probe_ctx *ctx, struct utrace_image *img, struct hit_errno_cache *c)
{
	int err = 0;

	if (!ctx->regs || !ctx->regs->fs_base || !img)
		return 0;
	if (!c->tried) {
		c->tried = true;
		c->ok = find_tpoff(ctx, img, &c->tpoff);
	}
	if (!c->ok ||
	    utrace_probe_ctx__read(ctx, ctx->regs->fs_base + (uint64_t)c->tpoff, &err,
				   sizeof(err)) != sizeof(err) ||
	    err <= 0 || err > 4095 || !strerrorname_np(err))
		return 0;
	return err;
}
