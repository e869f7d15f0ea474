/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The heuristic classifier: from successive task snapshots to a class per
 * thread — avx, latency, throughput or other — with the evidence for it.
 *
 * Pure: it reads nothing and asks no clock; time is the snapshots' stamps.
 * Each thread keeps a sliding window of samples (the differences between
 * two snapshots). Every sample gets a verdict by the rules below; the
 * window's verdict is the class that at least majority_pct of its samples
 * voted for, else other, so one odd second does not move it. A class
 * changes only after the window has said the new class continuously for
 * the dwell time (hysteresis), so a thread does not flap.
 *
 * A kernel thread is other and never managed; with fewer than min_samples
 * samples, or seen for less than min_age, the class stays as it is (warming
 * up). The rules for one sample,
 * first that holds wins (thresholds in ClassifyParams):
 *   avx        with counters (avx_counters: observe/counters.h): the
 *              thread retired at least avx512_ops_min 512-bit FP operations
 *              per second in the sample, and used at least avx_busy_min_pct
 *              of a CPU; arch_status then only nominates the threads a
 *              counter is opened on. Without counters: arch_status can
 *              tell here (avx_arch_status_tells: the probe
 *              found topod's own thread clean, observe/kernelcaps.h), its
 *              AVX-512 line is present, AVX-512 was used within
 *              avx_recent_ms of the sample's end, AND the thread used at
 *              least avx_busy_min_pct of a CPU in the sample. Where the C
 *              library leaves AVX-512 registers dirty in every process
 *              (polluted), arch_status never votes avx: explicit rules name
 *              AVX work there.
 *   throughput at least throughput_cpu_min_pct of a CPU, run bursts (run
 *              time per timeslice) of at least throughput_burst_min_usec,
 *              and at most throughput_voluntary_max_pct of its context
 *              switches voluntary (a thread alone on a CPU that never
 *              switches counts as not voluntary).
 *   latency    at least latency_wakeups_min voluntary switches per second,
 *              bursts of at most latency_burst_max_usec, at least
 *              latency_voluntary_min_pct of switches voluntary, and at most
 *              latency_cpu_max_pct of a CPU.
 *   other      everything else. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/macro.h"
#include "decide/policy.h"
#include "observe/tasks.h"

/* Samples kept per thread that runs; idle threads keep none. */
#define CLASSIFY_RING_MAX 32u

typedef struct ClassifyParams {
        uint64_t window_usec;
        uint64_t min_age_usec; /* seen for less than this: not classified yet */
        unsigned min_samples;
        unsigned majority_pct;
        uint64_t dwell_usec;
        uint64_t avx_recent_ms;
        unsigned avx_busy_min_pct;
        bool avx_arch_status_tells; /* false: arch_status polluted or absent, never votes avx */
        bool avx_counters;          /* hardware counters decide (observe/counters.h) */
        uint64_t avx512_ops_min;    /* per second */
        unsigned throughput_cpu_min_pct;
        uint64_t throughput_burst_min_usec;
        unsigned throughput_voluntary_max_pct;
        unsigned latency_wakeups_min; /* per second */
        uint64_t latency_burst_max_usec;
        unsigned latency_voluntary_min_pct;
        unsigned latency_cpu_max_pct;
} ClassifyParams;

void classify_params_default(ClassifyParams *ret);
/* The defaults with topod.conf's [classifier] keys over them. */
struct Config;
void classify_params_from_config(const struct Config *c, ClassifyParams *ret);

/* The figures over the window and the rule that decided. Percentages are in
 * tenths of a percent (permille) to stay integral and reproducible. */
typedef enum ClassifyRule {
        CLASSIFY_RULE_NONE,        /* not evaluated yet */
        CLASSIFY_RULE_KERNEL,      /* kernel thread */
        CLASSIFY_RULE_WARMING_UP,  /* too few samples */
        CLASSIFY_RULE_AVX,
        CLASSIFY_RULE_THROUGHPUT,
        CLASSIFY_RULE_LATENCY,
        CLASSIFY_RULE_OTHER,       /* no heuristic held */
        _CLASSIFY_RULE_MAX,
} ClassifyRule;

typedef struct ClassifyEvidence {
        ClassifyRule rule;
        PolicyClass verdict;       /* what the window says now, before hysteresis */
        unsigned samples;
        uint64_t window_usec;      /* covered by the samples */
        unsigned cpu_permille;     /* of one CPU */
        uint64_t burst_usec;       /* run time per timeslice; UINT64_MAX when it never switched */
        uint64_t wakeups_per_sec;  /* voluntary switches per second */
        unsigned voluntary_permille; /* of all switches; 0 when none */
        bool has_ctxt;
        bool avx_line;             /* arch_status reports AVX-512 at all */
        unsigned avx_permille;     /* of samples with AVX-512 recently used */
        bool has_ops;              /* samples with a counter reading */
        uint64_t avx512_ops_per_sec; /* the highest of them */
        unsigned votes_permille[_POLICY_CLASS_MAX]; /* share of samples voting for each class */
} ClassifyEvidence;

typedef struct ClassSample {
        uint64_t dt_usec;
        uint64_t run_ns, slices, voluntary, involuntary;
        bool avx_used, has_ctxt, avx_line;
        bool has_ops;          /* a counter was read at both ends */
        uint64_t ops_per_sec;  /* AVX-512 FP operations */
        PolicyClass verdict;
} ClassSample;

typedef struct ThreadClass {
        pid_t tid;
        uint64_t start_time;
        uint64_t first_seen_usec;

        /* Counters at the last snapshot. */
        uint64_t last_usec;
        ProcSchedstat last_sched;
        bool last_has_ctxt;
        uint64_t last_voluntary, last_involuntary;

        /* Samples, only while the thread shows activity: the ring is
         * allocated at its first non-idle sample and freed once a whole ring
         * of idle samples has passed and it is class other again. Most of
         * a machine's threads sleep; they cost no ring. */
        ClassSample *ring;
        unsigned ring_head, ring_n;
        unsigned idle_run;     /* idle samples in a row */
        uint64_t idle_usec;    /* and the time they covered */

        PolicyClass class;          /* after hysteresis */
        uint64_t class_since_usec;
        PolicyClass candidate;      /* what the window says while it waits for the dwell */
        uint64_t candidate_since_usec;
        bool kernel_thread;
        bool avx_line;              /* arch_status reports AVX-512 at all */
        bool last_has_ops;          /* the counter's reading at the last snapshot */
        uint64_t last_ops;
        bool has_baseline;          /* last_sched was read (else the next sample starts afresh) */
} ThreadClass;

typedef struct Classifier {
        ClassifyParams params;
        ThreadClass *threads; /* sorted by tid */
        size_t n_threads;
        uint64_t now_usec;    /* stamp of the last snapshot */
} Classifier;

int classifier_new(const ClassifyParams *params, Classifier **ret);
Classifier *classifier_free(Classifier *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Classifier *, classifier_free);

/* Feed the next snapshot (stamps must not go back). Threads not in it are
 * forgotten; a tid seen with another start time is a new thread. */
int classifier_update(Classifier *c, const TaskSnapshot *snap);

const ThreadClass *classifier_find(const Classifier *c, pid_t tid);

/* The threads to count AVX-512 work on: those whose last sample saw
 * AVX-512 state in use (arch_status) while they used at least
 * avx_busy_min_pct of a CPU, and those that have a counter reading (kept
 * while their class is avx or their state says AVX-512), in tid order, at
 * most max. How many. */
size_t classifier_avx_candidates(const Classifier *c, pid_t *ret, size_t max);

/* The figures and votes behind a thread's class, computed from its samples
 * when asked (they are not kept: most threads are never asked about). */
void classifier_evidence(const Classifier *c, const ThreadClass *t, ClassifyEvidence *ret);

/* The verdict of one sample, and the evaluation of a window (exposed for tests). */
PolicyClass classify_sample(const ClassifyParams *p, const ClassSample *s);
void classify_window(const ClassifyParams *p, const ThreadClass *t, ClassifyEvidence *ret);

const char *classify_rule_to_string(ClassifyRule r);
/* One line: the rule and its figures against their thresholds. */
int classify_evidence_format(const ClassifyEvidence *e, const ClassifyParams *p, char **ret);
/* The same as a JSON object: the figures, the votes, the thresholds they
 * were held against, and the one line. */
struct Json;
void classify_evidence_print_json(struct Json *j, const ClassifyEvidence *e, const ClassifyParams *p);
