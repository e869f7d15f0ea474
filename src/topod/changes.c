/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The log of changes: every change a pass, the fast path or a restore
 * made or undid (apply's report items and the fast path's placements), as
 * one journal entry each with structured fields (change-entry.h), at info
 * for what was done or failed and debug for the rest, held to a burst per
 * action and interval (ratelimit.h). Whom an item is about is found in
 * the plan in force: the policy of the process it names, or of the group
 * (or unit) it writes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/util.h"
#include "daemon-internal.h"

#define CHANGES_BURST 200u
#define CHANGES_INTERVAL_USEC (10u * 1000000u)

/* A cgroup path ("/topod.slice/x") below plan's group g? */
static bool below_group(const Plan *plan, const PlanGroup *g, const char *path) {
        size_t r = strlen(plan->cgroup_root), n = strlen(g->path);
        bool root_slash = r > 0 && plan->cgroup_root[r - 1] == '/';

        if (strncmp(path, plan->cgroup_root, r) != 0)
                return false;
        path += r;
        if (!root_slash) {
                if (*path != '/')
                        return false;
                path++;
        }
        return strncmp(path, g->path, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* The policy group a cgroup path is in (the deepest), or -1. */
static int group_of_path(const Plan *plan, const char *path) {
        int best = -1;

        if (!plan || !path || path[0] != '/')
                return -1;
        for (size_t i = 0; i < plan->n_groups; i++)
                if (plan->groups[i].policy >= 0 && below_group(plan, &plan->groups[i], path) &&
                    (best < 0 || strlen(plan->groups[i].path) > strlen(plan->groups[best].path)))
                        best = (int) i;
        return best;
}

static bool has_suffix(const char *s, const char *suffix) {
        size_t n = strlen(s), m = strlen(suffix);

        return n > m && streq(s + n - m, suffix);
}

/* The cgroup of plan's group g: "<cgroup_root>/<path>". */
static char *group_cgroup(const Plan *plan, int g) {
        const char *root = plan->cgroup_root;
        size_t r = strlen(root);
        char *p;

        if (asprintf(&p, "%s%s%s", root, r > 0 && root[r - 1] == '/' ? "" : "/", plan->groups[g].path) < 0)
                return NULL;
        return p;
}

static const char *last_component(const char *p) {
        const char *s = strrchr(p, '/');

        return s ? s + 1 : p;
}

/* The policy group a unit is about: a slice of the plan, a scope in one
 * ("<slice stem>-<pid>.scope"), or a service whose processes the plan
 * places (the last scan says where they are). -1. */
static int group_of_unit(const Daemon *d, const Plan *plan, const char *unit) {
        const TaskSnapshot *snap = d->p->observe.snap;
        char slice[256];
        size_t n = strlen(unit);

        if (!plan)
                return -1;
        if (has_suffix(unit, ".scope") && n < sizeof(slice)) {
                size_t e = n - strlen(".scope");

                while (e > 0 && unit[e - 1] >= '0' && unit[e - 1] <= '9')
                        e--;
                if (e > 0 && unit[e - 1] == '-') {
                        snprintf(slice, sizeof(slice), "%.*s.slice", (int) (e - 1), unit);
                        unit = slice;
                }
        }
        if (has_suffix(unit, ".slice")) {
                for (size_t i = 0; i < plan->n_groups; i++)
                        if (plan->groups[i].policy >= 0 && streq(last_component(plan->groups[i].path), unit))
                                return (int) i;
                return -1;
        }
        for (size_t i = 0; snap && i < plan->n_tasks; i++) {
                const TaskFacts *t;

                if (plan->tasks[i].group < 0 || plan->tasks[i].tid != plan->tasks[i].tgid)
                        continue;
                t = task_snapshot_find(snap, plan->tasks[i].tid);
                if (t && t->process->cgroup && streq(last_component(t->process->cgroup), unit))
                        return plan->tasks[i].group;
        }
        return -1;
}

static const char *policy_name(const Daemon *d, int policy) {
        const PolicySet *ps = d->p->decide.policies;

        return ps && policy >= 0 && (size_t) policy < ps->n ? ps->policies[policy]->name : NULL;
}

static const char *comm_of(const Daemon *d, pid_t pid) {
        const TaskFacts *t = pid > 0 && d->p->observe.snap ? task_snapshot_find(d->p->observe.snap, pid) : NULL;

        return t && t->comm[0] ? t->comm : NULL;
}

static RateLimit *limit_of(Daemon *d, ChangeAction a, int priority) {
        RateLimit *rl = &d->changes.limits[a][priority >= LOG_DEBUG];

        if (rl->interval_usec == 0)
                *rl = RATELIMIT_INIT(CHANGES_INTERVAL_USEC, CHANGES_BURST);
        return rl;
}

static void say_suppressed(Daemon *d, ChangeAction a, int priority, unsigned n) {
        ChangeFields f;

        if (n == 0 || change_fields_suppressed(a, n, CHANGES_INTERVAL_USEC / 1000000u, &f) < 0)
                return;
        log_fields(&d->log, priority, f.fields, f.n, f.message);
        change_fields_done(&f);
}

/* e logged, unless the rate limit holds it back; its comm looked up
 * (only then) when it has none: in the last scan, or, with read_comm (a
 * process the fast path placed, new since that scan), in proc. */
static void emit(Daemon *d, ChangeEntry *e, bool read_comm) {
        int priority = change_priority(e);
        ChangeAction a = change_action(e);
        _cleanup_free_ char *comm = NULL;
        unsigned held = 0;
        ChangeFields f;
        bool go;

        if (!log_wants(&d->log, priority))
                return;
        go = ratelimit_below(limit_of(d, a, priority), pipeline_now_usec(), &held);
        say_suppressed(d, a, priority, held);
        if (!go)
                return;
        if (!e->comm)
                e->comm = comm_of(d, e->pid);
        if (!e->comm && read_comm && e->pid > 0) {
                char path[64];

                snprintf(path, sizeof(path), "proc/%d/comm", (int) e->pid);
                if (root_read_line(d->p->observe.root, path, &comm) >= 0)
                        e->comm = comm;
        }
        if (change_fields_build(e, &f) < 0) {
                log_warning(d, "cannot log a change (%s): %s, ignoring", e->what ?: "?", strerror(ENOMEM));
                return;
        }
        log_fields(&d->log, priority, f.fields, f.n, f.message);
        change_fields_done(&f);
}

void changes_log_report(Daemon *d, const Plan *plan, const ReconcileReport *r) {
        for (size_t i = 0; r && i < r->n; i++) {
                const ReconcileItem *it = &r->items[i];
                ChangeEntry e = { .kind = it->kind, .undo = it->undo, .restoring = r->restoring, .result = it->status,
                                  .cgroup = it->cgroup, .pid = it->pid, .what = it->what, .reason = it->reason,
                                  .error = it->error };
                _cleanup_free_ char *group = NULL;
                const PlanTask *pt;
                int g = -1, policy = -1;

                if (it->kind == RECONCILE_KIND_NONE || !log_wants(&d->log, change_priority(&e)))
                        continue;
                if (it->kind == RECONCILE_KIND_MOVE)
                        g = group_of_path(plan, it->undo ? it->from : it->cgroup);
                else if (it->cgroup && it->cgroup[0] == '/')
                        g = group_of_path(plan, it->cgroup);
                else if (it->cgroup)
                        g = group_of_unit(d, plan, it->cgroup);
                if (g >= 0) {
                        policy = plan->groups[g].policy;
                        group = group_cgroup(plan, g);
                }
                if (plan && it->pid > 0 && (pt = plan_find_task(plan, it->pid)) && pt->policy >= 0) {
                        policy = pt->policy;
                        if (!group && pt->group >= 0)
                                group = group_cgroup(plan, pt->group);
                }
                e.policy = policy_name(d, policy);
                e.group = group;
                emit(d, &e, false);
        }
        changes_flush(d);
}

void changes_log_placements(Daemon *d, const Plan *plan, const ReconcilePlacement *b, size_t n) {
        for (size_t i = 0; plan && i < n; i++) {
                _cleanup_free_ char *group = NULL, *what = NULL;
                ChangeEntry e = { .pid = b[i].tgid, .policy = policy_name(d, b[i].policy) };

                if (b[i].group < 0 || (size_t) b[i].group >= plan->n_groups || !(group = group_cgroup(plan, b[i].group)))
                        continue;
                e.group = e.cgroup = group;
                e.kind = RECONCILE_KIND_MOVE;
                e.result = b[i].moved;
                if (asprintf(&what, "fast path: move process %d to %s", (int) b[i].tgid, group) >= 0) {
                        e.what = what;
                        emit(d, &e, true);
                }
                if (b[i].cookie == PLACE_COOKIE_KEEP)
                        continue;
                what = mfree(what);
                e.kind = RECONCILE_KIND_COOKIE;
                e.comm = NULL; /* the move's, or looked up again */
                e.cgroup = NULL;
                e.result = b[i].cookied;
                if (asprintf(&what, "fast path: cookie (%s): process %d",
                             b[i].cookie == PLACE_COOKIE_JOIN ? "join" : "new", (int) b[i].tgid) >= 0) {
                        e.what = what;
                        emit(d, &e, true);
                }
        }
}

void changes_flush(Daemon *d) {
        uint64_t now = pipeline_now_usec();

        for (int a = 0; a < _CHANGE_ACTION_MAX; a++)
                for (int p = 0; p < 2; p++)
                        say_suppressed(d, (ChangeAction) a, p ? LOG_DEBUG : LOG_INFO,
                                       ratelimit_flush(&d->changes.limits[a][p], now));
}
