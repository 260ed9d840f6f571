// SPDX-License-Identifier: MIT
// s-agent-cxx.cc - C++ exceptions thrown through frames whose return
// addresses a return probe has hijacked.  s-agent-cxx ROUNDS DEPTH: each
// round throws from DEPTH calls deep and catches at the top; then a probed
// recursion must still return correctly.  Exit 0 = all right.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

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

	for (long r = 0; r < rounds; r++) {
		try {
			probed_throw(0, (int)depth);
			return 2;
		} catch (const std::runtime_error &) {
		}
		if (probed_fib(10) != 55)
			return 4;
	}
	return 0;
}
