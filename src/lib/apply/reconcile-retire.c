/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The old cgroup tree after a reload moved cgroup_root. */
#include <errno.h>

#include "apply/reconcile-internal.h"
#include "base/macro.h"

int reconcile_retire_cgroup_root(const Reconciler *rc, const char *old_root, ReconcileReport **ret) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *cr = NULL;
        int k;

        if (!rc->journal)
                return -EINVAL;
        if ((k = reconcile_new_report(&r)) < 0)
                return k;
        if (rc->caps->cgroup2_mount && rc->journal->n_cgroups > 0) {
                CgroupEnv env = reconcile_cgroup_env(rc, false); /* out to cgroups not ours: none held */

                if ((k = cgroup_report_new(&cr)) < 0)
                        return k;
                k = cgroup_retire_root(&env, rc->journal, old_root, cr);
                if (k == -ENOMEM)
                        return k;
                if (k < 0)
                        (void) reconcile_add(r, RECONCILE_FAILED, k, NULL, "old cgroup tree %s", old_root);
                if ((k = reconcile_add_cgroup_report(r, cr)) < 0)
                        return k;
        }
        *ret = TAKE_PTR(r);
        return 0;
}
