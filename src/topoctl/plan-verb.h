/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topoctl plan: what topod would change — the plan compared with the
 * machine as it is, reading only. */

#include <stdbool.h>

typedef struct PlanVerbArgs {
        const char *root, *config, *policies;
        unsigned samples;
        bool json;
} PlanVerbArgs;

int topoctl_plan(const PlanVerbArgs *a);
