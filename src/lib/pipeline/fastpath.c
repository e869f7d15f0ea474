/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fast path (fastpath.h): which processes to place at once, from the
 * last plan, picked (decide/place.h) from what it reads of each, and
 * handed to apply (reconcile_place()) as one batch; and its hooks, through
 * which a pass lets it in and asks what changed since the scan. Its own
 * file: the state it keeps between the events and the passes is its
 * alone, and the pipeline's other stages only call in. */
#include "fastpath.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "pipeline.h"
#include "pipeline/origin.h"

FastPath *fastpath_free(FastPath *f) {
        if (!f)
                return NULL;
        fd_bin_empty(&f->fds);
        place_state_free(f->place);
        free(f->fresh);
        free(f->waiting);
        free(f->retried);
        free(f->forked);
        free(f->changed);
        free(f->defer_next);
        free(f->deferred);
        free(f->kept_sources);
        free(f->quick);
        free(f->batch);
        free(f->sources);
        free(f);
        return NULL;
}

/* kthreadd: what it forks are kernel threads. */
#define KTHREADD_PID 2

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* When a process to place arrived (FastPath.arrived): the earliest event
 * not placed yet; at_ns 0 (an event without a timestamp) is now. */
static void arrived_note(FastPath *f, pid_t tgid, uint64_t at_ns) {
        size_t i = (size_t) tgid % FASTPATH_ARRIVED_SLOTS;

        if (f->arrived[i].tgid == tgid && f->arrived[i].at_ns > 0 && (at_ns == 0 || f->arrived[i].at_ns <= at_ns))
                return;
        f->arrived[i].tgid = tgid;
        f->arrived[i].at_ns = at_ns ?: now_ns();
}

/* The process was placed (placed), or is no longer the fast path's to
 * place: its arrival forgotten, and a placement's latency counted. */
static void arrived_done(FastPath *f, pid_t tgid, bool placed) {
        size_t i = (size_t) tgid % FASTPATH_ARRIVED_SLOTS;
        uint64_t now;

        if (f->arrived[i].tgid != tgid)
                return;
        if (placed) {
                now = now_ns();
                histogram_observe(&f->placed_latency, now > f->arrived[i].at_ns ? now - f->arrived[i].at_ns : 0);
        }
        f->arrived[i].tgid = 0;
}

/* A process for the fast path, from an event of at_ns. */
static void fresh_add(FastPath *f, pid_t tgid, uint64_t at_ns) {
        if (!f->place || tgid <= 0)
                return;
        if (f->n_fresh < FASTPATH_FRESH_MAX) {
                f->fresh[f->n_fresh++] = tgid;
                arrived_note(f, tgid, at_ns);
        } else
                f->fresh_dropped++; /* marked for the scan: the pass has it */
}

/* Did the fast path read this process after the event happened? Then it
 * saw what the event tells (a pid reused since was read before its fork). */
static bool looked_after(const FastPath *f, pid_t tgid, uint64_t event_ns) {
        size_t i = (size_t) tgid % FASTPATH_LOOKED_SLOTS;

        return event_ns > 0 && f->looked[i].tgid == tgid && f->looked[i].at_ns > event_ns;
}

/* The newest entries are the likely ones: a process that lived for a moment. */
static void fresh_forget(FastPath *f, pid_t tgid) {
        for (size_t i = f->n_fresh; i > 0; i--)
                if (f->fresh[i - 1] == tgid)
                        f->fresh[i - 1] = 0;
        arrived_done(f, tgid, false);
        for (size_t i = f->n_forked; i > 0; i--)
                if (f->forked[i - 1].tgid == tgid)
                        f->forked[i - 1].tgid = 0;
}

/* A new process from its fork on the lazy socket: for the read after this
 * one (FastPath.forked). Its exec, if it comes first, is the placer's: the
 * loop would take the lock from it for a read of the same process, and in
 * an exec storm a lazy read would place dozens at once while the placer,
 * whose exec is what wants placing soonest, waited. */
static void forked_add(FastPath *f, pid_t tgid, uint64_t at_ns) {
        if (!f->place || tgid <= 0)
                return;
        if (f->forked && f->n_forked < FASTPATH_FRESH_MAX)
                f->forked[f->n_forked++] = (FastPathFork) { tgid, at_ns };
        else
                f->fresh_dropped++; /* marked for the scan: the pass has it */
}

