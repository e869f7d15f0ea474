/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* KernelCaps from another host's `topoctl status --json`: its kernel
 * probe as that host printed it (observe-print.c), to check and plan for
 * that host class here. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json-parse.h"
#include "base/root.h"
#include "base/util.h"
#include "observe/kernelcaps.h"

/* The errno a name stands for ("ENOENT"), as a negative number; an
 * unknown name: -EIO (something failed there). */
static int errno_of(const char *name) {
        if (!name)
                return 0;
        for (int e = 1; e < 4096; e++) {
                const char *n = strerrorname_np(e);

                if (n && streq(n, name))
                        return -e;
        }
        return -EIO;
}

static int dup_str(const JsonValue *o, const char *key, char **ret) {
        const char *s = json_value_get_string(o, key);

        *ret = NULL;
        if (s && !(*ret = strdup(s)))
                return -ENOMEM;
        return 0;
}

/* An array of strings (others are skipped); absent: NULL. */
static int dup_strv(const JsonValue *o, const char *key, char ***ret) {
        const JsonValue *a = json_value_get(o, key);
        char **l;
        size_t n = 0;

        *ret = NULL;
        if (!a || a->kind != JSON_ARRAY)
                return 0;
        l = calloc(a->n_items + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < a->n_items; i++)
                if (a->items[i].kind == JSON_STRING && !(l[n++] = strdup(a->items[i].string))) {
                        strv_free(l);
                        return -ENOMEM;
                }
        *ret = l;
        return 0;
}

static int cap_from(const JsonValue *o, CapStatus *c) {
        c->available = json_value_get_bool(o, "available", false);
        c->error = errno_of(json_value_get_string(o, "error"));
        if (dup_str(o, "reason", &c->reason) < 0)
                return -ENOMEM;
        if (!c->reason && !(c->reason = strdup(o ? "as the other host's probe has it" : "not in the other host's probe")))
                return -ENOMEM;
        return 0;
}

/* A setting's file name here is one of the catalog's names for it. */
static const char *catalog_file(const SchedSettingInfo *info, const char *file) {
        for (size_t i = 0; file && i < info->n_files; i++)
                if (streq(info->files[i].name, file))
                        return info->files[i].name;
        return file ? info->name : NULL;
}

static int settings_from(KernelCaps *c, const JsonValue *o) {
        const JsonValue *list = json_value_get(o, "settings");

        c->settings = calloc(sched_settings_count, sizeof(KernelSetting));
        if (!c->settings)
                return -ENOMEM;
        c->n_settings = sched_settings_count;
        for (size_t i = 0; i < c->n_settings; i++) {
                KernelSetting *ks = &c->settings[i];

                *ks = (KernelSetting) { .info = &sched_settings[i], .error = -ENOENT };
                for (size_t s = 0; list && list->kind == JSON_ARRAY && s < list->n_items; s++) {
                        const JsonValue *e = &list->items[s];
                        const char *name = json_value_get_string(e, "name"), *value;

                        if (!name || !streq(name, ks->info->name))
                                continue;
                        if (json_value_get_bool(e, "present", false))
                                ks->file = catalog_file(ks->info, json_value_get_string(e, "file") ?: ks->info->name);
                        value = json_value_get_string(e, "value");
                        if (value)
                                snprintf(ks->value, sizeof(ks->value), "%s", value);
                        ks->writable = json_value_get_bool(e, "writable", false);
                        ks->error = errno_of(json_value_get_string(e, "error"));
                        if (dup_strv(e, "choices", &ks->choices) < 0)
                                return -ENOMEM;
                        break;
                }
        }
        return 0;
}

