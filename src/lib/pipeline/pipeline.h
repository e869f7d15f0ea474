/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The pipeline's state between its stages, a sub-struct each: what observe
 * found (topology, kernel, tasks, events), what decide keeps
 * (configuration, policies, classifier), the groups' measured concurrency,
 * and the fast path's (fastpath.h); and the steps that turn them into a
 * Plan. topod's loop and topoctl's watching verbs drive it; it holds no
 * policy of its own.
 *
 * Library code: it does not print. Problems with topod.conf or policy files
 * go into the Diagnostics given; a failure that stops the pipeline comes
 * back as a negative errno with a one-line reason. */

#include <stdbool.h>
#include <stdint.h>

#include "base/macro.h"
#include "apply/reconcile.h"
#include "base/root.h"
#include "decide/classify.h"
#include "decide/config.h"
#include "decide/diag.h"
#include "decide/place.h"
#include "decide/plan.h"
#include "observe/forced-idle.h"
#include "decide/policy.h"
#include "observe/events.h"
#include "observe/forced-idle.h"
#include "observe/kernelcaps.h"
#include "observe/tasks.h"
#include "observe/topology.h"
#include "observe/users.h"
#include "pipeline/fastpath.h"

#define PIPELINE_EVENTS_KEPT_MAX 4096u
/* Events asked for per read (pipeline_take_urgent_events()): a read takes
 * up to 16 a system call, and returns fewer only when it found the socket
 * empty. */
#define PIPELINE_EVENT_BATCH 64u

typedef struct PipelineOptions {
        const char *root;     /* NULL: / */
        const char *config;   /* NULL: TOPOD_CONFIG_PATH below the root, if present */
        const char *policies; /* NULL: the policies_dir of topod.conf, else the layers (policy-read.h), below the root */
        bool events;          /* subscribe to the proc connector */
        bool keep_events;     /* and keep the events seen, for printing */
        /* Another host class (topoctl plan): its topology from an hwloc XML
         * export or synthetic description instead of the root's, and its
         * kernel probe from its `topoctl status --json` instead of this
         * kernel's. NULL: this machine's. */
        const char *xml, *synthetic, *caps;
} PipelineOptions;

/* What observe found, and what reads the machine: the machine itself, the
 * tasks (the scanner and its last snapshot), the events, who died whole.
 * Freed by pipeline_observe_done(). */
typedef struct PipelineObserve {
        Root *root;
        Bitmap *online;        /* cpu/online when last acted on (pipeline_refresh_topology()) */
        Topology *topology;
        KernelCaps *caps;
        uint64_t kernel_version;
        UserTable *users;
        TaskScanner *scanner;
        ProcEvents *events; /* NULL: polling only */
        Lives *lives;       /* which processes died whole, by the events (NULL without) */
        int events_error;   /* why not, when asked */

        TaskSnapshot *snap; /* the last scan */
        CounterSet *counters; /* AVX-512 counters on the candidates; NULL without (observe/counters.h) */
        bool rescan;        /* events were lost: the next scan reads everything */
        uint64_t last_full_usec;
        unsigned samples;   /* scans so far */

        bool keep_events;
        TaskEvent *seen;
        size_t n_seen;
        unsigned events_not_kept;
} PipelineObserve;

/* A policy's forced idle (observe/forced-idle.h) as its [when]
 * forced_idle band sees it: the sums of its groups' cpu.stat at the last
 * reading, and the share of their CPU time their siblings were kept idle
 * between the two last readings (pipeline_measure_forced_idle()). A band
 * that has had no figure yet holds: the policy must be in force, its
 * groups made, for them to be measured. A reload starts them afresh. */
typedef struct PolicyIdle {
        PolicyLoadBand band;
        ForcedIdleStat last;  /* summed over the policy's groups */
        bool have_last;
        bool have_share;
        unsigned share_permille;
        unsigned groups;      /* read at the last reading */
} PolicyIdle;

/* What decide keeps between plans: the configuration, the policies and
 * which are in force now, the load their [when] sees, the classifier.
 * Freed by pipeline_decide_done(). */
typedef struct PipelineDecide {
        Config *config;
        PolicySet *policies;
        bool *in_force;        /* per policy: enabled and [when] holds now */
        PolicyLoadBand *bands; /* per policy: its [when] load band over time */
        bool have_load;        /* the last reading of the load worked, */
        unsigned load_percent; /* and said this (sysload_read_percent()) */
        PolicyIdle *idle;      /* per policy: its [when] forced_idle band and readings */
        Classifier *classifier;
        bool slices;           /* the cgroup driver is systemd's: groups are slices (PlanInputs.slices) */
} PipelineDecide;

