/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "classify.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "decide/config.h"

void classify_params_default(ClassifyParams *ret) {
        *ret = (ClassifyParams) {
                .window_usec = 5000000,
                .min_age_usec = 1000000,
                .min_samples = 3,
                .majority_pct = 60,
                .dwell_usec = 2000000,
                .avx_recent_ms = 200,
                .avx_busy_min_pct = 10,
                .avx_arch_status_tells = true,
                .avx512_ops_min = 1000000,
                .throughput_cpu_min_pct = 80,
                .throughput_burst_min_usec = 2000,
                .throughput_voluntary_max_pct = 50,
                .latency_wakeups_min = 100,
                .latency_burst_max_usec = 500,
                .latency_voluntary_min_pct = 80,
                .latency_cpu_max_pct = 20,
        };
}

void classify_params_from_config(const Config *c, ClassifyParams *ret) {
        classify_params_default(ret);
        ret->window_usec = c->classify_window_usec;
        ret->avx_recent_ms = c->avx512_recent_usec / 1000u;
        ret->latency_voluntary_min_pct = c->latency_voluntary_min;
        ret->latency_cpu_max_pct = c->latency_cpu_max;
        ret->throughput_cpu_min_pct = c->throughput_cpu_min;
        ret->min_age_usec = c->min_task_age_usec;
        ret->dwell_usec = c->classify_dwell_usec;
        ret->majority_pct = c->classify_majority;
        ret->min_samples = c->classify_min_samples;
        ret->avx_busy_min_pct = c->avx_busy_min;
        ret->avx512_ops_min = c->avx512_ops_min;
        ret->latency_wakeups_min = c->latency_wakeups_min;
        ret->latency_burst_max_usec = c->latency_burst_max_usec;
        ret->throughput_burst_min_usec = c->throughput_burst_min_usec;
        ret->throughput_voluntary_max_pct = c->throughput_voluntary_max;
}

int classifier_new(const ClassifyParams *params, Classifier **ret) {
        Classifier *c = calloc(1, sizeof(Classifier));

        if (!c)
                return -ENOMEM;
        if (params)
                c->params = *params;
        else
                classify_params_default(&c->params);
        if (c->params.min_samples == 0)
                c->params.min_samples = 1;
        *ret = c;
        return 0;
}

Classifier *classifier_free(Classifier *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_threads; i++)
                free(c->threads[i].ring);
        free(c->threads);
        free(c);
        return NULL;
}

static int compare_thread(const void *a, const void *b) {
        const ThreadClass *x = a, *y = b;

        return (x->tid > y->tid) - (x->tid < y->tid);
}

const ThreadClass *classifier_find(const Classifier *c, pid_t tid) {
        ThreadClass key = { .tid = tid };

        return c->n_threads ? bsearch(&key, c->threads, c->n_threads, sizeof(ThreadClass), compare_thread) : NULL;
}

static uint64_t sub_or_zero(uint64_t a, uint64_t b) {
        return a > b ? a - b : 0;
}

static const ClassSample *ring_at(const ThreadClass *t, unsigned i) {
        /* i = 0 is the newest. */
        return &t->ring[(t->ring_head + CLASSIFY_RING_MAX - 1 - i) % CLASSIFY_RING_MAX];
}

/* Figures of a run of samples, in the units of ClassifyEvidence. */
typedef struct Figures {
        unsigned cpu_permille;
        uint64_t burst_usec;
        uint64_t wakeups_per_sec;
        unsigned voluntary_permille;
} Figures;

static void figures(uint64_t dt_usec, uint64_t run_ns, uint64_t slices, uint64_t vol, uint64_t invol, Figures *ret) {
        *ret = (Figures) {
                /* ns of run time per us of wall time is permille of a CPU */
                .cpu_permille = dt_usec ? (unsigned) MIN(run_ns / dt_usec, (uint64_t) 1000000) : 0,
                .wakeups_per_sec = dt_usec ? vol * 1000000u / dt_usec : 0,
                /* no switch at all while running: one unbroken burst */
                .burst_usec = slices ? run_ns / 1000u / slices : (run_ns ? UINT64_MAX : 0),
                .voluntary_permille = vol + invol ? (unsigned) (vol * 1000u / (vol + invol)) : 0,
        };
}

