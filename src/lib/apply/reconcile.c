/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "reconcile-internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

const char *reconcile_status_to_string(ReconcileStatus s) {
        static const char *const names[_RECONCILE_STATUS_MAX] = {
                [RECONCILE_DONE] = "done",       [RECONCILE_ALREADY] = "already", [RECONCILE_VANISHED] = "vanished",
                [RECONCILE_SKIPPED] = "skipped", [RECONCILE_FAILED] = "failed",
        };
        return (unsigned) s < _RECONCILE_STATUS_MAX ? names[s] : "?";
}

ReconcileReport *reconcile_report_free(ReconcileReport *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n; i++) {
                free(r->items[i].what);
                free(r->items[i].reason);
                free(r->items[i].cgroup);
                free(r->items[i].from);
        }
        free(r->items);
        free(r);
        return NULL;
}

static int reconcile_addv(ReconcileReport *r, const ReconcileSubject *about, ReconcileStatus status, int error,
                          const char *reason, const char *fmt, va_list ap) {
        ReconcileItem *it;
        char *what;

        if (r->failures_only && status != RECONCILE_FAILED && status != RECONCILE_SKIPPED) {
                r->counts[status]++;
                return 0;
        }
        if (vasprintf(&what, fmt, ap) < 0)
                return -ENOMEM;
        if (r->n == r->allocated) {
                size_t n = r->allocated ? r->allocated * 2 : 32;
                ReconcileItem *ni = realloc(r->items, n * sizeof(ReconcileItem));

                if (!ni) {
                        free(what);
                        return -ENOMEM;
                }
                r->items = ni;
                r->allocated = n;
        }
        it = &r->items[r->n++];
        *it = (ReconcileItem) { .what = what, .status = status, .error = error };
        r->counts[status]++;
        if (reason && *reason && !(it->reason = strdup(reason)))
                return -ENOMEM;
        if (about) {
                it->kind = about->kind;
                it->undo = about->undo;
                it->pid = about->pid;
                if ((about->cgroup && !(it->cgroup = strdup(about->cgroup))) ||
                    (about->from && !(it->from = strdup(about->from))))
                        return -ENOMEM;
        }
        return 0;
}

int reconcile_add(ReconcileReport *r, ReconcileStatus status, int error, const char *reason, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = reconcile_addv(r, NULL, status, error, reason, fmt, ap);
        va_end(ap);
        return k;
}

int reconcile_add_about(ReconcileReport *r, const ReconcileSubject *about, ReconcileStatus status, int error,
                        const char *reason, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = reconcile_addv(r, about, status, error, reason, fmt, ap);
        va_end(ap);
        return k;
}

static ReconcileStatus from_feat(FeatOutcome o) {
        switch (o) {
        case FEAT_DONE:
                return RECONCILE_DONE;
        case FEAT_ALREADY:
                return RECONCILE_ALREADY;
        case FEAT_SKIPPED:
                return RECONCILE_SKIPPED;
        default:
                return RECONCILE_FAILED;
        }
}

static ReconcileKind feat_kind_of(FeatKind k) {
        return k == FEAT_KIND_FEATURE ? RECONCILE_KIND_FEATURE : RECONCILE_KIND_SETTING;
}

ReconcileStatus reconcile_from_cgroup(CgroupOutcome o) {
        switch (o) {
        case CGROUP_DONE:
                return RECONCILE_DONE;
        case CGROUP_ALREADY:
                return RECONCILE_ALREADY;
        case CGROUP_SKIPPED:
                return RECONCILE_SKIPPED;
        case CGROUP_VANISHED:
                return RECONCILE_VANISHED;
        default:
                return RECONCILE_FAILED;
        }
}

ReconcileStatus reconcile_from_cookie(CookieOutcome o) {
        switch (o) {
        case COOKIE_DONE:
                return RECONCILE_DONE;
        case COOKIE_ALREADY:
                return RECONCILE_ALREADY;
        case COOKIE_VANISHED:
                return RECONCILE_VANISHED;
        case COOKIE_REFUSED:
                return RECONCILE_SKIPPED;
        default:
                return RECONCILE_FAILED;
        }
}

static ReconcileKind kind_of_cgroup_item(CgroupItemKind k) {
        switch (k) {
        case CGROUP_ITEM_MKDIR:
                return RECONCILE_KIND_CREATE;
        case CGROUP_ITEM_RMDIR:
                return RECONCILE_KIND_REMOVE;
        case CGROUP_ITEM_MOVE:
                return RECONCILE_KIND_MOVE;
        case CGROUP_ITEM_EFFECTIVE: /* a read-back changes nothing */
                return RECONCILE_KIND_NONE;
        default:
                return RECONCILE_KIND_PROPERTY;
        }
}

