/* SPDX-License-Identifier: MIT */
/*
 * offsets.h - the fields entry.S's counting fast path reads, shared by the
 * assembler and C: dispatch.c asserts each against offsetof(), so a layout
 * change fails the build instead of the fast path.
 */
#ifndef __UTRACE_AGENT_OFFSETS_H
#define __UTRACE_AGENT_OFFSETS_H

#define AO_PROBE_SIZE 192 /* sizeof(struct utrace_probe) */
#define AO_PROBE_FLAGS 36 /* struct utrace_probe.flags */
#define AO_PROBE_STATE 80 /* .state */
#define AO_PROBE_NR_HANDLERS 84 /* .nr_handlers */
#define AO_TASK_GUARD 8 /* struct utrace_task.guard */
#define AO_TASK_GEN 20 /* .gen */
#define AO_TASK_HITS 32 /* .hits */
#define AO_PF_COUNT 1 /* UTRACE_PF_COUNT */
#define AO_PF_ENTRY 0x20 /* UTRACE_PF_ENTRY */
#define AO_PS_INT3 2 /* UTRACE_PS_INT3; UTRACE_PS_JMP is AO_PS_INT3 + 1 */

#endif
