/* SPDX-License-Identifier: MIT */
/*
 * test-sysdec.c - the syscall decoders against exact strace text. Argument
 * vectors point into a fake tracee memory (a local buffer mapped at
 * FAKE_BASE); every expected line below is what strace 6.1 printed for the
 * same call (without its column padding). Also: -s SET parsing, and every
 * syscall of <asm/unistd_64.h> has a name. No ptrace.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "harness.h"
#include "sysdec.h"

#define FAKE_BASE 0x10000ULL
#define FAKE_SIZE 65536

static unsigned char mem[FAKE_SIZE];
static size_t mem_used;

/* The fake tracee: reads inside [FAKE_BASE, FAKE_BASE + FAKE_SIZE) only. */
static ssize_t fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < FAKE_BASE || addr >= FAKE_BASE + FAKE_SIZE)
		return -EFAULT;
	if (addr + len > FAKE_BASE + FAKE_SIZE)
		len = FAKE_BASE + FAKE_SIZE - addr;
	memcpy(buf, mem + (addr - FAKE_BASE), len);
	return (ssize_t)len;
}

/* Put @len bytes into fake memory; returns their tracee address. */
static uint64_t put(const void *data, size_t len)
{
	uint64_t addr = FAKE_BASE + mem_used;

	memcpy(mem + mem_used, data, len);
	mem_used += (len + 15) & ~15UL;
	return addr;
}

static uint64_t put_str(const char *s)
{
	return put(s, strlen(s) + 1);
}

/* Decode @nr with @args, returning @ret; the strace line in a static buffer. */
static const char *decode(long nr, long ret, const uint64_t *args, size_t nargs)
{
	static char line[4096];
	struct sysdec_call c = { 0 };
	size_t i;

	c.nr = nr;
	for (i = 0; i < nargs && i < 6; i++)
		c.args[i] = args[i];
	c.read = fake_read;
	c.strsize = 32;
	sysdec_decode_entry(&c);
	sysdec_decode_exit(&c, ret);
	sysdec_format(&c, nr != SYS_exit_group && nr != SYS_exit, line, sizeof(line));
	sysdec_call_clear(&c);
	return line;
}