int reconcile_add_cgroup_report(ReconcileReport *r, const CgroupReport *cr) {
        int k;

        for (size_t i = 0; i < cr->n; i++) {
                const CgroupResult *c = &cr->items[i];
                ReconcileSubject about = { .kind = kind_of_cgroup_item(c->kind), .undo = c->back,
                                           .pid = c->kind == CGROUP_ITEM_MOVE ? c->tgid : 0, .cgroup = c->path,
                                           .from = c->kind == CGROUP_ITEM_MOVE ? c->from : NULL };

                if (c->path[0] != '/' && c->kind != CGROUP_ITEM_MOVE)
                        /* The systemd driver's items on units (unit.h). */
                        k = reconcile_add_about(r, &about, reconcile_from_cgroup(c->outcome), c->error, c->reason, "unit %s: %s%s%s%s",
                                          c->path, c->back ? "back " : "",
                                          c->kind == CGROUP_ITEM_MKDIR   ? "start"
                                          : c->kind == CGROUP_ITEM_RMDIR ? "stop"
                                          : c->kind == CGROUP_ITEM_MEMS  ? unit_property_name(UNIT_PROP_MEMS)
                                          : c->kind == CGROUP_ITEM_WEIGHT ? unit_property_name(UNIT_PROP_WEIGHT)
                                                                          : unit_property_name(UNIT_PROP_CPUS),
                                          c->value ? " " : "", c->value ?: "");
                else if (c->kind == CGROUP_ITEM_EFFECTIVE)
                        /* A read-back changes nothing: a match is "already so". */
                        k = reconcile_add_about(r, &about, c->outcome == CGROUP_DONE ? RECONCILE_ALREADY : reconcile_from_cgroup(c->outcome),
                                          c->error, c->reason, "cgroup %s: %s %s (read back)", c->path,
                                          cgroup_item_kind_to_string(c->kind), c->value ?: "");
                else if (c->kind == CGROUP_ITEM_MOVE)
                        k = reconcile_add_about(r, &about, reconcile_from_cgroup(c->outcome), c->error, c->reason,
                                          "cgroup: move process %d (tid %d) %sto %s%s%s", (int) c->tgid, (int) c->pid,
                                          c->back ? "back " : "", c->path, c->from ? " from " : "", c->from ?: "");
                else
                        k = reconcile_add_about(r, &about, reconcile_from_cgroup(c->outcome), c->error, c->reason, "cgroup %s: %s%s%s",
                                          c->path, cgroup_item_kind_to_string(c->kind), c->value ? " " : "",
                                          c->value ?: "");
                if (k < 0)
                        return k;
        }
        return 0;
}

/* The scheduler's other settings (skipped where this kernel lacks one or
 * refuses it), then back to its original whatever the journal holds that
 * no policy in force sets any longer. */
static int apply_kernel_settings(const Reconciler *rc, const Plan *plan, ReconcileReport *r) {
        _cleanup_free_ FeatResult *fr = NULL;
        size_t n = 0;
        int k;

        for (size_t i = 0; i < plan->kernel->n_settings; i++) {
                FeatResult res = {};

                (void) feat_apply_setting(rc->root, rc->feat_ops, rc->caps, rc->journal, &plan->kernel->settings[i], &res);
                if ((k = reconcile_add_about(r, &(ReconcileSubject) { .kind = RECONCILE_KIND_SETTING },
                                             from_feat(res.outcome), res.error, res.reason, "setting %s %s", res.name,
                                       res.value)) < 0)
                        return k;
        }
        if (!rc->journal || !rc->caps->debugfs_mount)
                return 0;
        k = feat_release_unplanned(rc->root, rc->feat_ops, rc->caps->debugfs_mount, rc->journal, plan->kernel,
                                   plan->mode_written ? plan->mode : NULL, &fr, &n);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n; i++)
                if ((k = reconcile_add_about(r, &(ReconcileSubject) { .kind = feat_kind_of(fr[i].kind), .undo = true },
                                             from_feat(fr[i].outcome), fr[i].error, fr[i].reason, "released %s %s",
                                       feat_kind_to_string(fr[i].kind), fr[i].name)) < 0)
                        return k;
        return 0;
}

static int apply_kernel(const Reconciler *rc, const Plan *plan, ReconcileReport *r) {
        const char *dbg = rc->caps->debugfs_mount;
        int k;

        for (size_t i = 0; i < plan->kernel->n_features; i++) {
                const PolicyFeature *f = &plan->kernel->features[i];
                FeatResult res = {};

                if (!dbg || !rc->caps->features_readable) {
                        k = reconcile_add_about(r, &(ReconcileSubject) { .kind = RECONCILE_KIND_FEATURE }, RECONCILE_SKIPPED,
                                                rc->caps->sched_features.error, rc->caps->sched_features.reason,
                                                "feature %s %s", f->name, f->on ? "on" : "off");
                } else {
                        (void) feat_set(rc->root, rc->feat_ops, dbg, rc->journal, f->name, f->on, &res);
                        k = reconcile_add_about(r, &(ReconcileSubject) { .kind = RECONCILE_KIND_FEATURE },
                                                from_feat(res.outcome), res.error, res.reason, "feature %s %s", f->name,
                                          f->on ? "on" : "off");
                }
                if (k < 0)
                        return k;
        }
        if (plan->mode && plan->mode_written) {
                FeatResult res = {};

                (void) feat_set_cgroup_mode(rc->root, rc->feat_ops, dbg, rc->journal, plan->mode, &res);
                if ((k = reconcile_add_about(r, &(ReconcileSubject) { .kind = RECONCILE_KIND_SETTING },
                                             from_feat(res.outcome), res.error, res.reason, "cgroup_mode %s",
                                       plan->mode)) < 0)
                        return k;
        } else if (plan->mode && plan->mode_emulated) {
                if ((k = reconcile_add(r, RECONCILE_SKIPPED, 0,
                                       "no sched/cgroup_mode on this kernel: emulated by cpu.weight", "cgroup_mode %s",
                                       plan->mode)) < 0)
                        return k;
        }
        return apply_kernel_settings(rc, plan, r);
}

