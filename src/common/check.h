/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topoctl check [PATH…] and topod --check: parse and validate topod.conf and
 * policies without touching the system.
 *
 * A directory is a policies directory (its *.ini); a file named *.conf is a
 * topod.conf (with its .conf.d drop-ins); any other file is one policy.
 * With no paths: /etc/topod/topod.conf and the policies_dir it names, below
 * root_dir when given. Unless offline, the live topology and kernel probe
 * (below root_dir) add machine warnings.
 *
 * Prints "file:line: error: message" / "file:line: warning: message" to
 * stdout (or a JSON document with json), a one-line summary to stderr when
 * something was found. Returns the exit code: 0 valid, 1 errors (or warnings
 * with strict), 2 usage. */

#include <stdbool.h>
#include <stddef.h>

int topoctl_check(char *const *paths, size_t n_paths, bool strict, bool offline, bool json, const char *root_dir);

/* Another host class to check against instead of this machine: its
 * topology from an hwloc XML export or synthetic description, its kernel
 * probe from its `topoctl status --json` (NULL each: this machine's; the
 * kernel version is then unknown unless the root gives it). */
typedef struct CheckHost {
        const char *xml, *synthetic, *caps;
} CheckHost;

int topoctl_check_host(char *const *paths, size_t n_paths, bool strict, bool offline, bool json, const char *root_dir,
                       const CheckHost *host);
