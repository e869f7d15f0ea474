/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topoctl reset and topod --restore: put back what the journal recorded
 * (features and cgroup_mode, tasks to their original cgroups, cookies
 * cleared, topod's cgroups removed), then remove the journal once nothing
 * is left in it. Shared by both programs. */

#include <stdbool.h>

#include "apply/journal.h"
#include "apply/reconcile.h"
#include "base/root.h"

/* state_dir, or run/topod below the root. */
int restore_state_dir(const char *state_dir, const Root *root, char **ret);
/* Load (or start) the journal there, creating the directory (0700). */
int restore_open_journal(const char *state_dir, const Root *root, Journal **ret, bool *ret_found);
int restore_print_report(const ReconcileReport *r, bool json);

/* Returns the exit code: 0 restored (or nothing to do), 1 failures. */
int topoctl_restore(const char *root_dir, const char *state_dir, bool json);
