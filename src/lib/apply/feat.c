/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "feat.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static bool mode_name_valid(const char *mode) {
        size_t n = strlen(mode);

        if (n == 0 || n >= FEAT_NAME_MAX)
                return false;
        for (const char *c = mode; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
                        return false;
        return true;
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

/* ---- restore ------------------------------------------------------------ */

int feat_restore(const Root *root, const FeatOps *ops, const char *debugfs_mount, const Journal *journal,
                 FeatResult **ret_results, size_t *ret_n) {
        _cleanup_free_ FeatResult *results = NULL;
        size_t n = journal->n_features + (journal->cgroup_mode ? 1 : 0), i = 0;
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
        *ret_results = TAKE_PTR(results);
        *ret_n = n;
        return failed;
}
