/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Reconcile: make the machine what the plan says, through the appliers
 * (features and cgroup_mode, the cgroup tree and task moves, cookies), and
 * put everything back from the journal on stop or after a crash.
 *
 * Every original value is journaled (and the journal committed) before it
 * is changed; every item is reported: done, already so, vanished (a task
 * that exited is not a failure), skipped, or failed with why. Failures do
 * not stop the rest: a machine half-tuned beats one left untouched because
 * one write was refused. */

#include <stdbool.h>
#include <stddef.h>

#include "apply/cgroup.h"
#include "apply/cookie.h"
#include "apply/feat.h"
#include "apply/journal.h"
#include "apply/unit.h"
#include "base/json.h"
#include "base/macro.h"
#include "base/root.h"
#include "decide/place.h"
#include "decide/plan.h"
#include "observe/kernelcaps.h"

typedef enum ReconcileStatus {
        RECONCILE_DONE,
        RECONCILE_ALREADY,
        RECONCILE_VANISHED,
        RECONCILE_SKIPPED,
        RECONCILE_FAILED,
        _RECONCILE_STATUS_MAX,
} ReconcileStatus;

/* What an item changed (or would have), for the daemon's log of changes:
 * NONE for items about a whole run ("journal commit") and read-backs. */
typedef enum ReconcileKind {
        RECONCILE_KIND_NONE,
        RECONCILE_KIND_MOVE,     /* a process into a group, or back */
        RECONCILE_KIND_COOKIE,   /* a core-scheduling cookie given, or cleared */
        RECONCILE_KIND_PROPERTY, /* a cgroup attribute or unit property set, or put back */
        RECONCILE_KIND_CREATE,   /* a cgroup made, a unit started */
        RECONCILE_KIND_REMOVE,   /* a cgroup removed, a unit stopped */
        RECONCILE_KIND_FEATURE,  /* a sched_feat switch */
        RECONCILE_KIND_SETTING,  /* cgroup_mode, a sched/ setting */
        _RECONCILE_KIND_MAX,
} ReconcileKind;

/* Whom an item is about (what it names beside its text). */
typedef struct ReconcileSubject {
        ReconcileKind kind;
        bool undo;          /* put back: on restore, or let go while running */
        pid_t pid;          /* the process (a move) or thread (a cookie), 0 */
        const char *cgroup; /* the cgroup written, moved to, or the unit; NULL */
        const char *from;   /* a move: the cgroup it was in; NULL */
} ReconcileSubject;

typedef struct ReconcileItem {
        char *what;   /* "feature TTWU_QUEUE off", "cgroup /topod.slice/avx cpuset.cpus 0-3", "cookie group 1: tid 42" */
        ReconcileStatus status;
        int error;    /* negative errno when failed */
        char *reason; /* or NULL */
        /* ReconcileSubject's, owned. */
        ReconcileKind kind;
        bool undo;
        pid_t pid;
        char *cgroup, *from;
} ReconcileItem;

typedef struct ReconcileReport {
        ReconcileItem *items;
        size_t n, allocated;
        unsigned counts[_RECONCILE_STATUS_MAX]; /* of every item, listed or not */
        bool failures_only; /* items only for FAILED and SKIPPED (reconcile_place()) */
        bool restoring;     /* a restore's (reconcile_restore()): what is undone is put back for good */
} ReconcileReport;

