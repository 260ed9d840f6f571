/* SPDX-License-Identifier: MIT */
/* decode-mem.c - decoders of memory syscalls (mmap family, brk). Tracer process. */
#include "decode.h"
#include "xlat/mman.h"

/* MAP_PRIVATE|MAP_ANONYMOUS: the mapping type, then the flags. */
static void print_map_flags(struct sysdec_call *c, int i)
{
	struct sbuf sb;
	uint64_t f = c->args[i];

	arg_sb(c, i, &sb);
	if (sb_raw_begin(&sb, f, "%#llx"))
		return;
	sb_xval(&sb, xlat_map_type, f & 0xf, NULL);
	f &= ~0xfULL;
	if (f) {
		sb_puts(&sb, "|");
		sb_flags(&sb, xlat_map_flags, f, NULL);
	}
	sb_raw_end(&sb);
}

SYS_FUNC(mmap)
{
	arg_ptr(c, 0); /* addr */
	arg_ulong(c, 1); /* length */
	arg_flags(c, 2, xlat_prot, "PROT_NONE"); /* prot */
	print_map_flags(c, 3); /* flags */
	arg_fd(c, 4); /* fd */
	arg_hex(c, 5); /* offset */
	c->rfmt = RVAL_HEX;
}

SYS_FUNC(munmap)
{
	arg_ptr(c, 0); /* addr */
	arg_ulong(c, 1); /* length */
}

SYS_FUNC(mprotect)
{
	arg_ptr(c, 0); /* addr */
	arg_ulong(c, 1); /* len */
	arg_flags(c, 2, xlat_prot, "PROT_NONE"); /* prot */
}

SYS_FUNC(brk)
{
	arg_ptr(c, 0); /* addr */
	c->rfmt = RVAL_HEX;
}

SYS_FUNC(mremap)
{
	arg_ptr(c, 0); /* old_address */
	arg_ulong(c, 1); /* old_size */
	arg_ulong(c, 2); /* new_size */
	arg_flags(c, 3, xlat_mremap_flags, NULL); /* flags */
	if (c->args[3] & 2) /* MREMAP_FIXED: new_address */
		arg_ptr(c, 4);
	else
		show(c, 4);
	c->rfmt = RVAL_HEX;
}

SYS_FUNC(madvise)
{
	arg_ptr(c, 0); /* addr */
	arg_ulong(c, 1); /* length */
	arg_xval(c, 2, xlat_madvise_cmds, "MADV_???"); /* advice */
}
