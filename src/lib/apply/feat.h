/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The kernel-wide settings: scheduler features (<debugfs>/sched/features)
 * and the flattened-pick cgroup mode (<debugfs>/sched/cgroup_mode, 7.3+).
 *
 * Both files are written one word at a time ("TTWU_QUEUE", "NO_TTWU_QUEUE",
 * "concur") and read back after each write. What is already so is not
 * written. All paths go through the Root, under the debugfs mount that the
 * KernelCaps probe found ("/sys/kernel/debug" on a usual machine).
 *
 * With a Journal, the original value is recorded and committed before the
 * first write that changes it; when the journal cannot be written nothing is
 * changed. */

#include <stdbool.h>
#include <stddef.h>

#include "apply/journal.h"
#include "base/macro.h"
#include "base/root.h"

#define FEAT_NAME_MAX 64u     /* a feature or mode name, including NUL */
#define FEAT_COUNT_MAX 1024u  /* features one file may list */
#define FEAT_TEXT_MAX (64u * 1024u)

/* The parsed features file: "PLACE_LAG NO_NEXT_BUDDY …". */
typedef struct FeatureState {
        char **names; /* without NO_, in the kernel's order */
        bool *on;
        size_t n;
} FeatureState;

FeatureState *feature_state_free(FeatureState *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(FeatureState *, feature_state_free);

/* Pure: parse the file's text. -EINVAL for a token that is no feature name
 * or a name listed twice, -E2BIG past FEAT_COUNT_MAX. */
int feature_state_parse(const char *text, FeatureState **ret);
/* 1 on, 0 off, -ENOENT when the kernel does not list it. */
int feature_state_get(const FeatureState *s, const char *name);

/* Is this a feature name as the kernel lists it (upper case, digits, '_',
 * not starting with "NO_")? */
bool feat_name_valid(const char *name);

/* How words reach the kernel. The real one opens the file for writing and
 * writes the word in one write(); tests stand in for the kernel. path is
 * relative to the root. 0 or negative errno. */
typedef struct FeatOps {
        int (*write)(void *userdata, const Root *root, const char *path, const char *word);
        void *userdata;
} FeatOps;

extern const FeatOps feat_ops_kernel;

typedef enum FeatKind {
        FEAT_KIND_FEATURE,
        FEAT_KIND_CGROUP_MODE,
} FeatKind;

typedef enum FeatOutcome {
        FEAT_DONE,    /* written and read back */
        FEAT_ALREADY, /* was so: nothing written */
        FEAT_FAILED,  /* see error and reason */
} FeatOutcome;

/* What happened to one setting. A report, filled in on success and on
 * failure alike; it owns no memory. */
typedef struct FeatResult {
        FeatKind kind;
        char name[FEAT_NAME_MAX]; /* the feature, or the mode asked for */
        bool on;                  /* feature: the value asked for */
        bool had_before;          /* before/was_on are known (the file was read) */
        bool was_on;              /* feature: the value found */
        char before[FEAT_NAME_MAX]; /* cgroup_mode: the active mode found ("" if none) */
        bool journaled;           /* an original was recorded and committed for this change */
        FeatOutcome outcome;
        int error;                /* negative errno when failed, else 0 */
        const char *reason;       /* static text, "" unless failed */
} FeatResult;

const char *feat_outcome_to_string(FeatOutcome o);

/* Read <debugfs_mount>/sched/features. Negative errno from reading (-ENOENT
 * absent, -EPERM lockdown, -EACCES not root), -EBADMSG for text in a format
 * we do not know, -E2BIG past FEAT_COUNT_MAX. */
int feat_read(const Root *root, const char *debugfs_mount, FeatureState **ret);

/* Set one feature: check it is listed, write NAME or NO_NAME unless already
 * so, read back. ops NULL = the kernel; journal may be NULL (restore).
 * Returns 0 for done / already so, the negative errno of result->error when
 * failed: -EPERM refused (lockdown; reported, not fatal), -EACCES, -EINVAL
 * unknown or invalid name, -ENOENT no features file, -EIO the read-back
 * differs, or the journal's error (nothing was changed). */
int feat_set(const Root *root, const FeatOps *ops, const char *debugfs_mount, Journal *journal, const char *name,
             bool on, FeatResult *result);

/* Read <debugfs_mount>/sched/cgroup_mode: the modes as the kernel lists them
 * and the active one (NULL when none is marked). -ENOENT when the kernel has
 * no such file (before 7.3), -EBADMSG for an unknown format. ret_modes or
 * ret_active may be NULL. */
int feat_read_cgroup_mode(const Root *root, const char *debugfs_mount, char ***ret_modes, char **ret_active);

/* Set the cgroup mode as feat_set() does a feature: -ENOENT when the file is
 * absent (before 7.3), -EINVAL when the kernel does not list the mode. */
int feat_set_cgroup_mode(const Root *root, const FeatOps *ops, const char *debugfs_mount, Journal *journal,
                         const char *mode, FeatResult *result);

/* Put back every feature and the cgroup mode the journal recorded, reading
 * each back. Returns the number of items that failed (0: all restored; the
 * caller may then forget them or remove the journal) and the per-item
 * results in order (features as recorded, then the mode); negative errno
 * only when it could not run at all (-ENOMEM). */
int feat_restore(const Root *root, const FeatOps *ops, const char *debugfs_mount, const Journal *journal,
                 FeatResult **ret_results, size_t *ret_n);
