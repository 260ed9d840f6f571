/* SPDX-License-Identifier: MIT */
/*
 * s-dwarf - functions whose DWARF prototypes have what the registers alone
 * cannot say: enums (shown by name), floating-point arguments and returns
 * (in xmm registers, between integer ones).
 *
 *   s-dwarf N   N rounds of: paint(COLOR_GREEN, 2), paint(7, 3) (no such
 *               colour), scale(3, 1.5, 4, 0.25f) = 5.5 (double), half(5.0)
 *               = 2.5f (float), level_of(2) = LEVEL_HIGH. Prints "ok N"
 *               and exits 0; 1 if a result is wrong.
 */
#include <stdio.h>
#include <stdlib.h>

enum color { COLOR_RED, COLOR_GREEN, COLOR_BLUE = 4 };
enum level { LEVEL_LOW = -1, LEVEL_MID = 0, LEVEL_HIGH = 1 };

__attribute__((noinline)) int paint(enum color c, int times)
{
	return (int)c * times;
}

__attribute__((noinline)) double scale(int a, double f, long b, float g)
{
	return a * f + b * g;
}

__attribute__((noinline)) float half(double x)
{
	return (float)(x / 2);
}

__attribute__((noinline)) enum level level_of(int n)
{
	return n > 1 ? LEVEL_HIGH : n < 0 ? LEVEL_LOW : LEVEL_MID;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1, i, bad = 0;

	for (i = 0; i < n; i++) {
		bad |= paint(COLOR_GREEN, 2) != 2;
		bad |= paint((enum color)7, 3) != 21;
		bad |= scale(3, 1.5, 4, 0.25f) != 5.5;
		bad |= half(5.0) != 2.5f;
		bad |= level_of(2) != LEVEL_HIGH;
	}
	printf("ok %d\n", n);
	return bad;
}
