/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The kernel-wide settings: scheduler features (<debugfs>/sched/features),
 * the flattened-pick cgroup mode (<debugfs>/sched/cgroup_mode, 7.3+), and
 * the scheduler's other debugfs settings of base/sched-settings.h
 * (<debugfs>/sched/base_slice_ns, sched/llc_balancing/enabled, …).
 *
 * Each file is written one word at a time ("TTWU_QUEUE", "NO_TTWU_QUEUE",
 * "concur", "3000000") and read back after each write. What is already so is not
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
#include "base/sched-settings.h"
#include "decide/policy.h"
#include "observe/kernelcaps.h"

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
        FEAT_KIND_SETTING,
} FeatKind;

typedef enum FeatOutcome {
        FEAT_DONE,    /* written and read back */
        FEAT_ALREADY, /* was so: nothing written */
        FEAT_FAILED,  /* see error and reason */
        FEAT_SKIPPED, /* a setting this kernel lacks, or one lockdown refuses: see
                       * error and reason; nothing changed, and not a failure */
} FeatOutcome;

/* What happened to one setting. A report, filled in on success and on
 * failure alike; it owns no memory. */
typedef struct FeatResult {
        FeatKind kind;
        char name[FEAT_NAME_MAX]; /* the feature, the mode asked for, or the setting's file */
        bool on;                  /* feature: the value asked for */
        bool had_before;          /* before/was_on are known (the file was read) */
        bool was_on;              /* feature: the value found */
        char before[FEAT_NAME_MAX]; /* cgroup_mode: the active mode found ("" if none);
                                     * setting: the value found */
        char value[FEAT_NAME_MAX];  /* setting: the value asked for */
        bool journaled;           /* an original was recorded and committed for this change */
        bool forget;              /* FAILED, and the journal entry is dropped all the same: a
                                   * setting the catalog does not know, put back by no one */
        FeatOutcome outcome;
        int error;                /* negative errno when failed, else 0 */
        const char *reason;       /* static text, "" unless failed */
} FeatResult;

const char *feat_outcome_to_string(FeatOutcome o);
/* "feature", "cgroup_mode", "setting". */
const char *feat_kind_to_string(FeatKind k);

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

/* Set one of the settings of base/sched-settings.h as feat_set() does a
 * feature: file is its path under sched/ as this kernel names it
 * ("min_granularity_ns" on 6.5, "base_slice_ns" on 6.6), value its text
 * (sched_setting_value_parse()). The current value is read, the original
 * journaled, the value written and read back. Skipped (FEAT_SKIPPED, the
 * negative errno returned): -ENOENT the kernel has no such file, -EPERM
 * lockdown refuses the write. Failed: -EINVAL a file the catalog does not
 * know, a bad value, or a word the kernel does not list; -EIO the read-back
 * differs; the journal's error. */
int feat_set_setting(const Root *root, const FeatOps *ops, const char *debugfs_mount, Journal *journal,
                     const char *file, const char *value, FeatResult *result);

/* Read a setting's file (file as in feat_set_setting()) into ret_value
 * (SCHED_SETTING_VALUE_MAX bytes), as sched_setting_text_parse() gives it.
 * Negative errno from reading, -EINVAL for a file the catalog does not
 * know, -EBADMSG for text of another format. */
int feat_read_setting(const Root *root, const char *debugfs_mount, const char *file, char *ret_value);

/* A planned setting on this kernel: under the name the probe found it by
 * (caps), or skipped with why: absent (the catalog's reason, named by the
 * setting's name), or its file did not open for writing (lockdown). */
int feat_apply_setting(const Root *root, const FeatOps *ops, const KernelCaps *caps, Journal *journal,
                       const PolicySetting *setting, FeatResult *result);

/* Put back what the journal holds and the plan no longer sets (a policy
 * that set it left force, or a reload dropped it): features not in
 * kernel->features, the cgroup mode when mode is NULL, settings not in
 * kernel->settings. Each put back is forgotten (not committed). Returns the
 * number that failed and the results, as feat_restore(). */
int feat_release_unplanned(const Root *root, const FeatOps *ops, const char *debugfs_mount, Journal *journal,
                           const PolicyKernelPlan *kernel, const char *mode, FeatResult **ret_results, size_t *ret_n);

/* Put back every feature, the cgroup mode and every setting the journal
 * recorded, reading each back. Returns the number of items that failed (0:
 * all restored; the caller may then forget them or remove the journal) and
 * the per-item results in order (features as recorded, then the mode, then
 * the settings); negative errno only when it could not run at all
 * (-ENOMEM). */
int feat_restore(const Root *root, const FeatOps *ops, const char *debugfs_mount, const Journal *journal,
                 FeatResult **ret_results, size_t *ret_n);

/* Is a result of feat_restore() one whose journal entry goes: put back
 * (DONE, ALREADY) or one that never can be (forget)? */
bool feat_result_settled(const FeatResult *result);

/* Drop the journal entry a result of feat_restore() put back (its kind's). */
void feat_forget(Journal *journal, const FeatResult *result);
