/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "reconcile.h"

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
        }
        free(r->items);
        free(r);
        return NULL;
}

_printf_(5, 6) static int add(ReconcileReport *r, ReconcileStatus status, int error, const char *reason, const char *fmt,
                              ...) {
        ReconcileItem *it;
        va_list ap;
        char *what;
        int k;

        if (r->failures_only && status != RECONCILE_FAILED && status != RECONCILE_SKIPPED) {
                r->counts[status]++;
                return 0;
        }
        va_start(ap, fmt);
        k = vasprintf(&what, fmt, ap);
        va_end(ap);
        if (k < 0)
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
        if (reason && *reason && !(it->reason = strdup(reason)))
                return -ENOMEM;
        r->counts[status]++;
        return 0;
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

static ReconcileStatus from_cgroup(CgroupOutcome o) {
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

static ReconcileStatus from_cookie(CookieOutcome o) {
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

static int add_cgroup_report(ReconcileReport *r, const CgroupReport *cr) {
        int k;

        for (size_t i = 0; i < cr->n; i++) {
                const CgroupResult *c = &cr->items[i];

                if (c->kind == CGROUP_ITEM_EFFECTIVE)
                        /* A read-back changes nothing: a match is "already so". */
                        k = add(r, c->outcome == CGROUP_DONE ? RECONCILE_ALREADY : from_cgroup(c->outcome), c->error,
                                c->reason, "cgroup %s: %s %s (read back)", c->path, cgroup_item_kind_to_string(c->kind),
                                c->value ?: "");
                else if (c->kind == CGROUP_ITEM_MOVE)
                        k = add(r, from_cgroup(c->outcome), c->error, c->reason, "cgroup: move process %d (tid %d) %sto %s%s%s",
                                (int) c->tgid, (int) c->pid, c->back ? "back " : "", c->path, c->from ? " from " : "",
                                c->from ?: "");
                else
                        k = add(r, from_cgroup(c->outcome), c->error, c->reason, "cgroup %s: %s%s%s", c->path,
                                cgroup_item_kind_to_string(c->kind), c->value ? " " : "", c->value ?: "");
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
                if ((k = add(r, from_feat(res.outcome), res.error, res.reason, "setting %s %s", res.name, res.value)) < 0)
                        return k;
        }
        if (!rc->journal || !rc->caps->debugfs_mount)
                return 0;
        k = feat_release_unplanned(rc->root, rc->feat_ops, rc->caps->debugfs_mount, rc->journal, plan->kernel,
                                   plan->mode_written ? plan->mode : NULL, &fr, &n);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n; i++)
                if ((k = add(r, from_feat(fr[i].outcome), fr[i].error, fr[i].reason, "released %s %s",
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
                        k = add(r, RECONCILE_SKIPPED, rc->caps->sched_features.error, rc->caps->sched_features.reason,
                                "feature %s %s", f->name, f->on ? "on" : "off");
                } else {
                        (void) feat_set(rc->root, rc->feat_ops, dbg, rc->journal, f->name, f->on, &res);
                        k = add(r, from_feat(res.outcome), res.error, res.reason, "feature %s %s", f->name,
                                f->on ? "on" : "off");
                }
                if (k < 0)
                        return k;
        }
        if (plan->mode && plan->mode_written) {
                FeatResult res = {};

                (void) feat_set_cgroup_mode(rc->root, rc->feat_ops, dbg, rc->journal, plan->mode, &res);
                if ((k = add(r, from_feat(res.outcome), res.error, res.reason, "cgroup_mode %s", plan->mode)) < 0)
                        return k;
        } else if (plan->mode && plan->mode_emulated) {
                if ((k = add(r, RECONCILE_SKIPPED, 0, "no sched/cgroup_mode on this kernel: emulated by cpu.weight",
                             "cgroup_mode %s", plan->mode)) < 0)
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
                return add(r, RECONCILE_FAILED, k, NULL, "cookies cleared: %zu tasks", m);
        for (size_t i = 0; i < m; i++) {
                if ((k = add(r, from_cookie(results[i].outcome), results[i].error, NULL, "cookie cleared: tid %d",
                             (int) tasks[i].tid)) < 0)
                        return k;
                /* Cleared or gone: forgotten. Refused (SMT off: the
                 * kernel takes no call) or failed: still set, kept. */
                if (results[i].outcome != COOKIE_FAILED && results[i].outcome != COOKIE_REFUSED &&
                    (k = journal_forget_cookie(rc->journal, tasks[i].tid, tasks[i].start_time)) < 0)
                        return k;
        }
        return 0;
}

static int apply_cookies(const Reconciler *rc, const Plan *plan, ReconcileReport *r) {
        _cleanup_free_ CookieTask *tasks = NULL;
        _cleanup_free_ CookieResult *results = NULL;
        _cleanup_free_ uint64_t *claimed = NULL; /* the groups' cookies so far, 0 unknown */
        bool cookie_changed = false;
        size_t n_claimed = 0;
        int k;

        if (plan->n_cookie_groups == 0 && (!rc->journal || rc->journal->n_cookies == 0))
                return 0;
        if (!rc->cookies)
                return add(r, RECONCILE_SKIPPED, 0, "no cookie applier", "cookies");
        tasks = calloc(MAX(plan->n_tasks, (size_t) 1), sizeof(CookieTask));
        results = calloc(MAX(plan->n_tasks, (size_t) 1), sizeof(CookieResult));
        claimed = calloc(MAX(plan->n_cookie_groups, (size_t) 1), sizeof(uint64_t));
        if (!tasks || !results || !claimed)
                return -ENOMEM;
        /* Before the groups record their members: an entry of the fast
         * path's under another name would be a second one. */
        if (rc->journal && (k = name_fast_cookies(rc, plan)) < 0)
                return k;

        for (size_t g = 0; g < plan->n_cookie_groups; g++) {
                size_t n = 0;
                bool same = true;
                uint64_t first = 0;

                /* Not after the pass changed a cookie: a process placed
                 * meanwhile could join (from the plan in force) a cookie
                 * the pass just gave to another group. */
                if (!cookie_changed)
                        yield_now(rc->yield);
                for (size_t i = 0; i < plan->n_tasks; i++) {
                        if (plan->tasks[i].cookie_group != (int) g)
                                continue;
                        /* Exec'd or renamed since the scan: the fast path has
                         * it, or the next pass. */
                        if (yield_changed(rc->yield, plan->tasks[i].tgid)) {
                                if ((k = add(r, RECONCILE_SKIPPED, 0, YIELD_CHANGED_REASON, "cookie group %zu: tid %d", g,
                                             (int) plan->tasks[i].tid)) < 0)
                                        return k;
                                continue;
                        }
                        tasks[n++] = (CookieTask) { plan->tasks[i].tid, plan->tasks[i].start_time };
                }
                if (n == 0)
                        continue;
                /* Already one cookie, and not another group's? A group's
                 * member may hold another's: a process forked by one of
                 * its members before its own policy had a group, a child
                 * whose policy is not its parent's (cookies are inherited).
                 * Then the group gets a cookie of its own. */
                for (size_t i = 0; i < n && same; i++) {
                        uint64_t c = 0;

                        same = cookie_get(rc->cookies, tasks[i].tid, &c) >= 0 && c != 0 && (i == 0 || c == first);
                        if (i == 0)
                                first = c;
                }
                for (size_t i = 0; i < n_claimed && same; i++)
                        same = claimed[i] != first;
                for (size_t i = 0; i < n && rc->journal; i++) {
                        if ((k = journal_record_cookie(rc->journal, tasks[i].tid, tasks[i].start_time)) < 0)
                                return k;
                }
                if (rc->journal && rc->journal->dirty && (k = journal_commit(rc->journal)) < 0)
                        return add(r, RECONCILE_FAILED, k, "the journal could not be written: nothing changed",
                                   "cookie group %zu", g);
                if (same) {
                        claimed[n_claimed++] = first;
                        for (size_t i = 0; i < n; i++)
                                if ((k = add(r, RECONCILE_ALREADY, 0, NULL, "cookie group %zu: tid %d", g,
                                             (int) tasks[i].tid)) < 0)
                                        return k;
                        continue;
                }
                k = cookie_assign(rc->cookies, tasks, n, results);
                if (k < 0 && k != -ENODEV && k != -EINVAL && k != -EBUSY)
                        return k;
                cookie_changed = cookie_changed || k > 0;
                /* Its new cookie, claimed as the others. */
                for (size_t i = 0; i < n; i++)
                        if (results[i].outcome == COOKIE_DONE && results[i].cookie != 0) {
                                claimed[n_claimed++] = results[i].cookie;
                                break;
                        }
                for (size_t i = 0; i < n; i++)
                        if ((k = add(r, from_cookie(results[i].outcome), results[i].error, NULL, "cookie group %zu: tid %d",
                                     g, (int) results[i].tid)) < 0)
                                return k;
        }

        /* Tasks topod gave a cookie that the plan no longer groups: cleared
         * in one job (one wake-up of the worker, not one per task: after an
         * exec storm, most are processes that have exited). */
        if (rc->journal && rc->journal->n_cookies > 0)
                return clear_unplanned_cookies(rc, plan, r);
        return 0;
}

/* The cgroup writer's view of rc: with the held cgroup.procs files for
 * moves into topod's groups, without for restores. */
static CgroupEnv cgroup_env(const Reconciler *rc, bool held) {
        return (CgroupEnv) { .root = rc->root, .mount = rc->caps->cgroup2_mount, .ops = rc->cgroup_ops,
                             .controllers = rc->caps->cgroup2_controllers, .pidref = rc->pidref,
                             .held = held ? rc->held : NULL, .yield = rc->yield, .bin = rc->fds };
}

static int new_report(ReconcileReport **ret) {
        *ret = calloc(1, sizeof(ReconcileReport));
        return *ret ? 0 : -ENOMEM;
}

int reconcile_apply(const Reconciler *rc, const Plan *plan, ReconcileReport **ret) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *cr = NULL;
        int k;

        if ((k = new_report(&r)) < 0)
                return k;
        /* What the plan already knows cannot be done here. */
        for (char **n = plan->notes; n && *n; n++)
                if ((k = add(r, RECONCILE_SKIPPED, 0, *n, "plan")) < 0)
                        return k;
        /* Kernel-wide first: they do not depend on tasks. */
        if ((k = apply_kernel(rc, plan, r)) < 0)
                return k;
        /* cgroup2 without the cpu and cpuset controllers (a hybrid host)
         * still groups and moves tasks: the writer skips the rest. */
        if (rc->caps->cgroup2_mount) {
                CgroupEnv env = cgroup_env(rc, true);

                if ((k = cgroup_report_new(&cr)) < 0)
                        return k;
                k = cgroup_apply(&env, plan, rc->journal, cr);
                if (k < 0 && k != -ENOENT)
                        (void) add(r, RECONCILE_FAILED, k, NULL, "cgroup tree");
                /* Originals of processes that have exited are moot: the
                 * journal keeps the living only (committed below). */
                (void) cgroup_journal_prune(&env, plan, rc->journal);
                /* Those it no longer places: back where they came from
                 * (cgroups not topod's: no files held for them). */
                {
                        CgroupEnv out = cgroup_env(rc, false);

                        if ((k = cgroup_release_unplanned(&out, plan, rc->journal, cr)) == -ENOMEM)
                                return k;
                }
                if ((k = add_cgroup_report(r, cr)) < 0)
                        return k;
        } else if (plan->n_groups > 0 && (k = add(r, RECONCILE_SKIPPED, rc->caps->cgroup2.error, rc->caps->cgroup2.reason,
                                                  "cgroup tree")) < 0)
                return k;
        if ((k = apply_cookies(rc, plan, r)) < 0)
                return k;
        if (rc->journal && rc->journal->dirty && (k = journal_commit(rc->journal)) < 0)
                (void) add(r, RECONCILE_FAILED, k, NULL, "journal commit");
        *ret = TAKE_PTR(r);
        return 0;
}

/* ---- the fast path -------------------------------------------------------- */

static int place_report_cookie(ReconcileReport *r, const ReconcilePlacement *it, const CookieResult *res) {
        if (it->cookie == PLACE_COOKIE_NEW)
                return add(r, from_cookie(res->outcome), res->error, NULL, "cookie (process): tid %d", (int) it->tgid);
        if (it->cookie_group >= 0)
                return add(r, from_cookie(res->outcome), res->error, NULL, "cookie group %d: tid %d", it->cookie_group,
                           (int) it->tgid);
        return add(r, from_cookie(res->outcome), res->error, NULL, "cookie group (new, policy %d): tid %d", it->policy,
                   (int) it->tgid);
}

/* The cookies of a batch whose originals are committed. done[i]: handled. */
static int place_cookies(const Reconciler *rc, ReconcilePlacement *items, size_t n, const bool *recorded, bool *done,
                         const PidRef *const *pins, ReconcileReport *r) {
        _cleanup_free_ CookieTask *tasks = calloc(MAX(n, (size_t) 1), sizeof(CookieTask));
        _cleanup_free_ CookieResult *results = calloc(MAX(n, (size_t) 1), sizeof(CookieResult));
        _cleanup_free_ size_t *which = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        int k;

        if (!tasks || !results || !which)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t m = 0;

                if (done[i] || items[i].cookie == PLACE_COOKIE_KEEP)
                        continue;
                /* NEW: this process alone. JOIN: every JOIN of its policy in
                 * the batch at once, so they end up sharing one cookie. */
                for (size_t j = i; j < n; j++)
                        if (!done[j] && items[j].cookie == items[i].cookie &&
                            (j == i || (items[i].cookie == PLACE_COOKIE_JOIN && items[j].policy == items[i].policy))) {
                                /* A move done was checked alive right after it,
                                 * or (CgroupMove.check_later) is checked after
                                 * this act, which tells for both. The cookie's
                                 * value is nobody's business here: no read of
                                 * it after the act. */
                                tasks[m] = (CookieTask) { items[j].tgid, items[j].start_time, .leader = true,
                                                          .pinned = pins[j],
                                                          .pinned_checked = pins[j] &&
                                                                            items[j].moved == RECONCILE_DONE,
                                                          .no_value = true };
                                which[m++] = j;
                                done[j] = true;
                        }
                /* What a call refused as a whole (E2BIG, EINVAL) leaves:
                 * nothing done, and nothing said of any thread. */
                for (size_t t = 0; t < m; t++)
                        results[t] = (CookieResult) { .tid = tasks[t].tid, .outcome = COOKIE_FAILED, .error = -EIO };
                k = -ENODATA;
                if (items[i].cookie == PLACE_COOKIE_JOIN)
                        for (size_t s = 0; s < items[i].n_sources && (k == -ESRCH || k == -ENODATA); s++)
                                k = cookie_join(rc->cookies, &items[i].sources[s], tasks, m, results);
                if (k == -ESRCH || k == -ENODATA)
                        /* NEW, or no member left with a cookie to share. */
                        k = cookie_assign(rc->cookies, tasks, m, results);
                if (k == -ENOMEM)
                        return k;
                for (size_t t = 0; t < m; t++) {
                        ReconcilePlacement *it = &items[which[t]];

                        it->cookied = from_cookie(results[t].outcome);
                        if ((k = place_report_cookie(r, it, &results[t])) < 0)
                                return k;
                        /* Recorded for a thread that did not get it: moot. */
                        if (recorded[which[t]] && results[t].outcome != COOKIE_DONE &&
                            results[t].outcome != COOKIE_ALREADY && rc->journal)
                                (void) journal_forget_cookie(rc->journal, it->tgid, it->start_time);
                }
        }
        return 0;
}

/* A batch's per-item arrays (reconcile_place()). */
typedef struct PlaceScratch {
        CgroupMove *moves; /* its handles released by the caller: a move's serves its cookie too */
        size_t *move_of;
        bool *recorded, *done;
        const PidRef **pins;
} PlaceScratch;

/* On the stack up to this many items (what a placer's wake-up brings),
 * else allocated: a placement is then none of these allocations. */
#define RECONCILE_PLACE_STACK 8u

static int place_batch(const Reconciler *rc, const Plan *plan, ReconcilePlacement *items, size_t n,
                       const PlaceScratch *sc, ReconcileReport **ret) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        _cleanup_(cgroup_report_clear) CgroupReport crs = {};
        CgroupReport *cr = &crs;
        CgroupMove *moves = sc->moves;
        size_t *move_of = sc->move_of;
        bool *recorded = sc->recorded, *done = sc->done;
        const PidRef **pins = sc->pins;
        bool cgroups = rc->caps->cgroup2_mount != NULL;
        CgroupEnv env = cgroup_env(rc, true);
        size_t n_moves = 0;
        int k, prepared = 0, committed = 0;

        if ((k = new_report(&r)) < 0)
                return k;
        r->failures_only = true;

        for (size_t i = 0; i < n; i++) {
                ReconcilePlacement *it = &items[i];

                it->moved = RECONCILE_SKIPPED;
                it->cookied = it->cookie == PLACE_COOKIE_KEEP ? RECONCILE_ALREADY : RECONCILE_SKIPPED;
                if (it->group < 0 || (size_t) it->group >= plan->n_groups) {
                        it->moved = RECONCILE_FAILED;
                        if ((k = add(r, RECONCILE_FAILED, -EINVAL, "no such group in the plan",
                                     "cgroup: move process %d", (int) it->tgid)) < 0)
                                return k;
                        continue;
                }
                /* A cookie's journal entry and its later checks name the
                 * process as the move does: by its pidfd's inode where
                 * the cookie applier checks those (the pass names it by
                 * its start time once it has read it: name_fast_cookies()),
                 * else by its start time, which the move learns for them
                 * (a read of /proc/PID/stat: three system calls more). */
                moves[n_moves] = (CgroupMove) { .tgid = it->tgid, .start_time = it->start_time,
                                                .group = plan->groups[it->group].path,
                                                .by_start_time = it->cookie != PLACE_COOKIE_KEEP && rc->cookies &&
                                                                 !cookie_applier_checks_pidfs(rc->cookies),
                                                .keep_ref = it->cookie != PLACE_COOKIE_KEEP && rc->cookies,
                                                /* A new cookie's check after its act tells for
                                                 * the move too. Not a group's: a pid taken
                                                 * meanwhile by another process would get the
                                                 * group's cookie, which no pass would clear. */
                                                .check_later = it->cookie == PLACE_COOKIE_NEW && rc->cookies,
                                                .ref = PIDREF_NULL };
                move_of[n_moves++] = i;
        }

        /* 1. Originals: where each process is, and the cookies about to change. */
        if (cgroups) {
                prepared = cgroup_move_prepare(&env, plan->cgroup_root, moves, n_moves, rc->journal, cr);
                if (prepared == -ENOMEM) {
                        (void) cgroup_move_finish(&env, moves, n_moves, rc->journal, prepared, cr);
                        return prepared;
                }
                if (prepared < 0 && (k = add(r, RECONCILE_FAILED, prepared, NULL, "cgroup moves")) < 0)
                        return k;
        } else if (n_moves > 0 && (k = add(r, RECONCILE_SKIPPED, rc->caps->cgroup2.error, rc->caps->cgroup2.reason,
                                           "cgroup moves")) < 0)
                return k;
        /* Who each process is: learned by the moves' handles where the
         * caller did not know (start time 0). */
        for (size_t m = 0; m < n_moves; m++)
                if (items[move_of[m]].start_time == 0)
                        items[move_of[m]].start_time = moves[m].start_time;
        for (size_t i = 0; i < n && rc->cookies; i++) {
                if (items[i].cookie == PLACE_COOKIE_KEEP)
                        continue;
                if (items[i].start_time == 0) {
                        /* No move took a handle (gone before, or no cgroup2). */
                        k = pidref_read_start_time(rc->root, -1, items[i].tgid, &items[i].start_time);
                        if (k < 0) {
                                items[i].cookied = k == -ESRCH ? RECONCILE_VANISHED : RECONCILE_FAILED;
                                done[i] = true;
                                if ((k = add(r, items[i].cookied, k == -ESRCH ? 0 : k, NULL, "cookie: tid %d",
                                             (int) items[i].tgid)) < 0)
                                        return k;
                                continue;
                        }
                }
                if (!rc->journal)
                        continue;
                k = journal_record_cookie(rc->journal, items[i].tgid, items[i].start_time);
                if (k == -ENOMEM)
                        return k;
                if (k < 0) {
                        items[i].cookied = RECONCILE_FAILED;
                        done[i] = true;
                        if ((k = add(r, RECONCILE_FAILED, k, "the original could not be journaled: not changed",
                                     "cookie: tid %d", (int) items[i].tgid)) < 0)
                                return k;
                        continue;
                }
                recorded[i] = k > 0;
        }

        /* 2. One commit for the whole batch, before anything changes: the
         *    new entries appended to the journal's log, not the whole journal
         *    rewritten (its cost grows with every process topod placed). */
        if (rc->journal && rc->journal->dirty && rc->journal->dir)
                committed = journal_commit_append(rc->journal);

        /* 3. The moves. */
        if (cgroups) {
                k = cgroup_move_finish(&env, moves, n_moves, rc->journal, prepared < 0 ? prepared : committed, cr);
                if (k == -ENOMEM)
                        return k;
                for (size_t m = 0; m < n_moves; m++) {
                        if (moves[m].item < cr->n)
                                items[move_of[m]].moved = from_cgroup(cr->items[moves[m].item].outcome);
                        /* Kept for its cookie: the same process, pinned a
                         * moment ago (no second pin, no second stat), if it
                         * was moved or there already. */
                        if (moves[m].keep_ref && pidref_is_set(&moves[m].ref) &&
                            (items[move_of[m]].moved == RECONCILE_DONE || items[move_of[m]].moved == RECONCILE_ALREADY))
                                pins[move_of[m]] = &moves[m].ref;
                }
        }

        /* 4. The cookies. */
        for (size_t i = 0; i < n; i++) {
                if (done[i] || items[i].cookie == PLACE_COOKIE_KEEP)
                        continue;
                if (committed < 0 || !rc->cookies) {
                        items[i].cookied = committed < 0 ? RECONCILE_FAILED : RECONCILE_SKIPPED;
                        done[i] = true;
                        if (recorded[i])
                                (void) journal_forget_cookie(rc->journal, items[i].tgid, items[i].start_time);
                        k = committed < 0 ? add(r, RECONCILE_FAILED, committed,
                                                "the journal could not be written: nothing changed", "cookie: tid %d",
                                                (int) items[i].tgid)
                                          : add(r, RECONCILE_SKIPPED, 0, "no cookie applier", "cookie: tid %d",
                                                (int) items[i].tgid);
                        if (k < 0)
                                return k;
                }
        }
        if (rc->cookies && (k = place_cookies(rc, items, n, recorded, done, pins, r)) < 0)
                return k;

        /* 5. The moves checked by their cookie's act: a cookie given was
         *    checked alive after it, one whose thread had gone tells that;
         *    any other (refused, failed) is checked now. */
        if (cgroups) {
                for (size_t m = 0; m < n_moves; m++) {
                        ReconcilePlacement *it = &items[move_of[m]];
                        int alive = it->cookied == RECONCILE_DONE ? 1 : it->cookied == RECONCILE_VANISHED ? 0 : -1;

                        if (moves[m].unchecked)
                                it->moved = from_cgroup(cgroup_move_settle(&env, &moves[m], alive, cr));
                }
                if ((k = add_cgroup_report(r, cr)) < 0)
                        return k;
        }
        /* Entries forgotten above stay dirty until the next commit: on disk
         * they are harmless (restoring them finds nothing to undo). */
        *ret = TAKE_PTR(r);
        return 0;
}

int reconcile_place(const Reconciler *rc, const Plan *plan, ReconcilePlacement *items, size_t n,
                    ReconcileReport **ret) {
        CgroupMove moves_s[RECONCILE_PLACE_STACK];
        size_t move_of_s[RECONCILE_PLACE_STACK];
        bool recorded_s[RECONCILE_PLACE_STACK] = {}, done_s[RECONCILE_PLACE_STACK] = {};
        const PidRef *pins_s[RECONCILE_PLACE_STACK] = {};
        _cleanup_free_ CgroupMove *moves_h = NULL;
        _cleanup_free_ size_t *move_of_h = NULL;
        _cleanup_free_ bool *recorded_h = NULL, *done_h = NULL;
        _cleanup_free_ const PidRef **pins_h = NULL;
        PlaceScratch sc = { moves_s, move_of_s, recorded_s, done_s, pins_s };
        int k;

        if (n > RECONCILE_PLACE_STACK) {
                sc.moves = moves_h = calloc(n, sizeof(CgroupMove));
                sc.move_of = move_of_h = calloc(n, sizeof(size_t));
                sc.recorded = recorded_h = calloc(n, sizeof(bool));
                sc.done = done_h = calloc(n, sizeof(bool));
                sc.pins = pins_h = calloc(n, sizeof(PidRef *));
                if (!moves_h || !move_of_h || !recorded_h || !done_h || !pins_h)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                sc.moves[i] = (CgroupMove) { .ref = PIDREF_NULL };
        k = place_batch(rc, plan, items, n, &sc, ret);
        cgroup_moves_release(sc.moves, n, rc->fds);
        return k;
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
        env = cgroup_env(rc, false);
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
                        if ((k = add(r, ret_waiting && ret_waiting[done + i] ? RECONCILE_SKIPPED
                                                                             : from_cookie(results[i].outcome),
                                     results[i].error,
                                     ret_waiting && ret_waiting[done + i] ? "SMT is off: kept in the journal, "
                                                                            "cleared once SMT is on" : NULL,
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
                return add(r, RECONCILE_FAILED, k, "cannot look for the cookies threads inherited",
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
        if ((k = new_report(&r)) < 0 || (k = clear_inherited(rc, r, rc->journal->cookies, rc->journal->n_cookies)) < 0)
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

        if ((k = new_report(&r)) < 0)
                return k;
        if (!rc->journal)
                return -EINVAL;

        /* Cookies first: clearing needs the tasks, which the cgroup moves
         * do not change. */
        if ((k = restore_cookies(rc, r)) < 0)
                return k;

        if (rc->caps->cgroup2_mount) {
                CgroupEnv env = cgroup_env(rc, false); /* back to cgroups not ours: none held */

                if ((k = cgroup_report_new(&cr)) < 0)
                        return k;
                k = cgroup_restore(&env, rc->journal, cr);
                if (k < 0)
                        (void) add(r, RECONCILE_FAILED, k, NULL, "cgroup restore");
                if ((k = add_cgroup_report(r, cr)) < 0)
                        return k;
        }

        if (rc->caps->debugfs_mount && (rc->journal->n_features > 0 || rc->journal->cgroup_mode || rc->journal->n_settings > 0)) {
                k = feat_restore(rc->root, rc->feat_ops, rc->caps->debugfs_mount, rc->journal, &fr, &n_fr);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < n_fr; i++) {
                        if ((k = add(r, from_feat(fr[i].outcome), fr[i].error, fr[i].reason, "restore %s %s",
                                     feat_kind_to_string(fr[i].kind), fr[i].name)) < 0)
                                return k;
                        if (fr[i].outcome == FEAT_DONE || fr[i].outcome == FEAT_ALREADY)
                                feat_forget(rc->journal, &fr[i]);
                }
        }
        if (rc->journal->dirty && (k = journal_commit(rc->journal)) < 0)
                (void) add(r, RECONCILE_FAILED, k, NULL, "journal commit");
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
