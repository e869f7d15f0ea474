/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topoctl reset (when no daemon runs) and topod --restore: put back what
 * the journal recorded (features and cgroup_mode, tasks to their original
 * cgroups, cookies cleared, topod's cgroups removed), then remove the
 * journal once nothing is left in it. Both programs offer it. */

#include <stdbool.h>

/* Returns the exit code: 0 restored (or nothing to do), 1 failures. */
int topoctl_restore(const char *root_dir, const char *state_dir, bool json);
