/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The classifier on synthetic sample sequences: what must and must not
 * change class, flapping held back by hysteresis, kernel threads left alone,
 * the glibc AVX-512 memcpy false positive. */

#include "decide/classify.h"
#include "decide/config.h"
#include "tests.h"

/* A thread's counters, advanced one sample at a time. */
typedef struct Sim {
        TaskFacts f;
        ProcessFacts p;
} Sim;

static void sim_init(Sim *s, pid_t tid, bool avx_line) {
        *s = (Sim) {};
        s->f.tid = s->f.tgid = tid;
        s->f.start_time = 100;
        s->f.has_schedstat = true;
        s->f.has_ctxt = true;
        s->f.avx = avx_line ? PROC_AVX_NEVER : PROC_AVX_NO_LINE;
        s->f.process = &s->p;
        snprintf(s->f.comm, sizeof(s->f.comm), "t%d", (int) tid);
}

/* One second of behaviour: cpu in permille, timeslices, switches, AVX. */
static void sim_step(Sim *s, unsigned cpu_permille, uint64_t slices, uint64_t vol, uint64_t invol, int avx_ms) {
        s->f.sched.run_ns += (uint64_t) cpu_permille * 1000000u;
        s->f.sched.timeslices += slices;
        s->f.voluntary_ctxt += vol;
        s->f.nonvoluntary_ctxt += invol;
        if (s->f.avx != PROC_AVX_NO_LINE) {
                if (avx_ms >= 0) {
                        s->f.avx = PROC_AVX_ELAPSED;
                        s->f.avx_elapsed_ms = (uint64_t) avx_ms;
                } else if (s->f.avx == PROC_AVX_ELAPSED)
                        s->f.avx_elapsed_ms += 1000;
        }
}

static void feed(Classifier *c, Sim *sims, size_t n, uint64_t t_sec) {
        TaskFacts tasks[8];
        TaskSnapshot snap = { .timestamp_usec = t_sec * 1000000u, .tasks = tasks, .n_tasks = n };

        for (size_t i = 0; i < n; i++)
                tasks[i] = sims[i].f;
        ASSERT_OK(classifier_update(c, &snap));
}

static PolicyClass class_of(const Classifier *c, pid_t tid) {
        const ThreadClass *t = classifier_find(c, tid);

        ASSERT_NOT_NULL(t);
        return t->class;
}

static ClassifyEvidence evidence_of(const Classifier *c, pid_t tid) {
        const ThreadClass *t = classifier_find(c, tid);
        ClassifyEvidence e;

        ASSERT_NOT_NULL(t);
        classifier_evidence(c, t, &e);
        return e;
}

static Classifier *new_classifier(void) {
        Classifier *c = NULL;
        ClassifyParams p;

        classify_params_default(&p); /* window 5 s, 3 samples, dwell 2 s */
        ASSERT_OK(classifier_new(&p, &c));
        return c;
}

