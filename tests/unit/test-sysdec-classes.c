/* SPDX-License-Identifier: MIT */
/*
 * test-sysdec-classes.c - the syscall classes of -s %file, %desc ... have
 * strace's membership, with strace itself as the oracle.
 *
 * strace -d --seccomp-bpf prints the classic BPF program it installs for
 * -e trace=SET ("STMT(BPF_LDWABS, data->nr)", "JUMP(BPF_JEQ, 3, 0, 59)"
 * ...). This test runs that program in a small interpreter for every
 * x86-64 syscall number and compares the verdict (SECCOMP_RET_TRACE) with
 * sysdec_parse_set("%CLASS"). strace's filter also traces, whatever the
 * set, what strace itself needs (execve, execveat: its -e trace=none
 * filter) and numbers beyond its table: those are left out. Also checks
 * /regex sets against the names. Skips without strace.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sysdec.h"

#define AUDIT_ARCH_X86_64 0xc000003eU
#define MAX_INSNS 4096

enum op {
	LD_ARCH,
	LD_NR,
	LD_IMM,
	AND,
	LSH_X,
	RSH,
	TAX,
	TXA,
	RET_ALLOW,
	RET_TRACE,
	JA,
	JEQ,
	JGE,
	JGT,
	JSET
};

struct insn {
	enum op op;
	unsigned int jt, jf;
	uint32_t k;
};

struct prog {
	struct insn insns[MAX_INSNS];
	int n;
};

static int parse_dump(const char *text, struct prog *p)
{
	const char *line = text;

	p->n = 0;
	for (; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		struct insn in = { 0 };
		char op[32];
		unsigned long jt, jf, k;

		if (strncmp(line, "strace: STMT(", 13) && strncmp(line, "strace: JUMP(", 13))
			continue;
		if (!strncmp(line + 8, "STMT(BPF_LDWABS, data->arch)", 28))
			in.op = LD_ARCH;
		else if (!strncmp(line + 8, "STMT(BPF_LDWABS, data->nr)", 26))
			in.op = LD_NR;
		else if (!strncmp(line + 8, "STMT(BPF_TAX)", 13))
			in.op = TAX;
		else if (!strncmp(line + 8, "STMT(BPF_TXA)", 13))
			in.op = TXA;
		else if (!strncmp(line + 8, "STMT(BPF_LSH, X)", 16))
			in.op = LSH_X;
		else if (!strncmp(line + 8, "STMT(BPF_RET, SECCOMP_RET_ALLOW)", 32))
			in.op = RET_ALLOW;
		else if (!strncmp(line + 8, "STMT(BPF_RET, SECCOMP_RET_TRACE)", 32))
			in.op = RET_TRACE;
		else if (sscanf(line + 8, "STMT(BPF_%31[A-Z], %li)", op, (long *)&k) == 2) {
			in.k = (uint32_t)k;
			if (!strcmp(op, "LDWIMM"))
				in.op = LD_IMM;
			else if (!strcmp(op, "AND"))
				in.op = AND;
			else if (!strcmp(op, "RSH"))
				in.op = RSH;
			else
				return -1;
		} else if (sscanf(line + 8, "JUMP(BPF_JA, %lu)", &k) == 1) {
			in.op = JA;
			in.k = (uint32_t)k;
		} else if (sscanf(line + 8, "JUMP(BPF_%31[A-Z], %lu, %lu, %li)", op, &jt, &jf,
				  (long *)&k) == 4) {
			in.jt = jt;
			in.jf = jf;
			in.k = (uint32_t)k;
			if (!strcmp(op, "JEQ"))
				in.op = JEQ;
			else if (!strcmp(op, "JGE"))
				in.op = JGE;
			else if (!strcmp(op, "JGT"))
				in.op = JGT;
			else if (!strcmp(op, "JSET"))
				in.op = JSET;
			else
				return -1;
		} else {
			harness_note("unknown instruction: %.60s", line);
			return -1;
		}
		if (p->n == MAX_INSNS)
			return -1;
		p->insns[p->n++] = in;
	}
	return p->n;
}

/* 1: SECCOMP_RET_TRACE, 0: allow, -1: the program ran off its end */
static int run(const struct prog *p, uint32_t arch, uint32_t nr)
{
	uint32_t a = 0, x = 0;
	int pc = 0;

	while (pc >= 0 && pc < p->n) {
		const struct insn *in = &p->insns[pc++];
		bool cond;

		switch (in->op) {
		case LD_ARCH:
			a = arch;
			continue;
		case LD_NR:
			a = nr;
			continue;
		case LD_IMM:
			a = in->k;
			continue;
		case AND:
			a &= in->k;
			continue;
		case LSH_X:
			a <<= (x & 31);
			continue;
		case RSH:
			a >>= in->k;
			continue;
		case TAX:
			x = a;
			continue;
		case TXA:
			a = x;
			continue;
		case RET_ALLOW:
			return 0;
		case RET_TRACE:
			return 1;
		case JA:
			pc += in->k;
			continue;
		case JEQ:
			cond = a == in->k;
			break;
		case JGE:
			cond = a >= in->k;
			break;
		case JGT:
			cond = a > in->k;
			break;
		case JSET:
			cond = (a & in->k) != 0;
			break;
		default:
			return -1;
		}
		pc += cond ? in->jt : in->jf;
	}
	return -1;
}

