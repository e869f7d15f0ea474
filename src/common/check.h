/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topoctl check [PATH…] and topod --check: parse and validate topod.conf and
 * policies without touching the system.
 *
 * A directory is a policies directory (its *.ini); a file named *.conf is a
 * topod.conf (with its .conf.d drop-ins); any other file is one policy.
 * With no paths: TOPOD_CONFIG_PATH. A topod.conf checked without policy
 * paths brings the policies topod would read with it: its policies_dir
 * (which must exist), or the three layers (policy-read.h), below root_dir
 * when given. Unless offline, the live topology and kernel probe (below
 * root_dir) add machine warnings.
 *
 * Prints "file:line: error: message" / "file:line: warning: message" to
 * stdout, then "file: note: ..." for each file of the layers overridden or
 * masked, then "N policies, E errors, W warnings" (or one JSON document
 * with json). Returns the exit code: 0 valid, 1 errors (or warnings with
 * strict), 2 usage. */

#include <stdbool.h>
#include <stddef.h>

int topoctl_check(char *const *paths, size_t n_paths, bool strict, bool offline, bool json, const char *root_dir);
/* The same with config_path (may be NULL) read as a topod.conf whatever its
 * name (topod --check --config FILE), before the paths. */
int topoctl_check_config(const char *config_path, char *const *paths, size_t n_paths, bool strict, bool offline,
                         bool json, const char *root_dir);

/* Another host class to check against instead of this machine: its
 * topology from an hwloc XML export or synthetic description, its kernel
 * probe from its `topoctl status --json` (NULL each: this machine's; the
 * kernel version is then unknown unless the root gives it). */
typedef struct CheckHost {
        const char *xml, *synthetic, *caps;
} CheckHost;

/* topoctl_check_config() against host (NULL: this machine). */
int topoctl_check_host(const char *config_path, char *const *paths, size_t n_paths, bool strict, bool offline,
                       bool json, const char *root_dir, const CheckHost *host);
