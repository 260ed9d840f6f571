/* SPDX-License-Identifier: MIT */
/* libuprobe-dl.c - a library that s-uprobes opens with dlopen() after it started. */
__attribute__((noinline)) long lib_func(long x)
{
	return x + 1000;
}
