// SPDX-License-Identifier: MIT
// s-agent-cxx.cc - C++ exceptions thrown through frames whose return
// addresses a return probe has hijacked.  s-agent-cxx ROUNDS DEPTH: each
// round throws from DEPTH calls deep and catches at the top; then a probed
// recursion must still return correctly.  Exit 0 = all right.
// s-agent-cxx ROUNDS DEPTH wait: prints "ready PID", waits for a line on
// stdin (a tracer attaches meanwhile), runs, prints "ok ROUNDS" at the end.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

extern "C" __attribute__((noinline)) int probed_throw(int depth, int max)
{
	volatile int d = depth;

	if (d >= max)
		throw std::runtime_error("deep");
	return probed_throw(d + 1, max) + 1;
}

extern "C" __attribute__((noinline)) uint64_t probed_fib(uint64_t n)
{
	__asm__ volatile("" ::: "memory");
	return n < 2 ? n : probed_fib(n - 1) + probed_fib(n - 2);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 10, depth = argc > 2 ? atol(argv[2]) : 10;
	bool wait = argc > 3 && !strcmp(argv[3], "wait");
	char line[64];

	if (wait) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 3;
	}

	for (long r = 0; r < rounds; r++) {
		try {
			probed_throw(0, (int)depth);
			return 2;
		} catch (const std::runtime_error &) {
		}
		if (probed_fib(10) != 55)
			return 4;
	}
	if (wait)
		printf("ok %ld\n", rounds);
	return 0;
}