/* The fast path names a process it gives a cookie by its pidfd's inode
 * (PIDREF_IDENT_PIDFS), the plan by its start time. A cookie entry of the
 * first kind whose tid the plan gives a cookie group, and which the prune
 * did not rename with its task entry (the process was in its group
 * already: no move, no task entry), is pinned by that inode: the process
 * the plan means (its start time read through the pin), it is named so
 * from now on; gone, it is forgotten (nothing to clear). One pin and one
 * read a process, once. */
static int name_fast_cookies(const Reconciler *rc, const Plan *plan) {
        const PidRefOps *ops = rc->pidref ?: &pidref_ops_host;
        _cleanup_free_ JournalCookie *from = NULL;
        _cleanup_free_ uint64_t *to = NULL;
        size_t n = 0, m = 0;

        for (size_t i = 0; i < rc->journal->n_cookies; i++)
                n += pidref_ident_is_pidfs(rc->journal->cookies[i].start_time);
        if (n == 0)
                return 0;
        from = calloc(n, sizeof(JournalCookie));
        to = calloc(n, sizeof(uint64_t));
        if (!from || !to)
                return -ENOMEM;
        /* Copied first: the placer, let in between the pins, adds
         * entries and forgets some. */
        for (size_t i = 0; i < rc->journal->n_cookies; i++) {
                const JournalCookie *jc = &rc->journal->cookies[i];
                const PlanTask *pt;

                if (!pidref_ident_is_pidfs(jc->start_time))
                        continue;
                pt = plan_find_task(plan, jc->tid);
                if (pt && pt->cookie_group >= 0 && !yield_changed(rc->yield, pt->tgid))
                        from[m++] = *jc;
        }
        for (size_t i = 0; i < m; i++) {
                const PlanTask *pt = plan_find_task(plan, from[i].tid);
                ProcStat st;
                int k;

                /* Hundreds, after a build ran in its group: a pin and a
                 * read each, with the placer let in between. */
                yield_now(rc->yield);
                k = pidref_read_stat_pinned(rc->root, ops, from[i].tid, from[i].start_time, &st);
                if (k == -ESRCH)
                        continue; /* to[i] 0: forgotten */
                /* The process the plan means, or, for anything else
                 * (EMFILE, a read that failed, another process), as it is. */
                to[i] = k > 0 && pt && st.start_time == pt->start_time ? st.start_time : from[i].start_time;
        }
        (void) journal_rename_cookies(rc->journal, from, to, m);
        return 0;
}

static int clear_unplanned_cookies(const Reconciler *rc, const Plan *plan, ReconcileReport *r) {
        size_t n = MIN(rc->journal->n_cookies, (size_t) COOKIE_TASKS_MAX), m = 0;
        _cleanup_free_ CookieTask *tasks = calloc(MAX(n, (size_t) 1), sizeof(CookieTask));
        _cleanup_free_ CookieResult *results = calloc(MAX(n, (size_t) 1), sizeof(CookieResult));
        int k;

        if (!tasks || !results)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const JournalCookie *jc = &rc->journal->cookies[i];
                const PlanTask *pt = plan_find_task(plan, jc->tid);

                /* A process the fast path gave a cookie while this pass ran
                 * is not in its plan: it keeps it. One the plan gives a
                 * cookie group and the fast path named by its pidfd's inode
                 * (name_fast_cookies() could not tell yet) keeps it too. */
                if ((pt && pt->cookie_group >= 0 &&
                     (pt->start_time == jc->start_time || pidref_ident_is_pidfs(jc->start_time))) ||
                    yield_changed(rc->yield, pt ? pt->tgid : jc->tid))
                        continue;
                tasks[m++] = (CookieTask) { jc->tid, jc->start_time };
        }
        if (m == 0)
                return 0;
        k = cookie_clear(rc->cookies, tasks, m, results);
        if (k < 0)
                return reconcile_add(r, RECONCILE_FAILED, k, NULL, "cookies cleared: %zu tasks", m);
        for (size_t i = 0; i < m; i++) {
                if ((k = reconcile_add_about(r, &(ReconcileSubject) { .kind = RECONCILE_KIND_COOKIE, .undo = true,
                                                                       .pid = tasks[i].tid },
                                             reconcile_from_cookie(results[i].outcome), results[i].error, NULL,
                                             "cookie cleared: tid %d", (int) tasks[i].tid)) < 0)
                        return k;
                /* Cleared or gone: forgotten. Refused (SMT off: the
                 * kernel takes no call) or failed: still set, kept. */
                if (results[i].outcome != COOKIE_FAILED && results[i].outcome != COOKIE_REFUSED &&
                    (k = journal_forget_cookie(rc->journal, tasks[i].tid, tasks[i].start_time)) < 0)
                        return k;
        }
        return 0;
}

/* One pass's cookie groups as apply_cookies() goes through them. */
typedef struct CookieRun {
        CookieTask *tasks;      /* the group's members, */
        CookieResult *results;  /* and what came of each */
        uint64_t *now;          /* each member's cookie before the group's turn */
        uint64_t *sorted;       /* the same, sorted */
        bool *ours;             /* topod gave the member its cookie (journaled before) */
        CookieTask *missing;    /* the members without the group's cookie */
        uint64_t *claimed;      /* the groups' cookies so far, 0 unknown */
        size_t n_claimed;
        bool changed;           /* the pass changed a cookie */
        bool stopped;           /* the journal could not be written: no more groups */
} CookieRun;