static void test_classes(void) {
        _cleanup_(classifier_freep) Classifier *c = new_classifier();
        Sim s[4];

        sim_init(&s[0], 10, true);  /* busy loop: 100% CPU, rarely preempted */
        sim_init(&s[1], 11, true);  /* ping-pong: 2000 wakeups/s, 4% CPU */
        sim_init(&s[2], 12, true);  /* AVX-512 crunching at 90% */
        sim_init(&s[3], 13, true);  /* idle */
        feed(c, s, 4, 0);
        for (uint64_t t = 1; t <= 10; t++) {
                sim_step(&s[0], 1000, 1, 0, 1, -1);
                sim_step(&s[1], 40, 2000, 2000, 10, -1);
                sim_step(&s[2], 900, 100, 5, 95, 3);
                sim_step(&s[3], 0, 0, 0, 0, -1);
                feed(c, s, 4, t);
                if (t == 2) {
                        /* Warming up: fewer than three samples, nothing yet. */
                        ASSERT_EQ(class_of(c, 10), POLICY_CLASS_OTHER);
                        ASSERT_EQ(evidence_of(c, 10).rule, CLASSIFY_RULE_WARMING_UP);
                }
                if (t == 4) {
                        /* The verdict is there, the dwell (2 s) is not. */
                        ASSERT_EQ(evidence_of(c, 10).verdict, POLICY_CLASS_THROUGHPUT);
                        ASSERT_EQ(class_of(c, 10), POLICY_CLASS_OTHER);
                }
        }
        ASSERT_EQ(class_of(c, 10), POLICY_CLASS_THROUGHPUT);
        ASSERT_EQ(class_of(c, 11), POLICY_CLASS_LATENCY);
        ASSERT_EQ(class_of(c, 12), POLICY_CLASS_AVX);
        ASSERT_EQ(class_of(c, 13), POLICY_CLASS_OTHER);

        /* The evidence carries the figures. */
        {
                ClassifyEvidence ev = evidence_of(c, 11);
                const ClassifyEvidence *e = &ev;
                _cleanup_free_ char *line = NULL;

                ASSERT_EQ(e->rule, CLASSIFY_RULE_LATENCY);
                ASSERT_EQ(e->samples, 5);
                ASSERT_EQ(e->cpu_permille, 40);
                ASSERT_EQ(e->wakeups_per_sec, 2000);
                ASSERT_EQ(e->burst_usec, 20);
                ASSERT_EQ(e->voluntary_permille, 995);
                ASSERT_OK(classify_evidence_format(e, &c->params, &line));
                ASSERT_STR_CONTAINS(line, "latency: cpu 4.0%, burst 20 us, 2000 wakeups/s, voluntary 99.5%");
                ASSERT_STR_CONTAINS(line, "a sample votes latency with >= 100 wakeups/s");
                ASSERT_STR_CONTAINS(line, "votes: avx 0.0% latency 100.0%");
        }
}

/* glibc's AVX-512 memcpy: AVX-512 state seen in every sample, but the
 * thread is nearly idle. Not avx. */
static void test_avx_false_positive(void) {
        _cleanup_(classifier_freep) Classifier *c = new_classifier();
        Sim s;

        sim_init(&s, 20, true);
        feed(c, &s, 1, 0);
        for (uint64_t t = 1; t <= 10; t++) {
                sim_step(&s, 5, 20, 20, 0, 1);
                feed(c, &s, 1, t);
        }
        ASSERT_EQ(class_of(c, 20), POLICY_CLASS_OTHER);
        ASSERT_EQ(evidence_of(c, 20).avx_permille, 1000);
}

/* A host whose C library leaves AVX-512 registers dirty in every process
 * (arch_status polluted, observe/kernelcaps.h): arch_status never votes
 * avx. The inputs recorded on such a host: a busy integer loop and a busy
 * shell loop show AVX512_elapsed_ms 0-4 in every sample, as the zmm FMA
 * loop does; all three are throughput, and the ping-pong stays latency.
 * The same inputs where arch_status tells: the busy loops are avx. */