static void changed_add(FastPath *f, pid_t tgid) {
        if (f->changed_lost || tgid <= 0)
                return;
        if (f->n_changed == f->changed_cap) {
                size_t n = f->changed_cap ? f->changed_cap * 2 : 64;
                pid_t *nc = n <= FASTPATH_CHANGED_MAX ? realloc(f->changed, n * sizeof(pid_t)) : NULL;

                if (!nc) {
                        f->changed_lost = true; /* every process counts as changed */
                        return;
                }
                f->changed = nc;
                f->changed_cap = n;
        }
        f->changed[f->n_changed++] = tgid;
}

static bool known_changed(FastPath *f, pid_t tgid) {
        if (f->n_deferred > 0 && bsearch(&tgid, f->deferred, f->n_deferred, sizeof(pid_t), compare_pid))
                return true;
        if (f->n_changed_sorted < f->n_changed) {
                size_t u = 0;

                /* Sorted when asked after a change: the events come in
                 * between the asking, seldom. */
                qsort(f->changed, f->n_changed, sizeof(pid_t), compare_pid);
                for (size_t i = 0; i < f->n_changed; i++)
                        if (u == 0 || f->changed[u - 1] != f->changed[i])
                                f->changed[u++] = f->changed[i];
                f->n_changed = f->n_changed_sorted = u;
        }
        return f->n_changed > 0 && bsearch(&tgid, f->changed, f->n_changed, sizeof(pid_t), compare_pid);
}

/* One more process the fast path placed, or whose main thread exited, for
 * pipeline_sample_deferring(). Past FASTPATH_CHANGED_MAX, or without
 * memory, the rest are read as usual. */
static void defer_next_add(FastPath *f, pid_t tgid) {
        if (f->n_defer_next == f->defer_next_cap) {
                size_t n = f->defer_next_cap ? f->defer_next_cap * 2 : 64;
                pid_t *np = n <= FASTPATH_CHANGED_MAX ? realloc(f->defer_next, n * sizeof(pid_t)) : NULL;

                if (!np)
                        return;
                f->defer_next = np;
                f->defer_next_cap = n;
        }
        f->defer_next[f->n_defer_next++] = tgid;
}

bool fastpath_forks_waiting(const FastPath *f) {
        return f->n_forked > 0;
}

bool fastpath_waiting_for_plan(const FastPath *f) {
        return f->n_waiting > 0;
}

bool fastpath_changed(FastPath *f, pid_t tgid) {
        return f->changed_lost || known_changed(f, tgid);
}

/* ── The hooks a pass calls (base/yield.h) ── */

static void yield_trampoline(void *userdata) {
        FastPath *f = userdata;

        if (f->yield)
                f->yield(f->yield_userdata);
}

static bool changed_trampoline(void *userdata, pid_t tgid) {
        return fastpath_changed(userdata, tgid);
}

static bool known_changed_trampoline(void *userdata, pid_t tgid) {
        return known_changed(userdata, tgid);
}

/* Dead, and nothing since the scan says otherwise: a process that took a
 * dead one's number and exec'd since is placed from its exec (a socket
 * read sooner) before its FORK is read, which is what tells the number is
 * in use again. Where the count of what changed was lost, not known. */
static bool dead_trampoline(void *userdata, pid_t tgid) {
        FastPath *f = userdata;

        return !f->changed_lost && !known_changed(f, tgid) && lives_dead(f->observe->lives, tgid);
}

int fastpath_new(const struct PipelineObserve *observe, FastPath **ret) {
        FastPath *f = calloc(1, sizeof(FastPath));

        if (!f)
                return -ENOMEM;
        f->observe = observe;
        f->hooks = (YieldHooks) { .yield = yield_trampoline, .changed = changed_trampoline,
                                  .known_changed = known_changed_trampoline, .dead = dead_trampoline,
                                  .userdata = f };
        *ret = f;
        return 0;
}

void fastpath_set_yield(FastPath *f, void (*yield)(void *userdata), void *userdata) {
        f->yield = yield;
        f->yield_userdata = userdata;
}

const YieldHooks *fastpath_hooks(FastPath *f) {
        return &f->hooks;
}

/* ── What the events tell the fast path ── */