/* strace's filter for -e trace=@set, or SKIP when strace is missing */
static void strace_filter(const char *set, struct prog *p)
{
	char expr[128];
	char *argv[] = { "strace", "-d", "--seccomp-bpf", "-f",	  "-e",
			 expr,	   "-o", "/dev/null",	  "true", NULL };
	char *err = NULL;
	char *v[] = { "strace", "-V", NULL };

	if (harness_run(v, NULL, NULL, 10) != 0)
		SKIP("strace is not installed");
	snprintf(expr, sizeof(expr), "trace=%s", set);
	CHECK_EQ(harness_run(argv, NULL, &err, 30), 0);
	CHECK_MSG(err && strstr(err, "seccomp filter enabled"), "%s", err ? err : "");
	CHECK_MSG(parse_dump(err, p) > 4, "cannot read strace's filter for %s", set);
	free(err);
}

static void compare(const char *set)
{
	static struct prog base, cls;
	struct sysdec_set ours;
	char errbuf[256];
	long nr;
	int diffs = 0, compared = 0;

	strace_filter("none", &base);
	strace_filter(set, &cls);
	CHECK_EQ(sysdec_parse_set(set, &ours, errbuf, sizeof(errbuf)), 0);
	for (nr = 0; nr < SYSDEC_NR_MAX; nr++) {
		int always = run(&base, AUDIT_ARCH_X86_64, nr),
		    in = run(&cls, AUDIT_ARCH_X86_64, nr);

		CHECK(always >= 0 && in >= 0);
		if (always || !sysdec_name(nr))
			continue;
		compared++;
		if (in != sysdec_set_has(&ours, nr)) {
			harness_note("%s: %s is %sin strace's set, %sin utrace's", set,
				     sysdec_name(nr), in ? "" : "not ",
				     sysdec_set_has(&ours, nr) ? "" : "not ");
			diffs++;
		}
	}
	harness_note("%s: %d syscalls compared", set, compared);
	CHECK(compared > 300);
	CHECK_EQ(diffs, 0);
}

TEST(class_file)
{
	compare("%file");
}
TEST(class_desc)
{
	compare("%desc");
}
TEST(class_process)
{
	compare("%process");
}
TEST(class_network)
{
	compare("%network");
}
TEST(class_signal)
{
	compare("%signal");
}
TEST(class_memory)
{
	compare("%memory");
}
TEST(class_ipc)
{
	compare("%ipc");
}
/* a regular expression, a negated class: the same rules as strace's */
TEST(regex)
{
	compare("/^(open|stat)");
}
TEST(negated_class)
{
	compare("!%file");
}

/* The regex set without strace: the names that match and only them. */
TEST(regex_names)
{
	struct sysdec_set s;
	char errbuf[256];
	long nr;
	regex_t re;

	CHECK_EQ(sysdec_parse_set("/^sched_,close", &s, errbuf, sizeof(errbuf)), 0);
	CHECK(!regcomp(&re, "^sched_", REG_EXTENDED | REG_NOSUB));
	for (nr = 0; nr < SYSDEC_NR_MAX; nr++)
		if (sysdec_name(nr))
			CHECK_EQ(sysdec_set_has(&s, nr),
				 !regexec(&re, sysdec_name(nr), 0, NULL, 0) ||
					 !strcmp(sysdec_name(nr), "close"));
	regfree(&re);
	CHECK(sysdec_parse_set("/^nosuchsyscall", &s, errbuf, sizeof(errbuf)) < 0);
	CHECK_MSG(strstr(errbuf, "matches no syscall"), "%s", errbuf);
	CHECK(sysdec_parse_set("/(", &s, errbuf, sizeof(errbuf)) < 0);
	CHECK_EQ(sysdec_parse_set("?nosuchsyscall,read", &s, errbuf, sizeof(errbuf)), 0);
	CHECK(sysdec_set_has(&s, sysdec_nr("read")));
}