/* The members of cookie group g to give its cookie, in run->tasks: those
 * that changed since the scan are reported skipped. How many. The main
 * threads come last: the kernel is asked for the members one after the
 * other, and a process whose main thread holds the group's cookie has its
 * other threads in it already (what explain shows of a process is its
 * main thread's). */
static int cookie_group_members(const Reconciler *rc, const Plan *plan, size_t g, CookieRun *run, ReconcileReport *r,
                                size_t *ret_n) {
        size_t n = 0;
        int k;

        for (size_t j = 0; j < 2 * plan->n_tasks; j++) {
                size_t i = j % plan->n_tasks;
                bool main_thread = plan->tasks[i].tid == plan->tasks[i].tgid;

                if (plan->tasks[i].cookie_group != (int) g || main_thread != (j >= plan->n_tasks))
                        continue;
                /* Exec'd or renamed since the scan: the fast path has
                 * it, or the next pass. */
                if (yield_changed(rc->yield, plan->tasks[i].tgid)) {
                        if ((k = reconcile_add_about(r, &(ReconcileSubject) { .kind = RECONCILE_KIND_COOKIE,
                                                                               .pid = plan->tasks[i].tid },
                                                     RECONCILE_SKIPPED, 0, YIELD_CHANGED_REASON, "cookie group %zu: tid %d",
                                               g, (int) plan->tasks[i].tid)) < 0)
                                return k;
                        continue;
                }
                run->tasks[n++] = (CookieTask) { plan->tasks[i].tid, plan->tasks[i].start_time };
        }
        *ret_n = n;
        return 0;
}

/* The group's cookie as its members hold it now: the one most members
 * hold among those topod gave a cookie before (run->ours: their journal
 * entry was there already; a cookie someone else gave is never adopted,
 * since others may hold it), not 0 and not another group's this pass (a
 * member may hold another group's: a process forked by one of its members
 * before its own policy had a group, a child whose policy is not its
 * parent's; cookies are inherited). Each member's cookie is left in
 * run->now (0: none, or unreadable). How many hold it (0: none does, the
 * group gets a new one); *ret_holder is one of them, *ret_cookie its
 * value. */
static bool cookie_claimed(const CookieRun *run, uint64_t c) {
        for (size_t j = 0; j < run->n_claimed; j++)
                if (run->claimed[j] == c)
                        return true;
        return false;
}

static size_t cookie_group_existing(const Reconciler *rc, CookieRun *run, size_t n, size_t *ret_holder,
                                    uint64_t *ret_cookie) {
        size_t best = 0;
        uint64_t cookie = 0;

        for (size_t i = 0; i < n; i++) {
                if (cookie_get(rc->cookies, run->tasks[i].tid, &run->now[i]) < 0)
                        run->now[i] = 0;
                run->sorted[i] = run->ours[i] ? run->now[i] : 0;
        }
        /* The most held value: runs of a sorted copy (a group may be
         * thousands of threads). */
        qsort(run->sorted, n, sizeof(uint64_t), compare_u64);
        for (size_t i = 0, j; i < n; i = j) {
                for (j = i + 1; j < n && run->sorted[j] == run->sorted[i]; j++)
                        ;
                if (run->sorted[i] != 0 && j - i > best && !cookie_claimed(run, run->sorted[i])) {
                        best = j - i;
                        cookie = run->sorted[i];
                }
        }
        for (size_t i = 0; i < n && best; i++)
                if (run->ours[i] && run->now[i] == cookie) {
                        *ret_holder = i;
                        break;
                }
        *ret_cookie = cookie;
        return best;
}

static int report_cookie_results(ReconcileReport *r, size_t g, const CookieTask *tasks, const CookieResult *results,
                                 size_t n) {
        int k;

        for (size_t i = 0; i < n; i++)
                if ((k = reconcile_add_about(r, &(ReconcileSubject) { .kind = RECONCILE_KIND_COOKIE, .pid = tasks[i].tid },
                                             reconcile_from_cookie(results[i].outcome), results[i].error, NULL,
                                             "cookie group %zu: tid %d", g, (int) tasks[i].tid)) < 0)
                        return k;
        return 0;
}

/* The members without the group's existing cookie join it (threads born
 * before their process was placed, a member whose cookie someone
 * cleared): the cookie stays what it is for the members that have it.
 * 1 done; 0 when the holder has gone or lost it meanwhile (the caller
 * gives the group a new one); negative errno. */
static int join_cookie_group(const Reconciler *rc, size_t g, CookieRun *run, size_t n, size_t holder,
                             uint64_t cookie, ReconcileReport *r) {
        size_t m = 0;
        int k;

        for (size_t i = 0; i < n; i++)
                if (run->now[i] != cookie)
                        run->missing[m++] = run->tasks[i];
        k = cookie_join(rc->cookies, &run->tasks[holder], run->missing, m, run->results);
        if (k == -ESRCH || k == -ENODATA)
                return 0;
        if (k < 0 && k != -ENODEV && k != -EINVAL && k != -EBUSY)
                return k;
        run->changed = run->changed || k > 0;
        run->claimed[run->n_claimed++] = cookie;
        for (size_t i = 0; i < n; i++)
                if (run->now[i] == cookie &&
                    (k = reconcile_add_about(r, &(ReconcileSubject) { .kind = RECONCILE_KIND_COOKIE, .pid = run->tasks[i].tid },
                                             RECONCILE_ALREADY, 0, NULL, "cookie group %zu: tid %d", g,
                                             (int) run->tasks[i].tid)) < 0)
                        return k;
        if ((k = report_cookie_results(r, g, run->missing, run->results, m)) < 0)
                return k;
        return 1;
}

