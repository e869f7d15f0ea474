/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the systemd driver's files share (unit-apply.c, unit-restore.c,
 * unit-values.c, unit-through.c, unit-release.c) and nobody else calls. */

#include "apply/unit.h"


/* The last path component ("topod-avx.slice" of ".../topod-avx.slice"). */
const char *unit_last_component(const char *path);

/* The error's text for a report: systemd's message when the ops have one. */
const char *unit_error_text(const UnitEnv *env, int error);

/* Poll until done(ud) or env->settle_usec passed (20 ms steps): systemd
 * runs the jobs and cgroup changes a call asks for after it answers. */
void unit_settle(const UnitEnv *env, bool (*done)(void *ud), void *ud);

/* The value of a property the unit's cgroup files say (cpuset.cpus /
 * cpuset.mems / cpu.weight of cg), or NULL when unreadable. */
char *unit_cgroup_value(const CgroupEnv *ce, const char *cg, UnitProperty p, bool effective);

/* One planned process (cgroup_plan_processes()) and its service unit
 * (NULL: in none, in topod's tree, or gone). */
typedef struct UnitPlanned {
        pid_t tgid;
        int group;
        unsigned n_tasks; /* its threads planned into group */
        char *unit;
} UnitPlanned;
int unit_plan_services(const Root *root, const Plan *plan, UnitPlanned **ret, size_t *ret_n);
void unit_planned_free(UnitPlanned *p, size_t n);

/* "X-<tgid>.scope": its slice "X.slice" and the tgid; -EINVAL for another
 * name. */
int unit_scope_parse(const char *name, char **ret_slice, pid_t *ret_tgid);
/* Restore's steps (unit-restore.c), for the pass's release too: every
 * process of one of topod's scopes back where its journaled process came
 * from, the entries forgotten; one journaled property back to its original
 * while the unit holds what topod wrote (else released: left, forgotten).
 * 0, or -ENOMEM. */
int unit_restore_scope(const UnitEnv *env, const CgroupEnv *ce, Journal *j, CgroupReport *r, const char *scope);
int unit_restore_prop(const UnitEnv *env, const CgroupEnv *ce, Journal *j, CgroupReport *r, const JournalUnitProp *e);