void fastpath_take(FastPath *f, const TaskEvent *ev, FastPathTake step) {
        switch (ev->type) {
        case TASK_EVENT_FORK:
                /* A new thread starts in its process's cgroup with its
                 * creator's cookie: nothing to place, but it counts in its
                 * group's load. A new process may belong elsewhere than its
                 * parent (spread, a cookie per process, another policy). */
                if (ev->pid != ev->tgid) {
                        if (f->place)
                                place_note_thread(f->place, ev->tgid);
                } else {
                        changed_add(f, ev->tgid);
                        if (ev->parent_tgid == KTHREADD_PID || looked_after(f, ev->tgid, ev->timestamp_ns))
                                break;
                        if (f->forks_lazy)
                                forked_add(f, ev->tgid, ev->timestamp_ns);
                        else
                                fresh_add(f, ev->tgid, ev->timestamp_ns);
                }
                break;
        case TASK_EVENT_EXIT:
                /* Its main thread ended: an exec storm's scan may leave it
                 * to the next (gone by then, or a zombie; one that lives on
                 * in other threads is read then). */
                if (ev->pid == ev->tgid)
                        defer_next_add(f, ev->tgid);
                if (f->place)
                        place_note_exit(f->place, ev->tgid, ev->pid);
                /* Its main thread ended: the process is gone (or lives on
                 * in other threads, then the next pass has it). Nothing for
                 * the fast path to place. */
                if (ev->pid == ev->tgid)
                        fresh_forget(f, ev->tgid);
                break;
        case TASK_EVENT_EXEC:
                if (step != FASTPATH_TAKE_FRESH)
                        changed_add(f, ev->tgid);
                if (step != FASTPATH_TAKE_REST && !looked_after(f, ev->tgid, ev->timestamp_ns))
                        fresh_add(f, ev->tgid, ev->timestamp_ns);
                break;
        case TASK_EVENT_COMM:
                if (ev->pid == ev->tgid)
                        changed_add(f, ev->tgid);
                /* A process that renamed itself (its main thread) may
                 * match another policy now. Only one the last scan saw as
                 * a user process: kernel threads rename themselves all the
                 * time (kworkers, per work item) and cannot be moved. One
                 * newer than the scan is the next pass's. */
                if (ev->pid == ev->tgid && f->place && f->observe->snap) {
                        const TaskFacts *t = task_snapshot_find(f->observe->snap, ev->pid);

                        if (t && !t->kernel_thread && !looked_after(f, ev->tgid, ev->timestamp_ns))
                                fresh_add(f, ev->tgid, ev->timestamp_ns);
                }
                break;
        default:
                break;
        }
}

void fastpath_take_forks(FastPath *f) {
        /* The forks the last read brought: those not read by the fast
         * path since (no exec, or not yet placed from it) are its now. */
        for (size_t i = 0; i < f->n_forked; i++)
                if (f->forked[i].tgid > 0 && !looked_after(f, f->forked[i].tgid, f->forked[i].at_ns))
                        fresh_add(f, f->forked[i].tgid, f->forked[i].at_ns);
        f->n_forked = 0;
}

void fastpath_scan_begin(FastPath *f, bool defer) {
        /* The list so far, the scan's: the fast path placing during the
         * scan's yields starts a new one for the next. */
        pid_t *placed;
        size_t n_defer = 0, n_placed;

        fd_bin_empty(&f->fds); /* the fast path's since the last */
        placed = TAKE_PTR(f->defer_next);
        n_placed = f->n_defer_next;
        f->n_defer_next = f->defer_next_cap = 0;
        /* The scan sees the new processes: the pass places them. */
        f->n_fresh = 0;
        f->fresh_dropped = 0;
        f->n_waiting = f->n_retried = 0;
        f->n_forked = 0;
        memset(f->arrived, 0, sizeof(f->arrived));
        /* What changes from here on, the scan may have read before. */
        f->n_changed = f->n_changed_sorted = 0;
        f->changed_lost = false;
        if (defer) {
                /* Left to the next scan: the placed and the exited processes
                 * the last one did not see. They count as changed (pipeline_changed())
                 * until the next scan: the pass leaves them alone. */
                if (n_placed > 0)
                        qsort(placed, n_placed, sizeof(pid_t), compare_pid);
                for (size_t i = 0; i < n_placed; i++)
                        if ((n_defer == 0 || placed[n_defer - 1] != placed[i]) &&
                            !(f->observe->snap && task_snapshot_find(f->observe->snap, placed[i])))
                                placed[n_defer++] = placed[i];
        }
        free(f->deferred);
        f->deferred = placed;
        f->n_deferred = n_defer;
}