/* Cookie group g: its members' originals journaled, then one cookie for
 * them all: the one they hold already where some do (those without it
 * join it), else a new one. A group's cookie so changes only when no
 * member holds it any longer, never because a member lacks it. */
static int apply_cookie_group(const Reconciler *rc, const Plan *plan, size_t g, CookieRun *run, ReconcileReport *r) {
        size_t n = 0, holder = 0, holders;
        uint64_t cookie = 0;
        int k;

        /* Not after the pass changed a cookie: a process placed
         * meanwhile could join (from the plan in force) a cookie
         * the pass just gave to another group. */
        if (!run->changed)
                yield_now(rc->yield);
        if ((k = cookie_group_members(rc, plan, g, run, r, &n)) < 0)
                return k;
        if (n == 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                /* 0: the entry was there, so was topod's cookie (no
                 * journal: tests, take every member's as topod's) */
                k = rc->journal ? journal_record_cookie(rc->journal, run->tasks[i].tid, run->tasks[i].start_time) : 0;
                if (k < 0)
                        return k;
                run->ours[i] = k == 0;
        }
        holders = cookie_group_existing(rc, run, n, &holder, &cookie);
        if (rc->journal && rc->journal->dirty && (k = journal_commit(rc->journal)) < 0) {
                run->stopped = true;
                return reconcile_add(r, RECONCILE_FAILED, k, "the journal could not be written: nothing changed",
                                     "cookie group %zu", g);
        }
        if (holders == n) {
                run->claimed[run->n_claimed++] = cookie;
                for (size_t i = 0; i < n; i++)
                        if ((k = reconcile_add_about(r, &(ReconcileSubject) { .kind = RECONCILE_KIND_COOKIE,
                                                                               .pid = run->tasks[i].tid },
                                                     RECONCILE_ALREADY, 0, NULL, "cookie group %zu: tid %d", g,
                                                     (int) run->tasks[i].tid)) < 0)
                                return k;
                return 0;
        }
        if (holders > 0 && (k = join_cookie_group(rc, g, run, n, holder, cookie, r)) != 0)
                return k < 0 ? k : 0;
        k = cookie_assign(rc->cookies, run->tasks, n, run->results);
        if (k < 0 && k != -ENODEV && k != -EINVAL && k != -EBUSY)
                return k;
        run->changed = run->changed || k > 0;
        /* Its new cookie, claimed as the others. */
        for (size_t i = 0; i < n; i++)
                if (run->results[i].outcome == COOKIE_DONE && run->results[i].cookie != 0) {
                        run->claimed[run->n_claimed++] = run->results[i].cookie;
                        break;
                }
        return report_cookie_results(r, g, run->tasks, run->results, n);
}

static int apply_cookies(const Reconciler *rc, const Plan *plan, ReconcileReport *r) {
        _cleanup_free_ CookieTask *tasks = NULL;
        _cleanup_free_ CookieResult *results = NULL;
        _cleanup_free_ uint64_t *claimed = NULL, *now = NULL, *sorted = NULL;
        _cleanup_free_ CookieTask *missing = NULL;
        _cleanup_free_ bool *ours = NULL;
        CookieRun run;
        int k;

        if (plan->n_cookie_groups == 0 && (!rc->journal || rc->journal->n_cookies == 0))
                return 0;
        if (!rc->cookies)
                return reconcile_add(r, RECONCILE_SKIPPED, 0, "no cookie applier", "cookies");
        tasks = calloc(MAX(plan->n_tasks, (size_t) 1), sizeof(CookieTask));
        results = calloc(MAX(plan->n_tasks, (size_t) 1), sizeof(CookieResult));
        claimed = calloc(MAX(plan->n_cookie_groups, (size_t) 1), sizeof(uint64_t));
        now = calloc(MAX(plan->n_tasks, (size_t) 1), sizeof(uint64_t));
        sorted = calloc(MAX(plan->n_tasks, (size_t) 1), sizeof(uint64_t));
        missing = calloc(MAX(plan->n_tasks, (size_t) 1), sizeof(CookieTask));
        ours = calloc(MAX(plan->n_tasks, (size_t) 1), sizeof(bool));
        if (!tasks || !results || !claimed || !now || !sorted || !missing || !ours)
                return -ENOMEM;
        run = (CookieRun) { .tasks = tasks, .results = results, .now = now, .sorted = sorted, .ours = ours,
                            .missing = missing, .claimed = claimed };
        /* Before the groups record their members: an entry of the fast
         * path's under another name would be a second one. */
        if (rc->journal && (k = name_fast_cookies(rc, plan)) < 0)
                return k;

        for (size_t g = 0; g < plan->n_cookie_groups; g++)
                if ((k = apply_cookie_group(rc, plan, g, &run, r)) < 0 || run.stopped)
                        return k;

        /* Tasks topod gave a cookie that the plan no longer groups: cleared
         * in one job (one wake-up of the worker, not one per task: after an
         * exec storm, most are processes that have exited). */
        if (rc->journal && rc->journal->n_cookies > 0)
                return clear_unplanned_cookies(rc, plan, r);
        return 0;
}

/* The cgroup writer's view of rc: with the held cgroup.procs files for
 * moves into topod's groups, without for restores. */