ReconcileReport *reconcile_report_free(ReconcileReport *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(ReconcileReport *, reconcile_report_free);
const char *reconcile_status_to_string(ReconcileStatus s);

typedef struct Reconciler {
        const Root *root;
        const KernelCaps *caps;
        Journal *journal;         /* committed before every change */
        CookieApplier *cookies;   /* NULL: no cookie work */
        const CgroupOps *cgroup_ops;   /* NULL: the kernel */
        const FeatOps *feat_ops;       /* NULL: the kernel */
        const PidRefOps *pidref;       /* NULL: pidfds (tests: the proc directories of a fake root) */
        CgroupHeld *held;     /* NULL: cgroup.procs opened for every move (cgroup.h) */
        /* reconcile_apply() only: let another thread in between the
         * processes it moves and the cookie groups it makes, and leave
         * alone the processes that changed since the scan the plan came
         * from (base/yield.h; those the plan has are reported skipped),
         * or that the scan left for the next (not in the plan: their
         * cookies and journal entries are not touched). NULL: never. */
        const YieldHooks *yield;
        /* reconcile_place() only: NULL, or where the descriptors it is done
         * with go, closed together by the caller (fd_bin_empty()). */
        FdBin *fds;
        /* The systemd driver (apply/unit.h): groups are slices, processes
         * placed through their units or moved by systemd, and no
         * cgroup.procs is written; the fast path then gives cookies and
         * leaves the moves to the next pass. NULL: the cgroupfs writer. */
        const UnitOps *unit_ops;
        /* The configuration's cgroup_root (CgroupEnv's): with the roots the
         * journal recorded, where the cgroups restore may remove are. */
        const char *cgroup_root;
} Reconciler;

/* Apply the plan. Returns 0 and the report (which may hold failures), or a
 * negative errno when nothing could be attempted. */
int reconcile_apply(const Reconciler *r, const Plan *plan, ReconcileReport **ret);

/* Put back what the journal recorded: features and mode, tasks to their
 * original cgroups, cookies cleared, topod's cgroups removed. Restored
 * entries are forgotten; the journal is committed (and removed by the
 * caller when empty). */
int reconcile_restore(const Reconciler *r, ReconcileReport **ret);

/* cgroup_root changed (rc->cgroup_root is the new one) and a pass built
 * the new tree: the old tree, below old_root, goes (cgroup_retire_root(),
 * the cgroupfs writer's entries only). Returns 0 and the report, or a
 * negative errno. */
int reconcile_retire_cgroup_root(const Reconciler *r, const char *old_root, ReconcileReport **ret);

/* Clear the cookies that threads in topod's cgroups inherited from those
 * topod gave and the journal does not name (a child forked, a thread
 * started, since the last pass), as reconcile_restore() does first; the
 * journaled ones are left to the caller. For a sched_ext scheduler loaded
 * while topod runs: the apply that follows clears the journaled ones, and
 * by then their values, which tell the inherited ones, are gone. */
int reconcile_clear_inherited_cookies(const Reconciler *r, ReconcileReport **ret);

/* ── The fast path: new processes placed from the last plan (reconcile-fast.c) ──
 *
 * One placement as decide/place.h picked it: the process (its main thread
 * by tgid and start time) into a leaf group of the last plan, which the
 * last reconcile created, and its cookie. For a whole batch (one burst of
 * events) the originals (cgroup and cookie) are journaled and the journal
 * committed ONCE, before the first change. Cookies: NEW gives the process
 * a cookie of its own; JOIN gives it the cookie of the first source that
 * still has one, and when none has (or there are none), the batch's JOIN
 * placements of that policy share one new cookie. The main thread is
 * named, and the cookie goes to every thread of its process at once
 * (CookieTask.whole_process): a process that starts threads right after
 * exec has them all in the cookie from its placement on, and threads it
 * creates later inherit its cgroup and cookie. */
typedef struct ReconcilePlacement {
        pid_t tgid;
        uint64_t start_time;       /* of its main thread; 0: the process that holds tgid now
                                    * (learned, and set here, when its handle is taken) */
        int policy;                /* JOIN placements of one policy share a cookie */
        int group;                 /* index into Plan.groups */
        PlaceCookie cookie;
        int cookie_group;          /* JOIN: the plan's, for the report; -1 */
        const CookieTask *sources; /* JOIN: live members to take the cookie from, in order */
        size_t n_sources;

        /* Set by reconcile_place(). */
        ReconcileStatus moved;     /* the cgroup move */
        ReconcileStatus cookied;   /* the cookie (KEEP: RECONCILE_ALREADY) */
} ReconcilePlacement;

/* Apply a batch. Returns 0 and the report, or a negative errno when nothing
 * could be attempted. The report lists the moves and cookies that failed or
 * were skipped, and counts all of them: how each placement went is in its
 * moved and cookied (an item per success cost the fast path about a tenth
 * of its time, to be thrown away). Reports no tree: the groups must exist. */
int reconcile_place(const Reconciler *r, const Plan *plan, ReconcilePlacement *items, size_t n,
                    ReconcileReport **ret);

int reconcile_report_print_text(FILE *f, const ReconcileReport *r);
int reconcile_report_print_json(Json *j, const ReconcileReport *r);
