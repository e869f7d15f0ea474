/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The plan compared with the machine as it is, reading only: features and
 * cgroup_mode, each group's cpuset.cpus, cpuset.mems, partition (exclusive
 * ones), cpu.weight and each planned task's cgroup read now; each cookie
 * group's sharing as of the pipeline's last scan. For topoctl plan, here
 * and in the running topod alike. */

#include <stdio.h>

#include "base/json.h"
#include "decide/plan.h"
#include "pipeline/pipeline.h"

typedef struct PlanDiffCounts {
        unsigned differs, same, unknown, skipped;
} PlanDiffCounts;

/* Why what needs controller ("cpuset", "cpu") cannot be applied on this
 * host (no cgroup2 mount, or the mount lacks the controller), or NULL
 * when it can. Such an item is skipped, never drift. */
const char *plan_diff_controller_missing(const KernelCaps *c, const char *controller);

/* Each item compared: into j, as the objects of the array the caller has
 * begun ({kind, what, state: same | differs | unknown | skipped, planned,
 * current, reason}), or, with j NULL, a line to out for each that is not
 * the same. An item this host cannot apply (a controller, core scheduling,
 * features or cgroup_mode it lacks) is skipped with the reason, and not
 * read. plan NULL, or no scan yet: nothing compared. 0. */
int plan_diff(const Pipeline *p, const Plan *plan, Json *j, FILE *out, PlanDiffCounts *ret);

/* {differs, same, unknown, skipped} into j, or the summary line to out. */
void plan_diff_print_counts(const PlanDiffCounts *c, Json *j, FILE *out);
