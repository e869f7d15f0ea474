/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The thin reader: files and directories into the pure parsers. The only
 * part of decide/ that does I/O. Files are read with a size cap; problems
 * reading them become "io" / "limit" diagnostics on the path. */

#include <stddef.h>

#include "base/root.h"
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

/* The layers of the policy search, highest first (base/paths.h). */
typedef enum PolicyLayer {
        POLICY_LAYER_RUNTIME, /* /run/topod/policies.d: transient, gone at boot */
        POLICY_LAYER_LOCAL,   /* sysconfdir/topod/policies.d: the operator's */
        POLICY_LAYER_VENDOR,  /* datadir/topod/policies.d: shipped with topod */
        _POLICY_LAYER_MAX,
} PolicyLayer;

/* "runtime", "local", "vendor"; NULL for anything else. The strings are
 * the ones Policy.layer points at. */
const char *policy_layer_to_string(PolicyLayer l);

/* What topod reads: one path alone (a --policies path, or topod.conf's
 * policies_dir), or else the three layers' directories. */
typedef struct PolicySearch {
        char *path;                    /* read alone when set (policy_read_paths()) */
        char *dirs[_POLICY_LAYER_MAX]; /* else these, host paths below the root */
} PolicySearch;

/* given: a path as given on a command line, used as it is (NULL: none);
 * else policies_dir (from topod.conf, NULL: none) below the root; else the
 * layers below the root (root_host_path(); NULL: the host). -ENOMEM. */
int policy_search_init(PolicySearch *s, const Root *root, const char *given, const char *policies_dir);
void policy_search_done(PolicySearch *s);
/* "DIR" or "DIR1, DIR2 and DIR3", for messages. NULL on OOM. */
char *policy_search_describe(const PolicySearch *s);

/* One *.ini file found by a layered search and what became of it. */
typedef enum PolicyFileState {
        POLICY_FILE_USED,       /* read */
        POLICY_FILE_OVERRIDDEN, /* a file of the same name in a higher layer is read instead */
        POLICY_FILE_MASKED,     /* a mask of the same name in a higher layer hides it */
        POLICY_FILE_MASK,       /* a symbolic link to /dev/null, or an empty file: read as nothing */
} PolicyFileState;

typedef struct PolicyFile {
        char *path;
        const char *layer;     /* policy_layer_to_string() */
        PolicyFileState state;
        char *by;              /* OVERRIDDEN, MASKED: the file that wins; else NULL */
} PolicyFile;

typedef struct PolicyFiles {
        PolicyFile *items;
        size_t n;
} PolicyFiles;

void policy_files_done(PolicyFiles *f);
const char *policy_file_state_to_string(PolicyFileState s); /* "used", "overridden", "masked", "mask" */

/* Read what s names. A path alone: as policy_read_paths() (a missing one
 * is an error). The layers (systemd's conf_files_list): the *.ini names of
 * all three directories, a directory that does not exist contributing
 * none; for each name the file of the highest layer that has it, unless
 * that file is a mask, when the name is left out. The policies read carry
 * their layer (Policy.layer). ret_files (may be NULL) receives every file
 * the layers hold and its state, in name order then layer order; {} for a
 * path alone. Returns as policy_read_paths(). */
int policy_search_read(const PolicySearch *s, Diagnostics *d, PolicySet **ret, PolicyFiles *ret_files);

/* Whether the layered search found any directory at all (false for a path
 * alone: its own reading reports it). */
bool policy_search_any_dir(const PolicySearch *s);

/* topod.conf at path and its drop-ins, the *.conf files in path + ".d". A missing main file
 * is an error only when must_exist; a missing drop-in directory is fine.
 * Returns as config_parse_all(). */
int config_read(const char *path, bool must_exist, Diagnostics *d, Config **ret);