/* Measured concurrency of the groups (pipeline_measure()), for the concur
 * mode emulated by weights: the last reading of each group's cpu.stat
 * usage_usec, and the figure from the two last ones. Freed by
 * pipeline_measure_done(). */
typedef struct PipelineMeasure {
        char **reading_paths;  /* groups read last time (owned), */
        uint64_t *readings;    /* their usage_usec then, */
        size_t n_readings;
        uint64_t *readings_at; /* and when each was read (the middle of its read) */
        PlanUsage *usage;      /* the figures, for groups read twice (paths point into reading_paths) */
        size_t n_usage;
        /* Each group of a policy with [when] forced_idle at the last
         * reading of forced idle (pipeline_measure_forced_idle()), for the
         * metrics: what cpu.stat said. */
        ForcedIdleGroup *idle_groups;
        size_t n_idle_groups;
} PipelineMeasure;

typedef struct Pipeline {
        PipelineOptions options; /* what it was opened with, for reloads (strings not owned) */
        PipelineObserve observe;
        PipelineDecide decide;
        PipelineMeasure measure;
        FastPath *fast;
} Pipeline;

int pipeline_new(const PipelineOptions *o, Diagnostics *d, Pipeline **ret, char **ret_reason);
Pipeline *pipeline_free(Pipeline *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pipeline *, pipeline_free);

uint64_t pipeline_now_usec(void);

/* pipeline_new() and pipeline_reload() judge what they read by one rule:
 * topod.conf and every policy file without an error, or nothing (-EINVAL;
 * at start-up pipeline_new() fails then, with the errors in d).
 *
 * Read topod.conf and the policies again. All or nothing: when any file
 * has an error (in d, with file:line) the running configuration stays
 * untouched and -EINVAL is returned; else the new one is swapped in (the
 * classifier keeps its samples, with the new thresholds). */
int pipeline_reload(Pipeline *p, Diagnostics *d);

/* Read the machine's topology again when the CPUs online changed (SMT
 * switched on or off, a CPU hot-plugged): one small file
 * (cpu/online) otherwise. The fast path goes on from the same plan on the
 * new topology. 1 when read again, 0 when not needed, negative errno when
 * it could not be (the old one stays; tried again at the next call). */
int pipeline_refresh_topology(Pipeline *p);

/* Which policies are in force, again: after SMT or the load changed
 * ([when] smt = and load =). With read_load_now, the load is read first
 * and taken into the bands (hysteresis and dwell of topod.conf [load]).
 * How many policies entered or left force. The plan in use was made with
 * the old answer: when some did, make a pass. */
unsigned pipeline_refresh_in_force(Pipeline *p, bool read_load_now);

/* Handle queued proc-connector events (without blocking). */
void pipeline_drain_events(Pipeline *p);
/* What a thread of the caller's read itself, without the pipeline's lock,
 * from the events to act on at once (execs and renames, where the kernel
 * splits them from forks and exits: proc_events_wait_urgent() on p's
 * events, asked for PIPELINE_EVENT_BATCH): handled as
 * pipeline_drain_events() handles what it reads, and a full batch is
 * followed by the rest of that socket's. read_error: that read's negative
 * errno, or 0; what it had read is lost then, and the next scan reads
 * everything. */
bool pipeline_take_urgent_events(Pipeline *p, const TaskEvent *events, size_t n, int read_error);
/* Returns true when the events were execs alone (what the exec filter's
 * socket brings): then only their processes are taken for the fast path,
 * and the rest of what they tell (the scan's marks, the changed processes,
 * the events kept) waits for pipeline_take_urgent_rest() with the same
 * events, after the placement and before the lock is let go of: an exec
 * does not wait for that bookkeeping. */
void pipeline_take_urgent_rest(Pipeline *p, const TaskEvent *events, size_t n);
/* Only the others (forks and exits, where the kernel splits them; else
 * all): for a loop that leaves the execs to a thread of their own. Returns
 * how many events it handled (0: none were queued). */
size_t pipeline_drain_lazy_events(Pipeline *p);
/* New processes whose fork a lazy read brought, for the next: the caller
 * reads again while there are (pipeline_drain_lazy_events() hands them to
 * the fast path then). */
bool pipeline_forks_waiting(const Pipeline *p);
/* Processes that waited for a group during the last pass, for its plan
 * (pipeline_use_plan()), which has not come: the pass failed. */
bool pipeline_waiting_for_plan(const Pipeline *p);
/* Sleep until the deadline (CLOCK_MONOTONIC usec), handling events. */
void pipeline_wait_until(Pipeline *p, uint64_t deadline);

/* Let the fast path in during a pass: yield (NULL: never) is called
 * between processes of the scan (pipeline_sample()) and of the apply, when
 * its caller gives it pipeline_yield_hooks() (Reconciler.yield). yield may
 * drain events and place processes (pipeline_place_fresh()) meanwhile;
 * the apply leaves alone what changed since the scan began. The hooks
 * are there without a yield too: the apply asks them what the scan left
 * (pipeline_sample_deferring()). */
