/* SPDX-License-Identifier: MIT */
/* version.h - utrace library version. */
#ifndef __UTRACE_VERSION_H
#define __UTRACE_VERSION_H

#define UTRACE_MAJOR_VERSION 0
#define UTRACE_MINOR_VERSION 1
#define UTRACE_PATCH_VERSION 0
#define UTRACE_VERSION_STRING "0.1.0"

#endif /* __UTRACE_VERSION_H */
