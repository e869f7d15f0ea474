/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cgroup writer's report: a result per item (done, already so,
 * skipped, vanished, failed and why), the names printed for them, and how
 * a failure sorts (temporary or permanent). Every writer of this module
 * adds its items through these. */
#include "apply/cgroup-internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cgroup_report_new(CgroupReport **ret) {
        CgroupReport *r = calloc(1, sizeof(CgroupReport));

        if (!r)
                return -ENOMEM;
        *ret = r;
        return 0;
}

static void result_done(CgroupResult *it) {
        free(it->path);
        free(it->value);
        free(it->found);
        free(it->from);
        free(it->reason);
}

void cgroup_report_clear(CgroupReport *r) {
        for (size_t i = 0; i < r->n; i++)
                result_done(&r->items[i]);
        free(r->items);
        *r = (CgroupReport) {};
}

CgroupReport *cgroup_report_free(CgroupReport *r) {
        if (!r)
                return NULL;
        cgroup_report_clear(r);
        free(r);
        return NULL;
}

size_t cgroup_report_count(const CgroupReport *r, CgroupOutcome o) {
        size_t n = 0;

        for (size_t i = 0; i < r->n; i++)
                n += r->items[i].outcome == o;
        return n;
}

const char *cgroup_outcome_to_string(CgroupOutcome o) {
        static const char *const names[_CGROUP_OUTCOME_MAX] = {
                [CGROUP_DONE] = "done",         [CGROUP_ALREADY] = "already", [CGROUP_SKIPPED] = "skipped",
                [CGROUP_VANISHED] = "vanished", [CGROUP_FAILED] = "failed",
        };
        return (unsigned) o < _CGROUP_OUTCOME_MAX ? names[o] : "unknown";
}

const char *cgroup_item_kind_to_string(CgroupItemKind k) {
        static const char *const names[_CGROUP_ITEM_MAX] = {
                [CGROUP_ITEM_CONTROLLER] = "controller", [CGROUP_ITEM_MKDIR] = "mkdir",
                [CGROUP_ITEM_CPUS] = "cpuset.cpus",      [CGROUP_ITEM_MEMS] = "cpuset.mems",
                [CGROUP_ITEM_WEIGHT] = "cpu.weight",     [CGROUP_ITEM_PARTITION] = "cpuset.cpus.partition",
                [CGROUP_ITEM_EFFECTIVE] = "cpuset.cpus.effective", [CGROUP_ITEM_EXCLUSIVE] = "cpuset.cpus.exclusive",
                [CGROUP_ITEM_MOVE] = "move",             [CGROUP_ITEM_RMDIR] = "rmdir",
        };
        return (unsigned) k < _CGROUP_ITEM_MAX ? names[k] : "unknown";
}

bool cgroup_error_is_temporary(int error) {
        switch (abs(error)) {
        case EACCES:
        case EPERM:
        case ENOENT:
        case EINVAL:
        case EOPNOTSUPP:
        case EROFS:
                return false;
        default:
                return true;
        }
}

/* ---- items ---------------------------------------------------------------- */

/* A new item, outcome FAILED until said otherwise, taking *path (set to
 * NULL; freed on failure). NULL: out of memory. */
CgroupResult *cgroup_item_new_take(CgroupReport *r, CgroupItemKind kind, char **path, const char *value) {
        CgroupResult *it;

        if (r->n == r->allocated) {
                /* Small first: a placement's report has an item or two. */
                size_t m = r->allocated ? r->allocated * 2 : 4;
                CgroupResult *p = realloc(r->items, m * sizeof(CgroupResult));

                if (!p) {
                        *path = mfree(*path);
                        return NULL;
                }
                r->items = p;
                r->allocated = m;
        }
        it = &r->items[r->n];
        *it = (CgroupResult) { .kind = kind, .outcome = CGROUP_FAILED, .path = TAKE_PTR(*path) };
        it->value = value ? strdup(value) : NULL;
        if (!it->path || (value && !it->value)) {
                result_done(it);
                return NULL;
        }
        r->n++;
        return it;
}

/* The same, with a copy of path. */
CgroupResult *cgroup_item_new(CgroupReport *r, CgroupItemKind kind, const char *path, const char *value) {
        char *copy = strdup(path);

        return copy ? cgroup_item_new_take(r, kind, &copy, value) : NULL;
}

/* Replace an owned string; on lack of memory the field becomes NULL (a
 * report without that detail beats no report). */
void cgroup_set_str(char **field, const char *s) {
        free(*field);
        *field = s ? strdup(s) : NULL;
}

/* The item failed with error (-EIO when not negative), for the reason fmt
 * says; returns the error. */
int cgroup_item_fail(CgroupResult *it, int error, const char *fmt, ...) {
        va_list ap;

        free(it->reason);
        it->reason = NULL;
        va_start(ap, fmt);
        if (vasprintf(&it->reason, fmt, ap) < 0)
                it->reason = NULL;
        va_end(ap);
        it->outcome = CGROUP_FAILED;
        it->error = error < 0 ? error : -EIO;
        return it->error;
}

int cgroup_item_ok(CgroupResult *it, CgroupOutcome o) {
        it->outcome = o;
        it->error = 0;
        return 0;
}

/* What a failed write or mkdir in cgroupfs means, for the report. */
const char *cgroup_errno_reason(int err) {
        switch (-err) {
        case EACCES:
        case EPERM:
                return "permission denied (not root, or not delegated to us)";
        case ENOENT:
                return "no such file (cgroup gone, or the controller is not enabled in the parent)";
        case EBUSY:
                return "busy (tasks or child cgroups in the way)";
        case EINVAL:
                return "the kernel refused the value (EINVAL)";
        case EOPNOTSUPP:
                return "not supported here (a threaded cgroup in the way?)";
        case ESRCH:
                return "no such task";
        default:
                return "the kernel's file could not be written";
        }
}

/* Failed items from index from on: a call's own count. */
size_t cgroup_report_failed_since(const CgroupReport *r, size_t from) {
        size_t n = 0;

        for (size_t i = from; i < r->n; i++)
                n += r->items[i].outcome == CGROUP_FAILED;
        return n;
}
