/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fast path's writes: a batch of new processes placed from the last
 * plan (reconcile_place(), reconcile.h), their originals journaled and
 * committed once, then the moves, then the cookies. Its own file beside
 * reconcile.c, not in pipeline/fastpath.c with the rest of the fast path:
 * these are changes to the machine (cgroup.procs, PR_SCHED_CORE, the
 * journal), and apply is the only writer. The fast path's module picks
 * the batch and reads what came of it; everything it changes goes through
 * here, journaled as the pass's changes are. */
#include "reconcile-internal.h"

#include <stdlib.h>

#include "base/util.h"

static int place_report_cookie(ReconcileReport *r, const ReconcilePlacement *it, const CookieResult *res) {
        if (it->cookie == PLACE_COOKIE_NEW)
                return reconcile_add(r, reconcile_from_cookie(res->outcome), res->error, NULL, "cookie (process): tid %d",
                                     (int) it->tgid);
        if (it->cookie_group >= 0)
                return reconcile_add(r, reconcile_from_cookie(res->outcome), res->error, NULL, "cookie group %d: tid %d",
                                     it->cookie_group, (int) it->tgid);
        return reconcile_add(r, reconcile_from_cookie(res->outcome), res->error, NULL,
                             "cookie group (new, policy %d): tid %d", it->policy, (int) it->tgid);
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
                                                          .whole_process = true, .pinned = pins[j],
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

                        it->cookied = reconcile_from_cookie(results[t].outcome);
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

/* One batch as place_batch()'s steps hand it on. */
typedef struct PlaceBatch {
        const Reconciler *rc;
        const Plan *plan;
        ReconcilePlacement *items;
        size_t n;
        const PlaceScratch *sc;
        ReconcileReport *r;
        CgroupReport *cr;
        CgroupEnv env;
        bool cgroups;   /* cgroup2 is mounted */
        size_t n_moves; /* sc->moves in use; sc->move_of[m]: its item */
        int prepared;   /* cgroup_move_prepare()'s */
        int committed;  /* the journal's commit */
} PlaceBatch;

/* Each placement's move into its group (none for a group the plan lacks). */
static int batch_moves(PlaceBatch *pb) {
        const Reconciler *rc = pb->rc;
        const Plan *plan = pb->plan;
        int k;

        for (size_t i = 0; i < pb->n; i++) {
                ReconcilePlacement *it = &pb->items[i];

                it->moved = RECONCILE_SKIPPED;
                it->cookied = it->cookie == PLACE_COOKIE_KEEP ? RECONCILE_ALREADY : RECONCILE_SKIPPED;
                if (it->group < 0 || (size_t) it->group >= plan->n_groups) {
                        it->moved = RECONCILE_FAILED;
                        if ((k = reconcile_add(pb->r, RECONCILE_FAILED, -EINVAL, "no such group in the plan",
                                               "cgroup: move process %d", (int) it->tgid)) < 0)
                                return k;
                        continue;
                }
                /* The systemd driver moves nothing here (no bus call):
                 * placed already (forked in a unit topod placed), or
                 * left to the next pass. */
                if (rc->unit_ops) {
                        if (unit_process_placed(rc->root, plan, it->group, rc->journal, it->tgid))
                                it->moved = RECONCILE_ALREADY;
                        continue;
                }
                /* A cookie's journal entry and its later checks name the
                 * process as the move does: by its pidfd's inode where
                 * the cookie applier checks those (the pass names it by
                 * its start time once it has read it: name_fast_cookies()),
                 * else by its start time, which the move learns for them
                 * (a read of /proc/PID/stat: three system calls more). */
                pb->sc->moves[pb->n_moves] = (CgroupMove) {
                        .tgid = it->tgid, .start_time = it->start_time,
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
                pb->sc->move_of[pb->n_moves++] = i;
        }
        return 0;
}

/* The cookies' originals: who each process is (learned by its move's
 * handle, else read), journaled before anything changes. */
static int batch_cookie_originals(PlaceBatch *pb) {
        const Reconciler *rc = pb->rc;
        ReconcilePlacement *items = pb->items;
        bool *recorded = pb->sc->recorded, *done = pb->sc->done;
        int k;

        /* Who each process is: learned by the moves' handles where the
         * caller did not know (start time 0). */
        for (size_t m = 0; m < pb->n_moves; m++)
                if (items[pb->sc->move_of[m]].start_time == 0)
                        items[pb->sc->move_of[m]].start_time = pb->sc->moves[m].start_time;
        for (size_t i = 0; i < pb->n && rc->cookies; i++) {
                if (items[i].cookie == PLACE_COOKIE_KEEP)
                        continue;
                if (items[i].start_time == 0) {
                        /* No move took a handle (gone before, or no cgroup2). */
                        k = pidref_read_start_time(rc->root, -1, items[i].tgid, &items[i].start_time);
                        if (k < 0) {
                                items[i].cookied = k == -ESRCH ? RECONCILE_VANISHED : RECONCILE_FAILED;
                                done[i] = true;
                                if ((k = reconcile_add(pb->r, items[i].cookied, k == -ESRCH ? 0 : k, NULL,
                                                       "cookie: tid %d", (int) items[i].tgid)) < 0)
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
                        if ((k = reconcile_add(pb->r, RECONCILE_FAILED, k,
                                               "the original could not be journaled: not changed", "cookie: tid %d",
                                               (int) items[i].tgid)) < 0)
                                return k;
                        continue;
                }
                recorded[i] = k > 0;
        }
        return 0;
}

/* 1. Originals: where each process is, and the cookies about to change. */
static int batch_originals(PlaceBatch *pb) {
        const Reconciler *rc = pb->rc;
        int k;

        if (pb->cgroups) {
                pb->prepared = cgroup_move_prepare(&pb->env, pb->plan->cgroup_root, pb->sc->moves, pb->n_moves,
                                                   rc->journal, pb->cr);
                if (pb->prepared == -ENOMEM) {
                        (void) cgroup_move_finish(&pb->env, pb->sc->moves, pb->n_moves, rc->journal, pb->prepared,
                                                  pb->cr);
                        return pb->prepared;
                }
                if (pb->prepared < 0 &&
                    (k = reconcile_add(pb->r, RECONCILE_FAILED, pb->prepared, NULL, "cgroup moves")) < 0)
                        return k;
        } else if (pb->n_moves > 0 && !rc->unit_ops && (k = reconcile_add(pb->r, RECONCILE_SKIPPED, rc->caps->cgroup2.error,
                                                         rc->caps->cgroup2.reason, "cgroup moves")) < 0)
                return k;
        return batch_cookie_originals(pb);
}

/* 2. One commit for the whole batch, before anything changes: the new
 *    entries appended to the journal's log, not the whole journal
 *    rewritten (its cost grows with every process topod placed). */
static void batch_commit(PlaceBatch *pb) {
        Journal *j = pb->rc->journal;

        if (j && j->dirty && j->dir)
                pb->committed = journal_commit_append(j);
}

/* 3. The moves. */
static int batch_finish_moves(PlaceBatch *pb) {
        ReconcilePlacement *items = pb->items;
        CgroupMove *moves = pb->sc->moves;
        const size_t *move_of = pb->sc->move_of;
        int k;

        if (!pb->cgroups)
                return 0;
        k = cgroup_move_finish(&pb->env, moves, pb->n_moves, pb->rc->journal,
                               pb->prepared < 0 ? pb->prepared : pb->committed, pb->cr);
        if (k == -ENOMEM)
                return k;
        for (size_t m = 0; m < pb->n_moves; m++) {
                if (moves[m].item < pb->cr->n)
                        items[move_of[m]].moved = reconcile_from_cgroup(pb->cr->items[moves[m].item].outcome);
                /* Kept for its cookie: the same process, pinned a
                 * moment ago (no second pin, no second stat), if it
                 * was moved or there already. */
                if (moves[m].keep_ref && pidref_is_set(&moves[m].ref) &&
                    (items[move_of[m]].moved == RECONCILE_DONE || items[move_of[m]].moved == RECONCILE_ALREADY))
                        pb->sc->pins[move_of[m]] = &moves[m].ref;
        }
        return 0;
}

/* 4. The cookies (none where the journal could not be written, or
 *    without a cookie applier). */
static int batch_cookies(PlaceBatch *pb) {
        const PlaceScratch *sc = pb->sc;
        bool applier = pb->rc->cookies != NULL;
        int k;

        for (size_t i = 0; i < pb->n; i++) {
                ReconcilePlacement *it = &pb->items[i];

                if (sc->done[i] || it->cookie == PLACE_COOKIE_KEEP || (pb->committed >= 0 && applier))
                        continue;
                it->cookied = pb->committed < 0 ? RECONCILE_FAILED : RECONCILE_SKIPPED;
                sc->done[i] = true;
                if (sc->recorded[i])
                        (void) journal_forget_cookie(pb->rc->journal, it->tgid, it->start_time);
                k = pb->committed < 0 ? reconcile_add(pb->r, RECONCILE_FAILED, pb->committed,
                                                      "the journal could not be written: nothing changed",
                                                      "cookie: tid %d", (int) it->tgid)
                                      : reconcile_add(pb->r, RECONCILE_SKIPPED, 0, "no cookie applier", "cookie: tid %d",
                                                      (int) it->tgid);
                if (k < 0)
                        return k;
        }
        if (applier && (k = place_cookies(pb->rc, pb->items, pb->n, sc->recorded, sc->done, sc->pins, pb->r)) < 0)
                return k;
        return 0;
}

/* 5. The moves checked by their cookie's act: a cookie given was
 *    checked alive after it, one whose thread had gone tells that;
 *    any other (refused, failed) is checked now. */
static int batch_settle(PlaceBatch *pb) {
        if (!pb->cgroups)
                return 0;
        for (size_t m = 0; m < pb->n_moves; m++) {
                ReconcilePlacement *it = &pb->items[pb->sc->move_of[m]];
                int alive = it->cookied == RECONCILE_DONE ? 1 : it->cookied == RECONCILE_VANISHED ? 0 : -1;

                if (pb->sc->moves[m].unchecked)
                        it->moved = reconcile_from_cgroup(
                                cgroup_move_settle(&pb->env, &pb->sc->moves[m], alive, pb->cr));
        }
        return reconcile_add_cgroup_report(pb->r, pb->cr);
}

static int place_batch(const Reconciler *rc, const Plan *plan, ReconcilePlacement *items, size_t n,
                       const PlaceScratch *sc, ReconcileReport **ret) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        _cleanup_(cgroup_report_clear) CgroupReport crs = {};
        /* Under the systemd driver no move here: no bus round trip in the
         * fast path (batch_moves()). */
        PlaceBatch pb = { .rc = rc, .plan = plan, .items = items, .n = n, .sc = sc, .cr = &crs,
                          .env = reconcile_cgroup_env(rc, true),
                          .cgroups = rc->caps->cgroup2_mount != NULL && !rc->unit_ops };
        int k;

        if ((k = reconcile_new_report(&r)) < 0)
                return k;
        r->failures_only = true;
        pb.r = r;
        if ((k = batch_moves(&pb)) < 0 || (k = batch_originals(&pb)) < 0)
                return k;
        batch_commit(&pb);
        if ((k = batch_finish_moves(&pb)) < 0 || (k = batch_cookies(&pb)) < 0 || (k = batch_settle(&pb)) < 0)
                return k;
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
