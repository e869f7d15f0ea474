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
/* Lock the directory (creating it, 0700) against another topod, then load
 * (or start) the journal there. -EBUSY (said on stderr) when another
 * topod holds it; *ret_lock is the lock, to close when done. */
int restore_open_journal(const char *state_dir, const Root *root, Journal **ret, bool *ret_found, int *ret_lock);
/* Let go of the lock; remove: unlink it too (when nothing is left to
 * restore, so the directory is left empty). */
void restore_unlock(const char *dir, int *lock, bool remove);
int restore_print_report(const ReconcileReport *r, bool json);

/* Returns the exit code: 0 restored (or nothing to do), 1 failures. */
int topoctl_restore(const char *root_dir, const char *state_dir, bool json);
