/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The systemd driver's let-go at the pass (unit_release_unplanned()): the
 * service units the plan no longer places given their properties back, and
 * the processes of topod's scopes it no longer places put back where they
 * came from, with restore's own steps (unit-restore.c), while topod runs.
 * Its own file: apply places what the plan has, this gives back what it
 * has no more. */
#include "apply/unit-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apply/cgroup-internal.h"
#include "base/unit-name.h"
#include "base/util.h"
#include "base/yield.h"

static bool unit_planned(const UnitPlanned *p, size_t n, const char *unit) {
        for (size_t i = 0; i < n; i++)
                if (p[i].unit && streq(p[i].unit, unit))
                        return true;
        return false;
}

static bool tgid_planned(const UnitPlanned *p, size_t n, pid_t tgid) {
        for (size_t i = 0; i < n; i++)
                if (p[i].tgid == tgid)
                        return true;
        return false;
}

static bool any_scope(const Journal *j) {
        for (size_t i = 0; i < j->n_units; i++)
                if (unit_name_type(j->units[i], strlen(j->units[i])) == UNIT_TYPE_SCOPE)
                        return true;
        return false;
}

static int release(const UnitEnv *env, const CgroupEnv *ce, const UnitPlanned *p, size_t n, Journal *j,
                   CgroupReport *r) {
        int k;

        /* Backwards: a step forgets its own entry, those before it stay
         * where they are. */
        for (size_t i = j->n_unit_props; i > 0; i--)
                if (!unit_planned(p, n, j->unit_props[i - 1].unit) &&
                    (k = unit_restore_prop(env, ce, j, r, &j->unit_props[i - 1])) == -ENOMEM)
                        return k;
        for (size_t i = j->n_units; i > 0; i--) {
                _cleanup_free_ char *name = strdup(j->units[i - 1]), *slice = NULL;
                pid_t tgid;

                if (!name)
                        return -ENOMEM;
                if (unit_name_type(name, strlen(name)) != UNIT_TYPE_SCOPE ||
                    unit_scope_parse(name, &slice, &tgid) < 0)
                        continue;
                /* Planned (in this scope or moved to another of the
                 * plan's), or changed since the scan: not this plan's to
                 * let go. */
                if (tgid_planned(p, n, tgid) || yield_changed(ce->yield, tgid))
                        continue;
                if ((k = unit_restore_scope(env, ce, j, r, name)) == -ENOMEM)
                        return k;
        }
        return 0;
}

int unit_release_unplanned(const UnitEnv *env, const Plan *plan, Journal *journal, CgroupReport *report) {
        UnitPlanned *p = NULL;
        size_t first = report->n, n = 0;
        CgroupEnv ce;
        int k;

        if (!journal || (journal->n_unit_props == 0 && !any_scope(journal)))
                return 0; /* topod's slices alone: nothing to read */
        if ((k = cgroup_env_check(env->cgroup, plan, &ce)) < 0 || (k = unit_plan_services(ce.root, plan, &p, &n)) < 0)
                return k;
        k = release(env, &ce, p, n, journal, report);
        unit_planned_free(p, n);
        return k < 0 ? k : (int) cgroup_report_failed_since(report, first);
}
