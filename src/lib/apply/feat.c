/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "feat.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sched-settings.h"
#include "base/util.h"
#include "observe/kernelcaps.h"

/* ---- the kernel's side -------------------------------------------------- */

static int kernel_write(void *userdata, const Root *root, const char *path, const char *word) {
        (void) userdata;
        return root_write_value(root, path, word);
}

const FeatOps feat_ops_kernel = {
        .write = kernel_write,
};

/* ---- parsing ------------------------------------------------------------ */

FeatureState *feature_state_free(FeatureState *s) {
        if (!s)
                return NULL;
        strv_free(s->names);
        free(s->on);
        free(s);
        return NULL;
}

bool feat_name_valid(const char *name) {
        size_t n = strlen(name);

        if (n == 0 || n >= FEAT_NAME_MAX || startswith(name, "NO_"))
                return false;
        for (const char *c = name; *c; c++)
                if (!((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
                        return false;
        return true;
}

/* A mode is a lower-case word, as a choice setting's is. */
static bool mode_name_valid(const char *mode) {
        return sched_setting_value_valid(mode);
}

int feature_state_parse(const char *text, FeatureState **ret) {
        _cleanup_(feature_state_freep) FeatureState *s = calloc(1, sizeof(FeatureState));
        _cleanup_strv_free_ char **tokens = NULL;
        size_t n;
        int k;

        if (!s)
                return -ENOMEM;
        k = strv_split_ws(text, FEAT_COUNT_MAX, &tokens);
        if (k < 0)
                return k;
        n = strv_length(tokens);
        s->names = calloc(n + 1, sizeof(char *));
        s->on = calloc(n + 1, sizeof(bool));
        if (!s->names || !s->on)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                bool off = startswith(tokens[i], "NO_");
                const char *name = off ? tokens[i] + 3 : tokens[i];

                if (!feat_name_valid(name) || feature_state_get(s, name) >= 0)
                        return -EINVAL;
                s->names[i] = strdup(name);
                if (!s->names[i])
                        return -ENOMEM;
                s->on[i] = !off;
                s->n = i + 1;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int feature_state_get(const FeatureState *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->names[i], name))
                        return s->on[i];
        return -ENOENT;
}

/* ---- reading ------------------------------------------------------------ */

static int sched_path(const char *debugfs_mount, const char *file, char **ret) {
        if (!debugfs_mount)
                return -ENOENT; /* debugfs not mounted */
        if (asprintf(ret, "%s/sched/%s", debugfs_mount, file) < 0)
                return -ENOMEM;
        return 0;
}

int feat_read(const Root *root, const char *debugfs_mount, FeatureState **ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int k;

        k = sched_path(debugfs_mount, "features", &path);
        if (k < 0)
                return k;
        k = root_read_file(root, path, FEAT_TEXT_MAX, &text, NULL);
        if (k < 0)
                return k;
        k = feature_state_parse(text, ret);
        return k == -EINVAL ? -EBADMSG : k; /* EINVAL would read as "the kernel refused" */
}

int feat_read_cgroup_mode(const Root *root, const char *debugfs_mount, char ***ret_modes, char **ret_active) {
        _cleanup_free_ char *path = NULL, *text = NULL, *active = NULL;
        _cleanup_strv_free_ char **modes = NULL;
        int k;

        k = sched_path(debugfs_mount, "cgroup_mode", &path);
        if (k < 0)
                return k;
        k = root_read_file(root, path, FEAT_TEXT_MAX, &text, NULL);
        if (k < 0)
                return k;
        /* The kernel's list decides which modes exist: never a list of ours. */
        k = kernelcaps_parse_cgroup_mode(text, &modes, &active);
        if (k < 0)
                return k == -EINVAL ? -EBADMSG : k;
        if (ret_modes)
                *ret_modes = TAKE_PTR(modes);
        if (ret_active)
                *ret_active = TAKE_PTR(active);
        return 0;
}

/* ---- results ------------------------------------------------------------ */

const char *feat_outcome_to_string(FeatOutcome o) {
        switch (o) {
        case FEAT_DONE:
                return "done";
        case FEAT_ALREADY:
                return "already";
        case FEAT_FAILED:
                return "failed";
        case FEAT_SKIPPED:
                return "skipped";
        }
        return "unknown";
}

const char *feat_kind_to_string(FeatKind k) {
        switch (k) {
        case FEAT_KIND_FEATURE:
                return "feature";
        case FEAT_KIND_CGROUP_MODE:
                return "cgroup_mode";
        case FEAT_KIND_SETTING:
                return "setting";
        }
        return "unknown";
}

static void result_init(FeatResult *r, FeatKind kind, const char *name, bool on) {
        *r = (FeatResult) { .kind = kind, .on = on, .outcome = FEAT_FAILED, .reason = "" };
        snprintf(r->name, sizeof(r->name), "%s", name);
}

static int result_fail(FeatResult *r, int error, const char *reason) {
        r->outcome = FEAT_FAILED;
        r->error = error;
        r->reason = reason;
        return error;
}

static int result_ok(FeatResult *r, FeatOutcome o) {
        r->outcome = o;
        r->error = 0;
        return 0;
}

/* What a failed read or write of a sched/ file means. */
static const char *access_reason(int err, bool cgroup_mode) {
        switch (-err) {
        case EPERM:
                /* Lockdown (integrity or stricter) refuses debugfs writes;
                 * permanent until reboot, so reported and left as is. */
                return "refused by the kernel (lockdown?): left as is";
        case EACCES:
                return "permission denied (not root?)";
        case EROFS:
                return "read-only file system (the unit's ReadWritePaths= lacks /sys/kernel/debug?)";
        case ENOENT:
                return cgroup_mode ? "absent: kernel without flattened-pick cgroup modes (before 7.3)"
                                   : "no sched/features file (debugfs not mounted, or a kernel without it)";
        case EINVAL:
                return "the kernel refused the word (EINVAL)";
        case E2BIG:
        case EFBIG:
        case EBADMSG:
                return "the file's text has an unexpected format";
        default:
                return "reading or writing the kernel's file failed";
        }
}

/* Record the original and make it durable before the change. */
static int journal_before(Journal *journal, FeatResult *r, int record) {
        int k = record;

        if (k >= 0)
                k = journal_commit(journal);
        if (k < 0)
                return result_fail(r, k, "the original could not be written to the journal: not changed");
        r->journaled = true;
        return 0;
}

/* ---- features ----------------------------------------------------------- */

int feat_set(const Root *root, const FeatOps *ops, const char *debugfs_mount, Journal *journal, const char *name,
             bool on, FeatResult *result) {
        _cleanup_(feature_state_freep) FeatureState *s = NULL;
        _cleanup_free_ char *path = NULL, *word = NULL;
        int k, cur;

        result_init(result, FEAT_KIND_FEATURE, name, on);
        if (!ops)
                ops = &feat_ops_kernel;
        if (!feat_name_valid(name))
                return result_fail(result, -EINVAL, "not a feature name (upper case, digits, '_'; no NO_ prefix)");
        k = sched_path(debugfs_mount, "features", &path);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return result_fail(result, k, "debugfs is not mounted");

        k = feat_read(root, debugfs_mount, &s);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return result_fail(result, k, access_reason(k, false));
        cur = feature_state_get(s, name);
        if (cur < 0)
                /* The kernel would say EINVAL to the write: do not try. */
                return result_fail(result, -EINVAL, "the kernel does not list this feature");
        result->had_before = true;
        result->was_on = cur;
        if ((bool) cur == on)
                return result_ok(result, FEAT_ALREADY);

        if (journal) {
                k = journal_before(journal, result, journal_record_feature(journal, name, cur));
                if (k < 0)
                        return k;
        }

        if (asprintf(&word, "%s%s", on ? "" : "NO_", name) < 0)
                return -ENOMEM;
        k = ops->write(ops->userdata, root, path, word);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return result_fail(result, k, access_reason(k, false));

        s = feature_state_free(s);
        k = feat_read(root, debugfs_mount, &s);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return result_fail(result, k, "written, but the read-back failed");
        if (feature_state_get(s, name) != (int) on)
                return result_fail(result, -EIO, "written, but the read-back shows another value");
        return result_ok(result, FEAT_DONE);
}

/* ---- cgroup_mode -------------------------------------------------------- */

int feat_set_cgroup_mode(const Root *root, const FeatOps *ops, const char *debugfs_mount, Journal *journal,
                         const char *mode, FeatResult *result) {
        _cleanup_strv_free_ char **modes = NULL;
        _cleanup_free_ char *path = NULL, *active = NULL;
        int k;

        result_init(result, FEAT_KIND_CGROUP_MODE, mode, true);
        if (!ops)
                ops = &feat_ops_kernel;
        if (!mode_name_valid(mode))
                return result_fail(result, -EINVAL, "not a cgroup mode name");
        k = sched_path(debugfs_mount, "cgroup_mode", &path);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return result_fail(result, k, "debugfs is not mounted");

        k = feat_read_cgroup_mode(root, debugfs_mount, &modes, &active);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return result_fail(result, k, access_reason(k, true));
        result->had_before = true;
        snprintf(result->before, sizeof(result->before), "%s", active ?: "");
        if (!strv_contains(modes, mode))
                return result_fail(result, -EINVAL, "the kernel does not list this mode");
        if (active && streq(active, mode))
                return result_ok(result, FEAT_ALREADY);

        if (journal) {
                if (!active)
                        /* Nothing to put back on stop: refuse rather than lose it. */
                        return result_fail(result, -ENODATA,
                                           "the kernel marks no active mode: no original to record, not changed");
                k = journal_before(journal, result, journal_record_cgroup_mode(journal, active));
                if (k < 0)
                        return k;
        }

        k = ops->write(ops->userdata, root, path, mode);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return result_fail(result, k, access_reason(k, true));

        modes = strv_free(modes);
        active = mfree(active);
        k = feat_read_cgroup_mode(root, debugfs_mount, &modes, &active);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return result_fail(result, k, "written, but the read-back failed");
        if (!active || !streq(active, mode))
                return result_fail(result, -EIO, "written, but the read-back shows another active mode");
        return result_ok(result, FEAT_DONE);
}

/* ---- the other settings ------------------------------------------------- */

static int result_skip(FeatResult *r, int error, const char *reason) {
        result_fail(r, error, reason);
        r->outcome = FEAT_SKIPPED;
        return error;
}

/* The setting's value now (and, for a CHOICE, the words listed). */
static int read_setting(const Root *root, const char *path, SchedSettingKind kind, char *ret_value,
                        char ***ret_choices) {
        _cleanup_free_ char *text = NULL;
        int k;

        k = root_read_file(root, path, FEAT_TEXT_MAX, &text, NULL);
        if (k < 0)
                return k;
        return sched_setting_text_parse(kind, text, ret_value, ret_choices);
}

int feat_read_setting(const Root *root, const char *debugfs_mount, const char *file, char *ret_value) {
        const SchedSettingInfo *info = sched_setting_file_valid(file) ? sched_setting_by_file(file) : NULL;
        _cleanup_free_ char *path = NULL;
        int k;

        if (!info)
                return -EINVAL;
        if ((k = sched_path(debugfs_mount, file, &path)) < 0)
                return k;
        return read_setting(root, path, info->kind, ret_value, NULL);
}

/* Why a read or write of a setting's file did not happen: the kinds that
 * are a skip (the kernel lacks it, lockdown refuses it: neither is the
 * policy's fault, and neither changes until a reboot) and the rest. */
static int setting_access_fail(FeatResult *r, int err) {
        switch (-err) {
        case ENOENT:
                return result_skip(r, err, "absent: this kernel has no such file under sched/");
        case EPERM:
                return result_skip(r, err, "refused by the kernel (lockdown?): left as is");
        case ENODATA:
                return result_fail(r, err, "the kernel marks no active word: no original to record, not changed");
        default:
                return result_fail(r, err, access_reason(err, false));
        }
}

int feat_set_setting(const Root *root, const FeatOps *ops, const char *debugfs_mount, Journal *journal,
                     const char *file, const char *value, FeatResult *result) {
        _cleanup_strv_free_ char **choices = NULL;
        _cleanup_free_ char *path = NULL;
        const SchedSettingInfo *info;
        char now[SCHED_SETTING_VALUE_MAX];
        int k;

        result_init(result, FEAT_KIND_SETTING, file, true);
        snprintf(result->value, sizeof(result->value), "%s", value);
        if (!ops)
                ops = &feat_ops_kernel;
        info = sched_setting_file_valid(file) ? sched_setting_by_file(file) : NULL;
        if (!info)
                return result_fail(result, -EINVAL, "not a scheduler setting topod knows");
        if (sched_setting_value_parse(info->kind, value, now) < 0 || !streq(now, value))
                return result_fail(result, -EINVAL, "not a value of this setting");
        k = sched_path(debugfs_mount, file, &path);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return result_skip(result, k, "debugfs is not mounted");

        k = read_setting(root, path, info->kind, now, &choices);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return setting_access_fail(result, k);
        result->had_before = true;
        snprintf(result->before, sizeof(result->before), "%s", now);
        if (info->kind == SCHED_SETTING_CHOICE && !strv_contains(choices, value))
                return result_fail(result, -EINVAL, "the kernel does not list this word");
        if (streq(now, value))
                return result_ok(result, FEAT_ALREADY);

        if (journal) {
                k = journal_before(journal, result, journal_record_setting(journal, file, now));
                if (k < 0)
                        return k;
        }

        k = ops->write(ops->userdata, root, path, value);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return setting_access_fail(result, k);

        choices = strv_free(choices);
        k = read_setting(root, path, info->kind, now, NULL);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return result_fail(result, k, "written, but the read-back failed");
        if (!streq(now, value))
                return result_fail(result, -EIO, "written, but the read-back shows another value");
        return result_ok(result, FEAT_DONE);
}

int feat_apply_setting(const Root *root, const FeatOps *ops, const KernelCaps *caps, Journal *journal,
                       const PolicySetting *setting, FeatResult *result) {
        const KernelSetting *ks = kernelcaps_setting(caps, setting->info);

        if (ks && kernelcaps_setting_unknown(ks) && caps->debugfs_mount) {
                result_init(result, FEAT_KIND_SETTING, setting->info->name, true);
                snprintf(result->value, sizeof(result->value), "%s", setting->value);
                return result_fail(result, ks->error, access_reason(ks->error, false));
        }
        if (!ks || !ks->file || !caps->debugfs_mount) {
                result_init(result, FEAT_KIND_SETTING, setting->info->name, true);
                snprintf(result->value, sizeof(result->value), "%s", setting->value);
                return result_skip(result, -ENOENT, caps->debugfs_mount ? setting->info->absent : "debugfs is not mounted");
        }
        /* Only lockdown (EPERM, permanent until reboot) is a skip; EACCES or
         * EROFS (a unit without ReadWritePaths= for debugfs) is an install
         * that cannot do its job, and fails. */
        if (!ks->writable) {
                result_init(result, FEAT_KIND_SETTING, ks->file, true);
                snprintf(result->value, sizeof(result->value), "%s", setting->value);
                if (ks->error == -EPERM)
                        return result_skip(result, -EPERM,
                                           "refused: the file does not open for writing (lockdown?): left as is");
                return result_fail(result, ks->error ?: -EIO, access_reason(ks->error ?: -EIO, false));
        }
        return feat_set_setting(root, ops, caps->debugfs_mount, journal, ks->file, setting->value, result);
}

/* ---- restore ------------------------------------------------------------ */

/* A journal entry of a setting the catalog does not know: a topod with a
 * larger catalog wrote it before this one was installed over it. It cannot
 * be checked or put back; kept, it would fail every pass and keep the
 * journal forever, so it fails once, naming the file, and is forgotten. */
static bool unknown_setting_entry(const JournalSetting *s, FeatResult *r) {
        if (sched_setting_file_valid(s->file) && sched_setting_by_file(s->file))
                return false;
        result_init(r, FEAT_KIND_SETTING, s->file, true);
        snprintf(r->value, sizeof(r->value), "%s", s->value);
        (void) result_fail(r, -EINVAL,
                           "not a scheduler setting this topod knows (journaled by another version?): "
                           "left as is, forgotten");
        r->forget = true;
        return true;
}

bool feat_result_settled(const FeatResult *result) {
        return result->outcome == FEAT_DONE || result->outcome == FEAT_ALREADY || result->forget;
}

int feat_restore(const Root *root, const FeatOps *ops, const char *debugfs_mount, const Journal *journal,
                 FeatResult **ret_results, size_t *ret_n) {
        _cleanup_free_ FeatResult *results = NULL;
        size_t n = journal->n_features + (journal->cgroup_mode ? 1 : 0) + journal->n_settings, i = 0;
        int failed = 0, k;

        results = calloc(MAX(n, 1u), sizeof(FeatResult));
        if (!results)
                return -ENOMEM;
        for (size_t f = 0; f < journal->n_features; f++, i++) {
                k = feat_set(root, ops, debugfs_mount, NULL, journal->features[f].name, journal->features[f].on,
                             &results[i]);
                if (k == -ENOMEM && results[i].error != -ENOMEM)
                        return k;
                failed += k < 0;
        }
        if (journal->cgroup_mode) {
                k = feat_set_cgroup_mode(root, ops, debugfs_mount, NULL, journal->cgroup_mode, &results[i]);
                if (k == -ENOMEM && results[i].error != -ENOMEM)
                        return k;
                failed += k < 0;
                i++;
        }
        for (size_t x = 0; x < journal->n_settings; x++, i++) {
                if (unknown_setting_entry(&journal->settings[x], &results[i])) {
                        failed++;
                        continue;
                }
                k = feat_set_setting(root, ops, debugfs_mount, NULL, journal->settings[x].file,
                                     journal->settings[x].value, &results[i]);
                if (k == -ENOMEM && results[i].error != -ENOMEM)
                        return k;
                failed += k < 0;
        }
        *ret_results = TAKE_PTR(results);
        *ret_n = n;
        return failed;
}

void feat_forget(Journal *journal, const FeatResult *result) {
        switch (result->kind) {
        case FEAT_KIND_FEATURE:
                (void) journal_forget_feature(journal, result->name);
                break;
        case FEAT_KIND_CGROUP_MODE:
                (void) journal_forget_cgroup_mode(journal);
                break;
        case FEAT_KIND_SETTING:
                (void) journal_forget_setting(journal, result->name);
                break;
        }
}

static bool feature_planned(const PolicyKernelPlan *kernel, const char *name) {
        for (size_t i = 0; i < kernel->n_features; i++)
                if (streq(kernel->features[i].name, name))
                        return true;
        return false;
}

static bool setting_planned(const PolicyKernelPlan *kernel, const char *file) {
        const SchedSettingInfo *info = sched_setting_by_file(file);

        for (size_t i = 0; info && i < kernel->n_settings; i++)
                if (kernel->settings[i].info == info)
                        return true;
        return false;
}

/* Count one entry put back (k: its setter's return). */
static int release_one(const FeatResult *r, int k, size_t *n, int *failed) {
        if (k == -ENOMEM && r->error != -ENOMEM)
                return k;
        *failed += k < 0;
        (*n)++;
        return 0;
}

int feat_release_unplanned(const Root *root, const FeatOps *ops, const char *debugfs_mount, Journal *journal,
                           const PolicyKernelPlan *kernel, const char *mode, FeatResult **ret_results, size_t *ret_n) {
        size_t cap = journal->n_features + (journal->cgroup_mode ? 1 : 0) + journal->n_settings, n = 0;
        _cleanup_free_ FeatResult *results = calloc(MAX(cap, 1u), sizeof(FeatResult));
        int failed = 0, k;

        if (!results)
                return -ENOMEM;
        /* Copied names: a forget frees the entry's. */
        for (size_t i = 0; i < journal->n_features; i++)
                if (!feature_planned(kernel, journal->features[i].name) &&
                    (k = release_one(&results[n], feat_set(root, ops, debugfs_mount, NULL,
                                                                     journal->features[i].name,
                                                                     journal->features[i].on, &results[n]),
                                     &n, &failed)) < 0)
                        return k;
        if (journal->cgroup_mode && !mode &&
            (k = release_one(&results[n], feat_set_cgroup_mode(root, ops, debugfs_mount, NULL,
                                                                         journal->cgroup_mode, &results[n]),
                             &n, &failed)) < 0)
                return k;
        for (size_t i = 0; i < journal->n_settings; i++)
                if (unknown_setting_entry(&journal->settings[i], &results[n])) {
                        failed++;
                        n++;
                } else if (!setting_planned(kernel, journal->settings[i].file) &&
                           (k = release_one(&results[n], feat_set_setting(root, ops, debugfs_mount, NULL,
                                                                          journal->settings[i].file,
                                                                          journal->settings[i].value, &results[n]),
                                            &n, &failed)) < 0)
                        return k;
        for (size_t i = 0; i < n; i++)
                if (feat_result_settled(&results[i]))
                        feat_forget(journal, &results[i]);
        *ret_results = TAKE_PTR(results);
        *ret_n = n;
        return failed;
}