int kernelcaps_from_json(const char *text, size_t len, KernelCaps **ret, char **ret_error) {
        _cleanup_(json_value_freep) JsonValue *doc = NULL;
        _cleanup_(kernelcaps_freep) KernelCaps *c = NULL;
        const JsonValue *top, *caps, *v;
        unsigned line = 0;
        int k;

        *ret_error = NULL;
        k = json_parse(text, len, &doc, &line);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return asprintf(ret_error, "line %u: %s", line, k == -E2BIG ? "nested or long past the bounds" : "not valid JSON") < 0
                               ? -ENOMEM
                               : -EINVAL;
        /* The probe's object, or a running topod's status (its "kernel"). */
        top = json_value_get(doc, "capabilities") ? doc : json_value_get(doc, "kernel");
        caps = json_value_get(top, "capabilities");
        if (!caps || caps->kind != JSON_OBJECT)
                return asprintf(ret_error, "no \"capabilities\" object (the output of topoctl status --json)") < 0 ? -ENOMEM
                                                                                                                 : -EINVAL;
        c = calloc(1, sizeof(KernelCaps));
        if (!c)
                return -ENOMEM;
        {
                const struct {
                        const char *key;
                        CapStatus *cap;
                } rows[] = {
                        { "core_scheduling", &c->core_sched }, { "smt", &c->smt },
                        { "cgroup2", &c->cgroup2 },            { "debugfs", &c->debugfs },
                        { "sched_features", &c->sched_features }, { "cgroup_mode", &c->cgroup_mode },
                        { "sched_settings", &c->sched_settings }, { "sched_ext", &c->sched_ext },
                        { "proc_connector", &c->proc_connector }, { "avx512_state", &c->avx512_state },
                        { "avx512_evidence", &c->avx512_evidence }, { "avx512_counters", &c->avx512_counters },
                        { "schedstats", &c->schedstats },       { "pidfs", &c->pidfs },
                };

                for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                        if (cap_from(json_value_get(caps, rows[i].key), rows[i].cap) < 0)
                                return -ENOMEM;
        }
        v = json_value_get(caps, "smt");
        c->smt_active = json_value_get_bool(v, "active", false);
        if (dup_str(v, "control", &c->smt_control) < 0)
                return -ENOMEM;
        v = json_value_get(caps, "cgroup2");
        c->cgroup_hybrid = json_value_get_bool(v, "hybrid", false);
        if (dup_str(v, "mount", &c->cgroup2_mount) < 0 || dup_strv(v, "controllers", &c->cgroup2_controllers) < 0 ||
            dup_strv(v, "subtree_control", &c->cgroup2_subtree) < 0 ||
            dup_strv(v, "v1_controllers", &c->cgroup_v1_controllers) < 0)
                return -ENOMEM;
        if (dup_str(json_value_get(caps, "debugfs"), "mount", &c->debugfs_mount) < 0)
                return -ENOMEM;
        v = json_value_get(caps, "sched_features");
        c->features_readable = json_value_get_bool(v, "readable", false);
        c->features_writable = json_value_get_bool(v, "writable", false);
        c->features_write_error = errno_of(json_value_get_string(v, "write_error"));
        if (dup_strv(v, "features", &c->features) < 0)
                return -ENOMEM;
        v = json_value_get(caps, "cgroup_mode");
        c->cgroup_mode_writable = json_value_get_bool(v, "writable", false);
        if (dup_strv(v, "modes", &c->cgroup_modes) < 0 || dup_str(v, "active", &c->cgroup_mode_active) < 0)
                return -ENOMEM;
        if (settings_from(c, json_value_get(caps, "sched_settings")) < 0)
                return -ENOMEM;
        v = json_value_get(caps, "sched_ext");
        c->sched_ext_active = json_value_get_bool(v, "active", false);
        if (dup_str(v, "state", &c->sched_ext_state) < 0 || dup_str(v, "ops", &c->sched_ext_ops) < 0)
                return -ENOMEM;
        if (dup_str(top, "lockdown", &c->lockdown) < 0)
                return -ENOMEM;
        {
                const char *a = json_value_get_string(top, "avx512_arch_status");

                for (KernelAvxEvidence e = 0; a && e < _KERNEL_AVX_MAX; e++)
                        if (streq(a, kernel_avx_evidence_to_string(e)))
                                c->avx512_arch_status = e;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

int kernelcaps_load_json_file(const char *path, KernelCaps **ret, char **ret_error) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *text = NULL, *why = NULL;
        size_t len = 0;
        int k;

        *ret_error = NULL;
        if (fd < 0)
                return asprintf(ret_error, "%s: %s", path, strerror(errno)) < 0 ? -ENOMEM : -errno;
        k = read_full_fd(fd, KERNELCAPS_JSON_MAX, &text, &len);
        if (k < 0)
                return asprintf(ret_error, "%s: %s", path, k == -EFBIG ? "larger than 4 MiB" : strerror(-k)) < 0 ? -ENOMEM : k;
        k = kernelcaps_from_json(text, len, ret, &why);
        if (k == -EINVAL)
                return asprintf(ret_error, "%s: %s", path, why) < 0 ? -ENOMEM : k;
        return k;
}