CgroupEnv reconcile_cgroup_env(const Reconciler *rc, bool held) {
        return (CgroupEnv) { .root = rc->root, .mount = rc->caps->cgroup2_mount, .ops = rc->cgroup_ops,
                             .controllers = rc->caps->cgroup2_controllers, .pidref = rc->pidref,
                             .held = held ? rc->held : NULL, .yield = rc->yield, .bin = rc->fds,
                             .cgroup_root = rc->cgroup_root };
}

int reconcile_new_report(ReconcileReport **ret) {
        *ret = calloc(1, sizeof(ReconcileReport));
        return *ret ? 0 : -ENOMEM;
}

int reconcile_apply(const Reconciler *rc, const Plan *plan, ReconcileReport **ret) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *cr = NULL;
        int k;

        if ((k = reconcile_new_report(&r)) < 0)
                return k;
        /* What the plan already knows cannot be done here. */
        for (char **n = plan->notes; n && *n; n++)
                if ((k = reconcile_add(r, RECONCILE_SKIPPED, 0, *n, "plan")) < 0)
                        return k;
        /* Kernel-wide first: they do not depend on tasks. */
        if ((k = apply_kernel(rc, plan, r)) < 0)
                return k;
        /* cgroup2 without the cpu and cpuset controllers (a hybrid host)
         * still groups and moves tasks: the writer skips the rest. */
        if (rc->caps->cgroup2_mount) {
                CgroupEnv env = reconcile_cgroup_env(rc, true);

                if ((k = cgroup_report_new(&cr)) < 0)
                        return k;
                if (rc->unit_ops) {
                        UnitEnv ue = { .cgroup = &env, .ops = rc->unit_ops,
                                       .settle_usec = RECONCILE_UNIT_SETTLE_USEC };

                        k = unit_apply(&ue, plan, rc->journal, cr);
                } else
                        k = cgroup_apply(&env, plan, rc->journal, cr);
                if (k < 0 && k != -ENOENT)
                        (void) reconcile_add(r, RECONCILE_FAILED, k, NULL, "cgroup tree");
                /* Originals of processes that have exited are moot: the
                 * journal keeps the living only (committed below). */
                (void) cgroup_journal_prune(&env, plan, rc->journal);
                /* Those it no longer places: back where they came from
                 * (cgroups not topod's: no files held for them). */
                if (!rc->unit_ops) {
                        CgroupEnv out = reconcile_cgroup_env(rc, false);

                        if ((k = cgroup_release_unplanned(&out, plan, rc->journal, cr)) == -ENOMEM)
                                return k;
                } else {
                        /* Units and scopes it no longer places: their
                         * properties and processes given back. */
                        UnitEnv ue = { .cgroup = &env, .ops = rc->unit_ops,
                                       .settle_usec = RECONCILE_UNIT_SETTLE_USEC };

                        if ((k = unit_release_unplanned(&ue, plan, rc->journal, cr)) == -ENOMEM)
                                return k;
                }
                if ((k = reconcile_add_cgroup_report(r, cr)) < 0)
                        return k;
        } else if (plan->n_groups > 0 && (k = reconcile_add(r, RECONCILE_SKIPPED, rc->caps->cgroup2.error,
                                                            rc->caps->cgroup2.reason, "cgroup tree")) < 0)
                return k;
        if ((k = apply_cookies(rc, plan, r)) < 0)
                return k;
        if (rc->journal && rc->journal->dirty && (k = journal_commit(rc->journal)) < 0)
                (void) reconcile_add(r, RECONCILE_FAILED, k, NULL, "journal commit");
        *ret = TAKE_PTR(r);
        return 0;
}

/* Threads in topod's cgroups that hold a cookie topod gave without the
 * journal naming them: a child forked, or a thread started, by a holder
 * after the last pass looked (cookies are inherited). Known by the value,
 * read from the journaled holders alive now: a live holder keeps its
 * cookie, so a thread with an equal value has that very cookie, not a
 * later one made at the same address. (A cookie whose journaled holders
 * all exited cannot be told from one its process made itself: left.) */
static int inherited_cookies(const Reconciler *rc, const JournalCookie *all, size_t n, CookieTask **ret,
                             size_t *ret_n) {
        _cleanup_free_ uint64_t *values = NULL;
        _cleanup_free_ pid_t *named = NULL, *tids = NULL;
        _cleanup_free_ CookieTask *found = NULL;
        size_t n_values = 0, n_tids = 0, m = 0;
        CgroupEnv env;
        int k;

        *ret = NULL;
        *ret_n = 0;
        if (!rc->cookies || !rc->caps->cgroup2_mount || rc->journal->n_cgroups == 0 || n == 0)
                return 0;
        values = calloc(n, sizeof(uint64_t));
        named = calloc(n, sizeof(pid_t));
        if (!values || !named)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                CookieTask t = { all[i].tid, all[i].start_time };
                uint64_t c;

                named[i] = all[i].tid;
                if (cookie_read(rc->cookies, &t, &c) >= 0 && c != 0)
                        values[n_values++] = c;
        }
        if (n_values == 0)
                return 0;
        qsort(values, n_values, sizeof(uint64_t), compare_u64);
        qsort(named, n, sizeof(pid_t), compare_pid);
        env = reconcile_cgroup_env(rc, false);
        k = cgroup_created_threads(&env, rc->journal, &tids, &n_tids);
        if (k < 0)
                return k;
        found = calloc(MAX(n_tids, (size_t) 1), sizeof(CookieTask));
        if (!found)
                return -ENOMEM;
        for (size_t i = 0; i < n_tids; i++) {
                uint64_t st, c;

                if (bsearch(&tids[i], named, n, sizeof(pid_t), compare_pid))
                        continue;
                /* Who it is before what it holds: a tid reused in between
                 * is not the thread the clear then pins. */
                if (pidref_read_start_time(rc->root, -1, tids[i], &st) < 0 || cookie_get(rc->cookies, tids[i], &c) < 0 ||
                    c == 0 || !bsearch(&c, values, n_values, sizeof(uint64_t), compare_u64))
                        continue;
                found[m++] = (CookieTask) { tids[i], st };
        }
        *ret = TAKE_PTR(found);
        *ret_n = m;
        return 0;
}

