/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What reconcile.c (the pass: reconcile_apply(), the restores) and
 * reconcile-fast.c (the fast path's batches: reconcile_place()) share: the
 * report's items and the appliers' outcomes as report statuses. Not for
 * outside apply/. */

#include <stdbool.h>

#include "apply/reconcile.h"
#include "base/macro.h"

/* One item (FAILED and SKIPPED only, in a failures_only report; the rest
 * counted). 0, or -ENOMEM. */
_printf_(5, 6) int reconcile_add(ReconcileReport *r, ReconcileStatus status, int error, const char *reason,
                                 const char *fmt, ...);
/* The same, about a subject (NULL: none). */
_printf_(6, 7) int reconcile_add_about(ReconcileReport *r, const ReconcileSubject *about, ReconcileStatus status,
                                       int error, const char *reason, const char *fmt, ...);
/* The cgroup writer's items, as the report's. */
int reconcile_add_cgroup_report(ReconcileReport *r, const CgroupReport *cr);
int reconcile_new_report(ReconcileReport **ret);

/* How long the systemd driver waits for systemd to realize what it asked
 * (read-backs, slices emptying on restore). */
#define RECONCILE_UNIT_SETTLE_USEC (2u * 1000000u)

ReconcileStatus reconcile_from_cgroup(CgroupOutcome o);
ReconcileStatus reconcile_from_cookie(CookieOutcome o);

/* The cgroup writer's view of rc: with the held cgroup.procs files for
 * moves into topod's groups, without for restores. */
CgroupEnv reconcile_cgroup_env(const Reconciler *rc, bool held);
