/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topoctl plan: what topod would change — the plan compared with the
 * machine as it is, reading only. */

#include <stdbool.h>

typedef struct PlanVerbArgs {
        const char *root, *config, *policies;
        unsigned samples;
        bool json;
        bool check; /* --check: print the drift only; exit 1 on any */
        /* Another host class: planned for it, not compared with this
         * machine (PipelineOptions'). */
        const char *xml, *synthetic, *caps;
} PlanVerbArgs;

/* Computed here: the exit status. */
int topoctl_plan(const PlanVerbArgs *a);

/* plan --check against the running topod (its Plan reply): the exit
 * status (0 in sync apart from skipped items, 1 drift or failure), or -1
 * when no daemon listens (why in *ret_reason). */
int topoctl_plan_check_daemon(const char *root, const char *state_dir, bool json, char **ret_reason);

/* The drift counted in a Plan reply (text or JSON, as topod and
 * topoctl_plan print it): 0 and *ret, or -EBADMSG when the reply holds no
 * counts (a paused topod's text has none). */
int plan_reply_drift(const char *reply, bool json, unsigned *ret);
