/* SPDX-License-Identifier: MIT */
/*
 * libuprobe-nest.c - a library whose constructor dlopen()s another one
 * ($UPROBE_NEST_LIB): a dlopen() nested inside dlopen(), with the loader's
 * lock held (s-uprobes dlnest).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *inner;

__attribute__((constructor)) static void nest_init(void)
{
	const char *lib = getenv("UPROBE_NEST_LIB");

	inner = lib ? dlopen(lib, RTLD_NOW) : NULL;
	if (!inner)
		fprintf(stderr, "libuprobe-nest: %s\n", lib ? dlerror() : "no UPROBE_NEST_LIB");
}

int nest_loaded(void)
{
	return inner != NULL;
}