#define D(nr, ret, ...)                                    \
	decode(nr, ret, (const uint64_t[]){ __VA_ARGS__ }, \
	       sizeof((const uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t))
#define EXPECT(got, want) CHECK_STREQ(got, want)

TEST(file_open_read_write)
{
	uint64_t path = put_str("/etc/hosts");
	uint64_t data = put("127.0.0.1 localhost\n", 20);
	uint64_t elf =
		put("\177ELF\2\1\1\3\0\0\0\0\0\0\0\0\3\0>\0\1\0\0\0\20t\2\0\0\0\0\0ABCDEFG", 40);
	uint64_t odd = put("hi\n\0017x\0\t\"\\", 11);

	EXPECT(D(SYS_openat, 3, -100, path, O_RDONLY | O_CLOEXEC),
	       "openat(AT_FDCWD, \"/etc/hosts\", O_RDONLY|O_CLOEXEC) = 3");
	EXPECT(D(SYS_openat, 4, -100, path, O_WRONLY | O_CREAT | O_TRUNC, 0644),
	       "openat(AT_FDCWD, \"/etc/hosts\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 4");
	EXPECT(D(SYS_openat, -ENOENT, -100, path, O_RDONLY),
	       "openat(AT_FDCWD, \"/etc/hosts\", O_RDONLY) = -1 ENOENT (No such file or directory)");
	EXPECT(D(SYS_open, 3, path, O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_CLOEXEC),
	       "open(\"/etc/hosts\", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 3");
	EXPECT(D(SYS_read, 20, 3, data, 4096), "read(3, \"127.0.0.1 localhost\\n\", 4096) = 20");
	EXPECT(D(SYS_read, 40, 3, elf, 832),
	       "read(3, \"\\177ELF\\2\\1\\1\\3\\0\\0\\0\\0\\0\\0\\0\\0\\3\\0>\\0\\1\\0\\0\\0\\20t\\2\\0\\0\\0\\0\\0\"..., "
	       "832) = 40");
	EXPECT(D(SYS_read, -EBADF, 9, data, 10),
	       "read(9, 0x10010, 10) = -1 EBADF (Bad file descriptor)");
	EXPECT(D(SYS_write, 11, 1, odd, 11),
	       "write(1, \"hi\\n\\0017x\\0\\t\\\"\\\\\\0\", 11) = 11");
	EXPECT(D(SYS_close, 0, 3), "close(3) = 0");
	EXPECT(D(SYS_lseek, 3, 3, 0, SEEK_CUR), "lseek(3, 0, SEEK_CUR) = 3");
	EXPECT(D(SYS_access, -ENOENT, path, R_OK | W_OK),
	       "access(\"/etc/hosts\", R_OK|W_OK) = -1 ENOENT (No such file or directory)");
	EXPECT(D(SYS_access, 0, path, F_OK), "access(\"/etc/hosts\", F_OK) = 0");
	EXPECT(D(SYS_umask, 022, 0), "umask(000) = 022");
	EXPECT(D(SYS_umask, 0, 022), "umask(022) = 000");
}

TEST(file_strsize_and_escapes)
{
	struct sysdec_call c = { 0 };
	uint64_t s = put("abcdefgh", 8);
	char line[256];

	c.nr = SYS_write;
	c.args[0] = 1;
	c.args[1] = s;
	c.args[2] = 8;
	c.read = fake_read;
	c.strsize = 4; /* -S 4 */
	sysdec_decode_entry(&c);
	sysdec_decode_exit(&c, 8);
	sysdec_format(&c, true, line, sizeof(line));
	CHECK_STREQ(line, "write(1, \"abcd\"..., 8) = 8");
	CHECK(c.out[1].kind == SYSDEC_STR);
	CHECK_EQ(c.out[1].raw_len, 4);
	CHECK_MEMEQ(c.out[1].raw, "abcd", 4);
	CHECK(c.out[0].kind == SYSDEC_INT);
	sysdec_call_clear(&c);
}

TEST(file_stat_fcntl_pipe)
{
	struct stat st = { 0 };
	uint64_t sp, nul = put_str("/dev/null"), empty = put_str("");
	int fds[2] = { 4, 5 };
	uint64_t fdp = put(fds, sizeof(fds));
	char line[256];

	st.st_mode = S_IFREG | 0644;
	st.st_size = 41911;
	sp = put(&st, sizeof(st));
	EXPECT(D(SYS_newfstatat, 0, 3, empty, sp, 0x1000),
	       "newfstatat(3, \"\", {st_mode=S_IFREG|0644, st_size=41911, ...}, AT_EMPTY_PATH) = 0");
	EXPECT(D(SYS_fstat, 0, 3, sp), "fstat(3, {st_mode=S_IFREG|0644, st_size=41911, ...}) = 0");
	st.st_mode = S_IFCHR | 0666;
	st.st_rdev = makedev(1, 3);
	sp = put(&st, sizeof(st));
	EXPECT(D(SYS_newfstatat, 0, -100, nul, sp, 0),
	       "newfstatat(AT_FDCWD, \"/dev/null\", {st_mode=S_IFCHR|0666, "
	       "st_rdev=makedev(0x1, 0x3), ...}, 0) = 0");
	snprintf(line, sizeof(line),
		 "stat(\"/dev/null\", %#llx) = -1 ENOENT (No such file or directory)",
		 (unsigned long long)sp);
	EXPECT(D(SYS_stat, -ENOENT, nul, sp), line);
	EXPECT(D(SYS_fcntl, 1, 3, F_GETFD), "fcntl(3, F_GETFD) = 0x1 (flags FD_CLOEXEC)");
	EXPECT(D(SYS_fcntl, 0x8000, 3, F_GETFL),
	       "fcntl(3, F_GETFL) = 0x8000 (flags O_RDONLY|O_LARGEFILE)");
	EXPECT(D(SYS_fcntl, 0, 3, F_SETFD, FD_CLOEXEC), "fcntl(3, F_SETFD, FD_CLOEXEC) = 0");
	EXPECT(D(SYS_fcntl, 11, 3, F_DUPFD_CLOEXEC, 10), "fcntl(3, F_DUPFD_CLOEXEC, 10) = 11");
	EXPECT(D(SYS_pipe2, 0, fdp, O_CLOEXEC | O_NONBLOCK),
	       "pipe2([4, 5], O_NONBLOCK|O_CLOEXEC) = 0");
	EXPECT(D(SYS_dup2, 1, 4, 1), "dup2(4, 1) = 1");
	EXPECT(D(SYS_ioctl, -ENOTTY, 1, 0x5401, 0x7ffd0000),
	       "ioctl(1, TCGETS, 0x7ffd0000) = -1 ENOTTY (Inappropriate ioctl for device)");
}

TEST(file_links_dirs)
{
	uint64_t exe = put_str("/proc/self/exe"), buf = put("/tmp/probe", 10);
	uint64_t cwd = put_str("/tmp");

	EXPECT(D(SYS_readlink, 10, exe, buf, 100),
	       "readlink(\"/proc/self/exe\", \"/tmp/probe\", 100) = 10");
	EXPECT(D(SYS_getcwd, 5, cwd, 100), "getcwd(\"/tmp\", 100) = 5");
	EXPECT(D(SYS_mkdirat, -EEXIST, -100, cwd, 0755),
	       "mkdirat(AT_FDCWD, \"/tmp\", 0755) = -1 EEXIST (File exists)");
	EXPECT(D(SYS_unlinkat, 0, 3, cwd, 0x200), "unlinkat(3, \"/tmp\", AT_REMOVEDIR) = 0");
	EXPECT(D(SYS_renameat2, 0, -100, cwd, -100, exe, 1),
	       "renameat2(AT_FDCWD, \"/tmp\", AT_FDCWD, \"/proc/self/exe\", RENAME_NOREPLACE) = 0");
	EXPECT(D(SYS_chdir, 0, cwd), "chdir(\"/tmp\") = 0");
}

TEST(memory)
{
	EXPECT(D(SYS_mmap, 0x7f51fe631000, 0, 8192, 3, 0x22, -1, 0),
	       "mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f51fe631000");
	EXPECT(D(SYS_mmap, 0x7f51fe46a000, 0x7f51fe46a000, 1400832, 5, 0x812, 3, 0x26000),
	       "mmap(0x7f51fe46a000, 1400832, PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_FIXED|MAP_DENYWRITE, "
	       "3, 0x26000) = 0x7f51fe46a000");
	EXPECT(D(SYS_mprotect, 0, 0x7f51fe613000, 16384, 1),
	       "mprotect(0x7f51fe613000, 16384, PROT_READ) = 0");
	EXPECT(D(SYS_mprotect, 0, 0x7f51fe613000, 4096, 0),
	       "mprotect(0x7f51fe613000, 4096, PROT_NONE) = 0");
	EXPECT(D(SYS_munmap, 0, 0x7f51fe626000, 41911), "munmap(0x7f51fe626000, 41911) = 0");
	EXPECT(D(SYS_brk, 0x558523116000, 0), "brk(NULL) = 0x558523116000");
	EXPECT(D(SYS_madvise, 0, 0x7f0000000000, 4096, 4),
	       "madvise(0x7f0000000000, 4096, MADV_DONTNEED) = 0");
	EXPECT(D(SYS_mmap, -ENOMEM, 0, 8192, 3, 0x22, -1, 0),
	       "mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = -1 ENOMEM "
	       "(Cannot allocate memory)");
}

TEST(process)
{
	const char *argv[] = { "/bin/true", "a b" };
	uint64_t a0 = put_str(argv[0]), a1 = put_str(argv[1]);
	uint64_t av[3] = { a0, a1, 0 };
	uint64_t e0 = put_str("A=1"), e1 = put_str("B=2");
	uint64_t ev[3] = { e0, e1, 0 };
	uint64_t avp = put(av, sizeof(av)), evp = put(ev, sizeof(ev));
	int st0 = 0, stk = SIGKILL, stseg = SIGSEGV | 0x80;
	uint64_t sp0 = put(&st0, 4), spk = put(&stk, 4), sps = put(&stseg, 4);
	char line[512];

	snprintf(line, sizeof(line),
		 "execve(\"/bin/true\", [\"/bin/true\", \"a b\"], %#llx /* 2 vars */) = 0",
		 (unsigned long long)evp);
	EXPECT(D(SYS_execve, 0, a0, avp, evp), line);
	EXPECT(D(SYS_clone, 10593, 0x01200011, 0, 0, 0x7f8dc13c6a10, 0),
	       "clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, "
	       "child_tidptr=0x7f8dc13c6a10) = 10593");
	EXPECT(D(SYS_wait4, 10593, -1, sp0, 0, 0),
	       "wait4(-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 10593");
	EXPECT(D(SYS_wait4, 10593, -1, spk, 0x40000000, 0),
	       "wait4(-1, [{WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL}], __WALL, NULL) = 10593");
	EXPECT(D(SYS_wait4, 10593, -1, sps, 0, 0),
	       "wait4(-1, [{WIFSIGNALED(s) && WTERMSIG(s) == SIGSEGV && WCOREDUMP(s)}], 0, NULL) = 10593");
	EXPECT(D(SYS_exit_group, 0, 0), "exit_group(0) = ?");
	EXPECT(D(SYS_getpid, 10592), "getpid() = 10592");
	EXPECT(D(SYS_set_tid_address, 10593, 0x7f51fe441a10),
	       "set_tid_address(0x7f51fe441a10) = 10593");
	EXPECT(D(SYS_set_robust_list, 0, 0x7f51fe441a20, 24),
	       "set_robust_list(0x7f51fe441a20, 24) = 0");
	EXPECT(D(SYS_rseq, 0, 0x7f51fe442060, 0x20, 0, 0x53053053),
	       "rseq(0x7f51fe442060, 0x20, 0, 0x53053053) = 0");
	EXPECT(D(SYS_arch_prctl, 0, 0x1002, 0x7f51fe441740),
	       "arch_prctl(ARCH_SET_FS, 0x7f51fe441740) = 0");
	EXPECT(D(SYS_prctl, 0, 38, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) = 0");
	EXPECT(D(SYS_sched_yield, 0), "sched_yield() = 0");
}

TEST(process_limits_random)
{
	uint64_t rl[2] = { 8192 * 1024, ~0ULL }, nofile[2] = { 20000, 20000 };
	uint64_t rlp = put(rl, sizeof(rl)), nfp = put(nofile, sizeof(nofile));
	uint64_t rnd = put("\x8c\x48\x29\x0f\x64\x2b\x57\xff", 8);
	unsigned char cpus[8] = { 0x0f };
	uint64_t cp = put(cpus, sizeof(cpus));

	EXPECT(D(SYS_prlimit64, 0, 0, 3, 0, rlp),
	       "prlimit64(0, RLIMIT_STACK, NULL, {rlim_cur=8192*1024, rlim_max=RLIM64_INFINITY}) = 0");
	EXPECT(D(SYS_prlimit64, 0, 0, 7, 0, nfp),
	       "prlimit64(0, RLIMIT_NOFILE, NULL, {rlim_cur=20000, rlim_max=20000}) = 0");
	EXPECT(D(SYS_getrandom, 8, rnd, 8, 1),
	       "getrandom(\"\\x8c\\x48\\x29\\x0f\\x64\\x2b\\x57\\xff\", 8, GRND_NONBLOCK) = 8");
	EXPECT(D(SYS_sched_getaffinity, 8, 0, 128, cp), "sched_getaffinity(0, 128, [0 1 2 3]) = 8");
	{
		uint32_t gids[3] = { 0, 4, 27 };
		uint64_t gp = put(gids, sizeof(gids));

		EXPECT(D(SYS_getgroups, 0, 0, 0), "getgroups(0, NULL) = 0");
		EXPECT(D(SYS_getgroups, 3, 0, gp), "getgroups(0, []) = 3");
		EXPECT(D(SYS_getgroups, 3, 3, gp), "getgroups(3, [0, 4, 27]) = 3");
		EXPECT(D(SYS_setgroups, 0, 2, gp), "setgroups(2, [0, 4]) = 0");
	}
}

TEST(signals_and_time)
{
	uint64_t set = (1ULL << (SIGINT - 1)) | (1ULL << (SIGTERM - 1));
	uint64_t all = ~((1ULL << 31) | (1ULL << 32));
	uint64_t setp = put(&set, 8), allp = put(&all, 8);
	uint64_t sa[4] = { 1, 0x14000000, 0x7f8dc1405050, 0 };
	uint64_t sap = put(sa, sizeof(sa));
	int64_t ts[2] = { 0, 1000000 };
	uint64_t tsp = put(ts, sizeof(ts));

	EXPECT(D(SYS_rt_sigprocmask, 0, 0, setp, 0, 8),
	       "rt_sigprocmask(SIG_BLOCK, [INT TERM], NULL, 8) = 0");
	EXPECT(D(SYS_rt_sigprocmask, 0, 2, allp, setp, 8),
	       "rt_sigprocmask(SIG_SETMASK, ~[RTMIN RT_1], [INT TERM], 8) = 0");
	EXPECT(D(SYS_rt_sigaction, 0, SIGUSR1, sap, 0, 8),
	       "rt_sigaction(SIGUSR1, {sa_handler=SIG_IGN, sa_mask=[], sa_flags=SA_RESTORER|SA_RESTART, "
	       "sa_restorer=0x7f8dc1405050}, NULL, 8) = 0");
	{
		/* the frame of rt_sigreturn: uc_sigmask 296 bytes above the stack pointer */
		unsigned char frame[304] = { 0 };
		uint64_t blocked = 1ULL << (SIGALRM - 1);
		struct sysdec_call c = { 0 };
		char line[256];

		memcpy(frame + 296, &blocked, sizeof(blocked));
		c.nr = SYS_rt_sigreturn;
		c.sp = put(frame, sizeof(frame));
		c.read = fake_read;
		c.strsize = 32;
		sysdec_decode_entry(&c);
		sysdec_decode_exit(&c, -EINTR);
		sysdec_format(&c, true, line, sizeof(line));
		CHECK_STREQ(line,
			    "rt_sigreturn({mask=[ALRM]}) = -1 EINTR (Interrupted system call)");
		sysdec_call_clear(&c);
	}
	EXPECT(D(SYS_kill, 0, 10592, 0), "kill(10592, 0) = 0");
	EXPECT(D(SYS_kill, 0, 10592, SIGTERM), "kill(10592, SIGTERM) = 0");
	EXPECT(D(SYS_tgkill, 0, 10, 11, 34), "tgkill(10, 11, SIGRT_2) = 0");
	EXPECT(D(SYS_clock_nanosleep, 0, 0, 0, tsp, 0),
	       "clock_nanosleep(CLOCK_REALTIME, 0, {tv_sec=0, tv_nsec=1000000}, NULL) = 0");
	EXPECT(D(SYS_nanosleep, -512, tsp, tsp),
	       "nanosleep({tv_sec=0, tv_nsec=1000000}, {tv_sec=0, tv_nsec=1000000}) = ? ERESTARTSYS "
	       "(To be restarted if SA_RESTART is set)");
	{
		int64_t it[4] = { 0, 0, 0, 150000 };
		uint64_t itp = put(it, sizeof(it));

		EXPECT(D(SYS_setitimer, 0, 0, itp, 0),
		       "setitimer(ITIMER_REAL, {it_interval={tv_sec=0, tv_usec=0}, "
		       "it_value={tv_sec=0, tv_usec=150000}}, NULL) = 0");
	}
	EXPECT(D(SYS_clock_gettime, 0, 1, tsp),
	       "clock_gettime(CLOCK_MONOTONIC, {tv_sec=0, tv_nsec=1000000}) = 0");
	EXPECT(D(SYS_futex, 1, 0x7f0000001000, 0x81, 1),
	       "futex(0x7f0000001000, FUTEX_WAKE_PRIVATE, 1) = 1");
	EXPECT(D(SYS_futex, -EAGAIN, 0x7f0000001000, 0x80, 2, 0),
	       "futex(0x7f0000001000, FUTEX_WAIT_PRIVATE, 2, NULL) = -1 EAGAIN (Resource temporarily "
	       "unavailable)");
	EXPECT(D(SYS_futex, 0, 0x7f0000001000, 0x189, 0, 0, 0, 0xffffffff),
	       "futex(0x7f0000001000, FUTEX_WAIT_BITSET_PRIVATE|FUTEX_CLOCK_REALTIME, 0, NULL, "
	       "FUTEX_BITSET_MATCH_ANY) = 0");
}

TEST(network)
{
	unsigned char sin[16] = { 2, 0, 0, 1, 127, 0, 0, 1 };
	uint64_t sinp = put(sin, sizeof(sin));
	unsigned char sun[110] = { 1, 0, '/', 'r', 'u', 'n', '/', 's' };
	uint64_t sunp = put(sun, sizeof(sun));
	uint32_t len = 16;
	uint64_t lenp = put(&len, 4), hello = put("hello", 5);
	struct {
		int32_t fd;
		int16_t ev, rev;
	} pfd = { 3, 1, 1 };
	uint64_t pfdp = put(&pfd, sizeof(pfd));

	EXPECT(D(SYS_socket, 6, 2, 1 | 02000000, 0),
	       "socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, IPPROTO_IP) = 6");
	EXPECT(D(SYS_socket, 3, 1, 2, 0), "socket(AF_UNIX, SOCK_DGRAM, 0) = 3");
	EXPECT(D(SYS_connect, -ECONNREFUSED, 6, sinp, 16),
	       "connect(6, {sa_family=AF_INET, sin_port=htons(1), sin_addr=inet_addr(\"127.0.0.1\")}, 16) "
	       "= -1 ECONNREFUSED (Connection refused)");
	EXPECT(D(SYS_connect, 0, 3, sunp, 110),
	       "connect(3, {sa_family=AF_UNIX, sun_path=\"/run/s\"}, 110) = 0");
	EXPECT(D(SYS_accept4, 7, 6, sinp, lenp, 02000000),
	       "accept4(6, {sa_family=AF_INET, sin_port=htons(1), sin_addr=inet_addr(\"127.0.0.1\")}, "
	       "[16], SOCK_CLOEXEC) = 7");
	EXPECT(D(SYS_listen, 0, 6, 128), "listen(6, 128) = 0");
	EXPECT(D(SYS_sendto, 5, 6, hello, 5, 0x4000, 0, 0),
	       "sendto(6, \"hello\", 5, MSG_NOSIGNAL, NULL, 0) = 5");
	EXPECT(D(SYS_poll, 1, pfdp, 1, 1000),
	       "poll([{fd=3, events=POLLIN}], 1, 1000) = 1 ([{fd=3, revents=POLLIN}])");
	EXPECT(D(SYS_epoll_create1, 5, 02000000), "epoll_create1(EPOLL_CLOEXEC) = 5");
	EXPECT(D(SYS_eventfd2, 3, 0, 02000000 | 04000),
	       "eventfd2(0, EFD_CLOEXEC|EFD_NONBLOCK) = 3");
}

TEST(unknown_and_raw)
{
	/* syscalls without a decoder show raw hex arguments, like strace's printargs */
	EXPECT(D(SYS_setns, 0, 3, 0x40000000), "setns(0x3, 0x40000000) = 0");
	EXPECT(D(600, -ENOSYS, 1, 2, 3, 4, 5, 6),
	       "syscall_0x258(0x1, 0x2, 0x3, 0x4, 0x5, 0x6) = -1 ENOSYS (Function not implemented)");
	/* a pointer outside the tracee's memory */
	EXPECT(D(SYS_openat, -EFAULT, -100, 0x1234, 0),
	       "openat(AT_FDCWD, 0x1234, O_RDONLY) = -1 EFAULT (Bad address)");
}

TEST(errno_and_signal_names)
{
	int e;

	for (e = 1; e <= 133; e++) {
		if (e == 41 || e == 58) /* unused numbers (EWOULDBLOCK/EDEADLOCK aliases) */
			continue;
		CHECK_MSG(sysdec_errno_name(e), "errno %d has no name", e);
	}
	CHECK_STREQ(sysdec_errno_name(ENOENT), "ENOENT");
	CHECK_STREQ(sysdec_errno_name(EHWPOISON), "EHWPOISON");
	CHECK_STREQ(sysdec_errno_name(512), "ERESTARTSYS");
	CHECK_STREQ(sysdec_errno_name(516), "ERESTART_RESTARTBLOCK");
	CHECK(sysdec_errno_name(1000) == NULL);
	CHECK_STREQ(sysdec_signal_name(SIGINT), "SIGINT");
	CHECK_STREQ(sysdec_signal_name(SIGSYS), "SIGSYS");
	CHECK_STREQ(sysdec_signal_name(32), "SIGRTMIN");
	CHECK_STREQ(sysdec_signal_name(64), "SIGRT_32");
	CHECK(sysdec_signal_name(65) == NULL);
}

/* Every __NR_ of the build machine's header has our name and number. */
TEST(table_covers_unistd_64)
{
	FILE *f = fopen("/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "r");
	char line[256], name[128];
	long nr;
	int n = 0;

	if (!f)
		f = fopen("/usr/include/asm/unistd_64.h", "r");
	if (!f)
		SKIP("no <asm/unistd_64.h> on this machine");
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "#define __NR_%127s %ld", name, &nr) != 2)
			continue;
		CHECK_MSG(sysdec_name(nr) && !strcmp(sysdec_name(nr), name),
			  "%s = %ld: table has %s", name, nr,
			  sysdec_name(nr) ? sysdec_name(nr) : "nothing");
		CHECK_EQ(sysdec_nr(name), nr);
		n++;
	}
	fclose(f);
	CHECK(n > 300);
	harness_note("%d syscalls checked", n);
	CHECK_EQ(sysdec_nargs(SYS_openat), 4);
	CHECK_EQ(sysdec_nargs(SYS_mmap), 6);
	CHECK(sysdec_classes(SYS_openat) & SYSDEC_TRACE_FILE);
	CHECK(sysdec_classes(SYS_openat) & SYSDEC_TRACE_DESC);
	CHECK(sysdec_classes(SYS_mmap) & SYSDEC_TRACE_MEMORY);
	CHECK(sysdec_classes(SYS_clone) & SYSDEC_TRACE_PROCESS);
	CHECK(sysdec_classes(SYS_connect) & SYSDEC_TRACE_NETWORK);
	CHECK(sysdec_classes(SYS_kill) & SYSDEC_TRACE_SIGNAL);
	CHECK(sysdec_classes(SYS_shmget) & SYSDEC_TRACE_IPC);
	CHECK_EQ(sysdec_classes(SYS_getpid), 0);
}