size_t classifier_avx_candidates(const Classifier *c, pid_t *ret, size_t max) {
        size_t n = 0;

        for (size_t i = 0; i < c->n_threads && n < max; i++) {
                const ThreadClass *t = &c->threads[i];
                const ClassSample *s;
                Figures f;

                if (t->kernel_thread || !t->ring || t->ring_n == 0)
                        continue;
                s = &t->ring[(t->ring_head + CLASSIFY_RING_MAX - 1) % CLASSIFY_RING_MAX];
                figures(s->dt_usec, s->run_ns, s->slices, s->voluntary, s->involuntary, &f);
                if ((s->avx_used && f.cpu_permille >= c->params.avx_busy_min_pct * 10u) ||
                    (t->last_has_ops && (t->class == POLICY_CLASS_AVX || s->avx_used)))
                        ret[n++] = t->tid;
        }
        return n;
}

PolicyClass classify_sample(const ClassifyParams *p, const ClassSample *s) {
        Figures f;

        figures(s->dt_usec, s->run_ns, s->slices, s->voluntary, s->involuntary, &f);
        if (p->avx_counters) {
                if (s->has_ops && s->ops_per_sec >= p->avx512_ops_min && f.cpu_permille >= p->avx_busy_min_pct * 10u)
                        return POLICY_CLASS_AVX;
        } else if (p->avx_arch_status_tells && s->avx_line && s->avx_used &&
                   f.cpu_permille >= p->avx_busy_min_pct * 10u)
                return POLICY_CLASS_AVX;
        if (f.cpu_permille >= p->throughput_cpu_min_pct * 10u && f.burst_usec >= p->throughput_burst_min_usec &&
            f.voluntary_permille <= p->throughput_voluntary_max_pct * 10u)
                return POLICY_CLASS_THROUGHPUT;
        if (s->has_ctxt && f.wakeups_per_sec >= p->latency_wakeups_min && f.burst_usec <= p->latency_burst_max_usec &&
            f.voluntary_permille >= p->latency_voluntary_min_pct * 10u && f.cpu_permille <= p->latency_cpu_max_pct * 10u)
                return POLICY_CLASS_LATENCY;
        return POLICY_CLASS_OTHER;
}