static void test_avx_polluted(void) {
        for (int tells = 0; tells <= 1; tells++) {
                _cleanup_(classifier_freep) Classifier *c = NULL;
                ClassifyParams p;
                Sim s[4];

                classify_params_default(&p);
                p.avx_arch_status_tells = tells;
                ASSERT_OK(classifier_new(&p, &c));
                sim_init(&s[0], 30, true); /* integer loop, glibc-linked */
                sim_init(&s[1], 31, true); /* sh -c 'while :; do :; done' */
                sim_init(&s[2], 32, true); /* zmm FMA loop */
                sim_init(&s[3], 33, true); /* ping-pong */
                feed(c, s, 4, 0);
                for (uint64_t t = 1; t <= 10; t++) {
                        sim_step(&s[0], 1000, 1, 0, 1, (int) (t % 2) * 4);
                        sim_step(&s[1], 990, 2, 0, 2, 0);
                        sim_step(&s[2], 1000, 1, 0, 1, 4);
                        sim_step(&s[3], 40, 2000, 2000, 10, 0);
                        feed(c, s, 4, t);
                }
                printf("  arch_status %s\n", tells ? "tells" : "polluted");
                for (pid_t tid = 30; tid <= 32; tid++)
                        ASSERT_EQ(class_of(c, tid), tells ? POLICY_CLASS_AVX : POLICY_CLASS_THROUGHPUT);
                ASSERT_EQ(class_of(c, 33), POLICY_CLASS_LATENCY);
                if (!tells) {
                        ClassifyEvidence e = evidence_of(c, 30);
                        _cleanup_free_ char *line = NULL;

                        ASSERT_EQ(e.avx_permille, 1000);
                        ASSERT_OK(classify_evidence_format(&e, &c->params, &line));
                        ASSERT_STR_CONTAINS(line, "arch_status polluted on this host: no avx vote");
                }
        }
}

/* With counters (observe/counters.h): the hardware's count decides, at the
 * threshold's edges, whatever arch_status says; a thread without a reading
 * is not avx; the candidates for a counter are the busy threads arch_status
 * flags. Recorded readings: 1 s samples. */
static void test_avx_counters(void) {
        static const struct {
                uint64_t ops_per_sec;
                PolicyClass want;
        } cases[] = {
                { 999999, POLICY_CLASS_THROUGHPUT }, /* one below the default 1,000,000/s */
                { 1000000, POLICY_CLASS_AVX },
                { 0, POLICY_CLASS_THROUGHPUT },      /* glibc's dirty registers, no FP op */
        };

        for (size_t k = 0; k < ELEMENTSOF(cases); k++) {
                _cleanup_(classifier_freep) Classifier *c = NULL;
                ClassifyParams p;
                Sim s[2];
                pid_t cand[4];

                classify_params_default(&p);
                p.avx_arch_status_tells = false; /* polluted: only the counter can say */
                p.avx_counters = true;
                ASSERT_OK(classifier_new(&p, &c));
                sim_init(&s[0], 40, true);
                sim_init(&s[1], 41, true); /* no counter reading ever */
                s[0].f.has_avx512_ops = true;
                feed(c, s, 2, 0);
                for (uint64_t t = 1; t <= 10; t++) {
                        sim_step(&s[0], 1000, 1, 0, 1, 0);
                        sim_step(&s[1], 1000, 1, 0, 1, 0);
                        s[0].f.avx512_ops += cases[k].ops_per_sec;
                        feed(c, s, 2, t);
                }
                printf("  %llu ops/s\n", (unsigned long long) cases[k].ops_per_sec);
                ASSERT_EQ(class_of(c, 40), cases[k].want);
                ASSERT_EQ(class_of(c, 41), POLICY_CLASS_THROUGHPUT);
                ASSERT_EQ(evidence_of(c, 40).avx512_ops_per_sec, cases[k].ops_per_sec);
                ASSERT_TRUE(evidence_of(c, 40).has_ops);
                ASSERT_FALSE(evidence_of(c, 41).has_ops);
                ASSERT_EQ(classifier_avx_candidates(c, cand, 4), 2u);
                ASSERT_EQ(cand[0], 40);
                ASSERT_EQ(cand[1], 41);
                {
                        ClassifyEvidence e = evidence_of(c, 40);
                        _cleanup_free_ char *line = NULL;

                        ASSERT_OK(classify_evidence_format(&e, &c->params, &line));
                        ASSERT_STR_CONTAINS(line, "(counter; avx at >= 1000000/s)");
                }
        }
        /* An idle thread with AVX-512 state is no candidate. */
        {
                _cleanup_(classifier_freep) Classifier *c = new_classifier();
                Sim s;
                pid_t cand[1];

                sim_init(&s, 42, true);
                feed(c, &s, 1, 0);
                sim_step(&s, 5, 20, 20, 0, 1);
                feed(c, &s, 1, 1);
                ASSERT_EQ(classifier_avx_candidates(c, cand, 1), 0u);
        }
}