TEST(parse_set)
{
	struct sysdec_set s;
	char err[256] = "";

	CHECK_EQ(sysdec_parse_set(NULL, &s, err, sizeof(err)), 0);
	CHECK(sysdec_set_has(&s, SYS_read) && sysdec_set_has(&s, SYS_openat));
	CHECK_EQ(sysdec_parse_set("openat,close", &s, err, sizeof(err)), 0);
	CHECK(sysdec_set_has(&s, SYS_openat) && sysdec_set_has(&s, SYS_close));
	CHECK(!sysdec_set_has(&s, SYS_read));
	CHECK_EQ(sysdec_parse_set("%file", &s, err, sizeof(err)), 0);
	CHECK(sysdec_set_has(&s, SYS_openat) && sysdec_set_has(&s, SYS_execve));
	CHECK(!sysdec_set_has(&s, SYS_read));
	CHECK_EQ(sysdec_parse_set("%memory,%signal", &s, err, sizeof(err)), 0);
	CHECK(sysdec_set_has(&s, SYS_mmap) && sysdec_set_has(&s, SYS_rt_sigaction));
	CHECK(!sysdec_set_has(&s, SYS_openat));
	CHECK_EQ(sysdec_parse_set("!read", &s, err, sizeof(err)), 0);
	CHECK(!sysdec_set_has(&s, SYS_read) && sysdec_set_has(&s, SYS_write));
	CHECK_EQ(sysdec_parse_set("!%desc", &s, err, sizeof(err)), 0);
	CHECK(!sysdec_set_has(&s, SYS_read) && sysdec_set_has(&s, SYS_getpid));
	CHECK_EQ(sysdec_parse_set("!read,write", &s, err, sizeof(err)), 0);
	CHECK(!sysdec_set_has(&s, SYS_read) && !sysdec_set_has(&s, SYS_write));
	CHECK(sysdec_set_has(&s, SYS_close));
	CHECK_EQ(sysdec_parse_set("%process,!execve", &s, err, sizeof(err)), 0);
	CHECK(sysdec_set_has(&s, SYS_clone) && !sysdec_set_has(&s, SYS_execve));
	CHECK_EQ(sysdec_parse_set("%ipc", &s, err, sizeof(err)), 0);
	CHECK(sysdec_set_has(&s, SYS_semop));

	CHECK_EQ(sysdec_parse_set("opn", &s, err, sizeof(err)), -EINVAL);
	CHECK_STREQ(err, "unknown syscall 'opn' in -s 'opn'");
	CHECK(!strchr(err, '\n'));
	CHECK_EQ(sysdec_parse_set("read,%files", &s, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "unknown syscall class '%files'"));
	CHECK_EQ(sysdec_parse_set("read,,write", &s, err, sizeof(err)), -EINVAL);
}