void classify_window(const ClassifyParams *p, const ThreadClass *t, ClassifyEvidence *ret) {
        ClassifyEvidence e = { .rule = CLASSIFY_RULE_NONE, .verdict = t->class };
        uint64_t dt = 0, run_ns = 0, slices = 0, vol = 0, invol = 0, window = p->window_usec;
        unsigned avx = 0, n = 0, votes[_POLICY_CLASS_MAX] = {};
        Figures f;

        if (!t->ring) {
                /* Idle throughout: every sample voted other. */
                n = MIN(t->idle_run, CLASSIFY_RING_MAX);
                dt = MIN(t->idle_usec, p->window_usec);
                votes[POLICY_CLASS_OTHER] = n;
        }
        /* Samples newest first, as many as fit the window. Where they come
         * further apart than window / min_samples (the daemon lets its
         * sample pass wait during an exec storm), the window stretches to
         * hold min_samples of them: else no thread would get a class for
         * as long as the storm lasts. */
        if (t->ring && t->ring_n > 0)
                window = MAX(window, (uint64_t) p->min_samples * ring_at(t, 0)->dt_usec);
        for (unsigned i = 0; t->ring && i < t->ring_n; i++) {
                const ClassSample *s = ring_at(t, i);

                if (n > 0 && dt + s->dt_usec > window)
                        break;
                dt += s->dt_usec;
                run_ns += s->run_ns;
                slices += s->slices;
                vol += s->voluntary;
                invol += s->involuntary;
                avx += s->avx_used;
                if (s->has_ops) {
                        e.has_ops = true;
                        e.avx512_ops_per_sec = MAX(e.avx512_ops_per_sec, s->ops_per_sec);
                }
                if ((unsigned) s->verdict < _POLICY_CLASS_MAX)
                        votes[s->verdict]++;
                n++;
        }
        figures(dt, run_ns, slices, vol, invol, &f);
        e.samples = n;
        e.window_usec = dt;
        e.has_ctxt = t->last_has_ctxt;
        e.avx_line = t->avx_line;
        e.cpu_permille = f.cpu_permille;
        e.wakeups_per_sec = f.wakeups_per_sec;
        e.burst_usec = f.burst_usec;
        e.voluntary_permille = f.voluntary_permille;
        e.avx_permille = n ? avx * 1000u / n : 0;
        for (unsigned c = 0; c < _POLICY_CLASS_MAX; c++)
                e.votes_permille[c] = n ? votes[c] * 1000u / n : 0;

        if (t->kernel_thread) {
                e.rule = CLASSIFY_RULE_KERNEL;
                e.verdict = POLICY_CLASS_OTHER;
        } else if (n < p->min_samples || t->last_usec - t->first_seen_usec < p->min_age_usec) {
                e.rule = CLASSIFY_RULE_WARMING_UP;
                e.verdict = t->class;
        } else {
                static const ClassifyRule rules[_POLICY_CLASS_MAX] = {
                        [POLICY_CLASS_AVX] = CLASSIFY_RULE_AVX,
                        [POLICY_CLASS_LATENCY] = CLASSIFY_RULE_LATENCY,
                        [POLICY_CLASS_THROUGHPUT] = CLASSIFY_RULE_THROUGHPUT,
                        [POLICY_CLASS_OTHER] = CLASSIFY_RULE_OTHER,
                };

                e.rule = CLASSIFY_RULE_OTHER;
                e.verdict = POLICY_CLASS_OTHER;
                for (unsigned c = 0; c < _POLICY_CLASS_MAX; c++)
                        if (c != POLICY_CLASS_OTHER && e.votes_permille[c] >= p->majority_pct * 10u) {
                                e.rule = rules[c];
                                e.verdict = (PolicyClass) c;
                                break;
                        }
        }
        *ret = e;
}

static void thread_init(ThreadClass *t, const TaskFacts *f, uint64_t now) {
        *t = (ThreadClass) {
                .tid = f->tid,
                .start_time = f->start_time,
                .first_seen_usec = now,
                .last_usec = now,
                .last_sched = f->sched,
                .last_has_ctxt = f->has_ctxt,
                .last_voluntary = f->voluntary_ctxt,
                .last_involuntary = f->nonvoluntary_ctxt,
                .class = POLICY_CLASS_OTHER,
                .class_since_usec = now,
                .candidate = POLICY_CLASS_OTHER,
                .candidate_since_usec = now,
        };
        t->avx_line = f->avx != PROC_AVX_NO_LINE;
        t->kernel_thread = f->kernel_thread;
        t->has_baseline = f->has_schedstat;
}

