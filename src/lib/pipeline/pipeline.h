/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The pipeline's state between its stages: what observe found (topology,
 * kernel, tasks, events) and what decide keeps (configuration, policies,
 * classifier), and the step that turns them into a Plan. topod's loop and
 * topoctl's watching verbs drive it; it holds no policy of its own.
 *
 * Library code: it does not print. Problems with topod.conf or policy files
 * go into the Diagnostics given; a failure that stops the pipeline comes
 * back as a negative errno with a one-line reason. */

#include <stdbool.h>
#include <stdint.h>

#include "base/macro.h"
#include "base/root.h"
#include "decide/classify.h"
#include "decide/config.h"
#include "decide/diag.h"
#include "decide/plan.h"
#include "decide/policy.h"
#include "observe/events.h"
#include "observe/kernelcaps.h"
#include "observe/tasks.h"
#include "observe/topology.h"
#include "observe/users.h"

#define PIPELINE_EVENTS_KEPT_MAX 4096u

typedef struct PipelineOptions {
        const char *root;     /* NULL: / */
        const char *config;   /* NULL: /etc/topod/topod.conf below the root, if present */
        const char *policies; /* NULL: the configuration's policies_dir below the root */
        bool events;          /* subscribe to the proc connector */
        bool keep_events;     /* and keep the events seen, for printing */
} PipelineOptions;

typedef struct Pipeline {
        Root *root;
        Config *config;
        PolicySet *policies;
        bool *in_force; /* per policy: enabled and [when] holds now */
        Topology *topology;
        KernelCaps *caps;
        uint64_t kernel_version;
        UserTable *users;
        PipelineOptions options; /* what it was opened with, for reloads (strings not owned) */
        TaskScanner *scanner;
        Classifier *classifier;
        ProcEvents *events; /* NULL: polling only */
        int events_error;   /* why not, when asked */

        TaskSnapshot *snap; /* the last scan */
        bool rescan;        /* events were lost: the next scan reads everything */
        uint64_t last_full_usec;
        unsigned samples;   /* scans so far */

        bool keep_events;
        TaskEvent *seen;
        size_t n_seen;
        unsigned events_not_kept;
} Pipeline;

int pipeline_new(const PipelineOptions *o, Diagnostics *d, Pipeline **ret, char **ret_reason);
Pipeline *pipeline_free(Pipeline *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pipeline *, pipeline_free);

uint64_t pipeline_now_usec(void);

/* Read topod.conf and the policies again. All or nothing: when any file
 * has an error (in d, with file:line) the running configuration stays
 * untouched and -EINVAL is returned; else the new one is swapped in (the
 * classifier keeps its samples, with the new thresholds). */
int pipeline_reload(Pipeline *p, Diagnostics *d);

/* Handle queued proc-connector events (without blocking). */
void pipeline_drain_events(Pipeline *p);
/* Sleep until the deadline (CLOCK_MONOTONIC usec), handling events. */
void pipeline_wait_until(Pipeline *p, uint64_t deadline);

/* Scan /proc and feed the classifier. Everything is read on the first scan,
 * after lost events, every rescan_interval, or when full is asked. */
int pipeline_sample(Pipeline *p, bool full);

/* What [match] sees of a task. */
void pipeline_policy_task(const Pipeline *p, const TaskFacts *t, PolicyClass class, PolicyTask *ret);
/* The policy placing a task now (first in force that matches), or -1. */
int pipeline_select(const Pipeline *p, const TaskFacts *t, PolicyClass class);

/* The plan for the last scan. */
int pipeline_plan(const Pipeline *p, Plan **ret);
