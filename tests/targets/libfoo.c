/* SPDX-License-Identifier: MIT */
/* libfoo - a shared library for the stripped-binary tests of utrace -l. */
#include <stdio.h>

__attribute__((visibility("default"), noinline)) int exported_fn(int x)
{
	return x + 42;
}

static __attribute__((noinline)) int hidden_fn(int x)
{
	return x * 2;
}

__attribute__((visibility("default"))) int foo_entry(int x)
{
	return exported_fn(hidden_fn(x));
}