static int thread_sample(const ClassifyParams *p, ThreadClass *t, const TaskFacts *f, uint64_t now) {
        ClassSample s = {
                .dt_usec = sub_or_zero(now, t->last_usec),
                .run_ns = sub_or_zero(f->sched.run_ns, t->last_sched.run_ns),
                .slices = sub_or_zero(f->sched.timeslices, t->last_sched.timeslices),
                .voluntary = f->has_ctxt && t->last_has_ctxt ? sub_or_zero(f->voluntary_ctxt, t->last_voluntary) : 0,
                .involuntary =
                        f->has_ctxt && t->last_has_ctxt ? sub_or_zero(f->nonvoluntary_ctxt, t->last_involuntary) : 0,
                /* elapsed_ms is the time since the last use at the moment of
                 * reading: in use during this sample if within the window. */
                .avx_used = f->avx == PROC_AVX_ELAPSED && f->avx_elapsed_ms <= p->avx_recent_ms &&
                            f->sched.run_ns > t->last_sched.run_ns, /* an idle thread used nothing; its
                                                                       elapsed_ms may be stale */
                .has_ctxt = f->has_ctxt && t->last_has_ctxt,
                .avx_line = f->avx != PROC_AVX_NO_LINE,
                .has_ops = f->has_avx512_ops && t->last_has_ops && f->avx512_ops >= t->last_ops,
        };
        ClassifyEvidence e;

        if (s.has_ops && s.dt_usec > 0)
                s.ops_per_sec = (f->avx512_ops - t->last_ops) * 1000000u / s.dt_usec;
        t->last_has_ops = f->has_avx512_ops;
        t->last_ops = f->avx512_ops;
        if (s.dt_usec > 0) {
                bool idle = s.run_ns == 0 && s.slices == 0 && s.voluntary == 0 && s.involuntary == 0;

                s.verdict = classify_sample(p, &s);
                if (idle) {
                        t->idle_run++;
                        t->idle_usec += s.dt_usec;
                } else {
                        t->idle_run = 0;
                        t->idle_usec = 0;
                }
                if (!t->ring && !idle) {
                        t->ring = calloc(CLASSIFY_RING_MAX, sizeof(ClassSample));
                        if (!t->ring)
                                return -ENOMEM;
                        t->ring_head = t->ring_n = 0;
                }
                if (t->ring) {
                        t->ring[t->ring_head] = s;
                        t->ring_head = (t->ring_head + 1) % CLASSIFY_RING_MAX;
                        if (t->ring_n < CLASSIFY_RING_MAX)
                                t->ring_n++;
                }
        }
        t->last_usec = now;
        t->last_sched = f->sched;
        t->last_has_ctxt = f->has_ctxt;
        t->last_voluntary = f->voluntary_ctxt;
        t->last_involuntary = f->nonvoluntary_ctxt;

        t->avx_line = f->avx != PROC_AVX_NO_LINE;
        t->kernel_thread = f->kernel_thread;
        classify_window(p, t, &e);

        if (t->kernel_thread) {
                t->class = t->candidate = POLICY_CLASS_OTHER;
        } else if (e.verdict == t->class) {
                /* Hysteresis: a new verdict must hold for the dwell time. */
                t->candidate = t->class;
                t->candidate_since_usec = now;
        } else {
                if (e.verdict != t->candidate) {
                        t->candidate = e.verdict;
                        t->candidate_since_usec = now;
                }
                if (now - t->candidate_since_usec >= p->dwell_usec) {
                        t->class = e.verdict;
                        t->class_since_usec = now;
                }
        }

        /* Back to sleep for a whole ring, and other: the ring goes. */
        if (t->ring && t->idle_run >= CLASSIFY_RING_MAX && t->class == POLICY_CLASS_OTHER &&
            t->candidate == POLICY_CLASS_OTHER) {
                t->ring = mfree(t->ring);
                t->ring_head = t->ring_n = 0;
        }
        return 0;
}

int classifier_update(Classifier *c, const TaskSnapshot *snap) {
        ThreadClass *next;
        size_t i = 0, n = 0;
        uint64_t now = snap->timestamp_usec;

        if (now < c->now_usec)
                return -EINVAL;

        /* The usual case: the same threads as last time. Update in place,
         * without a second array. */
        if (snap->n_tasks == c->n_threads) {
                bool same = true;

                for (size_t j = 0; same && j < snap->n_tasks; j++)
                        same = snap->tasks[j].tid == c->threads[j].tid &&
                               snap->tasks[j].start_time == c->threads[j].start_time && snap->tasks[j].has_schedstat &&
                               c->threads[j].has_baseline;
                if (same) {
                        for (size_t j = 0; j < snap->n_tasks; j++) {
                                int k = thread_sample(&c->params, &c->threads[j], &snap->tasks[j], now);
                                if (k < 0)
                                        return k;
                        }
                        c->now_usec = now;
                        return 0;
                }
        }

        next = calloc(MAX(snap->n_tasks, (size_t) 1), sizeof(ThreadClass));
        if (!next)
                return -ENOMEM;
        /* Merge join: both sorted by tid. */
        for (size_t j = 0; j < snap->n_tasks; j++) {
                const TaskFacts *f = &snap->tasks[j];
                ThreadClass *t = &next[n++];

                while (i < c->n_threads && c->threads[i].tid < f->tid)
                        i++;
                if (i < c->n_threads && c->threads[i].tid == f->tid && c->threads[i].start_time == f->start_time &&
                    f->has_schedstat && c->threads[i].has_baseline) {
                        int k;

                        *t = c->threads[i];
                        c->threads[i].ring = NULL; /* moved */
                        k = thread_sample(&c->params, t, f, now);
                        if (k < 0) {
                                /* Out of memory: drop the half-built array. The
                                 * moved rings go with it; those threads start
                                 * their history again next time. */
                                for (size_t m = 0; m < n; m++)
                                        free(next[m].ring);
                                free(next);
                                return k;
                        }
                } else {
                        thread_init(t, f, now);
                }
        }
        /* Threads gone from the snapshot: their rings go with them. */
        for (size_t m = 0; m < c->n_threads; m++)
                free(c->threads[m].ring);
        free(c->threads);
        c->threads = next;
        c->n_threads = n;
        c->now_usec = now;
        return 0;
}

