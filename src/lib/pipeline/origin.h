/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Where a process is judged from by [match] (cgroup =, unit =) and the
 * scope: its cgroup, or for a process in topod's own tree the cgroup it
 * came from, as the journal has it. Its own file because the planner's
 * input and the fast path's must give the same answer.
 *
 * A process topod moved has its original in the journal. A child forked
 * after its parent was placed has none: it is judged by its parent's, or
 * the nearest journaled ancestor's, while they live (the PPid chain in
 * the last scan). Found nowhere, it is judged where it is. */

#include <stdint.h>
#include <sys/types.h>

#include "apply/journal.h"
#include "observe/tasks.h"

#define ORIGIN_DEPTH_MAX 64u /* ancestors looked at */

/* start_time 0: not known (the fast path's first look): the journal is
 * asked by the ancestors only. snap may be NULL. */
const char *origin_cgroup(const Journal *j, const char *cgroup_root, const TaskSnapshot *snap, pid_t tgid,
                          uint64_t start_time, pid_t ppid, const char *cgroup);
