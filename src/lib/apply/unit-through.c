/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The service units of the plan's processes, read once from their
 * proc/PID/cgroup: which unit a planned process is placed through and the
 * group that unit follows (for explain), and which units the plan still
 * has (for the pass's release of the others, unit-release.c). Its own
 * file: explain and release share it, and explain reads it without
 * applying. */
#include "apply/unit-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apply/cgroup-internal.h"
#include "base/unit-name.h"
#include "base/util.h"

void unit_planned_free(UnitPlanned *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(p[i].unit);
        free(p);
}

int unit_plan_services(const Root *root, const Plan *plan, UnitPlanned **ret, size_t *ret_n) {
        CgroupProcess *procs = NULL;
        UnitPlanned *out = NULL;
        size_t n = 0;
        int k;

        if ((k = cgroup_plan_processes(plan, &procs, &n)) < 0)
                return k;
        if (!(out = calloc(MAX(n, (size_t) 1), sizeof(UnitPlanned)))) {
                cgroup_processes_free(procs, n);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                pid_t tid;
                UnitRef u;

                out[i] = (UnitPlanned) { .tgid = procs[i].tgid, .group = procs[i].group,
                                         .n_tasks = (unsigned) procs[i].n_tasks };
                if (proc_cgroup_read_process(root, procs[i].tgid, NULL, &path, &tid) < 0)
                        continue; /* gone: in no unit */
                if (!cgroup_path_is_below(path, plan->cgroup_root) && unit_from_cgroup(path, &u) >= 0 &&
                    u.type == UNIT_TYPE_SERVICE && !(out[i].unit = strndup(u.name, u.len))) {
                        unit_planned_free(out, n);
                        cgroup_processes_free(procs, n);
                        return -ENOMEM;
                }
        }
        cgroup_processes_free(procs, n);
        *ret = out;
        *ret_n = n;
        return 0;
}

int unit_plan_through(const Root *root, const Plan *plan, pid_t tgid, UnitThrough *ret) {
        _cleanup_free_ unsigned *weights = NULL;
        _cleanup_free_ pid_t *lowest = NULL;
        UnitPlanned *p = NULL;
        const char *unit = NULL;
        UnitThrough t = { .group = -1 };
        size_t n = 0;
        int k;

        if ((k = unit_plan_services(root, plan, &p, &n)) < 0)
                return k;
        for (size_t i = 0; i < n && !unit; i++)
                if (p[i].tgid == tgid)
                        unit = p[i].unit;
        weights = calloc(MAX(plan->n_groups, (size_t) 1), sizeof(unsigned));
        lowest = calloc(MAX(plan->n_groups, (size_t) 1), sizeof(pid_t));
        if (!weights || !lowest || (unit && !(t.unit = strdup(unit)))) {
                unit_planned_free(p, n);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n && unit; i++) {
                if (!p[i].unit || !streq(p[i].unit, unit) || p[i].group < 0)
                        continue;
                t.groups += weights[p[i].group] == 0;
                weights[p[i].group] += p[i].n_tasks;
                t.total += p[i].n_tasks;
                if (lowest[p[i].group] == 0 || p[i].tgid < lowest[p[i].group])
                        lowest[p[i].group] = p[i].tgid;
        }
        unit_planned_free(p, n);
        if (!unit)
                return -ENOENT; /* not planned, or in no service unit */
        t.group = unit_majority_group(weights, lowest, plan->n_groups);
        t.threads = t.group >= 0 ? weights[t.group] : 0;
        *ret = t;
        return 0;
}