void classifier_evidence(const Classifier *c, const ThreadClass *t, ClassifyEvidence *ret) {
        classify_window(&c->params, t, ret);
}

const char *classify_rule_to_string(ClassifyRule r) {
        static const char *const names[_CLASSIFY_RULE_MAX] = {
                [CLASSIFY_RULE_NONE] = "not evaluated",   [CLASSIFY_RULE_KERNEL] = "kernel thread",
                [CLASSIFY_RULE_WARMING_UP] = "warming up", [CLASSIFY_RULE_AVX] = "avx",
                [CLASSIFY_RULE_THROUGHPUT] = "throughput", [CLASSIFY_RULE_LATENCY] = "latency",
                [CLASSIFY_RULE_OTHER] = "no heuristic held",
        };
        return (unsigned) r < _CLASSIFY_RULE_MAX ? names[r] : "?";
}

static void fmt_permille(FILE *f, unsigned v) {
        fprintf(f, "%u.%u%%", v / 10, v % 10);
}

int classify_evidence_format(const ClassifyEvidence *e, const ClassifyParams *p, char **ret) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return -ENOMEM;
        fprintf(f, "%s: ", classify_rule_to_string(e->rule));
        switch (e->rule) {
        case CLASSIFY_RULE_KERNEL:
                fputs("topod never touches kernel threads", f);
                break;
        case CLASSIFY_RULE_WARMING_UP:
                fprintf(f, "%u of %u samples, or seen for less than %" PRIu64 " ms", e->samples, p->min_samples,
                        p->min_age_usec / 1000);
                break;
        case CLASSIFY_RULE_NONE:
                break;
        default:
                fputs("cpu ", f);
                fmt_permille(f, e->cpu_permille);
                if (e->burst_usec == UINT64_MAX)
                        fputs(", burst unbroken", f);
                else
                        fprintf(f, ", burst %" PRIu64 " us", e->burst_usec);
                if (e->has_ctxt) {
                        fprintf(f, ", %" PRIu64 " wakeups/s, voluntary ", e->wakeups_per_sec);
                        fmt_permille(f, e->voluntary_permille);
                } else
                        fputs(", switch counts unknown", f);
                if (e->avx_line) {
                        fputs(", AVX-512 in ", f);
                        fmt_permille(f, e->avx_permille);
                        fputs(" of samples", f);
                        if (p->avx_counters)
                                fputs(" (nominates it for a counter)", f);
                        else if (!p->avx_arch_status_tells)
                                fputs(" (arch_status polluted on this host: no avx vote)", f);
                } else
                        fputs(", no AVX-512 state", f);
                if (p->avx_counters && e->has_ops)
                        fprintf(f, ", AVX-512 FP ops up to %" PRIu64 "/s (counter; avx at >= %" PRIu64 "/s)",
                                e->avx512_ops_per_sec, p->avx512_ops_min);
                else if (p->avx_counters)
                        fputs(", no counter reading", f);
                fprintf(f, " (%u samples over %" PRIu64 " ms; votes:", e->samples, e->window_usec / 1000);
                for (unsigned c = 0; c < _POLICY_CLASS_MAX; c++) {
                        fprintf(f, " %s ", policy_class_to_string((PolicyClass) c));
                        fmt_permille(f, e->votes_permille[c]);
                }
                fprintf(f, ", %u%% decides)", p->majority_pct);
                if (e->rule == CLASSIFY_RULE_AVX && p->avx_counters)
                        fprintf(f, "; a sample votes avx with >= %" PRIu64 " AVX-512 FP ops/s counted and cpu >= %u%%",
                                p->avx512_ops_min, p->avx_busy_min_pct);
                else if (e->rule == CLASSIFY_RULE_AVX)
                        fprintf(f, "; a sample votes avx with AVX-512 used within %" PRIu64 " ms and cpu >= %u%%",
                                p->avx_recent_ms, p->avx_busy_min_pct);
                else if (e->rule == CLASSIFY_RULE_THROUGHPUT)
                        fprintf(f, "; a sample votes throughput with cpu >= %u%%, burst >= %" PRIu64 " us, voluntary <= %u%%",
                                p->throughput_cpu_min_pct, p->throughput_burst_min_usec,
                                p->throughput_voluntary_max_pct);
                else if (e->rule == CLASSIFY_RULE_LATENCY)
                        fprintf(f, "; a sample votes latency with >= %u wakeups/s, burst <= %" PRIu64
                                   " us, voluntary >= %u%%, cpu <= %u%%",
                                p->latency_wakeups_min, p->latency_burst_max_usec, p->latency_voluntary_min_pct,
                                p->latency_cpu_max_pct);
        }
        if (fclose(f) != 0 || !buf) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

