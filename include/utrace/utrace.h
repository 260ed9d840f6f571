/* SPDX-License-Identifier: MIT */
/* utrace.h - umbrella header for libutrace. */
#ifndef __UTRACE_UTRACE_H
#define __UTRACE_UTRACE_H

#include "utrace/version.h"
#include "utrace/common.h"
#include "utrace/proc.h"
#include "utrace/elf.h"
#include "utrace/spec.h"
#include "utrace/plan.h"
#include "utrace/session.h"
#include "utrace/inject.h"
#include "utrace/probe.h"
#include "utrace/event.h"
#include "utrace/unwind.h"

#endif /* __UTRACE_UTRACE_H */