void fastpath_policies_changed(FastPath *f) {
        f->n_kept = 0;        /* indexes of the old set */
        f->policies = NULL;   /* the old set is freed: never read again */
}

/* ── Placing ── */

int fastpath_use_plan(FastPath *f, const Plan *plan, const PolicySet *policies, const bool *in_force,
                      const Scope *scope) {
        int k;

        if (f->place && f->policies) {
                /* The fast path's cookie sources, for the next plan's (a
                 * storm pass's plan may have no member of a group to join:
                 * without them the next process would start a cookie of
                 * its own, the group split until the next pass). */
                PlaceSource *ks = realloc(f->kept_sources, MAX(f->policies->n, (size_t) 1) * sizeof(PlaceSource));

                if (ks) {
                        f->kept_sources = ks;
                        place_fresh_sources(f->place, ks);
                        f->n_kept = f->policies->n;
                } else
                        f->n_kept = 0;
        }
        f->place = place_state_free(f->place);
        f->plan = plan;
        f->n_fresh = 0;
        f->fresh_dropped = 0;
        /* Looks under another plan tell nothing about this one. */
        memset(f->looked, 0, sizeof(f->looked));
        if (!plan)
                return 0; /* the waiting wait for the next plan */
        /* The buffers, once. */
        if (!f->fresh)
                f->fresh = calloc(FASTPATH_FRESH_MAX, sizeof(pid_t));
        if (!f->waiting)
                f->waiting = calloc(FASTPATH_FRESH_MAX, sizeof(pid_t));
        if (!f->retried)
                f->retried = calloc(FASTPATH_FRESH_MAX, sizeof(pid_t));
        if (!f->forked)
                f->forked = calloc(FASTPATH_FRESH_MAX, sizeof(FastPathFork));
        if (!f->quick && (f->quick = calloc(1, sizeof(TaskQuick))))
                f->quick->bin = &f->fds;
        if (!f->batch)
                f->batch = calloc(FASTPATH_FRESH_MAX, sizeof(ReconcilePlacement));
        if (!f->sources)
                f->sources = calloc(FASTPATH_FRESH_MAX * (PLACE_COOKIE_SOURCES_MAX + 1), sizeof(CookieTask));
        if (!f->fresh || !f->waiting || !f->retried || !f->forked || !f->quick || !f->batch || !f->sources)
                return -ENOMEM;
        /* Those that waited for a group: this plan may have it. */
        memcpy(f->fresh, f->waiting, f->n_waiting * sizeof(pid_t));
        memcpy(f->retried, f->waiting, f->n_waiting * sizeof(pid_t));
        f->n_fresh = f->n_retried = f->n_waiting;
        f->n_waiting = 0;
        qsort(f->retried, f->n_retried, sizeof(pid_t), compare_pid);
        f->policies = policies;
        k = place_state_new(plan, policies, in_force, scope, f->observe->topology, &f->place);
        if (k < 0)
                return k;
        place_set_fresh_sources(f->place, f->kept_sources, f->n_kept);
        return 0;
}

/* PLACE_FACT() bits to TASK_QUICK_* bits. */
static unsigned quick_fields(unsigned facts) {
        static const unsigned map[_POLICY_MATCH_FIELD_MAX] = {
                [POLICY_MATCH_COMM] = TASK_QUICK_COMM,     [POLICY_MATCH_EXE] = TASK_QUICK_EXE,
                [POLICY_MATCH_CMDLINE] = TASK_QUICK_CMDLINE, [POLICY_MATCH_CGROUP] = TASK_QUICK_CGROUP,
                [POLICY_MATCH_USER] = TASK_QUICK_UID,      [POLICY_MATCH_PARENT] = TASK_QUICK_PARENT,
                [POLICY_MATCH_UNIT] = TASK_QUICK_CGROUP,
        };
        unsigned f = 0;

        for (unsigned i = 0; i < _POLICY_MATCH_FIELD_MAX; i++)
                if (facts & PLACE_FACT(i))
                        f |= map[i];
        return f;
}