void classify_evidence_print_json(Json *j, const ClassifyEvidence *e, const ClassifyParams *p) {
        _cleanup_free_ char *line = NULL;

        json_object_begin(j);
        json_kv_string(j, "rule", classify_rule_to_string(e->rule));
        json_kv_string(j, "verdict", policy_class_to_string(e->verdict));
        json_kv_uint(j, "samples", e->samples);
        json_kv_uint(j, "window_usec", e->window_usec);
        json_kv_uint(j, "cpu_permille", e->cpu_permille);
        json_key(j, "burst_usec");
        if (e->burst_usec == UINT64_MAX)
                json_null(j);
        else
                json_uint(j, e->burst_usec);
        json_kv_uint(j, "wakeups_per_sec", e->wakeups_per_sec);
        json_kv_uint(j, "voluntary_permille", e->voluntary_permille);
        json_kv_bool(j, "avx_line", e->avx_line);
        json_kv_uint(j, "avx_permille", e->avx_permille);
        json_key(j, "avx512_ops_per_sec");
        if (e->has_ops)
                json_uint(j, e->avx512_ops_per_sec);
        else
                json_null(j);
        json_key(j, "votes_permille");
        json_object_begin(j);
        for (unsigned k = 0; k < _POLICY_CLASS_MAX; k++)
                json_kv_uint(j, policy_class_to_string((PolicyClass) k), e->votes_permille[k]);
        json_object_end(j);
        json_key(j, "thresholds");
        json_object_begin(j);
        json_kv_uint(j, "min_samples", p->min_samples);
        json_kv_uint(j, "majority_pct", p->majority_pct);
        json_kv_uint(j, "avx_busy_min_pct", p->avx_busy_min_pct);
        json_kv_bool(j, "avx_arch_status_tells", p->avx_arch_status_tells);
        json_kv_bool(j, "avx_counters", p->avx_counters);
        json_kv_uint(j, "avx512_ops_min", p->avx512_ops_min);
        json_kv_uint(j, "throughput_cpu_min_pct", p->throughput_cpu_min_pct);
        json_kv_uint(j, "throughput_burst_min_usec", p->throughput_burst_min_usec);
        json_kv_uint(j, "throughput_voluntary_max_pct", p->throughput_voluntary_max_pct);
        json_kv_uint(j, "latency_wakeups_min", p->latency_wakeups_min);
        json_kv_uint(j, "latency_burst_max_usec", p->latency_burst_max_usec);
        json_kv_uint(j, "latency_voluntary_min_pct", p->latency_voluntary_min_pct);
        json_kv_uint(j, "latency_cpu_max_pct", p->latency_cpu_max_pct);
        json_object_end(j);
        if (classify_evidence_format(e, p, &line) >= 0)
                json_kv_string(j, "text", line);
        json_object_end(j);
}