/* A clear the kernel would take once SMT is on again: refused while it is
 * off (ENODEV, by the interlock or the kernel). */
static bool clear_waits_for_smt(const CookieResult *res) {
        return (res->outcome == COOKIE_REFUSED || res->outcome == COOKIE_FAILED) && res->error == -ENODEV;
}

/* tasks' cookies cleared in jobs of up to COOKIE_TASKS_MAX (one wake-up of
 * the clearing thread each, not one a task), each reported as `what`;
 * ret_waiting[i] (when given) set for each clear_waits_for_smt(). */
static int clear_in_jobs(const Reconciler *rc, ReconcileReport *r, const CookieTask *tasks, size_t n,
                         const char *what, bool *ret_waiting) {
        _cleanup_free_ CookieResult *results = NULL;
        int k;

        if (n == 0)
                return 0;
        results = calloc(MIN(n, (size_t) COOKIE_TASKS_MAX), sizeof(CookieResult));
        if (!results)
                return -ENOMEM;
        for (size_t done = 0; done < n;) {
                size_t m = MIN(n - done, (size_t) COOKIE_TASKS_MAX);

                for (size_t i = 0; i < m; i++)
                        results[i] = (CookieResult) { .tid = tasks[done + i].tid, .outcome = COOKIE_FAILED,
                                                      .error = -EOPNOTSUPP };
                if (rc->cookies && (k = cookie_clear(rc->cookies, tasks + done, m, results)) < 0)
                        for (size_t i = 0; i < m; i++)
                                results[i] = (CookieResult) { .tid = tasks[done + i].tid, .outcome = COOKIE_FAILED,
                                                              .error = k };
                for (size_t i = 0; i < m; i++) {
                        if (ret_waiting)
                                ret_waiting[done + i] = clear_waits_for_smt(&results[i]);
                        /* Kept for later: skipped, not failed (whether
                         * the worker's interlock or the kernel said so). */
                        if ((k = reconcile_add_about(r, &(ReconcileSubject) { .kind = RECONCILE_KIND_COOKIE, .undo = true,
                                                                               .pid = tasks[done + i].tid },
                                               ret_waiting && ret_waiting[done + i]
                                                       ? RECONCILE_SKIPPED
                                                       : reconcile_from_cookie(results[i].outcome),
                                               results[i].error,
                                               ret_waiting && ret_waiting[done + i] ? "SMT is off: kept in the journal, "
                                                                                      "cleared once SMT is on"
                                                                                    : NULL,
                                               "%s: tid %d", what, (int) tasks[done + i].tid)) < 0)
                                return k;
                }
                done += m;
        }
        return 0;
}

/* The inherited ones of inherited_cookies() cleared into r (a failure to
 * look for them is an item of r). */
static int clear_inherited(const Reconciler *rc, ReconcileReport *r, const JournalCookie *all, size_t n) {
        _cleanup_free_ CookieTask *inherited = NULL;
        size_t m = 0;
        int k;

        k = inherited_cookies(rc, all, n, &inherited, &m);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return reconcile_add(r, RECONCILE_FAILED, k, "cannot look for the cookies threads inherited",
                                     "cookies inherited in topod's cgroups");
        return clear_in_jobs(rc, r, inherited, m, "cookie cleared (inherited, not journaled)", NULL);
}

/* Every cookie topod gave, cleared, and those threads in its cgroups
 * inherited from them; the entries forgotten in one sweep whatever came of
 * each (a cookie that cannot be cleared now will not clear later either),
 * but for those refused while SMT is off: the kernel takes no call then,
 * and the cookie comes back into force with SMT. Those stay in the
 * journal: the run that recovers it, or the next pass once SMT is on
 * (clear_unplanned_cookies()), clears them. One by one, each forgetting
 * rebuilt the journal's index: quadratic in the entries, at every stop. */
static int restore_cookies(const Reconciler *rc, ReconcileReport *r) {
        size_t n = rc->journal->n_cookies;
        _cleanup_free_ JournalCookie *all = NULL;
        _cleanup_free_ uint64_t *to = NULL;
        _cleanup_free_ CookieTask *tasks = NULL;
        _cleanup_free_ bool *waiting = NULL;
        int k;

        if (n == 0)
                return 0;
        all = calloc(n, sizeof(JournalCookie));
        to = calloc(n, sizeof(uint64_t)); /* 0: forgotten */
        tasks = calloc(n, sizeof(CookieTask));
        waiting = calloc(n, sizeof(bool));
        if (!all || !to || !tasks || !waiting)
                return -ENOMEM;
        memcpy(all, rc->journal->cookies, n * sizeof(JournalCookie));
        for (size_t i = 0; i < n; i++)
                tasks[i] = (CookieTask) { all[i].tid, all[i].start_time };
        /* Before the holders' are cleared: their values tell the others. */
        if ((k = clear_inherited(rc, r, all, n)) < 0 ||
            (k = clear_in_jobs(rc, r, tasks, n, "cookie cleared", waiting)) < 0)
                return k;
        for (size_t i = 0; i < n; i++)
                if (waiting[i])
                        to[i] = all[i].start_time; /* the same name: kept */
        (void) journal_rename_cookies(rc->journal, all, to, n);
        /* One named 0 is renamed to what it is: forgotten here. */
        for (size_t i = 0; i < n; i++)
                if (all[i].start_time == 0 && !waiting[i])
                        (void) journal_forget_cookie(rc->journal, all[i].tid, 0);
        return 0;
}

