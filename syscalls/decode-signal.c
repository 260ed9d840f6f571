/* SPDX-License-Identifier: MIT */
/* decode-signal.c - decoders of signal syscalls. Tracer process. */
#include <string.h>

#include "decode.h"
#include "xlat/signal.h"

/* A sigset_t of @size bytes at @addr, or the address if unreadable. */
static void print_sigset_at(struct sysdec_call *c, int i, uint64_t addr, uint64_t size)
{
	unsigned char set[8];
	struct sbuf sb;

	if (!addr) {
		arg_printf(c, i, "NULL");
		return;
	}
	if (size > sizeof(set) || !size || umove(c, addr, set, size)) {
		arg_ptr(c, i);
		return;
	}
	sb_sigset(arg_sb(c, i, &sb), set, size);
}

/* struct kernel_sigaction: handler, flags, restorer, mask */
static void print_sigaction(struct sysdec_call *c, int i, uint64_t size)
{
	uint64_t sa[4];
	struct sbuf sb;

	if (!c->args[i]) {
		arg_printf(c, i, "NULL");
		return;
	}
	if ((c->exiting && c->failed) || umove(c, c->args[i], sa, sizeof(sa))) {
		arg_ptr(c, i);
		return;
	}
	arg_sb(c, i, &sb);
	sb_puts(&sb, "{sa_handler=");
	if (sa[0] == 0)
		sb_puts(&sb, "SIG_DFL");
	else if (sa[0] == 1)
		sb_puts(&sb, "SIG_IGN");
	else
		sb_printf(&sb, "%#llx", (unsigned long long)sa[0]);
	sb_puts(&sb, ", sa_mask=");
	sb_sigset(&sb, &sa[3], size && size <= 8 ? size : 8);
	sb_puts(&sb, ", sa_flags=");
	sb_flags(&sb, xlat_sa_flags, sa[1], NULL);
	if (sa[1] & 0x04000000) /* SA_RESTORER */
		sb_printf(&sb, ", sa_restorer=%#llx", (unsigned long long)sa[2]);
	sb_puts(&sb, "}");
}

SYS_FUNC(rt_sigaction)
{
	if (!c->exiting) {
		arg_signal(c, 0); /* signum */
		print_sigaction(c, 1, c->args[3]); /* act */
		at_exit(c, 2); /* oldact */
		arg_ulong(c, 3); /* sigsetsize */
	} else {
		print_sigaction(c, 2, c->args[3]);
	}
}

SYS_FUNC(rt_sigprocmask)
{
	if (!c->exiting) {
		arg_xval(c, 0, xlat_sigprocmask_how, "SIG_???"); /* how */
		print_sigset_at(c, 1, c->args[1], c->args[3]); /* set */
		at_exit(c, 2); /* oldset */
		arg_ulong(c, 3); /* sigsetsize */
	} else if (c->failed && c->args[2]) {
		arg_ptr(c, 2);
	} else {
		print_sigset_at(c, 2, c->args[2], c->args[3]);
	}
}

SYS_FUNC(rt_sigsuspend)
{
	print_sigset_at(c, 0, c->args[0], c->args[1]); /* mask */
	arg_ulong(c, 1); /* sigsetsize */
}

SYS_FUNC(kill)
{
	arg_int(c, 0); /* pid */
	arg_signal(c, 1); /* sig */
}

SYS_FUNC(tkill)
{
	arg_int(c, 0); /* tid */
	arg_signal(c, 1); /* sig */
}

SYS_FUNC(tgkill)
{
	arg_int(c, 0); /* tgid */
	arg_int(c, 1); /* tid */
	arg_signal(c, 2); /* sig */
}

static void print_stack_t(struct sysdec_call *c, int i)
{
	struct {
		uint64_t sp;
		int32_t flags;
		int32_t pad;
		uint64_t size;
	} ss;
	struct sbuf sb;

	if (!c->args[i]) {
		arg_printf(c, i, "NULL");
		return;
	}
	if ((c->exiting && c->failed) || umove(c, c->args[i], &ss, sizeof(ss))) {
		arg_ptr(c, i);
		return;
	}
	arg_sb(c, i, &sb);
	sb_printf(&sb, "{ss_sp=");
	sb_ptr(&sb, ss.sp);
	sb_puts(&sb, ", ss_flags=");
	sb_flags(&sb, xlat_sigaltstack_flags, (uint32_t)ss.flags, NULL);
	sb_printf(&sb, ", ss_size=%llu}", (unsigned long long)ss.size);
}

SYS_FUNC(sigaltstack)
{
	if (!c->exiting) {
		print_stack_t(c, 0); /* ss */
		at_exit(c, 1); /* old_ss */
	} else {
		print_stack_t(c, 1);
	}
}

SYS_FUNC(alarm)
{
	arg_ulong(c, 0); /* seconds */
}

/*
 * rt_sigreturn() takes no argument; strace shows the signal mask it
 * restores: the handler's "ret" popped the frame's return address, so the
 * stack pointer is at the struct ucontext of the rt_sigframe
 * (arch/x86/include/asm/sigframe.h), whose uc_sigmask follows uc_flags,
 * uc_link, uc_stack and the 256-byte struct sigcontext.
 */
SYS_FUNC(rt_sigreturn)
{
	uint64_t mask;
	struct sbuf sb;

	if (!c->sp || umove(c, c->sp + 8 + 8 + 24 + 256, &mask, sizeof(mask)))
		return;
	show(c, 1);
	arg_sb(c, 0, &sb);
	sb_puts(&sb, "{mask=");
	sb_sigset(&sb, &mask, sizeof(mask));
	sb_puts(&sb, "}");
}