/* No arch_status line (a CPU without AVX-512): never avx, whatever. */
static void test_no_avx_line(void) {
        _cleanup_(classifier_freep) Classifier *c = new_classifier();
        Sim s;

        sim_init(&s, 21, false);
        feed(c, &s, 1, 0);
        for (uint64_t t = 1; t <= 10; t++) {
                sim_step(&s, 950, 1, 0, 1, 1);
                feed(c, &s, 1, t);
        }
        ASSERT_EQ(class_of(c, 21), POLICY_CLASS_THROUGHPUT);
}

/* A thread alternating busy and idle seconds: the verdict flips, the class
 * must not follow every flip. */
static void test_flapping(void) {
        _cleanup_(classifier_freep) Classifier *c = new_classifier();
        unsigned changes = 0;
        PolicyClass last;
        Sim s;

        sim_init(&s, 30, true);
        feed(c, &s, 1, 0);
        last = POLICY_CLASS_OTHER;
        for (uint64_t t = 1; t <= 40; t++) {
                /* 2 s busy, 1 s idle: the 5 s window hovers around 60-100%. */
                if (t % 3 == 0)
                        sim_step(&s, 0, 0, 0, 0, -1);
                else
                        sim_step(&s, 1000, 1, 0, 1, -1);
                feed(c, &s, 1, t);
                if (class_of(c, 30) != last) {
                        changes++;
                        last = class_of(c, 30);
                }
        }
        ASSERT_LE(changes, 1);

        /* Then it settles into sleeping: after the window and dwell it leaves
         * throughput once, and stays out. */
        for (uint64_t t = 41; t <= 60; t++) {
                sim_step(&s, 10, 10, 10, 0, -1);
                feed(c, &s, 1, t);
        }
        ASSERT_EQ(class_of(c, 30), POLICY_CLASS_OTHER);
}

/* A short blip of the other behaviour does not change a settled class. */
static void test_blip(void) {
        _cleanup_(classifier_freep) Classifier *c = new_classifier();
        Sim s;

        sim_init(&s, 31, true);
        feed(c, &s, 1, 0);
        for (uint64_t t = 1; t <= 10; t++) {
                sim_step(&s, 40, 2000, 2000, 0, -1);
                feed(c, &s, 1, t);
        }
        ASSERT_EQ(class_of(c, 31), POLICY_CLASS_LATENCY);
        sim_step(&s, 1000, 1, 0, 0, -1); /* one busy second */
        feed(c, &s, 1, 11);
        ASSERT_EQ(class_of(c, 31), POLICY_CLASS_LATENCY);
        for (uint64_t t = 12; t <= 13; t++) {
                sim_step(&s, 40, 2000, 2000, 0, -1);
                feed(c, &s, 1, t);
        }
        ASSERT_EQ(class_of(c, 31), POLICY_CLASS_LATENCY);
}

static void test_kernel_and_reuse(void) {
        _cleanup_(classifier_freep) Classifier *c = new_classifier();
        Sim s[2];

        sim_init(&s[0], 2, false);
        s[0].f.kernel_thread = true;
        sim_init(&s[1], 40, true);
        feed(c, s, 2, 0);
        ASSERT_EQ(evidence_of(c, 2).rule, CLASSIFY_RULE_KERNEL);
        for (uint64_t t = 1; t <= 10; t++) {
                sim_step(&s[0], 1000, 1, 0, 0, -1);
                sim_step(&s[1], 1000, 1, 0, 0, -1);
                feed(c, s, 2, t);
        }
        ASSERT_EQ(class_of(c, 2), POLICY_CLASS_OTHER);
        ASSERT_EQ(evidence_of(c, 2).rule, CLASSIFY_RULE_KERNEL);
        ASSERT_EQ(class_of(c, 40), POLICY_CLASS_THROUGHPUT);

        /* Same tid, new start time: a new thread, starting over. */
        s[1].f.start_time = 999;
        feed(c, s, 2, 11);
        ASSERT_EQ(class_of(c, 40), POLICY_CLASS_OTHER);
        ASSERT_EQ(classifier_find(c, 40)->ring_n, 0);

        /* Gone from the snapshot: forgotten. */
        feed(c, s, 1, 12);
        ASSERT_NULL(classifier_find(c, 40));

        /* Time going back is refused. */
        {
                TaskSnapshot snap = { .timestamp_usec = 1 };
                ASSERT_ERROR(classifier_update(c, &snap), EINVAL);
        }
}