/* What [match] sees of it, as pipeline_policy_task() for a scanned task. */
static void quick_policy_task(const FastPath *f, const TaskQuick *q, PolicyTask *ret) {
        *ret = (PolicyTask) {
                .class = POLICY_CLASS_OTHER, /* never looked at: see place.h */
                .comm = q->comm,
                .exe = q->exe,
                .cmdline = q->cmdline,
                /* judged where it came from, as the planner does */
                .cgroup = origin_cgroup(f->journal, f->plan ? f->plan->cgroup_root : NULL, f->observe->snap, q->pid,
                                        q->start_time, q->ppid, q->cgroup),
                .user = q->has_uid ? users_name(f->observe->users, q->uid) : NULL,
                .parent = q->parent_comm,
                .uid = q->uid,
                .tgid = q->pid,
        };
}

/* Decide for one process, reading what the decision needs: comm, and more
 * only where a policy asks. Who it is (its start time) is learned by the
 * apply step when it takes a handle on it. comm, not stat: the first read
 * of a new process's /proc entry is the dear one, and stat's costs about
 * twice comm's, for every exec, matched or not. It is one thread right
 * after exec or fork. */
static void pick_one(FastPath *f, pid_t tgid, PlaceProcess *pp, PlacePick *pick) {
        TaskQuick *q = f->quick;

        *pp = (PlaceProcess) {
                .tgid = tgid,
                .n_threads = 1,
                .have = PLACE_FACT_COMM,
                /* Waited for the pass that made its group, which left it
                 * alone: placed now from its plan, not taken as placed. */
                .unapplied = f->n_retried > 0 && bsearch(&tgid, f->retried, f->n_retried, sizeof(pid_t), compare_pid),
        };
        *pick = (PlacePick) { .verdict = PLACE_NONE, .policy = -1, .group = -1, .cookie_group = -1 };
        task_quick_reset(q, tgid);
        /* Before the read: what happened before this moment, it sees. */
        f->looked[(size_t) tgid % FASTPATH_LOOKED_SLOTS].tgid = tgid;
        f->looked[(size_t) tgid % FASTPATH_LOOKED_SLOTS].at_ns = now_ns();
        if (tasks_read_quick(f->observe->root, TASK_QUICK_COMM, q) < 0)
                return; /* gone already */
        for (;;) {
                quick_policy_task(f, q, &pp->match);
                place_pick(f->place, pp, pick);
                if (pick->verdict != PLACE_NEED_FACTS)
                        return;
                if (tasks_read_quick(f->observe->root, quick_fields(pick->need), q) < 0)
                        break;
                /* In topod's tree: judged by where it came from, which its
                 * parent's start time and ppid lead to (origin.h). */
                if (q->cgroup && !(q->have & TASK_QUICK_STAT) && f->plan && f->journal &&
                    strncmp(q->cgroup, f->plan->cgroup_root, strlen(f->plan->cgroup_root)) == 0 &&
                    tasks_read_quick(f->observe->root, TASK_QUICK_STAT, q) < 0)
                        break;
                pp->have |= pick->need;
        }
        pick->verdict = PLACE_NONE;
}

/* Each process once (FORK and EXEC of one process in one burst): the
 * count of fresh left. */
static size_t fresh_unique(FastPath *f, size_t n) {
        if (n > 1) {
                size_t u = 0;

                qsort(f->fresh, n, sizeof(pid_t), compare_pid);
                for (size_t i = 0; i < n; i++)
                        if (f->fresh[i] > 0 && (u == 0 || f->fresh[u - 1] != f->fresh[i]))
                                f->fresh[u++] = f->fresh[i];
                return u;
        }
        if (n == 1 && f->fresh[0] <= 0)
                return 0; /* gone already (fresh_forget()) */
        return n;
}

/* The placements of fresh[0, n), picked one by one into f->batch (each
 * counted in the loads before the next is picked). How many. */
