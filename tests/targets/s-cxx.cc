// SPDX-License-Identifier: MIT
/*
 * s-cxx - C++ names for the demangling tests (-C -l, "::" SPECs): a
 * namespace, a class with an overloaded method, a template. Calls each
 * N times (argv[1], default 3) and checks the sum.
 */
#include <cstdio>
#include <cstdlib>

namespace shapes
{
struct Circle {
	int r;
	__attribute__((noinline)) int area(int scale) const;
	__attribute__((noinline)) int area(int scale, int extra) const;
};

int Circle::area(int scale) const
{
	return 3 * r * r * scale;
}

int Circle::area(int scale, int extra) const
{
	return area(scale) + extra;
}

template <typename T> __attribute__((noinline)) T twice(T v)
{
	return v + v;
}
} // namespace shapes

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3, i;
	long sum = 0;
	shapes::Circle c = { 2 };

	for (i = 0; i < n; i++)
		sum += c.area(1) + c.area(1, 1) + shapes::twice(i) + (long)shapes::twice(1.0);
	/* area(1) = 12, area(1, 1) = 13 (calls area(1) too), twice(i) = 2i, twice(1.0) = 2 */
	if (sum != n * 27L + (long)n * (n - 1)) {
		printf("FAIL: sum %ld\n", sum);
		return 1;
	}
	printf("ok calls=%d\n", n);
	return 0;
}
