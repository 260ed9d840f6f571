/* SPDX-License-Identifier: MIT */
/* errno.c - utrace_strerror(). Runs in the tracer process. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "utrace/common.h"

static const char *const utrace_errstr[] = {
	[UTRACE_ERRNO__SPEC - __UTRACE_ERRNO__START] = "Malformed probe spec",
	[UTRACE_ERRNO__NOMATCH - __UTRACE_ERRNO__START] = "Probe spec matches nothing",
	[UTRACE_ERRNO__ELF - __UTRACE_ERRNO__START] = "Malformed or unsupported ELF file",
	[UTRACE_ERRNO__NOT_PATCHABLE - __UTRACE_ERRNO__START] = "Probe site cannot be patched",
	[UTRACE_ERRNO__RELOC - __UTRACE_ERRNO__START] = "Instruction cannot run out of line",
	[UTRACE_ERRNO__AGENT_PROTO - __UTRACE_ERRNO__START] = "Agent protocol mismatch",
	[UTRACE_ERRNO__PROBE_BUSY - __UTRACE_ERRNO__START] = "Probe is busy",
	[UTRACE_ERRNO__TRACED - __UTRACE_ERRNO__START] = "Process is already traced",
	[UTRACE_ERRNO__NOT_YET - __UTRACE_ERRNO__START] = "Not implemented yet",
	[UTRACE_ERRNO__REMOTE_FAULT - __UTRACE_ERRNO__START] = "Remote function call crashed",
	[UTRACE_ERRNO__INJECT - __UTRACE_ERRNO__START] =
		"Shared object could not be loaded in the target",
	[UTRACE_ERRNO__UNSAFE_PATH - __UTRACE_ERRNO__START] =
		"File could be replaced by another user",
};

int utrace_strerror(int err, char *buf, size_t size)
{
	int ret = 0, n;

	if (!buf || !size)
		return -EINVAL;
	if (err < 0)
		err = -err;
	if (err >= __UTRACE_ERRNO__START && err < __UTRACE_ERRNO__END) {
		n = snprintf(buf, size, "%s", utrace_errstr[err - __UTRACE_ERRNO__START]);
	} else if (err > 0 && err < __UTRACE_ERRNO__START) {
		const char *s = strerrordesc_np(err);

		if (!s)
			ret = -EINVAL;
		n = s ? snprintf(buf, size, "%s", s) : snprintf(buf, size, "Unknown error %d", err);
	} else {
		n = snprintf(buf, size, "Unknown error %d", err);
		ret = -EINVAL;
	}
	if (n >= (int)size)
		return -ERANGE;
	return ret;
}