static size_t pick_batch(FastPath *f, size_t n, FastPathStats *st) {
        size_t nb = 0;

        for (size_t i = 0; i < n; i++) {
                ReconcilePlacement *b = &f->batch[nb];
                CookieTask *src = &f->sources[nb * (PLACE_COOKIE_SOURCES_MAX + 1)];
                PlaceSource ps[PLACE_COOKIE_SOURCES_MAX + 1];
                PlaceProcess pp;
                PlacePick pick;
                size_t n_src;

                st->seen++;
                pick_one(f, f->fresh[i], &pp, &pick);
                st->kernel += pick.kernel;
                switch (pick.verdict) {
                case PLACE_GROUP:
                        break;
                case PLACE_PLANNED:
                        st->planned++;
                        arrived_done(f, pp.tgid, false);
                        continue;
                case PLACE_NEED_PASS:
                        if (f->waiting && f->n_waiting < FASTPATH_FRESH_MAX) {
                                f->waiting[f->n_waiting++] = pp.tgid;
                                st->waiting++;
                        }
                        st->left++;
                        continue;
                case PLACE_WAIT_CLASS:
                        st->left++;
                        arrived_done(f, pp.tgid, false);
                        continue;
                default:
                        st->unmatched++;
                        arrived_done(f, pp.tgid, false);
                        continue;
                }
                n_src = place_cookie_sources(f->place, &pick, ps, ELEMENTSOF(ps));
                for (size_t s = 0; s < n_src; s++)
                        src[s] = (CookieTask) { ps[s].tid, ps[s].start_time };
                *b = (ReconcilePlacement) {
                        .tgid = pp.tgid,
                        .start_time = pp.start_time,
                        .policy = pick.policy,
                        .group = pick.group,
                        .cookie = pick.cookie,
                        .cookie_group = pick.cookie_group,
                        .sources = src,
                        .n_sources = n_src,
                };
                /* Counted now, so that the next pick of this burst sees it. */
                place_commit(f->place, &pick, pp.tgid, pp.n_threads);
                nb++;
        }
        return nb;
}

/* What came of the batch (k: reconcile_place()'s): counted, and the loads
 * and cookie sources kept as the next picks need them. */
static void batch_outcome(FastPath *f, size_t nb, int k, FastPathStats *st) {
        for (size_t i = 0; i < nb; i++) {
                const ReconcilePlacement *b = &f->batch[i];
                bool moved = k >= 0 && (b->moved == RECONCILE_DONE || b->moved == RECONCILE_ALREADY);
                bool cookied = k >= 0 && (b->cookied == RECONCILE_DONE || b->cookied == RECONCILE_ALREADY);

                arrived_done(f, b->tgid, moved && cookied);
                if (moved && cookied)
                        st->placed++;
                else if (k >= 0 && (b->moved == RECONCILE_VANISHED || b->cookied == RECONCILE_VANISHED))
                        st->vanished++; /* lived for a moment: no pass needed for it */
                else
                        st->left++;
                if (!moved) /* not in the group after all */
                        place_note_exit(f->place, b->tgid, b->tgid);
                else
                        defer_next_add(f, b->tgid);
                /* It has the group's cookie: a source for the next. */
                if (b->cookie == PLACE_COOKIE_JOIN && cookied)
                        place_note_cookie(f->place, b->policy, b->tgid, b->start_time);
        }
}

int fastpath_place(FastPath *f, const Reconciler *rc_in, FastPathStats *ret_stats, ReconcileReport **ret) {
        FastPathStats st = { .left = f->fresh_dropped };
        /* What it opens (comm, the pins, the cgroup files) is closed
         * together after the batch: one system call, not one each. */
        Reconciler rc = *rc_in;
        size_t n = f->n_fresh, nb = 0;
        int k = 0;

        rc.fds = &f->fds;
        f->journal = rc_in->journal; /* for origin_cgroup(), while it picks */

        *ret = NULL;
        f->n_batch = 0;
        f->n_fresh = 0;
        f->fresh_dropped = 0;
        if (!f->place || n == 0) {
                st.left += (unsigned) n;
                goto finish;
        }
        n = fresh_unique(f, n);
        nb = pick_batch(f, n, &st);
        if (nb == 0)
                goto finish;

        k = reconcile_place(&rc, f->plan, f->batch, nb, ret);
        f->n_batch = k >= 0 ? nb : 0;
        batch_outcome(f, nb, k, &st);
        if (k < 0)
                goto finish;
        k = 1;
finish:
        if (f->fds.n >= FASTPATH_FDS_CLOSE_AT)
                fd_bin_empty(&f->fds);
        if (ret_stats)
                *ret_stats = st;
        return k;
}