/* Same inputs, same outputs. */
static void test_deterministic(void) {
        _cleanup_(classifier_freep) Classifier *a = new_classifier(), *b = new_classifier();
        Sim sa, sb;

        sim_init(&sa, 50, true);
        sim_init(&sb, 50, true);
        for (uint64_t t = 0; t <= 12; t++) {
                sim_step(&sa, (unsigned) (t * 77 % 1000), t % 5, t * 3, t % 2, (int) (t % 3) - 1);
                sim_step(&sb, (unsigned) (t * 77 % 1000), t % 5, t * 3, t % 2, (int) (t % 3) - 1);
                feed(a, &sa, 1, t);
                feed(b, &sb, 1, t);
        }
        {
                const ThreadClass *x = classifier_find(a, 50), *y = classifier_find(b, 50);

                ASSERT_EQ(x->class, y->class);
                ASSERT_EQ(x->candidate, y->candidate);
                ASSERT_EQ(x->ring_n, y->ring_n);
                ClassifyEvidence ex = evidence_of(a, 50), ey = evidence_of(b, 50);
                ASSERT_EQ(memcmp(&ex, &ey, sizeof(ex)), 0);
                ASSERT_NOT_NULL(x->ring);
                ASSERT_NOT_NULL(y->ring);
                ASSERT_EQ(memcmp(x->ring, y->ring, CLASSIFY_RING_MAX * sizeof(ClassSample)), 0);
        }
}

/* topod.conf's [classifier] keys reach the classifier; the defaults of both
 * are one. */
static void test_params_from_config(void) {
        static const char text[] = "[classifier]\ndwell = 500ms\nmajority = 50%\nmin_samples = 2\n"
                                   "latency_wakeups_min = 40\nlatency_burst_max = 1ms\nthroughput_burst_min = 0\n"
                                   "throughput_voluntary_max = 30%\navx_busy_min = 25%\nwindow = 2s\n"
                                   "min_task_age = 0\n";
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        ClassifyParams p, def;

        ASSERT_OK(config_new(&c));
        classify_params_default(&def);
        classify_params_from_config(c, &p);
        ASSERT_EQ(memcmp(&p, &def, sizeof(p)), 0);

        ASSERT_OK(config_parse(c, text, sizeof(text) - 1, "t.conf", d));
        classify_params_from_config(c, &p);
        ASSERT_EQ(p.dwell_usec, 500000);
        ASSERT_EQ(p.majority_pct, 50);
        ASSERT_EQ(p.min_samples, 2);
        ASSERT_EQ(p.latency_wakeups_min, 40);
        ASSERT_EQ(p.latency_burst_max_usec, 1000);
        ASSERT_EQ(p.throughput_burst_min_usec, 0);
        ASSERT_EQ(p.throughput_voluntary_max_pct, 30);
        ASSERT_EQ(p.avx_busy_min_pct, 25);
        ASSERT_EQ(p.window_usec, 2000000);
        ASSERT_EQ(p.min_age_usec, 0);
}

