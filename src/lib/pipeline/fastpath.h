/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The fast path: a process that exec'd (or a new process, FORK with
 * pid == tgid; or one the last scan saw that renamed itself, COMM of its
 * main thread) is placed at once from the last plan (decide/place.h),
 * without a scan or a re-plan; the next normal pass checks it and corrects
 * what the fast path got wrong. New threads (FORK with pid != tgid) need
 * nothing: they start in their process's cgroup and with the cookie of the
 * thread that made them (the events keep the groups' loads up to date,
 * with the exits). Children of kthreadd are kernel threads: not looked at.
 *
 * This module keeps what that needs between the events and the passes:
 * the processes to place, the last plan's view (PlaceState), its read
 * buffers and descriptors, and what changed since the scan began. It
 * decides and reads; apply writes (reconcile_place(), apply/reconcile-fast.c).
 * Its hooks (base/yield.h) are how a pass lets it in between processes and
 * asks what to leave alone. The pipeline calls in from its event intake,
 * its scans and its reloads; the daemon drives it through pipeline.h
 * (pipeline_use_plan(), pipeline_place_fresh(), pipeline_set_yield()),
 * in this order:
 *   pass:    pipeline_sample → pipeline_plan → reconcile_apply →
 *            pipeline_use_plan(p, plan) with the plan just applied (the
 *            daemon keeps it, as it does for explain, and calls
 *            pipeline_use_plan() again before it frees it: with the next
 *            applied plan, or NULL — e.g. while paused, when plans are
 *            not applied)
 *   events:  pipeline_drain_events → pipeline_place_fresh → arm the pass
 *            soon only when it returned < 0 or left something (left,
 *            kernel); else the periodic pass checks what it did (a pass
 *            per burst would cost far more CPU than the placements)
 * pipeline_drain_events remembers the processes (at most
 * FASTPATH_FRESH_MAX; more are the next pass's) only while a plan is in
 * use; it still marks them for the next scan as before. pipeline_sample
 * forgets them: its scan sees them. pipeline_reload stops using the plan
 * (its policy indices are the old set's): no fast path until the next
 * pass's pipeline_use_plan().
 *
 * The ticket lock that keeps the placer thread and the pass apart is the
 * daemon's: everything here runs under it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "apply/reconcile.h"
#include "base/histogram.h"
#include "base/macro.h"
#include "base/util.h"
#include "base/yield.h"
#include "observe/events.h"
#include "observe/tasks.h"

/* New processes remembered for the fast path between two calls; more are
 * left to the normal pass. */
#define FASTPATH_FRESH_MAX 1024u
/* The fast path's used descriptors (comm's, the pin's, the cgroup file's)
 * are closed once this many are held, by close_range() over each run of
 * consecutive numbers, and at each sample: in an exec storm one system call
 * for a dozen placements, not one for each (on an emulated guest a system
 * call is dear). */
#define FASTPATH_FDS_CLOSE_AT (FD_BIN_MAX / 2)
/* When the fast path last read a process: one slot per pid modulo this. */
#define FASTPATH_LOOKED_SLOTS 256u
/* Processes remembered as changed since the scan (pipeline_changed());
 * beyond that, every process counts as changed. */
#define FASTPATH_CHANGED_MAX 65536u
/* When the processes to place arrived: one slot per pid modulo this. */
#define FASTPATH_ARRIVED_SLOTS FASTPATH_FRESH_MAX

/* A new process as its fork told it. */
typedef struct FastPathFork {
        pid_t tgid;
        uint64_t at_ns; /* the fork's timestamp (CLOCK_MONOTONIC) */
} FastPathFork;

typedef struct FastPathStats {
        unsigned seen;      /* processes looked at */
        unsigned unmatched; /* no policy takes them, or gone, or kernel threads */
        unsigned planned;   /* the last plan (or the fast path, earlier) places them already */
        unsigned placed;    /* moved and cookied by the fast path (done or already so) */
        unsigned vanished;  /* exited before it was moved or cookied: nothing left to do */
        unsigned left;      /* for the normal pass: no group yet, class needed, failed,
                             * or more than FASTPATH_FRESH_MAX */
        unsigned waiting;   /* of left: no group yet, and remembered to be placed from
                             * the next plan (pipeline_use_plan()) */
        unsigned kernel;    /* matched by a policy without [place] that sets nothing yet:
                             * kernel-wide settings may change (the normal pass's job) */
} FastPathStats;

/* How much of an event the fast path takes (fastpath_take()). */
typedef enum FastPathTake {
        FASTPATH_TAKE_ALL,
        FASTPATH_TAKE_FRESH, /* of execs alone: only the processes to place */
        FASTPATH_TAKE_REST,  /* the same execs after their placement: the rest */
} FastPathTake;

struct PipelineObserve;

/* The fast path's state (fastpath_new()). Fields: the module's, and its
 * tests'. */
typedef struct FastPath {
        const struct PipelineObserve *observe; /* the pipeline's: what it reads (root, users, the last
                                                * scan, who died whole, the topology) */
        const PolicySet *policies;             /* the set place was made with */
        const Journal *journal;                /* fastpath_place()'s, while it picks: where moved processes came from */
        /* The last plan, what it reads of it, and the processes that
         * exec'd or were born since the last call. */
        const Plan *plan;    /* the last plan applied (the caller's: see pipeline_use_plan()) */
        PlaceState *place;   /* NULL: no fast path */
        pid_t *fresh;
        size_t n_fresh;
        unsigned fresh_dropped;
        /* Those whose policy had no group in the plan in force
         * (PLACE_NEED_PASS) since the last scan began: placed again from
         * the next plan (pipeline_use_plan()), not left for the scan of
         * the pass after it. At most FASTPATH_FRESH_MAX; more wait for a
         * scan. */
        pid_t *waiting;
        size_t n_waiting;
        /* Those handed from waiting to the fast path by the last
         * pipeline_use_plan(), sorted, until the next scan: the plan may
         * have them (the scan read them), but the pass left them alone
         * (changed since its scan began), so its plan's word that they
         * are placed (PLACE_PLANNED) is not taken: the fast path places
         * them (PlaceProcess.unapplied). */
        pid_t *retried;
        size_t n_retried;
        /* New processes from their fork, where forks come on a socket of
         * their own (read every 200 ms in a burst): looked at by the next
         * lazy read, not this one, unless the fast path read them since
         * their fork (their exec: the placer's). At most FASTPATH_FRESH_MAX;
         * more wait for a scan. */
        FastPathFork *forked;
        size_t n_forked;
        bool forks_lazy; /* forks come on the lazy socket (the kernel splits the events) */
        /* When the fast path last read each process (by pid, a slot each:
         * the newest wins): an event older than that read (the fork or exec
         * an exec storm's lazier socket brings late) was seen by it. */
        struct {
                pid_t tgid;
                uint64_t at_ns; /* CLOCK_MONOTONIC, as the events' timestamps */
        } looked[FASTPATH_LOOKED_SLOTS];
        /* When each process to place arrived (its event's timestamp,
         * CLOCK_MONOTONIC), one slot per pid (the newest process wins),
         * kept until it is placed or no longer the fast path's (emptied
         * at each scan), and from there to each placement (topod's
         * metrics: exec → placed). */
        struct {
                pid_t tgid;
                uint64_t at_ns;
        } arrived[FASTPATH_ARRIVED_SLOTS];
        Histogram placed_latency;
        TaskQuick *quick;    /* read buffers, reused */
        FdBin fds;           /* the fast path's descriptors, closed together
                              * (base/util.h) once FASTPATH_FDS_CLOSE_AT are
                              * held after a pipeline_place_fresh(), and by each
                              * sample */
        ReconcilePlacement *batch;
        size_t n_batch;      /* of the last fastpath_place(), as reconcile_place() left them */
        CookieTask *sources; /* PLACE_COOKIE_SOURCES_MAX per batch entry */

        /* A pass that lets the fast path in (pipeline_set_yield()): the
         * hooks its scan and its apply call, and the processes that
         * exec'd, renamed themselves or were born since the scan began. */
        YieldHooks hooks;
        void (*yield)(void *userdata);
        void *yield_userdata;
        pid_t *changed;
        size_t n_changed, changed_cap, n_changed_sorted;
        bool changed_lost;

        /* The processes the fast path placed, or whose main thread
         * exited, since the last scan began, which
         * pipeline_sample_deferring() leaves to the next scan if new since
         * the last, and those the last scan left (sorted; the pass leaves
         * them alone). */
        pid_t *defer_next;
        size_t n_defer_next, defer_next_cap;
        pid_t *deferred;
        size_t n_deferred;
        /* The fast path's last cookie source of each policy (PlaceState),
         * carried from one plan to the next: a storm's plan may have no
         * member of a group to join. n_kept 0: none. */
        PlaceSource *kept_sources;
        size_t n_kept;
} FastPath;

/* The fast path of a pipeline, which reads what observe holds. The hooks
 * are there from here on (their userdata is the FastPath). */
int fastpath_new(const struct PipelineObserve *observe, FastPath **ret);
FastPath *fastpath_free(FastPath *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(FastPath *, fastpath_free);

const YieldHooks *fastpath_hooks(FastPath *f);
/* What the hooks' yield calls (NULL: nothing). */
void fastpath_set_yield(FastPath *f, void (*yield)(void *userdata), void *userdata);
/* As pipeline_changed(). */
bool fastpath_changed(FastPath *f, pid_t tgid);

/* One event (the scan's marks are the pipeline's). */
void fastpath_take(FastPath *f, const TaskEvent *ev, FastPathTake step);
/* The forks the last lazy read brought: the fast path's now, unless it
 * read them since (their exec). */
void fastpath_take_forks(FastPath *f);
bool fastpath_forks_waiting(const FastPath *f);
bool fastpath_waiting_for_plan(const FastPath *f);

/* A scan begins: what was remembered for placing is the pass's now, and
 * what changes from here on is counted anew. With defer, the processes the
 * fast path placed (or whose main thread exited) since the last scan began,
 * and that scan did not see, are left to the next (FastPath.deferred). */
void fastpath_scan_begin(FastPath *f, bool defer);
/* The policy set was swapped: the cookie sources kept name the old one's. */
void fastpath_policies_changed(FastPath *f);

/* As pipeline_use_plan(), with the policy set in force (borrowed, as the
 * plan), and pipeline_place_fresh(). */
int fastpath_use_plan(FastPath *f, const Plan *plan, const PolicySet *policies, const bool *in_force,
                      const Scope *scope);
int fastpath_place(FastPath *f, const Reconciler *rc, FastPathStats *ret_stats, ReconcileReport **ret);
