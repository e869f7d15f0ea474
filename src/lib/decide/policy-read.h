/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The thin reader: files and directories into the pure parsers. The only
 * part of decide/ that does I/O. Files are read with a size cap; problems
 * reading them become "io" / "limit" diagnostics on the path. */

#include <stddef.h>

#include "config.h"
#include "diag.h"
#include "policy.h"

/* Read a whole file of at most max bytes. -EFBIG when larger. */
int read_text_file(const char *path, size_t max, char **ret, size_t *ret_len);

/* Policies from files and directories. A directory contributes its *.ini
 * files (not hidden ones, not subdirectories), in name order; a file is read
 * whatever its name. Returns 0 when all parsed cleanly, -EINVAL when some
 * had errors (or could not be read; all in d; *ret still set with the good
 * ones), -ENOMEM. */
int policy_read_paths(char *const *paths, size_t n_paths, Diagnostics *d, PolicySet **ret);

/* topod.conf at path and its drop-ins, the *.conf files in path + ".d". A missing main file
 * is an error only when must_exist; a missing drop-in directory is fine.
 * Returns as config_parse_all(). */
int config_read(const char *path, bool must_exist, Diagnostics *d, Config **ret);
