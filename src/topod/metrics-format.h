/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topod's metrics as plain values (MetricsSnapshot), and their two
 * printings: the Prometheus text exposition (format 0.0.4, for
 * node_exporter's textfile collector and `topoctl metrics`) and JSON
 * (`topoctl metrics --json`). Pure: no clock, no file but the one
 * written to; the same snapshot prints the same bytes. Every metric is
 * listed in topod(8), METRICS.
 *
 * Label values are escaped as the format asks (\\, \" and \n); other
 * control characters, which no label may hold on the bus, are written as
 * '_'. Metrics with labels are printed in the snapshot's order;
 * metrics_count_tasks() gives the tasks sorted by group path, then
 * class. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/histogram.h"
#include "base/json.h"
#include "decide/plan.h"
#include "decide/policy.h"

/* The apply's results, as ReconcileReport counts them. */
typedef enum MetricsApply {
        METRICS_APPLY_DONE,
        METRICS_APPLY_ALREADY,
        METRICS_APPLY_VANISHED,
        METRICS_APPLY_SKIPPED,
        METRICS_APPLY_FAILED,
        _METRICS_APPLY_MAX,
} MetricsApply;

/* Managed tasks of one policy, group and class. */
typedef struct MetricsTasks {
        const char *policy;
        const char *group; /* the group's path below cgroup_root; "" for a policy without [place] */
        const char *class_name;
        unsigned tasks;
} MetricsTasks;

typedef struct MetricsPolicy {
        const char *name;
        bool in_force;
        unsigned cookie_groups; /* in the plan in force */
        /* [when] forced_idle: what the last reading of its groups' cpu.stat
         * said (only where the policy asks for it). */
        bool forced_idle;
        bool have_share;
        unsigned share_permille;
        unsigned idle_groups;
        uint64_t force_idle_usec, usage_usec; /* summed over those groups */
} MetricsPolicy;

/* One group of a policy with [when] forced_idle, at the last reading:
 * its cpu.stat core_sched.force_idle_usec and usage_usec. */
typedef struct MetricsIdleGroup {
        const char *policy;
        const char *group; /* its path below cgroup_root */
        uint64_t force_idle_usec, usage_usec;
} MetricsIdleGroup;

typedef struct MetricsSnapshot {
        const char *version;
        bool paused;
        const MetricsPolicy *policies;
        size_t n_policies;
        const MetricsTasks *tasks;
        size_t n_tasks;
        const MetricsIdleGroup *idle_groups;
        size_t n_idle_groups;
        uint64_t groups;              /* policy groups in the plan in force */
        uint64_t passes, passes_failed;
        Histogram pass_duration;
        bool have_last_pass;
        uint64_t last_pass_usec[3];   /* scan, plan, apply */
        uint64_t reloads, reloads_refused;
        uint64_t apply[_METRICS_APPLY_MAX]; /* summed over every pass */
        uint64_t fast_placed;         /* processes the fast path placed */
        Histogram exec_to_placed;
        uint64_t idle_skips, storm_defers;
} MetricsSnapshot;

const char *metrics_apply_to_string(MetricsApply a);

/* The plan's managed tasks counted by policy, group and class, in
 * *ret (n in *ret_n; the strings are the plan's and the policies'): the
 * combinations with at least one task. -ENOMEM. */
int metrics_count_tasks(const Plan *plan, const PolicySet *policies, MetricsTasks **ret, size_t *ret_n);

/* The exposition into f: 0, or -EIO when f failed. */
int metrics_format_text(FILE *f, const MetricsSnapshot *s);
void metrics_format_json(Json *j, const MetricsSnapshot *s);