/* A thread seen for less than min_age is not classified, whatever it does. */
static void test_min_age(void) {
        _cleanup_(classifier_freep) Classifier *c = NULL;
        ClassifyParams p;
        Sim s;

        classify_params_default(&p);
        p.min_age_usec = 8000000;
        p.dwell_usec = 0;
        ASSERT_OK(classifier_new(&p, &c));
        sim_init(&s, 60, false);
        feed(c, &s, 1, 0);
        for (uint64_t t = 1; t <= 7; t++) {
                sim_step(&s, 1000, 1, 0, 0, -1);
                feed(c, &s, 1, t);
        }
        ASSERT_EQ(class_of(c, 60), POLICY_CLASS_OTHER);
        ASSERT_EQ(evidence_of(c, 60).rule, CLASSIFY_RULE_WARMING_UP);
        sim_step(&s, 1000, 1, 0, 0, -1);
        feed(c, &s, 1, 8);
        ASSERT_EQ(class_of(c, 60), POLICY_CLASS_THROUGHPUT);
}

/* Samples five seconds apart (the daemon's sample pass waiting out an exec
 * storm): a 5 s window holds one, yet the thread gets its class after
 * min_samples of them. */
static void test_sparse_samples(void) {
        _cleanup_(classifier_freep) Classifier *c = NULL;
        ClassifyParams p;
        Sim s;

        classify_params_default(&p);
        p.window_usec = 5000000;
        p.min_samples = 3;
        p.min_age_usec = 0;
        p.dwell_usec = 0;
        ASSERT_OK(classifier_new(&p, &c));
        sim_init(&s, 70, false);
        feed(c, &s, 1, 0);
        for (uint64_t t = 5; t <= 15; t += 5) {
                for (int i = 0; i < 5; i++)
                        sim_step(&s, 1000, 1, 0, 0, -1);
                feed(c, &s, 1, t);
                if (t < 15)
                        ASSERT_EQ(evidence_of(c, 70).rule, CLASSIFY_RULE_WARMING_UP);
        }
        ASSERT_EQ(class_of(c, 70), POLICY_CLASS_THROUGHPUT);
        ASSERT_EQ(evidence_of(c, 70).samples, 3u);
}

/* Sleeping threads keep no sample ring; one that wakes gets one, and loses
 * it after a whole ring of idle samples. */
static void test_idle_costs_nothing(void) {
        _cleanup_(classifier_freep) Classifier *c = new_classifier();
        Sim s;
        uint64_t t = 0;

        sim_init(&s, 70, true);
        feed(c, &s, 1, t);
        for (t = 1; t <= 10; t++) {
                sim_step(&s, 0, 0, 0, 0, -1);
                feed(c, &s, 1, t);
        }
        ASSERT_NULL(classifier_find(c, 70)->ring);
        ASSERT_EQ(evidence_of(c, 70).rule, CLASSIFY_RULE_OTHER);
        ASSERT_EQ(evidence_of(c, 70).votes_permille[POLICY_CLASS_OTHER], 1000);

        for (; t <= 20; t++) {
                sim_step(&s, 1000, 1, 0, 0, -1);
                feed(c, &s, 1, t);
        }
        ASSERT_NOT_NULL(classifier_find(c, 70)->ring);
        ASSERT_EQ(class_of(c, 70), POLICY_CLASS_THROUGHPUT);

        for (; t <= 20 + CLASSIFY_RING_MAX + 5; t++) {
                sim_step(&s, 0, 0, 0, 0, -1);
                feed(c, &s, 1, t);
        }
        ASSERT_EQ(class_of(c, 70), POLICY_CLASS_OTHER);
        ASSERT_NULL(classifier_find(c, 70)->ring);
}

int main(void) {
        RUN(test_idle_costs_nothing);
        RUN(test_params_from_config);
        RUN(test_min_age);
        RUN(test_sparse_samples);
        RUN(test_classes);
        RUN(test_avx_false_positive);
        RUN(test_no_avx_line);
        RUN(test_avx_polluted);
        RUN(test_avx_counters);
        RUN(test_flapping);
        RUN(test_blip);
        RUN(test_kernel_and_reuse);
        RUN(test_deterministic);
        return 0;
}
