/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topod --oneshot: one pass of the pipeline and exit. It observes
 * (watching some sample intervals first so the classifier can tell
 * classes), decides, and applies (journaling every original for topod
 * --restore), or with --dry-run prints what was observed and decided. */

#include <stdbool.h>

typedef struct OneshotArgs {
        const char *root, *config, *policies, *state_dir;
        unsigned samples;
        bool json;
        bool dry_run;
} OneshotArgs;

/* Returns the exit code: 0 done, 1 failures. */
int topod_oneshot(const OneshotArgs *a);