void pipeline_set_yield(Pipeline *p, void (*yield)(void *userdata), void *userdata);
const YieldHooks *pipeline_yield_hooks(Pipeline *p);
/* Did this process exec, rename itself or begin since the last scan began
 * (as the events tell), or did the scan leave it (pipeline_sample_deferring())? */
bool pipeline_changed(Pipeline *p, pid_t tgid);

/* Scan /proc and feed the classifier. Everything is read on the first scan,
 * after lost events, every rescan_interval, or when full is asked. */
int pipeline_sample(Pipeline *p, bool full);
/* The same, but the processes the fast path placed, or whose main thread
 * exited (an EXIT event), since the last scan began, new since it, are not
 * read: this scan's plan does not have them,
 * and the pass leaves them where the fast path put them, as it does what
 * changed during it (pipeline_changed()). The next scan reads those still
 * there. For a pass during an exec storm: most of them have gone by the
 * next, and reading each new process would be most of such a pass's
 * scan. */
int pipeline_sample_deferring(Pipeline *p, bool full);

/* What [match] sees of a task. */
void pipeline_policy_task(const Pipeline *p, const TaskFacts *t, PolicyClass class, PolicyTask *ret);
/* The policy placing a task now (first in force that matches), or -1. */
int pipeline_select(const Pipeline *p, const TaskFacts *t, PolicyClass class);

/* The plan for the last scan. origins (NULL: none): the journal, where the
 * processes topod moved came from (pipeline/origin.h): [match] and the
 * scope judge them by that. */
int pipeline_plan(const Pipeline *p, const Journal *origins, Plan **ret);

/* Read each group's cpu.stat usage_usec under the applied plan: its
 * concurrency (Δusage / Δwall, in thousandths of a CPU) since the last
 * reading goes into the next plan, for the emulated concur mode. Only
 * when the plan emulates concur (else there is nothing to read for); a
 * group without a previous reading (or cpu.stat) has none yet. */
int pipeline_measure(Pipeline *p, const Plan *applied);

/* The AVX-512 counters around a scan's classification: each open
 * counter's count put into the snapshot's thread (before the classifier
 * sees it), then counters held on the classifier's candidates (after).
 * Nothing where the probe found no counters. 0 or -ENOMEM. */
int pipeline_counters_read(Pipeline *p);
int pipeline_counters_sync(Pipeline *p);

/* The forced idle of each policy with a [when] forced_idle band: its
 * groups' cpu.stat in the plan just applied, summed, against the last
 * reading, taken into the band (with topod.conf [load]'s hysteresis and
 * dwell). A policy without groups (out of force, or nothing placed)
 * reads 0%: its band comes back once that has lasted the dwell. Reads
 * kernel.sched_schedstats again first (KernelCaps.schedstats: without it
 * the kernel counts nothing). Returns how many policies entered or left
 * force by it (pipeline_refresh_in_force() has been done), or -ENOMEM. */
int pipeline_measure_forced_idle(Pipeline *p, const Plan *applied);
/* Whether policy i's forced idle band holds (true without one, and
 * before its first figure). */
bool pipeline_forced_idle_holds(const Pipeline *p, size_t i);
/* Readings closer together than this are not compared: the one before
 * stays the base, and the figure from it stays (a pass soon after another,
 * a few ms apart, would make a figure of the timing's noise). */
#define PIPELINE_MEASURE_MIN_USEC 500000u

/* ── The fast path (fastpath.h: what it does, and the daemon's order) ── */

/* Place new processes from this plan from now on: the plan the last
 * reconcile_apply() applied. Borrowed: it must stay valid and unchanged
 * until the next call (NULL: no fast path). The processes that waited for
 * a group since the scan began (FastPathStats.waiting) are
 * remembered for the next pipeline_place_fresh(), which the caller makes
 * at once: a pass that makes a policy's first group places the processes
 * that came meanwhile, not the pass after it. Returns 0, or -ENOMEM when
 * the fast path's view of it could not be built (then there is no fast
 * path until the next call). */
int pipeline_use_plan(Pipeline *p, const Plan *applied);

/* Place the processes remembered since the last call. Cheap when none
 * matches: one read of comm each (more only where a policy asks), no
 * allocation. Returns 0 and *ret NULL when nothing was attempted, 1 and a
 * report of the moves and cookies when something was, or a negative errno
 * when applying could not start. ret_stats may be NULL. */
int pipeline_place_fresh(Pipeline *p, const Reconciler *rc, FastPathStats *ret_stats, ReconcileReport **ret);