int reconcile_clear_inherited_cookies(const Reconciler *rc, ReconcileReport **ret) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        int k;

        if (!rc->journal)
                return -EINVAL;
        if ((k = reconcile_new_report(&r)) < 0 ||
            (k = clear_inherited(rc, r, rc->journal->cookies, rc->journal->n_cookies)) < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

int reconcile_restore(const Reconciler *rc, ReconcileReport **ret) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *cr = NULL;
        _cleanup_free_ FeatResult *fr = NULL;
        size_t n_fr = 0;
        int k;

        if ((k = reconcile_new_report(&r)) < 0)
                return k;
        if (!rc->journal)
                return -EINVAL;
        r->restoring = true;

        /* Cookies first: clearing needs the tasks, which the cgroup moves
         * do not change. */
        if ((k = restore_cookies(rc, r)) < 0)
                return k;

        if (rc->caps->cgroup2_mount) {
                CgroupEnv env = reconcile_cgroup_env(rc, false); /* back to cgroups not ours: none held */

                if ((k = cgroup_report_new(&cr)) < 0)
                        return k;
                if (rc->unit_ops && (rc->journal->n_units > 0 || rc->journal->n_unit_props > 0 || rc->journal->n_tasks > 0)) {
                        UnitEnv ue = { .cgroup = &env, .ops = rc->unit_ops,
                                       .settle_usec = RECONCILE_UNIT_SETTLE_USEC };

                        if ((k = unit_restore(&ue, rc->journal, cr)) < 0)
                                (void) reconcile_add(r, RECONCILE_FAILED, k, NULL, "unit restore");
                }
                /* The cgroupfs writer's entries (a journal a cgroupfs run left). */
                k = !rc->unit_ops || rc->journal->n_cgroups > 0 ? cgroup_restore(&env, rc->journal, cr) : 0;
                if (k < 0)
                        (void) reconcile_add(r, RECONCILE_FAILED, k, NULL, "cgroup restore");
                if ((k = reconcile_add_cgroup_report(r, cr)) < 0)
                        return k;
        }

        if (rc->caps->debugfs_mount && (rc->journal->n_features > 0 || rc->journal->cgroup_mode || rc->journal->n_settings > 0)) {
                k = feat_restore(rc->root, rc->feat_ops, rc->caps->debugfs_mount, rc->journal, &fr, &n_fr);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < n_fr; i++) {
                        if ((k = reconcile_add_about(r, &(ReconcileSubject) { .kind = feat_kind_of(fr[i].kind), .undo = true },
                                             from_feat(fr[i].outcome), fr[i].error, fr[i].reason, "restore %s %s",
                                               feat_kind_to_string(fr[i].kind), fr[i].name)) < 0)
                                return k;
                        if (feat_result_settled(&fr[i]))
                                feat_forget(rc->journal, &fr[i]);
                }
        }
        if (rc->journal->dirty && (k = journal_commit(rc->journal)) < 0)
                (void) reconcile_add(r, RECONCILE_FAILED, k, NULL, "journal commit");
        *ret = TAKE_PTR(r);
        return 0;
}

int reconcile_report_print_text(FILE *f, const ReconcileReport *r) {
        for (size_t i = 0; i < r->n; i++) {
                const ReconcileItem *it = &r->items[i];

                fprintf(f, "%-8s %s", reconcile_status_to_string(it->status), it->what);
                if (it->status == RECONCILE_FAILED || it->reason)
                        fprintf(f, ": %s%s%s", it->reason ?: "", it->reason && it->error ? " " : "",
                                it->error ? errno_name(it->error) : "");
                fputc('\n', f);
        }
        fprintf(f, "%u done, %u already so, %u vanished, %u skipped, %u failed\n", r->counts[RECONCILE_DONE],
                r->counts[RECONCILE_ALREADY], r->counts[RECONCILE_VANISHED], r->counts[RECONCILE_SKIPPED],
                r->counts[RECONCILE_FAILED]);
        return 0;
}

int reconcile_report_print_json(Json *j, const ReconcileReport *r) {
        json_object_begin(j);
        json_key(j, "counts");
        json_object_begin(j);
        for (unsigned s = 0; s < _RECONCILE_STATUS_MAX; s++)
                json_kv_uint(j, reconcile_status_to_string((ReconcileStatus) s), r->counts[s]);
        json_object_end(j);
        json_key(j, "items");
        json_array_begin(j);
        for (size_t i = 0; i < r->n; i++) {
                json_object_begin(j);
                json_kv_string(j, "what", r->items[i].what);
                json_kv_string(j, "status", reconcile_status_to_string(r->items[i].status));
                json_kv_string(j, "error", r->items[i].error ? errno_name(r->items[i].error) : NULL);
                json_kv_string(j, "reason", r->items[i].reason);
                json_object_end(j);
        }
        json_array_end(j);
        json_object_end(j);
        return 0;
}
