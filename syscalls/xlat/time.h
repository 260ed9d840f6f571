/* SPDX-License-Identifier: MIT */
/* xlat/time.h - clock ids and timer flags. */
#ifndef __UTRACE_XLAT_TIME_H
#define __UTRACE_XLAT_TIME_H

#include "decode.h"

static const struct xlat xlat_clocks[] = {
	XLAT_PAIR(0, "CLOCK_REALTIME"),
	XLAT_PAIR(1, "CLOCK_MONOTONIC"),
	XLAT_PAIR(2, "CLOCK_PROCESS_CPUTIME_ID"),
	XLAT_PAIR(3, "CLOCK_THREAD_CPUTIME_ID"),
	XLAT_PAIR(4, "CLOCK_MONOTONIC_RAW"),
	XLAT_PAIR(5, "CLOCK_REALTIME_COARSE"),
	XLAT_PAIR(6, "CLOCK_MONOTONIC_COARSE"),
	XLAT_PAIR(7, "CLOCK_BOOTTIME"),
	XLAT_PAIR(8, "CLOCK_REALTIME_ALARM"),
	XLAT_PAIR(9, "CLOCK_BOOTTIME_ALARM"),
	XLAT_PAIR(11, "CLOCK_TAI"),
	XLAT_END,
};

static const struct xlat xlat_timer_flags[] = {
	XLAT_PAIR(1, "TIMER_ABSTIME"),
	XLAT_END,
};

#endif /* __UTRACE_XLAT_TIME_H */
