/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Forced idle: what core scheduling costs. When threads with different
 * cookies are runnable on the two SMT siblings of a core, the kernel runs
 * one and keeps the sibling idle ("forced idle") rather than let them
 * share the core. The kernel counts that time:
 *   - per cgroup, cpu.stat "core_sched.force_idle_usec" (CONFIG_SCHED_CORE):
 *     the forced idle its tasks caused on siblings while they ran, beside
 *     "usage_usec", the CPU time they used;
 *   - per task, /proc/<pid>/sched "core_forceidle_sum" (milliseconds with
 *     six decimals), printed only while schedstats are on.
 * Both are accounted only while schedstats are on (kernel.sched_schedstats
 * = 1, or schedstats=enable on the command line): the kernel starts a
 * forced idle period's clock only then (kernel/sched/core.c,
 * pick_next_task(), core_forceidle_start), so with them off both stay
 * where they were. KernelCaps.schedstats says which.
 *
 * Readers and parsers only: the figure (the share of a group's CPU time
 * its siblings were kept idle) is the pipeline's. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/root.h"

typedef struct ForcedIdleStat {
        uint64_t usage_usec;
        uint64_t force_idle_usec;
        bool has_force_idle; /* the line is there (a kernel with core scheduling) */
} ForcedIdleStat;

/* One group's reading, as the pipeline keeps it for the metrics: the
 * policy's name and the group's path below cgroup_root (both owned). */
typedef struct ForcedIdleGroup {
        char *policy;
        char *path;
        ForcedIdleStat stat;
} ForcedIdleGroup;

void forced_idle_groups_free(ForcedIdleGroup *g, size_t n);

/* A cgroup's cpu.stat: usage_usec (required: -ENODATA without), and
 * core_sched.force_idle_usec where present. -EINVAL for a malformed value. */
int forced_idle_parse_cpu_stat(const char *text, size_t len, ForcedIdleStat *ret);
/* The same from <mount><cgroup>/cpu.stat through the root. */
int forced_idle_read_cgroup(const Root *root, const char *mount, const char *cgroup, ForcedIdleStat *ret);

/* /proc/<pid>/sched's core_forceidle_sum, in microseconds: -ENODATA when
 * the line is not there (schedstats off, or no core scheduling), -EINVAL
 * for a malformed value. */
int forced_idle_parse_task_sched(const char *text, size_t len, uint64_t *ret_usec);
/* The same from proc/<tid>/sched through the root. */
int forced_idle_read_task(const Root *root, pid_t tid, uint64_t *ret_usec);
