/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The systemd driver's restore: the processes in topod's scopes back to
 * their original units (or a new scope in the original's slice), the
 * service units' properties back to their originals while they hold what
 * topod wrote, and topod's slices stopped once empty (unit.h). Its own
 * file: the apply decides where things go, this only puts them back. */
#include "apply/unit-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply/cgroup-internal.h"
#include "base/unit-name.h"
#include "base/util.h"

int unit_scope_parse(const char *name, char **ret_slice, pid_t *ret_tgid) {
        const char *dash = strrchr(name, '-'), *dot = strrchr(name, '.');
        _cleanup_free_ char *num = NULL;
        uint64_t v;

        if (!dash || !dot || dot < dash || !streq(dot, ".scope"))
                return -EINVAL;
        if (!(num = strndup(dash + 1, (size_t) (dot - dash - 1))))
                return -ENOMEM;
        if (!parse_u64_decimal(num, INT32_MAX, &v) || v == 0)
                return -EINVAL;
        if (asprintf(ret_slice, "%.*s.slice", (int) (dash - name), name) < 0)
                return -ENOMEM;
        *ret_tgid = (pid_t) v;
        return 0;
}

static const JournalTask *task_of(const Journal *j, pid_t tgid) {
        for (size_t i = 0; i < j->n_tasks; i++)
                if (j->tasks[i].tid == tgid)
                        return &j->tasks[i];
        return NULL;
}

/* The slice a cgroup path lies in (its last slice), "-.slice" at the top. */
static char *slice_of(const char *path) {
        UnitRef u[64];
        size_t n = path ? unit_path_units(path, u, 64) : 0;

        for (size_t i = n; i > 0; i--)
                if (u[i - 1].type == UNIT_TYPE_SLICE)
                        return strndup(u[i - 1].name, u[i - 1].len);
        return strdup("-.slice");
}

/* Back into the scope systemd had them in, while it lives: systemd 252's
 * AttachProcessesToUnit refuses units without Delegate=yes ("Process
 * migration not available on non-delegated units"), which a session scope
 * or a `systemd-run --scope` is, and no other call of its moves a process
 * into an existing unit. So this is the one write topod makes to a
 * cgroup.procs systemd owns: the process goes back to the cgroup of the
 * scope systemd made for it, where systemd counts it as the scope's again
 * (a scope's processes are its cgroup's). Only into a scope that is still
 * active (its cgroup populated by others: one systemd stopped is gone).
 * 0 when every process went back; negative errno. */
static int back_into_scope(const CgroupEnv *ce, const char *orig, const CgroupMembers *m) {
        if (!orig || cgroup_exists(ce, orig) <= 0)
                return -ENOENT;
        for (size_t i = 0; i < m->n; i++) {
                char num[21];
                int k;

                (void) format_u64(num, (uint64_t) m->pids[i]);
                k = cgroup_write_procs(ce, orig, num);
                if (k < 0 && k != -ESRCH)
                        return k;
        }
        return 0;
}

/* Every process of one of topod's scopes back where its journaled process
 * came from. */
int unit_restore_scope(const UnitEnv *env, const CgroupEnv *ce, Journal *j, CgroupReport *r, const char *scope) {
        _cleanup_free_ char *slice = NULL, *slice_cg = NULL, *cg = NULL, *orig = NULL, *back = NULL, *dest = NULL;
        CgroupMembers m = {};
        const JournalTask *t;
        UnitRef u;
        pid_t tgid;
        int k;

        if ((k = unit_scope_parse(scope, &slice, &tgid)) < 0)
                return k == -ENOMEM ? k : 0;
        if ((k = unit_slice_cgroup_path(slice, &slice_cg)) < 0 || (k = cgroup_path_join(slice_cg, scope, &cg)) < 0)
                return k == -ENOMEM ? k : 0;
        t = task_of(j, tgid);
        if (t && !(orig = strdup(t->cgroup)))
                return -ENOMEM;
        (void) cgroup_members_read(ce, cg, &m);
        if (m.n > 0) {
                CgroupResult *it = cgroup_item_new(r, CGROUP_ITEM_MOVE, orig ?: "/", NULL);

                if (!it) {
                        free(m.pids);
                        return -ENOMEM;
                }
                it->back = true;
                it->tgid = it->pid = tgid;
                cgroup_set_str(&it->from, cg);
                k = -ENOENT;
                /* Its own unit first; systemd attaches only to delegated
                 * units, so most often a new scope in its slice. */
                if (orig && unit_from_cgroup(orig, &u) >= 0 && u.type != UNIT_TYPE_SLICE &&
                    (dest = strndup(u.name, u.len))) {
                        k = env->ops->attach(env->ops->userdata, dest, m.pids, m.n);
                        if (k < 0 && u.type == UNIT_TYPE_SCOPE)
                                k = back_into_scope(ce, orig, &m);
                }
                if (k < 0) {
                        back = slice_of(orig);
                        free(dest);
                        if (!back || asprintf(&dest, "topod-back-%d.scope", (int) tgid) < 0) {
                                free(m.pids);
                                return -ENOMEM;
                        }
                        k = env->ops->start_scope(env->ops->userdata, dest, back, m.pids, m.n);
                }
                if (k < 0)
                        (void) cgroup_item_fail(it, k, "%s", unit_error_text(env, k));
                else {
                        cgroup_set_str(&it->reason, dest);
                        (void) cgroup_item_ok(it, CGROUP_DONE);
                }
        }
        if (k >= 0 || m.n == 0) {
                for (size_t i = 0; i < m.n; i++)
                        while ((t = task_of(j, m.pids[i])))
                                (void) journal_forget_task(j, t->tid, t->start_time);
                while ((t = task_of(j, tgid)))
                        (void) journal_forget_task(j, t->tid, t->start_time);
                (void) journal_forget_unit(j, scope);
        }
        free(m.pids);
        return 0;
}

/* Every CPU (or node) online, as "0-3": what a unit that sets none may
 * use. NULL when it cannot be read. */
static char *all_online(const CgroupEnv *ce, UnitProperty p) {
        char *text = NULL;

        if (root_read_file(ce->root, p == UNIT_PROP_CPUS ? "sys/devices/system/cpu/online" : "sys/devices/system/node/online",
                           4096, &text, NULL) < 0)
                return NULL;
        return strstrip(text);
}

/* systemd 252 leaves a unit's cpuset.cpus (cpuset.mems) as it last wrote
 * them when AllowedCPUs= (AllowedMemoryNodes=) goes back to "not set": it
 * writes the cpuset files only of units that set them, and the controller
 * stays enabled where a sibling needs it. The unit would stay confined to
 * topod's CPUs. So before "not set", every CPU (node) online is set once:
 * the file then asks for all of them, the unit runs on all its parent
 * allows, as before topod. Measured in the test guest (systemd 252): the
 * unit's cpuset.cpus.effective stayed at topod's 2-3 after the reset
 * alone. */
static int widen_before_unset(const UnitEnv *env, const CgroupEnv *ce, const char *unit, UnitProperty p,
                              const char *original) {
        _cleanup_free_ char *all = NULL;
        UnitValues v = {};

        if ((p != UNIT_PROP_CPUS && p != UNIT_PROP_MEMS) || (original && *original && !streq(original, "-")))
                return 0;
        if (!(all = all_online(ce, p)) || !*all)
                return 0;
        v.v[p] = all;
        return env->ops->set_properties(env->ops->userdata, unit, &v);
}

int unit_restore_prop(const UnitEnv *env, const CgroupEnv *ce, Journal *j, CgroupReport *r,
                      const JournalUnitProp *e) {
        _cleanup_free_ char *unit = strdup(e->unit), *prop = strdup(e->property), *cur = NULL;
        UnitProperty p = UNIT_PROP_CPUS;
        CgroupResult *it;
        int k;

        if (!unit || !prop)
                return -ENOMEM;
        while (p < _UNIT_PROP_MAX && !streq(unit_property_name(p), prop))
                p++;
        if (!(it = cgroup_item_new(r, CGROUP_ITEM_CPUS + (p < _UNIT_PROP_MAX ? p : 0), unit, e->original)))
                return -ENOMEM;
        it->back = true;
        if (p == _UNIT_PROP_MAX) {
                (void) journal_forget_unit_prop(j, unit, prop);
                return cgroup_item_ok(it, CGROUP_SKIPPED);
        }
        k = env->ops->get_property(env->ops->userdata, unit, p, &cur);
        if (k == -ENOENT) { /* the unit is gone: moot */
                (void) journal_forget_unit_prop(j, unit, prop);
                return cgroup_item_ok(it, CGROUP_VANISHED);
        }
        if (k < 0)
                return cgroup_item_fail(it, k, "%s", unit_error_text(env, k));
        cgroup_set_str(&it->found, cur);
        if (streq(e->original, JOURNAL_UNIT_RELEASED) || !streq(cur, e->written)) {
                /* Changed by someone else since: theirs wins. */
                cgroup_set_str(&it->reason, "released: changed since topod set it; left as it is");
                (void) journal_forget_unit_prop(j, unit, prop);
                return cgroup_item_ok(it, CGROUP_SKIPPED);
        }
        k = widen_before_unset(env, ce, unit, p, e->original);
        if (k >= 0) {
                UnitValues v = {};

                v.v[p] = e->original;
                k = env->ops->set_properties(env->ops->userdata, unit, &v);
        }
        if (k < 0 && k != -ENOENT)
                return cgroup_item_fail(it, k, "%s", unit_error_text(env, k));
        (void) journal_forget_unit_prop(j, unit, prop);
        return cgroup_item_ok(it, k < 0 ? CGROUP_VANISHED : CGROUP_DONE);
}

typedef struct Populated {
        const CgroupEnv *ce;
        const char *cg;
} Populated;

/* cgroup.events says "populated 0" (or the cgroup is gone). */
static bool slice_empty(void *ud) {
        const Populated *p = ud;
        _cleanup_free_ char *ev = NULL;

        if (cgroup_read_attr(p->ce, p->cg, "cgroup.events", &ev) < 0)
                return true;
        return !strstr(ev, "populated 1");
}

static int restore_slice(const UnitEnv *env, const CgroupEnv *ce, Journal *j, CgroupReport *r, const char *name) {
        _cleanup_free_ char *unit = strdup(name), *cg = NULL;
        CgroupResult *it;
        int k;

        if (!unit)
                return -ENOMEM;
        if ((k = unit_slice_cgroup_path(unit, &cg)) < 0) {
                (void) journal_forget_unit(j, unit);
                return k == -ENOMEM ? k : 0;
        }
        if (!(it = cgroup_item_new(r, CGROUP_ITEM_RMDIR, unit, NULL)))
                return -ENOMEM;
        /* Stopping a slice stops the units in it: only an empty one, or
         * what topod placed would be killed. */
        unit_settle(env, slice_empty, &(Populated) { ce, cg });
        if (!slice_empty(&(Populated) { ce, cg }))
                return cgroup_item_fail(it, -EBUSY, "still holds processes: not stopped");
        k = env->ops->stop(env->ops->userdata, unit);
        if (k < 0 && k != -ENOENT)
                return cgroup_item_fail(it, k, "%s", unit_error_text(env, k));
        (void) journal_forget_unit(j, unit);
        return cgroup_item_ok(it, k < 0 ? CGROUP_VANISHED : CGROUP_DONE);
}

/* The unit's cgroup: a slice's from its name, a scope's in its slice. */
static int unit_cgroup(const char *name, char **ret) {
        _cleanup_free_ char *slice = NULL, *slice_cg = NULL;
        pid_t tgid;
        int k;

        if (unit_name_type(name, strlen(name)) == UNIT_TYPE_SLICE)
                return unit_slice_cgroup_path(name, ret);
        if ((k = unit_scope_parse(name, &slice, &tgid)) < 0 || (k = unit_slice_cgroup_path(slice, &slice_cg)) < 0)
                return k;
        return cgroup_path_join(slice_cg, name, ret);
}

/* The "unit" entries whose cgroup is outside every cgroup_root (a damaged
 * or edited journal naming machine.slice), reported and forgotten before
 * anything is stopped or moved: as cgroup_restore()'s "cgroup" entries. */
static int drop_foreign_units(const CgroupEnv *ce, Journal *j, CgroupReport *r) {
        for (size_t i = j->n_units; i > 0; i--) {
                _cleanup_free_ char *name = strdup(j->units[i - 1]), *cg = NULL;
                int k;

                if (!name)
                        return -ENOMEM;
                k = unit_cgroup(name, &cg);
                if (k == -ENOMEM)
                        return k;
                if (k < 0 || cgroup_restore_path_is_topods(ce, j, cg))
                        continue; /* one that does not parse: each step skips it */
                if (cgroup_report_foreign(r, CGROUP_ITEM_RMDIR, name) < 0)
                        return -ENOMEM;
                (void) journal_forget_unit(j, name);
        }
        return 0;
}

int unit_restore(const UnitEnv *env, Journal *j, CgroupReport *report) {
        size_t first = report->n;
        CgroupEnv ce;
        int k;

        if ((k = cgroup_env_check(env->cgroup, NULL, &ce)) < 0 || (k = drop_foreign_units(&ce, j, report)) < 0)
                return k;
        /* Processes first: the slices empty out. */
        for (size_t i = j->n_units; i > 0; i--) {
                _cleanup_free_ char *name = strdup(j->units[i - 1]);

                if (!name)
                        return -ENOMEM;
                if (unit_name_type(name, strlen(name)) == UNIT_TYPE_SCOPE &&
                    (k = unit_restore_scope(env, &ce, j, report, name)) == -ENOMEM)
                        return k;
        }
        /* What is left of the tasks was not in a scope of topod's (moved
         * away by someone else, or exited): moot, unless a cgroupfs run
         * left cgroups of its own, whose restore they are. */
        if (j->n_cgroups == 0)
                while (j->n_tasks > 0)
                        (void) journal_forget_task(j, j->tasks[0].tid, j->tasks[0].start_time);
        while (j->n_unit_props > 0) {
                size_t before = j->n_unit_props;

                if ((k = unit_restore_prop(env, &ce, j, report, &j->unit_props[0])) == -ENOMEM)
                        return k;
                if (j->n_unit_props == before)
                        break; /* failed: it stays, and so do those after it */
        }
        for (size_t i = j->n_units; i > 0; i--) {
                _cleanup_free_ char *name = strdup(j->units[i - 1]);

                if (!name)
                        return -ENOMEM;
                if (unit_name_type(name, strlen(name)) == UNIT_TYPE_SLICE &&
                    (k = restore_slice(env, &ce, j, report, name)) == -ENOMEM)
                        return k;
        }
        return (int) cgroup_report_failed_since(report, first);
}
